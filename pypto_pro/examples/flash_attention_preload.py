"""Flash attention in the form of walkthrough (6): a serial stage loop with a VF online softmax;
the automatic preload pipeline inserts every cube ↔ vector synchronisation and skews the stages
(spec §6.2 walkthrough 6, §2.12.6).

O = softmax(Q·Kᵀ/√d)·V for Q [Sq, 128], K and V [Skv, 128], FP16 in and out. Each block (1 AIC +
2 AIVs) takes every `get_block_num()`-th 128-row Q tile and walks the KV tiles in four
`@pl.pipeline.stage` functions, alternating cores:

* `compute_qk` (cube): Sᵀ = K·Qᵀ (Q loaded transposed into L1 once per Q tile and kept in L0B),
  `move(qk_vec.next(), acc, acc_to_vec_mode=DualModeSplitN)`: each AIV receives the columns of
  Sᵀ of its 64 queries, a [128 kv, 64 q] tile whose rows are one 64-lane register each;
* `compute_p` (vector, Reg API): the online softmax works lane-wise on whole rows — the block
  max is `vf.max` over four interleaved register streams, then `vf.exp_sub` against the new
  running max, running sums, and P cast to FP16 two KV rows per register (`vf.astype` fills the
  even FP16 lanes, `vf.de_interleave` of two rows keeps the even lanes of both); the FP16 rows
  are the columns of P, so two column-major [64, 64] views of the buffer
  are P's halves, `pl.insert`ed into the cube's L1 P slot at row 64·subblock;
* `compute_pv` (cube): P·V → `move(pv_vec.next(), acc, DualModeSplitM)`: 64 rows per AIV;
* `compute_gu` (vector): the first KV tile copies P·V into the running O, later ones (Reg API)
  rescale it by the exp correction (broadcast per row with `LoadDist.BRC_B32`) and add; the
  last divides by the row sums, casts to FP16 and stores the AIV's rows.

The user writes no `set_cross_core` / `wait_cross_core`: the three cross-core rings are tile
groups declared outside the sections with `fwd_ids` (producer → consumer, one id per slot) and,
for the S and P·V rings, `bwd_ids`; the P ring declares none, so the transform allocates free
ids for its releases. With `PipelineConfig(preload=2)` the stages run with delays [0, 1, 2, 2]:
the cube computes Sᵀ of tile t+2 and P·V of tile t while the AIVs do the softmax of tile t+1,
which is why the exp corrections live in a ring of three state tiles. `make_kernel(sync_only=
True)` keeps the serial order (same syncs, no overlap) for comparison. Core-local buffers are
tile groups with mutex ids declared once in a section block before the loop (auto_mutex orders
their pipes); the AIV's softmax state is plain tiles.

One departure from the hardware kernel's data layout, same maths: `move` Mat → Left keeps
logical values here, so the P slot holds P itself (the halves go in at row 64·subblock, not
as a ZN Pᵀ at column 64·subblock).

Budgets: L1 288 KiB, L0A / L0B 64 KiB, L0C 256 KiB, UB ≈ 209 KiB per AIV.
"""
from __future__ import annotations

import torch

import pypto_pro.language as pl
from pypto_pro.language import vf

from . import flash_attention

TARGETS = ("cube", "vector")
KERNEL_TYPE = "mix"
#: FP16 inputs, FP32 accumulation and softmax, FP16 P and output
RTOL, ATOL = 5e-3, 5e-3

# tile sizes and softmax constants of the hand-synchronised version (same maths)
TS, TKV, D, HALF, SCALE, NEG_BIG = (flash_attention.TS, flash_attention.TKV, flash_attention.D,
                                    flash_attention.HALF, flash_attention.SCALE,
                                    flash_attention.NEG_BIG)
LANES = 64  # FP32 lanes of a register = the queries of one AIV
RING = 3  # exp corrections: compute_p of tile t+1 runs before compute_gu of tile t
F32, F16 = pl.DT_FP32, pl.DT_FP16
MAT, LEFT_SPACE, RIGHT_SPACE, ACC_SPACE = (pl.MemorySpace.Mat, pl.MemorySpace.Left,
                                           pl.MemorySpace.Right, pl.MemorySpace.Acc)

# cross-core rings (declared outside the sections)
QK_VEC = pl.TileType([TKV, HALF], F32)  # 32 KiB: Sᵀ columns of this AIV's queries
PV_VEC = pl.TileType([HALF, D], F32)  # 32 KiB: this AIV's rows of P·V
P_MAT = pl.TileType([TS, TKV], F16, MAT)  # 32 KiB, NZ
# cube-local
QT_L1 = pl.TileType([D, TS], F16, MAT, layout=pl.ZN)  # Qᵀ, loaded transposed
K_L1 = pl.TileType([TKV, D], F16, MAT)
V_L1 = pl.TileType([TKV, D], F16, MAT)
LEFT = pl.TileType([128, 128], F16, LEFT_SPACE)
RIGHT = pl.TileType([128, 128], F16, RIGHT_SPACE)
ACC = pl.TileType([128, 128], F32, ACC_SPACE)  # 64 KiB
# vector-local
P16 = pl.TileType([TKV, HALF], F16)  # 16 KiB: FP16 P in Sᵀ's layout (a KV row per 64 queries)
O_RUN = pl.TileType([HALF, D], F32)
O16 = pl.TileType([HALF, D], F16)
STATE = pl.TileType([1, LANES], F32)  # one value per query of this AIV (256 B)


# ---------------------------------------------------------------- Reg API bodies (vector)


@pl.vector_function
def online_softmax(p16, s, m_run, l_run, corr):
    """One KV tile of the online softmax on Sᵀ's rows (lane j = query j): new running max,
    exp correction, P = exp(S·scale − max) in FP16 rows, running sum."""
    full = vf.create_mask(pl.MaskPattern.ALL, dtype=F32)
    m0 = vf.load_align(s, 0)
    m1 = vf.load_align(s, LANES)
    m2 = vf.load_align(s, 2 * LANES)
    m3 = vf.load_align(s, 3 * LANES)
    for r in pl.range(4, TKV, 4):  # four streams: each vmax waits for its own stream only
        x0 = vf.load_align(s, r * LANES)
        x1 = vf.load_align(s, (r + 1) * LANES)
        x2 = vf.load_align(s, (r + 2) * LANES)
        x3 = vf.load_align(s, (r + 3) * LANES)
        m0 = vf.max(m0, x0, full)
        m1 = vf.max(m1, x1, full)
        m2 = vf.max(m2, x2, full)
        m3 = vf.max(m3, x3, full)
    m01 = vf.max(m0, m1, full)
    m23 = vf.max(m2, m3, full)
    block_max = vf.max(m01, m23, full)
    scaled_max = vf.muls(block_max, SCALE, full)
    m_old = vf.load_align(m_run, 0)
    m_new = vf.max(m_old, scaled_max, full)
    c = vf.exp_sub(m_old, m_new, full)  # exp(m_old − m_new): rescales what came before
    vf.store_align(corr, c, full)
    vf.store_align(m_run, m_new, full)
    l0 = vf.full(0.0, full, dtype=F32)
    l1 = vf.full(0.0, full, dtype=F32)
    for r in pl.range(0, TKV, 2):  # two KV rows per FP16 register
        x0 = vf.load_align(s, r * LANES)
        x1 = vf.load_align(s, (r + 1) * LANES)
        y0 = vf.muls(x0, SCALE, full)
        y1 = vf.muls(x1, SCALE, full)
        p0 = vf.exp_sub(y0, m_new, full)
        p1 = vf.exp_sub(y1, m_new, full)
        l0 = vf.add(l0, p0, full)
        l1 = vf.add(l1, p1, full)
        e0 = vf.astype(p0, full, dtype=F16)  # FP16 lanes 0, 2, 4, ... (layout ZERO)
        e1 = vf.astype(p1, full, dtype=F16)
        h, _ = vf.de_interleave(e0, e1)  # rows r and r + 1 in lanes 0–63 and 64–127
        vf.store_align(p16, h, full, r * LANES)
    l_old = vf.load_align(l_run, 0)
    l_scaled = vf.mul(l_old, c, full)
    l_blk = vf.add(l0, l1, full)
    l_new = vf.add(l_scaled, l_blk, full)
    vf.store_align(l_run, l_new, full)


@pl.vector_function
def rescale_add(o_run, pv, corr):
    """O[q, :] = O[q, :] · corr[q] + PV[q, :]."""
    full = vf.create_mask(pl.MaskPattern.ALL, dtype=F32)
    for q in pl.range(HALF):
        c = vf.load_align(corr, q, dist=pl.LoadDist.BRC_B32)
        for k in pl.range(q * D, q * D + D, LANES):
            o = vf.load_align(o_run, k)
            x = vf.load_align(pv, k)
            oc = vf.mul(o, c, full)
            o = vf.add(oc, x, full)
            vf.store_align(o_run, o, full, k)


@pl.vector_function
def normalize(o16, o_run, l_run):
    """O16[q, :] = O[q, :] / l[q], a row of 128 per FP16 register."""
    full = vf.create_mask(pl.MaskPattern.ALL, dtype=F32)
    for q in pl.range(HALF):
        lq = vf.load_align(l_run, q, dist=pl.LoadDist.BRC_B32)
        a = vf.load_align(o_run, q * D)
        b = vf.load_align(o_run, q * D + LANES)
        ya = vf.div(a, lq, full)
        yb = vf.div(b, lq, full)
        ea = vf.astype(ya, full, dtype=F16)
        eb = vf.astype(yb, full, dtype=F16)
        h, _ = vf.de_interleave(ea, eb)
        vf.store_align(o16, h, full, q * D)


# ---------------------------------------------------------------- stages


@pl.pipeline.stage
def compute_qk(qk_vec, q, k, q_slot, q_right, k_l1, k_left, s_acc, qi, ki):
    qr = q_right[0]
    if ki == 0:  # a new Q tile: Qᵀ stays in L0B for the whole KV walk
        pl.load(q_slot, q, [qi * TS, 0], order=[1, 0])
        pl.move(qr, q_slot)
    kt = k_l1[ki % 2]
    pl.load_tile(kt, k, [ki, 0])
    kl = k_left[0]
    pl.move(kl, kt)
    sa = s_acc[ki % 2]
    pl.matmul(sa, kl, qr)
    pl.move(qk_vec.next(), sa, acc_to_vec_mode=pl.AccToVecMode.DualModeSplitN)


@pl.pipeline.stage
def compute_p(qk_vec, p_mat, p16, m_run, l_run, corr_ring, sub, ki):
    ph = p16[ki % 2]
    s = qk_vec.next()
    corr = corr_ring[ki % RING]  # picked here: a VF body's tile operands are bound at its call
    online_softmax(ph, s, m_run, l_run, corr)
    # the FP16 rows of Sᵀ's layout are P's columns: two column-major views are P's halves
    p_lo = pl.reinterpret(ph, shape=[HALF, HALF], layout=pl.DN)  # KV 0–63
    rows_hi = ph[HALF:, 0:]
    p_hi = pl.reinterpret(rows_hi, shape=[HALF, HALF], layout=pl.DN)  # KV 64–127
    pm = p_mat.next()
    pl.insert(pm, p_lo, [sub * HALF, 0])
    pl.insert(pm, p_hi, [sub * HALF, HALF])


@pl.pipeline.stage
def compute_pv(p_mat, pv_vec, v, v_l1, v_right, p_left, o_acc, ki):
    vt = v_l1[ki % 2]
    pl.load_tile(vt, v, [ki, 0])
    vr = v_right[0]
    pl.move(vr, vt)
    pll = p_left[0]
    pl.move(pll, p_mat.next())
    oa = o_acc[ki % 2]
    pl.matmul(oa, pll, vr)
    pl.move(pv_vec.next(), oa, acc_to_vec_mode=pl.AccToVecMode.DualModeSplitM)


@pl.pipeline.stage
def compute_gu(pv_vec, o_run, o16, corr_ring, l_run, o, row0, ki, last):
    pv = pv_vec.next()
    if ki == 0:
        pl.move(o_run, pv)  # UB → UB on pipe V
    else:
        corr = corr_ring[ki % RING]
        rescale_add(o_run, pv, corr)
    if ki == last:
        oh = o16[0]
        normalize(oh, o_run, l_run)
        pl.store(o, oh, [row0, 0])


def cube_buffers():
    """The AIC's tile groups: Qᵀ / K / V in L1, L0A / L0B slots, the two Acc rings."""
    return (pl.make_tile_group(type=QT_L1, addrs=[0x00000, 0x08000], mutex_ids=[0, 1]),
            pl.make_tile_group(type=K_L1, addrs=[0x10000, 0x18000], mutex_ids=[2, 3]),
            pl.make_tile_group(type=V_L1, addrs=[0x20000, 0x28000], mutex_ids=[4, 5]),
            pl.make_tile_group(type=LEFT, addrs=0x0000, mutex_ids=[6]),
            pl.make_tile_group(type=LEFT, addrs=0x8000, mutex_ids=[7]),
            pl.make_tile_group(type=RIGHT, addrs=0x0000, mutex_ids=[8]),
            pl.make_tile_group(type=RIGHT, addrs=0x8000, mutex_ids=[9]),
            pl.make_tile_group(type=ACC, addrs=[0x00000, 0x10000], mutex_ids=[10, 11]),
            pl.make_tile_group(type=ACC, addrs=[0x20000, 0x30000], mutex_ids=[12, 13]))


def vector_buffers():
    """The AIV's FP16 P / O groups, running O and the per-query state (a ring of three exp
    corrections)."""
    return (pl.make_tile_group(type=P16, addrs=[0x28000, 0x2C000], mutex_ids=[21, 22]),
            pl.make_tile_group(type=O16, addrs=0x30000, mutex_ids=[23]),
            pl.make_tile(O_RUN, addr=0x20000), pl.make_tile(STATE, addr=0x34000),
            pl.make_tile(STATE, addr=0x34100),
            (pl.make_tile(STATE, addr=0x34200), pl.make_tile(STATE, addr=0x34300),
             pl.make_tile(STATE, addr=0x34400)))


def _flash_attention(q: pl.Tensor[[pl.DYNAMIC, D], pl.DT_FP16],
                     k: pl.Tensor[[pl.DYNAMIC, D], pl.DT_FP16],
                     v: pl.Tensor[[pl.DYNAMIC, D], pl.DT_FP16],
                     o: pl.Tensor[[pl.DYNAMIC, D], pl.DT_FP16]):
    qk_vec = pl.make_tile_group(type=QK_VEC, addrs=[0x00000, 0x08000], mutex_ids=[14, 15],
                                fwd_ids=[0, 1], bwd_ids=[2, 3])
    pv_vec = pl.make_tile_group(type=PV_VEC, addrs=[0x10000, 0x18000], mutex_ids=[16, 17],
                                fwd_ids=[7, 8], bwd_ids=[9, 10])
    p_mat = pl.make_tile_group(type=P_MAT, addrs=[0x30000, 0x38000, 0x40000],
                               mutex_ids=[18, 19, 20], fwd_ids=[4, 5, 6])
    sq_tiles = q.shape[0] // TS
    kv_tiles = k.shape[0] // TKV
    cores = pl.get_block_num()
    core = pl.get_block_idx() // pl.get_subblock_num()  # the block, on both targets
    sub = pl.get_subblock_idx()

    with pl.section_cube():
        q_l1, k_l1, v_l1, k_left, p_left, q_right, v_right, s_acc, o_acc = cube_buffers()
    with pl.section_vector():
        p16, o16, o_run, m_run, l_run, corr_ring = vector_buffers()

    for qi in pl.range(core, sq_tiles, cores):
        with pl.section_cube():
            q_slot = q_l1.next()
        with pl.section_vector():
            pl.expands(m_run, NEG_BIG)
            pl.expands(l_run, 0.0)
        row0 = qi * TS + sub * HALF
        last = kv_tiles - 1
        for ki in pl.range(kv_tiles):
            with pl.section_cube():
                compute_qk(qk_vec, q, k, q_slot, q_right, k_l1, k_left, s_acc, qi, ki)
            with pl.section_vector():
                compute_p(qk_vec, p_mat, p16, m_run, l_run, corr_ring, sub, ki)
            with pl.section_cube():
                compute_pv(p_mat, pv_vec, v, v_l1, v_right, p_left, o_acc, ki)
            with pl.section_vector():
                compute_gu(pv_vec, o_run, o16, corr_ring, l_run, o, row0, ki, last)


def make_kernel(preload: int = 2, sync_only: bool = False):
    """The kernel compiled with `PipelineConfig(preload, sync_only)`."""
    name = "flash_attention_sync_only" if sync_only else f"flash_attention_preload{preload}"
    config = pl.pipeline.PipelineConfig(preload=preload, sync_only=sync_only)
    return pl.jit(arch="a5", name=name, pipeline=config)(_flash_attention)


flash_attention_preload_kernel = make_kernel(preload=2)
flash_attention_sync_only_kernel = make_kernel(sync_only=True)

KERNELS = {"flash_attention_preload_kernel": flash_attention_preload_kernel,
           "flash_attention_sync_only_kernel": flash_attention_sync_only_kernel}


def make_inputs(sq: int = 256, skv: int = 512, seed: int = 0):
    """q [sq, 128], k and v [skv, 128] FP16 and a zero o (the hand-synchronised example's
    inputs, with more KV tiles by default so the pipeline has something to overlap)."""
    return flash_attention.make_inputs(sq, skv, seed)


# the same maths as the hand-synchronised version
reference = flash_attention.reference
block_dim = flash_attention.block_dim


def run(*args, kernel=flash_attention_preload_kernel) -> torch.Tensor:
    kernel[None, block_dim(*args)](*args)
    return args[3]
