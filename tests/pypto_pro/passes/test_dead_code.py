"""dead_code: what cannot matter goes, everything with an effect stays."""
from __future__ import annotations

from pypto_pro.ir.nodes import BinOp, BreakStmt
from pypto_pro.passes import dead_code
from pypto_pro.passes.manager import PassContext


def dce(prog):
    return dead_code.run(prog, PassContext("vector"))


def test_unused_pure_values_and_dead_stores_go(irb, trace):
    x = irb.tensor("x")
    t, mk = irb.make_tile("t", 0x0)
    a, b, unused = irb.var("a"), irb.var("b"), irb.var("unused")
    prog = irb.program([mk, irb.assign(a, 1), irb.assign(a, 2), irb.assign(unused, a),
                        irb.assign(b, irb.call("block.getval", t, 0, ty=irb.INDEX)),
                        irb.ev("block.load", t, x, [a, 0])], params=(x,))
    out = dce(prog)
    assert irb.text(out) == """\
a = 2
b = ir.call @block.getval(t, 0)
ir.eval(ir.call @block.load(t, x, [a, 0]))
"""
    assert trace(out) == trace(prog)


def test_a_counter_that_only_feeds_itself_goes(irb):
    i, c = irb.var("i"), irb.var("c")
    prog = irb.program([irb.assign(c, 0),
                        irb.for_(i, 0, 8, [irb.assign(c, irb.bin(BinOp.Add, c, 1))])])
    assert irb.text(dce(prog)) == "pass\n"


def test_unreachable_statements_and_empty_control_flow(irb, trace):
    x = irb.tensor("x")
    t, mk = irb.make_tile("t", 0x0)
    i, flag = irb.var("i"), irb.var("flag", irb.BOOL)
    load = irb.ev("block.load", t, x, [i, 0])
    prog = irb.program([
        mk,
        irb.for_(i, 0, 4, [load, BreakStmt(), irb.ev("block.exp", t, t)]),
        irb.if_(flag, []),
        irb.if_(flag, [], [irb.ev("block.exp", t, t)]),
        irb.for_(i, 0, 4, []),
    ], params=(x, flag))
    out = dce(prog)
    assert irb.text(out) == """\
for i in ir.range(0, 4, 1):
    ir.eval(ir.call @block.load(t, x, [i, 0]))
    break
if not flag:
    ir.eval(ir.call @block.exp(t, t))
"""
    for f in (True, False):
        assert trace(out, flag=f) == trace(prog, flag=f)
