"""Data types of PyPTO Pro (spec §2.2): one enum shared by the language, IR, simulator and codegen.

Owns the dtype table (bits, C++ spelling, torch mapping). Imports nothing from the package.
"""
from __future__ import annotations

import enum
from typing import NamedTuple


class _Answer(int):
    """An int that can also be called: the real `DataType` answers `bits()` / `is_float()` /
    `is_int()` as methods (its docs' spelling), while this package reads them as attributes
    (`dtype.bits`, `if dtype.is_float:`); both spellings give the same value."""

    __slots__ = ()

    def __call__(self) -> int | bool:
        return int(self) if type(self) is _Bits else bool(self)

    def __repr__(self) -> str:
        return repr(self()) if type(self) is not _Bits else int.__repr__(self)


class _Bits(_Answer):
    __slots__ = ()


_YES, _NO = _Answer(1), _Answer(0)


class _DTypeInfo(NamedTuple):  # (not a dataclass: a new process creates it at import)
    bits: int
    ctype: str | None  # C++ spelling in generated code (None: storage only)
    torch_name: str | None  # torch dtype checked at launch (None: not checked, the real
    # runtime's `_PL_DTYPE_TO_TORCH` has no entry: the kernel reads the tensor's bytes as its
    # own dtype, e.g. an int32 tensor for a DT_UINT32 parameter)
    kind: str  # "bool" | "int" | "uint" | "float" | "index"


_INFO: dict[str, _DTypeInfo] = {
    "BOOL": _DTypeInfo(8, "bool", "bool", "bool"),
    "INT4": _DTypeInfo(4, None, None, "int"),
    "INT8": _DTypeInfo(8, "int8_t", "int8", "int"),
    "INT16": _DTypeInfo(16, "int16_t", "int16", "int"),
    "INT32": _DTypeInfo(32, "int32_t", "int32", "int"),
    "INT64": _DTypeInfo(64, "int64_t", "int64", "int"),
    "UINT4": _DTypeInfo(4, None, None, "uint"),
    "UINT8": _DTypeInfo(8, "uint8_t", "uint8", "uint"),
    "UINT16": _DTypeInfo(16, "uint16_t", None, "uint"),  # any tensor, as the real runtime
    "UINT32": _DTypeInfo(32, "uint32_t", None, "uint"),
    "UINT64": _DTypeInfo(64, "uint64_t", "uint64", "uint"),
    "FP16": _DTypeInfo(16, "half", "float16", "float"),
    "FP32": _DTypeInfo(32, "float", "float32", "float"),
    "BF16": _DTypeInfo(16, "bfloat16_t", "bfloat16", "float"),
    "FP4": _DTypeInfo(4, "float4_e2m1x2_t", None, "float"),
    "FP8E4M3FN": _DTypeInfo(8, "float8_e4m3_t", None, "float"),
    "FP8E5M2": _DTypeInfo(8, "float8_e5m2_t", None, "float"),
    "FP8E8M0": _DTypeInfo(8, "float8_e8m0_t", None, "float"),
    "FP4E2M1": _DTypeInfo(4, "float4_e2m1x2_t", None, "float"),
    "FP4E1M2": _DTypeInfo(4, "float4_e1m2x2_t", None, "float"),
    "HF4": _DTypeInfo(4, "hifloat4_t", None, "float"),
    "HF8": _DTypeInfo(8, "hifloat8_t", "uint8", "float"),
    "INDEX": _DTypeInfo(64, "int64_t", None, "index"),
}


class DataType(enum.Enum):
    """A PyPTO Pro element type. `pl.DT_FP16 is DataType.FP16`."""

    BOOL = "BOOL"
    INT4 = "INT4"
    INT8 = "INT8"
    INT16 = "INT16"
    INT32 = "INT32"
    INT64 = "INT64"
    UINT4 = "UINT4"
    UINT8 = "UINT8"
    UINT16 = "UINT16"
    UINT32 = "UINT32"
    UINT64 = "UINT64"
    FP16 = "FP16"
    FP32 = "FP32"
    BF16 = "BF16"
    FP4 = "FP4"
    FP8E4M3FN = "FP8E4M3FN"
    FP8E5M2 = "FP8E5M2"
    FP8E8M0 = "FP8E8M0"
    FP4E2M1 = "FP4E2M1"
    FP4E1M2 = "FP4E1M2"
    HF4 = "HF4"
    HF8 = "HF8"
    INDEX = "INDEX"

    # (`_value_`, not `value`: an enum's `value` is a descriptor costing ~20x a plain attribute,
    # and these are read per simulated op)
    @property
    def bits(self) -> int:
        return _BITS[self._value_]

    @property
    def itemsize(self) -> int:
        """Bytes per element for slot sizing: 4-bit types count as one byte (spec §2.2)."""
        return max(1, (self.bits + 7) // 8)

    @property
    def ctype(self) -> str | None:
        return _INFO[self._value_].ctype

    @property
    def kind(self) -> str:
        return _INFO[self._value_].kind

    @property
    def is_float(self) -> bool:
        return _YES if _INFO[self._value_].kind == "float" else _NO

    @property
    def is_int(self) -> bool:
        return _YES if _INFO[self._value_].kind in ("int", "uint", "index") else _NO

    @property
    def family(self) -> str:
        """"bool", "int" (signed, unsigned or index) or "float": the dtypes one value may be
        mixed with where the real frontend is lenient (SIMT signatures, tuples)."""
        return "int" if self.is_int else self.kind

    # the real DataType's query methods, as its docs name them
    def get_bit(self) -> int:
        return self.bits()

    def is_signed_int(self) -> bool:
        return self.kind == "int"

    def is_unsigned_int(self) -> bool:
        return self.kind == "uint"

    is_signed = is_signed_int
    is_unsigned = is_unsigned_int

    def to_string(self) -> str:
        """The real `str(dtype)`: "fp16", "bfloat16", "int32", ... (this package's own `str`
        stays the `pl.DT_FP16` spelling its messages use)."""
        return _REAL_NAMES.get(self._value_, self._value_.lower())

    def to_c_type_string(self) -> str:
        return self.ctype or "unknown"

    @property
    def torch_dtype(self):
        """The torch dtype a launch argument of this type must have, or None when unchecked."""
        name = _INFO[self._value_].torch_name
        if name is None:
            return None
        import torch

        return getattr(torch, name)

    def __repr__(self) -> str:
        return f"pl.DT_{self.value}"

    __str__ = __repr__


_BITS = {name: _Bits(info.bits) for name, info in _INFO.items()}
_REAL_NAMES = {"BF16": "bfloat16"}

#: dtypes exported as `pl.DT_*` (INDEX is internal: loop variables and shape dims).
PUBLIC_DTYPES = tuple(d for d in DataType if d is not DataType.INDEX)


def promote_scalar(a: DataType, b: DataType) -> DataType:
    """Result dtype of a scalar binary expression, Python-like: float wins, then the wider int."""
    if a == b:
        return a
    if a.is_float or b.is_float:
        floats = [d for d in (a, b) if d.is_float]
        return max(floats, key=lambda d: d.bits) if len(floats) == 2 else floats[0]
    if DataType.BOOL in (a, b):
        return b if a == DataType.BOOL else a
    return max((a, b), key=lambda d: d.bits)
