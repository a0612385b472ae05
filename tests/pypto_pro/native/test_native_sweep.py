"""A hypothesis sweep: random shapes (with tails), block dims, element types and data give
bit-identical results on the simulator and the native backend, both matching torch. The
libraries are built once per kernel (DYNAMIC dims do not specialise), so each example is cheap."""
from __future__ import annotations

import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pypto_pro
import pypto_pro.language as pl
from pypto_pro.examples import load

SETTINGS = settings(max_examples=6, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


def _both(sim_backend: str, module: str, kernel, block_dim: int, make):
    outs = []
    for backend in (sim_backend, "native"):
        args = make()
        with pypto_pro.use_backend(backend):
            kernel[None, block_dim](*args)
        outs.append(args)
    return outs


def _check(sim_args, native_args, out_index: int, reference, rtol: float, atol: float):
    sim_out, nat_out = sim_args[out_index], native_args[out_index]
    assert torch.equal(sim_out, nat_out), f"{int((sim_out != nat_out).sum())} elements differ"
    torch.testing.assert_close(nat_out.float(), reference(*native_args).float(), rtol=rtol,
                               atol=atol)


@SETTINGS
@given(rows=st.integers(1, 70), cols=st.integers(1, 512), bd=st.integers(1, 6),
       seed=st.integers(0, 2**16))
def test_softmax(native_backend, sim_functional, rows, cols, bd, seed):
    m = load("softmax")
    sim_args, nat_args = _both(sim_functional, "softmax", m.softmax_kernel, bd,
                               lambda: m.make_inputs(rows=rows, cols=cols, seed=seed))
    _check(sim_args, nat_args, 1, m.reference, m.RTOL, m.ATOL)


@SETTINGS
@given(rows=st.integers(1, 70), cols=st.integers(1, 256), bd=st.integers(1, 5),
       seed=st.integers(0, 2**16))
def test_layernorm(native_backend, sim_functional, rows, cols, bd, seed):
    m = load("layernorm")
    sim_args, nat_args = _both(sim_functional, "layernorm", m.layernorm_kernel, bd,
                               lambda: m.make_inputs(rows=rows, cols=cols, seed=seed))
    _check(sim_args, nat_args, 3, m.reference, m.RTOL, m.ATOL)


@SETTINGS
@given(mt=st.integers(1, 4), nt=st.integers(1, 3), bd=st.integers(1, 8),
       single=st.booleans(), seed=st.integers(0, 2**16))
def test_vector_add(native_backend, sim_functional, mt, nt, bd, single, seed):
    m = load("vector_add")
    kernel = m.add_kernel_single if single else m.add_kernel
    sim_args, nat_args = _both(sim_functional, "vector_add", kernel, bd,
                               lambda: m.make_inputs(m=128 * mt, n=128 * nt, seed=seed))
    _check(sim_args, nat_args, 2, m.reference, m.RTOL, m.ATOL)


@SETTINGS
@given(mt=st.integers(1, 3), nt=st.integers(1, 3), bd=st.integers(1, 4),
       seed=st.integers(0, 2**16))
def test_matmul(native_backend, sim_functional, mt, nt, bd, seed):
    m = load("matmul")
    sim_args, nat_args = _both(sim_functional, "matmul", m.matmul_kernel, bd,
                               lambda: m.make_inputs(m=128 * mt, n=128 * nt, seed=seed))
    _check(sim_args, nat_args, 2, m.reference, m.RTOL, m.ATOL)


@SETTINGS
@given(sq=st.integers(1, 2), skv=st.integers(1, 2), bd=st.integers(1, 3),
       seed=st.integers(0, 2**16))
def test_flash_attention(native_backend, sim_functional, sq, skv, bd, seed):
    m = load("flash_attention")
    sim_args, nat_args = _both(sim_functional, "flash_attention", m.flash_attention_kernel, bd,
                               lambda: m.make_inputs(sq=128 * sq, skv=128 * skv, seed=seed))
    _check(sim_args, nat_args, 3, m.reference, m.RTOL, m.ATOL)


@pl.jit(arch="a5", datatype={"x": "io", "y": "io", "z": "io"})
def mixed_elementwise(x: pl.Tensor[[pl.DYNAMIC, 64], pl.DT_FP32],
                      y: pl.Tensor[[pl.DYNAMIC, 64], pl.DT_FP32],
                      z: pl.Tensor[[pl.DYNAMIC, 64], pl.DT_FP32]):
    with pl.section_vector():
        tile = pl.TileType([16, 64], io, valid_shape=[-1, -1])  # noqa: F821 (datatype variable)
        a = pl.make_tile(tile, addr=0x0)
        b = pl.make_tile(tile, addr=0x2000)
        c = pl.make_tile(tile, addr=0x4000)
        rows = x.shape[0]
        for t in pl.range(pl.get_block_idx(), (rows + 15) // 16, pl.get_block_num()):
            valid = pl.min(16, rows - t * 16)
            pl.set_validshape(a, [valid, 64])
            pl.set_validshape(b, [valid, 64])
            pl.set_validshape(c, [valid, 64])
            pl.load(a, x, [t * 16, 0])
            pl.load(b, y, [t * 16, 0])
            pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
            pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
            pl.mul(c, a, b)
            pl.add(c, c, a)
            pl.maximum(c, c, b)
            pl.sub(c, c, a)
            pl.abs(c, c)
            pl.muls(c, c, 3)
            pl.system.sync_src(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=1)
            pl.system.sync_dst(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=1)
            pl.store(z, c, [t * 16, 0])
            pl.system.sync_src(set_pipe=pl.PipeType.MTE3, wait_pipe=pl.PipeType.MTE2, event_id=2)
            pl.system.sync_dst(set_pipe=pl.PipeType.MTE3, wait_pipe=pl.PipeType.MTE2, event_id=2)


# (no BF16: a5's TABS takes fp32 / fp16 / int8 / int16 / int32 only, and the kernel uses abs)
DTYPES = {pl.DT_FP16: torch.float16, pl.DT_FP32: torch.float32, pl.DT_INT16: torch.int16,
          pl.DT_INT32: torch.int32}


@SETTINGS
@given(dtype=st.sampled_from(list(DTYPES)), rows=st.integers(1, 50), bd=st.integers(1, 4),
       seed=st.integers(0, 2**16))
def test_dtypes(native_backend, sim_functional, dtype, rows, bd, seed):
    tdt = DTYPES[dtype]
    g = torch.Generator().manual_seed(seed)
    data = [(torch.randn(rows, 64, generator=g) * 300).to(tdt) for _ in range(2)]
    outs = []
    for backend in (sim_functional, "native"):
        x, y = (d.clone() for d in data)
        z = torch.zeros(rows, 64, dtype=tdt)
        with pypto_pro.use_backend(backend):
            mixed_elementwise[None, bd, {"x": dtype, "y": dtype, "z": dtype}](x, y, z)
        outs.append(z)
    assert torch.equal(outs[0], outs[1]), f"{int((outs[0] != outs[1]).sum())} elements differ"
    if tdt.is_floating_point:
        x, y = (d.float() for d in data)
        ref = ((torch.maximum(x * y + x, y) - x).abs() * 3).to(tdt)
        torch.testing.assert_close(outs[1].float(), ref.float(), rtol=2e-2, atol=1e-2)
