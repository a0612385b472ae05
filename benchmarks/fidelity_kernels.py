"""DSL kernels of the fidelity cases (`fidelity_cases.py`), each written in the style of the
published kernel it is compared with (pto-isa's hand-tuned ones), with their inputs and torch
references.

* `make_gemm_fp16`: C[M, N] fp32 = A[M, K] fp16 · B[K, N] fp16 as pto-isa's
  `kernels/manual/a2a3/gemm_performance`: each AIC owns a singleCoreM × singleCoreN block of C;
  base tiles [128, 256, 64]; L1 panels of stepK = 4 base K blocks, double buffered; L0A/L0B
  double buffered; one L0C tile (`acc_slots`).
* `make_gemm_mxfp8`: C bf16 = (A·2^sa) @ (B·2^sb), A, B fp8 e5m2 with E8M0 scales per 32 K, as
  `kernels/manual/a5/matmul_mxfp8_performance`: base [128, 256, 128], stepK 4, scales loaded per
  1024 K (mxScalePara 8) and moved to ScaleLeft/ScaleRight per base K block.
* `make_gemm_tiles`: C[M, N] fp16 = A[M, K] fp16 · B (stored transposed, [N, K]) as the compute
  kernel of `kernels/manual/{a2a3,a5}/gemm_ar`: [128, 256] output tiles dealt to the blocks in
  balanced contiguous runs (the first T mod blocks get one more), walked in a zigzag over N
  (odd rows reversed), each with the K loop of stepK 4 panels, stored as fp16 through the
  fixpipe, then a `bar_all` (pto-isa: `pipe_barrier(PIPE_ALL)` before it enqueues the tile).
* `make_flash_attention_fifo`: the A2/A3 flash attention of
  `kernels/manual/common/flash_atten` (head 128, CUBE_S0 = CUBE_S1 = 128, TILE_S1 = 256, QK
  preload 4, FIFO depth 8): one block per 128 query rows; the cube computes S = Q·Kᵀ per
  [128, 128] sub-tile into a GM FIFO of [128, 256] fp32 slots, and P·V from a GM FIFO of fp16 P
  into a GM FIFO of [128, 128] fp32 slots; each AIV takes 64 rows: the online softmax in two
  32-row slices per S tile (P stored as fp16) and the running O update from the P·V slot, O
  divided by the row sums and stored fp32 at the end. Hand-offs are cross-core events with FIFO
  permits (ready / free per FIFO).
* `make_topk`: row top-k of fp32 [rows, 1024] (GM row stride `cols`) as
  `kernels/manual/a2a3/topk`: per AIV `rows / blocks` rows, two rows per step, double buffered;
  per row `sort32` (value, index pairs), `mrgsort` of 4 lists of 64 then of 256 floats with a
  copy back each, a two-list `mrgsort2` of the 1024-float halves, the first `k` pairs copied out,
  values and indices separated by `gathermask` (patterns P0101 / P1010) and stored.

Aliases (pto-isa's `TASSIGN` views) are written as views of one buffer — tile slices
`t[r0:r1, :]`, `pl.reinterpret`, runtime-indexed tile-group slots — so `verify_memory` sees
one owner, never two buffers sharing bytes.
"""
from __future__ import annotations

import math

import torch

import pypto_pro.language as pl

# ---------------------------------------------------------------- GEMMs (pto-isa manual)


def make_gemm_fp16(scm: int, scn: int, bm: int = 128, bn: int = 256, bk: int = 64,
                   step: int = 4, acc_slots: int = 1):
    """C[M, N] fp32 = A[M, K] fp16 @ B[K, N] fp16; block b owns C[(b % mc)·scm.., (b // mc)·scn..]
    with mc = M // scm."""
    pk = bk * step
    a_l1_t = pl.TileType([bm, pk], pl.DT_FP16, pl.MemorySpace.Mat)
    b_l1_t = pl.TileType([pk, bn], pl.DT_FP16, pl.MemorySpace.Mat)
    a_l0_t = pl.TileType([bm, bk], pl.DT_FP16, pl.MemorySpace.Left)
    b_l0_t = pl.TileType([bk, bn], pl.DT_FP16, pl.MemorySpace.Right)
    c_l0_t = pl.TileType([bm, bn], pl.DT_FP32, pl.MemorySpace.Acc)
    a_b, b_b = bm * pk * 2, pk * bn * 2
    a_addrs, b_addrs = [0, a_b], [2 * a_b, 2 * a_b + b_b]
    l0a_addrs, l0b_addrs = [0, bm * bk * 2], [0, bk * bn * 2]
    acc_addrs = [i * bm * bn * 4 for i in range(acc_slots)]
    acc_ids = [8 + i for i in range(acc_slots)]
    n_tiles = scn // bn
    tiles = (scm // bm) * n_tiles

    @pl.jit(arch="a5", name="gemm_fp16")
    def gemm_fp16(a: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP16],
                  b: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP16],
                  c: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP32]):
        with pl.section_cube():
            a_l1 = pl.make_tile_group(type=a_l1_t, addrs=a_addrs, mutex_ids=[0, 1])
            b_l1 = pl.make_tile_group(type=b_l1_t, addrs=b_addrs, mutex_ids=[2, 3])
            left = pl.make_tile_group(type=a_l0_t, addrs=l0a_addrs, mutex_ids=[4, 5])
            right = pl.make_tile_group(type=b_l0_t, addrs=l0b_addrs, mutex_ids=[6, 7])
            acc = pl.make_tile_group(type=c_l0_t, addrs=acc_addrs, mutex_ids=acc_ids)
            m_cores = a.shape[0] // scm
            k_panels = a.shape[1] // pk
            blk = pl.get_block_idx()
            row0 = (blk % m_cores) * scm
            col0 = (blk // m_cores) * scn
            for t in pl.range(tiles):
                row = row0 + (t // n_tiles) * bm
                col = col0 + (t % n_tiles) * bn
                c0 = acc.next()
                for kp in pl.range(k_panels):
                    a1 = a_l1.next()
                    pl.load(a1, a, [row, kp * pk])
                    b1 = b_l1.next()
                    pl.load(b1, b, [kp * pk, col])
                    for kk in pl.range(step):
                        a0 = left.next()
                        pl.move(a0, a1, [0, kk * bk])  # TEXTRACT of one base K block
                        b0 = right.next()
                        pl.move(b0, b1, [kk * bk, 0])
                        if kp + kk == 0:
                            pl.matmul(c0, a0, b0)
                        else:
                            pl.matmul_acc(c0, c0, a0, b0)
                pl.store(c, c0, [row, col])

    return gemm_fp16


def make_gemm_mxfp8(scm: int, scn: int, bm: int = 128, bn: int = 256, bk: int = 128,
                    step: int = 4, scale_k: int = 1024, acc_slots: int = 2):
    """C[M, N] bf16 = (A·2^sa)[M, K] @ (B·2^sb)[K, N]: A, B fp8 e5m2, E8M0 scales sa [M, K/32],
    sb [K/32, N] (one per 32 K), FP32 accumulation in L0C, bf16 out through the fixpipe."""
    pk, sg = bk * step, scale_k // 32
    f8, e8 = pl.DT_FP8E5M2, pl.DT_FP8E8M0
    a_l1_t = pl.TileType([bm, pk], f8, pl.MemorySpace.Mat)
    b_l1_t = pl.TileType([pk, bn], f8, pl.MemorySpace.Mat)
    sa_l1_t = pl.TileType([bm, sg], e8, pl.MemorySpace.Mat)
    sb_l1_t = pl.TileType([sg, bn], e8, pl.MemorySpace.Mat)
    a_l0_t = pl.TileType([bm, bk], f8, pl.MemorySpace.Left)
    b_l0_t = pl.TileType([bk, bn], f8, pl.MemorySpace.Right)
    sa_l0_t = pl.TileType([bm, bk // 32], e8, pl.MemorySpace.ScaleLeft)
    sb_l0_t = pl.TileType([bk // 32, bn], e8, pl.MemorySpace.ScaleRight)
    c_l0_t = pl.TileType([bm, bn], pl.DT_FP32, pl.MemorySpace.Acc)
    a_b, b_b, sa_b, sb_b = bm * pk, pk * bn, bm * sg, sg * bn
    a_addrs = [0, a_b]
    b_addrs = [2 * a_b, 2 * a_b + b_b]
    sa_addrs = [2 * (a_b + b_b), 2 * (a_b + b_b) + sa_b]
    sb_addrs = [2 * (a_b + b_b + sa_b), 2 * (a_b + b_b + sa_b) + sb_b]
    l0a_addrs, l0b_addrs = [0, bm * bk], [0, bk * bn]
    sl_addrs, sr_addrs = [0, bm * bk // 32], [0, bk // 32 * bn]
    acc_addrs = [i * bm * bn * 4 for i in range(acc_slots)]
    acc_ids = [8 + i for i in range(acc_slots)]
    n_tiles = scn // bn
    tiles = (scm // bm) * n_tiles
    panels = scale_k // pk  # data panels per scale panel
    groups = bk // 32  # scale groups per base K block

    @pl.jit(arch="a5", name="gemm_mxfp8")
    def gemm_mxfp8(a: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP8E5M2],
                   b: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP8E5M2],
                   sa: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP8E8M0],
                   sb: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP8E8M0],
                   c: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_BF16]):
        with pl.section_cube():
            a_l1 = pl.make_tile_group(type=a_l1_t, addrs=a_addrs, mutex_ids=[0, 1])
            b_l1 = pl.make_tile_group(type=b_l1_t, addrs=b_addrs, mutex_ids=[2, 3])
            sa_l1 = pl.make_tile_group(type=sa_l1_t, addrs=sa_addrs, mutex_ids=[10, 11])
            sb_l1 = pl.make_tile_group(type=sb_l1_t, addrs=sb_addrs, mutex_ids=[12, 13])
            left = pl.make_tile_group(type=a_l0_t, addrs=l0a_addrs, mutex_ids=[4, 5])
            right = pl.make_tile_group(type=b_l0_t, addrs=l0b_addrs, mutex_ids=[6, 7])
            s_left = pl.make_tile_group(type=sa_l0_t, addrs=sl_addrs, mutex_ids=[14, 15])
            s_right = pl.make_tile_group(type=sb_l0_t, addrs=sr_addrs, mutex_ids=[16, 17])
            acc = pl.make_tile_group(type=c_l0_t, addrs=acc_addrs, mutex_ids=acc_ids)
            m_cores = a.shape[0] // scm
            k_scales = a.shape[1] // scale_k
            blk = pl.get_block_idx()
            row0 = (blk % m_cores) * scm
            col0 = (blk // m_cores) * scn
            for t in pl.range(tiles):
                row = row0 + (t // n_tiles) * bm
                col = col0 + (t % n_tiles) * bn
                c0 = acc.next()
                for ks in pl.range(k_scales):
                    sa1 = sa_l1.next()
                    pl.load(sa1, sa, [row, ks * sg])
                    sb1 = sb_l1.next()
                    pl.load(sb1, sb, [ks * sg, col])
                    for kp in pl.range(panels):
                        k0 = ks * scale_k + kp * pk
                        a1 = a_l1.next()
                        pl.load(a1, a, [row, k0])
                        b1 = b_l1.next()
                        pl.load(b1, b, [k0, col])
                        for kk in pl.range(step):
                            g = (kp * step + kk) * groups
                            a0 = left.next()
                            pl.move(a0, a1, [0, kk * bk])
                            b0 = right.next()
                            pl.move(b0, b1, [kk * bk, 0])
                            sa0 = s_left.next()
                            pl.move(sa0, sa1, [0, g])
                            sb0 = s_right.next()
                            pl.move(sb0, sb1, [g, 0])
                            if ks + kp + kk == 0:
                                pl.matmul_mx(c0, a0, b0, sa0, sb0)
                            else:
                                pl.matmul_mx_acc(c0, c0, a0, b0, sa0, sb0)
                pl.store(c, c0, [row, col])

    return gemm_mxfp8


def make_gemm_tiles(m_tiles: int, n_tiles: int, blocks: int, bm: int = 128, bn: int = 256,
                    bk: int = 64, step: int = 4):
    """C[M, N] fp16 = A[M, K] fp16 @ Bᵀ for B stored [N, K], M = m_tiles·bm, N = n_tiles·bn, on
    `blocks` blocks: gemm_ar's compute kernel (module docstring)."""
    pk = bk * step
    a_l1_t = pl.TileType([bm, pk], pl.DT_FP16, pl.MemorySpace.Mat)
    b_l1_t = pl.TileType([pk, bn], pl.DT_FP16, pl.MemorySpace.Mat, layout=pl.ZN)  # Bᵀ panel
    a_l0_t = pl.TileType([bm, bk], pl.DT_FP16, pl.MemorySpace.Left)
    b_l0_t = pl.TileType([bk, bn], pl.DT_FP16, pl.MemorySpace.Right)
    c_l0_t = pl.TileType([bm, bn], pl.DT_FP32, pl.MemorySpace.Acc)
    a_b, b_b = bm * pk * 2, pk * bn * 2
    per, extra = divmod(m_tiles * n_tiles, blocks)

    @pl.jit(arch="a5", name="gemm_tiles")
    def gemm_tiles(a: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP16],
                   bt: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP16],
                   c: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP16]):
        with pl.section_cube():
            a_l1 = pl.make_tile_group(type=a_l1_t, addrs=[0, a_b], mutex_ids=[0, 1])
            b_l1 = pl.make_tile_group(type=b_l1_t, addrs=[2 * a_b, 2 * a_b + b_b],
                                      mutex_ids=[2, 3])
            left = pl.make_tile_group(type=a_l0_t, addrs=[0, bm * bk * 2], mutex_ids=[4, 5])
            right = pl.make_tile_group(type=b_l0_t, addrs=[0, bk * bn * 2], mutex_ids=[6, 7])
            acc = pl.make_tile_group(type=c_l0_t, addrs=[0], mutex_ids=[8])
            k_panels = a.shape[1] // pk
            blk = pl.get_block_idx()
            count = per + (1 if blk < extra else 0)
            start = blk * per + pl.min(blk, extra)
            for i in pl.range(count):
                lin = start + i
                mi = lin // n_tiles
                local = lin % n_tiles
                ni = local + (mi % 2) * (n_tiles - 1 - 2 * local)  # zigzag: odd rows reversed
                c0 = acc.next()
                for kp in pl.range(k_panels):
                    a1 = a_l1.next()
                    pl.load(a1, a, [mi * bm, kp * pk])
                    b1 = b_l1.next()
                    pl.load(b1, bt, [ni * bn, kp * pk], order=[1, 0])
                    for kk in pl.range(step):
                        a0 = left.next()
                        pl.move(a0, a1, [0, kk * bk])
                        b0 = right.next()
                        pl.move(b0, b1, [kk * bk, 0])
                        if kp + kk == 0:
                            pl.matmul(c0, a0, b0)
                        else:
                            pl.matmul_acc(c0, c0, a0, b0)
                pl.store(c, c0, [mi * bm, ni * bn])
                pl.system.bar_all()

    return gemm_tiles


def fp16_inputs(m: int, n: int, k: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    a = (torch.randn(m, k, generator=g) / 8).half()
    b = (torch.randn(k, n, generator=g) / 8).half()
    return a, b, torch.zeros(m, n)


def tiles_inputs(m: int, n: int, k: int, seed: int = 0):
    """A [m, k], B stored transposed [n, k], C [m, n] fp16 (`make_gemm_tiles`)."""
    g = torch.Generator().manual_seed(seed)
    a = (torch.randn(m, k, generator=g) / 8).half()
    bt = (torch.randn(n, k, generator=g) / 8).half()
    return a, bt, torch.zeros(m, n, dtype=torch.float16)


def mx_inputs(m: int, n: int, k: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    a = (torch.randn(m, k, generator=g) / 4).to(torch.float8_e5m2)
    b = (torch.randn(k, n, generator=g) / 4).to(torch.float8_e5m2)
    e8 = torch.float8_e8m0fnu
    sa = torch.randint(124, 131, (m, k // 32), generator=g, dtype=torch.uint8).view(e8)
    sb = torch.randint(124, 131, (k // 32, n), generator=g, dtype=torch.uint8).view(e8)
    return a, b, sa, sb, torch.zeros(m, n, dtype=torch.bfloat16)


def mx_reference(a, b, sa, sb) -> torch.Tensor:
    fa = a.double() * torch.exp2(sa.view(torch.uint8).double() - 127).repeat_interleave(32, 1)
    fb = b.double() * torch.exp2(sb.view(torch.uint8).double() - 127).repeat_interleave(32, 0)
    return fa @ fb


# ---------------------------------------------------------------- flash attention, A2/A3 form

FA_D = 128  # head size
FA_S0 = 128  # query rows per block (CUBE_S0)
FA_S1 = 128  # K/V rows per cube sub-tile (CUBE_S1)
FA_TILE = 256  # K/V rows per logical tile (TILE_S1): two sub-tiles
FA_SLICE = 32  # rows per softmax slice of an AIV (CUBE_S0 / 2 AIVs / 2 sub-tiles)
FA_HALF = FA_S0 // 2  # rows per AIV
FA_PRELOAD = 4  # S tiles the cube and the softmax run ahead of P·V
FA_FIFO = 8  # slots per GM FIFO
FA_SCALE = 1.0 / math.sqrt(FA_D)
QK_READY, QK_FREE, P_READY, P_FREE, PV_READY, PV_FREE = 0, 1, 2, 3, 4, 5

_FIX, _MTE2, _MTE3, _V = pl.PipeType.FIX, pl.PipeType.MTE2, pl.PipeType.MTE3, pl.PipeType.V
# cube: L1 (Q, two K, two P, two V sub-tiles of 32 KiB), L0A (Q kept, P), L0B ring, L0C (S, O)
_Q_L1 = pl.TileType([FA_S0, FA_D], pl.DT_FP16, pl.MemorySpace.Mat)
_KT_L1 = pl.TileType([FA_D, FA_S1], pl.DT_FP16, pl.MemorySpace.Mat, layout=pl.ZN)  # Kᵀ
_P_L1 = pl.TileType([FA_S0, FA_S1], pl.DT_FP16, pl.MemorySpace.Mat)
_V_L1 = pl.TileType([FA_S1, FA_D], pl.DT_FP16, pl.MemorySpace.Mat)
_LEFT = pl.TileType([FA_S0, FA_D], pl.DT_FP16, pl.MemorySpace.Left)
_RIGHT = pl.TileType([FA_D, FA_S1], pl.DT_FP16, pl.MemorySpace.Right)
_ACC = pl.TileType([FA_S0, FA_S1], pl.DT_FP32, pl.MemorySpace.Acc)  # 64 KiB
# vector (UB 192 KiB on 910B1)
_S_UB = pl.TileType([FA_SLICE, FA_TILE], pl.DT_FP32)  # 32 KiB: a slice of S, then P in place
_P16_UB = pl.TileType([FA_SLICE, FA_TILE], pl.DT_FP16)  # 16 KiB
_O_UB = pl.TileType([FA_HALF, FA_D], pl.DT_FP32)  # 32 KiB: the AIV's running O, or a P·V slot
_ROW = pl.TileType([FA_SLICE, 1], pl.DT_FP32, layout=pl.DN)  # 128 B
_TMP = pl.TileType([FA_SLICE, 64], pl.DT_FP32)  # reduction scratch (pto-isa: 1/8 of a slice)
CORR = 2 * FA_FIFO  # correction rows: two slices per FIFO slot
_UB_ROWS = 0x28000  # the [rows, 1] tiles, after O, two S slots, the P·V slot and two P slots
_M_GLOB = [_UB_ROWS, _UB_ROWS + 0x80]  # running row max of the two slices
_L_GLOB = [_UB_ROWS + 0x100, _UB_ROWS + 0x180]  # running row sums
_CORR = [_UB_ROWS + 0x400 + 0x80 * i for i in range(CORR)]


def make_flash_attention_fifo():
    """Flash attention in the A2/A3 form (module docstring): q [S0, 128], k, v [S1, 128] fp16,
    FIFOs qk [blocks·8·128, 256] fp32, p [blocks·8·128, 256] fp16, pv [blocks·8·128, 128] fp32,
    o [S0, 128] fp32; launched on S0 / 128 blocks, S1 a multiple of 256.

    Cross-core events (counting): S ready / free, P ready / free, P·V ready / free; a FIFO's
    consumer pre-fires one "free" permit per slot and its producer drains the leftovers."""

    @pl.jit(arch="a5", name="flash_attention_fifo")
    def flash_attention_fifo(q: pl.Tensor[[pl.DYNAMIC, FA_D], pl.DT_FP16],
                             k: pl.Tensor[[pl.DYNAMIC, FA_D], pl.DT_FP16],
                             v: pl.Tensor[[pl.DYNAMIC, FA_D], pl.DT_FP16],
                             qk_fifo: pl.Tensor[[pl.DYNAMIC, FA_TILE], pl.DT_FP32],
                             p_fifo: pl.Tensor[[pl.DYNAMIC, FA_TILE], pl.DT_FP16],
                             pv_fifo: pl.Tensor[[pl.DYNAMIC, FA_D], pl.DT_FP32],
                             o: pl.Tensor[[pl.DYNAMIC, FA_D], pl.DT_FP32]):
        tiles = k.shape[0] // FA_TILE
        ahead = pl.min(FA_PRELOAD, tiles)
        block = pl.get_block_idx() // pl.get_subblock_num()  # the block, on both targets
        fifo0 = block * FA_FIFO * FA_S0  # this block's first FIFO row

        with pl.section_cube():
            q_l1 = pl.make_tile_group(type=_Q_L1, addrs=[0x00000], mutex_ids=[0])
            k_l1 = pl.make_tile_group(type=_KT_L1, addrs=[0x08000, 0x10000], mutex_ids=[1, 2])
            p_l1 = pl.make_tile_group(type=_P_L1, addrs=[0x18000, 0x20000], mutex_ids=[3, 4])
            v_l1 = pl.make_tile_group(type=_V_L1, addrs=[0x28000, 0x30000], mutex_ids=[5, 6])
            q_left = pl.make_tile_group(type=_LEFT, addrs=[0x0000], mutex_ids=[7])
            p_left = pl.make_tile_group(type=_LEFT, addrs=[0x8000], mutex_ids=[8])
            right = pl.make_tile_group(type=_RIGHT, addrs=[0x0000, 0x8000], mutex_ids=[9, 10])
            s_acc = pl.make_tile_group(type=_ACC, addrs=[0x00000], mutex_ids=[11])
            o_acc = pl.make_tile_group(type=_ACC, addrs=[0x10000], mutex_ids=[12])
            for _ in pl.range(FA_FIFO):  # every P slot starts free
                pl.system.set_cross_core(pipe=_MTE2, event_id=P_FREE)
            qt = q_l1.next()
            pl.load(qt, q, [block * FA_S0, 0])
            ql = q_left.next()
            pl.move(ql, qt)
            for t in pl.range(tiles + ahead):
                if t < tiles:  # S of tile t (`ahead` tiles in front of P·V)
                    slot = fifo0 + (t % FA_FIFO) * FA_S0
                    for sub in pl.range(FA_TILE // FA_S1):
                        kt = k_l1.next()
                        pl.load(kt, k, [t * FA_TILE + sub * FA_S1, 0], order=[1, 0])
                        kr = right.next()
                        pl.move(kr, kt)
                        sa = s_acc.next()
                        pl.matmul(sa, ql, kr)
                        if sub == 0:
                            pl.system.wait_cross_core(pipe=_FIX, event_id=QK_FREE)
                        pl.store(qk_fifo, sa, [slot, sub * FA_S1])
                    pl.system.set_cross_core(pipe=_FIX, event_id=QK_READY)
                if t >= ahead:  # P·V of tile t − ahead
                    u = t - ahead
                    slot = fifo0 + (u % FA_FIFO) * FA_S0
                    pl.system.wait_cross_core(pipe=_MTE2, event_id=P_READY)
                    oa = o_acc.next()
                    for sub in pl.range(FA_TILE // FA_S1):
                        pt = p_l1.next()
                        pl.load(pt, p_fifo, [slot, sub * FA_S1])
                        vt = v_l1.next()
                        pl.load(vt, v, [u * FA_TILE + sub * FA_S1, 0])
                        pll = p_left.next()
                        pl.move(pll, pt)
                        vr = right.next()
                        pl.move(vr, vt)
                        if sub == 0:
                            pl.matmul(oa, pll, vr)
                        else:
                            pl.matmul_acc(oa, oa, pll, vr)
                    pl.system.set_cross_core(pipe=_MTE2, event_id=P_FREE)
                    pl.system.wait_cross_core(pipe=_FIX, event_id=PV_FREE)
                    pl.store(pv_fifo, oa, [slot, 0])
                    pl.system.set_cross_core(pipe=_FIX, event_id=PV_READY)
            for _ in pl.range(FA_FIFO):  # drain the permits the AIVs pre-fired
                pl.system.wait_cross_core(pipe=_FIX, event_id=QK_FREE)
                pl.system.wait_cross_core(pipe=_FIX, event_id=PV_FREE)

        with pl.section_vector():
            s_ub = pl.make_tile_group(type=_S_UB, addrs=[0x08000, 0x10000], mutex_ids=[0, 1])
            p16 = pl.make_tile_group(type=_P16_UB, addrs=[0x20000, 0x24000], mutex_ids=[2, 3])
            o_run = pl.make_tile(_O_UB, addr=0x00000)
            o_lo, o_hi = o_run[0:FA_SLICE, :], o_run[FA_SLICE:FA_HALF, :]  # the slices' rows
            pv = pl.make_tile(_O_UB, addr=0x18000)
            pv_lo, pv_hi = pv[0:FA_SLICE, :], pv[FA_SLICE:FA_HALF, :]
            tmp = pl.make_tile(_TMP, addr=_UB_ROWS + 0x1000)
            m_glob = pl.make_tile_group(type=_ROW, addrs=_M_GLOB, depth=2)  # per slice
            l_glob = pl.make_tile_group(type=_ROW, addrs=_L_GLOB, depth=2)
            m_loc = pl.make_tile(_ROW, addr=_UB_ROWS + 0x200)
            l_loc = pl.make_tile(_ROW, addr=_UB_ROWS + 0x280)
            # exp(m_old − m_new) per FIFO slot and slice, kept until that tile's O update
            corr = pl.make_tile_group(type=_ROW, addrs=_CORR, depth=CORR)
            sub = pl.get_subblock_idx()
            for _ in pl.range(FA_FIFO):  # every S and P·V slot starts free
                pl.system.set_cross_core(pipe=_MTE2, event_id=QK_FREE)
                pl.system.set_cross_core(pipe=_MTE2, event_id=PV_FREE)
            pl.system.sync_src(set_pipe=_V, wait_pipe=_MTE2, event_id=0)  # the P·V tile is free
            for t in pl.range(tiles + ahead):
                if t < tiles:  # softmax of S tile t → P
                    slot = fifo0 + (t % FA_FIFO) * FA_S0 + sub * FA_HALF
                    pl.system.wait_cross_core(pipe=_MTE2, event_id=QK_READY)
                    for r in pl.range(FA_HALF // FA_SLICE):
                        s = s_ub.next()
                        pl.load(s, qk_fifo, [slot + r * FA_SLICE, 0])
                        mg = m_glob[r]
                        lg = l_glob[r]
                        if t == 0:
                            pl.row_max(mg, s, tmp)
                            pl.row_expand_sub(s, s, mg)
                            pl.muls(s, s, FA_SCALE)
                            pl.exp(s, s)
                            pl.row_sum(lg, s, tmp)
                        else:
                            c = corr[(t % FA_FIFO) * 2 + r]
                            pl.row_max(m_loc, s, tmp)
                            pl.maximum(m_loc, m_loc, mg)
                            pl.sub(c, mg, m_loc)
                            pl.muls(mg, m_loc, 1.0)
                            pl.row_expand_sub(s, s, m_loc)
                            pl.muls(c, c, FA_SCALE)
                            pl.muls(s, s, FA_SCALE)
                            pl.exp(c, c)
                            pl.exp(s, s)
                            pl.mul(lg, c, lg)
                            pl.row_sum(l_loc, s, tmp)
                            pl.add(lg, lg, l_loc)
                        p = p16.next()
                        pl.cast(p, s)
                        if r == 0:
                            pl.system.wait_cross_core(pipe=_MTE3, event_id=P_FREE)
                        pl.store(p_fifo, p, [slot + r * FA_SLICE, 0])
                    pl.system.set_cross_core(pipe=_MTE2, event_id=QK_FREE)
                    pl.system.set_cross_core(pipe=_MTE3, event_id=P_READY)
                if t >= ahead:  # O update with P·V of tile t − ahead
                    u = t - ahead
                    slot = fifo0 + (u % FA_FIFO) * FA_S0 + sub * FA_HALF
                    pl.system.wait_cross_core(pipe=_MTE2, event_id=PV_READY)
                    pl.system.sync_dst(set_pipe=_V, wait_pipe=_MTE2, event_id=0)
                    if u == 0:
                        pl.load(o_run, pv_fifo, [slot, 0])
                    else:
                        pl.load(pv, pv_fifo, [slot, 0])
                    pl.system.set_cross_core(pipe=_MTE2, event_id=PV_FREE)
                    pl.system.sync_src(set_pipe=_MTE2, wait_pipe=_V, event_id=1)
                    pl.system.sync_dst(set_pipe=_MTE2, wait_pipe=_V, event_id=1)
                    if u > 0:
                        c0 = (u % FA_FIFO) * 2
                        pl.row_expand_mul(o_lo, o_lo, corr[c0])
                        pl.add(o_lo, o_lo, pv_lo)
                        pl.row_expand_mul(o_hi, o_hi, corr[c0 + 1])
                        pl.add(o_hi, o_hi, pv_hi)
                    pl.system.sync_src(set_pipe=_V, wait_pipe=_MTE2, event_id=0)
            pl.row_expand_div(o_lo, o_lo, l_glob[0])
            pl.row_expand_div(o_hi, o_hi, l_glob[1])
            pl.system.sync_src(set_pipe=_V, wait_pipe=_MTE3, event_id=2)
            pl.system.sync_dst(set_pipe=_V, wait_pipe=_MTE3, event_id=2)
            pl.store(o, o_run, [block * FA_S0 + sub * FA_HALF, 0])
            pl.system.sync_dst(set_pipe=_V, wait_pipe=_MTE2, event_id=0)
            for _ in pl.range(FA_FIFO):  # the P permits the cube pre-fired
                pl.system.wait_cross_core(pipe=_MTE3, event_id=P_FREE)

    return flash_attention_fifo


def fa_inputs(s0: int, s1: int, seed: int = 0):
    """q [s0, 128], k, v [s1, 128] fp16, the three GM FIFOs and o [s0, 128] fp32."""
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(s0, FA_D, generator=g).half()
    k = torch.randn(s1, FA_D, generator=g).half()
    v = torch.randn(s1, FA_D, generator=g).half()
    rows = s0 // FA_S0 * FA_FIFO * FA_S0
    return (q, k, v, torch.zeros(rows, FA_TILE), torch.zeros(rows, FA_TILE, dtype=torch.float16),
            torch.zeros(rows, FA_D), torch.zeros(s0, FA_D))


def fa_reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return torch.softmax(q.float() @ k.float().T * FA_SCALE, dim=-1) @ v.float()


# ---------------------------------------------------------------- top-k (pto-isa a2a3/topk)

TOPK_COLS = 1024  # the row's valid length (the GM row stride may be longer)
TOPK_PAIR = 2 * TOPK_COLS  # sorted (value, index) records of a row, in fp32 elements
TOPK_ROWS = 2  # rows per step (SINGLE_LOOP_ROW)
_U32 = pl.DT_UINT32  # index lanes (TSORT32 takes uint32 only); torch passes them as int32
_SRC_ROW = pl.TileType([1, TOPK_COLS], pl.DT_FP32)  # 4 KiB
_PAIR_ROW = pl.TileType([1, TOPK_PAIR], pl.DT_FP32)  # 8 KiB
_IDX_T = pl.TileType([1, TOPK_COLS], _U32)
# UB: the index row, then per row of the two double-buffered steps (4 rows): source, sorted
# records, merge scratch (per step), the kept records, values and indices
_TK_IDX, _TK_SRC, _TK_S32, _TK_TMP, _TK_MRG = 0x0000, 0x1000, 0x5000, 0xD000, 0x11000
_TK_D, _TK_I = 0x19000, 0x1D000
_TK_SRC_ROWS = [_TK_SRC + 0x1000 * i for i in range(2 * TOPK_ROWS)]
_TK_PAIR_ROWS = [_TK_S32 + 0x2000 * i for i in range(2 * TOPK_ROWS)]
_TK_MRG_ROWS = [_TK_MRG + 0x2000 * i for i in range(2 * TOPK_ROWS)]
_TK_D_ROWS = [_TK_D + 0x1000 * i for i in range(2 * TOPK_ROWS)]
_TK_I_ROWS = [_TK_I + 0x1000 * i for i in range(2 * TOPK_ROWS)]


def make_topk(topk: int = 1000):
    """Top `topk` of each row's first 1024 fp32 values, sorted descending, with their column
    indices: x [rows, cols ≥ 1024], idx [1, 1024] int32 (0..1023), values [rows, topk] fp32,
    indices [rows, topk] int32; launched on `blocks` AIVs, rows a multiple of 4·blocks
    (module docstring). Buffers are per row (slot 2·step parity + row); the two 1024-record
    lists of a row and the kept records' index lanes are views of its slot."""
    keep = 2 * topk  # records kept after the last merge, in fp32 elements
    kept = pl.TileType([1, TOPK_PAIR], pl.DT_FP32, valid_shape=[1, keep])
    out_row = pl.TileType([1, topk], pl.DT_FP32)
    idx_row = pl.TileType([1, topk], _U32)
    v, mte2, mte3 = pl.PipeType.V, pl.PipeType.MTE2, pl.PipeType.MTE3

    @pl.jit(arch="a5", name="topk")
    def topk_kernel(x: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP32],
                    idx: pl.Tensor[[1, TOPK_COLS], _U32],
                    values: pl.Tensor[[pl.DYNAMIC, topk], pl.DT_FP32],
                    indices: pl.Tensor[[pl.DYNAMIC, topk], _U32]):
        with pl.section_vector():
            index = pl.make_tile(_IDX_T, addr=_TK_IDX)
            src = pl.make_tile_group(type=_SRC_ROW, addrs=_TK_SRC_ROWS, depth=4)
            pairs = pl.make_tile_group(type=_PAIR_ROW, addrs=_TK_PAIR_ROWS, depth=4)
            tmps = pl.make_tile_group(type=_PAIR_ROW, addrs=[_TK_TMP, _TK_TMP + 0x2000], depth=2)
            kept_rows = pl.make_tile_group(type=kept, addrs=_TK_MRG_ROWS, depth=4)
            d_rows = pl.make_tile_group(type=out_row, addrs=_TK_D_ROWS, depth=4)
            i_rows = pl.make_tile_group(type=idx_row, addrs=_TK_I_ROWS, depth=4)
            per_core = x.shape[0] // pl.get_block_num()
            first = pl.get_block_idx() * per_core
            pl.load(index, idx, [0, 0])
            for cur in pl.range(2):  # both steps' source rows and result rows start free
                pl.system.sync_src(set_pipe=v, wait_pipe=mte2, event_id=cur)
                pl.system.sync_src(set_pipe=mte3, wait_pipe=v, event_id=4 + cur)
            for step in pl.range(per_core // TOPK_ROWS):
                cur = step % 2
                row0 = first + step * TOPK_ROWS
                pl.system.sync_dst(set_pipe=v, wait_pipe=mte2, event_id=cur)
                for r in pl.range(TOPK_ROWS):
                    pl.load(src[cur * TOPK_ROWS + r], x, [row0 + r, 0])
                pl.system.sync_src(set_pipe=mte2, wait_pipe=v, event_id=cur)
                pl.system.sync_dst(set_pipe=mte2, wait_pipe=v, event_id=cur)
                for r in pl.range(TOPK_ROWS):  # 32-element runs sorted, with their indices
                    pl.sort32(pairs[cur * TOPK_ROWS + r], src[cur * TOPK_ROWS + r], index)
                pl.system.sync_src(set_pipe=v, wait_pipe=mte2, event_id=cur)
                tmp = tmps[cur]
                for r in pl.range(TOPK_ROWS):  # 4-way merges of 64, then 256 elements
                    row = pairs[cur * TOPK_ROWS + r]
                    pl.mrgsort(tmp, row, block_len=64)
                    pl.move(row, tmp)
                    pl.mrgsort(tmp, row, block_len=256)
                    pl.move(row, tmp)
                    lists = pl.reinterpret(row, shape=[2, TOPK_COLS])  # its two halves
                    pl.mrgsort2(lists[0:1, :], lists[1:2, :], row, tmp)
                    pl.move(kept_rows[cur * TOPK_ROWS + r], row)  # the first `topk` records
                pl.system.sync_dst(set_pipe=mte3, wait_pipe=v, event_id=4 + cur)
                for r in pl.range(TOPK_ROWS):
                    pl.gathermask(d_rows[cur * TOPK_ROWS + r], kept_rows[cur * TOPK_ROWS + r],
                                  pattern_mode=1)  # P0101: the values
                pl.system.sync_src(set_pipe=v, wait_pipe=mte3, event_id=cur)
                for r in pl.range(TOPK_ROWS):
                    lanes = pl.reinterpret(kept_rows[cur * TOPK_ROWS + r], dtype=_U32)
                    pl.set_validshape(lanes, [1, keep])
                    pl.gathermask(i_rows[cur * TOPK_ROWS + r], lanes, pattern_mode=2)  # P1010
                pl.system.sync_src(set_pipe=v, wait_pipe=mte3, event_id=2 + cur)
                pl.system.sync_dst(set_pipe=v, wait_pipe=mte3, event_id=cur)
                for r in pl.range(TOPK_ROWS):
                    pl.store(values, d_rows[cur * TOPK_ROWS + r], [row0 + r, 0])
                pl.system.sync_dst(set_pipe=v, wait_pipe=mte3, event_id=2 + cur)
                for r in pl.range(TOPK_ROWS):
                    pl.store(indices, i_rows[cur * TOPK_ROWS + r], [row0 + r, 0])
                pl.system.sync_src(set_pipe=mte3, wait_pipe=v, event_id=4 + cur)
            for cur in pl.range(2):
                pl.system.sync_dst(set_pipe=v, wait_pipe=mte2, event_id=cur)
                pl.system.sync_dst(set_pipe=mte3, wait_pipe=v, event_id=4 + cur)

    return topk_kernel


def topk_inputs(rows: int, cols: int = 1280, topk: int = 1000, seed: int = 0):
    """x [rows, cols] fp32 (distinct values), the index row 0..1023, values, indices."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, cols, generator=g)
    return (x, torch.arange(TOPK_COLS, dtype=torch.int32).reshape(1, TOPK_COLS),
            torch.zeros(rows, topk), torch.zeros(rows, topk, dtype=torch.int32))


def topk_reference(x: torch.Tensor, topk: int = 1000) -> tuple[torch.Tensor, torch.Tensor]:
    values, indices = torch.topk(x[:, :TOPK_COLS], topk, dim=1)
    return values, indices.to(torch.int32)
