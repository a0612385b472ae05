"""Compare and select (pipe V): `cmp`/`cmps` write a bit-packed UINT8 mask, `sel`/`sels` read it.

Mask format: bit i of byte j is element 8j+i of the row-flattened valid window (row-major over
the valid rows and columns), bytes written from the mask tile's address on; bits beyond the
last element of the final byte are zero. `cmp_mode` is pto-isa `CmpMode` (EQ=0 NE=1 LT=2 LE=3
GT=4 GE=5). The select's `tmp` operand is accepted and never touched (as in the real backend).
"""
from __future__ import annotations

import torch

from pypto_pro.ir.dtype import DataType

from ..model.memory import TileRef, storage_dtype
from . import SimOpError
from .elementwise import NUMERIC, block_values, scalar_in_dtype
from .operands import CmpMode, enum_arg, require_dtype, require_same_dtype, store, tile_arg

_COMPARE = {
    CmpMode.EQ: torch.eq, CmpMode.NE: torch.ne, CmpMode.LT: torch.lt,
    CmpMode.LE: torch.le, CmpMode.GT: torch.gt, CmpMode.GE: torch.ge,
}
_BIT_WEIGHTS = torch.tensor([1 << i for i in range(8)], dtype=torch.int64)


def pack_mask(bits: torch.Tensor) -> torch.Tensor:
    """Booleans (any shape, row-major order) to packed uint8 bytes, LSB first."""
    flat = bits.reshape(-1).to(torch.int64)
    padded = torch.zeros(-(-flat.numel() // 8) * 8, dtype=torch.int64)
    padded[:flat.numel()] = flat
    return (padded.reshape(-1, 8) * _BIT_WEIGHTS).sum(1).to(torch.uint8)


def unpack_mask(packed: torch.Tensor, count: int) -> torch.Tensor:
    """The first `count` booleans of packed uint8 bytes, LSB first."""
    bits = (packed.to(torch.int64)[:, None] & _BIT_WEIGHTS) != 0
    return bits.reshape(-1)[:count]


def _mask_bytes_view(mask: TileRef, nbytes: int) -> tuple[int, int]:
    """The (rows, cols) block of the mask tile covering its first `nbytes` bytes (ND, row-major)."""
    if mask.dtype not in (DataType.UINT8, DataType.INT8, DataType.BOOL):
        raise SimOpError(f"mask tile must be UINT8, not {mask.dtype.value}")
    cols = mask.shape[1]
    if nbytes > mask.shape[0] * cols:
        raise SimOpError(f"mask tile {list(mask.shape)} holds {mask.shape[0] * cols} bytes, "
                         f"{nbytes} needed")
    return -(-nbytes // cols), cols


def write_mask(mask: TileRef, bits: torch.Tensor) -> None:
    packed = pack_mask(bits)
    rows, cols = _mask_bytes_view(mask, packed.numel())
    block = mask.read_block(0, 0, rows, cols).reshape(-1).view(torch.uint8).clone()
    block[:packed.numel()] = packed
    mask.write(block.view(storage_dtype(mask.dtype)).reshape(rows, cols), offset=(0, 0))


def read_mask(mask: TileRef, count: int) -> torch.Tensor:
    rows, cols = _mask_bytes_view(mask, -(-count // 8))
    return unpack_mask(mask.read_block(0, 0, rows, cols).reshape(-1).view(torch.uint8), count)


def _compare(op: str, args: list, kwargs: dict, rhs_is_tile: bool) -> None:
    out, lhs = tile_arg(args[0], op=op, position=0), tile_arg(args[1], op=op, position=1)
    require_dtype(op, (lhs,), NUMERIC)
    mode = enum_arg(kwargs.get("cmp_mode"), CmpMode, CmpMode.EQ, op=op)
    a = block_values(lhs, lhs.valid)
    if rhs_is_tile:
        rhs = tile_arg(args[2], op=op, position=2)
        require_same_dtype(op, lhs, rhs)
        b = block_values(rhs, lhs.valid)
    else:
        b = scalar_in_dtype(args[2], lhs.dtype)
    write_mask(out, _COMPARE[mode](a, b))


def cmp(args: list, kwargs: dict) -> None:
    """`cmp(mask, lhs, rhs, cmp_mode=)`: packed lhs <op> rhs over lhs's valid window."""
    _compare("block.cmp", args, kwargs, rhs_is_tile=True)


def cmps(args: list, kwargs: dict) -> None:
    """`cmps(mask, lhs, scalar, cmp_mode=)`."""
    _compare("block.cmps", args, kwargs, rhs_is_tile=False)


def _select(op: str, args: list, rhs_is_tile: bool) -> None:
    out, mask, lhs = (tile_arg(a, op=op, position=i) for i, a in enumerate(args[:3]))
    require_same_dtype(op, out, lhs)
    require_dtype(op, (out,), NUMERIC)
    bits = read_mask(mask, out.valid_rows * out.valid_cols).reshape(out.valid)
    a = block_values(lhs, out.valid)
    if rhs_is_tile:
        rhs = tile_arg(args[3], op=op, position=3)
        require_same_dtype(op, out, rhs)
        b = block_values(rhs, out.valid)
    else:
        b = scalar_in_dtype(args[3], out.dtype).expand(out.valid)
    store(out, torch.where(bits, a, b))


def sel(args: list, kwargs: dict) -> None:
    """`sel(out, mask, lhs, rhs[, tmp])`: lhs where the mask bit is set, else rhs."""
    _select("block.sel", args, rhs_is_tile=True)


def sels(args: list, kwargs: dict) -> None:
    """`sels(out, mask, lhs, scalar[, tmp])`."""
    _select("block.sels", args, rhs_is_tile=False)


IMPLS = {"block.cmp": cmp, "block.cmps": cmps, "block.sel": sel, "block.sels": sels}
