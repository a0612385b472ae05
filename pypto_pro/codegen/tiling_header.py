"""`<Name>_tiling.h` per TilingData parameter, C++ classes of `pl.struct`, the entry copy (§4.3).

A TilingData parameter's IR type is a `StructType` whose fields are INT64 / FP32 / BOOL scalars
or arrays of them; its header declares `class <Name> { public: int64_t n; float s; int64_t
a[4]; };` in field order, which is the layout the host serialises with `ctypes` (same order,
native alignment). At kernel entry the struct is copied from GM into a local: the cube copies
it directly (`copy_data_align64`); the vector core goes through UB address 0
(`copy_gm_to_ubuf_align_v2`, an MTE2 → S flag, then `copy_data_align64`).
"""
from __future__ import annotations

from ..ir.nodes import Function
from ..ir.types import ArrayType, StructType
from .types import scalar_ctype
from .writer import source_label


def header_name(st: StructType) -> str:
    return f"{st.name}_tiling.h"


def class_lines(st: StructType, volatile: bool = False) -> list[str]:
    """The class of a struct; `volatile` fields for one copied through the SSBUF."""
    lines = [f"class {st.name} {{", "public:"]
    q = "volatile " if volatile else ""
    for name, t in st.fields:
        if isinstance(t, ArrayType):
            lines.append(f"    {q}{scalar_ctype(t.elem)} {name}[{t.size}];")
        else:
            lines.append(f"    {q}{scalar_ctype(t)} {name};")
    lines.append("};")
    return lines


def tiling_header(st: StructType, fn: Function, ssbuf_structs: set[str] = frozenset()) -> str:
    source = f"{source_label(fn.span.file)}:{fn.span.line}" if fn.span.line else fn.name
    lines = ["#pragma once",
             f"// TilingData {st.name} of kernel '{fn.name}' ({source}); generated, do not edit.",
             "#include <cstdint>", "", *class_lines(st, st.name in ssbuf_structs)]
    return "\n".join(lines) + "\n"


def tiling_params(fn: Function) -> list:
    """The StructType parameters of a kernel (its TilingData), in order."""
    return [p for p in fn.params if isinstance(p.type, StructType)]


def copy_in(body, param, span) -> None:
    """Declare the local struct and copy it in from GM as the real code generator does: the
    cube core reads GM directly; a vector core bursts it into UB address 0 (rounded up to 32
    bytes, the v2 copy on every arch), waits MTE2 → S, and copies it out of UB."""
    ctx, w = body.ctx, body.w
    st: StructType = param.type
    name = ctx.name(param)
    size, local = f"{name}_all_bytes", f"reinterpret_cast<uint8_t*>(&{name})"
    w.line(f"constexpr uint32_t {size} = sizeof({st.name});", span)
    w.line(f"{st.name} {name};", span)
    if ctx.target == "cube":
        w.line(f"copy_data_align64({local}, {name}_ptr, {size});", span)
        return
    ub, bursts = f"{name}_in_ub", f"{name}_len_burst"
    w.line(f"__ubuf__ uint8_t* {ub} = reinterpret_cast<__ubuf__ uint8_t*>(get_imm(0));", span)
    w.line(f"constexpr uint32_t {bursts} = ({size} + 31) / 32;", span)
    w.line(f"copy_gm_to_ubuf_align_v2({ub}, {name}_ptr, 0, 1, {bursts} * 32, 0, 0, false, 0, 0, "
           "0);", span)
    w.line("set_flag(PIPE_MTE2, PIPE_S, EVENT_ID0);", span)
    w.line("wait_flag(PIPE_MTE2, PIPE_S, EVENT_ID0);", span)
    w.line(f"copy_data_align64({local}, {ub}, {size});", span)
