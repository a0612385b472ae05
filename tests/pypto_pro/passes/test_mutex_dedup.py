"""mutex_dedup (spec §4.2): a pipe never holds an id twice; V-only ids vanish on a5."""
from __future__ import annotations

from pypto_pro.ir.nodes import BinOp, Select
from pypto_pro.ir.types import PipeType
from pypto_pro.passes import mutex_dedup
from pypto_pro.passes.manager import PassContext

V, MTE2 = PipeType.V, PipeType.MTE2


def dedup(prog, arch="a5"):
    return mutex_dedup.run(prog, PassContext("vector", arch=arch))


def locks(irb, ids, pipe, op):
    out = []
    for i in ids:
        if isinstance(i, int):
            out.append(irb.ev(f"system.mutex_{op}", pipe=pipe, mutex_id=i))
        else:
            out.append(irb.ev(f"system.mutex_{op}_dyn", i, pipe=pipe))
    return out


def bracket(irb, ids, pipe, t):
    return [*locks(irb, ids, pipe, "lock"), irb.ev("block.exp", t, t),
            *locks(irb, ids, pipe, "unlock")]


def test_constant_ids_are_locked_once_and_first(irb):
    t, mk = irb.make_tile("t", 0x0)
    g, mk_g = irb.group("g", (0x4000, 0x8000), ids=[1, 2])
    k = irb.var("k")
    dyn = irb.call("tile_group.mutex_id", g, k, ty=irb.INDEX, k=0)
    prog = irb.program([mk, mk_g, *bracket(irb, [3, dyn, 3, 2], MTE2, t)], params=(k,))
    text = irb.text(dedup(prog))
    assert text.splitlines()[1:4] == [
        "ir.eval(ir.call @system.mutex_lock(pipe=ir.PipeType.MTE2, mutex_id=3))",
        "ir.eval(ir.call @system.mutex_lock(pipe=ir.PipeType.MTE2, mutex_id=2))",
        "ir.eval(ir.call @system.mutex_lock_dyn(ir.call @tile_group.mutex_id(g, k, k=0), "
        "pipe=ir.PipeType.MTE2, guard=[2]))",
    ]
    assert text.count("mutex_unlock") == 3


def test_runtime_ids_compare_only_with_ids_they_can_equal(irb, trace):
    t, mk = irb.make_tile("t", 0x0)
    g, mk_g = irb.group("g", (0x4000, 0x8000), ids=[[1, 5], [2, 6]])
    h, mk_h = irb.group("h", (0xC000,), ids=[9])
    i, j = irb.var("i"), irb.var("j")

    def ident(idx, k):
        return irb.call("tile_group.mutex_id", g, idx, ty=irb.INDEX, k=k)

    ids = [ident(i, 0), ident(i, 1), ident(j, 0), 9]
    prog = irb.program([mk, mk_g, mk_h, *bracket(irb, ids, MTE2, t)], params=(i, j))
    out = dedup(prog)
    text = irb.text(out)
    assert "mutex_id(g, i, k=1), pipe=ir.PipeType.MTE2))" in text  # same tile: no guard
    assert "mutex_id(g, j, k=0), pipe=ir.PipeType.MTE2, guard=[" \
           "ir.call @tile_group.mutex_id(g, i, k=0)])" in text
    held = [e[2] for e in trace(out, i=1, j=1) if e[0] == "system.mutex_lock"]
    assert sorted(held) == [2, 6, 9]  # j == i: slot 1's ids once each


def test_identical_runtime_ids_and_select_ids(irb):
    t, mk = irb.make_tile("t", 0x0)
    c, cursor = irb.var("c", irb.BOOL), irb.var("cur")
    sel = Select(c, irb.c(2), irb.c(4), irb.INDEX)
    other = Select(c, irb.c(3), irb.c(5), irb.INDEX)
    step = irb.bin(BinOp.FloorMod, cursor, 2)
    prog = irb.program([mk, *bracket(irb, [sel, sel, other, step], MTE2, t)],
                       params=(c, cursor))
    text = irb.text(dedup(prog))
    assert text.count("mutex_lock_dyn(2 if c else 4") == 1
    assert "mutex_lock_dyn(3 if c else 5, pipe=ir.PipeType.MTE2))" in text
    assert "mutex_lock_dyn(cur % 2, pipe=ir.PipeType.MTE2, guard=[2 if c else 4, " \
           "3 if c else 5])" in text


def test_ids_only_pipe_v_uses_are_elided_on_a5(irb):
    t, mk = irb.make_tile("t", 0x0)
    body = [mk, *bracket(irb, [7, 8], V, t), *bracket(irb, [8], MTE2, t)]
    prog = irb.program(body)
    text = irb.text(dedup(prog))
    assert "mutex_id=7" not in text
    assert text.count("mutex_id=8") == 4
    assert irb.text(dedup(prog, arch="a3")).count("mutex_id=7") == 2


def test_ids_named_by_ssa_variables_are_read_through_them(irb):
    t, mk = irb.make_tile("t", 0x0)
    c = irb.var("c", irb.BOOL)
    a, b = irb.var("a"), irb.var("b")
    prog = irb.program([mk, irb.assign(a, Select(c, irb.c(2), irb.c(4), irb.INDEX)),
                        irb.assign(b, irb.c(7)), *bracket(irb, [a, b], V, t),
                        *bracket(irb, [a], MTE2, t)], params=(c,))
    text = irb.text(dedup(prog))
    assert "mutex_lock_dyn(b" not in text  # b is 7, used on V only: elided
    assert "mutex_lock_dyn(a, pipe=ir.PipeType.V))" in text  # 2 / 4 are also used on MTE2
