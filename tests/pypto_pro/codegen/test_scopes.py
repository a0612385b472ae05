"""Names and declaration places: Vars are declared where they are bound when that gives every
use the right binding, else hoisted to the function top (tiles as pointers, a hoisted
make_tile's storage in the prologue); loop yields that read each other's targets go through
temporaries; C++ keywords and surface names are never used as variable names."""
from __future__ import annotations

import re
from dataclasses import replace

import pypto_pro.language as pl
from pypto_pro.codegen import generate
from pypto_pro.ir.dtype import DataType
from pypto_pro.ir.nodes import (
    AssignStmt,
    BinaryExpr,
    BinOp,
    Call,
    ConstInt,
    EvalStmt,
    ForStmt,
    Function,
    IfStmt,
    MakeTuple,
    Program,
    SectionStmt,
    Var,
    YieldStmt,
    seq,
)
from pypto_pro.ir.span import Span
from pypto_pro.ir.types import (
    BOOL,
    INDEX,
    MemorySpace,
    SectionKind,
    TensorType,
    TileType,
    TupleType,
)

T = pl.TileType([16, 64], pl.DT_FP32)
SPAN = Span("scopes.py", 2, 1)


def _pick(g, h, c):
    if c > 0:
        return g.next()
    return h.next()


@pl.jit(arch="a5")
def helper_kernel(x: pl.Tensor[[16, 64], pl.DT_FP32], n: pl.DT_INT32):
    with pl.section_vector():
        g = pl.make_tile_group(type=T, addrs=0, mutex_ids=[0, 1])
        h = pl.make_tile_group(type=T, addrs=0x8000, mutex_ids=[2, 3])
        t = _pick(g, h, n)  # early return inside the inlined helper: a tile bound in branches
        pl.load(t, x, [0, 0])
        pl.store(x, t, [0, 0])


def test_tile_bound_inside_branches_is_hoisted(gen, cg, cxx_check):
    art = gen(helper_kernel)
    body = [cg.code(x) for x in cg.impl_body(art.kernel_cpp, "vector")]
    decl = next(x for x in body if re.fullmatch(r"Vec_fp32_16x64_t\* \w+ = nullptr;", x))
    ptr = decl.split("*")[1].split("=")[0].strip()
    assert body.index(decl) < body.index("if (n > 0) {")
    assert any(re.fullmatch(rf"{ptr} = &[\w\[\]]+;", x) for x in body)
    assert f"TLOAD((*{ptr}), x_gt);" in body
    cxx_check(art)


@pl.jit(arch="a5")
def group_in_a_section(x: pl.Tensor[[16, 64], pl.DT_FP32], n: pl.DT_INT32):
    with pl.section_vector():
        g = pl.make_tile_group(type=T, addrs=0, mutex_ids=[0, 1])
        pl.load(g.next(), x, [0, 0])
    for _ in pl.range(n):
        with pl.section_vector():
            pl.add(g.current(), g.current(), 1.0)
    with pl.section_vector():
        pl.store(x, g.current(), [0, 0])


def test_group_declared_in_a_section_block_is_in_scope_in_later_ones(gen, cg, cxx_check):
    """Section blocks are emitted without braces: one declaration, in place, no hoisting."""
    art = gen(group_in_a_section)
    body = [cg.code(x) for x in cg.impl_body(art.kernel_cpp, "vector")]
    decls = [x for x in body if x.startswith("Vec_fp32_16x64_t g[2]")]
    loop = next(x for x in body if x.startswith("for ("))
    assert len(decls) == 1 and body.index(decls[0]) < body.index(loop)
    assert not any(x.startswith("Vec_fp32_16x64_t*") for x in body)  # nothing hoisted
    assert "TADDS(g[0], g[0], 1.0f);" in body and "TSTORE(x_gt, g[0]);" in body
    cxx_check(art)


@pl.jit(arch="a5")
def view_of_a_view(x: pl.Tensor[[8, 16], pl.DT_FP32]):
    with pl.section_vector():
        t = pl.make_tile(T, addr=0)
        pl.expands(t, 1.0)
        pl.store(x, pl.reinterpret(t[8:, 0:], shape=[8, 16]), [0, 0])


def test_a_view_of_a_view_gets_its_own_object(gen, cg, cxx_check):
    art = gen(view_of_a_view)
    body = [cg.code(x) for x in cg.impl_body(art.kernel_cpp, "vector")]
    inner = next(x for x in body if x.startswith("Vec_fp32_16x64_t view("))  # t[8:, 0:]
    assert body[body.index(inner) + 1] == \
        "TASSIGN(view, reinterpret_cast<uint64_t>(t.data()) + ((8) * 64 + (0)) * 4);"
    assert body[body.index(inner) + 2].startswith("view.SetValidShape(")
    assert "TASSIGN(view_1, reinterpret_cast<uint64_t>(view.data()));" in body
    cxx_check(art)


def _make_tile(var: Var, addr: int) -> AssignStmt:
    t = replace(var.type, addr=addr)
    shape = MakeTuple((ConstInt(16), ConstInt(64)), TupleType((INDEX, INDEX)))
    return AssignStmt(var, Call("block.make_tile", (shape,), (), t, SPAN), SPAN)


def test_make_tile_in_branches_gets_prologue_storage(cg, cxx_check):
    """`t` bound to a different make_tile in each branch and used after the if."""
    tile_t = TileType((16, 64), DataType.FP32, MemorySpace.Vec)
    t, c = Var("t", tile_t), Var("c", BOOL)
    x = Var("x", TensorType((ConstInt(16), ConstInt(64)), DataType.FP32))
    body = seq([SectionStmt(SectionKind.Vector, seq([
        IfStmt(c, seq([_make_tile(t, 0)], SPAN), seq([_make_tile(t, 0x1000)], SPAN), span=SPAN),
        EvalStmt(Call("block.load", (t, x, MakeTuple((ConstInt(0), ConstInt(0)), TupleType(
            (INDEX, INDEX))))), SPAN),
    ], SPAN), span=SPAN)], SPAN)
    program = Program("rb", (Function("rb", (x, c), body, span=SPAN),), "vector", SPAN)
    art = generate(cg.fake_compiled({"vector": program}))
    body = [cg.code(x) for x in cg.impl_body(art.kernel_cpp, "vector")]
    assert "Vec_fp32_16x64_t t_storage(16, 64);" in body
    assert "Vec_fp32_16x64_t t_storage_1(16, 64);" in body
    assert "TASSIGN(t_storage, 0x0);" in body and "TASSIGN(t_storage_1, 0x1000);" in body
    assert "Vec_fp32_16x64_t* t = nullptr;" in body
    assert body.index("Vec_fp32_16x64_t* t = nullptr;") < body.index("if (c) {")
    assert "t_storage.SetValidShape(16, 64);" in body and "t = &t_storage;" in body
    assert "t = &t_storage_1;" in body and "TLOAD((*t), x_gt);" in body
    cxx_check(art)


def _loop_program(body_stmts, iter_args, inits, rvs, params=()):
    i = Var("i", INDEX)
    loop = ForStmt(i, ConstInt(0), ConstInt(4), ConstInt(1), seq(body_stmts, SPAN),
                   tuple(iter_args), tuple(inits), tuple(rvs), span=SPAN)
    fn = Function("swap", tuple(params), seq([SectionStmt(SectionKind.Vector, seq(
        [loop], SPAN), span=SPAN)], SPAN), span=SPAN)
    return Program("swap", (fn,), "vector", SPAN)


def test_parallel_yield_uses_temporaries(cg):
    a, b, ra, rb = (Var(n, INDEX) for n in ("a", "b", "ra", "rb"))
    program = _loop_program([YieldStmt((b, a), SPAN)], [a, b], [ConstInt(1), ConstInt(2)],
                            [ra, rb])
    art = generate(cg.fake_compiled({"vector": program}))
    body = [cg.code(x) for x in cg.impl_body(art.kernel_cpp, "vector")]
    start = body.index("for (int64_t i = 0; i < 4; ++i) {")
    assert body[start + 1:start + 6] == ["int64_t a_next = b;", "int64_t b_next = a;",
                                         "a = a_next;", "b = b_next;", "}"]
    assert body[start + 6:] == ["int64_t ra = a;", "int64_t rb = b;"]


def test_non_ssa_scalar_is_hoisted(cg):
    """A scalar assigned in a branch and read after it (IR before convert_to_ssa)."""
    x, c = Var("x", INDEX), Var("c", BOOL)
    out = Var("out", TensorType((ConstInt(4),), DataType.INT64))
    body = seq([SectionStmt(SectionKind.Vector, seq([
        IfStmt(c, seq([AssignStmt(x, ConstInt(1), SPAN)], SPAN),
               seq([AssignStmt(x, ConstInt(2), SPAN)], SPAN), span=SPAN),
        EvalStmt(Call("block.setval", (out, ConstInt(0), BinaryExpr(
            BinOp.Add, x, ConstInt(1), INDEX))), SPAN),
    ], SPAN), span=SPAN)], SPAN)
    program = Program("h", (Function("h", (out, c), body, span=SPAN),), "vector", SPAN)
    art = generate(cg.fake_compiled({"vector": program}))
    lines = [cg.code(x) for x in cg.impl_body(art.kernel_cpp, "vector")]
    assert lines.index("int64_t x = 0;") < lines.index("if (c) {")
    assert "x = 1;" in lines and "x = 2;" in lines and "PYPTO_GM_ELEM(out_ptr, 0) = x + 1;" in lines


def test_reserved_names_are_renamed(cg):
    v = [Var(n, INDEX) for n in ("int", "TADD", "get_buf", "x_ptr")]
    x = Var("x", TensorType((ConstInt(4),), DataType.INT64))
    stmts = [AssignStmt(var, ConstInt(k), SPAN) for k, var in enumerate(v)]
    stmts.append(EvalStmt(Call("block.setval", (x, ConstInt(0), v[3])), SPAN))
    body = seq([SectionStmt(SectionKind.Vector, seq(stmts, SPAN), span=SPAN)], SPAN)
    program = Program("r", (Function("r", (x,), body, span=SPAN),), "vector", SPAN)
    lines = [cg.code(x) for x in cg.impl_body(generate(cg.fake_compiled(
        {"vector": program})).kernel_cpp, "vector")]
    assert "int64_t int_1 = 0;" in lines and "int64_t TADD_1 = 1;" in lines
    assert "int64_t get_buf_1 = 2;" in lines
    assert "int64_t x_ptr_1 = 3;" in lines and "PYPTO_GM_ELEM(x_ptr, 0) = x_ptr_1;" in lines
