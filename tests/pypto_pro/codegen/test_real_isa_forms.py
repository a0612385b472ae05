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
from pypto_pro.ir.attrs import AccToVecMode, ReluPreMode
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


def test_transposed_access_sets_its_strides(cg):
    _, body = _body(cg, load("flash_attention_preload").KERNELS["flash_attention_preload_kernel"],
                    "cube")
    loads = [i for i, x in enumerate(body) if x.startswith("q_gt.SetShape")]
    assert loads and body[loads[0] + 1] == f"q_gt.SetStride<{DIMS}>(q_stride[1], q_stride[0]);"


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
             Call("block.add_relu_cast", (h, a, b), span=SPAN),
             Call("block.mul_cast", (h, a, b), span=SPAN),
             Call("block.row_reduce", (c, a, b), (("op", "MAX"),), span=SPAN),
             Call("block.col_reduce", (c, a, b), (("op", "SUM"),), span=SPAN),
             Call("block.col_max", (c, a, b), span=SPAN),
             Call("block.row_expand_binop", (c, a, b), (("op", "MUL"),), span=SPAN),
             Call("block.gathermask", (c, a), (("pattern_mode", 3),), span=SPAN),
             Call("block.transpose", (c, a), span=SPAN)]
    body = _lines(cg, calls, [d0, d1, d2, d3])
    expected = ["TADD(c, a, b);", "TRELU(c, c);", "TADD(a, a, b);", "TRELU(a, a);",
                "TCVT(h, a, RoundMode::CAST_RINT);", "TMUL(a, a, b);",
                "TCVT(h, a, RoundMode::CAST_RINT);", "TROWMAX(c, a, b);",
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


# ---------------------------------------------------------------- our headers reject bad forms


def _compiles(tmp_path: Path, code: str) -> tuple[bool, str]:
    src = tmp_path / "snippet.cpp"
    src.write_text("#include <pto/pto-inst.hpp>\nusing namespace pto;\n"
                   "using V = Tile<TileType::Vec, float, 16, 64, BLayout::RowMajor, -1, -1>;\n"
                   "using VR = Tile<TileType::Vec, float, 1, 64, BLayout::RowMajor, 1, -1>;\n"
                   "using A = Tile<TileType::Acc, float, 16, 64, BLayout::ColMajor, -1, -1, "
                   "SLayout::RowMajor, 1024>;\n"
                   "using G = GlobalTensor<float, pto::Shape<1, 1, 1, -1, -1>, "
                   "pto::Stride<-1, -1, -1, -1, -1>>;\n"
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
