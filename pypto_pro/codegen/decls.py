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
from ..ir.nodes import AssignStmt, Call, Expr, MakeTuple, Var
from ..ir.types import (
    PtrType,
    ScalarType,
    StructType,
    TensorType,
    TileGroupType,
    TileLayout,
    TileType,
)
from . import gm_views
from .context import TensorView
from .types import (
    ctype, gt_template, has_runtime_valid, scalar_ctype, set_valid_shape, tile_ctor_args,
    tile_key,
)


def assign(body, s: AssignStmt) -> None:
    v, e = s.var, s.value
    from .vf import assign_register, is_register

    if is_register(v.type):
        assign_register(body, s)
        return
    if isinstance(e, Call) and e.op in DECLARATIONS:
        if body.ctx.scopes.is_hoisted(v) and e.op not in HOISTABLE and not _whole_struct(e):
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
    """`t[r0:r1, c0:c1]` as the real code generator emits it: a tile of `t`'s type with a
    run-time valid shape, assigned at the window's first element, its valid shape set."""
    parent, starts, sizes = call.args
    pt: TileType = parent.type
    r0, c0 = body.x.ints(starts)
    rows, cols = body.x.ints(sizes)
    first = f"({c0}) * {pt.shape[0]} + ({r0})" if pt.layout is TileLayout.DN else \
        f"({r0}) * {pt.shape[1]} + ({c0})"
    src = _source(body, parent, span)
    dyn = replace(pt, valid_shape=(None, None))
    _view_of_tile(body, name, span, dyn, (rows, cols),
                  _base_addr(src, f"({first}) * {pt.dtype.itemsize}"),
                  extra=f"{{name}}.SetValidShape({rows}, {cols});")


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
    view = new_view(ctx, s.var, name, tuple(shape), t)
    body.w.line(f"__gm__ {ctype(t.dtype)}* {view.ptr} = "
                f"reinterpret_cast<__gm__ {ctype(t.dtype)}*>({base});", s.span)
    declare_view(body, view, strides, s.span)
    ctx.tensors[s.var] = view


def new_view(ctx, var: Var, name: str, shape: tuple[str, ...], t: TensorType) -> TensorView:
    """The view of tensor `var` (C++ names from `name`), with the GlobalTensor instances its
    accesses need (`gm_views`)."""
    return TensorView(f"{name}_ptr", f"{name}_stride", shape, t.dtype, t.layout,
                      gm_views.instances(name, len(shape), t.layout, ctx.gm_accesses.get(var)))


def declare_view(body, view: TensorView, strides: list[str], span) -> None:
    """Stride array, then per GlobalTensor instance its alias and the instance, constructed
    with the strides of the tensor axes its windows run along (`GtInstance.axes`), as
    pto-isa's GlobalTensor takes them."""
    body.w.line(f"int64_t {view.stride}[{len(strides)}] = {{{', '.join(strides)}}};", span)
    for inst in view.instances.values():
        rs, cs = window_strides(view, inst.axes)
        body.w.line(f"using {inst.alias} = {gt_template(view.dtype, inst.layout)};", span)
        body.w.line(f"{inst.alias} {inst.gt}({view.ptr}, {inst.alias}::Shape(), "
                    f"{inst.alias}::Stride(1, 1, 1, {rs}, {cs}));", span)


def window_strides(view: TensorView, axes: tuple[int, int]) -> tuple[str, str]:
    """(row stride, column stride) of a window along tensor `axes` (-1: a virtual axis)."""
    return tuple("0" if a < 0 else f"{view.stride}[{a}]" for a in axes)


def row_major(shape: list[str]) -> list[str]:
    """Row-major element strides of `shape` (C++ expressions)."""
    out, acc = [], []
    for d in reversed(shape):
        out.append(" * ".join(acc) if acc else "1")
        acc.insert(0, d if d.isidentifier() or d.isdigit() else f"({d})")
    return list(reversed(out))


def _whole_struct(e: Call) -> bool:
    """A `pl.struct` (not a struct_array): a Var bound to several of them (a helper returning
    one from each branch) is one object declared up front, reset and refilled at each."""
    return e.op == "struct.create" and not e.kwarg("array_size")


def _struct(body, s: AssignStmt) -> None:
    """`pl.struct`: an object of its class, fields set one by one (array fields element by
    element); `pl.struct_array`: an array of them, each set in a loop."""
    call: Call = s.value
    size = call.kwarg("array_size")
    st: StructType = call.type.elem if size else call.type
    name = body.ctx.name(s.var)
    if body.ctx.scopes.is_hoisted(s.var):
        body.w.line(f"{name} = {st.name}{{}};", s.span)
    else:
        body.w.line(f"{st.name} {name}{f'[{size}]' if size else ''}{{}};", s.span)
    target = name
    if size:
        k = body.ctx.fresh("k")
        body.w.open(f"for (int64_t {k} = 0; {k} < {size}; ++{k})", s.span)
        target = f"{name}[{k}]"
    for (field, _), value in zip(st.fields, call.args):
        if isinstance(value, MakeTuple):
            for j, elem in enumerate(value.elements):
                body.w.line(f"{target}.{field}[{j}] = {body.x.emit(elem)};", s.span)
        else:
            body.w.line(f"{target}.{field} = {body.x.emit(value)};", s.span)
    if size:
        body.w.close()


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
           "declare_group_storage", "declare_tile_storage", "declare_view", "new_view",
           "row_major", "window_strides"]
