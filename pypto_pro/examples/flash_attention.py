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

The hand-offs are small helpers (`send_s`, `take_p`, `send_pv` on the cube, `take_s`,
`online_softmax`, `send_p`, `add_pv`, `store_rows` on the vector side; the AIV's softmax tiles
are one `pl.make_tuple`), inlined where they are called; the BNSD and tail variants reuse them.

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


# ---------------------------------------------------------------- the hand-offs (inlined)


def send_s(s_buf, sa):
    """Cube: S (L0C) → the AIVs, 64 rows each, once the S ring has a free slot."""
    s_slot = s_buf.next()
    _send_s_slot(s_slot, sa)


def send_s_tail(s_buf, sa, valid_kv):
    """`send_s` for a KV tile with `valid_kv` valid columns."""
    s_slot = s_buf.next()
    pl.set_validshape(s_slot, [HALF, valid_kv])
    _send_s_slot(s_slot, sa)


def _send_s_slot(s_slot, sa):
    pl.system.wait_cross_core(pipe=FIX, event_id=S_FREE)
    pl.move(s_slot, sa, acc_to_vec_mode=pl.AccToVecMode.DualModeSplitM)
    pl.system.set_cross_core(pipe=FIX, event_id=S_READY)


def take_p(p_buf, p_left):
    """Cube: the AIVs' P (the L1 slot) into L0A, then the slot is free again."""
    pm = p_buf.next()
    pll = p_left.next()
    return _take_p_slot(pm, pll)


def take_p_tail(p_buf, p_left, valid_kv):
    """`take_p` for a KV tile with `valid_kv` valid columns."""
    pm = p_buf.next()
    pll = p_left.next()
    pl.set_validshape(pm, [TS, valid_kv])
    pl.set_validshape(pll, [TS, valid_kv])
    return _take_p_slot(pm, pll)


def _take_p_slot(pm, pll):
    pl.system.wait_cross_core(pipe=MTE1, event_id=P_READY)
    pl.move(pll, pm)
    pl.system.set_cross_core(pipe=MTE1, event_id=P_FREE)
    return pll


def send_pv(pv_buf, oa):
    """Cube: P·V (L0C) → the AIVs, 64 rows each."""
    pv = pv_buf.next()
    pl.system.wait_cross_core(pipe=FIX, event_id=O_FREE)
    pl.move(pv, oa, acc_to_vec_mode=pl.AccToVecMode.DualModeSplitM)
    pl.system.set_cross_core(pipe=FIX, event_id=O_READY)


def drain_cube():
    """Cube: take the permits the AIVs pre-fired and never used."""
    for _ in pl.range(S_SLOTS):
        pl.system.wait_cross_core(pipe=FIX, event_id=S_FREE)
    pl.system.wait_cross_core(pipe=FIX, event_id=O_FREE)


def vector_state(p_type=P_UB, p16_type=P16_UB):
    """Vector: the AIV's softmax tiles (P, FP16 P, running O, FP16 O, per-row state)."""
    p = pl.make_tile(p_type, addr=0x18000)
    p16 = pl.make_tile(p16_type, addr=0x20000)
    o_run = pl.make_tile(O_UB, addr=0x24000)
    o16 = pl.make_tile(O16_UB, addr=0x2C000)
    m_old = pl.make_tile(ROW_UB, addr=0x30000)
    m_new = pl.make_tile(ROW_UB, addr=0x30100)
    corr = pl.make_tile(ROW_UB, addr=0x30200)
    l_run = pl.make_tile(ROW_UB, addr=0x30300)
    l_blk = pl.make_tile(ROW_UB, addr=0x30400)
    return pl.make_tuple(p=p, p16=p16, o_run=o_run, o16=o16, m_old=m_old, m_new=m_new,
                         corr=corr, l_run=l_run, l_blk=l_blk)


def prefire_vector():
    """Vector: every S slot, the P·V slot and the FP16 tiles start free."""
    for _ in pl.range(S_SLOTS):
        pl.system.set_cross_core(pipe=V, event_id=S_FREE)
    pl.system.set_cross_core(pipe=V, event_id=O_FREE)
    pl.system.sync_src(set_pipe=MTE3, wait_pipe=V, event_id=1)  # p16 starts free
    pl.system.sync_src(set_pipe=MTE3, wait_pipe=V, event_id=3)  # o16 starts free


def start_rows(st):
    """Vector: a new Q tile: running max −∞, running sum and O zero."""
    pl.expands(st.m_old, NEG_BIG)
    pl.expands(st.l_run, 0.0)
    pl.expands(st.o_run, 0.0)


def take_s(s_buf):
    """Vector: this AIV's rows of S, once the cube sent them."""
    s = s_buf.next()
    pl.system.wait_cross_core(pipe=V, event_id=S_READY)
    return s


def take_s_tail(s_buf, st, valid_kv):
    """`take_s` for a KV tile with `valid_kv` valid columns (set before the wait)."""
    s = s_buf.next()
    pl.set_validshape(s, [HALF, valid_kv])
    pl.set_validshape(st.p, [HALF, valid_kv])
    pl.set_validshape(st.p16, [HALF, valid_kv])
    pl.system.wait_cross_core(pipe=V, event_id=S_READY)
    return s


def online_softmax(s, st):
    """Vector: P = exp(S − m_new) of the scaled S, the exp correction of what came before,
    the running max and sum; the S slot is free after the row sum."""
    pl.row_max(st.m_new, s, st.p)
    pl.maximum(st.m_new, st.m_new, st.m_old)
    pl.sub(st.corr, st.m_old, st.m_new)
    pl.exp(st.corr, st.corr)  # exp(m_old − m_new): rescales what came before
    pl.move(st.m_old, st.m_new)
    pl.row_expand_sub(st.p, s, st.m_new)
    pl.exp(st.p, st.p)
    pl.row_sum(st.l_blk, st.p, s)  # the S slot is dead now: use it as scratch
    pl.system.set_cross_core(pipe=V, event_id=S_FREE)
    pl.mul(st.l_run, st.l_run, st.corr)
    pl.add(st.l_run, st.l_run, st.l_blk)


def send_p(st, p_buf, sub):
    """Vector: P as FP16 into the cube's L1 slot, this AIV's half of the rows."""
    pl.system.sync_dst(set_pipe=MTE3, wait_pipe=V, event_id=1)
    pl.cast(st.p16, st.p)
    pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=0)
    pl.system.sync_dst(set_pipe=V, wait_pipe=MTE3, event_id=0)
    pm = p_buf.next()
    pl.system.wait_cross_core(pipe=MTE3, event_id=P_FREE)
    pl.insert(pm, st.p16, [sub * HALF, 0])
    pl.system.set_cross_core(pipe=MTE3, event_id=P_READY)
    pl.system.sync_src(set_pipe=MTE3, wait_pipe=V, event_id=1)


def add_pv(st, pv_buf):
    """Vector: running O = O · corr + P·V."""
    pv = pv_buf.next()
    pl.system.wait_cross_core(pipe=V, event_id=O_READY)
    pl.row_expand_mul(st.o_run, st.o_run, st.corr)
    pl.add(st.o_run, st.o_run, pv)
    pl.system.set_cross_core(pipe=V, event_id=O_FREE)


def store_rows(st, o, row):
    """Vector: O / rowsum as FP16 to rows `row`… of o."""
    pl.row_expand_div(st.o_run, st.o_run, st.l_run)
    pl.system.sync_dst(set_pipe=MTE3, wait_pipe=V, event_id=3)
    pl.cast(st.o16, st.o_run)
    pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=2)
    pl.system.sync_dst(set_pipe=V, wait_pipe=MTE3, event_id=2)
    pl.store(o, st.o16, [row, 0])
    pl.system.sync_src(set_pipe=MTE3, wait_pipe=V, event_id=3)


def drain_vector():
    """Vector: the FP16 tiles' last frees and the cube's pre-fired P permit."""
    pl.system.sync_dst(set_pipe=MTE3, wait_pipe=V, event_id=1)
    pl.system.sync_dst(set_pipe=MTE3, wait_pipe=V, event_id=3)
    pl.system.wait_cross_core(pipe=MTE3, event_id=P_FREE)


# ---------------------------------------------------------------- the kernel


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
                send_s(s_buf, sa)
                # O_t = P·V → the AIVs
                vt = v_l1.next()
                pl.load_tile(vt, v, [ki, 0])
                vr = v_right.next()
                pl.move(vr, vt)
                pll = take_p(p_buf, p_left)
                oa = o_acc.next()
                pl.matmul(oa, pll, vr)
                send_pv(pv_buf, oa)
        drain_cube()

    with pl.section_vector():
        st = vector_state()
        sub = pl.get_subblock_idx()
        prefire_vector()
        for qi in pl.range(core, sq_tiles, cores):
            start_rows(st)
            for _ki in pl.range(kv_tiles):
                s = take_s(s_buf)  # online softmax on this AIV's 64 rows of S
                pl.mul(s, s, SCALE)
                online_softmax(s, st)
                send_p(st, p_buf, sub)
                add_pv(st, pv_buf)
            store_rows(st, o, qi * TS + sub * HALF)
        drain_vector()


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
