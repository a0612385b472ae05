"""constant_folding: propagate and fold scalar constants, prune branches on constant conditions.

A forward walk over each function keeps the Vars whose value is a known constant at this point
(an `if` keeps what both falling-through branches agree on; a Var assigned in a loop is unknown
throughout and after the loop). Integer and boolean expressions fold with the target's
semantics (`ir/scalar_semantics.py`: `//` and `%` truncate as the generated C++ does; no folding
of a division by zero, of values outside the dtype's range, or of floating-point arithmetic).
Constant `Select`s pick their side, `tile_group.mutex_id` / `tile_group.get` with a constant
slot become constants / typed slots, `system.*_dyn` sync ops with a constant, in-range id become
their static form, `if`s on constants keep one branch and loops that run zero times disappear.
"""
from __future__ import annotations

import operator

from ..ir.dtype import DataType
from ..ir.mutator import Mutator
from ..ir.nodes import (
    AssignStmt, BinaryExpr, BinOp, Call, Cast, ConstBool, ConstInt, Expr, ForStmt, IfStmt,
    Program, SectionStmt, Select, Stmt, UnaryExpr, UnOp, Var, WhileStmt,
)
from ..ir.scalar_semantics import RUNTIME_BINOPS
from ..ir.types import ScalarType
from .ir_query import (
    CONSTS, defined_vars, falls_through, is_pure_scalar, map_functions, map_own_exprs,
    rebuild, replace_fields, stmts_of, with_body,
)
from .manager import PassContext
from .mutex_ops import slot_id

NAME = "constant_folding"
#: `_dyn` sync ops → the kwarg that holds the id in their static form, and its id range
DYN_ID_KWARG = {
    "system.mutex_lock_dyn": ("mutex_id", 32), "system.mutex_unlock_dyn": ("mutex_id", 32),
    "system.sync_src_dyn": ("event_id", 16), "system.sync_dst_dyn": ("event_id", 16),
    "system.set_cross_core_dyn": ("event_id", 16),
    "system.wait_cross_core_dyn": ("event_id", 16),
}
_INT_OPS = {
    **{op: fn for op, fn in RUNTIME_BINOPS.items() if op not in (BinOp.FloatDiv, BinOp.Pow)},
    BinOp.And: lambda a, b: a and b, BinOp.Or: lambda a, b: a or b,
}
_BOOL_OPS = (BinOp.And, BinOp.Or, BinOp.Eq, BinOp.Ne, BinOp.BitAnd, BinOp.BitOr, BinOp.BitXor)


def run(program: Program, ctx: PassContext) -> Program:
    return map_functions(program, lambda f: with_body(f, _Propagate().body(f.body)))


# ---------------------------------------------------------------- expression folding


def _int_value(e: Expr) -> int | bool | None:
    if isinstance(e, ConstBool):
        return e.value
    if isinstance(e, ConstInt):
        return e.value
    return None


def _const(value: int | bool, like: Expr) -> Expr | None:
    """A constant of `like`'s dtype, or None when the value does not fit it."""
    dtype = like.type.dtype
    if dtype is DataType.BOOL:
        return ConstBool(bool(value), like.span)
    if isinstance(value, bool) or not dtype.is_int:
        return None
    bits = dtype.bits
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if dtype.kind != "uint" else \
        (0, (1 << bits) - 1)
    return ConstInt(value, dtype, like.span) if lo <= value <= hi else None


def _fold_binary(e: BinaryExpr) -> Expr:
    a, b = _int_value(e.lhs), _int_value(e.rhs)
    if a is None or b is None:
        return _identity(e, a, b)
    if (isinstance(a, bool) or isinstance(b, bool)) and e.op not in _BOOL_OPS:
        return e
    if e.op in (BinOp.FloorDiv, BinOp.FloorMod) and b == 0:
        return e  # the run-time division by zero is reported where it runs
    if e.op in (BinOp.Shl, BinOp.Shr) and not 0 <= b < 64:
        return e
    fn = _INT_OPS.get(e.op)
    return e if fn is None else (_const(fn(a, b), e) or e)


def _identity(e: BinaryExpr, a, b) -> Expr:
    """x+0, x-0, x*1, 1*x → x; x*0 → 0; `and`/`or` with a constant side."""
    same = e.lhs.type == e.type and e.rhs.type == e.type
    if e.op in (BinOp.And, BinOp.Or) and same:
        absorbing = e.op is BinOp.Or  # `x or True` is True, `x and False` is False
        if a is not None:
            return ConstBool(absorbing, e.span) if bool(a) is absorbing else e.rhs
        if b is not None:
            if bool(b) is not absorbing:
                return e.lhs
            return ConstBool(absorbing, e.span) if is_pure_scalar(e.lhs) else e
    if not same or isinstance(a, bool) or isinstance(b, bool):
        return e
    if (e.op in (BinOp.Add, BinOp.Sub) and b == 0) or (e.op is BinOp.Mul and b == 1):
        return e.lhs
    if (e.op is BinOp.Add and a == 0) or (e.op is BinOp.Mul and a == 1):
        return e.rhs
    if e.op is BinOp.Mul and 0 in (a, b) and is_pure_scalar(e):
        return _const(0, e) or e
    return e


def _fold_unary(e: UnaryExpr) -> Expr:
    v = _int_value(e.operand)
    if v is None:
        return e
    if e.op is UnOp.Not:
        return ConstBool(not v, e.span)
    if isinstance(v, bool):
        return e
    fn = {UnOp.Neg: operator.neg, UnOp.BitNot: operator.invert, UnOp.Abs: abs}[e.op]
    return _const(fn(v), e) or e


class _Fold(Mutator):
    def __init__(self, env: dict[Var, Expr]) -> None:
        self.env = env

    def visit_Var(self, node: Var) -> Expr:
        return self.env.get(node, node)

    def visit_BinaryExpr(self, node: BinaryExpr) -> Expr:
        return _fold_binary(self.generic(node))

    def visit_UnaryExpr(self, node: UnaryExpr) -> Expr:
        return _fold_unary(self.generic(node))

    def visit_Cast(self, node: Cast) -> Expr:
        node = self.generic(node)
        v = _int_value(node.operand)
        return node if v is None else (_const(v, node) or node)

    def visit_Select(self, node: Select) -> Expr:
        node = self.generic(node)
        c = _int_value(node.cond)
        if c is None:
            return node
        return node.true_value if c else node.false_value

    def visit_Call(self, node: Call) -> Expr:
        node = self.generic(node)
        index = node.args[1] if len(node.args) == 2 else None
        if node.op == "tile_group.mutex_id" and isinstance(index, ConstInt):
            return slot_id(node.args[0], index, node.kwarg("k", 0), node.span)
        if node.op == "tile_group.get" and isinstance(index, ConstInt) and \
                node.type.addr is None:
            return replace_fields(node, type=node.args[0].type.slot_type(index.value))
        key, limit = DYN_ID_KWARG.get(node.op, (None, 0))
        ident = node.args[0] if node.args else None
        if key is not None and isinstance(ident, ConstInt) and 0 <= ident.value < limit:
            return Call(node.op.removesuffix("_dyn"), node.args[1:],
                        (*node.kwargs, (key, ident.value)), node.type, node.span)
        return node


# ---------------------------------------------------------------- statements


class _Propagate:
    def __init__(self) -> None:
        self.env: dict[Var, Expr] = {}

    def fold(self, s: Stmt) -> Stmt:
        return map_own_exprs(s, lambda e: _Fold(self.env).visit(e))

    def body(self, body: Stmt | None) -> Stmt | None:
        if body is None:
            return None
        return rebuild(body, [x for s in stmts_of(body) for x in self.stmt(s)])

    def stmt(self, s: Stmt) -> list[Stmt]:
        if isinstance(s, IfStmt):
            return self.if_stmt(self.fold(s))
        if isinstance(s, ForStmt):
            return self.for_stmt(self.fold(s))
        if isinstance(s, WhileStmt):
            self.forget(s)
            s = self.fold(s)
            cond = _int_value(s.cond)
            if cond is not None and not cond and not s.iter_args:
                return []
            return [self.loop_body(s)]
        if isinstance(s, SectionStmt):
            return [replace_fields(s, body=self.body(s.body))]
        s = self.fold(s)
        if isinstance(s, AssignStmt):
            self.env.pop(s.var, None)
            if isinstance(s.value, CONSTS) and isinstance(s.var.type, ScalarType) and \
                    s.value.type == s.var.type:
                self.env[s.var] = s.value
        return [s]

    def if_stmt(self, s: IfStmt) -> list[Stmt]:
        c = _int_value(s.cond)
        if c is not None and not s.return_vars:
            taken = s.then_body if c else s.else_body
            return list(stmts_of(self.body(taken)))
        entry = dict(self.env)
        then = self.body(s.then_body)
        after_then, self.env = self.env, dict(entry)
        other = self.body(s.else_body)
        joins = [e for e, b in ((after_then, s.then_body), (self.env, s.else_body))
                 if falls_through(b)]
        self.env = {v: k for v, k in joins[0].items()
                    if all(j.get(v) == k for j in joins[1:])} if joins else {}
        return [replace_fields(s, then_body=then, else_body=other)]

    def for_stmt(self, s: ForStmt) -> list[Stmt]:
        start, stop, step = (_int_value(e) for e in (s.start, s.stop, s.step))
        if None not in (start, stop, step) and not s.iter_args and step != 0 and \
                not range(start, stop, step):
            return []
        self.forget(s)
        return [self.loop_body(s)]

    def loop_body(self, s: ForStmt | WhileStmt) -> Stmt:
        entry = dict(self.env)
        body = self.body(s.body)
        self.env = entry
        return replace_fields(s, body=body)

    def forget(self, s: Stmt) -> None:
        """Vars assigned in a loop are unknown in it and after it."""
        for v in defined_vars(s):
            self.env.pop(v, None)

