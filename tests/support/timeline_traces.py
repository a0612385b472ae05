"""Synthetic Traces and a racing cell shared by the workbench's timeline tests."""
from __future__ import annotations

import numpy as np
import pandas as pd

from pypto_pro.trace import Trace, TraceMeta

#: `pl.load_tile` (cell line 9, pipe MTE2) races `pl.add` (cell line 10, pipe V): no sync
RACE_CELL = '''%%pypto --launch "racy(x, z)" --sanitize --show run,timeline
T16 = pl.TileType([64, 128], pl.DT_FP16)
@pl.jit
def racy(x: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP16],
         z: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP16]):
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        c = pl.make_tile(T16, addr=0x8000)
        pl.load_tile(a, x, [0, 0])
        pl.add(c, a, a)
        pl.system.sync_src(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.store_tile(z, c, [0, 0])
'''


def events_frame(rows: list[dict]) -> pd.DataFrame:
    """Trace events: each row a vector add on AIV core 0 unless it says otherwise."""
    base = {"launch": 0, "core": 0, "core_kind": "AIV", "block": 0, "subblock": 0,
            "pipe": "V", "kind": "instr", "op": "TADD", "ir_op": "block.add", "file": "k.py",
            "line": 1, "start": 0, "end": 1, "bytes": 0, "flops": 0, "sync_ids": "",
            "stall_reason": "", "flow_id": -1, "flow_role": ""}
    return pd.DataFrame([{**base, **r} for r in rows])


def trace_of(events: pd.DataFrame, kernel_type: str = "aiv") -> Trace:
    """A one-block Trace of `events`."""
    return Trace(events, TraceMeta("k", "sim", "Ascend950PR_9589", 1650.0, 1, kernel_type))


def big_trace(n: int, cores: int = 8) -> Trace:
    """`n` events: per core and round a load, an add, a store and a get/rls pair."""
    per_core = n // cores // 5
    r = np.arange(per_core, dtype=np.int64)
    frames = []
    for core in range(cores):
        t = r * 1000 + core
        for pipe, op, ir_op, kind, off, dur in (
                ("MTE2", "TLOAD", "block.load", "instr", 0, 400),
                ("V", "TADD", "block.add", "instr", 400, 50),
                ("MTE3", "TSTORE", "block.store", "instr", 500, 300),
                ("MTE2", "get_buf", "system.mutex_lock_dyn", "sync", 900, 1),
                ("MTE2", "rls_buf", "system.mutex_unlock_dyn", "sync", 950, 1)):
            frames.append(pd.DataFrame({
                "launch": 0, "core": core, "core_kind": "AIV", "block": core, "subblock": 0,
                "pipe": pipe, "kind": kind, "op": op, "ir_op": ir_op, "file": "k.py",
                "line": 10, "start": t + off, "end": t + off + dur, "bytes": 32768,
                "flops": 0, "sync_ids": "3" if kind == "sync" else "", "stall_reason": "",
                "flow_id": -1, "flow_role": ""}))
    return trace_of(pd.concat(frames, ignore_index=True))
