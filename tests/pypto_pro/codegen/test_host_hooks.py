"""What the generated code offers a host build without changing what the NPU compiles: the
launch as `PYPTO_NATIVE_LAUNCH` when defined (else `<<<>>>`), getval / setval through
`PYPTO_TILE_ELEM` / `PYPTO_GM_ELEM`, a per-axis `PYPTO_GM_CHECK` before every GM window; plus
printf at full width for 64-bit integers, make_tile dedup by (memory, address, type), kernel
names that are C++ keywords, and notebook cells named as IPython shows them."""
from __future__ import annotations

import sys
import types

import pypto_pro.language as pl
from pypto_pro.codegen.writer import source_label
from pypto_pro.runtime.backends.native import native_sources

T16 = pl.TileType([16, 16], pl.DT_FP32)


@pl.jit(arch="a5")
def hooks(x: pl.Tensor[[32, 16], pl.DT_FP32], y: pl.Tensor[[16], pl.DT_FP32],
          n: pl.DT_INT64, m: pl.DT_INT32, flag: pl.DT_BOOL):
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0)
        pl.load(a, x, [n, 0])
        pl.system.bar_all()
        b = pl.make_tile(T16, addr=0)  # the same tile as a
        c = pl.make_tile(T16, addr=0x1000)
        if flag:
            d = pl.make_tile(T16, addr=0x1000)  # the same as c, in an inner block
            pl.add(d, a, b)
        pl.system.bar_all()
        pl.printf("%d %d %d %d %x\n", n, m, 5_000_000_000, m, pl.get_block_idx())
        pl.setval(y, 1, pl.getval(c, 3))


def test_launch_macro_for_host_builds(gen):
    art = gen(hooks)
    launcher = art.call_kernel_cpp.splitlines()
    at = launcher.index("#if defined(PYPTO_NATIVE_LAUNCH)")
    assert launcher[at + 1].strip().startswith("PYPTO_NATIVE_LAUNCH(hooks, blockDim, nullptr, "
                                               "stream)(reinterpret_cast<__gm__ float*>(x_ptr)")
    assert launcher[at + 2] == "#else"
    assert "hooks<<<blockDim, nullptr, stream>>>(" in launcher[at + 3]
    assert launcher[at + 4] == "#endif"
    files = native_sources(art)
    assert files["call_kernel.cpp"] == art.call_kernel_cpp  # built as generated
    assert '#include "call_kernel.cpp"' in files["native_main.cpp"]


def test_element_access_and_gm_window_hooks(gen, cxx_check, cg):
    art = gen(hooks)
    body = [cg.code(line) for line in cg.impl_body(art.kernel_cpp)]
    assert "float val = PYPTO_TILE_ELEM(c, 3);" in body and "PYPTO_GM_ELEM(y_ptr, 1) = val;" in body
    check = body.index('PYPTO_GM_CHECK("x", n, a.GetValidRow(), 32, x_stride[0], '
                       '0, a.GetValidCol(), 16, x_stride[1]);')
    assert body[check + 2] == "TASSIGN(x_gt, x_ptr + n * x_stride[0]);"
    for macro in ("PYPTO_TILE_ELEM", "PYPTO_GM_ELEM", "PYPTO_GM_CHECK"):
        assert f"#ifndef {macro}" in art.kernel_cpp  # the NPU's plain definitions
    cxx_check(art)


def test_one_row_windows_check_the_row_too(gen, cg):
    @pl.jit(arch="a5")
    def row(y: pl.Tensor[[1, 64], pl.DT_FP32]):
        with pl.section_vector():
            t = pl.make_tile(pl.TileType([1, 16], pl.DT_FP32), addr=0)
            pl.load(t, y, [0, 16])

    body = [cg.code(line) for line in cg.impl_body(gen(row).kernel_cpp)]
    assert ('PYPTO_GM_CHECK("y", 0, t.GetValidRow(), 1, y_stride[0], '
            '16, t.GetValidCol(), 64, y_stride[1]);') in body


def test_printf_keeps_64_bit_integers(gen, cg):
    body = [cg.code(line) for line in cg.impl_body(gen(hooks).kernel_cpp)]
    (line,) = [b for b in body if b.startswith("cce::printf(")]
    assert line == ('cce::printf("%lld %d %lld %d %llx\\n", static_cast<long long>(n), '
                    'static_cast<int32_t>(m), static_cast<long long>(5000000000LL), '
                    'static_cast<int32_t>(m), static_cast<unsigned long long>(static_cast<'
                    'int64_t>(get_block_idx() * get_subblockdim() + get_subblockid())));')


def test_make_tile_dedup(gen, cg):
    body = [cg.code(line) for line in cg.impl_body(gen(hooks).kernel_cpp)]
    assert sum(line.startswith("TASSIGN(") and "0x0)" in line for line in body) == 1
    assert "Vec_fp32_16x16_t& b = a;" in body and "b.SetValidShape(16, 16);" in body
    assert "TASSIGN(c, 0x1000);" in body and "Vec_fp32_16x16_t& d = c;" in body


def test_make_tile_in_sibling_blocks_is_not_shared(gen, cg):
    @pl.jit(arch="a5")
    def branches(y: pl.Tensor[[16, 16], pl.DT_FP32], flag: pl.DT_BOOL):
        with pl.section_vector():
            if flag:
                a = pl.make_tile(T16, addr=0)
                pl.store(y, a, [0, 0])
            else:
                b = pl.make_tile(T16, addr=0)
                pl.store(y, b, [0, 0])

    body = [cg.code(line) for line in cg.impl_body(gen(branches).kernel_cpp)]
    assert "TASSIGN(a, 0x0);" in body and "TASSIGN(b, 0x0);" in body


def test_a_kernel_named_like_a_keyword(gen):
    @pl.jit(arch="a5")
    def double(y: pl.Tensor[[16], pl.DT_FP32]):
        with pl.section_vector():
            pl.setval(y, 0, 2.0)

    art = gen(double)
    assert art.kernel_name == "k_double"
    assert "k_double<<<blockDim, nullptr, stream>>>(" in art.call_kernel_cpp


def test_notebook_cells_are_named_as_ipython_shows_them(monkeypatch):
    class Compiler:
        @staticmethod
        def format_code_name(name):
            return ("Cell", "In[3]") if name.startswith("/tmp/ipykernel_") else None

    shell = types.SimpleNamespace(compile=Compiler())
    monkeypatch.setitem(sys.modules, "IPython",
                        types.SimpleNamespace(get_ipython=lambda: shell))
    source_label.cache_clear()
    try:
        assert source_label("/tmp/ipykernel_42/123456.py") == "Cell In[3]"
        assert source_label("/home/u/kernels.py") == "kernels.py"
        assert source_label("<pypto-cell-0123abcd>") == "<pypto-cell-0123abcd>"
    finally:
        source_label.cache_clear()
