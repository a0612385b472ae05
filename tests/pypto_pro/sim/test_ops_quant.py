"""Vector quant / dequant."""
from __future__ import annotations

import pytest
import torch

from pypto_pro.ir.dtype import DataType as D
from pypto_pro.ir.types import MemorySpace as M
from pypto_pro.ir.types import TileLayout as L
from pypto_pro.sim.model.memory import CoreMemory, TileGeometry, TileRef
from pypto_pro.sim.ops import IMPLS, SimOpError
from pypto_pro.soc import soc


def tile(mem, rows, cols, dtype, addr, layout=L.ND, valid=None):
    return TileRef(mem, TileGeometry(rows, cols, dtype, M.Vec, layout, addr=addr),
                   *(valid or (rows, cols)))


def test_symmetric_quant_rounds_half_even_and_saturates():
    mem = CoreMemory(soc(), "aiv")
    src, out = tile(mem, 2, 8, D.FP32, 0, valid=(2, 4)), tile(mem, 2, 32, D.INT8, 256, valid=(2, 4))
    scale = tile(mem, 2, 1, D.FP32, 512, L.DN)
    src.write(torch.tensor([[0.25, 0.75, -0.25, 100.0], [1.0, -2.0, 3.0, -100.0]]))
    scale.write(torch.tensor([[2.0], [0.5]]))
    IMPLS["block.quant"]([out, src, scale], {"mode": "SYM"})
    assert out.read().tolist() == [[0, 2, 0, 127], [0, -1, 2, -50]]


def test_asymmetric_quant_and_dequant():
    mem = CoreMemory(soc(), "aiv")
    src = tile(mem, 1, 8, D.FP32, 0, valid=(1, 3))
    out = tile(mem, 1, 32, D.UINT8, 256, valid=(1, 3))
    src.write(torch.tensor([[-1.0, 0.0, 10.0]]))
    IMPLS["block.quant"]([out, src, 10.0, 128.0], {"mode": 1})
    assert out.read().tolist() == [[118, 128, 228]]
    back = tile(mem, 1, 16, D.FP16, 512, valid=(1, 3))
    IMPLS["block.dequant"]([back, out, 0.1, 128.0], {})
    assert back.read().float()[0].tolist() == pytest.approx([-1.0, 0.0, 10.0], abs=1e-2)
    with pytest.raises(SimOpError, match="offset"):
        IMPLS["block.quant"]([out, src, 10.0], {"mode": "ASYM"})
