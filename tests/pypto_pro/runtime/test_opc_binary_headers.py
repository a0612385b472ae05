"""Binary delivery: `pypto_pro.runtime.opc.pypto_compile.generate_binary_headers` writes the
tiling, tiling-key and infer sources CANN's operator compiler reads, as the real one does."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

import pypto_pro.language as pl
from pypto_pro.runtime.opc.pypto_compile import generate_binary_headers
from pypto_pro.runtime.tilingkey import TilingKeyField

ROW_T = pl.TileType(shape=[16, 16], dtype=pl.DT_FP16, target_memory=pl.MemorySpace.Vec)


@dataclass
class Sizes:
    rows: int
    cols: int


class Choice:
    Op = TilingKeyField(bits=1, values=[0, 1])
    Unroll = TilingKeyField(bits=2, values=[1, 2, 4])

    def is_valid(self, key):
        return not (key[0] == 1 and key[1] == 4)


@pl.jit(tiling_key=Choice)
def choose_op(x: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP16],
              z: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP16], sizes: Sizes):
    a = pl.make_tile(ROW_T, addr=0x0000, size=512)
    with pl.section_vector():
        for r in pl.range(0, sizes.rows, 16):
            pl.load(a, x, [r, 0])
            if Op == 0:  # noqa: F821
                pl.add(a, a, a)
            pl.store(z, a, [r, 0])


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def test_writes_the_three_files_beside_the_build_directory():
    binary = Path(generate_binary_headers(choose_op))
    # (./build/<prefix>__<arch>/, the prefix naming this test file as the real layout does)
    assert binary.name == "binary" and binary.parent.name == "opc_binary_headers__choose_op__a5"
    assert sorted(p.name for p in binary.iterdir()) == [
        "Choice_tilingkey.h", "Sizes_tiling.h", "choose_op_pypto_infer.cpp"]
    built = next(binary.parent.glob("tk_*"))
    assert built.name == "tk_0"  # the first valid combination: Op 0, Unroll 1
    assert (built / "kernel.cpp").is_file()
    tiling = (binary / "Sizes_tiling.h").read_text()
    assert "class Sizes" in tiling and "int64_t rows;" in tiling and "int64_t cols;" in tiling


def test_the_tilingkey_header_declares_fields_and_valid_combinations():
    text = (Path(generate_binary_headers(choose_op)) / "Choice_tilingkey.h").read_text()
    assert text.startswith('#include "ascendc/host_api/tiling/template_argument.h"')
    assert "#define ASCENDC_TPL_1_BW 1" in text and "#define ASCENDC_TPL_2_BW 2" in text
    assert "ASCENDC_TPL_ARGS_DECL(choose_op," in text
    assert "// bit:0-0\n    ASCENDC_TPL_UINT_DECL(Op, ASCENDC_TPL_1_BW, ASCENDC_TPL_UI_LIST, " \
        "0, 1)," in text
    assert "// bit:2-1\n    ASCENDC_TPL_UINT_DECL(Unroll, ASCENDC_TPL_2_BW, ASCENDC_TPL_UI_LIST, " \
        "1, 2, 4)," in text
    combos = re.findall(r"UINT_SEL\(Op, ASCENDC_TPL_UI_LIST, (\d)\),\n\s+"
                        r"ASCENDC_TPL_UINT_SEL\(Unroll, ASCENDC_TPL_UI_LIST, (\d)\)", text)
    assert combos == [("0", "1"), ("0", "2"), ("0", "4"), ("1", "1"), ("1", "2")]
    assert text.count("ASCENDC_TPL_ARGS_SEL(") == 5
    assert text.rstrip().endswith("    )\n);")


def test_the_infer_source_wraps_the_kernel_with_a_workspace_entry():
    text = (Path(generate_binary_headers(choose_op)) / "choose_op_pypto_infer.cpp").read_text()
    assert text.startswith('#include "kernel_operator.h"\n#include "Choice_tilingkey.h"\n')
    assert "__aicore__ inline void choose_op_impl(" in text  # kernel.cpp, whole
    entry = text[text.index('extern "C" __global__ AICORE void choose_op('):]
    names = re.findall(r"(\w+)(?:,|\))", entry.splitlines()[0])
    assert names[:3] == ["x_ptr", "z_ptr", "sizes_ptr"]
    ws = names[-2]
    assert f"AscendC::SetSysWorkspaceForce({ws});" in entry
    assert f"GM_ADDR usrWorkspace = AscendC::GetUserWorkspace({ws});" in entry
    call = re.search(r"choose_op_impl\((.*)\);", entry).group(1).split(", ")
    assert call[-2] == "usrWorkspace" and call[:-2] == names[:-2] and call[-1] == names[-1]
    assert "KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);" in entry


def test_refusals_name_what_binary_delivery_needs():
    with pytest.raises(TypeError, match="expects a @pl.jit kernel"):
        generate_binary_headers(choose_op.kernel_def.fn)

    def loads(x: pl.Tensor[[16, 16], pl.DT_FP16], sizes: Sizes):
        a = pl.make_tile(ROW_T, addr=0x0000, size=512)
        with pl.section_vector():
            pl.load(a, x, [0, 0])

    with pytest.raises(ValueError, match="requires a tiling_key schema.*'loads'"):
        generate_binary_headers(pl.jit(loads))

    class Never:
        Op = TilingKeyField(bits=1, values=[0, 1])

        def is_valid(self, key):
            return False

    with pytest.raises(ValueError, match="'Never' has no valid tilingkey combination"):
        generate_binary_headers(pl.jit(tiling_key=Never)(loads))

    @pl.jit(tiling_key=Choice)
    def no_tiling(x: pl.Tensor[[16, 16], pl.DT_FP16]):
        a = pl.make_tile(ROW_T, addr=0x0000, size=512)
        with pl.section_vector():
            pl.load(a, x, [0, 0])

    with pytest.raises(RuntimeError, match="no tiling struct header"):
        generate_binary_headers(no_tiling)


def test_datatype_variables_are_compiled_as_fp16():
    @pl.jit(tiling_key=Choice, datatype={"x": "io"})
    def typed(x: pl.Tensor[[16, 16], pl.DT_FP32], sizes: Sizes):
        a = pl.make_tile(pl.TileType(shape=[16, 16], dtype=io,  # noqa: F821
                                     target_memory=pl.MemorySpace.Vec), addr=0x0000, size=512)
        with pl.section_vector():
            pl.load(a, x, [0, 0])
            pl.store(x, a, [0, 0])

    text = (Path(generate_binary_headers(typed)) / "typed_pypto_infer.cpp").read_text()
    assert "__gm__ half* x_ptr" in text
