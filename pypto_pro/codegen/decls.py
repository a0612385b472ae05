"""Assignments: what each kind of IR value becomes when a Var is bound to it (spec §4.1).
`block.make_tile` is a tile object of the type's alias (constructed with the full shape when the
valid shape is set at run time) bound with `TASSIGN(t, 0xADDR)`, or a reference to the object of
an earlier make_tile of the same tile in scope (`scopes.same_tile`); `tile_group.make` a C array of
such tiles, one `TASSIGN` per slot, plus `<g>_mutex`, the slots' mutex ids (what
`tile_group.mutex_id(g, i, k)` reads); a tile value (`g[i]`, a Var, `c ? a : b`) a reference
to it; `subview` / `reinterpret` / `reshape` a new tile object over the same bytes (a view of
a view gets an object of its own first);
`ptr.make_tensor` a GM view (base pointer, stride array, GlobalTensor instance);
`struct.create` an object of the struct's class; scalars and pointers a typed declaration (an
assignment when the Var is hoisted). Hoisted tiles are pointers (`T* t`), assigned `t = &value`;
hoisted groups are pointers to their slots and id table; the storage of a hoisted make_tile or
make_tile_group lives in the function prologue. Register Vars of VF code are
handled by `vf`.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from ..errors import NotSupported
from ..ir.nodes import AssignStmt, Call, Expr, Var
from ..ir.types import (
    MaskType,
    PtrType,
    RegType,
    ScalarType,
    StructType,
    TensorType,
    TileGroupType,
    TileLayout,
    TileType,
)
from .context import TensorView
from .types import (
    ctype, gt_template, has_runtime_valid, scalar_ctype, set_valid_shape, tile_ctor_args,
    tile_key,
)


def assign(body, s: AssignStmt) -> None:
    v, e = s.var, s.value
    if isinstance(v.type, (RegType, MaskType)):
        from .vf import assign_register

        assign_register(body, s)
        return
    if isinstance(e, Call) and e.op in DECLARATIONS:
        if body.ctx.scopes.is_hoisted(v) and e.op not in HOISTABLE:
            raise NotSupported(f"codegen: a variable bound to {e.op} in several places or "
                               "used outside its block", s.span, module="PRO_COMPILE",
                               hint="bind it once, in the block where it is used")
        DECLARATIONS[e.op](body, s)
        return
    t = v.type
    if isinstance(t, TileType):
        _bind_tile(body, s)
    elif isinstance(t, TensorType):
        _alias_tensor(body, s)
    elif isinstance(t, TileGroupType):
        _alias_group(body, s)
    else:
        _bind_value(body, s)


def _declared(body, v: Var) -> bool:
    scopes = body.ctx.scopes
    return scopes.is_hoisted(v) or v in scopes.structural


def _bind_value(body, s: AssignStmt) -> None:
    name = body.ctx.name(s.var)
    value = body.x.emit(s.value)
    if _declared(body, s.var):
        body.w.line(f"{name} = {value};", s.span)
        return
    t = s.var.type
    decl = scalar_ctype(t) if isinstance(t, (ScalarType, StructType, PtrType)) else "auto"
    body.w.line(f"{decl} {name} = {value};", s.span)


def _bind_tile(body, s: AssignStmt) -> None:
    name = body.ctx.name(s.var)
    if _declared(body, s.var):
        body.w.line(f"{name} = &{body.x.paren(s.value, 15)};", s.span)
        return
    alias = body.ctx.alias(s.var.type)
    body.w.line(f"{alias}& {name} = {body.x.emit(s.value)};", s.span)


def _alias_tensor(body, s: AssignStmt) -> None:
    src = s.value
    view = body.ctx.tensors.get(src) if isinstance(src, Var) else None
    if view is None:
        raise NotSupported("codegen: a tensor variable must be a parameter, a make_tensor view "
                           "or another tensor variable", s.span, module="PRO_COMPILE")
    body.ctx.tensors[s.var] = view


def _alias_group(body, s: AssignStmt) -> None:
    if not isinstance(s.value, Var):
        raise NotSupported("codegen: a tile group must be bound to its make_tile_group or "
                           "another group variable", s.span, module="PRO_COMPILE")
    name, src = body.ctx.name(s.var), body.ctx.name(s.value)
    if _declared(body, s.var):  # hoisted: pointers to the slots and the id table
        body.w.line(f"{name} = {src};", s.span)
        if s.var.type.mutex_ids:
            body.w.line(f"{name}_mutex = {src}_mutex;", s.span)
        return
    body.w.line(f"auto& {name} = {src};", s.span)
    if s.var.type.mutex_ids:
        body.w.line(f"const auto& {name}_mutex = {src}_mutex;", s.span)


# ---------------------------------------------------------------- declaration calls


def _make_tile(body, s: AssignStmt) -> None:
    t: TileType = s.value.type
    name = body.ctx.name(s.var)
    storage = body.ctx.hoisted_storage.get(id(s.value))
    if storage is not None:  # hoisted: fresh valid shape, then point at the prologue storage
        if has_runtime_valid(t):
            body.w.line(set_valid_shape(storage, t, *map(str, t.shape)), s.span)
        body.w.line(f"{name} = &{storage};", s.span)
        return
    alias = body.ctx.alias(t)
    first = body.ctx.scopes.same_tile.get(s.var)
    if first is not None:  # the same tile as an earlier make_tile: one object, valid shape reset
        body.w.line(f"{alias}& {name} = {body.ctx.name(first)};", s.span)
        if has_runtime_valid(t):
            body.w.line(set_valid_shape(name, t, *map(str, t.shape)), s.span)
        return
    body.w.line(f"{alias} {name}{tile_ctor_args(t)};", s.span)
    body.w.line(f"TASSIGN({name}, {t.addr:#x});", s.span)


def declare_tile_storage(body, call: Call, storage: str) -> None:
    """The prologue object behind a hoisted make_tile (constructed and bound once)."""
    t: TileType = call.type
    body.w.line(f"{body.ctx.alias(t)} {storage}{tile_ctor_args(t)};", call.span)
    body.w.line(f"TASSIGN({storage}, {t.addr:#x});", call.span)


def _make_group(body, s: AssignStmt) -> None:
    name = body.ctx.name(s.var)
    storage = body.ctx.hoisted_storage.get(id(s.value))
    if storage is not None:  # hoisted: point at this binding's prologue storage
        body.w.line(f"{name} = {storage};", s.span)
        if s.value.type.mutex_ids:
            body.w.line(f"{name}_mutex = {storage}_mutex;", s.span)
        return
    declare_group_storage(body, s.value, name)


def declare_group_storage(body, call: Call, name: str) -> None:
    """The slots of a make_tile_group (a C array, one TASSIGN per slot) and its id table."""
    gt: TileGroupType = call.type
    alias = body.ctx.alias(gt.slot_type(0))
    ctor = tile_ctor_args(gt.tile)
    if ctor:
        init = ", ".join(f"{alias}{ctor}" for _ in gt.addrs)
        body.w.line(f"{alias} {name}[{gt.depth}] = {{{init}}};", call.span)
    else:
        body.w.line(f"{alias} {name}[{gt.depth}];", call.span)
    for i, addr in enumerate(gt.addrs):
        body.w.line(f"TASSIGN({name}[{i}], {addr:#x});", call.span)
    if gt.mutex_ids:
        body.w.line(_mutex_table(name, gt.mutex_ids), call.span)


def declare_group_pointer(body, var: Var, calls: list[Call]) -> None:
    """A group bound in several places: pointers to the slots and the id table, assigned at
    each binding (every binding must have the same slot type, depth and ids per slot)."""
    shapes = {(tile_key(c.type.slot_type(0)), c.type.depth, len(c.type.mutex_ids[0])
               if c.type.mutex_ids else 0) for c in calls}
    if len(shapes) != 1:
        raise NotSupported("codegen: a tile group variable bound to groups of different slot "
                           "types, depths or id counts", var.span, module="PRO_COMPILE",
                           hint="use one variable per kind of group")
    gt: TileGroupType = calls[0].type
    name = body.ctx.name(var)
    body.w.line(f"{body.ctx.alias(gt.slot_type(0))}* {name} = nullptr;", var.span)
    if gt.mutex_ids:
        k = len(gt.mutex_ids[0])
        decl = f"const int32_t* {name}_mutex" if k == 1 else \
            f"const int32_t (*{name}_mutex)[{k}]"
        body.w.line(f"{decl} = nullptr;", var.span)


def _mutex_table(name: str, ids: tuple[tuple[int, ...], ...]) -> str:
    if len(ids[0]) == 1:
        return f"const int32_t {name}_mutex[{len(ids)}] = {{{', '.join(str(r[0]) for r in ids)}}};"
    rows = ", ".join("{" + ", ".join(map(str, r)) + "}" for r in ids)
    return f"const int32_t {name}_mutex[{len(ids)}][{len(ids[0])}] = {{{rows}}};"


def _view(body, s: AssignStmt) -> None:
    _VIEWS[s.value.op](body, body.ctx.name(s.var), s.value, s.span)


def _source(body, e: Expr, span) -> str:
    """The C++ tile a view is taken of; a view of a view gets its own object first."""
    if isinstance(e, Call) and e.op in _VIEWS:
        name = body.ctx.fresh("view")
        _VIEWS[e.op](body, name, e, span)
        return name
    return body.x.paren(e, 16)


def _view_of_tile(body, name: str, span, new_type: TileType, valid: tuple[str, str] | None,
                  addr: str, extra: str | None = None) -> None:
    alias = body.ctx.alias(new_type)
    ctor = f"({valid[0]}, {valid[1]})" if valid else tile_ctor_args(new_type)
    body.w.line(f"{alias} {name}{ctor};", span)
    if addr:
        body.w.line(f"TASSIGN({name}, {addr});", span)
    if extra:
        body.w.line(extra.format(name=name), span)


def _base_addr(src: str, byte_offset: str | None = None) -> str:
    base = f"reinterpret_cast<uint64_t>({src}.data())"
    return f"{base} + {byte_offset}" if byte_offset else base


def _subview(body, name: str, call: Call, span) -> None:
    """Whole rows of an ND tile from row r0: valid rows clipped to the parent's (simulator)."""
    parent, offsets = call.args[0], call.args[1]
    sub: TileType = call.type
    pt: TileType = parent.type
    r0, c0 = body.x.ints(offsets)
    if pt.layout is not TileLayout.ND or c0 != "0" or sub.shape[1] != pt.shape[1]:
        raise NotSupported("codegen: tile slices must keep whole rows of an ND tile",
                           span, module="PRO_COMPILE")
    src = _source(body, parent, span)
    dyn = replace(sub, valid_shape=(None, None))
    rows = f"pypto_min<int64_t>(static_cast<int64_t>({src}.GetValidRow()) - {r0}, {sub.shape[0]})"
    offset = f"{r0} * {pt.shape[1] * pt.dtype.itemsize}" if r0 != "0" else None
    _view_of_tile(body, name, span, dyn, (rows, str(sub.shape[1])), _base_addr(src, offset))


def _reinterpret(body, name: str, call: Call, span) -> None:
    _view_of_tile(body, name, span, call.type, None,
                  _base_addr(_source(body, call.args[0], span)))


def _reshape(body, name: str, call: Call, span) -> None:
    src = _source(body, call.args[0], span)
    _view_of_tile(body, name, span, call.type, None, "", extra=f"TRESHAPE({{name}}, {src});")


_VIEWS: dict[str, Callable] = {
    "block.subview": _subview,
    "block.reinterpret": _reinterpret,
    "block.reshape": _reshape,
}


def _make_tensor(body, s: AssignStmt) -> None:
    call: Call = s.value
    t: TensorType = call.type
    ctx, x = body.ctx, body.x
    name = ctx.name(s.var)
    src = call.args[0]
    base = ctx.tensors[src].ptr if isinstance(src.type, TensorType) else x.emit(src)
    shape = x.ints(call.args[1])
    strides = x.ints(call.args[2]) if len(call.args) > 2 else row_major(shape)
    view = TensorView(f"{name}_ptr", f"{name}_gt", f"{name}_GT", f"{name}_stride",
                      tuple(shape), t.dtype, t.layout)
    body.w.line(f"__gm__ {ctype(t.dtype)}* {view.ptr} = "
                f"reinterpret_cast<__gm__ {ctype(t.dtype)}*>({base});", s.span)
    declare_view(body, view, strides, s.span)
    ctx.tensors[s.var] = view


def declare_view(body, view: TensorView, strides: list[str], span) -> None:
    """Stride array, GlobalTensor alias and instance of a GM tensor view. The instance gets
    the strides of the axes a tile's rows and columns run along by default (the last two; a
    1-D tensor is one row) in its constructor, as pto-isa's GlobalTensor takes them."""
    body.w.line(f"int64_t {view.stride}[{len(strides)}] = {{{', '.join(strides)}}};", span)
    body.w.line(f"using {view.alias} = {gt_template(view.dtype, view.layout)};", span)
    rs, cs = default_strides(view)
    body.w.line(f"{view.alias} {view.gt}({view.ptr}, {view.alias}::Shape(), "
                f"{view.alias}::Stride(1, 1, 1, {rs}, {cs}));", span)


def default_strides(view: TensorView) -> tuple[str, str]:
    """(row stride, column stride) of a window on the view's last two axes."""
    if view.rank == 1:
        return "0", f"{view.stride}[0]"
    return f"{view.stride}[{view.rank - 2}]", f"{view.stride}[{view.rank - 1}]"


def row_major(shape: list[str]) -> list[str]:
    """Row-major element strides of `shape` (C++ expressions)."""
    out, acc = [], []
    for d in reversed(shape):
        out.append(" * ".join(acc) if acc else "1")
        acc.insert(0, d if d.isidentifier() or d.isdigit() else f"({d})")
    return list(reversed(out))


def _struct(body, s: AssignStmt) -> None:
    call: Call = s.value
    st: StructType = call.type
    name = body.ctx.name(s.var)
    size = call.kwarg("array_size")
    body.w.line(f"{st.name} {name}{{}};", s.span)
    for (field, _), value in zip(st.fields, call.args):
        v = body.x.emit(value)
        if size:
            k = body.ctx.fresh("k")
            body.w.line(f"for (int64_t {k} = 0; {k} < {size}; ++{k}) {{ {name}.{field}[{k}] = "
                        f"{v}; }}", s.span)
        else:
            body.w.line(f"{name}.{field} = {v};", s.span)


#: declarations a hoisted Var may be bound to (their storage lives in the function prologue)
HOISTABLE = ("block.make_tile", "tile_group.make")

DECLARATIONS: dict[str, Callable] = {
    "block.make_tile": _make_tile,
    "tile_group.make": _make_group,
    **dict.fromkeys(_VIEWS, _view),
    "ptr.make_tensor": _make_tensor,
    "struct.create": _struct,
}

__all__ = ["DECLARATIONS", "HOISTABLE", "assign", "declare_group_pointer",
           "declare_group_storage", "declare_tile_storage", "declare_view", "default_strides",
           "row_major"]
