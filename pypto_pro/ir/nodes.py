"""IR node kinds (spec §3.1): expressions, statements, functions and programs.

Nodes are frozen dataclasses; every node carries a `span`. `Var` is compared by identity (two
variables may share a name in different scopes); everything else structurally. Passes build new
trees with `dataclasses.replace` (see `ir.mutator`).

Semantics of the SSA constructs, shared by the simulator and the code generator: a `ForStmt`
assigns its `iter_args` from `init_values` before the first iteration; a `YieldStmt` inside the
loop body assigns the iter_args in parallel (the SSA pass emits one before every `continue` /
`break` and at the end of the body); after the loop the `return_vars` take the iter_args' values.
An `IfStmt` with `return_vars` ends each branch with a `YieldStmt` giving their values.
Ownership: a `YieldStmt` immediately followed by `break` / `continue` belongs to the innermost
loop (it writes back the iter_args before the jump); an if-branch that ends in `break`,
`continue` or `return` has no yield for the if. Otherwise a yield belongs to the innermost
construct with carried values. `passes.verify` checks this rule.
"""
from __future__ import annotations

import enum
import itertools
from dataclasses import dataclass, field
from typing import Any

from .dtype import DataType
from .span import UNKNOWN, Span
from .types import BOOL, INDEX, ScalarType, SectionKind, Type

_ids = itertools.count()


@dataclass(frozen=True)
class Node:
    pass


# ---------------------------------------------------------------- expressions


@dataclass(frozen=True)
class Expr(Node):
    pass


@dataclass(frozen=True, eq=False)
class Var(Expr):
    name: str
    type: Type
    span: Span = UNKNOWN
    uid: int = field(default_factory=lambda: next(_ids))

    def __hash__(self) -> int:
        return hash(self.uid)

    def __eq__(self, other: object) -> bool:
        return self is other or (isinstance(other, Var) and other.uid == self.uid)


@dataclass(frozen=True)
class ConstInt(Expr):
    value: int
    dtype: DataType = DataType.INDEX
    span: Span = field(default=UNKNOWN, compare=False)

    @property
    def type(self) -> Type:
        return ScalarType(self.dtype)


@dataclass(frozen=True)
class ConstFloat(Expr):
    value: float
    dtype: DataType = DataType.FP32
    span: Span = field(default=UNKNOWN, compare=False)

    @property
    def type(self) -> Type:
        return ScalarType(self.dtype)


@dataclass(frozen=True)
class ConstBool(Expr):
    value: bool
    span: Span = field(default=UNKNOWN, compare=False)

    @property
    def type(self) -> Type:
        return BOOL


@dataclass(frozen=True)
class ConstStr(Expr):
    value: str
    span: Span = field(default=UNKNOWN, compare=False)

    @property
    def type(self) -> Type:
        from .types import StrType

        return StrType()


@dataclass(frozen=True)
class EnumConst(Expr):
    """A compile-time enum member used as an op attribute (e.g. `pl.PipeType.MTE2`)."""

    value: enum.Enum
    span: Span = field(default=UNKNOWN, compare=False)

    @property
    def type(self) -> Type:
        return INDEX


class BinOp(enum.Enum):
    """Scalar binary operators; on run-time values `FloorDiv` / `FloorMod` compute what the real
    toolchain's C++ `/` and `%` compute (truncation: `ir/scalar_semantics.py`), the names and
    the printed `//` / `%` are the real IR's."""

    Add = "+"
    Sub = "-"
    Mul = "*"
    FloorDiv = "//"
    FloorMod = "%"
    FloatDiv = "/"
    Pow = "**"
    Min = "min"
    Max = "max"
    Eq = "=="
    Ne = "!="
    Lt = "<"
    Le = "<="
    Gt = ">"
    Ge = ">="
    And = "and"
    Or = "or"
    BitAnd = "&"
    BitOr = "|"
    BitXor = "^"
    Shl = "<<"
    Shr = ">>"

    @property
    def is_compare(self) -> bool:
        return self in (BinOp.Eq, BinOp.Ne, BinOp.Lt, BinOp.Le, BinOp.Gt, BinOp.Ge)

    @property
    def is_logical(self) -> bool:
        return self in (BinOp.And, BinOp.Or)


class UnOp(enum.Enum):
    Neg = "-"
    Not = "not"
    BitNot = "~"
    Abs = "abs"


@dataclass(frozen=True)
class BinaryExpr(Expr):
    op: BinOp
    lhs: Expr
    rhs: Expr
    type: Type
    span: Span = field(default=UNKNOWN, compare=False)


@dataclass(frozen=True)
class UnaryExpr(Expr):
    op: UnOp
    operand: Expr
    type: Type
    span: Span = field(default=UNKNOWN, compare=False)


@dataclass(frozen=True)
class Cast(Expr):
    """Scalar conversion to `type.dtype` (`pl.const`, `pl.astype`, promotion)."""

    operand: Expr
    type: ScalarType
    span: Span = field(default=UNKNOWN, compare=False)


@dataclass(frozen=True)
class Select(Expr):
    """`a if cond else b` on scalars or tiles (the mutex id follows the chosen tile)."""

    cond: Expr
    true_value: Expr
    false_value: Expr
    type: Type
    span: Span = field(default=UNKNOWN, compare=False)


@dataclass(frozen=True)
class Call(Expr):
    """An op call: `op` is the registered name (`block.add`, `system.sync_src`, `vf.add`, ...).

    `kwargs` is an ordered tuple of (name, value) where values are Python constants (ints,
    floats, bools, strings, enum members, tuples of those) or `Expr`s.
    """

    op: str
    args: tuple[Expr, ...]
    kwargs: tuple[tuple[str, Any], ...] = ()
    type: Type = field(default_factory=lambda: _none_type())
    span: Span = field(default=UNKNOWN, compare=False)

    def kwarg(self, name: str, default: Any = None) -> Any:
        for k, v in self.kwargs:
            if k == name:
                return v
        return default


@dataclass(frozen=True)
class MakeTuple(Expr):
    elements: tuple[Expr, ...]
    type: Type
    span: Span = field(default=UNKNOWN, compare=False)


@dataclass(frozen=True)
class GetItem(Expr):
    """`value[index]` on tuples / arrays (runtime index allowed)."""

    value: Expr
    index: Expr
    type: Type
    span: Span = field(default=UNKNOWN, compare=False)


@dataclass(frozen=True)
class GetField(Expr):
    """`value.name` on structs, TilingData and named tuples."""

    value: Expr
    name: str
    type: Type
    span: Span = field(default=UNKNOWN, compare=False)


def _none_type() -> Type:
    from .types import NoneType

    return NoneType()


# ---------------------------------------------------------------- statements


@dataclass(frozen=True)
class Stmt(Node):
    pass


@dataclass(frozen=True)
class AssignStmt(Stmt):
    var: Var
    value: Expr
    span: Span = field(default=UNKNOWN, compare=False)


@dataclass(frozen=True)
class EvalStmt(Stmt):
    expr: Expr
    span: Span = field(default=UNKNOWN, compare=False)


@dataclass(frozen=True)
class SetField(Stmt):
    """`target.name = value` (struct field write) or `target[index] = value` for arrays."""

    target: Expr
    name: str | None
    index: Expr | None
    value: Expr
    span: Span = field(default=UNKNOWN, compare=False)


@dataclass(frozen=True)
class SeqStmts(Stmt):
    stmts: tuple[Stmt, ...]
    span: Span = field(default=UNKNOWN, compare=False)


@dataclass(frozen=True)
class IfStmt(Stmt):
    cond: Expr
    then_body: Stmt
    else_body: Stmt | None = None
    return_vars: tuple[Var, ...] = ()
    span: Span = field(default=UNKNOWN, compare=False)


@dataclass(frozen=True)
class ForStmt(Stmt):
    loop_var: Var
    start: Expr
    stop: Expr
    step: Expr
    body: Stmt
    iter_args: tuple[Var, ...] = ()
    init_values: tuple[Expr, ...] = ()
    return_vars: tuple[Var, ...] = ()
    attrs: tuple[tuple[str, Any], ...] = ()
    span: Span = field(default=UNKNOWN, compare=False)


@dataclass(frozen=True)
class WhileStmt(Stmt):
    cond: Expr
    body: Stmt
    iter_args: tuple[Var, ...] = ()
    init_values: tuple[Expr, ...] = ()
    return_vars: tuple[Var, ...] = ()
    span: Span = field(default=UNKNOWN, compare=False)


@dataclass(frozen=True)
class YieldStmt(Stmt):
    values: tuple[Expr, ...]
    span: Span = field(default=UNKNOWN, compare=False)


@dataclass(frozen=True)
class ReturnStmt(Stmt):
    """`return` / `return value`; a value only in a SIMT callee (`FunctionType.SIMT_CALLEE`),
    whose `return_type` it has (`passes.verify` checks both)."""

    value: Expr | None = None
    span: Span = field(default=UNKNOWN, compare=False)


@dataclass(frozen=True)
class BreakStmt(Stmt):
    span: Span = field(default=UNKNOWN, compare=False)


@dataclass(frozen=True)
class ContinueStmt(Stmt):
    span: Span = field(default=UNKNOWN, compare=False)


@dataclass(frozen=True)
class SectionStmt(Stmt):
    kind: SectionKind
    body: Stmt
    attrs: tuple[tuple[str, Any], ...] = ()
    span: Span = field(default=UNKNOWN, compare=False)


# ---------------------------------------------------------------- functions and programs


class FunctionType(enum.Enum):
    OPAQUE = "OPAQUE"  # the kernel
    ORCHESTRATION = "ORCHESTRATION"
    IN_CORE = "IN_CORE"
    HELPER = "HELPER"
    SIMT_VF = "SIMT_VF"  # launchable SIMT entry (attr max_threads)
    SIMT_CALLEE = "SIMT_CALLEE"


@dataclass(frozen=True)
class Function(Node):
    name: str
    params: tuple[Var, ...]
    body: Stmt
    func_type: FunctionType = FunctionType.OPAQUE
    attrs: tuple[tuple[str, Any], ...] = ()
    return_type: Type | None = None
    span: Span = field(default=UNKNOWN, compare=False)

    def attr(self, name: str, default: Any = None) -> Any:
        return dict(self.attrs).get(name, default)


@dataclass(frozen=True)
class Program(Node):
    """One target's program: the kernel (OPAQUE) plus SIMT functions it launches."""

    name: str
    functions: tuple[Function, ...]
    target: str  # "cube" | "vector"
    span: Span = field(default=UNKNOWN, compare=False)

    @property
    def kernel(self) -> Function:
        return next(f for f in self.functions if f.func_type is FunctionType.OPAQUE)

    def function(self, name: str) -> Function:
        return next(f for f in self.functions if f.name == name)


def const(value: Any, span: Span = UNKNOWN) -> Expr:
    """An IR constant for a Python value."""
    if isinstance(value, bool):
        return ConstBool(value, span)
    if isinstance(value, int):
        return ConstInt(value, DataType.INDEX, span)
    if isinstance(value, float):
        return ConstFloat(value, DataType.FP32, span)
    if isinstance(value, str):
        return ConstStr(value, span)
    if isinstance(value, enum.Enum):
        return EnumConst(value, span)
    raise TypeError(f"no IR constant for {value!r}")


def seq(stmts: list[Stmt] | tuple[Stmt, ...], span: Span = UNKNOWN) -> Stmt:
    """A statement list, flattened; a single statement is returned as is."""
    flat: list[Stmt] = []
    for s in stmts:
        if isinstance(s, SeqStmts):
            flat.extend(s.stmts)
        else:
            flat.append(s)
    return SeqStmts(tuple(flat), span)


def type_of(expr: Expr) -> Type:
    return expr.type  # every Expr subclass has `type` (a field or a property)
