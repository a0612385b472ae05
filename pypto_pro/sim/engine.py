"""The event-driven engine (DESIGN §5 "Execution model"; ascend_950_model.md §2, §3.5).

Per core, a scalar unit (the compiled program's generator) issues instructions into in-order
pipe queues; pipes run concurrently. An instruction reads its operands when it starts and its
writes land when it ends, so a kernel with a missing sync can compute the wrong answer, as on
hardware. Flags are 1-bit (a second set before the wait is an error), mutexes are granted in
issue order per id, cross-core ids are counters, and all cores share one clock and the chip's
HBM bandwidth. When nothing can move and some core is unfinished, the launch ends with a
`DeadlockError` naming every stuck core, pipe and id.
"""
from __future__ import annotations

import copy
import heapq
import itertools
from collections import deque
from typing import Any, Callable

from ..errors import DeadlockError, SimulationError
from ..ir.span import Span
from ..ir.types import PipeType
from ..trace.schema import EventLog
from .calls_issue import Instr
from .cost_model import op_cost
from .memory import CoreMemory, GMRef, TileRef
from .ops import IMPLS
from .program import RtTile

QUEUE_DEPTH = 32  # instructions a pipe queue holds before the scalar unit stalls on issue
AIC_PIPES = (PipeType.MTE1, PipeType.MTE2, PipeType.MTE3, PipeType.M, PipeType.FIX)
AIV_PIPES = (PipeType.MTE2, PipeType.MTE3, PipeType.V)
_SYNC_OP = {"set_flag": "set_flag", "wait_flag": "wait_flag", "lock": "get_buf",
            "unlock": "rls_buf", "xset": "set_intra_block", "xwait": "wait_intra_block"}
_WRITERS = ("write", "write_linear", "write_window", "atomic_add_window", "fill_logical")


def hw_op(ir_op: str, kind: str) -> str:
    """The hardware instruction family shown on the timeline (TLOAD, TADD, set_flag, ...)."""
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
        self.hbm_free = 0.0
        self.hbm_rate = soc.hbm_bytes_per_s / soc.clock_hz  # bytes per core cycle
        self.cores: list[Core] = []
        self.instructions = 0

    def at(self, t: int, fn: Callable[[], None]) -> None:
        heapq.heappush(self._heap, (t, next(self._seq), fn))

    def run(self) -> None:
        heap = self._heap
        while heap:
            t, _, fn = heapq.heappop(heap)
            if t > self.now:
                self.now = t
            fn()

    def reserve_hbm(self, start: int, nbytes: int) -> int:
        """FIFO share of the chip's HBM: the cycle this transfer's bytes are through."""
        if nbytes <= 0 or self.hbm_rate <= 0:
            return start
        begin = max(float(start), self.hbm_free)
        self.hbm_free = begin + nbytes / self.hbm_rate
        return int(self.hbm_free + 0.999)

    def deadlock(self) -> DeadlockError:
        stuck = [s for core in self.cores if not core.done for s in core.stuck_report()]
        lines = "\n".join(f"  {s}" for s in stuck)
        return DeadlockError(f"the launch can never finish: {len(stuck)} stuck unit(s) at cycle "
                             f"{self.now}\n{lines}", stuck,
                             hint="every wait needs a matching set (same pipes and id); every "
                                  "mutex lock needs an unlock on the same pipe")


class _MutexReq:
    __slots__ = ("pipe", "released")

    def __init__(self, pipe: PipeType) -> None:
        self.pipe = pipe
        self.released = False


class Pipe:
    """One in-order instruction queue of a core."""

    def __init__(self, core: Core, kind: PipeType) -> None:
        self.core, self.kind = core, kind
        self.queue: deque[Instr] = deque()
        self.busy_until = 0
        self.running = False
        self.blocked: tuple[int, str, str] | None = None  # (since, reason, ids)
        self._scheduled = False

    @property
    def idle(self) -> bool:
        return not self.running and not self.queue

    def kick(self) -> None:
        if not self._scheduled and not self.running and self.queue:
            self._scheduled = True
            eng = self.core.engine
            eng.at(max(eng.now, self.busy_until, self.queue[0].issue_time), self.step)

    def step(self) -> None:
        self._scheduled = False
        eng = self.core.engine
        while self.queue and not self.running:
            instr = self.queue[0]
            start = max(eng.now, self.busy_until, instr.issue_time)
            if start > eng.now:
                self.kick()
                return
            if not self.core.execute(self, instr):
                return  # blocked on a sync condition; re-kicked when it may be satisfied
        if not self.running:
            self.core.poke()

    def finish(self, instr: Instr, start: int, writes: list) -> None:
        for fn, args, kwargs in writes:
            fn(*args, **kwargs)
        self.running = False
        self.core.poke()
        self.step()


class Core:
    """One AIC or AIV instance running one block (its memory belongs to a physical slot)."""

    def __init__(self, engine: Engine, kind: str, memory: CoreMemory, block: int, subblock: int,
                 geometry: dict[str, int], label: str, core_id: int) -> None:
        self.engine, self.kind, self.memory = engine, kind, memory
        self.block, self.subblock, self.label, self.core_id = block, subblock, label, core_id
        self.uid = core_id  # unique per instance; the launch renumbers it (core_id = physical)
        self.block_idx = geometry["block_idx"]
        self.block_num = geometry["block_num"]
        self.subblock_idx = geometry["subblock_idx"]
        self.subblock_num = geometry["subblock_num"]
        self.pipes = {p: Pipe(self, p) for p in (AIC_PIPES if kind == "AIC" else AIV_PIPES)}
        self.time = 0
        self.spr = 0
        self.gen = None
        self.waiting: Callable[[], bool] | None = None
        self.wait_info: tuple[int, str, str, Instr | None] | None = None
        self.scalar_done = False
        self.done = False
        self.flags: dict[tuple, int] = {}  # key → flow id of the set (present = flag is 1)
        self.mutex: dict[int, deque[_MutexReq]] = {}
        self.xcount: dict[int, int] = {}
        self.peers: list[Core] = []  # AIC: its two AIVs; AIV: [its AIC]
        self.printed: list[str] = []
        self.on_done: Callable[[Core], None] | None = None
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
            self._event(PipeType.S, "stall", f"wait {reason}", instr.ir_op if instr else "",
                        instr.span if instr else None, since, eng.now, 0, 0, ids, reason)
        self.waiting, self.wait_info = None, None

    def poke(self) -> None:
        if self.waiting is not None and self.waiting():
            self.engine.at(self.engine.now, self.resume)
        self._check_done()

    def count_iteration(self, span: Span) -> None:
        self.iterations += 1
        if self.iterations > self.max_iterations:
            raise SimulationError(f"{self.label}: more than {self.max_iterations} loop "
                                  f"iterations; the kernel does not terminate", span)

    def sync_scalar(self):
        """Let global time catch up with the scalar unit before it touches shared state."""
        if self.time > self.engine.now:
            yield ("until", self.time)

    def barrier(self, pipe_name: str, span: Span):
        pipes = list(self.pipes.values()) if pipe_name == "ALL" else \
            [self.pipes[p] for p in self.pipes if p.value == pipe_name]
        yield from self.sync_scalar()
        if not all(p.idle for p in pipes):
            yield (lambda: all(p.idle for p in pipes), "barrier", f"pipe_barrier({pipe_name})")
        self.time = max(self.time, self.engine.now) + 1

    def sync_all(self, core_type: Any, span: Span):
        yield from self.barrier("ALL", span)
        group = self.launch.sync_all_group(self, core_type, span)
        group.arrive(self)
        yield (lambda: group.released(self), "sync_all", "sync_all")

    def print(self, text: str) -> None:
        """Device text, exactly as printed (printf adds no newline of its own)."""
        self.printed.append(text)

    # ------------------------------------------------------------ issue
    def issue(self, instr: Instr):
        if instr.pipe is PipeType.S:
            yield from self._scalar_sync(instr)
            return
        pipe = self.pipes.get(instr.pipe)
        if pipe is None:
            raise SimulationError(f"{self.label} has no {instr.pipe.value} pipe "
                                  f"({instr.ir_op})", instr.span)
        if len(pipe.queue) >= QUEUE_DEPTH:
            yield (lambda: len(pipe.queue) < QUEUE_DEPTH, "queue", f"{pipe.kind.value} full",
                   instr)
        instr.issue_time = self.time
        instr.seq = next(self._seq)
        self.time += 1
        if instr.kind == "lock":
            req = _MutexReq(instr.pipe)
            self.mutex.setdefault(instr.key, deque()).append(req)
            instr.kwargs["req"] = req
        pipe.queue.append(instr)
        pipe.kick()

    def _scalar_sync(self, instr: Instr):
        """Sync instructions on pipe S run in the scalar unit itself."""
        yield from self.sync_scalar()
        key = instr.key
        if instr.kind == "wait_flag":
            if key not in self.flags:
                yield (lambda: key in self.flags, "flag", _flag_ids(key), instr)
            now = max(self.time, self.engine.now)
            flow, role = self.flags.pop(key), "wait"
        elif instr.kind == "set_flag":
            now = max(self.time, self.engine.now)
            flow, role = self._set_flag(instr, now), "set"
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
        ready, reason, ids = self._sync_ready(pipe, instr)
        if not ready:
            if pipe.blocked is None:
                pipe.blocked = (now, reason, ids)
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
        if not eng.timing_only:
            deferred = [_defer(a, writes) for a in instr.args]
            try:
                IMPLS[instr.ir_op](deferred, instr.kwargs)
            except SimulationError:
                raise
            except (IndexError, ValueError, TypeError, RuntimeError) as err:
                raise SimulationError(f"{instr.ir_op} on {self.label}: {err}",
                                      instr.span) from err
        end = now + max(1, cost.cycles)
        reason = ""
        if cost.gm_bytes and not eng.functional_only:
            hbm_end = eng.reserve_hbm(now, cost.gm_bytes)
            if hbm_end > end:
                end, reason = hbm_end, "hbm"
        eng.instructions += 1
        pipe.running = True
        pipe.busy_until = end
        self._event(pipe.kind, "instr", hw_op(instr.ir_op, "op"), instr.ir_op, instr.span, now,
                    end, cost.bytes, cost.flops, "", reason)
        eng.at(end, lambda: pipe.finish(instr, now, writes))

    def _sync_ready(self, pipe: Pipe, instr: Instr) -> tuple[bool, str, str]:
        kind, key = instr.kind, instr.key
        if kind == "wait_flag":
            return key in self.flags, "flag", _flag_ids(key)
        if kind == "lock":
            q = self.mutex[key]
            req = instr.kwargs["req"]
            for r in q:
                if r is req:
                    return True, "", ""
                if not r.released:
                    same = " (held by this same pipe: a double lock hangs the hardware)" \
                        if r.pipe is pipe.kind else f" (held by pipe {r.pipe.value})"
                    return False, "mutex", f"mutex {key}{same}"
            return True, "", ""
        if kind == "xwait":
            slots = self.launch.xwait_slots(self, key, instr.span)
            return all(core.xcount.get(s, 0) > 0 for core, s in slots), "cross_core", \
                f"xcore {key[1]} ({key[0].name if hasattr(key[0], 'name') else key[0]})"
        return True, "", ""

    def _complete_sync(self, pipe: Pipe, instr: Instr, now: int) -> None:
        kind, key = instr.kind, instr.key
        flow, role = -1, ""
        if kind == "set_flag":
            flow, role = self._set_flag(instr, now), "set"
        elif kind == "wait_flag":
            flow, role = self.flags.pop(key), "wait"
        elif kind == "unlock":
            self._unlock(pipe, instr)
        elif kind == "xset":
            for core, slot in self.launch.xset_slots(self, key, instr.span):
                core.xcount[slot] = core.xcount.get(slot, 0) + 1
                core.kick_blocked()
        elif kind == "xwait":
            for core, slot in self.launch.xwait_slots(self, key, instr.span):
                core.xcount[slot] -= 1
        ids = _flag_ids(key) if kind in ("set_flag", "wait_flag") else str(key)
        self._event(pipe.kind, "sync", hw_op(instr.ir_op, kind), instr.ir_op, instr.span, now,
                    now + 1, 0, 0, ids, "", flow, role)

    def _set_flag(self, instr: Instr, now: int) -> int:
        key = instr.key
        if key in self.flags:
            raise SimulationError(f"{self.label}: set_flag {_flag_ids(key)} set twice before "
                                  f"its wait_flag (the flag is one bit)", instr.span,
                                  hint="each sync_src needs its sync_dst before the next set")
        flow = next(self.engine.flows)
        self.flags[key] = flow
        self.kick_blocked()
        return flow

    def _unlock(self, pipe: Pipe, instr: Instr) -> None:
        q = self.mutex.get(instr.key)
        held = next((r for r in q or () if not r.released), None) if q else None
        if held is None or held.pipe is not pipe.kind:
            raise SimulationError(f"{self.label}: mutex {instr.key} unlocked on pipe "
                                  f"{pipe.kind.value} without a matching lock", instr.span)
        held.released = True
        while q and q[0].released:
            q.popleft()
        self.kick_blocked()

    def kick_blocked(self) -> None:
        for p in self.pipes.values():
            if p.queue and not p.running:
                p.kick()
        self.poke()

    # ------------------------------------------------------------ operands
    def operand(self, value: Any, span: Span, pair: bool = False, mode: Any = None) -> Any:
        if isinstance(value, RtTile):
            return self.launch.tile_ref(self, value, span, pair, mode)
        return value

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
        if all(p.idle for p in self.pipes.values()):
            self.done = True
            self.end_time = max([self.engine.now, self.time] +
                                [p.busy_until for p in self.pipes.values()])
            if self.on_done is not None:
                self.on_done(self)

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
        log.add(launch=0, core=self.core_id, core_kind=self.kind, block=self.block,
                subblock=self.subblock, pipe=pipe.value, kind=kind, op=op, ir_op=ir_op,
                file=span.file if span else "", line=span.line if span else 0, start=start,
                end=end, bytes=nbytes, flops=flops, sync_ids=ids, stall_reason=reason,
                flow_id=flow, flow_role=role)


def _flag_ids(key: tuple) -> str:
    src, dst, i = key
    return f"flag {src.value}->{dst.value} #{i}"


def _defer(arg: Any, writes: list) -> Any:
    """A copy of a memory operand whose writes are queued (they land at the instruction's end)."""
    if isinstance(arg, tuple) and arg and isinstance(arg[0], TileRef):
        return tuple(_defer(a, writes) for a in arg)
    if not isinstance(arg, (TileRef, GMRef)):
        return arg
    proxy = copy.copy(arg)
    for name in _WRITERS:
        method = getattr(arg, name, None)
        if method is not None:
            setattr(proxy, name, lambda *a, _m=method, **k: writes.append((_m, a, k)))
    return proxy

