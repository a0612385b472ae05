"""Issue 21 (docs examples): `pl.fillpad(dst, src, mode=INPLACE)` with source and destination
made as two tile groups at one address, as the real docs write it. INPLACE fills the padding in
place, so its two operands are one buffer by the op's contract: the overlap check does not
refuse them (two groups at one address used by any other op still are)."""
from __future__ import annotations

import pytest
import torch

import pypto_pro.language as pl
from pypto_pro.errors import InvalidTile

SRC = pl.TileType(shape=[8, 8], dtype=pl.DT_INT32, target_memory=pl.MemorySpace.Vec,
                  pad=pl.TilePad.zero, valid_shape=[-1, -1])
DST = pl.TileType(shape=[8, 8], dtype=pl.DT_INT32, target_memory=pl.MemorySpace.Vec,
                  pad=pl.TilePad.zero)


@pl.jit(auto_mutex=True)
def fillpad_inplace_kernel(x: pl.Tensor[[8, 8], pl.DT_INT32], z: pl.Tensor[[8, 8], pl.DT_INT32]):
    src = pl.make_tile_group(type=SRC, addrs=0x0000, mutex_ids=[0])
    dst = pl.make_tile_group(type=DST, addrs=0x0000, mutex_ids=[1])
    with pl.section_vector():
        cur_src = src.current()
        cur_dst = dst.current()
        pl.set_validshape(cur_src, [5, 7])
        pl.load(cur_src, x, [0, 0])
        pl.fillpad(cur_dst, cur_src, mode=pl.FillPadMode.INPLACE)
        pl.store(z, cur_dst, [0, 0])


def test_inplace_fillpad_keeps_the_valid_block_and_zeroes_the_rest_everywhere(everywhere):
    x = torch.arange(1, 65, dtype=torch.int32).reshape(8, 8)
    want = torch.zeros(8, 8, dtype=torch.int32)
    want[:5, :7] = x[:5, :7]

    def launch():
        z = torch.full((8, 8), -1, dtype=torch.int32)
        fillpad_inplace_kernel(x, z)
        return z

    for engine, got in everywhere(launch).items():
        assert torch.equal(got, want), engine


@pl.jit(auto_mutex=True)
def shared_by_normal_fillpad(x: pl.Tensor[[8, 8], pl.DT_INT32],
                             z: pl.Tensor[[8, 8], pl.DT_INT32]):
    src = pl.make_tile_group(type=SRC, addrs=0x0000, mutex_ids=[0])
    dst = pl.make_tile_group(type=DST, addrs=0x0000, mutex_ids=[1])
    with pl.section_vector():
        cur_src = src.current()
        cur_dst = dst.current()
        pl.set_validshape(cur_src, [5, 7])
        pl.load(cur_src, x, [0, 0])
        pl.fillpad(cur_dst, cur_src)
        pl.store(z, cur_dst, [0, 0])


def test_groups_at_one_address_stay_refused_for_other_ops():
    with pytest.raises(InvalidTile, match="share bytes"):
        shared_by_normal_fillpad.compile()
