"""The pass manager: records are data — record 0 is the parse, one per pass, with IR text
(printed when first read), time, changed flag, warnings, and the error of a failed pass."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from pypto_pro.errors import InvalidTile, PassInner
from pypto_pro.passes import pipe_assignment, verify
from pypto_pro.passes.manager import PassContext, PassManager


def identity_pass():
    return SimpleNamespace(NAME="identity", run=lambda program, ctx: program)


def failing_pass(exc):
    def run(program, ctx):
        ctx.warn("looked at it", None, pass_name="boom")
        raise exc

    return SimpleNamespace(NAME="boom", run=run)


@pytest.fixture
def program(irb):
    t, mk = irb.make_tile("t", 0x0)
    return irb.program([mk, irb.ev("block.exp", t, t)])


def test_records_start_with_the_parse_and_follow_the_passes(program):
    passes = [pipe_assignment, identity_pass(), verify]
    out, records = PassManager(passes).run(program, PassContext("vector"))
    assert records.names() == ["parse", "pipe_assignment", "identity", "verify"]
    assert [r.changed for r in records] == [False, True, False, False]
    assert all(r.seconds > 0 for r in records[1:])
    assert records[0].program is program and records[-1].program is out
    assert "pipe=ir.PipeType.V" in records["pipe_assignment"].ir_text
    assert records[1].ir_text == records["verify"].ir_text


def rebuilt_pass():
    """A pass that returns a new, equal program: not a change."""
    import dataclasses

    return SimpleNamespace(NAME="rebuilt", run=lambda p, ctx: dataclasses.replace(p))


def test_ir_text_is_printed_when_first_read(program):
    """A launch outside the workbench never reads the records' IR text: none is printed until
    then; an unchanged program shares the text of the record before."""
    _, records = PassManager([pipe_assignment, identity_pass(), rebuilt_pass()]).run(
        program, PassContext("vector"))
    assert all("ir_text" not in vars(r) for r in records)
    assert [r.changed for r in records] == [False, True, False, False]
    assert records["identity"].ir_text is records["pipe_assignment"].ir_text
    assert records["rebuilt"].program is not records["identity"].program


def test_diff_between_any_two_records(program):
    _, records = PassManager([pipe_assignment, verify]).run(program, PassContext("vector"))
    diff = records.diff("parse", "verify")
    assert diff.startswith("--- parse\n+++ verify\n")
    assert "-    ir.eval(ir.call @block.exp(t, t))" in diff
    assert "+    ir.eval(ir.call @block.exp(t, t, pipe=ir.PipeType.V))" in diff
    assert records.diff(1, 2) == ""


def test_rows_and_summary_for_the_workbench(program):
    _, records = PassManager([pipe_assignment]).run(program, PassContext("vector"))
    rows = records.rows()
    assert [r["pass"] for r in rows] == ["parse", "pipe_assignment"]
    assert rows[1]["changed"] and not rows[1]["failed"]
    assert "pipe_assignment" in records.summary() and "changed" in records.summary()
    with pytest.raises(KeyError, match="no pass named"):
        records.get("nope")


def test_a_failed_pass_is_recorded_and_its_error_names_it(program):
    manager = PassManager([pipe_assignment, failing_pass(InvalidTile("bad tile"))])
    with pytest.raises(InvalidTile) as err:
        manager.run(program, PassContext("vector"))
    assert err.value.pass_name == "boom"
    failed = manager.records[-1]
    assert failed.name == "boom" and failed.error is err.value
    assert failed.ir_text == manager.records["pipe_assignment"].ir_text  # the IR it was given
    assert len(failed.warnings) == 1
    assert "FAILED" in manager.records.summary()


def test_a_stray_exception_becomes_pass_inner(program):
    manager = PassManager([failing_pass(KeyError("x"))])
    with pytest.raises(PassInner, match="KeyError") as err:
        manager.run(program, PassContext("vector"))
    assert err.value.pass_name == "boom" and isinstance(err.value.__cause__, KeyError)


def test_context_for_a_kernel(program):
    options = SimpleNamespace(auto_mutex=False)
    ctx = PassContext.for_kernel("cube", None, options)
    assert (ctx.target, ctx.arch, ctx.auto_mutex) == ("cube", "a5", False)
    assert ctx.soc.name == "Ascend950PR_9589"
    assert PassContext.for_kernel("vector", "a3").soc.name == "Ascend910B1"
    ctx.warn("w", None)
    assert ctx.warnings[0].message == "w"
