"""gather, gatherb, gathermask, scatter."""
from __future__ import annotations

import pytest
import torch

from pypto_pro.ir.dtype import DataType as D
from pypto_pro.ir.types import MemorySpace as M
from pypto_pro.ir.types import TileLayout as L
from pypto_pro.sim.model.memory import CoreMemory, TileGeometry, TileRef
from pypto_pro.sim.ops import IMPLS, SimOpError
from pypto_pro.soc import soc


def tile(mem, rows, cols, dtype, addr, valid=None):
    return TileRef(mem, TileGeometry(rows, cols, dtype, M.Vec, L.ND, addr=addr),
                   *(valid or (rows, cols)))


def test_gather_by_flat_index_with_offset():
    mem = CoreMemory(soc(), "aiv")
    src = tile(mem, 4, 16, D.FP16, 0)
    out, idx, tmp = tile(mem, 4, 16, D.FP16, 1024), tile(mem, 4, 16, D.INT32, 2048), \
        tile(mem, 4, 16, D.INT32, 4096)
    x = torch.arange(64, dtype=torch.float16).reshape(4, 16)
    src.write(x)
    reverse = torch.arange(63, -1, -1, dtype=torch.int32).reshape(4, 16)
    idx.write(reverse)
    IMPLS["block.gather"]([out, src, idx, tmp], {})
    assert torch.equal(out.read(), x.flip(0).flip(1))
    IMPLS["block.gather"]([out, src, idx, tmp], {"offset": -3})
    assert out.read()[0, 0].item() == 60 and out.read()[3, 15].item() == 0  # -3 -> out of range
    with pytest.raises(SimOpError, match="cmp_mode"):
        IMPLS["block.gather"]([out, src, idx, tmp], {"cmp_mode": 2})


def test_gatherb_copies_32_byte_blocks():
    mem = CoreMemory(soc(), "aiv")
    src, out = tile(mem, 2, 32, D.FP16, 0), tile(mem, 2, 32, D.FP16, 256)
    offsets = tile(mem, 2, 2, D.UINT32, 512)
    x = torch.arange(64, dtype=torch.float16).reshape(2, 32)
    src.write(x)
    offsets.write(torch.tensor([[96, 0], [32, 64]], dtype=torch.uint32))
    IMPLS["block.gatherb"]([out, src, offsets], {})
    result = out.read()
    assert torch.equal(result[0], torch.cat([x[1, 16:], x[0, :16]]))
    assert torch.equal(result[1], torch.cat([x[0, 16:], x[1, :16]]))


@pytest.mark.parametrize("mode,step,first", [(1, 2, 0), (2, 2, 1), (3, 4, 0), (6, 4, 3),
                                             (7, 1, 0)])
def test_gathermask_patterns(mode, step, first):
    mem = CoreMemory(soc(), "aiv")
    src = tile(mem, 3, 16, D.FP32, 0)
    out = tile(mem, 3, 16, D.INT32, 512)  # b32 either way
    x = torch.arange(48, dtype=torch.float32).reshape(3, 16)
    src.write(x)
    IMPLS["block.gathermask"]([out, src], {"pattern_mode": mode})
    picked = x[:, first::step]
    assert torch.equal(out.read_full()[:, :picked.shape[1]].view(torch.float32), picked)


def test_scatter_writes_flat_positions():
    mem = CoreMemory(soc(), "aiv")
    src, out, idx = tile(mem, 2, 8, D.FP32, 0), tile(mem, 2, 8, D.FP32, 256), \
        tile(mem, 2, 8, D.INT32, 512)
    out.write(torch.zeros(2, 8))
    src.write(torch.arange(16.0).reshape(2, 8))
    idx.write(torch.arange(15, -1, -1, dtype=torch.int32).reshape(2, 8))
    IMPLS["block.scatter"]([out, src, idx], {})
    assert out.read().reshape(-1).tolist() == list(map(float, range(15, -1, -1)))
