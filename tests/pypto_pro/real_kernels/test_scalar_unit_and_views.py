"""Issue 21, class 7: constructs of real kernels around the scalar unit, SIMT and tile views.

* SIMT context queries are (x, y, z) named tuples: `ctx.x`, `ctx[1]`, `x, y, z = ctx`.
* `cmps` (the tile-scalar compare under eq / ne / ... ) takes a scalar third operand.
* `set_cross_core` / `wait_cross_core` on pipe S run in the scalar unit.
* `getval` as a value under auto_mutex: the scalar unit locks the tile on pipe S.
* SSBUF: `ssbuf_store` / `ssbuf_load` of a struct through the block's shared buffer.
* Tile slices keep the parent's shape and row stride at the window's first element: column
  windows, run-time bounds, the valid shape clipped to the parent's (the docs' examples).
* `mrgsort2` writes the whole merge from tmp's address (pto-isa sizes tmp only against the UB).
* An NZ tile `insert`ed into a ZN Mat tile lands transposed: a transposed left operand.

Every kernel runs on every backend and is checked against torch.
"""
from __future__ import annotations

import torch

import pypto_pro.language as pl

F32, F16 = pl.DT_FP32, pl.DT_FP16


# ---------------------------------------------------------------- SIMT context

N = 32
LANES = pl.TileType([1, N], pl.DT_INT32)


@pl.simt.function(max_threads=N)
def context_fields(d: pl.Tile[[1, N], pl.DT_INT32]):
    ctx = pl.simt.thread_idx()
    dims = pl.simt.block_dim()
    x, y, z = pl.simt.thread_idx()
    d[0, ctx.x] = ctx.x * 100 + dims.x + ctx[1] + y + z + dims[2]


@pl.jit(arch="a5")
def simt_context_kernel(out: pl.Tensor[[1, N], pl.DT_INT32]):
    with pl.section_vector():
        t = pl.make_tile(LANES, addr=0)
        pl.simt.launch(context_fields, threads=N, args=(t,))
        pl.system.sync_src(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.store(out, t, [0, 0])


def test_simt_context_is_a_named_tuple(everywhere):
    def launch():
        out = torch.zeros(1, N, dtype=torch.int32)
        simt_context_kernel(out)
        return out

    want = (torch.arange(N, dtype=torch.int32) * 100 + N + 1).view(1, N)
    for engine, out in everywhere(launch).items():
        assert torch.equal(out, want), engine


# ---------------------------------------------------------------- cmps, getval, pipe S

T64 = pl.TileType([16, 64], F32)
MASK = pl.TileType([16, 64], pl.DT_UINT8)


@pl.jit(arch="a5", auto_mutex=True)
def cmps_kernel(a: pl.Tensor[[16, 64], F32], b: pl.Tensor[[16, 64], F32],
                out: pl.Tensor[[16, 64], F32], s: pl.DT_FP32):
    with pl.section_vector():
        ta = pl.make_tile_group(type=T64, addrs=0x0, mutex_ids=[0]).current()
        tb = pl.make_tile_group(type=T64, addrs=0x1000, mutex_ids=[1]).current()
        to = pl.make_tile_group(type=T64, addrs=0x2000, mutex_ids=[2]).current()
        tmp = pl.make_tile_group(type=T64, addrs=0x3000, mutex_ids=[3]).current()
        m = pl.make_tile_group(type=MASK, addrs=0x4000, mutex_ids=[4]).current()
        pl.load(ta, a, [0, 0])
        pl.load(tb, b, [0, 0])
        pl.cmps(m, ta, s, cmp_mode=pl.CompareMode.GT)
        pl.select(to, m, ta, tb, tmp)
        pl.store(out, to, [0, 0])


def test_cmps_with_a_scalar_operand(everywhere):
    a, b = torch.randn(16, 64), torch.randn(16, 64)

    def launch():
        out = torch.zeros(16, 64)
        cmps_kernel(a, b, out, 0.25)
        return out

    for engine, out in everywhere(launch).items():
        assert torch.equal(out, torch.where(a > 0.25, a, b)), engine


@pl.jit(arch="a5", auto_mutex=True)
def getval_kernel(x: pl.Tensor[[16, 64], F32], out: pl.Tensor[[16, 64], F32],
                  picks: pl.Tensor[[4], F32], idx: pl.DT_INT32):
    with pl.section_vector():
        g = pl.make_tile_group(type=T64, addrs=0x0, mutex_ids=[0, 1])
        o = pl.make_tile_group(type=T64, addrs=0x8000, mutex_ids=[2])
        for i in pl.range(2):
            t = g.next()
            pl.load(t, x, [0, 0])
            v = pl.getval(t, idx + i)  # auto_mutex locks t on pipe S around the read
            ot = o.next()
            pl.adds(ot, t, v)
            pl.store(out, ot, [0, 0])
            pl.setval(picks, i, v * 2.0)


def test_getval_as_a_value_under_auto_mutex(everywhere):
    x = torch.randn(16, 64)

    def launch():
        out, picks = torch.zeros(16, 64), torch.zeros(4)
        getval_kernel(x, out, picks, 5)
        return out, picks

    flat = x.view(-1)
    for engine, (out, picks) in everywhere(launch).items():
        assert torch.equal(out, x + flat[6]), engine
        assert torch.equal(picks[:2], flat[5:7] * 2), engine


@pl.jit(arch="a5")
def ssbuf_kernel(out: pl.Tensor[[4], pl.DT_INT32], base: pl.DT_INT32):
    message = pl.struct("Message", batch=0, block=0, offset=0)
    with pl.section_vector():
        message.batch = base + 8
        message.block = pl.get_block_idx() // 2
        message.offset = 32768
        if pl.get_subblock_idx() == 0:
            pl.ssbuf_store(message, 16)
            pl.system.set_cross_core(pipe=pl.PipeType.S, event_id=15)
    with pl.section_cube():
        pl.system.wait_cross_core(pipe=pl.PipeType.S, event_id=15,
                                  sync_mode=pl.CrossCoreSyncMode.UNICAST_BLOCK)
        pl.ssbuf_load(message, 16)
        pl.setval(out, 0, message.batch)
        pl.setval(out, 1, message.block)
        pl.setval(out, 2, message.offset)


def test_ssbuf_copies_with_sync_on_pipe_s(everywhere):
    def launch():
        out = torch.zeros(4, dtype=torch.int32)
        ssbuf_kernel(out, 3)
        return out.tolist()

    for engine, out in everywhere(launch).items():
        assert out == [11, 0, 32768, 0], engine


# ---------------------------------------------------------------- tile slices


@pl.jit(auto_mutex=True)
def subview_kernel(a: pl.Tensor[[8, 64], F16], out: pl.Tensor[[4, 34], F16],
                   out1: pl.Tensor[[4, 24], F16], out2: pl.Tensor[[8, 32], F16],
                   c0: pl.DT_INT32):
    whole = pl.make_tile_group(type=pl.TileType([8, 64], F16), addrs=0x0, mutex_ids=[0])
    clipped = pl.make_tile_group(type=pl.TileType([8, 64], F16, valid_shape=[-1, -1]),
                                 addrs=0x1000, mutex_ids=[1])
    with pl.section_vector():
        tile = whole.next()
        pl.load(tile, a, [0, 0])
        pl.store(out, tile[2:6, 16:50], [0, 0])  # the docs' window: 4 rows x 34 columns
        pl.store(out2, tile[0:, c0:c0 + 32], [0, 0])  # run-time column bounds
        t2 = clipped.next()
        pl.set_validshape(t2, [6, 40])
        pl.load(t2, a, [0, 0])
        pl.store(out1, t2[2:6, 16:50], [0, 0])  # clipped to the valid shape: 4 x 24


def test_tile_slices_by_column(everywhere):
    a = torch.randn(8, 64).half()

    def launch():
        outs = [torch.zeros(4, 34).half(), torch.zeros(4, 24).half(), torch.zeros(8, 32).half()]
        subview_kernel(a, *outs, 16)
        return outs

    for engine, (o, o1, o2) in everywhere(launch).items():
        assert torch.equal(o, a[2:6, 16:50]), engine
        assert torch.equal(o1, a[2:6, 16:40]), engine
        assert torch.equal(o2, a[:, 16:48]), engine


# ---------------------------------------------------------------- mrgsort2


@pl.jit(auto_mutex=True)
def mrgsort2_kernel(src0: pl.Tensor[[1, 256], F32], src1: pl.Tensor[[1, 256], F32],
                    sorted_out: pl.Tensor[[1, 256], F32], beyond: pl.Tensor[[1, 256], F32]):
    """The docs' kernel: tmp holds 128 records, the merge writes 256 from its address."""
    tt = pl.TileType(shape=[1, 256], dtype=F32, target_memory=pl.MemorySpace.Vec)
    src0_g = pl.make_tile_group(type=tt, addrs=0x0000, mutex_ids=[0])
    src1_g = pl.make_tile_group(type=tt, addrs=0x0400, mutex_ids=[1])
    dst_g = pl.make_tile_group(type=tt, addrs=0x0800, mutex_ids=[2])
    tmp_g = pl.make_tile_group(type=tt, addrs=0x0C00, mutex_ids=[3])
    next_g = pl.make_tile_group(type=tt, addrs=0x1000, mutex_ids=[3])  # right after tmp
    with pl.section_vector():
        t0, t1, dst, tmp = src0_g.current(), src1_g.current(), dst_g.current(), tmp_g.current()
        pl.load(t0, src0, [0, 0])
        pl.load(t1, src1, [0, 0])
        pl.mrgsort2(t0, t1, dst, tmp, exhausted=False)
        pl.store(sorted_out, dst, [0, 0])
        pl.store(beyond, next_g.current(), [0, 0])


def _records(n: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    values = torch.sort(torch.randn(n, generator=g), descending=True).values
    index = (torch.arange(n, dtype=torch.int32) + 1000 * seed).view(torch.float32)
    return torch.stack([values, index], 1).reshape(1, -1)


def test_mrgsort2_writes_the_merge_past_a_short_tmp(everywhere):
    a, b = _records(128, 1), _records(128, 2)

    def launch():
        out, beyond = torch.zeros(1, 256), torch.zeros(1, 256)
        mrgsort2_kernel(a, b, out, beyond)
        return out, beyond

    records = torch.cat([a.view(-1, 2), b.view(-1, 2)])
    merged = records[torch.argsort(records[:, 0], descending=True, stable=True)].reshape(1, -1)
    for engine, (out, beyond) in everywhere(launch).items():
        assert torch.equal(out, merged[:, :256]), engine
        assert torch.equal(beyond.view(torch.int32), merged[:, 256:].view(torch.int32)), engine


# ---------------------------------------------------------------- insert: a transposed left


M, K = 64, 64


@pl.jit()
def transposed_left_kernel(at: pl.Tensor[[K, M], F32], b: pl.Tensor[[K, 64], F32],
                           out: pl.Tensor[[M, 64], F32]):
    """A = atᵀ reaches L0A through the vector side: atᵀ's halves, NZ in UB, inserted into a ZN
    Mat tile (the docs' transposed-left table), then moved to Left and multiplied by B."""
    a_mat = pl.make_tile(pl.TileType([M, K], F32, pl.MemorySpace.Mat, layout=pl.ZN),
                         addr=0x10000)
    with pl.section_vector():
        sub = pl.get_subblock_idx()
        nd = pl.make_tile(pl.TileType([K // 2, M], F32), addr=0x0)
        nz = pl.make_tile(pl.TileType([K // 2, M], F32, layout=pl.NZ), addr=0x4000)
        pl.load(nd, at, [sub * (K // 2), 0])
        pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
        pl.move(nz, nd)
        pl.system.sync_src(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=1)
        pl.system.sync_dst(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=1)
        pl.insert(a_mat, nz, [sub * (K // 2), 0])
        pl.system.set_cross_core(pipe=pl.PipeType.MTE3, event_id=0)
    with pl.section_cube():
        b_mat = pl.make_tile(pl.TileType([K, 64], F32, pl.MemorySpace.Mat), addr=0x0)
        left = pl.make_tile(pl.TileType([M, K], F32, pl.MemorySpace.Left), addr=0x0)
        right = pl.make_tile(pl.TileType([K, 64], F32, pl.MemorySpace.Right), addr=0x0)
        acc = pl.make_tile(pl.TileType([M, 64], F32, pl.MemorySpace.Acc), addr=0x0)
        pl.load(b_mat, b, [0, 0])
        pl.system.wait_cross_core(pipe=pl.PipeType.MTE1, event_id=0)
        pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE1, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE1, event_id=0)
        pl.move(left, a_mat)
        pl.move(right, b_mat)
        pl.system.sync_src(set_pipe=pl.PipeType.MTE1, wait_pipe=pl.PipeType.M, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.MTE1, wait_pipe=pl.PipeType.M, event_id=0)
        pl.matmul(acc, left, right)
        pl.system.sync_src(set_pipe=pl.PipeType.M, wait_pipe=pl.PipeType.FIX, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.M, wait_pipe=pl.PipeType.FIX, event_id=0)
        pl.store(out, acc, [0, 0])


def test_insert_into_a_zn_mat_is_a_transposed_left(everywhere):
    g = torch.Generator().manual_seed(7)
    a = torch.randn(M, K, generator=g)
    b = torch.randn(K, 64, generator=g)

    def launch():
        out = torch.zeros(M, 64)
        transposed_left_kernel(a.T.contiguous(), b, out)
        return out

    want = a @ b
    for engine, out in everywhere(launch).items():
        assert torch.allclose(out, want, rtol=1e-4, atol=1e-3), engine
