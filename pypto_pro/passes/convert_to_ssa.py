"""convert_to_ssa: give every scalar Var one definition (spec §3.4 step 7; nodes.py semantics).

Each re-assignment of a scalar defines a fresh Var (`x`, `x_1`, ...) and later reads use the
reaching one. A scalar assigned in a loop and live at its head (read by a later iteration or
after the loop) becomes an iter_arg: `init_values` hold its value before the loop, a
`YieldStmt` at the end of the body and before every `continue` / `break` of that loop gives the
next values, and the loop's `return_vars` hold them after it. A scalar assigned in an `if` and
live after it becomes a `return_var` of the `if`, with a `YieldStmt` ending every branch that
falls through (a branch ending in `break` / `continue` / `return` ends with that statement, so
a yield followed by `break`/`continue` always belongs to the loop). A value that is undefined
on some path (Python would raise NameError there) enters as zero. Non-scalar Vars (tiles,
tensors, structs) are descriptors and keep their assignments: a tile re-assigned each iteration
before use is not carried.
"""
from __future__ import annotations

from ..ir.mutator import Mutator
from ..ir.nodes import (
    AssignStmt, BreakStmt, ConstBool, ConstFloat, ConstInt, ContinueStmt, Expr, ForStmt,
    Function, IfStmt, Program, SectionStmt, Stmt, Var, WhileStmt, YieldStmt, seq,
)
from ..ir.dtype import DataType
from .ir_query import (
    Names, assigned_in_order, falls_through, is_scalar, map_functions, map_own_exprs, rebuild,
    replace_fields, stmts_of, with_body,
)
from .liveness import Liveness
from .manager import PassContext

NAME = "convert_to_ssa"


def run(program: Program, ctx: PassContext) -> Program:
    if "ssa" in ctx.facts:
        return program
    out = map_functions(program, lambda f: with_body(f, _SSA(f).block(f.body)))
    ctx.facts.add("ssa")
    return out


def _zero(v: Var) -> Expr:
    dtype = v.type.dtype
    if dtype is DataType.BOOL:
        return ConstBool(False, v.span)
    if dtype.is_float:
        return ConstFloat(0.0, dtype, v.span)
    return ConstInt(0, dtype, v.span)


def _append(body: Stmt | None, stmt: Stmt, like: Stmt) -> Stmt:
    return seq([*stmts_of(body), stmt], (body or like).span)


class _Rename(Mutator):
    def __init__(self, cur: dict[Var, Expr]) -> None:
        self.cur = cur

    def visit_Var(self, node: Var) -> Expr:
        return self.cur.get(node, node) if is_scalar(node) else node


class _SSA:
    def __init__(self, fn: Function) -> None:
        self.names = Names(fn)
        self.live = Liveness(fn.body)
        self.defined: set[Var] = set(fn.params)  # original Vars already used by a definition
        self.cur: dict[Var, Expr] = {}  # original scalar Var → its reaching SSA value
        self.loops: list[list[Var]] = []  # carried Vars of the enclosing loops

    def define(self, v: Var) -> Var:
        if v not in self.defined:
            self.defined.add(v)
            return v
        return self.names.var(v.name, v)

    def value(self, v: Var, cur: dict[Var, Expr] | None = None) -> Expr:
        found = (self.cur if cur is None else cur).get(v)
        return _zero(v) if found is None else found

    def rename(self, e: Expr) -> Expr:
        return _Rename(self.cur).visit(e)

    # ------------------------------------------------------------ statements
    def block(self, body: Stmt | None) -> Stmt | None:
        if body is None:
            return None
        out: list[Stmt] = []
        for s in stmts_of(body):
            out.extend(self.stmt(s))
            if not falls_through(s):
                break
        return rebuild(body, out)

    def stmt(self, s: Stmt) -> list[Stmt]:
        if isinstance(s, AssignStmt):
            value = self.rename(s.value)
            if not is_scalar(s.var):
                return [replace_fields(s, value=value)]
            v = self.define(s.var)
            self.cur[s.var] = v
            return [AssignStmt(v, value, s.span)]
        if isinstance(s, IfStmt):
            return [self.if_stmt(s)]
        if isinstance(s, (ForStmt, WhileStmt)):
            return [self.loop(s)]
        if isinstance(s, SectionStmt):
            return [replace_fields(s, body=self.block(s.body))]
        if isinstance(s, (BreakStmt, ContinueStmt)) and self.loops and self.loops[-1]:
            return [YieldStmt(tuple(self.value(v) for v in self.loops[-1]), s.span), s]
        return [map_own_exprs(s, self.rename)]

    def if_stmt(self, s: IfStmt) -> Stmt:
        cond = self.rename(s.cond)
        entry = dict(self.cur)
        then = self.block(s.then_body)
        after_then, self.cur = self.cur, dict(entry)
        other = self.block(s.else_body)
        after_else = self.cur
        joins = [b for b in (s.then_body, s.else_body) if b is not None and falls_through(b)]
        live = self.live.after(s)
        phis = [v for v in assigned_in_order(joins, is_scalar) if v in live]
        self.cur = dict(entry)
        if not phis:
            return replace_fields(s, cond=cond, then_body=then, else_body=other)
        if falls_through(s.then_body):
            then = _append(then, YieldStmt(tuple(self.value(v, after_then) for v in phis),
                                           s.span), s)
        if falls_through(s.else_body):
            other = _append(other, YieldStmt(tuple(self.value(v, after_else)
                                                   for v in phis), s.span), s)
        rvs = tuple(self.names.var(v.name, v) for v in phis)
        self.cur.update(zip(phis, rvs))
        return IfStmt(cond, then, other, rvs, s.span)

    def loop(self, s: ForStmt | WhileStmt) -> Stmt:
        is_for = isinstance(s, ForStmt)
        header = {"start": self.rename(s.start), "stop": self.rename(s.stop),
                  "step": self.rename(s.step)} if is_for else {}
        own = {s.loop_var} if is_for else set()
        carried = [v for v in assigned_in_order([s.body], is_scalar)
                   if v in self.live.loop_head(s) and v not in own]
        init = tuple(self.value(v) for v in carried)
        iter_args = tuple(self.names.var(v.name, v) for v in carried)
        entry = dict(self.cur)
        self.cur.update(zip(carried, iter_args))
        if is_for:
            header["loop_var"] = self.define(s.loop_var)
            self.cur[s.loop_var] = header["loop_var"]
        else:
            header["cond"] = self.rename(s.cond)
        self.loops.append(carried)
        body = self.block(s.body)
        self.loops.pop()
        if carried and falls_through(s.body):
            body = _append(body, YieldStmt(tuple(self.value(v) for v in carried), s.span), s)
        rvs = tuple(self.names.var(v.name, v) for v in carried)
        self.cur = entry
        self.cur.update(zip(carried, rvs))
        return replace_fields(s, body=body, iter_args=iter_args, init_values=init,
                              return_vars=rvs, **header)
