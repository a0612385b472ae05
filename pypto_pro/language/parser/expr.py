"""Expression handlers: Python expression AST → parse-time values (constants or IR expressions).

Compile-time operands fold in Python (Python semantics and promotion, as the real parser folds
them); runtime operands build IR `BinaryExpr`s typed by `promote_scalar`, whose `//` and `%`
mean what the real generated C++ computes (`ir/scalar_semantics.py`). Calls are delegated to
`calls.py`.
"""
from __future__ import annotations

import ast
import enum
import operator
from typing import Any

from ...errors import (
    ParserSyntaxError, ParserTypeError, PyptoError,
    UnsupportedFeatureError,
)
from ...ir.dtype import DataType, promote_scalar
from ...ir.nodes import (
    BinaryExpr, BinOp, ConstBool, ConstFloat, ConstInt, Expr, IfStmt, MakeTuple,
    Select, UnaryExpr, UnOp, const, seq,
)
from ...ir.types import (
    BOOL, INDEX, PtrType, ScalarType, TensorType, TileType,
    TupleType,
)
from .context import ParseContext, PyList, is_group

_BINOPS = {
    ast.Add: BinOp.Add, ast.Sub: BinOp.Sub, ast.Mult: BinOp.Mul, ast.FloorDiv: BinOp.FloorDiv,
    ast.Mod: BinOp.FloorMod, ast.Div: BinOp.FloatDiv, ast.Pow: BinOp.Pow,
    ast.BitAnd: BinOp.BitAnd, ast.BitOr: BinOp.BitOr, ast.BitXor: BinOp.BitXor,
    ast.LShift: BinOp.Shl, ast.RShift: BinOp.Shr,
}
_CMPOPS = {ast.Eq: BinOp.Eq, ast.NotEq: BinOp.Ne, ast.Lt: BinOp.Lt, ast.LtE: BinOp.Le,
           ast.Gt: BinOp.Gt, ast.GtE: BinOp.Ge}
_PYFUNC = {
    BinOp.Add: operator.add, BinOp.Sub: operator.sub, BinOp.Mul: operator.mul,
    BinOp.FloorDiv: operator.floordiv, BinOp.FloorMod: operator.mod,
    BinOp.FloatDiv: operator.truediv, BinOp.Pow: operator.pow, BinOp.BitAnd: operator.and_,
    BinOp.BitOr: operator.or_, BinOp.BitXor: operator.xor, BinOp.Shl: operator.lshift,
    BinOp.Shr: operator.rshift, BinOp.Eq: operator.eq, BinOp.Ne: operator.ne,
    BinOp.Lt: operator.lt, BinOp.Le: operator.le, BinOp.Gt: operator.gt, BinOp.Ge: operator.ge,
    BinOp.Min: min, BinOp.Max: max,
    BinOp.And: lambda a, b: bool(a and b), BinOp.Or: lambda a, b: bool(a or b),
}


# ---------------------------------------------------------------- value kinds


def is_const(v: Any) -> bool:
    """A compile-time Python value (anything that is not an IR expression or a PyList)."""
    return not isinstance(v, (Expr, PyList))


def const_value(v: Any) -> Any:
    """The Python value of a constant, unwrapping IR constants; raises KeyError otherwise."""
    if isinstance(v, (ConstInt, ConstFloat, ConstBool)):
        return v.value
    if is_const(v):
        return v
    raise KeyError


def try_const(v: Any) -> tuple[bool, Any]:
    try:
        return True, const_value(v)
    except KeyError:
        return False, None


def to_expr(ctx: ParseContext, v: Any, node: ast.AST) -> Expr:
    """A parse-time value as an IR expression (Python scalars become constants)."""
    if isinstance(v, Expr):
        return v
    span = ctx.span(node)
    if isinstance(v, (bool, int, float, str, enum.Enum)):
        return const(v, span)
    if isinstance(v, PyList) or isinstance(v, (tuple, list)):
        items = v.items if isinstance(v, PyList) else list(v)
        elems = tuple(to_expr(ctx, x, node) for x in items)
        return MakeTuple(elems, TupleType(tuple(e.type for e in elems)), span)
    if isinstance(v, DataType):
        return const(v, span)
    raise ctx.error(ParserTypeError, f"cannot use {v!r} as a runtime value here", node)


def scalar_type(v: Any) -> ScalarType | None:
    if isinstance(v, bool):
        return BOOL
    if isinstance(v, int):
        return INDEX
    if isinstance(v, float):
        return ScalarType(DataType.FP32)
    t = getattr(v, "type", None)
    return t if isinstance(t, ScalarType) else None


# ---------------------------------------------------------------- arithmetic


def binary(ctx: ParseContext, op: BinOp, a: Any, b: Any, node: ast.AST) -> Any:
    ka, va = try_const(a)
    kb, vb = try_const(b)
    if ka and kb and not (isinstance(va, (int, float, bool)) and isinstance(vb, (int, float,
                                                                                 bool))):
        return _fold_objects(ctx, op, va, vb, node)
    if op in _BITWISE and any(type(v) is float for v in (va, vb)):
        raise _not_integral(ctx, _BITWISE[op], va if type(va) is float else vb, node)
    if ka and kb:
        _check_huge(ctx, op, va, vb, node)
        try:
            return _PYFUNC[op](va, vb)
        except ZeroDivisionError:
            pass  # not folded, as in the real parser: the division happens (and fails) at run
            # time, in the generated C++ (a float division gives ±inf)
        except (TypeError, ValueError, OverflowError) as e:
            raise ctx.error(ParserTypeError, f"operator '{op.value}' cannot be applied to "
                                             f"{va!r} and {vb!r}: {e}", node) from None
    if op is BinOp.Pow:  # folded above on constants; the real IR has no runtime power
        raise ctx.error(UnsupportedFeatureError, "Unsupported binary operator: Pow (on a "
                                                 "runtime value)", node,
                        hint="use +, -, *, /, //, %, &, |, ^, <<, >>; multiply for a small "
                             "constant power")
    if isinstance(getattr(a, "type", None), PtrType):
        return _pointer_arith(ctx, op, a, b, node)
    if op is BinOp.Add and isinstance(getattr(a, "type", None), TileType) and \
            ctx.section != "vf":  # (a VF op operand `tile + k` is an offset: ops_vf)
        raise ctx.error(ParserSyntaxError, "Tile + offset is not supported outside VF section; "
                                           "use tile[i:i+h, j:j+w] slice syntax for sub-view",
                        node, hint="replace `tile + offset` with `tile[row:row+h, :]`")
    ta, tb = scalar_type(a), scalar_type(b)
    if ta is None or tb is None:
        bad = a if ta is None else b
        raise ctx.error(ParserTypeError,
                        f"operator '{op.value}' needs scalar operands, got {_describe(bad)}", node,
                        hint="tile arithmetic is written with pl.add/pl.mul/... (out first)")
    if op in _BITWISE and (ta.dtype.is_float or tb.dtype.is_float):
        raise _not_integral(ctx, _BITWISE[op], a if ta.dtype.is_float else b, node)
    if op.is_compare or op.is_logical:
        rtype = BOOL
    elif op is BinOp.FloatDiv:
        rtype = ScalarType(promote_scalar(promote_scalar(ta.dtype, tb.dtype), DataType.FP32))
    else:
        rtype = ScalarType(promote_scalar(ta.dtype, tb.dtype))
    if op is BinOp.FloorMod and rtype.dtype.is_float:
        raise ctx.error(UnsupportedFeatureError, "'%' on a run-time float scalar: the real "
                        "toolchain emits C++ '%', which floats do not have", node,
                        hint="compute a - b * x with x an integer quotient, or fold it on the "
                             "host")
    return BinaryExpr(op, to_expr(ctx, a, node), to_expr(ctx, b, node), rtype, ctx.span(node))


def _pointer_arith(ctx: ParseContext, op: BinOp, ptr: Any, offset: Any, node: ast.AST) -> Any:
    """`ptr + n` is `pl.addptr(ptr, n)` (as in the real frontend); no other operator on a
    pointer has a meaning."""
    if op is not BinOp.Add:
        raise ctx.error(UnsupportedFeatureError, f"operator '{op.value}' on a pointer (pl.Ptr)",
                        node, hint="only 'ptr + offset' (= pl.addptr(ptr, offset)) is supported")
    from .ops_misc import offset_pointer  # ops_misc builds on this module

    return offset_pointer(ctx, ptr, offset, node)


def _fold_objects(ctx: ParseContext, op: BinOp, va: Any, vb: Any, node: ast.AST) -> Any:
    """An operator on compile-time values that are not numbers (dtypes, enums, strings,
    tuples): `==` / `!=` compare them, as the real parser folds `dtype == pl.DT_FP16`;
    ordering an enum is refused; anything else is Python's own operator, if it has one."""
    if op in (BinOp.Eq, BinOp.Ne):
        return (va == vb) == (op is BinOp.Eq)
    if isinstance(va, (DataType, enum.Enum)) or isinstance(vb, (DataType, enum.Enum)):
        raise ctx.error(UnsupportedFeatureError, f"operator '{op.value}' on enum values: Only "
                                                 f"== and != are supported for enum "
                                                 f"comparisons", node)
    try:
        return _PYFUNC[op](va, vb)
    except (TypeError, ValueError, KeyError) as e:
        raise ctx.error(ParserTypeError, f"operator '{op.value}' cannot be applied to {va!r} "
                                         f"and {vb!r}: {e}", node) from None


def _check_huge(ctx: ParseContext, op: BinOp, va: Any, vb: Any, node: ast.AST) -> None:
    """Refuse to fold `a ** b` / `a << b` whose integer result is far beyond 64 bits (Python
    would compute it, slowly, before any range check could see it)."""
    import math

    if not (isinstance(va, int) and isinstance(vb, int)):
        return
    bits = 0.0
    if op is BinOp.Pow and vb > 0 and abs(va) > 1:
        bits = vb * math.log2(abs(va))
    elif op is BinOp.Shl and va != 0:
        bits = vb + abs(va).bit_length()
    if bits > 256:
        from ...errors import OutOfRange

        raise ctx.error(OutOfRange, f"constant expression overflows: {va} {op.value} {vb}",
                        node)


def unary(ctx: ParseContext, op: UnOp, a: Any, node: ast.AST) -> Any:
    k, v = try_const(a)
    if k and op is UnOp.Not:
        return not v  # any compile-time value has a truth value
    if op is UnOp.BitNot and (type(v) is float if k else getattr(
            scalar_type(a), "dtype", DataType.INDEX).is_float):
        raise _not_integral(ctx, "bit_not", a, node)
    if k and isinstance(v, (int, float, bool)):
        try:
            return {UnOp.Neg: operator.neg, UnOp.Not: operator.not_,
                    UnOp.BitNot: operator.invert, UnOp.Abs: abs}[op](v)
        except TypeError as e:
            raise ctx.error(ParserTypeError, f"operator '{op.value}' cannot be applied to "
                                             f"{v!r}: {e}", node) from None
    t = scalar_type(a)
    if t is None:
        raise ctx.error(ParserTypeError, f"operator '{op.value}' needs a scalar, got "
                                         f"{_describe(a)}", node)
    return UnaryExpr(op, to_expr(ctx, a, node), BOOL if op is UnOp.Not else t, ctx.span(node))


#: the bitwise operators, by the real IR builder's names (they take integer dtypes only)
_BITWISE = {BinOp.BitAnd: "bit_and", BinOp.BitOr: "bit_or", BinOp.BitXor: "bit_xor",
            BinOp.Shl: "bit_shift_left", BinOp.Shr: "bit_shift_right"}


def _not_integral(ctx: ParseContext, name: str, operand: Any, node: ast.AST) -> PyptoError:
    """`~` / `&` / `|` / `^` / `<<` / `>>` on a float (C++ has no such operator on floats)."""
    return ctx.error(ParserTypeError, f"{name} needs operands of an integer dtype, got "
                                      f"{_describe(operand)}", node)


def _describe(v: Any) -> str:
    t = getattr(v, "type", None)
    if isinstance(t, TileType):
        return f"a tile {list(t.shape)} {t.dtype}"
    if isinstance(t, TensorType):
        return "a tensor"
    if isinstance(t, ScalarType):
        return f"a {t.dtype.value} scalar"
    return repr(v) if is_const(v) else type(v).__name__


# ---------------------------------------------------------------- the evaluator


def eval_expr(ctx: ParseContext, node: ast.expr) -> Any:
    method = _HANDLERS.get(type(node))
    if method is None:
        raise ctx.error(UnsupportedFeatureError,
                        f"'{type(node).__name__}' expressions are not supported in kernels", node)
    return method(ctx, node)


def _name(ctx: ParseContext, node: ast.Name) -> Any:
    return ctx.lookup(node.id, ctx.span(node))


def _constant(ctx: ParseContext, node: ast.Constant) -> Any:
    return node.value


def _binop(ctx: ParseContext, node: ast.BinOp) -> Any:
    op = _BINOPS.get(type(node.op))
    if op is None:
        raise ctx.error(UnsupportedFeatureError, "operator not supported in kernels", node)
    return binary(ctx, op, eval_expr(ctx, node.left), eval_expr(ctx, node.right), node)


def _unaryop(ctx: ParseContext, node: ast.UnaryOp) -> Any:
    operand = eval_expr(ctx, node.operand)
    if isinstance(node.op, ast.UAdd):
        return operand
    op = {ast.USub: UnOp.Neg, ast.Not: UnOp.Not, ast.Invert: UnOp.BitNot}[type(node.op)]
    return unary(ctx, op, operand, node)


def _boolop(ctx: ParseContext, node: ast.BoolOp) -> Any:
    """`and` / `or`: a constant left side short-circuits (the rest is never parsed). On numbers
    the result is a bool, as the real frontend folds it (`2 and 0` is False, `0 or 3` True, `2
    and n` the runtime truth of n); other compile-time values keep Python's own result."""
    op = BinOp.And if isinstance(node.op, ast.And) else BinOp.Or
    result = eval_expr(ctx, node.values[0])
    for v in node.values[1:]:
        k, c = try_const(result)
        if k and not isinstance(c, (bool, int, float)):
            if (op is BinOp.And and not c) or (op is BinOp.Or and c):
                return c
            result = eval_expr(ctx, v)
            continue
        if k and (op is BinOp.And) != bool(c):
            return bool(c)
        right = eval_expr(ctx, v)
        kr, cr = try_const(right)
        if k and kr and not isinstance(cr, (bool, int, float)):
            result = right  # `FLAG and pl.DT_BF16`: Python's own result, an object
            continue
        result = binary(ctx, op, bool(c) if k else result, right, node)
    return result


def _compare(ctx: ParseContext, node: ast.Compare) -> Any:
    if len(node.ops) != 1:  # the real parser takes one operator per comparison
        raise ctx.error(ParserSyntaxError, "Only simple comparisons supported: a chained "
                                           "comparison is not", node,
                        hint="write 'a < b and b < c' instead of 'a < b < c'")
    op_node, left_node, right_node = node.ops[0], node.left, node.comparators[0]
    left = eval_expr(ctx, left_node)
    if isinstance(op_node, (ast.Is, ast.IsNot)):
        right = None if _is_none_literal(right_node) else eval_expr(ctx, right_node)
        return _identity(ctx, left_node, left, right_node, right,
                         isinstance(op_node, ast.IsNot), node)
    if isinstance(op_node, (ast.In, ast.NotIn)):
        part = _membership(ctx, left, right_node, node)
        return unary(ctx, UnOp.Not, part, node) if isinstance(op_node, ast.NotIn) else part
    return binary(ctx, _CMPOPS[type(op_node)], left, eval_expr(ctx, right_node), node)


def _is_none_literal(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _identity(ctx: ParseContext, left_node: ast.expr, left: Any, right_node: ast.expr,
              right: Any, negated: bool, node: ast.AST) -> Any:
    """`a is b` / `a is not b` as the real frontend reads it: `name is None` on a `pl.Ptr` is
    a runtime null test (a pointer argument passed as None is a null pointer). Anything else
    is Python's `is` on values known while parsing (closure values, kernel-local constants,
    dtypes) and an error on a runtime value: a tile, scalar or tensor, or a name bound to the
    literal None in kernel code (a helper's `x=None` default; the real parser binds that to an
    IR none, so `x is None` on it is a type error there too)."""
    if _is_none_literal(right_node):
        if not isinstance(left_node, ast.Name):
            raise ctx.error(ParserSyntaxError, "'is None' is only supported on a plain "
                                               "variable name", node,
                            hint="null-check the pl.Ptr parameter itself: 'p is None'")
        if isinstance(getattr(left, "type", None), PtrType):
            from .calls import emit_op

            null = emit_op(ctx, "ptr.is_null", [left], {}, node, result_type=BOOL,
                           check_tiles=False)
            return unary(ctx, UnOp.Not, null, node) if negated else null
        if not _runtime_names(ctx, left_node):
            return (left is None) != negated
        hint = ("a pl.Tensor is never None: declare an optional input as pl.Ptr[dtype]"
                if isinstance(getattr(left, "type", None), TensorType) else
                "'is None' is a null test of a pl.Ptr; choose among compile-time values with "
                "a constant (e.g. a default of 0) and ==")
        raise ctx.error(ParserTypeError, f"'{left_node.id} is None': 'is None' / 'is not "
                                         f"None' is only supported on pl.Ptr parameters", node,
                        hint=hint)
    runtime = _runtime_names(ctx, left_node) + _runtime_names(ctx, right_node) + [
        ast.unparse(n) for n, v in ((left_node, left), (right_node, right))
        if v is not None and not _parse_time(v)]
    if runtime:
        raise ctx.error(ParserTypeError, f"'is' / 'is not' only supported with None: "
                                         f"'{runtime[0]}' is a runtime value", node,
                        hint="use == for value comparison, or 'p is None' for a pointer "
                             "null check")
    return (left is right) != negated


def _runtime_names(ctx: ParseContext, node: ast.expr) -> list[str]:
    """The kernel-local names in `node` whose value exists only at run time (for `is`)."""
    scope = ctx.frame.scope
    found = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and sub.id in scope and not _parse_time(scope[sub.id]):
            found.append(sub.id)
    return found


def _parse_time(v: Any) -> bool:
    """A kernel-local value known while parsing: a Python object other than None, an IR
    constant, or a tuple of such (the real parser's const / parse-time bindings)."""
    if v is None or is_group(v):
        return False
    if isinstance(v, (ConstInt, ConstFloat, ConstBool)):
        return True
    if isinstance(v, PyList):
        return all(x is not None and _parse_time(x) for x in v.items)
    return is_const(v)


def _membership(ctx: ParseContext, left: Any, right_node: ast.expr, node: ast.AST) -> Any:
    """`x in (a, b)` → x == a or x == b; `x in pl.range(...)` → bounds and stride check."""
    if isinstance(right_node, ast.Call):
        from .calls import resolve_callee

        callee = resolve_callee(ctx, right_node.func)
        if getattr(callee, "op", None) == "range":
            args = [eval_expr(ctx, a) for a in right_node.args]
            start, stop, step = (0, args[0], 1) if len(args) == 1 else (
                args[0], args[1], args[2] if len(args) > 2 else 1)
            inside = binary(ctx, BinOp.And, binary(ctx, BinOp.Ge, left, start, node),
                            binary(ctx, BinOp.Lt, left, stop, node), node)
            on_stride = binary(ctx, BinOp.Eq, binary(
                ctx, BinOp.FloorMod, binary(ctx, BinOp.Sub, left, start, node), step, node), 0,
                node)
            return binary(ctx, BinOp.And, inside, on_stride, node)
    right = eval_expr(ctx, right_node)
    items = right.items if isinstance(right, PyList) else right
    if not isinstance(items, (tuple, list)):
        raise ctx.error(UnsupportedFeatureError, "'in' needs a tuple, list or pl.range", node)
    result: Any = False
    for item in items:
        result = binary(ctx, BinOp.Or, result, binary(ctx, BinOp.Eq, left, item, node), node)
    return result


def _ifexp(ctx: ParseContext, node: ast.IfExp) -> Any:
    from .calls import eval_condition

    cond = eval_condition(ctx, node.test)
    k, c = try_const(cond)
    if k:
        return eval_expr(ctx, node.body if c else node.orelse)
    ctx.builder.push()
    a = eval_expr(ctx, node.body)
    then = ctx.builder.stack.pop()
    ctx.builder.push()
    b = eval_expr(ctx, node.orelse)
    other = ctx.builder.stack.pop()
    if not then and not other and _selectable(a) and _selectable(b):
        return select(ctx, cond, a, b, node)
    # a branch with effects (g.next()) runs only when chosen; tuples and tile groups join
    from .containers import Merge, merge

    span = ctx.span(node)
    joined = Merge()
    try:
        value = merge(ctx, a, b, span, joined)
    except ParserTypeError as e:
        raise ctx.error(ParserTypeError, f"ternary branches cannot be joined: {e.message}",
                        node) from None
    ctx.builder.emit(IfStmt(to_expr(ctx, cond, node.test), seq(then + joined.then_stmts, span),
                            seq(other + joined.else_stmts, span), (), span))
    return value


def _selectable(v: Any) -> bool:
    """A value a `Select` can choose: not a tile group or a tuple (those join as containers)."""
    return not is_group(v) and not isinstance(v, (PyList, tuple, list))


def select(ctx: ParseContext, cond: Any, a: Any, b: Any, node: ast.AST) -> Any:
    """A runtime choice between two values (scalars or tiles of the same type)."""
    ea, eb = to_expr(ctx, a, node), to_expr(ctx, b, node)
    ta, tb = ea.type, eb.type
    if isinstance(ta, TileType) and isinstance(tb, TileType):
        if (ta.shape, ta.dtype, ta.memory) != (tb.shape, tb.dtype, tb.memory):
            raise ctx.error(ParserTypeError, "both sides of a tile ternary must have the same "
                                             "shape, dtype and memory space", node)
        from dataclasses import replace

        rtype = replace(ta, addr=None, slot_addrs=tuple(dict.fromkeys(
            ta.addresses + tb.addresses)))
    elif isinstance(ta, ScalarType) and isinstance(tb, ScalarType):
        rtype = ScalarType(promote_scalar(ta.dtype, tb.dtype))
    elif ta == tb:
        rtype = ta
    else:
        raise ctx.error(ParserTypeError, f"ternary branches differ in kind: {_describe(a)} vs "
                                         f"{_describe(b)}", node)
    return Select(to_expr(ctx, cond, node), ea, eb, rtype, ctx.span(node))


def _tuple(ctx: ParseContext, node: ast.Tuple | ast.List) -> Any:
    items = [eval_expr(ctx, e) for e in node.elts]
    if all(is_const(i) for i in items):
        return tuple(items) if isinstance(node, ast.Tuple) else list(items)
    return PyList(items)


def _dict(ctx: ParseContext, node: ast.Dict) -> Any:
    """A dict display is refused as the real parser refuses it: it has no IR form, so the real
    parser retries it as Python, which only succeeds when every key and value is known while
    parsing; the dict it then gets is no value a kernel can hold."""
    _const_dict(ctx, node)
    raise _dict_refused(ctx, node)


def _const_dict(ctx: ParseContext, node: ast.Dict) -> dict:
    """The dict of a display whose keys and values are all known while parsing (what the real
    parser's retry as Python computes); else its refusal of the display."""
    out: dict = {}
    for k, v in zip(node.keys, node.values):
        try:
            known = k is not None
            if known:
                key, value = eval_expr(ctx, k), eval_expr(ctx, v)
                known = is_const(key) and is_const(value)
        except PyptoError:
            known = False
        if not known:
            raise ctx.error(UnsupportedFeatureError, "Unsupported expression type: Dict", node,
                            hint="Use supported expressions like variables, constants, "
                                 "operations, or function calls")
        out[key] = value
    return out


def _dict_refused(ctx: ParseContext, node: ast.AST, kind: str = "dict") -> PyptoError:
    return ctx.error(ParserTypeError, f"Unsupported closure variable type: {kind}", node,
                     hint="Closure variables must be int, float, bool, list, tuple, or IR "
                          "expressions")


def _dict_item(ctx: ParseContext, node: ast.Subscript) -> Any:
    """`{...}[key]` on constants: the real parser's retry of the whole subscript as Python
    gives the item (a value a kernel can hold, or the same refusal)."""
    table = _const_dict(ctx, node.value)
    ok, key = try_const(eval_expr(ctx, node.slice))
    try:
        item = table[key] if ok else table[object()]
    except (KeyError, TypeError):
        raise _dict_refused(ctx, node.value) from None
    if not isinstance(item, (bool, int, float, tuple, list)):
        raise _dict_refused(ctx, node, type(item).__name__)
    return item


def _attribute(ctx: ParseContext, node: ast.Attribute) -> Any:
    base = eval_expr(ctx, node.value)
    return get_attribute(ctx, base, node.attr, node)


def get_attribute(ctx: ParseContext, base: Any, attr: str, node: ast.AST) -> Any:
    from .values import attribute_of

    return attribute_of(ctx, base, attr, node)


def _subscript(ctx: ParseContext, node: ast.Subscript) -> Any:
    from .values import attribute_of, subscript_of, tensor_shape_dim

    if isinstance(node.value, ast.Dict):
        return _dict_item(ctx, node)
    if isinstance(node.value, ast.Attribute) and node.value.attr == "shape":
        owner = eval_expr(ctx, node.value.value)  # `tensor.shape[axis]`: the axis rules
        if isinstance(owner, Expr) and isinstance(owner.type, TensorType):
            return tensor_shape_dim(ctx, owner, node.slice, node)
        base = attribute_of(ctx, owner, "shape", node.value)
    else:
        base = eval_expr(ctx, node.value)
    return subscript_of(ctx, base, node.slice, node)


def _call(ctx: ParseContext, node: ast.Call) -> Any:
    from .calls import eval_call

    return eval_call(ctx, node)


def _joined(ctx: ParseContext, node: ast.JoinedStr) -> Any:
    raise ctx.error(UnsupportedFeatureError, "f-strings are not supported in kernels", node,
                    hint="use pl.printf(\"x=%d\", x)")


def _named(ctx: ParseContext, node: ast.NamedExpr) -> Any:
    value = eval_expr(ctx, node.value)
    ctx.bind_value(node.target.id, value, ctx.span(node))
    return ctx.frame.scope[node.target.id]


def _lambda(ctx: ParseContext, node: ast.AST) -> Any:
    raise ctx.error(ParserSyntaxError, "lambdas, comprehensions and generators are not "
                                       "supported in kernels", node)


_HANDLERS = {
    ast.Name: _name, ast.Constant: _constant, ast.BinOp: _binop, ast.UnaryOp: _unaryop,
    ast.BoolOp: _boolop, ast.Compare: _compare, ast.IfExp: _ifexp, ast.Tuple: _tuple,
    ast.List: _tuple, ast.Dict: _dict, ast.Attribute: _attribute, ast.Subscript: _subscript,
    ast.Call: _call, ast.JoinedStr: _joined, ast.NamedExpr: _named, ast.Lambda: _lambda,
    ast.ListComp: _lambda, ast.GeneratorExp: _lambda, ast.DictComp: _lambda,
    ast.SetComp: _lambda,
}
