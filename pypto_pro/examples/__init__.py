"""Example kernels written the way a PyPTO Pro user writes them (spec §6).

One module per kernel. Each module defines its kernel(s) with `@pl.jit` at import time, plus:

* `TARGETS` — the targets the kernel has code for ("cube", "vector"), and `KERNEL_TYPE`
  ("aiv" vector-only, "aic" cube-only, "mix" both);
* `KERNELS` — every `@pl.jit` kernel of the module by name (the main one first);
* `make_inputs(..., seed=0)` — CPU torch tensors (and scalars) for every kernel argument, in
  parameter order, outputs zero-filled;
* `reference(*args)` — the expected output(s) computed with torch from the same arguments;
* `block_dim(*args)` — the launch's block dim, and `run(*args, kernel=...)` which launches
  `kernel[None, block_dim(*args)](*args)` on the current backend and returns the output(s);
* `RTOL`, `ATOL` — the tolerance of a comparison against `reference`.

The package imports only the public language (`pypto_pro.language`) and torch; it must not
import the compiler, the passes or a backend.
"""
from __future__ import annotations

import importlib
from types import ModuleType

#: example module names, simplest first
ALL_EXAMPLES = [
    "hello_world",
    "vector_add",
    "simt_add",
    "matmul",
    "softmax",
    "layernorm",
    "matmul_softmax",
    "flash_attention",
]


def load(name: str) -> ModuleType:
    """The example module `pypto_pro.examples.<name>`."""
    if name not in ALL_EXAMPLES:
        raise KeyError(f"unknown example {name!r}; known: {', '.join(ALL_EXAMPLES)}")
    return importlib.import_module(f"{__name__}.{name}")


__all__ = ["ALL_EXAMPLES", "load"]
