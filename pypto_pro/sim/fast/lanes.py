"""A tape's steps in two lanes that run at once, one on the caller's thread and one on a worker.

Two ops commute when neither writes memory the other touches. The blocks of an SPMD launch
mostly touch only their cores' buffers, read shared inputs and write their own tiles of the
outputs, so the steps of a tape (`tape`) fall into groups that share nothing written: every op
touching one on-chip buffer is in that buffer's group, and a GM write joins the groups of the
footprints it meets (`footprints`, exact to the row for tile loads and stores; anything unsure
counts as the whole storage, written). Running each group's steps in their tape order, the
groups in any interleaving, gives every value the tape gives. `split` deals the groups to two
lanes of about equal length, each lane group by group (a core's steps in a row: its buffers
stay in cache, and its runs of copies join into one call, `fusion.joined`); the second lane
runs on one worker thread kept for the process. torch and the compiled copies let go of the
GIL while they work, so the lanes' work overlaps.

The steps of a lane are made on the thread that runs them: products compute into scratch
buffers of their thread (`ops.cube`). A launch that runs compiled bodies of its own (VF
sections, SIMT launches: their memory is not their operands') or an op without a spec keeps one
lane. `PYPTOPRO_SIM_LANES=1` keeps one lane always; the default is two on a machine with two
CPUs or more for this process. The worker takes on the torch thread count and the FP control
state (`torch.set_flush_denormal`) of the thread that hands it a lane, so a lane computes there
what it computes here.
"""
from __future__ import annotations

import functools
import os
import queue
import sys
import threading
from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple

import numpy as np
import torch

from pypto_pro.ir.ops import REGISTRY

from .. import settings
from . import scheduler_native
from .footprints import FP_W, Footprints
from ..model.memory import GMRef, TileRef
from ..step import Step
from ..ops.movement import _gm_view, _offsets

#: ops whose memory is not (only) their operands'
_BODIES = frozenset({"vf.vec_scope", "simt.launch"})
#: a second lane pays for itself from this many steps in it
_MIN_LANE = 64
#: ops whose footprint is a GM window: op → (tile position, GM position)
_WINDOWED = {"block.load": (0, 1), "block.store": (1, 0), "block.store_fp": (1, 0)}
#: the smallest normal double, and one half (names: a product of literals would be folded)
_SMALLEST_NORMAL, _HALF = sys.float_info.min, 0.5


def wanted() -> bool:
    """Whether tapes run in two lanes here (`PYPTOPRO_SIM_LANES`, the CPUs this process has)."""
    setting = settings.lanes()
    if setting is not None:
        return setting > 1
    return _cpus() >= 2


@functools.cache
def _cpus() -> int:
    """The CPUs this process may run on (asked once: a system call every launch otherwise)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
        (os.cpu_count() or 1)


def prepare() -> None:
    """Start loading what `split` needs, when tapes run in two lanes here."""
    if wanted():
        scheduler_native.library()


class Lane(NamedTuple):
    """The positions (in the replay's order) of a lane's ops in the order it runs them: group
    by group (`groups`: per op its group), each group's in the replay's order."""

    positions: list[int]
    groups: list[int]


def split(instrs: list, order: list[int]) -> list[Lane] | None:
    """The lanes instructions `order` (of `instrs`) run in: two when each has enough to run and
    this machine runs two (`wanted`), else one; None when the ops are all one group, or may
    not be reordered (see the module doc)."""
    if len(order) < 2:
        return None
    lib = scheduler_native.library()
    if lib is None:
        return None
    fp = Footprints()
    for position, e in enumerate(order):
        instr = instrs[e]
        op = instr.ir_op
        if op in _BODIES or op not in REGISTRY:
            return None
        fp.add(position, op, instr.args, instr.kwargs, _window(op, instr.args, instr.kwargs))
    gm = np.zeros(len(fp.spaces), dtype=np.int64)
    gm[list(fp.gm_spaces)] = 1
    firsts = np.frombuffer(fp.index, dtype=np.int64)[1::2] // FP_W
    comp = scheduler_native.components(lib, np.frombuffer(fp.table, dtype=np.int64),
                                       np.ascontiguousarray(firsts), gm)
    return _dealt(comp)


def _window(op: str, args: list, kwargs: dict) -> Any:
    """The GM window of a tile load or store (its `lines` and `storage`), else None."""
    at = _WINDOWED.get(op)
    if at is None or len(args) < 3:
        return None
    tile, ref = args[at[0]], args[at[1]]
    if type(tile) is not TileRef or type(ref) is not GMRef:
        return None
    try:
        return ref.window(_offsets(args[2]), tile.valid_rows, tile.valid_cols,
                          **_gm_view(kwargs))
    except (IndexError, ValueError, TypeError):  # (the op fails: its whole storage)
        return None


def _dealt(comp: np.ndarray) -> list[Lane] | None:
    """The groups (`comp`: per position its group, numbered by its first position) dealt to
    two lanes, largest first to the shorter one, or all to one lane when this machine runs one
    (`wanted`) or the shorter would be too short to gain; None for a single group."""
    groups, sizes = np.unique(comp, return_counts=True)
    if len(groups) < 2:
        return None
    lane_of = np.zeros(int(comp.max()) + 1, dtype=np.int64)
    if wanted():
        lengths = [0, 0]
        for k in np.argsort(-sizes, kind="stable").tolist():
            lane = int(lengths[1] < lengths[0])
            lane_of[groups[k]] = lane
            lengths[lane] += int(sizes[k])
        if min(lengths) < _MIN_LANE:
            lane_of[:] = 0
    lanes = lane_of[comp]
    ranked = np.lexsort((comp, lanes))  # (stable: each group's positions stay in order)
    cut = int(np.searchsorted(lanes[ranked], 1))
    return [Lane(part.tolist(), comp[part].tolist())
            for part in (ranked[:cut], ranked[cut:]) if len(part)]


def run(steps: list[Step]) -> tuple[int, BaseException] | None:
    """Run a lane's steps in order, up to the first that raises: (its index, the error), or
    None. (A tape in lanes holds only bound steps, which have no checks to fail: `tape.make`.)"""
    for index, step in enumerate(steps):
        try:
            step.run()
        except Exception as err:  # noqa: BLE001 - the caller raises it
            return index, err
    return None


def run_lanes(steps: list[list[Step]], split: list[Lane], together: bool,
              here: bool = False) -> tuple[int, int, int, BaseException] | None:
    """`run` of each lane's steps: a second lane on the worker while the first runs here
    (`together`), else after it, on the worker or (`here`) here, each up to its first failure.
    (Position, lane, index, error) of the step that failed first in the replay's order, or
    None."""
    if len(split) == 1:
        found = [run(steps[0])]
    elif together:
        job = worker().start(partial(run, steps[1]))
        try:
            first = run(steps[0])
        finally:
            second = job.wait()  # (nothing runs on before the worker's lane is through)
        found = [first, second]
    else:
        second = partial(run, steps[1])
        found = [run(steps[0]), second() if here else worker().start(second).wait()]
    failures = [(split[k].positions[index], k, index, err)
                for k, failed in enumerate(found) if failed is not None
                for index, err in (failed,)]
    return min(failures, key=lambda f: f[0]) if failures else None


def flushes_denormals() -> bool:
    """Whether this thread flushes denormal floats to zero (`torch.set_flush_denormal`: the
    FP control state is per thread): half the smallest normal double is a denormal."""
    return _SMALLEST_NORMAL * _HALF == 0.0


class _Job:
    """A call the worker runs, with the torch threads and the FP control state (flushing
    denormals or not) of the thread that started it."""

    __slots__ = ("run", "threads", "flush", "done", "value", "error")

    def __init__(self, run: Callable[[], Any]) -> None:
        self.run, self.threads = run, torch.get_num_threads()
        self.flush = flushes_denormals()
        self.done = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None

    def wait(self) -> Any:
        """Its result, once it is through (its error raised here). An interrupt while waiting
        is raised once the job is through too: nothing may run beside a lane's steps."""
        try:
            self.done.wait()
        except BaseException:
            self.done.wait()
            raise
        if self.error is not None:
            raise self.error
        return self.value


class _Worker:
    """The thread running second lanes, one job at a time."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._serve, name="pypto-sim-lane", daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            job = self.jobs.get()
            try:
                if torch.get_num_threads() != job.threads:  # (per thread with OpenMP)
                    torch.set_num_threads(job.threads)
                if flushes_denormals() != job.flush:
                    torch.set_flush_denormal(job.flush)
                job.value = job.run()
            except BaseException as err:  # noqa: BLE001 - handed to the caller
                job.error = err
            finally:
                job.done.set()

    def start(self, run: Callable[[], Any]) -> _Job:
        """Run `run` on the worker."""
        job = _Job(run)
        self.jobs.put(job)
        return job


_worker: _Worker | None = None
_worker_lock = threading.Lock()


def worker() -> _Worker:
    """The process's lane worker (started on first use)."""
    global _worker
    with _worker_lock:
        if _worker is None:
            _worker = _Worker()
        return _worker


def _forget_worker() -> None:
    """In a forked child: the parent's worker thread is not there (a job for it would wait
    forever), and its lock may have been held at the fork."""
    global _worker, _worker_lock
    _worker, _worker_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_worker)


__all__ = ["Lane", "prepare", "run", "run_lanes", "split", "wanted", "worker"]
