"""The stream engine's replay phase (see `stream`): values, trace rows and blocks of a launch
from its recording and the scheduler's result.

Values: walk the scheduler's order of op starts and finishes. At a start the op runs on its
operands as they are then (`engine.start_op`: deferred writes, late GM snapshots), at a finish
its writes land (`engine.land_writes`), exactly as the Python engine does at the same points
of the same order, so a racy kernel computes what it computes there. When no op ever starts
while an op writing memory it touches runs (`scheduler_native.first_race` over the ops'
`footprints`), reading at the start and writing at the finish is the same as doing both at
the start: the replay is eager, calling each op directly at its start (`PATHS` counts which);
a kept recording's relaunches of the same operands make its `tape`, then run that instead.

A launch that fails at an op leaves in memory the writes of every op that started before the
failing one, and of none after it, on every path: the eager replay (and a tape) lands writes
at the starts; the deferred replay, like the Python engine (`Engine.land_in_flight`), lands
the writes of the ops still running, in the order they would have finished.
"""
from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from ...errors import SimulationError
from . import tape
from ..reference.engine import Block, Engine, Pipe, land_writes, start_op
from ..model.memory import TileRef

_KIND_NAMES = np.array(["instr", "sync", "stall"], dtype=object)
_REASONS = ("", "hbm", "flag", "mutex", "cross_core", "queue", "barrier", "sync_all")
_REASON_NAMES = np.array(_REASONS, dtype=object)
_WAIT_NAMES = np.array([f"wait {r}" for r in _REASONS], dtype=object)
_ROLE_NAMES = np.array(["", "set", "wait"], dtype=object)
_PIPE_NAMES = np.array(["MTE1", "MTE2", "MTE3", "M", "FIX", "V", "S"], dtype=object)
# scheduler.cpp ids codes
_IDS_INSTR, _IDS_BLOCKED, _IDS_MUTEX, _IDS_QUEUE, _IDS_BARRIER, _IDS_SYNC_ALL = \
    -1, -2, -16, -64, -128, -256
_ROW_STALL = 2
_SCALAR = 7  # stream.KIND_CODE["scalar"]
#: launches whose values each replay ran ("eager", "deferred"; of the eager ones, "tape":
#: those that ran their recording's tape, "taping": those that made it): what tests look at
PATHS: Counter[str] = Counter()


class _Running:
    """A replayed op between its start and its finish: its pending writes (the shape of
    `Pipe` that `Engine.protect_gm` and `land_writes` use)."""

    __slots__ = ("pending_writes", "gm_view", "kind")

    def __init__(self, writes: list, view: tuple[int, int] | None, kind: Any) -> None:
        self.pending_writes, self.gm_view, self.kind = writes, view, kind  # kind: its pipe

    def snapshot(self) -> None:
        Pipe.snapshot(self)  # (looked up per call: whatever a pipe's snapshot is)


class _Views:
    """GM storage → the running loads holding views of it (`Engine.gm_views`)."""

    protect_gm = Engine.protect_gm

    def __init__(self) -> None:
        self.gm_views: dict[tuple[int, int], list[_Running]] = {}


def run_values(rec: Any, sched: Any, eager: bool, cache: bool = True) -> str:
    """Run every op at its start and land its writes at its finish, in the schedule's order
    (`eager`: the schedule has no race, so the writes land at the start; `cache`: a tape may
    run them). What ran ("deferred", "eager" and `tape.run`'s)."""
    PATHS["eager" if eager else "deferred"] += 1
    if not eager:
        _run_deferred(rec, sched)
        return "deferred"
    return f"eager, {_run_eager(rec, sched, cache)}"


def _run_eager(rec: Any, sched: Any, cache: bool) -> str:
    """Every op at its start, through its impl or the recording's tape (`tape`). (Runs of
    starts of one op on several cores through `ops.run_grouped` measured no faster: the runs
    are short, and the batch key costs each op.)"""
    order = sched.events[sched.events >= 0].tolist()
    if not cache:
        for e in order:
            _run_op(rec, e, False)
        return "ops"
    if tape.kept(rec, sched) is not None:
        PATHS["tape"] += 1  # (counted before it runs: a failing play counts too)
    ran = tape.run(rec, sched, order, _run_op, _op_error)
    if ran == "tape made":
        PATHS["taping"] += 1
    return ran


def _run_op(rec: Any, e: int, build: bool) -> tape.Step | None:
    """Instruction `e` on its operands as they are now (an error as `start_op` reports it);
    if `build`, its step (`tape.step`)."""
    instr = rec.instrs[e]
    try:
        return tape.step(instr.ir_op, instr.args, instr.kwargs, build)
    except SimulationError:
        raise
    except tape.OP_ERRORS as err:
        raise _op_error(rec, e, err) from err


def _op_error(rec: Any, e: int, err: Exception) -> SimulationError:
    """The error instruction `e` failing with `err` raises."""
    instr = rec.instrs[e]
    label = [c.label for block in rec.cores for c in block][_streams(rec)[e]]
    return SimulationError(f"{instr.ir_op} on {label}: {err}", instr.span)


def _run_deferred(rec: Any, sched: Any) -> None:
    instrs = rec.instrs
    labels = _labels(rec)
    views = _Views()
    running: dict[int, _Running] = {}
    events = sched.events.tolist()
    for at, e in enumerate(events):
        if e >= 0:
            instr = instrs[e]
            writes: list = []
            try:
                _, view = start_op(instr, labels[e], writes)
            except SimulationError:  # the running ops land, in the order they finish
                for later in events[at + 1:]:
                    if later < 0 and ~later in running:
                        land_writes(views, running.pop(~later))
                raise
            if writes or view is not None:
                held = running[e] = _Running(writes, view, instr.pipe)
                if view is not None:
                    views.gm_views.setdefault(view, []).append(held)
        else:
            held = running.pop(~e, None)
            if held is not None:
                land_writes(views, held)


def _streams(rec: Any) -> list[int]:
    """Per instruction, the stream (a core of a block) that issued it."""
    starts = np.array(rec.inst_stream_start + [len(rec.instrs)], dtype=np.int64)
    return np.repeat(np.arange(len(starts) - 1), np.diff(starts)).tolist()


def _labels(rec: Any) -> list[str]:
    """Per instruction, the label of the core that issued it (an op error names it)."""
    labels = np.array([c.label for block in rec.cores for c in block], dtype=object)
    return labels[_streams(rec)].tolist()


def rebind(rec: Any, sched: Any) -> None:
    """Point the tiles of the blocks of later waves, recorded on placeholder memories, at the
    slot memories the schedule ran them on (once per recording: its instructions keep them)."""
    if not rec.placeholders:
        return
    slot_of = dict(sched.started.tolist())
    slots = rec.launch.slots
    memories = {pid: slots[slot_of[b]].memories[k] for pid, (b, k) in rec.placeholders.items()
                if b in slot_of}
    for instr in rec.instrs:
        if instr.kind == "op":
            instr.args = [_rebind(a, memories) for a in instr.args]
    rec.placeholders = {}


def _rebind(arg: Any, rebind: dict[int, Any]) -> Any:
    if isinstance(arg, tuple):
        return tuple(_rebind(a, rebind) for a in arg)
    if isinstance(arg, TileRef) and id(arg.memory) in rebind:  # (the slot's own ref)
        return rebind[id(arg.memory)].ref(arg.geometry, arg.valid_rows, arg.valid_cols)
    return arg


class TraceRows:
    """A scheduled launch's trace rows (`trace_columns`), made on the first `get` and kept."""

    __slots__ = ("_rec", "_sched", "_columns")

    def __init__(self, rec: Any, sched: Any) -> None:
        self._rec, self._sched = rec, sched
        self._columns: dict[str, Any] | None = None

    def get(self) -> dict[str, Any]:
        if self._columns is None:
            self._columns = trace_columns(self._rec, self._sched)
            self._rec = self._sched = None
        return self._columns


def trace_columns(rec: Any, sched: Any) -> dict[str, Any]:
    """The trace rows as `schema.COLUMNS` name → array (the rows `Core._event` makes, a column
    each: no tuple per row to make and take apart again)."""
    rows, table = sched.rows, rec.table_rows  # (the instruction table the scheduler ran)
    if not len(rows):
        return {}
    uid, pipe, rkind, instr, start, end, ids, reason, flow, role = rows.T
    n_instr = len(rec.instrs)
    instr = np.where(instr >= 0, instr, n_instr)  # the last entry: no instruction
    meta_rows = rec.sites.meta_rows
    meta = np.empty((len(meta_rows) + 1, 6), dtype=object)
    for k, column in enumerate(zip(*meta_rows, ("", "", "", 0, 0, 0))):
        meta[:, k] = column
    row_meta = meta[np.append(np.array(rec.inst_meta, dtype=np.int64), len(meta_rows))[instr]]
    op = row_meta[:, 0]
    stall = rkind == _ROW_STALL
    op[stall] = _WAIT_NAMES[reason[stall]]
    # an instr row's bytes and flops: its op's or scalar instruction's (their own ordinal
    # among the instructions: `stream.KIND_CODE` op 0, scalar 7)
    costed = (table[:, 0] == 0) | (table[:, 0] == _SCALAR)
    ordinal = np.append(np.cumsum(costed) - 1, len(rec.op_costs))
    costs = np.empty((len(rec.op_costs) + 1, 2), dtype=object)
    costs[:-1] = rec.op_costs if rec.op_costs else np.empty((0, 2), dtype=object)
    costs[-1] = (0, 0)
    row_costs = costs[ordinal[np.where(rkind == 0, instr, n_instr)]]
    strings = np.array(list(rec.sites.strings), dtype=object)
    index = np.where(ids >= 0, ids, np.where(ids == _IDS_INSTR, row_meta[:, 4], row_meta[:, 5]))
    ids_col = strings[index.astype(np.int64)]
    inst_meta = rec.inst_meta
    formatted: dict[tuple[int, int], str] = {}  # (code, meta row: site and key) → text
    for r in np.flatnonzero(ids <= _IDS_MUTEX).tolist():
        code, i = int(ids[r]), int(instr[r])
        key = (code, inst_meta[i] if i < n_instr else -1)
        text = formatted.get(key)
        if text is None:
            text = formatted[key] = _formatted(rec, code, i)
        ids_col[r] = text
    cores = _core_columns(rec, sched)
    core_id, kind, block, subblock = (cores[:, k][uid] for k in range(4))
    return {"launch": np.zeros(len(rows), dtype=np.int64), "core": core_id, "core_kind": kind,
            "block": block, "subblock": subblock, "pipe": _PIPE_NAMES[pipe],
            "kind": _KIND_NAMES[rkind], "op": op, "ir_op": row_meta[:, 1],
            "file": row_meta[:, 2], "line": row_meta[:, 3], "start": start, "end": end,
            "bytes": row_costs[:, 0], "flops": row_costs[:, 1], "sync_ids": ids_col,
            "stall_reason": _REASON_NAMES[reason], "flow_id": flow,
            "flow_role": _ROLE_NAMES[role]}


def _formatted(rec: Any, code: int, i: int) -> str:
    from .stream import PIPES

    if code <= _IDS_SYNC_ALL:
        return "sync_all"
    if code <= _IDS_BARRIER:
        p = _IDS_BARRIER - code - 1
        return f"pipe_barrier({'ALL' if p < 0 else PIPES[p].value})"
    if code <= _IDS_QUEUE:
        return f"{PIPES[_IDS_QUEUE - code].value} full"
    holder, same = divmod(_IDS_MUTEX - code, 2)
    key = rec.instrs[i].key
    return f"mutex {key}" + (" (held by this same pipe: a double lock hangs the hardware)"
                             if same else f" (held by pipe {PIPES[holder].value})")


def _core_columns(rec: Any, sched: Any) -> np.ndarray:
    """Per core instance (uid: start order): core_id, kind, block, subblock."""
    out = []
    for b, slot in sched.started.tolist():
        for k, core in enumerate(rec.cores[b]):
            out.append((slot * len(rec.cores[b]) + k, core.kind, b, core.subblock))
    table = np.empty((len(out), 4), dtype=object)
    table[:] = out
    return table


def blocks(rec: Any, sched: Any) -> list:
    """The launch's blocks in start order, with the cores that recorded their printed text."""
    return [Block(b, rec.cores[b]) for b, _ in sched.started.tolist()]
