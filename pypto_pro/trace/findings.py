"""Sanitizer findings and the text report (spec §5.3 format). They live with the Trace, which
carries them (`Trace.findings`) and must not import the simulator; the sanitizer makes them.

A `Finding` names one bug: its kind (the real sanitizer's names where it has them, e.g.
`GM_OUT_OF_BOUNDS`, `TILE_OVERLAP`, `UNPAIRED_MUTEX_LOCK`; our own for what it cannot see, e.g.
`DATA_RACE_RAW`), a severity, a message, the `Site` of the instruction that showed it and, for
races and pairing bugs, the `other` site (so the timeline can mark both instructions). The
`SanitizerReport` collapses duplicates at one source location into a hit count and renders the
report as the real tool prints it:

    PyPTO Sanitizer: 2 issue(s) detected
    [1/2] DATA_RACE_RAW: ... at kernel.py:42
    Hint: ...
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

ERROR, WARNING = "ERROR", "WARNING"

#: kind → (severity, hint)
KINDS: dict[str, tuple[str, str]] = {
    "GM_OUT_OF_BOUNDS": (ERROR, (
        "check the per-dimension offsets plus the tile's valid shape against "
        "the tensor's shape (tails need pl.set_validshape)"
    )),
    "GM_PAST_TENSOR_END": (WARNING, (
        "the window runs past the tensor's last byte into the bytes the NPU allocator "
        "reserves with it: the hardware reads whatever they hold (zeros here) and keeps "
        "what is written there; shrink the valid shape or allocate the tensor larger"
    )),
    "TILE_OUT_OF_BOUNDS": (ERROR, (
        "offsets and valid shapes must stay inside the tile's declared shape"
    )),
    "BUFFER_CAPACITY_EXCEEDED": (ERROR, (
        "the tile ends past the on-chip buffer of this SoC; move it to a lower "
        "address or shrink it"
    )),
    "MISALIGNED_ACCESS": (ERROR, (
        "on-chip tiles must start on the space's alignment (Vec/Mat 32 B, "
        "Left/Right 512 B, Acc 64 B); slice at aligned rows"
    )),
    "TILE_OVERLAP": (WARNING, (
        "two live tiles share bytes: give each its own address range or order "
        "their uses"
    )),
    "DATA_RACE_RAW": (ERROR, (
        "the read is not ordered after the write: add sync_src/sync_dst between "
        "the two pipes (or a mutex / tile group with mutex_ids)"
    )),
    "DATA_RACE_WAR": (ERROR, (
        "the write can overwrite data another pipe has not read yet: sync the "
        "reader's pipe to the writer's before reusing the buffer"
    )),
    "DATA_RACE_WAW": (ERROR, (
        "two pipes write the same bytes in no fixed order: sync them"
    )),
    "GM_WRITE_CONFLICT": (ERROR, (
        "two cores write the same GM bytes without ordering: split the output "
        "between blocks, use atomic add, or sync_all"
    )),
    "GM_RACE_RAW": (ERROR, (
        "the GM read is not ordered after another core's write: order them with "
        "cross-core sync or sync_all"
    )),
    "GM_RACE_WAR": (ERROR, (
        "the GM write can land before another core has read the old data: order "
        "them with cross-core sync or sync_all"
    )),
    "UNINITIALIZED_READ": (WARNING, (
        "the bytes were never written: load or fill the tile first (or shrink "
        "its valid shape)"
    )),
    "DOUBLE_SET_FLAG": (ERROR, (
        "a flag is one bit: each sync_src needs its sync_dst before the next "
        "set of the same (set_pipe, wait_pipe, id)"
    )),
    "UNPAIRED_SET_FLAG": (ERROR, (
        "every sync_src needs a matching sync_dst (same pipes and id) before "
        "the kernel ends"
    )),
    "UNPAIRED_WAIT_FLAG": (ERROR, (
        "this wait has no matching set (same pipes and id): the kernel hangs on "
        "hardware"
    )),
    "MUTEX_UNLOCK_BEFORE_LOCK": (ERROR, (
        "mutex_unlock needs a mutex_lock of the same id on the same pipe before "
        "it"
    )),
    "UNPAIRED_MUTEX_LOCK": (ERROR, (
        "every mutex_lock needs a mutex_unlock of the same id on the same pipe"
    )),
    "MUTEX_DOUBLE_LOCK": (ERROR, (
        "a second lock of an id the same pipe holds hangs the hardware: unlock "
        "it first"
    )),
    "CROSS_CORE_UNPAIRED": (ERROR, (
        "every set_cross_core needs a wait_cross_core that consumes it: the "
        "counter must be zero at kernel end"
    )),
    "CROSS_CORE_WAIT_WITHOUT_SET": (ERROR, (
        "nobody sets this cross-core id: the waiting core hangs"
    )),
    "DEADLOCK": (ERROR, (
        "a barrier or sync_all that some core can never reach"
    )),
}


@dataclass(frozen=True)
class Site:
    """Where an instruction ran: source location, core, pipe, cycle, IR op."""

    file: str = ""
    line: int = 0
    core: str = ""  # label, e.g. "block 0 AIV"
    core_id: int = -1  # the Trace's `core` column
    block: int = -1
    pipe: str = ""
    cycle: int = -1  # start cycle (the Trace's `start`)
    op: str = ""

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.line else (self.file or "?")

    @property
    def short(self) -> str:
        name = self.file.rsplit("/", 1)[-1]
        return f"{name}:{self.line}" if self.line else "?"


@dataclass
class Finding:
    """One bug found by the sanitizer (`count`: hits collapsed into it)."""

    kind: str
    message: str
    site: Site
    other: Site | None = None
    severity: str = ""
    hint: str = ""
    count: int = 1

    def __post_init__(self) -> None:
        severity, hint = KINDS.get(self.kind, (ERROR, ""))
        self.severity = self.severity or severity
        self.hint = self.hint or hint

    @property
    def file(self) -> str:
        return self.site.file

    @property
    def line(self) -> int:
        return self.site.line

    @property
    def lines(self) -> tuple[int, ...]:
        """Every source line involved (the other instruction's too)."""
        other = (self.other.line,) if self.other and self.other.line else ()
        return (self.line, *other)

    def key(self) -> tuple:
        """Findings with the same key are one issue (hits collapse into `count`)."""
        other = (self.other.file, self.other.line) if self.other else ()
        return (self.kind, self.site.file, self.site.line, other)


@dataclass
class SanitizerReport:
    """The findings of one sanitized launch, duplicates collapsed, in discovery order."""

    kernel: str = ""
    findings: list[Finding] = field(default_factory=list)
    _index: dict[tuple, int] = field(default_factory=dict, repr=False)

    def add(self, finding: Finding) -> None:
        k = finding.key()
        i = self._index.get(k)
        if i is None:
            self._index[k] = len(self.findings)
            self.findings.append(finding)
        else:
            self.findings[i].count += finding.count

    def __len__(self) -> int:
        return len(self.findings)

    def __iter__(self):
        return iter(self.findings)

    def kinds(self) -> list[str]:
        return [f.kind for f in self.findings]

    def text(self) -> str:
        """The report exactly as the real sanitizer prints it."""
        n = len(self.findings)
        out = [f"PyPTO Sanitizer: {n} issue(s) detected"]
        for i, f in enumerate(self.findings, 1):
            hits = f" ({f.count} hits)" if f.count > 1 else ""
            out.append(f"[{i}/{n}] {f.kind}: {f.message}{hits} at {f.site.where}")
            if f.hint:
                out.append(f"Hint: {f.hint}")
        return "\n".join(out) + "\n"

    def to_frame(self) -> Any:
        """One row per finding (pandas), with both sites' core, pipe and start cycle."""
        import pandas as pd

        rows = []
        for f in self.findings:
            o = f.other or Site()
            rows.append({"kind": f.kind, "severity": f.severity, "message": f.message,
                         "file": f.file, "line": f.line, "core": f.site.core_id,
                         "block": f.site.block, "pipe": f.site.pipe, "start": f.site.cycle,
                         "other_line": o.line, "other_core": o.core_id, "other_pipe": o.pipe,
                         "other_start": o.cycle, "count": f.count, "hint": f.hint})
        return pd.DataFrame(rows, columns=[
            "kind", "severity", "message", "file", "line", "core", "block", "pipe", "start",
            "other_line", "other_core", "other_pipe", "other_start", "count", "hint"])

    def __repr__(self) -> str:
        return f"<SanitizerReport {self.kernel!r}: {len(self.findings)} issue(s)>"


def with_site(finding: Finding, **changes: Any) -> Finding:
    return replace(finding, site=replace(finding.site, **changes))
