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
    InvalidOperationError, OutOfRange, ParserIndexError, ParserSyntaxError, ParserTypeError,
    UndefinedVariableError, UnsupportedFeatureError,
)
from ...ir.nodes import (
    BinOp, Call, ConstInt, Expr, GetField, GetItem,
)
from ...ir.types import (
    INDEX, ArrayType, MemorySpace, ScalarType, StructType, TensorType, TileGroupType, TileLayout,
    TileType, TupleType,
)
from ..decl import Namespace
from .containers import index_runtime, on_choice
from .context import GroupChoice, NamedTuple, ParseContext, PyList
from .expr import binary, eval_expr, is_const, to_expr, try_const


GROUP_METHODS = ("next", "current", "previous")


@dataclass
class BoundMethod:
    """`group.next` etc., called later (on a group Var or a `GroupChoice`)."""

    obj: Any
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
    if isinstance(base, NamedTuple):
        if attr not in base.names:
            raise ctx.error(UnsupportedFeatureError, f"make_tuple has no field '{attr}'", node,
                            hint=f"fields: {', '.join(base.names)}")
        return base.field(attr)
    if isinstance(base, GroupChoice) and attr in GROUP_METHODS:
        return BoundMethod(base, attr)
    if isinstance(base, (PyList, GroupChoice)):
        raise ctx.error(UnsupportedFeatureError, f"'.{attr}' on a tuple of runtime values", node)
    try:
        return getattr(base, attr)
    except AttributeError:
        raise ctx.error(UnsupportedFeatureError, f"{base!r} has no attribute '{attr}'",
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
    if isinstance(t, TileGroupType) and attr in GROUP_METHODS:
        return BoundMethod(base, attr)
    if isinstance(t, StructType):
        ft = t.field_type(attr)
        if ft is None:
            raise ctx.error(UnsupportedFeatureError, f"struct {t.name} has no field '{attr}'",
                            node, hint=f"fields: {', '.join(n for n, _ in t.fields)}")
        return GetField(base, attr, ft, span)
    if isinstance(t, TupleType) and t.names and attr in t.names:
        i = t.names.index(attr)
        return GetItem(base, ConstInt(i), t.types[i], span)
    if isinstance(t, TileGroupType):
        raise ctx.error(ParserSyntaxError, f"a tile group has no method '{attr}'", node,
                        hint=f"its methods: {', '.join(GROUP_METHODS)}")
    raise ctx.error(UnsupportedFeatureError, f"no attribute '{attr}' on this value", node)


def subscript_of(ctx: ParseContext, base: Any, index_node: ast.expr, node: ast.AST) -> Any:
    if isinstance(base, ValidShape):
        axis = _valid_shape_axis(ctx, base, eval_expr(ctx, index_node), node)
        return Call("block.tile_valid_shape", (base.tile, ConstInt(axis)), (), INDEX,
                    ctx.span(node))
    if isinstance(base, Expr) and isinstance(base.type, TileType) and _is_slice(index_node):
        return _tile_slice(ctx, base, index_node, node)
    index = eval_expr(ctx, index_node)
    if isinstance(base, PyList) or (is_const(base) and isinstance(base, (tuple, list))):
        items = base.items if isinstance(base, PyList) else list(base)
        return _index_sequence(ctx, items, index, node)
    if isinstance(base, GroupChoice):
        return on_choice(ctx, base, lambda g: group_slot(ctx, g, index, node), node)
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
        from .calls import materialize

        offset = to_expr(ctx, linear_offset(ctx, base, index, node), node)
        read = Call("block.getval", (base, offset), (), ScalarType(t.dtype), ctx.span(node))
        if ctx.section == "simt":
            return read  # a SIMT thread reads its element where the expression stands
        return materialize(ctx, read, "val")  # the scalar unit reads at this program point
    if isinstance(t, ArrayType):
        return GetItem(base, array_index(ctx, t, index, node), t.elem, ctx.span(node))
    if isinstance(t, TupleType):
        k, i = try_const(index)
        if k:
            if not isinstance(i, int) or not 0 <= i < len(t.types):
                raise ctx.error(ParserIndexError, f"index {i!r} out of range for a tuple of "
                                            f"{len(t.types)} elements", node)
            return GetItem(base, ConstInt(i), t.types[i], ctx.span(node))
        if len(set(t.types)) == 1:
            return GetItem(base, to_expr(ctx, index, node), t.types[0], ctx.span(node))
        raise ctx.error(ParserTypeError, "a runtime index into a tuple needs elements of one "
                                         "type", node)
    if isinstance(t, StructType):
        raise ctx.error(UnsupportedFeatureError, "a struct cannot be indexed", node)
    raise ctx.error(ParserTypeError, f"Subscript requires a tuple, tile or tensor, got "
                                     f"{_kind_of(t)}", node)


def _kind_of(t: Any) -> str:
    return "a scalar" if isinstance(t, ScalarType) else f"a {type(t).__name__}"


def array_index(ctx: ParseContext, t: ArrayType, index: Any, node: ast.AST) -> Expr:
    """The index of an element of the array `t`: one integer, checked when constant."""
    if isinstance(index, (tuple, list, PyList)):
        raise ctx.error(ParserSyntaxError, "Multi-dimensional subscript is not supported: an "
                                           "array is indexed with one integer, a[i]", node)
    k, i = try_const(index)
    if k and (not isinstance(i, int) or isinstance(i, bool)):
        raise ctx.error(ParserTypeError, f"an array index must be an integer, got {i!r}", node)
    if k and not 0 <= i < t.size:
        raise ctx.error(ParserIndexError, f"index {i!r} out of bounds for an array of {t.size} "
                                          f"elements (GetItemExpr index {i!r} out of bounds "
                                          f"for tuple with {t.size} elements)", node)
    if not k and not (isinstance(getattr(index, "type", None), ScalarType)
                      and index.type.dtype.is_int):
        raise ctx.error(ParserTypeError, "an array index must be an integer", node)
    return to_expr(ctx, index, node)


def group_slot(ctx: ParseContext, group: Expr, index: Any, node: ast.AST) -> Expr:
    t: TileGroupType = group.type
    k, i = try_const(index)
    if (k and (not isinstance(i, int) or isinstance(i, bool))) or (not k and not (
            isinstance(getattr(index, "type", None), ScalarType) and index.type.dtype.is_int)):
        got = getattr(index, "type", None) or type(i).__name__
        raise ctx.error(ParserTypeError, f"tile group index must be an integer scalar, but got "
                                         f"{got}", node,
                        hint="Use an integer scalar expression, for example g[0] or g[i]")
    if k:
        if not 0 <= i < t.depth:  # the real frontend's words and class (no wrap-around)
            raise ctx.error(ParserTypeError, f"tile group index {i} is out of range for a "
                                             f"{t.depth}-tile group", node,
                            hint=f"Valid indices are in [0, {t.depth})")
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
        if not isinstance(i, int) or isinstance(i, bool):
            raise ctx.error(ParserSyntaxError, f"a tuple index must be an integer, got {i!r}",
                            node)
        try:
            return items[i]
        except IndexError:
            raise ctx.error(OutOfRange, f"index {i!r} out of range for {len(items)} items",
                            node) from None
    return index_runtime(ctx, items, index, node)


def _is_slice(index_node: ast.expr) -> bool:
    elts = index_node.elts if isinstance(index_node, ast.Tuple) else [index_node]
    return any(isinstance(e, ast.Slice) for e in elts)


def _tile_slice(ctx: ParseContext, tile: Expr, index_node: ast.expr, node: ast.AST) -> Expr:
    """`t[r0:r1, c0:c1]` of a Vec ND / DN tile, as the real frontend makes it: a tile of the
    same shape (its row stride unchanged) at the window's first element, whose valid shape is
    the window clipped to the tile and to `t`'s valid shape; bounds may be run-time values."""
    t: TileType = tile.type
    if ctx.section == "simt":  # a SIMT thread gets the tile as a UB pointer, no sub-tiles
        raise ctx.error(UnsupportedFeatureError, "tile slicing (a tile subview) is not "
                                                 "supported inside a SIMT function", node,
                        hint="index single elements: t[r, c]")
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


def _valid_shape_axis(ctx: ParseContext, base: ValidShape, v: Any, node: ast.AST) -> int:
    """The axis of `tile.valid_shape[axis]`: a compile-time int (not a bool), negative from the
    end, within the tile's rank (the real frontend's rules and error classes)."""
    k, axis = try_const(v)
    if not k or type(axis) is not int:
        raise ctx.error(ParserSyntaxError, "tile.valid_shape index must be a compile-time "
                                           "integer", node,
                        hint="use tile.valid_shape[0] or tile.valid_shape[1]")
    rank = len(base.tile.type.shape)
    if not -rank <= axis < rank:
        raise ctx.error(ParserTypeError, f"valid_shape index {axis} out of range for a tile of "
                                         f"rank {rank}", node)
    return axis % rank


def tensor_shape_dim(ctx: ParseContext, tensor: Expr, index_node: ast.expr,
                     node: ast.AST) -> Any:
    """`tensor.shape[axis]`: the dimension its type holds (an int, or the parameter's dynamic
    dimension), for a compile-time int axis (not a bool), negative from the end, within the
    rank (the real frontend's rules and error classes)."""
    k, axis = try_const(eval_expr(ctx, index_node))
    if not k or type(axis) is not int:
        raise ctx.error(ParserSyntaxError, "tensor.shape index must be a compile-time integer",
                        node, hint="use tensor.shape[0], tensor.shape[-1] or a compile-time "
                                   "integer expression")
    shape = _expr_attribute(ctx, tensor, "shape", node)
    if not -len(shape) <= axis < len(shape):
        raise ctx.error(ParserTypeError, f"shape index {axis} out of range for tensor of rank "
                                         f"{len(shape)}", node)
    return shape[axis]


def _const_index(ctx: ParseContext, v: Any, node: ast.AST) -> int:
    k, i = try_const(v)
    if not k or not isinstance(i, int):
        raise ctx.error(ParserTypeError, "index must be a compile-time int", node)
    return i

