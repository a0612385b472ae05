"""Value-producing calls of the scalar unit: system variables, tile / group objects, descriptors,
tensor views and scalar reads of memory.

Each `compile_*` returns a closure `f(frame) -> value`; the core supplies block geometry and
memory (`frame.core`).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

import torch

from ...errors import NotSupported, SimulationError
from ...ir.nodes import Call, MakeTuple
from ...ir.types import TensorType, TileGroupType, TileType
from ..model.cost_model import op_cost
from ..model.memory import GMRef, TileGeometry
from .program import Frame, RtGroup, RtTile, initial_valid, make_rt_tile

Fn = Callable[[Frame], Any]


def compile_value_call(c, e: Call) -> Fn:
    handler = _VALUE_CALLS.get(e.op)
    if handler is None:
        raise NotSupported(f"simulator: '{e.op}' cannot be used as a value", e.span)
    return handler(c, e)


def _sysvar(name: str):
    def build(c, e: Call) -> Fn:
        return lambda fr: getattr(fr.core, name)

    return build


def _make_tile(c, e: Call) -> Fn:
    t: TileType = e.type
    if t.addr is None:  # (fails at run time, as a tile op on an unplaced tile does)
        return lambda fr: make_rt_tile(t, t.addr)
    geom, valid = TileGeometry.from_tile_type(t, t.addr), initial_valid(t)
    return lambda fr: RtTile(geom, valid, t)  # placement fixed: worked out once


def _make_group(c, e: Call) -> Fn:
    t: TileGroupType = e.type
    if any(a is None for a in t.addrs):  # (fails at run time, as `_make_tile`)
        return lambda fr: RtGroup([make_rt_tile(t.tile, a) for a in t.addrs], t.mutex_ids)
    geoms = [TileGeometry.from_tile_type(t.tile, a) for a in t.addrs]  # worked out once
    valid, tile, ids = initial_valid(t.tile), t.tile, t.mutex_ids
    return lambda fr: RtGroup([RtTile(g, valid, tile) for g in geoms], ids)


def _group_get(c, e: Call) -> Fn:
    g, i = c.slot_or_expr(e.args[0]), c.slot_or_expr(e.args[1])
    if type(g) is int and type(i) is int:  # the usual `group[cursor]`: two variables
        return lambda fr: fr.slots[g].slots[fr.slots[i]]
    g, i = c.expr(e.args[0]), c.expr(e.args[1])
    return lambda fr: g(fr).slots[i(fr)]


def _group_mutex_id(c, e: Call) -> Fn:
    g, i = c.slot_or_expr(e.args[0]), c.slot_or_expr(e.args[1])
    k = e.kwarg("k", 0)
    if type(g) is int and type(i) is int:
        return lambda fr: fr.slots[g].mutex_ids[fr.slots[i]][k]
    g, i = c.expr(e.args[0]), c.expr(e.args[1])
    return lambda fr: g(fr).mutex_ids[i(fr)][k]


def _group_cursor_op(c, e: Call) -> Fn:
    raise NotSupported(f"simulator: {e.op} must be lowered by the tile_group_lowering pass",
                       e.span)


def _valid_shape(c, e: Call) -> Fn:
    t, axis = c.expr(e.args[0]), c.expr(e.args[1])
    return lambda fr: t(fr).valid[axis(fr)]


def _subview(c, e: Call) -> Fn:
    """`t[r0:r1, c0:c1]`: a tile of `t`'s geometry (its row stride) at the window's first
    element (ND row-major, DN column-major), valid shape the parser's clipped window."""
    src, starts, sizes = (c.expr(a) for a in e.args)
    sub: TileType = e.type
    span = e.span

    def build(fr: Frame) -> RtTile:
        parent: RtTile = src(fr)
        (r0, c0), (rows, cols) = starts(fr), sizes(fr)
        g = parent.geom
        first = c0 * g.rows + r0 if g.layout.value == "DN" else r0 * g.cols + c0
        if rows < 0 or cols < 0:
            raise SimulationError(f"tile slice from [{r0}, {c0}] starts past the tile's valid "
                                  f"shape {list(parent.valid)}", span)
        return RtTile(replace(g, addr=g.addr + first * g.dtype.itemsize), (rows, cols), sub)

    return build


def _reinterpret(c, e: Call) -> Fn:
    src = c.expr(e.args[0])
    t: TileType = e.type

    def build(fr: Frame) -> RtTile:
        parent: RtTile = src(fr)
        return make_rt_tile(t, parent.geom.addr)

    return build


def _make_tensor(c, e: Call) -> Fn:
    src = c.expr(e.args[0])
    shape = c.expr(e.args[1])
    strides = c.expr(e.args[2]) if len(e.args) > 2 else None
    t: TensorType = e.type

    def build(fr: Frame) -> GMRef | None:
        base = src(fr)
        if base is None or (type(base) is tuple and base[0] is None):
            return None  # a view of a null pointer: harmless until an op accesses it
        tensor, offset = (base.tensor, base.base_offset) if isinstance(base, GMRef) else base
        return _gm_view(tensor, offset, tuple(shape(fr)),
                        tuple(strides(fr)) if strides else None, t)

    return build


def _gm_view(tensor: torch.Tensor, offset: int, shape: tuple, strides: tuple | None,
             t: TensorType) -> GMRef:
    """A GM view over the tensor's own storage (writes land in the user's tensor)."""
    base = GMRef(tensor, dtype=t.dtype).base_offset + offset
    return GMRef(tensor, shape, strides, t.dtype, base)


def _make_ptr(c, e: Call) -> Fn:
    src = c.expr(e.args[0])

    def build(fr: Frame):
        v = src(fr)
        if isinstance(v, GMRef):
            return v.tensor, v.base_offset - GMRef(v.tensor, dtype=v.dtype).base_offset
        return v

    return build


def _addptr(c, e: Call) -> Fn:
    src, off = c.expr(e.args[0]), c.expr(e.args[1])

    def build(fr: Frame):
        base = src(fr)
        tensor, offset = (None, 0) if base is None else base  # null + k: no tensor's address
        return tensor, offset + off(fr)

    return build


def _is_null(c, e: Call) -> Fn:
    """`p is None`: a pointer argument passed as None is bound to None (a null pointer); an
    offset from it is null only when the offset is 0, as the address C++ compares."""
    src = c.expr(e.args[0])

    def test(fr: Frame) -> bool:
        v = src(fr)
        return v is None or (type(v) is tuple and v[0] is None and v[1] == 0)

    return test


def _struct(c, e: Call) -> Fn:
    """A struct is a dict of its fields (an array field a list); a struct_array a list of
    such dicts, each with its own arrays."""
    names = e.kwarg("fields", ())
    size = e.kwarg("array_size")
    values = [c.expr(v) for v in e.args]
    arrays = [isinstance(v, MakeTuple) for v in e.args]

    def one(fr: Frame) -> dict:
        return {n: list(v(fr)) if a else v(fr) for n, v, a in zip(names, values, arrays)}

    if size:
        return lambda fr: [one(fr) for _ in range(size)]
    return one


def _spr(c, e: Call) -> Fn:
    return lambda fr: fr.core.spr


def compile_synced_read(c, e: Call) -> Fn:
    """`block.getval` (and SIMT atomics): executed by the scalar unit after it caught up."""
    if e.op != "block.getval":
        raise NotSupported(f"simulator: {e.op} is not supported yet", e.span)
    src, off = c.expr(e.args[0]), c.expr(e.args[1])
    span = e.span

    def read(fr: Frame) -> Any:
        core = fr.core
        container, offset = src(fr), off(fr)
        ref = core.resolve_scalar_target(container, span)
        cost = op_cost(e.op, [ref, offset], {}, core.launch.soc)
        core.scalar_work(e.op, span, cost.cycles, cost.bytes)  # (a pipe S row, as setval's)
        obs = core.engine.observer
        if obs is not None and not obs.scalar_access(core, ref, offset, False, span):
            return 0  # the sanitizer reported the out-of-bounds read
        try:
            value = ref.read_linear(offset, 1)[0]
        except (IndexError, ValueError) as err:
            raise SimulationError(f"getval out of bounds: {err}", span) from None
        return value.item()

    return read


_VALUE_CALLS: dict[str, Callable] = {
    "get_block_idx": _sysvar("block_idx"),
    "get_block_num": _sysvar("block_num"),
    "get_subblock_idx": _sysvar("subblock_idx"),
    "get_subblock_num": _sysvar("subblock_num"),
    "get_spr": _spr,
    "block.make_tile": _make_tile,
    "tile_group.make": _make_group,
    "tile_group.get": _group_get,
    "tile_group.mutex_id": _group_mutex_id,
    "tile_group.next": _group_cursor_op,
    "tile_group.current": _group_cursor_op,
    "tile_group.previous": _group_cursor_op,
    "block.tile_valid_shape": _valid_shape,
    "block.subview": _subview,
    "block.reinterpret": _reinterpret,
    "ptr.make_tensor": _make_tensor,
    "ptr.make_ptr": _make_ptr,
    "ptr.addptr": _addptr,
    "ptr.is_null": _is_null,
    "struct.create": _struct,
}
