"""Attribute access and subscripts on parse-time values.

`x.shape[0]` on tensors, `t.valid_shape[1]`, struct fields, group methods, element access
`x[i, j]` (getval), tile slicing `t[r0:, c0:]` (subview), tuples of tiles indexed at runtime.
"""
from __future__ import annotations

import ast
import types
from dataclasses import dataclass
from typing import Any

from ...errors import (
    InvalidOperationError, OutOfRange, ParserTypeError, UndefinedVariableError,
    UnsupportedFeatureError,
)
from ...ir.nodes import (
    BinOp, Call, ConstInt, Expr, GetField, GetItem,
)
from ...ir.types import (
    INDEX, ArrayType, MemorySpace, ScalarType, StructType, TensorType, TileGroupType, TileLayout,
    TileType, TupleType,
)
from ..decl import Namespace
from .context import Dim3, ParseContext, PyList
from .expr import binary, eval_expr, is_const, select, to_expr, try_const


@dataclass
class BoundMethod:
    """`group.next` etc., called later."""

    obj: Expr
    name: str


@dataclass
class ValidShape:
    """`tile.valid_shape`, indexed later."""

    tile: Expr


@dataclass
class Fallback:
    """`pl.<name>` for a name the module does not declare: resolved as `block.<name>`."""

    name: str


def attribute_of(ctx: ParseContext, base: Any, attr: str, node: ast.AST) -> Any:
    if isinstance(base, types.ModuleType) and base.__name__ == "pypto_pro.language":
        value = getattr(base, attr, None)
        if value is not None:
            return value
        from ...ir import ops as opreg

        if opreg.block_op_for(attr) is None:
            from .calls import _suggest

            raise ctx.error(UndefinedVariableError, f"'pl.{attr}' is not a PyPTO Pro op", node,
                            hint=_suggest(attr))
        return Fallback(attr)
    if isinstance(base, Namespace):
        value = getattr(base, attr, None)
        if value is None:
            raise ctx.error(UndefinedVariableError, f"'{base._name}.{attr}' is not a PyPTO Pro "
                                                    f"op", node)
        return value
    if isinstance(base, Expr):
        return _expr_attribute(ctx, base, attr, node)
    if isinstance(base, Dim3) and attr in Dim3.FIELDS:
        return base.items[Dim3.FIELDS.index(attr)]
    if isinstance(base, PyList):
        raise ctx.error(UnsupportedFeatureError, f"'.{attr}' on a tuple of runtime values", node)
    try:
        return getattr(base, attr)
    except AttributeError:
        raise ctx.error(UndefinedVariableError, f"{base!r} has no attribute '{attr}'",
                        node) from None


def _expr_attribute(ctx: ParseContext, base: Expr, attr: str, node: ast.AST) -> Any:
    t = base.type
    span = ctx.span(node)
    if isinstance(t, TensorType):
        if attr == "shape":
            return tuple(d.value if isinstance(d, ConstInt) else d for d in t.shape)
        if attr == "dtype":
            return t.dtype
    if isinstance(t, TileType):
        if attr == "shape":
            return tuple(t.shape)
        if attr == "dtype":
            return t.dtype
        if attr == "valid_shape":
            return ValidShape(base)
    if isinstance(t, TileGroupType) and attr in ("next", "current", "previous"):
        return BoundMethod(base, attr)
    if isinstance(t, StructType):
        ft = t.field_type(attr)
        if ft is None:
            raise ctx.error(UndefinedVariableError, f"struct {t.name} has no field '{attr}'",
                            node, hint=f"fields: {', '.join(n for n, _ in t.fields)}")
        return GetField(base, attr, ft, span)
    if isinstance(t, TupleType) and t.names and attr in t.names:
        i = t.names.index(attr)
        return GetItem(base, ConstInt(i), t.types[i], span)
    raise ctx.error(UndefinedVariableError, f"no attribute '{attr}' on this value", node)


def subscript_of(ctx: ParseContext, base: Any, index_node: ast.expr, node: ast.AST) -> Any:
    if isinstance(base, ValidShape):
        axis = _const_index(ctx, eval_expr(ctx, index_node), index_node)
        return Call("block.tile_valid_shape", (base.tile, ConstInt(axis)), (), INDEX,
                    ctx.span(node))
    if isinstance(base, Expr) and isinstance(base.type, TileType) and _is_slice(index_node):
        return _tile_slice(ctx, base, index_node, node)
    index = eval_expr(ctx, index_node)
    if isinstance(base, PyList) or (is_const(base) and isinstance(base, (tuple, list))):
        items = base.items if isinstance(base, PyList) else list(base)
        return _index_sequence(ctx, items, index, node)
    if is_const(base):
        k, i = try_const(index)
        if not k:
            raise ctx.error(ParserTypeError, "indexing a Python value needs a constant index",
                            node)
        try:
            return base[i]
        except (IndexError, KeyError, TypeError) as e:
            raise ctx.error(OutOfRange, f"bad index {i!r}: {e}", node) from None
    t = base.type
    if isinstance(t, TileGroupType):
        return group_slot(ctx, base, index, node)
    if isinstance(t, (TensorType, TileType)):
        return Call("block.getval", (base, linear_offset(ctx, base, index, node)), (),
                    ScalarType(t.dtype), ctx.span(node))
    if isinstance(t, ArrayType):
        return GetItem(base, to_expr(ctx, index, node), t.elem, ctx.span(node))
    if isinstance(t, TupleType):
        k, i = try_const(index)
        if k:
            return GetItem(base, ConstInt(i), t.types[i], ctx.span(node))
    raise ctx.error(UnsupportedFeatureError, "this value cannot be indexed", node)


def group_slot(ctx: ParseContext, group: Expr, index: Any, node: ast.AST) -> Expr:
    t: TileGroupType = group.type
    k, i = try_const(index)
    if k:
        if not 0 <= i < t.depth:
            raise ctx.error(OutOfRange, f"tile group index {i} out of range 0..{t.depth - 1}",
                            node)
        return Call("tile_group.get", (group, ConstInt(i)), (), t.slot_type(i), ctx.span(node))
    return Call("tile_group.get", (group, to_expr(ctx, index, node)), (), t.slot_type(None),
                ctx.span(node))


def linear_offset(ctx: ParseContext, base: Expr, index: Any, node: ast.AST) -> Any:
    """Row-major element offset of `x[i, j, ...]` (a single index is already linear)."""
    idx = index.items if isinstance(index, PyList) else index
    if not isinstance(idx, (tuple, list)):
        return idx
    t = base.type
    shape = t.shape if isinstance(t, TileType) else tuple(
        d.value if isinstance(d, ConstInt) else d for d in t.shape)
    if len(idx) != len(shape):
        raise ctx.error(InvalidOperationError, f"{len(idx)} indices for a rank-{len(shape)} "
                                               f"value", node)
    offset: Any = 0
    for i, dim in zip(idx, shape):
        offset = binary(ctx, BinOp.Add, binary(ctx, BinOp.Mul, offset, dim, node), i, node)
    return offset


def _index_sequence(ctx: ParseContext, items: list, index: Any, node: ast.AST) -> Any:
    k, i = try_const(index)
    if k:
        try:
            return items[i]
        except (IndexError, TypeError):
            raise ctx.error(OutOfRange, f"index {i!r} out of range for {len(items)} items",
                            node) from None
    # runtime index: a chain of selects, last item as the default
    result = items[-1]
    for pos in range(len(items) - 2, -1, -1):
        result = select(ctx, binary(ctx, BinOp.Eq, index, pos, node), items[pos], result, node)
    return result


def _is_slice(index_node: ast.expr) -> bool:
    elts = index_node.elts if isinstance(index_node, ast.Tuple) else [index_node]
    return any(isinstance(e, ast.Slice) for e in elts)


def _tile_slice(ctx: ParseContext, tile: Expr, index_node: ast.expr, node: ast.AST) -> Expr:
    """`t[r0:r1, c0:c1]` of a Vec ND / DN tile, as the real frontend makes it: a tile of the
    same shape (its row stride unchanged) at the window's first element, whose valid shape is
    the window clipped to the tile and to `t`'s valid shape; bounds may be run-time values."""
    t: TileType = tile.type
    if t.memory is not MemorySpace.Vec or t.layout not in (TileLayout.ND, TileLayout.DN):
        raise ctx.error(UnsupportedFeatureError, "tile slicing is supported on Vec (UB) tiles "
                                                 "of layout ND or DN", node,
                        hint="use pl.load with offsets or pl.move with offset= instead")
    elts = index_node.elts if isinstance(index_node, ast.Tuple) else [index_node]
    if len(elts) != 2:
        raise ctx.error(UnsupportedFeatureError, "tile slicing needs two axes: t[r0:, c0:]",
                        node)
    starts, sizes = [], []
    for axis, e in enumerate(elts):
        if not isinstance(e, ast.Slice) or e.step is not None:
            raise ctx.error(UnsupportedFeatureError, "tile slicing takes 'start:stop' per axis",
                            node)
        full = t.shape[axis]
        lo = eval_expr(ctx, e.lower) if e.lower is not None else 0
        hi = eval_expr(ctx, e.upper) if e.upper is not None else full
        klo, vlo = try_const(lo)
        khi, vhi = try_const(hi)
        if khi and vhi > full:  # Python's slice semantics: the stop is clipped to the axis
            hi, vhi = full, full
        if (klo and not 0 <= vlo <= full) or (klo and khi and vhi < vlo):
            raise ctx.error(OutOfRange, f"slice {vlo if klo else '?'}:{vhi if khi else '?'} "
                                        f"outside tile axis {axis} (size {full})", node)
        size = binary(ctx, BinOp.Sub, hi, lo, node)
        valid = t.valid_shape[axis]
        valid = valid if valid is not None else Call(
            "block.tile_valid_shape", (tile, ConstInt(axis)), (), INDEX, ctx.span(node))
        left = valid if klo and vlo == 0 else binary(ctx, BinOp.Sub, valid, lo, node)
        starts.append(lo)
        sizes.append(binary(ctx, BinOp.Min, size, left, node))
    from dataclasses import replace

    static = tuple(v if k else None for k, v in (try_const(x) for x in sizes))
    sub = replace(t, valid_shape=static)
    from .calls import materialize  # (a view object, as the real code generator makes one)

    return materialize(ctx, Call("block.subview", (tile, to_expr(ctx, PyList(starts), node),
                                                   to_expr(ctx, PyList(sizes), node)), (), sub,
                                 ctx.span(node)), "view")


def _const_index(ctx: ParseContext, v: Any, node: ast.AST) -> int:
    k, i = try_const(v)
    if not k or not isinstance(i, int):
        raise ctx.error(ParserTypeError, "index must be a compile-time int", node)
    return i

