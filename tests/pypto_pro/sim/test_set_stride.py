"""`set_stride` gives the core's tensor variable new strides from the next instruction on: a
load issued before it still reads the window it was issued with, though it runs later."""
from __future__ import annotations

import torch

import pypto_pro.language as pl

T16 = pl.TileType([16, 16], pl.DT_FP32)
MTE2, MTE3 = pl.PipeType.MTE2, pl.PipeType.MTE3
OUT = pl.Tensor[[16, 16], pl.DT_FP32]


@pl.jit(arch="a5", auto_mutex=False)
def restride(x: pl.Tensor[[64, 64], pl.DT_FP32], before: OUT, after: OUT):
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        b = pl.make_tile(T16, addr=0x1000)
        pl.load(a, x, [0, 0])  # still queued on MTE2 when the scalar unit runs set_stride
        pl.set_stride(x, [1, 64])  # x read column-major: its transpose
        pl.load(b, x, [0, 0])
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.store(before, a, [0, 0])
        pl.store(after, b, [0, 0])


def test_set_stride_applies_from_the_next_instruction_on():
    x = torch.arange(4096.0).reshape(64, 64)
    before, after = torch.zeros(16, 16), torch.zeros(16, 16)
    restride[None, 2](x, before, after)  # (two cores: each restrides its own view)
    assert torch.equal(before, x[:16, :16])
    assert torch.equal(after, x.T[:16, :16])
