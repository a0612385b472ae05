"""SIMT kernels run natively (`cce::async_invoke` in pto/native/simt.hpp) and give results
identical to the simulator's: the 2-D, 3-D, divergent and multicore launches of
`tests/pypto_pro/sim/test_simt_launch.py`, the callees of `test_simt_callee.py` and the
contended atomics of `test_simt_atomics.py` (kernels reused from those modules)."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch

import pypto_pro

_SIM_TESTS = Path(__file__).parents[1] / "sim"


def _module(name: str):
    spec = importlib.util.spec_from_file_location(f"_simt_{name}", _SIM_TESTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


launches = _module("test_simt_launch")
atomics = _module("test_simt_atomics")
callees = _module("test_simt_callee")


def _both(backend_sim: str, run, make_inputs):
    results = {}
    for backend in ("native", backend_sim):
        torch.manual_seed(0)  # the same inputs for both
        args = make_inputs()
        with pypto_pro.use_backend(backend):
            run(args)
        results[backend] = args
    return results["native"], results[backend_sim]


@pytest.mark.parametrize("case", launches.CASES, ids=[c.name for c in launches.CASES])
def test_launch_native_equals_sim(native_backend, sim_functional, case):
    native, sim = _both(sim_functional, lambda a: launches.run_case(case, a), case.make_inputs)
    for n, s in zip(native, sim):
        if isinstance(n, torch.Tensor):
            assert torch.equal(n, s)
    torch.testing.assert_close(native[case.out], case.reference(*native), rtol=0, atol=0)


def test_callees_native_equal_sim(native_backend, sim_functional):
    """`__simt_callee__` functions called from the generated SIMT code (values, void callees
    writing a tile and GM, nested calls, divergent early returns) give what the simulator's
    vectorised `simt.call` gives, bit for bit, and the per-thread reference."""
    native, sim = _both(sim_functional, lambda a: callees.callees_kernel(*a), callees.make_inputs)
    for n, s in zip(native, sim):
        if isinstance(n, torch.Tensor):
            assert torch.equal(n, s)
    torch.manual_seed(0)
    for index, expected in callees.references(*callees.make_inputs()).items():
        torch.testing.assert_close(native[index], expected, rtol=0, atol=0)


def test_contended_atomics_native_equals_sim(native_backend, sim_functional):
    native, sim = _both(sim_functional, lambda a: atomics.atomics_kernel(*a),
                        atomics.make_inputs)
    for n, s in zip(native, sim):
        assert torch.equal(n, s)
    assert native[0][0, 0] == atomics.N * (atomics.N - 1) // 2


def test_scalar_math_native_vs_sim(native_backend, sim_functional):
    """Arithmetic, casts, rounding, sqrt / rsqrt, exp / exp2, log, sin / cos agree bit for bit
    (the simulator rounds FP64 results once, as the C library's float functions do); glibc's
    log2f, log1pf and tanhf are not always correctly rounded: there 1 ulp is allowed."""
    native, sim = _both(sim_functional, lambda a: launches.math_kernel(*a),
                        lambda: [torch.linspace(-3, 3, 64).reshape(1, 64), torch.zeros(22, 64)])
    libm = [8, 9, 12]
    exact = [r for r in range(22) if r not in libm]
    assert torch.equal(native[1][exact], sim[1][exact])
    torch.testing.assert_close(native[1][libm], sim[1][libm], rtol=2.0**-23, atol=0)
