"""User-facing types of the `pl` surface (spec §1.2, §2.4): annotations and `TileType`.

`pl.Tensor[[d0, d1], pl.DT_FP16]`, `pl.Ptr[pl.DT_FP32]`, `pl.Tile[[r, c], dtype]` produce spec
objects that the parser turns into IR types and the runtime uses to check launch arguments.
`pl.TileType(...)` is a plain value class (not IR), as in the real system. The classes are
`Frozen` (immutable, compared field-wise) rather than dataclasses: a new process creates them
on its way to a launch, and a frozen dataclass costs about 1 ms to create.
"""
from __future__ import annotations

from typing import Any

from ..errors import FinalRejectionError, InvalidShape, InvalidType, ParserTypeError
from ..frozen import Frozen
from ..ir.dtype import DataType
from ..ir.types import MemorySpace, TileLayout, TilePad

TensorLayout = TileLayout
ND, DN, NZ, ZN, NN, ZZ = (TileLayout.ND, TileLayout.DN, TileLayout.NZ, TileLayout.ZN,
                          TileLayout.NN, TileLayout.ZZ)


class _ShapePolicy:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"pl.{self.name}"


#: a dimension of any size, not specialised (passed as a trailing int32 argument)
DYNAMIC = _ShapePolicy("DYNAMIC")
#: a dimension specialised on its runtime value (part of the cache key)
STATIC = _ShapePolicy("STATIC")


class MemRef(Frozen):
    """An explicit placement: memory space, byte address, size (accepted in annotations)."""

    __slots__ = ("memory_space", "addr", "size")
    memory_space: MemorySpace
    addr: int
    size: int | None

    def __init__(self, memory_space: MemorySpace, addr: int = 0, size: int | None = None) -> None:
        self._init(memory_space=memory_space, addr=addr, size=size)


class TensorSpec(Frozen):
    """`pl.Tensor[[dims...], dtype(, layout)(, memref)]`: dims are ints, DYNAMIC, STATIC or ...

    A trailing `...` expands to STATIC for all remaining axes (rank ≥ explicit dims).
    """

    __slots__ = ("dims", "dtype", "layout", "memref")
    dims: tuple[Any, ...]
    dtype: DataType
    layout: TileLayout
    memref: MemRef | None

    def __init__(self, dims: tuple[Any, ...], dtype: DataType,
                 layout: TileLayout = TileLayout.ND, memref: MemRef | None = None) -> None:
        self._init(dims=dims, dtype=dtype, layout=layout, memref=memref)

    @property
    def has_ellipsis(self) -> bool:
        return bool(self.dims) and self.dims[-1] is Ellipsis

    @property
    def explicit_rank(self) -> int:
        return len(self.dims) - (1 if self.has_ellipsis else 0)


class PtrSpec(Frozen):
    __slots__ = ("dtype",)
    dtype: DataType

    def __init__(self, dtype: DataType) -> None:
        self._init(dtype=dtype)


class TileSpec(Frozen):
    """`pl.Tile[[r, c], dtype]`: the type of SIMT / helper tile parameters."""

    __slots__ = ("shape", "dtype")
    shape: tuple[int, ...]
    dtype: DataType

    def __init__(self, shape: tuple[int, ...], dtype: DataType) -> None:
        self._init(shape=shape, dtype=dtype)


class DirectionSpec(Frozen):
    """Newer `pl.Input[...]` / `pl.Output[...]` wrappers: direction markers around a Tensor."""

    __slots__ = ("direction", "inner")
    direction: str
    inner: TensorSpec

    def __init__(self, direction: str, inner: TensorSpec) -> None:
        self._init(direction=direction, inner=inner)


def _check_dtype(value: Any, where: str) -> DataType:
    if not isinstance(value, DataType):
        raise FinalRejectionError(f"{where}: the dtype expects an enum value (a dtype like "
                                  f"pl.DT_FP16), got {value!r}")
    return value


class _TensorAnnotation:
    """`pl.Tensor[[dims...], dtype(, layout)(, memref)]`, or called as the real frontend also
    allows: `pl.Tensor([dims...], dtype, layout=..., memref=...)`. Bad dims are a
    `ParserTypeError` (an `InvalidType`, a TypeError) naming the axis, in the words of the real
    jit signature check (a non-list shape: of the real type resolver)."""

    def __getitem__(self, item: Any) -> TensorSpec:
        if not isinstance(item, tuple) or len(item) < 2:
            raise InvalidType("pl.Tensor[...] takes [[dims...], dtype(, layout)(, memref)]")
        dims, dtype, *rest = item
        return _tensor_spec(dims, dtype, rest)

    def __call__(self, shape: Any, dtype: Any, layout: TileLayout | None = None,
                 memref: MemRef | None = None) -> TensorSpec:
        return _tensor_spec(shape, dtype, [r for r in (layout, memref) if r is not None])

    def __repr__(self) -> str:
        return "pl.Tensor"


def _tensor_spec(dims: Any, dtype: Any, rest: list) -> TensorSpec:
    if not isinstance(dims, (list, tuple)):
        raise ParserTypeError(f"pl.Tensor shape must be a list or tuple, got {dims!r}")
    for i, d in enumerate(dims):
        if d is Ellipsis and i != len(dims) - 1:
            raise InvalidType(f"pl.Tensor dims {list(dims)!r}: the ellipsis must appear once "
                              "and only as the final shape item")
        ok = d is DYNAMIC or d is STATIC or d is Ellipsis or (
            type(d) is int and d > 0)
        if not ok:
            raise ParserTypeError(  # the real jit signature check's words
                f"pl.Tensor axis {i} annotation must be DYNAMIC, STATIC, a positive integer, "
                f"or final ellipsis; got {d!r}")
    layout, memref = TileLayout.ND, None
    for r in rest:
        if isinstance(r, TileLayout):
            layout = r
        elif isinstance(r, MemRef):
            memref = r
        else:  # the real resolver's words (a ParserTypeError: an InvalidType)
            raise ParserTypeError(f"pl.Tensor: Unknown layout {r!r}: the layout must be a "
                                  f"TensorLayout (pl.ND, pl.DN, pl.NZ, ...) or a pl.MemRef")
    return TensorSpec(tuple(dims), _check_dtype(dtype, "pl.Tensor"), layout, memref)


class _PtrAnnotation:
    def __getitem__(self, dtype: Any) -> PtrSpec:
        return PtrSpec(_check_dtype(dtype, "pl.Ptr"))

    def __repr__(self) -> str:
        return "pl.Ptr"


class _TileAnnotation:
    def __getitem__(self, item: Any) -> TileSpec:
        if isinstance(item, tuple) and len(item) == 3 and not isinstance(item[2], MemRef):
            raise ParserTypeError(f"pl.Tile 3rd argument must be pl.MemRef, got {item[2]!r} "
                                  f"(a tile has no tensor layout)")
        if not isinstance(item, tuple) or len(item) != 2:
            raise ParserTypeError("pl.Tile[...] takes [[rows, cols], dtype]")
        dims = item[0]
        if not isinstance(dims, (list, tuple)):
            raise ParserTypeError(f"pl.Tile shape must be a list or tuple, got {dims!r}")
        for i, d in enumerate(dims):  # a tile has no DYNAMIC / STATIC shape policy
            if type(d) is not int or d <= 0:
                raise ParserTypeError(f"pl.Tile shape element {i} must be a positive integer, "
                                      f"got {d!r}")
        return TileSpec(tuple(dims), _check_dtype(item[1], "pl.Tile"))

    def __repr__(self) -> str:
        return "pl.Tile"


class _DirectionAnnotation:
    def __init__(self, direction: str) -> None:
        self.direction = direction

    def __getitem__(self, inner: Any) -> DirectionSpec:
        if not isinstance(inner, TensorSpec):
            inner = Tensor[inner]
        return DirectionSpec(self.direction, inner)


class _ScalarAnnotation:
    def __getitem__(self, dtype: Any) -> DataType:
        return _check_dtype(dtype, "pl.Scalar")


Tensor = _TensorAnnotation()
Ptr = _PtrAnnotation()
Tile = _TileAnnotation()
Scalar = _ScalarAnnotation()
Input = _DirectionAnnotation("input")
Output = _DirectionAnnotation("output")


class TileType(Frozen):
    """`pl.TileType(shape, dtype, target_memory=Vec, valid_shape=None, layout=None, ...)`.

    Only 2-D compile-time shapes; a 1-D shape `[n]` means `[1, n]`. `valid_shape`: None
    (dynamic, set with `pl.set_validshape`), ints, or -1 per axis for runtime.
    """

    __slots__ = ("shape", "dtype", "target_memory", "valid_shape", "layout", "fractal", "pad",
                 "compact")
    shape: Any
    dtype: DataType
    target_memory: MemorySpace
    valid_shape: Any
    layout: TileLayout | None
    fractal: int | None
    pad: Any
    compact: int | None

    def __init__(self, shape: Any, dtype: DataType, target_memory: MemorySpace = MemorySpace.Vec,
                 valid_shape: Any = None, layout: TileLayout | None = None,
                 fractal: int | None = None, pad: Any = None, compact: int | None = None) -> None:
        self._init(shape=shape, dtype=dtype, target_memory=target_memory,
                   valid_shape=valid_shape, layout=layout, fractal=fractal, pad=pad,
                   compact=compact)
        self._check()

    def _check(self) -> None:
        shape = tuple(self.shape) if isinstance(self.shape, (list, tuple)) else (self.shape,)
        if len(shape) == 1:
            shape = (1, shape[0])
        if len(shape) != 2:
            raise InvalidShape(f"TileType: only 2-D tiles are supported, got shape {shape}",
                               hint="reshape the data into [rows, cols] tiles")
        for d in shape:
            if not isinstance(d, int) or isinstance(d, bool) or d <= 0:
                raise InvalidShape(f"TileType: shape must be positive compile-time ints, "
                                   f"got {shape}")
        object.__setattr__(self, "shape", shape)
        _check_dtype(self.dtype, "TileType")
        if not isinstance(self.target_memory, MemorySpace):
            raise FinalRejectionError(f"TileType: 'target_memory' expects an enum value "
                                      f"pl.MemorySpace.*, got {self.target_memory!r}")
        if self.valid_shape is not None:
            vs = tuple(self.valid_shape)
            if len(vs) == 1:
                vs = (1, vs[0])
            for v, d in zip(vs, shape):
                if not isinstance(v, int) or (v != -1 and not 0 < v <= d):
                    raise InvalidShape(f"TileType: valid_shape {vs} must be -1 or within "
                                       f"the shape {shape}")
            object.__setattr__(self, "valid_shape", vs)
        if self.pad is not None and not isinstance(self.pad, TilePad):
            if not isinstance(self.pad, int) or isinstance(self.pad, bool):
                raise TypeError("TileType.pad must be a TilePad or integer 0/1/2/3")
            if self.pad not in (0, 1, 2, 3):
                raise ValueError("TileType.pad must be one of TilePad.null/zero/max/min")
            object.__setattr__(self, "pad", TilePad(self.pad))
        self._check_layout()

    def _check_layout(self) -> None:
        """A layout its memory space holds on no arch is refused here, as the real TileType
        refuses it when constructed (a ValueError); what depends on the arch is checked when
        the kernel is compiled for one."""
        from .tile_layouts import tile_layout

        refusals = []
        for arch in ("a5", "a3"):
            try:
                tile_layout(self.target_memory, self.layout, self.dtype, arch)
                return
            except ValueError as e:
                refusals.append(e)
        raise refusals[0]

    @property
    def nbytes(self) -> int:
        return self.shape[0] * self.shape[1] * self.dtype.itemsize
