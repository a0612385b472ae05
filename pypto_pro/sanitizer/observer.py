"""The runtime sanitizer: an `Engine.observer` that watches every instruction of a simulated
launch and turns bugs into `Finding`s.

Happens-before: every pipe of every core, and each scalar unit, is a thread with a vector clock.
An instruction inherits the clock of the scalar unit when it was issued and the clock of the
previous instruction on its pipe (queues are in order). Edges: flag set → its wait, mutex
unlock → the next lock of the id, cross-core set → the wait that consumes it (FIFO per counter),
pipe barriers (the scalar unit waits for the pipes), sync_all (everyone's clock), and a block
starting on a physical core after the previous block there ended. Two accesses to the same
on-chip bytes by different threads, at least one a write, with neither ordered before the other
are a race even when the simulated timing happened to give the right answer; two accesses of
one core are classified in program order (the first one issued is the "earlier"), accesses of
different cores in simulated order. GM is checked the same way (kinds `GM_RACE_RAW`,
`GM_RACE_WAR`, `GM_WRITE_CONFLICT`; atomic adds may overlap each other).

Out-of-bounds and misaligned accesses become findings and the instruction's effect is dropped
so the launch goes on; pairing bugs are found at kernel end (or from a deadlock's stuck units).
"""
from __future__ import annotations

import itertools
import weakref
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable

import torch

from ..ir import ops as opreg
from ..ir.span import Span
from ..ir.types import PipeType
from ..sim.model.memory import GMRef, SimMemoryError, TileRef
from .clocks import Clock, join, ordered_before
from ..trace.findings import Finding, SanitizerReport, Site
from .hints import OverlapHints
from .footprint import (
    gm_bytes,
    gm_read_bytes,
    tile_bytes,
    tile_extent,
    view_overflow,
    write_footprint,
)
from .shadow import Shadow, compact

#: (earlier is a write?, later is a write?) → kind, on chip and in GM
_RACE = {(True, False): "DATA_RACE_RAW", (False, True): "DATA_RACE_WAR",
         (True, True): "DATA_RACE_WAW"}
_GM_RACE = {(True, False): "GM_RACE_RAW", (False, True): "GM_RACE_WAR",
            (True, True): "GM_WRITE_CONFLICT"}
_WHAT = {"DATA_RACE_RAW": "reads bytes written", "DATA_RACE_WAR": "overwrites bytes read",
         "DATA_RACE_WAW": "writes bytes written", "GM_RACE_RAW": "reads GM bytes written",
         "GM_RACE_WAR": "overwrites GM bytes read", "GM_WRITE_CONFLICT": "writes GM bytes "
         "written"}


@dataclass
class _Rec:
    """One recorded access: which thread at which of its clocks, where, how."""

    tid: int
    clock: int
    site: Site
    write: bool
    atomic: bool = False
    extent: tuple[int, int] = (0, 0)  # declared byte range of the tile written through
    order: int = 0  # program (issue) order, comparable within one core


class Sanitizer:
    """Engine observer collecting a `SanitizerReport` for one launch."""

    def __init__(self, kernel: str = "", programs: Any = None) -> None:
        self.report = SanitizerReport(kernel)
        #: names overlapping buffers in race hints (the launch's compiled programs)
        self._hints = OverlapHints(programs.values()) if programs else None
        self.records: list[_Rec] = []
        self._tids: dict[tuple[int, str], int] = {}
        self._clocks: list[Clock] = []
        self._core_tids: dict[int, list[int]] = {}
        self._cores: list[Any] = []
        self._snap: dict[int, Clock] = {}  # scalar clock snapshot shared by issued instrs
        self._issued: dict[Any, tuple[Clock, int]] = {}
        self._po = itertools.count(1)  # issue order: program order within each core
        self._cur = 0  # issue order of the instruction being observed
        self._flags: dict[tuple, deque] = {}  # (core, flag) → (clock, site) of pending sets
        self._flag_issue: dict[tuple, tuple[int, Site]] = {}  # sets - waits issued, last set
        self._mutex: dict[tuple[int, int], Clock] = {}
        self._held: dict[tuple[int, int], list[tuple[str, Site]]] = {}
        self._xq: dict[tuple[int, int], deque] = {}
        self._rounds: dict[tuple[int, int], Clock] = {}
        self._sync_all_at: dict[int, Span] = {}  # where each core last entered sync_all
        self._onchip: dict[tuple[int, Any], Shadow] = {}
        self._gm: dict[int, Shadow] = {}
        self._gm_reads: list[tuple] = []  # (GM ref, method, args, kwargs) of the current op

    # ------------------------------------------------------------ threads and clocks
    def _tid(self, core: Any, pipe: PipeType) -> int:
        key = (core.uid, pipe.value)
        tid = self._tids.get(key)
        if tid is None and core.uid not in self._core_tids:
            self._new_core(core)  # registers its scalar unit
            tid = self._tids.get(key)
        if tid is None:
            tid = self._tids[key] = len(self._clocks)
            self._clocks.append({})
            self._core_tids[core.uid].append(tid)
        return tid

    def _new_core(self, core: Any) -> None:
        """A block starting on a physical core comes after the blocks that used its memory."""
        self._core_tids[core.uid] = []
        mems = {id(core.memory), *(id(p.memory) for p in core.peers)}
        start: Clock = {}
        for prev in self._cores:
            if id(prev.memory) in mems:
                for t in self._core_tids[prev.uid]:
                    join(start, self._clocks[t])
        self._cores.append(core)
        s = self._tids[(core.uid, PipeType.S.value)] = len(self._clocks)
        self._clocks.append(start)
        self._core_tids[core.uid].append(s)

    def _tick(self, tid: int, inherited: Clock | None = None) -> Clock:
        clock = self._clocks[tid]
        if inherited:
            join(clock, inherited)
        clock[tid] = clock.get(tid, 0) + 1
        return clock

    def _scalar(self, core: Any) -> tuple[int, Clock]:
        """The scalar unit's thread, clock advanced (its shared snapshot invalidated)."""
        tid = self._tid(core, PipeType.S)
        self._snap.pop(core.uid, None)
        self._cur = next(self._po)
        return tid, self._tick(tid)

    def _step(self, core: Any, pipe: PipeType, instr: Any) -> tuple[int, Clock]:
        """An instruction executing on `pipe`: its thread and clock."""
        tid = self._tid(core, pipe)
        snap, self._cur = self._issued.pop(instr, None) or (None, next(self._po))
        return tid, self._tick(tid, snap)

    def _site(self, core: Any, pipe: PipeType | str, span: Span | None, op: str = "") -> Site:
        return Site(span.file if span else "", span.line if span else 0, core.label,
                    core.core_id, core.block, getattr(pipe, "value", pipe),
                    max(core.engine.now, core.time if pipe is PipeType.S else 0), op)

    def _add(self, kind: str, message: str, site: Site, other: Site | None = None,
             hint: str = "") -> None:
        self.report.add(Finding(kind, message, site, other, hint=hint))

    # ------------------------------------------------------------ hooks: issue and ops
    def issued(self, core: Any, instr: Any) -> None:
        """The scalar unit put `instr` in a pipe queue: it inherits the scalar clock."""
        snap = self._snap.get(core.uid)
        if snap is None:
            snap = self._snap[core.uid] = dict(self._clocks[self._tid(core, PipeType.S)])
        self._issued[instr] = (snap, next(self._po))
        if instr.kind in ("set_flag", "wait_flag"):
            self._flag_order(core, instr)

    def _flag_order(self, core: Any, instr: Any) -> None:
        """Flags in program order: a set while an earlier set has no wait issued after it is
        a double set (the flag is one bit), whatever the timing."""
        key = (core.uid, instr.key)
        pending, last = self._flag_issue.get(key, (0, None))
        if instr.kind == "wait_flag":
            self._flag_issue[key] = (pending - 1, last)
            return
        site = Site(instr.span.file, instr.span.line, core.label, core.core_id, core.block,
                    instr.pipe.value, core.time, instr.ir_op)
        if pending > 0 and last is not None:
            self._add("DOUBLE_SET_FLAG", f"{_flag(instr.key)} set again before its wait "
                      f"(first set at line {last.line})", site, last)
        self._flag_issue[key] = (pending + 1, site)

    def watch(self, operands: list) -> None:
        """Record the GM reads the op library makes through `operands` (per-instruction
        copies made by the engine, so wrapping their methods touches nothing else)."""
        self._gm_reads.clear()
        for ref in operands:
            if isinstance(ref, GMRef):
                for name in ("read_window", "read_linear"):
                    setattr(ref, name, _recording(self._gm_reads, ref, name))

    def op(self, core: Any, pipe: Any, instr: Any, writes: list) -> bool:
        """A tile instruction started: check its operands, its reads and the writes it queued;
        False when a write is out of bounds (reported; the engine skips the instruction)."""
        tid, clock = self._step(core, pipe.kind, instr)
        site = self._site(core, pipe.kind, instr.span, instr.ir_op)
        usable = True
        for ref in _operands(instr):
            if isinstance(ref, TileRef):
                usable = self._check_tile(core, ref, site) and usable
            elif isinstance(ref, GMRef):
                self._check_view(ref, site)
        if not usable:
            return False
        spec = opreg.get(instr.ir_op)
        if spec is not None:
            reads, _ = spec.roles(len(instr.args))
            # an opaque op (a VF section: every operand counted as read) may only write some
            # of them: race-check them all, but judge initialisation only on declared reads
            exact = bool(spec.reads or spec.writes)
            for i in reads:
                for ref in _refs(instr.args[i]):
                    if isinstance(ref, TileRef):
                        self._tile_access(ref, tile_bytes(ref), tid, clock, site, False,
                                          check_init=exact)
        for ref, name, args, kwargs in self._gm_reads:
            self._gm_access(ref, gm_read_bytes(ref, name, args, kwargs), tid, clock, site,
                            False)
        self._gm_reads.clear()  # (emptied, not replaced: it holds the operands)
        try:
            footprints = [write_footprint(*w) for w in writes]
        except (IndexError, ValueError) as err:
            if self._out_of_bounds(err, site):
                return False
            raise
        for ref, idx, atomic in footprints:
            if isinstance(ref, TileRef):
                self._tile_access(ref, idx, tid, clock, site, True)
            else:
                self._gm_access(ref, idx, tid, clock, site, True, atomic)
        return True

    def op_failed(self, core: Any, pipe: Any, instr: Any, err: Exception) -> bool:
        """The op library rejected the instruction: report what it did wrong and skip it
        (True), or leave the error to the engine (False) when it is not a memory fault."""
        self._step(core, pipe.kind, instr)
        site = self._site(core, pipe.kind, instr.span, instr.ir_op)
        before = len(self.report)
        for ref in _operands(instr):
            if isinstance(ref, TileRef):
                self._check_tile(core, ref, site)
        if len(self.report) > before:
            return True
        return self._out_of_bounds(err, site)

    def _out_of_bounds(self, err: Exception, site: Site) -> bool:
        if isinstance(err, SimMemoryError) and err.space == "GM":
            self._add("GM_OUT_OF_BOUNDS", str(err), site)
        elif isinstance(err, SimMemoryError):
            self._add("BUFFER_CAPACITY_EXCEEDED", str(err), site)
        elif isinstance(err, (IndexError, ValueError)) and "outside tile" in str(err):
            self._add("TILE_OUT_OF_BOUNDS", str(err), site)
        else:
            return False
        return True

    def _check_tile(self, core: Any, ref: TileRef, site: Site) -> bool:
        """Alignment and capacity of a tile operand; False when it does not fit its buffer."""
        g = ref.geometry
        align = core.engine.soc.alignment(g.space)
        if align and g.addr % align:
            self._add("MISALIGNED_ACCESS", f"{g.space.value} tile at {g.addr:#x} is not "
                      f"{align}-byte aligned", site)
        lo, hi = tile_extent(ref)
        size = ref.memory.buffer(g.space).numel()
        if hi <= size:
            return True
        self._add("BUFFER_CAPACITY_EXCEEDED", f"{g.space.value} tile [{lo:#x}, {hi:#x}) ends "
                  f"past the {size}-byte buffer", site)
        return False

    def _check_view(self, ref: GMRef, site: Site) -> None:
        over = view_overflow(ref)
        if over is not None:
            self._add("GM_OUT_OF_BOUNDS", f"tensor view {list(ref.shape)} spans {over[0]} bytes "
                      f"but its source has {over[1]}", site)

    # ------------------------------------------------------------ shadow memory
    def _record(self, tid: int, clock: Clock, site: Site, write: bool, atomic: bool = False,
                extent: tuple[int, int] = (0, 0)) -> int:
        self.records.append(_Rec(tid, clock[tid], site, write, atomic, extent, self._cur))
        return len(self.records) - 1

    def _tile_access(self, ref: TileRef, idx: torch.Tensor, tid: int, clock: Clock, site: Site,
                     write: bool, check_init: bool = True) -> None:
        space = ref.geometry.space
        key = (id(ref.memory), space)
        shadow = self._onchip.get(key)
        if shadow is None:
            shadow = self._onchip[key] = Shadow(ref.memory.buffer(space).numel())
        idx = compact(idx)
        extent = tile_extent(ref)
        raced = self._races(shadow.last_writers(idx), tid, clock, site, write, extent=extent)
        if write:
            self._races(shadow.last_readers(idx, tid), tid, clock, site, True, extent=extent)
            shadow.wrote(idx, self._record(tid, clock, site, True, extent=extent))
            return
        if not raced and check_init:
            self._overlap(shadow.last_writers(idx), ref, site)
            init = ref.memory.initialised[space][idx]
            if not bool(init.all()):
                missing = int((~init).sum())
                self._add("UNINITIALIZED_READ", f"reads {missing} never-written byte(s) of "
                          f"{space.value} tile at {ref.geometry.addr:#x}", site)
        shadow.read(idx, tid, self._record(tid, clock, site, False))

    def _races(self, recs: list[int], tid: int, clock: Clock, site: Site, write: bool,
               kinds: dict = _RACE, atomic: bool = False,
               extent: tuple[int, int] | None = None) -> bool:
        found = False
        for r in recs:
            rec = self.records[r]
            if rec.tid == tid or ordered_before(rec.tid, rec.clock, clock) or (
                    atomic and rec.atomic):
                continue
            found = True
            first, then = (rec.site, site), (rec.write, write)
            if rec.site.core == site.core and rec.order > self._cur:
                first, then = (site, rec.site), (write, rec.write)  # program order decides
            kind = kinds[then]
            what = _WHAT[kind]
            early, late = first
            hint = ""
            if extent is not None and self._hints is not None:
                hint = self._hints.for_race(early.line, late.line, extent) or ""
            self._add(kind, f"{late.op} on {late.core} pipe {late.pipe} {what} by {early.op} "
                      f"on {early.core} pipe {early.pipe} at line {early.line} with no sync "
                      "between them", late, early, hint)
        return found

    def _overlap(self, recs: list[int], ref: TileRef, site: Site) -> None:
        lo, hi = tile_extent(ref)
        for r in recs:
            rec = self.records[r]
            a, b = rec.extent
            if (a, b) != (0, 0) and not (a <= lo and hi <= b) and not (lo <= a and b <= hi):
                self._add("TILE_OVERLAP", f"tile [{lo:#x}, {hi:#x}) reads bytes last written "
                          f"through tile [{a:#x}, {b:#x}) at line {rec.site.line}, which "
                          f"partially overlaps it", site, rec.site)

    def _gm_access(self, ref: GMRef, idx: torch.Tensor, tid: int, clock: Clock, site: Site,
                   write: bool, atomic: bool = False) -> None:
        storage = ref.tensor.untyped_storage()
        key = storage.data_ptr()
        shadow = self._gm.get(key)
        if shadow is None or shadow.size != storage.nbytes():
            shadow = self._gm[key] = Shadow(storage.nbytes(), per_thread_reads=False)
        if isinstance(idx, torch.Tensor) and idx.numel() and int(idx.max()) >= storage.nbytes():
            # the bytes the NPU allocator reserves past the storage (GMRef): no data there
            beyond = int((idx >= storage.nbytes()).sum())
            self._add("GM_PAST_TENSOR_END", f"{'writes' if write else 'reads'} {beyond} bytes "
                      f"past the end of a {storage.nbytes()}-byte tensor, in the bytes its "
                      f"device allocation reserves ({'discarded' if write else 'zeros'} here)",
                      site)
            idx = idx[idx < storage.nbytes()]
        idx = compact(idx)
        self._races(shadow.last_writers(idx), tid, clock, site, write, _GM_RACE, atomic)
        if write:
            self._races(shadow.last_readers(idx, tid), tid, clock, site, True, _GM_RACE)
            shadow.wrote(idx, self._record(tid, clock, site, True, atomic))
        else:
            shadow.read(idx, tid, self._record(tid, clock, site, False))

    # ------------------------------------------------------------ hooks: scalar accesses
    def scalar_access(self, core: Any, ref: Any, offset: int, write: bool, span: Span) -> bool:
        """getval / setval by the scalar unit; False when out of bounds (the access is
        skipped)."""
        tid, clock = self._scalar(core)
        site = self._site(core, PipeType.S, span, "block.setval" if write else "block.getval")
        if isinstance(ref, GMRef):
            numel = 1
            for s in ref.shape:
                numel *= s
            if not 0 <= offset < numel:
                self._add("GM_OUT_OF_BOUNDS", f"scalar {'write' if write else 'read'} at "
                          f"linear offset {offset} of a tensor with {numel} elements", site)
                return False
            if write:
                elems = torch.tensor([ref.base_offset + offset])
                self._gm_access(ref, gm_bytes(ref, elems), tid, clock, site, True)
            else:
                self._gm_access(ref, gm_read_bytes(ref, "read_linear", (offset, 1), {}), tid,
                                clock, site, False)
            return True
        g = ref.geometry
        if not 0 <= offset < g.rows * g.cols:
            self._add("TILE_OUT_OF_BOUNDS", f"scalar {'write' if write else 'read'} at element "
                      f"{offset} of a [{g.rows}, {g.cols}] tile", site)
            return False
        view, skip = ref._linear_view(offset, 1)
        self._tile_access(view, tile_bytes(view, 0, skip, 1, 1), tid, clock, site, write)
        return True

    def bad_validshape(self, core: Any, tile: Any, rows: int, cols: int,
                       span: Span) -> tuple[int, int]:
        """set_validshape beyond the declared shape: report, and clamp it."""
        g = tile.geom
        self._add("TILE_OUT_OF_BOUNDS", f"set_validshape [{rows}, {cols}] exceeds the tile's "
                  f"shape [{g.rows}, {g.cols}]", self._site(core, PipeType.S, span,
                                                             "block.set_validshape"))
        return max(0, min(rows, g.rows)), max(0, min(cols, g.cols))

    # ------------------------------------------------------------ hooks: synchronisation
    def flag_set(self, core: Any, instr: Any) -> None:
        """A set_flag executes (on its pipe, or on S)."""
        if instr.pipe is PipeType.S:
            _, clock = self._scalar(core)
        else:
            _, clock = self._step(core, instr.pipe, instr)
        if instr.pipe is PipeType.S:  # runs at issue: no `issued` call for it
            self._flag_order(core, instr)
        site = self._site(core, instr.pipe, instr.span, instr.ir_op)
        self._flags.setdefault((core.uid, instr.key), deque()).append((dict(clock), site))

    def sync(self, core: Any, pipe: PipeType, instr: Any) -> None:
        """A wait_flag / lock / unlock / cross-core set or wait executes on `pipe`."""
        kind = instr.kind
        if kind == "set_flag":
            return  # flag_set handles it
        if pipe is PipeType.S:
            _, clock = self._scalar(core)
        else:
            _, clock = self._step(core, pipe, instr)
        site = self._site(core, pipe, instr.span, instr.ir_op)
        if kind == "wait_flag":
            if pipe is PipeType.S:
                self._flag_order(core, instr)
            pending = self._flags.get((core.uid, instr.key))
            if pending:
                join(clock, pending.popleft()[0])
        elif kind == "lock":
            join(clock, self._mutex.get((core.uid, instr.key), {}))
            self._held.setdefault((core.uid, instr.key), []).append((pipe.value, site))
        elif kind == "unlock":
            self._mutex[(core.uid, instr.key)] = dict(clock)
            held = self._held.get((core.uid, instr.key), [])
            mine = next((h for h in held if h[0] == pipe.value), None)
            if mine is None:
                self._add("MUTEX_UNLOCK_BEFORE_LOCK", f"mutex {instr.key} unlocked on pipe "
                          f"{pipe.value}, which does not hold it", site)
            else:
                held.remove(mine)
        elif kind == "xset":
            for c, slot in core.launch.xset_slots(core, instr.key, instr.span):
                self._xq.setdefault((c.uid, slot), deque()).append((dict(clock), site))
        elif kind == "xwait":
            for c, slot in core.launch.xwait_slots(core, instr.key, instr.span):
                q = self._xq.get((c.uid, slot))
                if q:
                    join(clock, q.popleft()[0])

    def barrier(self, core: Any, pipes: list) -> None:
        """The scalar unit waited for `pipes` to drain: it now knows all they did."""
        _, clock = self._scalar(core)
        for p in pipes:
            t = self._tids.get((core.uid, p.kind.value))
            if t is not None:
                join(clock, self._clocks[t])

    def sync_all_arrive(self, core: Any, group: Any, span: Span) -> None:
        self._sync_all_at[core.uid] = span
        _, clock = self._scalar(core)
        join(self._rounds.setdefault((id(group), group.arrived[core.uid]), {}), clock)

    def sync_all_leave(self, core: Any, group: Any) -> None:
        _, clock = self._scalar(core)
        join(clock, self._rounds.get((id(group), group.arrived[core.uid]), {}))

    # ------------------------------------------------------------ kernel end
    def finish(self, launch: Any) -> SanitizerReport:
        """Pairing checks once every core finished."""
        for (_, key), pending in self._flags.items():
            for _, site in pending:
                self._add("UNPAIRED_SET_FLAG", f"{_flag(key)} set but never waited for", site)
        for (_, ident), held in self._held.items():
            for pipe, site in held:
                self._add("UNPAIRED_MUTEX_LOCK", f"mutex {ident} locked on pipe {pipe} and "
                          "never unlocked", site)
        for (_, slot), q in self._xq.items():
            if q:
                site = q[0][1]
                self._add("CROSS_CORE_UNPAIRED", f"cross-core id {slot} set {len(q)} more "
                          f"time(s) than waited for (counter non-zero at kernel end)", site)
        return self.close()

    def deadlocked(self, engine: Any) -> SanitizerReport:
        """Findings for every stuck unit of a launch that can never finish."""
        for core in engine.cores:
            if core.done:
                continue
            if not core.scalar_done and core.wait_info is not None:
                _, reason, ids, instr = core.wait_info
                self._stuck(core, PipeType.S, reason, ids, instr)
            for p in core.pipes.values():
                if p.queue:
                    reason, ids = (p.blocked[1], p.blocked[2]) if p.blocked else ("", "")
                    self._stuck(core, p.kind, reason, ids, p.queue[0])
        return self.close()

    def close(self) -> SanitizerReport:
        """The launch is over: drop its state (it refers to the cores, which refer back to
        the engine observing through this object), so the launch dies by reference counting
        instead of waiting for a GC pass; only the report stays."""
        report = self.report
        self.__dict__.clear()
        self.report = report
        return report

    def _stuck(self, core: Any, pipe: PipeType, reason: str, ids: str, instr: Any) -> None:
        span = instr.span if instr is not None else (
            self._sync_all_at.get(core.uid) if reason == "sync_all" else None)
        site = self._site(core, pipe, span, instr.ir_op if instr is not None else reason)
        if reason == "flag":
            if not _queued(core, "set_flag", instr.key):  # else its set is stuck behind us
                self._add("UNPAIRED_WAIT_FLAG", f"{ids} waited for but never set", site)
        elif reason == "mutex":
            held = self._held.get((core.uid, instr.key), [])
            other = held[0][1] if held else None
            if held and held[0][0] == pipe.value:
                self._add("MUTEX_DOUBLE_LOCK", f"mutex {instr.key} locked again on pipe "
                          f"{pipe.value}, which already holds it", site, other)
            else:
                self._add("UNPAIRED_MUTEX_LOCK", f"mutex {instr.key} is held and never "
                          "unlocked, so this lock waits forever", other or site, site)
        elif reason == "cross_core":
            self._add("CROSS_CORE_WAIT_WITHOUT_SET", f"{ids} waited for but never set", site)
        elif reason in ("barrier", "sync_all"):
            self._add("DEADLOCK", f"{core.label} never passes this {reason}", site)


def _recording(reads: list, ref: GMRef, name: str) -> Callable:
    """`ref`'s GM-reading method `name`, also appending (ref, name, args, kwargs) to `reads`.
    It lives on `ref` itself, so it holds `ref` weakly and the class's function (a bound
    method would make a reference cycle per operand and instruction)."""
    function, me = getattr(type(ref), name), weakref.ref(ref)

    def read(*args: Any, **kwargs: Any) -> Any:
        reads.append((me(), name, args, kwargs))
        return function(me(), *args, **kwargs)

    return read


def _queued(core: Any, kind: str, key: Any) -> bool:
    return any(i.kind == kind and i.key == key for p in core.pipes.values() for i in p.queue)


def _refs(arg: Any) -> tuple:
    return arg if isinstance(arg, tuple) else (arg,)


def _operands(instr: Any) -> list:
    return [r for a in instr.args for r in _refs(a) if isinstance(r, (TileRef, GMRef))]


def _flag(key: tuple) -> str:
    src, dst, i = key
    return f"flag {src.value}->{dst.value} #{i}"
