"""Row and column reductions, arg-reductions, generic reduce."""
from __future__ import annotations

import pytest
import torch

from pypto_pro.ir.dtype import DataType as D
from pypto_pro.ir.types import MemorySpace as M
from pypto_pro.ir.types import TileLayout as L
from pypto_pro.sim.model.memory import CoreMemory, TileGeometry, TileRef, storage_dtype
from pypto_pro.sim.ops import IMPLS, SimOpError
from pypto_pro.soc import soc

VALID = (6, 45)


def setup(dtype, out_dtype=None, axis=1):
    mem = CoreMemory(soc(), "aiv")
    src = TileRef(mem, TileGeometry(8, 64, dtype, M.Vec, L.ND, addr=0), *VALID)
    tmp = TileRef(mem, TileGeometry(8, 64, dtype, M.Vec, L.ND, addr=8192), *VALID)
    if axis == 1:
        out = TileRef(mem, TileGeometry(8, 1, out_dtype or dtype, M.Vec, L.DN, addr=16384),
                      VALID[0], 1)
    else:
        out = TileRef(mem, TileGeometry(1, 64, out_dtype or dtype, M.Vec, L.ND, addr=16384),
                      1, VALID[1])
    x = (torch.randn(VALID, generator=torch.Generator().manual_seed(3)) * 10)
    src.write(x.to(storage_dtype(dtype)))
    return out, src, tmp, x.to(storage_dtype(dtype))


@pytest.mark.parametrize("dtype", [D.FP16, D.FP32, D.BF16])
@pytest.mark.parametrize("kind", ["sum", "max", "min", "prod"])
def test_row_and_col_reductions(dtype, kind):
    for axis, prefix in ((1, "row"), (0, "col")):
        out, src, tmp, x = setup(dtype, axis=axis)
        IMPLS[f"block.{prefix}_{kind}"]([out, src, tmp], {})
        wide = x.float()
        expect = {"sum": wide.sum(axis, keepdim=True), "max": wide.amax(axis, True),
                  "min": wide.amin(axis, True), "prod": wide.prod(axis, True)}[kind].to(x.dtype)
        assert out.read().shape == expect.shape
        assert torch.allclose(out.read().float(), expect.float(), rtol=1e-3, equal_nan=True)
        if kind in ("max", "min"):
            assert torch.equal(out.read(), expect)


def test_integer_sum_wraps_and_argmax_gives_first_index():
    out, src, tmp, _ = setup(D.INT16, axis=1)
    src.write(torch.full(VALID, 30000, dtype=torch.int16))
    IMPLS["block.row_sum"]([out, src, tmp], {})
    wrapped = (30000 * 45 + 32768) % 65536 - 32768
    assert out.read().flatten().tolist() == [wrapped] * 6
    idx, src, tmp, x = setup(D.FP32, D.INT32, axis=1)
    row = torch.zeros(VALID)
    row[:, 7] = 5.0
    row[:, 30] = 5.0  # tie: the first index wins
    src.write(row)
    IMPLS["block.row_argmax"]([idx, src, tmp], {})
    assert idx.read().flatten().tolist() == [7] * 6
    cols, src, tmp, x = setup(D.FP32, D.UINT32, axis=0)
    IMPLS["block.col_argmin"]([cols, src, tmp], {})
    assert torch.equal(cols.read().to(torch.int64), x.argmin(0, keepdim=True))


def test_generic_reduce_and_errors():
    out, src, tmp, x = setup(D.FP32, axis=1)
    IMPLS["block.row_reduce"]([out, src, tmp], {"op": "MAX"})
    assert torch.equal(out.read(), x.amax(1, keepdim=True))
    with pytest.raises(SimOpError, match="ReduceOp"):
        IMPLS["block.row_reduce"]([out, src, tmp], {})
    bad, src, tmp, _ = setup(D.FP32, D.FP16, axis=1)
    with pytest.raises(SimOpError, match="differs"):
        IMPLS["block.row_sum"]([bad, src, tmp], {})


@pytest.mark.parametrize("dtype", [D.FP32, D.FP16])
@pytest.mark.parametrize("valid", [(8, 64), (6, 45)])
def test_a_sum_reads_the_buffer_in_place_and_adds_as_a_copy_would(dtype, valid):
    """A source whose valid window is a contiguous view of its buffer (whole rows) is reduced
    straight from the buffer, anything else from a copy; the sums are bit for bit those of
    torch on a contiguous copy of the window (the order torch adds a row in depends on its
    layout), and the source is left as it was."""
    mem = CoreMemory(soc(), "aiv")
    src = TileRef(mem, TileGeometry(8, 64, dtype, M.Vec, L.ND, addr=0), *valid)
    out = TileRef(mem, TileGeometry(8, 1, dtype, M.Vec, L.DN, addr=16384), valid[0], 1)
    x = (torch.randn(valid, generator=torch.Generator().manual_seed(5)) * 100) \
        .to(storage_dtype(dtype))
    src.write(x)
    IMPLS["block.row_sum"]([out, src], {})
    expect = x.float().contiguous().sum(1, keepdim=True).to(x.dtype)
    assert torch.equal(out.read(), expect)
    assert torch.equal(src.read(), x)
