"""PyPTO Pro: a Python DSL for Ascend 950 NPU kernels, with a simulator and CPU backends.

`import pypto_pro.language as pl` is the kernel author's surface; this package is the rest of the
public API, the one the notebook layer uses too:

* `kernel.compile(*args) -> Compiled` (`.passes`, `.ir`, `.cce`, `.warnings`, `.footprint`),
  `kernel.last_trace`, `kernel.variants`, `kernel.forget()` on every `@pl.jit` kernel
  (a `JitKernel`);
* `use_backend("sim", soc="950DT", mode="functional")`, `use_arch("a5")`: where and for what
  the launches of a `with` block run;
* `profile(on_launch=..., on_pass=...)`: every launch of a `with` block (`Profile.launches`,
  `.traces`) and, optionally, progress;
* `sanitize()`: run the launches of a `with` block under the sanitizer;
* `clear_compile_cache()`: forget the compiles `kernel.compile` keeps for redefined kernels;
  `cache_dir()`: where the on-disk kernel cache lives; `compiler_version()`: the hash of the
  compiler's own sources that every cache key includes.

Subpackages with their own public API: `pypto_pro.language`, `pypto_pro.errors`,
`pypto_pro.trace`, `pypto_pro.sanitizer`, `pypto_pro.examples`. Importing this package alone
loads nothing else: names are imported on first access.
"""
from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

#: re-exported public names → the module that defines them (with the real PyPTO Pro's
#: top-level `DataType`; its `DT_*` come from `pypto_pro.language`)
_EXPORTS = {"use_backend": "pypto_pro.runtime.backends", "use_arch": "pypto_pro.runtime.arch",
            "profile": "pypto_pro.runtime.profile", "Profile": "pypto_pro.runtime.profile",
            "ProfiledLaunch": "pypto_pro.runtime.profile",
            "JitKernel": "pypto_pro.runtime.jit", "Compiled": "pypto_pro.runtime.compiled",
            "Parameter": "pypto_pro.runtime.compiled",
            "sanitize": "pypto_pro.sanitizer", "DataType": "pypto_pro.ir.dtype"}
#: public names under another name in their module
_RENAMED = {"clear_compile_cache": ("pypto_pro.runtime.compiled", "clear_memo"),
            "cache_dir": ("pypto_pro.runtime.cache", "default_cache_dir"),
            "compiler_version": ("pypto_pro.runtime.cache", "compiler_version"),
            "InternalError": ("pypto_pro.errors", "CommonInner")}
_SUBPACKAGES = ("codegen", "compiler", "errors", "examples", "ir", "language", "passes",
                "runtime", "sanitizer", "sim", "soc", "toolchain", "trace")


def __getattr__(name: str) -> Any:
    if name in _EXPORTS or name in _RENAMED or name.startswith("DT_"):
        module, attr = _RENAMED.get(name, (_EXPORTS.get(name, "pypto_pro.language"), name))
        try:
            value = getattr(importlib.import_module(module), attr)
        except AttributeError:
            raise AttributeError(f"module 'pypto_pro' has no attribute {name!r}") from None
        globals()[name] = value
        return value
    if name in _SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'pypto_pro' has no attribute {name!r}")


__all__ = ["Compiled", "JitKernel", "Parameter", "Profile", "ProfiledLaunch", "__version__",
           "cache_dir", "clear_compile_cache", "compiler_version", "profile", "sanitize",
           "use_arch", "use_backend"]
