"""Module paths and attributes real PyPTO Pro code imports and reads (issue 21, class 9): the
parser's error classes under `pypto_pro.language.parser.diagnostics`, the tiling-key schema
API of `pypto_pro.runtime.tilingkey`, `pypto_pro.runtime.platform.get_platform_info`,
`pypto_pro.runtime.pipeline`, `pypto_pro.language.typing`, the package-level `DT_*`, and the
compile memo of a jitted kernel as shape-policy code reads it (`_compiled_by_signature`,
`_ensure_compiled`).
"""
from __future__ import annotations

import pytest
import torch

import pypto_pro
import pypto_pro.language as pl
from pypto_pro.errors import InvalidArgument


def test_parser_diagnostics_are_the_errors_the_parser_raises(tmp_path):
    from pypto_pro.language import Vf
    from pypto_pro.language.parser import diagnostics
    from pypto_pro.language.parser.diagnostics import ErrorCode, get_error_code
    from pypto_pro.language.parser.diagnostics._exceptions import (
        ParserTypeError, UndefinedVariableError,
    )

    assert Vf is pl.vf
    assert diagnostics.ParserTypeError is ParserTypeError
    assert get_error_code(ParserTypeError) is ErrorCode.INVALID_TYPE
    assert get_error_code(UndefinedVariableError) is ErrorCode.NAME_ERROR
    assert get_error_code(ValueError) is None
    path = tmp_path / "bad_kernel.py"
    path.write_text("import pypto_pro.language as pl\n\n@pl.jit\n"
                    "def k(x: pl.Tensor[[16], pl.DT_FP32]):\n"
                    "    with pl.section_vector():\n"
                    "        y = undefined_name + 1\n")
    import importlib.util

    spec = importlib.util.spec_from_file_location("bad_kernel", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(UndefinedVariableError) as info:
        module.k(torch.zeros(16))
    assert info.value.span.line == 6


def _key_class():
    from pypto_pro.runtime.tilingkey import TilingKeyField

    class AttentionKey:
        HasAtten = TilingKeyField(bits=1, values=[0, 1])
        BlockM = TilingKeyField(bits=8, values=[64, 128])

        def is_valid(self, key):
            has_atten, block_m = key
            return has_atten == 0 or block_m == 128

    return AttentionKey


def test_tiling_key_schema_api():
    from pypto_pro.runtime.tilingkey import TilingKeySchema

    schema = TilingKeySchema(_key_class())
    assert schema.cls_name == "AttentionKey"
    assert schema.field_names() == ["HasAtten", "BlockM"]
    assert schema.enumerate_valid() == [(0, 64), (0, 128), (1, 128)]
    assert schema.is_valid((1, 64)) is False
    assert schema.pack({"HasAtten": 1, "BlockM": 128}) == 1 | (1 << 1)
    schema.validate_concrete({"HasAtten": 0, "BlockM": 64})
    with pytest.raises(InvalidArgument, match="is_valid"):
        schema.validate_concrete({"HasAtten": 1, "BlockM": 64})


def test_platform_info_is_the_simulated_soc(monkeypatch):
    from pypto_pro.runtime.platform import get_platform_info

    info = get_platform_info()
    assert (info.soc_version, info.arch, info.core_num, info.cube_core_num,
            info.vector_core_num) == ("DAV_3510", "a5", 32, 32, 64)
    monkeypatch.setenv("PYPTOPRO_SIM_SOC", "Ascend910B1")
    other = get_platform_info(force_refresh=True)
    assert other.arch == "a3" and other.core_num == 24 and other.vector_core_num == 48


def test_package_level_names():
    import pypto_pro.language.typing as typing
    import pypto_pro.runtime as runtime
    from pypto_pro.runtime.pipeline import PipelineConfig
    from pypto_pro.runtime.pipeline.config import PipelineConfig as ConfigFromModule

    assert pypto_pro.DT_FP16 is pl.DT_FP16 and pypto_pro.DataType is pl.DataType
    assert issubclass(pypto_pro.InternalError, pypto_pro.errors.PyptoError)
    assert PipelineConfig is ConfigFromModule is pl.pipeline.PipelineConfig
    assert runtime.MemorySpace is pl.MemorySpace
    assert (typing.Tensor, typing.Tile, typing.Ptr, typing.DYNAMIC, typing.STATIC) == (
        pl.Tensor, pl.Tile, pl.Ptr, pl.DYNAMIC, pl.STATIC)
    with pytest.raises(AttributeError):
        pypto_pro.DT_NOT_A_TYPE  # noqa: B018


@pl.jit(arch="a5")
def static_rows(x: pl.Tensor[[pl.STATIC, 16], pl.DT_FP32]):
    with pl.section_vector():
        pl.printf("%d\n", x.shape[0])


def test_compile_memo_by_signature_as_shape_policy_code_reads_it():
    memo = static_rows._compiled_by_signature
    memo.clear()
    first = static_rows._ensure_compiled((torch.zeros(8, 16),))
    again = static_rows._ensure_compiled((torch.zeros(8, 16),))
    static_rows._ensure_compiled((torch.zeros(4, 16),))
    assert first is again and len(memo) == 2
    assert sorted(memo) == [(((0, 0, 4),), None, None), (((0, 0, 8),), None, None)]
    assert memo[((0, 0, 8),), None, None] is first
    assert static_rows.arch == "a5" and static_rows.tilingkey_schema is None
    assert static_rows.datatype_schema is None
    memo.clear()
    assert not static_rows.compiled_variants
