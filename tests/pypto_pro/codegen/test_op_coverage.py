"""Every op has a C++ lowering: all ops of the simulator's op library (`sim.ops.IMPLS`) and of the
IR op registry (except the tile-group cursor ops the passes must lower, and the simulator's
instruction for a whole VF section, which codegen emits as the section), every Reg API op; each
tile op emits its instruction with its operands and kwargs, unknown kwargs are refused, and a
kernel using every tile op passes the g++ syntax check."""
from __future__ import annotations

import re

import pytest

from pypto_pro.codegen.dispatch import UNLOWERED, covered_ops
from pypto_pro.codegen.ops import SCRATCH_REQUIRED, TILE_OPS
from pypto_pro.codegen.vf import VF_INTRINSICS
from pypto_pro.codegen.vf_forms import FORMS
from pypto_pro.errors import CodegenInner, NotSupported
from pypto_pro.ir import ops as opreg
from pypto_pro.ir.attrs import CompareMode, RoundMode
from pypto_pro.ir.dtype import DataType
from pypto_pro.ir.nodes import (
    AssignStmt, Call, ConstFloat, ConstInt, EvalStmt, Function, MakeTuple, Program,
    SectionStmt, Var, seq,
)
from pypto_pro.ir.span import Span
from pypto_pro.ir.types import INDEX, MemorySpace, SectionKind, TileType, TupleType
from pypto_pro.sim.ops import IMPLS

SPAN = Span("ops.py", 7, 1)
#: the simulator's instruction for a VF section; codegen emits the SectionStmt as `__VEC_SCOPE__`
#: (tests/pypto_pro/codegen/test_vf_simt.py)
SECTION_INSTRUCTIONS = {"vf.vec_scope"}


def test_simulator_ops_are_covered():
    assert {"vf.vec_scope", "simt.launch"} <= set(IMPLS)  # registered at import, not on first use
    assert set(IMPLS) - covered_ops() - SECTION_INSTRUCTIONS == set()


def test_registry_ops_are_covered():
    missing = set(opreg.REGISTRY) - covered_ops() - set(UNLOWERED) - SECTION_INSTRUCTIONS
    assert missing == set()
    assert SECTION_INSTRUCTIONS <= set(opreg.REGISTRY)


def test_every_vf_op_has_an_intrinsic():
    assert {f"vf.{n}" for n in opreg.VF_NAMES} <= covered_ops()
    assert set(VF_INTRINSICS) | set(FORMS) == set(opreg.VF_NAMES)  # a table entry or a form


# ---------------------------------------------------------------- a kernel with every tile op


def _tile(name: str, addr: int, dtype=DataType.FP32,
          space=MemorySpace.Vec) -> tuple[Var, AssignStmt]:
    t = TileType((16, 16), dtype, space, addr=addr)
    v = Var(name, t)
    shape = MakeTuple((ConstInt(16), ConstInt(16)), TupleType((INDEX, INDEX)))
    call = Call("block.make_tile", (shape,), (("memref_addr", addr),), t, SPAN)
    return v, AssignStmt(v, call, SPAN)


def _program(stmts: list, tiles: list[AssignStmt], target: str = "vector") -> Program:
    kind = SectionKind.Vector if target == "vector" else SectionKind.Cube
    body = seq([*tiles, SectionStmt(kind, seq(stmts, SPAN), span=SPAN)], SPAN)
    return Program("ops", (Function("ops", (), body, span=SPAN),), target, SPAN)


#: operand positions that are scalars (the registry lists them among the reads)
SCALAR_AT = {**{f"block.{n}": 2 for n in "adds subs muls divs maxs mins ands ors shls shrs rems "
                                         "xors cmps addsc subsc axpy".split()},
             "block.sels": 3, "block.expands": 1, "block.full": 1, "block.fill_index": 1}


def _call_for(op: str, tiles: list[Var]) -> Call:
    spec = opreg.get(op)
    n = spec.max_args if op in SCRATCH_REQUIRED else spec.min_args
    args = [ConstFloat(1.5) if SCALAR_AT.get(op) == i else tiles[i % len(tiles)]
            for i in range(n)]
    kwargs = {"block.cmp": (("cmp_mode", CompareMode.LT),), "block.cmps": (
        ("cmp_mode", CompareMode.GE),), "block.cast": (("mode", RoundMode.CAST_FLOOR),),
        "block.mrgsort": (("block_len", 64),), "block.gathermask": (("pattern_mode", 3),),
        "block.row_expand_binop": (("op", 1),), "block.col_expand_binop": (("op", 1),)}
    return Call(op, tuple(args), kwargs.get(op, ()), span=SPAN)


def _every_op_kernel(cg):
    tiles, decls = [], []
    for i in range(4):
        v, d = _tile(f"t{i}", 0x1000 * i)
        tiles.append(v)
        decls.append(d)
    vec_ops = sorted(op for op, spec in TILE_OPS.items() if opreg.get(op).family != "cube")
    stmts = [EvalStmt(_call_for(op, tiles), SPAN) for op in vec_ops]
    return vec_ops, cg.fake_compiled({"vector": _program(stmts, decls)})


def test_every_tile_op_emits_its_instruction(cg, mock_check):
    from pypto_pro.codegen import generate

    ops, compiled = _every_op_kernel(cg)
    art = generate(compiled)
    body = [cg.code(x) for x in cg.impl_body(art.kernel_cpp, "vector")]
    calls = [x for x in body if x.startswith("T") and not x.startswith("TASSIGN")]
    for op, line in zip(ops, calls):
        assert re.match(re.escape(TILE_OPS[op].name) + r"(<[^>]*>)?\(", line), (op, line)
    assert "TCMP(t0, t1, t2, CmpMode::LT);" in calls
    assert "TCMPS(t0, t1, 1.5f, CmpMode::GE);" in calls
    assert "TCVT(t0, t1, RoundMode::CAST_FLOOR);" in calls
    assert "TADDS(t0, t1, 1.5f);" in calls
    assert "TMRGSORT(t0, t1, 64);" in calls
    mock_check(art)


def test_cube_ops_with_phase(cg, cxx_check):
    from pypto_pro.codegen import generate
    from pypto_pro.ir.attrs import AccPhase

    acc, d0 = _tile("acc", 0, space=MemorySpace.Acc)
    left, d1 = _tile("l", 0, DataType.FP16, MemorySpace.Left)
    right, d2 = _tile("r", 0, DataType.FP16, MemorySpace.Right)
    stmts = [EvalStmt(Call("block.matmul", (acc, left, right), (("phase", AccPhase.Final),),
                           span=SPAN), SPAN),
             EvalStmt(Call("block.matmul_acc", (acc, acc, left, right), span=SPAN), SPAN)]
    art = generate(cg.fake_compiled({"cube": _program(stmts, [d0, d1, d2], "cube")}))
    body = [cg.code(x) for x in cg.impl_body(art.kernel_cpp, "cube")]
    assert "TMATMUL<AccPhase::Final>(acc, l, r);" in body
    assert "TMATMUL_ACC(acc, acc, l, r);" in body
    cxx_check(art)


def test_unknown_kwarg_is_refused(cg):
    from pypto_pro.codegen import generate

    t, d = _tile("t", 0)
    call = Call("block.add", (t, t, t), (("saturate", True),), span=SPAN)
    with pytest.raises(NotSupported, match="saturate"):
        generate(cg.fake_compiled({"vector": _program([EvalStmt(call, SPAN)], [d])}))


def test_unlowered_group_cursor_is_an_internal_error(cg):
    from pypto_pro.codegen import generate
    from pypto_pro.ir.types import TileGroupType

    gt = TileGroupType(TileType((16, 16), DataType.FP32, MemorySpace.Vec), (0, 0x400))
    g = Var("g", gt)
    make = AssignStmt(g, Call("tile_group.make", (), (), gt, SPAN), SPAN)
    nxt = EvalStmt(Call("tile_group.next", (g,), (), gt.slot_type(None), SPAN), SPAN)
    with pytest.raises(CodegenInner, match="tile_group_lowering"):
        generate(cg.fake_compiled({"vector": _program([nxt], [make])}))
