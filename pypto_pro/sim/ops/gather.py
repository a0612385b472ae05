"""Gather and scatter (pipe V): `gather` by flat element index, `gatherb` by 32-byte block byte
offsets, `gathermask` by a fixed column pattern, `scatter` by flat element index.

Flat indices address the source (gather) or destination (scatter) tile's full row-major
[rows, cols] storage; out-of-range indices read 0 (pto-isa CPU model) or are dropped (scatter).
`gathermask` patterns (pto-isa MaskPattern / vreducev2): 1 even columns, 2 odd, 3/4/5/6 column
0/1/2/3 of every 4, 7 all.
"""
from __future__ import annotations

import torch

from pypto_pro.ir.dtype import DataType

from ..model.memory import storage_dtype
from . import SimOpError
from .operands import CmpMode, enum_arg, require_dtype, require_same_dtype, tile_arg

INDEX_TYPES = (DataType.INT16, DataType.UINT16, DataType.INT32, DataType.UINT32)
BLOCK_BYTES = 32
PATTERNS = {1: (2, 0), 2: (2, 1), 3: (4, 0), 4: (4, 1), 5: (4, 2), 6: (4, 3), 7: (1, 0)}


def _indices(tile, shape: tuple[int, int]) -> torch.Tensor:
    return tile.read_block(0, 0, *shape).to(torch.int64)


def gather(args: list, kwargs: dict) -> None:
    """`gather(out, src, idx[, tmp], offset=)`: out[r, c] = src_flat[idx[r, c] + offset]."""
    op = "block.gather"
    out, src, idx = (tile_arg(a, op=op, position=i) for i, a in enumerate(args[:3]))
    require_same_dtype(op, out, src)
    require_dtype(op, (idx,), INDEX_TYPES)
    if enum_arg(kwargs.get("cmp_mode"), CmpMode, CmpMode.EQ, op=op) is not CmpMode.EQ:
        raise SimOpError(f"{op}: compare-mode gather (cmp_mode != 0) is not modelled")
    flat = src.read_full().reshape(-1)
    where = _indices(idx, out.valid) + int(kwargs.get("offset", 0) or 0)
    inside = (where >= 0) & (where < flat.numel())
    picked = flat[where.clamp(0, flat.numel() - 1)]
    out.write(torch.where(inside, picked, torch.zeros((), dtype=picked.dtype)))


def gatherb(args: list, kwargs: dict) -> None:
    """`gatherb(out, src, offsets)`: 32-byte block b of out row r from src byte offsets[r, b]."""
    op = "block.gatherb"
    out, src, offsets = (tile_arg(a, op=op, position=i) for i, a in enumerate(args[:3]))
    require_same_dtype(op, out, src)
    per_block = BLOCK_BYTES // out.dtype.itemsize
    blocks = -(-out.valid_cols // per_block)
    raw = src.read_full().reshape(-1).view(torch.uint8)
    start = _indices(offsets, (out.valid_rows, blocks))
    byte = start[..., None] + torch.arange(BLOCK_BYTES)
    if byte.numel() and (int(byte.max()) >= raw.numel() or int(start.min()) < 0):
        raise SimOpError(f"{op}: a byte offset falls outside the {raw.numel()}-byte source tile")
    data = raw[byte].reshape(out.valid_rows, -1).view(storage_dtype(src.dtype))
    out.write(data[:, :out.valid_cols])


def gathermask(args: list, kwargs: dict) -> None:
    """`gathermask(out, src, pattern_mode=)`: the pattern's columns of each src row."""
    op = "block.gathermask"
    out, src = (tile_arg(a, op=op, position=i) for i, a in enumerate(args[:2]))
    if out.dtype.itemsize != src.dtype.itemsize:
        raise SimOpError(f"{op}: element sizes differ ({out.dtype.value}, {src.dtype.value})")
    mode = int(getattr(kwargs.get("pattern_mode"), "value", kwargs.get("pattern_mode") or 0))
    if mode not in PATTERNS:
        raise SimOpError(f"{op}: pattern_mode must be 1..7, got {mode}")
    step, first = PATTERNS[mode]
    picked = src.read()[:, first::step]
    out.write(picked.contiguous().view(storage_dtype(out.dtype)), offset=(0, 0))


def scatter(args: list, kwargs: dict) -> None:
    """`scatter(out, src, idx)`: out_flat[idx[r, c]] = src[r, c] over src's valid window."""
    op = "block.scatter"
    out, src, idx = (tile_arg(a, op=op, position=i) for i, a in enumerate(args[:3]))
    require_same_dtype(op, out, src)
    require_dtype(op, (idx,), INDEX_TYPES)
    flat = out.read_full().reshape(-1).clone()
    where = _indices(idx, src.valid).reshape(-1)
    values = src.read().reshape(-1)
    inside = (where >= 0) & (where < flat.numel())
    flat[where[inside]] = values[inside]
    out.write(flat.reshape(out.shape), offset=(0, 0))


IMPLS = {"block.gather": gather, "block.gatherb": gatherb, "block.gathermask": gathermask,
         "block.scatter": scatter}
