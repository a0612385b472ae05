"""The cube data path's one-copy shortcuts against the logical read + write they replace:
moves at an offset buffer to buffer (`TileRef.copy_from(at=)`), products converted into and
computed in reused scratch buffers (`cube._scratch`), also when a deferred write still holds a
product while later ones run."""
from __future__ import annotations

import threading

import pytest
import torch

from pypto_pro.ir.dtype import DataType as D
from pypto_pro.ir.types import MemorySpace as M
from pypto_pro.ir.types import TileLayout as L
from pypto_pro.sim.model.memory import CoreMemory, TileGeometry, TileRef
from pypto_pro.sim.ops import IMPLS, cube
from pypto_pro.soc import soc
from sim_support import Deferred


def tile(mem, rows, cols, dtype, space, layout, addr=0, valid=None, fractal=512):
    return TileRef(mem, TileGeometry(rows, cols, dtype, space, layout, fractal, addr),
                   *(valid or (rows, cols)))


@pytest.mark.parametrize("src_layout, dst_layout", [
    (L.NZ, L.NZ), (L.NZ, L.ZN), (L.ND, L.ND), (L.ND, L.DN), (L.NZ, L.ND)])
@pytest.mark.parametrize("at, valid", [((0, 32), (32, 32)), ((16, 16), (32, 48)),
                                       ((8, 0), (16, 16))])
def test_move_at_an_offset_writes_the_bytes_read_block_then_write_does(src_layout, dst_layout,
                                                                        at, valid):
    values = torch.randn(64, 96).half()
    fast, slow = CoreMemory(soc(), "aic"), CoreMemory(soc(), "aic")
    for mem in (fast, slow):
        tile(mem, 64, 96, D.FP16, M.Mat, src_layout, addr=1024).write(values)
    IMPLS["block.move"]([tile(fast, 48, 64, D.FP16, M.Left, dst_layout, valid=valid),
                         tile(fast, 64, 96, D.FP16, M.Mat, src_layout, addr=1024), at], {})
    logical = tile(slow, 64, 96, D.FP16, M.Mat, src_layout, addr=1024).read_block(*at, *valid)
    tile(slow, 48, 64, D.FP16, M.Left, dst_layout, valid=valid).write(logical)
    assert torch.equal(fast.buffers[M.Left], slow.buffers[M.Left])
    assert torch.equal(fast.initialised[M.Left], slow.initialised[M.Left])
    assert torch.equal(logical, values[at[0]:at[0] + valid[0], at[1]:at[1] + valid[1]])


def test_move_at_an_offset_keeps_its_checks():
    mem = CoreMemory(soc(), "aic")
    src = tile(mem, 64, 64, D.FP16, M.Mat, L.NZ)
    with pytest.raises(ValueError, match="outside tile shape"):
        IMPLS["block.move"]([tile(mem, 32, 32, D.FP16, M.Left, L.NZ), src, (48, 0)], {})
    same_buffer = tile(mem, 32, 32, D.FP16, M.Mat, L.NZ, addr=16384)
    assert not same_buffer.copy_from(src, (16, 16))  # may overlap: the caller reads first
    src.write(torch.arange(64 * 64, dtype=torch.float32).view(64, 64).half())
    IMPLS["block.move"]([same_buffer, src, (16, 16)], {})
    assert torch.equal(same_buffer.read(), src.read()[16:48, 16:48])


def _cube(mem, m, k, n, rhs_layout=L.ZN):
    lhs = tile(mem, m, k, D.FP16, M.Left, L.NZ)
    rhs = tile(mem, k, n, D.FP16, M.Right, rhs_layout)
    acc = tile(mem, m, n, D.FP32, M.Acc, L.NZ, fractal=1024)
    return lhs, rhs, acc


@pytest.mark.parametrize("rhs_layout", [L.ZN, L.NZ])
def test_products_through_scratch_keep_deferred_results(rhs_layout):
    """Deferred matmul / matmul_acc results land after later products reused the scratch
    buffers: each still equals its own product (and the in-place accumulation bit for bit)."""
    gen = torch.Generator().manual_seed(7)
    shapes = [(32, 64, 48), (32, 64, 48), (16, 32, 16), (32, 64, 48)]
    queue: list = []
    mems = [CoreMemory(soc(), "aic") for _ in shapes]
    expected = []
    for mem, (m, k, n) in zip(mems, shapes):
        lhs, rhs, acc = _cube(mem, m, k, n, rhs_layout)
        a, b = torch.randn(m, k, generator=gen).half(), torch.randn(k, n, generator=gen).half()
        start = torch.randn(m, n, generator=gen)
        lhs.write(a)
        rhs.write(b)
        acc.write(start)
        product = a.float() @ b.float()
        IMPLS["block.matmul_acc"]([Deferred(acc, queue), acc, lhs, rhs], {})
        expected.append(product + start)
        IMPLS["block.matmul"]([Deferred(acc, queue), lhs, rhs], {})
        expected.append(product)
    writes = list(queue)
    queue.clear()
    for i, (write, value, offset) in enumerate(writes):
        write(value, offset)
        assert torch.equal(write.__self__.read(), expected[i]), i


def test_accumulating_in_place_through_scratch_matches_the_reference_chain():
    """A K loop (matmul, then matmul_acc in place) on two cores taking turns, as the lockstep
    executor runs them: every step rounds like `acc + a @ b` in float32."""
    gen = torch.Generator().manual_seed(3)
    m, k, n = 64, 32, 48
    cores = [_cube(CoreMemory(soc(), "aic"), m, k, n) for _ in range(2)]
    reference = [None, None]
    for step in range(4):
        for c, (lhs, rhs, acc) in enumerate(cores):
            a, b = torch.randn(m, k, generator=gen).half(), torch.randn(k, n, generator=gen).half()
            lhs.write(a)
            rhs.write(b)
            product = a.float() @ b.float()
            if step == 0:
                IMPLS["block.matmul"]([acc, lhs, rhs], {})
                reference[c] = product
            else:
                IMPLS["block.matmul_acc"]([acc, acc, lhs, rhs], {})
                reference[c] = product + reference[c]
    for (_, _, acc), ref in zip(cores, reference):
        assert torch.equal(acc.read().view(torch.int32), ref.view(torch.int32))


def test_each_thread_converts_into_its_own_scratch():
    """Launches may run in several threads: a product's buffers are never another's."""
    mine = cube._scratch("lhs", (16, 16))[0]
    theirs = []
    worker = threading.Thread(target=lambda: theirs.append(cube._scratch("lhs", (16, 16))[0]))
    worker.start()
    worker.join()
    assert theirs[0] is not mine and cube._scratch("lhs", (16, 16))[0] is mine
