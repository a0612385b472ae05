"""verify: the structural verifier, run last (and usable after any pass).

Checks, per function: every Var is defined before it is read in straight-line order (loop
variables and iter_args only inside their loop; after convert_to_ssa a scalar defined in a
branch or loop body only through `return_vars`), `break`/`continue` only inside loops, yields
that match their construct (a yield followed by `break`/`continue` belongs to the loop, any
other to the innermost `if` with return_vars or loop; every falling-through branch of such an
`if` and every falling-through body of a carrying loop ends with one), iter_args/init_values/
return_vars of equal length, one definition per scalar in SSA form, registered ops with their
arity, and the invariants earlier passes established (`ctx.facts`: groups lowered, pipes
assigned). A Var read where it is not defined is the user's `NameNotFound`; everything else is
an internal `PassInner`. Returns carry a value only in a SIMT callee (of its return type), and
`simt.call`s match their callees, none recursive.
"""
from __future__ import annotations

from collections import Counter

from ..errors import NameNotFound, PassInner
from ..ir import ops
from ..ir.nodes import (
    AssignStmt, BreakStmt, Call, ContinueStmt, Expr, ForStmt, Function, FunctionType, IfStmt,
    Program, ReturnStmt, SectionStmt, Stmt, Var, WhileStmt, YieldStmt,
)
from ..ir.types import NoneType
from .ir_query import (
    body_exprs, expr_vars, falls_through, is_scalar, iter_stmts, own_exprs, stmts_of, sub_exprs,
)
from .manager import PassContext
from .pipe_assignment import needs_pipe

NAME = "verify"
UNLOWERED = ("tile_group.next", "tile_group.current", "tile_group.previous")


def run(program: Program, ctx: PassContext) -> Program:
    for fn in program.functions:
        _Verifier(fn, ctx.facts).function()
    _simt_calls(program)
    return program


def _simt_calls(program: Program) -> None:
    """Every `simt.call` names a SIMT callee of the program, passes one value per parameter and
    has its return type; SIMT functions do not recurse (no call stack on SIMT threads)."""
    callees = {f.name: f for f in program.functions if f.func_type is FunctionType.SIMT_CALLEE}
    calls: dict[str, list[Call]] = {}
    for fn in program.functions:
        found = calls[fn.name] = [n for n in body_exprs(fn.body)
                                  if isinstance(n, Call) and n.op == "simt.call"]
        for c in found:
            callee = callees.get(c.kwarg("callee"))
            if callee is None:
                raise _inner(f"simt.call of '{c.kwarg('callee')}', which is not a SIMT callee "
                             f"of the program", c.span)
            if len(c.args) != len(callee.params):
                raise _inner(f"simt.call passes {len(c.args)} values to '{callee.name}', which "
                             f"has {len(callee.params)} parameters", c.span)
            if c.type != (callee.return_type or NoneType()):
                raise _inner(f"simt.call of '{callee.name}' typed {c.type}, the callee returns "
                             f"{callee.return_type}", c.span)
    done: set[str] = set()

    def visit(name: str, path: list[str]) -> None:
        for c in calls.get(name, ()):
            target = c.kwarg("callee")
            if target in path:
                raise _inner(f"SIMT function '{target}' is recursive "
                             f"({' -> '.join(path[path.index(target):] + [target])})", c.span)
            if target not in done:
                visit(target, path + [target])
        done.add(name)

    for fn in program.functions:
        visit(fn.name, [fn.name])


def _inner(message: str, span) -> PassInner:
    return PassInner(message, span, module="PRO_IR", pass_name=NAME)


class _Verifier:
    def __init__(self, fn: Function, facts: set[str]) -> None:
        self.fn = fn
        self.facts = facts
        self.ssa = "ssa" in facts
        self.loop_vars: set[Var] = set()

    def function(self) -> None:
        if self.ssa:
            self.single_definitions()
        self.block(self.fn.body, set(self.fn.params), [])

    def single_definitions(self) -> None:
        defs: Counter[Var] = Counter(self.fn.params)
        for s in iter_stmts(self.fn.body):
            if isinstance(s, AssignStmt):
                new = (s.var,)
            elif isinstance(s, (ForStmt, WhileStmt, IfStmt)):
                own = (s.loop_var,) if isinstance(s, ForStmt) else ()
                new = (*own, *getattr(s, "iter_args", ()), *s.return_vars)
            else:
                continue
            for v in new:
                defs[v] += 1
                if defs[v] > 1 and is_scalar(v):
                    raise _inner(f"scalar '{v.name}' is defined twice in SSA form", s.span)

    # ------------------------------------------------------------ expressions
    def exprs(self, exprs: tuple[Expr, ...], visible: set[Var], span) -> None:
        for e in exprs:
            for n in sub_exprs(e):
                if isinstance(n, Call):
                    self.call(n)
            for v in expr_vars(e) - visible:
                hint = ("a loop variable exists only inside its loop; copy it to another "
                        "variable in the body" if v in self.loop_vars else None)
                raise NameNotFound(f"'{v.name}' is read where it is not defined", span,
                                   hint=hint, module="PRO_IR", pass_name=NAME)

    def call(self, c: Call) -> None:
        spec = ops.get(c.op)
        if spec is None:
            raise _inner(f"unknown op '{c.op}'", c.span)
        n = len(c.args)
        if n < spec.min_args or (spec.max_args is not None and n > spec.max_args):
            raise _inner(f"{c.op} takes {spec.min_args}..{spec.max_args} arguments, has {n}",
                         c.span)
        if "tile_groups_lowered" in self.facts and c.op in UNLOWERED:
            raise _inner(f"{c.op} left after tile_group_lowering", c.span)
        if "pipes_assigned" in self.facts and needs_pipe(c) and c.kwarg("pipe") is None:
            raise _inner(f"{c.op} has no pipe= after pipe_assignment", c.span)

    # ------------------------------------------------------------ statements
    def block(self, body: Stmt | None, visible: set[Var], frames: list[tuple[str, int]]) -> None:
        stmts = stmts_of(body)
        for i, s in enumerate(stmts):
            following = stmts[i + 1] if i + 1 < len(stmts) else None
            self.stmt(s, visible, frames, following)

    def stmt(self, s: Stmt, visible: set[Var], frames: list[tuple[str, int]],
             following: Stmt | None) -> None:
        if isinstance(s, IfStmt):
            self.if_stmt(s, visible, frames)
        elif isinstance(s, (ForStmt, WhileStmt)):
            self.loop(s, visible, frames)
        elif isinstance(s, SectionStmt):
            self.block(s.body, visible, frames)
        elif isinstance(s, (BreakStmt, ContinueStmt)):
            if not any(kind == "loop" for kind, _ in frames):
                raise _inner(f"'{type(s).__name__}' outside a loop", s.span)
        else:
            self.exprs(own_exprs(s), visible, s.span)
            if isinstance(s, ReturnStmt):
                self.return_stmt(s)
            if isinstance(s, YieldStmt):
                self.yield_stmt(s, frames, following)
            if isinstance(s, AssignStmt):
                visible.add(s.var)

    def return_stmt(self, s: ReturnStmt) -> None:
        """A value only in a SIMT callee, of its return type; none where it returns nothing."""
        fn = self.fn
        if s.value is not None and fn.func_type is not FunctionType.SIMT_CALLEE:
            raise _inner("return with a value outside a SIMT callee", s.span)
        want = fn.return_type if fn.func_type is FunctionType.SIMT_CALLEE else None
        have = s.value.type if s.value is not None else None
        if have != want:
            raise _inner(f"return of {have or 'nothing'} in '{fn.name}', which returns "
                         f"{want or 'nothing'}", s.span)

    def yield_stmt(self, s: YieldStmt, frames: list[tuple[str, int]],
                   following: Stmt | None) -> None:
        jump = isinstance(following, (BreakStmt, ContinueStmt))
        owners = [f for f in frames if f[0] == "loop"] if jump else frames
        if not owners:
            raise _inner("yield outside a loop or an if with return_vars", s.span)
        kind, count = owners[-1]
        if len(s.values) != count:
            raise _inner(f"yield of {len(s.values)} values in a {kind} carrying {count}",
                         s.span)

    def escaping(self, inner: set[Var], scoped: set[Var]) -> set[Var]:
        """Definitions of a nested block still visible after it."""
        out = inner - scoped
        return {v for v in out if not is_scalar(v)} if self.ssa else out

    def if_stmt(self, s: IfStmt, visible: set[Var], frames: list[tuple[str, int]]) -> None:
        self.exprs((s.cond,), visible, s.span)
        inner_frames = frames + [("if", len(s.return_vars))] if s.return_vars else frames
        if s.return_vars and s.else_body is None:
            raise _inner("an if with return_vars needs an else branch", s.span)
        escaped: set[Var] = set()
        for branch in (s.then_body, s.else_body):
            inner = set(visible)
            self.block(branch, inner, inner_frames)
            escaped |= self.escaping(inner, set())
            if s.return_vars and falls_through(branch):
                self.ends_with_yield(branch, s)
        visible |= escaped | set(s.return_vars)

    def loop(self, s: ForStmt | WhileStmt, visible: set[Var],
             frames: list[tuple[str, int]]) -> None:
        self.exprs(s.init_values, visible, s.span)
        if not len(s.iter_args) == len(s.init_values) == len(s.return_vars):
            raise _inner(f"loop with {len(s.iter_args)} iter_args, {len(s.init_values)} "
                         f"init_values and {len(s.return_vars)} return_vars", s.span)
        scoped = set(s.iter_args)
        if isinstance(s, ForStmt):
            self.exprs((s.start, s.stop, s.step), visible, s.span)
            scoped.add(s.loop_var)
            self.loop_vars.add(s.loop_var)
        inner = visible | scoped
        if isinstance(s, WhileStmt):
            self.exprs((s.cond,), inner, s.span)
        self.block(s.body, inner, frames + [("loop", len(s.iter_args))])
        if s.iter_args and falls_through(s.body):
            self.ends_with_yield(s.body, s)
        visible |= self.escaping(inner, scoped) | set(s.return_vars)

    def ends_with_yield(self, body: Stmt | None, owner: Stmt) -> None:
        stmts = stmts_of(body)
        if not stmts or not isinstance(stmts[-1], YieldStmt):
            raise _inner(f"a {type(owner).__name__} with carried values has a path that "
                         f"ends without a yield", owner.span)
