"""Row softmax over a fully dynamic [rows, cols] FP32 matrix (spec §6.2 walkthrough 5).

Teaches: tiles with a runtime valid shape (`valid_shape=[-1, -1]` + `pl.set_validshape` before
the load, so only the valid window is read, computed and written back); `[rows, 1]` reduction
tiles declared with `layout=pl.DN`; tail handling with `pl.min`; block ops that the language
does not declare but the `pl.<name>` fallback reaches (`pl.row_max`, `pl.row_expand_sub`,
`pl.row_sum`, `pl.row_expand_div` → `block.row_*`); and explicit address lists for tile groups.

Each core takes every `get_block_num()`-th tile of 16 rows; cols ≤ 512 (`MAX_N`). Groups have two
32 KiB slots (in, out, tmp) and two 512 B slots (red), all with mutex ids, so auto_mutex orders
the load (MTE2), the vector work (V) and the store (MTE3) and overlaps consecutive row tiles.

`softmax_declared_kernel` is the same computation through the declared API:
`pl.maximum(..., dim=0)`, `pl.expand_sub(..., dim=0)`, `pl.sum(..., dim=0)`,
`pl.expand_div(..., dim=0)`.
"""
from __future__ import annotations

import torch

import pypto_pro.language as pl

TARGETS = ("vector",)
KERNEL_TYPE = "aiv"
RTOL, ATOL = 1e-3, 1e-3

MAX_N = 512
TILE_ROWS = 16
ROW_T = pl.TileType([TILE_ROWS, MAX_N], pl.DT_FP32, valid_shape=[-1, -1])  # 32 KiB
RED_T = pl.TileType([TILE_ROWS, 1], pl.DT_FP32, valid_shape=[-1, -1], layout=pl.DN)  # 64 B
IN_ADDRS = [0x00000, 0x08000]
OUT_ADDRS = [0x10000, 0x18000]
TMP_ADDRS = [0x20000, 0x28000]
RED_ADDRS = [0x30000, 0x30200]


@pl.jit(arch="a5")
def softmax_kernel(x: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP32],
                   y: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP32]):
    with pl.section_vector():
        ins = pl.make_tile_group(type=ROW_T, addrs=IN_ADDRS, mutex_ids=[0, 1])
        outs = pl.make_tile_group(type=ROW_T, addrs=OUT_ADDRS, mutex_ids=[2, 3])
        tmps = pl.make_tile_group(type=ROW_T, addrs=TMP_ADDRS, mutex_ids=[4, 5])
        reds = pl.make_tile_group(type=RED_T, addrs=RED_ADDRS, mutex_ids=[6, 7])
        rows = x.shape[0]
        cols = x.shape[1]
        num_tiles = (rows + TILE_ROWS - 1) // TILE_ROWS
        for t in pl.range(pl.get_block_idx(), num_tiles, pl.get_block_num()):
            row_off = t * TILE_ROWS
            valid_rows = pl.min(TILE_ROWS, rows - row_off)
            src = ins.next()
            dst = outs.next()
            tmp = tmps.next()
            red = reds.next()
            pl.set_validshape(src, [valid_rows, cols])
            pl.set_validshape(dst, [valid_rows, cols])
            pl.set_validshape(tmp, [valid_rows, cols])
            pl.set_validshape(red, [valid_rows, 1])
            pl.load(src, x, [row_off, 0])
            pl.row_max(red, src, tmp)
            pl.row_expand_sub(dst, src, red)
            pl.exp(dst, dst)
            pl.row_sum(red, dst, tmp)
            pl.row_expand_div(dst, dst, red)
            pl.store(y, dst, [row_off, 0])


@pl.jit(arch="a5")
def softmax_declared_kernel(x: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP32],
                            y: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP32]):
    with pl.section_vector():
        ins = pl.make_tile_group(type=ROW_T, addrs=IN_ADDRS, mutex_ids=[0, 1])
        outs = pl.make_tile_group(type=ROW_T, addrs=OUT_ADDRS, mutex_ids=[2, 3])
        tmps = pl.make_tile_group(type=ROW_T, addrs=TMP_ADDRS, mutex_ids=[4, 5])
        reds = pl.make_tile_group(type=RED_T, addrs=RED_ADDRS, mutex_ids=[6, 7])
        rows = x.shape[0]
        cols = x.shape[1]
        num_tiles = (rows + TILE_ROWS - 1) // TILE_ROWS
        for t in pl.range(pl.get_block_idx(), num_tiles, pl.get_block_num()):
            row_off = t * TILE_ROWS
            valid_rows = pl.min(TILE_ROWS, rows - row_off)
            src = ins.next()
            dst = outs.next()
            tmp = tmps.next()
            red = reds.next()
            pl.set_validshape(src, [valid_rows, cols])
            pl.set_validshape(dst, [valid_rows, cols])
            pl.set_validshape(tmp, [valid_rows, cols])
            pl.set_validshape(red, [valid_rows, 1])
            pl.load(src, x, [row_off, 0])
            pl.maximum(red, src, tmp, dim=0)
            pl.expand_sub(dst, src, red, dim=0)
            pl.exp(dst, dst)
            pl.sum(red, dst, tmp, dim=0)
            pl.expand_div(dst, dst, red, dim=0)
            pl.store(y, dst, [row_off, 0])


KERNELS = {"softmax_kernel": softmax_kernel, "softmax_declared_kernel": softmax_declared_kernel}


def make_inputs(rows: int = 100, cols: int = 300, seed: int = 0):
    """x random FP32 [rows, cols] and a zero y; any rows ≥ 1, 1 ≤ cols ≤ 512."""
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


def run(*args, kernel=softmax_kernel) -> torch.Tensor:
    kernel[None, block_dim(*args)](*args)
    return args[1]
