"""Type conversion (pipe V): `cast` (the fused casts, `add_relu_cast` & co., are in `fused`).

Rounding follows the `mode` kwarg exactly (pto-isa RoundMode: NONE, RINT = half to even,
ROUND = half away from zero, FLOOR, CEIL, TRUNC, ODD); `cast` defaults to CAST_ROUND as
`pl.cast` does. Float -> integer conversions saturate to the
target range (NaN -> 0), integer -> narrower integer saturates except INT32 -> INT16 and
INT64 -> INT32, which wrap (`WRAPPING`), float -> float overflows to
inf under nearest rounding and to the largest finite value under directed rounding (formats
without inf, e.g. FP8 E4M3FN, saturate). `BATCH_IMPLS` cast many cores' tiles at once
(`batching`).
"""
from __future__ import annotations


import torch

from pypto_pro.ir.dtype import DataType

from . import SimOpError
from .batching import Writes, batched, column, stack_blocks, tile_writes
from .elementwise import NUMERIC, block_values
from .numerics import RoundMode, int_to_stored, saturate_int, to_compute, wrap_int
from .operands import encode, require_dtype, round_mode, tile_arg

#: the integer narrowings pto-isa's a5 TCVT runs with saturation off by default (the type-specific
#: defaults of its 3-argument overload, the one the real code generator emits): they keep the
#: low bits
WRAPPING = {(DataType.INT32, DataType.INT16), (DataType.INT64, DataType.INT32)}
CASTABLE = NUMERIC + (DataType.FP8E4M3FN, DataType.FP8E5M2, DataType.HF8, DataType.FP4E2M1,
                      DataType.FP4E1M2, DataType.FP4, DataType.INT4, DataType.UINT4,
                      DataType.BOOL)


def convert(values: torch.Tensor, src: DataType, dst: DataType, mode: RoundMode, *,
            tcvt: bool = True) -> torch.Tensor:
    """Compute values of dtype `src` converted into `dst`'s storage with rounding `mode`;
    `tcvt`: with TCVT's default saturation per conversion (`WRAPPING`), else saturating."""
    if src.is_float or dst.is_float:
        if mode is RoundMode.CAST_ODD and not dst.is_float:
            raise SimOpError(f"block.cast: CAST_ODD needs a float target, not {dst.value}")
        return encode(dst, values, mode)
    if tcvt and (src, dst) in WRAPPING:
        return wrap_int(values, dst)
    return int_to_stored(saturate_int(values, dst), dst)


def _cast_checked(args: list, kwargs: dict) -> tuple:
    """(out, src, rounding mode) of a cast."""
    op = "block.cast"
    out, src = tile_arg(args[0], op=op, position=0), tile_arg(args[1], op=op, position=1)
    require_dtype(op, (out, src), CASTABLE)
    return out, src, round_mode(kwargs, RoundMode.CAST_ROUND, op=op)


def cast(args: list, kwargs: dict) -> None:
    """`cast(out, src, mode=)`: out = src converted to out's dtype."""
    out, src, mode = _cast_checked(args, kwargs)
    out.write(convert(block_values(src, out.valid), src.dtype, out.dtype, mode))


def _cast_batch(calls: list[list], kwargs: dict) -> Writes:
    out, src, mode = _cast_checked(calls[0], kwargs)
    values = to_compute(stack_blocks(column(calls, 1), out.valid), src.dtype)
    return tile_writes(column(calls, 0), convert(values, src.dtype, out.dtype, mode))


IMPLS = {"block.cast": cast}

BATCH_IMPLS = {"block.cast": batched(cast, _cast_batch)}
