"""What a runtime scalar operator computes: the meaning of the real toolchain's generated C++.

The real PyPTO Pro folds operators on compile-time constants in Python (its parser: `-7 // 2`
is -4), but emits the IR's `//` and `%` on runtime values as C++ `/` and `%`: integer division
truncates toward zero and the remainder takes the dividend's sign (`n // 2` is -3 for n = -7),
and `//` on floats is a plain float division. The simulator's scalar unit (every engine), SIMT
lanes, constant folding of IR expressions and the code generator all follow this table.
Imports only the IR.
"""
from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

from .nodes import BinOp


def float_div(a: float, b: float) -> float:
    """IEEE-754 `a / b`, as the generated C++ divides floats: a zero divisor gives ±inf (nan
    for 0 / 0 or nan / 0), where Python's `/` would raise."""
    if b != 0:
        return a / b
    if a != a or a == 0:
        return math.nan
    return math.copysign(math.inf, a) * math.copysign(1.0, b)


def c_div(a: Any, b: Any) -> Any:
    """C++ `a / b`: truncation toward zero for integers, float division otherwise."""
    if isinstance(a, float) or isinstance(b, float):
        return float_div(a, b)
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def c_mod(a: int, b: int) -> int:
    """C++ `a % b` on integers: `a - c_div(a, b) * b` (the sign of `a`)."""
    return a - c_div(a, b) * b


#: runtime meaning of every binary operator that both integers and floats accept
RUNTIME_BINOPS: dict[BinOp, Callable[[Any, Any], Any]] = {
    BinOp.Add: operator.add, BinOp.Sub: operator.sub, BinOp.Mul: operator.mul,
    BinOp.FloorDiv: c_div, BinOp.FloorMod: c_mod, BinOp.FloatDiv: float_div,
    BinOp.Pow: operator.pow, BinOp.Min: min, BinOp.Max: max,
    BinOp.Eq: operator.eq, BinOp.Ne: operator.ne, BinOp.Lt: operator.lt, BinOp.Le: operator.le,
    BinOp.Gt: operator.gt, BinOp.Ge: operator.ge, BinOp.BitAnd: operator.and_,
    BinOp.BitOr: operator.or_, BinOp.BitXor: operator.xor, BinOp.Shl: operator.lshift,
    BinOp.Shr: operator.rshift,
}
