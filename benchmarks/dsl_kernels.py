"""DSL kernels for the Triton comparison (`bench_triton.py`) that the examples do not cover at
the issue's sizes. Each has a twin in `triton_kernels.py` with the same tiling.

* `add_fp32_kernel`: z = x + y on [128, 128] FP32 tiles. A 64 KiB FP32 tile leaves room for
  three in the 248 KiB UB, so x is double buffered and the sum is written in place into the x
  slot; y has one slot (its load for tile t+1 waits for the add of tile t).
* `softmax_1k_kernel`: row softmax of [rows, 1024] FP32 in 16-row blocks, computed in place in a
  double-buffered 64 KiB row tile (the example's three rings of 32 KiB do not fit at 1024 cols).
* `layernorm_1k_kernel`: layernorm of [rows, 1024] FP32 in 16-row blocks. It needs the row tile,
  the squared deviations and the reduction scratch (3 × 64 KiB), so the row tile has one slot:
  no load/compute overlap, the values are the same.
* `matmul_k_kernel`: C[M, N] FP32 = A[M, K] FP16 · B[K, N] FP16 with 128×128×128 blocks (the
  sweep factory `pypto_pro.examples.tunable.make_matmul`): output tiles dealt round-robin to the
  blocks, each walking K with `matmul_acc`.
* `matmul_softmax_kernel`: softmax(A·B) row-wise for A [M, 512], B [512, 1024] as a Cube+Vector
  mix kernel. Per 64-row block the cube keeps the A panel [64, 512] in L1, computes S in
  [64, 128] pieces (K in 4 steps of 128; L0B holds at most a [128, 128] FP16 piece of B) into the
  GM workspace and raises one cross-core event; each AIV waits for it and normalises its 32 rows
  as two whole-row [16, 1024] tiles with the softmax kernel's body (load, one pass in UB, store),
  like `pypto_pro.examples.matmul_softmax` with an M loop and a K loop.
"""
from __future__ import annotations

import torch

import pypto_pro.language as pl
from pypto_pro.examples.tunable import make_matmul

T = 128  # add and matmul tile edge
ROWS = 16  # softmax / layernorm row block
COLS = 1024  # softmax / layernorm row length

# ---------------------------------------------------------------- add, FP32

ADD32_T = pl.TileType([T, T], pl.DT_FP32)  # 64 KiB


@pl.jit(arch="a5")
def add_fp32_kernel(x: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP32],
                    y: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP32],
                    z: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP32]):
    with pl.section_vector():
        xs = pl.make_tile_group(type=ADD32_T, addrs=[0x00000, 0x10000], mutex_ids=[0, 1])
        ys = pl.make_tile_group(type=ADD32_T, addrs=0x20000, mutex_ids=[2])
        nt = x.shape[1] // T
        tiles = (x.shape[0] // T) * nt
        for t in pl.range(pl.get_block_idx(), tiles, pl.get_block_num()):
            a = xs.next()
            b = ys.next()
            pl.load_tile(a, x, [t // nt, t % nt])
            pl.load_tile(b, y, [t // nt, t % nt])
            pl.add(a, a, b)
            pl.store_tile(z, a, [t // nt, t % nt])


# ---------------------------------------------------------------- softmax, 16 × 1024 FP32

ROW_T = pl.TileType([ROWS, COLS], pl.DT_FP32)  # 64 KiB
RED_T = pl.TileType([ROWS, 1], pl.DT_FP32, layout=pl.DN)


def _softmax_rows(s, red, tmp):
    """Row softmax of the [ROWS, COLS] tile `s` in place (`red` [ROWS, 1], `tmp` scratch)."""
    pl.row_max(red, s, tmp)
    pl.row_expand_sub(s, s, red)
    pl.exp(s, s)
    pl.row_sum(red, s, tmp)
    pl.row_expand_div(s, s, red)


@pl.jit(arch="a5")
def softmax_1k_kernel(x: pl.Tensor[[pl.DYNAMIC, COLS], pl.DT_FP32],
                      y: pl.Tensor[[pl.DYNAMIC, COLS], pl.DT_FP32]):
    with pl.section_vector():
        rows = pl.make_tile_group(type=ROW_T, addrs=[0x00000, 0x10000], mutex_ids=[0, 1])
        tmp = pl.make_tile(ROW_T, addr=0x20000)  # reduction scratch, pipe V only
        red = pl.make_tile(RED_T, addr=0x30000)
        for t in pl.range(pl.get_block_idx(), x.shape[0] // ROWS, pl.get_block_num()):
            s = rows.next()
            pl.load(s, x, [t * ROWS, 0])
            _softmax_rows(s, red, tmp)
            pl.store(y, s, [t * ROWS, 0])


# ---------------------------------------------------------------- layernorm, 16 × 1024 FP32

VEC_T = pl.TileType([1, COLS], pl.DT_FP32)  # 4 KiB: γ, −β
MTE2, V = pl.PipeType.MTE2, pl.PipeType.V


@pl.jit(arch="a5")
def layernorm_1k_kernel(x: pl.Tensor[[pl.DYNAMIC, COLS], pl.DT_FP32],
                        gamma: pl.Tensor[[1, COLS], pl.DT_FP32],
                        beta: pl.Tensor[[1, COLS], pl.DT_FP32],
                        y: pl.Tensor[[pl.DYNAMIC, COLS], pl.DT_FP32],
                        eps: pl.DT_FP32):
    with pl.section_vector():
        xs = pl.make_tile_group(type=ROW_T, addrs=0x00000, mutex_ids=[0])
        sq = pl.make_tile(ROW_T, addr=0x10000)
        tmp = pl.make_tile(ROW_T, addr=0x20000)
        g = pl.make_tile(VEC_T, addr=0x30000)
        nb = pl.make_tile(VEC_T, addr=0x31000)
        mean = pl.make_tile(RED_T, addr=0x32000)
        rstd = pl.make_tile(RED_T, addr=0x32100)
        pl.load(g, gamma, [0, 0])
        pl.load(nb, beta, [0, 0])
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=V, event_id=0)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=V, event_id=0)
        pl.mul(nb, nb, -1.0)
        for t in pl.range(pl.get_block_idx(), x.shape[0] // ROWS, pl.get_block_num()):
            xt = xs.next()
            pl.load(xt, x, [t * ROWS, 0])
            pl.row_sum(mean, xt, tmp)
            pl.div(mean, mean, 1.0 * COLS)
            pl.row_expand_sub(xt, xt, mean)
            pl.mul(sq, xt, xt)
            pl.row_sum(rstd, sq, tmp)
            pl.div(rstd, rstd, 1.0 * COLS)
            pl.add(rstd, rstd, eps)
            pl.rsqrt(rstd, rstd)
            pl.row_expand_mul(xt, xt, rstd)
            pl.col_expand_mul(xt, xt, g)
            pl.col_expand_sub(xt, xt, nb)
            pl.store(y, xt, [t * ROWS, 0])


# ---------------------------------------------------------------- matmul with a K loop

#: the sweep factory's matmul at 128x128 output tiles, two slots per ring
matmul_k_kernel, _ = make_matmul(T, T, 2)


# ---------------------------------------------------------------- fused matmul + row softmax

FM, FK, FN = 64, 512, 128  # row block, K (whole panel), N piece
HALF = FM // 2  # rows per AIV
PANEL_L1 = pl.TileType([FM, FK], pl.DT_FP16, pl.MemorySpace.Mat)  # 64 KiB
BF_L1 = pl.TileType([T, FN], pl.DT_FP16, pl.MemorySpace.Mat)  # 32 KiB
AF_L0 = pl.TileType([FM, T], pl.DT_FP16, pl.MemorySpace.Left)  # 16 KiB
BF_L0 = pl.TileType([T, FN], pl.DT_FP16, pl.MemorySpace.Right)
CF_L0 = pl.TileType([FM, FN], pl.DT_FP32, pl.MemorySpace.Acc)  # 32 KiB


@pl.jit(arch="a5")
def matmul_softmax_kernel(a: pl.Tensor[[pl.DYNAMIC, FK], pl.DT_FP16],
                          b: pl.Tensor[[FK, COLS], pl.DT_FP16],
                          ws: pl.Tensor[[pl.DYNAMIC, COLS], pl.DT_FP32],
                          out: pl.Tensor[[pl.DYNAMIC, COLS], pl.DT_FP32]):
    m_blocks = a.shape[0] // FM
    n_blocks = b.shape[1] // FN
    with pl.section_cube():
        panels = pl.make_tile_group(type=PANEL_L1, addrs=[0x00000, 0x10000], mutex_ids=[0, 1])
        b_l1 = pl.make_tile_group(type=BF_L1, addrs=[0x20000, 0x28000], mutex_ids=[2, 3])
        left = pl.make_tile_group(type=AF_L0, addrs=[0x0, 0x4000], mutex_ids=[4, 5])
        right = pl.make_tile_group(type=BF_L0, addrs=[0x0, 0x8000], mutex_ids=[6, 7])
        acc = pl.make_tile_group(type=CF_L0, addrs=[0x0, 0x8000], mutex_ids=[8, 9])
        for r in pl.range(pl.get_block_idx(), m_blocks, pl.get_block_num()):
            p = panels.next()
            pl.load(p, a, [r * FM, 0])
            for j in pl.range(n_blocks):
                c0 = acc.next()
                for k in pl.range(FK // T):
                    a0 = left.next()
                    pl.move(a0, p, [0, k * T])
                    b1 = b_l1.next()
                    pl.load(b1, b, [k * T, j * FN])
                    b0 = right.next()
                    pl.move(b0, b1)
                    if k == 0:
                        pl.matmul(c0, a0, b0)
                    else:
                        pl.matmul_acc(c0, c0, a0, b0)
                pl.store(ws, c0, [r * FM, j * FN])
            pl.system.set_cross_core(pipe=pl.PipeType.FIX, event_id=0)

    with pl.section_vector():
        rows = pl.make_tile_group(type=ROW_T, addrs=[0x00000, 0x10000], mutex_ids=[0, 1])
        tmp = pl.make_tile(ROW_T, addr=0x20000)
        red = pl.make_tile(RED_T, addr=0x30000)
        half0 = pl.get_subblock_idx() * HALF
        block = pl.get_block_idx() // pl.get_subblock_num()  # AIV: 2·block + subblock
        for r in pl.range(block, m_blocks, pl.get_block_num()):
            pl.system.wait_cross_core(pipe=pl.PipeType.MTE2, event_id=0)
            for h in pl.range(HALF // ROWS):  # the AIV's rows of S, whole rows at a time
                s = rows.next()
                row0 = r * FM + half0 + h * ROWS
                pl.load(s, ws, [row0, 0])
                _softmax_rows(s, red, tmp)
                pl.store(out, s, [row0, 0])


# ---------------------------------------------------------------- inputs


def rand(shape: tuple[int, ...], dtype: torch.dtype, seed: int, scale: float = 1.0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=g) * scale).to(dtype)
