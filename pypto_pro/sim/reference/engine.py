"""The event-driven engine (DESIGN §5 "Execution model"; ascend_950_model.md §2, §3.5).

Per core, a scalar unit (the compiled program's generator) issues instructions into in-order
pipe queues; pipes run concurrently. An instruction reads its operands when it starts and its
writes land when it ends, so a kernel with a missing sync can compute the wrong answer, as on
hardware. Flags are 1-bit (a second set before the wait is an error), mutexes are granted in
issue order per id, cross-core ids are counters, and all cores share one clock and the chip's
L2 and HBM (`memory_system`). When nothing can move and some core is unfinished, the launch
ends with a `DeadlockError` naming every stuck core, pipe and id.
"""
from __future__ import annotations

import functools
import heapq
import itertools
from collections import deque
from dataclasses import dataclass, field
from heapq import heappush
from typing import Any, Callable, NamedTuple

import torch

from ...errors import DeadlockError, SimulationError
from ...ir.span import Span
from ...ir.types import PipeType
from ...trace.schema import EventLog
from ..frontend.calls_issue import ALL_LANES, Instr
from ..model.cost_model import op_cost
from ..model.memory import CoreMemory, GMRef, TileRef
from ..model.memory_system import MemorySystem
from ..ops import IMPLS
from ..frontend.program import NOTHING, RtTile

AIC_PIPES = (PipeType.MTE1, PipeType.MTE2, PipeType.MTE3, PipeType.M, PipeType.FIX)
AIV_PIPES = (PipeType.MTE2, PipeType.MTE3, PipeType.V)
_S = PipeType.S
_SYNC_OP = {"set_flag": "set_flag", "wait_flag": "wait_flag", "lock": "get_buf",
            "unlock": "rls_buf", "xset": "set_intra_block", "xwait": "wait_intra_block"}
#: operand types `_defer` passes through unchanged (checked first: most operands are scalars)
_PLAIN = frozenset({int, float, bool, str, type(None), list})
_WRITERS = ("write", "write_linear", "write_window", "atomic_add_window", "fill_logical")


@functools.lru_cache(maxsize=None)
def hw_op(ir_op: str, kind: str) -> str:
    """The hardware instruction family shown on the timeline (TLOAD, TADD, set_flag, ...;
    the scalar unit's own work by its op's name: printf, setval, getval)."""
    if kind == "scalar":
        return ir_op.split(".", 1)[1]
    if kind != "op":
        return _SYNC_OP[kind]
    return "T" + ir_op.split(".", 1)[1].replace("_", "").upper()


class Engine:
    """The shared clock, the event heap and chip-wide resources (HBM)."""

    def __init__(self, soc: Any, log: EventLog | None, functional_only: bool = False,
                 timing_only: bool = False) -> None:
        self.soc = soc
        self.log = log
        self.functional_only = functional_only
        self.timing_only = timing_only  # skip the op library: timing without values
        self.now = 0
        self._heap: list = []
        self._seq = itertools.count()
        self.flows = itertools.count()
        self.queue_depth = soc.pipe_queue_depth  # a full pipe queue stalls the scalar unit
        self.cores: list[Core] = []
        self.instructions = 0
        self.observer: Any = None  # pypto_pro.sanitizer.Sanitizer when sanitizing
        self.pools: Any = None  # `Pools` to take the L2 and HBM arrays from (None: new ones)
        # GM storage (address, bytes) → the pipes running a load whose pending write holds a
        # view of a window of it (`memory.LATE_SNAPSHOT`; `protect_gm` clones those before
        # the storage, or one sharing bytes with it, changes)
        self.gm_views: dict[tuple[int, int], list[Pipe]] = {}

    @functools.cached_property
    def memory(self) -> MemorySystem:
        """The chip's L2 and HBM, shared by all cores; made on the first GM access (a
        functional-only launch never needs its tag arrays), the arrays of the last launch on
        the same SoC when there are `pools`."""
        if self.pools is None:
            return MemorySystem(self.soc)
        return self.pools.memory_system(self.soc)

    def release_memory(self) -> None:
        """The launch is over: hand its memory system to the next launch on this SoC."""
        memory = self.__dict__.pop("memory", None)
        if memory is not None and self.pools is not None:
            self.pools.keep_memory_system(self.soc, memory)

    def protect_gm(self, storage: tuple[int, int]) -> None:
        """GM storage `storage` is about to be written: the loads still holding views of it, or
        of a storage sharing bytes with it, take their snapshots now (they must not see a write
        that landed after they started)."""
        views = self.gm_views
        start, end = storage[0], storage[0] + storage[1]
        for held in [s for s in views if s == storage or (s[0] < end and start < s[0] + s[1])]:
            for pipe in views.pop(held):
                pipe.snapshot()

    def land_in_flight(self) -> None:
        """An op fails: the ops running then land their writes, in the order they would have
        finished (a failed launch leaves the writes of every op that started before the
        failing one and of none after it, on every path: `replay`, `tape`)."""
        finishing = [entry for entry in self._heap
                     if getattr(entry[2], "__func__", None) is Pipe.finish]
        for _, _, finish in sorted(finishing):  # (by time, then by the order they were due)
            land_writes(self, finish.__self__)

    def at(self, t: int, fn: Callable[[], None]) -> None:
        heapq.heappush(self._heap, (t, next(self._seq), fn))

    def run(self) -> None:
        heap, pop = self._heap, heapq.heappop
        while heap:
            t, _, fn = pop(heap)
            if t > self.now:
                self.now = t
            fn()

    def deadlock(self) -> DeadlockError:
        stuck = [s for core in self.cores if not core.done for s in core.stuck_report()]
        lines = "\n".join(f"  {s}" for s in stuck)
        # the span of the first stuck wait (scalar unit, then pipe queue heads), as reported
        waits = [i for c in self.cores if not c.done for i in (
            [c.wait_info[3]] if c.wait_info else []) + [p.queue[0] for p in c.pipes.values()
                                                        if p.queue]]
        span = next((i.span for i in waits if i is not None and i.span), None)
        return DeadlockError(f"the launch can never finish: {len(stuck)} stuck unit(s) at cycle "
                             f"{self.now}\n{lines}", stuck, span=span,
                             hint="every wait needs a matching set (same pipes and id); every "
                                  "mutex lock needs an unlock on the same pipe")


class _WaitSite(NamedTuple):
    """What a scalar-unit wait without an instruction of its own (a barrier, sync_all) reports:
    the op and its source line (stall events, a deadlock's span)."""

    ir_op: str
    span: Span | None


@dataclass
class Block:
    """A block of a launch: its index, and the cores that ran it (with what they printed)."""

    index: int
    cores: list[Any] = field(default_factory=list)


class _MutexReq:
    """A lock's place in its mutex's FIFO (`Core.mutex`). The FIFO holds the requests not yet
    released, in issue order: its head holds the mutex, an unlock pops it."""

    __slots__ = ("pipe",)

    def __init__(self, pipe: PipeType) -> None:
        self.pipe = pipe


class Pipe:
    """One in-order instruction queue of a core."""

    def __init__(self, core: Core, kind: PipeType) -> None:
        self.core, self.kind = core, kind
        self.engine = core.engine
        # bound once: the heap holds one per event (a fresh bound method each time costs)
        self._step, self._finish = self.step, self.finish
        self.queue: deque[Instr] = deque()
        self.busy_until = 0
        self.running = False
        self.blocked: tuple[int, str, str] | None = None  # (since, reason, ids)
        self._scheduled = False
        self.pending_writes: list = []  # the deferred writes of the running instruction
        self.gm_view: tuple[int, int] | None = None  # the GM storage a view in them reads

    @property
    def idle(self) -> bool:
        return not self.running and not self.queue

    def kick(self) -> None:
        """Schedule a step when the head can next start (unless one is scheduled already)."""
        if not self._scheduled and not self.running and self.queue:
            self._scheduled = True
            eng = self.engine
            t = eng.now
            if self.busy_until > t:
                t = self.busy_until
            if self.queue[0].issue_time > t:
                t = self.queue[0].issue_time
            heappush(eng._heap, (t, next(eng._seq), self._step))

    def hold_gm_view(self, storage: tuple[int, int]) -> None:
        """The running instruction's pending writes pass on a view of GM storage `storage`."""
        self.gm_view = storage
        self.engine.gm_views.setdefault(storage, []).append(self)

    def snapshot(self) -> None:
        """Replace the GM views in the pending writes with copies (see `Engine.protect_gm`)."""
        self.pending_writes = [(fn, tuple(a.clone() if isinstance(a, torch.Tensor) else a
                                          for a in args), kwargs)
                               for fn, args, kwargs in self.pending_writes]
        self.gm_view = None

    def step(self) -> None:
        self._scheduled = False
        eng = self.engine
        queue, execute = self.queue, self.core.execute
        while queue and not self.running:
            instr = queue[0]
            now = eng.now
            t, issued = self.busy_until, instr.issue_time
            if t > now or issued > now:  # `kick`, inlined: the head starts later
                if not self._scheduled:  # (a sync run above may have kicked this pipe)
                    self._scheduled = True
                    heappush(eng._heap, (issued if issued > t else t, next(eng._seq),
                                         self._step))
                return
            if not execute(self, instr):
                return  # blocked on a sync condition; re-kicked when it may be satisfied
        if not self.running:
            self.core.poke()

    def finish(self) -> None:
        """The running instruction ends: its writes land."""
        land_writes(self.engine, self)
        self.running = False
        self.core.poke()
        self.step()


class Core:
    """One AIC or AIV instance running one block (its memory belongs to a physical slot)."""

    def __init__(self, engine: Engine, kind: str, memory: CoreMemory, block: int, subblock: int,
                 geometry: dict[str, int], label: str, core_id: int) -> None:
        self.engine, self.kind, self.memory = engine, kind, memory
        memory.track_init = engine.observer is not None  # only the sanitizer reads the mask
        self.block, self.subblock, self.label, self.core_id = block, subblock, label, core_id
        self.uid = core_id  # unique per instance; the launch renumbers it (core_id = physical)
        self.block_idx = geometry["block_idx"]
        self.block_num = geometry["block_num"]
        self.subblock_idx = geometry["subblock_idx"]
        self.subblock_num = geometry["subblock_num"]
        self.pipes = {p: Pipe(self, p) for p in (AIC_PIPES if kind == "AIC" else AIV_PIPES)}
        self.time = 0
        self.spr = 0
        self.vector_mask = ALL_LANES  # the {MASK1, MASK0} SPR (pl.set_vec_mask)
        self.gen = None
        self.waiting: Callable[[], bool] | None = None
        self.wait_info: tuple[int, str, str, Instr | None] | None = None
        self.scalar_done = False
        self.done = False
        self.flags: dict[tuple, int] = {}  # key → flow id of the set (present = flag is 1)
        self.flags_pending: dict[tuple, deque[int]] = {}  # sets whose wait was issued first
        self.last_set_seq: dict[tuple, int | None] = {}  # issue seq of the last set per key
        self.mutex: dict[int, deque[_MutexReq]] = {}
        self.xcount: dict[int, int] = {}
        self.peers: list[Core] = []  # AIC: its two AIVs; AIV: [its AIC]
        self.printed: list[str] = []
        self.unit_flags: dict[int, str] = {}  # L0C address → unit-flag handshake state
        self.on_done: Callable[[Core], None] | None = None
        self.launch: Any = None  # the `Launch` running this core (set by it)
        self._seq = itertools.count()
        self.iterations = 0
        self.max_iterations = 50_000_000

    # ------------------------------------------------------------ the scalar unit
    def start(self, gen, t: int) -> None:
        self.gen, self.time = gen, t
        self.engine.at(t, self.resume)

    def resume(self) -> None:
        eng = self.engine
        while True:
            if self.waiting is not None:
                if not self.waiting():
                    return
                self._end_scalar_wait()
            if self.time < eng.now:
                self.time = eng.now
            try:
                req = next(self.gen)
            except StopIteration:
                self.scalar_done = True
                self._check_done()
                return
            if req[0] == "until":  # ("until", t): catch up with global time
                t = req[1]
                if t > eng.now:
                    self.waiting = lambda t=t: eng.now >= t
                    eng.at(t, self.resume)
                    return
                continue
            # (predicate, reason, ids[, instr]): wait until the predicate holds
            self.waiting = req[0]
            self.wait_info = (self.time, req[1], req[2], req[3] if len(req) > 3 else None)

    def _end_scalar_wait(self) -> None:
        eng = self.engine
        if self.wait_info is not None and eng.now > self.wait_info[0]:
            since, reason, ids, instr = self.wait_info
            if isinstance(instr, _WaitSite):  # (its line is for a deadlock report; the stall
                instr = None                  # row names no op, as the stream engine's)
            self._event(PipeType.S, "stall", f"wait {reason}", instr.ir_op if instr else "",
                        instr.span if instr else None, since, eng.now, 0, 0, ids, reason)
        self.waiting, self.wait_info = None, None

    def poke(self) -> None:
        if self.waiting is not None and self.waiting():
            self.engine.at(self.engine.now, self.resume)
        if self.scalar_done and not self.done:
            self._check_done()

    def count_iteration(self, span: Span) -> None:
        self.iterations += 1
        if self.iterations > self.max_iterations:
            raise SimulationError(f"{self.label}: more than {self.max_iterations} loop "
                                  f"iterations; the kernel does not terminate", span)

    def sync_scalar(self) -> tuple:
        """Let global time catch up with the scalar unit before it touches shared state (what
        the program's `yield from` passes on: a wait, or nothing)."""
        if self.time > self.engine.now:
            return (("until", self.time),)
        return NOTHING

    def barrier(self, pipe_name: str, span: Span):
        pipes = list(self.pipes.values()) if pipe_name == "ALL" else \
            [self.pipes[p] for p in self.pipes if p.value == pipe_name]
        yield from self.sync_scalar()
        if not all(p.idle for p in pipes):
            yield (lambda: all(p.idle for p in pipes), "barrier", f"pipe_barrier({pipe_name})",
                   _WaitSite("system.bar", span))
        if self.engine.observer is not None:
            self.engine.observer.barrier(self, pipes)
        self.time = max(self.time, self.engine.now) + 1

    def sync_all(self, core_type: Any, span: Span, soft: bool = False):
        """A barrier over the launch's cores of `core_type`. HARD is the FFTS signal (released
        the cycle the last core arrives); SOFT is pto-isa's GM protocol: each core writes its
        arrival flag to the GM workspace and polls it, so it leaves one flag write plus one
        polling read (L2 hits) and the scalar access after the last arrival."""
        yield from self.barrier("ALL", span)
        group = self.launch.sync_all_group(self, core_type, span)
        group.arrive(self)
        if self.engine.observer is not None:
            self.engine.observer.sync_all_arrive(self, group, span)
        # the site names the line a deadlock (a core never arriving) is reported at
        yield (lambda: group.released(self), "sync_all", "sync_all",
               _WaitSite("system.sync_all", span))
        if soft:
            soc = self.engine.soc
            self.time = max(self.time, self.engine.now) + 2 * soc.mte_startup["gm_to_ub"] + \
                soc.scalar_access_cycles
        if self.engine.observer is not None:
            self.engine.observer.sync_all_leave(self, group)

    def print(self, text: str) -> None:
        """Device text, exactly as printed (printf adds no newline of its own)."""
        self.printed.append(text)

    def scalar_work(self, ir_op: str, span: Span | None, cycles: int, nbytes: int) -> None:
        """The scalar unit, caught up with global time, spends `cycles` on `ir_op` (a printf,
        a scalar access of memory): a pipe S row from then on, like the pipes' instructions."""
        now = max(self.time, self.engine.now)
        self._event(_S, "instr", hw_op(ir_op, "scalar"), ir_op, span, now, now + cycles, nbytes,
                    0, "", "")
        self.time = now + cycles

    # ------------------------------------------------------------ issue
    def issue(self, instr: Instr):
        """Queue `instr` on its pipe; returns what the program's `yield from` passes on: nothing
        (no generator made per instruction), unless the queue is full or pipe S must wait."""
        if instr.pipe is _S:
            return self._scalar_sync(instr)
        pipe = self.pipes.get(instr.pipe)
        if pipe is None:
            raise SimulationError(f"{self.label} has no {instr.pipe.value} pipe "
                                  f"({instr.ir_op})", instr.span)
        if len(pipe.queue) >= self.engine.queue_depth:
            return self._issue_when_room(pipe, instr)
        self._enqueue(pipe, instr)
        return NOTHING

    def _issue_when_room(self, pipe: Pipe, instr: Instr):
        depth = self.engine.queue_depth
        yield (lambda: len(pipe.queue) < depth, "queue", f"{pipe.kind.value} full", instr)
        self._enqueue(pipe, instr)

    def _enqueue(self, pipe: Pipe, instr: Instr) -> None:
        if instr.kind != "op":  # a sync call site's instruction, shared by its issues
            instr = instr.copy()
        instr.issue_time = self.time
        instr.seq = next(self._seq)
        if self.engine.observer is not None:
            self.engine.observer.issued(self, instr)
        self.time += 1
        if instr.kind == "lock":
            req = _MutexReq(instr.pipe)
            self.mutex.setdefault(instr.key, deque()).append(req)
            instr.req = req
        pipe.queue.append(instr)
        if not pipe._scheduled and not pipe.running:
            pipe.kick()

    def _scalar_sync(self, instr: Instr):
        """Sync instructions on pipe S run in the scalar unit itself."""
        yield from self.sync_scalar()
        key = instr.key
        if instr.kind == "wait_flag":
            if key not in self.flags:
                yield (lambda: key in self.flags, "flag", _flag_ids(key), instr)
            now = max(self.time, self.engine.now)
            flow, role = self._take_flag(key), "wait"
            if self.engine.observer is not None:
                self.engine.observer.sync(self, PipeType.S, instr)
        elif instr.kind == "set_flag":
            now = max(self.time, self.engine.now)
            flow, role = self._set_flag(instr, now), "set"
        elif instr.kind == "scalar":  # key: (cycles, bytes) of its call site
            self.scalar_work(instr.ir_op, instr.span, *instr.key)
            return
        elif instr.kind in ("xset", "xwait", "lock", "unlock"):  # run by the scalar unit
            if instr.kind == "lock":  # (a copy: the call site's instruction is shared)
                instr = instr.copy()
                instr.req = _MutexReq(_S)
                self.mutex.setdefault(key, deque()).append(instr.req)
            blocked = self._sync_blocked(None, instr)
            if blocked is not None:
                yield (lambda: self._sync_blocked(None, instr) is None, blocked[0], blocked[1],
                       instr)
            now = max(self.time, self.engine.now)
            self._complete_sync(None, instr, now)
            self.time = now + 1
            return
        else:
            raise SimulationError(f"{instr.ir_op} on pipe S is not supported", instr.span)
        self._event(PipeType.S, "sync", hw_op(instr.ir_op, instr.kind), instr.ir_op,
                    instr.span, now, now + 1, 0, 0, _flag_ids(key), "", flow, role)
        self.time = now + 1

    # ------------------------------------------------------------ executing pipe heads
    def execute(self, pipe: Pipe, instr: Instr) -> bool:
        """Run the head of `pipe` at engine.now; False when it is blocked."""
        eng = self.engine
        now = eng.now
        kind = instr.kind
        if kind == "op":
            self._run_op(pipe, instr, now)
            return True
        if kind == "unlock":  # never blocked: the most frequent sync, without the dispatch
            pipe.queue.popleft()
            if eng.observer is not None:
                eng.observer.sync(self, pipe.kind, instr)
            self._unlock(pipe.kind, instr)
            self._event(pipe.kind, "sync", "rls_buf", instr.ir_op, instr.span, now, now + 1, 0,
                        0, str(instr.key), "")
            pipe.busy_until = now + 1
            return True
        blocked = self._sync_blocked(pipe, instr)
        if blocked is not None:
            if pipe.blocked is None:
                pipe.blocked = (now, *blocked)
            return False
        if pipe.blocked is not None:
            since, reason, ids = pipe.blocked
            self._event(pipe.kind, "stall", f"wait {reason}", instr.ir_op, instr.span, since,
                        now, 0, 0, ids, reason)
            pipe.blocked = None
        pipe.queue.popleft()
        self._complete_sync(pipe, instr, now)
        pipe.busy_until = now + 1
        return True

    def _run_op(self, pipe: Pipe, instr: Instr, now: int) -> None:
        eng = self.engine
        pipe.queue.popleft()
        cost = op_cost(instr.ir_op, instr.args, instr.kwargs, eng.soc)
        writes: list = []
        obs, skip = eng.observer, False
        if not eng.timing_only:
            try:
                skip, view = start_op(instr, self.label, writes, obs, self, pipe)
            except SimulationError:
                eng.land_in_flight()
                raise
            if view is not None:
                pipe.hold_gm_view(view)
        if obs is not None and not skip:
            skip = not obs.op(self, pipe, instr, writes)
        if skip:  # the sanitizer reported a memory fault: the instruction does nothing
            writes.clear()
            cost = cost._replace(gm=None)
        end = now + max(1, cost.cycles)
        reason = ""
        if cost.gm is not None and not eng.functional_only:
            try:  # (a GM window past its tensor: its lines, like its deferred write, fail)
                gm_end = eng.memory.access(now, cost.gm, end)
            except (IndexError, ValueError) as err:
                eng.land_in_flight()
                raise SimulationError(f"{instr.ir_op} on {self.label}: {err}", instr.span) \
                    from err
            if gm_end > end:
                end, reason = gm_end, "hbm"
        eng.instructions += 1
        pipe.running = True
        pipe.busy_until = end
        pipe.pending_writes = writes
        self._event(pipe.kind, "instr", hw_op(instr.ir_op, "op"), instr.ir_op, instr.span, now,
                    end, cost.bytes, cost.flops, "", reason)
        heappush(eng._heap, (end, next(eng._seq), pipe._finish))

    def _sync_blocked(self, pipe: Pipe | None, instr: Instr) -> tuple[str, str] | None:
        """(reason, ids) when the sync instruction at the head of `pipe` (None: issued by the
        scalar unit) cannot run yet."""
        kind, key = instr.kind, instr.key
        if kind == "wait_flag":
            return None if key in self.flags else ("flag", _flag_ids(key))
        if kind == "lock":
            q = self.mutex[key]
            if not q or q[0] is instr.req:  # (empty: an unlock before it popped it)
                return None
            same = " (held by this same pipe: a double lock hangs the hardware)" \
                if q[0].pipe is (_S if pipe is None else pipe.kind) else \
                f" (held by pipe {q[0].pipe.value})"
            return "mutex", f"mutex {key}{same}"
        if kind == "xwait":
            slots = self.launch.xwait_slots(self, key, instr.span)
            if all(core.xcount.get(s, 0) > 0 for core, s in slots):
                return None
            return "cross_core", \
                f"xcore {key[1]} ({key[0].name if hasattr(key[0], 'name') else key[0]})"
        return None

    def _complete_sync(self, pipe: Pipe | None, instr: Instr, now: int) -> None:
        """Run sync `instr` at `now` on `pipe` (None: the scalar unit, pipe S)."""
        kind, key = instr.kind, instr.key
        pipe_kind = _S if pipe is None else pipe.kind
        flow, role = -1, ""
        if self.engine.observer is not None:
            self.engine.observer.sync(self, pipe_kind, instr)
        if kind == "set_flag":
            flow, role = self._set_flag(instr, now), "set"
        elif kind == "wait_flag":
            flow, role = self._take_flag(key), "wait"
        elif kind == "unlock":
            self._unlock(pipe_kind, instr)
        elif kind == "xset":
            for core, slot in self.launch.xset_slots(self, key, instr.span):
                core.xcount[slot] = core.xcount.get(slot, 0) + 1
                core.kick_blocked()
        elif kind == "xwait":
            for core, slot in self.launch.xwait_slots(self, key, instr.span):
                core.xcount[slot] -= 1
        ids = _flag_ids(key) if kind in ("set_flag", "wait_flag") else str(key)
        self._event(pipe_kind, "sync", hw_op(instr.ir_op, kind), instr.ir_op, instr.span, now,
                    now + 1, 0, 0, ids, "", flow, role)

    def _set_flag(self, instr: Instr, now: int) -> int:
        key = instr.key
        if self.engine.observer is not None:
            self.engine.observer.flag_set(self, instr)
        flow = next(self.engine.flows)
        if key in self.flags:
            # Decided by program order, not by which of two same-cycle events ran first: a
            # second set is an error unless its wait was issued between the two sets (the
            # wait then takes the first set and this one stays pending for the next wait).
            if not self._wait_issued_since(key, instr):
                raise SimulationError(f"{self.label}: set_flag {_flag_ids(key)} set twice "
                                      f"before its wait_flag (the flag is one bit)", instr.span,
                                      hint="each sync_src needs its sync_dst before the next "
                                           "set")
            self.flags_pending.setdefault(key, deque()).append(flow)
        else:
            self.flags[key] = flow
        self.last_set_seq[key] = instr.seq if instr.pipe is not PipeType.S else None
        self.kick_blocked()
        return flow

    def _wait_issued_since(self, key: tuple, instr: Instr) -> bool:
        """A wait_flag of `key`, issued after the previous set of `key` and before `instr`,
        is still queued on its pipe."""
        dst = self.pipes.get(key[1])
        if dst is None:  # the scalar unit waits in program order: nothing can be queued
            return False
        after = self.last_set_seq.get(key)
        before = instr.seq if instr.pipe is not PipeType.S else float("inf")
        return any(q.kind == "wait_flag" and q.key == key and (after is None or q.seq > after)
                   and q.seq < before for q in dst.queue)

    def _take_flag(self, key: tuple) -> int:
        """A wait consumes the flag (the next pending set, if any, sets it again)."""
        flow = self.flags.pop(key)
        pending = self.flags_pending.get(key)
        if pending:
            self.flags[key] = pending.popleft()
        return flow

    def _unlock(self, pipe: PipeType, instr: Instr) -> None:
        q = self.mutex.get(instr.key)
        if not q or q[0].pipe is not pipe:  # the head of the FIFO holds the mutex
            if self.engine.observer is not None:
                return  # the sanitizer reported MUTEX_UNLOCK_BEFORE_LOCK; ignore the unlock
            raise SimulationError(f"{self.label}: mutex {instr.key} unlocked on pipe "
                                  f"{pipe.value} without a matching lock", instr.span)
        q.popleft()
        self.kick_blocked()

    def kick_blocked(self) -> None:
        for p in self.pipes.values():
            if p.queue and not p.running and not p._scheduled:
                p.kick()
        self.poke()

    # ------------------------------------------------------------ operands
    def operand(self, value: Any, span: Span, pair: bool = False, mode: Any = None) -> Any:
        if isinstance(value, RtTile):
            return self.launch.tile_ref(self, value, span, pair, mode)
        return value

    def ssbuf(self) -> bytearray:
        """The SSBUF of this core's block."""
        return self.launch.ssbuf(self.block)

    def resolve_scalar_target(self, value: Any, span: Span) -> Any:
        if isinstance(value, RtTile):
            return self.launch.tile_ref(self, value, span, False, None)
        if isinstance(value, GMRef):
            return value
        raise SimulationError("scalar access needs a tile or a GM tensor", span)

    # ------------------------------------------------------------ completion and reports
    def _check_done(self) -> None:
        if self.done or not self.scalar_done:
            return
        for p in self.pipes.values():  # `Pipe.idle`, inlined: once the scalar unit is done,
            if p.running or p.queue:  # this runs after every pipe event
                return
        self.done = True
        self.end_time = max([self.engine.now, self.time] +
                            [p.busy_until for p in self.pipes.values()])
        if self.on_done is not None:
            self.on_done(self)

    def dispose(self) -> None:
        """The launch is over: drop the links that make cycles through this core (its pipes'
        back-references, peers, the launch's callback, the program and its waits), so the
        launch's object graph dies by refcount instead of waiting for a GC pass."""
        for p in self.pipes.values():  # each bound method refers back to its pipe
            p._step = p._finish = p.core = None
        self.pipes = {}
        self.peers = []
        self.gen = self.waiting = self.wait_info = self.on_done = self.launch = None

    def stuck_report(self) -> list[str]:
        out = []
        if not self.scalar_done and self.wait_info is not None:
            since, reason, ids, instr = self.wait_info
            where = f" (line {instr.span.line})" if instr and instr.span else ""
            out.append(f"{self.label} scalar unit: waiting on {ids or reason}{where} since "
                       f"cycle {since}")
        for p in self.pipes.values():
            if p.queue:
                head = p.queue[0]
                where = f" (line {head.span.line})" if head.span and head.span.line else ""
                what = p.blocked[2] if p.blocked else head.ir_op
                out.append(f"{self.label} pipe {p.kind.value}: {_SYNC_OP.get(head.kind, 'op')} "
                           f"blocked on {what}{where}")
        return out or [f"{self.label}: not finished"]

    def _event(self, pipe: PipeType, kind: str, op: str, ir_op: str, span: Span | None,
               start: int, end: int, nbytes: int, flops: int, ids: str, reason: str,
               flow: int = -1, role: str = "") -> None:
        log = self.engine.log
        if log is None:
            return
        # one tuple in schema.COLUMNS order (launch, core, ..., flow_role): the per-instruction
        # cost of recording; `_value_` is the enum's value without the `.value` property call
        log.rows.append((0, self.core_id, self.kind, self.block, self.subblock, pipe._value_, kind,
                         op, ir_op, span.file if span else "", span.line if span else 0, start,
                         end, nbytes, flops, ids, reason, flow, role))


def start_op(instr: Instr, label: str, writes: list, obs: Any = None, core: Any = None,
             pipe: Any = None) -> tuple[bool, tuple[int, int] | None]:
    """Run op `instr` on deferred copies of its operands (its writes queue on `writes`, to land
    at its end): (skip: the sanitizer `obs` reported the failure, the GM storage a late load's
    pending writes hold a view of, else None). Shared by `Core._run_op` and `replay`."""
    late = obs is None  # (the sanitizer records the GM reads a snapshot makes)
    deferred = [a if type(a) in _PLAIN else _defer(a, writes, late) for a in instr.args]
    if obs is not None:
        obs.watch(deferred)
    try:
        IMPLS[instr.ir_op](deferred, instr.kwargs)
        if late and instr.ir_op == "block.load" and isinstance(deferred[1], GMRef):
            return False, deferred[1].storage
    except SimulationError:
        raise
    except (IndexError, ValueError, TypeError, RuntimeError) as err:
        if obs is None or not obs.op_failed(core, pipe, instr, err):
            raise SimulationError(f"{instr.ir_op} on {label}: {err}", instr.span) from err
        return True, None
    return False, None


def land_writes(eng: Any, holder: Any) -> None:
    """The running instruction of `holder` (a `Pipe`, or a replayed op) ends: its pending
    writes land; `eng` holds the GM views (`Engine.gm_views`, `protect_gm`)."""
    if holder.gm_view is not None:
        eng.gm_views[holder.gm_view].remove(holder)
        if not eng.gm_views[holder.gm_view]:
            del eng.gm_views[holder.gm_view]
        holder.gm_view = None
    for fn, args, kwargs in holder.pending_writes:
        if eng.gm_views and isinstance(fn.__self__, GMRef):
            eng.protect_gm(fn.__self__.storage)
        fn(*args, **kwargs)


@functools.lru_cache(maxsize=None)
def _flag_ids(key: tuple) -> str:
    src, dst, i = key
    return f"flag {src.value}->{dst.value} #{i}"


def _defer(arg: Any, writes: list, late: bool = False) -> Any:
    """A copy of a memory operand whose writes are queued (they land at the instruction's end);
    `late`: a tile that may be passed GM views (`memory.LATE_SNAPSHOT`)."""
    if isinstance(arg, tuple) and arg and isinstance(arg[0], TileRef):
        return tuple(_defer(a, writes, late) for a in arg)
    if not isinstance(arg, (TileRef, GMRef)):
        return arg
    proxy = object.__new__(_deferring(type(arg), late))  # a shallow copy, without copy's dispatch
    proxy.__dict__.update(arg.__dict__)
    proxy._deferred_target, proxy._deferred_writes = arg, writes
    return proxy


@functools.lru_cache(maxsize=None)
def _deferring(cls: type, late: bool) -> type:
    """A subclass of memory operand class `cls` whose writing methods queue (the original's
    bound method, args, kwargs) on the proxy's `_deferred_writes` instead of writing; `late`
    sets `late_snapshot` on a tile class."""
    def queue(name: str) -> Callable:
        def deferred(self: Any, *args: Any, **kwargs: Any) -> None:
            self._deferred_writes.append((getattr(self._deferred_target, name), args, kwargs))
        return deferred

    writers = [name for name in _WRITERS if callable(getattr(cls, name, None))]
    late_attrs = {"late_snapshot": True} if late and cls is TileRef else {}
    return type(cls.__name__, (cls,), {"writes_now": False, **late_attrs,
                                       **{name: queue(name) for name in writers}})

