"""Flash attention for any KV length: the last KV tile is a tail, handled with runtime valid
shapes on both cores (the tail handling of the CV-fused walkthrough, applied to flash
attention).

O = softmax(Q·Kᵀ/√d)·V for Q [Sq, 128] (Sq a multiple of 128) and K, V [Skv, 128] with any
Skv ≥ 1, FP16. The cross-core protocol is that of `flash_attention`; what changes is that
every tile a KV tile flows through is declared with `valid_shape=[-1, -1]` (and the L0 / Acc
tiles with `compact=1`, so the L1 → L0 moves and the matmul use the current valid extent) and
gets its extent with `pl.set_validshape` per KV tile:

* cube: Kᵀ [128, vk] loaded (DN: `order=[1, 0]` into a ZN L1 tile) and moved to L0B,
  S = Q·Kᵀ into an Acc tile of [128, vk], P [128, vk] from L1 to L0A, V [vk, 128] to L0B: the
  second matmul sums over the vk valid KV positions only;
* vector: the S rows of this AIV are [64, vk], so the row max, exp, row sum and the FP16 P it
  inserts into the cube's L1 cover the valid columns only — nothing past the end of K is read
  or contributes, without padding or masking.

The hand-offs are `flash_attention`'s tail helpers, given the valid extent
(`fa.send_s_tail(s_buf, sa, vk)`, `fa.take_p_tail(..., vk)`, `fa.take_s_tail(..., vk)`).

vk = min(128, Skv − 128·ki) is 128 except on the last KV tile. Skv < 128 (a single tail tile)
works the same way.

Budgets: those of `flash_attention` (the same buffers, runtime valid shapes).
"""
from __future__ import annotations

import torch

import pypto_pro.language as pl

from . import flash_attention as fa

TARGETS = ("cube", "vector")
KERNEL_TYPE = "mix"
RTOL, ATOL = fa.RTOL, fa.ATOL
TS, TKV, D, HALF, SCALE = fa.TS, fa.TKV, fa.D, fa.HALF, fa.SCALE
F16, F32, MAT = pl.DT_FP16, pl.DT_FP32, pl.MemorySpace.Mat
DYNAMIC_VALID = [-1, -1]

# tiles a KV tile flows through: valid extent set per KV tile
S_UB = pl.TileType([HALF, TKV], F32, valid_shape=DYNAMIC_VALID)
P_L1 = pl.TileType([TS, TKV], F16, MAT, valid_shape=DYNAMIC_VALID)
KT_L1 = pl.TileType([D, TKV], F16, MAT, layout=pl.ZN, valid_shape=DYNAMIC_VALID)
V_L1 = pl.TileType([TKV, D], F16, MAT, valid_shape=DYNAMIC_VALID)
P_LEFT = pl.TileType([TS, TKV], F16, pl.MemorySpace.Left, valid_shape=DYNAMIC_VALID, compact=1)
RIGHT = pl.TileType([128, 128], F16, pl.MemorySpace.Right, valid_shape=DYNAMIC_VALID,
                    compact=1)
S_ACC = pl.TileType([TS, TKV], F32, pl.MemorySpace.Acc, valid_shape=DYNAMIC_VALID, compact=1)
P_UB = pl.TileType([HALF, TKV], F32, valid_shape=DYNAMIC_VALID)
P16_UB = pl.TileType([HALF, TKV], F16, valid_shape=DYNAMIC_VALID)


@pl.jit(arch="a5")
def flash_attention_tail_kernel(q: pl.Tensor[[pl.DYNAMIC, D], pl.DT_FP16],
                                k: pl.Tensor[[pl.DYNAMIC, D], pl.DT_FP16],
                                v: pl.Tensor[[pl.DYNAMIC, D], pl.DT_FP16],
                                o: pl.Tensor[[pl.DYNAMIC, D], pl.DT_FP16]):
    s_buf = pl.make_tile_group(type=S_UB, addrs=0x00000, depth=fa.S_SLOTS)
    pv_buf = pl.make_tile_group(type=fa.O_UB, addrs=0x10000, depth=1)
    p_buf = pl.make_tile_group(type=P_L1, addrs=0x28000, depth=1)
    skv = k.shape[0]
    sq_tiles = q.shape[0] // TS
    kv_tiles = (skv + TKV - 1) // TKV
    cores = pl.get_block_num()
    core = pl.get_block_idx() // pl.get_subblock_num()

    with pl.section_cube():
        q_l1 = pl.make_tile_group(type=fa.Q_L1, addrs=0x00000, mutex_ids=[0])
        k_l1 = pl.make_tile_group(type=KT_L1, addrs=0x08000, mutex_ids=[1, 2])
        v_l1 = pl.make_tile_group(type=V_L1, addrs=0x18000, mutex_ids=[3, 4])
        q_left = pl.make_tile_group(type=fa.LEFT, addrs=0x0000, mutex_ids=[5])
        p_left = pl.make_tile_group(type=P_LEFT, addrs=0x8000, mutex_ids=[6])
        k_right = pl.make_tile_group(type=RIGHT, addrs=0x0000, mutex_ids=[7])
        v_right = pl.make_tile_group(type=RIGHT, addrs=0x8000, mutex_ids=[8])
        s_acc = pl.make_tile_group(type=S_ACC, addrs=0x00000, mutex_ids=[9])
        o_acc = pl.make_tile_group(type=fa.ACC, addrs=0x10000, mutex_ids=[10])
        pl.system.set_cross_core(pipe=fa.MTE1, event_id=fa.P_FREE)
        for qi in pl.range(core, sq_tiles, cores):
            qt = q_l1.next()
            pl.load_tile(qt, q, [qi, 0])
            ql = q_left.next()
            pl.move(ql, qt)
            for ki in pl.range(kv_tiles):
                vk = pl.min(TKV, skv - ki * TKV)  # valid KV rows of this tile
                kt = k_l1.next()
                pl.set_validshape(kt, [D, vk])
                pl.load(kt, k, [ki * TKV, 0], order=[1, 0])
                kr = k_right.next()
                pl.set_validshape(kr, [D, vk])
                pl.move(kr, kt)
                sa = s_acc.next()
                pl.set_validshape(sa, [TS, vk])
                pl.matmul(sa, ql, kr)
                fa.send_s_tail(s_buf, sa, vk)
                vt = v_l1.next()
                pl.set_validshape(vt, [vk, D])
                pl.load(vt, v, [ki * TKV, 0])
                vr = v_right.next()
                pl.set_validshape(vr, [vk, D])
                pl.move(vr, vt)
                pll = fa.take_p_tail(p_buf, p_left, vk)
                oa = o_acc.next()
                pl.matmul(oa, pll, vr)  # sums over the vk valid KV positions
                fa.send_pv(pv_buf, oa)
        fa.drain_cube()

    with pl.section_vector():
        st = fa.vector_state(P_UB, P16_UB)
        sub = pl.get_subblock_idx()
        fa.prefire_vector()
        for qi in pl.range(core, sq_tiles, cores):
            fa.start_rows(st)
            for ki in pl.range(kv_tiles):
                s = fa.take_s_tail(s_buf, st, pl.min(TKV, skv - ki * TKV))
                pl.mul(s, s, SCALE)
                fa.online_softmax(s, st)  # row max and sum over the valid columns only
                fa.send_p(st, p_buf, sub)
                fa.add_pv(st, pv_buf)
            fa.store_rows(st, o, qi * TS + sub * HALF)
        fa.drain_vector()


KERNELS = {"flash_attention_tail_kernel": flash_attention_tail_kernel}


def make_inputs(sq: int = 128, skv: int = 200, seed: int = 0):
    """q [sq, 128] (sq a multiple of 128), k and v [skv, 128] (any skv ≥ 1) FP16, a zero o."""
    if sq % TS or sq <= 0 or skv <= 0:
        raise ValueError(f"sq must be a positive multiple of 128 and skv positive, got {sq}, "
                         f"{skv}")
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(sq, D, generator=g).to(torch.float16)
    k = torch.randn(skv, D, generator=g).to(torch.float16)
    v = torch.randn(skv, D, generator=g).to(torch.float16)
    return q, k, v, torch.zeros(sq, D, dtype=torch.float16)


reference = fa.reference
block_dim = fa.block_dim


def run(*args, kernel=flash_attention_tail_kernel) -> torch.Tensor:
    kernel[None, block_dim(*args)](*args)
    return args[3]
