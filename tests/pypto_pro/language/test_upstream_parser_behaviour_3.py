"""Still more language behaviour of the real PyPTO Pro frontend (learned from its parser and
codegen unit tests and source), written as our own kernels checked on the simulator and the
native backend. Covered: `is` (a null test only on a `pl.Ptr`, Python's `is` on values known
while parsing, a type error on anything that exists only at run time), chained comparisons
and runtime powers (refused), `tile + k` outside VF code and a kernel returning a value
(syntax errors), helpers called with plain positional arguments only, shape annotations
refused in the real frontend's words, structs returned from the runtime branches of a helper
(one object, filled on whichever branch ran), the words of an undefined-name error.
"""
from __future__ import annotations

import pytest
import torch
from dual_backend import sim_and_native
from kernel_source import assert_refused

import pypto_pro.language as pl
from pypto_pro.errors import (
    ParserSyntaxError, ParserTypeError, UndefinedVariableError, UnsupportedFeatureError,
)

DT = pl.DT_FP16
NOTHING = None


# ---------------------------------------------------------------- `is` on compile-time values


def _is_fp16(dt):
    return 1 if dt is pl.DT_FP16 else 0


@pl.jit
def identities(out: pl.Tensor[[6], pl.DT_INT32]):
    with pl.section_vector():
        wide = pl.DT_FP32
        count = 3
        pl.setval(out, 0, DT is pl.DT_FP16)  # closure values: Python's `is`
        pl.setval(out, 1, wide is not pl.DT_FP16)  # a kernel-local dtype
        pl.setval(out, 2, NOTHING is None)
        pl.setval(out, 3, count is None)  # a kernel-local constant is never None
        pl.setval(out, 4, _is_fp16(pl.DT_FP16) * 10 + _is_fp16(wide))  # a helper's dtype
        pl.setval(out, 5, (pl.DT_FP16 is DT) + 2 ** 3 * 10)  # constants fold, ** too


def test_is_folds_on_values_known_while_parsing():
    def run():
        out = torch.zeros(6, dtype=torch.int32)
        identities(out)
        return out

    assert sim_and_native(run).tolist() == [1, 1, 1, 0, 10, 81]


@pl.jit(datatype={"x": "x_dtype"})
def dtype_by_identity(x: pl.Ptr[pl.DT_UINT8], out: pl.Tensor[[1], pl.DT_INT32]):
    with pl.section_vector():
        if x_dtype is pl.DT_FP16:  # noqa: F821 (a datatype variable of this launch)
            pl.setval(out, 0, 16)
        else:
            pl.setval(out, 0, 32)


@pytest.mark.parametrize("dtype,expected", [(pl.DT_FP16, 16), (pl.DT_FP32, 32)])
def test_a_datatype_variable_is_compared_by_identity(dtype, expected):
    def run():
        out = torch.zeros(1, dtype=torch.int32)
        dtype_by_identity[None, 1, {"x": dtype}](torch.zeros(4, dtype=torch.uint8), out)
        return out

    assert sim_and_native(run).tolist() == [expected]


# ---------------------------------------------------------------- `is` on runtime values


@pytest.mark.parametrize("name,body,error,fragment", [
    ("tile_is_none", """
        t = pl.make_tile(pl.TileType(shape=[16, 32], dtype=pl.DT_FP16,
                                     target_memory=pl.MemorySpace.Vec), addr=0x0)
        with pl.section_vector():
            pl.setval(out, 0, t is None)
     """, ParserTypeError, "only supported on pl.Ptr parameters"),
    ("scalar_is_not_none", """
        with pl.section_vector():
            pl.setval(out, 0, n is not None)
     """, ParserTypeError, "only supported on pl.Ptr parameters"),
    ("helper_default_none", """
        with pl.section_vector():
            fill(out)
     """, ParserTypeError, "'value is None'"),
    ("local_bound_to_none", """
        with pl.section_vector():
            v = None
            pl.setval(out, 0, v is None)
     """, ParserTypeError, "only supported on pl.Ptr parameters"),
    ("none_is_none", """
        with pl.section_vector():
            pl.setval(out, 0, None is None)
     """, ParserSyntaxError, "only supported on a plain variable name"),
    ("attribute_is_none", """
        info = pl.make_tuple(a=1)
        with pl.section_vector():
            pl.setval(out, 0, info.a is None)
     """, ParserSyntaxError, "only supported on a plain variable name"),
    ("none_is_a_pointer", """
        with pl.section_vector():
            pl.setval(out, 0, None is p)
     """, ParserTypeError, "'is' / 'is not' only supported with None"),
    ("runtime_identity", """
        with pl.section_vector():
            pl.setval(out, 0, n is n)
     """, ParserTypeError, "'is' / 'is not' only supported with None"),
    ("runtime_call_identity", """
        with pl.section_vector():
            pl.setval(out, 0, pl.get_block_idx() is pl.DT_FP16)
     """, ParserTypeError, "'pl.get_block_idx()' is a runtime value"),
    ("chained_comparison", """
        with pl.section_vector():
            pl.setval(out, 0, 0 <= n < 4)
     """, ParserSyntaxError, "Only simple comparisons supported"),
    ("power_of_a_runtime_value", """
        with pl.section_vector():
            pl.setval(out, 0, n ** 2)
     """, UnsupportedFeatureError, "Unsupported binary operator: Pow"),
    ("tile_plus_offset_outside_vf", """
        t = pl.make_tile(pl.TileType(shape=[16, 32], dtype=pl.DT_FP16,
                                     target_memory=pl.MemorySpace.Vec), addr=0x0)
        with pl.section_vector():
            u = t + 16
     """, ParserSyntaxError, "Tile + offset is not supported outside VF section"),
    ("kernel_returns_a_value", """
        with pl.section_vector():
            return n
     """, ParserSyntaxError, "only supports bare return or return None"),
    ("chained_constant_comparison", """
        with pl.section_vector():
            pl.setval(out, 0, 1 < 2 < 3)
     """, ParserSyntaxError, "Only simple comparisons supported"),
])
def test_is_on_a_runtime_value_and_chained_comparisons_are_refused(tmp_path, name, body,
                                                                   error, fragment):
    assert_refused(error, fragment, tmp_path, name,
                   "out: pl.Tensor[[4], pl.DT_INT32], n: pl.DT_INT32, p: pl.Ptr[pl.DT_FP16]",
                   body, prelude="def fill(o, value=None):\n    if value is None:\n"
                                 "        pl.setval(o, 0, 1)\n")


# ---------------------------------------------------------------- shape annotations


@pytest.mark.parametrize("annotation,fragment", [
    ("pl.Tensor[[3.14], pl.DT_FP32]", "axis 0 annotation must be"),
    ("pl.Tensor[[128, 'bad'], pl.DT_FP32]", "axis 1 annotation must be"),
    ("pl.Tensor[[0, 32], pl.DT_FP32]", "a positive integer"),
    ("pl.Tensor[42, pl.DT_FP32]", "must be a list or tuple"),
    ("pl.Tensor['128x64', pl.DT_FP32]", "must be a list or tuple"),
    ("pl.Tile[[pl.DYNAMIC, 64], pl.DT_FP32]", "element 0 must be a positive integer"),
    ("pl.Tile[[16, 2.0], pl.DT_FP32]", "element 1 must be a positive integer"),
])
def test_bad_shape_annotations_are_type_errors(annotation, fragment):
    with pytest.raises(ParserTypeError, match=fragment):
        eval(annotation, {"pl": pl})


def test_a_tuple_shape_annotates_a_tensor():
    shape = (16, 32)

    @pl.jit
    def k(x: pl.Tensor[shape, pl.DT_FP32]):
        with pl.section_vector():
            pass

    assert k.kernel_def.params[0].spec.dims == (16, 32)


def test_an_undefined_name_is_reported_in_the_real_words(tmp_path):
    assert_refused(UndefinedVariableError, "Undefined variable 'totally_undefined'", tmp_path,
                   "undefined_name", "out: pl.Tensor[[1], pl.DT_INT32]", """
        with pl.section_vector():
            pl.setval(out, 0, totally_undefined)
     """)


# ---------------------------------------------------------------- calls of inlined helpers


def _scaled(v, k=3):
    return v * k


@pl.jit
def positional_helper_calls(out: pl.Tensor[[2], pl.DT_INT32], n: pl.DT_INT32):
    with pl.section_vector():
        pl.setval(out, 0, _scaled(n))  # the default fills the rest
        pl.setval(out, 1, _scaled(n, 5))


def test_a_helper_takes_its_arguments_by_position():
    def run():
        out = torch.zeros(2, dtype=torch.int32)
        positional_helper_calls(out, 7)
        return out

    assert sim_and_native(run).tolist() == [21, 35]


@pytest.mark.parametrize("name,body,error,fragment", [
    ("keyword_argument", "pl.setval(out, 0, scaled(n, k=2))", ParserSyntaxError,
     "Call to inline function 'scaled' only supports plain positional arguments"),
    ("starred_argument", "pl.setval(out, 0, scaled(*(n, 2)))", ParserSyntaxError,
     "only supports plain positional arguments"),
    ("keyword_only_parameter", "pl.setval(out, 0, scaled_kw(n))", ParserSyntaxError,
     "Inline function 'scaled_kw' only supports positional parameters with optional defaults"),
    ("too_few", "pl.setval(out, 0, scaled())", ParserTypeError,
     "Function 'scaled' expects 1 to 2 positional argument(s), got 0"),
    ("too_many", "pl.setval(out, 0, scaled(n, 2, 3))", ParserTypeError,
     "Function 'scaled' expects 1 to 2 positional argument(s), got 3"),
])
def test_helper_calls_the_real_parser_refuses(tmp_path, name, body, error, fragment):
    assert_refused(error, fragment, tmp_path, name,
                   "out: pl.Tensor[[1], pl.DT_INT32], n: pl.DT_INT32",
                   f"with pl.section_vector():\n    {body}\n",
                   prelude="def scaled(v, k=3):\n    return v * k\n\n\n"
                           "def scaled_kw(v, *, k=3):\n    return v * k\n")


# ---------------------------------------------------------------- structs returned from branches


def _span(v):
    if v > 4:
        return pl.struct("Span", lo=v, hi=v + 1)
    return pl.struct("Span", lo=0, hi=v)


def _span_pair(v):
    if v > 4:
        return pl.struct("Bound", lo=v, hi=v + 1), pl.struct("Bound", lo=v + 2, hi=v + 3)
    return pl.struct("Bound", lo=0, hi=v), pl.struct("Bound", lo=1, hi=v)


def _span_and_flag(v):
    if v > 4:
        return pl.struct("Flagged", lo=v, hi=v + 1), True
    return pl.struct("Flagged", lo=0, hi=v), False


@pl.jit
def struct_returns(a: pl.Tensor[[pl.DYNAMIC], pl.DT_INT32], out: pl.Tensor[[6], pl.DT_INT32]):
    with pl.section_vector():
        n = a.shape[0]
        s = _span(n)
        pl.setval(out, 0, s.lo)
        pl.setval(out, 1, s.hi)
        first, second = _span_pair(n)
        pl.setval(out, 2, first.hi)
        pl.setval(out, 3, second.lo)
        both = _span_and_flag(n)
        pl.setval(out, 4, both[0].lo + both[0].hi)
        total = 0
        for i in pl.range(s.lo, s.hi + both[1], 1):  # the struct outlives its first reads
            total = total + i
        pl.setval(out, 5, total)


@pytest.mark.parametrize("n", [2, 6])
def test_a_struct_returned_from_runtime_branches_is_one_object(n):
    def run():
        out = torch.zeros(6, dtype=torch.int32)
        struct_returns(torch.zeros(n, dtype=torch.int32), out)
        return out

    big = n > 4
    lo, hi = (n, n + 1) if big else (0, n)
    second_lo = n + 2 if big else 1
    expected = [lo, hi, hi, second_lo, lo + hi, sum(range(lo, hi + big))]
    assert sim_and_native(run).tolist() == expected
