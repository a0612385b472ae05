"""Reg API (`vf.*`) calls inside `@pl.vector_function` bodies (spec §2.13).

Result-producing ops return register values (`RegType` / `MaskType`) that the caller binds;
stores, `mem_bar` and `clear_spr` are statements. The register dtype follows the operands, or
the op's `dtype=` keyword (`create_mask`, `full`, `arange`, `astype`, `load_align`, ...).
"""
from __future__ import annotations

import ast
import enum
from typing import Any

from ...errors import InvalidOperationError, ParserTypeError
from ...ir import ops as opreg
from ...ir.dtype import DataType
from ...ir.nodes import BinaryExpr, BinOp, Call, EnumConst
from ...ir.types import MaskType, RegType, ScalarType, TileType
from .calls import emit_op, eval_args
from .context import ParseContext
from .expr import binary, eval_expr, to_expr

_MASK_RESULTS = {"create_mask", "update_mask", "mask_gen_with_reg_tensor", "get_mask_spr",
                 "eq", "ne", "lt", "gt", "le", "ge"}


def _result_type(name: str, args: list, kw: dict, node: ast.AST, ctx: ParseContext):
    if name in _MASK_RESULTS:
        return MaskType()
    dtype = kw.get("dtype")
    if isinstance(dtype, DataType):
        return RegType(dtype)
    for a in args:
        t = getattr(a, "type", None)
        if isinstance(t, RegType):
            return t
        if isinstance(t, TileType):
            return RegType(t.dtype)
    if name in ("full", "arange"):
        return RegType(DataType.FP32)
    raise ctx.error(ParserTypeError, f"vf.{name}: cannot infer the register dtype; pass "
                                     f"dtype=", node)




def _without_offsets(node: ast.Call) -> ast.Call:
    """The call with every `a + b` positional operand replaced by a placeholder name, so the
    generic argument evaluation does not reject tile + scalar (spec §2.13 element offsets)."""
    args = [ast.copy_location(ast.Constant(value=None), a)
            if isinstance(a, ast.BinOp) and isinstance(a.op, ast.Add) else a for a in node.args]
    return ast.copy_location(ast.Call(func=node.func, args=args, keywords=node.keywords), node)


def _is_add(node: ast.AST) -> bool:
    return isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add)


def _ub_operand(ctx: ParseContext, value: Any, node: ast.AST) -> Any:
    """`tile + k` (also `tile + k + j`) → an offset UB operand typed as the tile; other sums
    stay scalar sums."""
    if not _is_add(node):
        return value
    left = _ub_operand(ctx, None, node.left) if _is_add(node.left) else eval_expr(ctx, node.left)
    if isinstance(left, BinaryExpr) and isinstance(left.type, TileType):
        tile, base = left.lhs, left.rhs
    elif isinstance(getattr(left, "type", None), TileType):
        tile, base = left, None
    else:
        return binary(ctx, BinOp.Add, left, eval_expr(ctx, node.right), node)
    offset = to_expr(ctx, eval_expr(ctx, node.right), node.right)
    if not isinstance(offset.type, ScalarType) or not offset.type.dtype.is_int and \
            offset.type.dtype is not DataType.INDEX:
        raise ctx.error(ParserTypeError, "a UB offset (tile + k) must be an integer number of "
                                         "elements", node.right)
    if base is not None:
        offset = to_expr(ctx, binary(ctx, BinOp.Add, base, offset, node), node)
    return BinaryExpr(BinOp.Add, tile, offset, tile.type, ctx.span(node))


def emit_vf(ctx: ParseContext, op: str, node: ast.Call) -> Any:
    if ctx.section != "vf":
        raise ctx.error(InvalidOperationError, f"{op} is only valid inside a "
                                               f"@pl.vector_function body", node)
    name = op.split(".", 1)[1]
    args, kw = eval_args(ctx, _without_offsets(node))
    args = [_ub_operand(ctx, a, arg_node) for a, arg_node in zip(args, node.args)]
    args = [EnumConst(a, ctx.span(n)) if isinstance(a, enum.IntEnum) else a
            for a, n in zip(args, node.args)]  # attribute enums stay enums (IR round trip)
    for a in [*args, *kw.values()]:
        if isinstance(a, Call) and a.op.startswith("vf."):
            raise ctx.error(InvalidOperationError, f"the result of {a.op} must be assigned to a "
                                                   f"variable before {op} can use it", node,
                            hint="r = vf.add(a, b, mask) on its own line (one intrinsic each)")
    spec = opreg.get(op)
    rtype = None if spec.returns == "none" else _result_type(name, args, kw, node, ctx)
    result = emit_op(ctx, op, args, kw, node, result_type=rtype, check_tiles=False)
    return result if isinstance(result, Call) else None
