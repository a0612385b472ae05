"""Layer normalisation over the last axis: y = (x − mean) / sqrt(var + eps) · γ + β.

Teaches: combining row reductions and broadcasts in both directions — `pl.row_sum` into DN `[rows,
1]` tiles, `pl.row_expand_sub` / `pl.row_expand_mul` (one value per row) and `pl.col_expand_mul` /
`pl.col_expand_sub` (one value per column, the γ and β rows); tile ops with a scalar right-hand
side (`pl.div(t, t, n)`, `pl.add(t, t, eps_n)`, `pl.mul(t, t, -1.0)` → `divs` / `adds` / `muls`),
on the row tiles before they are reduced (mean = Σ x/n, var + eps = Σ ((x − mean)²/n + eps/n): pto-
isa's CPU simulator takes tile-scalar ops on row-major tiles only, not on the DN `[rows, 1]`
results); `pl.rsqrt`; a runtime FP32 scalar parameter (`eps`); and mixing the two sync styles: the
row tiles that move between pipes live in tile groups (auto_mutex), the scratch tiles touched only
by pipe V are plain `pl.make_tile`s (V is in order with itself), and the γ/β rows loaded once
before the loop are ordered with an explicit MTE2→V flag.

β is applied as `y − (−β)`: it is negated once per core so every row tile costs one
`col_expand_sub`. Rows are processed in tiles of 16 (tails via valid shapes), cols ≤ 256.
"""
from __future__ import annotations

import torch

import pypto_pro.language as pl

TARGETS = ("vector",)
KERNEL_TYPE = "aiv"
RTOL, ATOL = 1e-4, 1e-4

MAX_N = 256
TILE_ROWS = 16
ROW_T = pl.TileType([TILE_ROWS, MAX_N], pl.DT_FP32, valid_shape=[-1, -1])  # 16 KiB
VEC_T = pl.TileType([1, MAX_N], pl.DT_FP32, valid_shape=[1, -1])  # 1 KiB: γ, −β
RED_T = pl.TileType([TILE_ROWS, 1], pl.DT_FP32, valid_shape=[-1, 1], layout=pl.DN)  # 64 B
MTE2, V = pl.PipeType.MTE2, pl.PipeType.V


@pl.jit(arch="a5")
def layernorm_kernel(x: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP32],
                     gamma: pl.Tensor[[1, pl.DYNAMIC], pl.DT_FP32],
                     beta: pl.Tensor[[1, pl.DYNAMIC], pl.DT_FP32],
                     y: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP32],
                     eps: pl.DT_FP32):
    with pl.section_vector():
        xs = pl.make_tile_group(type=ROW_T, addrs=0x00000, mutex_ids=[0, 1])
        ys = pl.make_tile_group(type=ROW_T, addrs=0x08000, mutex_ids=[2, 3])
        xc = pl.make_tile(ROW_T, addr=0x10000)
        sq = pl.make_tile(ROW_T, addr=0x14000)
        tmp = pl.make_tile(ROW_T, addr=0x18000)
        g = pl.make_tile(VEC_T, addr=0x1C000)
        nb = pl.make_tile(VEC_T, addr=0x1C400)
        mean = pl.make_tile(RED_T, addr=0x1C800)
        rstd = pl.make_tile(RED_T, addr=0x1C900)

        rows = x.shape[0]
        cols = x.shape[1]
        n = cols * 1.0
        eps_n = eps / n
        pl.set_validshape(g, [1, cols])
        pl.set_validshape(nb, [1, cols])
        pl.load(g, gamma, [0, 0])
        pl.load(nb, beta, [0, 0])
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=V, event_id=0)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=V, event_id=0)
        pl.mul(nb, nb, -1.0)

        num_tiles = (rows + TILE_ROWS - 1) // TILE_ROWS
        for t in pl.range(pl.get_block_idx(), num_tiles, pl.get_block_num()):
            row_off = t * TILE_ROWS
            valid_rows = pl.min(TILE_ROWS, rows - row_off)
            xt = xs.next()
            yt = ys.next()
            pl.set_validshape(xt, [valid_rows, cols])
            pl.set_validshape(yt, [valid_rows, cols])
            pl.set_validshape(xc, [valid_rows, cols])
            pl.set_validshape(sq, [valid_rows, cols])
            pl.set_validshape(tmp, [valid_rows, cols])
            pl.set_validshape(mean, [valid_rows, 1])
            pl.set_validshape(rstd, [valid_rows, 1])
            pl.load(xt, x, [row_off, 0])
            pl.div(xc, xt, n)
            pl.row_sum(mean, xc, tmp)
            pl.row_expand_sub(xc, xt, mean)
            pl.mul(sq, xc, xc)
            pl.div(sq, sq, n)
            pl.add(sq, sq, eps_n)
            pl.row_sum(rstd, sq, tmp)
            pl.rsqrt(rstd, rstd)
            pl.row_expand_mul(yt, xc, rstd)
            pl.col_expand_mul(yt, yt, g)
            pl.col_expand_sub(yt, yt, nb)
            pl.store(y, yt, [row_off, 0])


KERNELS = {"layernorm_kernel": layernorm_kernel}


def make_inputs(rows: int = 50, cols: int = 200, eps: float = 1e-5, seed: int = 0):
    if not 1 <= cols <= MAX_N or rows < 1:
        raise ValueError(f"need rows >= 1 and 1 <= cols <= {MAX_N}, got {rows}x{cols}")
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, cols, generator=g, dtype=torch.float32) * 2 + 0.5
    gamma = torch.randn(1, cols, generator=g, dtype=torch.float32)
    beta = torch.randn(1, cols, generator=g, dtype=torch.float32)
    return x, gamma, beta, torch.zeros(rows, cols, dtype=torch.float32), float(eps)


def reference(x, gamma, beta, y=None, eps: float = 1e-5) -> torch.Tensor:
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), gamma[0], beta[0], eps)


def block_dim(x: torch.Tensor, *rest) -> int:
    return max(1, min(32, -(-x.shape[0] // TILE_ROWS)))


def run(*args, kernel=layernorm_kernel) -> torch.Tensor:
    kernel[None, block_dim(*args)](*args)
    return args[3]
