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


@pl.jit
def _pick_in_branches(x: pl.Tensor[[8, 16], pl.DT_FP32], out: pl.Tensor[[8, 16], pl.DT_FP32],
                      flag: pl.DT_INT32):
    with pl.section_vector():
        if flag > 0:
            g = pl.make_tile_group(type=TT, addrs=[0x0], mutex_ids=[0])
            t = g[0]
            pl.load(t, x, [0, 0])
            pl.system.bar_all()
            pl.store(out, t, [0, 0])
        else:
            g = pl.make_tile_group(type=pl.TileType([4, 16], pl.DT_FP32), addrs=[0x1000],
                                   mutex_ids=[1])
            t = g[0]
            pl.load(t, x, [4, 0])
            pl.system.bar_all()
            pl.store(out, t, [4, 0])


def test_groups_and_tiles_bound_differently_per_branch_work_inside_the_branches():
    """Only a read after the if is rejected: each branch uses its own group and tile."""
    x = torch.randn(8, 16)
    for flag, rows in ((1, slice(0, 8)), (0, slice(4, 8))):
        out = torch.zeros(8, 16)
        _pick_in_branches(x, out, flag)
        assert torch.equal(out[rows], x[rows]) and not out[:rows.start].any()
