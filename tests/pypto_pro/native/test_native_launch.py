"""The native launch path: TilingData reaches the kernel through GM (the vector core's UB copy
path), per-block printf text comes back in `LaunchResult.printed` in block order, arguments that
share a storage stay aliased, the SoC's core count puts blocks in waves, and the build lands in
the kernel cache once."""
from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch

import pypto_pro
import pypto_pro.language as pl
from pypto_pro.runtime.backends import native as native_mod

T16 = pl.TileType([16, 16], pl.DT_FP32)


@dataclass
class ScaleTiling:
    rows: int
    scale: float


@pl.jit(arch="a5")
def scale_tiled(x: pl.Tensor[[pl.DYNAMIC, 16], pl.DT_FP32],
                y: pl.Tensor[[pl.DYNAMIC, 16], pl.DT_FP32], td: ScaleTiling):
    with pl.section_vector():
        t = pl.make_tile(T16, addr=0x400)
        for r in pl.range(pl.get_block_idx(), td.rows // 16, pl.get_block_num()):
            pl.load(t, x, [r * 16, 0])
            pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
            pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
            pl.muls(t, t, td.scale)
            pl.system.sync_src(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=1)
            pl.system.sync_dst(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=1)
            pl.store(y, t, [r * 16, 0])
            pl.system.sync_src(set_pipe=pl.PipeType.MTE3, wait_pipe=pl.PipeType.MTE2, event_id=2)
            pl.system.sync_dst(set_pipe=pl.PipeType.MTE3, wait_pipe=pl.PipeType.MTE2, event_id=2)


@pl.jit(arch="a5")
def greet(out: pl.Tensor[[64], pl.DT_INT32]):
    with pl.section_vector():
        b = pl.get_block_idx()
        pl.printf("block %d of %d\n", b, pl.get_block_num())
        pl.setval(out, b, b * 10)


@pytest.fixture
def native(native_backend):
    with pypto_pro.use_backend("native"):
        yield native_backend


def test_tiling_data_reaches_the_kernel(native):
    x = torch.randn(64, 16)
    y = torch.zeros(64, 16)
    scale_tiled[None, 3](x, y, ScaleTiling(rows=48, scale=0.5))
    assert torch.equal(y[:48], x[:48] * 0.5)
    assert torch.equal(y[48:], torch.zeros(16, 16))


def test_printf_comes_back_per_block_in_order(native, capsys):
    out = torch.zeros(64, dtype=torch.int32)
    greet[None, 5](out)
    result = greet.last_result
    assert result.backend == "native" and result.trace is None
    assert result.printed == {b: f"block {b} of 5\n" for b in range(5)}
    assert capsys.readouterr().out == "".join(f"block {b} of 5\n" for b in range(5))
    assert out[:5].tolist() == [0, 10, 20, 30, 40]


def test_blocks_beyond_the_cores_run_in_waves(native, monkeypatch):
    monkeypatch.setenv("PYPTOPRO_SIM_SOC", "910B1")  # 48 AIV: 64 blocks need two waves
    out = torch.zeros(64, dtype=torch.int32)
    greet[None, 64](out)
    assert out.tolist() == [10 * b for b in range(64)]
    assert sorted(greet.last_result.printed) == list(range(64))


def test_arguments_sharing_a_storage_stay_aliased(native):
    base = torch.randn(64, 16)
    x, y = base[:32], base[32:]
    before = x.clone()
    scale_tiled[None, 2](x, y, ScaleTiling(rows=32, scale=2.0))
    assert torch.equal(base[32:], before * 2.0)
    assert torch.equal(base[:32], before)


def test_the_library_is_built_once_into_the_cache(native, monkeypatch):
    x, y = torch.randn(16, 16), torch.zeros(16, 16)
    scale_tiled[None, 1](x, y, ScaleTiling(rows=16, scale=3.0))
    calls = []
    real = native_mod._compile
    monkeypatch.setattr(native_mod, "_compile", lambda *a, **k: calls.append(1) or real(*a, **k))
    spec = next(iter(scale_tiled.compiled_variants), None) or next(iter(scale_tiled._disk_hits))[1]
    lib = native.builder.cached(scale_tiled.kernel_def, spec)
    assert lib is not None and lib.path.name.startswith("call_kernel_")
    assert lib.path.parent.joinpath("native_main.cpp").exists()
    assert lib.param_names[:3] == ("x", "y", "td") and lib.kernel_type == "aiv"
    scale_tiled.compiled_variants.clear()  # a new process: found on disk, not rebuilt
    scale_tiled._disk_hits.clear()
    scale_tiled[None, 1](x, y, ScaleTiling(rows=16, scale=3.0))
    assert calls == [] and torch.equal(y, x * 3.0)
    assert not scale_tiled.compiled_variants, "launched from the launch descriptor, no compile"
