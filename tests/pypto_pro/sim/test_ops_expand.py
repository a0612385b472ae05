"""Row/column broadcast ops."""
from __future__ import annotations

import pytest
import torch

from pypto_pro.ir.dtype import DataType as D
from pypto_pro.ir.types import MemorySpace as M
from pypto_pro.ir.types import TileLayout as L
from pypto_pro.sim.model.memory import CoreMemory, TileGeometry, TileRef, storage_dtype
from pypto_pro.sim.ops import IMPLS, SimOpError
from pypto_pro.soc import soc

VALID = (5, 20)
REFS = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div,
        "max": torch.maximum, "min": torch.minimum, "expdif": lambda a, b: torch.exp(a - b)}


def setup(dtype):
    mem = CoreMemory(soc(), "aiv")
    out = TileRef(mem, TileGeometry(8, 32, dtype, M.Vec, L.ND, addr=0), *VALID)
    src = TileRef(mem, TileGeometry(8, 32, dtype, M.Vec, L.ND, addr=1024), *VALID)
    rows = TileRef(mem, TileGeometry(8, 1, dtype, M.Vec, L.DN, addr=2048), VALID[0], 1)
    cols = TileRef(mem, TileGeometry(1, 32, dtype, M.Vec, L.ND, addr=2560), 1, VALID[1])
    gen = torch.Generator().manual_seed(0)
    x = (torch.rand(VALID, generator=gen) * 4 + 0.5).to(storage_dtype(dtype))
    r = (torch.rand(VALID[0], 1, generator=gen) * 4 + 0.5).to(storage_dtype(dtype))
    c = (torch.rand(1, VALID[1], generator=gen) * 4 + 0.5).to(storage_dtype(dtype))
    src.write(x)
    rows.write(r)
    cols.write(c)
    return out, src, rows, cols, x, r, c


@pytest.mark.parametrize("dtype", [D.FP16, D.FP32])
@pytest.mark.parametrize("name", list(REFS))
def test_row_and_col_expand_ops(dtype, name):
    out, src, rows, cols, x, r, c = setup(dtype)
    IMPLS[f"block.row_expand_{name}"]([out, src, rows], {})
    assert torch.equal(out.read(), REFS[name](x.float(), r.float()).to(x.dtype))
    IMPLS[f"block.col_expand_{name}"]([out, src, cols], {})
    assert torch.equal(out.read(), REFS[name](x.float(), c.float()).to(x.dtype))


def test_binop_kwarg_and_plain_broadcast():
    out, src, rows, cols, x, r, c = setup(D.FP32)
    IMPLS["block.row_expand_binop"]([out, src, rows], {"op": "mul"})
    assert torch.equal(out.read(), x * r)
    IMPLS["block.col_expand"]([out, cols], {})
    assert torch.equal(out.read(), c.expand(VALID))
    IMPLS["block.row_expand"]([out, rows], {})
    assert torch.equal(out.read(), r.expand(VALID))
    with pytest.raises(SimOpError, match="kwarg op"):
        IMPLS["block.col_expand_binop"]([out, src, cols], {"op": "pow"})
