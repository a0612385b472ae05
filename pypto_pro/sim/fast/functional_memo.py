"""A functional-only relaunch replays the ops the executor ran, in the order it ran them.

The functional executor's values (`functional`) are a function of the ops it runs, their
operands and their order. None of those depends on the data when the programs' control flow
does not: no scalar access of memory (`resolve_scalar_target`), nothing printed (a dump prints
values), no compiled bodies (SIMT launches and VF sections run programs of their own). A launch
that did none of those keeps its ops in the order they ran (`Ran`), and a relaunch with the
same programs, slot memories and parameters — by the stream memo's rules, tensors by geometry
and rebound to new ones (`stream_memo`, kind `FUNCTIONAL`) — runs them again in that order with
no program, no sync and no lockstep rounds. A batch ran as one torch computation that is
bit-identical to its ops one by one (`ops.batching`), so the replay runs them one by one, and
from the third launch of the same operands on as the prebuilt steps of a `tape`.
"""
from __future__ import annotations

from typing import Any

from ...errors import SimulationError
from . import stream_memo, tape

#: ops that run a compiled body of their own (its control flow may read memory)
_BODIES = frozenset({"vf.vec_scope", "simt.launch"})
#: launches replayed from kept ops (tests look at it)
REPLAYS = 0


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


def replayed(launch: Any) -> list | None:
    """Run `launch` from its kernel's kept ops: its blocks, or None when there are none for it
    (the functional executor runs it, noting its ops: `launch.engine.ran`)."""
    entry = stream_memo.lookup(launch, stream_memo.FUNCTIONAL)
    if entry is None:
        return None
    from ..launch import _Block

    global REPLAYS
    REPLAYS += 1
    ran = entry.rec
    kept = tape.kept(ran, None)
    if kept is not None:
        tape.play(ran, kept, _op_error)
    else:
        tape.make(ran, None, list(range(len(ran.instrs))), _run_op)
    launch.engine.instructions = ran.instructions
    return [_Block(b) for b in ran.blocks]


def _run_op(ran: Ran, e: int, build: bool) -> tape.Step | None:
    instr = ran.instrs[e]
    try:
        return tape.step(instr.ir_op, instr.args, instr.kwargs, build)
    except SimulationError:
        raise
    except tape.OP_ERRORS as err:
        raise _op_error(ran, e, err) from err


def _op_error(ran: Ran, e: int, err: Exception) -> SimulationError:
    """The executor's error for op `e` failing with `err` (`functional._op_error`)."""
    instr = ran.instrs[e]
    return SimulationError(f"{instr.ir_op} on {ran.labels[e]}: {err}", instr.span)


def store(launch: Any) -> None:
    """Keep what a functional launch ran (`launch.engine.ran`, None when it cannot be replayed)
    for its relaunch."""
    ran = launch.engine.ran
    if ran is None:
        return
    ran.blocks = [b.index for b in launch.blocks]
    ran.instructions = launch.engine.instructions
    launch.engine.ran = None
    stream_memo.store(launch, ran, None, True, stream_memo.FUNCTIONAL)


__all__ = ["REPLAYS", "Ran", "replayed", "store"]
