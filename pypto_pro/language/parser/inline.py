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
from ...ir.nodes import SectionStmt
from ...ir.types import SectionKind
from . import returns
from .context import FunctionFrame, ParseContext, assigned_names, span_of

_AST_CACHE: dict[Any, tuple[ast.FunctionDef, str]] = {}


def function_ast(fn: Callable) -> tuple[ast.FunctionDef, str]:
    """The function's AST with line/column numbers of the real file (or notebook cell)."""
    code = fn.__code__
    key = (code, code.co_firstlineno)
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
    if len(ctx.frames) > 64:
        raise ctx.error(InvalidOperationError, f"helper '{fn.__name__}' recurses too deeply "
                                               f"(recursion cannot be inlined)", node)
    found = _returns(fdef)
    tail = fdef.body[-1] if len(found) == 1 and found[0] is fdef.body[-1] else None
    body = fdef.body[:-1] if tail is not None else _lowered_body(fdef) if found else fdef.body
    frame = FunctionFrame(file, function_env(fn), in_helper=True,
                          mutable=frozenset(n for n, c in assigned_names(body).items()
                                            if c > 1))
    frame.scope.update(bind_params(ctx, fdef, fn, args, kwargs, node))
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
    frame.scope.update(bind_params(ctx, fdef, fn, args, kwargs, node))
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
