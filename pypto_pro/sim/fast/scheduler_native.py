"""The compiled scheduler of the stream engine: `scheduler.cpp` (with `l2_model.cpp` included)
built by `native_build` once per machine and compiler, on a background thread, loaded with
ctypes. `PYPTOPRO_SIM_ENGINE` picks the timed engine: `python` always runs `engine.py`,
`native` waits for this library (and raises its build error), `auto` (default) uses it once
it is ready.

`schedule` is one ctypes call per launch over flat int64 arrays (the recorded streams), then
one to size and one to copy the results out; `first_race` one more over the schedule's events
and the ops' footprints (`footprints`): may the replay run the ops eagerly? `components` groups
a tape's ops by the memory they share (`lanes`).
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import settings
from ..model import l2_native
from .footprints import FP_W
from ..native_build import BackgroundLibrary

_addressof, _c_char = ctypes.addressof, ctypes.c_char

FORMAT = 2
_HERE = Path(__file__).parent
ROW_W = 10  # scheduler.cpp ROW_W: uid, pipe, row kind, instr, start, end, ids, reason, flow, role


def _declare(lib: ctypes.CDLL) -> ctypes.CDLL:
    i64, ptr = ctypes.c_int64, ctypes.c_void_p
    lib.pypto_sched_run.argtypes = (ptr, ctypes.c_double, ptr, ptr, ptr, ptr, ptr, i64, ptr, ptr)
    lib.pypto_sched_run.restype = ptr
    lib.pypto_sched_sizes.argtypes, lib.pypto_sched_sizes.restype = (ptr, ptr), None
    lib.pypto_sched_copy.argtypes, lib.pypto_sched_copy.restype = (ptr, ptr, ptr, ptr), None
    lib.pypto_sched_free.argtypes, lib.pypto_sched_free.restype = (ptr,), None
    lib.pypto_sched_first_race.argtypes = (ptr, i64, ptr, i64, ptr, i64, i64, ptr)
    lib.pypto_sched_first_race.restype = i64
    lib.pypto_sched_overlaps.argtypes, lib.pypto_sched_overlaps.restype = (ptr, ptr), i64
    lib.pypto_sched_components.argtypes = (ptr, i64, ptr, i64, ptr, i64, ptr)
    lib.pypto_sched_components.restype = None
    return l2_native.declare(lib)  # its L2 model, for a `NativeL2` over this library


LIBRARY = BackgroundLibrary(f"scheduler-{FORMAT}", [_HERE / "scheduler.cpp",
                                                    l2_native.SOURCE],
                            "pypto_sim_scheduler.so", settings.ENGINE, _declare)


def library(wait: bool = False) -> ctypes.CDLL | None:
    """The loaded scheduler, or None (forced off, no compiler, still building)."""
    return LIBRARY.get(wait)


@dataclass
class Schedule:
    """What the scheduler worked out for one launch (see scheduler.cpp)."""

    error: int  # 0, else the run fails: the Python engine reruns it for the exact error
    rows: np.ndarray  # [n, ROW_W] int64 trace rows, in Core._event order
    events: np.ndarray  # op starts (instruction index) and finishes (~index), in order
    started: np.ndarray  # [blocks, 2]: (block, slot) in start order
    instructions: int
    l2_stats: tuple[int, int, int, int, int]  # read hits, misses, write lines, writebacks, HBM


def _at(a: np.ndarray) -> int:
    """The address of a contiguous array's data (`a.ctypes.data` makes a helper object: 2-4
    µs a call, a dozen calls a launch; a writable one's buffer costs a third of that)."""
    try:
        return _addressof(_c_char.from_buffer(a))
    except (TypeError, ValueError, BufferError):  # (read-only or empty)
        return a.ctypes.data


def schedule(lib: ctypes.CDLL, cfg: np.ndarray, hbm_rate: float, l2_handle: ctypes.c_void_p,
             stream_off: np.ndarray, stream_info: np.ndarray, records: np.ndarray,
             instrs: np.ndarray, lines: np.ndarray, storage_bytes: np.ndarray) -> Schedule:
    """Run the scheduler over the recorded streams (contiguous int64 arrays)."""
    handle = lib.pypto_sched_run(_at(cfg), hbm_rate, l2_handle, _at(stream_off),
                                 _at(stream_info), _at(records), _at(instrs), len(instrs),
                                 _at(lines), _at(storage_bytes))
    if not handle:
        raise MemoryError("the stream engine's scheduler could not allocate its state")
    try:
        sizes = np.empty(11, dtype=np.int64)
        lib.pypto_sched_sizes(handle, _at(sizes))
        n_rows, n_events, n_started = (int(x) for x in sizes[:3])
        rows = np.empty((n_rows, ROW_W), dtype=np.int64)
        events = np.empty(n_events, dtype=np.int64)
        started = np.empty((n_started, 2), dtype=np.int64)
        lib.pypto_sched_copy(handle, _at(rows), _at(events), _at(started))
    finally:
        lib.pypto_sched_free(handle)
    return Schedule(int(sizes[3]), rows, events, started, int(sizes[4]),
                    tuple(int(x) for x in sizes[6:11]))


def first_race(lib: ctypes.CDLL, events: np.ndarray, table: np.ndarray, index: np.ndarray,
               n_instrs: int) -> tuple[int, int] | None:
    """The first (running op, starting op) of `events` where the starting op touches memory
    the running one writes (`footprints.Footprints`: int64 `table`, FP_W per footprint, and
    `index`, per op its instruction and first int), or None: then running every op at its
    start gives the values of reading at the start and writing at the finish."""
    out = np.empty(2, dtype=np.int64)
    rows = table if len(table) else np.zeros(FP_W, dtype=np.int64)
    pairs = index if len(index) else np.zeros(2, dtype=np.int64)
    found = lib.pypto_sched_first_race(_at(events), len(events), _at(rows), len(table),
                                       _at(pairs), len(index) // 2, n_instrs, _at(out))
    return (int(out[0]), int(out[1])) if found else None


def components(lib: ctypes.CDLL, table: np.ndarray, firsts: np.ndarray, gm: np.ndarray
               ) -> np.ndarray:
    """Per op, its group (the group's first op) of the ops sharing no written memory with
    another group (`lanes`): int64 footprint `table` (FP_W per row), per op its first row
    (`firsts`), per space 1 for a GM storage (`gm`)."""
    comp = np.empty(len(firsts), dtype=np.int64)
    rows = table if len(table) else np.zeros(FP_W, dtype=np.int64)
    lib.pypto_sched_components(_at(rows), len(table), _at(firsts), len(firsts),
                               _at(gm if len(gm) else np.zeros(1, np.int64)), len(gm), _at(comp))
    return comp


def overlaps(lib: ctypes.CDLL, a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    """Whether footprints `a` and `b` (FP_W ints each) share a byte (scheduler.cpp)."""
    x, y = np.array(a, dtype=np.int64), np.array(b, dtype=np.int64)
    return bool(lib.pypto_sched_overlaps(_at(x), _at(y)))
