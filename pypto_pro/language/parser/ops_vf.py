"""Reg API (`vf.*`) calls inside `@pl.vector_function` bodies (spec §2.13).

Result-producing ops return register values that the caller binds; stores, `mem_bar`,
`clear_spr` and `load_unalign_pre` are statements. Result types follow the real parser
(`_parse_vf_assignment`): the `dtype=` keyword, else the first operand that has an element
type (a register, a tile, a mask made for a dtype, a typed scalar). The real IR's unified ops
(`move`, `and_`, `select`, `pack`, `interleave`, ...) give a predicate when their first operand
is one. Like the real parser, an op assigned to a name that already holds a register writes
into that register (its type wins: `acc = vf.full(0, m, dtype=pl.DT_UINT16)` then `acc =
vf.histograms(u8, m)` counts into UINT16 lanes), and `load_align` into a name holding a
predicate loads a predicate (`m = vf.create_mask(...)` then `m = vf.load_align(tile,
dist=...)`). Ops with two results (`interleave`,
`de_interleave`, `mull`, `addc` / `subc` (carry, sum), `load_align` into two names: the DINTLV
distributions) return both, bound by tuple assignment. A `[row, col]` offset is the element
offset `row * shape[1] + col` of the tile (`load_align`, `store_align`).
"""
from __future__ import annotations

import ast
import enum
from typing import Any

from ...errors import (
    InvalidOperationError,
    ParserSyntaxError,
    ParserTypeError,
    UnsupportedFeatureError,
)
from ...ir import attrs
from ...ir import ops as opreg
from ...ir.dtype import DataType
from ...ir.nodes import BinaryExpr, BinOp, Call, EnumConst, GetItem, Var, const
from ...ir.types import (
    AddrRegType, AlignRegType, MaskType, RegType, ScalarType, TileType, TupleType,
)
from .calls import emit_op, eval_args, materialize
from .context import ParseContext, PyList
from .expr import binary, eval_expr, to_expr

_COMPARES = {"eq", "ne", "lt", "gt", "le", "ge"}
#: the real IR's unified ops: a predicate result when the first operand is a predicate
_UNIFIED = {"move", "and_", "or_", "xor", "not_", "select", "pack", "unpack", "interleave",
            "de_interleave"}
#: ops with two results
_PAIRS = {"interleave", "de_interleave", "mull", "addc", "subc"}
#: ops whose result type is not their operands' (the real parser requires dtype=)
_TYPE_CHANGING = {"astype", "muls_cast", "pack", "unpack", "bit_cast"}
#: ops whose real backend emits MODE_ZEROING only (VFZeroingOnly: MERGING is a CHECK failure
#: there, whatever the docs' pages say); reductions take the mode as `merge_mode`
_ZEROING_ONLY = {"abs", "abs_sub", "adds", "and_", "astype", "axpy", "div", "exp", "leaky_relu",
                 "ln", "log", "log10", "log2", "maxs", "mins", "mul", "mul_add_dst",
                 "mul_dst_add", "muls", "neg", "not_", "or_", "pair_reduce_sum", "prelu", "relu",
                 "shift_left", "shift_right", "sqrt", "sub", "subs", "truncate", "xor"}
#: ops whose real backend requires the result type to be the operands' (a `dtype=` naming
#: another type is a CHECK failure there; natively it did not even compile here)
_SAME_TYPE = {"shift_left", "shift_right", "and_", "or_", "xor"}
_REDUCTIONS = {"reduce_sum", "reduce_max", "reduce_min"}
#: position of a `[row, col]` / element offset operand
_OFFSET_POS = {"load_align": 1, "store_align": 3}


def _operand_dtype(args: list) -> DataType | None:
    """The element type of the first operand that has one (the real parser's inference)."""
    for a in args:
        t = getattr(a, "type", None)
        if isinstance(t, (RegType, TileType)):
            return t.dtype
        if isinstance(t, MaskType) and t.dtype is not None:
            return t.dtype
        if isinstance(t, ScalarType) and t.dtype.bits in (8, 16, 32, 64) and \
                t.dtype is not DataType.INDEX:
            return t.dtype
    return None


def _mask_dtype(name: str, args: list, kw: dict) -> DataType:
    if name == "get_mask_spr":
        width = kw.get("width", args[0] if args else attrs.MaskWidth.B32)
        return DataType.FP16 if width == attrs.MaskWidth.B16 else DataType.FP32
    dtype = kw.get("cmp_dtype") if name in _COMPARES else kw.get("dtype")
    if isinstance(dtype, DataType):
        return dtype
    if name in ("create_mask", "update_mask"):
        return DataType.FP32
    return _operand_dtype(args) or DataType.FP32


#: ops the real parser binds by return value (`x = vf.op(...)` makes a new x); every other
#: result-producing op writes into the register its target already names
_RETURN_VALUE = {"create_mask", "update_mask", "get_mask_spr", "mask_gen_with_reg_tensor",
                 "create_addr_reg", "load_unalign_init", "unalign_reg_for_store"}


def _declared(ctx: ParseContext, target: ast.expr | None):
    """The register type `target` names already (the real parser writes into it)."""
    if isinstance(target, ast.Name):
        bound = ctx.frame.scope.get(target.id)
        if isinstance(bound, Var) and isinstance(bound.type, (RegType, MaskType)):
            return bound.type
    return None


def _pairs(target: ast.expr | None) -> bool:
    return isinstance(target, (ast.Tuple, ast.List)) and len(target.elts) == 2


def _result_type(ctx: ParseContext, name: str, args: list, kw: dict, node: ast.AST,
                 target: ast.expr | None):
    if name in ("load_unalign_init", "unalign_reg_for_store"):
        return AlignRegType()
    if name == "create_addr_reg":
        dtype = kw.get("dtype")
        return AddrRegType(dtype if isinstance(dtype, DataType) else DataType.FP32)
    if name in _COMPARES or name in ("create_mask", "update_mask", "get_mask_spr",
                                     "mask_gen_with_reg_tensor"):
        return MaskType(_mask_dtype(name, args, kw))
    first = getattr(args[0], "type", None) if args else None
    if name in _UNIFIED and isinstance(first, MaskType):
        return TupleType((first, first)) if name in _PAIRS else first
    declared = _declared(ctx, target) if name not in _RETURN_VALUE else None
    if name == "load_align" and isinstance(declared, MaskType):
        return declared
    dtype = kw.get("dtype")
    if not isinstance(dtype, DataType):
        if name in _TYPE_CHANGING:
            raise ctx.error(ParserTypeError, f"vf.{name} requires explicit dtype kwarg because "
                                             f"dst type differs from src. Example: vf.{name}"
                                             f"(src, mask, dtype=pl.DT_FP16)", node)
        dtype = _operand_dtype(args)
    if dtype is None:
        if name not in ("full", "arange"):
            raise ctx.error(ParserTypeError, f"vf.{name}: no operand has an element type to "
                                             f"take the result's from; pass dtype=", node)
        dtype = DataType.FP32
    reg = declared if isinstance(declared, RegType) else RegType(dtype)
    if name == "exp_sub" and reg.dtype is not DataType.FP32:
        # the real backend's vexpdif writes FP32 only (a CHECK failure there, after parsing)
        raise ctx.error(ParserTypeError, f"vf.exp_sub writes an FP32 register, not "
                                         f"{reg.dtype.value}", node,
                        hint="FP16 sources: r = vf.exp_sub(a, b, preg, dtype=pl.DT_FP32)")
    if name in ("addc", "subc"):
        return TupleType((MaskType(dtype), reg))
    if name in _PAIRS or (name == "load_align" and _pairs(target)):
        return TupleType((reg, reg))
    return reg


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


def _row_col(ctx: ParseContext, name: str, args: list, node: ast.Call) -> list:
    """A `[row, col]` offset operand as the element offset `row * shape[1] + col` of the tile
    (the real backend's ResolveOffsetArg)."""
    pos = _OFFSET_POS.get(name)
    if pos is None or pos >= len(args):
        return args
    value = args[pos]
    items = value.items if isinstance(value, PyList) else value
    if not isinstance(items, (list, tuple)):
        return args
    where = node.args[pos]
    tile = args[0].lhs if isinstance(args[0], BinaryExpr) else args[0]
    t = getattr(tile, "type", None)
    if len(items) != 2 or not isinstance(t, TileType):
        raise ctx.error(ParserTypeError, f"vf.{name}: a list offset is [row, col] of the tile",
                        where)
    cols = t.shape[1] if len(t.shape) >= 2 else 1
    offset = binary(ctx, BinOp.Add, binary(ctx, BinOp.Mul, items[0], cols, where), items[1],
                    where)
    return [*args[:pos], offset, *args[pos + 1:]]


def _interleaved_load(ctx: ParseContext, kw: dict, rtype, node: ast.AST) -> dict:
    """`a, b = vf.load_align(...)` is a DINTLV load (its width by default, as the backend
    picks it); a DINTLV distribution needs the two names."""
    dist = kw.get("dist")
    dintlv = dist is not None and attrs.LoadDist(int(dist)).name.startswith("DINTLV")
    if isinstance(rtype, TupleType):
        if dist is None:
            bits = max(8, rtype.types[0].dtype.bits)
            return {**kw, "dist": attrs.LoadDist[f"DINTLV_B{min(bits, 32)}"]}
        if not dintlv:
            raise ctx.error(ParserTypeError, "vf.load_align into two names needs a DINTLV "
                                             "distribution", node)
    elif dintlv:
        raise ctx.error(ParserTypeError, f"vf.load_align with dist={attrs.LoadDist(int(dist)).name}"
                                         f" loads two registers: even, odd = vf.load_align(...)",
                        node)
    return kw


def _nested(ctx: ParseContext, value: Any, op: str, node: ast.Call) -> Any:
    """An operand that is itself a vf call: `vf.bit_cast(r, dtype=...)` (no instruction, the
    real backend's `(RegTensor<T>&)r` reference cast, nestable in itself) is bound to a
    register of its own; any other vf op is an intrinsic of its own line, as the real parser
    requires the assignment form of every op that produces a result."""
    if not (isinstance(value, Call) and value.op.startswith("vf.")):
        return value
    if value.op == "vf.bit_cast":
        return materialize(ctx, value, "bit_cast")
    raise ctx.error(InvalidOperationError, f"the result of {value.op} must be assigned to a "
                                           f"variable before {op} can use it", node,
                    hint="r = vf.add(a, b, mask) on its own line (one intrinsic each)")


def _merging(args: list, kw: dict, key: str) -> bool:
    values = [kw.get(key), *[a.value if isinstance(a, EnumConst) else a for a in args]]
    return any(v is attrs.MergeMode.MERGING for v in values)


def _check_widths(ctx: ParseContext, name: str, dt: DataType, datablock: bool,
                  node: ast.Call) -> None:
    """The element types the real backend's reductions and vmul take (CHECK failures there)."""
    numeric = dt.is_int or dt in (DataType.FP16, DataType.FP32)
    if name in _REDUCTIONS:
        widths = (16, 32) if datablock else (16, 32, 64)
        if not numeric or dt.bits not in widths:
            form = " (datablock)" if datablock else ""
            kinds = "b16/b32 INT/UINT/FP16/FP32" if datablock else \
                "b16/b32/b64 INT/UINT/FP16/FP32"
            raise ctx.error(ParserTypeError, f"vf.{name}{form} src only supports {kinds}, got "
                                             f"{dt.name}", node)
    if name == "mul" and dt.bits not in (16, 32, 64):
        raise ctx.error(ParserTypeError, f"vf.mul src only supports supported types, got "
                                         f"{dt.name}", node)


def _check_forms(ctx: ParseContext, name: str, args: list, kw: dict, node: ast.Call,
                 target: ast.expr | None) -> None:
    """What the real frontend and backend refuse, in their words, at the call's line."""
    if name in _PAIRS and isinstance(target, ast.Name):
        raise ctx.error(ParserSyntaxError, f"vf.{name} produces 2 outputs, use tuple "
                                           f"unpacking: reg0, reg1 = vf.{name}(...)", node)
    if name in _ZEROING_ONLY and _merging(args, kw, "mode"):
        raise ctx.error(UnsupportedFeatureError, f"vf.{name} only supports ZEROING mode on "
                                                 f"current device", node,
                        hint="MERGING is emitted for vf.add / vf.max / vf.min / vf.full / "
                             "vf.move / vf.select only")
    src = getattr(args[0], "type", None) if args else None
    dtype = kw.get("dtype")
    if name in _SAME_TYPE and isinstance(src, RegType) and isinstance(dtype, DataType) and \
            dtype is not src.dtype:
        raise ctx.error(ParserTypeError, f"vf.{name} requires src and dst to have the same "
                                         f"type, got dst={dtype.name} src={src.dtype.name}",
                        node, hint="reinterpret the source first: vf.bit_cast(r, dtype=...)")
    if isinstance(src, RegType) and src.dtype is not None:
        _check_widths(ctx, name, src.dtype, bool(kw.get("datablock")), node)
    if name in _REDUCTIONS and _merging(args, kw, "merge_mode"):
        raise ctx.error(UnsupportedFeatureError, f"vf.{name} only supports ZEROING mode on "
                                                 f"current device, but got MERGING", node)


def emit_vf(ctx: ParseContext, op: str, node: ast.Call) -> Any:
    if ctx.section != "vf":
        raise ctx.error(InvalidOperationError, f"{op} is only valid inside a "
                                               f"@pl.vector_function body", node)
    name = op.split(".", 1)[1]
    target, ctx.assign_target = ctx.assign_target, None  # operands do not write the target
    try:
        args, kw = eval_args(ctx, _without_offsets(node))
    finally:
        ctx.assign_target = target
    args = [_ub_operand(ctx, a, arg_node) for a, arg_node in zip(args, node.args)]
    args = _row_col(ctx, name, args, node)
    args = [EnumConst(a, ctx.span(n)) if isinstance(a, enum.IntEnum) else a
            for a, n in zip(args, node.args)]  # attribute enums stay enums (IR round trip)
    args = [_nested(ctx, a, op, node) for a in args]
    kw = {k: _nested(ctx, v, op, node) for k, v in kw.items()}
    _check_forms(ctx, name, args, kw, node, target)
    spec = opreg.get(op)
    rtype = None if spec.returns == "none" else _result_type(ctx, name, args, kw, node, target)
    if name == "load_align" and isinstance(rtype, (RegType, TupleType)):
        kw = _interleaved_load(ctx, kw, rtype, node)
    result = emit_op(ctx, op, args, kw, node, result_type=rtype, check_tiles=False)
    if not isinstance(result, Call):
        return None
    if isinstance(rtype, TupleType):
        pair = materialize(ctx, result, "pair")
        span = ctx.span(node)
        return tuple(GetItem(pair, const(k, span), t, span) for k, t in enumerate(rtype.types))
    return result
