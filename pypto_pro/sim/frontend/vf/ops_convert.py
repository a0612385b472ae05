"""Reg API conversions and rearrangements (spec §2.13 "Convert/rearrange").

* Lane layout of a conversion between widths (`astype`, `exp_sub` to FP32, `muls_cast`): one
  instruction works on the wider type's lanes; `layout` k places the narrower ones. Widening by
  r reads source lanes r·i + k; narrowing by r writes destination lanes r·i + k (the others
  zero). A 4-bit type converts in pairs: its byte (two lanes) against two lanes of the other
  type. The predicate selects source lanes (a narrowing FP4 conversion reads the even one of
  each pair).
* `astype(src, mask, dtype, layout, round_mode, saturate)`: the only path to FP8 / FP4 / HiF8.
  Float targets round with `round_mode` (CAST_HYBRID as RINT). As the docs' table 6 says:
  saturate ON clamps float results to the largest finite value (NaN → 0) and integer results
  to the range; OFF (the default) wraps integer → narrower integer (a wider one always
  saturates: INT16 → UINT32 makes negatives 0) and keeps the low bits of a float's rounded
  integer (±inf → the extremes, NaN → 0).
* `exp_sub(a, b, mask[, layout], dtype=)`: e^(a - b) computed in float32 (FP16 sources to an
  FP32 result take lanes 2i + layout). `muls_cast(src, s, mask, dtype=FP16, layout)`:
  src × s rounded half away from zero (CAST_ROUND) into lanes 2i + layout.
* `bit_cast`: the same 256 bytes as another dtype. `pack(src, dtype, part)`: the low half of
  each integer lane into the lower / upper half of a narrower register (other half zero);
  `unpack`: the lower / upper half of a register widened (sign or zero extension).
* `interleave(a, b)` → (a0 b0 a1 b1 … of the lower halves, … of the upper halves);
  `de_interleave(a, b)` → (even lanes of a‖b, odd lanes of a‖b).
* `squeeze(src, mask, gather_mode)`: active lanes packed to the front (others zero); STORE_REG
  (the backend's default) puts their byte count in the AR special register that
  `pl.get_spr()` reads and an unsized `vf.store_unalign` stores. `unsqueeze(mask)`: lane i = the
  number of active lanes before i (`vusqz`, an exclusive prefix count).
* `histograms(src, mask, bin_type, hist_type)`: the active UINT8 lanes' values counted into
  the destination's previous counts: bins of values [128·k, 128·k + 128) for BIN k; FREQUENCY
  adds each value's count, ACCUMULATE (the default) the count of values up to each bin.
"""
from __future__ import annotations

from collections.abc import Callable

import torch

from pypto_pro.ir import attrs
from pypto_pro.ir.dtype import DataType

from ...model.memory import storage_dtype
from ...ops.convert import convert
from ...ops.numerics import FORMATS, RoundMode, int_range, round_to_integer, wrap_int
from ...ops.operands import encode
from .args import (
    VFOpError,
    arg,
    enum_of,
    mask,
    need_int,
    reg,
    round_mode,
    same_dtype,
    scalar,
)
from .regs import Reg, bits, from_codes, from_values, lane_count, zeros


def _old(old: Reg | None, dtype: DataType) -> Reg:
    return old if old is not None and old.dtype == dtype else zeros(dtype)


def cast_lanes(src: DataType, dst: DataType, part: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(source lanes, destination lanes) a conversion of layout `part` pairs up."""
    unit = 2 if 4 in (bits(src), bits(dst)) else 1
    n_src, n_dst = lane_count(src) // unit, lane_count(dst) // unit
    ratio = max(n_src, n_dst) // min(n_src, n_dst)
    if part >= ratio and ratio > 1:
        raise VFOpError(f"layout {part} is out of range for {src.value} → {dst.value}")
    n = min(n_src, n_dst)
    units = torch.arange(n)
    su = units * ratio + part if n_src > n_dst else units
    du = units * ratio + part if n_dst > n_src else units
    within = torch.arange(unit)
    return (su[:, None] * unit + within).reshape(-1), (du[:, None] * unit + within).reshape(-1)


def _layout(a: list, kw: dict, pos: int | None) -> int:
    return int(enum_of(arg(a, kw, pos, "layout", attrs.CastLayout.ZERO), attrs.CastLayout))


def _place(values: torch.Tensor, dst_lanes: torch.Tensor, on: torch.Tensor,
           dtype: DataType) -> Reg:
    """A register of `dtype` with `values` (stored codes) in `dst_lanes` where `on`, else
    zero."""
    signed = _SIGNED_TWIN.get(values.dtype)  # torch cannot index_put its unsigned types
    work = values.view(signed) if signed is not None else values
    out = torch.zeros(lane_count(dtype), dtype=work.dtype)
    out[dst_lanes] = torch.where(on, work, torch.zeros_like(work))
    return from_codes(out.view(values.dtype) if signed is not None else out, dtype)


_SIGNED_TWIN = {torch.uint16: torch.int16, torch.uint32: torch.int32, torch.uint64: torch.int64}


def _float_to_int_wrapping(values: torch.Tensor, target: DataType,
                           mode: RoundMode) -> torch.Tensor:
    """Float → integer with saturate OFF (the docs' astype table 6): the rounded integer's low
    bits (half 257 → uint8 1), ±inf the type's extremes, NaN 0. Python ints keep the low bits
    of values beyond int64 exact (few lanes, and only this path)."""
    lo, hi = int_range(target)
    modulus = 1 << target.bits
    out = []
    for r in round_to_integer(values, mode).tolist():
        if r != r:
            out.append(0)
        elif r in (float("inf"), float("-inf")):
            out.append(hi if r > 0 else lo)
        else:
            out.append((int(r) - lo) % modulus + lo)
    return wrap_int(torch.tensor(out, dtype=torch.int64) if target.bits < 64 else
                    torch.tensor([v - modulus if v > hi else v for v in out], dtype=torch.int64),
                    target)


def astype(st, a: list, kw: dict, old: Reg | None, dtype: DataType | None) -> Reg:
    src = reg(a[0], "astype")
    target = dtype
    if target is None:
        raise VFOpError("vf.astype needs dtype=")
    mode = round_mode(arg(a, kw, 4, "round_mode", attrs.VFRoundMode.CAST_RINT))
    saturate = enum_of(arg(a, kw, 5, "saturate", attrs.SaturateMode.OFF),
                       attrs.SaturateMode) is attrs.SaturateMode.ON
    src_lanes, dst_lanes = cast_lanes(src.dtype, target, _layout(a, kw, 3))
    on = mask(arg(a, kw, 1, "mask"), "astype").lanes(src.dtype)[src_lanes]
    if bits(target) == 4 and bits(src.dtype) != 4:  # a pair follows its even lane
        on = on.reshape(-1, 2)[:, :1].expand(-1, 2).reshape(-1)
    values = src.values()[src_lanes]
    if saturate and target.is_float and target in FORMATS:  # NaN → 0 (the docs' table 6)
        top = FORMATS[target].max_finite
        values = torch.nan_to_num(values.to(torch.float64), nan=0.0).clamp(-top, top)
    widening = bits(target) > bits(src.dtype)  # INT16 → UINT32 saturates (negatives → 0)
    if not src.dtype.is_float and not target.is_float and not saturate and not widening:
        converted = wrap_int(values, target)
    elif src.dtype.is_float and not target.is_float and not saturate:
        converted = _float_to_int_wrapping(values, target, mode)
    else:
        converted = convert(values, src.dtype, target, mode, tcvt=False)  # saturate=ON
    return _place(converted, dst_lanes, on, target)


def exp_sub(st, a: list, kw: dict, old: Reg | None, dtype: DataType | None) -> Reg:
    x, y = reg(a[0], "exp_sub"), reg(a[1], "exp_sub")
    same_dtype("exp_sub", x, y)
    if not x.dtype.is_float:
        raise VFOpError(f"vf.exp_sub needs a float register, not {x.dtype.value}")
    target = dtype or x.dtype
    src_lanes, dst_lanes = cast_lanes(x.dtype, target, _layout(a, kw, 3))
    on = mask(arg(a, kw, 2, "mask"), "exp_sub").lanes(x.dtype)[src_lanes]
    values = torch.exp(x.values()[src_lanes] - y.values()[src_lanes])
    return _place(encode(target, values), dst_lanes, on, target)


def bit_cast(st, a: list, kw: dict, old: Reg | None, dtype: DataType | None) -> Reg:
    src = reg(a[0], "bit_cast")
    if dtype is None:
        raise VFOpError("vf.bit_cast needs dtype=")
    return Reg(src.data.contiguous().view(torch.uint8).view(storage_dtype(dtype)).clone(), dtype)


def _part(a: list, kw: dict, pos: int) -> int:
    return int(enum_of(arg(a, kw, pos, "part", attrs.PackPart.LOWER), attrs.PackPart))


def pack(st, a: list, kw: dict, old: Reg | None, dtype: DataType | None) -> Reg:
    src = reg(a[0], "pack")
    need_int("pack", src)
    if dtype is None or dtype.bits * 2 != src.dtype.bits:
        raise VFOpError(f"vf.pack: dtype= must be half as wide as {src.dtype.value}")
    n = lane_count(src.dtype)
    out = torch.zeros(lane_count(dtype), dtype=torch.int64)
    start = _part(a, kw, 2) * n
    out[start:start + n] = src.values()
    return Reg(wrap_int(out, dtype), dtype)


def unpack(st, a: list, kw: dict, old: Reg | None, dtype: DataType | None) -> Reg:
    src = reg(a[0], "unpack")
    need_int("unpack", src)
    if dtype is None or dtype.bits != src.dtype.bits * 2:
        raise VFOpError(f"vf.unpack: dtype= must be twice as wide as {src.dtype.value}")
    n = lane_count(dtype)
    start = _part(a, kw, 2) * n
    return from_values(src.values()[start:start + n], dtype)


def interleave(st, a: list, kw: dict, old: Reg | None, dtype: DataType | None
               ) -> tuple[Reg, Reg]:
    x, y = reg(a[0], "interleave"), reg(a[1], "interleave")
    same_dtype("interleave", x, y)
    both = torch.stack([x.codes(), y.codes()], dim=1).reshape(-1)
    half = both.numel() // 2
    return from_codes(both[:half].clone(), x.dtype), from_codes(both[half:].clone(), x.dtype)


def de_interleave(st, a: list, kw: dict, old: Reg | None, dtype: DataType | None
                  ) -> tuple[Reg, Reg]:
    x, y = reg(a[0], "de_interleave"), reg(a[1], "de_interleave")
    same_dtype("de_interleave", x, y)
    both = torch.cat([x.codes(), y.codes()])
    return from_codes(both[0::2].clone(), x.dtype), from_codes(both[1::2].clone(), x.dtype)


def squeeze(st, a: list, kw: dict, old: Reg | None, dtype: DataType | None) -> Reg:
    src = reg(a[0], "squeeze")
    if dtype is not None and dtype is not src.dtype:  # the backend reinterprets src as dst's
        src = Reg(src.data.contiguous().view(torch.uint8).view(storage_dtype(dtype)), dtype)
    active = mask(arg(a, kw, 1, "mask"), "squeeze").lanes(src.dtype)
    kept = src.codes()[active]
    out = torch.zeros_like(src.codes())
    out[:kept.numel()] = kept
    mode = enum_of(arg(a, kw, 2, "gather_mode", attrs.SqueezeMode.STORE_REG), attrs.SqueezeMode)
    if mode is attrs.SqueezeMode.STORE_REG:
        st.spr = int(kept.numel()) * max(8, bits(src.dtype)) // 8
    return from_codes(out, src.dtype)


def unsqueeze(st, a: list, kw: dict, old: Reg | None, dtype: DataType | None) -> Reg:
    target = dtype or DataType.INT32
    if target.is_float:
        raise VFOpError(f"vf.unsqueeze counts into an integer register, not {target.value}")
    active = mask(arg(a, kw, 0, "mask"), "unsqueeze").lanes(target).to(torch.int64)
    counts = torch.cumsum(active, 0) - active
    return from_values(counts, target)


def muls_cast(st, a: list, kw: dict, old: Reg | None, dtype: DataType | None) -> Reg:
    src = reg(a[0], "muls_cast")
    if dtype is None:
        raise VFOpError("vf.muls_cast needs dtype=")
    src_lanes, dst_lanes = cast_lanes(src.dtype, dtype, _layout(a, kw, 4))
    on = mask(arg(a, kw, 2, "mask"), "muls_cast").lanes(src.dtype)[src_lanes]
    product = src.values()[src_lanes] * scalar(a[1], src.dtype)
    return _place(encode(dtype, product, RoundMode.CAST_ROUND), dst_lanes, on, dtype)


def histograms(st, a: list, kw: dict, old: Reg | None, dtype: DataType | None) -> Reg:
    src = reg(a[0], "histograms")
    if bits(src.dtype) != 8:
        raise VFOpError(f"vf.histograms counts 8-bit lanes, not {src.dtype.value}")
    target = dtype or DataType.UINT16
    if target.is_float:
        raise VFOpError(f"vf.histograms: the counts need an integer dtype, not {target.value}")
    active = mask(arg(a, kw, 1, "mask"), "histograms").lanes(src.dtype)
    codes = src.data.view(torch.uint8).to(torch.int64)[active]
    n = lane_count(target)
    start = int(enum_of(arg(a, kw, 2, "bin_type", attrs.BinType.BIN0), attrs.BinType)) * 128
    counts = torch.bincount(codes, minlength=256)[start:start + min(n, 128)]
    hist = enum_of(arg(a, kw, 3, "hist_type", attrs.HistType.ACCUMULATE), attrs.HistType)
    if hist is attrs.HistType.ACCUMULATE:
        counts = torch.cumsum(counts, 0)
    window = torch.zeros(n, dtype=torch.int64)
    window[:counts.numel()] = counts
    return from_values(window + _old(old, target).values(), target)


OPS: dict[str, tuple[Callable, str]] = {
    "astype": (astype, "cast"), "bit_cast": (bit_cast, "free"), "pack": (pack, "copy"),
    "unpack": (unpack, "copy"), "interleave": (interleave, "copy"),
    "de_interleave": (de_interleave, "copy"), "squeeze": (squeeze, "gather"),
    "exp_sub": (exp_sub, "transcendental"),
    "unsqueeze": (unsqueeze, "gather"), "muls_cast": (muls_cast, "cast"),
    "histograms": (histograms, "sort"),
}
