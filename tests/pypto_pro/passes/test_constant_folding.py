"""constant_folding: propagation, folding, branch pruning — and the ops issued stay the same."""
from __future__ import annotations

from pypto_pro.ir.nodes import BinOp, ConstInt, Select, UnaryExpr, UnOp
from pypto_pro.ir.types import PipeType
from pypto_pro.passes import constant_folding
from pypto_pro.passes.manager import PassContext


def fold(irb, prog):
    return constant_folding.run(prog, PassContext("vector"))


def test_straight_line_values_propagate_and_fold(irb, trace):
    x = irb.tensor("x")
    t, mk = irb.make_tile("t", 0x0)
    a, b = irb.var("a"), irb.var("b")
    prog = irb.program([mk, irb.assign(a, 3),
                        irb.assign(b, irb.bin(BinOp.Add, irb.bin(BinOp.Mul, a, 4), 1)),
                        irb.ev("block.load", t, x, [b, irb.bin(BinOp.Max, a, 7)])],
                       params=(x,))
    out = fold(irb, prog)
    assert "ir.eval(ir.call @block.load(t, x, [13, 7]))" in irb.text(out)
    assert trace(out) == trace(prog)


def test_values_assigned_in_a_loop_are_unknown_in_and_after_it(irb, trace):
    x = irb.tensor("x")
    t, mk = irb.make_tile("t", 0x0)
    c, i = irb.var("c"), irb.var("i")
    prog = irb.program([mk, irb.assign(c, 0),
                        irb.for_(i, 0, 3, [irb.ev("block.load", t, x, [c, 0]),
                                           irb.assign(c, irb.bin(BinOp.Add, c, 1))]),
                        irb.ev("block.load", t, x, [c, 0])], params=(x,))
    out = fold(irb, prog)
    assert irb.text(out).count("[c, 0]") == 2
    assert trace(out) == trace(prog)


def test_constant_branches_are_pruned_and_agreeing_branches_merge(irb, trace):
    x = irb.tensor("x")
    t, mk = irb.make_tile("t", 0x0)
    a, b, flag = irb.var("a"), irb.var("b"), irb.var("flag", irb.BOOL)
    prog = irb.program([
        mk, irb.assign(a, 5),
        irb.if_(irb.bin(BinOp.Gt, a, 2), [irb.assign(b, 1)], [irb.assign(b, 2)]),
        irb.if_(flag, [irb.assign(a, 6)], [irb.assign(a, 6)]),
        irb.ev("block.load", t, x, [a, b]),
    ], params=(x, flag))
    out = fold(irb, prog)
    text = irb.text(out)
    assert "a > 2" not in text and "b = 2" not in text
    assert "[6, 1]" in text
    assert trace(out, flag=True) == trace(prog, flag=True)


def test_zero_trip_loops_disappear_and_negative_division_truncates(irb):
    """`//` in the IR is the generated C++'s `/`: -7 // 2 folds to -3; a division by zero is
    left for the run time to report."""
    x = irb.tensor("x")
    t, mk = irb.make_tile("t", 0x0)
    i, q = irb.var("i"), irb.var("q")
    neg = UnaryExpr(UnOp.Neg, ConstInt(7), irb.INDEX)
    prog = irb.program([mk, irb.for_(i, 4, 4, [irb.ev("block.load", t, x, [i, 0])]),
                        irb.assign(q, irb.bin(BinOp.FloorDiv, neg, 2)),
                        irb.ev("block.load", t, x, [q, irb.bin(BinOp.FloorMod, 7, 0)])],
                       params=(x,))
    text = irb.text(fold(irb, prog))
    assert "for" not in text
    assert "q = -3" in text and "[-3, 7 % 0]" in text


def test_logical_identities(irb):
    flag = irb.var("flag", irb.BOOL)
    r = irb.var("r", irb.BOOL)
    prog = irb.program([
        irb.assign(r, irb.bin(BinOp.And, True, flag)),
        irb.assign(r, irb.bin(BinOp.Or, flag, True)),
        irb.assign(r, irb.bin(BinOp.And, flag, False)),
    ], params=(flag,))
    text = irb.text(fold(irb, prog))
    assert text == "r = flag\nr = True\nr = False\n"


def test_group_slots_and_dynamic_ids_become_constants(irb):
    g, mk = irb.group("g", (0x0, 0x4000), ids=[[2, 3], [4, 5]])
    k = irb.var("k")
    t = irb.var("t", g.type.slot_type(None))
    ident = irb.call("tile_group.mutex_id", g, k, ty=irb.INDEX, k=1)
    sel = Select(irb.bin(BinOp.Eq, k, 1), ConstInt(8), ConstInt(9), irb.INDEX)
    prog = irb.program([mk, irb.assign(k, 1), irb.assign(t, irb.get(g, k)),
                        irb.ev("system.mutex_lock_dyn", ident, pipe=PipeType.V),
                        irb.ev("system.mutex_unlock_dyn", sel, pipe=PipeType.V)])
    out = fold(irb, prog)
    text = irb.text(out)
    assert "ir.call @system.mutex_lock(pipe=ir.PipeType.V, mutex_id=5)" in text
    assert "ir.call @system.mutex_unlock(pipe=ir.PipeType.V, mutex_id=8)" in text
    assert out.kernel.body.stmts[2].value.type.addr == 0x4000


def test_unchanged_programs_keep_their_identity(irb):
    x = irb.tensor("x")
    t, mk = irb.make_tile("t", 0x0)
    prog = irb.program([mk, irb.ev("block.load", t, x, [0, 0])], params=(x,))
    assert fold(irb, prog) is prog
