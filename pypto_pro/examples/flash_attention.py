"""Flash attention with hand-written cube ↔ vector synchronisation (spec §6.2 walkthrough 6,
in the style of its manual-sync predecessors).

O = softmax(Q·Kᵀ/√d)·V for Q [Sq, 128], K and V [Skv, 128], FP16 in and out. Each block (1 AIC +
2 AIVs) takes every `get_block_num()`-th 128-row Q tile and walks the KV tiles of 128 rows:

* cube: S = Q·Kᵀ (Kᵀ loaded transposed, `order=[1, 0]` into a ZN L1 tile) → L0C →
  `move(s_slot, acc, acc_to_vec_mode=DualModeSplitM)`: each AIV's UB receives its 64 rows of S;
* vector (each AIV, 64 rows): online softmax — scale, row max, running max, exp correction,
  exp, row sum, running sum — then P cast to FP16 and `pl.insert`ed into the cube's L1 at row
  64·subblock;
* cube: O_t = P·V → L0C → `move(pv, acc, acc_to_vec_mode=DualModeSplitM)` to the AIVs;
* vector: O = O·correction + O_t; after the last KV tile O / rowsum is cast and stored.

Teaches the manual protocol: the cross-core buffers (S ring of two slots and the P·V slot in UB,
the P slot in L1) are tile groups declared *outside* the sections so both targets see the same
placement and advance the same cursors; every hand-off is one `set_cross_core` by the producer
on the pipe that wrote the data and one `wait_cross_core` by the consumer on the pipe that reads
it, with a distinct id per direction: S ready 0 (cube→vec) / S free 1 (vec→cube), P ready 2
(vec→cube) / P free 3 (cube→vec), O ready 4 (cube→vec) / O free 5 (vec→cube). The "free"
events are counting permits: the consumer pre-fires one per slot before the loop and the
producer drains the leftovers after it, so every set has its wait. Cube-local buffers are
tile groups with mutex ids (auto_mutex orders MTE2/MTE1/M/FIX); vector-local buffers that pass
between V and MTE3 are ordered with explicit `sync_src`/`sync_dst` flags (the same
pre-fire / wait / set / drain pattern for the write-after-read direction).

Budgets: L1 192 KiB, L0A 64 KiB, L0B 64 KiB, L0C 128 KiB, UB ≈ 194 KiB per AIV.
"""
from __future__ import annotations

import math

import torch

import pypto_pro.language as pl

TARGETS = ("cube", "vector")
KERNEL_TYPE = "mix"
RTOL, ATOL = 5e-3, 5e-3

TS = 128  # Q rows per tile
TKV = 128  # K/V rows per tile
D = 128  # head dim
HALF = TS // 2  # Q rows per AIV
SCALE = 1.0 / math.sqrt(D)
NEG_BIG = -3.0e38

FIX, MTE1, MTE2, MTE3, V = (pl.PipeType.FIX, pl.PipeType.MTE1, pl.PipeType.MTE2,
                            pl.PipeType.MTE3, pl.PipeType.V)
S_READY, S_FREE, P_READY, P_FREE, O_READY, O_FREE = 0, 1, 2, 3, 4, 5
S_SLOTS = 2

# cross-core buffers (declared outside the sections)
S_UB = pl.TileType([HALF, TKV], pl.DT_FP32)  # 32 KiB: this AIV's rows of S
O_UB = pl.TileType([HALF, D], pl.DT_FP32)  # 32 KiB: this AIV's rows of P·V
P_L1 = pl.TileType([TS, TKV], pl.DT_FP16, pl.MemorySpace.Mat)  # 32 KiB, NZ
# cube-local
Q_L1 = pl.TileType([TS, D], pl.DT_FP16, pl.MemorySpace.Mat)  # NZ
KT_L1 = pl.TileType([D, TKV], pl.DT_FP16, pl.MemorySpace.Mat, layout=pl.ZN)  # Kᵀ, transposed
V_L1 = pl.TileType([TKV, D], pl.DT_FP16, pl.MemorySpace.Mat)
LEFT = pl.TileType([TS, 128], pl.DT_FP16, pl.MemorySpace.Left)
RIGHT = pl.TileType([128, 128], pl.DT_FP16, pl.MemorySpace.Right)
ACC = pl.TileType([TS, 128], pl.DT_FP32, pl.MemorySpace.Acc)  # 64 KiB
# vector-local
P_UB = pl.TileType([HALF, TKV], pl.DT_FP32)
P16_UB = pl.TileType([HALF, TKV], pl.DT_FP16)  # 16 KiB
O16_UB = pl.TileType([HALF, D], pl.DT_FP16)
ROW_UB = pl.TileType([HALF, 1], pl.DT_FP32, layout=pl.DN)  # 256 B


@pl.jit(arch="a5")
def flash_attention_kernel(q: pl.Tensor[[pl.DYNAMIC, D], pl.DT_FP16],
                           k: pl.Tensor[[pl.DYNAMIC, D], pl.DT_FP16],
                           v: pl.Tensor[[pl.DYNAMIC, D], pl.DT_FP16],
                           o: pl.Tensor[[pl.DYNAMIC, D], pl.DT_FP16]):
    s_buf = pl.make_tile_group(type=S_UB, addrs=0x00000, depth=S_SLOTS)
    pv_buf = pl.make_tile_group(type=O_UB, addrs=0x10000, depth=1)
    p_buf = pl.make_tile_group(type=P_L1, addrs=0x28000, depth=1)
    sq_tiles = q.shape[0] // TS
    kv_tiles = k.shape[0] // TKV
    cores = pl.get_block_num()
    core = pl.get_block_idx() // pl.get_subblock_num()  # the block, on both targets

    with pl.section_cube():
        q_l1 = pl.make_tile_group(type=Q_L1, addrs=0x00000, mutex_ids=[0])
        k_l1 = pl.make_tile_group(type=KT_L1, addrs=0x08000, mutex_ids=[1, 2])
        v_l1 = pl.make_tile_group(type=V_L1, addrs=0x18000, mutex_ids=[3, 4])
        q_left = pl.make_tile_group(type=LEFT, addrs=0x0000, mutex_ids=[5])
        p_left = pl.make_tile_group(type=LEFT, addrs=0x8000, mutex_ids=[6])
        k_right = pl.make_tile_group(type=RIGHT, addrs=0x0000, mutex_ids=[7])
        v_right = pl.make_tile_group(type=RIGHT, addrs=0x8000, mutex_ids=[8])
        s_acc = pl.make_tile_group(type=ACC, addrs=0x00000, mutex_ids=[9])
        o_acc = pl.make_tile_group(type=ACC, addrs=0x10000, mutex_ids=[10])
        pl.system.set_cross_core(pipe=MTE1, event_id=P_FREE)  # the P slot starts free
        for qi in pl.range(core, sq_tiles, cores):
            qt = q_l1.next()
            pl.load_tile(qt, q, [qi, 0])
            ql = q_left.next()
            pl.move(ql, qt)
            for ki in pl.range(kv_tiles):
                # S = Q·Kᵀ → the AIVs
                kt = k_l1.next()
                pl.load(kt, k, [ki * TKV, 0], order=[1, 0])
                kr = k_right.next()
                pl.move(kr, kt)
                sa = s_acc.next()
                pl.matmul(sa, ql, kr)
                s_slot = s_buf.next()
                pl.system.wait_cross_core(pipe=FIX, event_id=S_FREE)
                pl.move(s_slot, sa, acc_to_vec_mode=pl.AccToVecMode.DualModeSplitM)
                pl.system.set_cross_core(pipe=FIX, event_id=S_READY)
                # O_t = P·V → the AIVs
                vt = v_l1.next()
                pl.load_tile(vt, v, [ki, 0])
                vr = v_right.next()
                pl.move(vr, vt)
                pm = p_buf.next()
                pll = p_left.next()
                pl.system.wait_cross_core(pipe=MTE1, event_id=P_READY)
                pl.move(pll, pm)
                pl.system.set_cross_core(pipe=MTE1, event_id=P_FREE)
                oa = o_acc.next()
                pl.matmul(oa, pll, vr)
                pv = pv_buf.next()
                pl.system.wait_cross_core(pipe=FIX, event_id=O_FREE)
                pl.move(pv, oa, acc_to_vec_mode=pl.AccToVecMode.DualModeSplitM)
                pl.system.set_cross_core(pipe=FIX, event_id=O_READY)
        # drain the permits the AIVs pre-fired
        for _ in pl.range(S_SLOTS):
            pl.system.wait_cross_core(pipe=FIX, event_id=S_FREE)
        pl.system.wait_cross_core(pipe=FIX, event_id=O_FREE)

    with pl.section_vector():
        p = pl.make_tile(P_UB, addr=0x18000)
        p16 = pl.make_tile(P16_UB, addr=0x20000)
        o_run = pl.make_tile(O_UB, addr=0x24000)
        o16 = pl.make_tile(O16_UB, addr=0x2C000)
        m_old = pl.make_tile(ROW_UB, addr=0x30000)
        m_new = pl.make_tile(ROW_UB, addr=0x30100)
        corr = pl.make_tile(ROW_UB, addr=0x30200)
        l_run = pl.make_tile(ROW_UB, addr=0x30300)
        l_blk = pl.make_tile(ROW_UB, addr=0x30400)
        sub = pl.get_subblock_idx()
        for _ in pl.range(S_SLOTS):
            pl.system.set_cross_core(pipe=V, event_id=S_FREE)  # every S slot starts free
        pl.system.set_cross_core(pipe=V, event_id=O_FREE)
        pl.system.sync_src(set_pipe=MTE3, wait_pipe=V, event_id=1)  # p16 starts free
        pl.system.sync_src(set_pipe=MTE3, wait_pipe=V, event_id=3)  # o16 starts free
        for qi in pl.range(core, sq_tiles, cores):
            pl.expands(m_old, NEG_BIG)
            pl.expands(l_run, 0.0)
            pl.expands(o_run, 0.0)
            for _ki in pl.range(kv_tiles):
                # online softmax on this AIV's 64 rows of S
                s = s_buf.next()
                pl.system.wait_cross_core(pipe=V, event_id=S_READY)
                pl.mul(s, s, SCALE)
                pl.row_max(m_new, s, p)
                pl.maximum(m_new, m_new, m_old)
                pl.sub(corr, m_old, m_new)
                pl.exp(corr, corr)  # exp(m_old − m_new): rescales what came before
                pl.move(m_old, m_new)
                pl.row_expand_sub(p, s, m_new)
                pl.exp(p, p)
                pl.row_sum(l_blk, p, s)  # the S slot is dead now: use it as scratch
                pl.system.set_cross_core(pipe=V, event_id=S_FREE)
                pl.mul(l_run, l_run, corr)
                pl.add(l_run, l_run, l_blk)
                # P (FP16) into the cube's L1, this AIV's half of the rows
                pl.system.sync_dst(set_pipe=MTE3, wait_pipe=V, event_id=1)
                pl.cast(p16, p)
                pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=0)
                pl.system.sync_dst(set_pipe=V, wait_pipe=MTE3, event_id=0)
                pm = p_buf.next()
                pl.system.wait_cross_core(pipe=MTE3, event_id=P_FREE)
                pl.insert(pm, p16, [sub * HALF, 0])
                pl.system.set_cross_core(pipe=MTE3, event_id=P_READY)
                pl.system.sync_src(set_pipe=MTE3, wait_pipe=V, event_id=1)
                # running O = O · corr + P·V
                pv = pv_buf.next()
                pl.system.wait_cross_core(pipe=V, event_id=O_READY)
                pl.row_expand_mul(o_run, o_run, corr)
                pl.add(o_run, o_run, pv)
                pl.system.set_cross_core(pipe=V, event_id=O_FREE)
            pl.row_expand_div(o_run, o_run, l_run)
            pl.system.sync_dst(set_pipe=MTE3, wait_pipe=V, event_id=3)
            pl.cast(o16, o_run)
            pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=2)
            pl.system.sync_dst(set_pipe=V, wait_pipe=MTE3, event_id=2)
            pl.store(o, o16, [qi * TS + sub * HALF, 0])
            pl.system.sync_src(set_pipe=MTE3, wait_pipe=V, event_id=3)
        pl.system.sync_dst(set_pipe=MTE3, wait_pipe=V, event_id=1)
        pl.system.sync_dst(set_pipe=MTE3, wait_pipe=V, event_id=3)
        pl.system.wait_cross_core(pipe=MTE3, event_id=P_FREE)  # the cube's pre-fired permit


KERNELS = {"flash_attention_kernel": flash_attention_kernel}


def make_inputs(sq: int = 256, skv: int = 256, seed: int = 0):
    """q [sq, 128], k and v [skv, 128] FP16 and a zero o; sq and skv multiples of 128."""
    if sq % TS or skv % TKV or sq <= 0 or skv <= 0:
        raise ValueError(f"sq and skv must be positive multiples of 128, got {sq}, {skv}")
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(sq, D, generator=g).to(torch.float16)
    k = torch.randn(skv, D, generator=g).to(torch.float16)
    v = torch.randn(skv, D, generator=g).to(torch.float16)
    return q, k, v, torch.zeros(sq, D, dtype=torch.float16)


def reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o=None) -> torch.Tensor:
    s = (q.float() @ k.float().T) * SCALE
    return (torch.softmax(s, dim=-1) @ v.float()).to(torch.float16)


def block_dim(q: torch.Tensor, *rest) -> int:
    return max(1, min(32, q.shape[0] // TS))


def run(*args, kernel=flash_attention_kernel) -> torch.Tensor:
    kernel[None, block_dim(*args)](*args)
    return args[3]
