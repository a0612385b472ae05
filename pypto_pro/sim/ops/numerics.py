"""Number formats of the simulator: exact rounding to every float format, integer casts, and the
encodings that torch lacks (HiFloat8, FP4 E2M1/E1M2, INT4/UINT4, E8M0).

Owns `RoundMode` (pto-isa values), `FloatFormat` and the conversions between stored tiles
(see `memory.storage_dtype`) and compute tensors: float32 for float types, int64 for integers.
Rounding is done on float64 magnitudes with a per-element quantum, so every mode (RINT = half to
even, ROUND = half away from zero, FLOOR, CEIL, TRUNC, ODD = von Neumann) is exact for every
target. Imports `pypto_pro.ir.dtype` and `sim.model.memory` only.
"""
from __future__ import annotations

import enum
import functools
from collections.abc import Callable
from dataclasses import dataclass

import torch

from pypto_pro.ir.dtype import DataType

from ..model.memory import storage_dtype


class RoundMode(enum.IntEnum):
    """pto-isa `RoundMode` (include/pto/common/type.hpp)."""

    CAST_NONE = 0  # RINT where the conversion loses precision, exact otherwise
    CAST_RINT = 1  # nearest, ties to even
    CAST_ROUND = 2  # nearest, ties away from zero
    CAST_FLOOR = 3
    CAST_CEIL = 4
    CAST_TRUNC = 5
    CAST_ODD = 6  # truncate, then set the last bit when inexact


#: the float types stored as a torch float type (`storage_dtype`), by value (a `DataType`
#: hashes in Python code): float32 → storage is one `to`
_PLAIN_FLOATS = frozenset({"FP32", "FP16", "BF16"})
_TO_NEAREST = (RoundMode.CAST_RINT, RoundMode.CAST_NONE)  # (where float32 → storage is `to`)


@dataclass(frozen=True)
class FloatFormat:
    """A binary float format: significand bits after the point per exponent, range, specials."""

    name: str
    emin: int  # exponent of the smallest normal (below it the quantum stays 2**(emin - m))
    emax: int
    max_finite: float
    has_inf: bool
    mant_bits: Callable[[torch.Tensor], torch.Tensor]

    def quantum_exponent(self, exponent: torch.Tensor) -> torch.Tensor:
        clamped = exponent.clamp(self.emin, self.emax)
        return clamped - self.mant_bits(clamped)


def _ieee(name: str, mant: int, emin: int, emax: int, has_inf: bool = True) -> FloatFormat:
    top = (2 - 2.0 ** -mant) * 2.0 ** emax
    return FloatFormat(name, emin, emax, top, has_inf, lambda e: torch.full_like(e, mant))


def _hif8_mant_bits(exponent: torch.Tensor) -> torch.Tensor:
    """HiF8 tapered precision: 3 bits for |E| <= 3, 2 for 4..7, 1 for 8..15, 0 below 2**-15."""
    mag = exponent.abs()
    bits = torch.where(mag <= 3, 3, torch.where(mag <= 7, 2, 1))
    return torch.where(exponent < -15, 0, bits)


FORMATS: dict[DataType, FloatFormat] = {
    DataType.FP32: _ieee("FP32", 23, -126, 127),
    DataType.FP16: _ieee("FP16", 10, -14, 15),
    DataType.BF16: _ieee("BF16", 7, -126, 127),
    DataType.FP8E4M3FN: FloatFormat("FP8E4M3FN", -6, 8, 448.0, False,
                                    lambda e: torch.full_like(e, 3)),
    DataType.FP8E5M2: _ieee("FP8E5M2", 2, -14, 15),
    # HiFloat8 [arXiv 2409.16626; MindSpore hifloat8.h]: normals 2**-15..2**15, denormals
    # 2**-22..2**-16, 0x6F = Inf so the largest finite value is 2**15.
    DataType.HF8: FloatFormat("HF8", -22, 15, 2.0 ** 15, True, _hif8_mant_bits),
    DataType.FP4E2M1: _ieee("FP4E2M1", 1, 0, 2, has_inf=False),
    DataType.FP4: _ieee("FP4E2M1", 1, 0, 2, has_inf=False),
    DataType.FP4E1M2: FloatFormat("FP4E1M2", 0, 0, 1.75, False, lambda e: torch.full_like(e, 2)),
}


def _round_magnitude(s: torch.Tensor, mode: RoundMode, negative: torch.Tensor) -> torch.Tensor:
    """Round non-negative float64 `s` to an integer; `negative` flips the directed modes."""
    if mode in (RoundMode.CAST_RINT, RoundMode.CAST_NONE):
        return torch.round(s)
    if mode is RoundMode.CAST_ROUND:
        return torch.floor(s + 0.5)
    if mode is RoundMode.CAST_TRUNC:
        return torch.floor(s)
    if mode is RoundMode.CAST_FLOOR:
        return torch.where(negative, torch.ceil(s), torch.floor(s))
    if mode is RoundMode.CAST_CEIL:
        return torch.where(negative, torch.floor(s), torch.ceil(s))
    low = torch.floor(s)  # CAST_ODD
    return torch.where((low != s) & (low % 2 == 0), low + 1, low)


def _overflow_to_inf(mode: RoundMode, negative: torch.Tensor) -> torch.Tensor:
    if mode in (RoundMode.CAST_RINT, RoundMode.CAST_NONE, RoundMode.CAST_ROUND):
        return torch.ones_like(negative)
    if mode is RoundMode.CAST_FLOOR:
        return negative
    if mode is RoundMode.CAST_CEIL:
        return ~negative
    return torch.zeros_like(negative)


def round_float(x: torch.Tensor, fmt: FloatFormat, mode: RoundMode = RoundMode.CAST_RINT
                ) -> torch.Tensor:
    """`x` rounded to the values of `fmt` (float64 result, exact). Overflow goes to inf where
    IEEE rounding would, else to the largest finite value (formats without inf saturate).
    A zero keeps its sign (-0.0 stays -0.0: the sign bit, not `x < 0`, says negative)."""
    x = x.to(torch.float64)
    negative = torch.signbit(x)
    mag = x.abs()
    _, exp = torch.frexp(mag)
    quantum = torch.ldexp(torch.ones_like(mag), fmt.quantum_exponent(exp - 1))
    rounded = _round_magnitude(mag / quantum, mode, negative) * quantum
    over = rounded > fmt.max_finite
    to_inf = over & _overflow_to_inf(mode, negative) & fmt.has_inf
    rounded = torch.where(over, torch.where(to_inf, torch.inf, fmt.max_finite), rounded)
    rounded = torch.where(torch.isinf(mag), torch.inf if fmt.has_inf else fmt.max_finite, rounded)
    result = torch.where(negative, -rounded, rounded)
    return torch.where(torch.isnan(x), x, result)


def round_to_integer(x: torch.Tensor, mode: RoundMode) -> torch.Tensor:
    """`x` rounded to an integral float64 value (CAST_NONE rounds like CAST_RINT)."""
    if mode is RoundMode.CAST_ODD:
        raise ValueError("CAST_ODD is only defined for float targets")
    x = x.to(torch.float64)
    negative = x < 0
    return torch.where(negative, -1.0, 1.0) * _round_magnitude(x.abs(), mode, negative)


def int_range(dtype: DataType) -> tuple[int, int]:
    if dtype is DataType.BOOL:
        return (0, 1)
    if dtype.kind == "uint":
        return (0, 2 ** dtype.bits - 1)
    return (-(2 ** (dtype.bits - 1)), 2 ** (dtype.bits - 1) - 1)


def saturate_int(x: torch.Tensor, dtype: DataType) -> torch.Tensor:
    """Integers (or integral floats; NaN -> 0) clamped to `dtype`'s range, as int64."""
    lo, hi = int_range(dtype)
    if x.is_floating_point():  # float64 cannot hold 2**63 - 1: stay one ulp below it
        x = torch.nan_to_num(x.to(torch.float64), nan=0.0).clamp(lo, min(hi, 2.0 ** 63 - 1024))
        return x.to(torch.int64)
    return x.to(torch.int64).clamp(lo, min(hi, 2 ** 63 - 1))


def wrap_int(x: torch.Tensor, dtype: DataType) -> torch.Tensor:
    """int64 values wrapped two's-complement to `dtype`, as its storage tensor."""
    x = x.to(torch.int64)
    if dtype.bits >= 64:
        return x.view(storage_dtype(dtype)) if dtype is DataType.UINT64 else x
    modulus = 2 ** dtype.bits
    lo, _ = int_range(dtype)
    wrapped = (x - lo) % modulus + lo
    return encode_int4(wrapped, dtype) if dtype.bits == 4 else wrapped.to(storage_dtype(dtype))


# ------------------------------------------------------------------ codes without torch dtypes

def _decode_hif8_code(code: int) -> float:
    """One HiF8 code to its value [MindSpore hifloat8.h ToFloat32]."""
    sign = -1.0 if code & 0x80 else 1.0
    if code & 0x78 == 0:  # dot 0000: zero, NaN, or denormal 2**(M - 23)
        if code == 0x80:
            return float("nan")
        return 0.0 if code & 0x07 == 0 else sign * 2.0 ** ((code & 0x07) - 23)
    if code & 0x78 == 0x08:  # dot 0001: E = 0, 3 mantissa bits
        return sign * (1 + (code & 0x07) / 8)
    if code & 0x70 == 0x10:  # dot 001: E = +-1
        exp = -1 if code & 0x08 else 1
        return sign * (1 + (code & 0x07) / 8) * 2.0 ** exp
    if code & 0x7F == 0x6F:
        return sign * float("inf")
    exp_width = ((code & 0x60) >> 5) + 1  # dots 01, 10, 11: 2, 3, 4 exponent bits
    mant_width = 5 - exp_width
    magnitude = (1 << (exp_width - 1)) + ((code & 0x0F) >> mant_width)
    exp = -magnitude if code & 0x10 else magnitude
    mant = (code & ((1 << mant_width) - 1)) / (1 << mant_width)
    return sign * (1 + mant) * 2.0 ** exp


def _decode_fp4_code(code: int, exp_bits: int) -> float:
    mant_bits = 3 - exp_bits
    sign = -1.0 if code & 0x8 else 1.0
    exp = (code >> mant_bits) & ((1 << exp_bits) - 1)
    mant = (code & ((1 << mant_bits) - 1)) / (1 << mant_bits)
    return sign * (mant * 2.0 ** 0 if exp == 0 else (1 + mant) * 2.0 ** (exp - 1))


@functools.cache
def _code_table(dtype: DataType) -> torch.Tensor:
    """Value of every code of an encoding-only float type (float64, indexed by code)."""
    if dtype is DataType.HF8:
        return torch.tensor([_decode_hif8_code(c) for c in range(256)], dtype=torch.float64)
    exp_bits = 1 if dtype is DataType.FP4E1M2 else 2
    return torch.tensor([_decode_fp4_code(c, exp_bits) for c in range(16)], dtype=torch.float64)


def decode_hif8(codes: torch.Tensor) -> torch.Tensor:
    """HiFloat8 codes (uint8) to float32 values."""
    return _code_table(DataType.HF8)[codes.to(torch.int64)].to(torch.float32)


def decode_fp4(codes: torch.Tensor, dtype: DataType = DataType.FP4E2M1) -> torch.Tensor:
    """FP4 (E2M1 or E1M2) codes (one per uint8, low nibble) to float32 values."""
    return _code_table(dtype)[(codes & 0xF).to(torch.int64)].to(torch.float32)


def _encode_by_table(values: torch.Tensor, dtype: DataType, sign_bit: int) -> torch.Tensor:
    """Codes of values already representable in `dtype` (e.g. from round_float)."""
    table = _code_table(dtype)
    positive_codes = torch.arange(sign_bit)
    finite = table[:sign_bit]
    order = torch.argsort(finite)
    mag = values.to(torch.float64).abs()
    pos = torch.searchsorted(finite[order], mag.clamp(max=float(finite.max())))
    codes = positive_codes[order][pos.clamp(max=sign_bit - 1)]
    codes = torch.where(values < 0, codes | sign_bit, codes)
    if dtype is DataType.HF8:
        codes = torch.where(torch.isinf(values), torch.where(values < 0, 0xEF, 0x6F), codes)
        codes = torch.where(torch.isnan(values), 0x80, codes)
    return codes.to(torch.uint8)


def encode_hif8(values: torch.Tensor, mode: RoundMode = RoundMode.CAST_ROUND) -> torch.Tensor:
    """Float values to HiFloat8 codes (default rounding: ties away, the HiF8 paper's TA)."""
    return _encode_by_table(round_float(values, FORMATS[DataType.HF8], mode), DataType.HF8, 0x80)


def encode_fp4(values: torch.Tensor, dtype: DataType = DataType.FP4E2M1,
               mode: RoundMode = RoundMode.CAST_RINT) -> torch.Tensor:
    """Float values to FP4 codes (one per uint8), saturating at the largest magnitude."""
    fmt = FORMATS[dtype]
    rounded = torch.nan_to_num(round_float(values, fmt, mode), nan=fmt.max_finite)
    return _encode_by_table(rounded, DataType.FP4E1M2 if dtype is DataType.FP4E1M2
                            else DataType.FP4E2M1, 0x8)


def decode_int4(codes: torch.Tensor, dtype: DataType = DataType.INT4) -> torch.Tensor:
    """INT4/UINT4 codes (one per uint8, low nibble) to int64 values."""
    nibble = (codes & 0xF).to(torch.int64)
    return torch.where(nibble >= 8, nibble - 16, nibble) if dtype is DataType.INT4 else nibble


def encode_int4(values: torch.Tensor, dtype: DataType = DataType.INT4) -> torch.Tensor:
    """INT4/UINT4 values (already in range) to codes, one per uint8."""
    return (values.to(torch.int64) & 0xF).to(torch.uint8)


def decode_e8m0(codes: torch.Tensor) -> torch.Tensor:
    """E8M0 scale codes (uint8) to float32 2**(code - 127); code 255 is NaN."""
    codes = codes.to(torch.int64)
    values = torch.ldexp(torch.ones(codes.shape, dtype=torch.float64), codes - 127)
    return torch.where(codes == 255, torch.nan, values).to(torch.float32)


# ------------------------------------------------------------------ stored tiles <-> compute

def to_compute(stored: torch.Tensor, dtype: DataType) -> torch.Tensor:
    """A stored tile (as `TileRef.read` returns it) as float32 (float types) or int64 values."""
    if dtype._value_ in _PLAIN_FLOATS:  # (first: the common types, by their cheap value)
        return stored.to(torch.float32)
    if dtype is DataType.HF8:
        return decode_hif8(stored)
    if dtype in (DataType.FP4, DataType.FP4E2M1, DataType.FP4E1M2):
        return decode_fp4(stored, dtype)
    if dtype in (DataType.INT4, DataType.UINT4):
        return decode_int4(stored, dtype)
    if dtype is DataType.FP8E8M0:
        return decode_e8m0(stored.view(torch.uint8))
    if dtype is DataType.HF4:
        raise ValueError("HF4 values are not modelled (storage only)")
    if dtype.is_float:
        return stored.to(torch.float32)
    if dtype is DataType.UINT64:
        return stored.view(torch.int64)
    return stored.to(torch.int64)


def float_to_stored(x: torch.Tensor, dtype: DataType,
                    mode: RoundMode = RoundMode.CAST_RINT) -> torch.Tensor:
    """Float values rounded with `mode` into `dtype`'s storage (ints: rounded, saturated)."""
    if dtype is DataType.BF16:
        return _bf16_nan_canonical(_float_to_stored(x, dtype, mode), x)
    return _float_to_stored(x, dtype, mode)


def _bf16_nan_canonical(out: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """NaN → BF16 0x7FC0, as the native header and c10's scalar conversion give it (torch's
    vectorised float → bfloat16 gives 0xFFFF instead)."""
    nan = torch.isnan(x) if x.is_floating_point() else None
    if nan is None or not bool(nan.any()):
        return out
    return torch.where(nan, torch.tensor(0x7FC0, dtype=torch.int16).view(torch.bfloat16), out)


def _float_to_stored(x: torch.Tensor, dtype: DataType, mode: RoundMode) -> torch.Tensor:
    if dtype._value_ in _PLAIN_FLOATS and mode in _TO_NEAREST and x.dtype is torch.float32:
        return x.to(storage_dtype(dtype))  # torch rounds to nearest even: the fast path
    if dtype.is_int or dtype is DataType.BOOL:
        rounded = round_to_integer(x, mode)
        return int_to_stored(saturate_int(rounded, dtype), dtype)
    if dtype is DataType.HF8:
        return encode_hif8(x, mode)
    if dtype in (DataType.FP4, DataType.FP4E2M1, DataType.FP4E1M2):
        return encode_fp4(x, dtype, mode)
    if dtype is DataType.FP8E8M0 or dtype is DataType.HF4:
        raise ValueError(f"conversion to {dtype.value} is not modelled")
    return round_float(x, FORMATS[dtype], mode).to(storage_dtype(dtype))


def int_to_stored(x: torch.Tensor, dtype: DataType) -> torch.Tensor:
    """In-range int64 values into `dtype`'s storage (4-bit types as codes)."""
    if dtype.bits == 4:
        return encode_int4(x, dtype)
    if dtype is DataType.UINT64:
        return x.to(torch.int64).view(torch.uint64)
    return x.to(storage_dtype(dtype))
