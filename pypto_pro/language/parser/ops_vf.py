"""Reg API (`vf.*`) calls inside `@pl.vector_function` bodies (spec §2.13).

Result-producing ops return register values (`RegType` / `MaskType`) that the caller binds;
stores, `mem_bar` and `clear_spr` are statements. The register dtype follows the operands, or
the op's `dtype=` keyword (`create_mask`, `full`, `arange`, `astype`, `load_align`, ...).
"""
from __future__ import annotations

import ast
from typing import Any

from ...errors import InvalidOperationError, ParserTypeError
from ...ir import ops as opreg
from ...ir.dtype import DataType
from ...ir.nodes import Call
from ...ir.types import MaskType, RegType, TileType
from .calls import emit_op, eval_args
from .context import ParseContext

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


def emit_vf(ctx: ParseContext, op: str, node: ast.Call) -> Any:
    if ctx.section != "vf":
        raise ctx.error(InvalidOperationError, f"{op} is only valid inside a "
                                               f"@pl.vector_function body", node)
    name = op.split(".", 1)[1]
    args, kw = eval_args(ctx, node)
    spec = opreg.get(op)
    rtype = None if spec.returns == "none" else _result_type(name, args, kw, node, ctx)
    result = emit_op(ctx, op, args, kw, node, result_type=rtype, check_tiles=False)
    return result if isinstance(result, Call) else None
