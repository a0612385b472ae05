"""redundant_mutex: drop lock/unlock pairs that protect nothing or release only to re-acquire.

In one statement list, `mutex_lock(P, id)` followed by `mutex_unlock(P, id)` with only other
mutex statements of pipe P in between protects nothing; `mutex_unlock(P, id)` followed by
`mutex_lock(P, id)` the same way re-acquires what it just released, so pipe P simply keeps the
id across both ops (P runs in order, and no other pipe issues anything in between). Both pairs
are removed until none is left. Ids match when they are the same constant or the same
expression; locks that differ in any other keyword are left alone.
"""
from __future__ import annotations

from ..ir.nodes import Call, Program, Stmt
from .ir_query import map_blocks, map_functions, rebuild, stmts_of, with_body
from .manager import PassContext
from .mutex_ops import id_of, is_lock, mutex_call, pipe_of

NAME = "redundant_mutex"


def run(program: Program, ctx: PassContext) -> Program:
    return map_functions(program, lambda f: with_body(f, _block(f.body)))


def _signature(call: Call) -> tuple:
    rest = tuple((k, v) for k, v in call.kwargs if k not in ("pipe", "mutex_id"))
    return pipe_of(call), id_of(call), rest


def _partner(stmts: list[Stmt], i: int) -> int | None:
    """The index of the statement that cancels the mutex statement at `i`, if any."""
    first = mutex_call(stmts[i])
    pipe = pipe_of(first)
    for j in range(i + 1, len(stmts)):
        call = mutex_call(stmts[j])
        if call is None or pipe_of(call) != pipe:
            return None
        if _signature(call) == _signature(first):
            return j if is_lock(call) != is_lock(first) else None
    return None


def _block(body: Stmt | None) -> Stmt | None:
    if body is None:
        return None
    stmts = [map_blocks(s, _block) for s in stmts_of(body)]
    i = 0
    while i < len(stmts):
        j = _partner(stmts, i) if mutex_call(stmts[i]) is not None else None
        if j is None:
            i += 1
            continue
        del stmts[j], stmts[i]
        i = max(i - 1, 0)
    return rebuild(body, stmts)
