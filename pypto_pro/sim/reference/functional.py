"""The functional-only executor: the kernel's values without a clock (`SimBackend(
functional_only=True)` when no sanitizer observes the launch).

Each core runs the same compiled program (`program.py`) and the same op library (`ops.IMPLS`)
on the same memories as the event-driven engine (`engine.py`), but with no event heap, no cost
model and no time: the scalar unit issues in program order and every instruction runs before
the core issues the next one, its writes landing at once. A pipe keeps a queue only while its
head is a sync instruction that cannot run yet (a wait_flag whose set sits behind another
stalled pipe, a mutex held by another pipe, a cross-core wait); later instructions of that pipe
queue behind it in order, and the scalar unit stops only when such a queue is full, on a wait of
pipe S, a barrier over a stalled pipe, or `sync_all`. A set by one core (cross-core counters,
`sync_all` arrivals) drains the other core's stalled pipes and wakes its scalar unit. Blocks
beyond the physical cores run in waves, as in the engine.

The cores of a wave run in lockstep where it pays (DESIGN §5 "Speed of the simulator": SPMD
blocks issue the same instruction stream on different data). A core whose tile op is worth a
batch (it has one in `ops.BATCH_IMPLS` and is not memory-bound work its batch would run core by
core anyway: `BatchedOp.at_issue`, e.g. loads, stores and element-wise ops on large tiles, which
run at issue while their core's data is still in cache) parks it and yields; once every
runnable core has parked, blocked or finished, the parked ops run grouped by `ops.batch_key`, a
group of several through its batch impl (one torch computation for all its cores), the rest one
by one, and the parked cores resume in the order they parked. Nothing of a core runs while its
op is parked, and a drain of its stalled pipes (a set from another core) first runs the parked
op, so each core sees exactly the order of one-core-at-a-time execution; only the interleaving
between cores differs, which only a kernel racing across cores without cross-core sync can
observe. An op error names the core that raised it (in a batch, the first failing core in core
order, after the cores before it ran the op).

Sync rules are the engine's own code (`Core._sync_blocked`, `_complete_sync`, `_set_flag`,
`_unlock`, `barrier`, `sync_all`): a second set_flag before its wait, an unlock without a lock
and misused cross-core modes raise the same `SimulationError`s, and a launch where every
unfinished core is stuck raises the same `DeadlockError` naming every stuck core, pipe and id
(with the span of the first stuck wait). One difference: a second set_flag issued before its
wait always fails here, while the engine fails only if the wait has not consumed the first set
by the time the second one runs (a race the timing can hide).

Not detected here: a missing intra-core sync. Instructions execute in program order, so a kernel
that forgot a set_flag / wait_flag pair between two pipes still computes the right answer in this
mode; the timing mode (reads at an instruction's start, writes at its end, pipes overlapping)
and the sanitizer (`pypto_pro.sanitizer`) find those races.
"""
from __future__ import annotations

from collections import deque
from typing import Any, Callable

from ...errors import SimulationError
from ...ir.types import PipeType
from ..frontend.calls_issue import Instr
from .engine import Core, Engine, Pipe, _MutexReq
from ..ops import BATCH_IMPLS, IMPLS, batch_key, error_index, run_grouped
from ..frontend.program import NOTHING

_S = PipeType.S
#: what a parking core's generator yields (`issue` returns it for the program's `yield from`)
_PARK = ("park",)
_PARK_STEP = (_PARK,)
#: pipe name → the FIFO entry of a lock granted at issue: such a lock never queues, so only
#: its pipe is ever read (by its unlock, and by later locks stalling behind it), never its
#: identity, which tells a queued lock's own request (`Instr.req`) from the others
_GRANTED = {p._value_: _MutexReq(p) for p in PipeType}
#: what an op may raise for bad operands; reported as a SimulationError at the op's span
_OP_ERRORS = (IndexError, ValueError, TypeError, RuntimeError)
#: ops that run a compiled body of their own (its control flow may read memory)
_BODIES = frozenset({"vf.vec_scope", "simt.launch"})


class Ran:
    """The ops of a functional launch in the order they ran, with the label of the core that
    issued each (an op error names it). `instrs` and `tape` as a stream recording has them, so
    the memo rebinds both kinds alike."""

    __slots__ = ("instrs", "labels", "blocks", "instructions", "tape")

    def __init__(self) -> None:
        self.instrs: list[Any] = []
        self.labels: list[str] = []
        self.blocks: list[int] = []  # block indices in start order
        self.instructions = 0  # everything issued (syncs too), as the executor counts it
        self.tape = None

    def ran(self, instr: Any, label: str) -> bool:
        """Note an op that ran; False when it makes the launch one a relaunch cannot replay."""
        if instr.ir_op in _BODIES:
            return False
        self.instrs.append(instr)
        self.labels.append(label)
        return True


class FunctionalEngine(Engine):
    """No clock and no heap: a queue of cores ready to run (`at` ignores the time), and the
    cores whose op is parked until the round's batches run."""

    def __init__(self, soc: Any) -> None:
        super().__init__(soc, None, functional_only=True)
        self._ready: deque[Callable[[], None]] = deque()
        self.parked: list[FunctionalCore] = []
        #: the ops run so far, for a relaunch to replay (`fast.memo`); None when this
        #: launch cannot be replayed (or nobody asked)
        self.ran: Ran | None = None

    def at(self, t: int, fn: Callable[[], None]) -> None:
        self._ready.append(fn)

    def run(self) -> None:
        ready = self._ready
        while True:
            while ready:
                ready.popleft()()
            if not self.parked:
                return
            cores, self.parked = self.parked, []
            self._run_parked(cores)
            for core in cores:
                ready.append(core.resume)

    def _run_parked(self, cores: list[FunctionalCore]) -> None:
        """Run the parked ops of `cores`: groups by `batch_key`, in order of their first core."""
        groups: dict[Any, list[FunctionalCore]] = {}
        for core in cores:
            instr = core.parked
            if instr is None:  # ran early (`FunctionalCore.run_parked`)
                continue
            key = batch_key(instr.ir_op, instr.args, instr.kwargs) \
                if instr.ir_op in BATCH_IMPLS else None
            group = groups.get(key) if key is not None else None
            if group is None:
                groups[key if key is not None else id(core)] = [core]
            else:
                group.append(core)
        for group in groups.values():
            if len(group) == 1:
                group[0].run_parked()
            else:
                self._run_batch(group)

    def _run_batch(self, group: list[FunctionalCore]) -> None:
        instrs = [core.parked for core in group]
        for core in group:
            core.parked = None
        ran = self.ran
        if ran is not None and not all([ran.ran(i, c.label) for i, c in zip(instrs, group)]):
            self.ran = None
        first = instrs[0]
        try:
            run_grouped(BATCH_IMPLS[first.ir_op], [i.args for i in instrs], first.kwargs)
        except SimulationError:
            raise
        except _OP_ERRORS as err:
            k = error_index(err)
            raise _op_error(group[k], instrs[k], err) from err
        self.instructions += len(group)


class FunctionalCore(Core):
    """A core whose instructions run in program order, each before the next one issues (its
    tile ops parked for the round's batches; module docstring)."""

    engine: FunctionalEngine

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._pipe_list = list(self.pipes.values())
        # keyed by the enum's value: a str hash is C code, an Enum's __hash__ is Python
        self._pipe_by_name = {p._value_: pipe for p, pipe in self.pipes.items()}
        self._stalled = False  # some pipe may hold a queue (cleared when a drain empties all)
        self._draining = False
        self._issued = 0
        self.parked: Instr | None = None  # the op to run before this core goes on (lockstep)

    # ------------------------------------------------------------ the scalar unit
    def resume(self) -> None:
        """Run the program until it must wait on something not yet there, or ends."""
        if self.scalar_done:
            return
        if self.waiting is not None:
            if not self.waiting():
                return
            self.waiting = self.wait_info = None
        for req in self.gen:  # the program yields (predicate, reason, ids[, instr]) or _PARK
            if req is _PARK:
                return  # the engine runs the parked op, then resumes this core
            if req[0]():
                continue
            self.waiting = req[0]
            self.wait_info = (0, req[1], req[2], req[3] if len(req) > 3 else None)
            return
        self.scalar_done = True
        self._check_done()

    def sync_scalar(self):
        return NOTHING  # no clock to catch up with

    # what a relaunch cannot replay (`memo`): control flow or text from values
    def resolve_scalar_target(self, value: Any, span: Any) -> Any:
        self.engine.ran = None
        return super().resolve_scalar_target(value, span)

    def print(self, text: str) -> None:
        self.engine.ran = None
        super().print(text)

    # ------------------------------------------------------------ issue
    def issue(self, instr: Instr):
        """Park `instr` (an op) or run it (a sync instruction), or queue it behind its stalled
        pipe; returns what the program's `yield from` passes on (the park marker, or nothing
        unless the pipe's queue is full or pipe S waits)."""
        pipe = self._pipe_by_name.get(instr.pipe._value_)
        if pipe is None:
            if instr.pipe is _S:
                return self._scalar_sync(instr)
            raise SimulationError(f"{self.label} has no {instr.pipe.value} pipe "
                                  f"({instr.ir_op})", instr.span)
        queue = pipe.queue
        if not queue:  # the common case: nothing stalled on this pipe
            kind = instr.kind
            if kind == "op":
                if _batches(instr):
                    self._park(instr)
                    return _PARK_STEP
                self._execute_op(instr)
            elif kind == "unlock":  # the most frequent sync, without the dispatch
                self._unlock(pipe.kind, instr)
            else:
                self._sync_now(pipe, instr)
            return NOTHING
        if len(queue) >= self.engine.queue_depth:
            return self._issue_when_room(pipe, instr)
        self._queue_behind(pipe, instr)
        return NOTHING

    def _issue_when_room(self, pipe: Pipe, instr: Instr):
        depth = self.engine.queue_depth
        yield (lambda: len(pipe.queue) < depth, "queue", f"{pipe.kind.value} full", instr)
        if pipe.queue:
            self._queue_behind(pipe, instr)
        elif instr.kind != "op":
            self._sync_now(pipe, instr)
        elif _batches(instr):  # drained while the scalar unit waited
            self._park(instr)
            yield _PARK
        else:
            self._execute_op(instr)

    def _queue_behind(self, pipe: Pipe, instr: Instr) -> None:
        """Behind a stalled head: the pipe keeps its order (a lock joins its mutex's FIFO now,
        at issue, as in the engine). A sync instruction queues as a copy: its call site's is
        shared, and the queued one keeps its issue order or FIFO place."""
        kind = instr.kind
        if kind != "op":
            instr = instr.copy()
            if kind == "lock":
                self._request(instr)
            else:
                self._number(instr)
        pipe.queue.append(instr)

    def _number(self, instr: Instr) -> None:
        """Issue order of a sync instruction (judges a second set_flag, `_wait_issued_since`)."""
        self._issued += 1
        instr.seq = self._issued

    def _request(self, instr: Instr) -> _MutexReq:
        """A lock's place in its mutex's FIFO (mutexes are granted in issue order)."""
        req = instr.req = _MutexReq(instr.pipe)
        q = self.mutex.get(instr.key)
        if q is None:
            q = self.mutex[instr.key] = deque()
        q.append(req)
        return req

    def _sync_now(self, pipe: Pipe, instr: Instr) -> None:
        """A sync instruction at an idle pipe. What is decided here (a lock of a free mutex, an
        unlock, a wait whose flag is set) is a few operations on the core's sync state, as
        `_complete_sync` does it without its trace and observer work; the rest runs on a copy
        of the shared instruction, which keeps its issue order or FIFO place if it stalls."""
        kind = instr.kind
        if kind == "unlock":
            self._unlock(pipe.kind, instr)
            return
        if kind == "lock":
            q = self.mutex.get(instr.key)
            if q is None:
                self.mutex[instr.key] = deque((_GRANTED[instr.pipe._value_],))
                return
            if not q:  # every earlier request of the id was released: granted
                q.append(_GRANTED[instr.pipe._value_])
                return
            instr = instr.copy()  # held: it takes its place in the FIFO
            self._request(instr)
        elif kind == "wait_flag" and instr.key in self.flags:
            self._take_flag(instr.key)  # (never queued: it needs no issue order)
            return
        else:
            instr = instr.copy()
            self._number(instr)
            if kind == "set_flag":
                self._set_flag(instr, 0)
                return
        if self._stalls(pipe, instr):
            self._stalled = True
            pipe.queue.append(instr)
        else:
            self._complete_sync(pipe, instr, 0)

    # ------------------------------------------------------------ running
    def _park(self, instr: Instr) -> None:
        self.parked = instr
        self.engine.parked.append(self)

    def run_parked(self) -> None:
        """Run the parked op now (its core stays parked until the engine resumes it)."""
        instr, self.parked = self.parked, None
        self._execute_op(instr)

    def _execute_op(self, instr: Instr) -> None:
        ran = self.engine.ran
        if ran is not None and not ran.ran(instr, self.label):
            self.engine.ran = None
        try:
            IMPLS[instr.ir_op](instr.args, instr.kwargs)
        except SimulationError:
            raise
        except _OP_ERRORS as err:
            raise _op_error(self, instr, err) from err
        self.engine.instructions += 1

    def _stalls(self, pipe: Pipe, instr: Instr) -> bool:
        """The sync instruction cannot run yet: the pipe records why (the deadlock report)."""
        blocked = self._sync_blocked(pipe, instr)
        if blocked is None:
            pipe.blocked = None
            return False
        if pipe.blocked is None:
            pipe.blocked = (0, *blocked)
        return True

    def kick_blocked(self) -> None:
        """A flag, mutex or cross-core counter changed: run what it unblocked, then wake the
        scalar unit if it waits (or finish the core if it is done). A parked op runs first: it
        was issued after everything queued."""
        if self._stalled and not self._draining:
            if self.parked is not None:
                self.run_parked()
            self._drain()
        if self.waiting is not None or self.scalar_done:
            self.poke()

    def _drain(self) -> None:
        """Run stalled pipe heads until none can move. A sync completed here may unblock a
        pipe already visited (its kick_blocked lands while draining), so sweep again until a
        sweep makes no progress."""
        self._draining = True
        try:
            moved = True
            while moved:
                moved = False
                for pipe in self._pipe_list:
                    queue = pipe.queue
                    while queue:
                        head = queue[0]
                        if head.kind != "op" and self._stalls(pipe, head):
                            break
                        queue.popleft()
                        if head.kind == "op":
                            self._execute_op(head)
                        else:
                            self._complete_sync(pipe, head, 0)
                        moved = True
            self._stalled = any(p.queue for p in self._pipe_list)
        finally:
            self._draining = False


def _batches(instr: Instr) -> bool:
    """The op is worth parking for a batch: it has a batch impl, and this call is not one the
    batch would only run on its own (`BatchedOp.at_issue`: memory-bound work, which keeps
    its core's data in cache when it runs at issue)."""
    impl = BATCH_IMPLS.get(instr.ir_op)
    if impl is None:
        return False
    at_issue = getattr(impl, "at_issue", None)
    return at_issue is None or not at_issue(instr.args)


def _op_error(core: FunctionalCore, instr: Instr, err: Exception) -> SimulationError:
    """An op's error on bad operands as the engine reports it."""
    return SimulationError(f"{instr.ir_op} on {core.label}: {err}", instr.span)
