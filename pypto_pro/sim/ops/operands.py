"""Operand decoding shared by the op families: tile values in and out, scalars, enum kwargs.

Owns the kwarg enums the IR carries (pto-isa encodings: `CmpMode`, `AccToVecMode`,
`ReluPreMode`, `AtomicType`, `QuantMode`, `ReduceOp`) and their normalisation (an enum member of
any class with a matching name, its int value, or its name as a string), plus the two helpers
every tile op uses: `values(tile)` (valid window as float32 / int64 compute tensor) and
`store(tile, values)` (round or wrap into the tile's dtype and write the valid window).
"""
from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Any, TypeVar

import torch

from pypto_pro.ir.dtype import DataType

from ..model.memory import GMRef, TileRef
from . import SimOpError
from .numerics import RoundMode, float_to_stored, to_compute, wrap_int


class CmpMode(enum.IntEnum):
    """pto-isa `CmpMode` (docs: `pl.gt` emits cmp_mode=4)."""

    EQ = 0
    NE = 1
    LT = 2
    LE = 3
    GT = 4
    GE = 5


class AccToVecMode(enum.IntEnum):
    SingleModeVec0 = 0
    SingleModeVec1 = 1
    DualModeSplitM = 2
    DualModeSplitN = 3


class ReluPreMode(enum.IntEnum):
    NoRelu = 0
    NormalRelu = 1


class AtomicType(enum.IntEnum):
    AtomicNone = 0
    AtomicAdd = 1


class QuantMode(enum.IntEnum):
    SYM = 0
    ASYM = 1


class ReduceOp(enum.IntEnum):
    """The reduction of `row_reduce` / `col_reduce` (VF `ReduceMode` order, plus PROD)."""

    SUM = 0
    MAX = 1
    MIN = 2
    PROD = 3


E = TypeVar("E", bound=enum.IntEnum)


def enum_arg(value: Any, enum_cls: type[E], default: E | None = None, *, op: str = "") -> E:
    """Normalise a kwarg: a member of any enum with a matching name, an int, or a name."""
    if value is None:
        if default is None:
            raise SimOpError(f"{op}: missing {enum_cls.__name__} argument")
        return default
    if isinstance(value, enum.Enum):
        value = value.name
    if isinstance(value, str):
        name = value.split(".")[-1]
        if name.upper() in {m.name.upper() for m in enum_cls}:
            return next(m for m in enum_cls if m.name.upper() == name.upper())
    elif isinstance(value, (int, bool)):
        try:
            return enum_cls(int(value))
        except ValueError:
            pass
    raise SimOpError(f"{op}: {value!r} is not a {enum_cls.__name__} "
                     f"({', '.join(f'{m.name}={m.value}' for m in enum_cls)})")


def round_mode(kwargs: dict, default: RoundMode, *, op: str, key: str = "mode") -> RoundMode:
    return enum_arg(kwargs.get(key), RoundMode, default, op=op)


def dtype_arg(value: Any, *, op: str) -> DataType:
    """A `target_type` kwarg: a DataType, a `pl.DT_*`-like member or its name."""
    if isinstance(value, DataType):
        return value
    name = value.name if isinstance(value, enum.Enum) else str(value)
    name = name.split(".")[-1].removeprefix("DT_")
    try:
        return DataType(name)
    except ValueError:
        raise SimOpError(f"{op}: {value!r} is not a data type") from None


def tile_arg(arg: Any, *, op: str, position: int) -> TileRef:
    if not isinstance(arg, TileRef):
        raise SimOpError(f"{op}: argument {position} must be a tile, got {type(arg).__name__}")
    return arg


def gm_arg(arg: Any, *, op: str, position: int) -> GMRef:
    if not isinstance(arg, GMRef):
        raise SimOpError(f"{op}: argument {position} must be a GM tensor, got "
                         f"{type(arg).__name__}")
    return arg


def require_dtype(op: str, tiles: Iterable[TileRef], allowed: Iterable[DataType]) -> None:
    allowed = tuple(allowed)
    for tile in tiles:
        if tile.dtype not in allowed:
            raise SimOpError(f"{op}: unsupported dtype {tile.dtype.value} (supported: "
                             f"{', '.join(d.value for d in allowed)})")


def require_same_dtype(op: str, *tiles: TileRef) -> None:
    first = tiles[0].dtype  # identity: a DataType hash is Python code
    if any(t.dtype is not first for t in tiles):
        raise SimOpError(f"{op}: operand dtypes differ: "
                         f"{', '.join(t.dtype.value for t in tiles)}")


def values(tile: TileRef) -> torch.Tensor:
    """The tile's valid window as compute values (float32 for floats, int64 for integers)."""
    return to_compute(tile.read(), tile.dtype)


def encode(dtype: DataType, result: torch.Tensor,
           mode: RoundMode = RoundMode.CAST_RINT) -> torch.Tensor:
    """Compute values into `dtype`'s storage: floats rounded with `mode`, integers wrapped."""
    if result.is_floating_point() or dtype.is_float:
        return float_to_stored(result, dtype, mode)
    return wrap_int(result, dtype)


def store(tile: TileRef, result: torch.Tensor, mode: RoundMode = RoundMode.CAST_RINT,
          offset: tuple[int, int] | None = None) -> None:
    """Write compute values into the tile's valid window (or at `offset`)."""
    tile.write(encode(tile.dtype, result, mode), offset)
