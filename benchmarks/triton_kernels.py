"""Triton twins of the benchmark kernels, for Triton's CPU interpreter (`TRITON_INTERPRET=1`).

Same tiling as our DSL kernels: one program per [128, 128] add tile, per 16-row softmax /
layernorm block, per [128, 128] matmul output tile with a K loop of 128, per 64-row block of the
fused matmul + softmax. One difference, in Triton's favour: the fused kernel holds a whole
[64, N] row block in registers (one `tl.dot` per K step over all N, softmax in registers), where
ours computes S in [64, 128] pieces through a GM workspace; fewer, larger numpy calls make the
interpreter faster.

`TRITON_INTERPRET` is read when triton's own functions (`tl.max`, `tl.sum`, ...) and our kernels
are decorated, so importing this module sets it (unless already set): import it before anything
else imports triton.
"""
from __future__ import annotations

import os

os.environ.setdefault("TRITON_INTERPRET", "1")

import torch
import triton
import triton.language as tl


@triton.jit
def _add(x, y, z, n_cols, BLOCK: tl.constexpr):
    tiles_n = n_cols // BLOCK
    pid = tl.program_id(0)
    rows = (pid // tiles_n) * BLOCK + tl.arange(0, BLOCK)
    cols = (pid % tiles_n) * BLOCK + tl.arange(0, BLOCK)
    offs = rows[:, None] * n_cols + cols[None, :]
    tl.store(z + offs, tl.load(x + offs) + tl.load(y + offs))


@triton.jit
def _softmax(x, y, n_cols, ROWS: tl.constexpr, COLS: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    offs = rows[:, None] * n_cols + tl.arange(0, COLS)[None, :]
    s = tl.load(x + offs)
    e = tl.exp(s - tl.max(s, axis=1)[:, None])
    tl.store(y + offs, e / tl.sum(e, axis=1)[:, None])


@triton.jit
def _layernorm(x, gamma, beta, y, n_cols, eps, ROWS: tl.constexpr, COLS: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, COLS)
    offs = rows[:, None] * n_cols + cols[None, :]
    v = tl.load(x + offs)
    xc = v - (tl.sum(v, axis=1) / COLS)[:, None]
    rstd = 1.0 / tl.sqrt(tl.sum(xc * xc, axis=1) / COLS + eps)
    out = xc * rstd[:, None] * tl.load(gamma + cols)[None, :] + tl.load(beta + cols)[None, :]
    tl.store(y + offs, out)


@triton.jit
def _matmul(a, b, c, n, k, BLOCK: tl.constexpr):
    tiles_n = n // BLOCK
    pid = tl.program_id(0)
    rows = (pid // tiles_n) * BLOCK + tl.arange(0, BLOCK)
    cols = (pid % tiles_n) * BLOCK + tl.arange(0, BLOCK)
    ks = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for k0 in range(0, k, BLOCK):
        at = tl.load(a + rows[:, None] * k + (k0 + ks)[None, :])
        bt = tl.load(b + (k0 + ks)[:, None] * n + cols[None, :])
        acc += tl.dot(at, bt)
    tl.store(c + rows[:, None] * n + cols[None, :], acc)


@triton.jit
def _matmul_softmax(a, b, out, k, BM: tl.constexpr, BK: tl.constexpr, N: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.arange(0, N)
    ks = tl.arange(0, BK)
    acc = tl.zeros((BM, N), dtype=tl.float32)
    for k0 in range(0, k, BK):
        at = tl.load(a + rows[:, None] * k + (k0 + ks)[None, :])
        bt = tl.load(b + (k0 + ks)[:, None] * N + cols[None, :])
        acc += tl.dot(at, bt)
    e = tl.exp(acc - tl.max(acc, axis=1)[:, None])
    tl.store(out + rows[:, None] * N + cols[None, :], e / tl.sum(e, axis=1)[:, None])


def _contiguous(*ts: torch.Tensor) -> None:
    for t in ts:
        if not t.is_contiguous():
            raise ValueError("the Triton benchmark kernels take contiguous tensors")


def add(x: torch.Tensor, y: torch.Tensor, z: torch.Tensor, block: int = 128) -> None:
    """z = x + y in [block, block] tiles; both dims multiples of `block`."""
    _contiguous(x, y, z)
    m, n = x.shape
    _add[((m // block) * (n // block),)](x, y, z, n, BLOCK=block)


def softmax(x: torch.Tensor, y: torch.Tensor, rows: int = 16) -> None:
    """Row softmax in blocks of `rows` rows (whole rows per program)."""
    _contiguous(x, y)
    m, n = x.shape
    _softmax[(m // rows,)](x, y, n, ROWS=rows, COLS=n)


def layernorm(x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor, y: torch.Tensor,
              eps: float, rows: int = 16) -> None:
    _contiguous(x, gamma, beta, y)
    m, n = x.shape
    _layernorm[(m // rows,)](x, gamma, beta, y, n, eps, ROWS=rows, COLS=n)


def matmul(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, block: int = 128) -> None:
    """c (fp32) = a @ b (fp16) with block×block×block tiles."""
    _contiguous(a, b, c)
    (m, k), n = a.shape, b.shape[1]
    _matmul[((m // block) * (n // block),)](a, b, c, n, k, BLOCK=block)


def matmul_softmax(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, bm: int = 64,
                   bk: int = 128) -> None:
    """out = softmax(a @ b, dim=-1), one program per `bm` rows."""
    _contiguous(a, b, out)
    (m, k), n = a.shape, b.shape[1]
    _matmul_softmax[(m // bm,)](a, b, out, k, BM=bm, BK=bk, N=n)
