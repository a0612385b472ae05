"""Operand access for the Reg API op implementations: positional-or-keyword arguments, enum
coercion, typed operand checks and the op-level error (spec §2.13 argument lists)."""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, TypeVar

import torch

from pypto_pro.ir import attrs

from ...ops.elementwise import scalar_in_dtype
from ...ops.numerics import RoundMode
from .regs import Mask, Reg


class VFOpError(ValueError):
    """A Reg API op called with operands it does not support (the section adds the span)."""


@dataclass(frozen=True)
class UBAddr:
    """A UB operand: tile number `tile` of the section plus `offset` elements of its dtype."""

    tile: int
    offset: int = 0


E = TypeVar("E", bound=enum.IntEnum)


def arg(a: list, kw: dict, pos: int | None, name: str | None, default: Any = None) -> Any:
    """The operand at position `pos` if given, else keyword `name`, else `default`."""
    if pos is not None and pos < len(a):
        return a[pos]
    if name is not None and kw.get(name) is not None:
        return kw[name]
    return default


scalar = scalar_in_dtype  # memoised there (a VF loop applies the same immediates)


def enum_of(value: Any, cls: type[E]) -> E:
    return value if isinstance(value, cls) else cls(int(value))


def reg(value: Any, op: str, what: str = "operand") -> Reg:
    if not isinstance(value, Reg):
        raise VFOpError(f"vf.{op}: the {what} must be a RegTensor, got {type(value).__name__}")
    return value


def mask(value: Any, op: str) -> Mask:
    """The predicate operand; no predicate means every lane."""
    if value is None:
        return ALL
    if not isinstance(value, Mask):
        raise VFOpError(f"vf.{op}: the mask must be a MaskReg, got {type(value).__name__}")
    return value


def ub(value: Any, op: str) -> UBAddr:
    if not isinstance(value, UBAddr):
        raise VFOpError(f"vf.{op}: the first operand must be a Vec tile (or tile + offset)")
    return value


def same_dtype(op: str, *regs: Reg) -> None:
    if any(r.dtype is not regs[0].dtype for r in regs[1:]):
        raise VFOpError(f"vf.{op}: operand dtypes differ: "
                        f"{', '.join(r.dtype.value for r in regs)}")


def need_int(op: str, r: Reg) -> None:
    if not (r.dtype.is_int or r.dtype.kind == "uint"):
        raise VFOpError(f"vf.{op} needs an integer register, not {r.dtype.value}")


def need_float(op: str, r: Reg) -> None:
    if not r.dtype.is_float:
        raise VFOpError(f"vf.{op} needs a float register, not {r.dtype.value}")


def merging(kw: dict, a: list | None = None, pos: int | None = None) -> bool:
    mode = arg(a or [], kw, pos, "mode", attrs.MergeMode.ZEROING)
    return enum_of(mode, attrs.MergeMode) is attrs.MergeMode.MERGING


def round_mode(value: Any) -> RoundMode:
    """A `pl.VFRoundMode` as the simulator's RoundMode (CAST_HYBRID rounds like RINT)."""
    name = enum_of(value, attrs.VFRoundMode).name
    return RoundMode.CAST_RINT if name == "CAST_HYBRID" else RoundMode[name]


ALL = Mask(torch.ones(256, dtype=torch.bool))
