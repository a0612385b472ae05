"""Property tests on the timing simulator: for random shapes (with row and column tails) and
random block counts (including more blocks than cores, and more blocks than work), the row
softmax and the vector add match torch and every Trace satisfies the timeline invariants.
Tolerances as in `test_examples_sim.py` (FP32 vector: rtol = atol = 1e-5; FP16 add: exact)."""
from __future__ import annotations

import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pypto_pro.examples import load

SETTINGS = settings(max_examples=10, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


@SETTINGS
@given(rows=st.integers(1, 300), cols=st.integers(1, 512), blocks=st.integers(1, 80))
def test_softmax_any_shape_any_block_count(rows, cols, blocks, check_trace):
    m = load("softmax")
    x, y = m.make_inputs(rows, cols, seed=rows * 1000 + cols)
    m.softmax_kernel[None, blocks](x, y)
    torch.testing.assert_close(y, torch.softmax(x, dim=-1), rtol=1e-5, atol=1e-5)
    trace = m.softmax_kernel.last_trace
    check_trace(trace)
    busy = min(blocks, -(-rows // 16))  # blocks beyond the row tiles have no work (no events)
    waves = trace.waves()
    assert sorted(waves["block"]) == list(range(busy))
    assert waves["wave"].max() == (busy - 1) // 64


@SETTINGS
@given(mt=st.integers(1, 6), nt=st.integers(1, 3), blocks=st.integers(1, 70),
       depth=st.sampled_from(["add_kernel", "add_kernel_single"]))
def test_vector_add_any_tiling_any_block_count(mt, nt, blocks, depth, check_trace):
    m = load("vector_add")
    x, y, z = m.make_inputs(128 * mt, 128 * nt, seed=mt * 10 + nt)
    k = m.KERNELS[depth]
    k[None, blocks](x, y, z)
    assert torch.equal(z, x + y)
    trace = k.last_trace
    check_trace(trace)
    instr = trace.events[trace.events["kind"] == "instr"]
    assert (instr["op"] == "TADD").sum() == mt * nt
    assert (instr["op"] == "TLOAD").sum() == 2 * mt * nt
