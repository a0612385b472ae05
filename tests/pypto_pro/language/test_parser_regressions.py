"""Parser bugs found by other components' tests, kept as regressions (run on the simulator)."""
from __future__ import annotations

import torch

import pypto_pro.language as pl

TT = pl.TileType([8, 16], pl.DT_FP32, pl.MemorySpace.Vec)


@pl.jit
def _fib(out: pl.Tensor[[2], pl.DT_INT32]):
    with pl.section_vector():
        a = 0
        b = 1
        for i in pl.range(6):
            a, b = b, a + b
        pl.setval(out, 0, a)
        pl.setval(out, 1, b)


def test_tuple_assignment_evaluates_the_whole_right_side_first():
    out = torch.zeros(2, dtype=torch.int32)
    _fib(out)
    assert out.tolist() == [8, 13]


@pl.jit
def _pick(x: pl.Tensor[[8, 16], pl.DT_FP32], out: pl.Tensor[[8, 16], pl.DT_FP32],
          flag: pl.DT_INT32):
    with pl.section_vector():
        if flag > 0:
            t = pl.make_tile(TT, addr=0x0)
        else:
            t = pl.make_tile(TT, addr=0x1000)
        pl.load(t, x, [0, 0])
        pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.store(out, t, [0, 0])


def test_a_tile_bound_on_both_branches_is_one_variable():
    x = torch.randn(8, 16)
    for flag in (1, 0):
        out = torch.zeros(8, 16)
        _pick(x, out, flag)
        assert torch.equal(out, x)
    compiled = next(iter(_pick.compiled_variants.values()))
    ir = compiled.ir("vector")
    assert ir.count("t: ir.Tile") == 2  # one Var `t`, assigned on each branch
