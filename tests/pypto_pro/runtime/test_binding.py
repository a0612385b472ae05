"""Argument binding and checks (spec §1.2): tensors, ptrs, scalars, tiling data, the spec."""
from __future__ import annotations

import ctypes
from dataclasses import dataclass

import pytest
import torch

import pypto_pro.language as pl
from pypto_pro.errors import InvalidArgument, InvalidShape, InvalidType
from pypto_pro.runtime.binding import bind, dynamic_dims, resolve_datatype
from pypto_pro.runtime.kernel_def import Specialization

A5 = Specialization(arch="a5")


@dataclass
class Tiling:
    n: int
    scale: float


@pl.kernel
def mixed(a: pl.Tensor[[pl.DYNAMIC, 16], pl.DT_FP16],
          b: pl.Tensor[[pl.STATIC, pl.DYNAMIC], pl.DT_FP32],
          c: pl.Tensor[[8, ...], pl.DT_INT32],
          p: pl.Ptr[pl.DT_FP32],
          n: pl.DT_INT64,
          t: Tiling):
    pass


def _args(**override):
    args = dict(a=torch.zeros(3, 16, dtype=torch.float16), b=torch.zeros(5, 7),
                c=torch.zeros(8, 2, 6, dtype=torch.int32), p=torch.zeros(1, dtype=torch.uint8),
                n=9, t=Tiling(4, 0.5))
    args.update(override)
    return args


def test_bind_computes_spec_dyn_dims_and_tiling_bytes():
    bound = bind(mixed, (), _args(), A5)
    assert bound.spec.static_dims == ((1, 0, 5), (2, 1, 2), (2, 2, 6))
    assert bound.spec.ranks == ((2, 3),)
    assert bound.spec.static_dim(1, 0) == 5 and bound.spec.rank(2) == 3
    assert bound.dyn_dims == (3, 7)
    assert [name for *_, name in dynamic_dims(mixed.params, bound.spec)] == [
        "__pypto_dyn_a_0", "__pypto_dyn_b_1"]
    assert bound.args[4] == 9
    layout = type("S", (ctypes.Structure,), {"_fields_": [("n", ctypes.c_int64),
                                                          ("scale", ctypes.c_float)]})
    assert bound.tiling_bytes == bytes(layout(4, 0.5))


def test_positional_and_keyword_arguments_bind_alike():
    values = _args()
    positional = bind(mixed, tuple(values.values()), {}, A5)
    keywords = bind(mixed, (), values, A5)
    assert positional.spec == keywords.spec and positional.dyn_dims == keywords.dyn_dims


def test_defaults_are_applied():
    @pl.kernel
    def k(x: pl.Tensor[[4], pl.DT_FP32], n: pl.DT_INT32 = 3):
        pass

    assert bind(k, (torch.zeros(4),), {}, A5).args[1] == 3


def test_none_tensor_is_a_null_pointer_with_zero_dynamic_dims():
    bound = bind(mixed, (), _args(a=None, p=None), A5)
    assert bound.args[0] is None and bound.args[3] is None
    assert bound.dyn_dims == (0, 7)


@pytest.mark.parametrize("override, error, fragment", [
    ({"a": torch.zeros(3, 16)},
     InvalidType, "arg[0] 'a': dtype mismatch — expected torch.float16 (pl.DT_FP16), got "
                  "torch.float32"),
    ({"a": torch.zeros(3, 16, 1, dtype=torch.float16)},
     InvalidShape, "arg[0] 'a': rank mismatch — expected 2, got 3"),
    ({"a": torch.zeros(3, 8, dtype=torch.float16)},
     InvalidShape, "arg[0] 'a': dim mismatch — axis 1 expected 16, got 8"),
    ({"c": torch.tensor(1, dtype=torch.int32)},
     InvalidShape, "arg[2] 'c': rank mismatch — expected rank >= 1, got 0"),
    ({"c": torch.zeros(4, 2, dtype=torch.int32)},
     InvalidShape, "arg[2] 'c': dim mismatch — axis 0 expected 8, got 4"),
    ({"a": [[0.0] * 16]}, InvalidType, "arg[0] 'a': type mismatch — expected torch.Tensor"),
    ({"p": 1234}, InvalidType, "arg[3] 'p': type mismatch"),
    ({"a": torch.zeros(3, 16, dtype=torch.float16, device="meta")},
     InvalidArgument, "arg[0] 'a': tensor on unsupported device 'meta'"),
    ({"t": (4, 0.5)}, InvalidType, "arg[5] 't': type mismatch — expected a Tiling instance"),
])
def test_bad_tensor_and_tiling_arguments(override, error, fragment):
    with pytest.raises(error) as info:
        bind(mixed, (), _args(**override), A5)
    assert fragment in info.value.message


def test_ellipsis_accepts_only_rank_at_least_the_explicit_dims():
    bound = bind(mixed, (), _args(c=torch.zeros(8, dtype=torch.int32)), A5)
    assert bound.spec.ranks == ((2, 1),)
    assert bound.spec.static_dims == ((1, 0, 5),)


def test_ptr_dtype_is_not_checked():
    bound = bind(mixed, (), _args(p=torch.zeros(2, 2, dtype=torch.int64)), A5)
    assert bound.args[3].dtype == torch.int64


def test_wrong_argument_count_is_a_type_error():
    with pytest.raises(TypeError, match="kernel 'mixed': wrong arguments — missing a required"):
        bind(mixed, (torch.zeros(3, 16, dtype=torch.float16),), {}, A5)


@pl.kernel
def scalars(i8: pl.DT_INT8, u8: pl.DT_UINT8, f: pl.DT_FP32, flag: pl.DT_BOOL, idx: pl.DT_INT64):
    pass


def test_scalar_values_are_normalised():
    bound = bind(scalars, (-3, True, 2.5, False, 10**12), {}, A5)
    assert bound.args == (-3, 1, 2.5, False, 10**12)
    assert type(bound.args[1]) is int and type(bound.args[3]) is bool


def test_int_scalars_wrap_to_their_width_as_the_real_ctypes_binding():
    bound = bind(scalars, (200, -1, 2.0, True, 2**64 + 5), {}, A5)
    assert bound.args == (-56, 255, 2.0, True, 5)


@pytest.mark.parametrize("args, error, fragment", [
    ((1, 1, 2, True, 0), InvalidType, "arg[2] 'f': dtype mismatch — expected a float"),
    ((1.0, 1, 2.0, True, 0), InvalidType, "arg[0] 'i8': dtype mismatch — expected an int"),
    ((1, 1, 2.0, 1, 0), InvalidType, "arg[3] 'flag': dtype mismatch — expected a bool"),
    ((1, 1, True, True, 0), InvalidType, "arg[2] 'f': dtype mismatch"),
    ((1, "1", 2.0, True, 0), InvalidType, "arg[1] 'u8': dtype mismatch"),
])
def test_scalar_rules(args, error, fragment):
    with pytest.raises(error) as info:
        bind(scalars, args, {}, A5)
    assert fragment in info.value.message


@pytest.mark.parametrize("dtype", [pl.DT_FP16, pl.DT_BF16])
def test_half_scalars_have_no_ctypes_mapping(dtype):
    @pl.kernel
    def k(x: pl.Tensor[[4], pl.DT_FP32], s: dtype):
        pass

    with pytest.raises(TypeError, match="No ctypes mapping .*FP16/BF16 scalars are not "
                                        "supported."):
        bind(k, (torch.zeros(4), 1.0), {}, A5)


def test_datatype_variable_replaces_the_dtype_of_tensors_and_scalars():
    @pl.kernel(datatype={"x": "io_dtype", "s": "io_dtype"})
    def k(x: pl.Tensor[[4], pl.DT_FP32], s: pl.DT_FP32):
        pass

    chosen = resolve_datatype(k.params, {"x": pl.DT_INT32, "s": pl.DT_INT32})
    assert chosen == (("io_dtype", pl.DT_INT32),)
    launch = Specialization(arch="a5", datatype=chosen)
    bound = bind(k, (torch.zeros(4, dtype=torch.int32), 7), {}, launch)
    assert bound.spec.datatype == chosen and bound.args[1] == 7
    with pytest.raises(TypeError, match="arg\\[1\\] 's': dtype mismatch — expected an int"):
        bind(k, (torch.zeros(4, dtype=torch.int32), 7.0), {}, launch)


def test_hf8_tensors_are_checked_as_uint8_and_fp8_unchecked():
    @pl.kernel
    def k(h: pl.Tensor[[4], pl.DT_HF8], e: pl.Tensor[[4], pl.DT_FP8E4M3FN]):
        pass

    bind(k, (torch.zeros(4, dtype=torch.uint8), torch.zeros(4, dtype=torch.int8)), {}, A5)
    with pytest.raises(TypeError, match="expected torch.uint8"):
        bind(k, (torch.zeros(4, dtype=torch.int8), torch.zeros(4)), {}, A5)
