"""auto_mutex (spec §2.12.4): golden lock placement, and the property that matters — every access
to a guarded tile runs while its ids are held on the op's pipe."""
from __future__ import annotations

import pytest

from pypto_pro.errors import NotSupported, ParserTypeError
from pypto_pro.ir.attrs import AccPhase
from pypto_pro.ir.dtype import DataType
from pypto_pro.ir.nodes import BinaryExpr, BinOp, ConstInt, Select
from pypto_pro.ir.types import MemorySpace as M, SectionKind
from pypto_pro.passes import auto_mutex, pipe_assignment, tile_group_lowering
from pypto_pro.passes.manager import PassContext

LOCKING = (tile_group_lowering, pipe_assignment, auto_mutex)


GOLDEN_MATMUL = """\
a_l1 = ir.call @tile_group.make()
a_l1_cursor = 1
left = ir.call @tile_group.make()
left_cursor = 1
right = ir.call @tile_group.make()
right_cursor = 1
acc = ir.call @tile_group.make()
acc_cursor = 1
with ir.section_cube():
    for i in ir.range(0, n, 1):
        a_l1_cursor = (a_l1_cursor + 1) % 2
        ta = ir.call @tile_group.get(a_l1, a_l1_cursor)
        ir.eval(ir.call @system.mutex_lock_dyn(ir.call @tile_group.mutex_id(a_l1, a_l1_cursor, k=0), pipe=ir.PipeType.MTE2))
        ir.eval(ir.call @block.load(ta, a, [i, 0], pipe=ir.PipeType.MTE2))
        ir.eval(ir.call @system.mutex_unlock_dyn(ir.call @tile_group.mutex_id(a_l1, a_l1_cursor, k=0), pipe=ir.PipeType.MTE2))
        left_cursor = (left_cursor + 1) % 2
        l = ir.call @tile_group.get(left, left_cursor)
        ir.eval(ir.call @system.mutex_lock_dyn(ir.call @tile_group.mutex_id(left, left_cursor, k=0), pipe=ir.PipeType.MTE1))
        ir.eval(ir.call @system.mutex_lock_dyn(ir.call @tile_group.mutex_id(a_l1, a_l1_cursor, k=0), pipe=ir.PipeType.MTE1))
        ir.eval(ir.call @block.move(l, ta, pipe=ir.PipeType.MTE1))
        ir.eval(ir.call @system.mutex_unlock_dyn(ir.call @tile_group.mutex_id(left, left_cursor, k=0), pipe=ir.PipeType.MTE1))
        ir.eval(ir.call @system.mutex_unlock_dyn(ir.call @tile_group.mutex_id(a_l1, a_l1_cursor, k=0), pipe=ir.PipeType.MTE1))
        r = ir.call @tile_group.get(right, 1)
        ir.eval(ir.call @system.mutex_lock(pipe=ir.PipeType.MTE1, mutex_id=7))
        ir.eval(ir.call @system.mutex_lock_dyn(ir.call @tile_group.mutex_id(a_l1, a_l1_cursor, k=0), pipe=ir.PipeType.MTE1))
        ir.eval(ir.call @block.move(r, ta, pipe=ir.PipeType.MTE1))
        ir.eval(ir.call @system.mutex_unlock(pipe=ir.PipeType.MTE1, mutex_id=7))
        ir.eval(ir.call @system.mutex_unlock_dyn(ir.call @tile_group.mutex_id(a_l1, a_l1_cursor, k=0), pipe=ir.PipeType.MTE1))
        acc_cursor = (acc_cursor + 1) % 2
        c = ir.call @tile_group.get(acc, acc_cursor)
        ir.eval(ir.call @system.mutex_lock_dyn(ir.call @tile_group.mutex_id(acc, acc_cursor, k=0), pipe=ir.PipeType.M))
        ir.eval(ir.call @system.mutex_lock_dyn(ir.call @tile_group.mutex_id(left, left_cursor, k=0), pipe=ir.PipeType.M))
        ir.eval(ir.call @system.mutex_lock(pipe=ir.PipeType.M, mutex_id=7))
        ir.eval(ir.call @block.matmul(c, l, r, pipe=ir.PipeType.M))
        ir.eval(ir.call @system.mutex_unlock_dyn(ir.call @tile_group.mutex_id(acc, acc_cursor, k=0), pipe=ir.PipeType.M))
        ir.eval(ir.call @system.mutex_unlock_dyn(ir.call @tile_group.mutex_id(left, left_cursor, k=0), pipe=ir.PipeType.M))
        ir.eval(ir.call @system.mutex_unlock(pipe=ir.PipeType.M, mutex_id=7))
        ir.eval(ir.call @system.mutex_lock_dyn(ir.call @tile_group.mutex_id(acc, acc_cursor, k=0), pipe=ir.PipeType.FIX))
        ir.eval(ir.call @block.store(out, c, [i, 0], pipe=ir.PipeType.FIX))
        ir.eval(ir.call @system.mutex_unlock_dyn(ir.call @tile_group.mutex_id(acc, acc_cursor, k=0), pipe=ir.PipeType.FIX))
"""

GOLDEN_ADD_LOOP = """\
    for i in ir.range(0, n, 1):
        ga_cursor = (ga_cursor + 1) % 2
        a = ir.call @tile_group.get(ga, ga_cursor)
        gb_cursor = (gb_cursor + 1) % 2
        b = ir.call @tile_group.get(gb, gb_cursor)
        gc_cursor = (gc_cursor + 1) % 2
        c = ir.call @tile_group.get(gc, gc_cursor)
        ir.eval(ir.call @system.mutex_lock_dyn(ir.call @tile_group.mutex_id(ga, ga_cursor, k=0), pipe=ir.PipeType.MTE2))
        ir.eval(ir.call @block.load(a, x, [i * 64, 0], pipe=ir.PipeType.MTE2))
        ir.eval(ir.call @system.mutex_unlock_dyn(ir.call @tile_group.mutex_id(ga, ga_cursor, k=0), pipe=ir.PipeType.MTE2))
        ir.eval(ir.call @system.mutex_lock_dyn(ir.call @tile_group.mutex_id(gb, gb_cursor, k=0), pipe=ir.PipeType.MTE2))
        ir.eval(ir.call @block.load(b, y, [i * 64, 0], pipe=ir.PipeType.MTE2))
        ir.eval(ir.call @system.mutex_unlock_dyn(ir.call @tile_group.mutex_id(gb, gb_cursor, k=0), pipe=ir.PipeType.MTE2))
        ir.eval(ir.call @system.mutex_lock_dyn(ir.call @tile_group.mutex_id(gc, gc_cursor, k=0), pipe=ir.PipeType.V))
        ir.eval(ir.call @system.mutex_lock_dyn(ir.call @tile_group.mutex_id(ga, ga_cursor, k=0), pipe=ir.PipeType.V))
        ir.eval(ir.call @system.mutex_lock_dyn(ir.call @tile_group.mutex_id(gb, gb_cursor, k=0), pipe=ir.PipeType.V))
        ir.eval(ir.call @block.add(c, a, b, pipe=ir.PipeType.V))
        ir.eval(ir.call @system.mutex_unlock_dyn(ir.call @tile_group.mutex_id(gc, gc_cursor, k=0), pipe=ir.PipeType.V))
        ir.eval(ir.call @system.mutex_unlock_dyn(ir.call @tile_group.mutex_id(ga, ga_cursor, k=0), pipe=ir.PipeType.V))
        ir.eval(ir.call @system.mutex_unlock_dyn(ir.call @tile_group.mutex_id(gb, gb_cursor, k=0), pipe=ir.PipeType.V))
        ir.eval(ir.call @system.mutex_lock_dyn(ir.call @tile_group.mutex_id(gc, gc_cursor, k=0), pipe=ir.PipeType.MTE3))
        ir.eval(ir.call @block.store(z, c, [i * 64, 0], pipe=ir.PipeType.MTE3))
        ir.eval(ir.call @system.mutex_unlock_dyn(ir.call @tile_group.mutex_id(gc, gc_cursor, k=0), pipe=ir.PipeType.MTE3))
"""


def test_golden_double_buffered_add(irb):
    out = irb.run(irb.double_buffered_add(), *LOCKING)
    assert GOLDEN_ADD_LOOP in irb.text(out)


def test_golden_matmul_group_chain(irb):
    assert irb.text(irb.run(irb.matmul_chain(), *LOCKING)) == GOLDEN_MATMUL


@pytest.mark.parametrize("build", ["double_buffered_add", "matmul_chain"])
def test_every_access_holds_its_ids(irb, trace, locked, build):
    prog = getattr(irb, build)()
    locked(prog, trace(irb.run(prog, *LOCKING), n=5))


def test_unit_flag_phase_drops_only_the_acc_mutex(irb):
    left, mk1 = irb.group("left", (0x0,), ids=[4], space=M.Left)
    right, mk2 = irb.group("right", (0x0,), ids=[6], space=M.Right)
    acc, mk3 = irb.group("acc", (0x0,), ids=[8], space=M.Acc, dtype=DataType.FP32)
    out_t = irb.tensor("out", DataType.FP32)
    mm = irb.ev("block.matmul", irb.get(acc, 0), irb.get(left, 0), irb.get(right, 0),
                phase=AccPhase.Final)
    st = irb.ev("block.store", out_t, irb.get(acc, 0), [0, 0], phase=AccPhase.Final)
    text = irb.text(irb.run(irb.program([mk1, mk2, mk3, mm, st], params=(out_t,)), *LOCKING))
    locks = [line for line in text.splitlines() if "mutex_lock" in line]
    assert [line.split("mutex_id=")[1] for line in locks] == ["4))", "6))"]


def test_same_tile_twice_is_locked_once_and_plain_tiles_get_nothing(irb):
    g, mk = irb.group("g", (0x0,), ids=[3])
    t, mk_t = irb.make_tile("t", 0x4000)
    add = irb.ev("block.add", irb.get(g, 0), irb.get(g, 0), t)
    plain = irb.ev("block.add", t, t, t)
    text = irb.text(irb.run(irb.program([mk, mk_t, add, plain]), *LOCKING))
    assert text.count("mutex_lock") == 1 and text.count("mutex_unlock") == 1


def test_a_tile_ternary_locks_the_chosen_ids(irb, trace, locked):
    h, mk = irb.group("h", (0x0, 0x4000), ids=[[2, 3], [4, 5]])
    c = irb.var("c", irb.BOOL)
    sel = irb.var("sel", h.type.slot_type(None))
    choose = irb.assign(sel, Select(c, irb.get(h, 0), irb.get(h, 1), sel.type))
    prog = irb.program([mk, choose, irb.ev("block.exp", sel, sel)], params=(c,))
    out = irb.run(prog, *LOCKING)
    assert "mutex_lock_dyn(2 if c else 4, pipe=ir.PipeType.V)" in irb.text(out)
    assert "mutex_lock_dyn(3 if c else 5, pipe=ir.PipeType.V)" in irb.text(out)
    for cond in (True, False):
        locked(prog, trace(out, c=cond))


def test_ids_are_kept_in_variables_when_the_cursor_moves_before_the_use(irb, trace, locked):
    """`a = g.next(); b = g.next(); add(c, a, b)` in a loop: a's index was re-assigned."""
    g, mk = irb.group("g", (0x0, 0x4000, 0x8000), ids=[0, 1, 2])
    out_g, mk_o = irb.group("o", (0xC000,), ids=[9])
    i, n = irb.var("i"), irb.var("n")
    a, na = irb.access("next", g, "a")
    b, nb = irb.access("next", g, "b")
    c, nc = irb.access("next", out_g, "c")
    loop = irb.for_(i, 0, n, [na, nb, nc, irb.ev("block.add", c, a, b)])
    prog = irb.program([mk, mk_o, loop], params=(n,))
    out = irb.run(prog, *LOCKING)
    assert "a_mutex = ir.call @tile_group.mutex_id(g, g_cursor, k=0)" in irb.text(out)
    locked(prog, trace(out, n=4))


def test_a_tile_carried_around_the_loop_keeps_its_ids(irb, trace, locked):
    """t holds slot 0 on entry and the slot of the last next() afterwards."""
    g, mk = irb.group("g", (0x0, 0x4000), ids=[0, 1])
    i, n = irb.var("i"), irb.var("n")
    t, first = irb.access("next", g, "t")
    _, again = irb.access("next", g, "t")
    again = irb.assign(t, again.value)
    loop = irb.for_(i, 0, n, [irb.ev("block.relu", t, t), again])
    prog = irb.program([mk, first, loop], params=(n,))
    out = irb.run(prog, *LOCKING)
    assert "t_mutex = 0" in irb.text(out)
    locked(prog, trace(out, n=3))


def test_vf_section_and_simt_launch_are_locked_on_v(irb):
    g, mk = irb.group("g", (0x0,), ids=[12])
    h, mk_h = irb.group("h", (0x4000,), ids=[13])
    t = irb.get(g, 0)
    vf = irb.section([irb.ev("vf.load_align", t, 0)], SectionKind.VF)
    launch = irb.ev("simt.launch", irb.get(h, 0), 2.5, callee="add_delta")
    text = irb.text(irb.run(irb.program([mk, mk_h, vf, launch]), *LOCKING))
    lines = [x.strip() for x in text.splitlines()]
    at = lines.index("with ir.section_vf():")
    assert lines[at - 1] == "ir.eval(ir.call @system.mutex_lock(pipe=ir.PipeType.V, mutex_id=12))"
    assert lines[at + 2] == \
        "ir.eval(ir.call @system.mutex_unlock(pipe=ir.PipeType.V, mutex_id=12))"
    assert "ir.eval(ir.call @system.mutex_lock(pipe=ir.PipeType.V, mutex_id=13))" in lines


def test_a_vf_operand_tile_plus_offset_locks_its_tile(irb):
    g, mk = irb.group("g", (0x0,), ids=[12])
    t = irb.get(g, 0)
    at = BinaryExpr(BinOp.Add, t, ConstInt(64), t.type)  # `t + 64` (spec §2.13 offsets)
    vf = irb.section([irb.ev("vf.load_align", at, 0)], SectionKind.VF)
    lines = [x.strip() for x in irb.text(irb.run(irb.program([mk, vf]), *LOCKING)).splitlines()]
    at = lines.index("with ir.section_vf():")
    assert lines[at - 1] == "ir.eval(ir.call @system.mutex_lock(pipe=ir.PipeType.V, mutex_id=12))"


def test_mixing_plain_and_group_tiles_in_a_ternary_is_rejected(irb):
    g, mk = irb.group("g", (0x0,), ids=[1])
    t, mk_t = irb.make_tile("t", 0x4000)
    c = irb.var("c", irb.BOOL)
    bad = irb.ev("block.relu", Select(c, irb.get(g, 0), t, t.type, irb.span(9)), t, line=9)
    with pytest.raises(ParserTypeError, match="one branch has no tile mutex metadata") as err:
        irb.run(irb.program([mk, mk_t, bad], params=(c,)), *LOCKING)  # the real parser's
    assert err.value.span.line == 9 and err.value.pass_name == "auto_mutex"


def test_a_ternary_between_groups_of_different_id_counts_is_the_real_type_error(irb):
    g, mk = irb.group("g", (0x0,), ids=[1])
    h, mk_h = irb.group("h", (0x4000,), ids=[[2, 3]])
    c = irb.var("c", irb.BOOL)
    t = irb.get(g, 0)
    bad = irb.ev("block.relu", Select(c, t, irb.get(h, 0), t.type, irb.span(9)), t, line=9)
    with pytest.raises(ParserTypeError,
                       match="different ID counts: 1 and 2") as err:
        irb.run(irb.program([mk, mk_h, bad], params=(c,)), *LOCKING)
    assert err.value.span.line == 9


def test_disabled_auto_mutex_changes_nothing(irb):
    prog = irb.run(irb.double_buffered_add(), tile_group_lowering, pipe_assignment)
    assert auto_mutex.run(prog, PassContext("vector", auto_mutex=False)) is prog
