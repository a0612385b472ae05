"""SIMT callees as functions of their own (spec §2.14, §4.1): a `@pl.simt.function` without
max_threads called from SIMT code becomes a SIMT_CALLEE function called with `simt.call`, once
per argument types; `return value` gives each thread its own result (divergent returns retire
threads for the rest of the callee); recursion is rejected at the call's line. One kernel
(`callees_kernel`: a value in an expression, a callee calling a callee, void callees writing a
tile and a GM tensor, early divergent returns) is checked against a per-thread Python reference
here and against the native backend in `tests/pypto_pro/native/test_native_simt.py`; its IR
round-trips through the printer and reader and generates `__simt_callee__` functions.
"""
from __future__ import annotations

import dataclasses
import functools
import textwrap

import pytest
import torch

import pypto_pro.language as pl
from pypto_pro.codegen import generate
from pypto_pro.compiler import compile_kernel
from pypto_pro.errors import PassInner, UnsupportedFeatureError
from pypto_pro.ir.dtype import DataType
from pypto_pro.ir.nodes import (
    Call, EvalStmt, Function, FunctionType, Program, ReturnStmt, SeqStmts, Var,
)
from pypto_pro.ir.mutator import walk
from pypto_pro.ir.printer import python_print
from pypto_pro.ir.types import INDEX, NoneType, ScalarType
from pypto_pro.runtime.backends import use_backend
from pypto_pro.runtime.kernel_def import Specialization

F32, I32 = pl.DT_FP32, pl.DT_INT32
MTE2, V, MTE3 = pl.PipeType.MTE2, pl.PipeType.V, pl.PipeType.MTE3
SPEC = Specialization(arch="a5")


def _flag(src, dst, event):
    pl.system.sync_src(set_pipe=src, wait_pipe=dst, event_id=event)
    pl.system.sync_dst(set_pipe=src, wait_pipe=dst, event_id=event)


# ---------------------------------------------------------------- a value in an expression,
# a callee calling a callee, one instance per argument types


@pl.simt.function
def square(v):
    return v * v


@pl.simt.function
def poly(v, k):
    return square(v) * k + square(k) - v


@pl.simt.function(max_threads=128)
def apply_poly(t: pl.Tile[[1, 128], F32], k: F32):
    tid = pl.simt.thread_idx().x
    t[0, tid] = poly(t[0, tid], k) + pl.simt.cast(square(tid % 5), F32)


# ---------------------------------------------------------------- a void callee writing tiles


@pl.simt.function
def put(t, r, c, v):
    t[r, c] = v


@pl.simt.function
def put_if_positive(t, r, c, v):
    if v <= 0.0:
        return  # void early return
    put(t, r, c, v)


@pl.simt.function(max_threads=64)
def fill_rows(t: pl.Tile[[4, 64], F32], g: pl.Tensor[[pl.DYNAMIC, 64], F32]):
    tid = pl.simt.thread_idx().x
    for r in pl.range(4):
        put(t, r, tid, pl.simt.cast(r * 100 + tid, F32))
    put_if_positive(g, 1, tid, g[0, tid])


# ---------------------------------------------------------------- divergent early returns


@pl.simt.function
def halvings(v, limit):
    n = 0
    while v > 1.0:
        if n >= limit:
            return -1.0  # returns from inside the loop: this thread is done
        v = v * 0.5
        n = n + 1
    if n == 0:
        return v
    return v + pl.simt.cast(n, F32)


@pl.simt.function(max_threads=256)
def apply_halvings(t: pl.Tile[[1, 256], F32], limit: I32):
    tid = pl.simt.thread_idx().x
    if tid % 4 == 3:
        return  # the entry returns early too (void)
    t[0, tid] = halvings(t[0, tid], limit=limit) * 2.0


# ---------------------------------------------------------------- one kernel, three launches
# (one native build for every case)


@pl.jit(arch="a5")
def callees_kernel(x: pl.Tensor[[1, 256], F32], k: F32, g: pl.Tensor[[pl.DYNAMIC, 64], F32],
                   limit: I32, y_poly: pl.Tensor[[1, 128], F32],
                   y_fill: pl.Tensor[[4, 64], F32], y_halvings: pl.Tensor[[1, 256], F32]):
    with pl.section_vector():
        a = pl.make_tile(pl.TileType([1, 128], F32), addr=0x0)
        b = pl.make_tile(pl.TileType([4, 64], F32), addr=0x200)
        c = pl.make_tile(pl.TileType([1, 256], F32), addr=0x600)
        pl.load(a, x, [0, 0])
        pl.load(c, x, [0, 0])
        _flag(MTE2, V, 0)
        pl.simt.launch(apply_poly, threads=128, args=(a, k))
        pl.simt.launch(fill_rows, threads=64, args=(b, g))
        pl.simt.launch(apply_halvings, threads=256, args=(c, limit))
        _flag(V, MTE3, 1)
        pl.store(y_poly, a, [0, 0])
        pl.store(y_fill, b, [0, 0])
        pl.store(y_halvings, c, [0, 0])


def make_inputs() -> list:
    x = torch.randn(1, 256) * 24.0
    return [x, 0.5, torch.randn(2, 64), 4, torch.zeros(1, 128), torch.zeros(4, 64),
            torch.zeros(1, 256)]


def references(x, k, g, limit, *_) -> dict[int, torch.Tensor]:
    """Per argument index: what the kernel leaves there, computed thread by thread from the
    inputs before the run."""
    k32 = torch.tensor(k, dtype=torch.float32)
    poly_ = torch.empty(1, 128)
    for tid in range(128):
        v = x[0, tid]
        poly_[0, tid] = (v * v) * k32 + k32 * k32 - v + float((tid % 5) * (tid % 5))
    fill = torch.tensor([[float(r * 100 + c) for c in range(64)] for r in range(4)])
    gm = g.clone()
    gm[1] = torch.where(g[0] > 0, g[0], g[1])
    halved = x.clone()
    for tid in range(256):
        if tid % 4 == 3:
            continue
        v, n, result = x[0, tid].clone(), 0, None
        while v > 1.0:
            if n >= limit:
                result = torch.tensor(-1.0)
                break
            v, n = v * 0.5, n + 1
        if result is None:
            result = v if n == 0 else v + n
        halved[0, tid] = result * 2.0
    return {2: gm, 4: poly_, 5: fill, 6: halved}


def test_callees_match_the_per_thread_reference():
    args = make_inputs()
    inputs = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    with use_backend("sim"):
        callees_kernel(*args)
    for index, expected in references(*inputs).items():
        torch.testing.assert_close(args[index], expected, rtol=0, atol=0)


# ---------------------------------------------------------------- the IR


@functools.lru_cache(maxsize=1)
def _compiled():
    return compile_kernel(callees_kernel.kernel_def, SPEC)


def test_callees_are_functions_called_with_simt_call():
    program = _compiled().programs["vector"]
    kinds = {f.name: f.func_type for f in program.functions}
    callee, entry = FunctionType.SIMT_CALLEE, FunctionType.SIMT_VF
    assert kinds == {"callees_kernel": FunctionType.OPAQUE, "square": callee, "poly": callee,
                     "square_1": callee, "apply_poly": entry, "put": callee, "put_1": callee,
                     "put_if_positive": callee, "fill_rows": entry, "halvings": callee,
                     "apply_halvings": entry}
    # one instance per argument types: square of FP32 (from poly) and of INDEX (tid % 5); put
    # of a tile and of a GM tensor
    assert [program.function(n).return_type for n in ("square", "square_1", "put")] == \
        [ScalarType(DataType.FP32), INDEX, None]
    calls = sorted(n.kwarg("callee") for n in walk(program) if isinstance(n, Call)
                   and n.op == "simt.call")
    assert calls == ["halvings", "poly", "put", "put_1", "put_if_positive", "square", "square",
                     "square_1"]
    for fn in program.functions:  # values are returned by value-returning callees only
        values = [s.value for s in walk(fn.body) if isinstance(s, ReturnStmt)]
        if fn.return_type is not None:
            assert values and all(v is not None and v.type == fn.return_type for v in values)
        else:
            assert all(v is None for v in values)
    text = python_print(program)
    assert "@ir.simt.function(type=ir.FunctionType.SIMT_CALLEE)\ndef poly(v: ir.FP32, " \
           "k: ir.FP32) -> ir.FP32:" in text
    assert "ir.call @simt.call(v, callee='square')" in text
    assert "            return -1.0\n" in text


def test_every_pass_record_prints_reads_and_prints_the_same():
    for record in _compiled().passes["vector"]:
        text = record.ir_text
        assert "SIMT_CALLEE" in text  # the workbench shows the callees after every pass
        back = pl.loads(text)
        assert python_print(back) == text, record.name
        for call in (n for n in walk(back) if isinstance(n, Call) and n.op == "simt.call"):
            # the reader types a call from its callee (void callees: NoneType)
            assert call.type == (back.function(call.kwarg("callee")).return_type or NoneType())


def test_the_workbench_pass_view_shows_callees_as_functions():
    import html
    import re

    from pypto_lab.views.passes import ir_html

    records = _compiled().passes["vector"]
    for record in (records[0], records[-1]):
        shown = html.unescape(re.sub(r"<[^>]+>", "", ir_html(record, __file__, "pw")))
        assert "def poly(v: ir.FP32, k: ir.FP32) -> ir.FP32:" in shown, record.name


def test_the_reread_program_runs_identically():
    from pypto_pro.runtime.backends import LaunchRequest
    from pypto_pro.runtime.backends.sim import SimBackend
    from pypto_pro.runtime.binding import bind

    compiled = _compiled()
    reread = dataclasses.replace(compiled, programs={
        t: pl.loads(recs[-1].ir_text) for t, recs in compiled.passes.items()})
    inputs = make_inputs()
    outs = []
    for ck in (compiled, reread):
        args = [a.clone() if isinstance(a, torch.Tensor) else a for a in inputs]
        bound = bind(callees_kernel.kernel_def, args, {}, SPEC)
        SimBackend(functional_only=True).launch(LaunchRequest(
            ck, 1, None, bound.args, bound.dyn_dims, bound.tiling_bytes))
        outs.append(args)
    for a, b in zip(*outs):
        assert not isinstance(a, torch.Tensor) or torch.equal(a, b)


def _verify(*functions):
    from pypto_pro.passes import PassContext, verify

    return verify.run(Program("p", functions, "vector"), PassContext("vector"))


def test_the_verifier_checks_returns_and_calls():
    v = Var("v", INDEX)
    call = Call("simt.call", (v,), (("callee", "f"),), INDEX)
    recursive = Function("f", (v,), SeqStmts((ReturnStmt(call),)), FunctionType.SIMT_CALLEE,
                         return_type=INDEX)
    with pytest.raises(PassInner, match=r"'f' is recursive \(f -> f\)"):
        _verify(recursive)
    w = Var("w", INDEX)
    ok = Function("f", (w,), SeqStmts((ReturnStmt(w),)), FunctionType.SIMT_CALLEE,
                  return_type=INDEX)
    _verify(ok)
    with pytest.raises(PassInner, match="outside a SIMT callee"):
        _verify(Function("k", (w,), SeqStmts((ReturnStmt(w),))))
    with pytest.raises(PassInner, match="return of nothing in 'f'"):
        _verify(Function("f", (w,), SeqStmts((ReturnStmt(),)), FunctionType.SIMT_CALLEE,
                         return_type=INDEX))
    x = Var("x", INDEX)
    bad_call = Call("simt.call", (x, x), (("callee", "f"),), INDEX)
    with pytest.raises(PassInner, match="passes 2 values"):
        _verify(ok, Function("g", (x,), SeqStmts((EvalStmt(bad_call),)), FunctionType.SIMT_VF))


# ---------------------------------------------------------------- generated C++


def test_callees_are_simt_callee_functions_before_their_callers():
    cpp = generate(_compiled()).kernel_cpp
    heads = ["__simt_callee__ inline float square(float v)",
             "__simt_callee__ inline float poly(float v, float k)",
             "__simt_callee__ inline int64_t square_1(int64_t v)",
             "__simt_vf__ __launch_bounds__(128) inline void apply_poly(",
             "__simt_callee__ inline void put(__ubuf__ float* t, uint32_t t_rows, "
             "uint32_t t_cols, int64_t r, int64_t c, float v)",
             "__simt_callee__ inline void put_1(__gm__ float* t, int64_t r, int64_t c, float v, "
             "int64_t t_dim0)",
             "__simt_callee__ inline void put_if_positive(",
             "__simt_vf__ __launch_bounds__(64) inline void fill_rows(",
             "__simt_callee__ inline float halvings(float v, int32_t limit)"]
    at = [cpp.index(h) for h in heads]
    assert at == sorted(at)
    # IR read from text may define a callee after its caller: C++ still gets callees first
    compiled = _compiled()
    program = compiled.programs["vector"]
    backwards = dataclasses.replace(program, functions=program.functions[::-1])
    again = generate(dataclasses.replace(compiled, programs={"vector": backwards})).kernel_cpp
    def defined(name: str) -> int:
        return again.index(f" {name}(", again.index("#if defined(__DAV_VEC__)"))

    for callee, caller in (("square", "poly"), ("poly", "apply_poly"), ("square_1", "apply_poly"),
                           ("put", "fill_rows"), ("put_1", "put_if_positive"),
                           ("put_if_positive", "fill_rows"), ("halvings", "apply_halvings")):
        assert defined(callee) < defined(caller), (callee, caller)
    assert defined("apply_halvings") < defined("apply_poly")  # else program order
    for line in ("return v * v;", "float val = square(v);", "return -1.0f;", "return;",
                 "put(t, t_rows, t_cols, r, ", "put_1(t, r, c, v, t_dim0);",
                 "put_if_positive(g, 1, "):
        assert line in cpp, line


# ---------------------------------------------------------------- bad input


def _compile_source(tmp_path, name: str, source: str):
    """Compile a kernel written in its own file (errors point at its lines)."""
    import importlib.util

    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return lambda: compile_kernel(module.kernel.kernel_def, SPEC), path


_RECURSIVE = """
    import pypto_pro.language as pl

    @pl.simt.function
    def fact(n):
        if n <= 1:
            return 1
        return n * fact(n - 1)

    @pl.simt.function(max_threads=32)
    def entry(t: pl.Tile[[1, 32], pl.DT_FP32]):
        i = pl.simt.thread_idx().x
        t[0, i] = pl.simt.cast(fact(i), pl.DT_FP32)

    @pl.jit(arch="a5")
    def kernel(x: pl.Tensor[[1, 32], pl.DT_FP32]):
        with pl.section_vector():
            t = pl.make_tile(pl.TileType([1, 32], pl.DT_FP32), addr=0)
            pl.simt.launch(entry, threads=32, args=(t,))
"""

_MUTUAL = """
    import pypto_pro.language as pl

    @pl.simt.function
    def ping(n):
        if n > 0:
            pong(n - 1)

    @pl.simt.function
    def pong(n):
        ping(n)

    @pl.simt.function(max_threads=32)
    def entry(t: pl.Tile[[1, 32], pl.DT_FP32]):
        ping(pl.simt.thread_idx().x)

    @pl.jit(arch="a5")
    def kernel(x: pl.Tensor[[1, 32], pl.DT_FP32]):
        with pl.section_vector():
            t = pl.make_tile(pl.TileType([1, 32], pl.DT_FP32), addr=0)
            pl.simt.launch(entry, threads=32, args=(t,))
"""


@pytest.mark.parametrize("source,line,chain", [
    (_RECURSIVE, 8, "fact -> fact"), (_MUTUAL, 11, "ping -> pong -> ping")],
    ids=["self", "mutual"])
def test_recursion_is_an_error_at_the_call(tmp_path, source, line, chain):
    run, path = _compile_source(tmp_path, f"rec_{line}", source)
    with pytest.raises(UnsupportedFeatureError) as info:
        run()
    err = info.value
    assert err.span.file == str(path) and err.span.line == line
    assert chain in str(err) and "recursive" in str(err)


_BAD = {
    "missing_return": ("""
        @pl.simt.function
        def half(v):
            if v > 0.0:
                return v * 0.5

        @pl.simt.function(max_threads=32)
        def entry(t: pl.Tile[[1, 32], pl.DT_FP32]):
            t[0, 0] = half(t[0, 0])
    """, "can reach its end without a return"),
    "mixed_returns": ("""
        @pl.simt.function
        def half(v):
            if v > 0.0:
                return
            return v * 0.5

        @pl.simt.function(max_threads=32)
        def entry(t: pl.Tile[[1, 32], pl.DT_FP32]):
            t[0, 0] = half(t[0, 0])
    """, "this return needs one too"),
    "entry_returns_value": ("""
        @pl.simt.function(max_threads=32)
        def entry(t: pl.Tile[[1, 32], pl.DT_FP32]):
            return t[0, 0]
    """, "returns nothing"),
    "callee_outside_simt": ("""
        @pl.simt.function
        def half(v):
            return v * 0.5

        @pl.simt.function(max_threads=32)
        def entry(t: pl.Tile[[1, 32], pl.DT_FP32]):
            t[0, 0] = 1.0

        def use_outside():
            half(1.0)
    """, "can only be called from SIMT code"),
}


@pytest.mark.parametrize("name", list(_BAD))
def test_bad_callees_are_typed_errors_with_a_line(tmp_path, name):
    from pypto_pro.errors import PyptoError

    body, message = _BAD[name]
    launch = "use_outside()" if name == "callee_outside_simt" else \
        "pl.simt.launch(entry, threads=32, args=(t,))"
    source = "import pypto_pro.language as pl\n" + textwrap.dedent(body) + textwrap.dedent(f"""
        @pl.jit(arch="a5")
        def kernel(x: pl.Tensor[[1, 32], pl.DT_FP32]):
            with pl.section_vector():
                t = pl.make_tile(pl.TileType([1, 32], pl.DT_FP32), addr=0)
                {launch}
    """)
    run, path = _compile_source(tmp_path, name, source)
    with pytest.raises(PyptoError) as info:
        run()
    assert message in str(info.value)
    assert info.value.span.file == str(path) and info.value.span.line > 1
