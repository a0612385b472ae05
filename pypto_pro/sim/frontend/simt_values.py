"""Scalar semantics of SIMT code over all threads at once.

A value is a Python scalar when every thread holds the same one (uniform) and a 1-D torch tensor
with one element per thread otherwise. Both follow the C++ the native backend runs: FP32 / FP16
/ BF16 results are rounded to their type after every operation (uniform floats too, so a
uniform and a per-thread computation agree bit for bit), integers wrap at their width, division
and modulo are C++'s (`ir/scalar_semantics.py`: integer division truncates).
"""
from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import torch

from ...errors import NotSupported, SimulationError
from ...ir.dtype import DataType
from ...ir.nodes import BinOp, UnOp
from ...ir.scalar_semantics import RUNTIME_BINOPS
from ...ir.span import Span
from ..model.memory import storage_dtype
from .program import convert_scalar

Value = Any  # int | float | bool | torch.Tensor


def lane_dtype(dtype: DataType) -> torch.dtype:
    """The torch dtype per-thread values of `dtype` are computed in (unsigned ints: int64)."""
    if dtype.kind == "uint" or dtype is DataType.INDEX:
        return torch.int64
    return storage_dtype(dtype)


def round_scalar(value: Any, dtype: DataType) -> Any:
    """A uniform value rounded / wrapped to `dtype`, as the native C++ holds it."""
    if dtype is DataType.INDEX:
        return int(value)
    return convert_scalar(value, dtype)


def to_dtype(value: Value, dtype: DataType) -> Value:
    if isinstance(value, torch.Tensor):
        out = value.to(lane_dtype(dtype))
        if dtype.kind == "uint" and dtype.bits < 64:
            out = out & ((1 << dtype.bits) - 1)
        return out
    return round_scalar(value, dtype)


def merge(old: Value | None, new: Value, mask: torch.Tensor | None, dtype: DataType) -> Value:
    """`new` in the threads of `mask`, `old` elsewhere (an assignment under divergence)."""
    if mask is None or old is None:
        return new
    if not isinstance(new, torch.Tensor) and not isinstance(old, torch.Tensor) and new == old:
        return new
    t = lane_dtype(dtype)
    return torch.where(mask, torch.as_tensor(new, dtype=t), torch.as_tensor(old, dtype=t))


# ---------------------------------------------------------------- operators

_SCALAR = {
    **RUNTIME_BINOPS,
    BinOp.And: lambda a, b: bool(a) and bool(b), BinOp.Or: lambda a, b: bool(a) or bool(b),
}


def _t(x: Value) -> torch.Tensor:
    return x if isinstance(x, torch.Tensor) else torch.as_tensor(x)


_LANES: dict[BinOp, Callable] = {
    BinOp.Add: operator.add, BinOp.Sub: operator.sub, BinOp.Mul: operator.mul,
    BinOp.FloatDiv: lambda a, b: _t(a).double() / b if not _t(a).is_floating_point() else a / b,
    BinOp.Pow: lambda a, b: torch.pow(_t(a), b),
    BinOp.Min: lambda a, b: torch.minimum(_t(a), _t(b)),
    BinOp.Max: lambda a, b: torch.maximum(_t(a), _t(b)),
    BinOp.Eq: operator.eq, BinOp.Ne: operator.ne, BinOp.Lt: operator.lt, BinOp.Le: operator.le,
    BinOp.Gt: operator.gt, BinOp.Ge: operator.ge,
    BinOp.BitAnd: lambda a, b: torch.bitwise_and(_t(a), _t(b)),
    BinOp.BitOr: lambda a, b: torch.bitwise_or(_t(a), _t(b)),
    BinOp.BitXor: lambda a, b: torch.bitwise_xor(_t(a), _t(b)),
    BinOp.Shl: lambda a, b: torch.bitwise_left_shift(_t(a), _t(b)),
    BinOp.Shr: lambda a, b: torch.bitwise_right_shift(_t(a), _t(b)),
    BinOp.And: lambda a, b: torch.logical_and(_t(a), _t(b)),
    BinOp.Or: lambda a, b: torch.logical_or(_t(a), _t(b)),
}


def binary(op: BinOp, a: Value, b: Value, dtype: DataType | None, active, span: Span) -> Value:
    """`a op b` for every thread; `dtype` is the result's (None for bool results)."""
    if op in (BinOp.FloorDiv, BinOp.FloorMod, BinOp.FloatDiv):
        return _divide(op, a, b, dtype, active, span)
    if not isinstance(a, torch.Tensor) and not isinstance(b, torch.Tensor):
        out = _SCALAR[op](a, b)
        return out if dtype is None or isinstance(out, bool) else round_scalar(out, dtype)
    out = _LANES[op](a, b)
    return out if dtype is None or out.dtype == torch.bool else to_dtype(out, dtype)


def _divide(op: BinOp, a: Value, b: Value, dtype: DataType | None, active, span: Span) -> Value:
    lanes = isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor)
    zero = (_t(b) == 0) if lanes else b == 0
    integral = not (_t(a).is_floating_point() or _t(b).is_floating_point())
    if integral or op is not BinOp.FloatDiv:
        hit = zero if not isinstance(zero, torch.Tensor) else bool(
            (zero if active is None else zero & active).any())
        if hit:
            raise SimulationError("division by zero in SIMT code", span,
                                  hint="guard the divisor; the NPU would give garbage")
    if not lanes:
        out = _SCALAR[op](a, b)
        return round_scalar(out, dtype) if dtype is not None else out
    if isinstance(zero, torch.Tensor) and integral:
        b = torch.where(zero, torch.ones_like(_t(b)), _t(b))  # inactive threads only
    if op is BinOp.FloorDiv and integral:  # C++ `/` and `%` (ir/scalar_semantics.py)
        out = torch.div(_t(a), b, rounding_mode="trunc")
    elif op is BinOp.FloorMod:
        out = torch.fmod(_t(a), b)
    else:
        out = _LANES[BinOp.FloatDiv](a, b)
    return to_dtype(out, dtype) if dtype is not None else out


def unary(op: UnOp, a: Value, dtype: DataType | None) -> Value:
    if not isinstance(a, torch.Tensor):
        out = {UnOp.Neg: operator.neg, UnOp.Not: operator.not_, UnOp.BitNot: operator.invert,
               UnOp.Abs: abs}[op](a)
        return out if dtype is None or isinstance(out, bool) else round_scalar(out, dtype)
    if op is UnOp.Not:
        return torch.logical_not(a)
    out = {UnOp.Neg: torch.neg, UnOp.BitNot: torch.bitwise_not, UnOp.Abs: torch.abs}[op](a)
    return to_dtype(out, dtype) if dtype is not None else out


def select(cond: Value, a: Value, b: Value, dtype: DataType | None) -> Value:
    if not isinstance(cond, torch.Tensor):
        return a if cond else b
    t = lane_dtype(dtype) if dtype is not None else None
    return torch.where(cond, torch.as_tensor(a, dtype=t), torch.as_tensor(b, dtype=t))


# ---------------------------------------------------------------- pl.simt math

def _round_half_away(x: torch.Tensor) -> torch.Tensor:
    t = torch.trunc(x)
    return torch.where((x - t).abs() >= 0.5, t + torch.sign(x), t)


def _fma(a, b, c):  # one rounding, as fmaf: the FP64 product of two floats is exact
    return (a.double() * b.double() + c.double()).to(a.dtype)


_MATH: dict[str, Callable] = {
    "abs": torch.abs, "min": torch.minimum, "max": torch.maximum, "sqrt": torch.sqrt,
    "rsqrt": lambda x: 1.0 / torch.sqrt(x).float(),  # the native header's rsqrtf: 1 / sqrtf
    "exp": torch.exp, "exp2": torch.exp2, "log": torch.log, "log2": torch.log2,
    "log1p": torch.log1p, "sin": torch.sin, "cos": torch.cos, "tanh": torch.tanh,
    "rint": torch.round, "round": _round_half_away, "floor": torch.floor, "ceil": torch.ceil,
    "trunc": torch.trunc, "fma": _fma, "isnan": torch.isnan, "isinf": torch.isinf,
}
#: math functions that run on the special-function unit (costed as transcendental)
TRANSCENDENTAL = frozenset({"sqrt", "rsqrt", "exp", "exp2", "log", "log2", "log1p", "sin",
                            "cos", "tanh"})


def math_fn(fn: str, args: list[Value], arg_dtypes: list[DataType], dtype: DataType,
            span: Span) -> Value:
    """`pl.simt.<fn>(*args)` for every thread; `dtype` is the result's."""
    if fn == "cast":
        return to_dtype(args[0], dtype)
    impl = _MATH.get(fn)
    if impl is None:
        raise NotSupported(f"the simulator has no pl.simt.{fn}", span)
    lanes = any(isinstance(a, torch.Tensor) for a in args)
    ts = [torch.as_tensor(a, dtype=lane_dtype(d)) for a, d in zip(args, arg_dtypes)]
    if fn in TRANSCENDENTAL and ts[0].is_floating_point():
        # in FP64, then rounded once: the correctly rounded result the C library's float
        # functions give (torch's own float32 sqrt / exp may be off by an ulp)
        ts = [t.double() for t in ts]
    out = impl(*ts)
    if out.dtype == torch.bool:
        return out if lanes else bool(out)
    out = to_dtype(out, dtype)
    return out if lanes else out.item()
