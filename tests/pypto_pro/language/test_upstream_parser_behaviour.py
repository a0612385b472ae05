"""Language behaviour the real PyPTO Pro frontend shows (learned from its parser unit tests and
source), written as our own kernels: constructs it accepts run here and match torch / Python on
the simulator and the native backend; constructs it rejects raise a typed error at the
offending source line. Covered: `ptr + offset` (= pl.addptr, never on sub-byte dtypes), `is
None` (a plain name, never a tensor), SIMT annotations and tile slices, runtime indexes into
mixed tuples, vector functions calling vector functions (and not plain helpers).
"""
from __future__ import annotations

import inspect

import pytest
import torch
from dual_backend import sim_and_native
from kernel_source import line_of

import pypto_pro.language as pl
from pypto_pro.compiler import compile_kernel
from pypto_pro.errors import ParserSyntaxError, ParserTypeError, UnsupportedFeatureError
from pypto_pro.runtime.kernel_def import Specialization

VT = pl.TileType(shape=[16, 32], dtype=pl.DT_FP16, target_memory=pl.MemorySpace.Vec)


def _compile(kernel) -> None:
    compile_kernel(kernel.kernel_def, Specialization(arch="a5"))


def _raises_at(kernel, error: type, text: str, match: str):
    with pytest.raises(error, match=match) as info:
        _compile(kernel)
    assert info.value.span is not None and info.value.span.line == line_of(kernel, text)


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


# ---------------------------------------------------------------- SIMT annotations are checked


@pl.simt.function
def halve(v: pl.DT_FP32) -> pl.DT_FP32:
    return v * 0.5


@pl.simt.function(max_threads=64)
def halve_row(t: pl.Tile[[1, 64], pl.DT_FP32], bias: pl.DT_FP32):
    i = pl.simt.thread_idx().x
    t[0, i] = halve(t[0, i]) + bias


@pl.jit
def halve_rows(x: pl.Tensor[[1, 64], pl.DT_FP32], z: pl.Tensor[[1, 64], pl.DT_FP32],
               bias: pl.DT_FP32):
    with pl.section_vector():
        t = pl.make_tile(pl.TileType(shape=[1, 64], dtype=pl.DT_FP32,
                                     target_memory=pl.MemorySpace.Vec), addr=0x0)
        pl.load(t, x, [0, 0])
        pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
        pl.simt.launch(halve_row, threads=64, args=(t, bias))
        pl.system.sync_src(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.store(z, t, [0, 0])


def test_annotated_simt_functions_run_when_the_arguments_fit():
    x = torch.randn(1, 64)

    def run():
        z = torch.zeros(1, 64)
        halve_rows(x, z, 0.25)
        return z

    assert torch.allclose(sim_and_native(run), x * 0.5 + 0.25)


@pl.simt.function
def as_int(v: pl.DT_FP32) -> pl.DT_INT32:
    return v


@pl.simt.function(max_threads=32)
def rounds(t: pl.Tile[[1, 32], pl.DT_FP32]):
    i = pl.simt.thread_idx().x
    t[0, i] = pl.simt.cast(as_int(t[0, i]), pl.DT_FP32)


@pl.simt.function(max_threads=32)
def counts(t: pl.Tile[[1, 32], pl.DT_FP32], n: pl.DT_INT32):
    i = pl.simt.thread_idx().x
    t[0, i] = t[0, i] + 1.0


@pl.jit
def launch_rounds(x: pl.Tensor[[1, 32], pl.DT_FP32]):
    with pl.section_vector():
        t = pl.make_tile(pl.TileType(shape=[1, 32], dtype=pl.DT_FP32,
                                     target_memory=pl.MemorySpace.Vec), addr=0x0)
        pl.simt.launch(rounds, threads=32, args=(t,))


@pl.jit
def launch_counts(x: pl.Tensor[[1, 32], pl.DT_FP32], n: pl.DT_FP32):
    with pl.section_vector():
        t = pl.make_tile(pl.TileType(shape=[1, 32], dtype=pl.DT_FP32,
                                     target_memory=pl.MemorySpace.Vec), addr=0x0)
        pl.simt.launch(counts, threads=32, args=(t, n))


def test_simt_values_that_do_not_fit_their_annotation_are_refused():
    with pytest.raises(ParserTypeError, match="annotated as a scalar of pl.DT_INT32") as info:
        _compile(launch_rounds)
    assert info.value.span.line == inspect.getsourcelines(as_int)[1] + 2  # its return
    _raises_at(launch_counts, ParserTypeError, "pl.simt.launch(counts",
               "SIMT parameter 'n' of 'counts' annotated as a scalar of pl.DT_INT32")


@pl.simt.function(max_threads=32)
def first_half(t: pl.Tile[[1, 32], pl.DT_FP32]):
    h = t[0:1, 0:16]
    h[0, 0] = 1.0


@pl.jit
def launch_first_half(x: pl.Tensor[[1, 32], pl.DT_FP32]):
    with pl.section_vector():
        t = pl.make_tile(pl.TileType(shape=[1, 32], dtype=pl.DT_FP32,
                                     target_memory=pl.MemorySpace.Vec), addr=0x0)
        pl.simt.launch(first_half, threads=32, args=(t,))


def test_a_simt_function_cannot_slice_a_tile():
    with pytest.raises(UnsupportedFeatureError, match="inside a SIMT function") as info:
        _compile(launch_first_half)
    assert info.value.span.line == inspect.getsourcelines(first_half)[1] + 2


# ---------------------------------------------------------------- runtime index into a tuple


@pl.jit
def pick_scale(out: pl.Tensor[[2], pl.DT_INT32], a: pl.DT_INT32, b: pl.DT_INT32,
               i: pl.DT_INT32):
    with pl.section_vector():
        pl.setval(out, 0, (a, b, 7)[i])  # one family (a constant adapts)
        pl.setval(out, 1, (a * 2, b * 2)[1 - i % 2])


@pytest.mark.parametrize("i", [0, 1, 2])
def test_a_runtime_index_picks_among_values_of_one_type(i):
    def run():
        out = torch.zeros(2, dtype=torch.int32)
        pick_scale(out, 5, 9, i)
        return out

    assert sim_and_native(run).tolist() == [(5, 9, 7)[i], (10, 18)[1 - i % 2]]


@pl.jit
def pick_mixed(out: pl.Tensor[[2], pl.DT_FP32], a: pl.DT_INT32, b: pl.DT_FP32,
               i: pl.DT_INT32):
    with pl.section_vector():
        pl.setval(out, 0, (a, b)[i])


def test_a_runtime_index_into_a_mixed_tuple_is_refused():
    _raises_at(pick_mixed, ParserTypeError, "(a, b)[i]", "mixes float and int values")


# ---------------------------------------------------------------- VF code calls VF code only

FV = pl.TileType(shape=[1, 64], dtype=pl.DT_FP32, target_memory=pl.MemorySpace.Vec)


@pl.vector_function
def add_into(o_t, a, b, mask):
    vf = pl.vf
    r = vf.add(a, b, mask)
    vf.store_align(o_t, r, mask)


@pl.vector_function
def double_plus_one(x_t, o_t):
    vf = pl.vf
    every = vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=pl.DT_FP32)
    x = vf.load_align(x_t, 0)
    y = vf.adds(x, 1.0, every)
    add_into(o_t, x, y, every)  # a VF helper: inlined into this scope


@pl.jit
def nested_vf(x: pl.Tensor[[1, 64], pl.DT_FP32], z: pl.Tensor[[1, 64], pl.DT_FP32]):
    with pl.section_vector():
        xt = pl.make_tile(FV, addr=0x0)
        ot = pl.make_tile(FV, addr=0x400)
        pl.load(xt, x, [0, 0])
        pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
        double_plus_one(xt, ot)
        pl.system.sync_src(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.store(z, ot, [0, 0])


def test_a_vector_function_calls_another_inline():
    x = torch.randn(1, 64)

    def run():
        z = torch.zeros(1, 64)
        nested_vf(x, z)
        return z

    assert torch.allclose(sim_and_native(run), x + (x + 1.0))
    nested_vf.compiled_variants.clear()
    text = nested_vf.compile(Specialization(arch="a5")).passes["vector"][0].ir_text
    assert text.count("ir.section_vf(") == 1  # the callee runs inside the caller's VF scope


def plain_store(o_t, r, mask):
    pl.vf.store_align(o_t, r, mask)


@pl.vector_function
def stores_through_a_plain_helper(x_t, o_t):
    every = pl.vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=pl.DT_FP32)
    plain_store(o_t, pl.vf.load_align(x_t, 0), every)


@pl.jit
def vf_with_plain_helper(x: pl.Tensor[[1, 64], pl.DT_FP32]):
    with pl.section_vector():
        xt = pl.make_tile(FV, addr=0x0)
        stores_through_a_plain_helper(xt, xt)


def test_a_vector_function_cannot_call_a_plain_helper():
    with pytest.raises(ParserSyntaxError, match="non-vector helper 'plain_store'") as info:
        _compile(vf_with_plain_helper)
    assert info.value.span.line == inspect.getsourcelines(stores_through_a_plain_helper)[1] + 3
