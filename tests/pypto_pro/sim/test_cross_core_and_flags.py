"""Sync semantics of the engine: INTER_BLOCK / INTER_SUBBLOCK cross-core sync is a barrier
(spec §2.3: waiters release when every core of the scope has set), and a second set_flag is
judged by program order, not by which of two events the engine happened to run first."""
from __future__ import annotations

import pytest
import torch

import pypto_pro.language as pl
from pypto_pro.errors import DeadlockError
from pypto_pro.runtime.backends import use_backend
from sim_support import barrier_missing_a_core

MTE2, V, MTE3 = pl.PipeType.MTE2, pl.PipeType.V, pl.PipeType.MTE3
INTER_BLOCK, INTER_SUBBLOCK = pl.CrossCoreSyncMode.INTER_BLOCK, pl.CrossCoreSyncMode.INTER_SUBBLOCK
T16 = pl.TileType([64, 128], pl.DT_FP16)  # 16 KiB


@pytest.fixture(autouse=True)
def timing_sim():
    with use_backend("sim"):
        yield


@pl.jit(arch="a5")
def staggered_barrier(x: pl.Tensor[[256, 128], pl.DT_FP16],
                      z: pl.Tensor[[256, 128], pl.DT_FP16]):
    with pl.section_cube():  # cross-core sync needs a mix kernel
        pl.system.bar_all()
    with pl.section_vector():
        t = pl.make_tile(T16, addr=0x0)
        b = pl.get_block_idx()  # 0..3: the AIVs of 2 blocks
        for _ in pl.range(3 * b + 1):  # block b arrives after 3b + 1 loads
            pl.load(t, x, [b * 64, 0])
        for _ in pl.range(2):  # two rounds of the same barrier id
            pl.system.set_cross_core(pipe=MTE2, event_id=1, sync_mode=INTER_BLOCK)
            pl.system.wait_cross_core(pipe=MTE3, event_id=1, sync_mode=INTER_BLOCK)
        pl.store(z, t, [b * 64, 0])


def _sync_times(trace, ir_op: str):
    ev = trace.events
    rows = ev[(ev["kind"] == "sync") & (ev["ir_op"] == ir_op)]
    return rows.groupby("core", observed=True)["start"]


def test_inter_block_wait_releases_only_after_every_core_has_set():
    x = torch.randn(256, 128).half()
    z = torch.zeros_like(x)
    staggered_barrier[None, 2](x, z)
    assert torch.equal(z, x)
    trace = staggered_barrier.last_trace
    sets = _sync_times(trace, "system.set_cross_core")
    waits = _sync_times(trace, "system.wait_cross_core")
    assert sets.count().tolist() == [2] * 4 and waits.count().tolist() == [2] * 4
    last_first_set = sets.min().max()  # the latest core's first arrival
    assert (waits.min() >= last_first_set).all()  # block 0 (first to arrive) waited too
    stores = trace.events[trace.events["op"] == "TSTORE"]
    assert (stores["start"] >= sets.max().max()).all()


@pl.jit(arch="a5")
def subblock_barrier(x: pl.Tensor[[128, 128], pl.DT_FP16],
                     z: pl.Tensor[[128, 128], pl.DT_FP16]):
    with pl.section_cube():
        pl.system.bar_all()
    with pl.section_vector():
        t = pl.make_tile(T16, addr=0x0)
        s = pl.get_subblock_idx()
        for _ in pl.range(4 * s + 1):  # AIV1 arrives later
            pl.load(t, x, [s * 64, 0])
        pl.system.set_cross_core(pipe=MTE2, event_id=2, sync_mode=INTER_SUBBLOCK)
        pl.system.wait_cross_core(pipe=MTE3, event_id=2, sync_mode=INTER_SUBBLOCK)
        pl.store(z, t, [s * 64, 0])


def test_inter_subblock_is_a_barrier_of_the_two_aivs():
    x = torch.randn(128, 128).half()
    z = torch.zeros_like(x)
    subblock_barrier[None, 1](x, z)
    assert torch.equal(z, x)
    trace = subblock_barrier.last_trace
    sets = _sync_times(trace, "system.set_cross_core")
    waits = _sync_times(trace, "system.wait_cross_core")
    assert len(sets.count()) == 2 and (waits.min() >= sets.min().max()).all()


def test_a_barrier_that_not_every_core_reaches_is_a_deadlock():
    with pytest.raises(DeadlockError, match="xcore 3"):
        barrier_missing_a_core[None, 1](torch.zeros(128, 128).half())


@pl.jit(arch="a5")
def set_wait_set(x: pl.Tensor[[64, 128], pl.DT_FP16], z: pl.Tensor[[64, 128], pl.DT_FP16]):
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        pl.load(a, x, [0, 0])
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.store(z, a, [0, 0])  # keeps MTE3 busy while V runs ahead
        pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=1)
        pl.system.sync_dst(set_pipe=V, wait_pipe=MTE3, event_id=1)  # queued behind the store
        pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=1)  # runs before that wait
        pl.system.sync_dst(set_pipe=V, wait_pipe=MTE3, event_id=1)
        pl.store(z, a, [0, 0])


def test_set_wait_set_in_program_order_is_legal_whatever_the_timing():
    x = torch.randn(64, 128).half()
    z = torch.zeros_like(x)
    set_wait_set[None, 1](x, z)  # the second set fires before the first wait consumed
    assert torch.equal(z, x)
    ev = set_wait_set.last_trace.events
    flows = ev[(ev["flow_id"] >= 0) & (ev["sync_ids"] == "flag V->MTE3 #1")]
    assert sorted(flows["flow_role"].tolist()) == ["set", "set", "wait", "wait"]
    for _, pair in flows.groupby("flow_id"):  # each wait takes the set issued before it
        assert pair.set_index("flow_role").loc["wait", "start"] >= \
            pair.set_index("flow_role").loc["set", "start"]
