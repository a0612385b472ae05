"""The SSBUF (spec: `ssbuf_store` / `ssbuf_load`): a block's shared scalar buffer, byte
addressed, copied by the scalar unit.

`ssbuf_store(struct, offset)` writes the struct's bytes in its C++ layout (fields in order, each
at its natural alignment, as the generated struct and the native backend lay it out) at byte
`offset` of the block's buffer; `ssbuf_load(struct, offset)` reads them back into the struct's
fields. The buffer has the native backend's size (`kSsbufBytes`); the cores of one block share
it (`Launch.ssbuf`), and it starts zeroed.
"""
from __future__ import annotations

import ctypes
import functools
from typing import Any, Callable

from ...errors import SimulationError
from ...ir.dtype import DataType
from ...ir.nodes import Call
from ...ir.types import ArrayType, ScalarType, StructType, Type

SSBUF_BYTES = 4096  # pypto_pro/include/pto/native/runtime.hpp kSsbufBytes

_CTYPES = {
    DataType.BOOL: ctypes.c_bool, DataType.INT8: ctypes.c_int8, DataType.INT16: ctypes.c_int16,
    DataType.INT32: ctypes.c_int32, DataType.INT64: ctypes.c_int64,
    DataType.INDEX: ctypes.c_int64, DataType.UINT8: ctypes.c_uint8,
    DataType.UINT16: ctypes.c_uint16, DataType.UINT32: ctypes.c_uint32,
    DataType.UINT64: ctypes.c_uint64, DataType.FP32: ctypes.c_float,
}


def _ctype(t: Type, span: Any) -> Any:
    if isinstance(t, ArrayType):
        return _ctype(t.elem, span) * t.size
    if isinstance(t, ScalarType) and t.dtype in _CTYPES:
        return _CTYPES[t.dtype]
    raise SimulationError(f"ssbuf: a struct field of type {t!r} has no C++ layout here", span)


@functools.lru_cache(maxsize=None)
def struct_ctype(t: StructType, span: Any = None) -> type[ctypes.Structure]:
    """The ctypes structure with `t`'s C++ layout."""
    return type(t.name, (ctypes.Structure,),
                {"_fields_": [(name, _ctype(ft, span)) for name, ft in t.fields]})


def compile_ssbuf(c: Any, e: Call) -> Callable:
    struct_fn, offset_fn = c.expr(e.args[0]), c.expr(e.args[1])
    layout = struct_ctype(e.args[0].type, e.span)
    size, store, span = ctypes.sizeof(layout), e.op == "block.ssbuf_store", e.span
    names = [name for name, _ in layout._fields_]

    def run(fr: Any):
        core = fr.core
        yield from core.sync_scalar()
        buf, value, offset = core.ssbuf(), struct_fn(fr), int(offset_fn(fr))
        if not 0 <= offset <= SSBUF_BYTES - size:
            raise SimulationError(f"{e.op} of {size} bytes at {offset} is outside the "
                                  f"{SSBUF_BYTES}-byte SSBUF", span)
        if store:
            raw = layout(**{n: _c_value(value[n]) for n in names})
            buf[offset:offset + size] = bytes(raw)
        else:
            raw = layout.from_buffer_copy(bytes(buf[offset:offset + size]))
            for n in names:
                field = getattr(raw, n)
                value[n] = list(field) if isinstance(field, ctypes.Array) else field
        core.time += 1
        return None

    return run


def _c_value(v: Any) -> Any:
    return v if not isinstance(v, list) else tuple(v)
