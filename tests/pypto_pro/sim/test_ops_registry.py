"""The op table against the IR registry, and the reads-before-writes contract."""
from __future__ import annotations

import torch

from pypto_pro.ir.dtype import DataType as D
from pypto_pro.ir.types import MemorySpace as M
from pypto_pro.ir.types import TileLayout as L
from pypto_pro.sim.model.memory import CoreMemory, TileGeometry, TileRef
from pypto_pro.sim.ops import IMPLS, missing_ops, required_ops
from pypto_pro.sim.ops.elementwise import BINARY, UNARY
from pypto_pro.soc import soc


def test_every_data_op_of_the_registry_is_implemented():
    assert missing_ops() == set()
    assert set(IMPLS) == required_ops()
    assert {"block.add", "block.row_sum", "block.matmul_acc", "block.load", "block.store",
            "block.getval"} <= set(IMPLS)


def test_in_place_ops_read_before_writing():
    mem = CoreMemory(soc(), "aiv")
    t = TileRef(mem, TileGeometry(4, 16, D.FP32, M.Vec, L.ND, addr=0))
    other = TileRef(mem, TileGeometry(4, 16, D.FP32, M.Vec, L.ND, addr=256))
    x, y = torch.rand(4, 16) + 0.5, torch.rand(4, 16) + 0.5
    for name, (fn, allowed) in BINARY.items():
        if D.FP32 not in allowed:
            continue
        t.write(x)
        other.write(y)
        IMPLS[f"block.{name}"]([t, t, other], {})  # out aliases lhs
        assert torch.equal(t.read(), fn(x, y)), name
    for name, (fn, allowed) in UNARY.items():
        if D.FP32 in allowed:
            t.write(x)
            IMPLS[f"block.{name}"]([t, t], {})
            assert torch.equal(t.read(), fn(x)), name
