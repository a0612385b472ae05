"""One target's kernel function (`<K>_impl_cube` / `<K>_impl_vector`) and its SIMT functions.

Parameters follow the ABI of spec §1.2: a tensor is `__gm__ T* <x>_ptr`, a pointer `__gm__ T*`,
a scalar its C type, the TilingData `__gm__ uint8_t* <t>_ptr`, each DYNAMIC dim an `int32_t
__pypto_dyn_<param>_<axis>`, plus `__gm__ int64_t* ffts_addr` on a2/a3 kernels with cross-core
sync. The body is emitted first (into a child writer) so the prologue knows every tile type it
used; the prologue then declares, in order: FFTS base / vector mask set-up, the TilingData
copy, the tile type aliases, a GlobalTensor view per tensor parameter (stride array from the
shape, alias, instance) and the hoisted variables (tiles as pointers, with storage for hoisted
`make_tile`s).
"""
from __future__ import annotations

from ..errors import NotSupported
from ..ir.nodes import AssignStmt, Call, Function, Var
from ..ir.types import (
    PtrType, ScalarType, StructType, TensorType, TileGroupType, TileType,
)
from . import gm_views
from .context import FnCtx, KernelFlags
from .decls import (
    HOISTABLE, declare_group_pointer, declare_group_storage, declare_tile_storage, declare_view,
    new_view, row_major,
)
from .scopes import analyze, stmts_of, bodies_of
from .stmts import Body
from .tiling_header import copy_in
from .types import ctype, scalar_ctype, tile_template
from .writer import CodeWriter


def reserved_names() -> set[str]:
    from .prelude import HELPER_NAMES
    from .surface import all_identifiers

    return set(HELPER_NAMES) | all_identifiers(members=False)


def impl_params(fn: Function, ctx: FnCtx) -> list[str]:
    dynamic = set(fn.attr("dynamic_dims", ()) or ())
    out = []
    for p in fn.params:
        name, t = ctx.name(p), p.type
        if isinstance(t, TensorType):
            out.append(f"__gm__ {ctype(t.dtype)}* {name}_ptr")
        elif isinstance(t, PtrType):
            out.append(f"__gm__ {ctype(t.dtype)}* {name}")
        elif isinstance(t, StructType):
            out.append(f"__gm__ uint8_t* {name}_ptr")
        elif p.name in dynamic:
            out.append(f"int32_t {name}")
        else:
            out.append(f"{scalar_ctype(t)} {name}")
    if ctx.flags.needs_ffts:
        out.append("__gm__ int64_t* ffts_addr")
    return out


def make_ctx(fn: Function, target: str, arch: str, kernel_type: str, writer: CodeWriter,
             flags: KernelFlags, simt: bool = False) -> FnCtx:
    scopes = analyze(fn, reserved_names())
    ctx = FnCtx(fn, target, arch, kernel_type, scopes, writer, flags, simt=simt)
    if not simt:
        ctx.gm_accesses = gm_views.plan(fn)
        _register_param_views(ctx)
    return ctx


def _register_param_views(ctx: FnCtx) -> None:
    for p in ctx.fn.params:
        t = p.type
        if isinstance(t, TensorType):
            shape = tuple(str(d.value) if hasattr(d, "value") else ctx.name(d) for d in t.shape)
            ctx.tensors[p] = new_view(ctx, p, ctx.name(p), shape, t)


def emit_impl(ctx: FnCtx, impl_name: str) -> None:
    """The target's `__aicore__ inline void <impl_name>(...)` with prologue and body."""
    fn, w = ctx.fn, ctx.writer
    with w.function(f"__aicore__ inline void {impl_name}({', '.join(impl_params(fn, ctx))})",
                    fn.span):
        body_writer = w.child()
        body = Body(ctx)
        plans = _plan_hoisted(ctx)
        ctx.writer = body_writer
        body.w = body_writer
        body.block(fn.body)
        ctx.writer = w
        body.w = w
        _prologue(body, plans)
        w.splice(body_writer)


def _plan_hoisted(ctx: FnCtx) -> list[tuple[Var, list[Call]]]:
    """Hoisted Vars and the make_tile / make_tile_group calls that bind them (their storage is
    planned now)."""
    calls: dict[Var, list[Call]] = {v: [] for v in ctx.scopes.hoisted}

    def walk(b) -> None:
        for s in stmts_of(b):
            if isinstance(s, AssignStmt) and s.var in calls and isinstance(s.value, Call) \
                    and s.value.op in HOISTABLE:
                calls[s.var].append(s.value)
            for inner in bodies_of(s):
                walk(inner)

    walk(ctx.fn.body)
    for var, found in calls.items():
        for call in found:
            ctx.hoisted_storage[id(call)] = ctx.fresh(f"{ctx.name(var)}_storage", ("_mutex",))
    return list(calls.items())


def _prologue(body: Body, plans: list[tuple[Var, list[Call]]]) -> None:
    ctx, w = body.ctx, body.w
    span = ctx.fn.span
    if ctx.flags.needs_ffts:
        w.line("set_ffts_base_addr(reinterpret_cast<uint64_t>(ffts_addr));", span)
    if ctx.target == "vector" and ctx.arch != "a5":
        w.line("set_mask_norm();", span)
        w.line("set_vector_mask(static_cast<uint64_t>(-1), static_cast<uint64_t>(-1));", span)
    for p in ctx.fn.params:
        if isinstance(p.type, StructType):
            copy_in(body, p, span)
    for var, calls in plans:
        for t in [c.type for c in calls] + [var.type]:
            if isinstance(t, TileType):
                ctx.alias(t)
    for alias, t in ctx.tile_aliases.values():
        w.line(f"using {alias} = {tile_template(t)};", span)
    for p in ctx.fn.params:
        view = ctx.tensors.get(p)
        if view is not None:
            declare_view(body, view, row_major(list(view.shape)), span)
    for var, calls in plans:
        _declare_hoisted(body, var, calls)


def _declare_hoisted(body: Body, var: Var, calls: list[Call]) -> None:
    ctx, w = body.ctx, body.w
    t = var.type
    name = ctx.name(var)
    if isinstance(t, TileType):
        for call in calls:
            declare_tile_storage(body, call, ctx.hoisted_storage[id(call)])
        w.line(f"{ctx.alias(t)}* {name} = nullptr;", var.span)
    elif isinstance(t, TileGroupType):
        if not calls:
            raise NotSupported("codegen: a tile group variable bound in several places must "
                               "be bound to make_tile_group calls", var.span,
                               module="PRO_COMPILE", hint="bind it once, where it is used")
        for call in calls:
            declare_group_storage(body, call, ctx.hoisted_storage[id(call)])
        declare_group_pointer(body, var, calls)
    elif isinstance(t, ScalarType):
        w.line(f"{scalar_ctype(t)} {name} = 0;", var.span)
    elif isinstance(t, PtrType):
        w.line(f"{scalar_ctype(t)} {name} = nullptr;", var.span)
    elif isinstance(t, StructType):
        w.line(f"{t.name} {name}{{}};", var.span)
    elif not isinstance(t, (TensorType, TileGroupType)):
        w.line(f"auto {name} = 0;", var.span)


def emit_simt(fn: Function, target: str, arch: str, kernel_type: str, writer: CodeWriter,
              flags: KernelFlags) -> None:
    """A SIMT function (launchable entry or callee) of the vector target."""
    from .simt import signature

    ctx = make_ctx(fn, target, arch, kernel_type, writer, flags, simt=True)
    with writer.function(signature(fn, ctx.scopes.names), fn.span):
        body = Body(ctx)
        for var in ctx.scopes.hoisted:
            _declare_hoisted(body, var, [])
        body.block(fn.body)
