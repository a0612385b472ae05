"""Cube ops: every operand dtype path, tails, accumulate, bias, MX scaling."""
from __future__ import annotations

import pytest
import torch

from pypto_pro.ir.dtype import DataType as D
from pypto_pro.ir.types import MemorySpace as M
from pypto_pro.ir.types import TileLayout as L
from pypto_pro.sim.model.memory import CoreMemory, GMRef, TileGeometry, TileRef, storage_dtype
from pypto_pro.sim.ops import IMPLS, SimOpError
from pypto_pro.sim.ops.numerics import decode_hif8, to_compute
from pypto_pro.soc import soc


def cube_tiles(dtype, m=48, k=64, n=32, valid=(40, 50, 20), acc_dtype=D.FP32):
    mem = CoreMemory(soc(), "aic")
    lhs = TileRef(mem, TileGeometry(m, k, dtype, M.Left, L.NZ, addr=0), valid[0], valid[1])
    rhs = TileRef(mem, TileGeometry(k, n, dtype, M.Right, L.ZN, addr=0), valid[1], valid[2])
    acc = TileRef(mem, TileGeometry(m, n, acc_dtype, M.Acc, L.NZ, 1024, addr=0),
                  valid[0], valid[2])
    return mem, lhs, rhs, acc


def operands(dtype, valid=(40, 50, 20), seed=0):
    gen = torch.Generator().manual_seed(seed)
    m, k, n = valid
    if dtype.is_int:
        return (torch.randint(-128, 128, (m, k), generator=gen).to(torch.int8),
                torch.randint(-128, 128, (k, n), generator=gen).to(torch.int8))
    if dtype is D.HF8:
        return (torch.randint(0, 0x60, (m, k), generator=gen).to(torch.uint8),
                torch.randint(0, 0x60, (k, n), generator=gen).to(torch.uint8))
    a, b = torch.randn(m, k, generator=gen), torch.randn(k, n, generator=gen)
    return a.to(storage_dtype(dtype)), b.to(storage_dtype(dtype))


@pytest.mark.parametrize("dtype", [D.FP16, D.BF16, D.FP32, D.FP8E4M3FN, D.HF8])
def test_float_matmul_paths_accumulate_in_fp32(dtype):
    _, lhs, rhs, acc = cube_tiles(dtype)
    a, b = operands(dtype)
    lhs.write(a)
    rhs.write(b)
    IMPLS["block.matmul"]([acc, lhs, rhs], {})
    expect = to_compute(a, dtype) @ to_compute(b, dtype)
    assert torch.equal(acc.read(), expect)
    if dtype is D.HF8:
        assert torch.equal(to_compute(a, dtype), decode_hif8(a))


def test_int8_matmul_is_exact_int32():
    _, lhs, rhs, acc = cube_tiles(D.INT8, acc_dtype=D.INT32)
    a, b = operands(D.INT8)
    lhs.write(a)
    rhs.write(b)
    IMPLS["block.matmul"]([acc, lhs, rhs], {})
    assert torch.equal(acc.read().to(torch.int64), a.to(torch.int64) @ b.to(torch.int64))


def test_fp8_mixed_pairing_and_bad_pairs():
    mem, lhs, _, acc = cube_tiles(D.FP8E4M3FN)
    rhs = TileRef(mem, TileGeometry(64, 32, D.FP8E5M2, M.Right, L.ZN, addr=8192), 50, 20)
    a, _ = operands(D.FP8E4M3FN)
    b = torch.randn(50, 20).to(torch.float8_e5m2)
    lhs.write(a)
    rhs.write(b)
    IMPLS["block.matmul"]([acc, lhs, rhs], {})
    assert torch.equal(acc.read(), a.float() @ b.float())
    _, f16, _, acc16 = cube_tiles(D.FP16)
    f32 = TileRef(mem, TileGeometry(64, 32, D.FP32, M.Right, L.ZN, addr=0), 50, 20)
    with pytest.raises(SimOpError, match="FP16 x FP32"):
        IMPLS["block.matmul"]([acc16, f16, f32], {})
    with pytest.raises(SimOpError, match="accumulate"):
        IMPLS["block.matmul"]([TileRef(mem, TileGeometry(48, 32, D.INT32, M.Acc, L.NZ, 1024)),
                               f16, f16], {})


def test_matmul_acc_and_bias():
    mem, lhs, rhs, acc = cube_tiles(D.FP16)
    a, b = operands(D.FP16)
    lhs.write(a)
    rhs.write(b)
    IMPLS["block.matmul"]([acc, lhs, rhs], {})
    IMPLS["block.matmul_acc"]([acc, acc, lhs, rhs], {})
    product = a.float() @ b.float()
    assert torch.equal(acc.read(), product + product)
    bias = TileRef(mem, TileGeometry(1, 32, D.FP32, M.Bias, L.ND, addr=0), 1, 20)
    bias.write(torch.arange(20.0).reshape(1, 20))
    IMPLS["block.matmul_bias"]([acc, lhs, rhs, bias], {})
    assert torch.equal(acc.read(), product + torch.arange(20.0))
    IMPLS["block.gemv"]([acc, lhs, rhs], {})
    assert torch.equal(acc.read(), product)


def test_mx_matmul_applies_e8m0_scales_per_32_k():
    mem = CoreMemory(soc(), "aic")
    m, k, n = 16, 64, 16
    lhs = TileRef(mem, TileGeometry(m, k, D.FP8E4M3FN, M.Left, L.NZ, addr=0))
    rhs = TileRef(mem, TileGeometry(k, n, D.FP8E4M3FN, M.Right, L.ZN, addr=0))
    sa = TileRef(mem, TileGeometry(m, 2, D.FP8E8M0, M.ScaleLeft, L.ZZ, 32, addr=0))
    sb = TileRef(mem, TileGeometry(2, n, D.FP8E8M0, M.ScaleRight, L.NN, 32, addr=0))
    acc = TileRef(mem, TileGeometry(m, n, D.FP32, M.Acc, L.NZ, 1024, addr=0))
    a, b = torch.randn(m, k).to(torch.float8_e4m3fn), torch.randn(k, n).to(torch.float8_e4m3fn)
    exp_a = torch.randint(120, 134, (m, 2)).to(torch.uint8)
    exp_b = torch.randint(120, 134, (2, n)).to(torch.uint8)
    lhs.write(a), rhs.write(b)
    sa.write(exp_a.view(torch.float8_e8m0fnu)), sb.write(exp_b.view(torch.float8_e8m0fnu))
    IMPLS["block.matmul_mx"]([acc, lhs, rhs, sa, sb], {})
    scale_a = torch.pow(2.0, exp_a.double() - 127).repeat_interleave(32, 1)
    scale_b = torch.pow(2.0, exp_b.double() - 127).repeat_interleave(32, 0)
    expect = ((a.double() * scale_a) @ (b.double() * scale_b)).float()
    assert torch.equal(acc.read(), expect)
    IMPLS["block.matmul_mx_acc"]([acc, acc, lhs, rhs, sa, sb], {})
    assert torch.allclose(acc.read(), 2 * expect)


@pytest.mark.parametrize("valid", [(32, 48, 32), (40, 50, 20)])  # whole fractals / tails
def test_matmul_acc_in_place_matches_a_separate_destination(valid):
    mem, lhs, rhs, acc = cube_tiles(D.FP16, valid=valid)
    other = TileRef(mem, TileGeometry(48, 32, D.FP32, M.Acc, L.NZ, 1024, addr=8192),
                    valid[0], valid[2])
    a, b = operands(D.FP16, valid=valid)
    lhs.write(a)
    rhs.write(b)
    start = torch.randn(valid[0], valid[2]) * 1e3
    acc.write(start)
    IMPLS["block.matmul_acc"]([other, acc, lhs, rhs], {})  # the read-add-write path
    IMPLS["block.matmul_acc"]([acc, acc, lhs, rhs], {})  # in place when the block allows
    assert torch.equal(acc.read().view(torch.int32), other.read().view(torch.int32))
    assert torch.equal(acc.read(), (a.float() @ b.float()) + start)


@pytest.mark.parametrize("rhs_layout", [L.ZN, L.NN, L.DN, L.ND])
def test_column_major_rhs_read_as_its_transpose_gives_the_row_major_values(rhs_layout):
    """Aligned M and N read a column-major rhs transposed (`cube.ALIGNED`): same bits."""
    mem = CoreMemory(soc(), "aic")
    lhs = TileRef(mem, TileGeometry(64, 96, D.FP16, M.Left, L.NZ, addr=0), 48, 80)
    rhs = TileRef(mem, TileGeometry(96, 64, D.FP16, M.Right, rhs_layout, addr=0), 80, 32)
    acc = TileRef(mem, TileGeometry(64, 64, D.FP32, M.Acc, L.NZ, 1024, addr=0), 48, 32)
    a, b = operands(D.FP16, valid=(48, 80, 32))
    lhs.write(a)
    rhs.write(b)
    IMPLS["block.matmul"]([acc, lhs, rhs], {})
    assert torch.equal(acc.read(), a.float() @ b.float())


@pytest.mark.parametrize("dtype", [D.FP32, D.INT32])
def test_unconverted_accumulator_stores_keep_every_bit(dtype):
    """FP32 -> FP32 and INT32 -> INT32 stores without scale or ReLU copy the bits (NaN
    payloads, -0.0, denormals, extremes); ReLU still converts; a bad ReLU mode is an error."""
    mem = CoreMemory(soc(), "aic")
    acc = TileRef(mem, TileGeometry(16, 16, dtype, M.Acc, L.NZ, 1024, addr=0))
    words = torch.tensor([0x7FC00123, 0xFFC00001, 0x80000000, 0x00000001, 0x7F7FFFFF,
                          0xFF800000, 0x7FFFFFFF, 0x3F800000] * 32, dtype=torch.int64)
    bits = words.to(torch.int32).view(16, 16)
    acc.write(bits.view(storage_dtype(dtype)))
    out = torch.zeros(16, 16, dtype=storage_dtype(dtype))
    IMPLS["block.store"]([GMRef(out), acc, (0, 0)], {})
    assert torch.equal(out.view(torch.int32), bits)
    IMPLS["block.store"]([GMRef(out), acc, (0, 0)], {"relu_pre_mode": 1})
    assert (out.view(torch.int32) >= 0).all() if dtype is D.INT32 else \
        not (out < 0).any() and torch.equal(out[out > 0], acc.read()[acc.read() > 0])
    with pytest.raises(SimOpError, match="ReluPreMode"):
        IMPLS["block.store"]([GMRef(out), acc, (0, 0)], {"relu_pre_mode": 7})
