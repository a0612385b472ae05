"""More language behaviour of the real PyPTO Pro frontend (learned from its parser unit tests and
source), written as our own kernels: accepted constructs run and match Python / torch on the
simulator and the native backend; refused ones raise the real frontend's error class at the
offending line. Covered: runtime null checks of `pl.Ptr` arguments, compile-time `and` / `or`,
`tile.valid_shape[axis]`, struct / make_tuple misuse, `return` in a vector function, enum
kwargs and tensor layout annotations.
"""
from __future__ import annotations

import inspect

import pytest
import torch
from dual_backend import sim_and_native
from kernel_source import assert_refused

import pypto_pro
import pypto_pro.language as pl
from pypto_pro.language import Vf as vf
from pypto_pro.codegen import generate
from pypto_pro.compiler import compile_kernel
from pypto_pro.errors import (
    FinalRejectionError, ParserSyntaxError, ParserTypeError, SimulationError,
    UnsupportedFeatureError,
)
from pypto_pro.runtime.kernel_def import Specialization

VT = pl.TileType(shape=[16, 32], dtype=pl.DT_FP32, target_memory=pl.MemorySpace.Vec)


def _compile(kernel) -> None:
    compile_kernel(kernel.kernel_def, Specialization(arch="a5"))


def _sync(set_pipe, wait_pipe) -> None:  # inlined into the kernels below
    pl.system.sync_src(set_pipe=set_pipe, wait_pipe=wait_pipe, event_id=0)
    pl.system.sync_dst(set_pipe=set_pipe, wait_pipe=wait_pipe, event_id=0)


# ---------------------------------------------------------------- `p is None` on a pl.Ptr


@pl.jit
def add_optional_bias(x: pl.Tensor[[16, 32], pl.DT_FP32], bias: pl.Ptr[pl.DT_FP32],
                      z: pl.Tensor[[16, 32], pl.DT_FP32]):
    with pl.section_vector():
        a = pl.make_tile(VT, addr=0x0)
        b = pl.make_tile(VT, addr=0x1000)
        pl.load(a, x, [0, 0])
        if bias is not None:
            pl.load(b, pl.make_tensor(bias, [16, 32]), [0, 0])
            _sync(pl.PipeType.MTE2, pl.PipeType.V)
            pl.add(a, a, b)
        else:
            _sync(pl.PipeType.MTE2, pl.PipeType.V)
            pl.muls(a, a, 2.0)
        _sync(pl.PipeType.V, pl.PipeType.MTE3)
        pl.store(z, a, [0, 0])


@pl.jit
def null_flags(p: pl.Ptr[pl.DT_FP16], out: pl.Tensor[[2], pl.DT_INT32]):
    with pl.section_vector():
        missing = p is None
        pl.setval(out, 0, missing)
        pl.setval(out, 1, p is not None)


def test_a_pointer_argument_passed_as_none_is_null_at_run_time():
    x, bias = torch.randn(16, 32), torch.randn(16, 32)

    def run(b):
        def launch():
            z = torch.zeros(16, 32)
            add_optional_bias(x, b, z)
            return z
        return launch

    assert torch.equal(sim_and_native(run(bias)), x + bias)
    assert torch.equal(sim_and_native(run(None)), x * 2)


def test_the_null_test_is_spelled_as_the_real_codegen_spells_it():
    compiled = compile_kernel(add_optional_bias.kernel_def, Specialization(arch="a5"))
    assert "if (!(((uint64_t)bias) == 0)) {" in generate(compiled).kernel_cpp


@pytest.mark.parametrize("arg,flags", [(None, [1, 0]), (torch.zeros(4).half(), [0, 1])])
def test_null_test_of_a_pointer_is_a_runtime_bool(arg, flags):
    def run():
        out = torch.zeros(2, dtype=torch.int32)
        null_flags(arg, out)
        return out

    assert sim_and_native(run).tolist() == flags


# ---------------------------------------------------------------- `and` / `or` on numbers are bools


@pl.jit
def truth_values(out: pl.Tensor[[8], pl.DT_INT32], n: pl.DT_INT32):
    with pl.section_vector():
        pl.setval(out, 0, (2 and 0) + (0 or 3) * 10)  # False + True * 10
        pl.setval(out, 1, 1 if (0.0 or -2.5) else 0)
        pl.setval(out, 2, False and undefined_name)  # noqa: F821 (short-circuit: never parsed)
        pl.setval(out, 3, True or undefined_name)  # noqa: F821
        pl.setval(out, 4, (2 and n) * 5)  # the truth of n
        pl.setval(out, 5, (n or 7) * 5)
        pl.setval(out, 6, 1.5 and 0.0)
        pl.setval(out, 7, (3 and 4 and 5) + (0 or 0.0 or 9))


@pytest.mark.parametrize("n", [0, 6])
def test_and_or_on_numbers_give_bools(n):
    def run():
        out = torch.zeros(8, dtype=torch.int32)
        truth_values(out, n)
        return out

    assert sim_and_native(run).tolist() == [10, 1, 0, 1, 5 * bool(n), 5, 0, 2]


WIDE = 1


@pl.jit
def picks_a_dtype_with_and_or(out: pl.Tensor[[1], pl.DT_INT32]):
    dt = WIDE and pl.DT_BF16 or pl.DT_FP16  # a number and an object: Python's own result
    with pl.section_vector():
        pl.setval(out, 0, dt == pl.DT_BF16)


def test_and_or_with_a_compile_time_object_keep_pythons_result():
    def run():
        out = torch.zeros(1, dtype=torch.int32)
        picks_a_dtype_with_and_or(out)
        return out

    assert sim_and_native(run).tolist() == [1]


# ---------------------------------------------------------------- tile.valid_shape[axis]


@pl.jit
def valid_extent(out: pl.Tensor[[4], pl.DT_INT32]):
    with pl.section_vector():
        t = pl.make_tile(pl.TileType(shape=[16, 32], valid_shape=[8, 16], dtype=pl.DT_FP16,
                                     target_memory=pl.MemorySpace.Vec), addr=0x0)
        pl.setval(out, 0, t.valid_shape[0])
        pl.setval(out, 1, t.valid_shape[1])
        pl.setval(out, 2, t.valid_shape[-1])
        pl.setval(out, 3, t.valid_shape[-2])


def test_valid_shape_axes_count_from_the_end_when_negative():
    def run():
        out = torch.zeros(4, dtype=torch.int32)
        valid_extent(out)
        return out

    assert sim_and_native(run).tolist() == [8, 16, 16, 8]


@pytest.mark.parametrize("index,error,fragment", [
    ("True", ParserSyntaxError, "must be a compile-time integer"),
    ("0.0", ParserSyntaxError, "must be a compile-time integer"),
    ("n", ParserSyntaxError, "must be a compile-time integer"),
    ("2", ParserTypeError, "valid_shape index 2 out of range"),
    ("-3", ParserTypeError, "valid_shape index -3 out of range"),
])
def test_valid_shape_axis_is_a_constant_within_the_rank(tmp_path, index, error, fragment):
    assert_refused(error, fragment, tmp_path, "valid_axis", "out: pl.Tensor[[4], pl.DT_INT32], "
                   "n: pl.DT_INT32", f"""
        t = pl.make_tile(pl.TileType(shape=[16, 32], dtype=pl.DT_FP16,
                                     target_memory=pl.MemorySpace.Vec), addr=0x0)
        with pl.section_vector():
            pl.setval(out, 0, t.valid_shape[{index}])
    """)


# ---------------------------------------------------------------- struct and make_tuple misuse


@pytest.mark.parametrize("name,body,error,fragment", [
    ("array_field_past_its_end", """
        s = pl.struct("S", arr=[0, 0, 0, 0])
        pl.setval(out, 0, s.arr[4])
     """, ParserSyntaxError, "index 4 out of bounds"),
    ("array_field_negative_index", """
        s = pl.struct("S", arr=[0, 0, 0, 0])
        pl.setval(out, 0, s.arr[-1])
     """, ParserSyntaxError, "index -1 out of bounds"),
    ("struct_array_past_its_end", """
        a = pl.struct_array(3, "S", x=0, data=[0, 0, 0])
        pl.setval(out, 0, a[5].data[0])
     """, ParserSyntaxError, "GetItemExpr index 5 out of bounds for tuple with 3 elements"),
    ("array_field_written_past_its_end", """
        s = pl.struct("S", arr=[0, 0, 0, 0])
        s.arr[4] = 10
     """, ParserSyntaxError, "out of bounds"),
    ("array_field_two_indices", """
        s = pl.struct("S", arr=[0, 0, 0, 0])
        s.arr[0, 1] = 10
     """, ParserSyntaxError, "Multi-dimensional subscript"),
    ("scalar_field_read_by_index", """
        s = pl.struct("S", x=0)
        pl.setval(out, 0, s.x[0])
     """, ParserTypeError, "Subscript requires a tuple, tile or tensor"),
    ("scalar_field_written_by_index", """
        s = pl.struct("S", x=0)
        s.x[0] = 10
     """, ParserTypeError, "field is not an array"),
    ("nested_struct_field_written_by_index", """
        inner = pl.struct("Inner", a=0, b=0)
        s = pl.struct("Outer", x=0, inner=inner)
        s.inner[0] = 10
     """, ParserTypeError, "field is not an array"),
    ("missing_field_written_by_index", """
        s = pl.struct("S", x=0)
        s.nonexistent[0] = 1
     """, ParserTypeError, "Struct has no field 'nonexistent'"),
    ("missing_field_read", """
        s = pl.struct("S", x=0)
        pl.setval(out, 0, s.nonexistent[0])
     """, UnsupportedFeatureError, "has no field 'nonexistent'"),
    ("attribute_of_a_folded_tuple_element", """
        outer = pl.make_tuple(a=pl.make_tuple(x=10, y=20))
        pl.setval(out, 0, outer.a.x.foo)
     """, UnsupportedFeatureError, "has no attribute 'foo'"),
    ("chained_read_through_a_scalar_field", """
        s = pl.struct("S", t=0)
        s.t = pl.make_tuple(x=10)
        pl.setval(out, 0, s.t.x)
     """, UnsupportedFeatureError, "no attribute 'x'"),
    ("unknown_tile_group_method", """
        tt = pl.TileType(shape=[16, 32], dtype=pl.DT_FP16, target_memory=pl.MemorySpace.Vec)
        info = pl.make_tuple(buf=pl.make_tile_group(type=tt, addrs=0, mutex_ids=[20]))
        info.buf.foo()
     """, ParserSyntaxError, "a tile group has no method 'foo'"),
])
def test_misused_structs_and_tuples_raise_the_real_error_classes(tmp_path, name, body, error,
                                                                  fragment):
    assert_refused(error, fragment, tmp_path, name, "out: pl.Tensor[[4], pl.DT_INT32]", body)


# ------------------------------------------------ refused where the real parser refuses


@pl.vector_function
def returns_early():
    return


@pl.jit
def calls_a_returning_vector_function(x: pl.Tensor[[16, 32], pl.DT_FP32]):
    with pl.section_vector():
        returns_early()


def test_a_vector_function_cannot_contain_return():
    with pytest.raises(ParserSyntaxError, match="cannot contain return") as info:
        _compile(calls_a_returning_vector_function)
    lines, start = inspect.getsourcelines(returns_early)
    assert info.value.span.line == start + 2  # the `return` itself


@pytest.mark.parametrize("name,body,error,fragment", [
    ("memory_space_as_an_int", """
        tt = pl.TileType(shape=[16, 32], dtype=pl.DT_FP16, target_memory=1)
     """, FinalRejectionError, "'target_memory' expects an enum value"),
    ("dtype_as_an_int", """
        tt = pl.TileType(shape=[16, 32], dtype=1, target_memory=pl.MemorySpace.Vec)
     """, ParserTypeError, "expects an enum value"),
    ("round_mode_as_an_int_through_a_ternary", """
        a = pl.make_tile(pl.TileType(shape=[16, 32], dtype=pl.DT_FP16,
                                     target_memory=pl.MemorySpace.Vec), addr=0x0)
        b = pl.make_tile(pl.TileType(shape=[16, 32], dtype=pl.DT_FP32,
                                     target_memory=pl.MemorySpace.Vec), addr=0x1000)
        with pl.section_vector():
            pl.cast(b, a, mode=1 if True else 2)
     """, FinalRejectionError, "'mode' expects an enum value"),
    ("sync_mode_through_an_int_variable", """
        with pl.section_vector():
            pl.system.set_cross_core(pipe=pl.PipeType.V, event_id=0, sync_mode=MODE)
     """, FinalRejectionError, "'sync_mode' expects an enum value, not 2"),
    ("round_mode_from_a_helper_returning_an_int", """
        a = pl.make_tile(pl.TileType(shape=[16, 32], dtype=pl.DT_FP16,
                                     target_memory=pl.MemorySpace.Vec), addr=0x0)
        b = pl.make_tile(pl.TileType(shape=[16, 32], dtype=pl.DT_FP32,
                                     target_memory=pl.MemorySpace.Vec), addr=0x1000)
        with pl.section_vector():
            pl.cast(b, a, mode=pick_int(True))
     """, FinalRejectionError, "'mode' expects an enum value"),
    ("const_with_an_int_dtype", """
        with pl.section_vector():
            c = pl.const(42, 1)
     """, ParserSyntaxError, "must be a dtype"),
    ("const_with_a_string_dtype", """
        with pl.section_vector():
            c = pl.const(42, "fp32")
     """, ParserSyntaxError, "must be a dtype"),
    ("ordered_enums", """
        if pl.DT_FP16 >= pl.DT_FP32:
            pass
     """, UnsupportedFeatureError, "Only == and != are supported"),
    ("string_as_a_value", """
        with pl.section_vector():
            pl.setval(out, 0, LABEL)
     """, ParserTypeError, "Unsupported closure variable type: str"),
    ("runtime_index_into_ints_and_floats", """
        with pl.section_vector():
            pl.setval(out, 0, (n, 1.5)[n])
     """, ParserTypeError, "mixes float and int"),
    ("bitwise_and_of_a_float_literal", """
        with pl.section_vector():
            pl.setval(out, 0, 1.5 & 1)
     """, ParserTypeError, "bit_and needs operands of an integer dtype"),
    ("invert_of_a_runtime_float", """
        with pl.section_vector():
            f = pl.const(1.5, pl.DT_FP32) + n
            pl.setval(out, 0, ~f)
     """, ParserTypeError, "bit_not needs operands of an integer dtype"),
    ("shift_of_a_runtime_float", """
        with pl.section_vector():
            f = pl.const(1.5, pl.DT_FP32) + n
            pl.setval(out, 0, f << 1)
     """, ParserTypeError, "bit_shift_left needs operands of an integer dtype"),
    ("runtime_tile_shape", """
        with pl.section_vector():
            tt = pl.TileType(shape=[n, 32], dtype=pl.DT_FP16, target_memory=pl.MemorySpace.Vec)
     """, ParserTypeError, "must be a compile-time integer"),
    ("order_with_a_bool_axis", """
        t = pl.make_tile(pl.TileType(shape=[16, 32], dtype=pl.DT_FP16,
                                     target_memory=pl.MemorySpace.Vec), addr=0x0)
        with pl.section_vector():
            pl.load(t, x3, [0, 0, 0], order=[True, 2])
     """, ParserTypeError, "'order' must be a compile-time integer list"),
])
def test_refused_with_the_real_error_class_at_the_line(tmp_path, name, body, error, fragment):
    assert_refused(error, fragment, tmp_path, name, "out: pl.Tensor[[4], pl.DT_INT32], "
                   "x3: pl.Tensor[[2, 16, 32], pl.DT_FP16], n: pl.DT_INT32", body,
                   prelude="LABEL = 'not a number'\nMODE = 2\n\n\ndef pick_int(wide):\n"
                           "    return 1 if wide else 0\n")


@pytest.mark.parametrize("annotation,fragment", [
    ("pl.Tensor[[16, 32], pl.DT_FP16, 'NZ']", "Unknown layout 'NZ'"),
    ("pl.Tile[[16, 32], pl.DT_FP16, pl.NZ]", "3rd argument must be pl.MemRef"),
])
def test_bad_layout_annotations_are_type_errors(annotation, fragment):
    with pytest.raises(ParserTypeError, match=fragment):
        eval(annotation, {"pl": pl})


@pytest.mark.parametrize("layout", [pl.NZ, pl.DN])
def test_a_layout_from_a_local_variable_annotates_a_tensor(layout):
    @pl.jit
    def k(x: pl.Tensor[[16, 32], pl.DT_FP16, layout]):
        with pl.section_vector():
            pass

    assert k.kernel_def.params[0].spec.layout is layout


def _mask_copy(pattern):
    @pl.vector_function
    def copy_masked(src, dst):
        mask = vf.create_mask(pattern=pattern, dtype=pl.DT_FP32)
        row = vf.load_align(src, 0)
        vf.store_align(dst, row, mask)

    @pl.jit
    def k(a: pl.Tensor[[1, 64], pl.DT_FP32], z: pl.Tensor[[1, 64], pl.DT_FP32]):
        t = pl.TileType(shape=[1, 64], dtype=pl.DT_FP32, target_memory=pl.MemorySpace.Vec)
        src = pl.make_tile(t, addr=0x0)
        dst = pl.make_tile(t, addr=0x100)
        with pl.section_vector():
            pl.load(src, a, [0, 0])
            _sync(pl.PipeType.MTE2, pl.PipeType.V)
            copy_masked(src, dst)
            _sync(pl.PipeType.V, pl.PipeType.MTE3)
            pl.store(z, dst, [0, 0])

    return k


def test_a_vector_op_enum_kwarg_takes_the_enum_from_a_variable_but_not_an_int():
    a = torch.randn(1, 64)

    def run():
        z = torch.zeros(1, 64)
        _mask_copy(pl.MaskPattern.ALL)(a, z)
        return z

    assert torch.equal(sim_and_native(run), a)
    with pytest.raises(FinalRejectionError, match="'pattern' expects an enum value, not 1"):
        _compile(_mask_copy(1))


@pl.jit
def view_of_an_optional_pointer(x: pl.Tensor[[16, 32], pl.DT_FP32], bias: pl.Ptr[pl.DT_FP32],
                                z: pl.Tensor[[16, 32], pl.DT_FP32],
                                out: pl.Tensor[[2], pl.DT_INT32]):
    with pl.section_vector():
        first = bias + 0
        later = bias + 8
        b_view = pl.make_tensor(first, [16, 32])  # made unconditionally, read only if set
        pl.setval(out, 0, first is None)
        pl.setval(out, 1, later is None)  # C++ compares the address: null + 8 is not 0
        a = pl.make_tile(VT, addr=0x0)
        pl.load(a, x, [0, 0])
        if bias is not None:
            b = pl.make_tile(VT, addr=0x1000)
            pl.load(b, b_view, [0, 0])
            _sync(pl.PipeType.MTE2, pl.PipeType.V)
            pl.add(a, a, b)
        else:
            _sync(pl.PipeType.MTE2, pl.PipeType.V)
        _sync(pl.PipeType.V, pl.PipeType.MTE3)
        pl.store(z, a, [0, 0])


@pl.jit
def reads_an_optional_pointer_unguarded(x: pl.Tensor[[16, 32], pl.DT_FP32],
                                        bias: pl.Ptr[pl.DT_FP32]):
    with pl.section_vector():
        b = pl.make_tile(VT, addr=0x1000)
        pl.load(b, pl.make_tensor(bias, [16, 32]), [0, 0])


@pytest.mark.parametrize("with_bias", [True, False])
def test_views_of_a_null_pointer_are_harmless_until_accessed(with_bias):
    x, bias = torch.randn(16, 32), torch.randn(16, 32)

    def run():
        z, out = torch.zeros(16, 32), torch.zeros(2, dtype=torch.int32)
        view_of_an_optional_pointer(x, bias if with_bias else None, z, out)
        return torch.cat([z.flatten(), out.float()])

    got = sim_and_native(run)
    assert torch.equal(got[:-2].view(16, 32), x + bias if with_bias else x)
    assert got[-2:].tolist() == ([0, 0] if with_bias else [1, 0])


def test_an_access_through_a_null_pointer_is_a_simulation_error_at_the_op():
    with pypto_pro.use_backend("sim"), pytest.raises(SimulationError, match="null pointer") as e:
        reads_an_optional_pointer_unguarded(torch.randn(16, 32), None)
    lines, start = inspect.getsourcelines(reads_an_optional_pointer_unguarded.kernel_def.fn)
    assert e.value.span.line == start + next(
        i for i, line in enumerate(lines) if "pl.load(b" in line)
