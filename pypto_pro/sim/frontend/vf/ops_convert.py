"""Reg API conversions and rearrangements (spec §2.13 "Convert/rearrange").

* `astype(src, mask, dtype, layout, round_mode, saturate)`: the only path to FP8 / FP4 / HiF8
  (FP4 registers: 512 lanes packed two per byte, stored and loaded as their 256 bytes).
  When the two registers have different lane counts, `layout` k picks the slice: a widening
  conversion reads source lanes [k·n, (k+1)·n) (n = destination lanes), a narrowing one writes
  destination lanes [k·n, (k+1)·n) (n = source lanes); the other destination lanes keep their
  previous value. Float targets round with `round_mode` (CAST_HYBRID as RINT); saturate ON
  clamps float results to the largest finite value and integer results to the range (OFF wraps
  integer → integer; float → integer always saturates, NaN → 0).
* `bit_cast`: the same 256 bytes as another dtype. `pack(src, dtype, part)`: the low half of each
  integer lane into the lower / upper half of a narrower register (other half zero); `unpack`:
  the lower / upper half of a register widened (sign or zero extension).
* `interleave(a, b, part)`: a[i], b[i] alternating from the lower (upper) halves;
  `de_interleave(a, b, part)`: the even (odd) lanes of a‖b.
* `squeeze(src, mask, gather_mode)`: active lanes packed to the front, count to the SPR that
  `pl.get_spr()` reads (STORE_REG); `unsqueeze(src, mask)` the inverse spread.
* `muls_cast(src, scalar, mask)`: src × scalar rounded once into `dtype` (RINT; integers
  wrap).
* `histograms(src, mask, bin_type, hist_type)`: counts of the active 8-bit lanes' values, bins
  [k·n, (k+1)·n) for BIN k (n = result lanes); ACCUMULATE adds to the destination's counts.
"""
from __future__ import annotations

from collections.abc import Callable

import torch

from pypto_pro.ir import attrs
from pypto_pro.ir.dtype import DataType

from ...model.memory import storage_dtype
from ...ops.convert import convert
from ...ops.numerics import FORMATS, wrap_int
from ...ops.operands import encode
from .args import (
    VFOpError,
    arg,
    enum_of,
    mask,
    merging,
    need_int,
    reg,
    round_mode,
    same_dtype,
    scalar,
)
from .regs import Reg, from_codes, from_values, lane_count, zeros


def _old(old: Reg | None, dtype: DataType) -> Reg:
    return old if old is not None and old.dtype == dtype else zeros(dtype)


def astype(st, a: list, kw: dict, old: Reg | None, dtype: DataType | None) -> Reg:
    src = reg(a[0], "astype")
    target = dtype
    if target is None:
        raise VFOpError("vf.astype needs dtype=")
    active = mask(arg(a, kw, 1, "mask"), "astype").lanes(src.dtype)
    part = int(enum_of(arg(a, kw, 3, "layout", attrs.CastLayout.ZERO), attrs.CastLayout))
    mode = round_mode(arg(a, kw, 4, "round_mode", attrs.VFRoundMode.CAST_RINT))
    saturate = enum_of(arg(a, kw, 5, "saturate", attrs.SaturateMode.OFF),
                       attrs.SaturateMode) is attrs.SaturateMode.ON
    n_src, n_dst = lane_count(src.dtype), lane_count(target)
    n = min(n_src, n_dst)
    s0 = part * n if n_src > n_dst else 0
    d0 = part * n if n_dst > n_src else 0
    if max(s0, d0) + n > max(n_src, n_dst):
        raise VFOpError(f"vf.astype: layout {part} is out of range for {src.dtype.value} → "
                        f"{target.value}")
    values = src.values()[s0:s0 + n]
    if saturate and target.is_float and target in FORMATS:
        top = FORMATS[target].max_finite
        values = values.to(torch.float64).clamp(-top, top)
    if not src.dtype.is_float and not target.is_float and not saturate:
        converted = wrap_int(values, target)
    else:
        converted = convert(values, src.dtype, target, mode)
    out = _old(old, target).codes().clone()
    out[d0:d0 + n] = torch.where(active[s0:s0 + n], converted, out[d0:d0 + n])
    return from_codes(out, target)


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


def interleave(st, a: list, kw: dict, old: Reg | None, dtype: DataType | None) -> Reg:
    x, y = reg(a[0], "interleave"), reg(a[1], "interleave")
    same_dtype("interleave", x, y)
    xc, yc = x.codes(), y.codes()
    half = xc.numel() // 2
    start = _part(a, kw, 2) * half
    pairs = torch.stack([xc[start:start + half], yc[start:start + half]], dim=1)
    return from_codes(pairs.reshape(-1).clone(), x.dtype)


def de_interleave(st, a: list, kw: dict, old: Reg | None, dtype: DataType | None) -> Reg:
    x, y = reg(a[0], "de_interleave"), reg(a[1], "de_interleave")
    same_dtype("de_interleave", x, y)
    both = torch.cat([x.codes(), y.codes()])
    return from_codes(both[_part(a, kw, 2)::2].clone(), x.dtype)


def squeeze(st, a: list, kw: dict, old: Reg | None, dtype: DataType | None) -> Reg:
    src = reg(a[0], "squeeze")
    active = mask(arg(a, kw, 1, "mask"), "squeeze").lanes(src.dtype)
    kept = src.codes()[active]
    out = torch.zeros_like(src.codes())
    out[:kept.numel()] = kept
    mode = enum_of(arg(a, kw, 2, "gather_mode", attrs.SqueezeMode.STORE_REG), attrs.SqueezeMode)
    if mode is attrs.SqueezeMode.STORE_REG:
        st.spr = int(kept.numel())
    return from_codes(out, src.dtype)


def unsqueeze(st, a: list, kw: dict, old: Reg | None, dtype: DataType | None) -> Reg:
    src = reg(a[0], "unsqueeze")
    active = mask(arg(a, kw, 1, "mask"), "unsqueeze").lanes(src.dtype)
    out = torch.zeros_like(src.codes())
    count = int(active.sum())
    out[active] = src.codes()[:count]
    return from_codes(out, src.dtype)


def muls_cast(st, a: list, kw: dict, old: Reg | None, dtype: DataType | None) -> Reg:
    src = reg(a[0], "muls_cast")
    if dtype is None:
        raise VFOpError("vf.muls_cast needs dtype=")
    product = src.values() * scalar(a[1], src.dtype)
    n = min(lane_count(src.dtype), lane_count(dtype))
    active = mask(arg(a, kw, 2, "mask"), "muls_cast").lanes(src.dtype)[:n]
    out = (_old(old, dtype) if merging(kw, a, 3) else zeros(dtype)).codes().clone()
    out[:n] = torch.where(active, encode(dtype, product[:n]), out[:n])
    return from_codes(out, dtype)


def histograms(st, a: list, kw: dict, old: Reg | None, dtype: DataType | None) -> Reg:
    src = reg(a[0], "histograms")
    if src.dtype not in (DataType.UINT8, DataType.INT8):
        raise VFOpError(f"vf.histograms counts 8-bit lanes, not {src.dtype.value}")
    target = dtype or DataType.UINT16
    if not (target.is_int or target.kind == "uint"):
        raise VFOpError(f"vf.histograms: the counts need an integer dtype, not {target.value}")
    active = mask(arg(a, kw, 1, "mask"), "histograms").lanes(src.dtype)
    codes = src.data.view(torch.uint8).to(torch.int64)[active]
    counts = torch.bincount(codes, minlength=256)
    n = lane_count(target)
    start = int(enum_of(arg(a, kw, 2, "bin_type", attrs.BinType.BIN0), attrs.BinType)) * n
    window = torch.zeros(n, dtype=torch.int64)
    got = counts[start:start + n]
    window[:got.numel()] = got
    hist = enum_of(arg(a, kw, 3, "hist_type", attrs.HistType.FREQUENCY), attrs.HistType)
    if hist is attrs.HistType.ACCUMULATE:
        window = window + _old(old, target).values()
    return from_values(window, target)


OPS: dict[str, tuple[Callable, str]] = {
    "astype": (astype, "cast"), "bit_cast": (bit_cast, "free"), "pack": (pack, "copy"),
    "unpack": (unpack, "copy"), "interleave": (interleave, "copy"),
    "de_interleave": (de_interleave, "copy"), "squeeze": (squeeze, "gather"),
    "unsqueeze": (unsqueeze, "gather"), "muls_cast": (muls_cast, "cast"),
    "histograms": (histograms, "sort"),
}
