"""Property: whatever a user does to a valid kernel, the parser answers with a PyPTO error.

Hypothesis takes the example kernels (`pypto_pro.examples`), applies random AST mutations —
delete a statement, swap two call arguments, replace a constant with another constant or a
string, rename a name to an undefined one (or to another of the kernel's names), give a keyword
argument another keyword's value, change an operator, duplicate a statement, wrap a statement
in `for _ in pl.range(2)` — and parses the result for both targets. The parser may
accept the kernel or raise a `PyptoError` subclass; it must never leak a raw Python exception
(KeyError, AttributeError, IndexError, ...) — not even wrapped in the parser's last-resort
"Failed to parse kernel function" error, which marks an internal failure.
"""
from __future__ import annotations

import ast
import copy

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pypto_pro.errors import PyptoError
from pypto_pro.examples import ALL_EXAMPLES, load
from pypto_pro.language.parser import parse_target
from pypto_pro.runtime.kernel_def import Specialization

SPEC = Specialization(arch="a5")
KERNEL_DEFS = [k.kernel_def for name in ALL_EXAMPLES for k in load(name).KERNELS.values()]
INTERNAL = "Failed to parse kernel function"

MUTATIONS = ("delete", "swap_args", "constant", "rename", "operator", "duplicate", "wrap",
             "rebind", "kwarg")
OTHER_CONSTANTS = (0, 1, -1, 2, 3, 16, 17, 31, 32, 33, 64, 0x10000, 1 << 40, 0.5, -2.5, True,
                   False, None, "x", "%d", "")
BINOPS = (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod, ast.Div, ast.Pow, ast.LShift,
          ast.BitAnd, ast.BitOr, ast.MatMult)
CMPOPS = (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Is, ast.In)


def _stmt_lists(tree: ast.AST) -> list[list[ast.stmt]]:
    out = []
    for node in ast.walk(tree):
        for field in ("body", "orelse"):
            stmts = getattr(node, field, None)
            if isinstance(stmts, list) and stmts and isinstance(stmts[0], ast.stmt):
                out.append(stmts)
    return out


def _of(tree: ast.AST, *kinds: type) -> list[ast.AST]:
    return [n for n in ast.walk(tree) if isinstance(n, kinds)]


def mutate(tree: ast.FunctionDef, kind: str, draw) -> ast.FunctionDef:
    """Apply one mutation of `kind` to a copy of `tree` (a no-op when nothing fits)."""
    tree = copy.deepcopy(tree)
    pick = lambda xs: xs[draw(st.integers(0, len(xs) - 1))]  # noqa: E731
    if kind in ("delete", "duplicate", "wrap"):
        stmts = pick(_stmt_lists(tree))
        i = draw(st.integers(0, len(stmts) - 1))
        if kind == "delete":
            del stmts[i]
            if not stmts:
                stmts.append(ast.copy_location(ast.Pass(), tree))
        elif kind == "duplicate":
            stmts.insert(i, copy.deepcopy(stmts[i]))
        else:
            loop = ast.parse("for _w in pl.range(2):\n    pass").body[0]
            loop.body = [stmts[i]]
            stmts[i] = ast.copy_location(loop, stmts[i])
    elif kind == "swap_args":
        calls = [c for c in _of(tree, ast.Call) if len(c.args) >= 2]
        if calls:
            c = pick(calls)
            i, j = draw(st.integers(0, len(c.args) - 1)), draw(st.integers(0, len(c.args) - 1))
            c.args[i], c.args[j] = c.args[j], c.args[i]
    elif kind == "constant":
        consts = _of(tree, ast.Constant)
        if consts:
            pick(consts).value = draw(st.sampled_from(OTHER_CONSTANTS))
    elif kind == "rename":
        names = [n for n in _of(tree, ast.Name) if isinstance(n.ctx, ast.Load)]
        if names:
            pick(names).id = draw(st.sampled_from(("undefined_name", "nope", "pl_", "_w")))
    elif kind == "rebind":  # a name used where another of the kernel's names was expected
        names = [n for n in _of(tree, ast.Name) if isinstance(n.ctx, ast.Load)]
        if len(names) > 1:
            pick(names).id = pick(names).id
    elif kind == "kwarg":  # a keyword argument gets another keyword's value
        kws = [k for k in _of(tree, ast.keyword) if k.arg is not None]
        if len(kws) > 1:
            pick(kws).value = copy.deepcopy(pick(kws).value)
    elif kind == "operator":
        ops = _of(tree, ast.BinOp, ast.AugAssign, ast.Compare, ast.BoolOp, ast.UnaryOp)
        if ops:
            node = pick(ops)
            if isinstance(node, (ast.BinOp, ast.AugAssign)):
                node.op = draw(st.sampled_from(BINOPS))()
            elif isinstance(node, ast.Compare):
                node.ops = [draw(st.sampled_from(CMPOPS))() for _ in node.ops]
            elif isinstance(node, ast.BoolOp):
                node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
            else:
                node.op = draw(st.sampled_from((ast.USub, ast.Not, ast.Invert, ast.UAdd)))()
    ast.fix_missing_locations(tree)
    return tree


def parse_mutated(kdef, tree) -> None:
    mutated = kdef.replace(tree=tree)
    for target in ("cube", "vector"):
        try:
            parse_target(mutated, SPEC, target)
        except PyptoError as e:
            assert not e.message.startswith(INTERNAL), f"internal failure leaked: {e}"
            cause = e.__cause__
            assert cause is None or isinstance(cause, PyptoError) or \
                "compile-time call failed" in e.message, f"raw {type(cause).__name__}: {e}"
            return


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_examples_only_raise_pypto_errors(data):
    kdef = data.draw(st.sampled_from(KERNEL_DEFS), label="kernel")
    tree = kdef.tree
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        kind = data.draw(st.sampled_from(MUTATIONS), label="kind")
        tree = mutate(tree, kind, data.draw)
    parse_mutated(kdef, tree)


def test_unmutated_examples_parse():
    for kdef in KERNEL_DEFS:
        parse_mutated(kdef, kdef.tree)


# ---------------------------------------------------------------- every op, random arguments

import pypto_pro.language as pl  # noqa: E402
from pypto_pro.ir import ops as opreg  # noqa: E402
from pypto_pro.language.decl import Declaration  # noqa: E402

VEC = pl.TileType([16, 16], pl.DT_FP32)
VEC16 = pl.TileType([16, 16], pl.DT_FP16)
MAT = pl.TileType([16, 16], pl.DT_FP16, pl.MemorySpace.Mat)
LEFT = pl.TileType([16, 16], pl.DT_FP16, pl.MemorySpace.Left)
RIGHT = pl.TileType([16, 16], pl.DT_FP16, pl.MemorySpace.Right)
ACC = pl.TileType([16, 16], pl.DT_FP32, pl.MemorySpace.Acc)


@pl.simt.function(max_threads=32)
def simt_fn(t: pl.Tile[[16, 16], pl.DT_FP32]):
    t[0, 0] = 1.0


@pl.vector_function
def vf_fn(t):
    pass


@pl.kernel(arch="a5")
def base_kernel(x: pl.Tensor[[64, 64], pl.DT_FP32], p: pl.Ptr[pl.DT_FP32], n: pl.DT_INT32,
                f: pl.DT_FP32):
    s = pl.struct("S", a=1)
    with pl.section_vector():
        v = pl.make_tile(VEC, addr=0)
        v16 = pl.make_tile(VEC16, addr=0x1000)
        g = pl.make_tile_group(type=VEC, addrs=0x2000, mutex_ids=[0, 1])
        pass  # replaced by the generated statement
    with pl.section_cube():
        m = pl.make_tile(MAT, addr=0)
        lt = pl.make_tile(LEFT, addr=0)
        rt = pl.make_tile(RIGHT, addr=0)
        c = pl.make_tile(ACC, addr=0)
        pass  # replaced by the generated statement


def _op_names() -> list[str]:
    names = {d.qualname for ns in (vars(pl), vars(pl.system), vars(pl.simt), vars(pl.Vf))
             for d in ns.values() if isinstance(d, Declaration)}
    names = {f"pl.{n}" if n.startswith("vf.") else n for n in names}
    fallback = {f"pl.{n.split('.', 1)[1]}" for n in opreg.REGISTRY if n.startswith("block.")}
    return sorted(names | (fallback - {"pl.and", "pl.or", "pl.not"}))


OP_NAMES = _op_names()
COMMON_ARGS = ("x", "p", "n", "f", "s", "0", "1", "-1", "16", "2.5", "'a'", "None", "True",
               "[0, 0]", "[n, 0]", "[1]", "[]", "(1, 2, 3)", "{}", "x.shape", "pl.DT_FP16",
               "pl.PipeType.V", "pl.PipeType.MTE2", "VEC")
VEC_ARGS = COMMON_ARGS + ("v", "v16", "g", "g.next()", "g[n]", "v[0:8, 0:8]", "(v,)",
                          "simt_fn", "vf_fn", "pl.AccToVecMode.DualModeSplitM")
CUBE_ARGS = COMMON_ARGS + ("m", "lt", "rt", "c", "pl.AccPhase.Final", "MAT", "pl.PipeType.FIX")
KEYWORDS = ("addr", "size", "dim", "mode", "pipe", "event_id", "set_pipe", "wait_pipe",
            "mutex_id", "order", "offset", "acc_to_vec_mode", "atomic", "phase", "scale",
            "threads", "args", "type", "addrs", "mutex_ids", "depth", "dtype", "shape", "stride",
            "loc", "workspace", "sync_mode", "relu_pre_mode", "core_type", "layout")


@st.composite
def op_statements(draw) -> tuple[int, str]:
    section = draw(st.integers(0, 1))
    pool = VEC_ARGS if section == 0 else CUBE_ARGS
    args = draw(st.lists(st.sampled_from(pool), max_size=5))
    kws = draw(st.dictionaries(st.sampled_from(KEYWORDS), st.sampled_from(pool), max_size=2))
    everything = ", ".join(args + [f"{k}={v}" for k, v in kws.items()])
    call = f"{draw(st.sampled_from(OP_NAMES))}({everything})"
    return section, (f"t = {call}" if draw(st.booleans()) else call)


def with_statement(kdef, section: int, source: str):
    tree = copy.deepcopy(kdef.tree)
    block = [n for n in tree.body if isinstance(n, ast.With)][section]
    placeholder = block.body[-1]
    stmt = ast.parse(source).body[0]
    for node in ast.walk(stmt):
        if hasattr(node, "lineno"):
            node.lineno = node.end_lineno = placeholder.lineno
            node.col_offset = placeholder.col_offset
            node.end_col_offset = placeholder.end_col_offset
    block.body[-1] = stmt
    return tree


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(statement=op_statements())
def test_any_op_with_any_arguments_only_raises_pypto_errors(statement):
    section, source = statement
    parse_mutated(base_kernel, with_statement(base_kernel, section, source))


def test_base_kernel_parses():
    parse_mutated(base_kernel, base_kernel.tree)
    assert len(OP_NAMES) > 250
