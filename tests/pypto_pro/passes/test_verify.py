"""verify: structural invariants, with user errors for user mistakes and PassInner otherwise."""
from __future__ import annotations

import pytest

from pypto_pro.errors import NameNotFound, PassInner
from pypto_pro.ir.nodes import (
    BinOp, BreakStmt, ConstInt, ForStmt, IfStmt, SeqStmts, Var, YieldStmt, seq,
)
from pypto_pro.passes import verify
from pypto_pro.passes.manager import PassContext


def run(prog, *facts):
    ctx = PassContext("vector")
    ctx.facts.update(facts)
    return verify.run(prog, ctx)


def test_a_read_before_any_definition_is_reported_at_the_read(irb):
    a, b = irb.var("a"), irb.var("b")
    prog = irb.program([irb.assign(b, irb.bin(BinOp.Add, a, 1), line=5), irb.assign(a, 1)])
    with pytest.raises(NameNotFound) as err:
        run(prog)
    assert err.value.span.line == 5 and "'a'" in err.value.message


def test_mutable_form_allows_definitions_in_branches(irb):
    a, b, flag = irb.var("a"), irb.var("b"), irb.var("flag", irb.BOOL)
    prog = irb.program([irb.if_(flag, [irb.assign(a, 1)]),
                        irb.assign(b, irb.bin(BinOp.Add, a, 1))], params=(flag,))
    assert run(prog) is prog
    with pytest.raises(NameNotFound):
        run(prog, "ssa")  # in SSA form a branch's scalars leave only through return_vars


def test_yields_must_match_what_they_carry(irb):
    i, c, c1, c2 = irb.var("i"), irb.var("c"), irb.var("c1"), irb.var("c2")
    ok = ForStmt(i, ConstInt(0), ConstInt(4), ConstInt(1), seq([YieldStmt((c1,))]),
                 (c1,), (ConstInt(0),), (c2,))
    assert run(irb.program([ok]), "ssa")
    wrong = ForStmt(i, ConstInt(0), ConstInt(4), ConstInt(1), seq([YieldStmt((c1, c1))]),
                    (c1,), (ConstInt(0),), (c2,))
    with pytest.raises(PassInner, match="yield of 2 values"):
        run(irb.program([wrong]))
    missing = ForStmt(i, ConstInt(0), ConstInt(4), ConstInt(1), SeqStmts(()),
                      (c1,), (ConstInt(0),), (c2,))
    with pytest.raises(PassInner, match="ends without a yield"):
        run(irb.program([missing]))
    no_else = IfStmt(irb.c(True), seq([YieldStmt((ConstInt(1),))]), None, (c,))
    with pytest.raises(PassInner, match="needs an else"):
        run(irb.program([no_else]))


def test_ssa_form_defines_each_scalar_once(irb):
    a = irb.var("a")
    prog = irb.program([irb.assign(a, 1), irb.assign(a, 2, line=3)])
    assert run(prog) is prog
    with pytest.raises(PassInner, match="defined twice") as err:
        run(prog, "ssa")
    assert err.value.span.line == 3


def test_ops_are_registered_with_their_arity(irb):
    t, mk = irb.make_tile("t", 0x0)
    with pytest.raises(PassInner, match="unknown op 'block.nope'"):
        run(irb.program([mk, irb.ev("block.nope", t)]))
    with pytest.raises(PassInner, match="block.exp takes 2..2 arguments, has 1"):
        run(irb.program([mk, irb.ev("block.exp", t)]))


def test_facts_of_earlier_passes_are_checked(irb):
    g, mk = irb.group("g", (0x0, 0x4000), ids=[0, 1])
    _, nxt = irb.access("next", g, "t")
    with pytest.raises(PassInner, match="left after tile_group_lowering"):
        run(irb.program([mk, nxt]), "tile_groups_lowered")
    t, mk_t = irb.make_tile("t", 0x0)
    with pytest.raises(PassInner, match="no pipe="):
        run(irb.program([mk_t, irb.ev("block.exp", t, t)]), "pipes_assigned")


def test_break_outside_a_loop(irb):
    with pytest.raises(PassInner, match="outside a loop"):
        run(irb.program([BreakStmt()]))


def test_loop_variables_are_scoped_to_their_loop(irb):
    i, j = irb.var("i"), Var("j", irb.INDEX)
    inner_use = irb.for_(i, 0, 4, [irb.assign(j, i)])
    assert run(irb.program([inner_use]))
    with pytest.raises(NameNotFound):
        run(irb.program([inner_use, irb.assign(j, i, line=8)]))
