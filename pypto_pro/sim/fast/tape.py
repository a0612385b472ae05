"""The eager replay's tape: a kept recording's ops as steps that do only their torch work.

On a memo hit (`memo`) everything of an eager replay but the values is what it was:
the same instructions on the same operand objects and memories, in the same order. So a
replay of a kept recording may ask each op's family for its step (`ops.STEPS`: its torch calls
with every view and plan of that run bound, value checks and value-dependent branches inside;
an op without one keeps its impl call, `ops.IMPLS`) and run that. The steps, in the replay's
order, are the tape (`rec.tape`), and later eager replays of the recording run it instead of
dispatching each op.

Making the steps (and their lanes, joins and compiled records) costs a replay about twice what
running the impls costs, so only a relaunch makes them: `rec.tape` is absent or None (a new
recording, or one rebound to new tensors whose tape could not move with them: `moved`) → the
replay runs the impls alone and leaves it `PENDING` → the next replay makes the tape → the later
ones run it. The steps bind views derived from the tiles' memories, geometries and valid
shapes, so a tape is valid only while `TileRef.epoch` is what it was when it was made, for the
schedule it was made from, on the thread it was made on (products use that thread's scratch
buffers), with the compiled copies (`copies_native`) it was made with; else the replay makes it
again. The replay that leaves it `PENDING` starts that library's build, so the tape made next
has it.

The ops of blocks that share no written memory commute, so a tape keeps its steps in groups
that share none, dealt to two lanes (`lanes`), and a play runs the second lane on a worker
while the first runs here, or one after the other, whichever was faster when last timed. The
steps are made here, in the replay's order, each product in its lane's scratch buffers
(`cube.lane_scratch`). Out of the replay's order, an op failing would leave other writes than a
fresh launch leaves (which stops at it), so only a tape of bound steps, which have no checks
left to fail, gets lanes; one with an impl call (it checks its operands again:
`Step.fallible`) keeps one lane in the replay's order. Each copy step is compiled
(`fusion.compiled`), and in a lane each run of a group's compiled steps (copies, cube
products) is one call (`fusion.joined`, `fusion.chained`).
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import torch

from ...errors import SimulationError
from . import copies_native, lanes
from .fusion import chained, compiled, copy_call, joined
from ..model.memory import GMRef, TileRef
from ..step import Step
from ..ops import IMPLS, STEPS
from ..ops.cube import lane_scratch

#: `rec.tape` after a replay of its recording that made no tape: the next one makes it
PENDING = object()
#: a tape in two lanes times the way it does not run them every this many plays
RETIME = 16
#: a way of running two lanes is judged by the best of its last this many plays
SAMPLES = 2
#: tapes this process made (`make`; the bench reports the launch that made one)
MADE = 0
#: what an op raises that the replay reports as the op's error (`op_error`)
OP_ERRORS = (IndexError, ValueError, TypeError, RuntimeError)


class Tape:
    """The steps of one recording's eager replay, with what they are valid for: per lane
    (`lanes`) its steps, their instructions, and their `lanes.Lane` (None: one lane in the
    replay's order). Two lanes run at once or one after the other, whichever took less time
    in its last plays (`together`)."""

    __slots__ = ("lanes", "epoch", "sched", "thread", "copies", "plays", "times", "moves")

    def __init__(self, made: list[tuple[list[Step], list[int], lanes.Lane | None]],
                 epoch: int, sched: Any, copies: Any, runs: list | None) -> None:
        self.lanes, self.epoch, self.sched = made, epoch, sched
        self.thread, self.copies = threading.get_ident(), copies
        # its compiled steps (then their `copies_native.Moves`), when they are all that
        # touches GM: a rebind to new tensors moves them (`moved`); else None
        self.moves: list | copies_native.Moves | None = runs
        self.plays = 0
        # seconds of the last `SAMPLES` plays run one lane after the other, and at once
        self.times: tuple[list[float], list[float]] = ([], [])

    def fits(self, sched: Any) -> bool:
        return self.epoch == TileRef.epoch and self.sched is sched and \
            self.thread == threading.get_ident() and self.copies is copies_native.library()

    def together(self) -> bool:
        """Whether this play runs two lanes at once: each way `SAMPLES` times, alternating (at
        once first: one noisy play decides nothing), then the faster by its best recent play,
        the other again every `RETIME`th play (the machine's load changes). Steps of a few
        microseconds lose more to the GIL changing hands than they gain."""
        self.plays += 1
        apart, at_once = self.times
        if len(apart) < SAMPLES or len(at_once) < SAMPLES:
            return len(at_once) <= len(apart)
        return (min(at_once) <= min(apart)) != (self.plays % RETIME == 0)

    def timed(self, together: bool, seconds: float) -> None:
        """Note a play's time, for `together`."""
        kept = self.times[together]
        kept.append(seconds)
        del kept[:-SAMPLES]


def run(rec: Any, sched: Any, order: list[int],
        run_op: Callable[[Any, int, bool], Step | None],
        op_error: Callable[[Any, int, Exception], SimulationError]) -> str:
    """Run instructions `order` of `rec` eagerly, in that order: its tape when it has one that
    fits (`play`), else op by op, making the tape on the way when it is due (`make`). What ran
    ("tape", "tape in 2 lanes", "tape made", "ops")."""
    found = kept(rec, sched)
    if found is not None:
        play(rec, found, op_error)
        return "tape" if len(found.lanes) == 1 else f"tape in {len(found.lanes)} lanes"
    return "tape made" if make(rec, sched, order, run_op) else "ops"


def kept(rec: Any, sched: Any) -> Tape | None:
    """`rec`'s tape when it has one that fits this replay."""
    tape = getattr(rec, "tape", None)
    return tape if type(tape) is Tape and tape.fits(sched) else None


def make(rec: Any, sched: Any, order: list[int],
         run_op: Callable[[Any, int, bool], Step | None]) -> bool:
    """Run instructions `order` of `rec` eagerly, in that order, each through `run_op(rec, e,
    build)` (which runs it and, if `build`, gives its `step`); make their steps `rec.tape` when
    the last replay left it `PENDING` (or a tape that no longer fits), else leave it `PENDING`.
    Whether it made one. The lanes (`lanes.split`) are dealt before the steps are made, each
    step with its lane's scratch (`cube.lane_scratch`); a tape with a step that checks its
    operands again (an impl call: it may fail on values) keeps one lane in the replay's order,
    so that a failing op leaves what it leaves in this one."""
    build = getattr(rec, "tape", None) is not None
    rec.tape = None  # (until the replay is through: an op error leaves none pending)
    if not build:
        copies_native.library()  # (the builds start: the next replay makes the tape with them)
        lanes.prepare()
        for e in order:
            run_op(rec, e, False)
        rec.tape = PENDING
        return False
    epoch, copies = TileRef.epoch, copies_native.library()
    split = lanes.split(rec.instrs, order)
    lane_of = [0] * len(order)
    for k, lane in enumerate(split or ()):
        for position in lane.positions:
            lane_of[position] = k
    runs: list = []  # the compiled calls made (`copies_native.collecting`)
    on_gm_alone = True  # no step but compiled copies touches GM (a GM move can move them)
    steps: list[Step] = []
    with copies_native.collecting(runs):
        for position, e in enumerate(order):
            with lane_scratch(lane_of[position]):
                made = compiled(run_op(rec, e, True))
            steps.append(made)
            if on_gm_alone and copy_call(made) is None and _on_gm(rec.instrs[e]):
                on_gm_alone = False
        if split is None or any(made.fallible for made in steps):
            made_lanes = [_joined(steps, order, None)]
        else:
            made_lanes = [_joined([steps[p] for p in lane.positions],
                                  [order[p] for p in lane.positions], lane) for lane in split]
    replaced = {part for steps, _, _ in made_lanes for step in steps for part in step.replaces}
    runs = [run for run in runs if id(run) not in replaced]  # (only the chains run them)
    # (an epoch change while making it: a view bound early may be stale)
    rec.tape = Tape(made_lanes, epoch, sched, copies, runs if on_gm_alone else None) \
        if TileRef.epoch == epoch else PENDING
    global MADE
    MADE += 1
    return True


def _on_gm(instr: Any) -> bool:
    """Whether an instruction has a GM operand (in its arguments, tuples of them, or kwargs)."""
    values = [*instr.args, *instr.kwargs.values()]
    for value in values:
        if type(value) is GMRef:
            return True
        if type(value) in (tuple, list):
            values += value
    return False


def moved(kept: Any, storages: dict[tuple[int, int], torch.Tensor]) -> Tape | None:
    """`kept` (a recording's `tape`) once its recording is rebound to new GM storages of the
    same sizes (`storages`: old storage (address, bytes) → a tensor on its successor,
    `memo`): a tape whose steps touch GM only through compiled copies, their addresses
    and views moved (`copies_native.Moves`); `PENDING` as it is (the next replay makes a
    tape, on the new tensors); None for anything else (the replay after next makes one)."""
    if kept is PENDING:
        return kept
    if type(kept) is not Tape or kept.moves is None:
        return None
    if type(kept.moves) is list:  # (worked out on the first move)
        kept.moves = copies_native.Moves(kept.moves)
    return kept if kept.moves.move(storages) else None


def _joined(steps: list[Step], order: list[int], lane: lanes.Lane | None
            ) -> tuple[list[Step], list[int], lanes.Lane | None]:
    """A lane with each run of compiled copies of one group in one step (`fusion.joined`),
    then each run of compiled steps of one group in one step (`fusion.chained`): fewer
    calls, and fewer times a lane running beside another waits for the GIL. A joined step
    never fails, so it stands at its first op's place."""
    groups = lane.groups if lane is not None else [0] * len(steps)
    out: list[Step] = []
    firsts: list[int] = []
    start = 0
    while start < len(steps):
        end = start + 1
        while end < len(steps) and groups[end] == groups[start]:
            end += 1
        fused, counts = joined(steps[start:end])
        fused, chains = chained(fused)
        out += fused
        for count in chains:  # (of `fused`'s steps, each of `counts` of `steps`)
            firsts.append(start)
            start += sum(counts[:count])
            del counts[:count]
    kept = lane if lane is None else \
        lanes.Lane([lane.positions[k] for k in firsts], [lane.groups[k] for k in firsts])
    return out, [order[k] for k in firsts], kept


def step(op: str, args: list, kwargs: dict, build: bool = True) -> Step | None:
    """Run `op` through its impl, or if `build`, give its step (`ops.STEPS`, else the impl
    call, `fallible`: it checks the operands again, so it may fail on the values it meets)
    and run that (it binds the operands as they are before the op)."""
    impl = IMPLS[op]
    if not build:
        impl(args, kwargs)
        return None
    builder = STEPS.get(op)
    made = None if builder is None else builder(args, kwargs)
    if made is None:
        made = Step(partial(impl, args, kwargs), fallible=True)
    made.run()
    return made


def play(rec: Any, tape: Tape, op_error: Callable[[Any, int, Exception], SimulationError]
         ) -> None:
    """Run `tape`'s steps, a second lane on the worker meanwhile (`op_error(rec, e, err)`: the
    error a step failing with `err` raises, of the step failing first in the replay's order)."""
    steps, order, lane = tape.lanes[0]
    if lane is None:
        done = 0
        try:
            for done, made in enumerate(steps):  # noqa: B007 - the failing step's index
                made.run()
        except SimulationError:
            raise
        except OP_ERRORS as err:
            raise op_error(rec, order[done], err) from err
        return
    together = tape.together()
    start = time.perf_counter()
    failed = lanes.run_lanes([steps for steps, _, _ in tape.lanes],
                             [lane for _, _, lane in tape.lanes], together, here=True)
    tape.timed(together, time.perf_counter() - start)
    if failed is not None:
        _, k, index, err = failed
        if isinstance(err, SimulationError) or not isinstance(err, OP_ERRORS):
            raise err
        raise op_error(rec, tape.lanes[k][1][index], err) from err


__all__ = ["MADE", "OP_ERRORS", "PENDING", "Tape", "kept", "make", "moved", "play", "run",
           "step"]
