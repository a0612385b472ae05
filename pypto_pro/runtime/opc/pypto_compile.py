"""Binary delivery (the real `pypto_pro.runtime.opc.pypto_compile`): the headers and the infer
source CANN's operator compiler needs to build a tiling-keyed kernel into an op binary.

`generate_binary_headers(kernel)` compiles the kernel for its first valid tiling key (with every
datatype variable FP16, as the real flow does), writes the build directory as a launch would
(`./build/<kernel>__<arch>/.../tk_<key>/`) and next to it `binary/` with
* `<Tiling>_tiling.h`: the tiling-struct headers, copied;
* `<TilingKey>_tilingkey.h`: the key schema in CANN's template-argument macros
  (`ASCENDC_TPL_ARGS_DECL` per field with its bit range and values, `ASCENDC_TPL_SEL` with one
  `ASCENDC_TPL_ARGS_SEL` per valid combination);
* `<kernel>_pypto_infer.cpp`: kernel.cpp behind `kernel_operator.h` and the tiling-key header,
  with an `extern "C"` mix entry whose second-to-last argument is the op's workspace.
Building the op itself (`pypto_compile_op`) needs CANN and is not provided here.
"""
from __future__ import annotations

import shutil
from typing import Any

from ...ir.dtype import DataType
from ..cache import write_build_dir
from ..compiled import Compiled
from ..tilingkey import TilingKeySchema

__all__ = ["generate_binary_headers"]


def generate_binary_headers(kernel: Any) -> str:
    """Write `binary/` for a `@pl.jit` kernel with a tiling key (see the module doc); its
    path."""
    from ..jit import JitKernel

    if not isinstance(kernel, JitKernel):
        raise TypeError("generate_binary_headers() expects a @pl.jit kernel")
    schema = kernel.tilingkey_schema
    if schema is None:
        raise ValueError(f"generate_binary_headers() requires a tiling_key schema, but kernel "
                         f"'{kernel.__name__}' has none; binary delivery needs a tilingkey "
                         "header")
    combos = schema.enumerate_valid()
    if not combos:
        raise ValueError(f"tiling_key schema '{schema.cls_name}' has no valid tilingkey "
                         "combination")
    key = dict(zip(schema.field_names(), combos[0]))
    dtypes = {param: DataType.FP16 for param in kernel.datatype_schema or {}}
    artifacts = Compiled.of(kernel._ensure_compiled(key, dtype_key=dtypes or None)).artifacts
    if not artifacts.tiling_headers:
        raise RuntimeError(f"kernel '{kernel.__name__}' produced no tiling struct header; "
                           "binary delivery requires a tiling-class parameter so a "
                           "'*_tiling.h' is generated")
    build = write_build_dir(artifacts)
    binary = build.parent / "binary"
    binary.mkdir(parents=True, exist_ok=True)
    for name in artifacts.tiling_headers:
        shutil.copy(build / name, binary / name)
    key_header = f"{schema.cls_name}_tilingkey.h"
    (binary / key_header).write_text(tilingkey_header(schema, artifacts.kernel_name, combos),
                                     encoding="utf-8")
    (binary / f"{artifacts.kernel_name}_pypto_infer.cpp").write_text(
        infer_source(artifacts, key_header), encoding="utf-8")
    return str(binary)


def tilingkey_header(schema: TilingKeySchema, kernel_name: str, combos: list[tuple]) -> str:
    """`<TilingKey>_tilingkey.h`: each field's bits (first field lowest) and values, then
    every valid combination."""
    out = ['#include "ascendc/host_api/tiling/template_argument.h"', ""]
    out += [f"#define ASCENDC_TPL_{bits}_BW {bits}"
            for bits in sorted({f.bits for _, f in schema.fields})]
    out += ["", f"ASCENDC_TPL_ARGS_DECL({kernel_name},"]
    low = 0
    for name, f in schema.fields:
        values = ", ".join(str(v) for v in f.values)
        out += [f"    // bit:{low + f.bits - 1}-{low}",
                f"    ASCENDC_TPL_UINT_DECL({name}, ASCENDC_TPL_{f.bits}_BW, "
                f"ASCENDC_TPL_UI_LIST, {values}),"]
        low += f.bits
    out += [");", "", "ASCENDC_TPL_SEL("]
    for i, combo in enumerate(combos):
        sels = [f"        ASCENDC_TPL_UINT_SEL({name}, ASCENDC_TPL_UI_LIST, {value})"
                for (name, _), value in zip(schema.fields, combo)]
        out += ["    ASCENDC_TPL_ARGS_SEL(", ",\n".join(sels),
                "    )" + ("," if i < len(combos) - 1 else "")]
    out += [");", ""]
    return "\n".join(out)


def infer_source(artifacts: Any, key_header: str) -> str:
    """`<kernel>_pypto_infer.cpp`: compiled by the operator compiler only to read the kernel's
    metadata. The op passes a workspace as the entry's second-to-last argument; the kernel
    gets the user part of it."""
    from ...codegen.launcher import decl_name

    names = [decl_name(d) for d in artifacts.entry]
    args = list(names)
    workspace = []
    if len(names) >= 2:
        ws = names[-2]
        workspace = [f"    AscendC::SetSysWorkspaceForce({ws});",
                     f"    GM_ADDR usrWorkspace = AscendC::GetUserWorkspace({ws});"]
        args[-2] = "usrWorkspace"
    name = artifacts.kernel_name
    return "\n".join([
        '#include "kernel_operator.h"', f'#include "{key_header}"', artifacts.kernel_cpp,
        f'extern "C" __global__ AICORE void {name}({", ".join(artifacts.entry)})', "{",
        "    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);", *workspace,
        f"    {name}_impl({', '.join(args)});", "}", ""])
