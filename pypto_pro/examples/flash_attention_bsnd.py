"""Flash attention over a batch of heads in the BSND layout, as a preload pipeline with the
KV-tile softmax written with the Reg API (the tkv preload of the real flash attention
kernels; spec §6.2 walkthrough 6, §2.12.6).

O[b, :, n] = softmax(Q[b, :, n]·K[b, :, n]ᵀ/√d)·V[b, :, n] for Q, K, V, O in BSND ([batch,
seq, heads, 128], FP16). A head's rows are not contiguous in BSND: row s of head (b, n) sits
at element ((b·S + s)·N + n)·128, so each head is a strided view — `pl.make_tensor(
pl.addptr(pl.make_ptr(q), offset), [S, 128], [N·128, 1])` — and the stages load and store
through the views exactly as through a [S, 128] tensor (the Q tile transposed into L1, K / V
tiles, the O rows). Teaches:

* strided head views of a 4-D tensor (`make_ptr`, `addptr`, `make_tensor` with a stride), made
  once per (head, Q tile) task outside the stage loop;
* the same four `@pl.pipeline.stage` functions as `flash_attention_preload` (Sᵀ = K·Qᵀ split
  by columns to the AIVs, the VF online softmax on Sᵀ's rows, P·V, the VF rescale / normalise),
  reused unchanged: a stage is an ordinary function of its tiles and tensors;
* `PipelineConfig(preload=2)`: the cube works two KV tiles ahead of the AIVs' softmax, all
  cross-core synchronisation inserted by the transform from the rings' `fwd_ids` / `bwd_ids`.

Budgets: those of `flash_attention_preload` (the same buffers).
"""
from __future__ import annotations

import torch

import pypto_pro.language as pl

from . import flash_attention_preload as fp
from .flash_attention_preload import compute_gu, compute_p, compute_pv, compute_qk

TARGETS = ("cube", "vector")
KERNEL_TYPE = "mix"
RTOL, ATOL = fp.RTOL, fp.ATOL
TS, TKV, D, HALF, NEG_BIG, SCALE = fp.TS, fp.TKV, fp.D, fp.HALF, fp.NEG_BIG, fp.SCALE
DYN = pl.DYNAMIC


def head_view(x, b, n, rows):
    """Head (b, n) of a BSND tensor x as a [rows, 128] matrix (row stride heads·128)."""
    heads = x.shape[2]
    start = (b * rows * heads + n) * D
    return pl.make_tensor(pl.addptr(pl.make_ptr(x), start), [rows, D], [heads * D, 1])


def _flash_attention_bsnd(q: pl.Tensor[[DYN, DYN, DYN, D], pl.DT_FP16],
                          k: pl.Tensor[[DYN, DYN, DYN, D], pl.DT_FP16],
                          v: pl.Tensor[[DYN, DYN, DYN, D], pl.DT_FP16],
                          o: pl.Tensor[[DYN, DYN, DYN, D], pl.DT_FP16]):
    qk_vec = pl.make_tile_group(type=fp.QK_VEC, addrs=[0x00000, 0x08000], mutex_ids=[14, 15],
                                fwd_ids=[0, 1], bwd_ids=[2, 3])
    pv_vec = pl.make_tile_group(type=fp.PV_VEC, addrs=[0x10000, 0x18000], mutex_ids=[16, 17],
                                fwd_ids=[7, 8], bwd_ids=[9, 10])
    p_mat = pl.make_tile_group(type=fp.P_MAT, addrs=[0x30000, 0x38000, 0x40000],
                               mutex_ids=[18, 19, 20], fwd_ids=[4, 5, 6])
    sq = q.shape[1]
    skv = k.shape[1]
    heads = q.shape[2]
    q_tiles = sq // TS
    kv_tiles = skv // TKV
    tasks = q.shape[0] * heads * q_tiles
    cores = pl.get_block_num()
    core = pl.get_block_idx() // pl.get_subblock_num()  # the block, on both targets
    sub = pl.get_subblock_idx()

    with pl.section_cube():
        q_l1, k_l1, v_l1, k_left, p_left, q_right, v_right, s_acc, o_acc = fp.cube_buffers()
    with pl.section_vector():
        p16, o16, o_run, m_run, l_run, corr_ring = fp.vector_buffers()

    for task in pl.range(core, tasks, cores):
        head = task // q_tiles
        b = head // heads
        n = head % heads
        qi = task % q_tiles
        qh = head_view(q, b, n, sq)
        kh = head_view(k, b, n, skv)
        vh = head_view(v, b, n, skv)
        oh = head_view(o, b, n, sq)
        with pl.section_cube():
            q_slot = q_l1.next()
        with pl.section_vector():
            pl.expands(m_run, NEG_BIG)
            pl.expands(l_run, 0.0)
        row0 = qi * TS + sub * HALF
        last = kv_tiles - 1
        for ki in pl.range(kv_tiles):
            with pl.section_cube():
                compute_qk(qk_vec, qh, kh, q_slot, q_right, k_l1, k_left, s_acc, qi, ki)
            with pl.section_vector():
                compute_p(qk_vec, p_mat, p16, m_run, l_run, corr_ring, sub, ki)
            with pl.section_cube():
                compute_pv(p_mat, pv_vec, vh, v_l1, v_right, p_left, o_acc, ki)
            with pl.section_vector():
                compute_gu(pv_vec, o_run, o16, corr_ring, l_run, oh, row0, ki, last)


flash_attention_bsnd_kernel = pl.jit(arch="a5", name="flash_attention_bsnd",
                                     pipeline=pl.pipeline.PipelineConfig(preload=2))(
    _flash_attention_bsnd)

KERNELS = {"flash_attention_bsnd_kernel": flash_attention_bsnd_kernel}


def make_inputs(batch: int = 1, sq: int = 128, skv: int = 256, heads: int = 2,
                seed: int = 0):
    """q [batch, sq, heads, 128], k and v [batch, skv, heads, 128] FP16 (BSND) and a zero o;
    sq and skv multiples of 128."""
    if sq % TS or skv % TKV or sq <= 0 or skv <= 0:
        raise ValueError(f"sq and skv must be positive multiples of 128, got {sq}, {skv}")
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(batch, sq, heads, D, generator=g).to(torch.float16)
    k = torch.randn(batch, skv, heads, D, generator=g).to(torch.float16)
    v = torch.randn(batch, skv, heads, D, generator=g).to(torch.float16)
    return q, k, v, torch.zeros(batch, sq, heads, D, dtype=torch.float16)


def reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o=None) -> torch.Tensor:
    qh, kh, vh = (x.float().transpose(1, 2) for x in (q, k, v))  # BSND → BNSD
    s = (qh @ kh.transpose(-1, -2)) * SCALE
    return (torch.softmax(s, dim=-1) @ vh).transpose(1, 2).to(torch.float16)


def block_dim(q: torch.Tensor, *rest) -> int:
    return max(1, min(32, q.shape[0] * q.shape[2] * (q.shape[1] // TS)))


def run(*args, kernel=flash_attention_bsnd_kernel) -> torch.Tensor:
    kernel[None, block_dim(*args)](*args)
    return args[3]
