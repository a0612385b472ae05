"""Run one kernel launch on the simulator and, where g++ exists, on the native backend.

`sim_and_native(run)` calls `run()` (which launches a kernel and returns its output tensor)
under each backend and checks that the native result is bit-identical to the simulator's.
"""
from __future__ import annotations

import shutil
from collections.abc import Callable

import torch

import pypto_pro

HAS_CXX = shutil.which("g++") is not None


def on_backend(backend: str, run: Callable[[], torch.Tensor]) -> torch.Tensor:
    with pypto_pro.use_backend(backend):
        return run()


def sim_and_native(run: Callable[[], torch.Tensor]) -> torch.Tensor:
    """The simulator's output of `run`, after checking the native backend gives the same."""
    on_sim = on_backend("sim", run)
    if HAS_CXX:
        native = on_backend("native", run)
        assert torch.equal(native, on_sim), (
            f"native and sim differ in {int((native != on_sim).sum())} elements")
    return on_sim
