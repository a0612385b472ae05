"""`generate(compiled) -> Artifacts`: kernel.cpp, the tiling headers and call_kernel.cpp (§4).

kernel.cpp is laid out as spec §4.1: header comment (with the bisheng -E recipe), includes,
the scalar helpers, then one section per target guarded by `#if defined(__DAV_CUBE__)` /
`__DAV_VEC__` (cube first) holding the target's includes (a5 custom sync header, tiling
headers, `pypto_tprint.h`), the C++ classes of `pl.struct`s, the vector target's SIMT
functions and `__aicore__ inline void <K>_impl_<target>(...)`, and finally the `<K>_impl`
dispatcher that calls the section compiled for the current core. Output is deterministic: names
come from the IR, addresses from the tile placements, nothing from object identities.
`Artifacts.line_map` maps every emitted statement line back to its kernel source line.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..errors import CodegenInner
from ..ir.attrs import CrossCoreSyncMode
from ..ir.nodes import Program
from ..ir.types import ArrayType, StructType
from .context import KernelFlags
from .function import emit_impl, emit_simt, impl_params, make_ctx
from .launcher import call_kernel_cpp, entry_decls, host_arg_kinds
from .prelude import HELPERS, header
from .scopes import CPP_KEYWORDS, calls_in
from .simt import simt_functions
from .tiling_header import class_lines, header_name, tiling_header, tiling_params
from .writer import CodeWriter, source_label

TARGET_MACRO = {"cube": "__DAV_CUBE__", "vector": "__DAV_VEC__"}
_CROSS_CORE = ("system.set_cross_core", "system.wait_cross_core", "system.set_cross_core_dyn",
               "system.wait_cross_core_dyn")
_PRINTS = ("debug.printf", "debug.assert", "debug.dump_tensor", "debug.dump_tile")


@dataclass(frozen=True)
class Artifacts:
    """The generated sources of one compiled kernel, keyed the way they are written to disk."""

    kernel_name: str
    arch: str
    kernel_type: str  # "aiv" | "aic" | "mix"
    kernel_cpp: str
    tiling_headers: dict[str, str]
    call_kernel_cpp: str
    line_map: dict[str, list[tuple[int, str, int]]]
    uses_print: bool = False
    needs_ffts: bool = False
    source_file: str = ""
    specialization: Any = None  # the Specialization (build directory layout)
    tiling_key_class: Any = None
    host_args: tuple[str, ...] = field(default=())  # "ptr" | "scalar" | "dyn" per argument
    entry: tuple[str, ...] = field(default=())  # the `__global__` entry's declarations

    def files(self) -> dict[str, str]:
        """File name → text, as they sit next to each other in a build directory."""
        return {"kernel.cpp": self.kernel_cpp, **self.tiling_headers,
                "call_kernel.cpp": self.call_kernel_cpp}


def kernel_identifier(name: str) -> str:
    """The C++ name of the kernel: `name` made an identifier that is not a C++ keyword."""
    ident = re.sub(r"[^0-9A-Za-z_]", "_", name) or "kernel"
    return "k_" + ident if ident[0].isdigit() or ident in CPP_KEYWORDS else ident


def generate(compiled: Any) -> Artifacts:
    """The C++ sources of `compiled` (a `pypto_pro.compiler.CompiledKernel`)."""
    programs: dict[str, Program] = compiled.programs
    if not programs:
        raise CodegenInner("nothing to generate: the kernel has no target program",
                           module="PRO_COMPILE")
    arch = compiled.spec.arch
    name = kernel_identifier(compiled.name)
    flags = _scan(programs, arch)
    w = CodeWriter("kernel.cpp")
    first = next(iter(programs.values())).kernel
    for line in header(compiled.name, arch, compiled.kernel_type,
                       source_label(first.span.file)):
        w.raw(line)
    for line in HELPERS.splitlines():
        w.raw(line)
    headers: dict[str, str] = {}
    decls: dict[str, list[str]] = {}
    for target in ("cube", "vector"):
        if target in programs:
            decls[target] = _section(w, programs[target], target, compiled, name, flags,
                                     headers)
    _dispatcher(w, name, decls, first.span)
    impl = next(iter(decls.values()))
    launcher, launcher_map = call_kernel_cpp(name, first, impl, flags.needs_ffts,
                                             compiled.kernel_type)
    kdef = getattr(compiled, "kernel_def", None)
    return Artifacts(
        kernel_name=name, arch=arch, kernel_type=compiled.kernel_type, kernel_cpp=w.text(),
        tiling_headers=headers, call_kernel_cpp=launcher,
        line_map={"kernel.cpp": w.line_map, "call_kernel.cpp": launcher_map},
        uses_print=flags.uses_print, needs_ffts=flags.needs_ffts, source_file=first.span.file,
        specialization=compiled.spec,
        tiling_key_class=getattr(getattr(kdef, "options", None), "tiling_key", None),
        host_args=tuple(host_arg_kinds(first)), entry=tuple(entry_decls(impl, flags.needs_ffts)))


def _calls(program: Program):
    for fn in program.functions:
        yield from calls_in(fn.body)


def _scan(programs: dict[str, Program], arch: str) -> KernelFlags:
    """Kernel-wide facts the sections, the dispatcher and the launcher must agree on."""
    flags = KernelFlags()
    for program in programs.values():
        for call in _calls(program):
            if call.op in _PRINTS:
                flags.uses_print = True
            if call.op in _CROSS_CORE:
                mode = int(call.kwarg("sync_mode", CrossCoreSyncMode.INTRA_BLOCK))
                if arch != "a5":
                    flags.needs_ffts = True
                elif mode in (CrossCoreSyncMode.INTER_BLOCK, CrossCoreSyncMode.INTER_SUBBLOCK):
                    flags.a5_custom_sync = True
            if call.op == "simt.launch":
                flags.simt = True
            if call.op in ("block.ssbuf_load", "block.ssbuf_store"):
                flags.ssbuf_structs.add(call.args[0].type.name)
    return flags


def _section(w: CodeWriter, program: Program, target: str, compiled: Any, name: str,
             flags: KernelFlags, headers: dict[str, str]) -> list[str]:
    """One `#if defined(__DAV_X__)` section; returns the impl's parameter declarations."""
    macro = TARGET_MACRO[target]
    fn = program.kernel
    w.raw("")
    w.raw(f"#if defined({macro})")
    if flags.a5_custom_sync:
        w.raw("#include <pto/npu/a5/custom/TSyncCVID.hpp>")
    for p in tiling_params(fn):
        headers[header_name(p.type)] = tiling_header(p.type, fn, flags.ssbuf_structs)
        w.raw(f'#include "{header_name(p.type)}"')
    w.raw("#include <pypto_tprint.h>")
    for st in _struct_types(program):
        w.raw("")
        for line in class_lines(st, st.name in flags.ssbuf_structs):
            w.raw(line)
    for simt_fn in simt_functions(program):
        w.raw("")
        emit_simt(simt_fn, target, compiled.spec.arch, compiled.kernel_type, w, flags)
    w.raw("")
    ctx = make_ctx(fn, target, compiled.spec.arch, compiled.kernel_type, w, flags)
    emit_impl(ctx, f"{name}_impl_{target}")
    w.raw(f"#endif  // {macro}")
    return impl_params(fn, ctx)


def _struct_types(program: Program) -> list[StructType]:
    """Classes of `pl.struct` values (TilingData classes come from their headers)."""
    out: list[StructType] = []
    for call in _calls(program):
        if call.op != "struct.create":
            continue
        st = call.type.elem if isinstance(call.type, ArrayType) else call.type  # struct_array
        if isinstance(st, StructType) and all(s.name != st.name for s in out):
            out.append(st)
    return out


def _dispatcher(w: CodeWriter, name: str, decls: dict[str, list[str]], span) -> None:
    params = next(iter(decls.values()))
    w.raw("")
    with w.function(f"__aicore__ inline void {name}_impl({', '.join(params)})", span):
        for target, target_decls in decls.items():
            args = [d.rsplit(" ", 1)[1].lstrip("*") for d in target_decls]
            w.raw(f"#if defined({TARGET_MACRO[target]})")
            w.line(f"{name}_impl_{target}({', '.join(args)});", span)
            w.raw("#endif")


__all__ = ["Artifacts", "generate", "kernel_identifier"]
