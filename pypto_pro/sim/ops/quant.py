"""Vector quantisation (pipe V): `quant` (FP32 -> INT8 symmetric / UINT8 asymmetric) and
`dequant` (integer -> float).

pto-isa TQUANT: out = clamp(rint(src * scale[r]), -128, 127) for SYM (INT8 output) and
clamp(rint(src * scale[r] + offset[r]), 0, 255) for ASYM (UINT8 output), products in fp32.
`dequant`: out = (src - offset[r]) * scale[r], rounded once into the output dtype. Scale and
offset are per-row parameter tiles ([rows, 1]; a row past the tile's valid rows reuses its last
valid row) or Python scalars.
"""
from __future__ import annotations

import torch

from pypto_pro.ir.dtype import DataType

from ..model.memory import TileRef
from . import SimOpError
from .elementwise import FLOATS, block_values
from .numerics import RoundMode, float_to_stored
from .operands import QuantMode, enum_arg, require_dtype, store, tile_arg


def row_parameter(param: object, rows: int, *, op: str) -> torch.Tensor:
    """A per-row parameter as a float32 [rows, 1] column (tile) or a 0-d tensor (scalar)."""
    if isinstance(param, TileRef):
        column = block_values(param, (param.valid_rows, 1)).to(torch.float32)
        return column[torch.arange(rows).clamp(max=param.valid_rows - 1)]
    if isinstance(param, (int, float)):
        return torch.tensor(float(param), dtype=torch.float32)
    raise SimOpError(f"{op}: scale/offset must be a tile or a scalar, got {type(param).__name__}")


def quant(args: list, kwargs: dict) -> None:
    """`quant(out, src, scale[, offset], mode=SYM|ASYM)`."""
    op = "block.quant"
    out, src = tile_arg(args[0], op=op, position=0), tile_arg(args[1], op=op, position=1)
    require_dtype(op, (src,), (DataType.FP32,))
    mode = enum_arg(kwargs.get("mode"), QuantMode, QuantMode.SYM, op=op)
    rows = out.valid_rows
    scaled = block_values(src, out.valid) * row_parameter(args[2], rows, op=op)
    if mode is QuantMode.SYM:
        require_dtype(op, (out,), (DataType.INT8,))
    else:
        require_dtype(op, (out,), (DataType.UINT8,))
        offset = args[3] if len(args) > 3 else kwargs.get("offset")
        if offset is None:
            raise SimOpError(f"{op}: ASYM quantisation needs an offset")
        scaled = scaled + row_parameter(offset, rows, op=op)
    out.write(float_to_stored(scaled, out.dtype, RoundMode.CAST_RINT))


def dequant(args: list, kwargs: dict) -> None:
    """`dequant(out, src, scale[, offset])`: (src - offset) * scale."""
    op = "block.dequant"
    out, src = tile_arg(args[0], op=op, position=0), tile_arg(args[1], op=op, position=1)
    require_dtype(op, (out,), FLOATS)
    require_dtype(op, (src,), (DataType.INT8, DataType.UINT8, DataType.INT16, DataType.INT32))
    rows = out.valid_rows
    offset = args[3] if len(args) > 3 else kwargs.get("offset", 0)
    shifted = block_values(src, out.valid).to(torch.float32) - row_parameter(offset, rows, op=op)
    store(out, shifted * row_parameter(args[2], rows, op=op))


IMPLS = {"block.quant": quant, "block.dequant": dequant}
