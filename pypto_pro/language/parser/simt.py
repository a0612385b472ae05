"""SIMT (`pl.simt`, spec §2.14): `pl.simt.launch` instantiates the SIMT function as its own IR
function (SIMT_VF) typed by the launch's arguments; a SIMT callee (`@pl.simt.function` without
max_threads) called from SIMT code is instantiated once per argument types as a SIMT_CALLEE
function, called with `simt.call` (its result: the scalar the callee returns, or none). There is
no call stack to speak of on the vector core's SIMT threads: recursion is rejected (spec §3.4,
step 8). Atomics take an element access target.
"""
from __future__ import annotations

import ast
from dataclasses import replace
from typing import Any

from ...errors import InvalidOperationError, OutOfRange, ParserTypeError, UnsupportedFeatureError
from ...ir.dtype import promote_scalar
from ...ir.mutator import Mutator
from ...ir.nodes import (
    Call, Cast, ConstBool, ConstFloat, ConstInt, EvalStmt, Expr, Function, FunctionType,
    ReturnStmt, Stmt, Var,
)
from ...ir.types import NoneType, ScalarType, TensorType, TileType
from ..markers import kind_of
from .calls import emit_op, eval_args, materialize
from .context import FunctionFrame, ParseContext, PyList, assigned_names, span_of
from .expr import eval_expr, to_expr
from .inline import (
    annotation_fits, annotation_value, bind_params, describe_kind, function_ast,
    function_env,
)
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
    exprs = [to_expr(ctx, a, node) for a in call_args]
    entry = _instantiate(ctx, fn, exprs, node, FunctionType.SIMT_VF)
    return emit_op(ctx, "simt.launch", exprs + _dim_args(exprs),
                   {"callee": entry.name, "threads": threads, "max_threads": max_threads}, node,
                   check_tiles=False)


def call(ctx: ParseContext, fn, node: ast.Call) -> Any:
    """`f(...)` of a SIMT function: a `simt.call` of the callee's instance for these argument
    types (a value-returning call is bound to a fresh Var, so it runs exactly once, here)."""
    if fn.__pypto_max_threads__ is not None:
        raise ctx.error(InvalidOperationError, "a SIMT function with max_threads is started "
                                               "with pl.simt.launch(fn, threads=..., args=(...))",
                        node)
    if ctx.section != "simt":
        raise ctx.error(InvalidOperationError, f"SIMT callee '{fn.__name__}' can only be called "
                                               f"from SIMT code", node,
                        hint="call it from a @pl.simt.function(max_threads=...) body started "
                             "with pl.simt.launch")
    args, kwargs = eval_args(ctx, node)
    fdef, _ = function_ast(fn)
    exprs = [to_expr(ctx, v, node) for v in bind_params(ctx, fdef, fn, args, kwargs,
                                                         node).values()]
    callee = _instantiate(ctx, fn, exprs, node, FunctionType.SIMT_CALLEE)
    ret = callee.return_type
    result = Call("simt.call", tuple(exprs + _dim_args(exprs)), (("callee", callee.name),),
                  ret if ret is not None else NoneType(), ctx.span(node))
    if ret is None:
        ctx.builder.emit(EvalStmt(result, ctx.span(node)))
        return None
    return materialize(ctx, result, "val")


def _instantiate(ctx: ParseContext, fn, exprs: list[Expr], node: ast.AST,
                 kind: FunctionType) -> Function:
    """The IR function of SIMT function `fn` for arguments `exprs` (parsed on first use)."""
    if fn in ctx.simt_stack:
        chain = " -> ".join(f.__name__ for f in ctx.simt_stack[ctx.simt_stack.index(fn):])
        raise ctx.error(UnsupportedFeatureError, f"SIMT function '{fn.__name__}' is recursive "
                                                 f"({chain} -> {fn.__name__})", node,
                        hint="SIMT threads have no call stack for recursion; write a loop")
    key = (fn, tuple(_type_key(e.type) for e in exprs))
    if key in ctx.simt_instances:
        return ctx.simt_instances[key]
    fdef, file = function_ast(fn)
    names = [a.arg for a in fdef.args.args]
    if len(names) != len(exprs):
        raise ctx.error(ParserTypeError, f"simt function '{fn.__name__}' takes {len(names)} "
                                         f"args, the call passes {len(exprs)}", node)
    _check_signature(ctx, fn, fdef, exprs, node)
    for e in exprs:
        if not isinstance(e.type, (TileType, TensorType, ScalarType)):
            raise ctx.error(ParserTypeError, "SIMT function arguments must be Vec tiles, GM "
                                             "tensors or scalars", node)
    params = [Var(n, _own_dims(n, e.type)) for n, e in zip(names, exprs)]
    dim_params = [d for p in params if isinstance(p.type, TensorType)
                  for d in _dynamic_dims(p.type)]
    entry = kind is FunctionType.SIMT_VF
    frame = FunctionFrame(file, function_env(fn), simt="entry" if entry else "callee",
                          mutable=frozenset(n for n, c in assigned_names(fdef.body).items()
                                            if c > 1))
    frame.scope.update(dict(zip(names, params)))
    from .stmt import parse_body

    outer = ctx.section
    ctx.frames.append(frame)
    ctx.simt_stack.append(fn)
    ctx.section = "simt"
    ctx.builder.push()
    try:
        for n, p in zip(names, params):  # a re-assigned scalar parameter lives in a Var
            if n in frame.mutable and isinstance(p.type, ScalarType):
                ctx.bind_value(n, p, ctx.span(fdef))
        parse_body(ctx, fdef.body)
    finally:
        body = ctx.builder.pop(ctx.span(fdef))
        ctx.section = outer
        ctx.simt_stack.pop()
        ctx.frames.pop()
    ret = None if entry else _return_type(ctx, frame, fdef, body)
    returns = annotation_value(fn, fdef.returns)
    if ret is not None and returns is not None and not annotation_fits(returns, ret):
        raise ctx.error(ParserTypeError, f"return of '{fn.__name__}' annotated as "
                                         f"{describe_kind(returns)} but returns "
                                         f"{describe_kind(ret)}",
                        span_of(frame.simt_returns[-1][1], file),
                        hint="make the annotation match the returned value, or remove it")
    if ret is not None:
        body = _ReturnCasts(ret).visit(body)
    attrs = (("max_threads", fn.__pypto_max_threads__),) if entry else ()
    instance = Function(ctx.names.fresh(fn.__name__), tuple(params + dim_params), body, kind,
                        attrs, ret, span=ctx.span(fdef))
    ctx.extra_functions.append(instance)  # after the callees it calls: C++ order
    ctx.simt_instances[key] = instance
    return instance


def _check_signature(ctx: ParseContext, fn, fdef: ast.FunctionDef, exprs: list[Expr],
                     node: ast.AST) -> None:
    """Each argument must fit its parameter's annotation as the real frontend checks it (same
    kind of value, dtypes of the same int / float family; shapes may differ)."""
    for a, e in zip(fdef.args.args, exprs):
        wanted = annotation_value(fn, a.annotation)
        if wanted is not None and not annotation_fits(wanted, e.type):
            raise ctx.error(ParserTypeError, f"SIMT parameter '{a.arg}' of '{fn.__name__}' "
                                             f"annotated as {describe_kind(wanted)} but called "
                                             f"with {describe_kind(e.type)}", node,
                            hint="make the argument match the parameter's type (pl.astype "
                                 "converts a scalar), or remove the annotation")


def simt_return(ctx: ParseContext, node: ast.Return) -> None:
    """`return` / `return value` in a SIMT function's own body: a real function return."""
    frame = ctx.frame
    value = eval_expr(ctx, node.value) if node.value is not None else None
    expr = to_expr(ctx, value, node) if value is not None else None
    if expr is not None and frame.simt == "entry":
        raise ctx.error(InvalidOperationError, "a launchable SIMT function returns nothing; "
                                               "write results to a tile or tensor", node)
    if expr is not None and not isinstance(expr.type, ScalarType):
        raise ctx.error(ParserTypeError, "a SIMT callee can only return a scalar", node)
    frame.simt_returns.append((expr, node))
    ctx.builder.emit(ReturnStmt(expr, ctx.span(node)))


def _return_type(ctx: ParseContext, frame: FunctionFrame, fdef: ast.FunctionDef,
                 body: Stmt) -> ScalarType | None:
    """The scalar a callee returns: its returned values' common type (Python constants take
    the type of the runtime values), or None for a callee that returns nothing."""
    values = [(e, n) for e, n in frame.simt_returns if e is not None]
    if not values:
        return None
    bare = next((n for e, n in frame.simt_returns if e is None), None)
    if bare is not None:
        raise ctx.error(InvalidOperationError, f"SIMT callee '{fdef.name}' returns a value "
                                               f"elsewhere: this return needs one too", bare)
    from ...passes.ir_query import falls_through

    if falls_through(body):
        raise ctx.error(InvalidOperationError, f"SIMT callee '{fdef.name}' returns a value, "
                                               f"but can reach its end without a return",
                        fdef.body[-1], hint="end every path of the callee with `return value`")
    consts = (ConstInt, ConstFloat, ConstBool)
    runtime = [e.type.dtype for e, _ in values if not isinstance(e, consts)]
    dtypes = runtime or [e.type.dtype for e, _ in values]
    dtype = dtypes[0]
    for d in dtypes[1:]:
        dtype = promote_scalar(dtype, d)
    return ScalarType(dtype)


class _ReturnCasts(Mutator):
    """Returned values converted to the callee's return type where they differ."""

    def __init__(self, ret: ScalarType) -> None:
        self.ret = ret

    def visit_ReturnStmt(self, s: ReturnStmt) -> ReturnStmt:
        if s.value is None or s.value.type == self.ret:
            return s
        return replace(s, value=Cast(s.value, self.ret, s.value.span))

    def visit_Call(self, e: Call) -> Call:
        return e  # no statements inside expressions

    visit_Var = visit_Call


def _dim_args(exprs: list[Expr]) -> list[Expr]:
    """Dynamic dims of the GM tensor arguments, passed after the user's arguments."""
    return [d for e in exprs if isinstance(e.type, TensorType) for d in _dynamic_dims(e.type)]


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

