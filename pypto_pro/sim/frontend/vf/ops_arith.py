"""Reg API arithmetic, logic, broadcasts and reductions (spec §2.13 "Broadcast", "Arithmetic",
"Logic/shift", "Reductions").

Every op computes on float32 / int64 values of the whole register (one torch call per op) and
rounds once into the register dtype; lanes outside the mask are zeroed, or keep the destination
register's previous value in MERGING mode. Ops that accumulate into their destination (`axpy`,
`mul_add_dst`, `mul_dst_add`, `histograms` ACCUMULATE) read that previous value (zero for a
register never written). Reductions use a fixed pairwise tree (lane i + lane i + n/2, halving)
so the native backend can reproduce the float32 sums bit for bit.
"""
from __future__ import annotations

from collections.abc import Callable

import torch

from pypto_pro.ir import attrs
from pypto_pro.ir.dtype import DataType

from .args import (
    VFOpError,
    arg,
    enum_of,
    mask,
    merging,
    need_float,
    need_int,
    reg,
    same_dtype,
    scalar,
)
from ...model.memory import storage_dtype
from .regs import (
    Mask,
    Reg,
    bits,
    from_codes,
    from_values,
    lane_count,
    mask_of_lanes,
    predicated,
    zeros,
)

Fn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
_LN2 = torch.tensor([0.6931471805599453], dtype=torch.float32)
_LN10 = torch.tensor([2.302585092994046], dtype=torch.float32)


def _div(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    if x.is_floating_point():
        return x / y
    safe = torch.where(y == 0, 1, y)
    return torch.where(y == 0, 0, torch.div(x, safe, rounding_mode="trunc"))


def _shl(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return torch.where((y >= 0) & (y < 64), x << y.clamp(0, 63), 0)


def _shr(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return x >> y.clamp(0, 63)


def _extreme(pick_max: bool) -> Fn:
    """vmax / vmin: -0 below +0 (max(-0, +0) = +0, min = -0, the max / min pages), NaN in →
    the canonical NaN out (torch.maximum's NaN bits and zero signs vary with its code path;
    the native header computes the same)."""
    def fn(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if not x.is_floating_point():
            return torch.maximum(x, y) if pick_max else torch.minimum(x, y)
        out = torch.where(x > y if pick_max else x < y, x, y)
        both = (x == 0) & (y == 0)
        neg = torch.signbit(x) & torch.signbit(y) if pick_max else \
            torch.signbit(x) | torch.signbit(y)
        out = torch.where(both, torch.where(neg, -0.0, 0.0).to(out.dtype), out)
        return torch.where(x.isnan() | y.isnan(), float("nan"), out)
    return fn


_MAX, _MIN = _extreme(True), _extreme(False)

BINARY: dict[str, Fn] = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": _div,
    "max": _MAX, "min": _MIN,
    "abs_sub": lambda x, y: (x - y).abs(),
    "prelu": lambda x, y: torch.where(x < 0, x * y, x),
}
LOGIC: dict[str, Fn] = {"and_": torch.bitwise_and, "or_": torch.bitwise_or,
                        "xor": torch.bitwise_xor}
SCALAR: dict[str, Fn] = {
    "adds": torch.add, "subs": torch.sub, "muls": torch.mul, "mins": _MIN,
    "maxs": _MAX, "leaky_relu": lambda x, y: torch.where(x < 0, x * y, x),
    "shift_left": _shl, "shift_right": _shr,
}
UNARY: dict[str, Fn] = {
    "abs": torch.abs, "neg": torch.neg, "relu": lambda x: torch.where(x < 0, 0, x),
    "sqrt": torch.sqrt, "exp": torch.exp, "ln": torch.log, "log": torch.log,
    "log2": lambda x: torch.log(x) / _LN2, "log10": lambda x: torch.log(x) / _LN10,
    "truncate": lambda x: torch.trunc(x) if x.is_floating_point() else x,
    "not_": torch.bitwise_not,
}
_FLOAT_ONLY = {"sqrt", "exp", "ln", "log", "log2", "log10"}


def _finish(op: str, values: torch.Tensor, like: Reg, a: list, kw: dict, old: Reg | None,
            mask_pos: int, mode_pos: int) -> Reg:
    new = from_values(values, like.dtype)
    return predicated(new, old, mask(arg(a, kw, mask_pos, "mask"), op),
                      merging(kw, a, mode_pos))


def _bitwise(fn: Fn, *regs: Reg) -> tuple[torch.Tensor, Reg]:
    """`fn` on the lanes' bits (float registers included), as the integer of the same width."""
    like = regs[0]
    if like.dtype.is_float:
        as_int = _SAME_WIDTH_INT[bits(like.dtype)]
        ints = [Reg(r.data.contiguous().view(storage_dtype(as_int)), as_int) for r in regs]
        return fn(*(r.values() for r in ints)), ints[0]
    return fn(*(r.values() for r in regs)), like


_SAME_WIDTH_INT = {8: DataType.UINT8, 16: DataType.UINT16, 32: DataType.UINT32}


def _as(r: Reg, dtype: DataType) -> Reg:
    return r if r.dtype is dtype else Reg(r.data.contiguous().view(storage_dtype(dtype)), dtype)


def _binary(name: str, fn: Fn):
    def op(st, a: list, kw: dict, old: Reg | None, dtype: DataType | None) -> Reg:
        x, y = reg(a[0], name), reg(a[1], name)
        same_dtype(name, x, y)
        if name in LOGIC:
            values, like = _bitwise(fn, x, y)
            out = _finish(name, values, like, a, kw, None, 2, 3)
            return _as(out, x.dtype)
        return _finish(name, fn(x.values(), y.values()), x, a, kw, old, 2, 3)
    return op


def _scalar(name: str, fn: Fn):
    def op(st, a: list, kw: dict, old: Reg | None, dtype: DataType | None) -> Reg:
        """A scalar operand, or a register of per-lane amounts (`vshl` / `vshr`)."""
        x = reg(a[0], name)
        if name.startswith("shift"):
            need_int(name, x)
        y = a[1].values() if isinstance(a[1], Reg) and name.startswith("shift") else \
            scalar(a[1], x.dtype)
        return _finish(name, fn(x.values(), y), x, a, kw, old, 2, 3)
    return op


def _unary(name: str, fn: Fn):
    def op(st, a: list, kw: dict, old: Reg | None, dtype: DataType | None) -> Reg:
        x = reg(a[0], name)
        if name in _FLOAT_ONLY:
            need_float(name, x)
        if name == "not_":
            values, like = _bitwise(fn, x)
            return _as(_finish(name, values, like, a, kw, None, 1, 2), x.dtype)
        return _finish(name, fn(x.values()), x, a, kw, old, 1, 2)
    return op


def _old_values(old: Reg | None, like: Reg) -> torch.Tensor:
    base = old if old is not None and old.dtype == like.dtype else zeros(like.dtype)
    return base.values()


def axpy(st, a: list, kw: dict, old: Reg | None, dtype: DataType | None) -> Reg:
    """dst = alpha * src + dst."""
    x = reg(a[0], "axpy")
    alpha = scalar(a[1], x.dtype)
    return _finish("axpy", alpha * x.values() + _old_values(old, x), x, a, kw, old, 2, 3)


def _round_to_odd(v: torch.Tensor, rest: torch.Tensor) -> torch.Tensor:
    """`v` (a round-to-nearest result) moved one step towards its exact value `v + rest` when
    inexact and even: rounding to odd, which a later single rounding to a narrower type keeps
    correct."""
    as_int = v.view(torch.int64 if v.dtype == torch.float64 else torch.int32)
    bump = (rest != 0) & v.isfinite() & ((as_int & 1) == 0)
    toward = torch.where(rest > 0, float("inf"), float("-inf")).to(v.dtype)
    return torch.where(bump, torch.nextafter(v, toward), v)


def fused(x: torch.Tensor, y: torch.Tensor, c: torch.Tensor, dtype: DataType) -> torch.Tensor:
    """x * y + c with one rounding into `dtype` (the docs: vmula / vmadd round the exact
    result once). Integers wrap. Floats: the product is exact in float64, TwoSum gives the
    sum's error, and rounding to odd at float64 (FP32 results) or float32 (16-bit results)
    makes the final rounding the only one; the native header computes the same."""
    if not x.is_floating_point():
        return x * y + c
    p, cd = x.double() * y.double(), c.double()
    s = p + cd
    bb = s - p
    err = (p - (s - bb)) + (cd - bb)
    if bits(dtype) == 32:
        return _round_to_odd(s, err).float()
    f = s.float()
    rest = s - f.double()
    return _round_to_odd(f, torch.where(rest != 0, rest, err))


def mul_add_dst(st, a: list, kw: dict, old: Reg | None, dtype: DataType | None) -> Reg:
    """dst = a * b + dst, fused."""
    x, y = reg(a[0], "mul_add_dst"), reg(a[1], "mul_add_dst")
    same_dtype("mul_add_dst", x, y)
    return _finish("mul_add_dst", fused(x.values(), y.values(), _old_values(old, x), x.dtype),
                   x, a, kw, old, 2, 3)


def mul_dst_add(st, a: list, kw: dict, old: Reg | None, dtype: DataType | None) -> Reg:
    """dst = a * dst + b, fused."""
    x, y = reg(a[0], "mul_dst_add"), reg(a[1], "mul_dst_add")
    same_dtype("mul_dst_add", x, y)
    return _finish("mul_dst_add", fused(x.values(), _old_values(old, x), y.values(), x.dtype),
                   x, a, kw, old, 2, 3)


def mull(st, a: list, kw: dict, old: Reg | None, dtype: DataType | None) -> tuple[Reg, Reg]:
    """(low, high) halves of the double-width product of 32-bit integers."""
    x, y = reg(a[0], "mull"), reg(a[1], "mull")
    same_dtype("mull", x, y)
    if x.dtype not in (DataType.INT32, DataType.UINT32):
        raise VFOpError(f"vf.mull multiplies INT32 / UINT32 registers, not {x.dtype.value}")
    xv, yv = x.values(), y.values()
    lo = xv * yv  # int64 wraps: its low 32 bits are exact
    if x.dtype is DataType.UINT32:  # the 64-bit unsigned high half, kept inside int64
        low16 = (xv & 0xFFFF) * yv
        high = ((xv >> 16) * yv + (low16 >> 16)) >> 16
    else:
        high = (xv * yv) >> 32
    m = mask(arg(a, kw, 2, "mask"), "mull")
    merge = merging(kw, a, 3)
    return (predicated(from_values(lo, x.dtype), None, m, merge),
            predicated(from_values(high, x.dtype), None, m, merge))


def _carry(name: str, subtract: bool):
    def op(st, a: list, kw: dict, old: Reg | None, dtype: DataType | None) -> tuple[Mask, Reg]:
        """(flag out, sum) of 32-bit lanes with the carry-in predicate: `addc` a + b + c, flag
        where the sum carries out of 32 bits; `subc` a + ~b + c (the hardware's complement
        adder: c set gives a - b, as the docs' example computes), flag where nothing carries
        out (the borrow)."""
        x, y = reg(a[0], name), reg(a[1], name)
        same_dtype(name, x, y)
        if x.dtype not in (DataType.INT32, DataType.UINT32):
            raise VFOpError(f"vf.{name} works on INT32 / UINT32 registers, not "
                            f"{x.dtype.value}")
        carry = mask(a[2], name).lanes(x.dtype).to(torch.int64)
        ux, uy = (r.values() % (1 << 32) for r in (x, y))
        total = ux + ((~uy) % (1 << 32) if subtract else uy) + carry
        flag = (total < 1 << 32) if subtract else (total >= 1 << 32)
        m = mask(arg(a, kw, 3, "mask"), name)
        value = predicated(from_values(total, x.dtype), None, m, merging(kw, a, 4))
        return mask_of_lanes(flag & m.lanes(x.dtype), x.dtype), value
    return op


def full(st, a: list, kw: dict, old: Reg | None, dtype: DataType | None) -> Reg:
    """A scalar (rounded into dtype) or one lane of a register (pos) in every active lane."""
    value = a[0]
    if isinstance(value, Reg):
        pos = enum_of(arg(a, kw, 4, "pos", attrs.DuplicatePos.LOWEST), attrs.DuplicatePos)
        codes = value.codes()
        lane = codes[0 if pos is attrs.DuplicatePos.LOWEST else -1]
        new = from_codes(lane.expand(codes.numel()).clone(), value.dtype)
    else:
        target = dtype or DataType.FP32
        v = scalar(value, target)
        new = from_values(v.expand(lane_count(target)), target)
    return predicated(new, old, mask(arg(a, kw, 1, "mask"), "full"), merging(kw, a, 3))


def arange(st, a: list, kw: dict, old: Reg | None, dtype: DataType | None) -> Reg:
    """`vci`: start, start + 1, ... (INCREASE_ORDER); DECREASE_ORDER counts down to start
    (start + n - 1, ..., start: the instruction's DEC_ORDER), b64 lanes start, start - 1, ...
    (the backend's vci + vneg sequence)."""
    target = dtype or DataType.FP32
    start = scalar(a[0], target)
    order = enum_of(arg(a, kw, 2, "index_order", attrs.IndexOrder.INCREASE_ORDER),
                    attrs.IndexOrder)
    n = lane_count(target)
    ramp = torch.arange(n, dtype=start.dtype)
    if order is attrs.IndexOrder.DECREASE_ORDER:
        ramp = -ramp if target.bits == 64 else ramp.flip(0)
    return from_values(start + ramp, target)


# ---------------------------------------------------------------- reductions


def tree(values: torch.Tensor, fn: Fn) -> torch.Tensor:
    """Pairwise reduction of the last axis: v[i] ∘ v[i + n/2], halving to one lane."""
    while values.shape[-1] > 1:
        half = values.shape[-1] // 2
        values = fn(values[..., :half], values[..., half:])
    return values[..., 0]


_REDUCE: dict[str, Fn] = {"reduce_sum": torch.add, "reduce_max": _MAX, "reduce_min": _MIN}


def _reduce(name: str):
    fn = _REDUCE[name]

    def op(st, a: list, kw: dict, old: Reg | None, dtype: DataType | None) -> Reg:
        """Lane 0 (or lane b per 32-byte block b when datablock) = the active lanes reduced."""
        x = reg(a[0], name)
        active = mask(arg(a, kw, 1, "mask"), name).lanes(x.dtype)
        values = x.values()
        per_block = bool(arg(a, kw, 2, "datablock", False))
        groups = 8 if per_block else 1
        v, act = values.reshape(groups, -1), active.reshape(groups, -1)
        if name == "reduce_sum":
            out = tree(torch.where(act, v, torch.zeros_like(v)), fn)
        else:
            filler = v.new_full((), float("-inf") if v.is_floating_point() else
                                torch.iinfo(torch.int64).min) if name == "reduce_max" else \
                v.new_full((), float("inf") if v.is_floating_point() else
                           torch.iinfo(torch.int64).max)
            out = tree(torch.where(act, v, filler), fn)
            out = torch.where(act.any(dim=1), out, torch.zeros_like(out))
        keep = old if merging(kw, a, 3) and old is not None and old.dtype == x.dtype else None
        result = (keep.values() if keep is not None else torch.zeros_like(values)).clone()
        result[:groups] = out
        reduced = from_values(result, x.dtype)
        if name == "reduce_sum" or per_block:
            return reduced
        return _with_index(reduced, _first_lane_of(values, active, out[0]))
    return op


def _first_lane_of(values: torch.Tensor, active: torch.Tensor, pick: torch.Tensor) -> int:
    """The first active lane holding `pick` (a NaN result: the first active NaN); 0 when no
    lane is active."""
    hit = active & ((values == pick) | (values.isnan() & pick.isnan())
                    if values.is_floating_point() else values == pick)
    found = hit.nonzero()
    return int(found[0]) if found.numel() else 0


def _with_index(r: Reg, index: int) -> Reg:
    """`vcmax` / `vcmin` put the first max / min lane's index in lane 1 as an integer of the
    lane width (pto-isa's TRowReduceIdx de-interleaves it out of the odd lanes)."""
    data = r.data.clone()
    data.view(_SAME_WIDTH_INT_TORCH[data.element_size()])[1] = index
    return Reg(data, r.dtype)


_SAME_WIDTH_INT_TORCH = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def pair_reduce_sum(st, a: list, kw: dict, old: Reg | None, dtype: DataType | None) -> Reg:
    """Lane i = src[2i] + src[2i + 1] where lane 2i is active."""
    x = reg(a[0], "pair_reduce_sum")
    active = mask(arg(a, kw, 1, "mask"), "pair_reduce_sum").lanes(x.dtype)
    values = x.values()
    sums = values[0::2] + values[1::2]
    keep = old if merging(kw, a, 2) and old is not None and old.dtype == x.dtype else None
    result = (keep.values() if keep is not None else torch.zeros_like(values)).clone()
    half = sums.numel()
    result[:half] = torch.where(active[0::2], sums, result[:half])
    return from_values(result, x.dtype)


OPS: dict[str, tuple[Callable, str]] = {
    **{n: (_binary(n, f), "div" if n == "div" else "binary") for n, f in BINARY.items()},
    **{n: (_binary(n, f), "binary") for n, f in LOGIC.items()},
    **{n: (_scalar(n, f), "unary") for n, f in SCALAR.items()},
    **{n: (_unary(n, f), "transcendental" if n in _FLOAT_ONLY else "unary")
       for n, f in UNARY.items()},
    "axpy": (axpy, "binary"), "mul_add_dst": (mul_add_dst, "binary"),
    "mul_dst_add": (mul_dst_add, "binary"), "mull": (mull, "binary"),
    "addc": (_carry("addc", False), "binary"), "subc": (_carry("subc", True), "binary"),
    "full": (full, "copy"), "arange": (arange, "copy"),
    **{n: (_reduce(n), "row_reduce") for n in _REDUCE},
    "pair_reduce_sum": (pair_reduce_sum, "binary"),
}
