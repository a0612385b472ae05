"""loop_invariant: move scalar index/address arithmetic that does not change out of loops.

Innermost loops first, so a value can climb several levels. From a loop body's top level, an
assignment `v = e` moves in front of the loop when `v` has no other definition in the function
and `e` is pure scalar arithmetic that cannot fault and reads nothing the loop assigns. Any other
non-trivial invariant subexpression of the loop (its body's expressions, a while condition) is
computed once before the loop into `inv = e`. Only pure scalar arithmetic moves: op calls,
`getval`, `tile_valid_shape`, struct fields and anything that may trap stay where they are;
nothing leaves a VF section, and inside one the tile operands of its ops stay as written (they
are bound when the section launches, before a temporary in its body is set); mutex ids stay as
written (mutex_dedup reads them).
"""
from __future__ import annotations

from collections import Counter

from ..ir.mutator import Mutator
from ..ir.nodes import AssignStmt, Expr, ForStmt, Function, Program, Stmt, Var, WhileStmt
from .ir_query import (
    Names, defined_vars, expr_vars, is_candidate, is_pure_scalar, is_scalar, is_vf,
    is_vf_tile_operand, iter_stmts, map_blocks, map_functions, map_own_exprs, may_trap, rebuild,
    replace_fields, stmts_of, with_body,
)
from .manager import PassContext
from .mutex_ops import mutex_call

NAME = "loop_invariant"


def run(program: Program, ctx: PassContext) -> Program:
    return map_functions(program, _hoist_function)


def _hoist_function(fn: Function) -> Function:
    defs: Counter[Var] = Counter()
    for s in iter_stmts(fn.body):
        if isinstance(s, AssignStmt):
            defs[s.var] += 1
        elif isinstance(s, ForStmt):
            defs[s.loop_var] += 1
    single = {v for v, n in defs.items() if n == 1 and is_scalar(v)}
    return with_body(fn, _Hoist(Names(fn), single).block(fn.body))


class _Extract(Mutator):
    """Replaces maximal invariant subexpressions by temporaries computed before the loop."""

    def __init__(self, hoist: _Hoist, variant: set[Var], pre: list[Stmt]) -> None:
        self.hoist, self.variant, self.pre = hoist, variant, pre

    def visit(self, node):
        if self.hoist.in_vf and is_vf_tile_operand(node):
            return node
        if isinstance(node, Expr) and is_candidate(node) and not expr_vars(node) & self.variant:
            return self.hoist.temp(node, self.pre)
        return super().visit(node)


class _Hoist:
    def __init__(self, names: Names, single: set[Var]) -> None:
        self.names = names
        self.single = single
        self.temps: dict[Expr, Var] = {}
        self.in_vf = False  # hoisting loops inside a VF section

    def block(self, body: Stmt | None) -> Stmt | None:
        if body is None:
            return None
        out: list[Stmt] = []
        for s in stmts_of(body):
            s = map_blocks(s, self.vf_block if is_vf(s) else self.block)
            if isinstance(s, (ForStmt, WhileStmt)):
                pre, s = self.hoist(s)
                out.extend(pre)
            out.append(s)
        return rebuild(body, out)

    def vf_block(self, body: Stmt | None) -> Stmt | None:
        outer, self.in_vf = self.in_vf, True
        try:
            return self.block(body)
        finally:
            self.in_vf = outer

    def temp(self, e: Expr, pre: list[Stmt]) -> Var:
        if e not in self.temps:
            self.temps[e] = self.names.var("inv", e)
            pre.append(AssignStmt(self.temps[e], e, e.span))
        return self.temps[e]

    def hoist(self, loop: ForStmt | WhileStmt) -> tuple[list[Stmt], Stmt]:
        self.temps = {}
        variant = defined_vars(loop)
        pre: list[Stmt] = []
        kept: list[Stmt] = []
        for s in stmts_of(loop.body):
            if self.movable(s, variant):
                pre.append(s)
                variant.discard(s.var)
            else:
                kept.append(s)
        extract = _Extract(self, variant, pre)
        body = rebuild(loop.body, [self.extract(s, extract) for s in kept])
        if isinstance(loop, WhileStmt):
            loop = replace_fields(loop, cond=extract.visit(loop.cond))
        return pre, replace_fields(loop, body=body)

    def movable(self, s: Stmt, variant: set[Var]) -> bool:
        return (isinstance(s, AssignStmt) and s.var in self.single
                and is_pure_scalar(s.value) and not may_trap(s.value)
                and not expr_vars(s.value) & variant)

    def extract(self, s: Stmt, extract: _Extract) -> Stmt:
        if is_vf(s) or mutex_call(s) is not None:
            return s
        whole = isinstance(s, AssignStmt) and is_candidate(s.value) and \
            not expr_vars(s.value) & extract.variant
        if not whole:
            s = map_own_exprs(s, extract.visit)
        return map_blocks(s, lambda b: rebuild(b, [self.extract(x, extract)
                                                   for x in stmts_of(b)]))
