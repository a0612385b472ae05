"""Run one kernel launch on the simulator and, where g++ exists, on the native backend.

`sim_and_native(run)` calls `run()` (which launches a kernel and returns its output tensor)
under each backend and checks that the native result is bit-identical to the simulator's.
The docs sweeps run hundreds of cases: `first_case_natively(run)` builds natively only the first
case of each test function (a cold native build takes seconds), every case under
PYPTOPRO_SWEEP_NATIVE=1.
"""
from __future__ import annotations

import os
import shutil
from collections.abc import Callable

import torch

import pypto_pro

HAS_CXX = shutil.which("g++") is not None
SWEEP_ALL_NATIVE = os.environ.get("PYPTOPRO_SWEEP_NATIVE") == "1"
_NATIVE_RAN: set[str] = set()  # the test functions whose first case ran natively


def on_backend(backend: str, run: Callable[[], torch.Tensor]) -> torch.Tensor:
    with pypto_pro.use_backend(backend):
        return run()


def sim_and_native(run: Callable[[], torch.Tensor]) -> torch.Tensor:
    """The simulator's output of `run`, after checking the native backend gives the same."""
    on_sim = on_backend("sim", run)
    if HAS_CXX:
        native = on_backend("native", run)
        differ = _bits(native) != _bits(on_sim)  # NaNs compare by their bits
        assert not differ.any(), f"native and sim differ in {int(differ.sum())} elements"
    return on_sim


def _bits(t: torch.Tensor) -> torch.Tensor:
    if not t.dtype.is_floating_point:
        return t
    return t.view({1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[
        t.element_size()])


def first_case_natively(run: Callable[[], torch.Tensor]) -> torch.Tensor:
    """`run()` on the simulator; for the first case of each test function (every case under
    PYPTOPRO_SWEEP_NATIVE=1) also natively, bit for bit."""
    test = os.environ.get("PYTEST_CURRENT_TEST", "").split("[")[0]
    if SWEEP_ALL_NATIVE or test not in _NATIVE_RAN:
        _NATIVE_RAN.add(test)
        return sim_and_native(run)
    return on_backend("sim", run)
