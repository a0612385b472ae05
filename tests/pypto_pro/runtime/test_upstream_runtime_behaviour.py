"""Runtime behaviour the real PyPTO Pro shows to a kernel author (learned from its runtime
source: `runtime/jit.py`, `runtime/shape_policy.py`, `runtime/tilingkey.py`,
`language/typing/_tiling.py`), checked with our own kernels on the simulator and, where cheap,
the native backend.

Covered: how tensor arguments reach the kernel (a pointer to the first element, read
row-major: non-contiguous views read the storage behind them), shape-binding errors (ValueError
naming the parameter and axis), None tensors, the launch brackets, tiling-key schema checks
and launch keys, tiling-class fields and their serialisation.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pytest
import torch
from dual_backend import sim_and_native
from kernel_source import line_of

import pypto_pro.language as pl
from pypto_pro import DataType
from pypto_pro.errors import (
    InvalidArgument,
    InvalidShape,
    InvalidType,
    ParserSyntaxError,
    ParserTypeError,
    SimulationError,
    UnsupportedFeatureError,
)
from pypto_pro.language.typing._tiling import (
    ArrayFieldInfo,
    ScalarFieldInfo,
    get_tiling_ctype_struct,
    get_tiling_fields,
    is_tiling_class,
    tiling_instance_to_bytes,
)
from pypto_pro.runtime.tilingkey import TilingKeyField, TilingKeySchema

VT = pl.TileType(shape=[16, 32], dtype=pl.DT_FP32, target_memory=pl.MemorySpace.Vec)


def _copy_tile(x, z):
    """z[0:16, 0:32] = x[0:16, 0:32] through one Vec tile (a helper: inlined where called)."""
    a = pl.make_tile(VT, addr=0x0)
    pl.load(a, x, [0, 0])
    pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE3, event_id=0)
    pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE3, event_id=0)
    pl.store(z, a, [0, 0])


@pl.jit
def copy16x32(x: pl.Tensor[[16, 32], pl.DT_FP32], z: pl.Tensor[[16, 32], pl.DT_FP32]):
    with pl.section_vector():
        _copy_tile(x, z)


# ---------------------------------------------------------------- tensors: pointer + row-major


@pytest.mark.filterwarnings("ignore:.*non-contiguous tensor")
def test_a_transposed_input_is_read_from_its_storage_row_major():
    storage = torch.arange(32 * 16, dtype=torch.float32).reshape(32, 16)

    def run():
        z = torch.zeros(16, 32)
        copy16x32(storage.t(), z)
        return z

    assert torch.equal(sim_and_native(run), storage.reshape(16, 32))


@pytest.mark.filterwarnings("ignore:.*non-contiguous tensor")
def test_a_column_slice_input_reads_the_rows_that_follow_in_memory():
    wide = torch.arange(16 * 64, dtype=torch.float32).reshape(16, 64)

    def run():
        z = torch.zeros(16, 32)
        copy16x32(wide[:, 32:], z)  # starts at element 32 of the storage
        return z

    assert torch.equal(sim_and_native(run), wide.flatten()[32:32 + 512].reshape(16, 32))


@pytest.mark.filterwarnings("ignore:.*non-contiguous tensor")
def test_a_transposed_output_is_written_row_major_into_its_storage():
    x = torch.randn(16, 32)

    def run():
        storage = torch.zeros(32, 16)
        copy16x32(x, storage.t())
        return storage

    assert torch.equal(sim_and_native(run).reshape(16, 32), x)


# ---------------------------------------------------------------- shape binding at launch


@pl.jit
def rows_copy(x: pl.Tensor[[pl.DYNAMIC, 32], pl.DT_FP32],
              z: pl.Tensor[[pl.DYNAMIC, 32], pl.DT_FP32]):
    with pl.section_vector():
        a = pl.make_tile(VT, addr=0x0)
        pl.load(a, x, [0, 0])
        pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.store(z, a, [0, 0])


@pl.jit
def static_rows(x: pl.Tensor[[pl.STATIC, 32], pl.DT_FP32], z: pl.Tensor[[16, 32], pl.DT_FP32]):
    with pl.section_vector():
        _copy_tile(x, z)


@pytest.mark.parametrize("x, z, match", [
    (torch.zeros(512), torch.zeros(16, 32), r"'x': rank mismatch — expected 2, got 1"),
    (torch.zeros(16, 64), torch.zeros(16, 32), r"'x': dim mismatch — axis 1 expected 32, got 64"),
    (torch.zeros(0, 32), torch.zeros(16, 32), r"'x': axis 0 must be positive, got 0"),
], ids=["rank", "fixed-dim", "zero-size"])
def test_shape_errors_at_launch_are_value_errors_naming_parameter_and_axis(x, z, match):
    kernel = copy16x32 if x.shape[0] != 0 else rows_copy
    with pytest.raises(InvalidShape, match=match) as info:
        kernel(x, z)
    assert isinstance(info.value, ValueError)


def test_dtype_and_type_errors_at_launch_stay_type_errors():
    with pytest.raises(InvalidType, match=r"'x': dtype mismatch"):
        copy16x32(torch.zeros(16, 32, dtype=torch.float64), torch.zeros(16, 32))
    with pytest.raises(InvalidType, match=r"'x': type mismatch — expected torch.Tensor"):
        copy16x32((1.0, 2.0), torch.zeros(16, 32))


def test_none_cannot_stand_for_a_tensor_with_static_dims():
    with pytest.raises(InvalidShape, match=r"arg\[0\] 'x': None cannot bind the STATIC"):
        static_rows(None, torch.zeros(16, 32))


def test_a_none_tensor_the_kernel_reads_is_a_typed_error_at_the_load():
    with pytest.raises(SimulationError, match="block.load") as info:
        rows_copy(None, torch.zeros(16, 32))
    assert info.value.span.line == line_of(rows_copy, "pl.load(a, x, [0, 0])")


def test_a_none_tensor_the_kernel_does_not_touch_runs():
    x = torch.randn(16, 32)

    @pl.jit
    def copy_unless(x: pl.Tensor[[16, 32], pl.DT_FP32],
                    spare: pl.Tensor[[pl.DYNAMIC], pl.DT_FP32],
                    z: pl.Tensor[[16, 32], pl.DT_FP32]):
        with pl.section_vector():
            _copy_tile(x, z)

    def run():
        z = torch.zeros(16, 32)
        copy_unless(x, None, z)
        return z

    assert torch.equal(sim_and_native(run), x)


# ---------------------------------------------------------------- tensor annotations


@pl.jit
def call_style_copy(x: pl.Tensor([pl.DYNAMIC, 32], pl.DT_FP32),
                    z: pl.Tensor([pl.STATIC, 32], pl.DT_FP32)):
    with pl.section_vector():
        _copy_tile(x, z)


def test_call_style_tensor_annotation_is_the_subscript_form():
    assert pl.Tensor([pl.DYNAMIC, 4], pl.DT_FP16) == pl.Tensor[[pl.DYNAMIC, 4], pl.DT_FP16]
    assert pl.Tensor((8, 8), pl.DT_FP16, pl.DN) == pl.Tensor[[8, 8], pl.DT_FP16, pl.DN]
    x = torch.randn(16, 32)

    def run():
        z = torch.zeros(16, 32)
        call_style_copy(x, z)
        return z

    assert torch.equal(sim_and_native(run), x)


@pytest.mark.parametrize("dim", [True, False, 0, -1, 1.5, "32", None, object()])
def test_a_bad_annotation_dim_is_a_type_error_naming_the_axis(dim):
    with pytest.raises(InvalidType, match="axis 1 annotation must be"):
        pl.Tensor[[4, dim], pl.DT_FP32]


@pytest.mark.parametrize("dims", [[..., pl.STATIC], [pl.DYNAMIC, ..., ...]])
def test_an_ellipsis_only_ends_the_dims(dims):
    with pytest.raises(InvalidType, match="ellipsis must appear once and only as the final"):
        pl.Tensor[dims, pl.DT_FP32]


# ---------------------------------------------------------------- tiling keys


def scale(t):  # a module-level function: a tiling-key field may take its name
    return t


class OpKey:
    Op = TilingKeyField(bits=2, values=[0, 1, 2])
    scale = TilingKeyField(bits=1, values=[0, 1])

    def is_valid(self, key):
        op, with_scale = key
        return not (op == 2 and with_scale == 1)


@pl.jit(tiling_key=OpKey)
def keyed_op(x: pl.Tensor[[16, 32], pl.DT_FP32], y: pl.Tensor[[16, 32], pl.DT_FP32],
             z: pl.Tensor[[16, 32], pl.DT_FP32]):
    with pl.section_vector():
        a = pl.make_tile(VT, addr=0x0)
        b = pl.make_tile(VT, addr=0x800)
        c = pl.make_tile(VT, addr=0x1000)
        pl.load(a, x, [0, 0])
        pl.load(b, y, [0, 0])
        pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
        if Op == 0:  # noqa: F821
            pl.add(c, a, b)
        elif Op == 1:  # noqa: F821
            pl.sub(c, a, b)
        else:
            pl.mul(c, a, b)
        if scale == 1:  # the field, not the function of that name
            pl.add(c, c, c)
        pl.system.sync_src(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.store(z, c, [0, 0])


@pytest.mark.parametrize("key, expect", [
    ({"Op": 0, "scale": 0}, lambda x, y: x + y),
    ({"Op": 1, "scale": True}, lambda x, y: 2 * (x - y)),  # True is the candidate 1
    ({"Op": 2, "scale": 0}, lambda x, y: x * y),
])
def test_a_tiling_key_selects_the_kernel_variant(key, expect):
    x, y = torch.randn(16, 32), torch.randn(16, 32)

    def run():
        z = torch.zeros(16, 32)
        keyed_op[None, 1, key](x, y, z)
        return z

    assert torch.equal(sim_and_native(run), expect(x, y))


@pytest.mark.parametrize("key, match", [
    ({"Op": 3, "scale": 0}, "'Op' value 3 is not a candidate"),
    ({"Op": None, "scale": 0}, "'Op' value None is not a candidate"),
    ({"Op": 0}, r"missing tiling-key field\(s\) \['scale'\]"),
    ({}, "missing tiling-key field"),
    ({"Op": 0, "scale": 0, "Extra": 1}, r"unknown tiling-key field\(s\) \['Extra'\]"),
    ([0, 0], "must be a dict"),
    ({"Op": 2, "scale": 1}, "rejected by OpKey.is_valid"),
])
def test_a_bad_launch_key_is_a_value_error_at_the_brackets(key, match):
    with pytest.raises(InvalidArgument, match=match):
        keyed_op[None, 1, key]


def test_a_classmethod_is_valid_filters_keys():
    class Key:
        Op = TilingKeyField(bits=2, values=[0, 1, 2])
        Mode = TilingKeyField(bits=1, values=[0, 1])

        @classmethod
        def is_valid(cls, key):
            return not (key[0] == 0 and key[1] == 1)

    schema = TilingKeySchema(Key)
    assert len(schema.enumerate_valid()) == 5
    with pytest.raises(InvalidArgument, match="rejected by Key.is_valid"):
        schema.validate_concrete({"Op": 0, "Mode": 1})


@pytest.mark.parametrize("fields, match", [
    (dict(A=TilingKeyField(bits=0, values=[0])), "'A' of Tk must have bits > 0"),
    (dict(A=TilingKeyField(bits=2, values=[])), "'A' of Tk must have a non-empty 'values'"),
    (dict(A=TilingKeyField(bits=2, values=["x"])), "'A' of Tk: values must be ints"),
    (dict(A=TilingKeyField(bits=2, values=[1.0])), "'A' of Tk: values must be ints"),
    (dict(A=TilingKeyField(bits=1, values=[0, 2, 4])),
     "'A' of Tk has 3 candidates, exceeding the 2 representable by 1 bits"),
    (dict(A=TilingKeyField(bits=2, values=[0, 2, 4, 6, 8])), "has 5 candidates"),
    (dict(A=TilingKeyField(bits=32, values=[0]), B=TilingKeyField(bits=32, values=[0]),
          C=TilingKeyField(bits=2, values=[0])), "uses 66 bits, exceeding the 64-bit limit"),
])
def test_a_bad_tiling_key_class_is_a_value_error_naming_the_field(fields, match):
    with pytest.raises(InvalidArgument, match=match):
        TilingKeySchema(type("Tk", (), fields))


def test_sparse_values_and_exactly_64_bits_are_allowed():
    assert TilingKeySchema(type("Tk", (), dict(A=TilingKeyField(bits=2, values=[0, 4, 16, 64]))))
    wide = TilingKeySchema(type("Tk", (), dict(A=TilingKeyField(bits=32, values=[0, 9]),
                                               B=TilingKeyField(bits=32, values=[0]))))
    assert wide.pack({"A": 9, "B": 0}) == 1


DATA_GLOBAL = 3


def test_a_field_named_like_a_data_global_or_a_parameter_is_refused():
    class GlobalKey:
        DATA_GLOBAL = TilingKeyField(bits=1, values=[0, 1])

    class ParamKey:
        x = TilingKeyField(bits=1, values=[0, 1])

    for key, match in ((GlobalKey, "conflict with module-level variable"),
                       (ParamKey, "conflict with kernel parameter")):
        with pytest.raises(InvalidArgument, match=match):
            @pl.jit(tiling_key=key)
            def k(x: pl.Tensor[[16, 32], pl.DT_FP32]):
                pass


def test_tiling_key_must_be_a_class():
    with pytest.raises(InvalidArgument, match="tiling_key must be a class, got int"):
        pl.jit(tiling_key=3)


def test_ensure_compiled_takes_a_key_alone_and_memoises_per_key():
    before = len(keyed_op._compiled_by_signature)
    first = keyed_op._ensure_compiled({"Op": 1, "scale": 0})
    assert keyed_op._ensure_compiled({"Op": 1, "scale": 0}) is first
    assert keyed_op._ensure_compiled({"Op": 0, "scale": 0}) is not first
    assert len(keyed_op._compiled_by_signature) >= before + 1
    with pytest.raises(InvalidShape, match="needs launch arguments"):
        static_rows._ensure_compiled(None)


# ---------------------------------------------------------------- launch brackets


def test_a_none_where_the_kernel_has_no_key_or_datatype_is_allowed():
    x = torch.randn(16, 32)
    for brackets in ((None, 1, None), (None, 1, None, None)):
        z = torch.zeros(16, 32)
        copy16x32[brackets](x, z)
        assert torch.equal(z, x)


@pytest.mark.parametrize("brackets", [
    (None, 1, {"Op": 0, "scale": 0}),  # a key for a kernel without a tiling key
    (None, 1, None, {"x": pl.DT_FP32}),  # a datatype dict for a kernel without one
    (None,), (None, 1, None, None, None),
])
def test_brackets_the_kernel_cannot_take_are_refused(brackets):
    with pytest.raises(InvalidArgument, match=r"Expected kernel\[stream, block_dim\]"):
        copy16x32[brackets]


def test_a_keyed_kernel_needs_its_key_in_the_brackets():
    for brackets in ((None, 1), (None, 1, None), (None, 1, None, None)):
        with pytest.raises(InvalidArgument, match=r"kernel\[stream, block_dim, tilingkey\]"):
            keyed_op[brackets]
    with pytest.raises(InvalidArgument, match="cannot be called directly"):
        keyed_op(torch.zeros(16, 32), torch.zeros(16, 32), torch.zeros(16, 32))


# ---------------------------------------------------------------- tiling classes


@dataclass
class Fields:
    n: int
    offs: int[3]
    scale: float
    on: bool[2]


@pl.jit
def read_fields(out_i: pl.Tensor[[8], pl.DT_INT64], out_f: pl.Tensor[[2], pl.DT_FP32],
                td: Fields):
    with pl.section_vector():
        pl.setval(out_i, 0, td.n)
        pl.setval(out_i, 1, td.offs[0])
        pl.setval(out_i, 2, td.offs[2])
        if td.on[1]:
            pl.setval(out_i, 3, 1)
        else:
            pl.setval(out_i, 3, 0)
        pl.setval(out_f, 0, td.scale)


@pytest.mark.parametrize("fields, ints, scale", [
    (Fields(n=7, offs=[10, 20, 30], scale=0.5, on=[True, False]), [7, 10, 30, 0], 0.5),
    # what the C struct stores, as the real runtime's ctypes struct: an int wraps to int64_t,
    # a bool field takes a number's truth, a float field an int; arrays any indexable sequence
    (Fields(n=(1 << 64) + 5, offs=torch.tensor([4, 5, 6]), scale=3, on=(0, 2)),
     [5, 4, 6, 1], 3.0),
    (Fields(n=True, offs=(1, 2, 3), scale=True, on=[1, 0.5]), [1, 1, 3, 1], 1.0),
])
def test_a_tiling_instance_reaches_the_kernel_as_its_c_struct(fields, ints, scale):
    def run():
        out_i, out_f = torch.zeros(8, dtype=torch.int64), torch.zeros(2)
        read_fields(out_i, out_f, fields)
        return torch.cat([out_i[:4].double(), out_f[:1].double()])

    assert sim_and_native(run).tolist() == [*ints, scale]


@pytest.mark.parametrize("fields, error, match", [
    (Fields(n=1, offs=[1, 2], scale=0.5, on=[1, 1]), InvalidArgument,
     "Fields.offs: expected 3 elements, got 2"),
    (Fields(n=1, offs=5, scale=0.5, on=[1, 1]), InvalidType,
     r"Fields.offs is int\[3\]: expected an indexable sequence, got int"),
    (Fields(n=1.5, offs=[1, 2, 3], scale=0.5, on=[1, 1]), InvalidType,
     "Fields.n: expected int, got float"),
])
def test_a_bad_tiling_value_is_refused_at_launch(fields, error, match):
    with pytest.raises(error, match=match):
        read_fields(torch.zeros(8, dtype=torch.int64), torch.zeros(2), fields)


def test_the_real_tiling_module_path_reads_fields_and_bytes():
    fields = get_tiling_fields(Fields)
    assert list(fields) == ["n", "offs", "scale", "on"]
    assert fields["n"] == ScalarFieldInfo(DataType.INDEX)  # (int64_t in the struct)
    assert fields["offs"] == ArrayFieldInfo(DataType.INDEX, 3)
    assert fields["scale"] == ScalarFieldInfo(pl.DT_FP32)
    assert fields["on"] == ArrayFieldInfo(pl.DT_BOOL, 2)
    raw = tiling_instance_to_bytes(Fields(n=9, offs=[1, 2, 3], scale=2.5, on=[True, False]))
    decoded = get_tiling_ctype_struct(Fields).from_buffer_copy(raw)
    assert (decoded.n, list(decoded.offs), decoded.scale, list(decoded.on)) == (
        9, [1, 2, 3], 2.5, [True, False])


@pytest.mark.parametrize("annotation", ["int[2049]", "int[0]", "int[-1]", "int[True]",
                                        "str[4]", "list[4]", "str"])
def test_a_bad_tiling_field_is_no_tiling_class(annotation):
    namespace = {"dataclass": dataclass}
    exec(f"@dataclass\nclass Bad:\n    field: {annotation}\n", namespace)  # noqa: S102
    bad = namespace["Bad"]
    assert is_tiling_class(bad) is False
    with pytest.raises(ValueError, match="Bad.field"):
        get_tiling_fields(bad)


def test_empty_and_plain_classes_are_no_tiling_classes():
    @dataclass
    class Empty:
        pass

    class Plain:
        n: int

    assert not any(is_tiling_class(c) for c in (Empty, Plain, 42, "x", None))


# ---------------------------------------------------------------- scalar arguments

VI = pl.TileType(shape=[16, 32], dtype=pl.DT_INT32, target_memory=pl.MemorySpace.Vec)


@pl.jit
def fill_int(z: pl.Tensor[[16, 32], pl.DT_INT32], v: pl.DT_INT32):
    with pl.section_vector():
        a = pl.make_tile(VI, addr=0x0)
        pl.expands(a, v)
        pl.system.sync_src(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.store(z, a, [0, 0])


@pl.jit
def fill_float(z: pl.Tensor[[16, 32], pl.DT_FP32], v: pl.DT_FP32):
    with pl.section_vector():
        a = pl.make_tile(VT, addr=0x0)
        pl.expands(a, v)
        pl.system.sync_src(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.store(z, a, [0, 0])


@pytest.mark.parametrize("kernel, dtype, value, expect", [
    (fill_int, torch.int32, 7, 7),
    (fill_int, torch.int32, True, 1),  # a bool passes for an integer dtype
    (fill_int, torch.int32, 3212836864, -1082130432),  # ctypes wraps to 32 bits
    (fill_float, torch.float32, 0.1, torch.tensor(0.1, dtype=torch.float32).item()),
    (fill_float, torch.float32, 1e40, float("inf")),  # c_float rounds to single precision
])
def test_scalar_arguments_convert_as_ctypes_converts_them(kernel, dtype, value, expect):
    def run():
        z = torch.zeros(16, 32, dtype=dtype)
        kernel(z, value)
        return z

    assert torch.equal(sim_and_native(run), torch.full((16, 32), expect, dtype=dtype))


@pytest.mark.parametrize("kernel, value, match", [
    (fill_int, 1.5, "float value passed for non-float dtype"),
    (fill_float, 42, "int value passed for non-integer dtype"),
    (fill_float, True, "bool value passed for non-boolean/non-integer dtype"),
    (fill_int, torch.tensor(3), r"expected Python scalar \(int/float/bool\)"),
    (fill_int, np.int64(3), r"expected Python scalar \(int/float/bool\)"),
    (fill_int, None, r"expected Python scalar \(int/float/bool\)"),
    (fill_int, (1,), r"expected Python scalar \(int/float/bool\)"),
])
def test_a_scalar_of_the_wrong_kind_is_a_type_error_naming_the_argument(kernel, value, match):
    with pytest.raises(InvalidType, match=r"arg\[1\] 'v': .*" + match):
        kernel(torch.zeros(16, 32, dtype=torch.int32 if kernel is fill_int else torch.float32),
               value)


def test_a_half_precision_scalar_parameter_cannot_be_passed():
    @pl.jit
    def takes_half(z: pl.Tensor[[16, 32], pl.DT_FP32], v: pl.DT_FP16):
        pass

    with pytest.raises(InvalidType, match="No ctypes mapping for scalar dtype pl.DT_FP16"):
        takes_half(torch.zeros(16, 32), 1.0)


# ---------------------------------------------------------------- shape policies and variants


@pl.jit
def tail_copy(x: pl.Tensor[[pl.DYNAMIC, ...], pl.DT_FP32], z: pl.Tensor[[16, 32], pl.DT_FP32]):
    with pl.section_vector():
        _copy_tile(x, z)


def _run_all(kernel, inputs):
    """Launch `kernel` on each input (an output shaped like it for `rows_copy`); returns the
    number of compiled variants, as the real runtime's memo counts them."""
    kernel.forget()
    for x in inputs:
        kernel(x, torch.zeros(x.shape[0] if kernel is rows_copy else 16, 32))
    return len(kernel._compiled_by_signature)


def test_dynamic_dims_share_one_variant_and_static_dims_key_them():
    rows = [torch.randn(n, 32) for n in (16, 48, 64)]
    assert _run_all(rows_copy, rows) == 1  # DYNAMIC: one kernel serves every size
    assert _run_all(static_rows, [rows[0], rows[1], rows[0]]) == 2  # STATIC 16, 48, 16 again
    assert sorted(s.static_dims for s in static_rows.compiled_variants) == [
        ((0, 0, 16),), ((0, 0, 48),)]
    # a final ellipsis makes the trailing dims (and the rank) STATIC
    tails = [torch.randn(16, 32), torch.randn(20, 32), torch.randn(16, 64)]
    assert _run_all(tail_copy, tails) == 2


def test_the_shape_policy_markers_are_the_only_public_ones():
    from pypto_pro.language import typing as pl_typing

    assert pl.DYNAMIC is pl_typing.DYNAMIC and pl.STATIC is pl_typing.STATIC
    assert not any(hasattr(pl, name) for name in ("DYN", "StatusType", "Var"))
    assert not hasattr(pl_typing, "Var")


# ---------------------------------------------------------------- tiling arrays in kernels


@dataclass
class Table:
    arr: int[8]


@pl.jit
def read_table(out: pl.Tensor[[8], pl.DT_INT64], td: Table):
    with pl.section_vector():
        pl.setval(out, 0, td.arr[0])
        pl.setval(out, 1, td.arr[5])
        for i in pl.range(2, 4):
            pl.setval(out, i, td.arr[i + 4])


def test_tiling_array_elements_by_literal_and_loop_index():
    def run():
        out = torch.zeros(8, dtype=torch.int64)
        read_table(out, Table(arr=[10, 11, 12, 13, 14, 15, 16, 17]))
        return out

    assert sim_and_native(run)[:4].tolist() == [10, 15, 16, 17]


@pytest.mark.parametrize("index, error", [
    (":", UnsupportedFeatureError), ("1:3", UnsupportedFeatureError),
    ("::2", UnsupportedFeatureError), ("1, 2", ParserSyntaxError), ('"x"', ParserTypeError),
])
def test_a_tiling_array_takes_one_integer_index(index, error, tmp_path):
    module = tmp_path / "bad_index_kernel.py"  # (a file: the kernel's source is read back)
    module.write_text(
        "from __future__ import annotations\n"
        "import pypto_pro.language as pl\n\n\n"
        "@pl.jit\n"
        "def bad(out: pl.Tensor[[8], pl.DT_INT64], td: Table):\n"
        "    with pl.section_vector():\n"
        "        pass\n"
        f"        pl.setval(out, 0, td.arr[{index}])\n")
    namespace: dict = {"Table": Table}
    exec(compile(module.read_text(), str(module), "exec"), namespace)  # noqa: S102
    with pytest.raises(error) as info:
        namespace["bad"](torch.zeros(8, dtype=torch.int64), Table(arr=list(range(8))))
    assert info.value.span.line == 9


def test_a_non_contiguous_argument_is_named_in_a_warning():
    """Reading a view's storage is what the NPU does, and seldom what the view means: the
    launch says so, naming the parameter (a contiguous argument warns nothing)."""
    storage = torch.arange(32 * 16, dtype=torch.float32).reshape(32, 16)
    with pytest.warns(UserWarning, match=r"'x'.*non-contiguous.*\.contiguous\(\)"):
        copy16x32(storage.t(), torch.zeros(16, 32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        copy16x32(storage.reshape(16, 32), torch.zeros(16, 32))
