"""sort32, mrgsort, mrgsort2 (value-index records) and histogram."""
from __future__ import annotations

import pytest
import torch

from pypto_pro.ir.dtype import DataType as D
from pypto_pro.ir.types import MemorySpace as M
from pypto_pro.ir.types import TileLayout as L
from pypto_pro.sim.model.memory import CoreMemory, TileGeometry, TileRef, storage_dtype
from pypto_pro.sim.ops import IMPLS, SimOpError
from pypto_pro.sim.ops.sort import decode_records, encode_records
from pypto_pro.soc import soc


def tile(mem, rows, cols, dtype, addr, valid=None):
    return TileRef(mem, TileGeometry(rows, cols, dtype, M.Vec, L.ND, addr=addr),
                   *(valid or (rows, cols)))


def records(t: TileRef, count: int):
    raw = t.read_full().contiguous().view(torch.uint8).reshape(t.shape[0], -1)
    values, index = decode_records(raw[:, :count * 8], t.dtype)
    return values.float(), index


@pytest.mark.parametrize("dtype", [D.FP32, D.FP16])
def test_sort32_sorts_each_group_descending_with_indices(dtype):
    mem = CoreMemory(soc(), "aiv")
    per = 8 // dtype.itemsize
    src, idx = tile(mem, 2, 64, dtype, 0), tile(mem, 1, 64, D.UINT32, 1024)
    dst = tile(mem, 2, 64 * per, dtype, 2048)
    gen = torch.Generator().manual_seed(1)
    x = torch.randint(-20, 20, (2, 64), generator=gen).to(storage_dtype(dtype))
    src.write(x)
    idx.write(torch.arange(100, 164).to(torch.uint32).reshape(1, 64))  # shared by both rows
    IMPLS["block.sort32"]([dst, src, idx], {})
    values, index = records(dst, 64)
    for row in range(2):
        for group in range(2):
            seg = slice(32 * group, 32 * group + 32)
            first = 100 + 32 * group
            ref = sorted(zip((-x[row, seg].float()).tolist(), range(first, first + 32)))
            assert values[row, seg].tolist() == [-v for v, _ in ref]
            assert index[row, seg].tolist() == [i for _, i in ref]  # ties: smaller index first
    if dtype is D.FP16:  # (fp16 value, 0, idx lo, idx hi)
        raw = dst.read_full()[0, :4].view(torch.int16)
        assert raw[1].item() == 0


def test_sort32_tail_group_is_sorted_alone():
    mem = CoreMemory(soc(), "aiv")
    src, idx = tile(mem, 1, 64, D.FP32, 0, valid=(1, 40)), tile(mem, 1, 64, D.UINT32, 512)
    dst, tmp = tile(mem, 1, 128, D.FP32, 1024), tile(mem, 1, 64, D.FP32, 2048)
    x = torch.arange(40, dtype=torch.float32).reshape(1, 40)
    src.write(x)
    idx.write(torch.arange(64).to(torch.uint32).reshape(1, 64))
    IMPLS["block.sort32"]([dst, src, idx, tmp], {})
    values, index = records(dst, 40)
    assert values[0, :32].tolist() == list(map(float, range(31, -1, -1)))
    assert values[0, 32:].tolist() == list(map(float, range(39, 31, -1)))
    assert index[0, 32:].tolist() == list(range(39, 31, -1))


def test_mrgsort_merges_four_blocks():
    mem = CoreMemory(soc(), "aiv")
    src, dst = tile(mem, 1, 128, D.FP32, 0), tile(mem, 1, 128, D.FP32, 1024)
    gen = torch.Generator().manual_seed(2)
    blocks = [torch.sort(torch.randint(0, 50, (16,), generator=gen).float(), descending=True)[0]
              for _ in range(4)]
    values = torch.cat(blocks).reshape(1, 64)
    index = torch.arange(64).reshape(1, 64)
    src.write(encode_records(values, index, D.FP32).view(torch.float32))
    IMPLS["block.mrgsort"]([dst, src], {"block_len": 32})  # 16 records = 32 fp32 elements
    merged_values, merged_index = records(dst, 64)
    order = torch.sort(values, descending=True, stable=True).indices
    assert torch.equal(merged_values, values.gather(1, order))
    assert torch.equal(merged_index, index.gather(1, order))
    with pytest.raises(SimOpError, match="block_len"):
        IMPLS["block.mrgsort"]([dst, src], {"block_len": 24})


def _list_tile(mem, addr, values, first_index, cols=64):
    t = tile(mem, 1, cols, D.FP32, addr, valid=(1, 2 * len(values)))
    v = torch.tensor([values], dtype=torch.float32)
    i = torch.arange(first_index, first_index + len(values)).reshape(1, -1)
    t.write(encode_records(v, i, D.FP32).view(torch.float32))
    return t


def test_mrgsort2_merges_lists_and_stops_when_exhausted():
    mem = CoreMemory(soc(), "aiv")
    a = _list_tile(mem, 0, [9.0, 5.0, 1.0], 0)
    b = _list_tile(mem, 512, [8.0, 5.0, 4.0, 3.0], 10)
    c = _list_tile(mem, 1024, [7.0, 0.5], 20)
    dst, tmp = tile(mem, 1, 64, D.FP32, 2048, valid=(1, 18)), tile(mem, 1, 64, D.FP32, 4096)
    IMPLS["block.mrgsort2"]([a, b, dst, tmp, c], {"exhausted": False})
    values, index = records(dst, 9)
    assert values[0].tolist() == [9.0, 8.0, 7.0, 5.0, 5.0, 4.0, 3.0, 1.0, 0.5]
    assert index[0].tolist() == [0, 10, 20, 1, 11, 12, 13, 2, 21]  # tie: earlier list first
    tmp.write(torch.full((1, 64), -1.0))
    IMPLS["block.mrgsort2"]([a, b, dst, tmp, c], {"exhausted": True})
    values, index = records(tmp, 8)
    # b is used up first (its last record, 3.0, is the 7th merged): the merge stops there
    assert values[0, :7].tolist() == [9.0, 8.0, 7.0, 5.0, 5.0, 4.0, 3.0]
    assert values[0, 7].item() == -1.0  # tmp beyond the merged records is untouched
    assert records(dst, 7)[0][0].tolist() == values[0, :7].tolist()


def test_histogram_is_cumulative_per_row():
    mem = CoreMemory(soc(), "aiv")
    src = tile(mem, 2, 16, D.UINT16, 0, valid=(2, 4))
    idx = TileRef(mem, TileGeometry(2, 1, D.UINT8, M.Vec, L.DN, addr=256))
    dst = tile(mem, 2, 256, D.UINT32, 1024)
    src.write(torch.tensor([[0x0102, 0x0105, 0x0302, 0x0001], [0x00FF, 0x01FF, 0x0100, 0x0000]],
                           dtype=torch.uint16))
    idx.write(torch.tensor([[1], [0]], dtype=torch.uint8))
    IMPLS["block.histogram"]([dst, src, idx], {"is_msb": True})
    counts = dst.read().to(torch.int64)
    assert counts[0, :4].tolist() == [1, 3, 3, 4] and counts[0, 255].item() == 4
    assert counts[1, :2].tolist() == [2, 4]
    IMPLS["block.histogram"]([dst, src, idx], {"is_msb": False})
    counts = dst.read().to(torch.int64)
    assert counts[0, [1, 2, 4, 5, 255]].tolist() == [0, 1, 1, 2, 2]  # high byte 1 only
    assert counts[1, [0, 254, 255]].tolist() == [1, 1, 2]  # high byte 0 only


def test_histogram_uint32_filters_three_upper_bytes():
    mem = CoreMemory(soc(), "aiv")
    src = tile(mem, 1, 8, D.UINT32, 0, valid=(1, 3))
    idx = TileRef(mem, TileGeometry(3, 1, D.UINT8, M.Vec, L.DN, addr=128))
    dst = tile(mem, 1, 256, D.UINT32, 1024)
    src.write(torch.tensor([[0x01020304, 0x01020307, 0x09020304]], dtype=torch.uint32))
    idx.write(torch.tensor([[1], [2], [3]], dtype=torch.uint8))
    IMPLS["block.histogram"]([dst, src, idx], {"is_msb": False})
    assert dst.read().to(torch.int64)[0, [3, 4, 6, 7]].tolist() == [0, 1, 1, 2]
