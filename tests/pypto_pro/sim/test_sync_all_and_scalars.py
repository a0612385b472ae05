"""sync_all across blocks (HARD and SOFT), its misuse in single-kind kernels, scalar FP32
arithmetic rounded like the C++ `float` the NPU computes in, and the scalar unit's own work
(printf, getval, setval) timed on pipe S."""
from __future__ import annotations

import pytest
import torch

import pypto_pro
import pypto_pro.language as pl
from pypto_pro.errors import SimulationError
from pypto_pro.runtime.backends import use_backend

T16 = pl.TileType([16, 16], pl.DT_FP32)
MTE2, MTE3 = pl.PipeType.MTE2, pl.PipeType.MTE3
BLOCK = pl.Tensor[[16, 16], pl.DT_FP32]


def _handoff(mode):
    """Block 0 copies x into the workspace; after the barrier every block copies it to z."""
    soft = mode == "soft"

    @pl.jit(arch="a5", auto_mutex=False, name=f"handoff_{mode}")
    def handoff(x: BLOCK, ws: BLOCK, z: pl.Tensor[[pl.DYNAMIC, 16], pl.DT_FP32],
                flags: pl.Tensor[[64], pl.DT_INT32]):
        with pl.section_vector():
            a = pl.make_tile(T16, addr=0x0)
            if pl.get_block_idx() == 0:
                pl.load(a, x, [0, 0])
                pl.system.sync_src(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
                pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
                pl.store(ws, a, [0, 0])
            if soft:  # a compile-time constant: only one of the two calls is compiled
                pl.system.sync_all([flags], core_type=pl.SyncCoreType.AIV_ONLY,
                                   mode=pl.SyncAllMode.SOFT)
            else:
                pl.system.sync_all(core_type=pl.SyncCoreType.AIV_ONLY)
            pl.load(a, ws, [0, 0])
            pl.system.sync_src(set_pipe=MTE2, wait_pipe=MTE3, event_id=1)
            pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=1)
            pl.store(z, a, [pl.get_block_idx() * 16, 0])

    return handoff


@pytest.mark.parametrize("mode", ["hard", "soft"])
def test_sync_all_orders_a_gm_handoff_between_blocks(mode):
    x = torch.randn(16, 16)
    ws, z, flags = torch.zeros(16, 16), torch.zeros(64, 16), torch.zeros(64, dtype=torch.int32)
    _handoff(mode)[None, 4](x, ws, z, flags)
    assert torch.equal(z, x.repeat(4, 1))


def test_soft_sync_all_costs_a_gm_round_trip_more_than_hard():
    args = (torch.randn(16, 16), torch.zeros(16, 16), torch.zeros(64, 16),
            torch.zeros(64, dtype=torch.int32))
    cycles = {}
    for mode in ("hard", "soft"):
        with use_backend("sim"), pypto_pro.profile() as prof:
            _handoff(mode)[None, 4](*args)
        cycles[mode] = prof.trace.duration_cycles
    assert cycles["soft"] > cycles["hard"]


def test_sync_all_mix_in_a_vector_only_kernel_is_reported_with_its_line():
    @pl.jit(arch="a5")
    def wrong_scope(x: BLOCK):
        with pl.section_vector():
            pl.system.sync_all(core_type=pl.SyncCoreType.MIX)

    with pytest.raises(SimulationError) as info:
        wrong_scope[None, 2](torch.zeros(16, 16))
    assert "AIV_ONLY" in info.value.hint and info.value.span.line > 0


def test_fp32_scalar_arithmetic_rounds_like_a_cpp_float():
    @pl.jit(arch="a5")
    def scalar_math(out: pl.Tensor[[2], pl.DT_FP32], a: pl.DT_FP32):
        with pl.section_vector():
            pl.setval(out, 0, a * 3.0 / 7.0)
            pl.setval(out, 1, a + 1e-9)  # below half an ulp of 0.1f: the sum is 0.1f itself

    out = torch.zeros(2)
    scalar_math(out, 0.1)
    expected = torch.tensor(0.1, dtype=torch.float32) * 3.0 / 7.0
    assert out[0].item() == expected.item()
    assert out[1].item() == torch.tensor(0.1, dtype=torch.float32).item()


def test_scalar_work_is_timed_on_pipe_s_with_its_source_lines():
    from pypto_pro.examples.hello_world import hello_world_kernel

    out = torch.zeros(1, dtype=torch.int32)
    hello_world_kernel(out)
    trace = hello_world_kernel.last_trace
    rows = trace.events[["pipe", "kind", "op", "ir_op", "start", "end", "bytes"]].astype(
        {"pipe": str, "kind": str, "op": str, "ir_op": str}).values.tolist()
    assert rows == [["S", "instr", "printf", "debug.printf", 0, 430, 33],
                    ["S", "instr", "setval", "block.setval", 430, 440, 4]]
    lines = trace.events["line"].tolist()
    source = hello_world_kernel.kernel_def.fn.__code__.co_firstlineno
    assert lines == [source + 3, source + 4]  # the printf and setval lines
    assert trace.duration_cycles == 440 and round(trace.duration_us, 3) == 0.267


def test_getval_waits_for_the_pipes_then_costs_a_scalar_access():
    @pl.jit(arch="a5", auto_mutex=False)
    def read_back(x: BLOCK, out: pl.Tensor[[1], pl.DT_FP32]):
        with pl.section_vector():
            a = pl.make_tile(T16, addr=0x0)
            pl.load(a, x, [0, 0])
            pl.system.bar_all()
            v = pl.getval(a, 5)
            pl.setval(out, 0, v * 2.0)

    x, out = torch.arange(256, dtype=torch.float32).reshape(16, 16), torch.zeros(1)
    read_back(x, out)
    assert out.item() == 10.0
    ev = read_back.last_trace.events.astype({"pipe": str, "op": str})
    load_end = int(ev.loc[ev["op"] == "TLOAD", "end"].iloc[0])
    scalar = ev[(ev["pipe"] == "S") & (ev["kind"] == "instr")]
    assert scalar["op"].tolist() == ["getval", "setval"]
    assert (scalar["end"] - scalar["start"]).tolist() == [10, 10]
    assert int(scalar["start"].iloc[0]) >= load_end  # read after the load landed
    span = int(scalar["end"].iloc[1]) - int(ev["start"].min())
    assert read_back.last_trace.duration_cycles == span  # the setval ends the launch
