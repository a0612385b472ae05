"""`call_kernel.cpp`: the `__global__` entry and the host launcher `call_kernel` (spec §4.4).

The entry takes the device ABI (`__gm__ T*` tensors and pointers, scalars, the TilingData as
`__gm__ uint8_t*`, `int32_t` DYNAMIC dims, on a2/a3 cross-core kernels `__gm__ int64_t*
ffts_addr`) and forwards to `<K>_impl`. `extern "C" void call_kernel(uint32_t blockDim, void*
stream, uint8_t* x_ptr, ..., scalars, int32_t dyn dims)` takes GM pointers as `uint8_t*`, casts
them to the element types and launches `K<<<blockDim, nullptr, stream>>>(...)`; on a2/a3 with
cross-core sync it first reads the FFTS address with `rtGetC2cCtrlAddr`. A host build that
cannot parse `<<<>>>` defines `PYPTO_NATIVE_LAUNCH(K, blockDim, l2ctrl, stream)` and gets that
macro call instead (the native backend's headers do).
"""
from __future__ import annotations

from ..ir.nodes import Function
from ..ir.types import PtrType, StructType, TensorType
from .writer import CodeWriter


def _host_param(decl: str) -> tuple[str, str]:
    """(host declaration, device argument expression) of one impl parameter declaration."""
    ctype, name = decl.rsplit(" ", 1)
    name = name.lstrip("*")
    if ctype.startswith("__gm__"):
        return f"uint8_t* {name}", f"reinterpret_cast<{ctype}>({name})"
    return decl, name


def entry_decls(impl_decls: list[str], needs_ffts: bool) -> list[str]:
    """The `__global__` entry's parameter declarations: the impl's, with `ffts_addr` last when
    the kernel needs it."""
    device = [d for d in impl_decls if not d.endswith("ffts_addr")]
    return device + (["__gm__ int64_t* ffts_addr"] if needs_ffts else [])


def decl_name(decl: str) -> str:
    """The parameter name of a C++ declaration such as `__gm__ half* x`."""
    return decl.rsplit(" ", 1)[1].lstrip("*")


def call_kernel_cpp(kernel: str, fn: Function, impl_decls: list[str], needs_ffts: bool,
                    kernel_type: str) -> tuple[str, list[tuple[int, str, int]]]:
    """The launcher source and its line map (the entry and launch lines map to the def line)."""
    w = CodeWriter("call_kernel.cpp")
    span = fn.span
    w.line(f"// call_kernel.cpp: host launcher of PyPTO Pro kernel '{kernel}' "
           f"(kernel type {kernel_type}); generated, do not edit.")
    if needs_ffts:
        w.line('#include "runtime/rt_ffts.h"')
    w.line('#include "kernel.cpp"')
    w.line()
    entry = entry_decls(impl_decls, needs_ffts)
    device = entry[:-1] if needs_ffts else entry
    names = [decl_name(d) for d in entry]
    with w.function(f"__global__ AICORE void {kernel}({', '.join(entry)})", span):
        w.line(f"{kernel}_impl({', '.join(names)});", span)
    w.line()
    host = [_host_param(d) for d in device]
    params = ["uint32_t blockDim", "void* stream", *(h for h, _ in host)]
    args = [a for _, a in host]
    with w.function(f'extern "C" void call_kernel({", ".join(params)})', span):
        if needs_ffts:
            w.line("uint64_t ffts = 0;", span)
            w.line("uint32_t ffts_len = 0;", span)
            w.line("rtGetC2cCtrlAddr(&ffts, &ffts_len);", span)
            args.append("reinterpret_cast<__gm__ int64_t*>(ffts)")
        call = f"({', '.join(args)});"
        # `<<<>>>` is not C++: a host build (the native backend) defines PYPTO_NATIVE_LAUNCH
        w.raw("#if defined(PYPTO_NATIVE_LAUNCH)")
        w.line(f"PYPTO_NATIVE_LAUNCH({kernel}, blockDim, nullptr, stream){call}", span)
        w.raw("#else")
        w.line(f"{kernel}<<<blockDim, nullptr, stream>>>{call}", span)
        w.raw("#endif")
    return w.text(), w.line_map


def host_arg_kinds(fn: Function) -> list[str]:
    """What each `call_kernel` argument after (blockDim, stream) is: "ptr" | "scalar" | "dyn"."""
    dynamic = set(fn.attr("dynamic_dims", ()) or ())
    kinds = []
    for p in fn.params:
        if isinstance(p.type, (TensorType, PtrType, StructType)):
            kinds.append("ptr")
        else:
            kinds.append("dyn" if p.name in dynamic else "scalar")
    return kinds
