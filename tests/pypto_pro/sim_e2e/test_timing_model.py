"""The timing model's mechanisms, each shown by what it changes and checked on every timed path
(the Python engine with the Python and the compiled L2, the stream engine): take a mechanism
away and its test fails.

* Pipe-queue back-pressure: the scalar unit stalls when a pipe's queue is full. The FP16 add
  at queue depth 4 stalls on full queues and takes longer than at depth 256, which never fills.
* L2 hits and misses: a tile read again hits the L2 (no HBM wait, its lines counted as hits)
  and a tile read first misses (it waits for HBM, `l2_miss_extra_cycles` later).
* HBM contention: every core's misses share the chip's HBM bandwidth, so 32 blocks each
  reading their own data take longer than one block reading as much; with no HBM limit they
  take the same time.
"""
from __future__ import annotations

import pytest
import torch

import pypto_pro.language as pl
from pypto_pro.examples import load
from pypto_pro.runtime.backends import get_backend, register_backend, use_backend
from pypto_pro.runtime.backends.sim import SimBackend
from pypto_pro.sim import settings
from pypto_pro.sim.model import l2_native
from pypto_pro.sim.fast import scheduler_native, memo
from pypto_pro.soc import soc

MTE2 = pl.PipeType.MTE2
T = pl.TileType([64, 128], pl.DT_FP16)  # 16 KiB: 32 lines of 512 B
#: (engine, L2 model) of every timed path
PATHS = [("python", "python"), ("python", "native"), ("native", "native")]


@pytest.fixture(params=PATHS, ids=["python-engine-python-l2", "python-engine", "stream-engine"])
def timed_path(request, monkeypatch):
    """One timed path for the test's launches (the compiled ones waited for); caches off, so
    every launch is timed afresh."""
    engine_mode, l2_mode = request.param
    if engine_mode == "native":
        scheduler_native.library(wait=True)
    if l2_mode == "native":
        l2_native.library(wait=True)
    monkeypatch.setenv(settings.ENGINE, engine_mode)
    monkeypatch.setenv(settings.L2, l2_mode)
    return request.param


def _backend(cache: bool = False, **overrides) -> str:
    """A backend on the default SoC with `overrides` (caches off unless `cache`: then the
    launch leaves its memory system, and its counters, for the next one)."""
    name = f"timing-{cache}-" + "-".join(f"{k}{v}" for k, v in sorted(overrides.items()))
    register_backend(name, lambda: SimBackend(soc=soc(**overrides), cache=cache))
    return name


def _stalls(trace, reason: str) -> int:
    events = trace.events
    return int(((events["kind"] == "stall") & (events["stall_reason"] == reason)).sum())


def test_a_full_pipe_queue_stalls_the_scalar_unit(timed_path):
    ex = load("vector_add")
    traces = {}
    for depth in (4, 256):
        x, y, z = ex.make_inputs(1024, 1024, seed=0)
        with use_backend(_backend(pipe_queue_depth=depth)):
            ex.add_kernel[None, 4](x, y, z)
        assert torch.equal(z, x + y)
        traces[depth] = ex.add_kernel.last_trace
    assert _stalls(traces[4], "queue") > 100 and _stalls(traces[256], "queue") == 0
    assert traces[4].duration_us > 1.05 * traces[256].duration_us


@pl.jit(arch="a5")
def read_twice(x: pl.Tensor[[128, 128], pl.DT_FP16]):
    """Loads rows 0-63, the same rows again, then rows 64-127, one after the other."""
    with pl.section_vector():
        t = pl.make_tile(T, addr=0x0)
        pl.load(t, x, [0, 0])
        pl.load(t, x, [0, 0])
        pl.load(t, x, [64, 0])


def test_a_tile_read_again_hits_the_l2_and_a_new_one_misses(timed_path):
    x = torch.randn(128, 128).half()
    memo.clear()
    name = _backend(cache=True)
    with use_backend(name):
        read_twice[None, 1](x)
    events = read_twice.last_trace.events
    loads = events[(events["kind"] == "instr") & (events["ir_op"] == "block.load")]
    first, again, other = (loads["end"] - loads["start"]).tolist()
    assert loads["stall_reason"].tolist() == ["hbm", "", "hbm"]  # misses wait for HBM
    assert again < first and again < other
    assert first - again >= soc().l2_miss_extra_cycles
    stats = get_backend(name).pools.last_memory_system(soc()).stats
    assert (stats.read_misses, stats.read_hits) == (64, 32)  # lines of 512 B


@pl.jit(arch="a5")
def read_own_rows(x: pl.Tensor[[pl.DYNAMIC, 128], pl.DT_FP16]):
    """Each block loads its own 8 tiles of 64 rows, back to back (each read misses)."""
    with pl.section_vector():
        t = pl.make_tile(T, addr=0x0)
        for k in pl.range(8):
            pl.load(t, x, [(pl.get_block_idx() * 8 + k) * 64, 0])


@pytest.mark.parametrize("hbm", [1.6e12, 0.0], ids=["shared-hbm", "no-hbm-limit"])
def test_cores_missing_at_once_share_the_hbm(timed_path, hbm):
    durations = {}
    for blocks in (1, 32):
        x = torch.randn(blocks * 8 * 64, 128).half()
        with use_backend(_backend(hbm_bytes_per_s=hbm)):
            read_own_rows[None, blocks](x)
        durations[blocks] = read_own_rows.last_trace.duration_us
    if hbm:  # 32 cores' misses queue for one HBM (about 10 cores' reads fill it)
        assert durations[32] > 1.3 * durations[1]
    else:
        assert durations[32] == durations[1]
