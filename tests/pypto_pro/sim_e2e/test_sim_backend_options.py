"""Choosing the simulated SoC and mode: `SimBackend(soc_name=...)` or `SimBackend(soc=<SoC with
overrides>)` registered under a name and selected with `use_backend`, env `PYPTOPRO_SIM_SOC` for
the default "sim" backend (read at each launch), `functional_only=True` (values, no Trace),
`timing_only=True` (the same Trace, no values), and torch's thread count is left as found.
"""
from __future__ import annotations

import pytest
import torch

from pypto_pro.errors import InvalidArgument
from pypto_pro.examples import load
from pypto_pro.runtime.backends import register_backend, use_backend
from pypto_pro.runtime.backends.sim import SimBackend
from pypto_pro.sim import settings
from pypto_pro.soc import soc


@pytest.fixture
def add():
    m = load("vector_add")
    return m, m.make_inputs(256, 256, seed=7)


def _run(m, args) -> object:
    x, y, z = args
    z.zero_()
    m.add_kernel[None, 2](x, y, z)
    assert torch.equal(z, x + y)
    return m.add_kernel.last_trace


def test_registered_backend_with_another_soc(add):
    m, args = add
    register_backend("sim-910b1", lambda: SimBackend(soc_name="910B1"))
    with use_backend("sim-910b1"):
        trace = _run(m, args)
    assert trace.meta.soc == "Ascend910B1" and trace.meta.clock_mhz == 1850
    assert trace.meta.backend == "sim"
    default = _run(m, args)
    assert default.meta.soc == "Ascend950PR_9589"
    # 910B1 AIVs load at 32 B/cycle (950PR: 16): the memory-bound add is faster there
    assert trace.duration_cycles < default.duration_cycles


def test_env_selects_the_soc_of_the_default_backend(add, monkeypatch):
    m, args = add
    monkeypatch.setenv(settings.SOC, "950DT")
    assert _run(m, args).meta.soc == "Ascend950DT_9581"
    monkeypatch.setenv(settings.SOC, "Ascend910B1")
    assert _run(m, args).meta.soc == "Ascend910B1"
    monkeypatch.setenv(settings.SOC, "Ascend999")
    with pytest.raises(InvalidArgument, match="PYPTOPRO_SIM_SOC='Ascend999': unknown SoC"):
        _run(m, args)
    monkeypatch.delenv(settings.SOC)
    assert _run(m, args).meta.soc == "Ascend950PR_9589"


def test_soc_record_with_overrides(add):
    """`SimBackend(soc=...)` takes a SoC table with overrides (what-if studies): halving the
    AIV GM->UB rate and the HBM bandwidth slows the memory-bound add."""
    m, args = add
    base = soc("950PR")
    slow = soc("950PR", mte_rates={"gm_to_ub": base.mte_rates["gm_to_ub"] / 2},
               hbm_bytes_per_s=base.hbm_bytes_per_s / 2)
    register_backend("sim-slow", lambda: SimBackend(soc=slow))
    with use_backend("sim-slow"):
        trace = _run(m, args)
    assert trace.meta.soc == "Ascend950PR_9589"
    assert trace.duration_cycles > 1.3 * _run(m, args).duration_cycles  # latencies unchanged
    with pytest.raises(InvalidArgument, match="soc_name or soc"):
        SimBackend(soc_name="950PR", soc=slow)


def test_functional_only_computes_values_without_a_trace(add):
    m, args = add
    register_backend("sim-values", lambda: SimBackend(functional_only=True))
    with use_backend("sim-values"):
        x, y, z = args
        m.add_kernel[None, 2](x, y, z)
    assert torch.equal(z, x + y)
    assert m.add_kernel.last_trace is None


@pytest.mark.parametrize("name,shape", [("vector_add", dict(m=256, n=256)),
                                        ("flash_attention", dict(sq=256, skv=256)),
                                        ("matmul", dict(m=256, n=384))])
def test_timing_only_gives_the_same_trace_without_values(name, shape):
    """`timing_only=True` skips the op library: identical event table, outputs untouched."""
    import pandas as pd

    m = load(name)
    kernel = next(iter(m.KERNELS.values()))
    args = m.make_inputs(**shape, seed=5)
    m.run(*args, kernel=kernel)
    full = kernel.last_trace.events
    register_backend("sim-timing", lambda: SimBackend(timing_only=True))
    fresh = m.make_inputs(**shape, seed=5)
    out_index = [i for i, (a, b) in enumerate(zip(args, fresh))
                 if isinstance(a, torch.Tensor) and not torch.equal(a, b)]
    assert out_index  # the full run wrote its output
    with use_backend("sim-timing"):
        m.run(*fresh, kernel=kernel)
    pd.testing.assert_frame_equal(kernel.last_trace.events, full)
    for i in out_index:
        assert torch.equal(fresh[i], m.make_inputs(**shape, seed=5)[i])  # nothing written
    with pytest.raises(InvalidArgument, match="exclude each other"):
        SimBackend(functional_only=True, timing_only=True)


def test_torch_thread_count_is_restored(add):
    m, args = add
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        _run(m, args)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
