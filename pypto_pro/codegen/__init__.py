"""The CCE code generator: lowered IR → kernel.cpp, `<T>_tiling.h`, call_kernel.cpp (spec §4).

`generate(compiled)` takes what `pypto_pro.compiler.compile_kernel` returned and gives the
`Artifacts`: the three kinds of source file, keyed by their file names, plus a line map from
every emitted C++ statement back to the kernel source line. The C++ calls pto-isa tile
instructions for data and compute and raw CCE intrinsics for sync; `surface` lists every name
it relies on (the contract with the NPU toolchain and with the CPU headers of the native
backend). Modules by job: `cce` (assembly), `function` (a target's impl), `stmts` / `exprs` /
`decls` (statements, expressions, bindings), `ops` / `movement` / `sync` / `vf` / `simt` (the
op tables), `types` (C++ spelling), `scopes` (names, declaration places), `tiling_header`,
`launcher`, `prelude`, `writer`. Imports the IR only (never the runtime or a backend).
"""
from __future__ import annotations

from typing import Any

from ..errors import CodegenInner, PyptoError
from ..ir.blame import span_of_failure
from . import cce
from .cce import Artifacts


def generate(compiled: Any) -> Artifacts:
    """`cce.generate`, with a failure of ours reported as a `CodegenInner` at the kernel line
    being emitted (never a bare Python exception)."""
    try:
        return cce.generate(compiled)
    except PyptoError:
        raise
    except Exception as e:  # noqa: BLE001  (an internal failure: typed, with its line)
        raise CodegenInner(f"{type(e).__name__}: {e}", span_of_failure(e.__traceback__),
                           module="PRO_COMPILE") from e


__all__ = ["Artifacts", "generate"]
