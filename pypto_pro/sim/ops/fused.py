"""Fused vector ops (pipe V) that the real code generator lowers to several pto-isa instructions
working through their first input `lhs`, which they overwrite (the real docs say so):

* `add_relu` / `sub_relu`: `TADD` / `TSUB(lhs, lhs, rhs)`, `TRELU(out, lhs)`;
* `add_relu_cast` / `sub_relu_cast`: `TADD` / `TSUB(lhs, lhs, rhs)`, `TRELU(lhs, lhs)`,
  `TCVT(out, lhs, mode)`; `mul_cast`: `TMUL(lhs, lhs, rhs)`, `TCVT(out, lhs, mode)` (`mode`
  defaults to CAST_ROUND, as `pl.add_relu_cast` & co. declare it);
* `mul_add_dst`: `TMUL(lhs, lhs, rhs)`, `TADD(out, lhs, out)`;
* `fused_mul_add`: `TMUL(lhs, lhs, out)`, `TADD(out, lhs, rhs)`;
* `fused_mul_add_relu`: `TMUL(lhs, lhs, out)`, `TADD(lhs, lhs, rhs)`, `TRELU(out, lhs)`.

Each op runs that sequence (`_Sequence`): a step works over its destination's valid window,
rounds (floats) or wraps (integers) its result into the destination's dtype, and the steps after
it read what it wrote, so an output that is also an input sees the earlier steps. All writes
land at the op's end, after every read.
"""
from __future__ import annotations

from collections.abc import Callable

import torch

from ..model.memory import TileRef
from . import SimOpError
from .convert import convert
from .elementwise import NUMERIC, block_values
from .numerics import RoundMode, to_compute
from .operands import (
    dtype_arg,
    encode,
    require_dtype,
    require_same_dtype,
    round_mode,
    tile_arg,
)


class _Sequence:
    """Instructions run one after another inside one op: each reads the tiles as the ones
    before it left them (kept here, whole tiles in their stored dtype, keyed by memory and
    geometry); `commit` writes every changed window."""

    def __init__(self) -> None:
        self._values: dict[tuple[int, object], torch.Tensor] = {}
        self._written: list[TileRef] = []

    @staticmethod
    def _key(tile: TileRef) -> tuple[int, object]:
        return id(tile.memory), tile.geometry

    def read(self, tile: TileRef, shape: tuple[int, int]) -> torch.Tensor:
        """The top-left `shape` block of `tile` as compute values."""
        kept = self._values.get(self._key(tile))
        if kept is None:
            return block_values(tile, shape)
        return to_compute(kept[:shape[0], :shape[1]], tile.dtype)

    def put(self, tile: TileRef, stored: torch.Tensor) -> None:
        """`stored` (the tile's dtype) into `tile`'s valid window."""
        key = self._key(tile)
        whole = self._values.get(key)
        if whole is None:
            whole = self._values[key] = tile.read_full()
        whole[:tile.valid_rows, :tile.valid_cols] = stored
        self._written.append(tile)

    def step(self, dst: TileRef, fn: Callable[..., torch.Tensor], *srcs: TileRef) -> None:
        """`dst = fn(*srcs)` over `dst`'s valid window."""
        self.put(dst, encode(dst.dtype, fn(*(self.read(s, dst.valid) for s in srcs))))

    def commit(self) -> None:
        for tile in self._written:
            tile.write(self._values[self._key(tile)][:tile.valid_rows, :tile.valid_cols])


def _tiles(op: str, args: list, same_out: bool) -> tuple[TileRef, TileRef, TileRef]:
    """(out, lhs, rhs): lhs and rhs of one numeric dtype, `out` too when `same_out`."""
    out, lhs, rhs = (tile_arg(a, op=op, position=i) for i, a in enumerate(args[:3]))
    require_same_dtype(op, *((out, lhs, rhs) if same_out else (lhs, rhs)))
    require_dtype(op, (lhs,), NUMERIC)
    return out, lhs, rhs


def _sequence_impl(fn: Callable[[TileRef, TileRef, TileRef, _Sequence], None]
                   ) -> Callable[[list, dict], None]:
    """The impl of an op whose steps `fn` runs on (out, lhs, rhs), all of one dtype."""
    def impl(args: list, kwargs: dict) -> None:
        seq = _Sequence()
        fn(*_tiles(f"block.{fn.__name__}", args, same_out=True), seq)
        seq.commit()
    return impl


def add_relu(out: TileRef, lhs: TileRef, rhs: TileRef, seq: _Sequence) -> None:
    seq.step(lhs, torch.add, lhs, rhs)
    seq.step(out, torch.relu, lhs)


def sub_relu(out: TileRef, lhs: TileRef, rhs: TileRef, seq: _Sequence) -> None:
    seq.step(lhs, torch.sub, lhs, rhs)
    seq.step(out, torch.relu, lhs)


def mul_add_dst(out: TileRef, lhs: TileRef, rhs: TileRef, seq: _Sequence) -> None:
    seq.step(lhs, torch.mul, lhs, rhs)
    seq.step(out, torch.add, lhs, out)


def fused_mul_add(out: TileRef, lhs: TileRef, rhs: TileRef, seq: _Sequence) -> None:
    seq.step(lhs, torch.mul, lhs, out)
    seq.step(out, torch.add, lhs, rhs)


def fused_mul_add_relu(out: TileRef, lhs: TileRef, rhs: TileRef, seq: _Sequence) -> None:
    seq.step(lhs, torch.mul, lhs, out)
    seq.step(lhs, torch.add, lhs, rhs)
    seq.step(out, torch.relu, lhs)


#: fused cast → (its op on lhs, whether TRELU(lhs, lhs) follows)
CASTS: dict[str, tuple[Callable[[torch.Tensor, torch.Tensor], torch.Tensor], bool]] = {
    "add_relu_cast": (torch.add, True), "sub_relu_cast": (torch.sub, True),
    "mul_cast": (torch.mul, False),
}


def _cast_impl(name: str) -> Callable[[list, dict], None]:
    fn, relu = CASTS[name]
    op = f"block.{name}"

    def impl(args: list, kwargs: dict) -> None:
        out, lhs, rhs = _tiles(op, args, same_out=False)
        target = dtype_arg(kwargs.get("target_type", out.dtype), op=op)
        if target is not out.dtype:
            raise SimOpError(f"{op}: target_type {target.value} differs from the output tile's "
                             f"{out.dtype.value}")
        mode = round_mode(kwargs, RoundMode.CAST_ROUND, op=op)
        seq = _Sequence()
        seq.step(lhs, fn, lhs, rhs)
        if relu:
            seq.step(lhs, torch.relu, lhs)
        seq.put(out, convert(seq.read(lhs, out.valid), lhs.dtype, out.dtype, mode))
        seq.commit()
    return impl


_THROUGH_LHS = (add_relu, sub_relu, mul_add_dst, fused_mul_add, fused_mul_add_relu)

IMPLS = {
    **{f"block.{fn.__name__}": _sequence_impl(fn) for fn in _THROUGH_LHS},
    **{f"block.{name}": _cast_impl(name) for name in CASTS},
}

__all__ = ["IMPLS"]
