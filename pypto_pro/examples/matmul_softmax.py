"""Cube + vector fused: softmax(A·B) through a GM workspace (the CV quick start, spec §6.1/§6.2).

Teaches: a mix kernel (a `section_cube` and a `section_vector` → 1 AIC + 2 AIV per block) and the
simplest cross-core handshake. The cube computes S = A·B into the GM workspace `ws`, one 64-column
block at a time (L1 → L0A/L0B → L0C → GM through the fixpipe), then raises one cross-core event
with `set_cross_core(pipe=FIX, event_id=0)`: FIX is in order, so the event fires after the last
store. Each AIV waits for it with `wait_cross_core(pipe=MTE2, event_id=0)` — its first GM read —
and normalises its own half of the rows (`get_subblock_idx()` picks rows 0..31 or 32..63) in
three passes over the workspace: running row max, sum of exp, then exp / sum stored to `out`.

The vector side uses the declared reduction API (`pl.maximum(..., dim=0)`, `pl.sum`,
`pl.expand_sub`, `pl.expand_div`). M = 64 and K = 128 are fixed, N is dynamic (a multiple of 64).
"""
from __future__ import annotations

import torch

import pypto_pro.language as pl

TARGETS = ("cube", "vector")
KERNEL_TYPE = "mix"
RTOL, ATOL = 1e-3, 1e-4

M, K, BN = 64, 128, 64
HALF = M // 2  # rows per AIV
NEG_BIG = -3.0e38

A_L1 = pl.TileType([M, K], pl.DT_FP16, pl.MemorySpace.Mat)  # 16 KiB
B_L1 = pl.TileType([K, BN], pl.DT_FP16, pl.MemorySpace.Mat)  # 16 KiB
A_L0 = pl.TileType([M, K], pl.DT_FP16, pl.MemorySpace.Left)
B_L0 = pl.TileType([K, BN], pl.DT_FP16, pl.MemorySpace.Right)
C_L0 = pl.TileType([M, BN], pl.DT_FP32, pl.MemorySpace.Acc)  # 16 KiB
S_UB = pl.TileType([HALF, BN], pl.DT_FP32)  # 8 KiB
RED_UB = pl.TileType([HALF, 1], pl.DT_FP32, layout=pl.DN)  # 128 B


@pl.jit(arch="a5")
def matmul_softmax_kernel(a: pl.Tensor[[M, K], pl.DT_FP16],
                          b: pl.Tensor[[K, pl.DYNAMIC], pl.DT_FP16],
                          ws: pl.Tensor[[M, pl.DYNAMIC], pl.DT_FP32],
                          out: pl.Tensor[[M, pl.DYNAMIC], pl.DT_FP32]):
    n_blocks = b.shape[1] // BN
    with pl.section_cube():
        a_l1 = pl.make_tile_group(type=A_L1, addrs=0x0000, mutex_ids=[0])
        b_l1 = pl.make_tile_group(type=B_L1, addrs=0x4000, mutex_ids=[1, 2])
        left = pl.make_tile_group(type=A_L0, addrs=0x0, mutex_ids=[3])
        right = pl.make_tile_group(type=B_L0, addrs=0x0, mutex_ids=[4, 5])
        acc = pl.make_tile_group(type=C_L0, addrs=0x0, mutex_ids=[6, 7])
        a1 = a_l1.next()
        pl.load(a1, a, [0, 0])
        a0 = left.next()
        pl.move(a0, a1)
        for j in pl.range(n_blocks):
            b1 = b_l1.next()
            pl.load(b1, b, [0, j * BN])
            b0 = right.next()
            pl.move(b0, b1)
            c0 = acc.next()
            pl.matmul(c0, a0, b0)
            pl.store(ws, c0, [0, j * BN])
        pl.system.set_cross_core(pipe=pl.PipeType.FIX, event_id=0)

    with pl.section_vector():
        s_ring = pl.make_tile_group(type=S_UB, addrs=0x0000, mutex_ids=[0, 1])
        e_ring = pl.make_tile_group(type=S_UB, addrs=0x4000, mutex_ids=[2, 3])
        p = pl.make_tile(S_UB, addr=0x8000)
        tmp = pl.make_tile(S_UB, addr=0xA000)
        row_max = pl.make_tile(RED_UB, addr=0xC000)
        row_sum = pl.make_tile(RED_UB, addr=0xC100)
        blk = pl.make_tile(RED_UB, addr=0xC200)
        row0 = pl.get_subblock_idx() * HALF
        pl.system.wait_cross_core(pipe=pl.PipeType.MTE2, event_id=0)
        pl.expands(row_max, NEG_BIG)
        pl.expands(row_sum, 0.0)
        for j in pl.range(n_blocks):  # pass 1: running row max
            s = s_ring.next()
            pl.load(s, ws, [row0, j * BN])
            pl.maximum(blk, s, tmp, dim=0)
            pl.maximum(row_max, row_max, blk)
        for j in pl.range(n_blocks):  # pass 2: sum of exp(s - max)
            s = s_ring.next()
            pl.load(s, ws, [row0, j * BN])
            pl.expand_sub(p, s, row_max, dim=0)
            pl.exp(p, p)
            pl.sum(blk, p, tmp, dim=0)
            pl.add(row_sum, row_sum, blk)
        for j in pl.range(n_blocks):  # pass 3: normalise and store
            s = s_ring.next()
            e = e_ring.next()
            pl.load(s, ws, [row0, j * BN])
            pl.expand_sub(e, s, row_max, dim=0)
            pl.exp(e, e)
            pl.expand_div(e, e, row_sum, dim=0)
            pl.store(out, e, [row0, j * BN])


KERNELS = {"matmul_softmax_kernel": matmul_softmax_kernel}


def make_inputs(n: int = 256, seed: int = 0):
    """a [64, 128], b [128, n] FP16; workspace and out [64, n] FP32 zero-filled."""
    if n % BN or n <= 0:
        raise ValueError(f"n must be a positive multiple of {BN}, got {n}")
    g = torch.Generator().manual_seed(seed)
    a = (torch.randn(M, K, generator=g) / 4).to(torch.float16)
    b = (torch.randn(K, n, generator=g) / 4).to(torch.float16)
    return a, b, torch.zeros(M, n, dtype=torch.float32), torch.zeros(M, n, dtype=torch.float32)


def reference(a: torch.Tensor, b: torch.Tensor, ws=None, out=None) -> torch.Tensor:
    return torch.softmax(a.float() @ b.float(), dim=-1)


def block_dim(*args) -> int:
    return 1


def run(*args, kernel=matmul_softmax_kernel) -> torch.Tensor:
    kernel(*args)
    return args[3]
