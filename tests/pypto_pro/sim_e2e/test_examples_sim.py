"""Every example kernel runs end to end on the timing simulator (parse → passes → simulator with
the cost model on, default SoC Ascend950PR_9589: 32 AIC + 64 AIV) and matches its torch
reference, at several shapes: tails (valid shapes smaller than the tile: softmax/layernorm rows
that are not a multiple of 16 and columns below the tile width) and block counts above the core
count, which run in waves (e.g. 80 AIV blocks on 64 AIVs, 40 AIC blocks on 32 AICs, 34 mix
blocks on 32 AI cores). Every run's Trace also satisfies the timeline invariants
(`conftest.trace_invariants`).

Tolerances, by output dtype and how it was computed (`torch.testing.assert_close` rtol/atol):

* INT32 scalar write (hello_world): exact.
* FP16 elementwise from FP16 inputs (vector_add): exact — one IEEE round-to-nearest-even
  addition on both sides.
* FP32 from FP16 × FP16 on the cube with FP32 accumulation (matmul, FP32 out): rtol 1e-5,
  atol 1e-5 — products are exact in FP32, only the summation order differs.
* FP16 from the cube through the fixpipe's FP32 → FP16 conversion (matmul_reuse_a):
  rtol 1e-3, atol 1e-5 — at most one FP16 ulp (2^-10 relative) from the rounding step.
* FP32 vector kernels (softmax, layernorm, matmul_softmax): rtol 1e-5, atol 1e-5 — FP32
  reductions in another order than torch's.
* FP16 out of a mixed FP16/FP32 pipeline (flash_attention: FP16 P and O, FP32 softmax state):
  rtol 2e-3, atol 2e-3 — P is rounded to FP16 before P·V (≈ 2 FP16 ulps of an output ≤ 1).

* FP32 SIMT add (simt_add, flags and auto_mutex variants) and the VF section doubling a row:
  exact — one FP32 addition per thread / lane.
"""
from __future__ import annotations

import pytest
import torch

import pypto_pro.language as pl
from pypto_pro.examples import load
from pypto_pro.soc import soc

EXACT = dict(rtol=0.0, atol=0.0)
FP32_CUBE = dict(rtol=1e-5, atol=1e-5)
FP16_FIXPIPE = dict(rtol=1e-3, atol=1e-5)
FP32_VECTOR = dict(rtol=1e-5, atol=1e-5)
FP16_MIXED = dict(rtol=2e-3, atol=2e-3)

SOC = soc()
AIV, AIC = SOC.aiv_cores, SOC.aic_cores  # 64, 32

#: (example, kernel, make_inputs kwargs, block_dim (None = the example's own), tolerance)
CASES = [
    ("hello_world", "hello_world_kernel", {}, None, EXACT),
    ("vector_add", "add_kernel", dict(m=256, n=384), None, EXACT),
    ("vector_add", "add_kernel", dict(m=384, n=128), 2, EXACT),  # 3 row tiles on 2 blocks
    ("vector_add", "add_kernel_single", dict(m=256, n=256), None, EXACT),
    ("vector_add", "add_kernel", dict(m=(AIV + 16) * 128, n=128), AIV + 16, EXACT),  # waves
    ("matmul", "matmul_kernel", dict(m=384, n=256), None, FP32_CUBE),
    ("matmul", "matmul_kernel", dict(m=(AIC + 8) * 128, n=128), AIC + 8, FP32_CUBE),  # waves
    ("matmul", "matmul_reuse_a_kernel", dict(m=256, n=384, out_dtype=torch.float16), None,
     FP16_FIXPIPE),
    ("softmax", "softmax_kernel", dict(rows=100, cols=300), None, FP32_VECTOR),  # row tail
    ("softmax", "softmax_kernel", dict(rows=7, cols=1), None, FP32_VECTOR),  # one short tile
    ("softmax", "softmax_kernel", dict(rows=(AIV + 16) * 16 - 5, cols=200), AIV + 16,
     FP32_VECTOR),  # 80 blocks on 64 AIVs, last tile 11 rows
    ("softmax", "softmax_declared_kernel", dict(rows=37, cols=512), None, FP32_VECTOR),
    ("layernorm", "layernorm_kernel", dict(rows=50, cols=200), None, FP32_VECTOR),
    ("layernorm", "layernorm_kernel", dict(rows=17, cols=256, eps=1e-3), None, FP32_VECTOR),
    ("layernorm", "layernorm_kernel", dict(rows=70 * 16 + 3, cols=100), 70, FP32_VECTOR),
    ("matmul_softmax", "matmul_softmax_kernel", dict(n=256), None, FP32_VECTOR),
    ("matmul_softmax", "matmul_softmax_kernel", dict(n=64), None, FP32_VECTOR),
    ("flash_attention", "flash_attention_kernel", dict(sq=256, skv=384), None, FP16_MIXED),
    ("flash_attention", "flash_attention_kernel", dict(sq=384, skv=128), 2, FP16_MIXED),
    ("flash_attention", "flash_attention_kernel", dict(sq=(AIC + 2) * 128, skv=128), AIC + 2,
     FP16_MIXED),  # 34 mix blocks on 32 AI cores
    ("simt_add", "simt_add_kernel", dict(delta=2.5), None, EXACT),  # SIMT launch, flags
    ("simt_add", "simt_add_auto_kernel", dict(delta=-1.0), None, EXACT),  # ... auto_mutex
]
#: index of the output argument of each example
OUTPUT = {"hello_world": 0, "vector_add": 2, "matmul": 2, "softmax": 1, "layernorm": 3,
          "matmul_softmax": 3, "flash_attention": 3, "simt_add": 1}


def _ids(case) -> str:
    _, kernel, shape, bd, _ = case
    dims = "x".join(str(v) for v in shape.values() if not isinstance(v, torch.dtype))
    return f"{kernel}-{dims or 'default'}" + (f"-bd{bd}" if bd else "")


@pytest.mark.parametrize("name,kernel,shape,bd,tol", CASES, ids=[_ids(c) for c in CASES])
def test_example_matches_reference_on_timing_sim(name, kernel, shape, bd, tol, check_trace,
                                                 capsys):
    m = load(name)
    k = m.KERNELS[kernel]
    args = m.make_inputs(**shape, seed=3)
    expected = m.reference(*args)
    if bd is None:
        out = m.run(*args, kernel=k)
    else:
        k[None, bd](*args)
        out = args[OUTPUT[name]]
    assert out.dtype == expected.dtype and out.shape == expected.shape
    torch.testing.assert_close(out, expected, **tol)

    trace = k.last_trace
    assert trace is not None and trace.meta.soc == SOC.name
    assert trace.meta.kernel_type == m.KERNEL_TYPE
    if name == "hello_world":
        assert capsys.readouterr().out == "Hello World from PyPTO Pro!\n"
        assert k.last_result.printed == {0: "Hello World from PyPTO Pro!\n"}
        return
    check_trace(trace)
    assert trace.duration_us > 0
    blocks = bd or m.block_dim(*args)
    assert sorted(trace.events["block"].unique()) == list(range(blocks))
    slots = AIV if m.KERNEL_TYPE == "aiv" else AIC
    waves = trace.waves()
    assert waves["wave"].max() == (blocks - 1) // slots
    assert (waves["wave"] == 0).sum() == min(blocks, slots)


def test_blocks_beyond_the_cores_start_when_a_core_frees():
    """80 AIV blocks on 64 AIVs: blocks 64..79 reuse 16 of the cores and each starts only
    after the block that ran on its core finished."""
    m = load("softmax")
    args = m.make_inputs(rows=80 * 16, cols=128, seed=1)
    m.softmax_kernel[None, 80](*args)
    torch.testing.assert_close(args[1], m.reference(*args), **FP32_VECTOR)
    trace = m.softmax_kernel.last_trace
    spans = trace.block_detail().set_index("block")
    waves = trace.waves().set_index("block")
    assert list(waves.index[waves["wave"] == 1]) == list(range(64, 80))
    assert spans.loc[64:79, "core"].nunique() == 16
    for b in range(64, 80):
        core = spans.loc[b, "core"]
        before = spans[(spans["core"] == core) & (spans.index < 64)]
        assert len(before) == 1
        assert spans.loc[b, "start_cycle"] >= before["end_cycle"].iloc[0]
    # the second wave runs after the first: the launch outlasts any first-wave block by at
    # least the shortest second-wave block
    first_end = spans.loc[:63, "end_cycle"].min()
    assert spans.loc[64:, "end_cycle"].max() >= first_end + spans.loc[64:,
                                                                       "duration_cycles"].min()
    util = trace.pipe_utilization()
    assert (util["cores"] == 64).all()  # physical cores, not block instances


# ---------------------------------------------------------------- a VF section


@pl.vector_function
def _vf_double(t):
    mask = pl.vf.create_mask(dtype=pl.DT_FP32)
    r = pl.vf.load_align(t, 0)
    r2 = pl.vf.add(r, r, mask)
    pl.vf.store_align(t, r2, mask)


@pl.jit(arch="a5")
def _vf_kernel(x: pl.Tensor[[1, 64], pl.DT_FP32]):
    with pl.section_vector():
        a = pl.make_tile(pl.TileType([1, 64], pl.DT_FP32), addr=0)
        pl.load(a, x, [0, 0])
        pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
        _vf_double(a)
        pl.system.sync_src(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.store(x, a, [0, 0])


def test_vf_section_runs_on_the_timing_sim(check_trace):
    x = torch.randn(1, 64, generator=torch.Generator().manual_seed(3))
    expected = 2 * x
    _vf_kernel[None, 1](x)
    torch.testing.assert_close(x, expected, **EXACT)  # one FP32 addition per lane
    trace = _vf_kernel.last_trace
    check_trace(trace)
    ops = trace.events.sort_values("start")
    ops = ops[ops["kind"] == "instr"]["ir_op"].tolist()
    assert ops == ["block.load", "vf.vec_scope", "block.store"]
