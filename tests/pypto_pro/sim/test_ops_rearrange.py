"""transpose and fillpad."""
from __future__ import annotations

import pytest
import torch

from pypto_pro.ir.dtype import DataType as D
from pypto_pro.ir.types import MemorySpace as M
from pypto_pro.ir.types import TileLayout as L
from pypto_pro.ir.types import TilePad
from pypto_pro.sim.model.memory import CoreMemory, TileGeometry, TileRef
from pypto_pro.sim.ops import IMPLS, SimOpError
from pypto_pro.soc import soc


def tile(mem, rows, cols, dtype, addr, valid=None, pad=TilePad.null):
    return TileRef(mem, TileGeometry(rows, cols, dtype, M.Vec, L.ND, addr=addr, pad=pad),
                   *(valid or (rows, cols)))


def test_transpose_of_the_valid_window():
    mem = CoreMemory(soc(), "aiv")
    src, out = tile(mem, 16, 16, D.FP16, 0, valid=(3, 5)), tile(mem, 16, 16, D.FP16, 1024)
    x = torch.arange(15, dtype=torch.float16).reshape(3, 5)
    src.write(x)
    IMPLS["block.transpose"]([out, src], {})
    assert torch.equal(out.read_full()[:5, :3], x.t())


@pytest.mark.parametrize("pad,dtype,expect", [
    (TilePad.zero, D.INT32, 0), (TilePad.max, D.FP32, float("inf")),
    (TilePad.min, D.FP16, float("-inf")), (TilePad.min, D.INT16, -32768),
    (TilePad.max, D.UINT8, 255),
])
def test_fillpad_modes_and_pad_values(pad, dtype, expect):
    mem = CoreMemory(soc(), "aiv")
    src = tile(mem, 8, 32, dtype, 0, valid=(5, 7))
    storage = {D.INT32: torch.int32, D.FP32: torch.float32, D.FP16: torch.float16,
               D.INT16: torch.int16, D.UINT8: torch.uint8}[dtype]
    x = torch.arange(35).reshape(5, 7).to(storage)
    src.write(x)
    out = tile(mem, 8, 32, dtype, 4096, pad=pad)
    IMPLS["block.fillpad"]([out, src], {})
    full = out.read_full()
    assert torch.equal(full[:5, :7], x)
    assert full[5:].eq(expect).all() and full[:, 7:].eq(expect).all()
    wide = tile(mem, 8, 64, dtype, 8192, pad=pad)
    IMPLS["block.fillpad_expand"]([wide, src], {})
    assert torch.equal(wide.read_full()[:5, :7], x) and wide.read_full()[:, 32:].eq(expect).all()
    same = TileRef(mem, TileGeometry(8, 32, dtype, M.Vec, L.ND, addr=0, pad=pad), 5, 7)
    IMPLS["block.fillpad_inplace"]([same], {})
    assert torch.equal(src.read_full(), full)


def test_fillpad_null_pad_rejected():
    mem = CoreMemory(soc(), "aiv")
    src, out = tile(mem, 8, 16, D.FP32, 0), tile(mem, 8, 16, D.FP32, 1024)
    with pytest.raises(SimOpError, match="null"):
        IMPLS["block.fillpad"]([out, src], {})
