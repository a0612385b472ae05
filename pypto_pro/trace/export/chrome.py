"""Chrome trace event JSON of a Trace, for Perfetto (ui.perfetto.dev) and chrome://tracing.

Owns `to_chrome_json`: one process per core instance of a block ("block 3 AIV1", sorted by
launch, block, core kind, subblock), one thread per pipe in the order S, MTE2, MTE1, M, FIX, V,
MTE3 (overflow threads "V #2"... for overlapping events, see `layout.lane_levels`), every event
as a complete event (`ph: "X"`, `ts`/`dur` in µs = cycles / clock_mhz) with category
instr / sync / stall, and each set → wait pair as a flow (`ph: "s"` then `ph: "f"`, `bp: "e"`,
sharing the schema's `flow_id`). Must not import the views.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import numpy as np

from ..events import pipe_rank
from .atomic import write_json
from ...gcpause import paused_gc
from .layout import MAX_LEVELS, flow_pairs, labels, lane_levels, text, times_us

if TYPE_CHECKING:
    import pandas as pd

    from ..trace import Trace

_UNIT_KEYS = ["launch", "block", "core_kind", "subblock", "core"]


def to_chrome_json(trace: Trace, path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """The trace as a Chrome trace event dict; also written atomically to `path` if given."""
    events = trace.events
    pid = events.groupby(_UNIT_KEYS, observed=True, sort=True).ngroup().to_numpy() + 1
    ranks = pipe_rank([str(c) for c in events["pipe"].cat.categories])
    rank = labels(events, ["pipe"], ranks.__getitem__).astype(np.int64)
    level = lane_levels(pid * len(ranks) + rank, events["start"].to_numpy(),
                        events["end"].to_numpy())
    tid = 1 + rank * MAX_LEVELS + level
    ts, dur = times_us(trace)
    flows, flow_ts = _flow_events(events, pid, tid, ts)
    timed = _complete_events(events, pid, tid, ts, dur) + flows
    order = np.argsort(np.concatenate([ts, flow_ts]), kind="stable")
    doc = {
        "traceEvents": _metadata(trace, pid, tid, ranks) + [timed[i] for i in order],
        "displayTimeUnit": "ns",
        "otherData": {**_meta_fields(trace), "launches": len(trace.launch_metas)},
    }
    if path is not None:
        write_json(doc, path)
    return doc


def _complete_events(events: pd.DataFrame, pid: np.ndarray, tid: np.ndarray, ts: np.ndarray,
                     dur: np.ndarray) -> list[dict[str, Any]]:
    name = labels(events, ["kind", "op", "stall_reason"],
                  lambda kind, op, reason: f"stall: {reason}" if kind == "stall" else op)
    source = labels(events, ["file", "line"], lambda file, line: f"{file}:{line}")
    columns = (name, text(events["kind"]), pid, tid, ts, dur, text(events["ir_op"]), source,
               events["bytes"].to_numpy(), events["flops"].to_numpy(), text(events["sync_ids"]))
    with paused_gc():
        return [{"name": n, "cat": c, "ph": "X", "pid": p, "tid": t, "ts": s, "dur": d,
                 "args": {"ir_op": i, "source": src, "bytes": b, "flops": f, "sync_ids": y}}
                for n, c, p, t, s, d, i, src, b, f, y in zip(*(c.tolist() for c in columns))]


def _flow_events(events: pd.DataFrame, pid: np.ndarray, tid: np.ndarray, ts: np.ndarray
                 ) -> tuple[list[dict[str, Any]], np.ndarray]:
    """An `s` event at each set and an `f` event (bound to the enclosing slice) at its wait."""
    ids, set_rows, wait_rows = flow_pairs(events)
    names = text(events["sync_ids"])[set_rows]
    flows = []
    for fid, name, s, w in zip(ids.tolist(), names.tolist(), set_rows.tolist(),
                               wait_rows.tolist()):
        common = {"name": name or "sync", "cat": "flow", "id": fid}
        flows.append({**common, "ph": "s", "pid": int(pid[s]), "tid": int(tid[s]),
                      "ts": float(ts[s])})
        flows.append({**common, "ph": "f", "bp": "e", "pid": int(pid[w]), "tid": int(tid[w]),
                      "ts": float(ts[w])})
    return flows, np.stack([ts[set_rows], ts[wait_rows]], axis=1).ravel()


def _metadata(trace: Trace, pid: np.ndarray, tid: np.ndarray, ranks: dict[str, int]
              ) -> list[dict[str, Any]]:
    """process_name / sort index / labels per core instance, thread_name / sort index per lane."""
    units = trace.events[_UNIT_KEYS].drop_duplicates().sort_values(_UNIT_KEYS)
    mix = {k: m.kernel_type == "mix" for k, m in trace.launch_metas.items()}
    several = len(trace.launch_metas) > 1
    out = []
    for number, (launch, block, kind, sub, core) in enumerate(units.itertuples(index=False), 1):
        suffix = str(sub) if kind == "AIV" and mix.get(launch) else ""
        name = (f"launch {launch} " if several else "") + f"block {block} {kind}{suffix}"
        out += [_meta("process_name", number, None, name=name),
                _meta("process_sort_index", number, None, sort_index=number),
                _meta("process_labels", number, None, labels=f"{kind} core {core}")]
    pipes = {r: p for p, r in ranks.items()}
    stride = int(tid.max(initial=0)) + 1
    for lane in np.unique(pid * stride + tid).tolist():
        p, t = divmod(lane, stride)
        pipe, lvl = pipes[(t - 1) // MAX_LEVELS], (t - 1) % MAX_LEVELS
        out += [_meta("thread_name", p, t, name=pipe if lvl == 0 else f"{pipe} #{lvl + 1}"),
                _meta("thread_sort_index", p, t, sort_index=t)]
    return out


def _meta(event_name: str, pid: int, tid: int | None, **args: Any) -> dict[str, Any]:
    event = {"name": event_name, "ph": "M", "pid": int(pid), "args": args}
    if tid is not None:
        event["tid"] = int(tid)
    return event


def _meta_fields(trace: Trace) -> dict[str, Any]:
    m = trace.meta
    return {"kernel": m.kernel, "backend": m.backend, "soc": m.soc, "clock_mhz": m.clock_mhz,
            "block_dim": m.block_dim, "kernel_type": m.kernel_type}

