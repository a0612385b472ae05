"""Kernel factories with their tiling as parameters, for sweeps and autotuning.

`make_add(tile_rows, tile_cols, depth, blocks)` is the vector add of `vector_add` with the tile
shape and the buffer depth free; `make_matmul(tile_m, tile_n, depth, blocks)` is the cube
matmul of `matmul` (K = 128 per step, a K loop over the whole reduction) with the output tile
and the depth of every ring free. Both return `(kernel, block_dim)`, the form
`pypto_lab.sweep` takes. Some combinations do not fit the on-chip buffers (a depth-3 add of
128×128 FP16 tiles needs 288 KiB of the 248 KiB UB; a 256-wide right operand needs 128 KiB of
the 64 KiB L0B): they fail to compile with `InvalidTile`, which a sweep records as an invalid
point. Module-level functions, so Ray and Dask workers can import them.
"""
from __future__ import annotations

import functools

import torch

import pypto_pro.language as pl

TARGETS = ("vector", "cube")
KERNEL_TYPE = "aiv"
RTOL, ATOL = 1e-2, 1e-2
K_STEP = 128


@functools.lru_cache(maxsize=None)
def _add_kernel(tile_rows: int, tile_cols: int, depth: int):
    tile_t = pl.TileType([tile_rows, tile_cols], pl.DT_FP16)
    size = tile_rows * tile_cols * 2
    x_ids, y_ids, z_ids = (list(range(base, base + depth)) for base in (0, 8, 16))
    y_base, z_base = depth * size, 2 * depth * size

    @pl.jit(arch="a5", name=f"add_{tile_rows}x{tile_cols}_d{depth}")
    def add_tiled(x: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP16],
                  y: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP16],
                  z: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP16]):
        with pl.section_vector():
            xs = pl.make_tile_group(type=tile_t, addrs=0, mutex_ids=x_ids)
            ys = pl.make_tile_group(type=tile_t, addrs=y_base, mutex_ids=y_ids)
            zs = pl.make_tile_group(type=tile_t, addrs=z_base, mutex_ids=z_ids)
            mt = x.shape[0] // tile_rows
            nt = x.shape[1] // tile_cols
            for t in pl.range(pl.get_block_idx(), mt * nt, pl.get_block_num()):
                i = t // nt
                j = t % nt
                a = xs.next()
                b = ys.next()
                c = zs.next()
                pl.load_tile(a, x, [i, j])
                pl.load_tile(b, y, [i, j])
                pl.add(c, a, b)
                pl.store_tile(z, c, [i, j])

    return add_tiled


def make_add(tile_rows: int = 128, tile_cols: int = 128, depth: int = 2, blocks: int = 8):
    """(z = x + y kernel with [tile_rows, tile_cols] FP16 tiles and `depth` slots, blocks)."""
    return _add_kernel(tile_rows, tile_cols, depth), blocks


def add_inputs(m: int = 1024, n: int = 1024, seed: int = 0, **_params):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(m, n, generator=g).to(torch.float16)
    y = torch.randn(m, n, generator=g).to(torch.float16)
    return x, y, torch.zeros(m, n, dtype=torch.float16)


def add_reference(x: torch.Tensor, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    return x + y


@functools.lru_cache(maxsize=None)
def _matmul_kernel(tile_m: int, tile_n: int, depth: int):
    a_l1 = pl.TileType([tile_m, K_STEP], pl.DT_FP16, pl.MemorySpace.Mat)
    b_l1 = pl.TileType([K_STEP, tile_n], pl.DT_FP16, pl.MemorySpace.Mat)
    a_l0 = pl.TileType([tile_m, K_STEP], pl.DT_FP16, pl.MemorySpace.Left)
    b_l0 = pl.TileType([K_STEP, tile_n], pl.DT_FP16, pl.MemorySpace.Right)
    c_l0 = pl.TileType([tile_m, tile_n], pl.DT_FP32, pl.MemorySpace.Acc)
    a_bytes = tile_m * K_STEP * 2
    b_base = depth * a_bytes
    ids = [list(range(base, base + depth)) for base in (0, 4, 8, 12)]

    @pl.jit(arch="a5", name=f"matmul_{tile_m}x{tile_n}_d{depth}")
    def matmul_tiled(a: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP16],
                     b: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP16],
                     out: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP32]):
        with pl.section_cube():
            a1s = pl.make_tile_group(type=a_l1, addrs=0, mutex_ids=ids[0])
            b1s = pl.make_tile_group(type=b_l1, addrs=b_base, mutex_ids=ids[1])
            lefts = pl.make_tile_group(type=a_l0, addrs=0, mutex_ids=ids[2])
            rights = pl.make_tile_group(type=b_l0, addrs=0, mutex_ids=ids[3])
            acc = pl.make_tile_group(type=c_l0, addrs=0, mutex_ids=[16, 17])
            mt = a.shape[0] // tile_m
            nt = b.shape[1] // tile_n
            kt = a.shape[1] // K_STEP
            for t in pl.range(pl.get_block_idx(), mt * nt, pl.get_block_num()):
                i = t // nt
                j = t % nt
                c = acc.next()
                for k in pl.range(kt):
                    a1 = a1s.next()
                    pl.load_tile(a1, a, [i, k])
                    b1 = b1s.next()
                    pl.load_tile(b1, b, [k, j])
                    a0 = lefts.next()
                    pl.move(a0, a1)
                    b0 = rights.next()
                    pl.move(b0, b1)
                    if k == 0:
                        pl.matmul(c, a0, b0)
                    else:
                        pl.matmul_acc(c, c, a0, b0)
                pl.store_tile(out, c, [i, j])

    return matmul_tiled


def make_matmul(tile_m: int = 128, tile_n: int = 128, depth: int = 2, blocks: int = 8):
    """(out = a @ b kernel, FP16 in, FP32 out, [tile_m, tile_n] output tiles, blocks)."""
    return _matmul_kernel(tile_m, tile_n, depth), blocks


def matmul_inputs(m: int = 512, n: int = 512, k: int = 256, seed: int = 0, **_params):
    g = torch.Generator().manual_seed(seed)
    a = (torch.randn(m, k, generator=g) / 4).to(torch.float16)
    b = (torch.randn(k, n, generator=g) / 4).to(torch.float16)
    return a, b, torch.zeros(m, n, dtype=torch.float32)


def matmul_reference(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    return a.float() @ b.float()
