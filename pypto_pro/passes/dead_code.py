"""dead_code: remove unreachable statements, unused pure assignments and empty control flow.

Statements after a `return`, `break` or `continue` in the same list never run. A pure assignment
(scalar arithmetic, `tile_group.get`, `tile_group.mutex_id`) whose value is overwritten before
any read goes. A Var whose every assignment is pure and whose value no statement that stays
reads is dropped with all its assignments — the transitive closure from the statements that
must stay, so a counter that only feeds itself (`c = c + 1`) goes too. An `if` with two empty
branches and a `for` with an empty body go; an `if` whose then-branch is empty is inverted.
Repeats until nothing changes.
"""
from __future__ import annotations

from ..ir.nodes import (
    AssignStmt, Call, ForStmt, IfStmt, Program, SeqStmts, Stmt, UnaryExpr, UnOp, Var,
)
from ..ir.types import BOOL
from .ir_query import (
    expr_vars, falls_through, is_pure_scalar, iter_stmts, map_blocks, map_functions,
    own_exprs, rebuild, replace_fields, stmts_of, with_body,
)
from .liveness import Liveness
from .manager import PassContext

NAME = "dead_code"
PURE_TILE_CALLS = ("tile_group.get",)


def run(program: Program, ctx: PassContext) -> Program:
    return map_functions(program, lambda f: with_body(f, _clean(f.body)))


def _clean(body: Stmt) -> Stmt:
    while True:
        new = _drop(body, _dead_stores(body))
        new = _simplify(_drop(new, _dead_vars(new)))
        if new is body:
            return body
        body = new


def _is_pure_value(value) -> bool:
    if isinstance(value, Call) and value.op in PURE_TILE_CALLS:
        return all(is_pure_scalar(a) for a in value.args)
    return is_pure_scalar(value)


def _dead_vars(body: Stmt) -> set[Var]:
    """Vars only assigned pure values whose values nothing that stays ever reads."""
    candidates: set[Var] = set()
    impure: set[Var] = set()
    for s in iter_stmts(body):
        if isinstance(s, AssignStmt):
            (candidates if _is_pure_value(s.value) else impure).add(s.var)
    candidates -= impure
    feeds: dict[Var, set[Var]] = {v: set() for v in candidates}
    live: set[Var] = set()
    for s in iter_stmts(body):
        reads = set().union(*(expr_vars(e) for e in own_exprs(s)))
        if isinstance(s, AssignStmt) and s.var in candidates:
            feeds[s.var] |= reads
        else:
            live |= reads
    work = [v for v in live if v in candidates]
    while work:
        for r in feeds[work.pop()]:
            if r in candidates and r not in live:
                live.add(r)
                work.append(r)
    return candidates - live


def _dead_stores(body: Stmt) -> set[int]:
    """Pure assignments whose value is overwritten before anything reads it."""
    live = Liveness(body)
    return {id(s) for s in iter_stmts(body) if isinstance(s, AssignStmt)
            and _is_pure_value(s.value) and s.var not in live.after(s)}


def _drop(body: Stmt | None, dead: set) -> Stmt | None:
    """`body` without the assignments to the Vars (or the statements, by id) in `dead`."""
    if body is None or not dead:
        return body
    kept = [map_blocks(s, lambda b: _drop(b, dead)) for s in stmts_of(body)
            if not (isinstance(s, AssignStmt) and (s.var in dead or id(s) in dead))]
    return rebuild(body, kept)


def _simplify(body: Stmt | None) -> Stmt | None:
    """Unreachable tails, empty ifs and empty loops removed; empty then-branches inverted."""
    if body is None:
        return None
    out: list[Stmt] = []
    for s in stmts_of(body):
        s = map_blocks(s, _simplify)
        out.extend(_simplify_one(s))
        if not falls_through(s):
            break
    return rebuild(body, out)


def _empty(body: Stmt | None) -> bool:
    return body is None or (isinstance(body, SeqStmts) and not body.stmts)


def _simplify_one(s: Stmt) -> list[Stmt]:
    if isinstance(s, IfStmt) and not s.return_vars and _empty(s.then_body):
        if _empty(s.else_body):
            return [] if is_pure_scalar(s.cond) else [s]
        cond = UnaryExpr(UnOp.Not, s.cond, BOOL, s.cond.span)
        return [replace_fields(s, cond=cond, then_body=s.else_body, else_body=None)]
    if isinstance(s, IfStmt) and _empty(s.else_body) and s.else_body is not None:
        return [replace_fields(s, else_body=None)]
    if isinstance(s, ForStmt) and not s.iter_args and _empty(s.body) and all(
            is_pure_scalar(e) for e in (s.start, s.stop, s.step)):
        return []
    return [s]
