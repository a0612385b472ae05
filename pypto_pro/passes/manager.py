"""The pass manager: runs passes in order and records what each one did.

A pass is a module (or any object) with a `NAME` and `run(program, ctx) -> program`. The
manager keeps, as data, the IR before everything (record 0, "parse") and after every pass: its
printed text, the program, the time it took, whether it changed the text and the warnings it
raised. The workbench's pass view is this record list (`PassRecords`), not a debug mode. A pass
that fails leaves a record with its error and the IR it was given, and the error carries the
pass name. `PassContext` carries the target, the arch, the SoC facts the verifiers need and the
diagnostics. Imports `pypto_pro.ir`, `pypto_pro.errors` and `pypto_pro.soc` (never the
simulator).
"""
from __future__ import annotations

import difflib
import functools
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..errors import PassInner, PyptoError
from ..ir.blame import span_of_failure
from ..ir.nodes import Program
from ..ir.printer import python_print
from ..ir.span import Span
from ..ir.types import MemorySpace
from ..soc import soc

#: SoC table per arch (names of `pypto_pro/soc/*.toml`)
SOC_FOR_ARCH = {"a5": "Ascend950PR_9589", "a3": "Ascend910B1", "a2": "Ascend910B1"}


class Pass(Protocol):
    NAME: str

    def run(self, program: Program, ctx: PassContext) -> Program: ...


@dataclass(frozen=True)
class Diagnostic:
    """A finding that is not an error: message, where, and the other places it involves."""

    message: str
    span: Span | None
    related: tuple[Span, ...] = ()
    pass_name: str | None = None

    def __str__(self) -> str:
        where = [f"  --> {s.file}:{s.line}:{s.col}" for s in (self.span, *self.related) if s]
        by = f" [{self.pass_name}]" if self.pass_name else ""
        return "\n".join([f"warning{by}: {self.message}", *where])


@dataclass(frozen=True)
class SocFacts:
    """What the verifiers need to know about the chip: buffer sizes and start alignments."""

    name: str
    buffers: dict[MemorySpace, int]
    alignments: dict[MemorySpace, int]

    def buffer_size(self, space: MemorySpace) -> int:
        return self.buffers.get(space, 0)

    def alignment(self, space: MemorySpace) -> int:
        return self.alignments.get(space, 1)


def soc_facts(name: str) -> SocFacts:
    """The buffer sizes and alignments of SoC table `name`."""
    table = soc(name)
    spaces = [s for s in MemorySpace if s is not MemorySpace.DDR]
    return SocFacts(table.name, {s: table.buffer_size(s) for s in spaces},
                    {s: table.alignment(s) for s in spaces})


class KernelOptions(Protocol):
    """What the passes read from a kernel's `@pl.jit` options (e.g. `JitOptions`)."""

    auto_mutex: bool


@dataclass
class PassContext:
    """Per-target facts every pass may read, and the diagnostics passes add.

    `facts` names invariants established so far (e.g. "ssa"), which `verify` then checks.
    """

    target: str  # "cube" | "vector"
    arch: str = "a5"
    auto_mutex: bool = True
    soc: SocFacts | None = None
    warnings: list[Diagnostic] = field(default_factory=list)
    facts: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        if self.soc is None:
            self.soc = soc_facts(SOC_FOR_ARCH.get(self.arch, SOC_FOR_ARCH["a5"]))

    @classmethod
    def for_kernel(cls, target: str, arch: str | None, options: KernelOptions | None = None,
                   ) -> PassContext:
        """The context of one target of a kernel compiled with `@pl.jit` `options`."""
        auto = True if options is None else bool(options.auto_mutex)
        return cls(target, arch or "a5", auto)

    def warn(self, message: str, span: Span | None, related: Sequence[Span] = (),
             pass_name: str | None = None) -> None:
        self.warnings.append(Diagnostic(message, span, tuple(related), pass_name))


@dataclass(frozen=True)
class PassRecord:
    """The program after one pass (record 0: as parsed) and what the pass did. Its IR text is
    printed when first read (`ir_text`; the IR is immutable): a launch outside the workbench
    never reads it."""

    name: str
    program: Program
    seconds: float = 0.0
    warnings: tuple[Diagnostic, ...] = ()
    error: PyptoError | None = None
    follows: PassRecord | None = field(default=None, repr=False, compare=False)  # the one before

    @functools.cached_property
    def ir_text(self) -> str:
        before = self.follows
        return before.ir_text if before is not None and before.program is self.program else \
            python_print(self.program)

    @property
    def changed(self) -> bool:
        """Whether the IR text differs from the record before's."""
        before = self.follows
        return before is not None and before.program is not self.program and \
            self.ir_text != before.ir_text

    def lines(self, concise: bool = False) -> tuple[str, list[Span | None]]:
        """(the IR text, the source span of each of its lines); `concise` leaves out the
        assignment types (the printer's concise form). Printed once per form."""
        attr = "_concise_lines" if concise else "_lines"
        found = self.__dict__.get(attr)
        if found is None:
            found = python_print(self.program, concise=concise, line_map=True)
            object.__setattr__(self, attr, found)  # a cache, not a field
        return found

    def diff(self, other: PassRecord, context: int = 3) -> str:
        """Unified diff from this record's IR to `other`'s."""
        return "".join(difflib.unified_diff(
            self.ir_text.splitlines(keepends=True), other.ir_text.splitlines(keepends=True),
            fromfile=self.name, tofile=other.name, n=context))


class PassRecords(Sequence[PassRecord]):
    """The records of one pipeline run, addressable by position or pass name."""

    def __init__(self, records: Sequence[PassRecord] = ()) -> None:
        self._records = list(records)

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return self.get(key)
        return self._records[key]

    def __len__(self) -> int:
        return len(self._records)

    def __iter__(self) -> Iterator[PassRecord]:
        return iter(self._records)

    def append(self, record: PassRecord) -> None:
        self._records.append(record)

    def get(self, name: str) -> PassRecord:
        for r in self._records:
            if r.name == name:
                return r
        raise KeyError(f"no pass named {name!r}; passes: {', '.join(self.names())}")

    def names(self) -> list[str]:
        return [r.name for r in self._records]

    def diff(self, a: int | str, b: int | str, context: int = 3) -> str:
        """Unified diff of the IR between two records (positions or pass names)."""
        return self[a].diff(self[b], context)

    def rows(self) -> list[dict[str, Any]]:
        """One dict per record (index, pass, ms, changed, warnings, failed) for tables."""
        return [{"index": i, "pass": r.name, "ms": r.seconds * 1e3, "changed": r.changed,
                 "warnings": len(r.warnings), "failed": r.error is not None}
                for i, r in enumerate(self._records)]

    def summary(self) -> str:
        lines = [f"{'#':>2}  {'pass':<22} {'ms':>8}  result"]
        for row in self.rows():
            state = "FAILED" if row["failed"] else ("changed" if row["changed"] else "-")
            warn = f" ({row['warnings']} warning(s))" if row["warnings"] else ""
            lines.append(f"{row['index']:>2}  {row['pass']:<22} {row['ms']:>8.3f}  "
                         f"{state}{warn}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"PassRecords({self.names()})"


class PassManager:
    """Runs `passes` in order; `records` holds the records of the last (possibly failed) run.
    `on_pass(name, index, total)` is called before each pass (progress display)."""

    def __init__(self, passes: Sequence[Pass],
                 on_pass: Callable[[str, int, int], None] | None = None) -> None:
        self.passes = list(passes)
        self.on_pass = on_pass
        self.records = PassRecords()

    def run(self, program: Program, ctx: PassContext) -> tuple[Program, PassRecords]:
        self.records = records = PassRecords()
        records.append(PassRecord("parse", program))
        for index, p in enumerate(self.passes, start=1):
            if self.on_pass is not None:
                self.on_pass(p.NAME, index, len(self.passes))
            program = self._run_one(p, program, ctx)
        return program, records

    def _run_one(self, p: Pass, program: Program, ctx: PassContext) -> Program:
        seen = len(ctx.warnings)
        t0 = time.perf_counter()
        try:
            out = p.run(program, ctx)
        except Exception as e:  # noqa: BLE001  (every failure is recorded, then re-raised)
            err = e if isinstance(e, PyptoError) else PassInner(
                f"{type(e).__name__}: {e}", span_of_failure(e.__traceback__), module="PRO_IR")
            if err.pass_name is None:
                err.pass_name = p.NAME
            self.records.append(PassRecord(p.NAME, program, time.perf_counter() - t0,
                                           tuple(ctx.warnings[seen:]), err, self.records[-1]))
            if err is e:
                raise
            raise err from e
        self.records.append(PassRecord(p.NAME, out, time.perf_counter() - t0,
                                       tuple(ctx.warnings[seen:]), follows=self.records[-1]))
        return out
