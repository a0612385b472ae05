"""Tiling classes under the real PyPTO Pro's module path (`pypto_pro.language.typing._tiling`),
answered from `pypto_pro.runtime.tiling_data`, with the real module's view of a class: a field
is `ScalarFieldInfo(dtype)` or `ArrayFieldInfo(dtype, size)` (int → DT_INDEX, float → DT_FP32,
bool → DT_BOOL); `is_tiling_class` is False for anything but a dataclass whose fields are all
valid (a duplicate field raises); `get_tiling_fields` reports any bad field as a ValueError.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Union

from ...errors import InvalidArgument, PyptoError
from ...ir.dtype import DataType
from ...runtime.tiling_data import _duplicate_field, ctypes_struct, tiling_fields, to_bytes

__all__ = ["ArrayFieldInfo", "FieldInfo", "ScalarFieldInfo", "get_tiling_ctype_struct",
           "get_tiling_fields", "is_tiling_class", "tiling_instance_to_bytes"]

_DTYPES = {"int": DataType.INDEX, "float": DataType.FP32, "bool": DataType.BOOL}


@dataclasses.dataclass(frozen=True)
class ScalarFieldInfo:
    dtype: DataType


@dataclasses.dataclass(frozen=True)
class ArrayFieldInfo:
    dtype: DataType
    size: int


FieldInfo = Union[ScalarFieldInfo, ArrayFieldInfo]


def get_tiling_fields(cls: Any) -> dict[str, FieldInfo]:
    """`{field name: FieldInfo}` in declaration order; ValueError for a class that is no
    valid tiling class, naming the bad field."""
    try:
        fields = tiling_fields(cls)
    except PyptoError as e:
        if isinstance(e, ValueError):
            raise
        raise InvalidArgument(e.message, module="PRO_RUNTIME") from e
    return {f.name: (ScalarFieldInfo(_DTYPES[f.kind]) if f.length is None
                     else ArrayFieldInfo(_DTYPES[f.kind], f.length)) for f in fields}


def is_tiling_class(cls: Any) -> bool:
    if not isinstance(cls, type) or not dataclasses.is_dataclass(cls):
        return False
    duplicate = _duplicate_field(cls)
    if duplicate is not None:
        raise InvalidArgument(f"Tiling class '{cls.__name__}' has duplicate field "
                              f"'{duplicate}'", module="PRO_RUNTIME")
    try:
        tiling_fields(cls)
    except (TypeError, ValueError):
        return False
    return True


def get_tiling_ctype_struct(cls: type) -> type:
    """The `ctypes.Structure` whose layout is the kernel's C struct."""
    return ctypes_struct(cls)


def tiling_instance_to_bytes(instance: Any) -> bytes:
    """The bytes a launch hands the kernel for this tiling instance."""
    return to_bytes(instance)
