"""Yet more behaviour of the real PyPTO Pro frontend (its parser, type resolver and op builders),
written as our own kernels checked on the simulator and the native backend. Covered: a constant
division by zero (left to run time, where it fails at its line; a float one gives ±inf), dict
displays (refused in the real parser's two ways; a constant one indexed at once folds), a
constant tile-group index out of range (a type error), the real parameter names of the ops
(shown by `inspect.signature`, accepted as keywords), the real load / store / move builder checks
(dtypes, `order`, store phase / atomic enums, fixpipe quantisation limits), a struct assigned to
another name (an alias, as the real code generator binds it), annotated parameters of inlined
helpers (the real lenient check: kind and dtype family, shapes not compared; a tensor annotation
with DYNAMIC / STATIC / `...` checked strictly), an MX matmul short of operands, annotated
assignments (a bare annotation or a non-name target refused; the annotation itself not read).
"""
from __future__ import annotations

import math

import pytest
import torch
from dual_backend import HAS_CXX, on_backend, sim_and_native
from kernel_source import assert_refused, compile_source

import pypto_pro.language as pl
from pypto_pro.errors import ParserTypeError, SimulationError, UnsupportedFeatureError

BACKENDS = ("sim", "native") if HAS_CXX else ("sim",)

# ---------------------------------------------------------------- constant division by zero


@pl.jit
def constant_divisions(out: pl.Tensor[[4], pl.DT_FP32], n: pl.DT_INT32):
    with pl.section_vector():
        pl.setval(out, 0, 1 / 0)  # not folded: FP32 1.0 / 0.0 at run time
        pl.setval(out, 1, -1.0 / 0)
        pl.setval(out, 2, 7 / 2)  # folded
        if n > 3:
            pl.setval(out, 3, 1 // 0)  # an integer division by zero, when it runs


@pl.jit
def constant_remainder(out: pl.Tensor[[1], pl.DT_INT32], n: pl.DT_INT32):
    with pl.section_vector():
        if n > 3:
            pl.setval(out, 0, 7 % 0)


def test_a_constant_float_division_by_zero_gives_infinity():
    def run():
        out = torch.zeros(4)
        constant_divisions(out, 1)
        return out

    assert sim_and_native(run).tolist() == [math.inf, -math.inf, 3.5, 0.0]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kernel,out,marker", [
    (constant_divisions, torch.zeros(4), "1 // 0"), (constant_remainder,
                                                      torch.zeros(1, dtype=torch.int32), "7 % 0"),
])
def test_a_constant_integer_division_by_zero_fails_at_its_line_when_it_runs(backend, kernel, out,
                                                                            marker):
    from kernel_source import line_of

    with pytest.raises(SimulationError, match="division by zero in scalar code") as info:
        on_backend(backend, lambda: kernel(out, 5))
    assert info.value.span.line == line_of(kernel, marker)


# ---------------------------------------------------------------- dict displays


@pytest.mark.parametrize("name,body,error,fragment", [
    ("constant_dict", "d = {'a': 1}", ParserTypeError,
     "Unsupported closure variable type: dict"),
    ("runtime_dict", "d = {'a': n}", UnsupportedFeatureError,
     "Unsupported expression type: Dict"),
    ("dict_argument", "pl.setval(out, 0, first({1: 2}))", ParserTypeError,
     "Unsupported closure variable type: dict"),
    ("missing_key", "pl.setval(out, 0, {1: 2}[3])", ParserTypeError,
     "Unsupported closure variable type: dict"),
    ("unpacked_dict", "d = {**{1: 2}}", UnsupportedFeatureError,
     "Unsupported expression type: Dict"),
    ("string_item", "pl.setval(out, 0, {1: 'x'}[1])", ParserTypeError,
     "Unsupported closure variable type: str"),
])
def test_a_dict_display_is_refused_as_the_real_parser_refuses_it(tmp_path, name, body, error,
                                                                 fragment):
    assert_refused(error, fragment, tmp_path, name,
                   "out: pl.Tensor[[4], pl.DT_INT32], n: pl.DT_INT32",
                   f"with pl.section_vector():\n    {body}\n",
                   prelude="def first(v):\n    return v\n")


@pl.jit
def dict_lookup(out: pl.Tensor[[1], pl.DT_INT32]):
    with pl.section_vector():
        pl.setval(out, 0, {"rows": 16, "cols": 32}["cols"] + 1)  # Python folds it whole


def test_a_constant_dict_indexed_at_once_folds():
    def run():
        out = torch.zeros(1, dtype=torch.int32)
        dict_lookup(out)
        return out

    assert sim_and_native(run).tolist() == [33]


# ---------------------------------------------------------------- tile-group indices


@pytest.mark.parametrize("index,fragment", [
    ("3", "tile group index 3 is out of range for a 2-tile group"),
    ("-1", "tile group index -1 is out of range for a 2-tile group"),
    ("1.0", "tile group index must be an integer scalar, but got"),
])
def test_a_bad_constant_tile_group_index_is_a_type_error(tmp_path, index, fragment):
    assert_refused(ParserTypeError, fragment, tmp_path, "group_index",
                   "out: pl.Tensor[[16, 32], pl.DT_FP16]", f"""
        g = pl.make_tile_group(type=pl.TileType([16, 32], pl.DT_FP16), addrs=[0, 0x400],
                               depth=2)
        with pl.section_vector():
            pl.store(out, g[{index}], [0, 0])
     """)


# ---------------------------------------------------------------- the real parameter names


@pytest.mark.parametrize("op,text", [
    ("insert", "(dst_tile, src_tile, offset)"),
    ("load", "(dst_tile, src_tensor, offsets, *, order=None)"),
    ("store_tile", "(dst_tensor, src_tile, tile_offsets, *, relu_pre_mode=None, scale=None, "
                   "order=None, atomic=pl.AtomicType.AtomicNone, phase=None)"),
    ("matmul", "(dst_tile, lhs_tile, rhs_tile, bias_tile=None, *, phase=None)"),
    ("add", "(out, lhs, rhs)"),
    ("mrgsort2", "(src0, src1, dst, tmp, *args, exhausted=False)"),
    ("getval", "(container, offset)"),
])
def test_an_op_shows_the_real_parameter_names(op, text):
    import inspect

    assert str(inspect.signature(getattr(pl, op))) == text
    assert getattr(pl, op).__doc__.startswith(f"pl.{op}{text}")


VEC = pl.TileType(shape=[16, 32], dtype=pl.DT_FP32, target_memory=pl.MemorySpace.Vec)


@pl.jit
def keyword_operands(x: pl.Tensor[[16, 64], pl.DT_FP32], y: pl.Tensor[[16, 64], pl.DT_FP32]):
    g = pl.make_tile_group(type=VEC, addrs=[0x0, 0x800], mutex_ids=[0, 1])  # auto_mutex syncs
    with pl.section_vector():
        t = g.next()
        u = g.next()
        pl.load(out=t, tensor=x, offsets=[0, 0])  # the op builder's names
        pl.load(u, src_tensor=x, offsets=[0, 32])  # the declaration's
        pl.add(out=u, lhs=u, rhs=t)
        pl.setval(container=u, offset=0, value=pl.getval(container=t, offset=1))
        pl.store(dst_tensor=y, src_tile=t, offsets=[0, 0])
        pl.store_tile(y, u, tile_offsets=[0, 1])


def test_operands_passed_by_their_real_names():
    x = torch.randn(16, 64)

    def run():
        y = torch.zeros(16, 64)
        keyword_operands(x, y)
        return y

    expected = x.clone()
    expected[:, 32:] += x[:, :32]
    expected[0, 32] = x[0, 1]
    assert torch.equal(sim_and_native(run), expected)


def test_an_operand_given_twice_is_a_type_error(tmp_path):
    assert_refused(ParserTypeError, "pl.insert() got multiple values for argument 'src_tile'",
                   tmp_path, "twice", "x: pl.Tensor[[16, 32], pl.DT_FP16]", """
        a = pl.make_tile(pl.TileType([16, 32], pl.DT_FP16, pl.MemorySpace.Mat), addr=0)
        b = pl.make_tile(pl.TileType([16, 32], pl.DT_FP16), addr=0)
        with pl.section_vector():
            pl.insert(a, b, [0, 0], src_tile=b)
     """)


# ---------------------------------------------------------------- the real load / store builders

_ACC = "pl.make_tile(pl.TileType([16, 16], pl.DT_FP32, pl.MemorySpace.Acc), addr=0)"
_SCALING = "pl.make_tile(pl.TileType([1, 16], pl.DT_INT64, pl.MemorySpace.Scaling), addr=0)"


@pytest.mark.parametrize("name,section,body,fragment", [
    ("bool_tensor", "vector", "pl.load(pl.make_tile(pl.TileType([16, 32], pl.DT_UINT8), addr=0), "
                              "flags, [0, 0])",
     "load: unsupported src tensor dtype bool, supported: b8/b16/b32/b64"),
    ("int4_tile", "vector", "pl.store_tile(y, pl.make_tile(pl.TileType([16, 64], pl.DT_INT4), "
                            "addr=0), [0, 0])",
     "store_tile: unsupported src tile dtype int4, supported: b8/b16/b32/b64"),
    ("descending_store", "vector", "pl.store(y, pl.make_tile(pl.TileType([16, 16], pl.DT_FP32), "
                                   "addr=0), [0, 0], order=[1, 0])",
     "store: order must be ascending, got [1, 0]"),
    ("repeated_axis", "vector", "pl.load(pl.make_tile(pl.TileType([16, 16], pl.DT_FP32), "
                                "addr=0), y, [0, 0], order=[1, 1])",
     "load: order axes must be unique, got [1, 1]"),
    ("axis_past_rank", "vector", "pl.load(pl.make_tile(pl.TileType([16, 16], pl.DT_FP32), "
                                 "addr=0), y, [0, 0], order=[0, 5])",
     "load: order axis 5 is out of range for Tensor rank 2"),
    ("phase_of_another_enum", "cube", f"pl.store(y, {_ACC}, [0, 0], phase=pl.AccPhase.Final)",
     "store: invalid phase value pl.AccPhase.Final, expected STPhase"),
    ("atomic_of_another_enum", "cube", f"pl.store(y, {_ACC}, [0, 0], atomic=pl.STPhase.Final)",
     "store: invalid atomic value pl.STPhase.Final, expected AtomicType"),
    ("quant_to_uint8", "cube", f"pl.store(u8, {_ACC}, [0, 0], scale=0.5)",
     "store: scale quantization to UINT8 is not supported"),
    ("quant_to_bf16", "cube", f"pl.store_tile(bf, {_ACC}, [0, 0], scale=0.5)",
     "store_tile: scale quantization from fp32 to BF16 is not supported"),
    ("move_quant_to_uint8", "cube",
     f"pl.move(pl.make_tile(pl.TileType([16, 16], pl.DT_UINT8), addr=0), {_ACC}, scale=0.5)",
     "move: scale quantization to UINT8 is not supported"),
    ("channel_scale_with_relu", "cube",
     f"pl.store(y, {_ACC}, [0, 0], scale={_SCALING}, relu_pre_mode=pl.ReluPreMode.NormalRelu)",
     "scale (per-channel) cannot be used together with relu_pre_mode"),
    ("channel_scale_with_phase", "cube",
     f"pl.store(y, {_ACC}, [0, 0], scale={_SCALING}, phase=pl.STPhase.Final)",
     "scale (per-channel) cannot be combined with phase"),
])
def test_the_real_load_and_store_builder_checks(tmp_path, name, section, body, fragment):
    from pypto_pro.errors import ParserSyntaxError

    assert_refused(ParserSyntaxError, fragment, tmp_path, name,
                   "y: pl.Tensor[[64, 64], pl.DT_FP32], flags: pl.Tensor[[16, 32], pl.DT_BOOL], "
                   "u8: pl.Tensor[[64, 64], pl.DT_UINT8], bf: pl.Tensor[[64, 64], pl.DT_BF16]",
                   f"with pl.section_{section}():\n    {body}\n")


# ---------------------------------------------------------------- struct assignment


def _bump(s):
    s.hi = s.hi + 10


@pl.jit
def struct_aliases(out: pl.Tensor[[6], pl.DT_INT32], n: pl.DT_INT32):
    with pl.section_vector():
        cfg = pl.struct("Cfg", lo=1, hi=n)
        a = cfg  # the real code generator binds `a` to cfg's C++ name: one struct
        a.lo = 7
        a.hi = a.hi + 1
        _bump(a)  # a helper's parameter is the caller's struct too
        pl.setval(out, 0, cfg.lo)
        pl.setval(out, 1, cfg.hi)
        pl.setval(out, 2, a.lo)
        pl.setval(out, 3, a.hi)
        b = a
        b.lo = b.lo * 2
        pl.setval(out, 4, cfg.lo)
        pl.setval(out, 5, b.lo)


def test_assigning_a_struct_to_a_name_aliases_it():
    def run():
        out = torch.zeros(6, dtype=torch.int32)
        struct_aliases(out, 5)
        return out

    assert sim_and_native(run).tolist() == [7, 16, 7, 16, 14, 14]


# ---------------------------------------------------------------- annotated helper parameters

ROWS = 16


def _first_plus(t: pl.Tile[[ROWS, 32], pl.DT_FP32], k: pl.DT_INT64, o: pl.Tensor[[4], pl.DT_FP32]):
    pl.setval(o, 0, pl.getval(t, 0) + k)


@pl.jit
def annotated_helper(x: pl.Tensor[[32, 32], pl.DT_FP32], out: pl.Tensor[[4], pl.DT_FP32],
                     n: pl.DT_INT32):
    g = pl.make_tile_group(type=pl.TileType([32, 32], pl.DT_FP32), addrs=[0x0], mutex_ids=[0])
    with pl.section_vector():
        ROWS = 7  # noqa: N806, F841 (a kernel local: the annotation reads the helper's ROWS)
        t = g.next()
        pl.load(t, x, [0, 0])
        _first_plus(t, n, out)  # another shape, an INT32 for INT64: the real check passes


def test_an_annotated_helper_parameter_takes_a_value_of_its_kind_and_family():
    x = torch.randn(32, 32)

    def run():
        out = torch.zeros(4)
        annotated_helper(x, out, 3)
        return out

    assert sim_and_native(run).tolist() == [(x[0, 0] + 3).item(), 0.0, 0.0, 0.0]


@pytest.mark.parametrize("call,fragment", [
    ("first_plus(x, n, out)", "Parameter 't' annotated as a tile of pl.DT_FP32 but "
                              "called/returned with a tensor of pl.DT_FP32"),
    ("first_plus(t, 1.5, out)", "Parameter 'k' annotated as a scalar of pl.DT_INT64 but "
                                "called/returned with a scalar of pl.DT_FP32"),
    ("first_plus(ti, n, out)", "Parameter 't' annotated as a tile of pl.DT_FP32 but "
                               "called/returned with a tile of pl.DT_INT32"),
])
def test_a_helper_argument_of_another_kind_or_family_is_refused(tmp_path, call, fragment):
    assert_refused(ParserTypeError, fragment, tmp_path, "annotated",
                   "x: pl.Tensor[[16, 32], pl.DT_FP32], out: pl.Tensor[[4], pl.DT_FP32], "
                   "n: pl.DT_INT32", f"""
        t = pl.make_tile(pl.TileType([16, 32], pl.DT_FP32), addr=0)
        ti = pl.make_tile(pl.TileType([16, 32], pl.DT_INT32), addr=0x800)
        with pl.section_vector():
            {call}
     """, prelude="def first_plus(t: pl.Tile[[16, 32], pl.DT_FP32], k: pl.DT_INT64, o):\n"
                  "    pl.setval(o, 0, pl.getval(t, 0) + k)\n")


@pytest.mark.parametrize("call", ["pl.matmul_mx()", "pl.matmul_mx_acc(c)", "pl.matmul(c)",
                                  "pl.matmul_acc(c, c)"])
def test_a_matmul_short_of_operands_is_an_arity_error(tmp_path, call):
    assert_refused(ParserTypeError, "positional arguments, got", tmp_path, "mx_arity",
                   "x: pl.Tensor[[16, 32], pl.DT_FP16]", f"""
        c = pl.make_tile(pl.TileType([16, 16], pl.DT_FP32, pl.MemorySpace.Acc), addr=0)
        with pl.section_cube():
            {call}
     """)


@pl.jit
def policy_helper(x: pl.Tensor[[pl.DYNAMIC, 32], pl.DT_FP32], out: pl.Tensor[[2], pl.DT_INT32]):
    with pl.section_vector():
        pl.setval(out, 0, _rows(x))
        pl.setval(out, 1, _rows(out))


def _rows(t: pl.Tensor[[pl.DYNAMIC, ...], pl.DT_INT32] | pl.Tensor):  # not a policy: lenient
    return t.shape[0]


def test_a_helper_tensor_annotation_without_a_policy_is_lenient():
    def run():
        out = torch.zeros(2, dtype=torch.int32)
        policy_helper(torch.zeros(5, 32), out)
        return out

    assert sim_and_native(run).tolist() == [5, 2]


@pytest.mark.parametrize("annotation,argument,fragment", [
    ("pl.Tensor[[pl.DYNAMIC, 32], pl.DT_FP32]", "x", None),
    ("pl.Tensor[[pl.DYNAMIC, 32], pl.DT_FP16]", "x", "dtype mismatch: expected fp16, got fp32"),
    ("pl.Tensor[[pl.DYNAMIC, 16], pl.DT_FP32]", "x", "axis 1 must equal 16"),
    ("pl.Tensor[[pl.STATIC, 32], pl.DT_FP32]", "x", "STATIC axis 0 requires a constant"),
    ("pl.Tensor[[pl.DYNAMIC], pl.DT_FP32]", "x", "rank does not match"),
    ("pl.Tensor[[16, ...], pl.DT_FP32]", "w", "ellipsis axis 1 requires a constant"),
    ("pl.Tensor[[pl.DYNAMIC, ...], pl.DT_FP32]", "s", None),
    ("pl.Tensor[[pl.DYNAMIC, 32], pl.DT_FP32]", "t",
     "policy annotation requires a Tensor argument"),
])
def test_a_helper_tensor_annotation_with_a_shape_policy_is_strict(tmp_path, annotation,
                                                                   argument, fragment):
    params = ("x: pl.Tensor[[pl.DYNAMIC, 32], pl.DT_FP32], w: pl.Tensor[[16, pl.DYNAMIC], "
              "pl.DT_FP32], s: pl.Tensor[[16, 32, 4], pl.DT_FP32], out: pl.Tensor[[1], "
              "pl.DT_INT32]")
    body = f"""
        t = pl.make_tile(pl.TileType([16, 32], pl.DT_FP32), addr=0)
        with pl.section_vector():
            pl.setval(out, 0, first_rows({argument}))
     """
    prelude = f"def first_rows(a: {annotation}):\n    return 1\n"
    if fragment is None:
        compile_source(tmp_path, "policy", params, body, prelude=prelude)
    else:
        assert_refused(ParserTypeError, f"Helper parameter 'a' {fragment}", tmp_path, "policy",
                       params, body, prelude=prelude)


# ---------------------------------------------------------------- annotated assignments


@pytest.mark.parametrize("statement,error,fragment", [
    ("k: pl.DT_INT32", UnsupportedFeatureError, "Annotated assignment with no value is not "
                                                "supported"),
    ("cfg.lo: int = 3", "syntax", "Only simple variable assignments supported"),
])
def test_annotated_assignments_the_real_parser_refuses(tmp_path, statement, error, fragment):
    from pypto_pro.errors import ParserSyntaxError

    assert_refused(ParserSyntaxError if error == "syntax" else error, fragment, tmp_path,
                   "annotated_assignment", "out: pl.Tensor[[1], pl.DT_INT32]", f"""
        with pl.section_vector():
            cfg = pl.struct("Cfg", lo=1)
            {statement}
     """)


@pl.jit
def annotated_local(out: pl.Tensor[[1], pl.DT_INT32], n: pl.DT_INT32):
    with pl.section_vector():
        k: pl.DT_INT32 = n * 2  # the annotation is not read
        pl.setval(out, 0, k)


def test_an_annotated_assignment_binds_its_value():
    def run():
        out = torch.zeros(1, dtype=torch.int32)
        annotated_local(out, 21)
        return out

    assert sim_and_native(run).tolist() == [42]


def test_a_vector_function_argument_of_another_family_is_refused(tmp_path):
    assert_refused(ParserTypeError, "Parameter 't' annotated as a tile of pl.DT_FP32 but "
                                    "called/returned with a tile of pl.DT_INT32", tmp_path,
                   "vf_annotated", "out: pl.Tensor[[1], pl.DT_INT32]", """
        ti = pl.make_tile(pl.TileType([16, 32], pl.DT_INT32), addr=0)
        with pl.section_vector():
            touch(ti)
     """, prelude="@pl.vector_function\ndef touch(t: pl.Tile[[16, 32], pl.DT_FP32]):\n"
                  "    pass\n")
