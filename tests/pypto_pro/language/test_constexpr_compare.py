"""Comparisons of compile-time values (issue 21, class 4): dtypes (a `datatype=` variable, a
tensor's or tile's `.dtype`), enums, tiling-key fields and other constants compared with
`==`, `!=`, `in`, `is` fold while parsing, so only the chosen branch is compiled; the real
PyPTO Pro does the same (`if dtype == pl.DT_FP16:`). Ordering an enum stays an error.
"""
from __future__ import annotations

import pytest
import torch
from dual_backend import sim_and_native
from kernel_source import assert_refused

import pypto_pro.language as pl
from pypto_pro.errors import ParserTypeError, UnsupportedFeatureError
from pypto_pro.runtime.kernel_def import Specialization

MODE = "scale"
NOTHING = None


@pl.jit(datatype={"x": "io_dtype", "y": "io_dtype"})
def by_dtype(x: pl.Tensor[[16, 32], pl.DT_FP32], y: pl.Tensor[[16, 32], pl.DT_FP32]):
    tile_type = pl.TileType(shape=[16, 32], dtype=io_dtype)  # noqa: F821  (datatype variable)
    with pl.section_vector():
        t = pl.make_tile(tile_type, addr=0)
        pl.load(t, x, [0, 0])
        pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
        if io_dtype == pl.DT_FP16:  # noqa: F821
            pl.add(t, t, 1.0)
        elif x.dtype in (pl.DT_BF16, pl.DT_FP32) and t.dtype != pl.DT_INT32:
            pl.mul(t, t, 3.0)
        if pl.constexpr(io_dtype is pl.DT_FP32 and MODE == "scale"):  # noqa: F821
            pl.mul(t, t, 2.0)
        pl.system.sync_src(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.store(y, t, [0, 0])


@pytest.mark.parametrize("dtype,torch_dtype,expected", [
    (pl.DT_FP16, torch.float16, lambda x: x + 1),
    (pl.DT_BF16, torch.bfloat16, lambda x: x * 3),
    (pl.DT_FP32, torch.float32, lambda x: x * 6),
])
def test_branches_on_the_dtype_fold_per_specialisation(dtype, torch_dtype, expected):
    x = torch.randn(16, 32).to(torch_dtype)

    def run():
        y = torch.zeros_like(x)
        by_dtype[None, 1, {"x": dtype, "y": dtype}](x, y)
        return y

    assert torch.equal(sim_and_native(run), expected(x))


def test_only_the_chosen_branch_is_compiled():
    spec = Specialization(arch="a5", datatype=(("io_dtype", pl.DT_FP16),))
    text = by_dtype.compile(spec).passes["vector"][0].ir_text
    assert "block.adds" in text and "block.muls" not in text


@pl.jit()
def enums_and_constants(out: pl.Tensor[[4], pl.DT_INT32]):
    with pl.section_vector():
        pipe = pl.PipeType.MTE2
        pl.setval(out, 0, 1 if pipe == pl.PipeType.MTE2 else 0)
        pl.setval(out, 1, 1 if pipe != pl.PipeType.V else 0)
        pl.setval(out, 2, 1 if MODE in ("scale", "shift") else 0)
        pl.setval(out, 3, 1 if (NOTHING is None) and not (pl.DT_FP16 == pl.DT_FP32)
                  and pipe is not None else 0)  # compile-time values: Python's `is`


def test_enum_and_string_comparisons_fold():
    def run():
        out = torch.zeros(4, dtype=torch.int32)
        enums_and_constants(out)
        return out

    assert sim_and_native(run).tolist() == [1, 1, 1, 1]
    enums_and_constants.compiled_variants.clear()
    text = enums_and_constants.compile(Specialization(arch="a5")).passes["vector"][0].ir_text
    assert " if " not in text  # every ternary folded


@pytest.mark.parametrize("name,body,error,fragment", [
    ("ordered_enums", """
        if pl.DT_FP16 < pl.DT_FP32:
            pass
     """, UnsupportedFeatureError, "Only == and != are supported"),
    ("enum_against_runtime", """
        if n == pl.DT_FP16:
            pass
     """, ParserTypeError, "needs scalar operands"),
    ("is_on_runtime_values", """
        if n is n:
            pass
     """, ParserTypeError, "'is' / 'is not' only supported with None"),
])
def test_refused_comparisons(tmp_path, name, body, error, fragment):
    assert_refused(error, fragment, tmp_path, name,
                   "out: pl.Tensor[[4], pl.DT_INT32], n: pl.DT_INT32", body)
