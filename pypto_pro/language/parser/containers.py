"""Compile-time containers chosen at run time: tuples, lists, `make_tuple`s and tile groups.

A kernel's tuples and lists (`PyList`, `NamedTuple`) and its tile groups are parse-time values:
indexed with a constant they simply are the element. This module gives them a runtime meaning
where the real PyPTO Pro has one:

* `index_runtime`: `items[i]` with a runtime `i`. Scalars, tiles and tensors become a select
  chain; containers of one shape are indexed element-wise (`grid[i][j]`, `cfg[i].tiles`), so
  every leaf is a select; tile groups become a `GroupChoice`.
* `merge`: a name the two branches of a runtime `if` bound to different values gets one value
  after it: a variable each branch assigns (scalars, tiles, tensors), element-wise for
  containers, a `GroupChoice` for groups.
* `on_choice`: an access of a `GroupChoice` (`next()`, `g[i]`, `set_validshape`) runs on the
  chosen group, in an if-chain on its selector; a tile it returns lands in one variable.
"""
from __future__ import annotations

import ast
from dataclasses import replace
from typing import Any, Callable

from ...errors import ParserTypeError
from ...ir.dtype import promote_scalar
from ...ir.nodes import (
    AssignStmt, BinaryExpr, BinOp, ConstBool, ConstFloat, ConstInt, Expr, IfStmt, Stmt, Var,
    seq,
)
from ...ir.span import Span
from ...ir.types import BOOL, INDEX, ScalarType, TileType, Type
from .context import GroupChoice, NamedTuple, ParseContext, PyList, is_group
from .expr import binary, is_const, scalar_type, select, to_expr


def snapshot(ctx: ParseContext, value: Any, span: Span) -> Any:
    """A runtime value copied into a fresh Var, so later assignments cannot change it (a tile
    group is a placement, never copied)."""
    if not isinstance(value, Expr) or isinstance(value, (ConstInt, ConstFloat, ConstBool)) or \
            is_group(value):
        return value
    tmp = ctx.new_var("tmp", value.type, span)
    ctx.builder.emit(AssignStmt(tmp, value, span))
    return tmp


def freeze(ctx: ParseContext, value: Any, span: Span) -> Any:
    """`value` as it is now, for a helper's result: what it returns from inside a loop must
    not change with the loop. Scalar variables (a loop variable, say) and, inside tuples, any
    expression are copied into fresh Vars (binding the result copies a lone expression; a tile
    variable keeps its value: after the return nothing on that path assigns it again)."""
    items = items_of(value)
    if items is not None and not is_const(value):
        return _rebuild(value, [_frozen_item(ctx, x, span) for x in items])
    if isinstance(value, Var) and isinstance(value.type, ScalarType):
        return snapshot(ctx, value, span)
    return value


def _frozen_item(ctx: ParseContext, value: Any, span: Span) -> Any:
    if items_of(value) is not None or isinstance(value, Var):
        return freeze(ctx, value, span)
    if isinstance(value, Expr) and isinstance(value.type, (ScalarType, TileType)):
        return snapshot(ctx, value, span)
    return value


def items_of(value: Any) -> list | None:
    """The elements of a tuple / list / `make_tuple`, or None for anything else."""
    if isinstance(value, PyList):
        return value.items
    if isinstance(value, (tuple, list)):
        return list(value)
    return None


def _rebuild(like: Any, items: list) -> Any:
    if isinstance(like, NamedTuple):
        return NamedTuple(items, like.names)
    if all(is_const(x) for x in items):
        return tuple(items) if isinstance(like, tuple) else list(items)
    return PyList(items)


def _same_shape(values: list) -> bool:
    """Containers indexable element-wise: one length, and one set of field names."""
    first = values[0]
    return all(len(items_of(v)) == len(items_of(first)) and
               getattr(v, "names", None) == getattr(first, "names", None) for v in values)


# ---------------------------------------------------------------- runtime index


def index_runtime(ctx: ParseContext, items: list, index: Any, node: ast.AST) -> Any:
    """`items[index]` for a runtime `index` (the caller keeps it in range, as on the NPU)."""
    if all(items_of(x) is not None for x in items):
        if not _same_shape(items):
            raise ctx.error(ParserTypeError, "a runtime index into a tuple needs elements of "
                                             "one shape (tuples of one length and field "
                                             "names)", node,
                            hint="index with a constant to pick elements of different shapes")
        index = snapshot(ctx, to_expr(ctx, index, node), ctx.span(node))
        columns = [[items_of(x)[k] for x in items] for k in range(len(items_of(items[0])))]
        return _rebuild(items[0], [index_runtime(ctx, c, index, node) for c in columns])
    if all(is_group(x) for x in items):
        return GroupChoice(snapshot(ctx, to_expr(ctx, index, node), ctx.span(node)),
                           tuple(items))
    if any(is_group(x) or items_of(x) is not None for x in items):
        raise ctx.error(ParserTypeError, "a runtime index into a tuple needs elements of one "
                                         "kind (all tile groups, all tuples or all values)",
                        node)
    families = {_family(x) for x in items}
    if len(families - {None}) > 1:
        raise ctx.error(ParserTypeError, "a runtime index into a tuple needs elements of one "
                                         f"type; this one mixes {' and '.join(sorted(families))}"
                                         " values", node,
                        hint="index with a constant, or convert the elements to one dtype "
                             "(pl.astype)")
    result = items[-1]
    for pos in range(len(items) - 2, -1, -1):
        result = select(ctx, binary(ctx, BinOp.Eq, index, pos, node), items[pos], result, node)
    return result


def _family(value: Any) -> str | None:
    """What a runtime-chosen element may be mixed with: the same kind of value, and for
    scalars the same dtype family (the real frontend refuses heterogeneous tuples); a number
    written in the tuple counts with its own family (`(n, 1.5)[i]` mixes int and float)."""
    if is_const(value):
        return scalar_type(value).dtype.family if isinstance(value, (bool, int, float)) \
            else None
    t = getattr(value, "type", None)
    return t.dtype.family if isinstance(t, ScalarType) else type(t).__name__


# ---------------------------------------------------------------- if merges


class Merge:
    """The joined value of one name after a runtime `if`, and what each branch must assign."""

    def __init__(self) -> None:
        self.then_stmts: list[Stmt] = []
        self.else_stmts: list[Stmt] = []


def merge(ctx: ParseContext, a: Any, b: Any, span: Span, out: Merge) -> Any:
    """The value after an `if` whose then-branch left `a` and else-branch `b`; statements the
    branches must end with are added to `out`. Raises `ParserTypeError` if they cannot join."""
    if a is b:
        return a
    if is_group(a) and is_group(b):
        sel = ctx.new_var("sel", INDEX, span)
        out.then_stmts.append(AssignStmt(sel, ConstInt(0, span=span), span))
        out.else_stmts.append(AssignStmt(sel, ConstInt(1, span=span), span))
        return GroupChoice(sel, (a, b))
    ia, ib = items_of(a), items_of(b)
    if ia is not None and ib is not None and _same_shape([a, b]):
        return _rebuild(a, [merge(ctx, x, y, span, out) for x, y in zip(ia, ib)])
    if is_const(a) and is_const(b) and type(a) is type(b) and not isinstance(
            a, (int, float, bool)) and a == b:
        return a
    ta, tb = _value_type(a), _value_type(b)
    joined = _join(ta, tb)
    if joined is None:
        raise ParserTypeError("the branches bind different kinds of values", span)
    var = ctx.new_var("merged", joined, span)
    out.then_stmts.append(AssignStmt(var, _as_expr(a, span), span))
    out.else_stmts.append(AssignStmt(var, _as_expr(b, span), span))
    return var


def _value_type(v: Any) -> Type | None:
    if isinstance(v, bool):
        return BOOL
    if isinstance(v, (int, float)):
        return scalar_type(v)
    return v.type if isinstance(v, Expr) else None


def _as_expr(v: Any, span: Span) -> Expr:
    from ...ir.nodes import const

    return v if isinstance(v, Expr) else const(v, span)


def _join(a: Type | None, b: Type | None) -> Type | None:
    """One type for a variable holding either: scalars promote, tiles of one shape merge their
    placements, anything else must be equal."""
    if a is None or b is None:
        return None
    if isinstance(a, ScalarType) and isinstance(b, ScalarType):
        return ScalarType(promote_scalar(a.dtype, b.dtype))
    if isinstance(a, TileType) and isinstance(b, TileType):
        return merged_tile_type([a, b])
    return a if a == b else None


def merged_tile_type(types: list[TileType]) -> TileType | None:
    """The type of a tile that is one of `types` (one shape, dtype, memory and layout), with
    every candidate address; None if they differ in anything else."""
    first = types[0]
    key = (first.shape, first.dtype, first.memory, first.layout)
    if any((t.shape, t.dtype, t.memory, t.layout) != key for t in types):
        return None
    addrs = tuple(dict.fromkeys(a for t in types for a in t.addresses))
    return replace(first, addr=None, slot_addrs=addrs) if len(addrs) > 1 else first


# ---------------------------------------------------------------- runtime-chosen groups


def on_choice(ctx: ParseContext, choice: GroupChoice, access: Callable[[Any], Any],
              node: ast.AST) -> Any:
    """`access(group)` on the group `choice` selects: an if-chain on its selector. A tile the
    access returns is assigned to one fresh variable (None when it returns nothing)."""
    span = ctx.span(node)
    branches: list[tuple[list[Stmt], Any]] = []
    for g in choice.groups:
        ctx.builder.push()
        value = on_choice(ctx, g, access, node) if isinstance(g, GroupChoice) else access(g)
        branches.append((ctx.builder.stack.pop(), value))
    result: Var | None = None
    if branches[0][1] is not None:
        tiles = [v.type for _, v in branches]
        joined = merged_tile_type(tiles)
        if joined is None:
            raise ctx.error(ParserTypeError, "the tile groups a runtime choice picks from hold "
                                             "tiles of different shapes, dtypes or memories",
                            node)
        result = ctx.new_var("tile", joined, span)
        for stmts, value in branches:
            stmts.append(AssignStmt(result, value, span))
    body: Stmt = seq(branches[-1][0], span)
    for k in range(len(branches) - 2, -1, -1):
        cond = BinaryExpr(BinOp.Eq, choice.selector, ConstInt(k, span=span), BOOL, span)
        body = IfStmt(cond, seq(branches[k][0], span), body, (), span)
    ctx.builder.emit(body)
    return result
