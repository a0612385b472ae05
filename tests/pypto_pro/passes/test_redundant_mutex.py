"""redundant_mutex: release-then-re-acquire and empty lock pairs on one pipe disappear."""
from __future__ import annotations

from pypto_pro.ir.types import PipeType
from pypto_pro.passes import redundant_mutex
from pypto_pro.passes.manager import PassContext

V, MTE2 = PipeType.V, PipeType.MTE2


def run(prog):
    return redundant_mutex.run(prog, PassContext("vector"))


def lock(irb, ident, pipe=V, unlock=False):
    op = "system.mutex_unlock" if unlock else "system.mutex_lock"
    if isinstance(ident, int):
        return irb.ev(op, pipe=pipe, mutex_id=ident)
    return irb.ev(f"{op}_dyn", ident, pipe=pipe)


def test_back_to_back_ops_on_one_pipe_keep_their_ids(irb):
    t, mk = irb.make_tile("t", 0x0)
    prog = irb.program([mk,
                        lock(irb, 0), lock(irb, 2), irb.ev("block.exp", t, t),
                        lock(irb, 0, unlock=True), lock(irb, 2, unlock=True),
                        lock(irb, 0), lock(irb, 2), irb.ev("block.relu", t, t),
                        lock(irb, 0, unlock=True), lock(irb, 2, unlock=True)])
    assert irb.text(run(prog)) == """\
ir.eval(ir.call @system.mutex_lock(pipe=ir.PipeType.V, mutex_id=0))
ir.eval(ir.call @system.mutex_lock(pipe=ir.PipeType.V, mutex_id=2))
ir.eval(ir.call @block.exp(t, t))
ir.eval(ir.call @block.relu(t, t))
ir.eval(ir.call @system.mutex_unlock(pipe=ir.PipeType.V, mutex_id=0))
ir.eval(ir.call @system.mutex_unlock(pipe=ir.PipeType.V, mutex_id=2))
"""


def test_a_lock_pair_around_nothing_goes_and_runtime_ids_match_by_expression(irb):
    k = irb.var("k")
    prog = irb.program([lock(irb, k, MTE2), lock(irb, 5, MTE2),
                        lock(irb, k, MTE2, unlock=True), lock(irb, 5, MTE2, unlock=True)],
                       params=(k,))
    assert irb.text(run(prog)) == "pass\n"


def test_other_pipes_or_statements_in_between_keep_the_pair(irb):
    t, mk = irb.make_tile("t", 0x0)
    other_pipe = irb.program([lock(irb, 0, unlock=True), lock(irb, 4, MTE2), lock(irb, 0)])
    work = irb.program([mk, lock(irb, 0, unlock=True), irb.ev("block.exp", t, t),
                        lock(irb, 0)])
    assert run(other_pipe) is other_pipe
    assert run(work) is work
