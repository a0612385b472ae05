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
an internal `PassInner`.
"""
from __future__ import annotations

from collections import Counter

from ..errors import NameNotFound, PassInner
from ..ir import ops
from ..ir.nodes import (
    AssignStmt, BreakStmt, Call, ContinueStmt, Expr, ForStmt, Function, IfStmt, Program,
    SectionStmt, Stmt, Var, WhileStmt, YieldStmt,
)
from .ir_query import (
    expr_vars, falls_through, is_scalar, iter_stmts, own_exprs, stmts_of, sub_exprs,
)
from .manager import PassContext
from .pipe_assignment import needs_pipe

NAME = "verify"
UNLOWERED = ("tile_group.next", "tile_group.current", "tile_group.previous")


def run(program: Program, ctx: PassContext) -> Program:
    for fn in program.functions:
        _Verifier(fn, ctx.facts).function()
    return program


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
            if isinstance(s, YieldStmt):
                self.yield_stmt(s, frames, following)
            if isinstance(s, AssignStmt):
                visible.add(s.var)

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
