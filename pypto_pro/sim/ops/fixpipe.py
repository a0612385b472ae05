"""The fixpipe (pipe FIX): converting L0C accumulators on their way to GM, UB or L1.

Owns the Acc -> X conversion used by `store`/`store_fp` from Acc, `move`/`move_fp` Acc->Vec and
Acc->Mat and `insert` from Acc. Stages in hardware order [INI950 fix_pipe_unit_list: pre_conv,
pre_act]: the pre-conversion (FP32 -> FP16/BF16 cast, FP32 -> INT8 quant, INT32 -> INT8 requant,
INT32 -> FP16 dequant, FP32 -> FP8/HF8) multiplies by the scale when one is given, then
`relu_pre_mode=NormalRelu` applies ReLU, then the value is rounded (nearest-even; saturating for
integers) into the destination dtype. NZ -> ND happens for free: tiles are read logically.

Scales follow `pl.store(scale=)` (spec §2.6): a Python float is the scale itself; an int is the
UINT64 "deq" word (fp32 bit pattern in bits 0-31, bit 46 = signed integer output); a `[1, N]`
UINT64/INT64 `Scaling` tile gives one such word per output column (per channel).
"""
from __future__ import annotations

import struct

import torch

from pypto_pro.ir.dtype import DataType

from ..model.memory import TileRef
from . import SimOpError
from .numerics import RoundMode, to_compute
from .operands import ReluPreMode, encode, enum_arg

ACC_DTYPES = (DataType.FP32, DataType.INT32)
#: (accumulator dtype, destination dtype) pairs the fixpipe converts [INI950 fix_pipe_pre_conv]
CONVERSIONS = {
    DataType.FP32: (DataType.FP32, DataType.FP16, DataType.BF16, DataType.INT8,
                    DataType.FP8E4M3FN, DataType.FP8E5M2, DataType.HF8),
    DataType.INT32: (DataType.INT32, DataType.FP16, DataType.INT8, DataType.FP32),
}
SIGNED_BIT = 1 << 46


def decode_deq_word(word: int) -> float:
    """The fp32 scale held in bits 0-31 of a UINT64 deq word."""
    return struct.unpack("<f", struct.pack("<I", int(word) & 0xFFFFFFFF))[0]


def scalar_scale(scale: object) -> torch.Tensor | None:
    """A `scale` kwarg / deq scalar as a 0-d float32 tensor (None: no scaling)."""
    if scale is None:
        return None
    if isinstance(scale, float):
        return torch.tensor(scale, dtype=torch.float32)
    if isinstance(scale, int):
        return torch.tensor(decode_deq_word(scale), dtype=torch.float32)
    raise SimOpError(f"fixpipe: scale must be a float or a UINT64 deq word, not {scale!r}")


def channel_scale(tile: TileRef, cols: int) -> torch.Tensor:
    """Per-channel scales of a [1, N] UINT64/INT64 Scaling tile as float32 [1, cols]."""
    if tile.dtype not in (DataType.UINT64, DataType.INT64):
        raise SimOpError(f"fixpipe: per-channel scale tile must be UINT64/INT64, not "
                         f"{tile.dtype.value}")
    words = tile.read_block(0, 0, 1, cols).view(torch.int64) & 0xFFFFFFFF
    return words.to(torch.int32).view(torch.float32).clone()


def convert(acc: TileRef, block: tuple[int, int, int, int], out_dtype: DataType,
            kwargs: dict, scale: torch.Tensor | None) -> torch.Tensor:
    """Acc values of `block` (r0, c0, rows, cols) converted to `out_dtype` storage."""
    op = "fixpipe"
    if acc.dtype not in ACC_DTYPES:
        raise SimOpError(f"{op}: accumulator dtype must be FP32 or INT32, not {acc.dtype.value}")
    if out_dtype not in CONVERSIONS[acc.dtype]:
        raise SimOpError(f"{op}: no conversion {acc.dtype.value} -> {out_dtype.value} "
                         f"(supported: {', '.join(d.value for d in CONVERSIONS[acc.dtype])})")
    if scale is not None and out_dtype is DataType.BF16:
        raise SimOpError(f"{op}: {acc.dtype.value} -> BF16 with a scale is not supported")
    if scale is None and out_dtype is DataType.INT8:
        raise SimOpError(f"{op}: {acc.dtype.value} -> INT8 needs a quant scale")
    stored = acc.read_block(*block)
    relu = _relu(kwargs)
    if out_dtype is acc.dtype and scale is None and not relu:
        return stored  # FP32 -> FP32, INT32 -> INT32 unscaled: the bits, as the round trip gives
    values = to_compute(stored, acc.dtype)
    if scale is not None:
        values = values.to(torch.float64) * scale.to(torch.float64)
    elif acc.dtype is DataType.INT32 and out_dtype.is_float:
        values = values.to(torch.float64)
    if relu:
        values = torch.relu(values)
    return encode(out_dtype, values, RoundMode.CAST_RINT)


def _relu(kwargs: dict) -> bool:
    return enum_arg(kwargs.get("relu_pre_mode"), ReluPreMode, ReluPreMode.NoRelu,
                    op="fixpipe") is ReluPreMode.NormalRelu


def passes_bits(acc: TileRef, out_dtype: DataType, kwargs: dict, scale: object) -> bool:
    """`convert` gives the accumulator's stored bits (same dtype, no scale, no ReLU)."""
    return out_dtype is acc.dtype and acc.dtype in ACC_DTYPES and scale is None and \
        not _relu(kwargs)


def block_scale(kwargs: dict, extra: object = None, scale_tile: TileRef | None = None,
                cols: int = 0, c0: int = 0) -> torch.Tensor | None:
    """The scale for a conversion: per-channel tile columns [c0, c0 + cols), else the scalar."""
    if scale_tile is not None:
        return channel_scale(scale_tile, c0 + cols)[:, c0:]
    return scalar_scale(extra if extra is not None else kwargs.get("scale"))
