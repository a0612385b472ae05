"""Element-wise ops against torch references, per dtype, on tails smaller than the tile."""
from __future__ import annotations

import pytest
import torch

from pypto_pro.ir.dtype import DataType as D
from pypto_pro.ir.types import MemorySpace as M
from pypto_pro.ir.types import TileLayout as L
from pypto_pro.sim.model.memory import CoreMemory, TileGeometry, TileRef, storage_dtype
from pypto_pro.sim.ops import IMPLS, SimOpError
from pypto_pro.sim.ops.elementwise import SCALAR
from pypto_pro.soc import soc

ROWS, COLS, VALID = 8, 64, (5, 37)
FLOATS = [D.FP16, D.BF16, D.FP32]
SCALAR_OF = {binary: scalar for scalar, binary in SCALAR.items()}


def tiles(dtype, count, valid=VALID):
    mem = CoreMemory(soc(), "aiv")
    size = ROWS * COLS * dtype.itemsize
    return [TileRef(mem, TileGeometry(ROWS, COLS, dtype, M.Vec, L.ND, addr=i * size), *valid)
            for i in range(count)]


def random(dtype, shape=VALID, low=-100, high=100, seed=0):
    gen = torch.Generator().manual_seed(seed)
    if dtype.is_float:
        return (torch.rand(shape, generator=gen) * 8 - 4).to(storage_dtype(dtype))
    return torch.randint(low, high, shape, generator=gen).to(storage_dtype(dtype))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name,ref", [
    ("add", torch.add), ("sub", torch.sub), ("mul", torch.mul), ("div", torch.div),
    ("maximum", torch.maximum), ("minimum", torch.minimum),
])
def test_float_binary_ops_round_once(dtype, name, ref):
    out, a, b = tiles(dtype, 3)
    x, y = random(dtype, seed=1), random(dtype, seed=2)
    a.write(x)
    b.write(y)
    before = out.read_full()
    IMPLS[f"block.{name}"]([out, a, b], {})
    expect = ref(x.float(), y.float()).to(x.dtype)
    assert torch.equal(out.read(), expect)
    full = out.read_full()
    assert torch.equal(full[VALID[0]:], before[VALID[0]:])  # outside the window: untouched
    assert torch.equal(full[:, VALID[1]:], before[:, VALID[1]:])


@pytest.mark.parametrize("dtype", [D.INT8, D.INT16, D.INT32, D.UINT8, D.UINT16])
@pytest.mark.parametrize("name,ref", [
    ("add", torch.add), ("sub", torch.sub), ("mul", torch.mul), ("and", torch.bitwise_and),
    ("or", torch.bitwise_or), ("xor", torch.bitwise_xor), ("maximum", torch.maximum),
])
def test_integer_binary_ops_wrap(dtype, name, ref):
    out, a, b = tiles(dtype, 3)
    low = 0 if dtype.kind == "uint" else -100
    x, y = random(dtype, low=low, seed=3), random(dtype, low=low, seed=4)
    a.write(x)
    b.write(y)
    IMPLS[f"block.{name}"]([out, a, b], {})
    bits = dtype.bits
    wide = ref(x.to(torch.int64), y.to(torch.int64))
    lo = 0 if dtype.kind == "uint" else -(1 << (bits - 1))
    assert torch.equal(out.read().to(torch.int64), (wide - lo) % (1 << bits) + lo)


def test_integer_division_shifts_and_remainder():
    out, a, b = tiles(D.INT32, 3, valid=(1, 4))
    a.write(torch.tensor([[7, -7, 9, 1]], dtype=torch.int32))
    b.write(torch.tensor([[2, 2, 0, 3]], dtype=torch.int32))
    IMPLS["block.div"]([out, a, b], {})
    assert out.read().tolist() == [[3, -3, 0, 0]]  # C truncation; x / 0 -> 0
    IMPLS["block.rem"]([out, a, b], {})
    assert out.read().tolist() == [[1, -1, 0, 1]]
    IMPLS["block.shls"]([out, a, 2], {})
    assert out.read().tolist() == [[28, -28, 36, 4]]
    IMPLS["block.shrs"]([out, a, 1], {})
    assert out.read().tolist() == [[3, -4, 4, 0]]  # arithmetic shift for signed


@pytest.mark.parametrize("dtype", FLOATS)
def test_scalar_ops_round_the_scalar_to_the_tile_dtype(dtype):
    out, a = tiles(dtype, 2)
    x = random(dtype, seed=5)
    a.write(x)
    IMPLS["block.adds"]([out, a, 0.1], {})
    scalar = torch.tensor(0.1).to(x.dtype).float()
    assert torch.equal(out.read(), (x.float() + scalar).to(x.dtype))
    IMPLS["block.muls"]([out, a, -3], {})
    assert torch.equal(out.read(), (x.float() * -3).to(x.dtype))
    IMPLS["block.maxs"]([out, a, 0.5], {})
    assert torch.equal(out.read(), x.float().clamp(min=0.5).to(x.dtype))


def _float32_path(name, x, y):
    """What `block.<name>` computed before its FP16/BF16 storage-dtype path: widen, compute,
    round once (`y` a tile or a scalar exact in the tile dtype); a BF16 NaN is 0x7FC0, as the
    native header gives it (torch's vectorised cast may give 0xFFFF)."""
    wide = getattr(torch, name)(x.float(), torch.tensor(y) if isinstance(y, float) else y.float())
    out = wide.to(x.dtype)
    if x.dtype is torch.bfloat16:
        nan = torch.tensor(0x7FC0, dtype=torch.int16).view(torch.bfloat16)
        out = torch.where(wide.isnan(), nan, out)
    return out


@pytest.mark.parametrize("dtype", [D.FP16, D.BF16])
@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "maximum", "minimum"])
def test_storage_dtype_binary_ops_give_the_float32_path_bits(dtype, name):
    """Every 16-bit pattern as lhs: finite chunks take the storage-dtype path, chunks with NaN
    (whose payload bits may differ there) the float32 one; both must give its exact bits."""
    shape = (64, 256)
    mem = CoreMemory(soc(), "aiv")
    out, a, b = (TileRef(mem, TileGeometry(*shape, dtype, M.Vec, L.ND, addr=i * 32768))
                 for i in range(3))
    gen = torch.Generator().manual_seed(7)
    bits = torch.arange(-32768, 32768, dtype=torch.int32)[torch.randperm(65536, generator=gen)]
    for chunk in bits.to(torch.int16).view(storage_dtype(dtype)).reshape(-1, *shape):
        small = torch.where(chunk.abs() < 100, chunk, 1.5).to(chunk.dtype)  # no NaN, no inf
        for x in (chunk, small):
            y = torch.roll(x, 1, 0) * 3  # near and far operands, some exact cancellations
            a.write(x)
            b.write(y)
            IMPLS[f"block.{name}"]([out, a, b], {})
            expect = _float32_path(name, x, y)
            assert torch.equal(out.read().view(torch.int16), expect.view(torch.int16))
            if x is small and name != "div":  # (0 / 0 is NaN)
                assert not expect.sum().isnan()  # so the storage-dtype path made these bits
            IMPLS[f"block.{SCALAR_OF[name]}"]([out, a, -0.3125], {})
            assert torch.equal(out.read().view(torch.int16),
                               _float32_path(name, x, -0.3125).view(torch.int16))


def test_scalar_memo_keeps_the_sign_of_zero():
    out, a = tiles(D.FP32, 2)
    a.write(torch.full(VALID, -0.0))
    IMPLS["block.adds"]([out, a, 0.0], {})
    assert not torch.signbit(out.read()).any()  # -0 + +0 = +0
    IMPLS["block.adds"]([out, a, -0.0], {})
    assert torch.signbit(out.read()).all()  # -0 + -0 = -0


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name,ref", [
    ("exp", torch.exp), ("log", lambda v: torch.log(v.abs() + 1)), ("sqrt", lambda v: v.abs()),
    ("neg", torch.neg), ("abs", torch.abs), ("relu", torch.relu), ("recip", torch.reciprocal),
])
def test_unary_ops(dtype, name, ref):
    out, a = tiles(dtype, 2)
    x = random(dtype, seed=6)
    if name == "log":
        x = (x.float().abs() + 1).to(x.dtype)
        ref = torch.log
    if name == "sqrt":
        x = x.float().abs().to(x.dtype)
        ref = torch.sqrt
    a.write(x)
    IMPLS[f"block.{name}"]([out, a], {})
    assert torch.equal(out.read(), ref(x.float()).to(x.dtype))


def test_ternary_ops():
    out, a, b, c = tiles(D.FP32, 4, valid=(2, 3))
    x, y, z = (random(D.FP32, (2, 3), seed=s) for s in (7, 8, 9))
    a.write(x), b.write(y), c.write(z)
    IMPLS["block.addc"]([out, a, b, c], {})
    assert torch.equal(out.read(), x + y + z)
    IMPLS["block.subc"]([out, a, b, c], {})
    assert torch.equal(out.read(), x - y + z)
    IMPLS["block.addsc"]([out, a, 2.0, c], {})
    assert torch.equal(out.read(), x + 2.0 + z)
    out.write(z)
    IMPLS["block.axpy"]([out, a, 0.5], {})
    assert torch.equal(out.read(), 0.5 * x + z)


def test_fills():
    (out,) = tiles(D.FP16, 1, valid=(2, 5))
    IMPLS["block.expands"]([out, 1.5], {})
    assert out.read().eq(1.5).all()
    IMPLS["block.fill_index"]([out, 10], {})
    assert out.read().tolist() == [[10, 11, 12, 13, 14], [15, 16, 17, 18, 19]]
    (ints,) = tiles(D.INT32, 1, valid=(1, 3))
    IMPLS["block.full"]([ints, -4], {})
    assert ints.read().tolist() == [[-4, -4, -4]]


@pytest.mark.parametrize("dtype", [D.FP16, D.FP32, D.INT32])
def test_partadd_copies_the_full_operand_outside_the_overlap(dtype):
    out, a, b = tiles(dtype, 3, valid=(4, 8))
    b.valid_rows = 2  # src1 covers only the first two rows
    x, y = random(dtype, (4, 8), seed=10), random(dtype, (4, 8), seed=11)
    a.write(x)
    b.write(y[:2])
    IMPLS["block.partadd"]([out, a, b], {})
    result = out.read()
    if dtype.is_float:
        assert torch.equal(result[:2], (x[:2].float() + y[:2].float()).to(x.dtype))
    else:
        assert torch.equal(result[:2], x[:2] + y[:2])
    assert torch.equal(result[2:], x[2:])
    IMPLS["block.partmax"]([out, b, a], {})
    assert torch.equal(out.read()[2:], x[2:])


def test_dtype_mismatch_and_unsupported_dtypes_raise():
    out, a = tiles(D.FP16, 2)
    (f32,) = tiles(D.FP32, 1)
    with pytest.raises(SimOpError, match="block.add.*FP16.*FP32"):
        IMPLS["block.add"]([out, a, f32], {})
    with pytest.raises(SimOpError, match="block.and"):
        IMPLS["block.and"]([out, a, a], {})


@pytest.mark.parametrize("dtype", [D.FP16, D.FP32])
@pytest.mark.parametrize("name", ["add", "div", "maximum"])
@pytest.mark.parametrize("alias", ["lhs", "rhs", "shifted"])
def test_binary_ops_into_an_aliased_output_read_their_operands_first(dtype, name, alias):
    """The result is written into the output's buffer only when no operand overlaps it partly
    (and, on 16-bit tiles, not at all: a NaN falls back to the float32 path, which rereads
    them); every aliasing gives the float32 path's bits of the values before the op."""
    rows, cols = 16, 64
    mem = CoreMemory(soc(), "aiv")
    size = rows * cols * dtype.itemsize

    def at(addr):
        return TileRef(mem, TileGeometry(rows, cols, dtype, M.Vec, L.ND, addr=addr))

    a, b = at(0), at(4 * size)
    out = {"lhs": at(0), "rhs": at(4 * size), "shifted": at(cols * dtype.itemsize)}[alias]
    x, y = random(dtype, (rows, cols), seed=1), random(dtype, (rows, cols), seed=2)
    if dtype is D.FP16:
        x[3, 4], y[5, 6] = float("nan"), float("inf")
    a.write(x)
    b.write(y)
    IMPLS[f"block.{name}"]([out, a, b], {})
    assert torch.equal(out.read().view(torch.uint8), _float32_path(name, x, y).view(torch.uint8))
