"""Hello World: the smallest kernel (spec §6.2 walkthrough 1).

Teaches: a `@pl.jit` kernel with one GM tensor parameter; a `pl.section_vector()` body, so the
binary is AIV-only; device printing with `pl.printf` (it runs on the scalar unit and goes to the
device log, not to stdout); and a scalar write into GM with `pl.setval`. The kernel is called
directly (`hello_world_kernel(out)` = one block on the current stream).
"""
from __future__ import annotations

import torch

import pypto_pro.language as pl

TARGETS = ("vector",)
KERNEL_TYPE = "aiv"
RTOL, ATOL = 0.0, 0.0


@pl.jit(arch="a5")
def hello_world_kernel(out: pl.Tensor[[1], pl.DT_INT32]):
    with pl.section_vector():
        pl.printf("Hello World from PyPTO Pro!\n")
        pl.setval(out, 0, 1)


KERNELS = {"hello_world_kernel": hello_world_kernel}


def make_inputs(seed: int = 0) -> tuple[torch.Tensor]:
    """The single output tensor, zero-filled (`seed` is unused: there is no input data)."""
    return (torch.zeros(1, dtype=torch.int32),)


def reference(out: torch.Tensor) -> torch.Tensor:
    return torch.ones(1, dtype=torch.int32)


def block_dim(*args) -> int:
    return 1


def run(*args, kernel=hello_world_kernel) -> torch.Tensor:
    kernel(*args)
    return args[0]
