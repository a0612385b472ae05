"""`tensor.shape[axis]` as the real frontend resolves it: the dimension the parameter's type
holds (a fixed int, or the launch's dynamic dimension), for a compile-time integer axis,
negative from the end. A runtime, bool or float axis is a ParserSyntaxError, an axis past the
rank a ParserTypeError, both at their line; unpacking the whole shape takes exactly its rank.
"""
from __future__ import annotations

import pytest
import torch
from dual_backend import sim_and_native
from kernel_source import assert_refused

import pypto_pro.language as pl
from pypto_pro.errors import ParserSyntaxError, ParserTypeError

ROWS = pl.TileType(shape=[2, 128], dtype=pl.DT_FP32, target_memory=pl.MemorySpace.Vec)
LAST = -1


@pl.jit
def add_by_row_pairs(a: pl.Tensor[[pl.DYNAMIC, 128], pl.DT_FP32],
                     b: pl.Tensor[[pl.DYNAMIC, 128], pl.DT_FP32],
                     out: pl.Tensor[[pl.DYNAMIC, 128], pl.DT_FP32],
                     dims: pl.Tensor[[4], pl.DT_INT32]):
    with pl.section_vector():
        m = a.shape[0]  # the launch's rows
        n = a.shape[LAST]  # fixed: 128
        rows, cols = b.shape
        x = pl.make_tile(ROWS, addr=0x0000)
        y = pl.make_tile(ROWS, addr=0x0400)
        for i in pl.range(0, m, 2):
            pl.load(x, a, [i, 0])
            pl.load(y, b, [i, 0])
            pl.system.bar_all()
            pl.add(x, x, y)
            pl.system.bar_all()
            pl.store(out, x, [i, 0])
            pl.system.bar_all()
        pl.setval(dims, 0, m)
        pl.setval(dims, 1, n)
        pl.setval(dims, 2, rows)
        pl.setval(dims, 3, cols)


@pytest.mark.parametrize("m", [2, 6])
def test_shape_dimensions_reach_the_kernel(m):
    a, b = torch.randn(m, 128), torch.randn(m, 128)

    def run():
        out, dims = torch.zeros(m, 128), torch.zeros(4, dtype=torch.int32)
        add_by_row_pairs[None, 1](a, b, out, dims)
        return torch.cat([out.flatten(), dims.float()])

    got = sim_and_native(run)
    assert torch.equal(got[:-4].view(m, 128), a + b)
    assert got[-4:].tolist() == [m, 128, m, 128]


PARAMS = "x: pl.Tensor[[2, 128], pl.DT_FP32], s: pl.DT_INT64"


@pytest.mark.parametrize("name, index, error, fragment", [
    ("runtime_axis", "s", ParserSyntaxError, "tensor.shape index must be a compile-time integer"),
    ("bool_axis", "True", ParserSyntaxError, "must be a compile-time integer"),
    ("float_axis", "0.0", ParserSyntaxError, "must be a compile-time integer"),
    ("past_the_rank", "2", ParserTypeError, "shape index 2 out of range for tensor of rank 2"),
    ("before_the_rank", "-3", ParserTypeError, "shape index -3 out of range"),
])
def test_refused_axes(tmp_path, name, index, error, fragment):
    body = f"with pl.section_vector():\n    n = x.shape[{index}]\n    pl.printf('%d', n)\n"
    assert_refused(error, fragment, tmp_path, name, PARAMS, body)


def test_unpacking_takes_the_rank(tmp_path):
    body = "with pl.section_vector():\n    m, n, k = x.shape\n"
    assert_refused(ParserTypeError, "unpack", tmp_path, "unpack", PARAMS, body)
