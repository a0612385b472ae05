"""Building and reading buffer-id mutex statements (`system.mutex_lock/unlock[_dyn]`, spec §2.12.3).

A lock with a compile-time id is `system.mutex_lock(pipe=P, mutex_id=N)`; a runtime id is the
first argument of `system.mutex_lock_dyn(id, pipe=P)`. Runtime ids are usually
`tile_group.mutex_id(g, idx, k=K)` (the K-th id of slot `idx` of group `g`) or `Select`s of
ids; `possible_ids` bounds the values such an expression can take, `tile_key` names the tile an
id belongs to. Shared by auto_mutex, constant_folding, redundant_mutex and mutex_dedup.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Hashable

from ..ir.nodes import Call, ConstInt, EvalStmt, Expr, Select, Stmt
from ..ir.span import UNKNOWN, Span
from ..ir.types import INDEX, PipeType, TileGroupType

LOCK, UNLOCK = "system.mutex_lock", "system.mutex_unlock"
MUTEX_OPS = frozenset({LOCK, UNLOCK, f"{LOCK}_dyn", f"{UNLOCK}_dyn"})
ALL_IDS = frozenset(range(32))


def mutex_call(stmt: Stmt) -> Call | None:
    """The lock/unlock call of a mutex statement, or None."""
    if isinstance(stmt, EvalStmt) and isinstance(stmt.expr, Call) and stmt.expr.op in MUTEX_OPS:
        return stmt.expr
    return None


def is_lock(call: Call) -> bool:
    return call.op.startswith(LOCK)


def pipe_of(call: Call) -> PipeType | None:
    return call.kwarg("pipe")


def id_of(call: Call) -> Expr:
    """The id a mutex call locks: a ConstInt for the static form, the argument for `_dyn`."""
    if call.op.endswith("_dyn"):
        return call.args[0]
    value = call.kwarg("mutex_id")
    return value if isinstance(value, Expr) else ConstInt(int(value), span=call.span)


def mutex_stmt(lock: bool, pipe: PipeType, mutex_id: Expr, span: Span = UNKNOWN,
               extra: tuple[tuple[str, object], ...] = ()) -> EvalStmt:
    """`mutex_lock`/`mutex_unlock` of `mutex_id` on `pipe` (the `_dyn` form for runtime ids)."""
    op = LOCK if lock else UNLOCK
    if isinstance(mutex_id, ConstInt):
        call = Call(op, (), (("pipe", pipe), ("mutex_id", mutex_id.value), *extra), span=span)
    else:
        call = Call(f"{op}_dyn", (mutex_id,), (("pipe", pipe), *extra), span=span)
    return EvalStmt(call, span)


def with_kwarg(call: Call, name: str, value: object) -> Call:
    kwargs = tuple((k, v) for k, v in call.kwargs if k != name)
    return dataclasses.replace(call, kwargs=kwargs + ((name, value),))


def slot_id(group: Expr, index: Expr, k: int, span: Span = UNKNOWN) -> Expr:
    """The k-th mutex id of slot `index` of `group`: a constant when the index is one."""
    gt: TileGroupType = group.type
    if isinstance(index, ConstInt):
        return ConstInt(gt.mutex_ids[index.value][k], span=span)
    return Call("tile_group.mutex_id", (group, index), (("k", k),), INDEX, span)


def possible_ids(e: Expr) -> frozenset[int]:
    """Every value the id expression `e` can take (all 32 ids when unknown)."""
    if isinstance(e, ConstInt):
        return frozenset({e.value})
    if isinstance(e, Select):
        return possible_ids(e.true_value) | possible_ids(e.false_value)
    if isinstance(e, Call) and e.op == "tile_group.mutex_id":
        rows = e.args[0].type.mutex_ids
        k = e.kwarg("k", 0)
        idx = e.args[1]
        if isinstance(idx, ConstInt):
            return frozenset({rows[idx.value][k]})
        return frozenset(row[k] for row in rows)
    return ALL_IDS


def tile_key(e: Expr) -> Hashable:
    """The tile an id expression belongs to: the expression with every `k=` erased."""
    if isinstance(e, Call) and e.op == "tile_group.mutex_id":
        return ("slot", e.args[0], e.args[1])
    if isinstance(e, Select):
        return ("select", e.cond, tile_key(e.true_value), tile_key(e.false_value))
    return ("id", e)


def same_tile(a: Expr, b: Expr) -> bool:
    """Two different ids of one tile (a tile's ids never repeat, so they never collide)."""
    if isinstance(a, ConstInt) or isinstance(b, ConstInt):
        return False
    return tile_key(a) == tile_key(b) and a != b
