"""Handlers of scalar, debug, system-variable, pointer, aggregate and SIMT calls.

`pl.range` and `pl.section_*` are only legal where the statement parser consumes them; called
anywhere else they are a syntax error. `pl.constexpr(c)` returns a marker the `if` / ternary
handlers unwrap.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from ...errors import (
    InvalidOperationError, ParserSyntaxError, ParserTypeError,
)
from ...ir.dtype import DataType, promote_scalar
from ...ir.nodes import BinOp, Call, Cast, ConstInt, Expr, MakeTuple
from ...ir.types import (
    INDEX, ArrayType, PtrType, ScalarType, StructType, TensorType, TileType,
    TupleType,
)
from .calls import emit_op, eval_args, materialize
from .context import NamedTuple, ParseContext, PyList
from .expr import binary, to_expr, try_const
from .printf_format import check_printf


@dataclass
class ConstexprValue:
    value: Any


def _only_in(where: str):
    def handler(ctx: ParseContext, node: ast.Call, op: str) -> Any:
        raise ctx.error(ParserSyntaxError, f"pl.{op}(...) can only be used {where}", node)

    return handler


def constexpr(ctx: ParseContext, node: ast.Call, op: str) -> Any:
    args, _ = eval_args(ctx, node)
    if len(args) != 1:
        raise ctx.error(ParserSyntaxError, "pl.constexpr takes one condition", node)
    return ConstexprValue(args[0])


def const(ctx: ParseContext, node: ast.Call, op: str) -> Any:
    args, kw = eval_args(ctx, node)
    dtype = args[1] if len(args) > 1 else kw.get("dtype")
    if len(args) < 1 or not isinstance(dtype, DataType):
        raise ctx.error(ParserSyntaxError, f"pl.const(value, dtype): the dtype must be a dtype "
                                           f"(pl.DT_*), got {dtype!r}", node)
    k, v = try_const(args[0])
    if not k or not isinstance(v, (int, float, bool)):
        raise ctx.error(ParserSyntaxError, "pl.const needs a compile-time number", node)
    from ...ir.nodes import ConstBool, ConstFloat

    span = ctx.span(node)
    if dtype.is_float:
        return ConstFloat(float(v), dtype, span)
    if dtype is DataType.BOOL:
        return ConstBool(bool(v), span)
    return ConstInt(int(v), dtype, span)


def min_max(ctx: ParseContext, node: ast.Call, op: str) -> Any:
    """`max(a, b)` / `pl.max(a, b)` of two scalars (the real parser takes exactly two)."""
    if node.keywords:
        raise ctx.error(InvalidOperationError, f"Scalar operation '{op}' does not accept "
                                               f"keyword arguments", node)
    if len(node.args) != 2:
        raise ctx.error(InvalidOperationError, f"Scalar binary operation '{op}' requires "
                                               f"exactly 2 arguments, got {len(node.args)}",
                        node)
    a, b = eval_args(ctx, node)[0]
    return binary(ctx, BinOp.Min if op == "min" else BinOp.Max, a, b, node)


def astype(ctx: ParseContext, node: ast.Call, op: str) -> Any:
    args, kw = eval_args(ctx, node)
    dtype = args[1] if len(args) > 1 else kw.get("dtype")
    if not isinstance(dtype, DataType) or not args:
        raise ctx.error(ParserTypeError, "pl.astype(value, dtype)", node)
    return Cast(to_expr(ctx, args[0], node), ScalarType(dtype), ctx.span(node))


def system_var(ctx: ParseContext, node: ast.Call, op: str) -> Any:
    args, _ = eval_args(ctx, node)
    if args:
        raise ctx.error(ParserTypeError, f"pl.{op}() takes no arguments", node)
    return Call(op, (), (), INDEX, ctx.span(node))


def ctrl_spr(ctx: ParseContext, node: ast.Call, op: str) -> Any:
    args, kw = eval_args(ctx, node)
    return emit_op(ctx, f"system.{op}", args, kw, node, result_type=INDEX, check_tiles=False)


# ---------------------------------------------------------------- debug (spec §2.15)


def printf(ctx: ParseContext, node: ast.Call, op: str) -> Any:
    args, kw = eval_args(ctx, node)
    if not args or not isinstance(args[0], str):
        raise ctx.error(ParserTypeError, "pl.printf needs a compile-time format string", node)
    check_printf(ctx, "printf", args[0], args[1:], node)
    return emit_op(ctx, "debug.printf", args, {"loc": bool(kw.get("loc", False))}, node,
                   check_tiles=False)


def pto_assert(ctx: ParseContext, node: ast.Call, op: str) -> Any:
    args, kw = eval_args(ctx, node)
    if not args:
        raise ctx.error(ParserTypeError, "pl.pto_assert(cond, fmt=None, *args)", node)
    if len(args) > 1 and isinstance(args[1], str):
        check_printf(ctx, "pto_assert", args[1], args[2:], node)
    return emit_op(ctx, "debug.assert", args, {"loc": bool(kw.get("loc", False))}, node,
                   check_tiles=False)


def dump_data(ctx: ParseContext, node: ast.Call, op: str) -> Any:
    args, kw = eval_args(ctx, node)
    if not args:
        raise ctx.error(ParserTypeError, "pl.dump_data(data, offsets=None, shapes=None)", node)
    t = getattr(args[0], "type", None)
    if isinstance(t, TileType) and t.memory.value == "Acc" and kw.get("workspace") is None:
        raise ctx.error(InvalidOperationError, "dump_data of an Acc tile needs a GM "
                                               "workspace= tensor", node)
    name = "debug.dump_tile" if isinstance(t, TileType) else "debug.dump_tensor"
    from .ops_block import int_items

    rest = [kw.get("offsets"), kw.get("shapes")]
    extra = [PyList(int_items(ctx, x, node, "dump_data offsets / shapes"))
             for x in args[1:] + [r for r in rest if r is not None]]
    return emit_op(ctx, name, [args[0], *extra],
                   {"flag": kw.get("flag"), "loc": bool(kw.get("loc", False)) or None}, node)


def trap(ctx: ParseContext, node: ast.Call, op: str) -> Any:
    return emit_op(ctx, "debug.trap", [], {}, node)


# ---------------------------------------------------------------- pointers and aggregates


def make_tensor(ctx: ParseContext, node: ast.Call, op: str) -> Any:
    args, kw = eval_args(ctx, node)
    if not 2 <= len(args) <= 4:
        raise ctx.error(ParserTypeError, "pl.make_tensor(ptr_or_tensor, shape, stride=None, "
                                         "dtype=None)", node)
    from .ops_block import int_items

    src = args[0]
    st = getattr(src, "type", None)
    if not isinstance(st, (PtrType, TensorType)):
        raise ctx.error(ParserTypeError, "pl.make_tensor needs a pl.Ptr or a tensor", node)
    dtype = kw.get("dtype", args[3] if len(args) > 3 else None) or st.dtype
    if not isinstance(dtype, DataType):
        raise ctx.error(ParserTypeError, f"pl.make_tensor: dtype must be a pl.DT_*, got "
                                         f"{dtype!r}", node)
    shape = int_items(ctx, args[1], node, "make_tensor shape")
    stride = kw.get("stride") if len(args) < 3 else args[2]
    dims = tuple(to_expr(ctx, d, node) for d in shape)
    strides = None if stride is None else tuple(
        to_expr(ctx, s, node) for s in int_items(ctx, stride, node, "make_tensor stride"))
    tt = TensorType(dims, dtype, strides=strides)
    call_args = [src, PyList(list(shape))] + ([PyList(list(strides))] if strides else [])
    call = emit_op(ctx, "ptr.make_tensor", call_args, {"dtype": dtype}, node, result_type=tt,
                   check_tiles=False)
    return materialize(ctx, call, "view")


def make_ptr(ctx: ParseContext, node: ast.Call, op: str) -> Any:
    args, kw = eval_args(ctx, node)
    st = getattr(args[0], "type", None) if args else None
    if not isinstance(st, (PtrType, TensorType)):
        raise ctx.error(ParserTypeError, "pl.make_ptr needs a tensor or pointer", node)
    dtype = kw.get("dtype") or st.dtype
    return emit_op(ctx, "ptr.make_ptr", args[:1], {"dtype": dtype}, node,
                   result_type=PtrType(dtype), check_tiles=False)


def addptr(ctx: ParseContext, node: ast.Call, op: str) -> Any:
    args, _ = eval_args(ctx, node)
    st = getattr(args[0], "type", None) if args else None
    if not isinstance(st, PtrType) or len(args) != 2:
        raise ctx.error(ParserTypeError, "pl.addptr(ptr, offset_elems)", node)
    return offset_pointer(ctx, args[0], args[1], node)


def offset_pointer(ctx: ParseContext, ptr: Any, offset: Any, node: ast.AST) -> Any:
    """`pl.addptr(ptr, n)` and its sugar `ptr + n`: the pointer `n` elements further on."""
    st = ptr.type
    if st.dtype.bits < 8:  # two elements share a byte: an element offset may end mid-byte
        raise ctx.error(ParserTypeError, f"pointer arithmetic is not supported on the sub-byte "
                                         f"element type {st.dtype.value}", node,
                        hint="reinterpret the pointer as a byte type first: "
                             "pl.make_ptr(p, dtype=pl.DT_UINT8)")
    return emit_op(ctx, "ptr.addptr", [ptr, offset], {}, node, result_type=st,
                   check_tiles=False)


def struct(ctx: ParseContext, node: ast.Call, op: str) -> Any:
    """`pl.struct("Name", f=v, arr=[0, 0])` (a C++ class; a list makes an array field) and
    `pl.struct_array(N, "Name", ...)`: N such structs, `arr[i].f`, `arr[i].arr[j]`. Refusals
    in the real parser's words."""
    _no_star_kwargs(ctx, node, op)
    args, kw = eval_args(ctx, node)
    if op == "struct_array":
        n = args[0] if args else None
        name = args[1] if len(args) > 1 else None
        if not isinstance(n, int) or isinstance(n, bool):
            raise ctx.error(ParserSyntaxError, "pl.struct_array() requires an integer size as "
                                               "first argument", node,
                            hint='Use pl.struct_array(N, "Name", field1=0, field2=0, ...)')
        if n < 1:
            raise ctx.error(ParserSyntaxError, f"pl.struct_array() size must be a positive "
                                               f"integer, got {n}", node)
        if not isinstance(name, str) or not name.isidentifier():
            raise ctx.error(ParserSyntaxError, 'pl.struct_array(N, "Name", ...) requires a '
                                               'string struct name as second arg', node)
    else:
        n, name = None, args[0] if args else None
        if not isinstance(name, str) or not name.isidentifier():
            raise ctx.error(ParserSyntaxError, "pl.struct needs a struct name string (a C "
                                               "identifier)", node)
    if not kw:
        what = 'pl.struct_array(N, "Name", ...)' if n else 'pl.struct("Name", ...)'
        raise ctx.error(ParserSyntaxError, f"{what} requires at least one keyword field", node)
    fields, values = [], []
    for k, v in kw.items():
        e = _field_value(ctx, k, v, node)
        fields.append((k, e.type if not isinstance(e, MakeTuple) else
                       ArrayType(e.type.types[0], len(e.elements))))
        values.append(e)
    st = StructType(name, tuple(fields))
    call = Call("struct.create", tuple(values), (("name", name), ("fields", tuple(kw)),
                                                 ("array_size", n)),
                st if n is None else ArrayType(st, n), ctx.span(node))
    return materialize(ctx, call, "struct")


def _field_value(ctx: ParseContext, name: str, value: Any, node: ast.AST) -> Expr:
    """A struct field's initial value; a list is an array of one scalar type."""
    from .containers import items_of

    items = items_of(value)
    if items is None:
        return to_expr(ctx, value, node)
    elems = [to_expr(ctx, x, node) for x in items]
    if not elems or not all(isinstance(e.type, ScalarType) for e in elems):
        raise ctx.error(ParserTypeError, f"array field '{name}' needs a non-empty list of "
                                         f"scalars", node)
    dtype = elems[0].type.dtype
    for e in elems[1:]:
        dtype = promote_scalar(dtype, e.type.dtype)
    et = ScalarType(dtype)
    elems = [e if e.type == et else Cast(e, et, e.span) for e in elems]
    return MakeTuple(tuple(elems), TupleType(tuple(et for _ in elems)))


def make_tuple(ctx: ParseContext, node: ast.Call, op: str) -> Any:
    """`pl.make_tuple(a=x, b=y)`: a compile-time named tuple; `t.a` is `x` itself."""
    _no_star_kwargs(ctx, node, op)
    if node.args:
        raise ctx.error(ParserSyntaxError, "pl.make_tuple() does not accept positional "
                                           "arguments; use keyword args", node)
    if not node.keywords:
        raise ctx.error(ParserSyntaxError, "pl.make_tuple() requires at least one keyword "
                                           "argument (field=value)", node)
    _, kw = eval_args(ctx, node)
    return NamedTuple(list(kw.values()), tuple(kw))


def _no_star_kwargs(ctx: ParseContext, node: ast.Call, op: str) -> None:
    if any(k.arg is None for k in node.keywords):
        raise ctx.error(ParserSyntaxError, f"pl.{op}() does not support **kwargs", node)


# ---------------------------------------------------------------- SIMT (spec §2.14)


def simt_context(ctx: ParseContext, node: ast.Call, op: str) -> Any:
    if ctx.section != "simt":
        raise ctx.error(InvalidOperationError, f"pl.{op}() is only valid inside a SIMT function",
                        node)
    span = ctx.span(node)
    if op in ("simt.linear_thread_idx", "simt.warp_size"):
        return Call(op, (), (), INDEX, span)
    xyz = ("x", "y", "z")  # a named tuple, as the real frontend returns it
    return NamedTuple([Call(op, (), (("axis", a),), INDEX, span) for a in xyz], xyz)


def simt_math(ctx: ParseContext, node: ast.Call, op: str) -> Any:
    args, kw = eval_args(ctx, node)
    exprs = [to_expr(ctx, a, node) for a in args]
    t = next((e.type for e in exprs if isinstance(e.type, ScalarType)), ScalarType(
        DataType.FP32))
    if op == "simt.cast":
        dtype = kw.get("dtype", args[1] if len(args) > 1 else None)
        if not isinstance(dtype, DataType) or not exprs:
            raise ctx.error(ParserTypeError, "pl.simt.cast(value, dtype)", node)
        t = ScalarType(dtype)
        exprs = exprs[:1]
    if op in ("simt.isnan", "simt.isinf"):
        from ...ir.types import BOOL

        t = BOOL
    return Call("simt.math", tuple(exprs), (("fn", op.split(".", 1)[1]),), t, ctx.span(node))


def simt_atomic(ctx: ParseContext, node: ast.Call, op: str) -> Any:
    from .simt import atomic

    return atomic(ctx, node, op)


def simt_launch(ctx: ParseContext, node: ast.Call, op: str) -> Any:
    from .simt import launch

    return launch(ctx, node)


HANDLERS = {
    "range": _only_in("as the iterable of a for loop"),
    "section_vector": _only_in("in a with statement"),
    "section_cube": _only_in("in a with statement"),
    "constexpr": _only_in("as the condition of an if statement or a ternary"),
    "const": const, "min": min_max, "max": min_max, "astype": astype,
    **{n: system_var for n in ("get_block_idx", "get_block_num", "get_subblock_idx",
                               "get_subblock_num", "get_spr")},
    **{n: ctrl_spr for n in ("get_ctrl_spr", "get_saturation_flag")},
    "printf": printf, "pto_assert": pto_assert, "dump_data": dump_data, "trap": trap,
    "make_tensor": make_tensor, "make_ptr": make_ptr, "addptr": addptr,
    "struct": struct, "struct_array": struct, "make_tuple": make_tuple,
    "simt.launch": simt_launch,
    **{f"simt.{n}": simt_context for n in ("thread_idx", "block_dim", "block_idx", "grid_dim",
                                           "linear_thread_idx", "warp_size")},
    **{f"simt.{n}": simt_math for n in (
        "cast abs min max sqrt rsqrt exp exp2 log log2 log1p sin cos tanh rint round floor "
        "ceil trunc fma isnan isinf").split()},
    **{f"simt.atomic_{n}": simt_atomic for n in "add sub exch max min inc dec cas and or xor"
       .split()},
}
