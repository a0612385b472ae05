"""Reading printed IR back (`pl.loads`, `pl.parse`, spec §2.1 / §3.3) — tinygrad's
test_pyrender idea: for every example kernel and every pass record, print → read → print is a
fixed point and the re-read IR equals the original (modulo Var identity and spans); re-read final
programs run identically on the simulator and generate the same C++. Hand-built IR covers the
node kinds the examples do not use, decorated Python sources cover `@pl.function` /
`@pl.program`, and malformed text fails with a `ParserSyntaxError` at its line."""
from __future__ import annotations

import dataclasses
import functools
import re
from typing import Any

import pytest
import torch

import pypto_pro.language as pl
from pypto_pro.codegen import generate
from pypto_pro.compiler import compile_kernel
from pypto_pro.errors import InvalidType, NotSupported, ParserSyntaxError
from pypto_pro.examples import ALL_EXAMPLES, load
from pypto_pro.ir import attrs
from pypto_pro.ir.dtype import DataType
from pypto_pro.ir.nodes import (
    AssignStmt, BinaryExpr, BinOp, BreakStmt, Call, Cast, ConstBool, ConstFloat, ConstInt,
    ConstStr, ContinueStmt, EnumConst, EvalStmt, ForStmt, Function, FunctionType, GetField,
    GetItem, IfStmt, MakeTuple, Node, Program, ReturnStmt, SectionStmt, Select, SeqStmts,
    SetField, Stmt, UnaryExpr, UnOp, Var, WhileStmt, YieldStmt,
)
from pypto_pro.ir.printer import python_print
from pypto_pro.ir.types import (
    BOOL, FP32, INDEX, ArrayType, CoreType, FunctionRefType, MaskType, MemorySpace, PipeType,
    PtrType, RegType, ScalarType, SectionKind, StructType, TensorType, TileGroupType, TileLayout,
    TilePad, TileType, TupleType,
)
from pypto_pro.runtime.arch import resolve_arch
from pypto_pro.runtime.backends import LaunchRequest
from pypto_pro.runtime.backends.sim import SimBackend
from pypto_pro.runtime.binding import bind
from pypto_pro.runtime.kernel_def import Specialization

SPEC = Specialization(arch="a5")
KERNELS = [(name, kname) for name in ALL_EXAMPLES for kname in load(name).KERNELS]
#: examples run on the simulator, with small inputs
SIM_CASES = [("hello_world", "hello_world_kernel", {}),
             ("vector_add", "add_kernel", dict(m=256, n=384)),
             ("matmul", "matmul_kernel", {}),
             ("matmul", "matmul_reuse_a_kernel", dict(out_dtype=torch.float16)),
             ("softmax", "softmax_kernel", dict(rows=40, cols=100)),
             ("layernorm", "layernorm_kernel", {}),
             ("matmul_softmax", "matmul_softmax_kernel", {}),
             ("flash_attention", "flash_attention_kernel", {}),
             ("simt_add", "simt_add_kernel", {}),
             ("vf_softmax", "vf_softmax_kernel", dict(rows=16, cols=100))]


# ---------------------------------------------------------------- helpers


def _flat(s: Stmt) -> list[Stmt]:
    return [x for y in s.stmts for x in _flat(y)] if isinstance(s, SeqStmts) else [s]


def ir_diff(a: Any, b: Any, path: str = "", vars_: dict | None = None) -> str | None:
    """Where `a` and `b` differ, ignoring spans and which Var objects (a bijection by name and
    type); None when they are the same IR."""
    m = {} if vars_ is None else vars_
    if isinstance(a, Var) and isinstance(b, Var):
        if a.uid in m or b.uid in m.values():
            return None if m.get(a.uid) == b.uid else f"{path}: Var {a.name} ≠ {b.name}"
        m[a.uid] = b.uid
        return f"{path}: name {a.name} ≠ {b.name}" if a.name != b.name else \
            ir_diff(a.type, b.type, f"{path}<{a.name}>", m)
    if isinstance(a, Stmt) and isinstance(b, Stmt) and SeqStmts in (type(a), type(b)):
        a, b = tuple(_flat(a)), tuple(_flat(b))  # a lone body statement prints like a list
    if type(a) is not type(b):
        return f"{path}: {type(a).__name__} ≠ {type(b).__name__}"
    if dataclasses.is_dataclass(a):
        fields = [f.name for f in dataclasses.fields(a) if f.name not in ("span", "uid")]
        return next((d for f in fields if (d := ir_diff(getattr(a, f), getattr(b, f),
                                                        f"{path}.{f}", m))), None)
    if isinstance(a, (tuple, list)):
        if len(a) != len(b):
            return f"{path}: {len(a)} items ≠ {len(b)}"
        return next((d for i, (x, y) in enumerate(zip(a, b))
                     if (d := ir_diff(x, y, f"{path}[{i}]", m))), None)
    return None if a == b else f"{path}: {a!r} ≠ {b!r}"


def round_trip(node: Node) -> Node:
    """Print `node`, read it back, and check the re-read IR prints the same and equals it."""
    text = python_print(node)
    back = pl.loads(text)
    assert python_print(back) == text
    assert ir_diff(node, back) is None, ir_diff(node, back)
    return back


@functools.lru_cache(maxsize=None)
def _compiled(example: str, kernel: str):
    return compile_kernel(load(example).KERNELS[kernel].kernel_def, SPEC)


def _reread(compiled):
    """A copy of `compiled` whose programs are read back from their final printed IR."""
    programs = {t: pl.loads(recs[-1].ir_text) for t, recs in compiled.passes.items()}
    return dataclasses.replace(compiled, programs=programs)


# ---------------------------------------------------------------- examples and pass records


@pytest.mark.parametrize("example,kernel", KERNELS, ids=[k for _, k in KERNELS])
def test_every_pass_record_reads_back_to_the_same_ir(example, kernel):
    compiled = _compiled(example, kernel)
    for target, records in compiled.passes.items():
        assert python_print(compiled.programs[target]) == records[-1].ir_text
        for record in records:
            back = pl.loads(record.ir_text)
            assert isinstance(back, Program) and back.target == target
            assert python_print(back) == record.ir_text, f"{target}/{record.name}"
            diff = ir_diff(record.program, back)
            assert diff is None, f"{target}/{record.name}: {diff}"


@pytest.mark.parametrize("example,kernel,shape", SIM_CASES, ids=[c[1] for c in SIM_CASES])
def test_reread_programs_run_identically_on_the_simulator(example, kernel, shape):
    module = load(example)
    kdef = module.KERNELS[kernel].kernel_def
    inputs = module.make_inputs(**shape)
    bound = bind(kdef, inputs, {}, Specialization(arch=resolve_arch(kdef.options.arch)))
    compiled = compile_kernel(kdef, bound.spec)
    runs = []
    for ck in (compiled, _reread(compiled)):
        args = tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in bound.args)
        result = SimBackend().launch(LaunchRequest(ck, module.block_dim(*inputs), None, args,
                                                   bound.dyn_dims, bound.tiling_bytes))
        runs.append((args, result))
    (args_a, a), (args_b, b) = runs
    for x, y in zip(args_a, args_b):
        if isinstance(x, torch.Tensor):
            assert torch.equal(x, y)
    assert a.trace.duration_cycles == b.trace.duration_cycles
    assert len(a.trace.events) == len(b.trace.events)
    assert a.printed == b.printed


def _cpp(text: str) -> str:
    """kernel.cpp without its source-location comments (they name the file read from)."""
    return re.sub(r"  // \S+:\d+$", "", text.split("\n", 2)[2], flags=re.M)


@pytest.mark.parametrize("example,kernel", KERNELS, ids=[k for _, k in KERNELS])
def test_reread_programs_generate_the_same_cpp(example, kernel):
    compiled = _compiled(example, kernel)
    a, b = generate(compiled), generate(_reread(compiled))
    assert _cpp(a.kernel_cpp) == _cpp(b.kernel_cpp)
    assert a.host_args == b.host_args
    assert {k: _header(h) for k, h in a.tiling_headers.items()} == {
        k: _header(h) for k, h in b.tiling_headers.items()}


def _header(text: str) -> str:
    """A TilingData header without its `// TilingData ... (file:line)` origin comment."""
    return re.sub(r"^// TilingData .*$", "", text, flags=re.M)


# ---------------------------------------------------------------- DSL kernels with control flow

VEC = pl.TileType([16, 16], pl.DT_FP32)


@pl.kernel(arch="a5")
def k_control(x: pl.Tensor[[64], pl.DT_INT32], n: pl.DT_INT32, f: pl.DT_FP32):
    with pl.section_vector():
        a = pl.make_tile(VEC, addr=0x0)
        b = pl.make_tile(VEC, addr=0x400)
        i = 0
        s = 0
        while i < n:
            i = i + 1
            if i == 3:
                continue
            if i > 5:
                break
            s = s + i if i % 2 == 0 else s - 1
        j = 0
        while pl.getval(x, j) != 0:
            j += 1
        for k in pl.range(10, 0, -2):
            if k > n:
                s = s * 2
            else:
                s = max(s, k) // 3
        t = a if n > 0 else b
        pl.add(t, t, t)
        g = f * 2.5 if -n < 4 and not s == 2 else -f
        pl.printf("%d %d %f\n", s, j, g)


@pl.kernel(arch="a5")
def k_aggregates(x: pl.Tensor[[pl.DYNAMIC, 64], pl.DT_FP32], n: pl.DT_INT32):
    with pl.section_vector():
        cfg = pl.struct("Cfg", count=n, scale=1.0)
        cfg.count = cfg.count + 1
        tp = pl.make_tuple(rows=x.shape[0], cols=64)
        arr = pl.struct_array(4, "Ring", head=0, offs=[0, 1])
        arr[1].head = n
        arr[n % 4].offs[1] = n
        pl.printf("%d %d %d %d\n", cfg.count, tp.rows, tp.cols, arr[1].head)


@pl.vector_function
def _vf_double(t):
    full = pl.vf.create_mask(dtype=pl.DT_FP32)
    x = pl.vf.load_align(t, 0)
    for i in pl.range(2):
        x = pl.vf.add(x, x, full)
    pl.vf.store_align(t, x, full)


@pl.kernel(arch="a5")
def k_vf_shadow(x: pl.Tensor[[1, 64], pl.DT_FP32]):
    with pl.section_vector():
        a = pl.make_tile(pl.TileType([1, 64], pl.DT_FP32), addr=0x0)
        pl.load(a, x, [0, 0])
        _vf_double(a)  # its local `x` shadows the parameter inside the section only
        pl.store(x, a, [0, 0])


@pl.vector_function
def _vf_forms(t):
    m = pl.vf.create_mask(dtype=pl.DT_FP32)
    lo, hi = pl.vf.load_align(t, 0)  # a pair
    u = pl.vf.load_unalign_init()
    pl.vf.load_unalign_pre(u, t + 3)
    r = pl.vf.load_unalign(u, t + 3)
    for i in pl.range(2):
        a = pl.vf.create_addr_reg(i, 64, dtype=pl.DT_FP32)
        pl.vf.store_align(t, r, m, a)
    pl.vf.store_align(t, lo, hi, m, dist=pl.StoreDist.INTLV)


@pl.kernel(arch="a5")
def k_vf_forms(x: pl.Tensor[[1, 256], pl.DT_FP32]):
    with pl.section_vector():
        a = pl.make_tile(pl.TileType([1, 256], pl.DT_FP32), addr=0x0)
        pl.load(a, x, [0, 0])
        _vf_forms(a)
        pl.store(x, a, [0, 0])


@pl.kernel(arch="a5")
def k_nested_view(x: pl.Tensor[[16, 16], pl.DT_FP16], y: pl.Tensor[[8, 16], pl.DT_FP16]):
    with pl.section_vector():
        t = pl.make_tile(pl.TileType([16, 16], pl.DT_FP16), addr=0x0)
        pl.load(t, x, [0, 0])
        pl.system.bar_all()
        p = pl.reinterpret(t[8:, 0:], layout=pl.ND)  # a view of the slice's view object
        pl.store(y, p, [0, 0])


DSL_CASES = [(k_control, ["i_3, s_3 = while ir.cond(i_1 < n, iter_args=(i_1, s_1)",
                          "s_7 = if k > n:", "if not (val != 0):", "= a if n > 0 else b"]),
             (k_aggregates, ["cfg: ir.Struct[Cfg, count=ir.INT32, scale=ir.FP32] = ",
                             "arr: ir.Array[ir.Struct[Ring, head=ir.INDEX, "
                             "offs=ir.Array[ir.INDEX, 2]], 4] = ",
                             "arr[1].head = n", "arr[n % 4].offs[1] = n",
                             "cfg.count = ir.cast(cfg.count + 1, ir.INT32)"]),
             (k_vf_shadow, ["    x: ir.Reg[ir.FP32] = ir.call @vf.load_align(a, 0, ",
                            "ir.call @block.store(x, a, [0, 0]"]),
             (k_nested_view, ["= ir.call @block.subview(t, [8, 0], [min(",
                              "ir.call @block.reinterpret(view)"]),
             (k_vf_forms, ["ir.Mask[ir.FP32] =", "ir.Tuple[ir.Reg[ir.FP32], ir.Reg[ir.FP32]] =",
                           "ir.AlignReg =", "ir.AddrReg[ir.FP32] ="])]


@pytest.mark.parametrize("kernel,snippets", DSL_CASES,
                         ids=["control", "aggregates", "vf_shadow", "nested_view", "vf_forms"])
def test_dsl_kernels_with_control_flow_and_aggregates_read_back(kernel, snippets):
    compiled = compile_kernel(kernel, SPEC)  # a @pl.kernel is its KernelDef
    for record in compiled.passes["vector"]:
        back = pl.loads(record.ir_text)
        assert python_print(back) == record.ir_text, record.name
        diff = ir_diff(record.program, back)
        assert diff is None, f"{record.name}: {diff}"
    text = compiled.passes["vector"][-1].ir_text
    assert all(s in text for s in snippets), [s for s in snippets if s not in text]


# ---------------------------------------------------------------- hand-built IR: every node kind

I8, I32, F16 = ScalarType(DataType.INT8), ScalarType(DataType.INT32), ScalarType(DataType.FP16)


def _bin(op: BinOp, a, b, t=INDEX) -> BinaryExpr:
    return BinaryExpr(op, a, b, BOOL if op.is_compare or op.is_logical else t)


def _c(v: int) -> ConstInt:
    return ConstInt(v)


def _zoo_types():
    n, f = Var("n", INDEX), Var("f", FP32)
    x = Var("x", TensorType((_c(64), n), DataType.FP16, TileLayout.DN, strides=(n, _c(1))))
    cfg = Var("cfg", StructType("Cfg", (("count", I32), ("vals", ArrayType(FP32, 4)))))
    tile = TileType((16, 16), DataType.FP16, MemorySpace.Mat, TileLayout.NZ, 1024, (16, None),
                    TilePad.zero, 1)
    gt = TileGroupType(tile, (0x0, 0x2000), ((0,), (1,)), fwd_ids=(2,), bwd_ids=(3,))
    params = (n, f, x, Var("p", PtrType(DataType.FP16)), cfg, Var("cb_ref", FunctionRefType("cb")))
    return params, gt


def _zoo_exprs(n: Var, f: Var, cfg: Var) -> list[tuple[str, Any]]:
    """(name, expression) pairs, each assigned to a fresh Var of its type."""
    not_c = UnaryExpr(UnOp.Not, ConstBool(True), BOOL)
    vals = GetField(cfg, "vals", ArrayType(FP32, 4))
    lt = _bin(BinOp.Lt, _bin(BinOp.Lt, n, _c(1)), ConstBool(False))
    return [
        ("pow", _bin(BinOp.Pow, _bin(BinOp.Pow, n, _c(2)), _c(3))),
        ("pow_neg", _bin(BinOp.Pow, UnaryExpr(UnOp.Neg, n, INDEX), _c(2))),
        ("eq_not", _bin(BinOp.Eq, ConstBool(False), not_c)),
        ("chain", lt),
        ("logic", _bin(BinOp.Or, _bin(BinOp.And, lt, not_c), ConstBool(True))),
        ("bits", _bin(BinOp.BitXor, _bin(BinOp.Shl, n, _c(3)), UnaryExpr(UnOp.BitNot, n, INDEX))),
        ("mixed", _bin(BinOp.Sub, n, _bin(BinOp.Sub, _c(-4), _bin(BinOp.FloorMod, n, _c(7))))),
        ("minmax", _bin(BinOp.Max, _bin(BinOp.Min, n, _c(3)), UnaryExpr(UnOp.Abs, n, INDEX))),
        ("fdiv", _bin(BinOp.FloatDiv, n, _c(2), FP32)),
        ("cast", Cast(_bin(BinOp.Mul, f, ConstFloat(0.5), FP32), F16)),
        ("consts", _bin(BinOp.Add, ConstInt(5, DataType.INT8), ConstInt(1, DataType.INT8), I8)),
        ("half", ConstFloat(0.5, DataType.FP16)),
        ("inf", ConstFloat(float("-inf"))),
        ("sel", Select(_bin(BinOp.Gt, n, _c(0)), f, ConstFloat(-1.5), FP32)),
        ("field", GetField(cfg, "count", I32)),
        ("item", GetItem(vals, n, FP32)),
        ("tup", MakeTuple((n, f), TupleType((INDEX, FP32), ("a", "b")))),
        ("enum", EnumConst(PipeType.MTE2)),
        ("text", ConstStr("a?b[c] ir.call @x(' \"q\"\n ir.Tuple[x, names=[1]]")),
    ]


def _zoo_loops(n: Var, f: Var) -> list[Stmt]:
    i, i1, i2 = Var("i", INDEX), Var("i_1", INDEX), Var("i_2", INDEX)
    k, acc, acc1, acc2, h = (Var("k", INDEX), Var("acc", FP32), Var("acc_1", FP32),
                             Var("acc_2", FP32), Var("h", FP32))
    plain_while = WhileStmt(_bin(BinOp.Lt, i, n), SeqStmts((
        AssignStmt(i, _bin(BinOp.Add, i, _c(1))),
        IfStmt(_bin(BinOp.Eq, i, _c(3)), ContinueStmt()),
        IfStmt(_bin(BinOp.Gt, i, _c(5)), BreakStmt(), SeqStmts(())))))
    ssa_while = WhileStmt(_bin(BinOp.Lt, i1, n),
                          SeqStmts((YieldStmt((_bin(BinOp.Add, i1, _c(1)),)),)),
                          (i1,), (_c(0),), (i2,))
    branch = IfStmt(_bin(BinOp.Gt, k, _c(2)), SeqStmts((YieldStmt((ConstFloat(1.0),)),)),
                    SeqStmts((YieldStmt((acc1,)),)), (h,))
    loop = ForStmt(k, _c(0), n, _c(1), SeqStmts((branch, YieldStmt((h,)))), (acc1,), (f,),
                   (acc2,), (("unroll", 2), ("pipeline", True)))
    return [AssignStmt(i, _c(0)), plain_while, ssa_while, loop, AssignStmt(acc, acc2),
            IfStmt(_bin(BinOp.Lt, n, _c(0)), SeqStmts((ReturnStmt(),)))]


def zoo() -> Program:
    """A program with every node kind, type and printed form the reader handles."""
    params, gt = _zoo_types()
    n, f, x, p, cfg, _ = params
    g, t = Var("g", gt), Var("t", gt.slot_type(0))
    r, m = Var("r", RegType(DataType.FP32)), Var("m", MaskType())
    stmts: list[Stmt] = [
        AssignStmt(g, Call("tile_group.make", (), (("addrs", (0x0, 0x2000)),), gt)),
        AssignStmt(t, Call("tile_group.get", (g, _c(0)), (), t.type)),
        SectionStmt(SectionKind.VF, SeqStmts((
            AssignStmt(m, Call("vf.create_mask", (EnumConst(attrs.MaskPattern.ALL),),
                               (("dtype", DataType.FP32),), MaskType())),
            AssignStmt(r, Call("vf.full", (ConstFloat(-3e38), m), (("dtype", DataType.FP32),),
                               r.type)))), (("function", "row"), ("unroll", 4)))]
    stmts += [AssignStmt(Var(name, e.type), e) for name, e in _zoo_exprs(n, f, cfg)]
    stmts += _zoo_loops(n, f)
    stmts += [
        SetField(cfg, "count", None, _bin(BinOp.Add, GetField(cfg, "count", I32), _c(1))),
        SetField(cfg, "vals", n, f),
        EvalStmt(Call("system.mutex_lock", (), (("pipe", PipeType.MTE2), ("core", CoreType.CUBE),
                                                ("ids", ((0, 1), (2,))), ("scale", 1.5),
                                                ("name", "s"), ("none", None),
                                                ("tile", t.type), ("dt", I32)))),
        EvalStmt(Call("simt.launch", (x, p), (("callee", "vf1"), ("max_threads", 256)))),
        EvalStmt(Call("debug.printf", (ConstStr("%d\n"), Call("block.getval", (t, n), (), F16)),
                      (("loc", False),)))]
    kernel = Function("zoo", params, SeqStmts(tuple(stmts)), FunctionType.OPAQUE,
                      (("dynamic_dims", ()), ("note", "hand built")))
    v = Var("v", INDEX)
    vf1 = Function("vf1", (Var("src", TensorType((_c(64), _c(32)), DataType.FP16)),
                           Var("q", PtrType(DataType.FP16))),
                   SeqStmts(()), FunctionType.SIMT_VF, (("max_threads", 256),))
    vf2 = Function("vf2", (v,), SeqStmts(()), FunctionType.SIMT_VF, (("max_threads", 64),))
    helper = Function("cb", (Var("w", INDEX),), SeqStmts((ReturnStmt(),)),
                      FunctionType.SIMT_CALLEE, return_type=INDEX)
    return Program("zoo", (kernel, vf1, vf2, helper), "vector")


def test_every_node_kind_reads_back_to_the_same_ir():
    prog = zoo()
    back = round_trip(prog)
    text = python_print(prog)
    # implied attrs are not printed but restored: dynamic_dims, a launched function's threads
    assert "@ir.function(attrs={'note': 'hand built'})" in text
    assert "@ir.simt.function(type=ir.FunctionType.SIMT_VF)\ndef vf1(" in text
    assert "@ir.simt.function(type=ir.FunctionType.SIMT_VF, attrs={'max_threads': 64})" in text
    assert back.function("vf1").attrs == (("max_threads", 256),)
    for f in (prog.kernel, prog.function("vf2"), prog.function("cb")):
        assert ir_diff(f, round_trip(f)) is None  # each function on its own as well


def test_printer_spells_what_python_would_otherwise_misread():
    text = python_print(zoo())
    for snippet in ["pow: ir.INDEX = (n ** 2) ** 3", "pow_neg: ir.INDEX = (-n) ** 2",
                    "eq_not: ir.BOOL = False == (not True)", "chain: ir.BOOL = (n < 1) < False",
                    "x: ir.Tensor[[64, n], ir.FP16, ir.DN, ir.TensorView(stride=[n, 1])]",
                    "fwd_ids=[2], bwd_ids=[3]]", "r: ir.Reg[ir.FP32]", "m: ir.Mask",
                    "core=ir.CoreType.CUBE", "cfg: ir.Struct[Cfg, count=ir.INT32, vals=ir.Array[",
                    "ir.call @vf.create_mask(ir.MaskPattern.ALL", "inf: ir.FP32 = -inf",
                    "ir.HardwareInfo(layout=ir.NZ, fractal=1024, pad=zero, compact=1)"]:
        assert snippet in text, snippet


def test_two_vars_with_one_name_print_apart_and_read_back_apart():
    t1, t2, t_1 = Var("t", INDEX), Var("t", INDEX), Var("t_1", INDEX)
    body = SeqStmts((AssignStmt(t1, _c(1)), AssignStmt(t_1, _c(2)), AssignStmt(t2, _c(3)),
                     EvalStmt(Call("debug.printf", (ConstStr("%d %d %d"), t1, t_1, t2)))))
    fn = Function("k", (), body, attrs=(("dynamic_dims", ()),))
    text = python_print(fn)
    assert "t_2: ir.INDEX = 3" in text and "ConstStr" not in text
    assert "'%d %d %d', t, t_1, t_2)" in text
    back = pl.loads(text)
    assert python_print(back) == text
    a, b, c = (s.var for s in back.body.stmts[:3])
    assert len({a.uid, b.uid, c.uid}) == 3 and (a.name, b.name, c.name) == ("t", "t_1", "t_2")


def test_a_vf_local_named_like_a_var_it_reads_prints_apart():
    """A VF section is a scope: its local may reuse an outer name unless the section reads the
    outer Var of that name; then the local prints under another name and reads back apart."""
    n, x = Var("n", FP32), Var("x", FP32)
    inner_n, inner_x = Var("n", FP32), Var("x", FP32)
    vf = SectionStmt(SectionKind.VF, SeqStmts((
        AssignStmt(inner_x, ConstFloat(1.5)),
        AssignStmt(inner_n, BinaryExpr(BinOp.Add, inner_x, n, FP32)),
        EvalStmt(Call("debug.printf", (ConstStr("%f"), inner_n))))))
    body = SeqStmts((vf, EvalStmt(Call("debug.printf", (ConstStr("%f %f"), x, n)))))
    text = python_print(Function("k", (x, n), body, attrs=(("dynamic_dims", ()),)))
    assert "    x: ir.FP32 = 1.5" in text and "n_1: ir.FP32 = x + n" in text
    back = pl.loads(text)
    assert python_print(back) == text
    (section, printf), params = back.body.stmts, back.params
    local_x, local_n = (s.var for s in section.body.stmts[:2])
    assert local_n.name == "n_1" and local_x not in params and local_n not in params
    assert section.body.stmts[1].value.rhs is params[1] and printf.expr.args[1:] == params


def test_a_parser_constant_holding_an_enum_prints_with_the_prefix():
    e = ConstInt(attrs.MaskPattern.ALL)
    assert python_print(e, prefix="ir").strip() == "ir.MaskPattern.ALL"


def test_other_prefixes_and_program_text_only_for_programs():
    prog = _compiled("vector_add", "add_kernel").programs["vector"]
    text = python_print(prog, prefix="pl")
    assert text.startswith("# pl.program: add_kernel") and "pl.call @block.add(" in text
    assert python_print(pl.loads(text), prefix="pl") == text
    fn_text = python_print(prog.kernel)
    assert isinstance(pl.loads(fn_text), Function) and isinstance(pl.parse(fn_text), Function)
    assert isinstance(pl.loads_program(text), Program) and pl.parse_program(text).name == \
        "add_kernel"
    with pytest.raises(InvalidType, match="holds a function"):
        pl.loads_program(fn_text)


def test_what_reads_back_normalised_prints_the_same():
    """Forms the printer spells alike read back as one of them (same text, same value):
    negating a literal is the negative literal, an INT32 / INT64 literal is an INDEX one, a
    constant holding an enum is an EnumConst, and a kernel without attrs gets its (empty)
    `dynamic_dims`."""
    fives = [UnaryExpr(UnOp.Neg, _c(5), INDEX), ConstInt(5, DataType.INT32),
             ConstInt(attrs.MaskPattern.ALL)]
    back = [ConstInt(-5), ConstInt(5), EnumConst(attrs.MaskPattern.ALL)]
    for e, want in zip(fives, back):
        fn = Function("k", (), SeqStmts((EvalStmt(Call("debug.printf", (e,))),)))
        text = python_print(fn)
        again = pl.loads(text)
        assert python_print(again) == text
        assert again.body.stmts[0].expr.args[0] == want
        assert again.attrs == (("dynamic_dims", ()),)


# ---------------------------------------------------------------- decorated Python sources
# (IR text written as Python: results named the PyPTO way, `rv = pl.yield_(...)`)


@pl.function
def ir_add_n(x: pl.Tensor[[32, 32], pl.FP32], n: pl.Scalar[pl.INDEX]):
    """Adds 0 + 1 + ... + (n - 1) to x, in the IR text form."""
    t: pl.Tile[[32, 32], pl.FP32,
               pl.MemRef(pl.MemorySpace.Vec, 0x0, 4096)] = pl.call @block.make_tile(
        [32, 32], dtype=pl.DT_FP32, target_memory=pl.MemorySpace.Vec, memref_addr=0x0,
        memref_size=4096)
    pl.eval(pl.call @block.load(t, x, [0, 0]))
    for i, (acc,) in pl.range(n, init_values=(0,)):
        acc_1: pl.INDEX = acc + i
        total = pl.yield_(acc_1)
    pl.eval(pl.call @block.adds(t, t, pl.cast(total, pl.FP32)))


@pl.program(target="cube", name="acc_prog")
class IrAcc:
    """A kernel and a helper."""

    @pl.function
    def kernel(self, n: pl.INT32):
        with pl.section_cube():
            s: pl.INDEX = 0
            for i, (s_1,) in pl.range(0, n, 1, init_values=(s,)):
                if i > 2:
                    s_2: pl.INDEX = s_1 + i
                    s_3 = pl.yield_(s_2)
                else:
                    s_3 = pl.yield_(s_1)
                s_4 = pl.yield_(s_3)
            pl.eval(pl.call @debug.printf('%d\n', s_4))

    @pl.function(type=pl.FunctionType.IN_CORE)
    def helper(self, v: pl.INDEX) -> pl.INDEX:
        return


def ir_plain(x: pl.Tensor[[8, 8], pl.FP16]):
    with pl.section_vector():
        pl.eval(pl.call @system.bar_v())


IR_ACC = """\
# pl.program: acc_prog  (target: cube)
@pl.function
def kernel(n: pl.INT32):
    with pl.section_cube():
        s: pl.INDEX = 0
        s_4 = for i, (s_1,) in pl.range(0, n, 1, init_values=(s,)):
            s_3 = if i > 2:
                s_2: pl.INDEX = s_1 + i
                pl.yield_(s_2)
            else:
                pl.yield_(s_1)
            pl.yield_(s_3)
        pl.eval(pl.call @debug.printf('%d\\n', s_4))

@pl.function(type=pl.FunctionType.IN_CORE)
def helper(v: pl.INDEX) -> pl.INDEX:
    return
"""


def test_decorated_function_source_reads_into_a_function():
    fn = ir_add_n  # @pl.function read the source when it decorated it
    assert isinstance(fn, Function) and fn.func_type is FunctionType.OPAQUE
    assert pl.parse(fn) is fn and fn.name == "ir_add_n"
    loop = fn.body.stmts[2]
    assert isinstance(loop, ForStmt) and loop.return_vars[0].name == "total"
    assert (loop.start, loop.step) == (ConstInt(0), ConstInt(1))  # pl.range(n)
    assert fn.span.file == __file__ and fn.body.stmts[0].span.line == fn.span.line + 2
    text = python_print(fn)
    assert "total = for i, (acc,) in ir.range(0, n, 1, init_values=(0,)):" in text
    assert "ir.call @block.adds(t, t, ir.cast(total, ir.FP32))" in text
    assert python_print(pl.loads(text)) == text


def test_an_undecorated_function_reads_through_parse_or_the_decorator():
    fn = pl.parse(ir_plain)
    assert isinstance(fn, Function) and fn.func_type is FunctionType.OPAQUE
    assert "with ir.section_vector():\n        ir.eval(ir.call @system.bar_v())" in \
        python_print(fn)
    core = pl.function(type=pl.FunctionType.IN_CORE)(ir_plain)
    assert core.func_type is FunctionType.IN_CORE and core.body == fn.body


def test_decorated_program_class_reads_into_a_program():
    prog = IrAcc  # @pl.program read the class when it decorated it
    assert isinstance(prog, Program) and prog.name == "acc_prog" and prog.target == "cube"
    assert pl.parse_program(prog) is prog and pl.parse(prog) is prog
    assert python_print(prog, prefix="pl") == IR_ACC
    assert ir_diff(prog, pl.loads(IR_ACC)) is None
    assert prog.function("helper").func_type is FunctionType.IN_CORE


def test_an_error_in_decorated_source_points_at_its_file_line():
    with pytest.raises(ParserSyntaxError) as info:
        @pl.function
        def ir_broken(x: pl.Tensor[[32, 32], pl.FP32]):
            pl.eval(pl.call @block.load(missing, x, [0, 0]))  # noqa: F821
    span = info.value.span
    assert span.file == __file__ and "undefined name 'missing'" in str(info.value)
    assert span.source_line().strip().startswith("pl.eval(pl.call @block.load(missing")


def test_decorator_and_reader_arguments_are_checked():
    with pytest.raises(InvalidType, match="target must be"):
        pl.program(target="gpu")
    with pytest.raises(NotSupported):  # no source to read
        pl.program(object)
    for bad in (lambda: pl.parse(42), lambda: pl.loads(b"@ir.function"),
                lambda: pl.parse_program(ir_plain)):
        with pytest.raises(InvalidType):
            bad()


# ---------------------------------------------------------------- malformed text

_HEAD = "@ir.function\ndef f(a: ir.INDEX, x: ir.Tensor[[16, 16], ir.FP32]):\n"
BAD_TEXT = [
    ("syntax", _HEAD + "    b: ir.INDEX = a +\n", 3, "invalid syntax"),
    ("undefined name", _HEAD + "    b: ir.INDEX = a\n    c: ir.INDEX = d\n", 4,
     "undefined name 'd'"),
    ("concise form", _HEAD + "    b = a + 1\n", 3, "needs its type"),
    ("not a type", "@ir.function\ndef f(a: ir.Tensr[[16], ir.FP32]):\n    pass\n", 2,
     "not a type"),
    ("tile without memref",
     _HEAD + "    t: ir.Tile[[16, 16], ir.FP32] = ir.call @block.make_tile()\n", 3, "MemRef"),
    ("unknown call", _HEAD + "    b: ir.INDEX = foo(a)\n", 3, "unknown call foo"),
    ("not a statement", _HEAD + "    print(a)\n", 3, "not an IR statement"),
    ("result count", _HEAD + "    b, c = for i, (d,) in ir.range(0, a, 1, init_values=(a,)):\n"
     "        ir.yield_(d)\n", 3, "2 names for 1 values"),
    ("loop else", _HEAD + "    while a < 3:\n        pass\n    else:\n        pass\n", 3,
     "no else"),
    ("if results without yield", _HEAD + "    b = if a > 0:\n        pass\n", 3, "ir.yield_"),
    ("no field", _HEAD + "    b: ir.INDEX = x.rows\n", 3, "has no field 'rows'"),
    ("bad range", _HEAD + "    for i in range(3):\n        pass\n", 3, "ir.range"),
    ("bad section", _HEAD + "    with ir.section_gpu():\n        pass\n", 3, "section_vector"),
    ("decorator", "@ir.kernel\ndef f():\n    pass\n", 1, "expected @ir.function"),
    ("decorator keyword", "@ir.function(kind=1)\ndef f():\n    pass\n", 1, "keyword"),
    ("untyped parameter", "@ir.function\ndef f(a):\n    pass\n", 2, "has no type"),
    ("two functions", _HEAD + "    pass\n" + _HEAD + "    pass\n", 1, "holds one def"),
    ("not a def", "x = 1\n", 1, "decorated `def`s"),
    ("header", "# ir.program: broken\n" + _HEAD + "    pass\n", 1, "malformed program header"),
    ("bad dtype", "@ir.function\ndef f(a: ir.Ptr[ir.FP99]):\n    pass\n", 2, "dtype"),
]


@pytest.mark.parametrize("text,line,message", [c[1:] for c in BAD_TEXT],
                         ids=[c[0] for c in BAD_TEXT])
def test_malformed_text_is_a_syntax_error_at_its_line(text, line, message):
    with pytest.raises(ParserSyntaxError) as info:
        pl.loads(text)
    err = info.value
    assert err.span is not None and err.span.line == line, (err.span, str(err))
    assert message in err.message
    shown = text.splitlines()[line - 1]
    assert f"{line} | {shown}" in str(err)  # the diagnostic quotes the offending line


def test_non_ssa_text_may_read_a_name_before_its_assignment():
    text = ("@ir.function\ndef f(n: ir.INDEX):\n    for i in ir.range(0, n, 1):\n"
            "        if i > 0:\n            ir.eval(ir.call @debug.printf('%d', x))\n"
            "        x: ir.INDEX = i\n        ir.eval(ir.call @block.and(x, x, x))\n")
    fn = pl.loads(text)
    assert python_print(fn) == text
    loop = fn.body.stmts[0]
    assert loop.body.stmts[0].then_body.stmts[0].expr.args[1] is loop.body.stmts[1].var
    assert loop.body.stmts[2].expr.op == "block.and"  # op names may be Python keywords
