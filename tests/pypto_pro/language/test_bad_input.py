"""Bad kernels get the right diagnostic (spec §5): error class, code (`err.code_str`), the line
of the offending statement (`err.span.line`) and a rendered `--> file:line:col` with carets.

Each case is a tiny kernel written to a real temporary file, so spans point at a real file and
line: the expected line is the one marked `# !`. The kernel body is wrapped in a standard
kernel `k(x, y: Tensor[[64, 64], FP32], n: INT32)`; `before` is module-level code placed ahead
of it (helpers, SIMT functions). Cases the Python compiler itself rejects (`break` outside a
loop) are parsed from the AST directly (`ast_only`).
"""
from __future__ import annotations

import ast
import dataclasses
import textwrap

import pytest

import pypto_pro.language as pl
from pypto_pro.errors import (
    DSLDeclarationError, FinalRejectionError, InvalidArgument, InvalidOperation,
    InvalidOperationError, InvalidShape, InvalidTile, OutOfRange, ParserSyntaxError,
    ParserTypeError, PyptoError, UndefinedVariableError, UnsupportedFeatureError,
)
from pypto_pro.language.parser import parse_target
from pypto_pro.runtime.kernel_def import Specialization

HEADER = '''\
import pypto_pro.language as pl

VEC = pl.TileType([16, 16], pl.DT_FP32)
VEC16 = pl.TileType([16, 16], pl.DT_FP16)
MAT = pl.TileType([16, 16], pl.DT_FP16, pl.MemorySpace.Mat)
LEFT = pl.TileType([16, 16], pl.DT_FP16, pl.MemorySpace.Left)
RIGHT = pl.TileType([16, 16], pl.DT_FP16, pl.MemorySpace.Right)
ACC = pl.TileType([16, 16], pl.DT_FP32, pl.MemorySpace.Acc)
'''
KERNEL = '''
@pl.kernel(arch="a5")
def k(x: pl.Tensor[[64, 64], pl.DT_FP32], y: pl.Tensor[[64, 64], pl.DT_FP32], n: pl.DT_INT32):
'''
MARK = "# !"

S = ParserSyntaxError, "F00002"
T = ParserTypeError, "F00001"
FINAL = FinalRejectionError, "F00001"
NAME = UndefinedVariableError, "F00004"
UNSUP = UnsupportedFeatureError, "F00005"
OP = InvalidOperationError, "F00007"
RANGE = OutOfRange, "F00008"
SHAPE = InvalidShape, "F0000B"
TILE = InvalidTile, "F0000C"


@dataclasses.dataclass(frozen=True)
class Case:
    id: str
    body: str
    error: tuple[type, str]
    before: str = ""
    ast_only: bool = False
    hint: str | None = None


CASES = [
    # ------------------------------------------------------------ syntax the DSL rejects
    Case("for_over_python_range", """
        for i in range(4):  # !
            pass
        """, S, hint="pl.range"),
    Case("range_keyword", """
        for i in pl.range(stop=4):  # !
            pass
        """, S),
    Case("range_no_args", """
        for i in pl.range():  # !
            pass
        """, S),
    Case("range_four_args", """
        for i in pl.range(0, 8, 2, 1):  # !
            pass
        """, S),
    Case("range_float_bound", """
        for i in pl.range(0.5, 4):  # !
            pass
        """, T),
    Case("range_zero_step", """
        for i in pl.range(0, 4, 0):  # !
            pass
        """, OP),
    Case("range_outside_for", """
        r = pl.range(4)  # !
        """, S),
    Case("tuple_loop_target", """
        for i, j in pl.range(4):  # !
            pass
        """, S),
    Case("for_else", """
        for i in pl.range(4):  # !
            pass
        else:
            pass
        """, UNSUP),
    Case("while_else", """
        while n > 0:  # !
            pass
        else:
            pass
        """, UNSUP),
    Case("two_context_managers", """
        with pl.section_vector(), pl.section_cube():  # !
            pass
        """, S),
    Case("nested_sections", """
        with pl.section_vector():
            with pl.section_cube():  # !
                pass
        """, OP),
    Case("unsupported_with", """
        with open("f"):  # !
            pass
        """, UNSUP),
    Case("section_with_args", """
        with pl.section_vector(1):  # !
            pass
        """, S),
    Case("section_as_call", """
        pl.section_vector()  # !
        """, S),
    Case("f_string", """
        with pl.section_vector():
            pl.printf(f"{n}")  # !
        """, UNSUP, hint="pl.printf"),
    Case("lambda", """
        f = lambda a: a  # !
        """, S),
    Case("list_comprehension", """
        xs = [i for i in (1, 2)]  # !
        """, S),
    Case("return_value", """
        with pl.section_vector():
            return 1  # !
        """, S),
    Case("break_outside_loop", """
        with pl.section_vector():
            break  # !
        """, S, ast_only=True),
    Case("continue_outside_loop", """
        continue  # !
        """, S, ast_only=True),
    Case("nested_def", """
        def inner():  # !
            pass
        """, UNSUP),
    Case("try_statement", """
        try:  # !
            pass
        except Exception:
            pass
        """, UNSUP),
    Case("del_statement", """
        a = 1
        del a  # !
        """, UNSUP),
    Case("yield_expression", """
        yield 1  # !
        """, UNSUP),
    Case("star_star_kwargs", """
        with pl.section_vector():
            a = pl.make_tile(VEC, addr=0)
            pl.add(a, a, a, **{})  # !
        """, UNSUP),
    Case("helper_with_varargs", """
        helper(1, 2)  # !
        """, S, before="""
        def helper(*xs):
            pass
        """),
    Case("constexpr_runtime_value", """
        if pl.constexpr(n > 0):  # !
            pass
        """, T),
    Case("constexpr_outside_if", """
        c = pl.constexpr(True)  # !
        """, S),
    Case("const_without_dtype", """
        c = pl.const(3)  # !
        """, S),
    Case("compile_time_assert", """
        assert 1 == 2, "sizes disagree"  # !
        """, OP),
    Case("if_on_tile", """
        with pl.section_vector():
            a = pl.make_tile(VEC, addr=0)
            if a:  # !
                pass
        """, T),
    Case("tile_of_other_shapes_on_if_branches", """
        with pl.section_vector():
            if n > 0:
                t = pl.make_tile(VEC, addr=0)
            else:
                t = pl.make_tile(pl.TileType([8, 16], pl.DT_FP32), addr=0x400)
            pl.load(t, x, [0, 0])  # !
        """, UNSUP, hint="before the if"),
    Case("tile_rebound_on_one_if_branch", """
        with pl.section_vector():
            t = pl.make_tile(VEC, addr=0)
            if n > 0:
                t = pl.make_tile(pl.TileType([8, 16], pl.DT_FP32), addr=0x400)
            pl.store(y, t, [0, 0])  # !
        """, UNSUP, hint="before the if"),
    Case("tile_groups_of_other_shapes_on_if_branches", """
        with pl.section_vector():
            if n > 0:
                g = pl.make_tile_group(type=VEC, addrs=[0], mutex_ids=[0])
            else:
                g = pl.make_tile_group(type=pl.TileType([8, 16], pl.DT_FP32), addrs=[0x400],
                                       mutex_ids=[1])
            t = g[0]  # !
        """, T),
    Case("tile_in_scalar_arithmetic", """
        with pl.section_vector():
            a = pl.make_tile(VEC, addr=0)
            b = a * 2  # !  (a + k is the real parser's syntax error: module 3)
        """, T, hint="pl.add"),
    # ------------------------------------------------------------ wrong memory spaces
    Case("matmul_lhs_in_mat", """
        with pl.section_cube():
            a = pl.make_tile(MAT, addr=0)
            b = pl.make_tile(RIGHT, addr=0)
            c = pl.make_tile(ACC, addr=0)
            pl.matmul(c, a, b)  # !
        """, S),
    Case("matmul_dst_not_acc", """
        with pl.section_cube():
            a = pl.make_tile(LEFT, addr=0)
            b = pl.make_tile(RIGHT, addr=0)
            c = pl.make_tile(MAT, addr=0)
            pl.matmul(c, a, b)  # !
        """, S),
    Case("store_from_mat", """
        with pl.section_cube():
            a = pl.make_tile(MAT, addr=0)
            pl.store(x, a, [0, 0])  # !
        """, OP),
    Case("load_into_left", """
        with pl.section_cube():
            a = pl.make_tile(LEFT, addr=0)
            pl.load(a, x, [0, 0])  # !
        """, OP),
    Case("move_left_to_right", """
        with pl.section_cube():
            a = pl.make_tile(LEFT, addr=0)
            b = pl.make_tile(RIGHT, addr=0)
            pl.move(b, a)  # !
        """, S),  # the real builder's ValueError
    Case("acc_to_vec_mode_on_mte1_move", """
        with pl.section_cube():
            a = pl.make_tile(MAT, addr=0)
            b = pl.make_tile(LEFT, addr=0)
            pl.move(b, a, acc_to_vec_mode=pl.AccToVecMode.DualModeSplitM)  # !
        """, OP),
    Case("acc_with_zn_layout", """
        tt = pl.TileType([16, 16], pl.DT_FP32, pl.MemorySpace.Acc, layout=pl.ZN)  # !
        t = pl.make_tile(tt, addr=0)
        """, S),
    Case("left_with_nn_layout", """
        tt = pl.TileType([16, 16], pl.DT_FP16, pl.MemorySpace.Left, layout=pl.NN)  # !
        t = pl.make_tile(tt, addr=0)
        """, S),
    # ------------------------------------------------------------ placement and tile types
    Case("vec_not_32_aligned", """
        with pl.section_vector():
            a = pl.make_tile(VEC, addr=16)  # !
        """, TILE),
    Case("left_not_512_aligned", """
        with pl.section_cube():
            a = pl.make_tile(LEFT, addr=256)  # !
        """, TILE),
    Case("right_not_512_aligned", """
        with pl.section_cube():
            a = pl.make_tile(RIGHT, addr=0x300)  # !
        """, TILE),
    Case("acc_not_64_aligned", """
        with pl.section_cube():
            a = pl.make_tile(ACC, addr=32)  # !
        """, TILE),
    Case("group_slot_misaligned", """
        g = pl.make_tile_group(type=VEC, addrs=[0, 0x410], mutex_ids=[0, 1])  # !
        """, TILE),
    Case("negative_address", """
        with pl.section_vector():
            a = pl.make_tile(VEC, addr=-32)  # !
        """, TILE),
    Case("make_tile_without_addr", """
        a = pl.make_tile(VEC)  # !
        """, FINAL, hint="addr="),
    Case("runtime_address", """
        with pl.section_vector():
            a = pl.make_tile(VEC, addr=n)  # !
        """, FINAL),
    Case("tile_type_3d", """
        t = pl.TileType([2, 2, 2], pl.DT_FP32)  # !
        """, SHAPE),
    Case("tile_type_zero_dim", """
        t = pl.TileType([0, 16], pl.DT_FP32)  # !
        """, SHAPE),
    Case("valid_shape_beyond_shape", """
        t = pl.TileType([16, 16], pl.DT_FP32, valid_shape=[32, 16])  # !
        """, SHAPE),
    Case("set_validshape_beyond_shape", """
        with pl.section_vector():
            a = pl.make_tile(VEC, addr=0)
            pl.set_validshape(a, [32, 16])  # !
        """, S),
    Case("slice_beyond_tile", """
        with pl.section_vector():
            a = pl.make_tile(VEC, addr=0)
            s = a[0:8, 17:20]  # !  (a stop past the axis is clipped, a start is not)
        """, RANGE),
    Case("insert_outside_destination", """
        with pl.section_vector():
            a = pl.make_tile(VEC16, addr=0)
            m = pl.make_tile(MAT, addr=0)
            pl.insert(m, a, [8, 0])  # !
        """, RANGE),
    # ------------------------------------------------------------ tile groups and mutex ids
    Case("mutex_id_33", """
        g = pl.make_tile_group(type=VEC, addrs=0, mutex_ids=[0, 33])  # !
        """, T),
    Case("mutex_id_repeated_in_a_tile", """
        g = pl.make_tile_group(type=VEC, addrs=0, mutex_ids=[[1, 1], [2, 3]])  # !
        """, T),
    Case("fwd_ids_not_a_list", """
        g = pl.make_tile_group(type=VEC, addrs=0, mutex_ids=[0, 1], fwd_ids=VEC)  # !
        """, T),
    Case("mutex_ids_uneven", """
        g = pl.make_tile_group(type=VEC, addrs=0, mutex_ids=[[1, 2], [3]])  # !
        """, T),
    Case("mutex_ids_depth_mismatch", """
        g = pl.make_tile_group(type=VEC, addrs=0, mutex_ids=[0, 1], depth=3)  # !
        """, T),
    Case("group_type_not_tile_type", """
        g = pl.make_tile_group(type=3, addrs=0, depth=2)  # !
        """, T),
    Case("group_addrs_length", """
        g = pl.make_tile_group(type=VEC, addrs=[0, 0x400, 0x800], mutex_ids=[0, 1])  # !
        """, T),
    Case("group_positional_args", """
        g = pl.make_tile_group(VEC, 0)  # !
        """, S),
    Case("group_index_out_of_range", """
        with pl.section_vector():
            g = pl.make_tile_group(type=VEC, addrs=0, mutex_ids=[0, 1])
            t = g[5]  # !
        """, T),  # the real frontend's class for it
    Case("fwd_id_16", """
        g = pl.make_tile_group(type=VEC, addrs=0, depth=2, fwd_ids=[0, 16])  # !
        """, T),
    # ------------------------------------------------------------ sync ids and pipes
    Case("flag_event_id_16", """
        with pl.section_vector():
            pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=16)  # !
        """, RANGE),
    Case("mutex_lock_id_32", """
        with pl.section_vector():
            pl.system.mutex_lock(pipe=pl.PipeType.V, mutex_id=32)  # !
        """, RANGE),
    Case("cross_core_id_16", """
        with pl.section_vector():
            pl.system.wait_cross_core(pipe=pl.PipeType.V, event_id=16)  # !
        """, RANGE),
    Case("pipe_is_an_int", """
        with pl.section_vector():
            pl.system.sync_src(set_pipe=2, wait_pipe=pl.PipeType.V, event_id=0)  # !
        """, FINAL),
    Case("mutex_lock_without_pipe", """
        with pl.section_vector():
            pl.system.mutex_lock(mutex_id=3)  # !
        """, T),
    Case("sync_mode_is_an_int", """
        with pl.section_vector():
            pl.system.set_cross_core(pipe=pl.PipeType.V, event_id=0, sync_mode=2)  # !
        """, FINAL),
    Case("sync_all_soft_without_workspaces", """
        with pl.section_vector():
            pl.system.sync_all(mode=pl.SyncAllMode.SOFT)  # !
        """, OP),
    Case("store_atomic_is_an_int", """
        with pl.section_cube():
            c = pl.make_tile(ACC, addr=0)
            pl.store(x, c, [0, 0], atomic=1)  # !
        """, FINAL),
    Case("matmul_phase_is_an_int", """
        with pl.section_cube():
            a = pl.make_tile(LEFT, addr=0)
            b = pl.make_tile(RIGHT, addr=0)
            c = pl.make_tile(ACC, addr=0)
            pl.matmul(c, a, b, phase=1)  # !
        """, FINAL),
    # ------------------------------------------------------------ unknown names and ops
    Case("unknown_pl_op", """
        with pl.section_vector():
            a = pl.make_tile(VEC, addr=0)
            pl.ad(a, a, a)  # !
        """, NAME, hint="did you mean 'pl.add'?"),
    Case("unknown_system_op", """
        with pl.section_vector():
            pl.system.foo()  # !
        """, NAME),
    Case("unknown_pl_attribute", """
        t = pl.DT_FP99  # !
        """, NAME),
    Case("undefined_name", """
        with pl.section_vector():
            a = nope + 1  # !
        """, NAME),
    Case("unknown_struct_field", """
        s = pl.struct("S", a=1)
        b = s.b  # !
        """, UNSUP),
    Case("simt_context_outside_simt", """
        with pl.section_vector():
            t = pl.simt.thread_idx()  # !
        """, OP),
    Case("vf_op_outside_vector_function", """
        with pl.section_vector():
            m = pl.vf.create_mask()  # !
        """, OP),
    Case("block_op_inside_simt_function", """
        with pl.section_vector():
            a = pl.make_tile(VEC, addr=0)
            pl.simt.launch(bad_simt, threads=32, args=(a,))
        """, UNSUP, before="""
        @pl.simt.function(max_threads=32)
        def bad_simt(t: pl.Tile[[16, 16], pl.DT_FP32]):
            pl.add(t, t, t)  # !
        """),
    Case("simt_threads_over_max", """
        with pl.section_vector():
            a = pl.make_tile(VEC, addr=0)
            pl.simt.launch(ok_simt, threads=64, args=(a,))  # !
        """, RANGE, before="""
        @pl.simt.function(max_threads=32)
        def ok_simt(t: pl.Tile[[16, 16], pl.DT_FP32]):
            t[0, 0] = 1.0
        """),
    # ------------------------------------------------------------ operand checks
    Case("add_dtype_mismatch", """
        with pl.section_vector():
            a = pl.make_tile(VEC, addr=0)
            b = pl.make_tile(VEC16, addr=0x1000)
            pl.add(a, a, b)  # !
        """, T),
    Case("add_two_args", """
        with pl.section_vector():
            a = pl.make_tile(VEC, addr=0)
            pl.add(a, a)  # !
        """, T),
    Case("add_scalar_destination", """
        with pl.section_vector():
            a = pl.make_tile(VEC, addr=0)
            pl.add(n, a, a)  # !
        """, T),
    Case("static_offset_beyond_tensor", """
        with pl.section_vector():
            a = pl.make_tile(VEC, addr=0)
            pl.load(a, x, [64, 0])  # !
        """, RANGE),
    Case("static_window_beyond_tensor", """
        with pl.section_vector():
            a = pl.make_tile(pl.TileType([16, 16], pl.DT_FP32, valid_shape=[16, 16]), addr=0)
            pl.store(y, a, [0, 56])  # !
        """, RANGE),
    Case("shape_index_out_of_range", """
        r = x.shape[5]  # !
        """, T),
    Case("printf_conversion_count", """
        with pl.section_vector():
            pl.printf("%d %d\\n", n)  # !
        """, OP),  # a ValueError, as the real frontend raises
    Case("printf_of_a_tile", """
        with pl.section_vector():
            a = pl.make_tile(VEC, addr=0)
            pl.printf("%d", a)  # !
        """, T),
]


def _write(case: Case, tmp_path) -> tuple[str, str, int]:
    text = HEADER + textwrap.dedent(case.before) + KERNEL + textwrap.indent(
        textwrap.dedent(case.body).strip("\n"), "    ") + "\n"
    lines = text.splitlines()
    marked = [i for i, line in enumerate(lines, 1) if MARK in line]
    assert len(marked) == 1, "exactly one line is marked"
    path = tmp_path / f"bad_{case.id}.py"
    path.write_text(text)
    return str(path), text, marked[0]


def _parse_both(kdef) -> None:
    for target in ("cube", "vector"):
        parse_target(kdef, Specialization(arch="a5"), target)


def _run(case: Case, tmp_path) -> tuple[PyptoError, str, int]:
    path, text, line = _write(case, tmp_path)
    source = text
    if case.ast_only:  # Python would refuse the text: run it with the marked line as `pass`
        lines = text.splitlines()
        code = lines[line - 1]
        lines[line - 1] = code[:len(code) - len(code.lstrip())] + "pass"
        source = "\n".join(lines) + "\n"
    ns = {"__name__": f"bad_input_{case.id}"}
    with pytest.raises(PyptoError) as info:
        exec(compile(source, path, "exec"), ns)
        kdef = ns["k"]
        if case.ast_only:
            tree = next(n for n in ast.parse(text).body
                        if isinstance(n, ast.FunctionDef) and n.name == "k")
            kdef = kdef.replace(tree=tree)
        _parse_both(kdef)
    return info.value, path, line


def test_there_are_at_least_forty_cases():
    assert len(CASES) >= 40
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_bad_input(case: Case, tmp_path):
    err, path, line = _run(case, tmp_path)
    cls, code = case.error
    assert type(err) is cls, f"{type(err).__name__}: {err}"
    assert err.code_str == code
    assert err.span is not None and err.span.file == path
    assert err.span.line == line, str(err)
    rendered = str(err)
    assert f"--> {path}:{line}:" in rendered
    caret_lines = [row for row in rendered.splitlines() if row.strip().startswith("|")
                   and set(row.split("|", 1)[1].strip()) == {"^"}]
    assert caret_lines, rendered
    assert f"ErrCode: {code}!" in rendered.splitlines()[0]
    if case.hint is not None:
        assert err.hint and case.hint in err.hint


# ---------------------------------------------------------------- outside the parser


@pytest.mark.parametrize("call", [
    lambda: pl.add(1, 2, 3),
    lambda: pl.make_tile(pl.TileType([16, 16], pl.DT_FP32), addr=0),
    lambda: pl.system.sync_src(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.S, event_id=0),
    lambda: pl.simt.thread_idx(),
    lambda: pl.vf.add(1, 2, 3),
], ids=["add", "make_tile", "system.sync_src", "simt.thread_idx", "vf.add"])
def test_declaration_called_outside_a_kernel(call):
    with pytest.raises(DSLDeclarationError) as info:
        call()
    err = info.value
    assert isinstance(err, RuntimeError) and isinstance(err, InvalidOperation)
    assert err.code_str == "F00007"
    assert "must be used inside a PyPTO kernel" in err.message


@pl.jit(arch="a5")
def _plain(x: pl.Tensor[[8, 8], pl.DT_FP32]):
    with pl.section_vector():
        pass


def _launch_error(fn) -> PyptoError:
    with pytest.raises(PyptoError) as info:
        fn()
    return info.value


@pytest.mark.parametrize("key", [(None, 0), (None, True), (None, 1, {"MODE": 0}), (None,)],
                         ids=["zero_block_dim", "bool_block_dim", "tiling_key_without_schema",
                              "one_item"])
def test_launch_form_errors(key):
    err = _launch_error(lambda: _plain[key])
    assert isinstance(err, InvalidArgument) and isinstance(err, ValueError)
    assert err.code_str == "F0000E" and err.span is None


def test_tiling_key_errors():
    from pypto_pro.runtime import TilingKeyField

    class Bad:
        MODE = TilingKeyField(bits=1, values=[0, 1, 2])

    def decorate():
        @pl.jit(arch="a5", tiling_key=Bad)
        def keyed(x: pl.Tensor[[8], pl.DT_FP32]):
            pass

    err = _launch_error(decorate)
    assert isinstance(err, InvalidArgument) and err.code_str == "F0000E"

    class Good:
        MODE = TilingKeyField(bits=2, values=[0, 1, 2])

    @pl.jit(arch="a5", tiling_key=Good)
    def keyed(x: pl.Tensor[[8], pl.DT_FP32]):
        pass

    for form in (lambda: keyed(None), lambda: keyed[None, 1], lambda: keyed[None, 1, {"MODE": 7}]):
        err = _launch_error(form)
        assert isinstance(err, InvalidArgument) and err.code_str == "F0000E"


@pytest.mark.parametrize("section,missing", [("cube", "vector"), ("vector", "cube")])
def test_cross_core_sync_with_one_section_only(section, missing, tmp_path):
    from pypto_pro.compiler import compile_kernel

    pipe = "FIX" if section == "cube" else "V"
    case = Case("one_sided_cross_core", f"""
        with pl.section_{section}():
            pl.system.set_cross_core(pipe=pl.PipeType.{pipe}, event_id=0)  # !
        """, OP)
    path, text, _ = _write(case, tmp_path)  # reported at the kernel, not at the marked line
    ns = {"__name__": "bad_input_one_sided"}
    exec(compile(text, path, "exec"), ns)
    with pytest.raises(InvalidOperation) as info:
        compile_kernel(ns["k"], Specialization(arch="a5"))
    err = info.value
    assert err.code_str == "F00007" and isinstance(err, ValueError)
    assert f"Contains ffts cross sync but {missing} code is missing" in err.message
    def_line = next(i for i, line in enumerate(text.splitlines(), 1) if line.startswith("def k"))
    assert err.span is not None and err.span.line == def_line
