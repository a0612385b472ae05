"""PyPTO Pro: a Python DSL for Ascend 950 NPU kernels, with a simulator and CPU backends.

`import pypto_pro.language as pl` is the kernel author's surface. Importing this package alone
loads nothing else: the re-exported names (`use_backend`, `profile`, `Profile`) and the
subpackages are imported on first access, so a script pays only for what it uses.
"""
from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

#: re-exported public names → the module that defines them (and the real PyPTO Pro's
#: top-level `DataType`, `DT_*` and `InternalError`)
_EXPORTS = {"use_backend": "pypto_pro.runtime.backends", "profile": "pypto_pro.runtime.profile",
            "Profile": "pypto_pro.runtime.profile", "DataType": "pypto_pro.ir.dtype"}
_ALIASES = {"InternalError": ("pypto_pro.errors", "CommonInner")}
_SUBPACKAGES = ("codegen", "compiler", "errors", "examples", "ir", "language", "passes",
                "runtime", "sim", "trace")


def __getattr__(name: str) -> Any:
    if name in _EXPORTS or name in _ALIASES or name.startswith("DT_"):
        module, attr = _ALIASES.get(name) or (
            _EXPORTS.get(name, "pypto_pro.language"), name)
        try:
            value = getattr(importlib.import_module(module), attr)
        except AttributeError:
            raise AttributeError(f"module 'pypto_pro' has no attribute {name!r}") from None
        globals()[name] = value
        return value
    if name in _SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'pypto_pro' has no attribute {name!r}")


__all__ = ["Profile", "__version__", "profile", "use_backend"]
