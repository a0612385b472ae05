"""Reg API UB access (spec §2.13 "Load/store") against numpy-style slicing of the UB bytes: every
load distribution, DATA_BLOCK_LOAD, `tile + k` operands, store distributions and masks,
unaligned loads / stores, gather / scatter and the bounds errors."""
from __future__ import annotations

import pytest
import torch

from pypto_pro.ir import attrs
from pypto_pro.ir.dtype import DataType as DT
from pypto_pro.ir.types import MemorySpace
from pypto_pro.sim.model.memory import CoreMemory, TileGeometry, TileRef, storage_dtype
from pypto_pro.soc import soc
from pypto_pro.sim.frontend.vf.args import ALL, UBAddr, VFOpError
from pypto_pro.sim.frontend.vf.regs import Reg, lane_count, mask_of_lanes
from pypto_pro.sim.frontend.vf.section import OPS, VFState

D = attrs.LoadDist


def ub_state(dtype: DT, n: int = 1024):
    """A UB with one [1, n] tile of `dtype` at 0x100 holding 0, 1, 2, ... and a second tile."""
    mem = CoreMemory(soc(), "aiv")
    tiles = [TileRef(mem, TileGeometry(1, n, dtype, MemorySpace.Vec, addr=0x100)),
             TileRef(mem, TileGeometry(1, 1024, dtype, MemorySpace.Vec, addr=0x8000))]
    tiles[0].write(torch.arange(n).reshape(1, n).to(storage_dtype(dtype)))
    tiles[1].write(torch.zeros(1, 1024).to(storage_dtype(dtype)))
    return VFState(tiles, mem.buffer(MemorySpace.Vec).clone(), 0), tiles


def call(st, name, *args, dtype=None, old=None, **kw):
    return OPS[name][0](st, list(args), kw, old, dtype)


def values(st, tile: int, dtype: DT, start: int, count: int) -> torch.Tensor:
    g = st.tiles[tile].geometry
    size = dtype.bits // 8
    return st.ub[g.addr + start * size:g.addr + (start + count) * size].clone().view(
        storage_dtype(dtype))


@pytest.mark.parametrize("dtype", [DT.FP32, DT.FP16, DT.INT8, DT.INT32])
def test_load_distributions(dtype):
    st, _ = ub_state(dtype)
    n = lane_count(dtype)
    src = torch.arange(1024).to(storage_dtype(dtype))
    t = UBAddr(0)
    assert torch.equal(call(st, "load_align", t, 8, dtype=dtype).data, src[8:8 + n])
    assert torch.equal(call(st, "load_align", UBAddr(0, 8), 0, dtype=dtype).data, src[8:8 + n])
    assert (call(st, "load_align", t, 5, dist=D.BRC, dtype=dtype).data == src[5]).all()
    assert torch.equal(call(st, "load_align", t, 0, dist=D.US, dtype=dtype).data,
                       src[:n // 2].repeat_interleave(2))
    assert torch.equal(call(st, "load_align", t, 0, dist=D.DS, dtype=dtype).data,
                       src[0:2 * n:2])
    per_block = 32 // (dtype.bits // 8)
    assert torch.equal(call(st, "load_align", t, 0, dist=D.BLK, dtype=dtype).data,
                       src[:per_block].repeat(8))
    assert torch.equal(call(st, "load_align", t, 0, dist=D.E2B, dtype=dtype).data,
                       src[:8].repeat_interleave(per_block))
    blocks = call(st, "load_align", t, 0, None, None, attrs.DataCopyMode.DATA_BLOCK_LOAD, 2,
                  dtype=dtype)
    assert torch.equal(blocks.data, src[:16 * per_block].reshape(8, 2, per_block)[:, 0].reshape(-1))
    assert torch.equal(call(st, "load", t, 3, dtype=dtype).data, src[3:3 + n])


def test_unpack_loads_zero_extend():
    st, _ = ub_state(DT.INT16)
    got = call(st, "load_align", UBAddr(0), 0, dist=D.UNPK_B16, dtype=DT.INT32)
    assert torch.equal(got.data, torch.arange(64, dtype=torch.int32))
    st8, _ = ub_state(DT.UINT8)
    got = call(st8, "load_align", UBAddr(0), 0, dist=D.UNPK4, dtype=DT.INT32)
    assert torch.equal(got.data, torch.arange(64, dtype=torch.int32))
    with pytest.raises(VFOpError, match="two registers"):
        call(st, "load_align", UBAddr(0), 0, dist=D.DINTLV_B16, dtype=DT.INT16)


@pytest.mark.parametrize("dtype", [DT.FP32, DT.BF16, DT.UINT8])
def test_stores(dtype):
    st, _ = ub_state(dtype)
    n = lane_count(dtype)
    reg = Reg(torch.full((n,), 7).to(storage_dtype(dtype)), dtype)
    half = mask_of_lanes(torch.arange(n) < n // 2, dtype)
    call(st, "store_align", UBAddr(1), reg, half, offset=4)
    out = values(st, 1, dtype, 0, n + 4)
    assert (out[4:4 + n // 2] == 7).all() and not out[:4].float().any() and \
        not out[4 + n // 2:].float().any()
    assert st.dirty[1] == [0x8000 + 4 * dtype.bits // 8, 0x8000 + (4 + n // 2) * dtype.bits // 8]
    call(st, "store", UBAddr(1, 300), reg, 2, attrs.StoreDist.FIRST_ELEMENT, ALL)
    assert values(st, 1, dtype, 301, 3).tolist() == [0, 7, 0]


def test_pack_stores_and_unaligned_access():
    st, _ = ub_state(DT.INT32)
    reg = Reg(torch.arange(64, dtype=torch.int32) + 0x10000, DT.INT32)
    call(st, "store_align", UBAddr(1), reg, ALL, attrs.StoreDist.PACK)
    assert torch.equal(values(st, 1, DT.INT16, 0, 64), torch.arange(64, dtype=torch.int16))
    call(st, "store_align", UBAddr(1), reg, ALL, attrs.StoreDist.PACK4)
    assert torch.equal(values(st, 1, DT.INT8, 0, 64), torch.arange(64, dtype=torch.int8))
    ureg = call(st, "load_unalign_init", UBAddr(0), 3, dtype=DT.INT32)
    got = call(st, "load_unalign", ureg, UBAddr(0), 3, dtype=DT.INT32)
    assert torch.equal(got.data, torch.arange(3, 67, dtype=torch.int32))
    sreg = call(st, "unalign_reg_for_store", dtype=DT.INT32)
    call(st, "store_unalign", UBAddr(1), got, sreg, 5)
    call(st, "store_unalign_post", UBAddr(1), sreg, 69)
    assert torch.equal(values(st, 1, DT.INT32, 5, 64), got.data)


def test_gather_scatter_and_address_registers():
    st, _ = ub_state(DT.FP32)
    idx = call(st, "create_addr_reg", 10, 3, dtype=DT.INT32)
    assert torch.equal(idx.data, 10 + 3 * torch.arange(64, dtype=torch.int32))
    even = mask_of_lanes(torch.arange(64) % 2 == 0, DT.FP32)
    got = call(st, "gather", UBAddr(0), idx, even, dtype=DT.FP32)
    expected = torch.where(torch.arange(64) % 2 == 0, (10 + 3 * torch.arange(64)).float(), 0.)
    assert torch.equal(got.data, expected)
    rev = call(st, "arange", 63, dtype=DT.INT32, index_order=attrs.IndexOrder.DECREASE_ORDER)
    call(st, "scatter", UBAddr(1), got, rev, ALL)
    assert torch.equal(values(st, 1, DT.FP32, 0, 64), expected.flip(0))


def test_bounds_errors():
    st, _ = ub_state(DT.FP32, n=64)
    reg = Reg(torch.ones(64), DT.FP32)
    with pytest.raises(VFOpError, match="outside its tile"):
        call(st, "store_align", UBAddr(1), reg, ALL, offset=1000)
    with pytest.raises(VFOpError, match="outside the"):
        call(st, "load_align", UBAddr(1), 10**6, dtype=DT.FP32)
    # a masked-off tail may run past the tile: only active lanes count
    tail = mask_of_lanes(torch.arange(64) < 8, DT.FP32)
    call(st, "store_align", UBAddr(1), reg, tail, offset=1016)
    assert (values(st, 1, DT.FP32, 1016, 8) == 1).all()
