"""Reg API (VF) sections and SIMT functions: `__VEC_SCOPE__` with hoisted UB pointers and
register declarations, one intrinsic per `vf.*` op from the data table, counting loops in
`uint16_t`; SIMT entries with their tile / tensor / scalar parameters and the thread context."""
from __future__ import annotations

import re

import pypto_pro.language as pl
from pypto_pro.codegen.vf import VF_INTRINSICS
from pypto_pro.language import vf

ROW = pl.TileType([1, 256], pl.DT_FP32)
HALF = pl.TileType([1, 256], pl.DT_FP16)


@pl.vector_function
def softmax_row(dst, dst16, src, n):
    full = vf.create_mask(pl.MaskPattern.ALL, dtype=pl.DT_FP32)
    mx = vf.full(-3e38, full, dtype=pl.DT_FP32)
    for i in pl.range(4):
        r = vf.load_align(src, i * 64)
        mx = vf.max(mx, r, full)
    m = vf.reduce_max(mx, full)
    for i in pl.range(n):
        r = vf.load_align(src, i * 64)
        e = vf.exp_sub(r, m, full)
        vf.store_align(dst, e, full)
        h = vf.astype(e, full, dtype=pl.DT_FP16)
        vf.store_align(dst16, h, full)
    vf.mem_bar(pl.MemBarMode.VST_VLD)


@pl.jit(arch="a5")
def vf_kernel(x: pl.Tensor[[1, 256], pl.DT_FP32], n: pl.DT_INT32):
    with pl.section_vector():
        a = pl.make_tile(ROW, addr=0)
        b = pl.make_tile(ROW, addr=0x400)
        c = pl.make_tile(HALF, addr=0x800)
        pl.load(a, x, [0, 0])
        softmax_row(b, c, a, n)
        pl.store(x, b, [0, 0])


def _scope(cpp: str) -> list[str]:
    lines = cpp.splitlines()
    start = next(i for i, x in enumerate(lines) if x.strip().startswith("__VEC_SCOPE__"))
    end = next(i for i in range(start, len(lines)) if lines[i] == "    }")
    return [x.split("  // ")[0].strip() for x in lines[start - 3:end + 1]]


def test_vf_section_shape(gen, cxx_check):
    art = gen(vf_kernel)
    scope = _scope(art.kernel_cpp)
    # UB pointers in order of first use: src (a), dst (b), dst16 (c)
    assert scope[:4] == [
        "__ubuf__ float* a_ub = reinterpret_cast<__ubuf__ float*>(a.data());",
        "__ubuf__ float* b_ub = reinterpret_cast<__ubuf__ float*>(b.data());",
        "__ubuf__ half* c_ub = reinterpret_cast<__ubuf__ half*>(c.data());",
        "__VEC_SCOPE__",
    ]
    decls = scope[scope.index("{") + 1:]
    assert decls[:2] == ["MaskReg full;", "RegTensor<float> mx;"]
    assert "RegTensor<half> h;" in decls
    body = "\n".join(scope)
    assert "full = pset_b32(PAT_ALL);" in body
    assert "vdup(mx, -3e+38f, full, MODE_ZEROING);" in body
    assert "for (uint16_t i = 0; i < 4; ++i) {" in body  # constant counting loop: uint16_t
    assert "vlds(r, a_ub, i * 64, NORM);" in body
    assert "vmax(mx, mx, r, full, MODE_ZEROING);" in body
    assert "vcmax(m, mx, full, false, MODE_ZEROING);" in body
    assert "vexpdif(e, r, m, full, ZERO);" in body
    assert "vsts(e, b_ub, 0, NORM_B32, full);" in body
    assert "vcvt(h, e, full, ZERO, CAST_RINT, OFF);" in body
    assert "vsts(h, c_ub, 0, NORM_B16, full);" in body
    assert "mem_bar(VST_VLD);" in body
    # a run-time bound inside VF code: a const uint16_t bound and a uint16_t counter (bisheng's
    # -Wcce-compat rule, as the real code generator spells it)
    assert re.search(r"const uint16_t (i_\d+_ub) = \(uint16_t\)\(n\);\n"
                     r"for \(uint16_t i_\d+ = 0; i_\d+ < \1; \+\+i_\d+\)", body)
    cxx_check(art)


def test_vf_table_is_data():
    for name, spec in VF_INTRINSICS.items():
        assert spec.result in ("arg", "ret", "none"), name
        for arg in spec.args:
            pos, _, kw = arg.partition("|")
            assert pos == "" or pos.isdigit(), (name, arg)
            assert pos or kw, (name, arg)


def test_tile_plus_offset_operand(cg):
    """`vf.load_align(tile + k, ...)`: an offset UB pointer (spec §2.13 element offsets)."""
    from pypto_pro.codegen import generate
    from pypto_pro.ir.dtype import DataType
    from pypto_pro.ir.nodes import (
        AssignStmt, BinaryExpr, BinOp, Call, ConstInt, EvalStmt, Function, MakeTuple, Program,
        SectionStmt, Var, seq,
    )
    from pypto_pro.ir.span import Span
    from pypto_pro.ir.types import (
        INDEX, MaskType, MemorySpace, RegType, SectionKind, TileType, TupleType,
    )

    span = Span("vf.py", 1, 1)
    t = TileType((1, 128), DataType.FP32, MemorySpace.Vec, addr=0)
    a = Var("a", t)
    make = AssignStmt(a, Call("block.make_tile", (MakeTuple((ConstInt(1), ConstInt(128)),
                                                             TupleType((INDEX, INDEX))),),
                              (), t, span), span)
    r, m = Var("r", RegType(DataType.FP32)), Var("m", MaskType())
    vf_body = seq([
        AssignStmt(m, Call("vf.create_mask", (), (("dtype", DataType.FP32),), MaskType(),
                           span), span),
        AssignStmt(r, Call("vf.load_align", (BinaryExpr(BinOp.Add, a, ConstInt(64), t),
                                             ConstInt(0)), (), RegType(DataType.FP32), span),
                   span),
        EvalStmt(Call("vf.store_align", (a, r, m), span=span), span),
    ], span)
    body = seq([make, SectionStmt(SectionKind.Vector, seq([SectionStmt(
        SectionKind.VF, vf_body, span=span)], span), span=span)], span)
    program = Program("p", (Function("p", (), body, span=span),), "vector", span)
    art = generate(cg.fake_compiled({"vector": program}))
    assert "vlds(r, a_ub + 64, 0, NORM);" in art.kernel_cpp
    assert "m = pset_b32(PAT_ALL);" in art.kernel_cpp


@pl.simt.function
def scale(v, k):
    return v * k


@pl.simt.function(max_threads=128)
def add_rows(t, g, k):
    tid = pl.simt.thread_idx().x
    lin = pl.simt.linear_thread_idx()
    if tid < t.valid_shape[1]:
        t[0, tid] = t[0, tid] + g[0, lin] * k


@pl.jit(arch="a5")
def simt_kernel(x: pl.Tensor[[1, 128], pl.DT_FP32], k: pl.DT_FP32):
    with pl.section_vector():
        a = pl.make_tile(pl.TileType([1, 128], pl.DT_FP32), addr=0)
        pl.load(a, x, [0, 0])
        pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
        pl.simt.launch(add_rows, threads=(64, 2), args=(a, x, k))


def test_simt_function_and_launch(gen, cxx_check):
    art = gen(simt_kernel)
    cpp = art.kernel_cpp
    assert "__simt_vf__ __launch_bounds__(128) inline void add_rows(__ubuf__ float* t, " \
           "uint32_t t_rows, uint32_t t_cols, __gm__ float* g, float k)" in cpp
    assert "int64_t tid = static_cast<int64_t>(threadIdx.x);" in cpp
    assert "static_cast<int64_t>((threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + " \
           "threadIdx.x)" in cpp
    assert "if (tid < static_cast<int64_t>(t_cols)) {" in cpp
    assert "t[tid] = t[tid] + g[lin] * k;" in cpp
    assert "cce::async_invoke<add_rows>(cce::dim3{64, 2, 1}, reinterpret_cast<__ubuf__ float*>" \
           "(a.data()), static_cast<uint32_t>(a.GetValidRow()), " \
           "static_cast<uint32_t>(a.GetValidCol()), x_ptr, k);" in cpp
    cxx_check(art)


@pl.simt.function
def scaled_or_zero(v, k):
    if v < 0.0:
        return 0.0
    return scale(v, k)


@pl.simt.function(max_threads=128)
def scale_rows(t, k):
    tid = pl.simt.thread_idx().x
    t[0, tid] = scaled_or_zero(t[0, tid], k) + scale(k, 2.0)


@pl.jit(arch="a5")
def simt_callee_kernel(x: pl.Tensor[[1, 128], pl.DT_FP32], k: pl.DT_FP32):
    with pl.section_vector():
        a = pl.make_tile(pl.TileType([1, 128], pl.DT_FP32), addr=0)
        pl.load(a, x, [0, 0])
        pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
        pl.simt.launch(scale_rows, threads=128, args=(a, k))


def test_simt_callees_are_functions_before_their_callers(gen, cxx_check):
    """Spec §4.1: `__simt_callee__` functions (one per argument types) precede the functions
    that call them; a call is a plain C++ call, a value return `return v;`."""
    cpp = gen(simt_callee_kernel).kernel_cpp
    order = [cpp.index(s) for s in (
        "__simt_callee__ inline float scale(float v, float k)",
        "__simt_callee__ inline float scaled_or_zero(float v, float k)",
        "__simt_vf__ __launch_bounds__(128) inline void scale_rows(")]
    assert order == sorted(order)
    assert "return v * k;" in cpp and "return 0.0f;" in cpp
    assert "float val = scale(v, k);" in cpp and "return val;" in cpp
    assert "float val_1 = scaled_or_zero(t[tid], k);" in cpp
    assert "scale(k, 2.0f)" in cpp  # (FP32, FP32) again: the same instance
    cxx_check(gen(simt_callee_kernel))
