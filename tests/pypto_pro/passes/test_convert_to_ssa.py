"""convert_to_ssa: one definition per scalar, iter_args/yields/return_vars per nodes.py — checked
by the verifier and by running both forms."""
from __future__ import annotations

import pytest

from pypto_pro.errors import NameNotFound
from pypto_pro.ir.nodes import BinOp, BreakStmt, ContinueStmt
from pypto_pro.passes import convert_to_ssa, verify
from pypto_pro.passes.manager import PassContext


def ssa(irb, prog):
    ctx = PassContext("vector")
    return irb.run(prog, convert_to_ssa, verify, ctx=ctx)


def use(irb, x, t, *values):
    return irb.ev("block.load", t, x, list(values))


def test_loop_carried_counter_with_continue(irb, trace):
    x = irb.tensor("x")
    t, mk = irb.make_tile("t", 0x0)
    i, n, c = irb.var("i"), irb.var("n"), irb.var("c")
    add = irb.bin(BinOp.Add, c, 1)
    loop = irb.for_(i, 0, n, [irb.if_(irb.bin(BinOp.Gt, i, 2), [ContinueStmt()]),
                              irb.assign(c, add), use(irb, x, t, c, i)])
    prog = irb.program([mk, irb.assign(c, 0), loop, use(irb, x, t, c, 0)], params=(x, n))
    out = ssa(irb, prog)
    assert irb.text(out) == """\
c = 0
c_3 = for i, (c_1,) in ir.range(0, n, 1, init_values=(c,)):
    if i > 2:
        ir.yield_(c_1)
        continue
    c_2 = c_1 + 1
    ir.eval(ir.call @block.load(t, x, [c_2, i]))
    ir.yield_(c_2)
ir.eval(ir.call @block.load(t, x, [c_3, 0]))
"""
    assert trace(out, n=5) == trace(prog, n=5)


def test_if_merge_and_a_branch_that_leaves_the_loop(irb, trace):
    x = irb.tensor("x")
    t, mk = irb.make_tile("t", 0x0)
    i, n, a, flag = irb.var("i"), irb.var("n"), irb.var("a"), irb.var("flag", irb.BOOL)
    loop = irb.for_(i, 0, n, [
        irb.if_(irb.bin(BinOp.Eq, i, 3), [irb.assign(a, 100), BreakStmt()],
                [irb.assign(a, irb.bin(BinOp.Mul, i, 2))]),
        use(irb, x, t, a, i),
    ])
    prog = irb.program([mk, irb.assign(a, 7), irb.if_(flag, [irb.assign(a, 9)]), loop,
                        use(irb, x, t, a, 0)], params=(x, n, flag))
    out = ssa(irb, prog)
    text = irb.text(out)
    assert "a_2 = if flag:" in text  # the merge after the first if
    assert "        ir.yield_(a_4)\n        break" in text  # the loop's yield before break
    for n_, f in ((2, True), (6, False), (0, True)):
        assert trace(out, n=n_, flag=f) == trace(prog, n=n_, flag=f)


def test_while_loops_and_nested_loops(irb, trace):
    x = irb.tensor("x")
    t, mk = irb.make_tile("t", 0x0)
    i, j, k, s = irb.var("i"), irb.var("j"), irb.var("k"), irb.var("s")
    inner = irb.for_(j, 0, 3, [irb.assign(s, irb.bin(BinOp.Add, s, j))])
    body = [inner, irb.assign(k, irb.bin(BinOp.Add, k, 1)), use(irb, x, t, s, k)]
    prog = irb.program([mk, irb.assign(k, 0), irb.assign(s, 0),
                        irb.while_(irb.bin(BinOp.Lt, k, 4), body), use(irb, x, t, k, s)],
                       params=(x,))
    out = ssa(irb, prog)
    assert "while ir.cond(k_1 < 4, iter_args=(s_1, k_1), init_values=(s, k)):" in irb.text(out)
    assert trace(out) == trace(prog)


def test_a_value_undefined_on_some_path_enters_as_zero(irb, trace):
    x = irb.tensor("x")
    t, mk = irb.make_tile("t", 0x0)
    i, v = irb.var("i"), irb.var("v")
    loop = irb.for_(i, 0, 4, [irb.if_(irb.bin(BinOp.Eq, i, 0), [irb.assign(v, 5)]),
                              use(irb, x, t, v, i)])
    out = ssa(irb, irb.program([mk, loop], params=(x,)))
    assert "init_values=(0,)" in irb.text(out)
    assert [e[1][2] for e in trace(out)] == [(5, 0), (5, 1), (5, 2), (5, 3)]


def test_tiles_re_assigned_before_use_are_not_carried(irb):
    g, mk = irb.group("g", (0x0, 0x4000), ids=[0, 1])
    i, cur = irb.var("i"), irb.var("cur")
    tile = irb.var("tile", g.type.slot_type(None))
    loop = irb.for_(i, 0, 4, [irb.assign(cur, irb.bin(BinOp.FloorMod, i, 2)),
                              irb.assign(tile, irb.get(g, cur)),
                              irb.ev("block.exp", tile, tile)])
    out = ssa(irb, irb.program([mk, loop]))
    assert "for i in ir.range(0, 4, 1):" in irb.text(out)


def test_a_loop_variable_read_after_its_loop_is_a_user_error(irb):
    x = irb.tensor("x")
    t, mk = irb.make_tile("t", 0x0)
    i = irb.var("i")
    after = irb.ev("block.load", t, x, [i, 0], line=12)
    prog = irb.program([mk, irb.for_(i, 0, 4, []), after], params=(x,))
    with pytest.raises(NameNotFound) as err:
        ssa(irb, prog)
    assert err.value.span.line == 12 and "loop variable" in err.value.hint


def test_running_twice_changes_nothing(irb):
    c, i = irb.var("c"), irb.var("i")
    prog = irb.program([irb.assign(c, 0),
                        irb.for_(i, 0, 4, [irb.assign(c, irb.bin(BinOp.Add, c, i))])])
    ctx = PassContext("vector")
    once = convert_to_ssa.run(prog, ctx)
    assert convert_to_ssa.run(once, ctx) is once
