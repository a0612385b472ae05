"""The fused ops the real code generator lowers to instruction sequences through their first
input (`sim.ops.fused`): `lhs` holds the intermediate result afterwards, every step rounds into
its destination's dtype (FP16 `mul_add_dst` rounds the product, then the sum), integers wrap
before the ReLU, an output that is also an input reads what the earlier steps wrote, the fused
casts round CAST_ROUND unless told, and nothing is written outside the windows."""
from __future__ import annotations

import pytest
import torch

from pypto_pro.ir.dtype import DataType as D
from pypto_pro.ir.types import MemorySpace as M
from pypto_pro.ir.types import TileLayout as L
from pypto_pro.sim.model.memory import CoreMemory, TileGeometry, TileRef, storage_dtype
from pypto_pro.sim.ops import IMPLS, SimOpError
from pypto_pro.sim.ops.numerics import RoundMode as R
from pypto_pro.soc import soc
from fused_sequences import SEQUENCES

ROWS, COLS, VALID = 4, 32, (3, 20)


def tiles(*dtypes, valid=VALID):
    mem = CoreMemory(soc(), "aiv")
    return [TileRef(mem, TileGeometry(ROWS, COLS, dt, M.Vec, L.ND, addr=i * 1024), *valid)
            for i, dt in enumerate(dtypes)]


def values(dtype, seed, shape=VALID):
    gen = torch.Generator().manual_seed(seed)
    return (torch.rand(shape, generator=gen) * 8 - 4).to(storage_dtype(dtype))


@pytest.mark.parametrize("name", sorted(SEQUENCES))
def test_lhs_holds_the_intermediate(name):
    out, lhs, rhs = tiles(D.FP16, D.FP16, D.FP16)
    a, b, c = values(D.FP16, 1), values(D.FP16, 2), values(D.FP16, 3)
    lhs.write(a), rhs.write(b), out.write(c)
    before = [t.read_full() for t in (out, lhs)]
    IMPLS[f"block.{name}"]([out, lhs, rhs], {})
    want_lhs, want_out = SEQUENCES[name](a.float(), b.float(), c.float())
    assert torch.equal(lhs.read().float(), want_lhs)
    assert torch.equal(out.read().float(), want_out)
    assert torch.equal(rhs.read(), b)
    for tile, old in zip((out, lhs), before):
        full = tile.read_full()
        assert torch.equal(full[VALID[0]:], old[VALID[0]:])
        assert torch.equal(full[:, VALID[1]:], old[:, VALID[1]:])


def test_an_output_that_is_the_first_input_sees_the_earlier_steps():
    lhs, rhs = tiles(D.FP32, D.FP32)
    a, b = values(D.FP32, 4), values(D.FP32, 5)
    lhs.write(a), rhs.write(b)
    IMPLS["block.mul_add_dst"]([lhs, lhs, rhs], {})  # TMUL(a, a, b); TADD(a, a, a)
    assert torch.equal(lhs.read(), (a * b) + (a * b))
    lhs.write(a)
    IMPLS["block.add_relu"]([rhs, lhs, rhs], {})  # TADD(a, a, b); TRELU(b, a)
    assert torch.equal(lhs.read(), a + b) and torch.equal(rhs.read(), torch.relu(a + b))


def test_integers_wrap_before_the_relu():
    out, lhs, rhs = tiles(D.INT16, D.INT16, D.INT16, valid=(1, 3))
    lhs.write(torch.tensor([[30000, -5, 7]], dtype=torch.int16))
    rhs.write(torch.tensor([[30000, 2, 1]], dtype=torch.int16))
    IMPLS["block.add_relu"]([out, lhs, rhs], {})
    assert lhs.read().tolist() == [[-5536, -3, 8]]
    assert out.read().tolist() == [[0, 0, 8]]


def test_fused_casts_round_in_lhs_then_convert():
    out, lhs, rhs = tiles(D.FP16, D.FP32, D.FP32, valid=(1, 4))
    tie = 1 + 2.0**-11  # halfway between two FP16 values
    lhs.write(torch.tensor([[1.0, -5.0, tie, 3.0]]))
    rhs.write(torch.tensor([[0.5, 1.0, 0.0, 4.0]]))
    IMPLS["block.add_relu_cast"]([out, lhs, rhs], {"target_type": D.FP16})
    assert lhs.read().tolist() == [[1.5, 0.0, tie, 7.0]]  # the sum and its ReLU, in lhs
    assert out.read().float().tolist() == [[1.5, 0.0, 1 + 2.0**-10, 7.0]]  # CAST_ROUND
    IMPLS["block.mul_cast"]([out, lhs, rhs], {"target_type": "DT_FP16", "mode": R.CAST_RINT})
    assert lhs.read().tolist() == [[0.75, 0.0, 0.0, 28.0]]
    assert out.read().float().tolist() == [[0.75, 0.0, 0.0, 28.0]]
    lhs.write(torch.tensor([[1.0, -5.0, tie, 3.0]]))
    IMPLS["block.sub_relu_cast"]([out, lhs, rhs], {"target_type": D.FP16,
                                                   "mode": R.CAST_TRUNC})
    assert lhs.read().tolist() == [[0.5, 0.0, tie, 0.0]]
    assert out.read().float().tolist() == [[0.5, 0.0, 1.0, 0.0]]
    with pytest.raises(SimOpError, match="target_type"):
        IMPLS["block.sub_relu_cast"]([out, lhs, rhs], {"target_type": D.BF16})
