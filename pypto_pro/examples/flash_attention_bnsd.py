"""Flash attention over a batch of heads in the BNSD layout, with an optional causal mask: raw
pointers, a TilingData class and per-head tensor views, the way the real PyPTO Pro flash
attention kernels take their inputs (TilingData tutorial; the CV-fused walkthrough's cube ↔
vector hand-off).

O[b, n] = softmax(Q[b, n]·K[b, n]ᵀ/√d + mask)·V[b, n] for Q, K, V, O in BNSD ([batch, heads,
seq, 128], FP16), mask the causal one when `tiling.causal` is set (Sq = Skv then). Teaches:

* `q: pl.Ptr[pl.DT_FP16]` parameters and a `@dataclass` TilingData (`FaTiling`, last
  parameter, fields read as runtime scalars: loop bounds, the causal flag);
* per-head views: `pl.make_tensor(pl.addptr(q, offset), [sq, D])` — head (b, n) of a BNSD
  tensor is a contiguous [S, 128] matrix at element offset ((b·N + n)·S)·128 — built by a
  helper that returns all four views as a tuple (`qh, kh, vh, oh = head_views(...)`);
* the work split: every `get_block_num()`-th (head, Q tile) task per block, decoded by a
  helper returning a tuple (`b, n, qi = task_of(...)`);
* buffers organised in a `pl.make_tuple` (`cube.k_l1.next()`, `cube.left[1]`), read like the
  groups in them;
* the causal mask: KV tiles past the diagonal are skipped (the KV loop ends at `qi + 1`), the
  diagonal tile adds an additive mask tile (0 / −3·10³⁸ above the diagonal), loaded once.

The tile pipeline and the cross-core protocol are those of `flash_attention`, whose hand-off
helpers (`fa.send_s`, `fa.online_softmax`, ...) this kernel calls; see its docstring.

Budgets: L1 192 KiB, L0A / L0B 64 KiB, L0C 128 KiB, UB ≈ 226 KiB per AIV.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

import pypto_pro.language as pl

from . import flash_attention as fa

TARGETS = ("cube", "vector")
KERNEL_TYPE = "mix"
RTOL, ATOL = fa.RTOL, fa.ATOL
TS, TKV, D, HALF, SCALE, NEG_BIG = fa.TS, fa.TKV, fa.D, fa.HALF, fa.SCALE, fa.NEG_BIG
MASK_UB = pl.TileType([HALF, TKV], pl.DT_FP32)  # 32 KiB: this AIV's rows of the diagonal mask


@dataclass
class FaTiling:
    """What the host computes for a launch: the BNSD extents and the mask switch."""

    batch: int
    heads: int
    sq: int
    skv: int
    causal: int


def task_of(task, heads, q_tiles):
    """(batch, head, Q tile) of a flat task number."""
    head = task // q_tiles
    return head // heads, head % heads, task % q_tiles


def head_views(q, k, v, o, b, n, t: FaTiling):
    """The [S, 128] matrices of head (b, n) of the four BNSD tensors."""
    head = b * t.heads + n
    return (pl.make_tensor(pl.addptr(q, head * t.sq * D), [t.sq, D]),
            pl.make_tensor(pl.addptr(k, head * t.skv * D), [t.skv, D]),
            pl.make_tensor(pl.addptr(v, head * t.skv * D), [t.skv, D]),
            pl.make_tensor(pl.addptr(o, head * t.sq * D), [t.sq, D]))


def kv_tiles_of(t: FaTiling, qi):
    """How many KV tiles Q tile `qi` attends to: up to its diagonal tile when causal."""
    if t.causal != 0:
        return qi + 1
    return t.skv // TKV


@pl.jit(arch="a5")
def flash_attention_bnsd_kernel(q: pl.Ptr[pl.DT_FP16], k: pl.Ptr[pl.DT_FP16],
                                v: pl.Ptr[pl.DT_FP16], o: pl.Ptr[pl.DT_FP16],
                                atten_mask: pl.Tensor[[TS, TKV], pl.DT_FP32],
                                tiling: FaTiling):
    s_buf = pl.make_tile_group(type=fa.S_UB, addrs=0x00000, depth=fa.S_SLOTS)
    pv_buf = pl.make_tile_group(type=fa.O_UB, addrs=0x10000, depth=1)
    p_buf = pl.make_tile_group(type=fa.P_L1, addrs=0x28000, depth=1)
    q_tiles = tiling.sq // TS
    tasks = tiling.batch * tiling.heads * q_tiles
    cores = pl.get_block_num()
    core = pl.get_block_idx() // pl.get_subblock_num()  # the block, on both targets

    with pl.section_cube():
        cube = pl.make_tuple(
            q_l1=pl.make_tile_group(type=fa.Q_L1, addrs=0x00000, mutex_ids=[0]),
            k_l1=pl.make_tile_group(type=fa.KT_L1, addrs=0x08000, mutex_ids=[1, 2]),
            v_l1=pl.make_tile_group(type=fa.V_L1, addrs=0x18000, mutex_ids=[3, 4]),
            left=(pl.make_tile_group(type=fa.LEFT, addrs=0x0000, mutex_ids=[5]),
                  pl.make_tile_group(type=fa.LEFT, addrs=0x8000, mutex_ids=[6])),
            right=(pl.make_tile_group(type=fa.RIGHT, addrs=0x0000, mutex_ids=[7]),
                   pl.make_tile_group(type=fa.RIGHT, addrs=0x8000, mutex_ids=[8])),
            acc=(pl.make_tile_group(type=fa.ACC, addrs=0x00000, mutex_ids=[9]),
                 pl.make_tile_group(type=fa.ACC, addrs=0x10000, mutex_ids=[10])))
        pl.system.set_cross_core(pipe=fa.MTE1, event_id=fa.P_FREE)  # the P slot starts free
        for task in pl.range(core, tasks, cores):
            b, n, qi = task_of(task, tiling.heads, q_tiles)
            qh, kh, vh, _ = head_views(q, k, v, o, b, n, tiling)
            qt = cube.q_l1.next()
            pl.load_tile(qt, qh, [qi, 0])
            ql = cube.left[0].next()
            pl.move(ql, qt)
            for ki in pl.range(kv_tiles_of(tiling, qi)):
                kt = cube.k_l1.next()  # S = Q·Kᵀ → the AIVs
                pl.load(kt, kh, [ki * TKV, 0], order=[1, 0])
                kr = cube.right[0].next()
                pl.move(kr, kt)
                sa = cube.acc[0].next()
                pl.matmul(sa, ql, kr)
                fa.send_s(s_buf, sa)
                vt = cube.v_l1.next()  # O_t = P·V → the AIVs
                pl.load_tile(vt, vh, [ki, 0])
                vr = cube.right[1].next()
                pl.move(vr, vt)
                pll = fa.take_p(p_buf, cube.left[1])
                oa = cube.acc[1].next()
                pl.matmul(oa, pll, vr)
                fa.send_pv(pv_buf, oa)
        fa.drain_cube()

    with pl.section_vector():
        st = fa.vector_state()
        mask = pl.make_tile(MASK_UB, addr=0x31000)
        sub = pl.get_subblock_idx()
        pl.load(mask, atten_mask, [sub * HALF, 0])
        pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=fa.V, event_id=4)
        pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=fa.V, event_id=4)
        fa.prefire_vector()
        for task in pl.range(core, tasks, cores):
            b, n, qi = task_of(task, tiling.heads, q_tiles)
            _, _, _, oh = head_views(q, k, v, o, b, n, tiling)
            fa.start_rows(st)
            for ki in pl.range(kv_tiles_of(tiling, qi)):
                s = fa.take_s(s_buf)
                pl.mul(s, s, SCALE)
                if tiling.causal != 0 and ki == qi:
                    pl.add(s, s, mask)  # the diagonal tile: nothing above the diagonal
                fa.online_softmax(s, st)
                fa.send_p(st, p_buf, sub)
                fa.add_pv(st, pv_buf)
            fa.store_rows(st, oh, qi * TS + sub * HALF)
        fa.drain_vector()


KERNELS = {"flash_attention_bnsd_kernel": flash_attention_bnsd_kernel}


def causal_mask() -> torch.Tensor:
    """The additive mask of a diagonal tile: 0 on and below the diagonal, −3·10³⁸ above."""
    above = torch.triu(torch.ones(TS, TKV, dtype=torch.bool), diagonal=1)
    return torch.zeros(TS, TKV).masked_fill(above, NEG_BIG)


def make_inputs(batch: int = 1, heads: int = 2, sq: int = 256, skv: int = 256,
                causal: int = 1, seed: int = 0):
    """q [batch, heads, sq, 128], k and v [batch, heads, skv, 128] FP16 (BNSD), a zero o, the
    diagonal mask and the tiling; sq and skv multiples of 128, equal when causal."""
    if sq % TS or skv % TKV or sq <= 0 or skv <= 0 or (causal and sq != skv):
        raise ValueError(f"sq and skv must be positive multiples of 128 (equal when causal), "
                         f"got {sq}, {skv}")
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(batch, heads, sq, D, generator=g).to(torch.float16)
    k = torch.randn(batch, heads, skv, D, generator=g).to(torch.float16)
    v = torch.randn(batch, heads, skv, D, generator=g).to(torch.float16)
    o = torch.zeros(batch, heads, sq, D, dtype=torch.float16)
    return q, k, v, o, causal_mask(), FaTiling(batch, heads, sq, skv, int(causal))


def reference(q, k, v, o=None, atten_mask=None, tiling: FaTiling | None = None):
    s = (q.float() @ k.float().transpose(-1, -2)) * SCALE
    if tiling is not None and tiling.causal:
        s = s.masked_fill(torch.triu(torch.ones_like(s, dtype=torch.bool), diagonal=1),
                          float("-inf"))
    return (torch.softmax(s, dim=-1) @ v.float()).to(torch.float16)


def block_dim(q: torch.Tensor, *rest) -> int:
    return max(1, min(32, q.shape[0] * q.shape[1] * (q.shape[2] // TS)))


def run(*args, kernel=flash_attention_bnsd_kernel) -> torch.Tensor:
    kernel[None, block_dim(*args)](*args)
    return args[3]
