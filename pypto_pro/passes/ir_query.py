"""Questions the passes ask of the IR, and the few builders they share.

Which Vars an expression reads and a statement defines, the statement's own expressions (header
expressions, not nested bodies) and how to replace them, whether a scalar expression is pure or
may trap, whether a statement list can fall through to its successor, and fresh Var names.
Owns no pass; imports only `pypto_pro.ir`.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator

from ..ir.nodes import (
    AssignStmt, BinaryExpr, BinOp, BreakStmt, Call, Cast, ConstBool, ConstFloat, ConstInt,
    ConstStr, ContinueStmt, EnumConst, EvalStmt, Expr, ForStmt, Function, GetField, GetItem,
    IfStmt, MakeTuple, ReturnStmt, SectionStmt, Select, SeqStmts, SetField, Stmt, UnaryExpr, Var,
    WhileStmt, YieldStmt, seq,
)
from ..ir.types import ScalarType, SectionKind, TileGroupType, TileType

#: root calls without side effects whose result depends only on their arguments and the core
PURE_CALLS = frozenset({"get_block_idx", "get_block_num", "get_subblock_idx",
                        "get_subblock_num", "tile_group.mutex_id"})
CONSTS = (ConstInt, ConstFloat, ConstBool, ConstStr, EnumConst)
ARITH = (BinaryExpr, UnaryExpr, Cast, Select)


# ---------------------------------------------------------------- reads and definitions


def sub_exprs(e: Expr) -> Iterator[Expr]:
    """`e` and every expression inside it, pre-order (call kwargs included, types excluded)."""
    stack: list = [e]
    while stack:
        n = stack.pop()
        if isinstance(n, tuple):
            stack.extend(reversed(n))
            continue
        if not isinstance(n, Expr):
            continue
        yield n
        if isinstance(n, (Var, *CONSTS)):
            continue
        children = _CHILDREN.get(type(n))
        if children is not None:
            stack.extend(reversed(children(n)))
        else:
            stack.extend(reversed([getattr(n, f.name) for f in dataclasses.fields(n)
                                   if f.name not in ("span", "type", "uid")]))


def body_exprs(body: Stmt | None) -> Iterator[Expr]:
    """Every expression evaluated anywhere in `body`."""
    for s in iter_stmts(body):
        for e in own_exprs(s):
            yield from sub_exprs(e)


_CHILDREN: dict[type, Callable[[Expr], tuple]] = {
    BinaryExpr: lambda n: (n.lhs, n.rhs),
    UnaryExpr: lambda n: (n.operand,),
    Cast: lambda n: (n.operand,),
    Select: lambda n: (n.cond, n.true_value, n.false_value),
    Call: lambda n: (n.args, tuple(v for _, v in n.kwargs)),
    MakeTuple: lambda n: n.elements,
    GetItem: lambda n: (n.value, n.index),
    GetField: lambda n: (n.value,),
}


def expr_vars(e: Expr) -> set[Var]:
    """Every Var read by an expression."""
    return {n for n in sub_exprs(e) if isinstance(n, Var)}


def own_exprs(stmt: Stmt) -> tuple[Expr, ...]:
    """The expressions a statement evaluates itself (not those of its nested bodies)."""
    if isinstance(stmt, AssignStmt):
        return (stmt.value,)
    if isinstance(stmt, EvalStmt):
        return (stmt.expr,)
    if isinstance(stmt, SetField):
        return tuple(e for e in (stmt.target, stmt.index, stmt.value) if e is not None)
    if isinstance(stmt, IfStmt):
        return (stmt.cond,)
    if isinstance(stmt, ForStmt):
        return (stmt.start, stmt.stop, stmt.step, *stmt.init_values)
    if isinstance(stmt, WhileStmt):
        return (stmt.cond, *stmt.init_values)
    if isinstance(stmt, YieldStmt):
        return stmt.values
    if isinstance(stmt, ReturnStmt) and stmt.value is not None:
        return (stmt.value,)
    return ()


def map_own_exprs(stmt: Stmt, fn: Callable[[Expr], Expr]) -> Stmt:
    """`stmt` with `fn` applied to each of its own expressions (same object if none changed)."""
    def tup(values: tuple[Expr, ...]) -> tuple[Expr, ...]:
        new = tuple(fn(v) for v in values)
        return values if all(a is b for a, b in zip(new, values)) else new

    if isinstance(stmt, AssignStmt):
        fields = {"value": fn(stmt.value)}
    elif isinstance(stmt, EvalStmt):
        fields = {"expr": fn(stmt.expr)}
    elif isinstance(stmt, SetField):
        fields = {"target": fn(stmt.target), "value": fn(stmt.value),
                  "index": None if stmt.index is None else fn(stmt.index)}
    elif isinstance(stmt, IfStmt):
        fields = {"cond": fn(stmt.cond)}
    elif isinstance(stmt, ForStmt):
        fields = {"start": fn(stmt.start), "stop": fn(stmt.stop), "step": fn(stmt.step),
                  "init_values": tup(stmt.init_values)}
    elif isinstance(stmt, WhileStmt):
        fields = {"cond": fn(stmt.cond), "init_values": tup(stmt.init_values)}
    elif isinstance(stmt, YieldStmt):
        fields = {"values": tup(stmt.values)}
    elif isinstance(stmt, ReturnStmt) and stmt.value is not None:
        fields = {"value": fn(stmt.value)}
    else:
        return stmt
    return replace_fields(stmt, **fields)


def defined_vars(node: Stmt | None) -> set[Var]:
    """Vars defined anywhere in `node`: assignments, loop vars, iter_args and return_vars."""
    out: set[Var] = set()
    for n in iter_stmts(node):
        if isinstance(n, AssignStmt):
            out.add(n.var)
        elif isinstance(n, ForStmt):
            out.update((n.loop_var, *n.iter_args, *n.return_vars))
        elif isinstance(n, WhileStmt):
            out.update((*n.iter_args, *n.return_vars))
        elif isinstance(n, IfStmt):
            out.update(n.return_vars)
    return out


def assigned_in_order(bodies: Iterable[Stmt | None],
                      keep: Callable[[Var], bool]) -> list[Var]:
    """Vars assigned by `AssignStmt`s in `bodies`, in textual order of first assignment."""
    seen: dict[Var, None] = {}
    for body in bodies:
        for n in iter_stmts(body):
            if isinstance(n, AssignStmt) and keep(n.var):
                seen.setdefault(n.var)
    return list(seen)


def is_scalar(v: Var) -> bool:
    return isinstance(v.type, ScalarType)


# ---------------------------------------------------------------- purity


def is_pure_scalar(e: Expr) -> bool:
    """A scalar expression without side effects and without reads of mutable memory state."""
    if isinstance(e, CONSTS):
        return True
    if isinstance(e, Var):
        return isinstance(e.type, (ScalarType, TileGroupType))
    if isinstance(e, ARITH):
        return isinstance(e.type, ScalarType) and all(
            is_pure_scalar(x) for x in _operands(e))
    if isinstance(e, Call):
        return e.op in PURE_CALLS and all(is_pure_scalar(a) for a in e.args)
    return False


def is_candidate(e: Expr) -> bool:
    """A non-trivial pure scalar computation worth naming (CSE, loop-invariant motion)."""
    return isinstance(e, ARITH) and is_pure_scalar(e) and not may_trap(e)


def may_trap(e: Expr) -> bool:
    """Whether evaluating `e` may fault (a division whose divisor is not a non-zero constant)."""
    for n in sub_exprs(e):
        if isinstance(n, BinaryExpr) and n.op in (BinOp.FloorDiv, BinOp.FloorMod,
                                                  BinOp.FloatDiv):
            if not (isinstance(n.rhs, (ConstInt, ConstFloat)) and n.rhs.value != 0):
                return True
    return False


def _operands(e: Expr) -> tuple[Expr, ...]:
    if isinstance(e, BinaryExpr):
        return (e.lhs, e.rhs)
    if isinstance(e, (UnaryExpr, Cast)):
        return (e.operand,)
    if isinstance(e, Select):
        return (e.cond, e.true_value, e.false_value)
    return ()


def size(e: Expr) -> int:
    return sum(1 for _ in sub_exprs(e))


# ---------------------------------------------------------------- statement lists


def stmts_of(body: Stmt | None) -> tuple[Stmt, ...]:
    if body is None:
        return ()
    return body.stmts if isinstance(body, SeqStmts) else (body,)


def rebuild(body: Stmt, new: list[Stmt]) -> Stmt:
    """`body` itself when `new` holds exactly its statements, else a block of `new` (with the
    span of `body`)."""
    old = stmts_of(body)
    if len(new) == len(old) and all(a is b for a, b in zip(new, old)):
        return body
    return seq(new, body.span)


def replace_fields(node, **fields):
    """`dataclasses.replace` that returns `node` itself when no field value changes."""
    changed = {k: v for k, v in fields.items() if v is not getattr(node, k)}
    return dataclasses.replace(node, **changed) if changed else node


def nested_blocks(stmt: Stmt) -> tuple[str, ...]:
    """Field names of the statement lists nested in `stmt`."""
    if isinstance(stmt, IfStmt):
        return ("then_body", "else_body")
    if isinstance(stmt, (ForStmt, WhileStmt, SectionStmt)):
        return ("body",)
    return ()


def map_blocks(stmt: Stmt, fn: Callable[[Stmt], Stmt]) -> Stmt:
    """`stmt` with `fn` applied to each nested statement list."""
    fields = {name: fn(getattr(stmt, name)) for name in nested_blocks(stmt)
              if getattr(stmt, name) is not None}
    return replace_fields(stmt, **fields)


def falls_through(stmt: Stmt | None) -> bool:
    """Whether control can reach the statement after `stmt`."""
    if stmt is None:
        return True
    if isinstance(stmt, SeqStmts):
        return all(falls_through(s) for s in stmt.stmts)
    if isinstance(stmt, (BreakStmt, ContinueStmt, ReturnStmt)):
        return False
    if isinstance(stmt, IfStmt):
        return falls_through(stmt.then_body) or falls_through(stmt.else_body)
    return True


def is_vf(stmt: Stmt) -> bool:
    return isinstance(stmt, SectionStmt) and stmt.kind is SectionKind.VF


def is_vf_tile_operand(e: Expr) -> bool:
    """A tile operand of an op in a VF section: bound when the section launches, before its
    body runs, so a temporary computed in the body cannot replace any part of it (the offset of
    `tile + k` is computed in the body, so only the tile itself is bound)."""
    return isinstance(getattr(e, "type", None), TileType) and not (
        isinstance(e, BinaryExpr) and e.op is BinOp.Add)


def iter_stmts(body: Stmt | None) -> Iterator[Stmt]:
    """Every statement in `body`, pre-order (compound statements before their bodies)."""
    for s in stmts_of(body):
        yield s
        for name in nested_blocks(s):
            yield from iter_stmts(getattr(s, name))


def map_functions(program, fn: Callable[[Function], Function]):
    """`program` with `fn` applied to every function (same object if nothing changed)."""
    new = tuple(fn(f) for f in program.functions)
    if all(a is b for a, b in zip(new, program.functions)):
        return program
    return dataclasses.replace(program, functions=new)


def with_body(fn: Function, body: Stmt) -> Function:
    return fn if body is fn.body else dataclasses.replace(fn, body=body)


# ---------------------------------------------------------------- names


class Names:
    """Fresh, readable Var names that do not clash with any name in a function."""

    def __init__(self, fn: Function) -> None:
        self.used = {v.name for v in fn.params} | {v.name for v in defined_vars(fn.body)} | \
            {n.name for n in body_exprs(fn.body) if isinstance(n, Var)}

    def fresh(self, base: str) -> str:
        name, n = base, 0
        while name in self.used:
            n += 1
            name = f"{base}_{n}"
        self.used.add(name)
        return name

    def var(self, base: str, like: Expr) -> Var:
        """A fresh Var named after `base` with the type and span of `like`."""
        return Var(self.fresh(base), like.type, like.span)
