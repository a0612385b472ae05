"""`pl` ops document themselves: the real declaration's signature (for an op it does not declare,
one named parameter per operand of the op registry), and a docstring saying which operands are
read and written, the IR op and the pipe."""
from __future__ import annotations

import inspect

import pytest

import pypto_pro.language as pl
from pypto_pro.errors import DSLDeclarationError


def test_a_vector_op_names_its_output_first_and_its_pipe():
    sig = inspect.signature(pl.add)
    assert list(sig.parameters) == ["out", "lhs", "rhs"]
    assert all(p.kind is p.POSITIONAL_OR_KEYWORD for p in sig.parameters.values())
    doc = pl.add.__doc__
    assert doc.startswith("pl.add(out, lhs, rhs)")
    assert "out : operand written" in doc and "lhs : operand read" in doc
    assert "IR op `block.add`" in doc and "Runs on pipe V." in doc


@pytest.mark.parametrize("op,expected", [
    (pl.load, ["dst_tile", "src_tensor", "offsets", "order"]),  # as the real declaration
    (pl.matmul_acc, ["dst_tile", "acc_tile", "lhs_tile", "rhs_tile", "phase"]),
    (pl.system.sync_src, ["args", "options"]),             # keyword options only
])
def test_signatures_follow_the_operand_roles(op, expected):
    assert list(inspect.signature(op).parameters)[:len(expected)] == expected


def test_a_move_says_its_pipe_comes_from_the_memory_spaces():
    assert "Runs on the pipe its operands' memory spaces select" in pl.move.__doc__


def test_every_declaration_has_a_signature_and_still_refuses_python_calls():
    for decl in pl.DECLARATIONS.values():
        inspect.signature(decl)
        assert decl.__doc__.startswith(decl.qualname)
    with pytest.raises(DSLDeclarationError):
        pl.add(1, 2, 3)
