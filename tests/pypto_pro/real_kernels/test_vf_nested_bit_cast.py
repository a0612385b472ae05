"""Issue 21 (docs examples): `vf.bit_cast` nested as an operand, as the real docs write it
(`vf.or_(vf.bit_cast(a, dtype=...), vf.bit_cast(b, dtype=...), mask)`). The real backend emits
no instruction for it, only a `(RegTensor<T>&)reg` reference cast, so it nests in other vf
calls and in itself; every other vf op producing a result keeps the assignment form."""
from __future__ import annotations

import pytest
import torch

import pypto_pro.language as pl
from pypto_pro.errors import InvalidOperationError


@pl.vector_function
def _or_as_bits(src_a, src_b, dst):
    mask = vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=pl.DT_FP32)  # noqa: F821
    a = vf.load_align(src_a, 0)  # noqa: F821
    b = vf.load_align(src_b, 0)  # noqa: F821
    # operands reinterpreted (FP32 -> INT32 -> UINT32: a cast of a cast), the result too
    c = vf.or_(vf.bit_cast(vf.bit_cast(a, dtype=pl.DT_INT32), dtype=pl.DT_UINT32),  # noqa: F821
               vf.bit_cast(b, dtype=pl.DT_UINT32), mask)  # noqa: F821
    vf.store_align(dst, vf.bit_cast(c, dtype=pl.DT_FP32), mask)  # noqa: F821


@pl.jit()
def or_kernel(a: pl.Tensor[[1, 64], pl.DT_FP32], b: pl.Tensor[[1, 64], pl.DT_FP32],
              out: pl.Tensor[[1, 64], pl.DT_FP32]):
    tf = pl.TileType(shape=[1, 64], dtype=pl.DT_FP32, target_memory=pl.MemorySpace.Vec)
    ta = pl.make_tile(tf, addr=0, size=256)
    tb = pl.make_tile(tf, addr=256, size=256)
    to = pl.make_tile(tf, addr=512, size=256)
    with pl.section_vector():
        pl.load(ta, a, [0, 0])
        pl.load(tb, b, [0, 0])
        pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
        _or_as_bits(ta, tb, to)
        pl.system.sync_src(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=1)
        pl.system.sync_dst(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=1)
        pl.store(out, to, [0, 0])


def test_nested_bit_casts_compute_the_bitwise_or_everywhere(everywhere):
    g = torch.Generator().manual_seed(21)
    a, b = torch.randn(1, 64, generator=g), torch.randn(1, 64, generator=g)
    want = (a.view(torch.int32) | b.view(torch.int32)).view(torch.float32)

    def launch():
        out = torch.zeros(1, 64)
        or_kernel(a, b, out)
        return out

    for engine, got in everywhere(launch).items():
        assert torch.equal(got.view(torch.int32), want.view(torch.int32)), engine


@pl.vector_function
def _nested_add(src, dst):
    mask = vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=pl.DT_FP32)  # noqa: F821
    a = vf.load_align(src, 0)  # noqa: F821
    c = vf.mul(vf.add(a, a, mask), a, mask)  # noqa: F821
    vf.store_align(dst, c, mask)  # noqa: F821


@pl.jit()
def nested_add_kernel(a: pl.Tensor[[1, 64], pl.DT_FP32], out: pl.Tensor[[1, 64], pl.DT_FP32]):
    tf = pl.TileType(shape=[1, 64], dtype=pl.DT_FP32, target_memory=pl.MemorySpace.Vec)
    ta = pl.make_tile(tf, addr=0, size=256)
    with pl.section_vector():
        _nested_add(ta, ta)


def test_other_nested_vf_ops_keep_the_assignment_form():
    with pytest.raises(InvalidOperationError, match="vf.add must be assigned to a variable"):
        nested_add_kernel.compile()
