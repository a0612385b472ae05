"""`<Name>_tiling.h` (spec §4.3) and call_kernel.cpp (spec §4.4): the header declares the
TilingData class with the layout the host serialises (checked against ctypes by compiling the
header with g++), both targets copy it in at entry (the vector side through UB), and the
launcher takes GM pointers as `uint8_t*`, scalars by value and DYNAMIC dims as `int32_t`."""
from __future__ import annotations

import ctypes
import subprocess
from dataclasses import dataclass

import pypto_pro.language as pl
from pypto_pro.runtime.tiling_data import ctypes_struct


@dataclass
class AddTiling:
    rows: int
    scale: float
    full: bool
    offsets: int[4]
    weights: float[3]


@pl.jit(arch="a5")
def tiled_kernel(x: pl.Tensor[[pl.DYNAMIC, 64], pl.DT_FP16], n: pl.DT_INT32, alpha: pl.DT_FP32,
                 flag: pl.DT_BOOL, t: AddTiling):
    with pl.section_cube():
        rows = t.rows + n
        pl.printf("%d\n", rows)
    with pl.section_vector():
        k = t.offsets[2] + x.shape[0]
        pl.printf("%d %f\n", k, t.scale * alpha)


def test_tiling_header(gen, cxx_check):
    art = gen(tiled_kernel)
    assert set(art.tiling_headers) == {"AddTiling_tiling.h"}
    text = art.tiling_headers["AddTiling_tiling.h"]
    assert text.startswith("#pragma once\n")
    assert "class AddTiling {\npublic:\n    int64_t rows;\n    float scale;\n    bool full;\n" \
           "    int64_t offsets[4];\n    float weights[3];\n};\n" in text
    cpp = art.kernel_cpp
    assert cpp.count('#include "AddTiling_tiling.h"') == 2  # inside each target guard
    cxx_check(art)


def test_struct_is_copied_in_per_target(gen, cg):
    art = gen(tiled_kernel)
    cube = [cg.code(x) for x in cg.impl_body(art.kernel_cpp, "cube")]
    vec = [cg.code(x) for x in cg.impl_body(art.kernel_cpp, "vector")]
    assert cube[:3] == ["constexpr uint32_t t_all_bytes = sizeof(AddTiling);", "AddTiling t;",
                        "copy_data_align64(reinterpret_cast<uint8_t*>(&t), t_ptr, t_all_bytes);"]
    # the real code generator's vector copy-in: whole 32-byte bursts, the v2 copy on every arch
    assert vec[:8] == [
        "constexpr uint32_t t_all_bytes = sizeof(AddTiling);",
        "AddTiling t;",
        "__ubuf__ uint8_t* t_in_ub = reinterpret_cast<__ubuf__ uint8_t*>(get_imm(0));",
        "constexpr uint32_t t_len_burst = (t_all_bytes + 31) / 32;",
        "copy_gm_to_ubuf_align_v2(t_in_ub, t_ptr, 0, 1, t_len_burst * 32, 0, 0, false, 0, 0, 0);",
        "set_flag(PIPE_MTE2, PIPE_S, EVENT_ID0);",
        "wait_flag(PIPE_MTE2, PIPE_S, EVENT_ID0);",
        "copy_data_align64(reinterpret_cast<uint8_t*>(&t), t_in_ub, t_all_bytes);",
    ]
    assert "int64_t rows = t.rows + n;" in cube
    assert "int64_t k = t.offsets[2] + __pypto_dyn_x_0;" in vec


def test_header_layout_matches_ctypes(gen, tmp_path, mock_headers):
    compiler = mock_headers[0]
    art = gen(tiled_kernel)
    (tmp_path / "AddTiling_tiling.h").write_text(art.tiling_headers["AddTiling_tiling.h"])
    fields = [f for f, _ in ctypes_struct(AddTiling)._fields_]
    prints = "".join(f'std::printf("%zu ", offsetof(AddTiling, {f}));' for f in fields)
    (tmp_path / "main.cpp").write_text(
        '#include <cstddef>\n#include <cstdio>\n#include "AddTiling_tiling.h"\n'
        f"int main() {{ {prints} std::printf(\"%zu\", sizeof(AddTiling)); return 0; }}\n")
    exe = tmp_path / "layout"
    subprocess.run([compiler, "-std=c++17", str(tmp_path / "main.cpp"), "-o", str(exe)],
                   check=True)
    got = [int(v) for v in subprocess.run([str(exe)], capture_output=True, text=True,
                                          check=True).stdout.split()]
    struct = ctypes_struct(AddTiling)
    want = [getattr(struct, f).offset for f in fields] + [ctypes.sizeof(struct)]
    assert got == want


def test_launcher_abi(gen):
    art = gen(tiled_kernel)
    launcher = art.call_kernel_cpp
    assert 'extern "C" void call_kernel(uint32_t blockDim, void* stream, uint8_t* x_ptr, ' \
           "int32_t n, float alpha, bool flag, uint8_t* t_ptr, int32_t __pypto_dyn_x_0)" \
        in launcher
    assert "__global__ AICORE void tiled_kernel(__gm__ half* x_ptr, int32_t n, float alpha, " \
           "bool flag, __gm__ uint8_t* t_ptr, int32_t __pypto_dyn_x_0)" in launcher
    assert "tiled_kernel<<<blockDim, nullptr, stream>>>(reinterpret_cast<__gm__ half*>(x_ptr), " \
           "n, alpha, flag, reinterpret_cast<__gm__ uint8_t*>(t_ptr), __pypto_dyn_x_0);" \
        in launcher
    assert "    tiled_kernel_impl(x_ptr, n, alpha, flag, t_ptr, __pypto_dyn_x_0);" in launcher
    assert art.host_args == ("ptr", "scalar", "scalar", "scalar", "ptr", "dyn")
    assert art.kernel_type == "mix" and art.uses_print
