"""The fused ops the real code generator lowers through their first input overwrite it on every
backend, as on the hardware: a kernel stores `lhs` and `out` after each op, and the simulator's
Python engine, its stream engine (launched twice: the second launch replays), the functional
simulator and the native backend give the same bits, equal to the real instruction sequence
computed with torch (each step rounded into its destination's dtype)."""
from __future__ import annotations

import functools

import pytest
import torch

import pypto_pro
import pypto_pro.language as pl
from pypto_pro.sim import settings
from pypto_pro.sim.fast import scheduler_native
from fused_sequences import SEQUENCES

H = pl.TileType([16, 16], pl.DT_FP16)
F = pl.TileType([16, 16], pl.DT_FP32)


#: fused cast → its op and ReLU on the FP32 inputs (the result converted to FP16, CAST_ROUND)
CASTS = {"add_relu_cast": lambda a, b: torch.relu(a + b),
         "sub_relu_cast": lambda a, b: torch.relu(a - b), "mul_cast": torch.mul}


@functools.lru_cache(maxsize=None)
def _kernel(name: str):
    op = getattr(pl, name)

    @pl.jit(arch="a5", name=f"through_lhs_{name}", auto_mutex=True)
    def through_lhs(a: pl.Tensor[[16, 16], pl.DT_FP16], b: pl.Tensor[[16, 16], pl.DT_FP16],
                    c: pl.Tensor[[16, 16], pl.DT_FP16], lhs_after: pl.Tensor[[16, 16], pl.DT_FP16],
                    out_after: pl.Tensor[[16, 16], pl.DT_FP16]):
        ga = pl.make_tile_group(type=H, addrs=0x0, mutex_ids=[0])
        gb = pl.make_tile_group(type=H, addrs=0x400, mutex_ids=[1])
        gc = pl.make_tile_group(type=H, addrs=0x800, mutex_ids=[2])
        with pl.section_vector():
            lhs = ga.current()
            rhs = gb.current()
            out = gc.current()
            pl.load(lhs, a, [0, 0])
            pl.load(rhs, b, [0, 0])
            pl.load(out, c, [0, 0])
            op(out, lhs, rhs)
            pl.store(lhs_after, lhs, [0, 0])
            pl.store(out_after, out, [0, 0])

    return through_lhs


@functools.lru_cache(maxsize=None)
def _cast_kernel(name: str):
    op = getattr(pl, name)

    @pl.jit(arch="a5", name=f"through_lhs_{name}", auto_mutex=True)
    def cast_through_lhs(a: pl.Tensor[[16, 16], pl.DT_FP32], b: pl.Tensor[[16, 16], pl.DT_FP32],
                         lhs_after: pl.Tensor[[16, 16], pl.DT_FP32],
                         out_after: pl.Tensor[[16, 16], pl.DT_FP16]):
        ga = pl.make_tile_group(type=F, addrs=0x0, mutex_ids=[0])
        gb = pl.make_tile_group(type=F, addrs=0x400, mutex_ids=[1])
        gc = pl.make_tile_group(type=H, addrs=0x800, mutex_ids=[2])
        with pl.section_vector():
            lhs = ga.current()
            rhs = gb.current()
            out = gc.current()
            pl.load(lhs, a, [0, 0])
            pl.load(rhs, b, [0, 0])
            op(out, lhs, rhs, target_type=pl.DT_FP16)
            pl.store(lhs_after, lhs, [0, 0])
            pl.store(out_after, out, [0, 0])

    return cast_through_lhs


@pytest.fixture
def backends(native_backend, sim_functional, monkeypatch):
    """Launch a kernel on every backend and engine: {label: outputs}."""
    scheduler_native.library(wait=True)

    def run(kernel, make_args):
        got = {}
        for label, backend, engine in (("python", "sim", "python"), ("stream", "sim", "native"),
                                       ("stream again", "sim", "native"),
                                       ("functional", sim_functional, None),
                                       ("native", "native", None)):
            args = make_args()
            with monkeypatch.context() as m, pypto_pro.use_backend(backend):
                if engine is not None:
                    m.setenv(settings.ENGINE, engine)
                kernel[None, 1](*args)
            got[label] = args[-2:]
        return got
    return run


def _inputs(dtype, count):
    gen = torch.Generator().manual_seed(7)
    return [(torch.rand(16, 16, generator=gen) * 8 - 4).to(dtype) for _ in range(count)]


@pytest.mark.parametrize("name", sorted(SEQUENCES))
def test_fused_op_overwrites_lhs_everywhere(backends, name):
    a, b, c = _inputs(torch.float16, 3)
    got = backends(_kernel(name), lambda: [a, b, c.clone(), torch.zeros(16, 16, dtype=torch.half),
                                           torch.zeros(16, 16, dtype=torch.half)])
    want = [x.half() for x in SEQUENCES[name](a.float(), b.float(), c.float())]
    for label, (lhs_after, out_after) in got.items():
        assert torch.equal(lhs_after, want[0]), label
        assert torch.equal(out_after, want[1]), label


def _round_half_away(x: torch.Tensor) -> torch.Tensor:
    """FP32 values rounded to FP16 with ties away from zero (CAST_ROUND; normal range)."""
    ax = x.double().abs()
    ulp = torch.exp2(torch.floor(torch.log2(ax.clamp_min(2.0**-14))) - 10)
    return (torch.sign(x.double()) * torch.floor(ax / ulp + 0.5) * ulp).half()


@pytest.mark.parametrize("name", sorted(CASTS))
def test_fused_cast_leaves_its_result_in_lhs_everywhere(backends, name):
    a, b = _inputs(torch.float32, 2)
    a[0, :3] = torch.tensor([1 + 2.0**-11, -(1 + 2.0**-11), 2049.0])  # FP16 ties
    b[0, :3] = 1.0 if name == "mul_cast" else 0.0
    got = backends(_cast_kernel(name), lambda: [a, b, torch.zeros(16, 16),
                                                torch.zeros(16, 16, dtype=torch.half)])
    lhs = CASTS[name](a, b)
    out = _round_half_away(lhs)
    assert out[0, 0] == 1 + 2.0**-10 and out[0, 2] == 2050  # (not the ties-to-even results)
    for label, (lhs_after, out_after) in got.items():
        assert torch.equal(lhs_after, lhs), label
        assert torch.equal(out_after, out), label
