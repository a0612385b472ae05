"""Handlers of `pl.system.*` (spec §2.12): flags, barriers, mutexes, cross-core sync, sync_all.

Ids known at compile time are checked against their ranges here; runtime ids select the `_dyn`
variant of the op with the id as an argument.
"""
from __future__ import annotations

import ast
from typing import Any

from ...errors import InvalidOperationError, OutOfRange, ParserTypeError
from ...ir import attrs
from ...ir.types import PipeType
from .calls import emit_op, eval_args
from .context import ParseContext
from .expr import try_const

_SIGNATURES = {
    "sync_src": ("set_pipe", "wait_pipe", "event_id"),
    "sync_dst": ("set_pipe", "wait_pipe", "event_id"),
    "mutex_lock": ("pipe", "mutex_id", "mode", "max_mutex_id", "mutex_ids"),
    "mutex_unlock": ("pipe", "mutex_id", "mode", "max_mutex_id", "mutex_ids"),
    "set_cross_core": ("pipe", "event_id", "sync_mode"),
    "wait_cross_core": ("pipe", "event_id", "sync_mode"),
}
_ID_LIMITS = {"sync_src": 16, "sync_dst": 16, "mutex_lock": 32, "mutex_unlock": 32,
              "set_cross_core": 16, "wait_cross_core": 16}
_ID_KEY = {"sync_src": "event_id", "sync_dst": "event_id", "mutex_lock": "mutex_id",
           "mutex_unlock": "mutex_id", "set_cross_core": "event_id",
           "wait_cross_core": "event_id"}


def _pipe(ctx: ParseContext, v: Any, key: str, op: str, node: ast.AST) -> PipeType:
    if not isinstance(v, PipeType):
        from ...errors import FinalRejectionError

        raise ctx.error(FinalRejectionError, f"system.{op}: '{key}' expects an enum value "
                                             f"pl.PipeType.*, got {v!r}", node)
    return v


def sync_op(ctx: ParseContext, node: ast.Call, op: str) -> Any:
    name = op.split(".", 1)[1]
    args, kw = eval_args(ctx, node)
    allowed = _SIGNATURES[name]
    if args:
        raise ctx.error(ParserTypeError, f"system.{name} takes keyword arguments only: "
                                         f"{', '.join(allowed)}", node)
    unknown = set(kw) - set(allowed)
    if unknown:
        raise ctx.error(ParserTypeError, f"system.{name}: unknown argument(s) "
                                         f"{', '.join(sorted(unknown))}", node)
    for key in allowed:
        if key.endswith("pipe"):
            if key not in kw:
                raise ctx.error(ParserTypeError, f"system.{name} needs {key}=", node)
            _pipe(ctx, kw[key], key, name, node)
    id_key = _ID_KEY[name]
    if id_key not in kw:
        raise ctx.error(ParserTypeError, f"system.{name} needs {id_key}=", node)
    mode = kw.get("sync_mode")
    if name.endswith("cross_core"):
        if mode is None:
            kw["sync_mode"] = attrs.CrossCoreSyncMode.INTRA_BLOCK
        elif not isinstance(mode, attrs.CrossCoreSyncMode):
            raise ctx.error(ParserTypeError, "sync_mode must be a pl.CrossCoreSyncMode", node)
    k, ident = try_const(kw[id_key])
    limit = _ID_LIMITS[name]
    if k:
        if not isinstance(ident, int) or not 0 <= ident < limit:
            raise ctx.error(OutOfRange, f"system.{name}: {id_key} {ident!r} is outside "
                                        f"[0, {limit})", node)
        return emit_op(ctx, f"system.{name}", [], kw, node)
    ident_expr = kw.pop(id_key)
    return emit_op(ctx, f"system.{name}_dyn", [ident_expr], kw, node, check_tiles=False)


def barrier(ctx: ParseContext, node: ast.Call, op: str) -> Any:
    args, kw = eval_args(ctx, node)
    if args or kw:
        raise ctx.error(ParserTypeError, f"{op} takes no arguments", node)
    return emit_op(ctx, op, [], {}, node)


def sync_all(ctx: ParseContext, node: ast.Call, op: str) -> Any:
    args, kw = eval_args(ctx, node)
    workspaces = args[0] if args else kw.get("workspaces")
    mode = kw.get("mode", attrs.SyncAllMode.HARD)
    core_type = kw.get("core_type", attrs.SyncCoreType.MIX)
    if not isinstance(mode, attrs.SyncAllMode) or not isinstance(core_type, attrs.SyncCoreType):
        raise ctx.error(ParserTypeError, "sync_all: mode= must be pl.SyncAllMode and "
                                         "core_type= pl.SyncCoreType", node)
    if mode is attrs.SyncAllMode.HARD and workspaces is not None:
        raise ctx.error(InvalidOperationError, "sync_all: HARD mode takes no workspaces", node)
    if mode is attrs.SyncAllMode.SOFT and workspaces is None:
        raise ctx.error(InvalidOperationError, "sync_all: SOFT mode needs GM/UB/L1 workspaces",
                        node)
    extra = [] if workspaces is None else list(workspaces.items if hasattr(workspaces, "items")
                                               and not isinstance(workspaces, dict)
                                               else workspaces)
    return emit_op(ctx, "system.sync_all", extra, {"mode": mode, "core_type": core_type}, node,
                   check_tiles=False)


def generic_system(ctx: ParseContext, node: ast.Call, op: str) -> Any:
    args, kw = eval_args(ctx, node)
    return emit_op(ctx, op, args, kw, node, check_tiles=False)


HANDLERS = {
    **{f"system.{n}": sync_op for n in _SIGNATURES},
    **{f"system.bar_{p}": barrier for p in ("all", "m", "fix", "mte1", "mte2", "mte3", "v")},
    "system.sync_all": sync_all,
    "system.dcci": generic_system,
    "system.set_mm_layout_transform": generic_system,
    **{n: (lambda ctx, node, op: generic_system(ctx, node, f"system.{op}"))
       for n in ("set_mask_count", "set_mask_norm", "set_vec_mask", "reset_mask",
                 "set_ctrl_spr", "reset_ctrl_spr", "set_saturation_flag")},
}
