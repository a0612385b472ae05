"""common_subexpression: repeated index arithmetic is computed once; nothing else moves."""
from __future__ import annotations

from pypto_pro.ir.nodes import BinOp
from pypto_pro.ir.types import PipeType
from pypto_pro.passes import common_subexpression
from pypto_pro.passes.manager import PassContext


def cse(prog):
    return common_subexpression.run(prog, PassContext("vector"))


def loads(irb, x, t, *offsets):
    return [irb.ev("block.load", t, x, list(o)) for o in offsets]


def test_repeated_offsets_are_named_once(irb, trace):
    x = irb.tensor("x")
    t, mk = irb.make_tile("t", 0x0)
    i = irb.var("i")
    off = irb.bin(BinOp.Mul, i, 64)
    body = [mk, *loads(irb, x, t, (off, 0), (off, irb.bin(BinOp.Add, off, 1)))]
    prog = irb.program([irb.for_(i, 0, 4, body)], params=(x,))
    out = cse(prog)
    text = irb.text(out)
    assert text.count("i * 64") == 1
    assert "cse = i * 64" in text and "[cse, cse + 1]" in text
    assert trace(out) == trace(prog)


def test_an_assigned_value_is_reused_until_its_inputs_change(irb, trace):
    x = irb.tensor("x")
    t, mk = irb.make_tile("t", 0x0)
    i, a = irb.var("i"), irb.var("a")
    prog = irb.program([
        mk, irb.assign(i, 3), irb.assign(a, irb.bin(BinOp.Mul, i, 8)),
        *loads(irb, x, t, (irb.bin(BinOp.Mul, i, 8), 0)),
        irb.assign(i, 4),
        *loads(irb, x, t, (irb.bin(BinOp.Mul, i, 8), a)),
    ], params=(x,))
    out = cse(prog)
    text = irb.text(out)
    assert "ir.eval(ir.call @block.load(t, x, [a, 0]))" in text
    assert "ir.eval(ir.call @block.load(t, x, [i * 8, a]))" in text
    assert trace(out) == trace(prog)


def test_reads_of_memory_state_are_never_merged(irb):
    t, mk = irb.make_tile("t", 0x0)
    a, b = irb.var("a"), irb.var("b")
    read = irb.call("block.getval", t, 0, ty=irb.INDEX)
    prog = irb.program([mk, irb.assign(a, irb.bin(BinOp.Add, read, 1)),
                        irb.ev("block.setval", t, 0, 5),
                        irb.assign(b, irb.bin(BinOp.Add, read, 1))])
    assert cse(prog) is prog


def test_temporaries_go_above_the_locks_of_their_first_use(irb):
    x = irb.tensor("x")
    t, mk = irb.make_tile("t", 0x0)
    i = irb.var("i")
    off = irb.bin(BinOp.Mul, i, 64)
    lock = irb.ev("system.mutex_lock", pipe=PipeType.MTE2, mutex_id=1)
    unlock = irb.ev("system.mutex_unlock", pipe=PipeType.MTE2, mutex_id=1)
    body = [mk, irb.ev("block.exp", t, t), unlock, lock, *loads(irb, x, t, (off, 0), (off, 1))]
    lines = irb.text(cse(irb.program(body, params=(x, i)))).splitlines()
    at = lines.index("cse = i * 64")
    assert "mutex_unlock" in lines[at - 1] and "mutex_lock" in lines[at + 1]


def test_mutex_ids_stay_as_written(irb):
    i = irb.var("i")
    ident = irb.bin(BinOp.FloorMod, irb.bin(BinOp.Add, i, 1), 2)
    prog = irb.program([irb.ev("system.mutex_lock_dyn", ident, pipe=PipeType.V),
                        irb.ev("system.mutex_unlock_dyn", ident, pipe=PipeType.V)], params=(i,))
    assert cse(prog) is prog
