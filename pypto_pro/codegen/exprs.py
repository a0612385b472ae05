"""Scalar and tile expressions → C++ expressions with the simulator's exact meaning.

`Exprs(ctx).emit(e)` returns the C++ text of an IR expression. Python semantics are kept where
C++ differs, and the real toolchain's meaning where it does not: `//` and `%` are C++ `/` and
`%` (truncation, `ir/scalar_semantics.py`) on operands of the result's type, `**` calls
`pypto_pow`, `/` converts integer operands to the result's float type, `min`, `max`
and `abs` call typed helpers; system registers are read as signed int64. Parentheses follow
C++ precedence, and every binary operand of a comparison, logical or bitwise operator is
parenthesised (the build uses -Werror). Value-producing calls go through `VALUE_CALLS`, a table
keyed by op name. Tile operands are lvalues: a Var, `group[slot]` or a conditional of both.
"""
from __future__ import annotations

import enum
from collections.abc import Callable

from ..errors import CodegenInner, NotSupported
from ..ir.dtype import DataType
from ..ir.nodes import (
    BinaryExpr,
    BinOp,
    Call,
    Cast,
    ConstBool,
    ConstFloat,
    ConstInt,
    ConstStr,
    EnumConst,
    Expr,
    GetField,
    GetItem,
    MakeTuple,
    Select,
    UnaryExpr,
    UnOp,
    Var,
)
from ..ir.types import (
    PtrType,
    ScalarType,
    TensorType,
    TileGroupType,
    TileType,
)
from .context import FnCtx
from .types import ctype, enum_value, float_literal, int_literal
from .writer import c_string

PRIMARY, UNARY, MUL, ADD, SHIFT, REL, EQ, BAND, BXOR, BOR, LAND, LOR, COND = (
    16, 15, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3)

#: binary operators spelled as C++ operators: op → (text, precedence)
_INFIX: dict[BinOp, tuple[str, int]] = {
    BinOp.Add: ("+", ADD), BinOp.Sub: ("-", ADD), BinOp.Mul: ("*", MUL),
    BinOp.FloatDiv: ("/", MUL), BinOp.FloorDiv: ("/", MUL), BinOp.FloorMod: ("%", MUL),
    BinOp.Eq: ("==", EQ), BinOp.Ne: ("!=", EQ),
    BinOp.Lt: ("<", REL), BinOp.Le: ("<=", REL), BinOp.Gt: (">", REL), BinOp.Ge: (">=", REL),
    BinOp.And: ("&&", LAND), BinOp.Or: ("||", LOR), BinOp.BitAnd: ("&", BAND),
    BinOp.BitOr: ("|", BOR), BinOp.BitXor: ("^", BXOR), BinOp.Shl: ("<<", SHIFT),
    BinOp.Shr: (">>", SHIFT),
}
#: binary operators spelled as typed helper calls
_HELPERS: dict[BinOp, str] = {
    BinOp.Pow: "pypto_pow", BinOp.Min: "pypto_min", BinOp.Max: "pypto_max",
}
_ARITH = {BinOp.Add, BinOp.Sub, BinOp.Mul, BinOp.FloatDiv, BinOp.FloorDiv, BinOp.FloorMod}
_UNARY = {UnOp.Neg: "-", UnOp.Not: "!", UnOp.BitNot: "~"}

Emitted = tuple[str, int]


def dtype_of(e: Expr) -> DataType | None:
    t = getattr(e, "type", None)
    return t.dtype if isinstance(t, (ScalarType, TensorType, TileType, PtrType)) else None


class Exprs:
    """Emits the expressions of one function (see the module docstring)."""

    def __init__(self, ctx: FnCtx) -> None:
        self.ctx = ctx

    def emit(self, e: Expr) -> str:
        return self.emit_p(e)[0]

    def emit_p(self, e: Expr) -> Emitted:
        method = getattr(self, f"_{type(e).__name__}", None)
        if method is None:
            raise NotSupported(f"codegen: expression {type(e).__name__} has no C++ form",
                               getattr(e, "span", None), module="PRO_COMPILE")
        return method(e)

    def paren(self, e: Expr, min_prec: int) -> str:
        text, prec = self.emit_p(e)
        return text if prec >= min_prec else f"({text})"

    # ------------------------------------------------------------ leaves
    def _Var(self, e: Var) -> Emitted:
        name = self.ctx.name(e)
        if isinstance(e.type, TensorType) and e in self.ctx.tensors:
            return self.ctx.tensors[e].gt, PRIMARY
        if isinstance(e.type, TileType) and self.ctx.scopes.is_hoisted(e):
            return f"(*{name})", PRIMARY
        return name, PRIMARY

    def _ConstInt(self, e: ConstInt) -> Emitted:
        if isinstance(e.value, enum.Enum):  # an attribute enum passed positionally
            return enum_value(e.value), PRIMARY
        text = int_literal(int(e.value), e.dtype)
        return text, UNARY if text.startswith("-") else PRIMARY

    def _ConstFloat(self, e: ConstFloat) -> Emitted:
        text = float_literal(e.value, e.dtype)
        return text, UNARY if text.startswith("-") else PRIMARY

    def _ConstBool(self, e: ConstBool) -> Emitted:
        return ("true" if e.value else "false"), PRIMARY

    def _ConstStr(self, e: ConstStr) -> Emitted:
        return c_string(e.value), PRIMARY

    def _EnumConst(self, e: EnumConst) -> Emitted:
        return enum_value(e.value), PRIMARY

    # ------------------------------------------------------------ operators
    def _BinaryExpr(self, e: BinaryExpr) -> Emitted:
        helper = _HELPERS.get(e.op)
        if helper is not None:
            return self._helper_call(helper, e), PRIMARY
        text, prec = _INFIX[e.op]
        strict = e.op not in _ARITH
        lhs = self._operand(e.lhs, prec, strict, right=False)
        rhs = self._operand(e.rhs, prec, strict, right=True)
        if e.op is BinOp.FloatDiv:
            lhs, rhs = (self._as_float(x, s, e) for x, s in ((e.lhs, lhs), (e.rhs, rhs)))
        elif e.op in (BinOp.FloorDiv, BinOp.FloorMod):
            lhs, rhs = (self._as_result(x, s, e) for x, s in ((e.lhs, lhs), (e.rhs, rhs)))
            dt = dtype_of(e)
            if isinstance(e.rhs, ConstInt) and e.rhs.value == 0 and dt is not None and \
                    not dt.is_float:  # (prelude.py: a fault at this line in a host build)
                rhs = f"PYPTO_ZERO_DIVISOR({ctype(dt)})"
        return f"{lhs} {text} {rhs}", prec

    def _operand(self, e: Expr, prec: int, strict: bool, right: bool) -> str:
        text, p = self.emit_p(e)
        binary = isinstance(e, BinaryExpr) and e.op in _INFIX
        if p < prec or (right and p == prec and binary) or (strict and binary):
            return f"({text})"
        return text

    def _as_float(self, e: Expr, text: str, whole: BinaryExpr) -> str:
        dt = dtype_of(e)
        if dt is not None and dt.is_float:
            return text
        target = dtype_of(whole) or DataType.FP32
        return f"static_cast<{ctype(target)}>({text})"

    def _as_result(self, e: Expr, text: str, whole: BinaryExpr) -> str:
        """An integer operand of `/` or `%` converted to the result's type (as the real IR casts
        both operands before dividing): C++'s own conversions would divide an `int32_t` by a
        `uint32_t` unsigned."""
        want, have = dtype_of(whole), dtype_of(e)
        if want is None or have is None or have.ctype == want.ctype or isinstance(e, ConstInt):
            return text
        return f"static_cast<{ctype(want)}>({text})"

    def _helper_call(self, helper: str, e: BinaryExpr) -> str:
        dt = dtype_of(e) or DataType.INDEX
        if e.op is BinOp.Pow:
            exp_dt = dtype_of(e.rhs)
            if exp_dt is not None and exp_dt.is_float:
                raise NotSupported("codegen: `**` with a float exponent has no device "
                                   "implementation", e.span, module="PRO_COMPILE",
                                   hint="use an integer exponent or compute it on the host")
        return f"{helper}<{ctype(dt)}>({self.emit(e.lhs)}, {self.emit(e.rhs)})"

    def _UnaryExpr(self, e: UnaryExpr) -> Emitted:
        if e.op is UnOp.Abs:
            dt = dtype_of(e) or DataType.INDEX
            return f"pypto_abs<{ctype(dt)}>({self.emit(e.operand)})", PRIMARY
        text, p = self.emit_p(e.operand)
        if p < UNARY or text.startswith(("-", "!", "~")):
            text = f"({text})"
        return f"{_UNARY[e.op]}{text}", UNARY

    def _Cast(self, e: Cast) -> Emitted:
        return f"static_cast<{ctype(e.type.dtype)}>({self.emit(e.operand)})", PRIMARY

    def _Select(self, e: Select) -> Emitted:
        cond = self.paren(e.cond, LOR)
        a = self.paren(e.true_value, LOR)
        b = self.paren(e.false_value, COND)
        return f"({cond} ? {a} : {b})", PRIMARY

    def _MakeTuple(self, e: MakeTuple) -> Emitted:
        return "{" + ", ".join(self.emit(x) for x in e.elements) + "}", PRIMARY

    def _GetItem(self, e: GetItem) -> Emitted:
        if isinstance(e.value, MakeTuple) and isinstance(e.index, ConstInt):
            return self.emit_p(e.value.elements[e.index.value])
        if isinstance(e.value.type, TileGroupType):
            return f"{self.paren(e.value, PRIMARY)}[{self.emit(e.index)}]", PRIMARY
        if isinstance(e.value, (GetField, Var)) and not isinstance(e.value.type, TensorType):
            return f"{self.paren(e.value, PRIMARY)}[{self.emit(e.index)}]", PRIMARY
        raise NotSupported("codegen: indexing this value has no C++ form", e.span,
                           module="PRO_COMPILE")

    def _GetField(self, e: GetField) -> Emitted:
        return f"{self.paren(e.value, PRIMARY)}.{e.name}", PRIMARY

    def _Call(self, e: Call) -> Emitted:
        handler = VALUE_CALLS.get(e.op)
        if handler is None:
            if e.op.startswith("simt.") and self.ctx.simt:
                from .simt import simt_value

                return simt_value(self, e), PRIMARY
            raise CodegenInner(f"codegen: '{e.op}' cannot be used as a value here (it must be "
                               "bound to a variable or used as a statement)", e.span,
                               module="PRO_COMPILE")
        return handler(self, e), PRIMARY

    # ------------------------------------------------------------ tiles
    def tile(self, e: Expr) -> str:
        """A tile operand (an lvalue of the tile's C++ type)."""
        return self.emit(e)

    def elem_cast(self, e: Expr, dtype: DataType) -> str:
        """A scalar operand converted to a tile's element type."""
        have = dtype_of(e)
        if have is dtype or (have is not None and have.ctype == dtype.ctype):
            return self.emit(e)
        if isinstance(e, ConstFloat) and dtype.is_float:
            return float_literal(e.value, dtype)
        if isinstance(e, ConstInt) and not isinstance(e.value, enum.Enum):
            if dtype.is_float:
                return float_literal(float(e.value), dtype)
            if dtype.is_int:
                return int_literal(int(e.value), dtype)
        return f"static_cast<{ctype(dtype)}>({self.emit(e)})"

    def ints(self, e: Expr) -> list[str]:
        """The elements of an offsets / shape tuple."""
        if isinstance(e, MakeTuple):
            return [self.emit(x) for x in e.elements]
        return [self.emit(e)]


# ---------------------------------------------------------------- value calls


def _sysvar(cube: str, vector: str) -> Callable:
    def emit(x: Exprs, e: Call) -> str:
        text = cube if x.ctx.target == "cube" else vector
        return text if text.isdigit() else f"static_cast<int64_t>({text})"

    return emit


def _group_get(x: Exprs, e: Call) -> str:
    return f"{x.paren(e.args[0], PRIMARY)}[{x.emit(e.args[1])}]"


def _group_mutex_id(x: Exprs, e: Call) -> str:
    g = e.args[0]
    if not isinstance(g, Var):
        raise CodegenInner("tile_group.mutex_id needs the group variable", e.span,
                           module="PRO_COMPILE")
    table = f"{x.ctx.name(g)}_mutex"
    k = e.kwarg("k", 0)
    index = x.emit(e.args[1])
    return f"{table}[{index}]" if len(g.type.mutex_ids[0]) == 1 else f"{table}[{index}][{k}]"


def _valid_shape(x: Exprs, e: Call) -> str:
    axis = e.args[1].value if isinstance(e.args[1], ConstInt) else None
    method = {0: "GetValidRow", 1: "GetValidCol"}.get(axis)
    if method is None:
        raise NotSupported("tile.valid_shape needs a constant axis 0 or 1", e.span,
                           module="PRO_COMPILE")
    if x.ctx.simt and isinstance(e.args[0], Var):
        return f"static_cast<int64_t>({x.ctx.name(e.args[0])}_{('rows', 'cols')[axis]})"
    return f"static_cast<int64_t>({x.paren(e.args[0], PRIMARY)}.{method}())"


def element_ref(x: Exprs, container: Expr, offset: Expr) -> str:
    """The C++ lvalue of element `offset` of a tile (physical, from its address) or GM tensor."""
    off = x.emit(offset)
    t = container.type
    if x.ctx.simt or isinstance(t, PtrType):
        return f"{x.paren(container, PRIMARY)}[{off}]"
    if isinstance(t, TensorType):
        view = x.ctx.tensors.get(container) if isinstance(container, Var) else None
        if view is None:
            raise NotSupported("element access needs a tensor parameter or a make_tensor view",
                               getattr(container, "span", None), module="PRO_COMPILE")
        return f"PYPTO_GM_ELEM({view.ptr}, {off})"
    return f"PYPTO_TILE_ELEM({x.emit(container)}, {off})"


def _getval(x: Exprs, e: Call) -> str:
    ref = element_ref(x, e.args[0], e.args[1])
    want = dtype_of(e)
    have = dtype_of(e.args[0])
    return ref if want is None or want is have else f"static_cast<{ctype(want)}>({ref})"


def _make_ptr(x: Exprs, e: Call) -> str:
    src = e.args[0]
    dt = e.type.dtype
    if isinstance(src.type, TensorType):
        base = x.ctx.tensors[src].ptr
    else:
        base = x.emit(src)
    return f"reinterpret_cast<__gm__ {ctype(dt)}*>({base})"


def _addptr(x: Exprs, e: Call) -> str:
    return f"{x.paren(e.args[0], ADD)} + {x.paren(e.args[1], MUL)}"


def _is_null(x: Exprs, e: Call) -> str:
    """As the real codegen spells its `cast(p, UINT64) == 0` (a C cast: a `__gm__` pointer)."""
    return f"(((uint64_t){x.emit(e.args[0])}) == 0)"


def _ctrl_read(name: str) -> Callable:
    def emit(x: Exprs, e: Call) -> str:
        args = ", ".join(x.emit(a) for a in e.args)
        return f"static_cast<int64_t>({name}({args}))"

    return emit


VALUE_CALLS: dict[str, Callable[[Exprs, Call], str]] = {
    "get_block_idx": _sysvar("get_block_idx()",
                             "get_block_idx() * get_subblockdim() + get_subblockid()"),
    "get_block_num": _sysvar("get_block_num()", "get_block_num()"),
    "get_subblock_idx": _sysvar("get_subblockid()", "get_subblockid()"),
    "get_subblock_num": _sysvar("1", "get_subblockdim()"),
    "get_spr": _sysvar("get_ar()", "get_ar()"),
    "tile_group.get": _group_get,
    "tile_group.mutex_id": _group_mutex_id,
    "block.tile_valid_shape": _valid_shape,
    "block.getval": _getval,
    "ptr.make_ptr": _make_ptr,
    "ptr.addptr": _addptr,
    "ptr.is_null": _is_null,
    "system.get_ctrl_spr": _ctrl_read("get_ctrl_spr"),
    "system.get_saturation_flag": _ctrl_read("get_saturation_flag"),
}
