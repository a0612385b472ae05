"""`pl.jit` / `pl.kernel` decoration: forms, options, closure capture, the KernelDef's AST."""
from __future__ import annotations

import ast
import inspect
import linecache

import pytest

import pypto_pro.language as pl
import pypto_pro.runtime as runtime
from pypto_pro.errors import InvalidArgument, InvalidType
import pypto_pro.runtime.jit as jit_module
from pypto_pro.runtime.kernel_def import JitOptions, KernelDef
from pypto_pro.language.pipeline import PipelineConfig

LIVE_GLOBAL = 1


def test_bare_decorator_returns_kernel_with_default_options():
    @pl.jit
    def add(x: pl.Tensor[[64], pl.DT_FP32], out: pl.Tensor[[64], pl.DT_FP32]):
        pass

    assert isinstance(add, jit_module.JitKernel)
    assert jit_module._TileJitKernel is jit_module.JitKernel
    assert add.options == JitOptions()
    assert add.__name__ == "add"
    assert [p.name for p in add.kernel_def.params] == ["x", "out"]


def test_called_decorator_keeps_options_and_normalises_arch():
    cfg = PipelineConfig(preload=1)

    @pl.jit(arch="DAV_3510", auto_mutex=False, name="my_add", pipeline=cfg,
            compile_timeout=30, sanitizer=True)
    def add(x: pl.Tensor[[64], pl.DT_FP32]):
        pass

    assert add.options == JitOptions(arch="a5", auto_mutex=False, name="my_add", pipeline=cfg,
                                     compile_timeout=30, sanitizer=True)


def test_unknown_keyword_is_a_type_error():
    with pytest.raises(TypeError, match="unexpected keyword argument 'autotune'"):
        pl.jit(autotune=True)


@pytest.mark.parametrize("kwargs, fragment", [
    ({"auto_mutex": 1}, "auto_mutex must be a bool"),
    ({"pipeline": True}, "invalid pipeline"),
    ({"compile_timeout": 0}, "invalid compile_timeout"),
])
def test_bad_option_types_are_type_errors(kwargs, fragment):
    with pytest.raises(InvalidType, match=fragment):
        pl.jit(**kwargs)


@pytest.mark.parametrize("datatype, fragment", [
    ({}, "datatype must be a non-empty dict"),
    (["x"], "datatype must be a non-empty dict"),
    ({"x": 3}, "datatype variable for param 'x' must be a valid Python identifier"),
    ({"x": "not an id"}, "must be a valid Python identifier"),
    ({3: "T"}, "datatype param names must be non-empty strings"),
])
def test_a_bad_datatype_schema_is_a_value_error(datatype, fragment):
    with pytest.raises(InvalidArgument, match=fragment):
        pl.jit(datatype=datatype)


def test_a_tiling_key_that_is_no_class_is_a_value_error():
    with pytest.raises(InvalidArgument, match="tiling_key must be a class, got dict"):
        pl.jit(tiling_key={"A": 1})


def test_unknown_arch_is_a_value_error():
    with pytest.raises(ValueError, match="Unsupported arch 'a9'"):
        pl.jit(arch="a9")


def test_non_tile_function_is_a_plain_passthrough():
    @pl.jit
    def helper(a, b: int = 2):
        return a * b

    assert not isinstance(helper, jit_module.JitKernel)
    assert helper(3) == 6
    assert helper.__wrapped__.__name__ == "helper"


def test_scalar_dtype_annotation_alone_makes_a_kernel():
    @pl.jit
    def k(n: pl.DT_INT32):
        pass

    assert isinstance(k, jit_module.JitKernel)
    assert k.kernel_def.params[0].kind == "scalar"


def test_kernel_returns_lazy_kernel_def_with_real_lines_and_columns():
    @pl.kernel(arch="a5")
    def body(x: pl.Tensor[[16], pl.DT_FP16]):
        y = 1
        return y

    assert isinstance(body, KernelDef)
    assert body.name == "body" and body.options.arch == "a5"
    assert isinstance(body.tree, ast.FunctionDef)
    assert body.file == __file__
    lines, start = inspect.getsourcelines(body.fn)
    assign = body.tree.body[0]
    assert assign.lineno == start + 2
    src_line = lines[2]
    assert assign.col_offset == len(src_line) - len(src_line.lstrip())
    assert body.source.startswith("@pl.kernel(arch=\"a5\")\ndef body(")


def test_language_resolves_the_runtime_jit():
    assert pl.jit is jit_module.jit and pl.kernel is jit_module.kernel
    assert pl.KernelDef is KernelDef

    @jit_module.jit
    def k(x: pl.Tensor[[4], pl.DT_FP32]):
        pass

    assert isinstance(k, jit_module.JitKernel)


def test_caller_locals_are_snapshotted_at_decoration():
    tile = 64

    @pl.jit
    def k(x: pl.Tensor[[tile], pl.DT_FP32]):
        pass

    tile = 128  # noqa: F841 (rebinding after decoration must not leak in)
    assert k.kernel_def.params[0].spec.dims == (64,)
    assert k.kernel_def.env["tile"] == 64


def test_closure_values_snapshotted_and_late_cells_read_live():
    scale = 2

    @pl.jit
    def k(x: pl.Tensor[[4], pl.DT_FP32]):
        return scale, later_helper()

    scale = 3  # noqa: F841

    def later_helper():
        return 0

    env = k.kernel_def.env
    assert env["scale"] == 2
    assert env["later_helper"] is later_helper


def test_globals_stay_live():
    global LIVE_GLOBAL

    @pl.jit
    def k(x: pl.Tensor[[4], pl.DT_FP32]):
        return LIVE_GLOBAL

    LIVE_GLOBAL = 7
    try:
        assert k.kernel_def.env["LIVE_GLOBAL"] == 7
        assert k.kernel_def.env["len"] is len
    finally:
        LIVE_GLOBAL = 1


def test_unevaluable_annotation_names_the_parameter():
    with pytest.raises(InvalidType, match="kernel parameter 'x'.*NameError"):
        @pl.jit
        def k(x: pl.Tensor[[UNDEFINED_DIM], pl.DT_FP32], y: pl.DT_INT32):  # noqa: F821
            pass


def test_decorating_a_non_function_is_a_type_error():
    with pytest.raises(InvalidType, match="decorates a Python function"):
        pl.jit(len)


def test_tiling_key_field_clashing_with_a_global_is_rejected():
    class Key:
        LIVE_GLOBAL = runtime.TilingKeyField(bits=1, values=[0, 1])

    with pytest.raises(InvalidArgument,
                       match=r"\['LIVE_GLOBAL'\].*conflict with module-level variable"):
        @pl.jit(tiling_key=Key)
        def k(x: pl.Tensor[[4], pl.DT_FP32]):
            pass


def test_tiling_key_field_clashing_with_a_parameter_is_rejected():
    class Key:
        x = runtime.TilingKeyField(bits=1, values=[0, 1])

    with pytest.raises(ValueError, match=r"\['x'\].*conflict with kernel parameter"):
        @pl.jit(tiling_key=Key)
        def k(x: pl.Tensor[[4], pl.DT_FP32]):
            pass


def test_datatype_naming_unknown_parameter_is_rejected_at_decoration():
    with pytest.raises(ValueError, match="'y' is not a tensor, ptr or scalar parameter"):
        @pl.jit(datatype={"y": "io_dtype"})
        def k(x: pl.Tensor[[4], pl.DT_FP32]):
            pass


def test_kernel_from_a_notebook_cell_registered_in_linecache():
    cell = "<ipython-input-7-runtime-test>"
    source = ("import pypto_pro.language as pl\n"
              "\n"
              "@pl.jit\n"
              "def cell_kernel(x: pl.Tensor[[4], pl.DT_FP32]):\n"
              "    y = 1\n")
    linecache.cache[cell] = (len(source), None, source.splitlines(True), cell)
    try:
        namespace = {"__name__": "__main__"}
        exec(compile(source, cell, "exec"), namespace)
        kdef = namespace["cell_kernel"].kernel_def
    finally:
        del linecache.cache[cell]
    assert kdef.file == cell
    assert kdef.tree.decorator_list[0].lineno == 3
    assert kdef.tree.lineno == 4 and kdef.tree.body[0].lineno == 5
    assert kdef.source.startswith("@pl.jit\ndef cell_kernel(")
