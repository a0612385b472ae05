"""The facts one cell run produced, as plain records the views read.

Owns `SourceInfo` (where the cell or file text lives and how a user calls it: "Cell In[5]"),
`KernelRecord` (one compiled kernel variant: pass records, codegen artifacts or the codegen
error), `ArgInfo`, `CheckResult` and `LaunchRecord` (one launch: backend, shapes, wall time, its
Trace, printf text per block, the comparison with a reference). Records hold no IPython or
widget state, so they pickle-free travel to reports and the CLI. Imports only the public
`pypto_pro` surface lazily.
"""
from __future__ import annotations

import linecache
import re
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class SourceInfo:
    """A registered cell (or a source file): its linecache name, the label users know it by
    ("Cell In[5]", or the path) and the text whose line k is source line k."""

    file: str
    label: str
    text: str
    cell: bool = True  # a notebook cell (False: a file, e.g. the CLI's)

    @property
    def title(self) -> str:
        """How a summary names it: "%%pypto Cell In[5]", or the file's path."""
        return f"%%pypto {self.label}" if self.cell else self.label

    def line(self, number: int) -> str:
        lines = self.text.splitlines()
        return lines[number - 1] if 0 < number <= len(lines) else ""

    def where(self, file: str, line: int) -> str:
        """A source line as users know it: "Cell In[5], line 15" (this cell or another one the
        running IPython compiled), else "kernels.py:15"."""
        from .locations import where

        if file == self.file and self.cell:
            return f"{self.label}, line {line}"
        return where(file, line)

    def relabel(self, message: str) -> str:
        """`message` with the linecache name replaced by the label users know (and the names
        of other cells by theirs, `locations.relabel`)."""
        from .locations import relabel

        if self.file != self.label:
            name = re.escape(self.file)
            message = re.sub(name + r":(\d+):(\d+)", self.label + r", line \1, col \2",
                             message)
            message = re.sub(name + r":(\d+)", self.label + r", line \1", message)
            message = message.replace(self.file, self.label)
        return relabel(message)


@dataclass
class KernelRecord:
    """One compiled variant of a `@pl.jit` kernel seen by the cell (a `pypto_pro.Compiled`)."""

    name: str
    compiled: Any  # pypto_pro.Compiled
    compile_seconds: float = 0.0
    cached: bool = False
    artifacts: Any = None  # the generated sources with line maps, when codegen ran
    codegen_error: str | None = None

    @property
    def kernel_type(self) -> str:
        return self.compiled.kernel_type

    @property
    def arch(self) -> str:
        return self.compiled.arch

    @property
    def targets(self) -> list[str]:
        return self.compiled.targets

    @property
    def file(self) -> str:
        return self.compiled.file

    def line_range(self) -> tuple[int, int]:
        """First (decorators included) and last source line of the kernel function."""
        return self.compiled.lines

    def source_lines(self) -> list[tuple[int, str]]:
        """(line number, text) of the kernel function in its file or cell."""
        first, last = self.line_range()
        return [(n, linecache.getline(self.file, n).rstrip("\n")) for n in range(first, last + 1)]

    def passes(self, target: str | None = None) -> Any:
        """The PassRecords of `target` (default: the first target)."""
        return self.compiled.passes[target or self.targets[0]]

    @property
    def pass_count(self) -> int:
        return self.compiled.pass_count


@dataclass(frozen=True)
class ArgInfo:
    """One launch argument as the Run view shows it."""

    name: str
    kind: str  # "tensor" | "ptr" | "scalar" | "tiling" | "none"
    shape: tuple[int, ...] = ()
    dtype: str = ""
    value: str = ""

    def describe(self) -> str:
        if self.kind in ("tensor", "ptr"):
            return f"{self.dtype}[{', '.join(map(str, self.shape))}]"
        return self.value


@dataclass(frozen=True)
class Mismatch:
    """One element where the output and the reference differ."""

    index: tuple[int, ...]
    actual: float
    expected: float
    error: float

    def describe(self) -> str:
        return (f"[{', '.join(map(str, self.index))}]: got {self.actual:.6g}, expected "
                f"{self.expected:.6g} (|err| {self.error:.3g})")


@dataclass(frozen=True)
class CheckResult:
    """The launch's output against a reference value (`first`: the first mismatches in
    row-major order; `grid`: the share of mismatching elements per cell of `cell` elements,
    the tensor folded to rows x last dim; see `pypto_lab.check`)."""

    ok: bool
    output: str
    rtol: float
    atol: float
    max_abs_error: float = 0.0
    mismatched: int = 0
    total: int = 0
    message: str = ""
    shape: tuple[int, ...] = ()
    first: tuple[Mismatch, ...] = ()
    grid: tuple[tuple[float, ...], ...] = ()
    cell: tuple[int, int] = (1, 1)

    def detail(self) -> str:
        return self.message or (f"max |err| {self.max_abs_error:.3g}, {self.mismatched:,} of "
                                f"{self.total:,} elements outside rtol={self.rtol:g}, "
                                f"atol={self.atol:g}")

    def describe(self) -> str:
        head = f"{'PASS' if self.ok else 'FAIL'} {self.output} vs reference: {self.detail()}"
        if not self.first:
            return head
        more = self.mismatched - len(self.first)
        lines = [head, "first mismatches (row-major):"]
        lines += [f"  {self.output}{m.describe()}" for m in self.first]
        if more > 0:
            lines.append(f"  ... and {more:,} more")
        return "\n".join(lines)


@dataclass
class LaunchRecord:
    """One launch made by the cell (in the body or via `--launch`)."""

    kernel: str
    block_dim: int
    backend: str
    wall_seconds: float
    args: tuple[ArgInfo, ...] = ()
    trace: Any = None  # pypto_pro.trace.Trace, or None (functional-only / no timing backend)
    printed: dict[int, str] = field(default_factory=dict)
    check: CheckResult | None = None
    compiled: Any = None  # pypto_pro.Compiled
    sanitizer: Any = None  # pypto_pro.sanitizer.SanitizerReport of a sanitized launch

    @property
    def cycles(self) -> int | None:
        return None if self.trace is None else self.trace.duration_cycles

    @property
    def sim_us(self) -> float | None:
        return None if self.trace is None else self.trace.duration_us

    @property
    def pipe_work(self) -> bool:
        """Whether the launch timed an instruction on a pipe other than the scalar unit's (S:
        printf, setval, getval): what a roofline point needs (bytes moved or FLOPs)."""
        if self.trace is None or not len(self.trace.events):
            return False
        events = self.trace.events
        return bool(((events["kind"] == "instr") & (events["pipe"] != "S")).any())

    def describe(self) -> str:
        shapes = ", ".join(f"{a.name}={a.describe()}" for a in self.args)
        head = f"{self.kernel}[None, {self.block_dim}]({shapes}) on {self.backend}"
        if self.trace is not None and len(self.trace.events):
            head += (f": {self.sim_us:.3f} us simulated ({self.cycles:,} cycles), "
                     f"wall {self.wall_seconds:.3f} s")
        elif self.trace is not None:
            head += (f": no instruction to time (scalar arithmetic only), wall "
                     f"{self.wall_seconds:.3f} s")
        else:
            head += f": wall {self.wall_seconds:.3f} s"
        return head
