"""common_subexpression: compute repeated scalar index/address arithmetic once.

Only pure scalar arithmetic is touched (no op calls, no reads of tiles, tensors, structs or
`getval`/`tile_valid_shape`). Within a statement list: (1) a later occurrence of the value of
`v = e` becomes `v` while neither `v` nor any Var `e` reads has been re-assigned; (2) a
non-trivial subexpression that still occurs twice or more between such re-assignments is named
once, `cse = e`, before its first use (above the locks that bracket that use). Nested lists
inherit what is available from the enclosing one, minus what they may re-assign; a VF section
starts afresh and leaves the tile operands of its ops as written: they are bound when the
section is launched, before its body (where a temporary would be set) runs. Mutex statements
keep their id expressions as written (mutex_dedup reads them).
"""
from __future__ import annotations

from collections.abc import Hashable

from ..ir.mutator import Mutator
from ..ir.nodes import AssignStmt, Expr, ForStmt, Program, Stmt, Var, WhileStmt
from .ir_query import (
    ARITH, Names, defined_vars, expr_vars, is_candidate, is_vf, is_vf_tile_operand, map_blocks,
    map_functions, map_own_exprs, own_exprs, rebuild, size, stmts_of, sub_exprs, with_body,
)
from .manager import PassContext
from .mutex_ops import is_lock, mutex_call

NAME = "common_subexpression"
Avail = dict[Expr, tuple[Var, frozenset[Var]]]  # value → (Var holding it, Vars it reads)


def run(program: Program, ctx: PassContext) -> Program:
    return map_functions(program, lambda f: with_body(f, _CSE(Names(f)).block(f.body, {})))


class _Replace(Mutator):
    """Replaces maximal subexpressions found in `avail` by their Vars (not inside VF tile
    operands when `vf`)."""

    def __init__(self, avail: dict[Expr, Var], vf: bool) -> None:
        self.avail = avail
        self.vf = vf

    def visit(self, node):
        if self.vf and is_vf_tile_operand(node):
            return node
        if isinstance(node, ARITH) and _hashable(node):
            holder = self.avail.get(node)
            if holder is not None:
                return holder
        return super().visit(node)


def _replace(s: Stmt, avail: dict[Expr, Var], vf: bool) -> Stmt:
    if not avail:
        return s
    return map_own_exprs(
        s, lambda e: _Replace(avail, vf).visit(e) if _mentions(e, avail, vf) else e)


def _mentions(e: Expr, avail: dict[Expr, Var], vf: bool) -> bool:
    return any(isinstance(n, ARITH) and _hashable(n) and n in avail for n in _visible(e, vf))


def _visible(e: Expr, vf: bool) -> list[Expr]:
    """The subexpressions of `e` the pass may name or replace: all of them, or in a VF section
    those outside its tile operands."""
    found = list(sub_exprs(e))
    if not vf:
        return found
    hidden = {id(n) for t in found if is_vf_tile_operand(t) for n in sub_exprs(t)}
    return [n for n in found if id(n) not in hidden]


def _hashable(e: Expr) -> bool:
    try:
        hash(e)
    except TypeError:
        return False
    return True


def _kill(avail: Avail, defined: set[Var]) -> None:
    for e, (v, reads) in list(avail.items()):
        if v in defined or reads & defined:
            del avail[e]


class _CSE:
    def __init__(self, names: Names, vf: bool = False) -> None:
        self.names = names
        self.vf = vf  # inside a VF section

    def block(self, body: Stmt | None, avail: Avail) -> Stmt | None:
        if body is None:
            return None
        stmts = self.reuse(list(stmts_of(body)), dict(avail), recurse=False)
        stmts = self.name_repeats(stmts)
        return rebuild(body, self.reuse(stmts, dict(avail), recurse=True))

    def reuse(self, stmts: list[Stmt], avail: Avail, recurse: bool) -> list[Stmt]:
        out = []
        for s in stmts:
            if mutex_call(s) is None:
                s = _replace(s, {e: v for e, (v, _) in avail.items()}, self.vf)
            if recurse:
                s = self.nested(s, avail)
            if isinstance(s, AssignStmt):
                _kill(avail, {s.var})
                reads = frozenset(expr_vars(s.value))
                if is_candidate(s.value) and s.var not in reads and \
                        s.var.type == s.value.type and _hashable(s.value):
                    avail[s.value] = (s.var, reads)
            else:
                _kill(avail, defined_vars(s))
            out.append(s)
        return out

    def nested(self, s: Stmt, avail: Avail) -> Stmt:
        if is_vf(s):
            return map_blocks(s, lambda b: _CSE(self.names, vf=True).block(b, {}))
        inner = dict(avail)
        if isinstance(s, (ForStmt, WhileStmt)):
            _kill(inner, defined_vars(s))  # re-assigned before later iterations
        return map_blocks(s, lambda b: self.block(b, inner))

    # ------------------------------------------------------------ naming repeats
    def name_repeats(self, stmts: list[Stmt]) -> list[Stmt]:
        while True:
            best = _best_repeat(stmts, self.vf)
            if best is None:
                return stmts
            expr, where = best
            first = where[0]
            temp = self.names.var("cse", expr)
            for i in where:
                stmts[i] = _replace(stmts[i], {expr: temp}, self.vf)
            at = first
            while at > 0 and _is_lock(stmts[at - 1]):
                at -= 1
            stmts.insert(at, AssignStmt(temp, expr, stmts[first].span))


def _is_lock(s: Stmt) -> bool:
    call = mutex_call(s)
    return call is not None and is_lock(call)


def _occurrences(s: Stmt, vf: bool) -> list[Expr]:
    """Candidate subexpressions a statement evaluates (the whole value of an assignment is
    left to reuse; mutex ids stay as written, mutex_dedup reads their structure)."""
    if mutex_call(s) is not None:
        return []
    found = []
    for e in own_exprs(s):
        top = e if isinstance(s, AssignStmt) else None
        found += [n for n in _visible(e, vf) if isinstance(n, Expr) and n is not top and
                  is_candidate(n) and _hashable(n)]
    return found


def _best_repeat(stmts: list[Stmt], vf: bool) -> tuple[Expr, list[int]] | None:
    """The largest candidate seen twice between re-assignments of its Vars, with the indices
    of the statements that evaluate it."""
    open_: dict[Hashable, list[int]] = {}
    done: list[tuple[Expr, list[int]]] = []
    for i, s in enumerate(stmts):
        for e in _occurrences(s, vf):
            open_.setdefault(e, []).append(i)
        killed = defined_vars(s)
        for e in [e for e in open_ if expr_vars(e) & killed]:
            done.append((e, open_.pop(e)))
    done += list(open_.items())
    repeats = [(e, seen) for e, seen in done if len(seen) >= 2]
    if not repeats:
        return None
    expr, seen = max(repeats, key=lambda r: (size(r[0]), -r[1][0]))
    return expr, sorted(set(seen))
