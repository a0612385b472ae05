"""Reductions (pipe V): `row_*` reduce each row of the source's valid window to a [rows, 1]
result, `col_*` each column to [1, cols]; sum, max, min, prod, argmax, argmin and the generic
`row_reduce`/`col_reduce` (kwarg `op`: SUM, MAX, MIN, PROD).

Float sums and products accumulate in float32 and round once into the output dtype; integer
ones in int64, wrapped. Arg-reductions write the first index of the extreme value as INT32 /
UINT32 (or any integer output). The `tmp` scratch operand is accepted and left untouched.
`BATCH_IMPLS` reduce the stacked sources of many cores at once (`batching`).
"""
from __future__ import annotations

from collections.abc import Callable

import torch

from pypto_pro.ir.dtype import DataType

from ..model.memory import TileRef
from ..step import Step
from . import SimOpError
from .batching import Writes, batched, column, stack_blocks, tile_writes
from .elementwise import NUMERIC, block_values
from .numerics import to_compute
from .operands import ReduceOp, encode, enum_arg, require_dtype, store, tile_arg

Reducer = Callable[[torch.Tensor, int], torch.Tensor]

REDUCERS: dict[str, Reducer] = {
    "sum": lambda x, d: x.sum(d, keepdim=True),
    "max": lambda x, d: x.amax(d, keepdim=True),
    "min": lambda x, d: x.amin(d, keepdim=True),
    "prod": lambda x, d: x.prod(d, keepdim=True),
    "argmax": lambda x, d: x.argmax(d, keepdim=True),
    "argmin": lambda x, d: x.argmin(d, keepdim=True),
}


def _checked(op: str, args: list, kind: str) -> tuple:
    """(out, src) of a reduction, their dtypes checked."""
    out, src = tile_arg(args[0], op=op, position=0), tile_arg(args[1], op=op, position=1)
    require_dtype(op, (src,), NUMERIC)
    if kind.startswith("arg"):
        if not out.dtype.is_int:
            raise SimOpError(f"{op}: index output must be an integer tile, not {out.dtype.value}")
    elif out.dtype is not src.dtype:
        raise SimOpError(f"{op}: output dtype {out.dtype.value} differs from source "
                         f"{src.dtype.value}")
    return out, src


def _reduce(op: str, args: list, kind: str, axis: int) -> None:
    """Reduce the source's valid window along `axis` (1: row_*, 0: col_*) into args[0]."""
    out, src = _checked(op, args, kind)
    if 0 in src.valid:
        return
    store(out, REDUCERS[kind](_source_values(src), axis), offset=(0, 0))


def _source_values(src: TileRef) -> torch.Tensor:
    """The source's valid window as compute values: decoded straight from the buffer when the
    window is a contiguous view of it (the layout a copy has, so the reduction adds in the same
    order; FP32 reduces the view itself), else from a copy. (The result is a new tensor, so a
    view is safe where the engine defers writes, as `block_operand`.)"""
    view = src.peek_view(0, 0, *src.valid)
    if view is None or not view.is_contiguous():
        return block_values(src, src.valid)
    return to_compute(view, src.dtype)


#: reductions with an `out=` form: a step reduces into one kept tensor, written by its own
#: kept step (FP32 values are stored as they are: `encode`)
_INTO = {"sum": torch.sum, "max": torch.amax, "min": torch.amin, "prod": torch.prod}


def _reduce_step(kind: str, axis: int) -> Callable[[list, dict], Step | None]:
    """`_reduce` of an FP32 source over its valid window when that is a contiguous view of the
    buffer (the same values as the copy `block_values` reads: the same layout)."""
    reducer, into = REDUCERS[kind], _INTO.get(kind)

    def step(args: list, kwargs: dict) -> Step | None:
        out, src = args[0], args[1]
        if src.dtype is not DataType.FP32 or 0 in src.valid:
            return None
        view = src.peek_view(0, 0, *src.valid)
        if view is None or not view.is_contiguous():
            return None
        result = reducer(view, axis)
        write = None if into is None or out.dtype is not DataType.FP32 else \
            out.write_step(result)
        if write is None:
            return Step(lambda: store(out, reducer(view, axis), offset=(0, 0)))
        write_run = write.run

        def reduce_into() -> None:
            into(view, axis, keepdim=True, out=result)
            write_run()
        return Step(reduce_into)
    return step


def _reduce_batch(op: str, calls: list[list], kind: str, axis: int) -> Writes:
    """`_reduce` of every call: the stacked sources reduced along `axis` + 1."""
    out, src = _checked(op, calls[0], kind)
    if 0 in src.valid:
        return []
    values = to_compute(stack_blocks(column(calls, 1), src.valid), src.dtype)
    return tile_writes(column(calls, 0), encode(out.dtype, REDUCERS[kind](values, axis + 1)),
                       (0, 0))


def _impl(kind: str, axis: int) -> Callable[[list, dict], None]:
    op = f"block.{'row' if axis == 1 else 'col'}_{kind}"

    def impl(args: list, kwargs: dict) -> None:
        _reduce(op, args, kind, axis)
    return impl


def _generic(axis: int) -> Callable[[list, dict], None]:
    op = f"block.{'row' if axis == 1 else 'col'}_reduce"

    def impl(args: list, kwargs: dict) -> None:
        which = enum_arg(kwargs.get("op", kwargs.get("mode")), ReduceOp, op=op)
        _reduce(op, args, which.name.lower(), axis)
    return impl


def _batch(kind: str | None, axis: int) -> Callable[[list[list], dict], Writes]:
    """The batch compute of `row_<kind>` / `col_<kind>` (kind None: the generic reduce)."""
    op = f"block.{'row' if axis == 1 else 'col'}_{kind or 'reduce'}"

    def compute(calls: list[list], kwargs: dict) -> Writes:
        which = kind or enum_arg(kwargs.get("op", kwargs.get("mode")), ReduceOp,
                                 op=op).name.lower()
        return _reduce_batch(op, calls, which, axis)
    return compute


IMPLS = {
    **{f"block.row_{k}": _impl(k, 1) for k in REDUCERS},
    **{f"block.col_{k}": _impl(k, 0) for k in REDUCERS},
    "block.row_reduce": _generic(1),
    "block.col_reduce": _generic(0),
}

STEPS = {f"block.{'row' if axis == 1 else 'col'}_{k}": _reduce_step(k, axis)
         for k in REDUCERS for axis in (1, 0)}

BATCH_IMPLS = {
    **{f"block.row_{k}": batched(IMPLS[f"block.row_{k}"], _batch(k, 1)) for k in REDUCERS},
    **{f"block.col_{k}": batched(IMPLS[f"block.col_{k}"], _batch(k, 0)) for k in REDUCERS},
    "block.row_reduce": batched(IMPLS["block.row_reduce"], _batch(None, 1)),
    "block.col_reduce": batched(IMPLS["block.col_reduce"], _batch(None, 0)),
}
