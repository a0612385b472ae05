"""Tile groups and tiles declared outside the sections (a cross-core ring) or in an earlier
section block and used by later section blocks of the same target: the generated CCE declares
them once in the target's function (sections are emitted without braces), compiles, and
computes what the simulator computes. A group bound inside a loop and used after it gets
prologue storage and a pointer, like a hoisted tile."""
from __future__ import annotations

import torch

import pypto_pro.language as pl
from pypto_pro.runtime import backends

DYN = pl.DYNAMIC
FIX, V, MTE3 = pl.PipeType.FIX, pl.PipeType.V, pl.PipeType.MTE3
HALF = pl.TileType([64, 128], pl.DT_FP32)
L1 = pl.TileType([128, 128], pl.DT_FP16, pl.MemorySpace.Mat)
LEFT = pl.TileType([128, 128], pl.DT_FP16, pl.MemorySpace.Left)
RIGHT = pl.TileType([128, 128], pl.DT_FP16, pl.MemorySpace.Right)
ACC = pl.TileType([128, 128], pl.DT_FP32, pl.MemorySpace.Acc)
READY, FREE = 0, 1


@pl.jit(arch="a5")
def scoped_groups(a: pl.Tensor[[DYN, 128], pl.DT_FP16], w: pl.Tensor[[128, 128], pl.DT_FP16],
                  y: pl.Tensor[[DYN, 128], pl.DT_FP32]):
    ring = pl.make_tile_group(type=HALF, addrs=[0, 0x8000], mutex_ids=[4, 5])  # both targets
    n = a.shape[0] // 128
    sub = pl.get_subblock_idx()
    with pl.section_cube():  # cube-local groups, and W kept in L0B for the whole loop
        a_l1 = pl.make_tile_group(type=L1, addrs=[0, 0x8000], mutex_ids=[0, 1])
        w_l1 = pl.make_tile_group(type=L1, addrs=0x10000, mutex_ids=[2])
        left = pl.make_tile_group(type=LEFT, addrs=0, mutex_ids=[3])
        right = pl.make_tile_group(type=RIGHT, addrs=0, mutex_ids=[6])
        acc = pl.make_tile_group(type=ACC, addrs=[0, 0x10000], mutex_ids=[7, 8])
        wt = w_l1.next()
        pl.load(wt, w, [0, 0])
        wr = right.next()
        pl.move(wr, wt)
    with pl.section_vector():
        bias = pl.make_tile_group(type=HALF, addrs=0x10000, mutex_ids=[9])
        pl.expands(bias.next(), 1.0)
        for _ in pl.range(2):
            pl.system.set_cross_core(pipe=MTE3, event_id=FREE)  # both ring slots start free
    for i in pl.range(n):
        with pl.section_cube():
            at = a_l1.next()
            pl.load(at, a, [i * 128, 0])
            lt = left.next()
            pl.move(lt, at)
            ct = acc.next()
            pl.matmul(ct, lt, wr)
            pl.system.wait_cross_core(pipe=FIX, event_id=FREE)
            pl.move(ring.next(), ct, acc_to_vec_mode=pl.AccToVecMode.DualModeSplitM)
            pl.system.set_cross_core(pipe=FIX, event_id=READY)
        with pl.section_vector():
            s = ring.next()
            pl.system.wait_cross_core(pipe=V, event_id=READY)
            pl.add(s, s, bias.current())
            pl.store(y, s, [i * 128 + sub * 64, 0])
            pl.system.set_cross_core(pipe=MTE3, event_id=FREE)
    with pl.section_cube():
        for _ in pl.range(2):
            pl.system.wait_cross_core(pipe=FIX, event_id=FREE)


def _run(backend: str, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(3 * 128, 128, generator=g).to(torch.float16)
    w = torch.randn(128, 128, generator=g).to(torch.float16)
    y = torch.zeros(3 * 128, 128)
    with backends.use_backend(backend):
        scoped_groups[None, 1](a, w, y)
    return y, a.float() @ w.float() + 1.0


def test_groups_declared_in_earlier_sections_run_natively(native_backend, sim_functional):
    on_sim, expected = _run(sim_functional)
    torch.testing.assert_close(on_sim, expected, rtol=1e-3, atol=1e-3)
    native, _ = _run("native")
    assert torch.equal(native, on_sim)


ROWS16 = pl.TileType([16, 64], pl.DT_FP32)


@pl.jit(arch="a5")
def group_from_a_loop(x: pl.Tensor[[16, 64], pl.DT_FP32], n: pl.DT_INT32):
    with pl.section_vector():
        for _ in pl.range(n):
            g = pl.make_tile_group(type=ROWS16, addrs=0, mutex_ids=[0, 1])
            pl.load(g.next(), x, [0, 0])
        u = g.current()
        pl.add(u, u, 1.0)
        pl.store(x, u, [0, 0])


def test_a_group_bound_in_a_loop_and_used_after_it(native_backend, sim_functional):
    outs = []
    for backend in (sim_functional, "native"):
        x = torch.arange(16 * 64, dtype=torch.float32).reshape(16, 64)
        with backends.use_backend(backend):
            group_from_a_loop[None, 1](x, 2)
        outs.append(x)
    torch.testing.assert_close(outs[0], torch.arange(16 * 64.0).reshape(16, 64) + 1.0)
    assert torch.equal(outs[1], outs[0])
