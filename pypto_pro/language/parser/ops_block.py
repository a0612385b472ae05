"""Handlers of tile ops (spec §2.5–2.9): allocation, data movement and the compute dispatch rules.

Each handler gets `(ctx, node, op)`, evaluates the call's arguments, validates what the spec
validates at parse time (memory spaces, alignment, layouts, static offsets) and emits IR.
"""
from __future__ import annotations

import ast
import enum
from dataclasses import replace
from typing import Any

from ...errors import (
    FinalRejectionError, InvalidOperationError, InvalidShape, InvalidTile,
    OutOfRange, ParserSyntaxError, ParserTypeError, UnsupportedFeatureError,
)
from ...ir import attrs
from ...ir.dtype import DataType
from ...ir.nodes import BinOp, Call, ConstInt, Expr, MakeTuple
from ...ir.types import (
    INDEX, MemorySpace, ScalarType, TensorType, TileGroupType, TileLayout, TilePad, TileType,
    TupleType,
)
from ..types import TileType as DslTileType
from .calls import emit_op, eval_args, materialize
from .context import GroupChoice, ParseContext, PyList
from .cube_checks import ROLES as MATMUL_ROLES
from .cube_checks import check_matmul
from ..tile_layouts import LayoutRefused, tile_layout
from .expr import binary, try_const

M = MemorySpace
ALIGNMENT = {M.Vec: 32, M.Mat: 32, M.ScaleLeft: 32, M.ScaleRight: 32, M.Left: 512, M.Right: 512,
             M.Acc: 64}


def _name(v: Any) -> str:
    """How a message names a tile operand: `a` for a variable, else "the tile"."""
    name = getattr(v, "name", None)
    return f"`{name}`" if isinstance(name, str) and not name.startswith("__") else "the tile"


def _tile(ctx: ParseContext, v: Any, node: ast.AST, what: str) -> Expr:
    t = getattr(v, "type", None)
    if not isinstance(t, TileType):
        raise ctx.error(ParserTypeError, f"{what} must be a tile", node)
    return v


def _tensor(ctx: ParseContext, v: Any, node: ast.AST, what: str) -> Expr:
    if not isinstance(getattr(v, "type", None), TensorType):
        raise ctx.error(ParserTypeError, f"{what} must be a GM tensor (a pl.Tensor parameter "
                                         f"or pl.make_tensor view)", node)
    return v


def _const_int(ctx: ParseContext, v: Any, node: ast.AST, what: str) -> int:
    k, c = try_const(v)
    if not k or not isinstance(c, int) or isinstance(c, bool):
        got = "a runtime value" if isinstance(v, Expr) else repr(v)
        raise ctx.error(ParserTypeError, f"{what} must be a compile-time int, got {got}", node,
                        hint="tile placement is fixed at compile time")
    return c


# ---------------------------------------------------------------- allocation (spec §2.5)


def _placement(ctx: ParseContext, node: ast.Call, key: str, value: Any) -> int:
    """make_tile's `key` (addr / size) as the int it must be while parsing."""
    k, c = try_const(value)
    if not k or not isinstance(c, int) or isinstance(c, bool):
        source = next((ast.unparse(kw.value) for kw in node.keywords if kw.arg == key), key)
        raise ctx.error(FinalRejectionError, f"'{key}' must be a compile-time integer, got "
                                             f"'{source}'", node,
                        hint=f"{key} is fixed while parsing: pass a literal or a name bound to "
                             f"constants, not a runtime value such as a tensor shape or a loop "
                             f"index")
    return c


def lower_tile_type(ctx: ParseContext, tt: Any, node: ast.AST) -> TileType:
    """A `pl.TileType` (user dataclass) → the IR TileType (address not yet set)."""
    if not isinstance(tt, DslTileType):
        raise ctx.error(ParserTypeError, f"expected a pl.TileType, got {tt!r}", node)
    space = tt.target_memory
    try:
        layout = tile_layout(space, tt.layout, tt.dtype, ctx.arch)
    except LayoutRefused as e:  # the real TileType's ValueError, as its kernel parser wraps it
        raise ctx.builder_error(str(e), node) from None
    fractal = tt.fractal
    if fractal is None:
        if space is M.Acc and tt.dtype in (DataType.FP32, DataType.INT32):
            fractal = 1024
        elif tt.dtype is DataType.FP8E8M0 or space in (M.ScaleLeft, M.ScaleRight):
            fractal = 32
        else:
            fractal = 512
    vs = tt.valid_shape
    valid = (None, None) if vs is None else tuple(None if v == -1 else v for v in vs)
    return TileType(tt.shape, tt.dtype, space, layout, fractal, valid,
                    tt.pad if tt.pad is not None else TilePad.null, tt.compact or 0)


def check_address(ctx: ParseContext, t: TileType, addr: int, node: ast.AST) -> None:
    align = ALIGNMENT.get(t.memory)
    if addr < 0:
        raise ctx.error(InvalidTile, f"tile address {addr:#x} is negative", node)
    if align and addr % align:
        raise ctx.error(InvalidTile, f"Tile address {addr:#x} is not {align}-byte aligned for "
                                     f"memory space {t.memory.value}", node,
                        hint=f"use a multiple of {align}: {(addr // align + 1) * align:#x}")


def make_tile(ctx: ParseContext, node: ast.Call, op: str) -> Any:
    """`pl.make_tile(tile_type, *, addr, size=None)`, its arguments held to the real contract
    (the type alone is positional: a swapped pair of bare ints reads like a correct one)."""
    args, kwargs = eval_args(ctx, node)
    if not args or not isinstance(args[0], DslTileType):
        got = ast.unparse(node.args[0]) if node.args else "no positional argument"
        raise ctx.error(FinalRejectionError, f"pl.make_tile() takes a pl.TileType as its first "
                                             f"argument, got {got}", node,
                        hint="tt = pl.TileType(shape=[...], dtype=..., target_memory=...); "
                             "pl.make_tile(tt, addr=0x0)")
    if len(args) > 1:
        raise ctx.error(FinalRejectionError, f"pl.make_tile() takes 1 positional argument (the "
                                             f"tile type) but {len(args)} were given", node,
                        hint="pass addr and size as keywords, e.g. "
                             "pl.make_tile(tile_type, addr=0x0, size=1024)")
    written_none = {kw.arg for kw in node.keywords
                    if isinstance(kw.value, ast.Constant) and kw.value.value is None}
    placement = {key: _placement(ctx, node, key, kwargs[key]) for key in ("addr", "size")
                 if kwargs.get(key) is not None or key in written_none}  # `size=None` too
    if "addr" not in placement:
        raise ctx.error(FinalRejectionError, "pl.make_tile() missing required keyword 'addr'",
                        node, hint="pl.make_tile(tile_type, addr=0x0): the user owns the "
                                   "address map")
    size = placement.get("size")
    if size is not None and size <= 0:  # (any positive span: smaller than the shape too)
        raise ctx.error(FinalRejectionError, f"pl.make_tile() 'size' must be a positive byte "
                                             f"count, got {size}", node,
                        hint="drop 'size' to reserve the tile type's own footprint, or pass the "
                             "larger byte count its layout needs")
    t = lower_tile_type(ctx, args[0], node)
    addr = placement["addr"]
    check_address(ctx, t, addr, node)
    size = t.nbytes if size is None else size
    t = replace(t, addr=addr)
    call = Call("block.make_tile", (MakeTuple(tuple(ConstInt(d) for d in t.shape),
                                              TupleType((INDEX, INDEX))),),
                (("dtype", t.dtype), ("target_memory", t.memory), ("memref_addr", addr),
                 ("memref_size", size)), t, ctx.span(node))
    return materialize(ctx, call, "tile")


def make_tile_group(ctx: ParseContext, node: ast.Call, op: str) -> Any:
    args, kw = eval_args(ctx, node)
    if args:
        raise ctx.error(ParserSyntaxError, "pl.make_tile_group() takes keyword args only "
                                           "(type=, addrs=, mutex_ids=, depth=)", node)
    unknown = set(kw) - {"type", "addrs", "mutex_ids", "depth", "fwd_ids", "bwd_ids"}
    if unknown:
        raise ctx.error(ParserTypeError, f"make_tile_group: unknown argument(s) "
                                         f"{', '.join(sorted(unknown))}", node)
    for required in ("type", "addrs"):
        if required not in kw:
            raise ctx.error(ParserTypeError, f"pl.make_tile_group() missing required keyword "
                                             f"'{required}'", node)
    if not isinstance(kw["type"], DslTileType):
        raise ctx.error(ParserTypeError, "pl.make_tile_group() 'type' must be a pl.TileType",
                        node)
    t = lower_tile_type(ctx, kw["type"], node)
    ids = _mutex_ids(ctx, kw.get("mutex_ids"), node)
    depth = kw.get("depth")
    if depth is not None:
        k, depth_value = try_const(depth)
        if not k or not isinstance(depth_value, int) or isinstance(depth_value, bool) or \
                depth_value <= 0:
            got = repr(depth_value) if k else "a runtime value"
            raise ctx.error(ParserTypeError, f"make_tile_group() depth must be a positive "
                                             f"compile-time integer, got {got}", node)
        depth = depth_value
        if ids and depth != len(ids):
            raise ctx.error(ParserTypeError, f"make_tile_group() mutex_ids length {len(ids)} "
                                             f"must equal depth {depth}", node)
    n = len(ids) if ids else depth
    if n is None:
        raise ctx.error(ParserTypeError, "make_tile_group() depth is required when mutex_ids "
                                         "is None or empty", node)
    addrs = _group_addrs(ctx, kw.get("addrs"), n, t, node)
    for a in addrs:
        check_address(ctx, t, a, node)
    fwd = tuple(_id_list(ctx, kw.get("fwd_ids"), node, "fwd_ids", 16))
    bwd = tuple(_id_list(ctx, kw.get("bwd_ids"), node, "bwd_ids", 16))
    gt = TileGroupType(t, tuple(addrs), ids, fwd, bwd)
    placement = (("memory", t.memory), ("shape", t.shape), ("dtype", t.dtype),
                 ("addrs", tuple(addrs)), ("mutex_ids", ids))
    call = Call("tile_group.make", (), placement + ((("fwd_ids", fwd),) if fwd else ())
                + ((("bwd_ids", bwd),) if bwd else ()), gt, ctx.span(node))
    return materialize(ctx, call, "group")


def _mutex_ids(ctx: ParseContext, value: Any, node: ast.AST) -> tuple[tuple[int, ...], ...]:
    """One tuple of mutex ids per tile, held to the real parser's rules (and words)."""
    if value is not None and not isinstance(value, (list, tuple)):
        raise ctx.error(ParserTypeError, "make_tile_group() mutex_ids must be a list, tuple, or "
                                         "None", node)
    if not value:  # None or empty: the group is sized by depth=
        return ()
    rows = [tuple(v) if isinstance(v, (list, tuple)) else (v,) for v in value]
    for r in rows:
        if not r:
            raise ctx.error(ParserTypeError, "make_tile_group() mutex ID sequence for a tile must "
                                             "not be empty", node)
        for i in r:
            if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i <= 31:
                raise ctx.error(ParserTypeError, f"mutex_ids must be ints in [0,31], got {i!r}",
                                node)
        if len(set(r)) != len(r):
            raise ctx.error(ParserTypeError, f"make_tile_group() mutex IDs for one tile must not "
                                             f"contain duplicates: {r}", node)
    for r in rows[1:]:
        if len(r) != len(rows[0]):
            raise ctx.error(ParserTypeError, f"all tiles in a tile group must have the same mutex "
                                             f"ID count: {len(rows[0])} and {len(r)}", node)
    return tuple(rows)


def _id_list(ctx: ParseContext, value: Any, node: ast.AST, what: str, limit: int) -> list[int]:
    if value is None:
        return []
    if not isinstance(value, (list, tuple)):
        raise ctx.error(ParserTypeError, f"{what}: expected a list of ids in 0..{limit - 1}, "
                                         f"got {type(value).__name__}", node)
    for i in value:
        if not isinstance(i, int) or not 0 <= i < limit:
            raise ctx.error(ParserTypeError, f"{what}: {i!r} is not an id in 0..{limit - 1}",
                            node)
    return list(value)


def _group_addrs(ctx: ParseContext, value: Any, n: int, t: TileType,
                 node: ast.AST) -> list[int]:
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ctx.error(ParserTypeError, f"make_tile_group() addrs length {len(value)} must "
                                             f"equal depth/len(mutex_ids) {n}", node)
        return [_const_int(ctx, a, node, "addrs entry") for a in value]
    base = _const_int(ctx, value, node, "addrs")
    return [base + i * t.nbytes for i in range(n)]


def set_validshape(ctx: ParseContext, node: ast.Call, op: str) -> Any:
    args, _ = eval_args(ctx, node)
    if len(args) != 2:
        raise ctx.error(ParserTypeError, "pl.set_validshape(tile, [rows, cols])", node)
    target, shape = args
    if isinstance(target, GroupChoice):
        from .containers import on_choice

        return on_choice(ctx, target, lambda g: _set_validshape(ctx, g, shape, node), node)
    return _set_validshape(ctx, target, shape, node)


def _set_validshape(ctx: ParseContext, target: Any, shape: Any, node: ast.AST) -> None:
    t = getattr(target, "type", None)
    if not isinstance(t, (TileType, TileGroupType)):
        raise ctx.error(ParserTypeError, "pl.set_validshape needs a tile or tile group", node)
    dims = int_items(ctx, shape, node, "valid shape")
    if len(dims) != 2:
        raise ctx.error(InvalidShape, f"pl.set_validshape needs [rows, cols], got {len(dims)} "
                                      f"values", node)
    tile_t = t.tile if isinstance(t, TileGroupType) else t
    for axis, d, full in zip(("row", "col"), dims, tile_t.shape):
        k, v = try_const(d)  # (a runtime extent is the hardware's to hold to the shape)
        if k and v <= 0:
            raise ctx.builder_error(f"set_validshape {axis}={v} must be positive (got {v}). "
                                    f"Valid shape dimensions must be >= 1.", node)
        if k and v > full:
            raise ctx.builder_error(f"set_validshape {axis}={v} exceeds tile {axis}={full}. "
                                    f"Valid shape must be <= tile shape.", node)
    return emit_op(ctx, "block.set_validshape", [target, PyList(dims)], {}, node,
                   check_tiles=False)


# ---------------------------------------------------------------- data movement (spec §2.6)


def int_items(ctx: ParseContext, value: Any, node: ast.AST, what: str) -> list:
    """A list of integer offsets / sizes: compile-time ints or runtime integer scalars."""
    items = value.items if isinstance(value, PyList) else value
    if not isinstance(items, (list, tuple)):
        raise ctx.error(ParserTypeError, f"{what} must be a list of integers, got {items!r}",
                        node)
    for v in items:
        t = getattr(v, "type", None)
        known, c = try_const(v)
        if known and not (isinstance(c, int) and not isinstance(c, bool)) or \
                not known and not (isinstance(t, ScalarType) and t.dtype.is_int):
            got = repr(c) if known else "a non-integer value"
            raise ctx.error(ParserTypeError, f"{what} must be integers, got {got}", node)
    return list(items)


def _offsets(ctx: ParseContext, value: Any, rank: int, node: ast.AST) -> list:
    items = value.items if isinstance(value, PyList) else value
    if not isinstance(items, (list, tuple)):
        items = [0] * (rank - 1) + [items]
    items = int_items(ctx, items, node, "offsets")
    if len(items) != rank:
        raise ctx.error(InvalidShape, f"{len(items)} offsets for a rank-{rank} tensor", node)
    return items


def _check_static_window(ctx: ParseContext, tensor: Expr, tile: TileType, offsets: list,
                         dims: list[int], node: ast.AST) -> None:
    static = tensor.type.static_shape()
    for axis, off in zip(range(len(static)), offsets):
        k, v = try_const(off)
        if k and static[axis] is not None and not 0 <= v < static[axis]:
            raise ctx.error(OutOfRange, f"offset {v} on axis {axis} is outside the tensor's "
                                        f"shape {list(static)}", node)
    for tile_axis, tensor_axis in enumerate(dims):
        k, v = try_const(offsets[tensor_axis])
        extent = tile.shape[tile_axis] if tile.valid_shape[tile_axis] is None else \
            tile.valid_shape[tile_axis]
        size = static[tensor_axis]
        if k and size is not None and tile.valid_shape[tile_axis] is not None and \
                v + extent > size:
            raise ctx.error(OutOfRange, f"tile window {v}..{v + extent} on axis {tensor_axis} "
                                        f"exceeds the tensor's size {size}", node)


def _order_dims(ctx: ParseContext, order: Any, rank: int, node: ast.AST, op: str,
                default: list[int]) -> tuple[list[int], bool]:
    """`order=`: the tensor axes (absolute indices) the tile's rows and cols run along, as the
    real `_resolve_order` reads it; descending means transposed (a DN view)."""
    if order is None:
        return default, False
    items = order.items if isinstance(order, PyList) else order
    o = list(items) if isinstance(items, (list, tuple)) else [items]
    if len(o) != 2 or any(type(x) is not int for x in o):
        raise ctx.error(ParserTypeError, f"{op}: 'order' must be a compile-time integer list "
                                         f"naming two distinct tensor axes of the "
                                         f"rank-{rank} tensor (absolute indices in [0, {rank}))"
                                         f", got {o}", node,
                        hint="e.g. order=[1, 0] for a transposed 2-D load, order=[1, 3] for "
                             "axes 1 and 3 of a 4-D tensor")
    dims = sorted(o)  # the real `_validate_tile_dims` checks the axes, then a store their order
    if dims[0] == dims[1]:
        raise ctx.builder_error(f"{op}: order axes must be unique, got {dims}", node)
    bad = next((d for d in dims if not 0 <= d < rank), None)
    if bad is not None:
        raise ctx.builder_error(f"{op}: order axis {bad} is out of range for Tensor rank "
                                f"{rank}", node)
    if op.startswith("store") and o != dims:
        raise ctx.builder_error(f"{op}: order must be ascending, got {o}", node)
    return o, o[0] > o[1]


#: element types the real load / store builders take ("b8/b16/b32/b64")
_MOVABLE = frozenset(DataType) - {DataType.BOOL, DataType.INT4, DataType.UINT4, DataType.FP4,
                                  DataType.HF4, DataType.INDEX}


def real_dtype_name(dt: DataType) -> str:
    """A dtype as the real frontend's messages print it (`fp16`, `bfloat16`, ...)."""
    return "bfloat16" if dt is DataType.BF16 else dt.value.lower()


def _check_movable(ctx: ParseContext, op: str, operands: tuple, node: ast.AST) -> None:
    """The real builders' dtype check of a load's / store's tile and tensor: (role, value)."""
    for role, v in operands:
        if v.type.dtype not in _MOVABLE:
            raise ctx.builder_error(f"{op}: unsupported {role} dtype "
                                    f"{real_dtype_name(v.type.dtype)}, supported: "
                                    f"b8/b16/b32/b64", node)


def _check_fixpipe_quant(ctx: ParseContext, op: str, src: DataType, dst: DataType,
                         node: ast.AST) -> None:
    """The quantisations the fixpipe cannot produce (the real `_check_scale_dst_supported`,
    for a store or move with a scale): no unsigned requantisation, no scaled BF16 output."""
    if dst is DataType.UINT8:
        raise ctx.builder_error(f"{op}: scale quantization to UINT8 is not supported — the "
                                f"hardware fixpipe has no unsigned requantization path. Use an "
                                f"INT8 output, or quantize in the Vector (UB) domain.", node)
    if dst is DataType.BF16 and src in (DataType.FP32, DataType.INT32):
        raise ctx.builder_error(f"{op}: scale quantization from {real_dtype_name(src)} to BF16 "
                                f"is not supported — the fixpipe only dequantizes INT32→FP16 "
                                f"and only truncates FP32→BF16 without a scale. Write FP16 "
                                f"output, or drop the scale and truncate in the Vector (UB) "
                                f"domain.", node)


def _check_rank(ctx: ParseContext, op: str, rank: int, order: Any, node: ast.AST) -> None:
    """A 2-D tile over a 1-D tensor: the real builder's default order, the last two axes, is
    [-1, 0] there, which it refuses in these words (1-D tensors are read and written by
    element: `getval` / `setval`, `t[i]`)."""
    if rank < 2 and order is None:
        raise ctx.builder_error(f"{op}: order axis -1 is out of range for Tensor rank {rank}",
                                node)


def _tile_offsets(ctx: ParseContext, offs: list, dims: list[int], t: TileType,
                  node: ast.AST) -> list:
    """load_tile / store_tile: tile indices times the tile's extent, the real
    `_compute_absolute_offsets` pairing the ascending axes with the tile's dims in order."""
    axes = sorted(dims)
    return [binary(ctx, BinOp.Mul, o, t.shape[axes.index(a)] if a in axes else 1, node)
            for a, o in enumerate(offs)]


def _mx_scale(ctx: ParseContext, t: TileType, src: Expr, node: ast.AST) -> str | None:
    """"A" / "B" for an MX scale load (an E8M0 tensor into a fractal-32 ZZ / NN Mat tile: K
    groups along the tile's cols / rows; the tensor's last axis is their size-2 phase), else
    None."""
    if not (t.dtype is DataType.FP8E8M0 and src.type.dtype is DataType.FP8E8M0 and
            t.memory is M.Mat and t.fractal == 32 and t.layout in (TileLayout.ZZ,
                                                                  TileLayout.NN)):
        return None
    shape = src.type.static_shape()
    if len(shape) < 3 or shape[-1] != 2:
        raise ctx.error(InvalidShape, f"load: an MX scale tensor (E8M0 into a {t.layout.value} "
                                      f"Mat tile) ends in a physical phase axis of size 2, got "
                                      f"shape {list(shape)}", node,
                        hint="declare the packed shape, e.g. [M, K // 64, 2] for scale A")
    return "A" if t.layout is TileLayout.ZZ else "B"


def load(ctx: ParseContext, node: ast.Call, op: str) -> Any:
    args, kw = eval_args(ctx, node)
    if len(args) != 3:
        raise ctx.error(ParserTypeError, f"pl.{op}(dst_tile, src_tensor, offsets, order=None)",
                        node)
    dst = _tile(ctx, args[0], node, "load destination")
    src = _tensor(ctx, args[1], node, "load source")
    t: TileType = dst.type
    if t.memory not in (M.Vec, M.Mat):
        raise ctx.error(InvalidOperationError, f"load: destination must be a Vec or Mat tile, "
                                               f"got {t.memory.value}", node)
    home = {"vector": M.Vec, "cube": M.Mat}.get(ctx.section or "")
    if home is not None and t.memory is not home:  # the first wrong use: the load itself
        core = "AIV loads GM into its UB (Vec)" if home is M.Vec else \
            "AIC loads GM into its L1 (Mat)"
        raise ctx.error(InvalidOperationError,
                        f"load into {_name(dst)}, a {t.memory.value} tile, in a {ctx.section} "
                        f"section: the {core}", node,
                        hint=f"declare {_name(dst)} with pl.MemorySpace.{home.value}, or load "
                             f"it in a pl.section_{'cube' if home is M.Vec else 'vector'}()")
    _check_movable(ctx, op, (("dst tile", dst), ("src tensor", src)), node)
    rank = src.type.rank
    mx = _mx_scale(ctx, t, src, node)
    _check_rank(ctx, op, rank, kw.get("order"), node)
    default = [rank - 3, rank - 2] if mx else [rank - 2, rank - 1]
    dims, transpose = _order_dims(ctx, kw.get("order"), rank, node, op, default)
    if mx and (rank - 1 in dims or max(dims) != rank - 2):
        raise ctx.error(UnsupportedFeatureError, f"load: an MX scale load along tensor axes "
                                                 f"{dims}: the phase axis {rank - 1} cannot be "
                                                 f"selected, and the higher axis must be the one "
                                                 f"before it", node)
    offs = _offsets(ctx, args[2], rank, node)
    if op == "load_tile":
        offs = _tile_offsets(ctx, offs, dims, t, node)
    if not mx:
        _check_static_window(ctx, src, t, offs, dims, node)
    return emit_op(ctx, "block.load", [dst, src, PyList(offs)],
                   {"is_transpose": transpose, "tile_dims": tuple(dims), "mx_scale": mx}, node)


def store(ctx: ParseContext, node: ast.Call, op: str) -> Any:
    args, kw = eval_args(ctx, node)
    if len(args) not in (3, 4):
        raise ctx.error(ParserTypeError, f"pl.{op}(dst_tensor, src_tile, offsets, ...)", node)
    dst = _tensor(ctx, args[0], node, "store destination")
    src = _tile(ctx, args[1], node, "store source")
    t: TileType = src.type
    if t.memory not in (M.Vec, M.Acc):
        raise ctx.error(InvalidOperationError, f"store: source must be a Vec or Acc tile, got "
                                               f"{t.memory.value}", node)
    _check_movable(ctx, op, (("dst tensor", dst), ("src tile", src)), node)
    for key, kind in (("phase", attrs.STPhase), ("atomic", attrs.AtomicType)):
        v = kw.get(key)  # (a number is refused by the enum guard before the builder runs)
        if v is not None and not isinstance(v, kind) and isinstance(v, enum.Enum):
            raise ctx.builder_error(f"{op}: invalid {key} value {v!r}, expected "
                                    f"{kind.__name__}", node)
    rank = dst.type.rank
    _check_rank(ctx, op, rank, kw.get("order"), node)
    dims, transpose = _order_dims(ctx, kw.get("order"), rank, node, op, [rank - 2, rank - 1])
    offs = _offsets(ctx, args[2], rank, node)
    if op == "store_tile":
        offs = _tile_offsets(ctx, offs, dims, t, node)
    _check_static_window(ctx, dst, t, offs, dims, node)
    scale = kw.get("scale")
    extra: list = []
    opname = "block.store"
    if t.memory is M.Vec and any(kw.get(k) is not None for k in ("scale", "relu_pre_mode",
                                                                  "phase")):
        raise ctx.error(InvalidOperationError, "store: scale/relu/phase apply to Acc tiles "
                                               "(fixpipe) only", node)
    if scale is not None:
        _check_fixpipe_quant(ctx, op, t.dtype, dst.type.dtype, node)
    if isinstance(getattr(scale, "type", None), TileType):
        if kw.get("relu_pre_mode") is not None:
            raise ctx.builder_error("scale (per-channel) cannot be used together with "
                                    "relu_pre_mode", node)
        if kw.get("phase") is not None:
            raise ctx.builder_error("scale (per-channel) cannot be combined with phase", node)
        opname, extra, scale = "block.store_fp", [scale], None
    kwargs = {"relu_pre_mode": kw.get("relu_pre_mode"), "atomic": kw.get("atomic"),
              "phase": kw.get("phase"), "scale": scale, "is_transpose": transpose or None,
              "tile_dims": tuple(dims) if dims != [rank - 2, rank - 1] and rank >= 2 else None}
    _check_enum(ctx, kwargs, "atomic", attrs.AtomicType, node)
    _check_enum(ctx, kwargs, "phase", attrs.STPhase, node)
    _check_enum(ctx, kwargs, "relu_pre_mode", attrs.ReluPreMode, node)
    _check_scale(ctx, scale, node)
    return emit_op(ctx, opname, [dst, src, PyList(offs), *extra, *args[3:]], kwargs, node)


def _check_enum(ctx: ParseContext, kwargs: dict, key: str, enum_cls: type, node: ast.AST):
    v = kwargs.get(key)
    if v is not None and not isinstance(v, enum_cls):
        raise ctx.error(FinalRejectionError, f"'{key}' expects an enum value "
                                             f"pl.{enum_cls.__name__}.*, got {v!r}", node)


def _check_scale(ctx: ParseContext, scale: Any, node: ast.AST) -> None:
    if scale is None or isinstance(scale, float) or isinstance(scale, int):
        return
    t = getattr(scale, "type", None)
    if isinstance(t, ScalarType) and t.dtype not in (DataType.FP32, DataType.INT32,
                                                     DataType.INT64):
        raise ctx.error(ParserTypeError, f"runtime scale must be FP32, INT32 or INT64, got "
                                         f"{t.dtype}", node)


#: the data paths the real `pl.move` takes, in the order its refusal names them
_MOVES = ((M.Mat, M.Left), (M.Mat, M.Right), (M.Mat, M.Scaling), (M.Mat, M.Bias),
          (M.Mat, M.ScaleLeft), (M.Mat, M.ScaleRight), (M.Acc, M.Vec), (M.Vec, M.Vec),
          (M.Vec, M.Mat))
_MOVES_NAMED = ", ".join(f"{a.value}->{b.value}" for a, b in _MOVES)


def move(ctx: ParseContext, node: ast.Call, op: str) -> Any:
    args, kw = eval_args(ctx, node)
    if len(args) not in (2, 3):
        raise ctx.error(ParserTypeError, "pl.move(dst, src, offset=None, ...)", node)
    dst = _tile(ctx, args[0], node, "move destination")
    src = _tile(ctx, args[1], node, "move source")
    offset = args[2] if len(args) == 3 else kw.get("offset")
    if _move_is_insert(dst.type, src.type, offset, kw):
        return _insert(ctx, node, dst, src, [0, 0] if offset is None else offset)
    path = (src.type.memory, dst.type.memory)
    if path not in _MOVES:  # (Acc->Mat and Mat->Vec are not among them: insert / store)
        raise ctx.builder_error(f"move: unsupported data path src({path[0].value})->dst("
                                f"{path[1].value}), supported paths: {_MOVES_NAMED}", node)
    mode = kw.get("acc_to_vec_mode")
    _check_enum(ctx, kw, "acc_to_vec_mode", attrs.AccToVecMode, node)
    if mode is not None and path != (M.Acc, M.Vec):
        raise ctx.error(InvalidOperationError, "acc_to_vec_mode applies to Acc->Vec moves",
                        node)
    offset = kw.pop("offset", None)
    rest = list(args[2:]) if len(args) == 3 else ([offset] if offset is not None else [])
    if rest:
        rest = [PyList(int_items(ctx, rest[0], node, "move offset"))]
    _check_move_shapes(ctx, dst.type, src.type, rest[0].items if rest else None, mode, node)
    if mode in (attrs.AccToVecMode.DualModeSplitM, attrs.AccToVecMode.DualModeSplitN):
        src = _align_dual_split(ctx, src, mode, node)
    scale = kw.get("scale")
    if scale is not None:
        _check_fixpipe_quant(ctx, "move", src.type.dtype, dst.type.dtype, node)
    if isinstance(getattr(scale, "type", None), TileType):
        if mode in (attrs.AccToVecMode.DualModeSplitM, attrs.AccToVecMode.DualModeSplitN):
            raise ctx.builder_error("scale (per-channel) only supports single-mode "
                                    "acc_to_vec_mode", node)
        return emit_op(ctx, "block.move_fp", [dst, src, scale, *rest],
                       {"acc_to_vec_mode": mode, "relu_pre_mode": kw.get("relu_pre_mode")}, node)
    return emit_op(ctx, "block.move", [dst, src, *rest],
                   {"acc_to_vec_mode": mode, "relu_pre_mode": kw.get("relu_pre_mode"),
                    "scale": scale}, node)


def _check_move_shapes(ctx: ParseContext, dst: TileType, src: TileType, offset: list | None,
                       mode: Any, node: ast.AST) -> None:
    """The real TMOV builder's shape rules: without an offset equal shapes or a 2-D transpose;
    with one, the destination a sub-rectangle of the source and the offset inside it (an Acc->Vec
    split mode decides the shapes itself)."""
    d, s = list(dst.shape), list(src.shape)
    if mode is None and offset is None and d not in (s, s[::-1]):
        raise ctx.builder_error(f"pl.move: dst tile shape {d} != src tile shape {s} — without "
                                f"offset, move requires equal shapes or a 2D transpose "
                                f"[M,N]->[N,M] (use offset= for sub-block extraction).", node)
    if mode is None and offset is not None:
        for axis, (a, b) in enumerate(zip(d, s)):
            if a > b:
                raise ctx.builder_error(f"pl.move: with offset, dst dim {axis} ({a}) exceeds src "
                                        f"dim ({b}) — dst must be a sub-rectangle of src (dst "
                                        f"shape={d}, src shape={s}).", node)
    if offset is None and d != s and src.memory is M.Mat:
        # the builder lets a 2-D transpose through, but pto-isa's TMOV out of L1 static-asserts
        # equal shapes, so bisheng refuses the kernel
        raise ctx.error(InvalidShape, f"move: a Mat -> {dst.memory.value} TMOV needs equal tile "
                                      f"shapes (pto-isa's TMOV static-asserts it), got dst {d} "
                                      f"and src {s}", node,
                        hint="declare the Mat tile in the L0 tile's shape, with layout pl.ZN "
                             "and a load with order=[1, 0] for a transposed operand")
    for i, (o, full) in enumerate(zip(offset or (), s)):
        k, v = try_const(o)
        if k and v >= full:
            raise ctx.builder_error(f"move: offset[{i}] ({v}) exceeds source shape[{i}] ({full})",
                                    node)


_TRANSPOSED = {TileLayout.NZ: TileLayout.ZN, TileLayout.ZN: TileLayout.NZ,
               TileLayout.NN: TileLayout.ZZ, TileLayout.ZZ: TileLayout.NN,
               TileLayout.ND: TileLayout.DN, TileLayout.DN: TileLayout.ND}


def _move_is_insert(dst: TileType, src: TileType, offset: Any, kw: dict) -> bool:
    """The real `pl.move` is a TINSERT when it places a smaller tile into a larger one at an
    offset (a transposed-layout pair compares the destination's shape reversed), or moves a Vec
    tile into a same-sized transposed-layout Mat tile (TMOV cannot convert the layout); never
    with the move-only keywords."""
    if any(kw.get(k) is not None for k in ("acc_to_vec_mode", "relu_pre_mode", "scale")):
        return False
    transposed = _TRANSPOSED[dst.layout] is src.layout
    dst_shape = dst.shape[::-1] if transposed else dst.shape
    grows = offset is not None and all(d >= s for d, s in zip(dst_shape, src.shape)) and \
        any(d > s for d, s in zip(dst_shape, src.shape))
    return grows or (transposed and dst.shape == src.shape[::-1] and src.memory is M.Vec and
                     dst.memory is M.Mat)


def _align_dual_split(ctx: ParseContext, acc: Expr, mode: attrs.AccToVecMode,
                      node: ast.AST) -> Expr:
    """The real toolchain rounds the Acc tile's valid shape up before a dual-destination move
    (rows to even for SplitM, columns to a multiple of 32 for SplitN; the fixpipe sends half of
    the rounded window to each AIV) and keeps it rounded: an explicit `set_validshape` here."""
    axis, align = (0, 2) if mode is attrs.AccToVecMode.DualModeSplitM else (1, 32)
    static = acc.type.valid_shape[axis]
    if static is not None:
        if static % align:
            what = ("row", "column")[axis]
            raise ctx.error(InvalidShape, f"move: {mode.name} needs a valid {what} count that is "
                                          f"a multiple of {align}; the Acc tile's static valid "
                                          f"shape has {static}", node,
                            hint="leave the valid shape dynamic (the move then rounds it up)")
        return acc
    if isinstance(acc, Call):
        acc = materialize(ctx, acc, "acc")
    span = ctx.span(node)
    dims = [Call("block.tile_valid_shape", (acc, ConstInt(k)), (), INDEX, span) for k in (0, 1)]
    dims[axis] = binary(ctx, BinOp.Mul, binary(ctx, BinOp.FloorDiv, binary(
        ctx, BinOp.Add, dims[axis], align - 1, node), align, node), align, node)
    emit_op(ctx, "block.set_validshape", [acc, PyList(dims)], {}, node, check_tiles=False)
    return acc


def insert(ctx: ParseContext, node: ast.Call, op: str) -> Any:
    args, _ = eval_args(ctx, node)
    if len(args) != 3:
        raise ctx.error(ParserTypeError, "pl.insert(dst, src, [row, col])", node)
    dst = _tile(ctx, args[0], node, "insert destination")
    src = _tile(ctx, args[1], node, "insert source")
    return _insert(ctx, node, dst, src, args[2])


def _insert(ctx: ParseContext, node: ast.Call, dst: Expr, src: Expr, offset: Any) -> Any:
    if (src.type.memory, dst.type.memory) not in ((M.Vec, M.Mat), (M.Acc, M.Mat), (M.Vec, M.Vec)):
        raise ctx.error(InvalidOperationError, f"insert: unsupported path "
                                               f"{src.type.memory.value}->{dst.type.memory.value}",
                        node)
    off = int_items(ctx, offset, node, "insert offset")
    if len(off) != 2:
        raise ctx.builder_error("offset must contain exactly 2 elements", node)
    # an NZ source lands in a ZN destination transposed: its offset indexes the [cols, rows] view
    view = dst.type.shape[::-1] if (src.type.layout, dst.type.layout) == (
        TileLayout.NZ, TileLayout.ZN) else dst.type.shape
    for i, (o, bound, full, part) in enumerate(zip(off, dst.type.shape, view, src.type.shape)):
        k, v = try_const(o)
        if k and v >= bound:  # the real builder's own bound, in its words
            raise ctx.builder_error(f"insert: offset[{i}] ({v}) exceeds source shape[{i}] "
                                    f"({bound})", node)
        if k and not 0 <= v <= full - part:
            raise ctx.error(OutOfRange, f"insert offset {v} puts a {part}-wide tile outside the "
                                        f"{full}-wide destination", node)
    return emit_op(ctx, "block.insert", [dst, src, PyList(off)], {}, node)


# ---------------------------------------------------------------- compute dispatch (spec §2.7)


def _same_dtype(ctx: ParseContext, op: str, tiles: list[Expr], node: ast.AST) -> None:
    dts = {t.type.dtype for t in tiles}
    if len(dts) > 1:
        raise ctx.error(ParserTypeError, f"pl.{op}: operands must have the same dtype (no "
                                         f"implicit promotion), got "
                                         f"{', '.join(sorted(str(d) for d in dts))}", node)


def arith(ctx: ParseContext, node: ast.Call, op: str) -> Any:
    """add/sub/mul/div/maximum/minimum/and_/shl/shr: tile rhs → tile op, scalar → `<op>s`."""
    args, kw = eval_args(ctx, node)
    name = {"and_": "and"}.get(op, op)
    if kw.get("dim") is not None and op in ("maximum", "minimum"):
        if kw["dim"] not in (0, 1):  # as pl.sum / pl.argmax refuse it
            raise ctx.error(OutOfRange, f"pl.{op}: dim must be None (element-wise), 0 (along "
                                        f"the last axis) or 1", node)
        axis = "row" if kw["dim"] == 0 else "col"
        return emit_op(ctx, f"block.{axis}_{'max' if op == 'maximum' else 'min'}", args, {},
                       node)
    if len(args) == 3 and not isinstance(getattr(args[2], "type", None), TileType):
        scalar = {"maximum": "maxs", "minimum": "mins"}.get(op, f"{name}s")
        return emit_op(ctx, f"block.{scalar}", args, {}, node)
    if len(args) == 3:
        _same_dtype(ctx, op, [_tile(ctx, a, node, f"pl.{op} operand") for a in args[1:]], node)
    for a in args:
        t = getattr(a, "type", None)
        if isinstance(t, TileType) and t.memory is not M.Vec:
            raise ctx.error(InvalidOperationError, f"pl.{op} works on Vec (UB) tiles; "
                                                   f"{_name(a)} is a {t.memory.value} tile", node,
                            hint="vector ops read and write the UB: move the data there first")
    return emit_op(ctx, f"block.{name}", args, {}, node)


def compare(ctx: ParseContext, node: ast.Call, op: str) -> Any:
    args, _ = eval_args(ctx, node)
    mode = getattr(attrs.CompareMode, op.upper())
    scalar = len(args) == 3 and not isinstance(getattr(args[2], "type", None), TileType)
    return emit_op(ctx, "block.cmps" if scalar else "block.cmp", args, {"cmp_mode": mode}, node)


def select_op(ctx: ParseContext, node: ast.Call, op: str) -> Any:
    args, _ = eval_args(ctx, node)
    scalar = len(args) >= 4 and not isinstance(getattr(args[3], "type", None), TileType)
    return emit_op(ctx, "block.sels" if scalar else "block.sel", args, {}, node)


def addc(ctx: ParseContext, node: ast.Call, op: str) -> Any:
    args, _ = eval_args(ctx, node)
    scalar = len(args) == 4 and not isinstance(getattr(args[3], "type", None), TileType)
    return emit_op(ctx, "block.addsc" if scalar else "block.addc", args, {}, node)


def reduce_op(ctx: ParseContext, node: ast.Call, op: str) -> Any:
    args, kw = eval_args(ctx, node)
    dim = kw.get("dim", 0)
    if dim not in (0, 1):
        raise ctx.error(OutOfRange, f"pl.{op}: dim must be 0 (along the last axis) or 1", node)
    return emit_op(ctx, f"block.{'row' if dim == 0 else 'col'}_{op}", args, {}, node)


def expand(ctx: ParseContext, node: ast.Call, op: str) -> Any:
    args, kw = eval_args(ctx, node)
    dim = kw.get("dim", 0)
    if dim not in (0, 1):
        raise ctx.error(OutOfRange, f"pl.{op}: dim must be 0 or 1", node)
    kind = op.split("_", 1)[1]
    return emit_op(ctx, f"block.{'row' if dim == 0 else 'col'}_expand_{kind}", args, {}, node)


def cast(ctx: ParseContext, node: ast.Call, op: str) -> Any:
    args, kw = eval_args(ctx, node)
    mode = kw.get("mode", attrs.RoundMode.CAST_ROUND)
    _check_enum(ctx, {"mode": mode}, "mode", attrs.RoundMode, node)
    return emit_op(ctx, "block.cast", args, {"mode": mode}, node)


def quant(ctx: ParseContext, node: ast.Call, op: str) -> Any:
    """`pl.quant(out, src, scale, *, mode=SYM, offset=None)` as the real builder takes it: in
    ASYM mode the offset tile becomes the fourth operand (and is required); SYM ignores it."""
    args, kw = eval_args(ctx, node)
    offset = kw.pop("offset", None)
    mode = kw.get("mode", attrs.QuantMode.SYM)
    _check_enum(ctx, {"mode": mode}, "mode", attrs.QuantMode, node)
    if mode is attrs.QuantMode.ASYM and len(args) == 3:
        if offset is None:
            raise ctx.builder_error("quant in 'asym' mode requires an offset argument", node)
        args.append(offset)
    return emit_op(ctx, "block.quant", args, {**kw, "mode": mode}, node)


def fillpad(ctx: ParseContext, node: ast.Call, op: str) -> Any:
    args, kw = eval_args(ctx, node)
    mode = kw.get("mode", attrs.FillPadMode.NORMAL)
    name = {attrs.FillPadMode.NORMAL: "fillpad", attrs.FillPadMode.EXPAND: "fillpad_expand",
            attrs.FillPadMode.INPLACE: "fillpad_inplace"}.get(mode) if isinstance(
        mode, attrs.FillPadMode) else None
    if name is None:
        raise ctx.error(ParserTypeError, "fillpad: mode must be a pl.FillPadMode", node)
    return emit_op(ctx, f"block.{name}", args, {}, node)


def matmul(ctx: ParseContext, node: ast.Call, op: str) -> Any:
    args, kw = eval_args(ctx, node)
    check_matmul(ctx, node, op, args)
    phase = kw.get("phase")
    _check_enum(ctx, kw, "phase", attrs.AccPhase, node)
    name = op
    if op == "matmul" and len(args) == 4:
        name = "matmul_bias"
    return emit_op(ctx, f"block.{name}", args, {"phase": phase}, node)


def getval(ctx: ParseContext, node: ast.Call, op: str) -> Any:
    args, _ = eval_args(ctx, node)
    if len(args) != 2:
        raise ctx.error(ParserTypeError, "pl.getval(container, offset)", node)
    t = getattr(args[0], "type", None)
    if not isinstance(t, (TileType, TensorType)):
        raise ctx.error(ParserTypeError, "pl.getval needs a tile or tensor", node)
    dtype = t.dtype
    if dtype.is_int and dtype.bits < 64:
        dtype = DataType.INT64  # integers widen to INT64 when read (newer)
    call = emit_op(ctx, "block.getval", args, {}, node, result_type=ScalarType(dtype))
    return materialize(ctx, call, "val")


def setval(ctx: ParseContext, node: ast.Call, op: str) -> Any:
    args, _ = eval_args(ctx, node)
    return emit_op(ctx, "block.setval", args, {}, node)


def set_stride(ctx: ParseContext, node: ast.Call, op: str) -> Any:
    args, _ = eval_args(ctx, node)
    if len(args) != 2:
        raise ctx.error(ParserTypeError, "pl.set_stride(tensor, [row_stride, col_stride])", node)
    _tensor(ctx, args[0], node, "set_stride target")
    items = int_items(ctx, args[1], node, "strides")
    return emit_op(ctx, "block.set_stride", [args[0], PyList(items)], {}, node,
                   check_tiles=False)


def reinterpret(ctx: ParseContext, node: ast.Call, op: str) -> Any:
    args, kw = eval_args(ctx, node)
    if len(args) != 1:
        raise ctx.error(ParserTypeError, "pl.reinterpret(tile, *, dtype=None, shape=None, "
                                         "layout=None)", node)
    src = _tile(ctx, args[0], node, "reinterpret source")
    t: TileType = src.type
    dtype, shape, layout = kw.get("dtype"), kw.get("shape"), kw.get("layout")
    if dtype is not None and not isinstance(dtype, DataType) or \
            layout is not None and not isinstance(layout, TileLayout):
        raise ctx.error(ParserTypeError, "reinterpret: dtype= must be a pl.DT_* and layout= a "
                                         "pl layout", node)
    if shape is not None:
        shape = int_items(ctx, shape, node, "reinterpret shape")
        if len(shape) != 2 or not all(isinstance(d, int) and d > 0 for d in shape):
            raise ctx.error(InvalidShape, "reinterpret: shape= must be two positive "
                                          "compile-time ints", node)
    new = replace(t, dtype=dtype or t.dtype, shape=tuple(shape) if shape else t.shape,
                  layout=layout or t.layout, valid_shape=(None, None))
    if new.nbytes > t.nbytes:
        raise ctx.error(InvalidShape, "reinterpret: the new view is larger than the buffer",
                        node)
    call = Call("block.reinterpret", (src,), (), new, ctx.span(node))
    return materialize(ctx, call, "view")


HANDLERS = {
    "make_tile": make_tile, "make_tile_group": make_tile_group,
    "set_validshape": set_validshape, "load": load, "load_tile": load, "store": store,
    "store_tile": store, "move": move, "insert": insert,
    **{n: arith for n in ("add", "sub", "mul", "div", "maximum", "minimum", "and_", "shl",
                          "shr")},
    **{n: compare for n in ("eq", "ne", "lt", "le", "gt", "ge")},
    "select": select_op, "addc": addc,
    **{n: reduce_op for n in ("sum", "argmax", "argmin")},
    **{n: expand for n in ("expand_max", "expand_min", "expand_mul", "expand_sub",
                           "expand_div")},
    "cast": cast, "fillpad": fillpad, "quant": quant,
    **{n: matmul for n in MATMUL_ROLES},
    "getval": getval, "setval": setval, "set_stride": set_stride, "reinterpret": reinterpret,
}
