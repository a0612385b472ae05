"""Layer normalisation written with the Reg API: y = (x − mean) / sqrt(var + eps) · γ + β.

Teaches: register accumulators that must survive partial masks (`vf.add(..., mode=MERGING)`
keeps the inactive lanes of the running sums); whole-register reductions broadcast back with
`vf.full(reg)`; register-scalar ops (`vf.adds` with the runtime `eps`, `vf.full` of a scalar);
`vf.sqrt` and `vf.div` for 1 / sqrt(var + eps); and tiles loaded once before the loop (γ, β)
read by every vector-function call, ordered with an explicit MTE2→V flag, while the row tiles
that move between pipes live in tile groups whose mutex ids auto_mutex locks around the VF
section. Three passes per row: sum, squared deviations, output.

Rows are processed in tiles of 8 (tails via valid shapes), cols ≤ 512.
"""
from __future__ import annotations

import torch

import pypto_pro.language as pl
from pypto_pro.language import vf

TARGETS = ("vector",)
KERNEL_TYPE = "aiv"
RTOL, ATOL = 1e-4, 1e-4

MAX_N = 512
TILE_ROWS = 8
LANES = 64  # FP32 lanes of one 256-byte register
ROW_T = pl.TileType([TILE_ROWS, MAX_N], pl.DT_FP32, valid_shape=[-1, -1])  # 16 KiB
VEC_T = pl.TileType([1, MAX_N], pl.DT_FP32, valid_shape=[1, -1])  # 2 KiB: γ, β
MTE2, V = pl.PipeType.MTE2, pl.PipeType.V
F32 = pl.DT_FP32
MERGE = pl.MergeMode.MERGING


@pl.vector_function
def layernorm_rows(dst, src, g, b, rows, cols, n, eps):
    full = vf.create_mask(pl.MaskPattern.ALL, dtype=F32)
    count = vf.full(n, full, dtype=F32)
    one = vf.full(1.0, full, dtype=F32)
    nreg = (cols + LANES - 1) // LANES
    for r in pl.range(rows):
        base = r * MAX_N
        acc = vf.full(0.0, full, dtype=F32)
        for j in pl.range(nreg):
            m = vf.update_mask(cols - j * LANES, dtype=F32)
            xv = vf.load_align(src, base + j * LANES)
            acc = vf.add(acc, xv, m, mode=MERGE)
        total = vf.reduce_sum(acc, full)
        total = vf.full(total, full)
        mean = vf.div(total, count, full)
        acc = vf.full(0.0, full, dtype=F32)
        for j in pl.range(nreg):
            m = vf.update_mask(cols - j * LANES, dtype=F32)
            xv = vf.load_align(src, base + j * LANES)
            d = vf.sub(xv, mean, m)
            sq = vf.mul(d, d, m)
            acc = vf.add(acc, sq, m, mode=MERGE)
        total = vf.reduce_sum(acc, full)
        total = vf.full(total, full)
        var = vf.div(total, count, full)
        var = vf.adds(var, eps, full)
        sd = vf.sqrt(var, full)
        rstd = vf.div(one, sd, full)
        for j in pl.range(nreg):
            m = vf.update_mask(cols - j * LANES, dtype=F32)
            xv = vf.load_align(src, base + j * LANES)
            gj = vf.load_align(g, j * LANES)
            bj = vf.load_align(b, j * LANES)
            d = vf.sub(xv, mean, m)
            yv = vf.mul(d, rstd, m)
            yv = vf.mul(yv, gj, m)
            yv = vf.add(yv, bj, m)
            vf.store_align(dst, yv, m, offset=base + j * LANES)


@pl.jit(arch="a5")
def vf_layernorm_kernel(x: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP32],
                        gamma: pl.Tensor[[1, pl.DYNAMIC], pl.DT_FP32],
                        beta: pl.Tensor[[1, pl.DYNAMIC], pl.DT_FP32],
                        y: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP32],
                        eps: pl.DT_FP32):
    with pl.section_vector():
        xs = pl.make_tile_group(type=ROW_T, addrs=[0x00000, 0x04000], mutex_ids=[0, 1])
        ys = pl.make_tile_group(type=ROW_T, addrs=[0x08000, 0x0C000], mutex_ids=[2, 3])
        g = pl.make_tile(VEC_T, addr=0x10000)
        b = pl.make_tile(VEC_T, addr=0x10800)
        rows = x.shape[0]
        cols = x.shape[1]
        n = cols * 1.0
        pl.set_validshape(g, [1, cols])
        pl.set_validshape(b, [1, cols])
        pl.load(g, gamma, [0, 0])
        pl.load(b, beta, [0, 0])
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=V, event_id=0)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=V, event_id=0)
        num_tiles = (rows + TILE_ROWS - 1) // TILE_ROWS
        for t in pl.range(pl.get_block_idx(), num_tiles, pl.get_block_num()):
            row_off = t * TILE_ROWS
            valid_rows = pl.min(TILE_ROWS, rows - row_off)
            xt = xs.next()
            yt = ys.next()
            pl.set_validshape(xt, [valid_rows, cols])
            pl.set_validshape(yt, [valid_rows, cols])
            pl.load(xt, x, [row_off, 0])
            layernorm_rows(yt, xt, g, b, valid_rows, cols, n, eps)
            pl.store(y, yt, [row_off, 0])


KERNELS = {"vf_layernorm_kernel": vf_layernorm_kernel}


def make_inputs(rows: int = 50, cols: int = 200, eps: float = 1e-5, seed: int = 0):
    """x, γ, β random FP32, a zero y and eps; any rows ≥ 1, 1 ≤ cols ≤ 512."""
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
    """`[None, min(32, num_tiles)]`."""
    return max(1, min(32, -(-x.shape[0] // TILE_ROWS)))


def run(*args, kernel=vf_layernorm_kernel) -> torch.Tensor:
    kernel[None, block_dim(*args)](*args)
    return args[3]
