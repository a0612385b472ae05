"""Parameters from annotations (spec §1.2): kinds, directions, tiling position, datatype."""
from __future__ import annotations

from collections import ChainMap
from dataclasses import dataclass

import pytest

import pypto_pro.language as pl
from pypto_pro.errors import InvalidArgument, InvalidType
from pypto_pro.runtime.kernel_def import JitOptions, ParamSpec
from pypto_pro.runtime.signature import default_env, is_kernel_function, params_from_function


@dataclass
class Tiling:
    n: int


def _params(fn, **options):
    return params_from_function(fn, default_env(fn), JitOptions(**options))


def test_every_kind_and_direction():
    def k(a: pl.Tensor[[4, pl.DYNAMIC], pl.DT_FP16, pl.NZ], o: pl.Output[pl.Tensor[[4], pl.DT_FP32]],
          p: pl.Ptr[pl.DT_UINT8], s: pl.DT_INT64, t: Tiling):
        pass

    a, o, p, s, t = _params(k)
    assert (a.kind, a.spec.dims, a.spec.layout, a.direction) == (
        "tensor", (4, pl.DYNAMIC), pl.NZ, None)
    assert (o.kind, o.spec.dtype, o.direction) == ("tensor", pl.DT_FP32, "output")
    assert (p.kind, p.spec.dtype) == ("ptr", pl.DT_UINT8)
    assert s == ParamSpec(3, "s", "scalar", pl.DT_INT64)
    assert (t.kind, t.spec, t.index) == ("tiling", Tiling, 4)


def test_string_annotations_evaluate_in_the_given_env():
    def k(x: "pl.Tensor[[ROWS], pl.DT_FP32]"):  # noqa: F821
        pass

    env = ChainMap({"ROWS": 32}, default_env(k))
    (x,) = params_from_function(k, env, JitOptions())
    assert x.spec.dims == (32,)


@pytest.mark.parametrize("source, fragment", [
    ("def k(x: pl.Tensor[[4], pl.DT_FP32], y): pass", "kernel parameter 'y' has no annotation"),
    ("def k(x: pl.Tensor[[4], pl.DT_FP32], y: int): pass",
     "kernel parameter 'y': unsupported annotation"),
    ("def k(x: pl.Tile[[4, 4], pl.DT_FP32]): pass", "pl.Tile annotations are for SIMT"),
    ("def k(x: pl.Tensor[[4], pl.DT_FP32], *rest): pass", "*args / **kwargs are not allowed"),
])
def test_bad_annotations_name_the_parameter(source, fragment):
    namespace = {"pl": pl}
    exec(source, namespace)
    with pytest.raises(InvalidType) as info:
        _params(namespace["k"])
    assert fragment in info.value.message


def test_tiling_parameter_must_be_last_and_unique():
    def not_last(t: Tiling, x: pl.Tensor[[4], pl.DT_FP32]):
        pass

    def twice(x: pl.Tensor[[4], pl.DT_FP32], t: Tiling, u: Tiling):
        pass

    with pytest.raises(InvalidArgument, match="'t' must be the last kernel parameter"):
        _params(not_last)
    with pytest.raises(InvalidArgument, match="only one TilingData parameter"):
        _params(twice)


def test_datatype_attaches_dtype_variables():
    def k(x: pl.Tensor[[4], pl.DT_FP32], p: pl.Ptr[pl.DT_FP32], s: pl.DT_FP32, t: Tiling):
        pass

    x, p, s, t = _params(k, datatype={"x": "io", "p": "io", "s": "acc"})
    assert (x.dtype_var, p.dtype_var, s.dtype_var, t.dtype_var) == ("io", "io", "acc", None)


@pytest.mark.parametrize("mapping, fragment", [
    ({"t": "io"}, "'t' is not a tensor, ptr or scalar parameter"),
    ({"missing": "io"}, "'missing' is not a tensor, ptr or scalar parameter"),
    ({"x": "not valid"}, "'not valid' must be an identifier"),
    ({"x": "t"}, "'t' must be an identifier that is not a parameter name"),
])
def test_datatype_mapping_errors(mapping, fragment):
    def k(x: pl.Tensor[[4], pl.DT_FP32], t: Tiling):
        pass

    with pytest.raises(ValueError) as info:
        _params(k, datatype=mapping)
    assert fragment in info.value.message


def test_is_kernel_function():
    def plain(a, b: int, c: "list[int]"):
        pass

    def only_tiling(t: Tiling):
        pass

    def ptr(p: pl.Ptr[pl.DT_FP32]):
        pass

    def broken(x: "pl.Tensor[[NOPE], pl.DT_FP32]"):  # noqa: F821
        pass

    assert not is_kernel_function(plain)
    assert not is_kernel_function(only_tiling)
    assert is_kernel_function(ptr)
    assert is_kernel_function(broken)  # the kernel path reports the NameError
