"""The generated C++ spells every construct as pto-isa declares it (the forms the real toolchain
accepts), and `pypto_pro/include` rejects the forms pto-isa rejects.

Golden lines per construct: GlobalTensor declaration and per-access window, mixed static /
dynamic valid shapes, fixpipe moves and stores (tile types first, then options), the lowered
forms of ops pto-isa has no single instruction for, VF loops, the tiling copy-in, sync_all.
Negative snippets: small C++ programs that must fail to compile against our headers (each a
form bisheng refuses), next to the corrected form that must compile.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

import pypto_pro.language as pl
from pypto_pro.errors import NotSupported
from pypto_pro.examples import load
from pypto_pro.ir.attrs import AccToVecMode, ReluPreMode, RoundMode
from pypto_pro.ir.dtype import DataType
from pypto_pro.ir.nodes import AssignStmt, Call, ConstInt, EvalStmt, MakeTuple
from pypto_pro.ir.span import Span
from pypto_pro.ir.types import INDEX, MemorySpace, TileLayout, TileType, TupleType

INCLUDE = Path(__file__).resolve().parents[3] / "pypto_pro" / "include"
SPAN = Span("forms.py", 5, 1)
DIMS = "pto::GlobalTensorDim::DIM_3, pto::GlobalTensorDim::DIM_4"


def _body(cg, kernel, target="vector"):
    art = cg.compile(kernel)[1]
    return art, [cg.code(x) for x in cg.impl_body(art.kernel_cpp, target)]


# ---------------------------------------------------------------- GM windows


def test_global_tensor_declaration_and_access(cg):
    _, body = _body(cg, load("vector_add").KERNELS["add_kernel"])
    assert "using x_GT = GlobalTensor<half, pto::Shape<1, 1, 1, -1, -1>, " \
           "pto::Stride<-1, -1, -1, -1, -1>>;" in body
    assert "x_GT x_gt(x_ptr, x_GT::Shape(), x_GT::Stride(1, 1, 1, x_stride[0], x_stride[1]));" \
        in body
    assert f"x_gt.SetShape<{DIMS}>(static_cast<int64_t>(a.GetValidRow()), " \
           "static_cast<int64_t>(a.GetValidCol()));" in body
    assert not any("SetStride" in x for x in body)  # the constructor's strides serve every access
    assert not any(re.search(r"\bDIM_3\b", x) and "GlobalTensorDim" not in x for x in body)


def test_transposed_load_goes_through_a_dn_global_tensor(cg):
    """As the real code generator declares it: `Layout::DN`, the window's strides swapped in
    the constructor, no per-access SetStride."""
    _, body = _body(cg, load("flash_attention").KERNELS["flash_attention_kernel"], "cube")
    assert "using k_GT = GlobalTensor<half, pto::Shape<1, 1, 1, -1, -1>, " \
           "pto::Stride<-1, -1, -1, -1, -1>, pto::Layout::DN>;" in body
    assert "k_GT k_gt(k_ptr, k_GT::Shape(), k_GT::Stride(1, 1, 1, k_stride[1], k_stride[0]));" \
        in body
    at = body.index("TLOAD(kt, k_gt);")
    assert body[at - 2].startswith("k_gt.SetShape") and body[at - 1].startswith("TASSIGN(k_gt")
    assert not any("SetStride" in x for x in body)
    # the tensors loaded plainly stay ND
    assert "using v_GT = GlobalTensor<half, pto::Shape<1, 1, 1, -1, -1>, " \
           "pto::Stride<-1, -1, -1, -1, -1>>;" in body


def test_a_tensor_read_both_ways_gets_an_instance_per_layout(cg):
    @pl.jit(arch="a5")
    def k(x: pl.Tensor[[64, 64], pl.DT_FP16], y: pl.Tensor[[64, 1], pl.DT_FP32]):
        with pl.section_cube():
            a = pl.make_tile(pl.TileType([64, 64], pl.DT_FP16, pl.MemorySpace.Mat), addr=0)
            b = pl.make_tile(pl.TileType([64, 64], pl.DT_FP16, pl.MemorySpace.Mat), addr=0x2000)
            pl.load(a, x, [0, 0])
            pl.load(b, x, [0, 0], order=[1, 0])
        with pl.section_vector():
            c = pl.make_tile(pl.TileType([64, 1], pl.DT_FP32), addr=0)
            pl.load(c, y, [0, 0])
            pl.store(y, c, [0, 0])

    _, cube = _body(cg, k, "cube")
    assert "x_GT x_gt(x_ptr, x_GT::Shape(), x_GT::Stride(1, 1, 1, x_stride[0], x_stride[1]));" \
        in cube
    assert "using x_DN_GT = GlobalTensor<half, pto::Shape<1, 1, 1, -1, -1>, " \
           "pto::Stride<-1, -1, -1, -1, -1>, pto::Layout::DN>;" in cube
    assert "x_DN_GT x_dn_gt(x_ptr, x_DN_GT::Shape(), " \
           "x_DN_GT::Stride(1, 1, 1, x_stride[1], x_stride[0]));" in cube
    assert "TLOAD(a, x_gt);" in cube and "TLOAD(b, x_dn_gt);" in cube
    _, vec = _body(cg, k, "vector")  # a one-column (column-major) tile: DN, as pto-isa's DMA
    assert "using y_GT = GlobalTensor<float, pto::Shape<1, 1, 1, -1, -1>, " \
           "pto::Stride<-1, -1, -1, -1, -1>, pto::Layout::DN>;" in vec
    assert "TLOAD(c, y_gt);" in vec and "TSTORE(y_gt, c);" in vec


def test_window_and_tile_layouts_the_dma_cannot_pair_are_refused(cg):
    @pl.jit(arch="a5")
    def k(x: pl.Tensor[[16, 64], pl.DT_FP32]):
        with pl.section_vector():
            t = pl.make_tile(pl.TileType([64, 16], pl.DT_FP32), addr=0)
            pl.load(t, x, [0, 0], order=[1, 0])  # a transposed window into a row-major tile

    with pytest.raises(NotSupported, match="does not move a transposed GM window into a ND "
                                           "Vec tile") as err:
        cg.compile(k)
    assert "pl.load(t, x, [0, 0], order=[1, 0])" in str(err.value)  # points at the line


def test_changed_strides_are_set_at_every_access(cg):
    @pl.jit(arch="a5")
    def k(x: pl.Tensor[[64, 64], pl.DT_FP32], y: pl.Tensor[[64, 64], pl.DT_FP32]):
        with pl.section_vector():
            t = pl.make_tile(pl.TileType([16, 64], pl.DT_FP32), addr=0)
            pl.load(t, x, [0, 0])
            pl.set_stride(x, [1, 64])
            pl.load(t, x, [0, 0])
            pl.store(y, t, [0, 0])

    _, body = _body(cg, k)
    assert [x for x in body if "SetStride" in x] == [
        f"x_gt.SetStride<{DIMS}>(x_stride[0], x_stride[1]);"] * 2  # y keeps its constructor's


# ---------------------------------------------------------------- valid shapes


def test_mixed_static_dynamic_valid_shapes(cg):
    _, body = _body(cg, load("layernorm").KERNELS["layernorm_kernel"])
    assert "Vec_fp32_1x256_v1xd_t g(256);" in body  # valid rows static: one value, the cols
    assert "Vec_fp32_16x1_DN_vdx1_t mean(16);" in body  # valid cols static: the rows
    assert "g.SetValidCol(__pypto_dyn_x_1);" in body
    assert "mean.SetValidRow(valid_rows);" in body
    assert not any(x.startswith(("g.SetValidShape", "mean.SetValidShape")) for x in body)


def test_changing_a_static_valid_extent_is_refused(cg):
    @pl.jit(arch="a5")
    def k(x: pl.Tensor[[16, 64], pl.DT_FP32]):
        with pl.section_vector():
            t = pl.make_tile(pl.TileType([16, 64], pl.DT_FP32, valid_shape=[16, -1]), addr=0)
            pl.set_validshape(t, [8, 64])
            pl.load(t, x, [0, 0])

    with pytest.raises(NotSupported, match="valid rows of this tile type are static"):
        cg.compile(k)


# ---------------------------------------------------------------- fixpipe moves and stores


def test_acc_moves_name_the_tile_types_first(cg):
    _, body = _body(cg, load("flash_attention").KERNELS["flash_attention_kernel"], "cube")
    assert "TMOV<std::remove_reference_t<decltype(s_slot)>, " \
           "std::remove_reference_t<decltype(sa)>, AccToVecMode::DualModeSplitM>(s_slot, sa);" \
        in body
    assert not any(x.startswith("TMOV<AccToVecMode") for x in body)


def _tile(name, space, dtype=DataType.FP32, shape=(16, 16), addr=0, layout=TileLayout.ND):
    from pypto_pro.ir.nodes import Var

    t = TileType(shape, dtype, space, addr=addr, layout=layout)
    v = Var(name, t)
    sh = MakeTuple((ConstInt(shape[0]), ConstInt(shape[1])), TupleType((INDEX, INDEX)))
    return v, AssignStmt(v, Call("block.make_tile", (sh,), (("memref_addr", addr),), t, SPAN),
                         SPAN)


def _lines(cg, calls, tiles, target="vector"):
    from pypto_pro.codegen import generate
    from pypto_pro.ir.nodes import Function, Program, SectionStmt, seq
    from pypto_pro.ir.types import SectionKind

    kind = SectionKind.Vector if target == "vector" else SectionKind.Cube
    stmts = [EvalStmt(c, SPAN) for c in calls]
    body = seq([*tiles, SectionStmt(kind, seq(stmts, SPAN), span=SPAN)], SPAN)
    program = Program("forms", (Function("forms", (), body, span=SPAN),), target, SPAN)
    art = generate(cg.fake_compiled({target: program}))
    return [cg.code(x) for x in cg.impl_body(art.kernel_cpp, target)]


def test_move_options_and_scale(cg):
    acc, d0 = _tile("acc", MemorySpace.Acc)
    vec, d1 = _tile("v", MemorySpace.Vec, DataType.FP16)
    calls = [Call("block.move", (vec, acc), (("relu_pre_mode", ReluPreMode.NormalRelu),),
                  span=SPAN),
             Call("block.move", (vec, acc), (("acc_to_vec_mode", AccToVecMode.SingleModeVec1),
                                             ("scale", 0.5)), span=SPAN),
             Call("block.move", (vec, acc), span=SPAN)]
    body = _lines(cg, calls, [d0, d1], "cube")
    types = "std::remove_reference_t<decltype(v)>, std::remove_reference_t<decltype(acc)>"
    assert f"TMOV<{types}, ReluPreMode::NormalRelu>(v, acc);" in body
    assert f"TMOV<{types}, AccToVecMode::SingleModeVec1>(v, acc, 0x3f000000ULL);" in body
    assert "TMOV(v, acc);" in body


# ---------------------------------------------------------------- lowered ops


def test_ops_without_a_pto_isa_instruction_are_lowered(cg):
    a, d0 = _tile("a", MemorySpace.Vec)
    b, d1 = _tile("b", MemorySpace.Vec, addr=0x400)
    c, d2 = _tile("c", MemorySpace.Vec, addr=0x800)
    h, d3 = _tile("h", MemorySpace.Vec, DataType.FP16, addr=0xC00)
    calls = [Call("block.add_relu", (c, a, b), span=SPAN),
             Call("block.sub_relu", (c, a, b), span=SPAN),
             Call("block.mul_add_dst", (c, a, b), span=SPAN),
             Call("block.fused_mul_add", (c, a, b), span=SPAN),
             Call("block.fused_mul_add_relu", (c, a, b), span=SPAN),
             Call("block.add_relu_cast", (h, a, b), span=SPAN),
             Call("block.sub_relu_cast", (h, a, b), (("mode", RoundMode.CAST_RINT),), span=SPAN),
             Call("block.mul_cast", (h, a, b), span=SPAN),
             Call("block.row_reduce", (c, a, b), (("op", "MAX"),), span=SPAN),
             Call("block.col_reduce", (c, a, b), (("op", "SUM"),), span=SPAN),
             Call("block.col_max", (c, a, b), span=SPAN),
             Call("block.row_expand_binop", (c, a, b), (("op", "MUL"),), span=SPAN),
             Call("block.gathermask", (c, a), (("pattern_mode", 3),), span=SPAN),
             Call("block.transpose", (c, a), span=SPAN)]
    body = _lines(cg, calls, [d0, d1, d2, d3])
    # the fused ops work through their first input, as the real code generator lowers them
    expected = ["TADD(a, a, b);", "TRELU(c, a);", "TSUB(a, a, b);", "TRELU(c, a);",
                "TMUL(a, a, b);", "TADD(c, a, c);", "TMUL(a, a, c);", "TADD(c, a, b);",
                "TMUL(a, a, c);", "TADD(a, a, b);", "TRELU(c, a);",
                "TADD(a, a, b);", "TRELU(a, a);", "TCVT(h, a, RoundMode::CAST_ROUND);",
                "TSUB(a, a, b);", "TRELU(a, a);", "TCVT(h, a, RoundMode::CAST_RINT);",
                "TMUL(a, a, b);", "TCVT(h, a, RoundMode::CAST_ROUND);", "TROWMAX(c, a, b);",
                "TCOLSUM(c, a, b, false);", "TCOLMAX(c, a);", "TROWEXPANDMUL(c, a, b);",
                "TGATHER<std::remove_reference_t<decltype(c)>, "
                "std::remove_reference_t<decltype(a)>, MaskPattern::P0001>(c, a);",
                "TTRANS(c, a, a);"]
    assert body[-len(expected):] == expected


def test_matmul_mx_and_fill_index_forms(cg):
    acc, d0 = _tile("acc", MemorySpace.Acc)
    left, d1 = _tile("l", MemorySpace.Left, DataType.FP16)
    right, d2 = _tile("r", MemorySpace.Right, DataType.FP16)
    sa, d3 = _tile("sa", MemorySpace.ScaleLeft, DataType.UINT8)
    sb, d4 = _tile("sb", MemorySpace.ScaleRight, DataType.UINT8)
    calls = [Call("block.matmul_mx", (acc, left, right, sa, sb), span=SPAN),
             Call("block.matmul_mx_acc", (acc, acc, left, right, sa, sb), span=SPAN)]
    body = _lines(cg, calls, [d0, d1, d2, d3, d4], "cube")
    assert "TMATMUL_MX(acc, l, sa, r, sb);" in body
    assert "TMATMUL_MX(acc, acc, l, sa, r, sb);" in body
    idx, d5 = _tile("i", MemorySpace.Vec, DataType.INT32, (1, 64))
    body = _lines(cg, [Call("block.fill_index", (idx, ConstInt(3)), span=SPAN)], [d5])
    assert "TCI<std::remove_reference_t<decltype(i)>, int32_t, 0>(i, static_cast<int32_t>(3));" \
        in body


def test_a_missing_scratch_tile_is_refused(cg):
    a, d0 = _tile("a", MemorySpace.Vec, DataType.INT32)
    with pytest.raises(NotSupported, match="scratch tile"):
        _lines(cg, [Call("block.xor", (a, a, a), span=SPAN)], [d0])


# ---------------------------------------------------------------- VF loops, tiling, sync_all


def test_vf_loops_count_uint16(cg):
    _, body = _body(cg, load("vf_softmax").KERNELS["vf_softmax_kernel"])
    assert "const uint16_t r_ub = (uint16_t)(valid_rows);" in body
    assert "for (uint16_t r = 0; r < r_ub; ++r) {" in body
    assert not any(x.startswith("for (int64_t") and "j" in x.split("=")[0] for x in
                   body[body.index("__VEC_SCOPE__"):])


def test_sync_all_spelling(cg):
    @pl.jit(arch="a5")
    def k(x: pl.Tensor[[16, 64], pl.DT_FP32]):
        with pl.section_vector():
            pl.system.sync_all(core_type=pl.SyncCoreType.AIV_ONLY)

    _, body = _body(cg, k)
    assert "SYNCALL<SyncCoreType::AIVOnly>();" in body


# ---------------------------------------------------------------- dumps


def test_a_tile_window_dump_is_print_loops(cg):
    """pto-isa's TPRINT takes a whole tile (PyPTO Pro's header makes it a one-argument macro):
    a window is printed by loops, as the real code generator emits them."""
    @pl.jit(arch="a5")
    def k(x: pl.Tensor[[16, 32], pl.DT_FP32], n: pl.Scalar[pl.DT_INT32]):
        with pl.section_vector():
            t = pl.make_tile(pl.TileType([16, 32], pl.DT_FP32), addr=0)
            pl.load(t, x, [0, 0])
            pl.dump_data(t, offsets=[2, n], shapes=[3, 8], flag="w")

    _, body = _body(cg, k)
    at = body.index('cce::printf("=== [flag] %s ===\\n", "w");')
    ty = "std::remove_reference_t<decltype(t)>"
    assert body[at + 1:at + 8] == [
        "pipe_barrier(PIPE_ALL);", "int dump_want_rows = static_cast<int>(3);",
        "if (dump_want_rows < 0) dump_want_rows = 0;",
        "int dump_rows = static_cast<int>(t.GetValidRow()) - static_cast<int>(2);",
        "if (dump_rows > dump_want_rows) dump_rows = dump_want_rows;",
        "if (dump_rows < 0) dump_rows = 0;", "if (dump_rows > 16) dump_rows = 16;"]
    assert 'cce::printf("=== [TPRINT Tile Window] Data Type: %s, Layout: %s, TileType: %s ===\\n"' \
           f", __pypto_dtype_name<{ty}::DType>(), pto::GetLayoutName({ty}::BFractal, " \
           f'{ty}::SFractal), "Vec");' in body
    loop = body.index("for (int dump_r = 0; dump_r < dump_rows; ++dump_r) {")
    assert body[loop + 1:loop + 6] == [
        "for (int dump_c = 0; dump_c < dump_cols; ++dump_c) {",
        f"__pypto_print_val(t.data()[pto::GetTileOffset<{ty}>(dump_r + (2), dump_c + (n))]);",
        "}", 'cce::printf("\\n");', "}"]
    assert not any(x.startswith("TPRINT(") for x in body)


# ---------------------------------------------------------------- our headers reject bad forms


def _compiles(tmp_path: Path, code: str) -> tuple[bool, str]:
    src = tmp_path / "snippet.cpp"
    src.write_text("#include <pto/pto-inst.hpp>\nusing namespace pto;\n"
                   "using V = Tile<TileType::Vec, float, 16, 64, BLayout::RowMajor, -1, -1>;\n"
                   "using VR = Tile<TileType::Vec, float, 1, 64, BLayout::RowMajor, 1, -1>;\n"
                   "using A = Tile<TileType::Acc, float, 16, 64, BLayout::ColMajor, -1, -1, "
                   "SLayout::RowMajor, 1024>;\n"
                   "using C = Tile<TileType::Vec, float, 16, 1, BLayout::ColMajor, -1, 1>;\n"
                   "using ZN = Tile<TileType::Mat, float, 16, 64, BLayout::RowMajor, 16, 64, "
                   "SLayout::ColMajor>;\n"
                   "using G = GlobalTensor<float, pto::Shape<1, 1, 1, -1, -1>, "
                   "pto::Stride<-1, -1, -1, -1, -1>>;\n"
                   "using GD = GlobalTensor<float, pto::Shape<1, 1, 1, -1, -1>, "
                   "pto::Stride<-1, -1, -1, -1, -1>, pto::Layout::DN>;\n"
                   f"void f(float* p) {{\n{code}\n}}\n")
    done = subprocess.run([shutil.which("g++") or "g++", "-std=c++17", "-fsyntax-only",
                           f"-I{INCLUDE}", str(src)], capture_output=True, text=True)
    return done.returncode == 0, done.stderr


#: (a form bisheng refuses, the form pto-isa declares)
REJECTED = [
    ("G g(p); g.SetShape<DIM_3, DIM_4>(1, 2);",
     f"G g(p); g.SetShape<{DIMS}>(1, 2);"),
    ("G g(p); VR t(64); t.SetValidShape(1, 32);",
     "G g(p); VR t(64); t.SetValidCol(32);"),
    ("VR t(1, 64);", "VR t(64);"),
    ("V v(16, 64); A a(16, 64); TMOV<AccToVecMode::SingleModeVec0, ReluPreMode::NoRelu>(v, a);",
     "V v(16, 64); A a(16, 64); TMOV<V, A, AccToVecMode::SingleModeVec0, ReluPreMode::NoRelu>"
     "(v, a);"),
    ("V a(16, 64), b(16, 64); TADDRELU(a, a, b);", "V a(16, 64), b(16, 64); TADD(a, a, b);"),
    ("V a(16, 64), b(16, 64); TROWMAX(a, b);", "V a(16, 64), b(16, 64); TROWMAX(a, b, b);"),
    ("V a(16, 64), b(16, 64); TCOLMAX(a, b, b);", "V a(16, 64), b(16, 64); TCOLMAX(a, b);"),
    ("V a(16, 64); TCVT(a, a);", "V a(16, 64); TCVT(a, a, RoundMode::CAST_RINT);"),
    ("using Bad = Tile<TileType::Vec, float, 16, 3>; Bad b;",
     "using Ok = Tile<TileType::Vec, float, 16, 8>; Ok o;"),
    ("G g(p); int64_t* q = nullptr; TASSIGN(g, q);", "G g(p); TASSIGN(g, p + 64);"),
    # the a5 DMA's layout pairs: a transposed (DN) window into a ZN L1 tile, a column-major
    # one-column tile through a DN window
    ("G g(p); ZN z; TLOAD(z, g);", "GD g(p); ZN z; TLOAD(z, g);"),
    ("GD g(p); V v(16, 64); TLOAD(v, g);", "G g(p); V v(16, 64); TLOAD(v, g);"),
    ("G g(p); C c(16); TLOAD(c, g);", "GD g(p); C c(16); TLOAD(c, g);"),
    ("GD g(p); A a(16, 64); TSTORE(g, a);", "G g(p); A a(16, 64); TSTORE(g, a);"),
]


@pytest.mark.parametrize("bad,good", REJECTED, ids=[b.split(";")[-2].strip()[:40]
                                                    for b, _ in REJECTED])
def test_our_headers_reject_what_pto_isa_rejects(tmp_path, bad, good):
    if shutil.which("g++") is None:
        pytest.skip("g++ is not installed")
    ok, err = _compiles(tmp_path, bad)
    assert not ok, f"accepted a form pto-isa rejects: {bad}"
    ok, err = _compiles(tmp_path, good)
    assert ok, err[:3000]
