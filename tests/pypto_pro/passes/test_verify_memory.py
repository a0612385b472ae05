"""verify_memory: placements against the SoC table — errors with spans, overlap warnings."""
from __future__ import annotations

import pytest

from pypto_pro.errors import InvalidTile
from pypto_pro.ir.nodes import BinOp
from pypto_pro.ir.types import MemorySpace as M
from pypto_pro.passes import verify_memory
from pypto_pro.passes.manager import PassContext, PassManager, soc_facts


def check(prog, ctx=None):
    ctx = ctx or PassContext("vector")
    verify_memory.run(prog, ctx)
    return ctx


def test_misaligned_left_tile_is_an_error_with_its_span(irb):
    _, mk = irb.make_tile("l0a", 0x100, space=M.Left, line=4)
    with pytest.raises(InvalidTile) as err:
        check(irb.program([mk]))
    assert err.value.span.line == 4
    assert "0x100 is not 512-byte aligned for memory space Left" in err.value.message


def test_a_tile_past_the_end_of_ub_names_space_range_and_capacity(irb):
    _, mk = irb.make_tile("big", 0x3C000, shape=(128, 128), line=6)
    with pytest.raises(InvalidTile) as err:
        check(irb.program([mk]))
    msg = err.value.message
    assert "tile big [0x3c000, 0x44000)" in msg and "Vec" in msg and "253952 bytes" in msg
    assert err.value.span.line == 6 and err.value.pass_name == "verify_memory"


def test_a_group_slot_past_the_end_is_an_error(irb):
    _, mk = irb.group("acc", (0x0, 0x20000, 0x40000), space=M.Acc, shape=(128, 256),
                      line=3)
    with pytest.raises(InvalidTile) as err:
        check(irb.program([mk]))
    assert "group acc slot 2 [0x40000, 0x50000)" in err.value.message


def test_overlaps_of_buffers_never_in_use_together_pass(irb):
    _, a = irb.make_tile("a", 0x0, line=10)
    _, same_start = irb.make_tile("a_dn", 0x0, shape=(64, 1), line=11)
    _, inside = irb.make_tile("half", 0x1000, shape=(32, 64), line=12)
    _, g = irb.group("g", (0x1800, 0x4000), line=13)
    ctx = check(irb.program([a, same_start, inside, g]))
    assert ctx.warnings == []


def _branch_clobber(irb):
    """`a` loaded, `b` (sharing a's second half) loaded only when n > 0, then `a` stored."""
    x, n = irb.tensor("x"), irb.var("n")
    a, mk_a = irb.make_tile("a", 0x0, line=10)
    b, mk_b = irb.make_tile("b", 0x1000, line=11)
    body = [mk_a, mk_b, irb.ev("block.load", a, x, [0, 0], line=12),
            irb.if_(irb.bin(BinOp.Gt, n, 0), [irb.ev("block.load", b, x, [0, 0], line=14)]),
            irb.ev("block.store", x, a, [0, 0], line=15)]
    return irb.program(body, params=(x, n))


def test_an_overlap_behind_a_branch_warns_with_both_lines(irb):
    ctx = check(_branch_clobber(irb))
    [w] = ctx.warnings
    assert w.span.line == 14 and {s.line for s in w.related} == {10, 11}
    assert "tile a [0x0, 0x2000) (line 10)" in w.message
    assert "tile b [0x1000, 0x3000) (line 11)" in w.message
    assert "--> kernel.py:14:5" in str(w)


def test_warnings_reach_the_pass_record(irb):
    _, records = PassManager([verify_memory]).run(_branch_clobber(irb), PassContext("vector"))
    assert len(records["verify_memory"].warnings) == 1
    assert records["verify_memory"].warnings[0].pass_name == "verify_memory"


def test_the_facts_are_the_soc_tables():
    facts = soc_facts("Ascend950PR_9589")
    assert facts.buffer_size(M.Vec) == 253952 and facts.alignment(M.Left) == 512
    assert facts.buffer_size(M.Mat) == 524288 and facts.alignment(M.Acc) == 64
