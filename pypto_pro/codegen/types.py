"""C++ spelling of IR types and attribute values: dtypes, tiles, GM tensors, pipes, enums, literals.

A tile's C++ type is the pto-isa template `Tile<TileType::<Space>, <T>, R, C, BLayout::..., VR,
VC, SLayout::..., FRACTAL[, PadValue::..., CompactMode::...]>` (spec §4.1): VR/VC are -1 for a
valid shape set at run time (constructor / `SetValidShape`) or the static valid extents; a
one-column tile is always ColMajor. Every distinct tile type gets one readable alias name
(`Vec_fp16_128x128_t`); the address is not part of the type (it is bound with `TASSIGN`).
Imports only the IR.
"""
from __future__ import annotations

import enum
import math
import struct

from ..errors import NotSupported
from ..ir.dtype import DataType
from ..ir.types import (
    ArrayType, PipeType, PtrType, ScalarType, StructType, TileLayout, TilePad, TileType, Type,
)

_STORAGE_ONLY = {DataType.INT4: "int4b_t", DataType.UINT4: "uint4b_t"}


def ctype(dtype: DataType) -> str:
    """The C++ element / scalar type of a dtype (INDEX is int64_t)."""
    name = dtype.ctype or _STORAGE_ONLY.get(dtype)
    if name is None:
        raise NotSupported(f"dtype {dtype!r} has no C++ spelling", module="PRO_COMPILE")
    return name


def scalar_ctype(t: Type) -> str:
    """The C++ type of a scalar-like IR value (scalars, pointers, structs, arrays)."""
    if isinstance(t, ScalarType):
        return ctype(t.dtype)
    if isinstance(t, PtrType):
        return f"__gm__ {ctype(t.dtype)}*"
    if isinstance(t, StructType):
        return t.name
    if isinstance(t, ArrayType):
        return scalar_ctype(t.elem)
    raise NotSupported(f"no C++ scalar type for {type(t).__name__}", module="PRO_COMPILE")


def pipe(p: PipeType | str) -> str:
    """`PIPE_MTE2` etc. for a PipeType (or its name)."""
    return f"PIPE_{p.value if isinstance(p, PipeType) else p}"


# ---------------------------------------------------------------- tiles


_BLAYOUT = {"row": "BLayout::RowMajor", "col": "BLayout::ColMajor"}
_SLAYOUT = {"none": "SLayout::NoneBox", "row": "SLayout::RowMajor", "col": "SLayout::ColMajor"}
_PAD = {TilePad.null: "PadValue::Null", TilePad.zero: "PadValue::Zero",
        TilePad.max: "PadValue::Max", TilePad.min: "PadValue::Min"}
_COMPACT = {0: "CompactMode::Null", 1: "CompactMode::Normal", 2: "CompactMode::RowPlusOne"}


def tile_key(t: TileType) -> tuple:
    """What distinguishes two tile C++ types (the address does not)."""
    return (t.memory, t.dtype, t.shape, t.layout, t.fractal, t.valid_shape, t.pad, t.compact)


def tile_template(t: TileType) -> str:
    """The full pto-isa Tile template spelling of an IR tile type."""
    rows, cols = t.shape
    blayout = "col" if cols == 1 else t.layout.blayout
    vr, vc = (-1 if v is None else v for v in t.valid_shape)
    parts = [f"TileType::{t.memory.value}", ctype(t.dtype), str(rows), str(cols),
             _BLAYOUT[blayout], str(vr), str(vc), _SLAYOUT[t.layout.slayout], str(t.fractal)]
    if t.pad is not TilePad.null or t.compact:
        parts.append(_PAD[TilePad(t.pad)])
    if t.compact:
        parts.append(_COMPACT[int(t.compact)])
    return f"Tile<{', '.join(parts)}>"


def tile_alias(t: TileType) -> str:
    """A readable, deterministic alias name for the tile's C++ type."""
    rows, cols = t.shape
    name = f"{t.memory.value}_{t.dtype.value.lower()}_{rows}x{cols}"
    if t.layout is not TileLayout.ND:
        name += f"_{t.layout.value}"
    if t.valid_shape != (None, None):
        name += "_v" + "x".join("d" if v is None else str(v) for v in t.valid_shape)
    if t.fractal != 512:
        name += f"_fr{t.fractal}"
    if t.pad is not TilePad.null:
        name += f"_pad{TilePad(t.pad).name}"
    if t.compact:
        name += f"_c{int(t.compact)}"
    return name + "_t"


def tile_ctor_args(t: TileType) -> str:
    """Constructor arguments: the full extent of each run-time valid dimension (pto-isa's
    Tile has a two-value constructor when both are dynamic, a one-value one when one is)."""
    dynamic = [str(n) for n, v in zip(t.shape, t.valid_shape) if v is None]
    return f"({', '.join(dynamic)})" if dynamic else ""


def set_valid_shape(obj: str, t: TileType, rows: str, cols: str) -> str:
    """The statement that sets a tile's run-time valid extents: pto-isa's `SetValidShape`
    needs both dynamic, `SetValidRow` / `SetValidCol` set one (the caller has checked that a
    static dimension keeps its value)."""
    vr, vc = t.valid_shape
    if vr is None and vc is None:
        return f"{obj}.SetValidShape({rows}, {cols});"
    return f"{obj}.SetValidRow({rows});" if vr is None else f"{obj}.SetValidCol({cols});"


def has_runtime_valid(t: TileType) -> bool:
    return None in t.valid_shape


# ---------------------------------------------------------------- GM tensors


GT_SHAPE = "pto::Shape<1, 1, 1, -1, -1>"
GT_STRIDE = "pto::Stride<-1, -1, -1, -1, -1>"
#: the two window axes of every access (`SetShape<GT_DIMS>(rows, cols)`)
GT_DIMS = "pto::GlobalTensorDim::DIM_3, pto::GlobalTensorDim::DIM_4"


def gt_template(dtype: DataType, layout: TileLayout = TileLayout.ND) -> str:
    """The GlobalTensor view type used for every access: a 2-D window whose shape is set per
    access and whose strides are given to the constructor (all run-time values)."""
    if layout not in (TileLayout.ND, TileLayout.DN, TileLayout.NZ):
        raise NotSupported(f"a GM tensor of layout {layout.value}: pto-isa's GlobalTensor "
                           "layouts are ND, DN and NZ", module="PRO_COMPILE")
    lay = "" if layout is TileLayout.ND else f", pto::Layout::{layout.value}"
    return f"GlobalTensor<{ctype(dtype)}, {GT_SHAPE}, {GT_STRIDE}{lay}>"


# ---------------------------------------------------------------- attribute values and literals

#: C++ enum class names that differ from the IR attribute enum names
_ENUM_CLASS = {"CompareMode": "CmpMode"}
#: enums spelled as raw CCE constants (no class qualifier)
_RAW_ENUMS = {"CacheLine", "DcciDst"}


def enum_value(value: enum.Enum) -> str:
    cls = type(value).__name__
    if isinstance(value, PipeType):
        return pipe(value)
    if isinstance(value, DataType):
        return ctype(value)
    if cls in _RAW_ENUMS:
        return value.name
    return f"{_ENUM_CLASS.get(cls, cls)}::{value.name}"


def int_literal(value: int, dtype: DataType = DataType.INDEX) -> str:
    """An integer literal of `dtype` (64-bit values outside int32 get a suffix)."""
    if dtype is DataType.BOOL:
        return "true" if value else "false"
    if dtype in (DataType.INDEX, DataType.INT64):
        return str(value) if -(1 << 31) <= value < (1 << 31) else f"{value}LL"
    if dtype is DataType.INT32:
        return str(value)
    if dtype is DataType.UINT64:
        return f"{value}ULL"
    if dtype is DataType.UINT32:
        return f"{value}U"
    return f"static_cast<{ctype(dtype)}>({value})"


def float_literal(value: float, dtype: DataType = DataType.FP32) -> str:
    """A float literal: FP32 `1.5f`; other float dtypes cast from the FP32 literal.

    The value is first rounded to binary32 as the simulator stores it (double → float,
    nearest-even), then printed with the digits that give back exactly that float."""
    value = _to_fp32(value)
    if math.isnan(value):
        text = "__builtin_nanf(\"\")"
    elif math.isinf(value):
        text = "__builtin_inff()" if value > 0 else "(-__builtin_inff())"
    else:
        text = _shortest_fp32(value)
        if "e" not in text and "." not in text:
            text += ".0"
        text += "f"
    if dtype is DataType.FP32:
        return text
    return f"static_cast<{ctype(dtype)}>({text})"


def _shortest_fp32(value: float) -> str:
    """The shortest decimal (up to 9 significant digits) that reads back as this float32."""
    for digits in range(1, 10):
        text = f"{value:.{digits}g}"
        if _to_fp32(float(text)) == value:
            return text
    return repr(value)


def _to_fp32(value: float) -> float:
    if math.isnan(value) or math.isinf(value):
        return value
    try:
        return struct.unpack("<f", struct.pack("<f", value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)


def fp32_bits(value: float) -> int:
    """The IEEE-754 binary32 bit pattern of `value`."""
    return struct.unpack("<I", struct.pack("<f", value))[0]


def attr_value(value: object) -> str:
    """A compile-time kwarg value (enum, bool, int, float, dtype, tuple) as a C++ argument."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, enum.Enum):
        return enum_value(value)
    if isinstance(value, int):
        return int_literal(value)
    if isinstance(value, float):
        return float_literal(value)
    if isinstance(value, tuple):
        return "{" + ", ".join(attr_value(v) for v in value) + "}"
    if isinstance(value, str):
        from .writer import c_string

        return c_string(value)
    raise NotSupported(f"attribute value {value!r} has no C++ spelling", module="PRO_COMPILE")
