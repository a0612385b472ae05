"""Row softmax written with the Reg API (spec §2.13, §4.1 VF sections).

Teaches: a `@pl.vector_function` body called from `section_vector` with tiles and scalars;
256-byte registers (64 FP32 lanes) walked along a row with `vf.load_align(tile, offset)` and
`vf.store_align(tile, reg, mask, offset=)` (offsets in elements);
`vf.update_mask(n)` predicates for the row tail; MERGING mode so inactive lanes keep the running
maximum; `vf.reduce_max` / `vf.reduce_sum` (result in lane 0) broadcast back with `vf.full(reg)`;
`vf.exp_sub` (exp(x − max)); and `vf.mem_bar` between the stores of one pass and the loads of
the next. The section runs on pipe V as one instruction, so auto_mutex orders it against the
MTE2 load and the MTE3 store through the tile groups' mutex ids, as for Tile API ops.

Each core takes every `get_block_num()`-th tile of 8 rows; cols ≤ 1024 (`MAX_N`).
"""
from __future__ import annotations

import torch

import pypto_pro.language as pl
from pypto_pro.language import vf

TARGETS = ("vector",)
KERNEL_TYPE = "aiv"
RTOL, ATOL = 1e-5, 1e-6

MAX_N = 1024
TILE_ROWS = 8
LANES = 64  # FP32 lanes of one 256-byte register
ROW_T = pl.TileType([TILE_ROWS, MAX_N], pl.DT_FP32, valid_shape=[-1, -1])  # 32 KiB
IN_ADDRS = [0x00000, 0x08000]
OUT_ADDRS = [0x10000, 0x18000]


@pl.vector_function
def softmax_rows(dst, src, rows, cols):
    full = vf.create_mask(pl.MaskPattern.ALL, dtype=pl.DT_FP32)
    nreg = (cols + LANES - 1) // LANES
    for r in pl.range(rows):
        base = r * MAX_N
        mx = vf.full(-3.0e38, full, dtype=pl.DT_FP32)
        for j in pl.range(nreg):
            m = vf.update_mask(cols - j * LANES, dtype=pl.DT_FP32)
            xv = vf.load_align(src, base + j * LANES)
            mx = vf.max(mx, xv, m, mode=pl.MergeMode.MERGING)
        row_max = vf.reduce_max(mx, full)
        bmax = vf.full(row_max, full)
        acc = vf.full(0.0, full, dtype=pl.DT_FP32)
        for j in pl.range(nreg):
            m = vf.update_mask(cols - j * LANES, dtype=pl.DT_FP32)
            xv = vf.load_align(src, base + j * LANES)
            e = vf.exp_sub(xv, bmax, m)
            acc = vf.add(acc, e, full)
            vf.store_align(dst, e, m, offset=base + j * LANES)
        row_sum = vf.reduce_sum(acc, full)
        bsum = vf.full(row_sum, full)
        vf.mem_bar(pl.MemBarMode.VST_VLD)
        for j in pl.range(nreg):
            m = vf.update_mask(cols - j * LANES, dtype=pl.DT_FP32)
            e = vf.load_align(dst, base + j * LANES)
            yv = vf.div(e, bsum, m)
            vf.store_align(dst, yv, m, offset=base + j * LANES)


@pl.jit(arch="a5")
def vf_softmax_kernel(x: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP32],
                      y: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP32]):
    with pl.section_vector():
        ins = pl.make_tile_group(type=ROW_T, addrs=IN_ADDRS, mutex_ids=[0, 1])
        outs = pl.make_tile_group(type=ROW_T, addrs=OUT_ADDRS, mutex_ids=[2, 3])
        rows = x.shape[0]
        cols = x.shape[1]
        num_tiles = (rows + TILE_ROWS - 1) // TILE_ROWS
        for t in pl.range(pl.get_block_idx(), num_tiles, pl.get_block_num()):
            row_off = t * TILE_ROWS
            valid_rows = pl.min(TILE_ROWS, rows - row_off)
            src = ins.next()
            dst = outs.next()
            pl.set_validshape(src, [valid_rows, cols])
            pl.set_validshape(dst, [valid_rows, cols])
            pl.load(src, x, [row_off, 0])
            softmax_rows(dst, src, valid_rows, cols)
            pl.store(y, dst, [row_off, 0])


KERNELS = {"vf_softmax_kernel": vf_softmax_kernel}


def make_inputs(rows: int = 64, cols: int = 300, seed: int = 0):
    """x random FP32 [rows, cols] and a zero y; any rows ≥ 1, 1 ≤ cols ≤ 1024."""
    if not 1 <= cols <= MAX_N or rows < 1:
        raise ValueError(f"need rows >= 1 and 1 <= cols <= {MAX_N}, got {rows}x{cols}")
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, cols, generator=g, dtype=torch.float32) * 3
    return x, torch.zeros(rows, cols, dtype=torch.float32)


def reference(x: torch.Tensor, y: torch.Tensor | None = None) -> torch.Tensor:
    return torch.softmax(x, dim=-1)


def block_dim(x: torch.Tensor, *rest) -> int:
    """`[None, min(32, num_tiles)]`."""
    return max(1, min(32, -(-x.shape[0] // TILE_ROWS)))


def run(*args, kernel=vf_softmax_kernel) -> torch.Tensor:
    kernel[None, block_dim(*args)](*args)
    return args[1]
