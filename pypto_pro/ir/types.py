"""IR enums and types (spec §3.1): memory spaces, pipes, layouts and the value types of the IR.

Types are frozen dataclasses, compared structurally. Shapes of tensors may hold expressions
(dynamic dims are `Var`s named `__pypto_dyn_<param>_<axis>`); tile shapes are compile-time ints.

The value types become dataclasses on first use: making a dataclass compiles its methods from
source (about half a millisecond each), and the language and a launch served from the kernel
cache need only the enums. `_value_type` records each class with its dataclass options, the
end of the module hides the recorded names, and the first access to any of them
(`from pypto_pro.ir.types import TileType`, PEP 562 `__getattr__`) makes them all dataclasses,
in definition order, and publishes them with the constants built from them (`INDEX`, ...).
"""
from __future__ import annotations

import enum
import threading
from collections.abc import Callable
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

    # members are singletons: identity hashing is C code, Enum's __hash__ is Python (the
    # simulator hashes these tens of thousands of times per launch)
    __hash__ = object.__hash__


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

    # members are singletons: identity hashing is C code, Enum's __hash__ is Python (the
    # simulator hashes these tens of thousands of times per launch)
    __hash__ = object.__hash__


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


#: value types not yet made dataclasses, with their options (see the module docstring)
_PENDING: list[tuple[type, dict[str, Any]]] = []


def _value_type(**options: Any) -> Callable[[type], type]:
    def record(cls: type) -> type:
        _PENDING.append((cls, {"frozen": True, **options}))
        return cls

    return record


@_value_type()
class Type:
    """Base of all IR value types."""


@_value_type()
class ScalarType(Type):
    dtype: DataType


@_value_type()
class NoneType(Type):
    pass


@_value_type()
class StrType(Type):
    """Compile-time strings (printf formats, struct names)."""


@_value_type()
class PtrType(Type):
    dtype: DataType


@_value_type(eq=False)
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


@_value_type()
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



@_value_type()
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


@_value_type()
class TupleType(Type):
    types: tuple[Type, ...]
    names: tuple[str, ...] | None = None  # named tuples / structs


@_value_type()
class StructType(Type):
    """`pl.struct` / TilingData: a named C++ class with scalar or array fields."""

    name: str
    fields: tuple[tuple[str, Type], ...]
    array_sizes: tuple[tuple[str, int], ...] = ()

    def field_type(self, name: str) -> Type | None:
        return dict(self.fields).get(name)


@_value_type()
class ArrayType(Type):
    """A fixed-size array of scalars (TilingData `T[N]` fields, struct_array)."""

    elem: Type
    size: int


@_value_type()
class FunctionRefType(Type):
    """A reference to a SIMT / helper function (argument of `simt.launch`)."""

    name: str
    attrs: tuple[tuple[str, Any], ...] = field(default=())


@_value_type()
class RegType(Type):
    """A 256-byte vector register (`RegTensor`) of `dtype` lanes (Reg API)."""

    dtype: DataType

    @property
    def lanes(self) -> int:
        return 256 // self.dtype.itemsize


@_value_type()
class MaskType(Type):
    """A predicate register (`MaskReg`), one bit per register byte. `dtype` is the element
    type it was made for (the real IR types a mask as that scalar type): the lane width its
    interleave / pack / unaligned-store forms work in; None when nothing says."""

    dtype: DataType | None = None


@_value_type()
class AddrRegType(Type):
    """An address register (`AddrReg`, `vf.create_addr_reg`): an element offset of `dtype`
    that `vf.load_align` / `vf.store_align` add to their tile."""

    dtype: DataType


@_value_type()
class AlignRegType(Type):
    """An unaligned-access register (`UnalignReg`): the 32-byte buffer an unaligned load
    (`vf.load_unalign_init`) or store (`vf.unalign_reg_for_store`) carries between calls."""


#: scalar types the IR uses everywhere, made with the value types
_CONSTANTS = {"INDEX": DataType.INDEX, "BOOL": DataType.BOOL, "FP32": DataType.FP32}
_VALUE_NAMES = frozenset([*(cls.__name__ for cls, _ in _PENDING), *_CONSTANTS])
for _cls, _ in _PENDING:
    del globals()[_cls.__name__]
del _cls
_define_lock = threading.Lock()


def __getattr__(name: str) -> Any:
    if name not in _VALUE_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    with _define_lock:
        if _PENDING:
            for cls, options in _PENDING:
                globals()[cls.__name__] = dataclass(**options)(cls)
            scalar = globals()["ScalarType"]
            globals().update({n: scalar(d) for n, d in _CONSTANTS.items()})
            _PENDING.clear()
    return globals()[name]


def __dir__() -> list[str]:
    return sorted({*globals(), *_VALUE_NAMES})
