"""SIMT (`pl.simt`, spec §2.14): `pl.simt.launch` instantiates the SIMT function as its own IR
function (SIMT_VF) typed by the launch's arguments, SIMT callees called from it are inlined
into it; atomics take an element access target.
"""
from __future__ import annotations

import ast
import types
from collections import ChainMap
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ...errors import InvalidOperationError, OutOfRange, ParserTypeError
from ...ir.nodes import Call, ConstInt, Function, FunctionType, Var
from ...ir.types import ScalarType, TensorType, TileType
from ..markers import kind_of
from .calls import emit_op, eval_args, materialize
from .context import FunctionFrame, ParseContext, PyList, assigned_names
from .expr import eval_expr, to_expr
from .inline import function_ast, function_env
from .values import linear_offset


def _threads(ctx: ParseContext, value: Any, node: ast.AST) -> tuple[int, int, int]:
    dims = list(value) if isinstance(value, (tuple, list)) else [value]
    if not 1 <= len(dims) <= 3 or not all(isinstance(d, int) and d > 0 for d in dims):
        raise ctx.error(ParserTypeError, "simt.launch: threads= must be a compile-time int or "
                                         "a 1-3 tuple of positive ints", node)
    return tuple(dims + [1] * (3 - len(dims)))


def launch(ctx: ParseContext, node: ast.Call) -> Any:
    if ctx.target != "vector":
        return None
    if ctx.section not in ("vector", None):
        raise ctx.error(InvalidOperationError, "pl.simt.launch must be called from vector code",
                        node)
    args, kw = eval_args(ctx, node)
    if len(args) != 1 or kind_of(args[0]) != "simt_function":
        raise ctx.error(ParserTypeError, "pl.simt.launch(fn, threads=..., args=(...)) needs a "
                                         "@pl.simt.function", node)
    fn = args[0]
    max_threads = getattr(fn, "__pypto_max_threads__", None)
    if max_threads is None:
        raise ctx.error(InvalidOperationError, f"'{fn.__name__}' has no max_threads: only "
                                               f"launchable SIMT functions can be launched", node)
    threads = _threads(ctx, kw.get("threads"), node)
    total = threads[0] * threads[1] * threads[2]
    if total > max_threads:
        raise ctx.error(OutOfRange, f"simt.launch: {total} threads exceed max_threads="
                                    f"{max_threads}", node)
    call_args = kw.get("args", ())
    call_args = call_args.items if isinstance(call_args, PyList) else call_args
    if not isinstance(call_args, (tuple, list)):
        raise ctx.error(ParserTypeError, "simt.launch: args= must be a tuple of tiles, tensors "
                                         "and scalars", node)
    call_args = list(call_args)
    exprs = [to_expr(ctx, a, node) for a in call_args]
    fname = _instantiate(ctx, fn, exprs, node)
    dims = [d for e in exprs if isinstance(e.type, TensorType) for d in _dynamic_dims(e.type)]
    return emit_op(ctx, "simt.launch", exprs + dims,
                   {"callee": fname, "threads": threads, "max_threads": max_threads}, node,
                   check_tiles=False)


def _instantiate(ctx: ParseContext, fn, exprs: list, node: ast.AST) -> str:
    key = (fn, tuple(_type_key(e.type) for e in exprs))
    if key in ctx.simt_instances:
        return ctx.simt_instances[key]
    fdef, file = function_ast(fn)
    names = [a.arg for a in fdef.args.args]
    if len(names) != len(exprs):
        raise ctx.error(ParserTypeError, f"simt function '{fn.__name__}' takes {len(names)} "
                                         f"args, launch passes {len(exprs)}", node)
    for e in exprs:
        if not isinstance(e.type, (TileType, TensorType, ScalarType)):
            raise ctx.error(ParserTypeError, "simt.launch args must be Vec tiles, GM tensors or "
                                             "scalars", node)
    params = [Var(n, _own_dims(n, e.type)) for n, e in zip(names, exprs)]
    dim_params = [d for p in params if isinstance(p.type, TensorType)
                  for d in _dynamic_dims(p.type)]
    frame = FunctionFrame(file, _callees_inlined(function_env(fn), {}), in_helper=True,
                          mutable=frozenset(n for n, c in assigned_names(fdef.body).items()
                                            if c > 1))
    frame.scope.update(dict(zip(names, params)))
    from .stmt import parse_body

    outer = ctx.section
    ctx.frames.append(frame)
    ctx.section = "simt"
    ctx.builder.push()
    try:
        parse_body(ctx, fdef.body)
    finally:
        body = ctx.builder.pop(ctx.span(fdef))
        ctx.section = outer
        ctx.frames.pop()
    name = ctx.names.fresh(fn.__name__)
    ctx.extra_functions.append(Function(
        name, tuple(params + dim_params), body, FunctionType.SIMT_VF,
        (("max_threads", fn.__pypto_max_threads__),), span=ctx.span(fdef)))
    ctx.simt_instances[key] = name
    return name


def _callees_inlined(env: Mapping[str, Any], done: dict) -> Mapping[str, Any]:
    """`env` where every SIMT callee (`@pl.simt.function` without max_threads) is an unmarked
    copy of itself, so that a call from SIMT code inlines it like a plain helper (value returns
    included); a copy's own globals get the same treatment (`done`: copies made so far)."""
    subs = {name: _unmarked(v, done) for name, v in env.items()
            if kind_of(v) == "simt_function" and v.__pypto_max_threads__ is None}
    return ChainMap(subs, env) if subs else env


def _unmarked(fn: types.FunctionType, done: dict) -> types.FunctionType:
    if fn in done:
        return done[fn]
    namespace = dict(fn.__globals__)
    copy = done[fn] = types.FunctionType(fn.__code__, namespace, fn.__name__, fn.__defaults__,
                                         fn.__closure__)
    namespace.update(_callees_inlined(fn.__globals__, done))
    return copy


def _type_key(t) -> Any:
    shape = t.shape if isinstance(t, TileType) else (
        t.static_shape() if isinstance(t, TensorType) else None)
    return (type(t).__name__, shape, getattr(t, "dtype", None))


def _dynamic_dims(t: TensorType) -> list:
    return [d for d in t.shape if not isinstance(d, ConstInt)]


def _own_dims(name: str, t: Any) -> Any:
    """A GM tensor parameter whose dynamic dims are parameters of the SIMT function itself
    (`<name>_dim<k>`, passed by the launch after the user's arguments): the kernel's dim
    variables are not visible inside it. Element access indexes the raw pointer row-major."""
    if not isinstance(t, TensorType) or not _dynamic_dims(t):
        return t
    shape = tuple(d if isinstance(d, ConstInt) else Var(f"{name}_dim{k}", d.type)
                  for k, d in enumerate(t.shape))
    return replace(t, shape=shape, strides=None)


def atomic(ctx: ParseContext, node: ast.Call, op: str) -> Any:
    if ctx.section != "simt":
        raise ctx.error(InvalidOperationError, f"pl.{op} is only valid inside SIMT code", node)
    if not node.args or not isinstance(node.args[0], ast.Subscript):
        raise ctx.error(ParserTypeError, f"pl.{op}: the target must be one element, e.g. "
                                         f"tile[r, c] or tensor[i]", node)
    target = node.args[0]
    base = eval_expr(ctx, target.value)
    t = getattr(base, "type", None)
    if not isinstance(t, (TileType, TensorType)):
        raise ctx.error(ParserTypeError, f"pl.{op}: target must be a Vec tile or GM tensor",
                        node)
    offset = linear_offset(ctx, base, eval_expr(ctx, target.slice), node)
    values = [to_expr(ctx, eval_expr(ctx, a), node) for a in node.args[1:]]
    call = Call("simt.atomic", (base, to_expr(ctx, offset, node), *values),
                (("fn", op.split("_", 1)[1]),), ScalarType(t.dtype), ctx.span(node))
    return materialize(ctx, call, "old")

