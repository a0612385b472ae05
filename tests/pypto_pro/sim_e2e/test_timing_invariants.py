"""Timing and synchronisation behaviour of the simulator, end to end from `@pl.jit` kernels:

* double buffering pays: the depth-2 vector add is faster than the same kernel with depth-1
  groups, because its loads overlap the add (they never do at depth 1);
* a missing MTE2→V sync gives a WRONG result (the add reads the tiles before the loads land,
  as on hardware) while the same kernel with the flag is right;
* a `sync_dst` with no matching set, or a cross-core wait that nobody sets, ends quickly in a
  `DeadlockError` naming the core, the pipe, the id and the source line;
* a second `sync_src` before its wait is a `SimulationError` (the flag is one bit);
* `pl.printf` text is collected per block and echoed in block order; `pl.trap()` raises
  `KernelTrap` pointing at its source line;
* two runs give identical outputs and identical event tables.
"""
from __future__ import annotations

import inspect
import time

import pandas as pd
import pytest
import torch

import pypto_pro.language as pl
from pypto_pro.errors import DeadlockError, KernelTrap, SimulationError
from pypto_pro.examples import load

MTE2, V, MTE3, FIX = pl.PipeType.MTE2, pl.PipeType.V, pl.PipeType.MTE3, pl.PipeType.FIX
T16 = pl.TileType([64, 128], pl.DT_FP16)  # 16 KiB


def _line_of(fn, text: str) -> int:
    lines, first = inspect.getsourcelines(fn)
    hits = [first + i for i, line in enumerate(lines) if text in line]
    assert len(hits) == 1, (text, hits)
    return hits[0]


# ---------------------------------------------------------------- double buffering


def test_double_buffered_add_is_faster_than_depth_one(check_trace, select):
    m = load("vector_add")
    x, y, _ = m.make_inputs(512, 512, seed=2)
    us, overlaps = {}, {}
    for name in ("add_kernel", "add_kernel_single"):
        z = torch.zeros_like(x)
        k = m.KERNELS[name]
        k[None, 2](x, y, z)  # 2 blocks x 2 row tiles x 4 column tiles
        assert torch.equal(z, x + y)
        trace = k.last_trace
        check_trace(trace)
        us[name] = trace.duration_us
        loads = select(trace, kind="instr", op="TLOAD")
        adds = select(trace, kind="instr", op="TADD")
        overlaps[name] = sum(
            int(((loads["core"] == a.core) & (loads["start"] < a.end)
                 & (loads["end"] > a.start)).sum()) for a in adds.itertuples())
    assert us["add_kernel"] < us["add_kernel_single"]
    assert overlaps["add_kernel_single"] == 0  # depth 1: the next load waits for the add
    assert overlaps["add_kernel"] > 0  # depth 2: loads of tile t+1 run under the add of t


# ---------------------------------------------------------------- a missing flag


@pl.jit(arch="a5")
def add_no_sync(x: pl.Tensor[[64, 128], pl.DT_FP16], y: pl.Tensor[[64, 128], pl.DT_FP16],
                z: pl.Tensor[[64, 128], pl.DT_FP16]):
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        b = pl.make_tile(T16, addr=0x4000)
        c = pl.make_tile(T16, addr=0x8000)
        pl.load(a, x, [0, 0])
        pl.load(b, y, [0, 0])
        pl.add(c, a, b)  # BUG: nothing orders the loads (MTE2) before the add (V)
        pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=V, wait_pipe=MTE3, event_id=0)
        pl.store(z, c, [0, 0])


@pl.jit(arch="a5")
def add_synced(x: pl.Tensor[[64, 128], pl.DT_FP16], y: pl.Tensor[[64, 128], pl.DT_FP16],
               z: pl.Tensor[[64, 128], pl.DT_FP16]):
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        b = pl.make_tile(T16, addr=0x4000)
        c = pl.make_tile(T16, addr=0x8000)
        pl.load(a, x, [0, 0])
        pl.load(b, y, [0, 0])
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=V, event_id=0)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=V, event_id=0)
        pl.add(c, a, b)
        pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=V, wait_pipe=MTE3, event_id=0)
        pl.store(z, c, [0, 0])


def test_missing_flag_gives_a_wrong_result_and_the_flag_fixes_it(check_trace, select):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 128, generator=g).half()
    y = torch.randn(64, 128, generator=g).half()

    z = torch.zeros_like(x)
    add_no_sync[None, 1](x, y, z)
    assert not torch.equal(z, x + y)
    bad = add_no_sync.last_trace
    check_trace(bad)
    add = select(bad, kind="instr", op="TADD").iloc[0]
    loads = select(bad, kind="instr", op="TLOAD")
    assert add["start"] < loads["end"].max()  # the add read its inputs before they landed

    z = torch.zeros_like(x)
    add_synced[None, 1](x, y, z)
    assert torch.equal(z, x + y)
    good = add_synced.last_trace
    check_trace(good)
    add = select(good, kind="instr", op="TADD").iloc[0]
    assert add["start"] >= select(good, kind="instr", op="TLOAD")["end"].max()
    stall = select(good, kind="stall", pipe="V").iloc[0]
    assert stall["stall_reason"] == "flag" and stall["sync_ids"] == "flag MTE2->V #0"
    assert good.duration_us > bad.duration_us


# ---------------------------------------------------------------- deadlocks and flag misuse


@pl.jit(arch="a5")
def wait_without_set(x: pl.Tensor[[64, 128], pl.DT_FP16], z: pl.Tensor[[64, 128], pl.DT_FP16]):
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        pl.load(a, x, [0, 0])
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=V, event_id=3)  # nobody sets it
        pl.store(z, a, [0, 0])


def test_wait_without_set_is_a_deadlock_naming_core_pipe_and_id():
    x = torch.randn(64, 128).half()
    z = torch.zeros_like(x)
    line = _line_of(wait_without_set.kernel_def.fn, "event_id=3")
    t0 = time.perf_counter()
    with pytest.raises(DeadlockError) as info:
        wait_without_set[None, 2](x, z)
    assert time.perf_counter() - t0 < 10  # reported, never a hang
    msg = str(info.value)
    for block in (0, 1):
        assert f"block {block} AIV pipe V: wait_flag blocked on flag MTE2->V #3 (line {line})" \
            in msg
    assert len(info.value.stuck) == 2


@pl.jit(arch="a5")
def cross_core_wait_without_set(a: pl.Tensor[[64, 128], pl.DT_FP16],
                                z: pl.Tensor[[64, 128], pl.DT_FP16]):
    with pl.section_cube():
        l1 = pl.make_tile(pl.TileType([64, 128], pl.DT_FP16, pl.MemorySpace.Mat), addr=0)
        pl.load(l1, a, [0, 0])
    with pl.section_vector():
        t = pl.make_tile(T16, addr=0x0)
        pl.system.wait_cross_core(pipe=MTE2, event_id=5)  # the cube never sets id 5
        pl.load(t, a, [0, 0])
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.store(z, t, [0, 0])


def test_cross_core_wait_without_set_is_a_deadlock():
    a = torch.randn(64, 128).half()
    with pytest.raises(DeadlockError) as info:
        cross_core_wait_without_set[None, 1](a, torch.zeros_like(a))
    msg = str(info.value)
    assert "block 0 AIV0 pipe MTE2: wait_intra_block blocked on xcore 5" in msg
    assert "block 0 AIV1 pipe MTE2" in msg
    assert "AIC" not in msg  # the cube finished


@pl.jit(arch="a5")
def double_set(x: pl.Tensor[[64, 128], pl.DT_FP16], z: pl.Tensor[[64, 128], pl.DT_FP16]):
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=1)
        pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=1)  # BUG: set twice
        pl.load(a, x, [0, 0])
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=V, wait_pipe=MTE3, event_id=1)
        pl.store(z, a, [0, 0])


def test_second_set_before_its_wait_is_a_simulation_error():
    x = torch.randn(64, 128).half()
    with pytest.raises(SimulationError, match=r"flag V->MTE3 #1 set twice before its wait_flag"
                       ) as info:
        double_set[None, 1](x, torch.zeros_like(x))
    assert not isinstance(info.value, DeadlockError)
    assert info.value.span is not None and info.value.span.line == _line_of(
        double_set.kernel_def.fn, "BUG: set twice")


# ---------------------------------------------------------------- printf, trap


@pl.jit(arch="a5")
def hello_blocks(out: pl.Tensor[[8], pl.DT_INT32]):
    with pl.section_vector():
        b = pl.get_block_idx()
        pl.printf("block %d of %d\n", b, pl.get_block_num())
        if b == 1:
            pl.printf("second line from block %d\n", b)
        pl.setval(out, b, b * 10)


def test_printf_is_collected_per_block(capsys):
    out = torch.full((8,), -1, dtype=torch.int32)
    hello_blocks[None, 3](out)
    assert out.tolist() == [0, 10, 20, -1, -1, -1, -1, -1]
    assert hello_blocks.last_result.printed == {
        0: "block 0 of 3\n",
        1: "block 1 of 3\nsecond line from block 1\n",
        2: "block 2 of 3\n",
    }
    assert capsys.readouterr().out == (
        "block 0 of 3\nblock 1 of 3\nsecond line from block 1\nblock 2 of 3\n")


@pl.jit(arch="a5")
def trap_on_block_one(x: pl.Tensor[[64, 128], pl.DT_FP16]):
    with pl.section_vector():
        if pl.get_block_idx() == 1:
            pl.trap()


def test_trap_raises_kernel_trap_with_its_source_line():
    with pytest.raises(KernelTrap, match="pl.trap\\(\\) executed on block 1 AIV") as info:
        trap_on_block_one[None, 4](torch.zeros(64, 128).half())
    span = info.value.span
    assert span.file.endswith("test_timing_invariants.py")
    assert span.line == _line_of(trap_on_block_one.kernel_def.fn, "pl.trap()")
    assert f":{span.line}" in str(info.value)


# ---------------------------------------------------------------- determinism


@pytest.mark.parametrize("name,shape", [("flash_attention", dict(sq=256, skv=256)),
                                        ("vector_add", dict(m=512, n=256)),
                                        ("layernorm", dict(rows=45, cols=96))])
def test_two_runs_give_identical_outputs_and_event_tables(name, shape):
    m = load(name)
    kernel = next(iter(m.KERNELS.values()))
    outs, events = [], []
    for _ in range(2):
        args = m.make_inputs(**shape, seed=11)
        outs.append(m.run(*args, kernel=kernel).clone())
        events.append(kernel.last_trace.events)
    assert torch.equal(outs[0], outs[1])
    pd.testing.assert_frame_equal(events[0], events[1])

