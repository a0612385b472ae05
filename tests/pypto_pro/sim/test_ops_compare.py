"""Compare masks (bit packing) and select."""
from __future__ import annotations

import pytest
import torch

from pypto_pro.ir.dtype import DataType as D
from pypto_pro.ir.types import MemorySpace as M
from pypto_pro.ir.types import TileLayout as L
from pypto_pro.sim.model.memory import CoreMemory, TileGeometry, TileRef
from pypto_pro.sim.ops import IMPLS, SimOpError
from pypto_pro.sim.ops.compare import pack_mask, unpack_mask
from pypto_pro.sim.ops.operands import CmpMode


def tile(mem, dtype, addr, rows=4, cols=16, valid=None):
    return TileRef(mem, TileGeometry(rows, cols, dtype, M.Vec, L.ND, addr=addr),
                   *(valid or (rows, cols)))


def test_pack_mask_is_lsb_first_over_the_row_flattened_window():
    bits = torch.tensor([[1, 0, 0, 1, 0], [1, 1, 1, 0, 0]], dtype=torch.bool)
    packed = pack_mask(bits)
    # elements 0..7 = 1,0,0,1,0,1,1,1 -> 0b11101001; elements 8,9 = 0,0 -> 0
    assert packed.tolist() == [0b11101001, 0]
    assert torch.equal(unpack_mask(packed, 10), bits.reshape(-1))


@pytest.mark.parametrize("dtype", [D.FP16, D.FP32, D.INT32])
@pytest.mark.parametrize("mode,ref", [
    (CmpMode.EQ, torch.eq), (CmpMode.NE, torch.ne), (CmpMode.LT, torch.lt),
    (CmpMode.LE, torch.le), (CmpMode.GT, torch.gt), (CmpMode.GE, torch.ge),
])
def test_cmp_writes_packed_bits(dtype, mode, ref):
    mem = CoreMemory(torch_soc(), "aiv")
    valid = (3, 11)
    mask, lhs, rhs = tile(mem, D.UINT8, 0), tile(mem, dtype, 256, valid=valid), \
        tile(mem, dtype, 1024, valid=valid)
    gen = torch.Generator().manual_seed(int(mode))
    x = torch.randint(-3, 3, valid, generator=gen)
    y = torch.randint(-3, 3, valid, generator=gen)
    storage = {D.FP16: torch.float16, D.FP32: torch.float32, D.INT32: torch.int32}[dtype]
    lhs.write(x.to(storage))
    rhs.write(y.to(storage))
    IMPLS["block.cmp"]([mask, lhs, rhs], {"cmp_mode": int(mode)})
    raw = mask.read_full().reshape(-1)[:5]  # 33 bits -> 5 bytes
    assert torch.equal(raw, pack_mask(ref(x, y)))
    IMPLS["block.cmps"]([mask, lhs, 0], {"cmp_mode": mode})
    assert torch.equal(mask.read_full().reshape(-1)[:5], pack_mask(ref(x, torch.zeros_like(x))))


def test_cmp_mode_accepts_enum_names_from_other_enums():
    import enum

    class CompareMode(enum.Enum):  # e.g. the language package's enum
        GT = "gt"

    mem = CoreMemory(torch_soc(), "aiv")
    mask, lhs = tile(mem, D.UINT8, 0), tile(mem, D.FP32, 256, valid=(1, 8))
    lhs.write(torch.arange(8.0).reshape(1, 8) - 4)
    IMPLS["block.cmps"]([mask, lhs, 0.0], {"cmp_mode": CompareMode.GT})
    assert mask.read_full()[0, 0].item() == 0b11100000
    with pytest.raises(SimOpError, match="CmpMode"):
        IMPLS["block.cmps"]([mask, lhs, 0.0], {"cmp_mode": 9})


@pytest.mark.parametrize("dtype", [D.FP16, D.FP32, D.INT16])
def test_select_follows_the_mask(dtype):
    mem = CoreMemory(torch_soc(), "aiv")
    valid = (4, 10)
    out, mask, a, b, tmp = (tile(mem, d, addr, valid=valid) for d, addr in (
        (dtype, 0), (D.UINT8, 256), (dtype, 512), (dtype, 768), (dtype, 1024)))
    x = torch.arange(40).reshape(valid)
    storage = {D.FP16: torch.float16, D.FP32: torch.float32, D.INT16: torch.int16}[dtype]
    a.write(x.to(storage))
    b.write((-x).to(storage))
    threshold = torch.full(valid, 17)
    a_cmp = tile(mem, D.INT32, 2048, valid=valid)
    a_cmp.write(x.to(torch.int32))
    IMPLS["block.cmps"]([mask, a_cmp, 17], {"cmp_mode": CmpMode.GT})
    before_tmp = tmp.read_full()
    IMPLS["block.sel"]([out, mask, a, b, tmp], {})
    assert torch.equal(out.read().to(torch.int64), torch.where(x > threshold, x, -x))
    assert torch.equal(tmp.read_full(), before_tmp)  # tmp is never touched
    IMPLS["block.sels"]([out, mask, a, 99, tmp], {})
    assert torch.equal(out.read().to(torch.int64), torch.where(x > 17, x, 99))


def torch_soc():
    from pypto_pro.soc import soc

    return soc()
