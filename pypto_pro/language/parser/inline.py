"""Inlining of Python helpers and `@pl.vector_function` bodies at their call sites.

A helper's parameters are bound positionally (and by keyword) to the caller's values, so tiles,
groups and tuples pass through. A `return` at the end of the helper yields its value directly;
other returns (early, in branches, in loops) are rewritten by `returns` into assignments of the
helper's result, joined across branches like any other name.
"""
from __future__ import annotations

import ast
import inspect
import textwrap
from collections import ChainMap
from typing import Any, Callable

from ...errors import (
    InvalidOperationError, ParserSyntaxError, ParserTypeError, UnsupportedFeatureError,
)
from ...ir.dtype import DataType
from ...ir.nodes import ConstInt, SectionStmt
from ...ir.types import ScalarType, SectionKind, TensorType, TileType
from ..types import DYNAMIC, STATIC, TensorSpec, TileSpec
from . import returns
from .context import FunctionFrame, ParseContext, assigned_names, span_of

_AST_CACHE: dict[Any, tuple[ast.FunctionDef, str]] = {}


def function_ast(fn: Callable) -> tuple[ast.FunctionDef, str]:
    """The function's AST with line/column numbers of the real file (or notebook cell)."""
    code = fn.__code__
    key = (code, code.co_filename, code.co_firstlineno)  # (equal code objects may come from
    # two files: code equality ignores the file, and the annotations, which may differ)
    if key in _AST_CACHE:
        return _AST_CACHE[key]
    file = inspect.getsourcefile(fn) or code.co_filename
    lines, first = inspect.getsourcelines(fn)
    src = "".join(lines)
    dedented = textwrap.dedent(src)
    indent = len(lines[0]) - len(lines[0].lstrip()) if lines else 0
    tree = ast.parse(dedented)
    fdef = next(n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
    ast.increment_lineno(fdef, first - 1)
    if indent:
        for n in ast.walk(fdef):
            if hasattr(n, "col_offset"):
                n.col_offset += indent
                if getattr(n, "end_col_offset", None) is not None:
                    n.end_col_offset += indent
    _AST_CACHE[key] = (fdef, file)
    return fdef, file


def function_env(fn: Callable) -> ChainMap:
    closure = {}
    if fn.__closure__:
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
            try:
                closure[name] = cell.cell_contents
            except ValueError:
                pass
    return ChainMap(closure, fn.__globals__)


def annotation_value(fn: Callable, annotation: ast.expr | None) -> Any:
    """A helper's parameter / return annotation's value (a pl.DT_*, pl.Tile[...],
    pl.Tensor[...]) in the helper's own scope, its closure first (as the real type resolver
    lets a closure name win); None when there is none or it names no value there."""
    if annotation is None:
        return None
    try:
        return eval(compile(ast.Expression(annotation), "<annotation>", "eval"),  # noqa: S307
                    {}, function_env(fn))
    except Exception:  # noqa: BLE001 - a string or unresolvable annotation is not checked
        return None


def _kind_and_dtype(t: Any) -> tuple[str, DataType] | None:
    if isinstance(t, DataType):
        return "scalar", t
    if isinstance(t, ScalarType):
        return "scalar", t.dtype
    if isinstance(t, (TileSpec, TileType)):
        return "tile", t.dtype
    if isinstance(t, (TensorSpec, TensorType)):
        return "tensor", t.dtype
    return None


def annotation_fits(wanted: Any, actual: Any) -> bool:
    """The real frontend's lenient rule: same kind of value, dtypes of one family."""
    w, a = _kind_and_dtype(wanted), _kind_and_dtype(actual)
    if w is None or a is None:
        return True
    return w[0] == a[0] and w[1].family == a[1].family


def describe_kind(t: Any) -> str:
    kd = _kind_and_dtype(t)
    return f"a {kd[0]} of {kd[1]}" if kd else repr(t)


def bind_params(ctx: ParseContext, fdef: ast.FunctionDef, fn: Callable, args: list,
                kwargs: dict, node: ast.AST) -> dict[str, Any]:
    a = fdef.args
    if a.vararg or a.kwarg:
        raise ctx.error(UnsupportedFeatureError, f"'{fn.__name__}' with *args/**kwargs cannot "
                                                 f"be called from a kernel", node)
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except TypeError as e:
        raise ctx.error(ParserTypeError, f"call of '{fn.__name__}': {e}", node) from None
    bound.apply_defaults()
    return dict(bound.arguments)


def check_inline_call(ctx: ParseContext, fdef: ast.FunctionDef, fn: Callable,
                      node: ast.Call) -> None:
    """An inlined helper (or vector function) as the real parser takes it: positional
    parameters with optional defaults, called with plain positional arguments, as many as it
    has parameters and at least as many as it has without defaults."""
    a, name = fdef.args, fn.__name__
    if a.posonlyargs or a.vararg or a.kwarg or a.kwonlyargs:
        raise ctx.error(ParserSyntaxError, f"Inline function '{name}' only supports positional "
                                           f"parameters with optional defaults", node)
    if node.keywords or any(isinstance(x, ast.Starred) for x in node.args):
        raise ctx.error(ParserSyntaxError, f"Call to inline function '{name}' only supports "
                                           f"plain positional arguments", node,
                        hint="pass every argument by position, in the helper's order")
    most, given = len(a.args), len(node.args)
    least = most - len(a.defaults)
    if not least <= given <= most:
        raise ctx.error(ParserTypeError, f"Function '{name}' expects {least} to {most} "
                                         f"positional argument(s), got {given}", node)


def _check_annotations(ctx: ParseContext, fdef: ast.FunctionDef, fn: Callable,
                       bound: dict[str, Any], node: ast.AST) -> None:
    """Each argument of an inlined helper fits its parameter's annotation as the real parser
    checks it: the same kind of value (scalar, tile, tensor), dtypes of one family; shapes are
    not compared."""
    from .expr import scalar_type

    for a in fdef.args.args:
        wanted = annotation_value(fn, a.annotation)
        value = bound.get(a.arg)
        actual = getattr(value, "type", None) or scalar_type(value)
        if isinstance(wanted, TensorSpec) and any(d is DYNAMIC or d is STATIC or d is Ellipsis
                                                  for d in wanted.dims):
            _check_policy(ctx, a.arg, wanted, actual, node)
        elif wanted is not None and actual is not None and not annotation_fits(wanted, actual):
            raise ctx.error(ParserTypeError, f"Parameter '{a.arg}' annotated as "
                                             f"{describe_kind(wanted)} but called/returned "
                                             f"with {describe_kind(actual)}", node,
                            hint="Make the annotation match the actual argument/return type, "
                                 "or remove it.")


def _check_policy(ctx: ParseContext, name: str, wanted: TensorSpec, actual: Any,
                  node: ast.AST) -> None:
    """A helper's tensor parameter annotated with DYNAMIC / STATIC / `...` is checked strictly,
    as the real parser's policy check: a tensor of that very dtype and rank (at least the
    explicit axes, with `...`), fixed axes equal, STATIC and `...` axes constant."""
    from .ops_block import real_dtype_name

    def refused(message: str) -> Exception:
        return ctx.error(ParserTypeError, f"Helper parameter '{name}' {message}", node)

    if not isinstance(actual, TensorType):
        raise refused("policy annotation requires a Tensor argument")
    if actual.dtype is not wanted.dtype:
        raise refused(f"dtype mismatch: expected {real_dtype_name(wanted.dtype)}, got "
                      f"{real_dtype_name(actual.dtype)}")
    rank = len(actual.shape)
    if rank < wanted.explicit_rank or (rank > wanted.explicit_rank and not wanted.has_ellipsis):
        raise refused(f"rank does not match {list(wanted.dims)}")
    for axis, dim in enumerate(actual.shape):
        const = dim.value if isinstance(dim, ConstInt) else None
        want = wanted.dims[axis] if axis < wanted.explicit_rank else Ellipsis
        if isinstance(want, int) and const != want:
            raise refused(f"axis {axis} must equal {want}")
        if want is STATIC and const is None:
            raise refused(f"STATIC axis {axis} requires a constant caller dimension")
        if want is Ellipsis and const is None:
            raise refused(f"ellipsis axis {axis} requires a constant caller dimension")


def _returns(fdef: ast.FunctionDef) -> list[ast.Return]:
    found = []
    stack = list(fdef.body)
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Return):
            found.append(n)
        if not isinstance(n, (ast.FunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(n))
    return found


_LOWERED: dict[ast.FunctionDef, list[ast.stmt]] = {}


def _lowered_body(fdef: ast.FunctionDef) -> list[ast.stmt]:
    """The body with its returns rewritten (`returns.lower`), once per function."""
    body = _LOWERED.get(fdef)
    if body is None:
        body = _LOWERED[fdef] = returns.lower(fdef.body)[0]
    return body


def inline_helper(ctx: ParseContext, fn: Callable, node: ast.Call) -> Any:
    """The helper's body parsed in place with its parameters bound to the call's arguments;
    its result: the value of a lone final `return`, else of the returns `returns` lowered."""
    from .calls import eval_args
    from .expr import eval_expr
    from .stmt import parse_body

    args, kwargs = eval_args(ctx, node)
    try:
        fdef, file = function_ast(fn)
    except (OSError, TypeError):
        raise ctx.error(UnsupportedFeatureError, f"cannot read the source of helper "
                                                 f"'{fn.__name__}' to inline it", node) from None
    check_inline_call(ctx, fdef, fn, node)
    bound = bind_params(ctx, fdef, fn, args, kwargs, node)
    _check_annotations(ctx, fdef, fn, bound, node)
    if len(ctx.frames) > 64:
        raise ctx.error(InvalidOperationError, f"helper '{fn.__name__}' recurses too deeply "
                                               f"(recursion cannot be inlined)", node)
    found = _returns(fdef)
    tail = fdef.body[-1] if len(found) == 1 and found[0] is fdef.body[-1] else None
    body = fdef.body[:-1] if tail is not None else _lowered_body(fdef) if found else fdef.body
    frame = FunctionFrame(file, function_env(fn), in_helper=True,
                          mutable=frozenset(n for n, c in assigned_names(body).items()
                                            if c > 1))
    frame.scope.update(bound)
    ctx.frames.append(frame)
    try:
        parse_body(ctx, body)
        if tail is not None:
            return eval_expr(ctx, tail.value) if tail.value is not None else None
        if returns.RESULT in frame.scope:
            return ctx.lookup(returns.RESULT, ctx.span(node))
        return None
    finally:
        ctx.frames.pop()


def inline_vector_function(ctx: ParseContext, fn: Callable, node: ast.Call) -> Any:
    """A `@pl.vector_function` call → a VF section with the body inlined (pipe V)."""
    from .calls import eval_args
    from .stmt import parse_body

    if ctx.target != "vector":
        return None  # VF code only exists on the vector target
    args, kwargs = eval_args(ctx, node)
    fdef, file = function_ast(fn)
    check_inline_call(ctx, fdef, fn, node)
    frame = FunctionFrame(file, function_env(fn), in_helper=True,
                          mutable=frozenset(n for n, c in assigned_names(fdef.body).items()
                                            if c > 1))
    bound = bind_params(ctx, fdef, fn, args, kwargs, node)
    _check_annotations(ctx, fdef, fn, bound, node)  # (as an inlined helper's)
    frame.scope.update(bound)
    returns = _returns(fdef)
    if returns:  # at the `return` itself, as the real parser reports it
        first = min(returns, key=lambda r: (r.lineno, r.col_offset))
        raise ctx.error(ParserSyntaxError, f"Vector function '{fdef.name}' cannot contain "
                                           f"return", span_of(first, file),
                        hint="store results with vf.store_align; a vector function returns "
                             "nothing")
    outer = ctx.section
    ctx.frames.append(frame)
    if outer == "vf":  # called from VF code: inlined into the caller's VF scope
        try:
            parse_body(ctx, fdef.body)
        finally:
            ctx.frames.pop()
        return None
    ctx.section = "vf"
    ctx.builder.push()
    try:
        parse_body(ctx, fdef.body)
    finally:
        body = ctx.builder.pop(ctx.span(node))
        ctx.section = outer
        ctx.frames.pop()
    ctx.builder.emit(SectionStmt(SectionKind.VF, body, (("function", fn.__name__),),
                                 ctx.span(node)))
    return None
