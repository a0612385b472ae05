"""Statement handlers: Python statement AST → IR statements in the current builder.

Sections are projected here: a `with pl.section_cube():` body is parsed only for the cube target
(and skipped for the vector target), and the other way round. Compile-time `if`s are folded.
"""
from __future__ import annotations

import ast
import contextlib
import math
from collections.abc import Iterator
from typing import Any

from ...errors import (
    InvalidOperationError, ParserSyntaxError, ParserTypeError, PyptoError,
    UnsupportedFeatureError,
)
from ...ir.nodes import (
    BinaryExpr, BinOp, BreakStmt, Cast, ConstBool, ConstInt, ContinueStmt, Expr, ForStmt,
    GetField, IfStmt, ReturnStmt, SectionStmt, SetField, UnOp, WhileStmt, seq,
)
from ...ir.types import (
    INDEX, ArrayType, ScalarType, SectionKind, StructType, TensorType, TileGroupType, TileType,
)
from ..decl import Declaration
from .calls import emit_op, eval_condition, resolve_callee
from .containers import Merge, freeze, items_of, merge, snapshot
from .context import ParseContext, PyList, Unmerged, is_group
from .expr import binary, eval_expr, to_expr, try_const, unary
from .returns import is_result
from .values import array_index, attribute_of, linear_offset

_AUG = {ast.Add: BinOp.Add, ast.Sub: BinOp.Sub, ast.Mult: BinOp.Mul, ast.FloorDiv: BinOp.FloorDiv,
        ast.Mod: BinOp.FloorMod, ast.Div: BinOp.FloatDiv, ast.BitAnd: BinOp.BitAnd,
        ast.BitOr: BinOp.BitOr, ast.BitXor: BinOp.BitXor, ast.LShift: BinOp.Shl,
        ast.RShift: BinOp.Shr, ast.Pow: BinOp.Pow}


def parse_body(ctx: ParseContext, stmts: list[ast.stmt]) -> None:
    for s in stmts:
        parse_stmt(ctx, s)


def parse_stmt(ctx: ParseContext, node: ast.stmt) -> None:
    handler = _HANDLERS.get(type(node))
    if handler is None:
        raise ctx.error(UnsupportedFeatureError,
                        f"'{type(node).__name__}' statements are not supported in kernels", node)
    try:
        handler(ctx, node)
    except (PyptoError, RecursionError):
        raise
    except Exception as e:  # an internal failure: typed, at the innermost statement
        raise ctx.error(ParserSyntaxError, f"Failed to parse kernel function "
                                           f"'{ctx.kernel_name}': {type(e).__name__}: {e}",
                        node) from e


def _block(ctx: ParseContext, stmts: list[ast.stmt], span) -> Any:
    ctx.builder.push()
    parse_body(ctx, stmts)
    return ctx.builder.pop(span)


# ---------------------------------------------------------------- assignment


def _assign(ctx: ParseContext, node: ast.Assign | ast.AnnAssign) -> None:
    if isinstance(node, ast.AnnAssign):  # the real parser's checks; the annotation itself
        # is not read (the real one reads it only when it names a pl.MemRef)
        if not isinstance(node.target, ast.Name):
            raise ctx.error(ParserSyntaxError, "Only simple variable assignments supported",
                            node.target, hint="Use a simple variable name for assignment "
                                              "targets")
        if node.value is None:
            raise ctx.error(UnsupportedFeatureError, "Annotated assignment with no value is "
                                                     "not supported", node,
                            hint="Provide a value for the assignment")
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    outer, ctx.assign_target = ctx.assign_target, targets[0] if len(targets) == 1 else None
    try:  # the Reg API types some results by their target (ops_vf)
        value = eval_expr(ctx, node.value)
    finally:
        ctx.assign_target = outer
    if is_result(node):  # a helper's `return v`: the value as it is at the return
        value = freeze(ctx, value, ctx.span(node))
    for target in targets:
        assign_target(ctx, target, value, node)


def assign_target(ctx: ParseContext, target: ast.expr, value: Any, node: ast.AST) -> None:
    span = ctx.span(target)
    if isinstance(target, ast.Name):
        ctx.bind_value(target.id, value, span)
    elif isinstance(target, (ast.Tuple, ast.List)):
        items = value.items if isinstance(value, PyList) else value
        if not isinstance(items, (tuple, list)) or len(items) != len(target.elts):
            raise ctx.error(ParserTypeError, "cannot unpack this value into "
                                             f"{len(target.elts)} names", node)
        if len(items) > 1:  # Python evaluates the whole right side before assigning any name
            items = [snapshot(ctx, v, span) for v in items]
        for t, v in zip(target.elts, items):
            assign_target(ctx, t, v, node)
    elif isinstance(target, ast.Attribute):
        _assign_field(ctx, target, value, node)
    elif isinstance(target, ast.Subscript):
        _assign_subscript(ctx, target, value, node)
    else:
        raise ctx.error(UnsupportedFeatureError, "unsupported assignment target", node)


def _immutable(ctx: ParseContext, target: ast.expr, node: ast.AST) -> ParserSyntaxError:
    """A write into a `make_tuple` or a kernel tuple / list: they are immutable."""
    named = isinstance(target, ast.Attribute) or isinstance(getattr(target, "value", None),
                                                             ast.Attribute)
    what = "named tuple field" if named else "tuple element"
    return ctx.error(ParserSyntaxError, f"Cannot assign to immutable {what} "
                                        f"'{ast.unparse(target)}'", node,
                     hint="use pl.struct() or pl.struct_array() for mutable fields")


def _assign_field(ctx: ParseContext, target: ast.Attribute, value: Any, node: ast.AST) -> None:
    """`s.f = v` on a struct (or `arr[i].f = v` on a struct_array element); a list assigned to
    an array field writes it element by element."""
    base = eval_expr(ctx, target.value)
    if isinstance(base, PyList):
        raise _immutable(ctx, target, node)
    t = getattr(base, "type", None)
    if not isinstance(t, StructType):
        raise ctx.error(UnsupportedFeatureError, "only struct fields can be assigned "
                                                 "(s.field = value)", node)
    ft = t.field_type(target.attr)
    if ft is None:
        raise ctx.error(ParserTypeError, f"struct {t.name} has no field '{target.attr}'", node,
                        hint=f"fields: {', '.join(n for n, _ in t.fields)}")
    span = ctx.span(node)
    items = items_of(value)
    if isinstance(ft, ArrayType) and items is not None:
        if len(items) != ft.size:
            raise ctx.error(ParserSyntaxError, f"array field '{target.attr}' expects {ft.size} "
                                               f"elements, got {len(items)}", node)
        for j, v in enumerate(items):
            ctx.builder.emit(SetField(base, target.attr, ConstInt(j, span=span),
                                      _as_field(ctx, v, ft.elem, node), span))
        return
    ctx.builder.emit(SetField(base, target.attr, None, _as_field(ctx, value, ft, node), span))


def _as_field(ctx: ParseContext, value: Any, ft: Any, node: ast.AST) -> Expr:
    """`value` converted to the scalar field type it is stored in: the field is a C++ struct
    member typed by its initial value, so `s.n = 2.5` into an int field keeps 2."""
    e = to_expr(ctx, value, node)
    et = getattr(e, "type", None)
    if isinstance(ft, ScalarType) and isinstance(et, ScalarType) and et != ft and not (
            _widens(et.dtype, ft.dtype)):
        return Cast(e, ft, e.span)
    return e


def _widens(src: Any, dst: Any) -> bool:
    """Every value of integer dtype `src` is kept by `dst` (INT32 into an INDEX member)."""
    if not (src.is_int and dst.is_int):
        return False
    signed_src, signed_dst = src.kind != "uint", dst.kind != "uint"
    return dst.bits > src.bits and (signed_dst or not signed_src) or (
        dst.bits == src.bits and signed_src == signed_dst)


def _assign_subscript(ctx: ParseContext, target: ast.Subscript, value: Any,
                      node: ast.AST) -> None:
    base = _subscripted_field(ctx, target.value, node) if isinstance(
        target.value, ast.Attribute) else eval_expr(ctx, target.value)
    if items_of(base) is not None:
        raise _immutable(ctx, target, node)
    index = eval_expr(ctx, target.slice)
    t = getattr(base, "type", None)
    if isinstance(t, (TensorType, TileType)):
        emit_op(ctx, "block.setval", [base, linear_offset(ctx, base, index, node), value],
                {}, node)
        return
    if isinstance(t, ArrayType) and isinstance(base, GetField):  # s.arr[i] = v
        ctx.builder.emit(SetField(base.value, base.name, array_index(ctx, t, index, node),
                                  _as_field(ctx, value, t.elem, node), ctx.span(node)))
        return
    if isinstance(base, GetField):
        raise ctx.error(ParserTypeError, f"Cannot subscript struct field '{base.name}': field "
                                         f"is not an array", node)
    raise ctx.error(UnsupportedFeatureError, "this value cannot be assigned by index", node,
                    hint="element writes go to tiles, tensors and struct array fields "
                         "(s.arr[i] = v, arr[i].f = v); tuples are immutable")


def _subscripted_field(ctx: ParseContext, target: ast.Attribute, node: ast.AST) -> Any:
    """`x.f` of an element write `x.f[i] = v`: a struct without field f is a type error of
    the write (as the real parser words it), not an unknown attribute."""
    owner = eval_expr(ctx, target.value)
    t = getattr(owner, "type", None)
    if isinstance(t, StructType) and t.field_type(target.attr) is None:
        raise ctx.error(ParserTypeError, f"Struct has no field '{target.attr}'", node,
                        hint=f"fields of {t.name}: {', '.join(n for n, _ in t.fields)}")
    return attribute_of(ctx, owner, target.attr, target)


def _augassign(ctx: ParseContext, node: ast.AugAssign) -> None:
    op = _AUG.get(type(node.op))
    if op is None:
        raise ctx.error(UnsupportedFeatureError, "augmented operator not supported", node)
    current = eval_expr(ctx, node.target)
    assign_target(ctx, node.target, binary(ctx, op, current, eval_expr(ctx, node.value), node),
                  node)


def _expr(ctx: ParseContext, node: ast.Expr) -> None:
    if isinstance(node.value, ast.Constant):
        return  # docstrings and stray constants
    value = eval_expr(ctx, node.value)
    if isinstance(value, Expr) and not isinstance(value.type, (TileType, TensorType)):
        from ...ir.nodes import Call, EvalStmt

        if isinstance(value, Call):  # a value-returning op used for its effect
            ctx.builder.emit(EvalStmt(value, ctx.span(node)))


# ---------------------------------------------------------------- control flow


def _if(ctx: ParseContext, node: ast.If) -> None:
    cond = eval_condition(ctx, node.test)
    known, c = try_const(cond)
    if known:
        parse_body(ctx, node.body if c else node.orelse)
        return
    if isinstance(getattr(cond, "type", None), (TileType, TensorType)):
        raise ctx.error(ParserTypeError, "an if condition must be a scalar", node.test)
    span = ctx.span(node)
    scope = ctx.frame.scope
    before = dict(scope)
    then = _branch(ctx, node.body)
    after_then = dict(scope)
    scope.clear()  # the else branch starts from the names bound before the if
    scope.update(before)
    other = _branch(ctx, node.orelse)
    _merge_branches(ctx, scope, after_then, node.lineno, then, other, span)
    ctx.builder.emit(IfStmt(to_expr(ctx, cond, node.test), seq(then, span),
                            seq(other, span) if other else None, (), span))


def _branch(ctx: ParseContext, stmts: list[ast.stmt]) -> list:
    ctx.builder.push()
    parse_body(ctx, stmts)
    return ctx.builder.stack.pop()


def _merge_branches(ctx: ParseContext, scope: dict[str, Any], after_then: dict[str, Any],
                    if_line: int, then: list, other: list, span) -> None:
    """`scope` (as the else branch left it) after the if. A mutable name keeps one Var on both
    branches; other values the branches bound differently are joined (`containers.merge`:
    each branch ends by assigning the joined variables), or, where they cannot be (tiles of
    other shapes), the name has no value after the if, only an error when read."""
    for name, then_value in after_then.items():
        else_value = scope.get(name, then_value)
        if else_value is then_value:
            scope[name] = then_value  # bound on the then branch only: kept, as in Python
            continue
        joined = Merge()
        try:
            scope[name] = merge(ctx, then_value, else_value, span, joined)
        except ParserTypeError:
            ty = getattr(then_value, "type", None) or getattr(else_value, "type", None)
            what = ("tiles" if isinstance(ty, TileType) else
                    "tile groups" if isinstance(ty, TileGroupType) else "values")
            scope[name] = Unmerged(what, f"the branches of the if at line {if_line}")
            continue
        then.extend(joined.then_stmts)
        other.extend(joined.else_stmts)


_RANGE_FORMS = "Use: pl.range(stop), pl.range(start, stop), or pl.range(start, stop, step)"


def _range_args(ctx: ParseContext, node: ast.For) -> tuple[Any, Any, Any]:
    it = node.iter
    callee = resolve_callee(ctx, it.func) if isinstance(it, ast.Call) else None
    if not (isinstance(callee, Declaration) and callee.op == "range"):
        raise ctx.error(ParserSyntaxError, "For loop must use pl.range()", it,
                        hint="write 'for i in pl.range(n):' (runtime bounds are allowed)")
    # the real parser's words (_control_flow_parser._parse_range_call)
    if it.keywords:
        raise ctx.error(ParserSyntaxError, "pl.range() does not support keyword arguments", it,
                        hint=_RANGE_FORMS)
    if not it.args:
        raise ctx.error(ParserSyntaxError, "pl.range() requires at least 1 argument (stop)", it,
                        hint=_RANGE_FORMS)
    args = [eval_expr(ctx, a) for a in it.args]
    if len(args) > 3:
        raise ctx.error(ParserSyntaxError, "pl.range() takes at most 3 arguments", it,
                        hint=_RANGE_FORMS)
    stop_at = 0 if len(args) == 1 else 1
    args[stop_at] = _integral_stop(ctx, args[stop_at], it)
    for a in args:
        t = getattr(a, "type", None)
        known, c = try_const(a)
        if known and (isinstance(c, int) and not isinstance(c, bool)):
            continue
        if known or not (isinstance(t, ScalarType) and t.dtype.is_int):
            raise ctx.error(ParserTypeError, "pl.range bounds must be integers", it)
    if len(args) == 1:
        return 0, args[0], 1
    return args[0], args[1], args[2] if len(args) == 3 else 1


def _integral_stop(ctx: ParseContext, stop: Any, node: ast.AST) -> Any:
    """A float stop (`x.shape[0] / TILE_M`, as the docs write it) as the integer bound with the
    same iterations: the real loop is `for (uint64_t i = start; i < stop; ...)`, and an
    integer i is below s exactly when it is below ceil(s). A run-time `a / b` of integers by a
    positive constant b is `(a + b - 1) // b`; another run-time float bound is refused."""
    known, value = try_const(stop)
    if known:
        return math.ceil(value) if isinstance(value, float) else stop
    t = getattr(stop, "type", None)
    if not (isinstance(t, ScalarType) and t.dtype.is_float):
        return stop
    num = den = None
    if isinstance(stop, BinaryExpr) and stop.op is BinOp.FloatDiv:
        num, den = _int_operand(stop.lhs), _int_operand(stop.rhs)
    k, d = try_const(den)
    if num is None or not (k and isinstance(d, int) and d > 0):
        raise ctx.error(UnsupportedFeatureError, "a run-time float pl.range bound", node,
                        hint="write an integer bound, e.g. (n + t - 1) // t instead of n / t")
    return binary(ctx, BinOp.FloorDiv, binary(ctx, BinOp.Add, num, d - 1, node), d, node)


def _int_operand(e: Any) -> Any:
    """`e` without the float conversion the division put on it, if it is an integer."""
    if isinstance(e, Cast):
        e = e.operand
    t = getattr(e, "type", None)
    return e if isinstance(t, ScalarType) and t.dtype.is_int else None


def _for(ctx: ParseContext, node: ast.For) -> None:
    if node.orelse:
        raise ctx.error(UnsupportedFeatureError, "for-else is not supported", node)
    if not isinstance(node.target, ast.Name):
        raise ctx.error(ParserSyntaxError, "For loop target must be a simple name", node.target,
                        hint="Use: for i in pl.range(n)")
    start, stop, step = _range_args(ctx, node)
    k, step_value = try_const(step)
    if k and step_value == 0:
        raise ctx.error(InvalidOperationError, "pl.range step must not be zero", node.iter)
    span = ctx.span(node)
    loop_var = ctx.new_var(node.target.id, INDEX, ctx.span(node.target))
    frame = ctx.frame
    frame.scope[node.target.id] = loop_var
    frame.vars.pop(node.target.id, None)
    with _loop(ctx, node):
        body = _block(ctx, node.body, span)
    ctx.builder.emit(ForStmt(loop_var, to_expr(ctx, start, node), to_expr(ctx, stop, node),
                             to_expr(ctx, step, node), body, span=span))


def _while(ctx: ParseContext, node: ast.While) -> None:
    if node.orelse:
        raise ctx.error(UnsupportedFeatureError, "while-else is not supported", node)
    span = ctx.span(node)
    with _loop(ctx, node):
        ctx.builder.push()
        cond = eval_expr(ctx, node.test)
        cond_stmts = ctx.builder.pop(span)
        known, c = try_const(cond)
        if known and not c:
            return
        body = _block(ctx, node.body, span)
    if known or not getattr(cond_stmts, "stmts", ()):
        test = ConstBool(True, span) if known else to_expr(ctx, cond, node.test)
        ctx.builder.emit(WhileStmt(test, body, span=span))
        return
    # the condition needs statements (e.g. a getval): re-evaluate them every iteration
    exit_if = IfStmt(to_expr(ctx, unary(ctx, UnOp.Not, cond, node.test), node.test),
                     BreakStmt(span), None, (), span)
    ctx.builder.emit(WhileStmt(ConstBool(True, span), seq([cond_stmts, exit_if, body], span),
                               span=span))


@contextlib.contextmanager
def _loop(ctx: ParseContext, node: ast.For | ast.While) -> Iterator[None]:
    """Parse a loop body once for all its iterations. A name the body re-binds to another
    compile-time value (a tile group, a tuple, a tile of another kind) after reading the old
    one would need that value carried from one iteration to the next: refused. After the loop
    such a name has no single value (the loop may run no iteration)."""
    frame = ctx.frame
    before = dict(frame.scope)
    frame.loop_depth += 1
    frame.loop_reads.append({})
    try:
        yield
    finally:
        frame.loop_depth -= 1
        reads = frame.loop_reads.pop()
    for name, old in before.items():
        new = frame.scope.get(name, old)
        if new is old:
            continue
        if id(old) in reads.get(name, ()):
            raise ctx.error(UnsupportedFeatureError, f"'{name}' is re-bound inside the loop at "
                                                     f"line {node.lineno} after the loop read "
                                                     f"it: the next iteration would need the "
                                                     f"new value, and {_kind(new)} cannot be "
                                                     f"carried from one iteration to the next",
                            node, hint="choose the value from the iteration count instead, "
                                       "e.g. pair[i % 2]")
        frame.scope[name] = Unmerged(_kind(new), f"the loop at line {node.lineno}",
                                     "bind it before the loop, or use it only inside the loop")


def _kind(value: Any) -> str:
    if isinstance(value, Unmerged):
        return value.what
    t = getattr(value, "type", None)
    return ("tiles" if isinstance(t, TileType) else
            "tile groups" if is_group(value) else
            "tuples" if isinstance(value, PyList) else "values")


def _break(ctx: ParseContext, node: ast.Break) -> None:
    if ctx.frame.loop_depth == 0:
        raise ctx.error(ParserSyntaxError, "'break' outside a loop", node)
    ctx.builder.emit(BreakStmt(ctx.span(node)))


def _continue(ctx: ParseContext, node: ast.Continue) -> None:
    if ctx.frame.loop_depth == 0:
        raise ctx.error(ParserSyntaxError, "'continue' outside a loop", node)
    ctx.builder.emit(ContinueStmt(ctx.span(node)))


def _return(ctx: ParseContext, node: ast.Return) -> None:
    frame = ctx.frame
    if frame.in_helper:  # the helper's other returns were rewritten before parsing
        raise ctx.error(UnsupportedFeatureError, "return inside a 'with' section of an "
                                                 "inlined helper", node,
                        hint="return after the section, or call the helper inside it")
    if frame.simt is not None:
        from .simt import simt_return

        simt_return(ctx, node)
        return
    if node.value is not None:
        value = eval_expr(ctx, node.value)
        if value is not None:
            raise ctx.error(ParserSyntaxError, "@pl.jit/@pl.kernel only supports bare return or "
                                               "return None; returning values is not "
                                               "supported.", node,
                            hint="write results to an output tensor (kernels have a void ABI)")
    ctx.builder.emit(ReturnStmt(span=ctx.span(node)))


_SECTIONS = {"section_cube": ("cube", SectionKind.Cube),
             "section_vector": ("vector", SectionKind.Vector)}


def _with(ctx: ParseContext, node: ast.With) -> None:
    if len(node.items) != 1:
        raise ctx.error(ParserSyntaxError, "only one context manager per 'with' in kernels",
                        node)
    item = node.items[0]
    expr = item.context_expr
    callee = resolve_callee(ctx, expr.func) if isinstance(expr, ast.Call) else None
    section = _SECTIONS.get(getattr(callee, "op", None))
    if section is None:
        raise ctx.error(UnsupportedFeatureError, "unsupported 'with': only "
                                                 "pl.section_cube() / pl.section_vector()", node)
    if item.optional_vars is not None or expr.args or expr.keywords:
        raise ctx.error(ParserSyntaxError, "write 'with pl.section_cube():' without arguments",
                        node)
    if ctx.section is not None:
        raise ctx.error(InvalidOperationError, f"sections cannot be nested (already in the "
                                               f"{ctx.section} section)", node)
    target, kind = section
    ctx.matched_sections.add(target)
    if target != ctx.target:
        return
    ctx.section = target
    try:
        body = _block(ctx, node.body, ctx.span(node))
    finally:
        ctx.section = None
    ctx.builder.emit(SectionStmt(kind, body, span=ctx.span(node)))


def _pass(ctx: ParseContext, node: ast.Pass) -> None:
    return


def _assert(ctx: ParseContext, node: ast.Assert) -> None:
    known, c = try_const(eval_expr(ctx, node.test))
    if not known:
        raise ctx.error(ParserSyntaxError, "Python 'assert' in a kernel needs a compile-time "
                                           "condition; use pl.pto_assert for runtime checks",
                        node)
    if not c:
        msg = try_const(eval_expr(ctx, node.msg))[1] if node.msg is not None else None
        raise ctx.error(InvalidOperationError, f"compile-time assertion failed"
                                               f"{': ' + str(msg) if msg else ''}", node)


def _nested_def(ctx: ParseContext, node: ast.AST) -> None:
    raise ctx.error(UnsupportedFeatureError, "define helper functions outside the kernel",
                    node)


_HANDLERS = {
    ast.Assign: _assign, ast.AnnAssign: _assign, ast.AugAssign: _augassign, ast.Expr: _expr,
    ast.If: _if, ast.For: _for, ast.While: _while, ast.Break: _break, ast.Continue: _continue,
    ast.Return: _return, ast.With: _with, ast.Pass: _pass, ast.Assert: _assert,
    ast.FunctionDef: _nested_def, ast.ClassDef: _nested_def,
}
