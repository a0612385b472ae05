"""The PyPTO Pro IR: dtypes, types, nodes, the op registry, the printer and the verifier.

Submodules load on first use (`from pypto_pro.ir import nodes`, or an attribute of this package
such as `pypto_pro.ir.Call`): a launch served from the kernel cache never builds the ~100 node
classes, which is most of the import time of the language.
"""
from __future__ import annotations

import importlib
from typing import Any

#: where the package-level names live, searched in this order
_HOMES = ("nodes", "types", "dtype", "span", "ops")


def __getattr__(name: str) -> Any:
    if name.startswith("__"):  # probes (`__path__`, `__wrapped__`...) must not load everything
        raise AttributeError(f"module 'pypto_pro.ir' has no attribute {name!r}")
    try:  # a submodule (`from pypto_pro.ir import attrs`) loads alone
        return importlib.import_module(f".{name}", __name__)
    except ModuleNotFoundError as e:
        if e.name != f"{__name__}.{name}":
            raise
    for home in _HOMES:
        module = importlib.import_module(f".{home}", __name__)
        if hasattr(module, name):
            return getattr(module, name)
    raise AttributeError(f"module 'pypto_pro.ir' has no attribute {name!r}")
