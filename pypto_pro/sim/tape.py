"""The eager replay's tape: a kept recording's ops as steps that do only their torch work.

On a memo hit (`stream_memo`) everything of an eager replay but the values is what it was:
the same instructions on the same operand objects and memories, in the same order. So a
replay of a kept recording may run each op through its impl (`ops.IMPLS`) and then ask its
family for the op's step (`ops.STEPS`: its torch calls with every view and plan of that run
bound, value checks and value-dependent branches inside; an op without one keeps its impl
call). The steps, in the replay's order, are the tape (`rec.tape`), and later eager replays
of the recording run it instead of dispatching each op.

Making the steps costs a replay a few percent, so only a relaunch of the same operands makes
them: `rec.tape` is absent or None (a new recording, or one rebound to new tensors: the memo
sets None) → the replay runs the impls alone and leaves it `PENDING` → the next replay makes
the tape → the later ones run it. The steps bind views derived from the tiles' memories,
geometries and valid shapes, so a tape is valid only while `TileRef.epoch` is what it was when
it was made, for the schedule it was made from, on the thread it was made on (products use that
thread's scratch buffers), with the compiled copies (`copies_native`) it was made with; else the
replay makes it again. The replay that leaves it `PENDING` starts that library's build, so the
tape made next has it.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from functools import partial
from typing import Any

from ..errors import SimulationError
from . import copies_native
from .memory import Step, TileRef
from .ops import IMPLS, STEPS

#: `rec.tape` after a replay of its recording that made no tape: the next one makes it
PENDING = object()
#: what an op raises that the replay reports as the op's error (`op_error`)
OP_ERRORS = (IndexError, ValueError, TypeError, RuntimeError)


class Tape:
    """The steps of one recording's eager replay, with what they are valid for."""

    __slots__ = ("steps", "order", "epoch", "sched", "thread", "copies")

    def __init__(self, steps: list[Step], order: list[int], epoch: int, sched: Any,
                 copies: Any) -> None:
        self.steps, self.order, self.epoch, self.sched = steps, order, epoch, sched
        self.thread, self.copies = threading.get_ident(), copies

    def fits(self, sched: Any) -> bool:
        return self.epoch == TileRef.epoch and self.sched is sched and \
            self.thread == threading.get_ident() and self.copies is copies_native.library()


def kept(rec: Any, sched: Any) -> Tape | None:
    """`rec`'s tape when it has one that fits this replay."""
    tape = getattr(rec, "tape", None)
    return tape if type(tape) is Tape and tape.fits(sched) else None


def make(rec: Any, sched: Any, order: list[int],
         run_op: Callable[[Any, int, bool], Step | None]) -> bool:
    """Run instructions `order` of `rec` eagerly, each through `run_op(rec, e, build)` (which
    runs it and, if `build`, gives its `step`); make their steps `rec.tape` when the last
    replay left it `PENDING` (or a tape that no longer fits), else leave it `PENDING`. Whether
    it made one."""
    build = getattr(rec, "tape", None) is not None
    rec.tape = None  # (until the replay is through: an op error leaves none pending)
    if not build:
        copies_native.library()  # (its build starts: the next replay makes the tape with it)
        for e in order:
            run_op(rec, e, False)
        rec.tape = PENDING
        return False
    epoch, copies = TileRef.epoch, copies_native.library()
    steps = [run_op(rec, e, True) for e in order]
    # (an epoch change while making it: a view bound early may be stale)
    rec.tape = Tape(steps, order, epoch, sched, copies) if TileRef.epoch == epoch else PENDING
    return True


def step(op: str, args: list, kwargs: dict, build: bool = True) -> Step | None:
    """Run `op` through its impl; if `build`, its step (`ops.STEPS`, else the impl call)."""
    impl = IMPLS[op]
    impl(args, kwargs)
    if not build:
        return None
    builder = STEPS.get(op)
    made = None if builder is None else builder(args, kwargs)
    return partial(impl, args, kwargs) if made is None else made


def play(rec: Any, tape: Tape, op_error: Callable[[Any, int, Exception], SimulationError]
         ) -> None:
    """Run `tape`'s steps (`op_error(rec, e, err)`: the error a step failing with `err`
    raises)."""
    done = 0
    try:
        for done, run in enumerate(tape.steps):  # noqa: B007 - the failing step's index
            run()
    except SimulationError:
        raise
    except OP_ERRORS as err:
        raise op_error(rec, tape.order[done], err) from err


__all__ = ["OP_ERRORS", "PENDING", "Step", "Tape", "kept", "make", "play", "step"]
