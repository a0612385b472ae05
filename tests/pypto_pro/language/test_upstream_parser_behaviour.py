"""Language behaviour the real PyPTO Pro frontend shows (learned from its parser unit tests and
source), written as our own kernels: constructs it accepts run here and match torch; constructs
it rejects raise a typed error at the offending source line.
"""
from __future__ import annotations

import inspect

import pytest
import torch
from dual_backend import sim_and_native

import pypto_pro.language as pl
from pypto_pro.compiler import compile_kernel
from pypto_pro.errors import ParserSyntaxError, ParserTypeError, UnsupportedFeatureError
from pypto_pro.runtime.kernel_def import Specialization

VT = pl.TileType(shape=[16, 32], dtype=pl.DT_FP16, target_memory=pl.MemorySpace.Vec)


def _compile(kernel) -> None:
    compile_kernel(kernel.kernel_def, Specialization(arch="a5"))


def _line_of(kernel, text: str) -> int:
    lines, start = inspect.getsourcelines(kernel.kernel_def.fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def _raises_at(kernel, error: type, text: str, match: str):
    with pytest.raises(error, match=match) as info:
        _compile(kernel)
    assert info.value.span is not None and info.value.span.line == _line_of(kernel, text)


# ---------------------------------------------------------------- `ptr + offset` is pl.addptr


@pl.jit
def rows_from_offset_pointer(p: pl.Ptr[pl.DT_FP16], z: pl.Tensor[[32, 32], pl.DT_FP16],
                             row: pl.DT_INT32):
    with pl.section_vector():
        fixed = pl.make_tensor(p + 16 * 32, [16, 32])  # the second 16 rows
        chosen = pl.make_tensor(pl.make_ptr(p, dtype=pl.DT_FP16) + row * 32, [16, 32])
        a = pl.make_tile(VT, addr=0x0)
        b = pl.make_tile(VT, addr=0x400)
        pl.load(a, fixed, [0, 0])
        pl.load(b, chosen, [0, 0])
        pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.store(z, a, [0, 0])
        pl.store(z, b, [16, 0])


@pytest.mark.parametrize("row", [0, 5])
def test_pointer_plus_offset_moves_by_elements(row):
    src = torch.randn(48, 32).half()

    def run():
        z = torch.zeros(32, 32).half()
        rows_from_offset_pointer(src, z, row)
        return z

    z = sim_and_native(run)
    assert torch.equal(z[:16], src[16:32])
    assert torch.equal(z[16:], src[row:row + 16])


@pl.jit
def offset_sub_byte_pointer(p: pl.Ptr[pl.DT_INT4], z: pl.Tensor[[16, 32], pl.DT_FP16]):
    with pl.section_vector():
        q = p + 8  # two int4 elements share a byte
        pl.make_tensor(pl.make_ptr(q, dtype=pl.DT_FP16), [16, 32])


@pl.jit
def addptr_sub_byte_pointer(p: pl.Ptr[pl.DT_UINT8], z: pl.Tensor[[16, 32], pl.DT_FP16]):
    with pl.section_vector():
        q = pl.addptr(pl.make_ptr(p, dtype=pl.DT_FP4), 8)
        pl.make_tensor(pl.make_ptr(q, dtype=pl.DT_FP16), [16, 32])


@pl.jit
def subtract_from_pointer(p: pl.Ptr[pl.DT_FP16], z: pl.Tensor[[16, 32], pl.DT_FP16]):
    with pl.section_vector():
        q = p - 8
        pl.make_tensor(q, [16, 32])


def test_pointer_arithmetic_on_sub_byte_elements_is_refused_at_its_line():
    _raises_at(offset_sub_byte_pointer, ParserTypeError, "q = p + 8", "sub-byte")
    _raises_at(addptr_sub_byte_pointer, ParserTypeError, "q = pl.addptr", "sub-byte")


def test_only_plus_is_pointer_arithmetic():
    _raises_at(subtract_from_pointer, UnsupportedFeatureError, "q = p - 8", "on a pointer")


# ---------------------------------------------------------------- `x is None`


@pl.jit
def null_check_of_an_expression(x: pl.Tensor[[16, 32], pl.DT_FP16], n: pl.DT_INT32):
    with pl.section_vector():
        if (n + 1) is None:
            pl.printf("never\n")


@pl.jit
def null_check_of_a_tensor(x: pl.Tensor[[16, 32], pl.DT_FP16],
                           bias: pl.Tensor[[16, 32], pl.DT_FP16]):
    with pl.section_vector():
        if bias is None:
            pl.printf("no bias\n")


def test_is_none_takes_a_plain_name_and_never_a_tensor():
    _raises_at(null_check_of_an_expression, ParserSyntaxError, "is None", "plain variable name")
    _raises_at(null_check_of_a_tensor, ParserTypeError, "is None", "pl.Ptr")
