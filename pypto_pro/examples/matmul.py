"""Matmul on the cube (spec §6.2 walkthrough 4).

Teaches: a cube-only kernel (`pl.section_cube()` → AIC binary) and the cube data path
GM ND → L1 (`Mat`, NZ, `pl.load_tile` on MTE2) → L0A `Left` / L0B `Right` (`pl.move` on MTE1,
NZ → ZN for the right operand) → L0C `Acc` (`pl.matmul` on M) → GM ND (`pl.store_tile` through
the fixpipe, FIX). Every buffer is a tile group with mutex ids, so auto_mutex orders all
MTE2/MTE1/M/FIX hazards and the loads of the next tile overlap the matmul of the current one:

* L1: A ring 4×[128,128] FP16 at 0 (ids 0, 1, 10, 11), B ring at 0x20000 (ids 2, 3, 12, 13)
  — 256 KiB of the 512 KiB L1;
* L0A: 2 slots at 0 (ids 4, 5) = the whole 64 KiB; L0B: 2 slots at 0 (ids 6, 7);
* L0C: 2×[128,128] FP32 at 0 (ids 8, 9) = 128 KiB of 256 KiB.

Row tiles of the output are split over the cores; each core walks the column tiles.
`matmul_reuse_a_kernel` is the variant of the 8k example: the A tile is loaded once per row of
output tiles and reused through `current()`, the per-tile work sits in plain Python helpers
(inlined by the parser) and the result is converted to FP16 by the fixpipe.
"""
from __future__ import annotations

import torch

import pypto_pro.language as pl

TARGETS = ("cube",)
KERNEL_TYPE = "aic"
RTOL, ATOL = 1e-2, 1e-2

T = 128  # tile edge: M, N and K blocks are all 128
K = 128
A_L1 = pl.TileType([T, K], pl.DT_FP16, pl.MemorySpace.Mat)  # NZ by default
B_L1 = pl.TileType([K, T], pl.DT_FP16, pl.MemorySpace.Mat)
A_L0 = pl.TileType([T, K], pl.DT_FP16, pl.MemorySpace.Left)  # NZ
B_L0 = pl.TileType([K, T], pl.DT_FP16, pl.MemorySpace.Right)  # ZN
C_L0 = pl.TileType([T, T], pl.DT_FP32, pl.MemorySpace.Acc)


@pl.jit(arch="a5")
def matmul_kernel(a: pl.Tensor[[pl.DYNAMIC, K], pl.DT_FP16],
                  b: pl.Tensor[[K, pl.DYNAMIC], pl.DT_FP16],
                  out: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP32]):
    with pl.section_cube():
        a_l1 = pl.make_tile_group(type=A_L1, addrs=0x00000, mutex_ids=[0, 1, 10, 11])
        b_l1 = pl.make_tile_group(type=B_L1, addrs=0x20000, mutex_ids=[2, 3, 12, 13])
        left = pl.make_tile_group(type=A_L0, addrs=0x0, mutex_ids=[4, 5])
        right = pl.make_tile_group(type=B_L0, addrs=0x0, mutex_ids=[6, 7])
        acc = pl.make_tile_group(type=C_L0, addrs=0x0, mutex_ids=[8, 9])
        m_tiles = a.shape[0] // T
        n_tiles = b.shape[1] // T
        for i in pl.range(pl.get_block_idx(), m_tiles, pl.get_block_num()):
            for j in pl.range(n_tiles):
                a1 = a_l1.next()
                pl.load_tile(a1, a, [i, 0])
                b1 = b_l1.next()
                pl.load_tile(b1, b, [0, j])
                a0 = left.next()
                pl.move(a0, a1)
                b0 = right.next()
                pl.move(b0, b1)
                c0 = acc.next()
                pl.matmul(c0, a0, b0)
                pl.store_tile(out, c0, [i, j])


def _multiply(b, b_l1, right, acc, a0, j):
    """One output tile: bring B tile j to L0B and multiply with the resident A tile."""
    b1 = b_l1.next()
    pl.load_tile(b1, b, [0, j])
    b0 = right.next()
    pl.move(b0, b1)
    c0 = acc.next()
    pl.matmul(c0, a0, b0)
    return c0


@pl.jit(arch="a5")
def matmul_reuse_a_kernel(a: pl.Tensor[[pl.DYNAMIC, K], pl.DT_FP16],
                          b: pl.Tensor[[K, pl.DYNAMIC], pl.DT_FP16],
                          out: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP16]):
    with pl.section_cube():
        a_l1 = pl.make_tile_group(type=A_L1, addrs=0x00000, mutex_ids=[0, 1])
        b_l1 = pl.make_tile_group(type=B_L1, addrs=0x20000, mutex_ids=[2, 3, 12, 13])
        left = pl.make_tile_group(type=A_L0, addrs=0x0, mutex_ids=[4, 5])
        right = pl.make_tile_group(type=B_L0, addrs=0x0, mutex_ids=[6, 7])
        acc = pl.make_tile_group(type=C_L0, addrs=0x0, mutex_ids=[8, 9])
        m_tiles = a.shape[0] // T
        n_tiles = b.shape[1] // T
        for i in pl.range(pl.get_block_idx(), m_tiles, pl.get_block_num()):
            pl.load_tile(a_l1.next(), a, [i, 0])
            pl.move(left.next(), a_l1.current())
            for j in pl.range(n_tiles):
                c0 = _multiply(b, b_l1, right, acc, left.current(), j)
                pl.store_tile(out, c0, [i, j])  # FP32 L0C → FP16 GM in the fixpipe


KERNELS = {"matmul_kernel": matmul_kernel, "matmul_reuse_a_kernel": matmul_reuse_a_kernel}


def make_inputs(m: int = 256, n: int = 256, seed: int = 0, out_dtype=torch.float32):
    """a [m, 128], b [128, n] FP16 and a zero out [m, n]; m and n multiples of 128.
    Pass `out_dtype=torch.float16` for `matmul_reuse_a_kernel`."""
    if m % T or n % T:
        raise ValueError(f"m and n must be multiples of {T}, got {m}x{n}")
    g = torch.Generator().manual_seed(seed)
    a = (torch.randn(m, K, generator=g) / 4).to(torch.float16)
    b = (torch.randn(K, n, generator=g) / 4).to(torch.float16)
    return a, b, torch.zeros(m, n, dtype=out_dtype)


def reference(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    c = a.float() @ b.float()
    return c if out is None else c.to(out.dtype)


def block_dim(a: torch.Tensor, *rest) -> int:
    """One block per row of output tiles, at most 32 (the AIC count of a 950)."""
    return max(1, min(32, a.shape[0] // T))


def run(*args, kernel=matmul_kernel) -> torch.Tensor:
    kernel[None, block_dim(*args)](*args)
    return args[2]
