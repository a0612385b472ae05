"""Parser features (spec §2.4–§2.14) checked on the printed IR (`python_print(..., concise=True)`):
control flow, constant folding and promotion, helper inlining, closures, aggregates, tile
slicing and groups, system variables, VF bodies, SIMT launches, section projection and
compile-time specialisation."""
from __future__ import annotations

import textwrap

import pytest

import pypto_pro.language as pl
from pypto_pro.ir.nodes import FunctionType
from pypto_pro.ir.printer import python_print
from pypto_pro.language.parser import parse_target
from pypto_pro.runtime.kernel_def import Specialization

TILE = 96
VEC = pl.TileType([16, 16], pl.DT_FP32)
VEC16 = pl.TileType([16, 16], pl.DT_FP16)
USE_EXP = True
DYN = pl.DYNAMIC


def ir(kernel, target: str = "vector", spec: Specialization | None = None,
       concise: bool = True) -> str:
    result = parse_target(kernel, spec or Specialization(arch="a5"), target)
    return python_print(result.program, concise=concise)


def body(text: str) -> list[str]:
    """The printed lines, stripped, without the program header and the signature."""
    return [line.strip() for line in text.splitlines()[3:] if line.strip()]


def contains_in_order(text: str, *snippets: str) -> bool:
    pos = 0
    for s in snippets:
        pos = text.find(s, pos)
        if pos < 0:
            return False
        pos += len(s)
    return True


# ---------------------------------------------------------------- control flow


@pl.kernel(arch="a5")
def k_loops(x: pl.Tensor[[64, 64], pl.DT_FP32], n: pl.DT_INT32):
    with pl.section_vector():
        for i in pl.range(10, 0, -2):
            pl.printf("%d\n", i)
        for j in pl.range(n):
            pl.printf("%d\n", j)
        for s in pl.range(pl.get_block_idx(), n, pl.get_block_num()):
            pass


def test_range_forms_and_negative_step():
    text = ir(k_loops)
    assert "for i in ir.range(10, 0, -2):" in text
    assert "for j in ir.range(0, n, 1):" in text
    assert "for s in ir.range(ir.call @get_block_idx(), n, ir.call @get_block_num()):" in text


@pl.kernel(arch="a5")
def k_while(x: pl.Tensor[[64], pl.DT_INT32], n: pl.DT_INT32):
    with pl.section_vector():
        i = 0
        while i < n:
            i = i + 1
            if i == 3:
                continue
            if i > 5:
                break
        j = 0
        while pl.getval(x, j) != 0:
            j += 1


def test_while_break_continue_and_a_condition_with_statements():
    text = ir(k_while)
    assert contains_in_order(text, "while i < n:", "i = i + 1", "if i == 3:", "continue",
                             "if i > 5:", "break")
    # the getval of the second condition is re-evaluated every iteration
    assert contains_in_order(text, "while True:", "ir.call @block.getval(x, j)",
                             "if not ", "break", "j = j + 1")


@pl.kernel(arch="a5")
def k_if(x: pl.Tensor[[64, 64], pl.DT_FP32], n: pl.DT_INT32):
    with pl.section_vector():
        a = pl.make_tile(VEC, addr=0x0)
        b = pl.make_tile(VEC, addr=0x400)
        if n > 4:
            pl.add(a, a, b)
        elif n > 2:
            pl.sub(a, a, b)
        else:
            pl.mul(a, a, b)
        if n < 0:
            return
        pl.exp(a, a)


def test_if_elif_else_and_early_return():
    lines = body(ir(k_if))
    i = lines.index("if n > 4:")
    assert lines[i:i + 8] == [
        "if n > 4:", "ir.eval(ir.call @block.add(a, a, b))", "else:", "if n > 2:",
        "ir.eval(ir.call @block.sub(a, a, b))", "else:", "ir.eval(ir.call @block.mul(a, a, b))",
        "if n < 0:"]
    assert lines[-2:] == ["return", "ir.eval(ir.call @block.exp(a, a))"]


@pl.kernel(arch="a5")
def k_ternary(x: pl.Tensor[[64, 64], pl.DT_FP32], n: pl.DT_INT32):
    with pl.section_vector():
        a = pl.make_tile(VEC, addr=0x0)
        b = pl.make_tile(VEC, addr=0x400)
        s = n if n > 0 else 0
        t = a if n > 0 else b
        pl.add(t, t, t)
        c = 1 if pl.constexpr(USE_EXP) else 2
        pl.printf("%d %d\n", s, c)
        if pl.constexpr(USE_EXP):
            pl.exp(a, a)
        else:
            pl.log(a, a)
        if TILE > 100:
            pl.neg(a, a)


def test_ternaries_and_constexpr():
    text = ir(k_ternary)
    assert "s = n if n > 0 else 0" in text
    assert "t = a if n > 0 else b" in text and "block.add(t, t, t)" in text
    assert "printf('%d %d\\n', s, 1," in text, "constexpr ternary folds"
    assert "block.exp(a, a)" in text and "block.log" not in text
    assert "block.neg" not in text, "a Python if on a constant is folded"


def test_tile_ternary_type_lists_both_slots():
    text = ir(k_ternary, concise=False)
    assert "t: ir.Tile[[16, 16], ir.FP32, ir.MemRef(ir.MemorySpace.Vec, [0x0, 0x400], 1024)" \
        in text


@pl.kernel(arch="a5")
def k_membership(x: pl.Tensor[[64, 64], pl.DT_FP32], n: pl.DT_INT32):
    with pl.section_vector():
        if n in (1, 3):
            pl.printf("a\n")
        if n in pl.range(0, 8, 2):
            pl.printf("b\n")


def test_membership_is_desugared():
    text = ir(k_membership)
    assert contains_in_order(text, "if ", "n == 1 or n == 3:")
    assert "if n >= 0 and n < 8 and (n - 0) % 2 == 0:" in text


# ---------------------------------------------------------------- constants and scalars


@pl.kernel(arch="a5")
def k_scalars(x: pl.Tensor[[DYN, 64], pl.DT_FP32], n: pl.DT_INT32, f: pl.DT_FP32):
    with pl.section_vector():
        v = TILE * 2 // 3
        w = (TILE + 4) % 7 - 2 ** 3
        p = n * 1.5
        q = n + x.shape[0]
        r = f / 2
        m1 = pl.min(n, 3)
        m2 = pl.max(3, 9)
        m3 = min(n, x.shape[0])
        m4 = abs(n)
        m5 = -n
        acc = 0
        acc += n
        acc <<= 1
        pl.printf("%d %d %f %d %f %d %d %d %d %d %d\n", v, w, p, q, r, m1, m2, m3, m4, m5, acc)


def test_constant_folding():
    text = ir(k_scalars)
    assert "printf('%d %d %f %d %f %d %d %d %d %d %d\\n', 64, -6, p, q, r, m1, 9," in text
    assert "m1 = min(n, 3)" in text and "m3 = min(n, __pypto_dyn_x_0)" in text
    assert "m4 = abs(n)" in text and "m5 = -n" in text


def test_scalar_promotion():
    text = ir(k_scalars, concise=False)
    assert "p: ir.FP32 = n * 1.5" in text
    assert "q: ir.INDEX = n + __pypto_dyn_x_0" in text, "the wider int wins"
    assert "r: ir.FP32 = f / 2" in text
    assert "acc: ir.INDEX = acc + n" in text, "acc starts as an int constant (INDEX)"
    assert "acc: ir.INDEX = acc << 1" in text


# ---------------------------------------------------------------- helpers and closures


def add_then_double(a, b):
    c = a + b
    return c * 2


def clamp_down(a):
    if a > 3:
        return a - 3
    return a + 1


def next_slot(g):
    t = g.next()
    return t


def no_return(t):
    pl.exp(t, t)


@pl.kernel(arch="a5")
def k_helpers(x: pl.Tensor[[64, 64], pl.DT_FP32], n: pl.DT_INT32):
    with pl.section_vector():
        g = pl.make_tile_group(type=VEC, addrs=0, mutex_ids=[0, 1])
        h = add_then_double(n, 1)
        e = clamp_down(n)
        t = next_slot(g)
        no_return(t)
        pl.printf("%d %d\n", h, e)


def test_helper_inlining_with_tail_and_early_returns():
    text = ir(k_helpers)
    assert contains_in_order(text, "c = n + 1", "h = c * 2")
    # an early return: the rest of the helper moves to the other branch of its if
    assert contains_in_order(text, "if n > 3:", "result = n - 3", "else:", "result = n + 1")
    assert "while" not in text
    assert contains_in_order(text, "tile_group.next(g)", "block.exp(t, t)")
    assert "printf('%d %d\\n', h, result," in text
    assert "add_then_double" not in text and "clamp_down" not in text


def make_closure_kernel():
    local_rows = 8

    @pl.kernel(arch="a5")
    def k_closure(x: pl.Tensor[[64, 64], pl.DT_FP32]):
        with pl.section_vector():
            pl.printf("%d %d\n", local_rows * TILE, later_helper(2))

    def later_helper(v):  # defined after the kernel: resolved when the kernel is parsed
        return v + local_rows

    return k_closure


def test_closure_capture_of_constants_and_helpers():
    text = ir(make_closure_kernel())
    assert "printf('%d %d\\n', 768, 10," in text


# ---------------------------------------------------------------- aggregates


@pl.kernel(arch="a5")
def k_aggregates(x: pl.Tensor[[DYN, 64], pl.DT_FP32], n: pl.DT_INT32):
    with pl.section_vector():
        cfg = pl.struct("Cfg", count=n, scale=1.0)
        cfg.count = cfg.count + 1
        tp = pl.make_tuple(rows=x.shape[0], cols=64)
        arr = pl.struct_array(4, "Ring", head=0)
        arr[1].head = n
        pl.printf("%d %d %d %d\n", cfg.count, tp.rows, tp.cols, arr[1].head)


def test_struct_tuple_and_struct_array():
    text = ir(k_aggregates)
    assert "cfg = ir.call @struct.create(n, 1.0, name='Cfg', fields=['count', 'scale']" in text
    assert "cfg.count = ir.cast(cfg.count + 1, ir.INT32)" in text  # stored as the INT32 member
    assert "name='Ring'" in text and "array_size=4" in text
    assert "arr[1].head = n" in text
    # make_tuple fields fold back to the values packed into it
    assert "printf('%d %d %d %d\\n', cfg.count, __pypto_dyn_x_0, 64, arr[1].head" in text


# ---------------------------------------------------------------- tiles, groups, metadata


@pl.kernel(arch="a5")
def k_tiles(x: pl.Tensor[[DYN, 64], pl.DT_FP32], n: pl.DT_INT32):
    with pl.section_vector():
        g = pl.make_tile_group(type=VEC, addrs=0, mutex_ids=[0, 1])
        a = pl.make_tile(VEC, addr=0x1000)
        sub = a[0:8, 8:16]
        pl.add(sub, sub, sub)
        c1 = g.next()
        c2 = g.current()
        c3 = g.previous()
        c4 = g[1]
        c5 = g[n % 2]
        pl.add(c1, c2, c3)
        pl.add(c4, c5, c4)
        rows = x.shape[0]
        vr = a.valid_shape[0]
        pl.set_validshape(a, [rows // 2, 16])
        pl.set_validshape(g, [4, 4])
        v = x[1, 2]
        x[0, n] = 1.0
        pl.printf("%d %d %f\n", rows, vr, v)


def test_slicing_groups_and_metadata():
    text = ir(k_tiles)
    assert ("sub = ir.call @block.subview(a, [0, 8], [min(8, ir.call @block.tile_valid_shape("
            "a, 0)), min(8, ir.call @block.tile_valid_shape(a, 1) - 8)])") in text
    assert "block.add(sub, sub, sub)" in text
    for line in ("c1 = ir.call @tile_group.next(g)", "c2 = ir.call @tile_group.current(g)",
                 "c3 = ir.call @tile_group.previous(g)", "c4 = ir.call @tile_group.get(g, 1)",
                 "c5 = ir.call @tile_group.get(g, n % 2)",
                 "vr = ir.call @block.tile_valid_shape(a, 0)",
                 "block.set_validshape(a, [__pypto_dyn_x_0 // 2, 16])",
                 "block.set_validshape(g, [4, 4])",
                 "v = ir.call @block.getval(x, (0 * __pypto_dyn_x_0 + 1) * 64 + 2)",
                 "block.setval(x, (0 * __pypto_dyn_x_0 + 0) * 64 + n, 1.0)"):
        assert line in text, line


def test_slice_type_and_slot_types():
    text = ir(k_tiles, concise=False)
    assert "sub: ir.Tile[[16, 16], ir.FP32" in text  # the parent's shape: its row stride
    assert "c4: ir.Tile[[16, 16], ir.FP32, ir.MemRef(ir.MemorySpace.Vec, 0x400, 1024)" in text
    assert "c5: ir.Tile[[16, 16], ir.FP32, ir.MemRef(ir.MemorySpace.Vec, [0x0, 0x400], 1024)" \
        in text


@pl.kernel(arch="a5")
def k_sysvars(x: pl.Tensor[[64, 64], pl.DT_FP32]):
    core = pl.get_block_idx() // pl.get_subblock_num()
    with pl.section_vector():
        sub = pl.get_subblock_idx()
        pl.printf("%d %d %d\n", core, sub, pl.get_block_num())
    with pl.section_cube():
        pl.printf("%d\n", core)


def test_system_variables_and_section_projection():
    vec = ir(k_sysvars, "vector")
    cube = ir(k_sysvars, "cube")
    shared = "core = ir.call @get_block_idx() // ir.call @get_subblock_num()"
    assert shared in vec and shared in cube, "statements outside sections go to both targets"
    assert "with ir.section_vector():" in vec and "section_cube" not in vec
    assert "with ir.section_cube():" in cube and "section_vector" not in cube
    assert "sub = ir.call @get_subblock_idx()" in vec
    assert "ir.call @get_block_num()" in vec


def test_matched_sections_decide_the_targets():
    spec = Specialization(arch="a5")
    assert parse_target(k_sysvars, spec, "cube").matched_sections == {"cube", "vector"}
    assert parse_target(k_tiles, spec, "cube").matched_sections == {"vector"}


# ---------------------------------------------------------------- VF and SIMT


@pl.vector_function
def vf_double(t):
    m = pl.vf.create_mask(dtype=pl.DT_FP32)
    r = pl.vf.load_align(t, 0)
    r2 = pl.vf.add(r, r, m)
    pl.vf.store_align(t, r2, m)


@pl.kernel(arch="a5")
def k_vf(x: pl.Tensor[[64, 64], pl.DT_FP32]):
    with pl.section_vector():
        a = pl.make_tile(VEC, addr=0x0)
        pl.load(a, x, [0, 0])
        vf_double(a)
        pl.store(x, a, [0, 0])


def test_vector_function_becomes_a_vf_section():
    text = ir(k_vf)
    assert contains_in_order(
        text, "block.load(a, x", "with ir.section_vf(function='vf_double'):",
        "m = ir.call @vf.create_mask(dtype=ir.DT_FP32)", "r = ir.call @vf.load_align(a, 0)",
        "r2 = ir.call @vf.add(r, r, m)", "ir.eval(ir.call @vf.store_align(a, r2, m))",
        "block.store(x, a")


@pl.simt.function(max_threads=128)
def simt_scale(t: pl.Tile[[16, 16], pl.DT_FP32], k: pl.DT_FP32):
    i = pl.simt.thread_idx().x
    if i < 16:
        t[0, i] = t[0, i] * k


@pl.kernel(arch="a5")
def k_simt(x: pl.Tensor[[64, 64], pl.DT_FP32], f: pl.DT_FP32):
    with pl.section_vector():
        a = pl.make_tile(VEC, addr=0x0)
        pl.simt.launch(simt_scale, threads=(16, 8), args=(a, f))
        pl.simt.launch(simt_scale, threads=16, args=(a, 2.0))


def test_simt_launch_instantiates_a_simt_function():
    result = parse_target(k_simt, Specialization(arch="a5"), "vector")
    kinds = [(f.name, f.func_type) for f in result.program.functions]
    assert kinds == [("k_simt", FunctionType.OPAQUE), ("simt_scale", FunctionType.SIMT_VF)]
    text = python_print(result.program, concise=True)
    assert "simt.launch(a, f, callee='simt_scale', threads=[16, 8, 1], max_threads=128)" in text
    assert "threads=[16, 1, 1]" in text
    assert "@ir.simt.function(type=ir.FunctionType.SIMT_VF)" in text
    assert contains_in_order(text, "def simt_scale(", "i = ir.call @simt.thread_idx(axis='x')",
                             "if i < 16:", "block.setval(t, 0 + i, ir.call @block.getval(t")


def test_vf_and_simt_are_vector_only():
    cube = parse_target(k_simt, Specialization(arch="a5"), "cube").program
    assert len(cube.functions) == 1
    assert "section_vf" not in ir(k_vf, "cube")


# ---------------------------------------------------------------- specialisation


@pl.kernel(arch="a5", datatype={"x": "io_dtype"})
def k_dtype(x: pl.Tensor[[64, 64], pl.DT_FP32]):
    with pl.section_vector():
        a = pl.make_tile(pl.TileType([16, 16], io_dtype), addr=0)  # noqa: F821
        pl.load(a, x, [0, 0])


def test_datatype_specialisation():
    spec = Specialization(arch="a5", datatype=(("io_dtype", pl.DT_FP16),))
    text = ir(k_dtype, spec=spec, concise=False)
    assert "x: ir.Tensor[[64, 64], ir.FP16]" in text
    assert "a: ir.Tile[[16, 16], ir.FP16" in text


@pl.kernel(arch="a5")
def k_tiling_key(x: pl.Tensor[[64, 64], pl.DT_FP32]):
    with pl.section_vector():
        a = pl.make_tile(VEC, addr=0)
        if MODE == 1:  # noqa: F821 - a tiling-key field, constant at parse time
            pl.exp(a, a)
        else:
            pl.log(a, a)


@pytest.mark.parametrize("mode,op", [(1, "block.exp"), (0, "block.log")])
def test_tiling_key_constants_fold(mode, op):
    text = ir(k_tiling_key, spec=Specialization(arch="a5", tiling_key=(("MODE", mode),)))
    assert op in text and ("block.log" if op == "block.exp" else "block.exp") not in text


@pl.kernel(arch="a5")
def k_static(x: pl.Tensor[[pl.STATIC, ...], pl.DT_FP32]):
    with pl.section_vector():
        pl.printf("%d %d\n", x.shape[0], x.shape[1])


def test_static_and_ellipsis_dims():
    spec = Specialization(arch="a5", static_dims=((0, 0, 32), (0, 1, 48)), ranks=((0, 2),))
    text = ir(k_static, spec=spec, concise=False)
    assert "x: ir.Tensor[[32, 48], ir.FP32]" in text
    assert "printf('%d %d\\n', 32, 48" in text


def test_spans_point_at_the_kernel_source():
    result = parse_target(k_if, Specialization(arch="a5"), "vector")
    text, spans = python_print(result.program, concise=True, line_map=True)
    lines = text.splitlines()
    i = next(n for n, line in enumerate(lines) if "block.sub(a, a, b)" in line)
    assert spans[i].file == __file__
    src = textwrap.dedent(spans[i].source_line())
    assert src.strip() == "pl.sub(a, a, b)"
