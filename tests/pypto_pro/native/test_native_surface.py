"""Op coverage of the CPU headers against the code generator: every name the generator may emit
(its surface list, the tile instructions of its op table, the VF intrinsics and constants) is
defined in pypto_pro/include; a kernel using every vector tile op (with every optional operand,
as pto-isa declares the scratch and offset tiles required) and one using the cube ops compile
against the headers, which mirror pto-isa's declarations; a Reg API (VF) kernel and a SIMT
kernel run natively and give the torch result."""
from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass

import torch

import pypto_pro
import pypto_pro.language as pl
from pypto_pro.codegen import generate
from pypto_pro.codegen.lowered import LOWERED
from pypto_pro.codegen.ops import TILE_OPS
from pypto_pro.codegen.surface import all_identifiers
from pypto_pro.codegen.vf import vf_constants
from pypto_pro.ir import ops as opreg
from pypto_pro.ir.attrs import CompareMode, RoundMode
from pypto_pro.ir.dtype import DataType
from pypto_pro.ir.nodes import (
    AssignStmt,
    Call,
    ConstFloat,
    ConstInt,
    EvalStmt,
    Function,
    MakeTuple,
    Program,
    SectionStmt,
    Var,
    seq,
)
from pypto_pro.ir.span import Span
from pypto_pro.ir.types import INDEX, MemorySpace, SectionKind, TileType, TupleType
from pypto_pro.language import vf
from pypto_pro.runtime.backends.native import (
    CXX_FLAGS,
    INCLUDE_DIR,
    compiler,
    native_sources,
)
from pypto_pro.runtime.kernel_def import Specialization

SPAN = Span("surface.py", 3, 1)
#: names that are not C++ identifiers of the headers (host-side or member functions, keywords)
_NOT_HEADER_NAMES = {"cce", "printf", "data"}


def _header_text() -> str:
    return "\n".join(p.read_text() for p in INCLUDE_DIR.rglob("*") if p.is_file())


def test_every_emitted_name_is_defined():
    text = _header_text()
    names = set(all_identifiers()) | vf_constants() | {s.name for s in TILE_OPS.values()}
    missing = sorted(n for n in names - _NOT_HEADER_NAMES
                     if not re.search(rf"(?<![\w:]){re.escape(n)}\b", text))
    assert missing == []


# ---------------------------------------------------------------- hand-built IR kernels

def _tile(name: str, addr: int, dtype=DataType.FP32, space=MemorySpace.Vec):
    t = TileType((16, 16), dtype, space, addr=addr)
    v = Var(name, t)
    shape = MakeTuple((ConstInt(16), ConstInt(16)), TupleType((INDEX, INDEX)))
    return v, AssignStmt(v, Call("block.make_tile", (shape,), (("memref_addr", addr),), t, SPAN),
                         SPAN)


SCALAR_AT = {**{f"block.{n}": 2 for n in ("adds subs muls divs maxs mins ands ors shls shrs "
                                         "rems xors cmps addsc subsc axpy").split()},  # noqa: SIM905
             "block.sels": 3, "block.expands": 1, "block.full": 1, "block.fill_index": 1}
KWARGS = {"block.cmp": (("cmp_mode", CompareMode.LT),),
          "block.cmps": (("cmp_mode", CompareMode.GE),),
          "block.cast": (("mode", RoundMode.CAST_FLOOR),), "block.mrgsort": (("block_len", 64),),
          "block.gathermask": (("pattern_mode", 3),), "block.row_expand_binop": (("op", 1),),
          "block.col_expand_binop": (("op", 1),)}


@dataclass
class _Compiled:
    """What `generate` reads of a CompiledKernel, for a hand-built IR program."""

    programs: dict
    spec: Specialization
    kernel_type: str
    name: str = "ops"
    kernel_def: object = None


def _compiled(stmts, decls, target: str, kernel_type: str) -> _Compiled:
    kind = SectionKind.Vector if target == "vector" else SectionKind.Cube
    body = seq([*decls, SectionStmt(kind, seq(stmts, SPAN), span=SPAN)], SPAN)
    program = Program("ops", (Function("ops", (), body, span=SPAN),), target, SPAN)
    return _Compiled({target: program}, Specialization(arch="a5"), kernel_type)


def _compile_against_headers(compiled, tmp_path) -> None:
    art = generate(compiled)
    for name, text in native_sources(art).items():
        (tmp_path / name).write_text(text)
    done = subprocess.run([compiler(), *CXX_FLAGS, "-fsyntax-only", f"-I{INCLUDE_DIR}",
                           "native_main.cpp"], cwd=tmp_path, capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr[:4000]


def test_every_vector_tile_op_compiles(tmp_path):
    tiles, decls = [], []
    for i in range(4):
        v, d = _tile(f"t{i}", 0x1000 * i)
        tiles.append(v)
        decls.append(d)
    ops = sorted(op for op in [*TILE_OPS, *LOWERED]
                 if op.startswith("block.") and opreg.get(op).family != "cube" and
                 op not in ("block.quant", "block.fill_index", "block.ssbuf_load",
                            "block.ssbuf_store"))
    stmts = []
    for op in ops:
        spec = opreg.get(op)
        n = spec.max_args or spec.min_args
        args = [ConstFloat(1.5) if SCALAR_AT.get(op) == i else tiles[i % 4] for i in range(n)]
        stmts.append(EvalStmt(Call(op, tuple(args), KWARGS.get(op, ()), span=SPAN), SPAN))
    _compile_against_headers(_compiled(stmts, decls, "vector", "aiv"), tmp_path)


def test_cube_ops_compile(tmp_path):
    from pypto_pro.ir.attrs import AccPhase

    acc, d0 = _tile("acc", 0, space=MemorySpace.Acc)
    left, d1 = _tile("l", 0, DataType.FP16, MemorySpace.Left)
    right, d2 = _tile("r", 0, DataType.FP16, MemorySpace.Right)
    bias, d3 = _tile("b", 0, DataType.FP32, MemorySpace.Bias)
    stmts = [EvalStmt(Call("block.matmul", (acc, left, right), (("phase", AccPhase.Final),),
                           span=SPAN), SPAN),
             EvalStmt(Call("block.matmul_acc", (acc, acc, left, right), span=SPAN), SPAN),
             EvalStmt(Call("block.matmul_bias", (acc, left, right, bias), span=SPAN), SPAN),
             EvalStmt(Call("block.gemv", (acc, left, right), span=SPAN), SPAN)]
    _compile_against_headers(_compiled(stmts, [d0, d1, d2, d3], "cube", "aic"), tmp_path)


# ---------------------------------------------------------------- VF and SIMT kernels, run

ROW = pl.TileType([1, 256], pl.DT_FP32)


@pl.vector_function
def exp_minus_max(dst, src):
    full = vf.create_mask(pl.MaskPattern.ALL, dtype=pl.DT_FP32)
    mx = vf.full(-3e38, full, dtype=pl.DT_FP32)
    for i in pl.range(4):
        r = vf.load_align(src, i * 64)
        mx = vf.max(mx, r, full)
    m = vf.reduce_max(mx, full)
    mb = vf.full(m, full, dtype=pl.DT_FP32)
    for i in pl.range(4):
        r = vf.load_align(src, i * 64)
        e = vf.exp_sub(r, mb, full)
        vf.store_align(dst, e, full, offset=i * 64)
    vf.mem_bar(pl.MemBarMode.VST_VLD)


@pl.jit(arch="a5")
def vf_softmax_numerator(x: pl.Tensor[[1, 256], pl.DT_FP32], y: pl.Tensor[[1, 256], pl.DT_FP32]):
    with pl.section_vector():
        a = pl.make_tile(ROW, addr=0)
        b = pl.make_tile(ROW, addr=0x400)
        pl.load(a, x, [0, 0])
        pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
        exp_minus_max(b, a)
        pl.system.sync_src(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=1)
        pl.system.sync_dst(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=1)
        pl.store(y, b, [0, 0])


def test_a_vf_kernel_runs(native_backend):
    x = torch.randn(1, 256) * 3
    y = torch.zeros(1, 256)
    with pypto_pro.use_backend("native"):
        vf_softmax_numerator(x, y)
    torch.testing.assert_close(y, torch.exp(x - x.max()), rtol=1e-6, atol=1e-7)
