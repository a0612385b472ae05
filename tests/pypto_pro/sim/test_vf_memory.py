"""Reg API UB access (spec §2.13 "Load/store") as the real backend emits it, against slicing of
the UB bytes: load distributions (explicit widths and the generic names resolved by the
register), DINTLV pairs, DataBlock loads / stores under a predicate, post-update cursors,
address registers, offsets counted in the tile's elements, predicate loads / stores, store
distributions, the UnalignReg buffers of unaligned access, vf.load / vf.store, gathers,
scatters and the bounds errors."""
from __future__ import annotations

import pytest
import torch

from pypto_pro.ir import attrs
from pypto_pro.ir.dtype import DataType as DT
from pypto_pro.ir.types import MemorySpace
from pypto_pro.sim.model.memory import CoreMemory, TileGeometry, TileRef, storage_dtype
from pypto_pro.soc import soc
from pypto_pro.sim.frontend.vf.args import ALL, UBAddr, VFOpError
from pypto_pro.sim.frontend.vf.regs import Mask, Reg, lane_count, mask_of_lanes
from pypto_pro.sim.frontend.vf.section import MASK_FORMS, OPS, VFState

D, S = attrs.LoadDist, attrs.StoreDist
BLOCKS = attrs.DataCopyMode.DATA_BLOCK_COPY


def ub_state(dtype: DT, n: int = 1024):
    """A UB with one [1, n] tile of `dtype` at 0x100 holding 0, 1, 2, ... and a zero one."""
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
    per_block = 32 // (dtype.bits // 8)
    assert torch.equal(call(st, "load_align", t, 0, dist=D.BLK, dtype=dtype).data,
                       src[:per_block].repeat(8))
    if dtype.bits <= 16:  # US / DS: the B8 / B16 granularity of the register
        assert torch.equal(call(st, "load_align", t, 0, dist=D.US, dtype=dtype).data,
                           src[:n // 2].repeat_interleave(2))
        assert torch.equal(call(st, "load_align", t, 0, dist=D.DS, dtype=dtype).data,
                           src[0:2 * n:2])
    if dtype.bits >= 16:
        assert torch.equal(call(st, "load_align", t, 0, dist=D.E2B, dtype=dtype).data,
                           src[:8].repeat_interleave(per_block))


def test_generic_distributions_of_wide_registers_use_16_bit_elements():
    """US / DS on a b32 register are US_B16 / DS_B16, as the backend resolves them."""
    st, _ = ub_state(DT.INT16)
    h = torch.arange(1024, dtype=torch.int16)
    up = call(st, "load_align", UBAddr(0), 0, dist=D.US, dtype=DT.INT32)
    assert torch.equal(up.data.view(torch.int16), h[:64].repeat_interleave(2))
    down = call(st, "load_align", UBAddr(0), 0, dist=D.DS, dtype=DT.INT32)
    assert torch.equal(down.data.view(torch.int16), h[0:256:2])
    brc = call(st, "load_align", UBAddr(0), 4, dist=D.BRC_B16, dtype=DT.INT32)
    assert (brc.data.view(torch.int16) == 4).all()
    odd = call(st, "load_align", UBAddr(0), 3, dist=D.BRC_B16, dtype=DT.INT32)
    assert (odd.data.view(torch.int16) == 2).all()  # 3 halves = 1.5 words: C division


def test_unpack_distributions_put_zero_elements_between():
    st, _ = ub_state(DT.INT16)
    got = call(st, "load_align", UBAddr(0), 0, dist=D.UNPK_B16, dtype=DT.INT32)
    assert torch.equal(got.data, torch.arange(64, dtype=torch.int32))  # u16 → u32 lanes
    generic = call(st, "load_align", UBAddr(0), 0, dist=D.UNPK, dtype=DT.INT16)
    assert torch.equal(generic.data[0::2], torch.arange(64, dtype=torch.int16))
    assert not generic.data[1::2].any()  # UNPK_B16 on a b16 register: zero elements between
    st8, _ = ub_state(DT.UINT8)
    got = call(st8, "load_align", UBAddr(0), 0, dist=D.UNPK4, dtype=DT.INT32)
    assert torch.equal(got.data, torch.arange(64, dtype=torch.int32))


def test_dintlv_loads_two_registers():
    st, _ = ub_state(DT.FP32)
    even, odd = call(st, "load_align", UBAddr(0), 0, dist=D.DINTLV_B32, dtype=DT.FP32)
    assert torch.equal(even.data, torch.arange(0.0, 128, 2))
    assert torch.equal(odd.data, torch.arange(1.0, 128, 2))


def test_offsets_count_tile_elements_and_cursors_advance():
    st, _ = ub_state(DT.FP16)
    h = torch.arange(1024, dtype=torch.float16)
    # a b32 register from an FP16 tile: offset 4 is 4 halves (8 bytes)
    got = call(st, "load_align", UBAddr(0), 4, dtype=DT.UINT32)
    assert torch.equal(got.data.view(torch.float16), h[4:132])
    first = call(st, "load_align", UBAddr(0), 128, post_update=True, dtype=DT.FP16)
    second = call(st, "load_align", UBAddr(0), 128, post_update=True, dtype=DT.FP16)
    assert torch.equal(first.data, h[:128]) and torch.equal(second.data, h[128:256])
    areg = call(st, "create_addr_reg", 2, 64, dtype=DT.FP16)
    assert areg.nbytes == 256
    assert torch.equal(call(st, "load_align", UBAddr(0), areg, dtype=DT.FP16).data,
                       h[128:256])


def test_data_block_loads_and_stores_follow_the_predicate():
    st, _ = ub_state(DT.FP32)
    src = torch.arange(1024, dtype=torch.float32)
    blocks_on = Mask(torch.arange(256) // 32 % 2 == 0)  # blocks 0, 2, 4, 6
    got = call(st, "load_align", UBAddr(0), blocks_on, data_copy_mode=BLOCKS, block_stride=2,
               dtype=DT.FP32)
    expected = src[:128].reshape(16, 8)[0::2].clone()
    expected[1::2] = 0
    assert torch.equal(got.data, expected.reshape(-1))
    call(st, "store_align", UBAddr(1), got, blocks_on, 3, data_copy_mode=BLOCKS)
    out = values(st, 1, DT.FP32, 0, 8 * 24).reshape(-1, 8)
    assert torch.equal(out[0:24:3][0::2], expected[0::2]) and not out[3].any()


def test_stores():
    st, _ = ub_state(DT.FP32)
    reg = Reg(torch.arange(64, dtype=torch.float32) + 1, DT.FP32)
    half = mask_of_lanes(torch.arange(64) < 32, DT.FP32)
    call(st, "store_align", UBAddr(1), reg, half, 4)  # the 4th operand: an element offset
    out = values(st, 1, DT.FP32, 0, 72)
    assert torch.equal(out[4:36], reg.data[:32]) and not out[36:].any() and not out[:4].any()
    assert st.dirty[1] == [0x8000 + 16, 0x8000 + 16 + 128]
    call(st, "store_align", UBAddr(1), reg, ALL, 100, dist=S.FIRST_ELEMENT)
    assert values(st, 1, DT.FP32, 99, 3).tolist() == [0, 1, 0]
    call(st, "store_align", UBAddr(1), reg, ALL, 64, post_update=True)
    call(st, "store_align", UBAddr(1), reg, ALL, 64, post_update=True)
    assert torch.equal(values(st, 1, DT.FP32, 64, 64), reg.data)  # the cursor's second store


def test_pack_and_interleave_stores():
    st, _ = ub_state(DT.INT32)
    reg = Reg(torch.arange(64, dtype=torch.int32) + 0x10000, DT.INT32)
    call(st, "store_align", UBAddr(1), reg, ALL, dist=S.PACK)
    assert torch.equal(values(st, 1, DT.INT16, 0, 64), torch.arange(64, dtype=torch.int16))
    call(st, "store_align", UBAddr(1), reg, ALL, dist=S.PACK4)
    assert torch.equal(values(st, 1, DT.INT8, 0, 64), torch.arange(64, dtype=torch.int8))
    other = Reg(-torch.arange(64, dtype=torch.int32), DT.INT32)
    call(st, "store_align", UBAddr(1), reg, other, ALL, dist=S.INTLV)
    pairs = values(st, 1, DT.INT32, 0, 128).reshape(64, 2)
    assert torch.equal(pairs[:, 0], reg.data) and torch.equal(pairs[:, 1], other.data)


def test_predicate_stores_and_loads():
    st, _ = ub_state(DT.UINT32)
    m = mask_of_lanes(torch.arange(64) % 3 == 0, DT.FP32)
    call(st, "store_align", UBAddr(1), m)
    assert torch.equal(values(st, 1, DT.UINT8, 0, 32), torch.tensor(
        [sum(1 << b for b in range(8) if m.bits[8 * k + b]) for k in range(32)],
        dtype=torch.uint8))
    assert torch.equal(MASK_FORMS["load_align"](st, [UBAddr(1)], {}, None, DT.FP32).bits, m.bits)
    call(st, "store_align", UBAddr(1, 16), m, dist=S.PACK)  # every other bit: 16 bytes
    back = MASK_FORMS["load_align"](st, [UBAddr(1, 16)], {"dist": D.US}, None, DT.FP32)
    assert torch.equal(back.lanes(DT.FP32), m.lanes(DT.FP32))
    down = MASK_FORMS["load_align"](st, [UBAddr(1)], {"dist": D.DS}, None, DT.FP32)
    assert torch.equal(down.bits[:128], m.bits[0::2])


def test_unaligned_loads_go_through_the_align_register():
    st, _ = ub_state(DT.INT32)
    ureg = call(st, "load_unalign_init")
    call(st, "load_unalign_pre", ureg, UBAddr(0, 3))
    got = call(st, "load_unalign", ureg, UBAddr(0, 3), 64, dtype=DT.INT32)  # cursor 3 → 67
    assert torch.equal(got.data, torch.arange(3, 67, dtype=torch.int32))
    st.ub[0x100 + 67 * 4:0x100 + 68 * 4] = 0xFF  # after the register kept its block
    nxt = call(st, "load_unalign", ureg, UBAddr(0, 3), 64, dtype=DT.INT32)
    assert torch.equal(nxt.data, torch.arange(67, 131, dtype=torch.int32))  # as on hardware
    again = call(st, "load_unalign", ureg, UBAddr(0, 3), dtype=DT.INT32)  # at the tile, stale
    assert int(again.data[0]) == 131 and int(again.data[5]) == 8
    assert torch.equal(call(st, "load", UBAddr(0, 70), dtype=DT.INT32).data,
                       torch.arange(70, 134, dtype=torch.int32))  # its own fresh register


def test_unaligned_stores_buffer_the_tail_until_post():
    st, _ = ub_state(DT.INT32)
    reg = Reg(torch.arange(64, dtype=torch.int32) + 1, DT.INT32)
    ureg = call(st, "unalign_reg_for_store")
    call(st, "store_unalign", UBAddr(1, 5), reg, ureg, 10, post_update=True)
    assert torch.equal(values(st, 1, DT.INT32, 5, 3), reg.data[:3])  # up to byte 32
    assert not values(st, 1, DT.INT32, 8, 7).any()  # the rest waits in the register
    call(st, "store_unalign", UBAddr(1, 5), reg, ureg, 10, post_update=True)
    call(st, "store_unalign_post", UBAddr(1, 5), ureg)
    assert torch.equal(values(st, 1, DT.INT32, 5, 20), torch.cat([reg.data[:10],
                                                                   reg.data[:10]]))
    st.spr = 12  # the AR after a squeeze of three b32 lanes
    call(st, "store_unalign", UBAddr(1, 40), reg, ureg)
    call(st, "store_unalign_post", UBAddr(1, 40), ureg)
    assert torch.equal(values(st, 1, DT.INT32, 40, 4), torch.tensor([1, 2, 3, 0],
                                                                    dtype=torch.int32))
    call(st, "store", UBAddr(1, 100), reg, 6)
    call(st, "store", UBAddr(1, 100), reg, 6)  # the cursor moved on by 6
    assert torch.equal(values(st, 1, DT.INT32, 100, 12), torch.cat([reg.data[:6]] * 2))


def test_gathers_and_scatter():
    st, _ = ub_state(DT.FP32)
    idx = call(st, "arange", 10, dtype=DT.UINT32)
    even = mask_of_lanes(torch.arange(64) % 2 == 0, DT.FP32)
    got = call(st, "gather", UBAddr(0), idx, even, dtype=DT.FP32)
    expected = torch.where(torch.arange(64) % 2 == 0, (10 + torch.arange(64)).float(), 0.)
    assert torch.equal(got.data, expected)
    offsets = call(st, "arange", 0, dtype=DT.UINT32)
    offsets = call(st, "muls", offsets, 64, ALL)  # byte offsets of every other block
    blocks = call(st, "gather", UBAddr(0), offsets, ALL, data_copy_mode=BLOCKS, dtype=DT.FP32)
    assert torch.equal(blocks.data, torch.arange(128.0).reshape(16, 8)[0::2].reshape(-1))
    rev = call(st, "arange", 0, dtype=DT.UINT32, index_order=attrs.IndexOrder.DECREASE_ORDER)
    call(st, "scatter", UBAddr(1), got, rev, ALL)
    assert torch.equal(values(st, 1, DT.FP32, 0, 64), expected.flip(0))
    lanes = call(st, "gather", got, rev)  # between registers: vselr
    assert torch.equal(lanes.data, expected.flip(0))


def test_byte_gathers_widen_and_byte_scatters_take_even_lanes():
    st, _ = ub_state(DT.INT8)
    idx = call(st, "arange", 100, dtype=DT.UINT16)
    got = call(st, "gather", UBAddr(0), idx, ALL, dtype=DT.INT8)
    assert torch.equal(got.data.view(torch.int16), (100 + torch.arange(128)).to(
        torch.int8).to(torch.uint8).to(torch.int16))
    src = Reg(torch.arange(256).to(torch.int8), DT.INT8)
    call(st, "scatter", UBAddr(1), src, call(st, "arange", 0, dtype=DT.UINT16), ALL)
    assert torch.equal(values(st, 1, DT.INT8, 0, 128), torch.arange(0, 256, 2).to(torch.int8))


def test_bounds_errors():
    st, _ = ub_state(DT.FP32, n=64)
    reg = Reg(torch.ones(64), DT.FP32)
    with pytest.raises(VFOpError, match="outside its tile"):
        call(st, "store_align", UBAddr(1), reg, ALL, 1000)
    with pytest.raises(VFOpError, match="outside the"):
        call(st, "load_align", UBAddr(1), 10**6, dtype=DT.FP32)
    with pytest.raises(VFOpError, match="AddrReg"):
        call(st, "load_align", UBAddr(1), reg, dtype=DT.FP32)
    # a masked-off tail may run past the tile: only active lanes count
    tail = mask_of_lanes(torch.arange(64) < 8, DT.FP32)
    call(st, "store_align", UBAddr(1), reg, tail, 1016)
    assert (values(st, 1, DT.FP32, 1016, 8) == 1).all()
