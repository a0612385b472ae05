"""msprof op simulator style `trace.json` of a Trace, the file MindStudio Insight imports.

Owns `to_msprof_json`, following spec `ascend_950_model.md` §4.1: a top-level object whose
`"profilingType": "op"` comes before the first `[` (Insight's import check), then
`displayTimeUnit: "ns"`, `schemaVersion: 1` and `traceEvents`, each a complete event
(`ph: "X"`) with `name` = instruction mnemonic (upper case, so SET_FLAG / WAIT_FLAG pair up in
Insight), `pid` = compute unit (`coreN.cubecore0`, `coreN.veccoreM`), `tid` = lane (SCALAR,
MTE1, CUBE, FIXP, MTE2, VECTOR, MTE3), `ts`/`dur` in µs, `cname` and `args {code, detail,
pc_addr}`. Units come from the dense rank r of a core id among the cores of its kind: AIC →
`core{r}.cubecore0`, AIV → `core{r // 2}.veccore{r % 2}` (two AIVs per AI Core), whether a
backend numbers AIC and AIV ids apart or together. There is no binary, so `pc_addr` is a
synthetic address, one per distinct (file, line, instruction). Stalls become `STALL_<REASON>`
events on the stalled pipe's lane. Must not import the views.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import numpy as np

from .atomic import write_json
from ...gcpause import paused_gc
from .layout import labels, lane_levels, times_us

if TYPE_CHECKING:
    import pandas as pd

    from ..trace import Trace

#: schema pipe → msprof lane name
LANES = {"S": "SCALAR", "MTE1": "MTE1", "M": "CUBE", "FIX": "FIXP", "MTE2": "MTE2",
         "V": "VECTOR", "MTE3": "MTE3"}
#: Chrome reserved colour names per lane (`cname`), stalls and sync instructions
COLOURS = {"SCALAR": "startup", "MTE1": "rail_idle", "CUBE": "rail_response", "FIXP": "olive",
           "MTE2": "rail_load", "VECTOR": "rail_animation", "MTE3": "yellow",
           "stall": "terrible", "sync": "grey"}
#: first synthetic instruction address
_PC_BASE = 0x10000000


def to_msprof_json(trace: Trace, path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """The trace in msprof op simulator `trace.json` form; also written atomically to `path`."""
    events = trace.events
    unit_code = events.groupby(["launch", "core_kind", "core"], observed=True, sort=False).ngroup()
    lane_code = events["pipe"].cat.codes.to_numpy(np.int64)
    level = lane_levels(unit_code.to_numpy() * (lane_code.max(initial=0) + 1) + lane_code,
                        events["start"].to_numpy(), events["end"].to_numpy())
    ts, dur = times_us(trace)
    columns = (
        labels(events, ["kind", "op", "stall_reason"], _mnemonic),
        labels(events, ["kind", "pipe"], _colour),
        _units(events),
        labels(events.assign(level=level), ["pipe", "level"], _lane),
        ts, dur,
        labels(events, ["file", "line"], lambda file, line: f"{file}:{line}"),
        labels(events, ["ir_op", "bytes", "flops", "sync_ids"], _detail),
        _pc(events))
    order = np.argsort(ts, kind="stable")
    with paused_gc():
        trace_events = [
            {"args": {"code": c, "detail": d, "pc_addr": a}, "cname": cn, "dur": du,
             "name": n, "ph": "X", "pid": p, "tid": t, "ts": s}
            for n, cn, p, t, s, du, c, d, a in zip(*(col[order].tolist() for col in columns))]
    doc = {"profilingType": "op", "displayTimeUnit": "ns", "schemaVersion": 1,
           "traceEvents": trace_events}
    if path is not None:
        write_json(doc, path)
    return doc


def _mnemonic(kind: str, op: str, reason: str) -> str:
    return f"STALL_{reason.upper()}" if kind == "stall" else op.upper()


def _colour(kind: str, pipe: str) -> str:
    if kind != "instr":
        return COLOURS[kind]
    return COLOURS.get(LANES.get(pipe, ""), "generic_work")


def _units(events: pd.DataFrame) -> np.ndarray:
    """The compute unit name of every event (see the module docstring)."""
    cores = events[["core_kind", "core"]].drop_duplicates()
    rank = cores.groupby("core_kind", observed=True)["core"].rank(method="dense")
    index = {(str(k), int(c)): int(r) - 1
             for k, c, r in zip(cores["core_kind"], cores["core"], rank)}

    def unit(kind: str, core: int) -> str:
        r = index[kind, core]
        return f"core{r}.cubecore0" if kind == "AIC" else f"core{r // 2}.veccore{r % 2}"

    return labels(events, ["core_kind", "core"], unit)


def _lane(pipe: str, level: int) -> str:
    lane = LANES.get(pipe, pipe.upper())
    return lane if level == 0 else f"{lane} #{level + 1}"


def _detail(ir_op: str, nbytes: int, flops: int, sync_ids: str) -> str:
    """Operand-like text: IR op, bytes, FLOPs and sync ids."""
    detail = f"ir_op={ir_op},bytes={nbytes},flops={flops}"
    return f"{detail},sync={sync_ids}" if sync_ids else detail


def _pc(events: pd.DataFrame) -> np.ndarray:
    index = events.groupby(["file", "line", "op"], observed=True, sort=True).ngroup().to_numpy()
    count = int(index.max()) + 1 if index.size else 0
    return np.array([f"0x{_PC_BASE + 4 * i:08x}" for i in range(count)], dtype=object)[index]
