"""Vector add, SIMD, double buffered (spec §6.2 walkthrough 2).

Teaches: `pl.make_tile_group` rings of UB tiles with mutex ids, `g.next()` to rotate through the
slots, `pl.load_tile` / `pl.add` / `pl.store_tile` on 128×128 FP16 tiles, and the idiomatic SPMD
split of the row tiles over the cores (`pl.range(get_block_idx(), mt, get_block_num())`).

With `auto_mutex` (the default) every load is bracketed by an MTE2 get/release of its slot's
id, the add by V get/release of the three ids and the store by MTE3 get/release — so with two
slots per group the loads of tile t+1 overlap the add and store of tile t.

`make_add_kernel(depth)` builds the same source with `depth` slots per group: `add_kernel`
(depth 2, ids {0,1}, {2,3}, {30,31}: 192 KiB of the 248 KiB UB) and `add_kernel_single`
(depth 1, ids {0}, {2}, {30}: fully serial) so benchmarks can compare the two.
"""
from __future__ import annotations

import torch

import pypto_pro.language as pl

TARGETS = ("vector",)
KERNEL_TYPE = "aiv"
RTOL, ATOL = 1e-3, 1e-3

TILE = 128
TILE_T = pl.TileType([TILE, TILE], pl.DT_FP16)  # 32 KiB of UB per slot
# base address of each group: the slots of one group are consecutive 32 KiB blocks
X_BASE, Y_BASE, Z_BASE = 0x00000, 0x10000, 0x20000
X_IDS, Y_IDS, Z_IDS = [0, 1], [2, 3], [30, 31]


def make_add_kernel(depth: int = 2):
    """`z = x + y` with `depth` slots per tile group (1 or 2)."""
    if depth not in (1, 2):
        raise ValueError(f"depth must be 1 or 2, got {depth}")
    x_ids, y_ids, z_ids = X_IDS[:depth], Y_IDS[:depth], Z_IDS[:depth]

    @pl.jit(arch="a5", name=f"add_kernel_d{depth}")
    def add_kernel(x: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP16],
                   y: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP16],
                   z: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP16]):
        with pl.section_vector():
            xs = pl.make_tile_group(type=TILE_T, addrs=X_BASE, mutex_ids=x_ids)
            ys = pl.make_tile_group(type=TILE_T, addrs=Y_BASE, mutex_ids=y_ids)
            zs = pl.make_tile_group(type=TILE_T, addrs=Z_BASE, mutex_ids=z_ids)
            num = pl.get_block_num()
            cid = pl.get_block_idx()
            mt = x.shape[0] // TILE
            nt = x.shape[1] // TILE
            for i in pl.range(cid, mt, num):
                for j in pl.range(nt):
                    a = xs.next()
                    b = ys.next()
                    c = zs.next()
                    pl.load_tile(a, x, [i, j])
                    pl.load_tile(b, y, [i, j])
                    pl.add(c, a, b)
                    pl.store_tile(z, c, [i, j])

    return add_kernel


add_kernel = make_add_kernel(2)
add_kernel_single = make_add_kernel(1)

KERNELS = {"add_kernel": add_kernel, "add_kernel_single": add_kernel_single}


def make_inputs(m: int = 512, n: int = 256, seed: int = 0):
    """x, y random FP16 [m, n] and a zero z; m and n must be multiples of 128."""
    if m % TILE or n % TILE:
        raise ValueError(f"m and n must be multiples of {TILE}, got {m}x{n}")
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(m, n, generator=g).to(torch.float16)
    y = torch.randn(m, n, generator=g).to(torch.float16)
    return x, y, torch.zeros(m, n, dtype=torch.float16)


def reference(x: torch.Tensor, y: torch.Tensor, z: torch.Tensor | None = None) -> torch.Tensor:
    return x + y


def block_dim(x: torch.Tensor, *rest) -> int:
    """One block per row of tiles (`[None, M // 128]`)."""
    return max(1, x.shape[0] // TILE)


def run(*args, kernel=add_kernel) -> torch.Tensor:
    kernel[None, block_dim(*args)](*args)
    return args[2]
