"""Sync, system and debug ops → raw CCE intrinsics (spec §4.2, §2.12, §2.15), one emitter per op in
`SYNC_OPS`. Flags become `set_flag` / `wait_flag(PIPE_A, PIPE_B, EVENT_IDn)` (`(event_t)(id)` for
run-time ids), barriers `pipe_barrier(PIPE_X)`, buffer-id mutexes `get_buf` / `rls_buf(PIPE_X, id,
mode)` — a run-time id with a `guard` list (from mutex_dedup) becomes `if (id != g0 && ...) {
get_buf(...); }`. Cross-core sync on a5: INTRA_BLOCK is `set/wait_intra_block(PIPE_X, id)`, on the
cube also for `id + 16` (the second AIV), UNICAST_BLOCK one call, INTER_* FFTS
(`ffts_cross_core_sync(PIPE_X, getFFTSMsg(mode, id))` / `wait_flag_dev(PIPE_X, id)`); on a2/a3
every mode uses FFTS (`wait_flag_dev(id)`, with an FFTS base address). `sync_all` is
`SYNCALL<SyncCoreType::X>()` or `SYNCALL<SyncAllMode::Soft, SyncCoreType::X>(gm, used_cores)`; dcci
and the vector-mask / control SPR writes call their intrinsics; `printf` is `cce::printf`,
`pto_assert` a guarded printf (it does not abort), `dump_data` `pipe_barrier(PIPE_ALL); TPRINT(x)`,
`trap` `trap()`. V-only mutex elision and lock de-duplication are the passes' job; this module
spells what is left."""
from __future__ import annotations

import re
from collections.abc import Callable

from ..ir.attrs import CrossCoreSyncMode
from ..ir.nodes import Call, ConstInt, Expr
from ..ir.span import Span
from ..errors import NotSupported
from ..ir.types import ScalarType, TensorType
from .ops import check_kwargs
from .types import attr_value, ctype, pipe
from .writer import c_string, source_label

_AIV1_OFFSET = 16


def _id(body, call: Call, key: str) -> tuple[str, bool]:
    """The id operand (text, is_constant): the kwarg of the static form, arg 0 of `_dyn`."""
    if call.op.endswith("_dyn"):
        e = call.args[0]
        return body.x.emit(e), isinstance(e, ConstInt)
    value = call.kwarg(key)
    if isinstance(value, Expr):
        return body.x.emit(value), isinstance(value, ConstInt)
    return str(int(value)), True


def _flag(intrinsic: str) -> Callable:
    def emit(body, call: Call, span: Span | None) -> None:
        check_kwargs(call, {"set_pipe", "wait_pipe", "event_id"}, span)
        ident, const = _id(body, call, "event_id")
        event = f"EVENT_ID{ident}" if const else f"(event_t)({ident})"
        body.w.line(f"{intrinsic}({pipe(call.kwarg('set_pipe'))}, "
                    f"{pipe(call.kwarg('wait_pipe'))}, {event});", span)

    return emit


def _barrier(pipe_name: str) -> Callable:
    def emit(body, call: Call, span: Span | None) -> None:
        body.w.line(f"pipe_barrier({pipe(pipe_name)});", span)

    return emit


_MUTEX_KWARGS = {"pipe", "mutex_id", "mode", "max_mutex_id", "mutex_ids",
                 "mutex_id_owner_indices", "guard"}


def _mutex(intrinsic: str) -> Callable:
    def emit(body, call: Call, span: Span | None) -> None:
        check_kwargs(call, _MUTEX_KWARGS, span)
        ident, _ = _id(body, call, "mutex_id")
        mode = call.kwarg("mode", 0)
        mode_text = body.x.emit(mode) if isinstance(mode, Expr) else str(int(mode))
        stmt = f"{intrinsic}({pipe(call.kwarg('pipe'))}, {ident}, {mode_text});"
        guards = [body.x.emit(g) for g in (call.kwarg("guard") or ())]
        if guards:
            cond = " && ".join(f"{ident} != {g}" for g in guards)
            stmt = f"if ({cond}) {{ {stmt} }}"
        body.w.line(stmt, span)

    return emit


def _cross_core(setting: bool) -> Callable:
    def emit(body, call: Call, span: Span | None) -> None:
        check_kwargs(call, {"pipe", "event_id", "sync_mode"}, span)
        ident, const = _id(body, call, "event_id")
        mode = CrossCoreSyncMode(int(call.kwarg("sync_mode", CrossCoreSyncMode.INTRA_BLOCK)))
        p = pipe(call.kwarg("pipe"))
        ctx = body.ctx
        if ctx.arch != "a5" or mode in (CrossCoreSyncMode.INTER_BLOCK,
                                        CrossCoreSyncMode.INTER_SUBBLOCK):
            _ffts(body, setting, p, ident, mode, span)
            return
        name = "set_intra_block" if setting else "wait_intra_block"
        body.w.line(f"{name}({p}, {ident});", span)
        if mode is CrossCoreSyncMode.INTRA_BLOCK and ctx.target == "cube":
            second = str(int(ident) + _AIV1_OFFSET) if const else \
                f"{ident if ident.isidentifier() else f'({ident})'} + {_AIV1_OFFSET}"
            body.w.line(f"{name}({p}, {second});", span)

    return emit


def _ffts(body, setting: bool, p: str, ident: str, mode: CrossCoreSyncMode,
          span: Span | None) -> None:
    flags = body.ctx.flags
    if body.ctx.arch == "a5":
        flags.a5_custom_sync = True
    else:
        flags.needs_ffts = True
    if setting:
        body.w.line(f"ffts_cross_core_sync({p}, getFFTSMsg({int(mode)}, {ident}));", span)
    elif body.ctx.arch == "a5":
        body.w.line(f"wait_flag_dev({p}, {ident});", span)
    else:
        body.w.line(f"wait_flag_dev({ident});", span)


_CORE_TYPES = {"AIV_ONLY": "SyncCoreType::AIVOnly", "AIC_ONLY": "SyncCoreType::AICOnly",
               "MIX": "SyncCoreType::Mix"}


def _sync_all(body, call: Call, span: Span | None) -> None:
    """`SYNCALL<SyncCoreType::X>()` (hard), or the soft GM-counter barrier
    `SYNCALL<SyncAllMode::Soft, SyncCoreType::X>(gm_workspace, used_cores)` on the first
    tensor workspace (pto-isa's forms; its other workspaces are not operands there)."""
    check_kwargs(call, {"mode", "core_type"}, span)
    core = _CORE_TYPES[getattr(call.kwarg("core_type"), "name", "MIX")]
    if getattr(call.kwarg("mode"), "name", "HARD") != "SOFT":
        body.w.line(f"SYNCALL<{core}>();", span)
        return
    gm = next((a for a in call.args if isinstance(a.type, TensorType)), None)
    view = body.ctx.tensors.get(gm) if gm is not None else None
    if view is None:
        raise NotSupported("sync_all(mode=SOFT) needs a GM workspace tensor", span,
                           module="PRO_COMPILE")
    used = next((body.x.emit(a) for a in call.args if isinstance(a.type, ScalarType)), "0")
    body.w.line(f"TASSIGN({view.gt}, {view.ptr});", span)
    body.w.line(f"SYNCALL<SyncAllMode::Soft, {core}>({view.gt}, {used});", span)


def _dcci(body, call: Call, span: Span | None) -> None:
    check_kwargs(call, {"cache_line", "dst"}, span)
    target = call.args[0]
    offset = body.x.emit(call.args[1]) if len(call.args) > 1 else "0"
    plus = "" if offset == "0" else f" + {offset}"
    if isinstance(target.type, TensorType):
        ptr = f"(__gm__ void*)({body.ctx.tensors[target].ptr}{plus})"
    else:
        ptr = f"(__ubuf__ void*)({body.x.paren(target, 16)}.data(){plus})"
    line = call.kwarg("cache_line")
    dst = call.kwarg("dst")
    line_text = "SINGLE_CACHE_LINE" if line is None else attr_value(line)
    dst_text = "CACHELINE_OUT" if dst is None else attr_value(dst)
    body.w.line(f"dcci({ptr}, {line_text}, {dst_text});", span)


def _plain(intrinsic: str) -> Callable:
    """An intrinsic taking the call's positional args and kwargs (values) in order."""
    def emit(body, call: Call, span: Span | None) -> None:
        args = [body.x.emit(a) for a in call.args]
        args += [body.x.emit(v) if isinstance(v, Expr) else attr_value(v)
                 for k, v in call.kwargs if k not in ("pipe", "guard") and v is not None]
        body.w.line(f"{intrinsic}({', '.join(args)});", span)

    return emit


def _reset_mask(body, call: Call, span: Span | None) -> None:
    body.w.line("set_vector_mask(static_cast<uint64_t>(-1), static_cast<uint64_t>(-1));", span)


# ---------------------------------------------------------------- debug


_CONVERSION = re.compile(r"%%|%[-+ #0]*\d*(?:\.\d+)?([lh]*)([diuxXpfsc])")
_ARG_CAST = {"d": "int32_t", "i": "int32_t", "u": "uint32_t", "x": "uint32_t", "X": "uint32_t",
             "c": "int32_t", "f": "float", "p": "void*"}
_WIDE_CAST = {"d": "long long", "i": "long long", "u": "unsigned long long",
              "x": "unsigned long long", "X": "unsigned long long"}


def _is_wide(v: Expr) -> bool:
    """A 64-bit integer argument (INT64 / UINT64 / INDEX value, or a constant beyond 32 bits)."""
    if isinstance(v, ConstInt):
        return not -(1 << 31) <= v.value < (1 << 32)
    dtype = getattr(v.type, "dtype", None)
    return dtype is not None and dtype.is_int and dtype.bits == 64


def _printf_args(body, fmt: str, values: tuple[Expr, ...]) -> tuple[str, list[str]]:
    """The format and the cast arguments: each value cast to what its conversion reads; a
    64-bit integer under `%d`/`%i`/`%u`/`%x` prints at full width (`ll` added), never
    narrowed to 32 bits."""
    out: list[str] = []
    pending = iter(values)

    def convert(m: re.Match) -> str:
        if m.group(0) == "%%":
            return m.group(0)
        v = next(pending, None)
        if v is None:
            return m.group(0)
        length, kind = m.group(1), m.group(2)
        text = body.x.emit(v)
        if kind in _WIDE_CAST and (_is_wide(v) or length.startswith("l")):
            out.append(f"static_cast<{_WIDE_CAST[kind]}>({text})")
            head = m.group(0)[:len(m.group(0)) - len(length) - 1]
            return f"{head}ll{kind}"
        cast = _ARG_CAST.get(kind)
        out.append(f"static_cast<{cast}>({text})" if cast and cast != "void*" else
                   f"(void*)({text})" if cast else text)
        return m.group(0)

    return _CONVERSION.sub(convert, fmt), out


def _where(span: Span | None) -> str:
    return f"{source_label(span.file)}:{span.line}" if span is not None else "?"


def _printf(body, call: Call, span: Span | None) -> None:
    check_kwargs(call, {"loc"}, span)
    body.ctx.flags.uses_print = True
    fmt = call.args[0].value
    if call.kwarg("loc"):
        fmt = f"[{_where(span)}] {fmt}"
    fmt, values = _printf_args(body, fmt, call.args[1:])
    body.w.line(f"cce::printf({', '.join([c_string(fmt), *values])});", span)


def _assert(body, call: Call, span: Span | None) -> None:
    check_kwargs(call, {"loc"}, span)
    body.ctx.flags.uses_print = True
    user = call.args[1].value if len(call.args) > 1 else ""
    fmt = f"pto_assert failed at {_where(span)}" + (f": {user}" if user else "") + "\n"
    fmt, values = _printf_args(body, fmt, call.args[2:])
    cond = body.x.emit(call.args[0])
    body.w.line(f"if (!({cond})) {{ cce::printf({', '.join([c_string(fmt), *values])}); }}",
                span)


def _trap(body, call: Call, span: Span | None) -> None:
    body.w.line("trap();", span)


def _dump(body, call: Call, span: Span | None) -> None:
    """`pl.dump_data` as the real code generator lowers it (`sim.dump_text` prints the same):
    the location / flag lines, `pipe_barrier(PIPE_ALL)`, then `TPRINT` of a whole tile, print
    loops over a tile window, or `TPRINT` of a GlobalTensor over a tensor window."""
    check_kwargs(call, {"flag", "loc"}, span)
    body.ctx.flags.uses_print = True
    if call.kwarg("loc"):
        where = c_string(f"[{_where(span)}] {call.op.split('.')[1]}\n")
        body.w.line(f"cce::printf({where});", span)
    flag = call.kwarg("flag")
    if flag:
        body.w.line(f"cce::printf(\"=== [flag] %s ===\\n\", {c_string(str(flag))});", span)
    target = call.args[0]
    window = [body.x.ints(a) for a in call.args[1:3]]
    body.w.line("pipe_barrier(PIPE_ALL);", span)
    if isinstance(target.type, TensorType):
        _dump_tensor(body, target, window, span)
    elif window:
        _dump_tile_window(body, target, *window, span)
    else:
        body.w.line(f"TPRINT({body.x.tile(target)});", span)


def _dump_tile_window(body, tile: Expr, offsets: list[str], shapes: list[str],
                      span: Span | None) -> None:
    """The window clamped to the tile's valid shape, a header, then every element through
    `__pypto_print_val` (pto-isa's TPRINT has no window form)."""
    w, t = body.w, body.x.tile(tile)
    rows, cols = tile.type.shape
    r0, c0 = offsets
    ty = f"std::remove_reference_t<decltype({t})>"
    want_r, want_c, valid_r, valid_c = (body.ctx.fresh(n) for n in (
        "dump_want_rows", "dump_want_cols", "dump_rows", "dump_cols"))
    for want, shape, valid, get, size, off in (
            (want_r, shapes[0], valid_r, "GetValidRow", rows, r0),
            (want_c, shapes[1], valid_c, "GetValidCol", cols, c0)):
        w.line(f"int {want} = static_cast<int>({shape});", span)
        w.line(f"if ({want} < 0) {want} = 0;", span)
        w.line(f"int {valid} = static_cast<int>({t}.{get}()) - static_cast<int>({off});", span)
        w.line(f"if ({valid} > {want}) {valid} = {want};", span)
        w.line(f"if ({valid} < 0) {valid} = 0;", span)
        w.line(f"if ({valid} > {size}) {valid} = {size};", span)
    w.line("cce::printf(\"=== [TPRINT Tile Window] Data Type: %s, Layout: %s, TileType: %s "
           f"===\\n\", __pypto_dtype_name<{ty}::DType>(), pto::GetLayoutName({ty}::BFractal, "
           f"{ty}::SFractal), \"Vec\");", span)
    w.line("cce::printf(\"  Source Shape: [%d, %d], Window Offsets: [%d, %d], Requested Shape: "
           f"[%d, %d], Valid Shape: [%d, %d]\\n\", {rows}, {cols}, static_cast<int>({r0}), "
           f"static_cast<int>({c0}), {want_r}, {want_c}, {valid_r}, {valid_c});", span)
    r, c = body.ctx.fresh("dump_r"), body.ctx.fresh("dump_c")
    w.line(f"for (int {r} = 0; {r} < {valid_r}; ++{r}) {{", span)
    w.line(f"    for (int {c} = 0; {c} < {valid_c}; ++{c}) {{", span)
    w.line(f"        __pypto_print_val({t}.data()[pto::GetTileOffset<{ty}>({r} + ({r0}), "
           f"{c} + ({c0}))]);", span)
    w.line("    }", span)
    w.line("    cce::printf(\"\\n\");", span)
    w.line("}", span)


def _dump_tensor(body, target: Expr, window: list[list[str]], span: Span | None) -> None:
    """A GlobalTensor over the tensor window (the whole tensor by default), its extents and
    strides right-aligned in pto-isa's five dims, printed with `TPRINT` (`Layout::DN` for a
    2-D tensor of one static column, as the real code generator declares it)."""
    view = body.ctx.tensors[target]
    rank = view.rank
    if rank > 5:
        raise NotSupported(f"dump_data of a rank-{rank} tensor: pto-isa's GlobalTensor has five "
                           "dims", span, module="PRO_COMPILE")
    offsets = window[0] if window else ["0"] * rank
    extents = window[1] if len(window) > 1 else list(view.shape)
    base = " + ".join(f"({o}) * {view.stride}[{k}]" for k, o in enumerate(offsets) if o != "0")
    pad = ["1"] * (5 - rank)
    shape = ", ".join(pad + [f"static_cast<int64_t>({e})" for e in extents])
    strides = ", ".join(pad + [f"{view.stride}[{k}]" for k in range(rank)])
    dn = rank == 2 and view.shape[1] == "1"
    alias, gt = body.ctx.fresh("dump_GT"), body.ctx.fresh("dump_gt")
    body.w.line(f"using {alias} = GlobalTensor<{ctype(view.dtype)}, pto::Shape<-1, -1, -1, -1, "
                f"-1>, pto::Stride<-1, -1, -1, -1, -1>{', pto::Layout::DN' if dn else ''}>;",
                span)
    body.w.line(f"{alias} {gt}({view.ptr}{' + ' + base if base else ''}, {alias}::Shape("
                f"{shape}), {alias}::Stride({strides}));", span)
    body.w.line(f"TPRINT({gt});", span)


SYNC_OPS: dict[str, Callable] = {
    "system.sync_src": _flag("set_flag"), "system.sync_src_dyn": _flag("set_flag"),
    "system.sync_dst": _flag("wait_flag"), "system.sync_dst_dyn": _flag("wait_flag"),
    **{f"system.bar_{p.lower()}": _barrier(p) for p in ("ALL", "M", "FIX", "MTE1", "MTE2",
                                                         "MTE3", "V")},
    "system.mutex_lock": _mutex("get_buf"), "system.mutex_lock_dyn": _mutex("get_buf"),
    "system.mutex_unlock": _mutex("rls_buf"), "system.mutex_unlock_dyn": _mutex("rls_buf"),
    "system.set_cross_core": _cross_core(True), "system.set_cross_core_dyn": _cross_core(True),
    "system.wait_cross_core": _cross_core(False),
    "system.wait_cross_core_dyn": _cross_core(False),
    "system.sync_all": _sync_all,
    "system.dcci": _dcci,
    "system.set_mm_layout_transform": _plain("set_mm_layout_transform"),
    "system.set_mask_count": _plain("set_mask_count"),
    "system.set_mask_norm": _plain("set_mask_norm"),
    "system.set_vec_mask": _plain("set_vector_mask"),
    "system.reset_mask": _reset_mask,
    "system.set_ctrl_spr": _plain("set_ctrl_spr"),
    "system.reset_ctrl_spr": _plain("reset_ctrl_spr"),
    "system.set_saturation_flag": _plain("set_saturation_flag"),
    "debug.printf": _printf, "debug.assert": _assert, "debug.trap": _trap,
    "debug.dump_tensor": _dump, "debug.dump_tile": _dump,
}

__all__ = ["SYNC_OPS"]
