"""Smoke test of the Triton comparison harness (`benchmarks/bench_triton.py`): on each
workload's small warm-up shape, our DSL kernel (simulator functional-only, and decorated again
and compiled afresh as the compile + first launch column runs it) and its Triton twin (CPU
interpreter) all match torch. Skipped where triton is not installed (CI does not install
the `bench` extra)."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

# not importorskip("triton"): triton must first be imported by triton_kernels, which turns the
# interpreter on (TRITON_INTERPRET is read when triton's own functions are decorated)
if importlib.util.find_spec("triton") is None:
    pytest.skip("triton is not installed (the `bench` extra)", allow_module_level=True)

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
bench = pytest.importorskip("bench_triton")

from pypto_pro.runtime.backends import register_backend  # noqa: E402
from pypto_pro.runtime.backends.sim import SimBackend  # noqa: E402

register_backend("sim-func", lambda: SimBackend(functional_only=True))


@pytest.mark.parametrize("workload", bench.workloads(), ids=lambda w: w.key)
@pytest.mark.parametrize("backend", ["sim-func", "sim-cold", "triton"])
def test_small_shape_matches_torch(workload, backend):
    args = workload.make(0)
    out = args[workload.out_index]
    out.fill_(float("nan"))
    bench._launcher(workload, backend)(args)
    err = (out.float() - workload.reference(args).float()).abs().max().item()
    assert err <= workload.atol, f"{workload.key} on {backend}: max |err| {err}"


def test_redecorated_kernel_compiles_afresh():
    kernel = bench.workloads()[0].kernel
    again = bench.redecorate(kernel)
    assert again is not kernel and again.compiled_variants == {}
    assert again.options == kernel.options and again.kernel_def.fn is kernel.kernel_def.fn


def test_results_taken_under_load_lead_with_a_warning():
    cpus = __import__("os").cpu_count() or 1
    assert bench.load_warning(cpus / 2) == ""
    assert bench.load_warning(cpus * 3.5).startswith("**Measured under load**")
