"""Scalar arithmetic with a constant operand (`program._binary_const`: the index arithmetic
of every tile loop) keeps the general path's semantics: INT32 results wrap at 32 bits, division
truncates toward zero and the remainder takes the dividend's sign (the generated C++'s `/` and
`%`), and a constant zero divisor raises the typed
error at its line only when the division runs."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

import pypto_pro.language as pl
from pypto_pro.errors import SimulationError
from pypto_pro.runtime import backends


pytestmark = pytest.mark.usefixtures("functional_backend")  # (conftest)


@pl.jit(arch="a5")
def int_math(out: pl.Tensor[[5], pl.DT_INT32], a: pl.DT_INT32, b: pl.DT_INT32):
    with pl.section_vector():
        pl.setval(out, 0, a * 65536)
        pl.setval(out, 1, b // 4)
        pl.setval(out, 2, b % 4)
        pl.setval(out, 3, (a + 1) % 3)
        if a > 100000:
            pl.setval(out, 4, b // 0)  # the zero divisor


ENGINES = ("sim", "functional")


@pytest.mark.parametrize("engine", ENGINES)
def test_constant_operands_keep_the_scalar_semantics(engine):
    out = torch.zeros(5, dtype=torch.int32)
    with backends.use_backend(engine):
        int_math(out, 65537, -7)
    assert out.tolist() == [65536, -1, -3, 0, 0]  # 65537 * 65536 wraps to 65536 in INT32


@pytest.mark.parametrize("engine", ENGINES)
def test_a_constant_zero_divisor_fails_when_it_runs(engine):
    with pytest.raises(SimulationError, match="division by zero in scalar code") as info:
        with backends.use_backend(engine):
            int_math(torch.zeros(5, dtype=torch.int32), 165537, -7)
    line = Path(__file__).read_text().splitlines()[info.value.span.line - 1]
    assert "# the zero divisor" in line
