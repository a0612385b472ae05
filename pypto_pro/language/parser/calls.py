"""Call dispatch: DSL ops, helper inlining, marked functions and compile-time Python calls.

`eval_call` resolves the callee: a DSL declaration (`pl.add`, `pl.system.sync_src`, `vf.add`)
dispatches to its handler in `ops_block` / `ops_system` (or the generic op builder), a `pl.<name>`
the module does not declare falls back to a registered `block.<name>` (spec §2.1), user Python
functions are inlined, `@pl.vector_function` bodies become VF sections, SIMT callees
`simt.call`s, and other Python callables run at parse time on constant arguments.
"""
from __future__ import annotations

import ast
import builtins
import types
from dataclasses import replace
from typing import Any

from ...errors import (
    FinalRejectionError, ParserSyntaxError, ParserTypeError, PyptoError,
    UndefinedVariableError, UnsupportedFeatureError,
)
from ...ir import ops as opreg
from ...ir.nodes import Call, EvalStmt, Expr, IfStmt, Select, Stmt, UnOp, Var
from ...ir.types import NoneType, TensorType, TileGroupType, TileType
from ..decl import Declaration
from ..markers import kind_of
from ..signatures import bind_keywords
from .context import GroupChoice, ParseContext, PyList
from .expr import eval_expr, is_const, to_expr, try_const, unary
from ..tile_layouts import LayoutRefused
from .values import BoundMethod, Fallback
from .vector_checks import check_vector_op


def resolve_callee(ctx: ParseContext, func: ast.expr) -> Any:
    return eval_expr(ctx, func)


def eval_call(ctx: ParseContext, node: ast.Call) -> Any:
    callee = resolve_callee(ctx, node.func)
    if isinstance(callee, Declaration):
        return dispatch(ctx, callee.op, callee.qualname, node)
    if isinstance(callee, Fallback):
        if ctx.section == "simt":
            raise _block_op_in_simt(ctx, f"pl.{callee.name}", node)
        spec = opreg.block_op_for(callee.name)
        if spec is None:
            raise ctx.error(UndefinedVariableError,
                            f"'pl.{callee.name}' is not a PyPTO Pro op", node.func,
                            hint=_suggest(callee.name))
        args, kwargs = eval_args(ctx, node)
        return emit_op(ctx, spec.name, args, kwargs, node)
    if isinstance(callee, BoundMethod):
        return _group_method(ctx, callee, node)
    kind = kind_of(callee)
    if kind == "vector_function":
        from .inline import inline_vector_function

        return inline_vector_function(ctx, callee, node)
    if kind == "simt_function":
        from .simt import call

        return call(ctx, callee, node)
    if isinstance(callee, types.FunctionType) and callee.__module__ != "builtins" and \
            not _is_library(callee):
        from .inline import inline_helper

        if ctx.section == "vf":  # as the real frontend: VF code calls only VF code
            raise ctx.error(ParserSyntaxError, f"a vector function cannot call the non-vector "
                                               f"helper '{callee.__name__}'", node,
                            hint="mark the helper @pl.vector_function (it is inlined into "
                                 "the caller's VF scope)")
        return inline_helper(ctx, callee, node)
    if callee in (builtins.min, builtins.max):
        return dispatch(ctx, callee.__name__, callee.__name__, node)
    if callee is builtins.abs:
        args, _ = eval_args(ctx, node)
        return unary(ctx, UnOp.Abs, args[0], node)
    if callee is builtins.len:
        args, kwargs = eval_args(ctx, node)
        if len(args) == 1 and isinstance(args[0], PyList):
            return len(args[0].items)  # a kernel tuple's length is known while parsing
        return _apply_at_parse_time(ctx, callee, args, kwargs, node)
    if callee is builtins.range:
        raise ctx.error(ParserSyntaxError, "use pl.range(...) in kernels", node)
    return _call_at_parse_time(ctx, callee, node)


def _block_op_in_simt(ctx: ParseContext, qualname: str, node: ast.AST) -> PyptoError:
    return ctx.error(UnsupportedFeatureError, f"'{qualname}' is a tile (block) op and cannot be "
                                              f"used inside a SIMT function", node,
                     hint="SIMT bodies use scalar code and element access: tile[r, c]")


def _is_library(fn: types.FunctionType) -> bool:
    mod = getattr(fn, "__module__", "") or ""
    if mod == "pypto_pro.examples" or mod.startswith("pypto_pro.examples."):
        return False  # user kernels shipped with the package: their helpers are inlined
    return mod.split(".")[0] in ("torch", "numpy", "math", "pypto_pro", "functools", "typing")


def _call_at_parse_time(ctx: ParseContext, callee: Any, node: ast.Call) -> Any:
    args, kwargs = eval_args(ctx, node)
    return _apply_at_parse_time(ctx, callee, args, kwargs, node)


def _apply_at_parse_time(ctx: ParseContext, callee: Any, args: list, kwargs: dict,
                         node: ast.Call) -> Any:
    if not all(is_const(a) for a in args) or not all(is_const(v) for v in kwargs.values()):
        name = getattr(callee, "__name__", repr(callee))
        raise ctx.error(ParserTypeError, f"'{name}' is evaluated at compile time and cannot "
                                         f"take runtime values: each argument must be a "
                                         f"compile-time integer or constant", node)
    try:
        return callee(*args, **kwargs)
    except PyptoError as e:
        e.with_span(ctx.span(node))
        raise
    except LayoutRefused as e:  # a pl.TileType built in the kernel: as its make_tile reports it
        raise ctx.builder_error(str(e), node) from None
    except Exception as e:  # a user's compile-time Python failed: report it at the call
        raise ctx.error(ParserTypeError, f"compile-time call failed: {type(e).__name__}: {e}",
                        node) from e


def eval_args(ctx: ParseContext, node: ast.Call) -> tuple[list, dict]:
    args: list = []
    for a in node.args:
        if isinstance(a, ast.Starred):
            v = eval_expr(ctx, a.value)
            items = v.items if isinstance(v, PyList) else v
            if not isinstance(items, (tuple, list)):
                raise ctx.error(UnsupportedFeatureError, "'*' needs a tuple or list", a)
            args.extend(items)
        else:
            args.append(eval_expr(ctx, a))
    kwargs = {}
    for kw in node.keywords:
        if kw.arg is None:
            raise ctx.error(UnsupportedFeatureError, "'**kwargs' is not supported in kernels",
                            node)
        kwargs[kw.arg] = eval_expr(ctx, kw.value)
        if ctx.op_call is not None and node.keywords is ctx.op_call.keywords:  # (or a copy)
            _enum_guard(ctx, kw.arg, kwargs[kw.arg], kw.value)
    return args, kwargs


#: op kwargs that take an enum (or dtype) and never a number, as the real parser's guard
#: lists them (`cmp_mode` is a plain int of gather / cmp)
ENUM_KWARGS = frozenset({
    "phase", "atomic", "mode", "relu_pre_mode", "acc_to_vec_mode", "sync_mode", "core_type",
    "cache_line", "dst", "target_memory", "dtype", "target_type", "out_dtype", "cmp_dtype",
    "pattern", "merge_mode", "reduce_mode", "reduce_type", "pos", "layout", "round_mode",
    "saturate", "bin_type", "hist_type", "gather_mode", "part", "width", "dist",
    "data_copy_mode", "index_order",
})


def _enum_guard(ctx: ParseContext, key: str, value: Any, node: ast.AST) -> None:
    """A number for an enum kwarg of an op (`pattern=1`, `target_type=n_closure`, an int from
    a ternary or a helper) is refused; the enum itself or an enum variable is taken."""
    k, v = try_const(value)
    if key in ENUM_KWARGS and k and type(v) in (bool, int, float):  # (enums may be ints)
        raise ctx.error(FinalRejectionError, f"'{key}' expects an enum value, not {v!r}", node,
                        hint=f"use the enum, e.g. {key}=pl.RoundMode.X / dtype=pl.DT_FP16, or "
                             f"an enum-valued variable")


def _suggest(name: str) -> str | None:
    import difflib
    import keyword

    import pypto_pro.language as pl

    # declared names first; then block ops reachable through the fallback (legal spellings only)
    fallback = [s.split(".", 1)[1] for s in opreg.REGISTRY if s.startswith("block.")]
    for pool in (list(pl.__all__), [n for n in fallback if not keyword.iskeyword(n)]):
        close = difflib.get_close_matches(name, pool, n=1)
        if close:
            return f"did you mean 'pl.{close[0]}'?"
    return None


# ---------------------------------------------------------------- op emission


def emit_op(ctx: ParseContext, op: str, args: list, kwargs: dict, node: ast.AST,
            result_type=None, check_tiles: bool = True) -> Any:
    """Build a registered op call: check arity and operand kinds, emit or return it."""
    spec = opreg.get(op)
    if spec is None:
        raise ctx.error(UndefinedVariableError, f"unknown op '{op}'", node)
    n = len(args)
    if n < spec.min_args or (spec.max_args is not None and n > spec.max_args):
        want = (f"{spec.min_args}" if spec.max_args == spec.min_args
                else f"{spec.min_args}..{spec.max_args if spec.max_args is not None else 'n'}")
        raise ctx.error(ParserTypeError, f"{op} takes {want} positional arguments, got {n}",
                        node)
    if spec.family != "debug" and any(isinstance(a, str) for a in args):
        raise ctx.error(ParserTypeError, f"{op}: Unsupported closure variable type: str (a "
                                         f"string is not a value of the kernel)", node,
                        hint="only pl.printf / pl.assert take strings")
    exprs = tuple(_arg_expr(ctx, a, node) for a in args)
    if check_tiles:
        reads, writes = spec.roles(n)
        for i in sorted(set(reads) | set(writes)):
            t = getattr(exprs[i], "type", None)
            if not isinstance(t, (TileType, TensorType)) and not (
                    i in reads and spec.family in ("vec_scalar", "vec_ternary", "store")):
                raise ctx.error(ParserTypeError, f"argument {i + 1} of {op} must be a tile, got "
                                                 f"{_kind(exprs[i])}", node)
    check_vector_op(ctx, op, exprs, kwargs, node)
    kw = tuple((k, _kwarg_value(ctx, v, node)) for k, v in kwargs.items() if v is not None)
    rtype = result_type if result_type is not None else NoneType()
    call = Call(op, exprs, kw, rtype, ctx.span(node))
    if isinstance(rtype, NoneType):
        ctx.builder.emit(_on_chosen_tensors(call, ctx.span(node)))
        return None
    return call


def _on_chosen_tensors(call: Call, span) -> Stmt:
    """The statement of an effect op; a GM tensor chosen at run time (`outs[i]`, a `Select` of
    tensors) becomes an if over the choice, each branch with its own tensor."""
    for k, a in enumerate(call.args):
        if isinstance(a, Select) and isinstance(a.type, TensorType):
            on = [_on_chosen_tensors(replace(call, args=call.args[:k] + (t,) + call.args[k + 1:]),
                                     span) for t in (a.true_value, a.false_value)]
            return IfStmt(a.cond, on[0], on[1], (), span)
    return EvalStmt(call, span)


def _arg_expr(ctx: ParseContext, a: Any, node: ast.AST) -> Expr:
    if isinstance(a, Expr):
        return a
    return to_expr(ctx, a, node)


def _kwarg_value(ctx: ParseContext, v: Any, node: ast.AST) -> Any:
    if isinstance(v, PyList):
        return to_expr(ctx, v, node)
    if isinstance(v, list):
        return tuple(v)
    return v


def _kind(e: Any) -> str:
    t = getattr(e, "type", None)
    return type(t).__name__.replace("Type", "").lower() if t is not None else repr(e)


def materialize(ctx: ParseContext, expr: Expr, name: str) -> Var:
    """Bind a side-effecting expression to a fresh Var at this program point."""
    from ...ir.nodes import AssignStmt

    var = ctx.new_var(name, expr.type, expr.span)
    ctx.builder.emit(AssignStmt(var, expr, expr.span))
    return var


def eval_condition(ctx: ParseContext, test: ast.expr) -> Any:
    """The condition of an `if` / ternary: `pl.constexpr(c)` is only legal here (spec §2.10)."""
    if isinstance(test, ast.Call):
        callee = resolve_callee(ctx, test.func)
        if isinstance(callee, Declaration) and callee.op == "constexpr":
            from .ops_misc import constexpr

            return constexpr_value(ctx, constexpr(ctx, test, "constexpr"), test)
    return constexpr_value(ctx, eval_expr(ctx, test), test)


def constexpr_value(ctx: ParseContext, value: Any, node: ast.AST) -> Any:
    """Unwrap a `pl.constexpr(c)` marker: must be a compile-time constant."""
    from .ops_misc import ConstexprValue

    if isinstance(value, ConstexprValue):
        k, v = try_const(value.value)
        if not k:
            raise ctx.error(ParserTypeError, "pl.constexpr(...) condition is not a "
                                             "compile-time constant", node)
        return bool(v)
    return value


# ---------------------------------------------------------------- tile groups


def _group_method(ctx: ParseContext, m: BoundMethod, node: ast.Call) -> Any:
    if node.args or node.keywords:
        raise ctx.error(ParserTypeError, f"group.{m.name}() takes no arguments", node)
    if isinstance(m.obj, GroupChoice):
        from .containers import on_choice

        return on_choice(ctx, m.obj, lambda g: _group_access(ctx, g, m.name, node), node)
    return _group_access(ctx, m.obj, m.name, node)


def _group_access(ctx: ParseContext, group: Expr, name: str, node: ast.Call) -> Expr:
    t: TileGroupType = group.type
    slot = t.slot_type(None) if t.depth > 1 else t.slot_type(0)
    call = Call(f"tile_group.{name}", (group,), (), slot, ctx.span(node))
    return materialize(ctx, call, "tile") if name == "next" else call


# ---------------------------------------------------------------- dispatch table


def dispatch(ctx: ParseContext, op: str, qualname: str, node: ast.Call) -> Any:
    from . import ops_block, ops_misc, ops_system

    if ctx.section == "simt" and (op in ops_block.HANDLERS or opreg.block_op_for(op)):
        raise _block_op_in_simt(ctx, qualname, node)
    node, twice = bind_keywords(op, node)  # operands passed by their real names
    if twice is not None:
        raise ctx.error(ParserTypeError, f"{qualname}() got multiple values for argument "
                                         f"'{twice}'", node)
    outer, ctx.op_call = ctx.op_call, node  # its kwargs get the enum guard (eval_args)
    try:
        for table in (ops_block.HANDLERS, ops_system.HANDLERS, ops_misc.HANDLERS):
            handler = table.get(op)
            if handler is not None:
                return handler(ctx, node, op)
        if op.startswith("vf."):
            from .ops_vf import emit_vf

            return emit_vf(ctx, op, node)
        spec = opreg.block_op_for(op)
        if spec is not None:
            args, kwargs = eval_args(ctx, node)
            return emit_op(ctx, spec.name, args, kwargs, node)
    finally:
        ctx.op_call = outer
    raise ctx.error(UnsupportedFeatureError, f"'{qualname}' is not supported by this compiler",
                    node)

