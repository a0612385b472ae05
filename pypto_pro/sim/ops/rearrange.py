"""Rearranging vector ops (pipe V): `transpose` and the pad fillers `fillpad`,
`fillpad_expand`, `fillpad_inplace`.

`transpose(out, src)` writes the [cols, rows] transpose of src's valid window. The fillpad ops
write the whole output tile: src's valid window where it lies, the output tile's pad value
elsewhere (TilePad zero: 0; max / min: +inf / -inf for floats with infinity, the integer
limits otherwise [pto-isa TFillPad]).
"""
from __future__ import annotations

import torch

from pypto_pro.ir.types import TilePad

from ..model.memory import TileRef, storage_dtype
from . import SimOpError
from .numerics import int_range
from .operands import require_same_dtype, tile_arg


def transpose(args: list, kwargs: dict) -> None:
    """`transpose(out, src)`: out[c, r] = src[r, c] over src's valid window."""
    out, src = (tile_arg(a, op="block.transpose", position=i) for i, a in enumerate(args[:2]))
    require_same_dtype("block.transpose", out, src)
    out.write(src.read().t().contiguous(), offset=(0, 0))


def pad_value(tile: TileRef) -> float | int:
    """The fill value of `tile`'s TilePad."""
    pad, dtype = tile.geometry.pad, tile.dtype
    if pad is TilePad.null:
        raise SimOpError(f"fillpad: the output tile's pad is null ({tile})")
    if pad is TilePad.zero:
        return 0
    if dtype.is_float:
        return float("inf") if pad is TilePad.max else float("-inf")
    low, high = int_range(dtype)
    return high if pad is TilePad.max else low


def _fill(op: str, out: TileRef, src: TileRef) -> None:
    if out.dtype.itemsize != src.dtype.itemsize:
        raise SimOpError(f"{op}: element sizes differ ({out.dtype.value}, {src.dtype.value})")
    rows, cols = out.shape
    if src.valid_rows > rows or src.valid_cols > cols:
        raise SimOpError(f"{op}: source valid window {list(src.valid)} exceeds the output "
                         f"tile {list(out.shape)}")
    window = src.read().view(storage_dtype(out.dtype))
    full = torch.full((rows, cols), pad_value(out)).to(storage_dtype(out.dtype))
    full[:src.valid_rows, :src.valid_cols] = window
    out.write(full, offset=(0, 0))


def fillpad(args: list, kwargs: dict) -> None:
    """`fillpad(out, src)`: out and src have the same shape."""
    out, src = (tile_arg(a, op="block.fillpad", position=i) for i, a in enumerate(args[:2]))
    if out.shape != src.shape:
        raise SimOpError(f"block.fillpad: shapes differ {list(out.shape)} vs {list(src.shape)}"
                         " (use mode=EXPAND)")
    _fill("block.fillpad", out, src)


def fillpad_expand(args: list, kwargs: dict) -> None:
    """`fillpad_expand(out, src)`: out may be larger than src."""
    out, src = (tile_arg(a, op="block.fillpad_expand", position=i) for i, a in enumerate(args[:2]))
    _fill("block.fillpad_expand", out, src)


def fillpad_inplace(args: list, kwargs: dict) -> None:
    """`fillpad_inplace(out[, src])`: pad out itself outside src's (default: out's) window."""
    out = tile_arg(args[0], op="block.fillpad_inplace", position=0)
    src = tile_arg(args[1], op="block.fillpad_inplace", position=1) if len(args) > 1 else out
    _fill("block.fillpad_inplace", out, src)


IMPLS = {"block.transpose": transpose, "block.fillpad": fillpad,
         "block.fillpad_expand": fillpad_expand, "block.fillpad_inplace": fillpad_inplace}
