"""Example kernels written the way a PyPTO Pro user writes them (spec §6).

One module per kernel. Each module defines its kernel(s) with `@pl.jit` at import time, plus:

* `TARGETS` — the targets the kernel has code for ("cube", "vector"), and `KERNEL_TYPE`
  ("aiv" vector-only, "aic" cube-only, "mix" both);
* `KERNELS` — every `@pl.jit` kernel of the module by name (the main one first);
* `make_inputs(..., seed=0)` — CPU torch tensors (and scalars, and a TilingData instance) for
  every kernel argument, in parameter order, outputs zero-filled;
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

import torch

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
    "flash_attention_preload",
    "flash_attention_gm",
    "flash_attention_bnsd",
    "flash_attention_bsnd",
    "flash_attention_tail",
    "vf_softmax",
    "vf_layernorm",
]


#: modules of kernel factories (tiling as parameters, for sweeps and autotuning), not examples
FACTORY_MODULES = ["tunable"]

#: (module, kernel, make_inputs shape) launches that cover every kernel, tails included; the
#: backends' example tests all run this list
SMALL_CASES = [
    ("hello_world", "hello_world_kernel", {}),
    ("vector_add", "add_kernel", dict(m=256, n=384)),
    ("vector_add", "add_kernel_single", dict(m=384, n=128)),
    ("simt_add", "simt_add_kernel", dict(delta=2.5)),
    ("simt_add", "simt_add_auto_kernel", dict(delta=-1.0)),
    ("matmul", "matmul_kernel", dict(m=384, n=256)),
    ("matmul", "matmul_reuse_a_kernel", dict(m=256, n=384, out_dtype=torch.float16)),
    ("softmax", "softmax_kernel", dict(rows=100, cols=300)),
    ("softmax", "softmax_kernel", dict(rows=16, cols=1)),
    ("softmax", "softmax_declared_kernel", dict(rows=37, cols=512)),
    ("layernorm", "layernorm_kernel", dict(rows=50, cols=200)),
    ("layernorm", "layernorm_kernel", dict(rows=17, cols=256, eps=1e-3)),
    ("matmul_softmax", "matmul_softmax_kernel", dict(n=256)),
    ("matmul_softmax", "matmul_softmax_kernel", dict(n=64)),
    ("flash_attention", "flash_attention_kernel", dict(sq=256, skv=256)),
    ("flash_attention", "flash_attention_kernel", dict(sq=384, skv=128)),
    ("flash_attention_preload", "flash_attention_preload_kernel", dict(sq=256, skv=384)),
    ("flash_attention_gm", "flash_attention_gm_kernel", dict(sq=256, skv=384)),
    ("flash_attention_gm", "flash_attention_gm_kernel", dict(sq=640, skv=128)),
    ("flash_attention_bnsd", "flash_attention_bnsd_kernel", dict(heads=2, sq=256, skv=256)),
    ("flash_attention_bnsd", "flash_attention_bnsd_kernel",
     dict(batch=2, heads=1, sq=128, skv=256, causal=0)),
    ("flash_attention_bsnd", "flash_attention_bsnd_kernel", dict(batch=1, sq=128, skv=256)),
    ("flash_attention_tail", "flash_attention_tail_kernel", dict(sq=128, skv=200)),
    ("flash_attention_tail", "flash_attention_tail_kernel", dict(sq=256, skv=72)),
    ("vf_softmax", "vf_softmax_kernel", dict(rows=20, cols=300)),
    ("vf_layernorm", "vf_layernorm_kernel", dict(rows=19, cols=200, eps=1e-3)),
]
#: argument positions a kernel writes besides its output (GM workspaces)
WORKSPACE_ARGS = {"matmul_softmax": {2}, "flash_attention_gm": {4, 5, 6}}


def load(name: str) -> ModuleType:
    """The example module `pypto_pro.examples.<name>`."""
    if name not in ALL_EXAMPLES:
        raise KeyError(f"unknown example {name!r}; known: {', '.join(ALL_EXAMPLES)}")
    return importlib.import_module(f"{__name__}.{name}")


__all__ = ["ALL_EXAMPLES", "load"]
