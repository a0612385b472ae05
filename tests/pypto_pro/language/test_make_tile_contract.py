"""`pl.make_tile(tile_type, *, addr, size=None)` as the real frontend holds it: the tile type is
the only positional argument, `addr` is required and, like `size`, fixed while parsing; `size`
defaults to the type's footprint and may be any positive byte count. Accepted placements run
and match torch on the simulator and natively; every refusal is a typed error (the real
frontend's `FinalRejectionError`, a `ParserTypeError`; misalignment an `InvalidTile`, a
`ValueError`) with the real wording, at its line.
"""
from __future__ import annotations

import pytest
import torch
from dual_backend import sim_and_native
from kernel_source import assert_refused, compile_source

import pypto_pro.language as pl
from pypto_pro.errors import FinalRejectionError, InvalidTile

VEC = pl.TileType(shape=[16, 64], dtype=pl.DT_FP16, target_memory=pl.MemorySpace.Vec)
BASE = 0x400


@pl.jit
def placed_by_keywords(x: pl.Tensor[[16, 64], pl.DT_FP16], out: pl.Tensor[[16, 64], pl.DT_FP16]):
    with pl.section_vector():
        a = pl.make_tile(VEC, addr=BASE + 0x20)  # a constant expression; size: the footprint
        b = pl.make_tile(VEC, addr=0x1000, size=4096)  # more than the footprint is allowed
        pl.load(a, x, [0, 0])
        pl.system.bar_all()
        pl.add(b, a, a)
        pl.system.bar_all()
        pl.store(out, b, [0, 0])


def test_keyword_placements_run():
    x = torch.randn(16, 64).half()

    def run():
        out = torch.zeros(16, 64, dtype=torch.float16)
        placed_by_keywords[None, 1](x, out)
        return out

    assert torch.equal(sim_and_native(run), x + x)


PARAMS = "x: pl.Tensor[[pl.DYNAMIC, 64], pl.DT_FP16]"
PRELUDE = "VEC = pl.TileType(shape=[16, 64], dtype=pl.DT_FP16, target_memory=pl.MemorySpace.Vec)"


@pytest.mark.parametrize("name, call, error, fragment", [
    ("no_addr", "pl.make_tile(VEC, size=2048)", FinalRejectionError,
     "pl.make_tile() missing required keyword 'addr'"),
    ("addr_none", "pl.make_tile(VEC, addr=None)", FinalRejectionError,
     "'addr' must be a compile-time integer, got 'None'"),
    ("size_none", "pl.make_tile(VEC, addr=0x0, size=None)", FinalRejectionError,
     "'size' must be a compile-time integer, got 'None'"),
    ("positional_addr", "pl.make_tile(VEC, 0x1000)", FinalRejectionError,
     "takes 1 positional argument (the tile type) but 2 were given"),
    ("positional_pair", "pl.make_tile(VEC, 0x0, 2048)", FinalRejectionError,
     "takes 1 positional argument (the tile type) but 3 were given"),
    ("builder_form", "pl.make_tile([16, 64], pl.DT_FP16, pl.MemorySpace.Vec, 0x0, 2048)",
     FinalRejectionError, "takes a pl.TileType as its first argument, got [16, 64]"),
    ("no_type", "pl.make_tile(addr=0x0)", FinalRejectionError,
     "got no positional argument"),
    ("runtime_addr", "pl.make_tile(VEC, addr=x.shape[0] * 32)", FinalRejectionError,
     "'addr' must be a compile-time integer, got 'x.shape[0] * 32'"),
    ("runtime_size", "pl.make_tile(VEC, addr=0x0, size=x.shape[0] * 128)", FinalRejectionError,
     "'size' must be a compile-time integer"),
    ("zero_size", "pl.make_tile(VEC, addr=0x0, size=0)", FinalRejectionError,
     "'size' must be a positive byte count, got 0"),
    ("misaligned", "pl.make_tile(VEC, addr=0x1)", InvalidTile, "32-byte aligned"),
])
def test_refused_placements(tmp_path, name, call, error, fragment):
    body = f"with pl.section_vector():\n    t = {call}\n"
    assert_refused(error, fragment, tmp_path, name, PARAMS, body, prelude=PRELUDE)


def test_the_positional_refusal_says_how_to_write_it(tmp_path):
    with pytest.raises(FinalRejectionError) as info:
        compile_source(tmp_path, "hinted", PARAMS,
                       "with pl.section_vector():\n    t = pl.make_tile(VEC, 0x0, 2048)\n",
                       prelude=PRELUDE)
    assert "pass addr and size as keywords" in str(info.value) and "addr=0x0" in str(info.value)
