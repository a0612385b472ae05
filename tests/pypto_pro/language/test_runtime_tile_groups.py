"""Tile groups chosen at run time (issue 21, class 2): `next()` / `current()` / `previous()`,
`g[i]` and `set_validshape` on a group picked from a tuple by a runtime index, by the branches
of an `if`, by a ternary, or returned by a helper. The access runs on the group chosen (only
its cursor advances); the tile lands in one variable auto_mutex locks by its slot's ids.
Values against torch on the simulator and the native backend.
"""
from __future__ import annotations

import pytest
import torch
from dual_backend import sim_and_native
from kernel_source import assert_refused

import pypto_pro.language as pl
from pypto_pro.errors import ParserTypeError, UnsupportedFeatureError

VT = pl.TileType(shape=[16, 32], dtype=pl.DT_FP32, target_memory=pl.MemorySpace.Vec)
ROWS = 16


def _cursor_model(flags: list[int]) -> tuple[list[int], dict[str, int]]:
    """Which slot of which group each iteration writes (group 'a' when the flag is set);
    depth-2 groups whose first next() gives slot 0."""
    cursor = {"a": 1, "b": 1}
    slots = []
    for f in flags:
        g = "a" if f else "b"
        cursor[g] = (cursor[g] + 1) % 2
        slots.append((g, cursor[g]))
    return slots, cursor


# ---------------------------------------------------------------- picked by a branch / ternary


@pl.jit(auto_mutex=True)
def by_branch(x: pl.Tensor[[64, 32], pl.DT_FP32], flags: pl.Tensor[[4], pl.DT_INT32],
              y: pl.Tensor[[96, 32], pl.DT_FP32]):
    ga = pl.make_tile_group(type=VT, addrs=0, mutex_ids=[0, 1])
    gb = pl.make_tile_group(type=VT, addrs=0x1000, mutex_ids=[2, 3])
    with pl.section_vector():
        for i in pl.range(4):
            if flags[i] != 0:
                g = ga
                scale = 1.0
            else:
                g = gb
                scale = 10.0
            t = g.next()
            pl.load(t, x, [i * ROWS, 0])
            pl.mul(t, t, scale)
            pl.store(y, t, [i * ROWS, 0])
        pl.store(y, ga.current(), [64, 0])
        pl.store(y, gb.current(), [80, 0])


@pl.jit(auto_mutex=True)
def by_ternary(x: pl.Tensor[[64, 32], pl.DT_FP32], flags: pl.Tensor[[4], pl.DT_INT32],
               y: pl.Tensor[[96, 32], pl.DT_FP32]):
    ga = pl.make_tile_group(type=VT, addrs=0, mutex_ids=[0, 1])
    gb = pl.make_tile_group(type=VT, addrs=0x1000, mutex_ids=[2, 3])
    with pl.section_vector():
        for i in pl.range(4):
            t = ga.next() if flags[i] != 0 else gb.next()  # only the chosen one advances
            pl.load(t, x, [i * ROWS, 0])
            pl.mul(t, t, 1.0 if flags[i] != 0 else 10.0)
            pl.store(y, t, [i * ROWS, 0])
        pl.store(y, ga.current(), [64, 0])
        pl.store(y, (gb if flags[3] != 0 else ga).current(), [80, 0])


def _expected(x: torch.Tensor, flags: list[int]) -> torch.Tensor:
    slots, cursor = _cursor_model(flags)
    y = torch.zeros(96, 32)
    last = {}
    for i, (g, slot) in enumerate(slots):
        y[i * ROWS:(i + 1) * ROWS] = x[i * ROWS:(i + 1) * ROWS] * (1.0 if g == "a" else 10.0)
        last[g, slot] = y[i * ROWS:(i + 1) * ROWS].clone()
    y[64:80] = last.get(("a", cursor["a"]), torch.zeros(ROWS, 32))
    y[80:96] = last.get(("b", cursor["b"]), torch.zeros(ROWS, 32))
    return y


@pytest.mark.parametrize("kernel", [by_branch, by_ternary], ids=["if", "ternary"])
@pytest.mark.parametrize("flags", [[1, 0, 0, 1], [0, 0, 0, 1]])
def test_group_picked_by_a_condition_advances_only_itself(kernel, flags):
    x = torch.randn(64, 32)

    def run():
        y = torch.zeros(96, 32)
        kernel(x, torch.tensor(flags, dtype=torch.int32), y)
        return y

    assert torch.equal(sim_and_native(run), _expected(x, flags))


# ---------------------------------------------------------------- picked by a runtime index


@pl.jit(auto_mutex=True)
def by_index(x: pl.Tensor[[64, 32], pl.DT_FP32], y: pl.Tensor[[64, 32], pl.DT_FP32],
             n: pl.DT_INT32):
    ga = pl.make_tile_group(type=VT, addrs=0, mutex_ids=[0, 1])
    gb = pl.make_tile_group(type=VT, addrs=0x1000, mutex_ids=[2, 3])
    rings = (ga, gb)
    with pl.section_vector():
        for s in pl.range(2):
            pl.expands(ga[s], 0.0)
            pl.expands(gb[s], 0.0)
        pl.set_validshape(rings[n % 2], [8, 32])  # only the group n picks gets 8 valid rows
        for i in pl.range(4):
            ring = rings[i % 2]
            t = ring.next()
            pl.load(t, x, [i * ROWS, 0])
            pl.add(t, t, ring.previous())  # the slot before, of the same group
            pl.store(y, t, [i * ROWS, 0])


def test_next_previous_and_set_validshape_on_a_group_picked_by_index():
    x = torch.randn(64, 32)

    def run():
        y = torch.zeros(64, 32)
        by_index(x, y, 1)
        return y

    # ring a (i = 0, 2) has 16 valid rows; ring b (i = 1, 3) 8: its loads/stores cover 8 rows
    blocks = [x[i * ROWS:(i + 1) * ROWS] for i in range(4)]
    expected = torch.zeros(64, 32)
    expected[0:16] = blocks[0]  # the slot before a group's first: zero-filled
    expected[16:24] = blocks[1][:8]
    expected[32:48] = blocks[2] + blocks[0]
    expected[48:56] = blocks[3][:8] + blocks[1][:8]
    assert torch.equal(sim_and_native(run), expected)


# ---------------------------------------------------------------- returned by a helper; cube


L1A = pl.TileType([32, 32], pl.DT_FP16, pl.MemorySpace.Mat)
L1B = pl.TileType([32, 32], pl.DT_FP16, pl.MemorySpace.Mat)
LEFT = pl.TileType([32, 32], pl.DT_FP16, pl.MemorySpace.Left)
RIGHT = pl.TileType([32, 32], pl.DT_FP16, pl.MemorySpace.Right)
ACC = pl.TileType([32, 32], pl.DT_FP32, pl.MemorySpace.Acc)
BIAS_L1 = pl.TileType([1, 32], pl.DT_FP32, pl.MemorySpace.Mat)  # NZ, as the docs keep a bias in L1
BIAS = pl.TileType([1, 32], pl.DT_FP32, pl.MemorySpace.Bias)


def l0_pair(lefts, rights, k):
    """The L0A / L0B groups of step k: ping-pong between two single-slot groups."""
    return lefts[k % 2], rights[k % 2]


@pl.jit(auto_mutex=True)
def matmul_bias_pingpong(a: pl.Tensor[[32, 128], pl.DT_FP16], b: pl.Tensor[[128, 32], pl.DT_FP16],
                         bias: pl.Tensor[[1, 32], pl.DT_FP32], c: pl.Tensor[[32, 32], pl.DT_FP32]):
    a_l1 = pl.make_tile_group(type=L1A, addrs=0, mutex_ids=[0, 1])
    b_l1 = pl.make_tile_group(type=L1B, addrs=0x8000, mutex_ids=[2, 3])
    lefts = (pl.make_tile_group(type=LEFT, addrs=0, mutex_ids=[4]),
             pl.make_tile_group(type=LEFT, addrs=0x8000, mutex_ids=[5]))
    rights = (pl.make_tile_group(type=RIGHT, addrs=0, mutex_ids=[6]),
              pl.make_tile_group(type=RIGHT, addrs=0x8000, mutex_ids=[7]))
    acc = pl.make_tile_group(type=ACC, addrs=0, mutex_ids=[8])
    bias_l1 = pl.make_tile_group(type=BIAS_L1, addrs=0x10000, mutex_ids=[9])
    bias_bt = pl.make_tile_group(type=BIAS, addrs=0, mutex_ids=[10])
    with pl.section_cube():
        bl1 = bias_l1.current()
        bt = bias_bt.current()
        pl.load(bl1, bias, [0, 0])
        pl.move(bt, bl1)
        ct = acc.current()
        for k in pl.range(4):
            at = a_l1.next()
            bt1 = b_l1.next()
            pl.load(at, a, [0, k * 32])
            pl.load(bt1, b, [k * 32, 0])
            lg, rg = l0_pair(lefts, rights, k)
            lt = lg.current()
            rt = rg.current()
            pl.move(lt, at)
            pl.move(rt, bt1)
            if k == 0:
                pl.matmul(ct, lt, rt, bt)
            else:
                pl.matmul_acc(ct, ct, lt, rt)
        pl.store(c, ct, [0, 0])


def test_l0_groups_picked_per_step_in_a_matmul_with_bias():
    g = torch.Generator().manual_seed(3)
    a = torch.randn(32, 128, generator=g).half()
    b = torch.randn(128, 32, generator=g).half()
    bias = torch.randn(1, 32, generator=g)

    def run():
        c = torch.zeros(32, 32)
        matmul_bias_pingpong(a, b, bias, c)
        return c

    torch.testing.assert_close(sim_and_native(run), a.float() @ b.float() + bias,
                               rtol=1e-3, atol=1e-3)


# ---------------------------------------------------------------- refused


@pytest.mark.parametrize("name,body,error,fragment", [
    ("swapped_each_iteration", """
        a = pl.make_tile_group(type=VT, addrs=0, mutex_ids=[0, 1])
        b = pl.make_tile_group(type=VT, addrs=0x1000, mutex_ids=[2, 3])
        with pl.section_vector():
            for i in pl.range(4):
                pl.load(a.next(), x, [i * 16, 0])
                a, b = b, a
     """, UnsupportedFeatureError, "re-bound inside the loop at line"),
    ("groups_of_other_shapes", """
        a = pl.make_tile_group(type=VT, addrs=0, mutex_ids=[0])
        b = pl.make_tile_group(type=V8, addrs=0x1000, mutex_ids=[1])
        with pl.section_vector():
            pl.load((a, b)[n].current(), x, [0, 0])
     """, ParserTypeError, "tiles of different shapes"),
    ("read_after_the_loop", """
        a = pl.make_tile_group(type=VT, addrs=0, mutex_ids=[0])
        b = pl.make_tile_group(type=VT, addrs=0x1000, mutex_ids=[1])
        g = a
        with pl.section_vector():
            for i in pl.range(n):
                g = b
            pl.load(g.current(), x, [0, 0])
     """, UnsupportedFeatureError, "no single value after it"),
])
def test_refused_runtime_choices(tmp_path, name, body, error, fragment):
    assert_refused(error, fragment, tmp_path, name,
                   "x: pl.Tensor[[64, 32], pl.DT_FP32], n: pl.DT_INT32", body,
                   prelude="VT = pl.TileType(shape=[16, 32], dtype=pl.DT_FP32)\n"
                           "V8 = pl.TileType(shape=[8, 32], dtype=pl.DT_FP32)",
                   jit="pl.jit(auto_mutex=True)")
