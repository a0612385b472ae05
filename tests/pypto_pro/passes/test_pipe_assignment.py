"""pipe_assignment: every data-accessing op carries the pipe the registry gives its operands."""
from __future__ import annotations

import pytest

from pypto_pro.ir.dtype import DataType
from pypto_pro.ir.types import MemorySpace as M, PipeType
from pypto_pro.passes import pipe_assignment
from pypto_pro.passes.manager import PassContext


def pipes_of(program) -> list:
    return [s.expr.kwarg("pipe") for s in program.kernel.body.stmts
            if hasattr(s, "expr") and s.expr.op.startswith(("block.", "simt."))]


@pytest.mark.parametrize("op, spaces, pipe", [
    ("block.load", (M.Vec,), PipeType.MTE2),
    ("block.store", (None, M.Vec), PipeType.MTE3),
    ("block.store", (None, M.Acc), PipeType.FIX),
    ("block.move", (M.Left, M.Mat), PipeType.MTE1),
    ("block.move", (M.Vec, M.Acc), PipeType.FIX),
    ("block.move", (M.Mat, M.Vec), PipeType.MTE3),
    ("block.add", (M.Vec, M.Vec, M.Vec), PipeType.V),
    ("block.matmul", (M.Acc, M.Left, M.Right), PipeType.M),
    ("block.insert", (M.Mat, M.Vec), PipeType.MTE3),
    ("block.setval", (M.Vec,), PipeType.S),
])
def test_pipe_follows_the_operand_spaces(irb, op, spaces, pipe):
    args = []
    for i, space in enumerate(spaces):
        if space is None:
            args.append(irb.tensor("gm"))
        else:
            args.append(irb.make_tile(f"t{i}", 0x0, space=space, dtype=DataType.FP32)[0])
    if op in ("block.load", "block.store"):
        args = [args[0], args[1] if len(args) > 1 else irb.tensor("gm"), [0, 0]]
    if op == "block.insert":
        args.append([0, 0])
    if op == "block.setval":
        args += [0, 1.0]
    out = pipe_assignment.run(irb.program([irb.ev(op, *args)]), PassContext("vector"))
    assert pipes_of(out) == [pipe]


def test_existing_pipes_and_sync_ops_are_left_alone(irb):
    t, mk = irb.make_tile("t", 0x0)
    prog = irb.program([
        mk,
        irb.ev("block.exp", t, t, pipe=PipeType.MTE3),
        irb.ev("system.mutex_lock", pipe=PipeType.MTE2, mutex_id=3),
        irb.ev("block.set_validshape", t, [4, 4]),
    ])
    ctx = PassContext("vector")
    out = pipe_assignment.run(prog, ctx)
    stmts = out.kernel.body.stmts
    assert stmts[1].expr.kwarg("pipe") is PipeType.MTE3
    assert stmts[2] is prog.kernel.body.stmts[2]
    assert stmts[3].expr.kwarg("pipe") is None  # descriptor-only, no data access
    assert "pipes_assigned" in ctx.facts


def test_simt_launch_and_nested_getval_get_pipes(irb):
    t, mk = irb.make_tile("t", 0x0)
    v = irb.var("v", irb.INDEX)
    read = irb.assign(v, irb.call("block.getval", t, 0, ty=irb.INDEX))
    launch = irb.ev("simt.launch", t, 1.0, callee="f")
    out = pipe_assignment.run(irb.program([mk, read, launch]), PassContext("vector"))
    assert out.kernel.body.stmts[1].value.kwarg("pipe") is PipeType.S
    assert out.kernel.body.stmts[2].expr.kwarg("pipe") is PipeType.V
