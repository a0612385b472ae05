"""One op run for many cores at once (`BATCH_IMPLS`; DESIGN §5 "Speed of the simulator").

A batch is a list of per-core argument lists (`calls`) for one op and one kwargs, each exactly
what `IMPLS[op]` receives, on distinct cores; its effect is exactly that of
`for args in calls: IMPLS[op](args, kwargs)`. `batched(impl, compute)` builds a batch impl from
the op's own `impl` and a `compute` that reads every call's operands (stacking the per-core
blocks into one [B, rows, cols] tensor, so the math is one torch call per batch), computes, and
returns the writes, which then land in call order through the operands' own writing methods
(the engine's deferring proxies keep working). A memory-bound op may instead return each call's
whole per-core step as its write: calls whose tiles live in their own core's memory only
(checked for every batch) cannot see each other's writes, so that is the loop minus the
per-call checks. A batch that does not fit (`compute` returns None: mixed shapes, a NaN the
per-core path treats apart, ...), whose calls share a memory (a write of one call could change
what another reads) or whose compute raises runs the sequential loop instead, so values and
errors are those of the loop. An exception leaving a batch carries the index of the call that
raised (`error_index`).

Calls with equal, non-None `batch_key(op, args, kwargs)` may share a batch: same op and kwargs,
tile operands with the same geometry object (space, address, shape, dtype, layout) and valid
shape, GM operands with the same dtype, shape and strides, equal scalars (type and sign
included), offset tuples of the same length (their values are per core); calls with other
operands (tile pairs, SIMT launches, ...) never share one. Calling a batch impl checks that its
calls share a key (else: the loop); `run_grouped(batch_impl, calls, kwargs)` skips the check for
a caller that grouped them by it (the functional engine).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

from ..model.memory import GMRef, TileRef

#: valid elements from which an element-wise op on a core's own tiles is memory-bound: its
#: batch runs the calls one by one (in place), and the functional engine runs such calls at
#: issue (`BatchedOp.at_issue`), where each core's tiles are still in cache (a round of 32
#: cores' tiles is not)
LARGE = 4096
#: what a batch's compute returns: (call index, writing method, its arguments) in call order
Writes = list[tuple[int, Callable[..., None], tuple]]
Compute = Callable[[list[list], dict], "Writes | None"]
_SCALARS = (int, float, bool)
#: what `compute` may raise for operands the per-core impl rejects (it then reports them)
_OP_ERRORS = (IndexError, ValueError, TypeError, RuntimeError)


def batch_key(op: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> tuple | None:
    """The grouping key of one call (module docstring); None: run it on its own. A flat tuple
    (each operand adds a marker of its kind, then its fields): one per issued op, so cheap."""
    parts: list[Any] = [op]
    for a in args:
        t = type(a)
        if t is TileRef or (t is not tuple and t is not list and isinstance(a, TileRef)):
            # the geometry object: equal tile types at one address share it (memory.py)
            parts += (TileRef, id(a.geometry), a.valid_rows, a.valid_cols)
        elif t is tuple or t is list:  # offsets: per core
            if a and isinstance(a[0], TileRef):
                return None  # a tile pair (Acc -> two UBs): not batched
            parts += (t, len(a))
        elif t is int or t is bool:
            parts += (t, a)
        elif t is float:
            parts += (t, a, math.copysign(1.0, a))  # -0.0 == 0.0, yet they differ
        elif isinstance(a, GMRef):
            parts += (GMRef, id(a.dtype), a.shape, a.strides)
        elif a is None:
            parts.append(None)
        else:
            return None  # SIMT launches, ...: not batched
    if kwargs:
        items = tuple(kwargs.items())
        try:
            hash(items)
        except TypeError:
            return None
        parts.append(items)
    return tuple(parts)


def error_index(err: BaseException) -> int:
    """The position in its batch of the call that raised `err` (0 outside a batch)."""
    return getattr(err, "batch_index", 0)


def run_sequential(impl: Callable[[list, dict], object], calls: list[list], kwargs: dict) -> None:
    """The reference semantics: each call in order, the failing call's index on its error."""
    for i, args in enumerate(calls):
        try:
            impl(args, kwargs)
        except Exception as err:
            err.batch_index = i  # type: ignore[attr-defined]
            raise


class BatchedOp:
    """A batch impl built from the op's own `impl` and a `compute` (module docstring).
    Calling it checks that the calls share a `batch_key`; `run_grouped` trusts a caller that
    grouped them by it (the functional engine). `at_issue(args)`, when given, is True for a
    call a batch would only run on its own (memory-bound work): better run where it is
    issued."""

    __slots__ = ("impl", "compute", "at_issue")

    def __init__(self, impl: Callable[[list, dict], object], compute: Compute,
                 at_issue: Callable[[list], bool] | None = None) -> None:
        self.impl, self.compute, self.at_issue = impl, compute, at_issue

    def __call__(self, calls: list[list], kwargs: dict) -> None:
        first = _operand_key(calls[0]) if calls else None
        if first is None or any(_operand_key(args) != first for args in calls[1:]):
            run_sequential(self.impl, calls, kwargs)
        else:
            self.run_grouped(calls, kwargs)

    def run_grouped(self, calls: list[list], kwargs: dict) -> None:
        """The batch, its calls known to share a `batch_key`."""
        writes = None
        if len(calls) > 1 and _disjoint(calls):
            try:
                writes = self.compute(calls, kwargs)
            except _OP_ERRORS:
                writes = None  # the loop raises it for the right call
        if writes is None:
            run_sequential(self.impl, calls, kwargs)
            return
        for index, write, args in writes:
            try:
                write(*args)
            except Exception as err:
                err.batch_index = index  # type: ignore[attr-defined]
                raise


def batched(impl: Callable[[list, dict], object], compute: Compute,
            at_issue: Callable[[list], bool] | None = None) -> BatchedOp:
    """The batch impl of the op whose per-core impl is `impl` (module docstring)."""
    return BatchedOp(impl, compute, at_issue)


def always(args: list) -> bool:
    """`at_issue` of data movement: one copy per core whatever the batch."""
    return True


def large(tile: object) -> bool:
    """`tile` is a tile whose valid window has `LARGE` elements or more."""
    return isinstance(tile, TileRef) and tile.valid_rows * tile.valid_cols >= LARGE


def run_grouped(batch_impl: Callable[[list[list], dict], None], calls: list[list],
                kwargs: dict) -> None:
    """Run `calls`, grouped by `batch_key`, through `batch_impl` (without checking again)."""
    getattr(batch_impl, "run_grouped", batch_impl)(calls, kwargs)


def _operand_key(args: Sequence[Any]) -> tuple | None:
    return batch_key("", args, {})


def _disjoint(calls: list[list]) -> bool:
    """No memory (a core's on-chip buffers) holds tile operands of two different calls."""
    owner: dict[int, int] = {}
    for i, args in enumerate(calls):
        for a in args:
            if isinstance(a, TileRef) and owner.setdefault(id(a.memory), i) != i:
                return False
    return True


# ---------------------------------------------------------------- helpers for `compute`


def column(calls: list[list], position: int) -> list:
    """Argument `position` of every call."""
    return [args[position] for args in calls]


def stack_blocks(tiles: list[TileRef], shape: tuple[int, int]) -> torch.Tensor:
    """The top-left `shape` block of every tile, stacked: [B, rows, cols] of the storage dtype
    (a new tensor: nothing written later changes it)."""
    return torch.stack([t.peek_block(0, 0, *shape) for t in tiles])


def per_call(impl: Callable[[list, dict], object], calls: list[list], kwargs: dict) -> Writes:
    """Each call's whole per-core step as its write (module docstring: memory-bound ops)."""
    return [(i, impl, (args, kwargs)) for i, args in enumerate(calls)]


def tile_writes(outs: list[TileRef], data: torch.Tensor,
                offset: tuple[int, int] | None = None) -> Writes:
    """`outs[i].write(data[i], offset)` for every call (data in the tiles' storage dtype)."""
    if offset is None:
        return [(i, out.write, (data[i],)) for i, out in enumerate(outs)]
    return [(i, out.write, (data[i], offset)) for i, out in enumerate(outs)]
