"""IR enums and types (spec §3.1): memory spaces, pipes, layouts and the value types of the IR.

Types are frozen dataclasses, compared structurally. Shapes of tensors may hold expressions
(dynamic dims are `Var`s named `__pypto_dyn_<param>_<axis>`); tile shapes are compile-time ints.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from .dtype import DataType

if TYPE_CHECKING:
    from .nodes import Expr


class MemorySpace(enum.Enum):
    DDR = "DDR"
    Vec = "Vec"
    Mat = "Mat"
    Left = "Left"
    Right = "Right"
    Scaling = "Scaling"
    Acc = "Acc"
    Bias = "Bias"
    ScaleLeft = "ScaleLeft"
    ScaleRight = "ScaleRight"

    def __repr__(self) -> str:
        return f"pl.MemorySpace.{self.value}"


#: memory spaces of the AIC (cube core); Vec (UB) belongs to the AIV.
CUBE_SPACES = frozenset(
    {MemorySpace.Mat, MemorySpace.Left, MemorySpace.Right, MemorySpace.Acc, MemorySpace.Scaling,
     MemorySpace.Bias, MemorySpace.ScaleLeft, MemorySpace.ScaleRight}
)


class PipeType(enum.Enum):
    MTE1 = "MTE1"
    MTE2 = "MTE2"
    MTE3 = "MTE3"
    M = "M"
    V = "V"
    S = "S"
    FIX = "FIX"
    ALL = "ALL"

    def __repr__(self) -> str:
        return f"pl.PipeType.{self.value}"


class CoreType(enum.IntEnum):
    CUBE = 0
    VECTOR = 1


class SectionKind(enum.IntEnum):
    Vector = 0
    Cube = 1
    VF = 2


class TileLayout(enum.Enum):
    """Big letter = order of fractals, small letter = order inside a fractal (spec §2.3)."""

    ND = "ND"
    DN = "DN"
    NZ = "NZ"
    ZN = "ZN"
    NN = "NN"
    ZZ = "ZZ"

    @property
    def blayout(self) -> str:
        return "row" if self in (TileLayout.ND, TileLayout.ZN, TileLayout.ZZ) else "col"

    @property
    def slayout(self) -> str:
        return {"ND": "none", "DN": "none", "NZ": "row", "ZN": "col", "NN": "col", "ZZ": "row"}[
            self.value
        ]

    @property
    def is_fractal(self) -> bool:
        return self.slayout != "none"

    def __repr__(self) -> str:
        return f"pl.{self.value}"


class TilePad(enum.IntEnum):
    null = 0
    zero = 1
    max = 2
    min = 3


@dataclass(frozen=True)
class Type:
    """Base of all IR value types."""


@dataclass(frozen=True)
class ScalarType(Type):
    dtype: DataType


@dataclass(frozen=True)
class NoneType(Type):
    pass


@dataclass(frozen=True)
class StrType(Type):
    """Compile-time strings (printf formats, struct names)."""


@dataclass(frozen=True)
class PtrType(Type):
    dtype: DataType


@dataclass(frozen=True, eq=False)
class TensorType(Type):
    """A GM tensor: shape entries are `Expr` (ConstInt for static dims, Var for dynamic)."""

    shape: tuple[Expr, ...]
    dtype: DataType
    layout: TileLayout = TileLayout.ND
    strides: tuple[Expr, ...] | None = None  # None = row-major from the shape

    @property
    def rank(self) -> int:
        return len(self.shape)

    def static_shape(self) -> tuple[int | None, ...]:
        from .nodes import ConstInt

        return tuple(d.value if isinstance(d, ConstInt) else None for d in self.shape)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, TensorType)
            and self.dtype == other.dtype
            and self.layout == other.layout
            and self.static_shape() == other.static_shape()
        )

    def __hash__(self) -> int:
        return hash((self.dtype, self.layout, self.static_shape()))


@dataclass(frozen=True)
class TileType(Type):
    """A 2-D on-chip tile: compile-time shape, placement and layout.

    `valid_shape` entries are ints or None (None = set at runtime with `set_validshape`).
    `addr` is the byte offset in `memory`; None for a slot chosen at runtime from a tile group
    (then `slot_addrs` lists the candidates).
    """

    shape: tuple[int, int]
    dtype: DataType
    memory: MemorySpace
    layout: TileLayout = TileLayout.ND
    fractal: int = 512
    valid_shape: tuple[int | None, int | None] = (None, None)
    pad: TilePad = TilePad.null
    compact: int = 0
    addr: int | None = None
    slot_addrs: tuple[int, ...] = ()

    @property
    def nbytes(self) -> int:
        return self.shape[0] * self.shape[1] * self.dtype.itemsize

    @property
    def addresses(self) -> tuple[int, ...]:
        return (self.addr,) if self.addr is not None else self.slot_addrs



@dataclass(frozen=True)
class TileGroupType(Type):
    """N tiles of one TileType at `addrs`, with per-slot mutex ids (spec §2.5)."""

    tile: TileType
    addrs: tuple[int, ...]
    mutex_ids: tuple[tuple[int, ...], ...] = ()  # one tuple per slot; () = no mutexes
    fwd_ids: tuple[int, ...] = ()
    bwd_ids: tuple[int, ...] = ()

    @property
    def depth(self) -> int:
        return len(self.addrs)

    def slot_type(self, index: int | None) -> TileType:
        """The type of slot `index`, or of a slot chosen at runtime when `index` is None."""
        if index is None:
            return replace(self.tile, addr=None, slot_addrs=self.addrs)
        return replace(self.tile, addr=self.addrs[index], slot_addrs=())


@dataclass(frozen=True)
class TupleType(Type):
    types: tuple[Type, ...]
    names: tuple[str, ...] | None = None  # named tuples / structs


@dataclass(frozen=True)
class StructType(Type):
    """`pl.struct` / TilingData: a named C++ class with scalar or array fields."""

    name: str
    fields: tuple[tuple[str, Type], ...]
    array_sizes: tuple[tuple[str, int], ...] = ()

    def field_type(self, name: str) -> Type | None:
        return dict(self.fields).get(name)


@dataclass(frozen=True)
class ArrayType(Type):
    """A fixed-size array of scalars (TilingData `T[N]` fields, struct_array)."""

    elem: Type
    size: int


@dataclass(frozen=True)
class FunctionRefType(Type):
    """A reference to a SIMT / helper function (argument of `simt.launch`)."""

    name: str
    attrs: tuple[tuple[str, Any], ...] = field(default=())


INDEX = ScalarType(DataType.INDEX)
BOOL = ScalarType(DataType.BOOL)
FP32 = ScalarType(DataType.FP32)


@dataclass(frozen=True)
class RegType(Type):
    """A 256-byte vector register (`RegTensor`) of `dtype` lanes (Reg API)."""

    dtype: DataType

    @property
    def lanes(self) -> int:
        return 256 // self.dtype.itemsize


@dataclass(frozen=True)
class MaskType(Type):
    """A predicate register (`MaskReg`)."""
