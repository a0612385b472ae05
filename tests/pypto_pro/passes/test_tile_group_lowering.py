"""tile_group_lowering: explicit cursors, constant slots where the cursor is known."""
from __future__ import annotations

import pytest

from pypto_pro.errors import NotSupported
from pypto_pro.ir.nodes import Select
from pypto_pro.passes import tile_group_lowering
from pypto_pro.passes.manager import PassContext


GOLDEN_ADD = """\
ga = ir.call @tile_group.make()
ga_cursor = 1
gb = ir.call @tile_group.make()
gb_cursor = 1
gc = ir.call @tile_group.make()
gc_cursor = 1
with ir.section_vector():
    for i in ir.range(0, n, 1):
        ga_cursor = (ga_cursor + 1) % 2
        a = ir.call @tile_group.get(ga, ga_cursor)
        gb_cursor = (gb_cursor + 1) % 2
        b = ir.call @tile_group.get(gb, gb_cursor)
        gc_cursor = (gc_cursor + 1) % 2
        c = ir.call @tile_group.get(gc, gc_cursor)
        ir.eval(ir.call @block.load(a, x, [i * 64, 0]))
        ir.eval(ir.call @block.load(b, y, [i * 64, 0]))
        ir.eval(ir.call @block.add(c, a, b))
        ir.eval(ir.call @block.store(z, c, [i * 64, 0]))
"""


def test_golden_double_buffered_add(irb):
    assert irb.text(irb.run(irb.double_buffered_add(), tile_group_lowering)) == GOLDEN_ADD


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
        ir.eval(ir.call @block.load(ta, a, [i, 0]))
        left_cursor = (left_cursor + 1) % 2
        l = ir.call @tile_group.get(left, left_cursor)
        ir.eval(ir.call @block.move(l, ta))
        r = ir.call @tile_group.get(right, 1)
        ir.eval(ir.call @block.move(r, ta))
        acc_cursor = (acc_cursor + 1) % 2
        c = ir.call @tile_group.get(acc, acc_cursor)
        ir.eval(ir.call @block.matmul(c, l, r))
        ir.eval(ir.call @block.store(out, c, [i, 0]))
"""


def test_golden_matmul_group_chain(irb):
    """`right.current()` never advanced: slot N-1 = 1, a constant, in every iteration."""
    assert irb.text(irb.run(irb.matmul_chain(), tile_group_lowering)) == GOLDEN_MATMUL


def test_slots_follow_the_cursor_at_run_time(irb, trace):
    """Loads alternate 0x0, 0x8000, 0x0, ... exactly as next() promises (first next = slot 0)."""
    lowered = irb.run(irb.double_buffered_add(), tile_group_lowering)
    loads = [e[1][0] for e in trace(lowered, n=3) if e[0] == "block.load"]
    assert [addr for _, _, addr in loads] == [0x0, 0x10000, 0x8000, 0x18000, 0x0, 0x10000]


def test_known_cursor_gives_constant_slots(irb):
    """Straight-line code: current() before next() is slot N-1, then 0, 1, previous of 1 = 0."""
    g, mk = irb.group("g", (0x0, 0x4000, 0x8000), ids=[5, 6, 7])
    t0, cur = irb.access("current", g, "t0")
    t1, nxt = irb.access("next", g, "t1")
    t2, nxt2 = irb.access("next", g, "t2")
    t3, prev = irb.access("previous", g, "t3")
    out = irb.run(irb.program([mk, cur, nxt, nxt2, prev]), tile_group_lowering)
    assert irb.text(out) == """\
g = ir.call @tile_group.make()
g_cursor = 2
t0 = ir.call @tile_group.get(g, 2)
g_cursor = 0
t1 = ir.call @tile_group.get(g, 0)
g_cursor = 1
t2 = ir.call @tile_group.get(g, 1)
t3 = ir.call @tile_group.get(g, 0)
"""
    types = [s.value.type for s in out.kernel.body.stmts[2:] if s.var.name.startswith("t")]
    assert [t.addr for t in types] == [0x8000, 0x0, 0x4000, 0x0]


def test_depth_one_group_always_uses_slot_zero(irb):
    g, mk = irb.group("g", (0x100,), ids=[3])
    i, n = irb.var("i"), irb.var("n")
    t, nxt = irb.access("next", g, "t")
    out = irb.run(irb.program([mk, irb.for_(i, 0, n, [nxt])]), tile_group_lowering)
    assert irb.text(out) == """\
g = ir.call @tile_group.make()
g_cursor = 0
for i in ir.range(0, n, 1):
    t = ir.call @tile_group.get(g, 0)
"""


def test_previous_with_unknown_cursor(irb):
    g, mk = irb.group("g", (0x0, 0x4000), ids=[0, 1])
    i, n = irb.var("i"), irb.var("n")
    t, nxt = irb.access("next", g, "t")
    p, prev = irb.access("previous", g, "p")
    out = irb.run(irb.program([mk, irb.for_(i, 0, n, [nxt, prev])]), tile_group_lowering)
    assert "p = ir.call @tile_group.get(g, (g_cursor + 1) % 2)" in irb.text(out)


def test_branches_that_disagree_make_the_cursor_unknown(irb):
    g, mk = irb.group("g", (0x0, 0x4000), ids=[0, 1])
    c = irb.var("c", irb.BOOL)
    _, nxt = irb.access("next", g, "t")
    u, cur = irb.access("current", g, "u")
    out = irb.run(irb.program([mk, irb.if_(c, [nxt]), cur], params=(c,)), tile_group_lowering)
    assert irb.text(out).endswith("u = ir.call @tile_group.get(g, g_cursor)\n")
    _, nxt_both = irb.access("next", g, "t")
    same = irb.program([mk, irb.if_(c, [nxt], [nxt_both]), cur], params=(c,))
    assert irb.text(irb.run(same, tile_group_lowering)).endswith(
        "u = ir.call @tile_group.get(g, 0)\n")


def test_loops_that_do_not_advance_keep_the_cursor_known(irb):
    g, mk = irb.group("g", (0x0, 0x4000), ids=[0, 1])
    i, n = irb.var("i"), irb.var("n")
    _, nxt = irb.access("next", g, "a")
    _, cur = irb.access("current", g, "b")
    out = irb.run(irb.program([mk, nxt, irb.for_(i, 0, n, [cur])]), tile_group_lowering)
    assert "b = ir.call @tile_group.get(g, 0)" in irb.text(out)


def test_a_group_chosen_at_run_time_is_rejected_with_its_span(irb):
    g, mk = irb.group("g", (0x0, 0x4000), ids=[0, 1])
    h, mk_h = irb.group("h", (0x8000, 0xC000), ids=[2, 3])
    c = irb.var("c", irb.BOOL)
    chosen = Select(c, g, h, g.type)
    t = irb.var("t", g.type.slot_type(None))
    bad = irb.assign(t, irb.call("tile_group.next", chosen, ty=t.type, line=7), line=7)
    with pytest.raises(NotSupported) as err:
        tile_group_lowering.run(irb.program([mk, mk_h, bad], params=(c,)), PassContext("vector"))
    assert err.value.span.line == 7
    assert err.value.pass_name == "tile_group_lowering"


def test_programs_without_groups_are_returned_unchanged(irb):
    x = irb.tensor("x")
    t, mk = irb.make_tile("t", 0x0)
    prog = irb.program([mk, irb.ev("block.load", t, x, [0, 0])], params=(x,))
    assert tile_group_lowering.run(prog, PassContext("vector")) is prog
