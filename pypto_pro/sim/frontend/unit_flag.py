"""The unit-flag handshake between the cube (pipe M) and the fixpipe (pipe FIX) that a `phase`
on a matmul (`pl.AccPhase`) or on a store out of L0C (`pl.STPhase`) turns on (docs: phase.md).

With a phase the framework inserts no M↔FIX sync (auto_mutex drops the Acc tile's locks): the
hardware's per-accumulator unit flag orders them. A phased matmul waits for the flag to be 0 and
an `AccPhase.Final` one sets it to 1; a phased store waits for 1 and an `STPhase.Final` one
clears it. The simulator runs this as a flag pair issued in program order next to the op: before
the first phased store after a Final matmul, a set on M (queued behind that matmul) and a wait
on FIX; before the first phased matmul after a Final store, a set on FIX and a wait on M. The
orders the docs call hangs (a phased store with no Final matmul before it, a phased matmul on
an accumulator whose Final result no Final store read) are refused instead of hanging.
"""
from __future__ import annotations

from typing import Any

from ...errors import SimulationError
from ...ir.span import Span
from ...ir.types import PipeType

_M, _FIX = PipeType.M, PipeType.FIX
#: the id of the handshake's flags: not an event id a kernel can name, so never one of its own
UNIT_ID = "unit"

# the state of one accumulator's handshake, in program order
_WRITTEN = "written"    # a Final matmul set the flag; no phased store has waited for it yet
_READING = "reading"    # a phased store waited for the Final matmul's result
_RELEASED = "released"  # a Final store cleared the flag; no phased matmul has waited yet
_PARTIAL = "partial"    # phased matmuls without a Final one: the flag is still 0


class UnitFlagSite:
    """What one phased cube op or Acc store issues around itself (its shared sync
    instructions, made once per call site)."""

    def __init__(self, op: str, span: Span, cube: bool, final: bool, instr_cls: Any) -> None:
        self.op, self.span, self.cube, self.final = op, span, cube, final
        src, dst = (_FIX, _M) if cube else (_M, _FIX)
        self.pair = (instr_cls("set_flag", src, op, span, key=(src, dst, UNIT_ID)),
                     instr_cls("wait_flag", dst, op, span, key=(src, dst, UNIT_ID)))

    def before(self, core: Any, addr: int) -> tuple:
        """The sync instructions to issue before the op on the L0C tile at `addr`, after
        checking the order does not hang the hardware; records the op's effect on the flag."""
        flags = core.unit_flags
        state = flags.get(addr)
        if self.cube:
            if state in (_WRITTEN, _READING):
                raise SimulationError(
                    f"{self.op} with a phase waits for the accumulator's unit flag to be 0, "
                    f"but a matmul with pl.AccPhase.Final set it and no store with "
                    f"pl.STPhase.Final has cleared it: the hardware waits for ever", self.span,
                    hint="store the accumulator with phase=pl.STPhase.Final before the next "
                         "phased matmul into it (docs: phase.md)")
            flags[addr] = _WRITTEN if self.final else _PARTIAL
            return self.pair if state == _RELEASED else ()
        if state not in (_WRITTEN, _READING):
            raise SimulationError(
                f"{self.op} with a phase waits for the accumulator's unit flag to be 1, which "
                f"only a matmul with pl.AccPhase.Final sets, and none did since the flag was "
                f"last cleared: the hardware waits for ever", self.span,
                hint="give the last matmul of the chain phase=pl.AccPhase.Final "
                     "(docs: phase.md)")
        flags[addr] = _RELEASED if self.final else _READING
        return self.pair if state == _WRITTEN else ()
