"""What the replayed cube and movement ops keep per tile (`TileRef` valid-window views and
one-copy plans, `GMWindow.plans`, `cube` product plans) follows the data, and is dropped when
a made TileRef's memory or valid shape changes (`TileRef.epoch`): repeated loads, moves,
products and accumulations give what a fresh tile gives."""
from __future__ import annotations

import copy

import pytest
import torch

from pypto_pro.ir.dtype import DataType as D
from pypto_pro.ir.types import MemorySpace as M
from pypto_pro.ir.types import TileLayout as L
from pypto_pro.sim.model.memory import CoreMemory, GMRef, TileGeometry, TileRef
from pypto_pro.sim.ops import IMPLS
from pypto_pro.soc import soc


def tile(mem, rows, cols, dtype, space, layout, addr=0, valid=None, fractal=512):
    return TileRef(mem, TileGeometry(rows, cols, dtype, space, layout, fractal, addr),
                   *(valid or (rows, cols)))


@pytest.mark.parametrize("layout", [L.NZ, L.ND, L.DN])
def test_repeated_loads_read_the_tensor_as_it_is_now(layout):
    mem = CoreMemory(soc(), "aic")
    dst = tile(mem, 32, 32, D.FP16, M.Mat, layout)
    data = torch.randn(64, 64).half()
    src = GMRef(data)
    for offsets in ([0, 0], [32, 16], [0, 0]):
        IMPLS["block.load"]([dst, src, offsets], {})
        r, c = offsets
        assert torch.equal(dst.read(), data[r:r + 32, c:c + 32])
    data.mul_(2)  # the same window again after the tensor changed: a view, not a snapshot
    IMPLS["block.load"]([dst, src, [0, 0]], {})
    assert torch.equal(dst.read(), data[:32, :32])
    IMPLS["block.load"]([dst, src, (0, 0)], {"is_transpose": True})
    assert torch.equal(dst.read(), data[:32, :32].t())


def test_a_changed_valid_shape_drops_the_kept_views():
    mem = CoreMemory(soc(), "aic")
    data = torch.randn(64, 64).half()
    dst = tile(mem, 32, 32, D.FP16, M.Mat, L.NZ)
    left = tile(mem, 32, 32, D.FP16, M.Left, L.NZ)
    IMPLS["block.load"]([dst, GMRef(data), [0, 0]], {})
    IMPLS["block.move"]([left, dst], {})
    dst.valid_rows = left.valid_rows = 16
    IMPLS["block.load"]([dst, GMRef(data), [16, 0]], {})
    IMPLS["block.move"]([left, dst], {})
    assert dst.read().shape == (16, 32) and torch.equal(left.read(), data[16:32, :32])
    assert torch.equal(tile(mem, 32, 32, D.FP16, M.Left, L.NZ).read()[16:], data[16:32, :32])


def test_a_rebound_copy_writes_its_own_memory():
    """`replay.rebind` copies a tile and points the copy at another memory: the copy's moves
    land there, the original's where they did."""
    first, second = CoreMemory(soc(), "aic"), CoreMemory(soc(), "aic")
    values = torch.randn(32, 32).half()
    for mem in (first, second):
        tile(mem, 32, 32, D.FP16, M.Mat, L.NZ).write(values)
    src = tile(first, 32, 32, D.FP16, M.Mat, L.NZ)
    dst = tile(first, 32, 32, D.FP16, M.Left, L.NZ)
    IMPLS["block.move"]([dst, src], {})
    moved = copy.copy(dst)
    moved.memory = second
    before = second.buffers[M.Left].clone()
    IMPLS["block.move"]([moved, src], {})
    assert not torch.equal(second.buffers[M.Left], before)
    assert torch.equal(moved.read(), values) and torch.equal(dst.read(), values)


@pytest.mark.parametrize("rhs_layout", [L.ZN, L.NZ])
def test_repeated_products_and_accumulations_follow_the_operands(rhs_layout):
    mem = CoreMemory(soc(), "aic")
    lhs = tile(mem, 32, 64, D.FP16, M.Left, L.NZ)
    rhs = tile(mem, 64, 48, D.FP16, M.Right, rhs_layout)
    acc = tile(mem, 32, 48, D.FP32, M.Acc, L.NZ, fractal=1024)
    gen = torch.Generator().manual_seed(3)
    expected = None
    for step in range(3):
        a, b = torch.randn(32, 64, generator=gen).half(), torch.randn(64, 48, generator=gen).half()
        lhs.write(a)
        rhs.write(b)
        product = a.float() @ b.float()
        if step == 0:
            IMPLS["block.matmul"]([acc, lhs, rhs], {})
            expected = product
        else:
            IMPLS["block.matmul_acc"]([acc, acc, lhs, rhs], {})
            expected = product + expected
        assert torch.equal(acc.read(), expected)
    lhs.valid_cols = rhs.valid_rows = 32  # a shorter K: the kept plan is dropped
    acc.valid_rows = lhs.valid_rows = 16
    IMPLS["block.matmul"]([acc, lhs, rhs], {})
    assert torch.equal(acc.read(), a[:16, :32].float() @ b[:32].float())
