"""`Trace`: what every pipe of every core did and when, for one launch or several.

Owns the Trace object every backend returns (DESIGN §5 "Trace"): the events DataFrame in the
schema's columns and dtypes, the `TraceMeta` of each launch, and the views users call
(`block_detail`, `mix_block_detail`, `pipe_utilization`, `stalls`, `waves`, `for_line`,
`summary`, `roofline`, rich reprs). The views live in `summary` and `roofline`, imported when
first used so that importing this module needs no pandas. Times are cycles from each launch's
start; a concatenation keeps one time base per launch and lays launches back to back only on
wall timelines (`launches()["offset_us"]`).
"""
from __future__ import annotations

import dataclasses
import html
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from .events import require_pandas, to_frame
from .schema import EventLog, TraceMeta

if TYPE_CHECKING:
    import pandas as pd

    from .events import EventSource
    from .findings import SanitizerReport
    from .roofline import Roofline


class Trace:
    """Events of one or more launches plus what they were measured on."""

    def __init__(self, events: EventSource, meta: TraceMeta, *,
                 launch_metas: Mapping[int, TraceMeta] | None = None) -> None:
        # An EventLog (what a backend records) becomes the DataFrame on first use: building
        # it (and importing pandas, half a second in a new process) costs more than a small
        # launch, and many launches are never looked at. Its rows are checked then, and the
        # launch numbers in them read when first needed (with no `launch_metas` none can
        # lack a TraceMeta); a DataFrame from a user is checked here.
        self._frame: pd.DataFrame | None = None
        self._log: EventLog | None = None
        self._meta = meta
        self._given_metas = launch_metas
        self._known_metas: dict[int, TraceMeta] | None = None
        if isinstance(events, EventLog):
            self._log = events
            if launch_metas is not None:
                self._known_metas = self._launch_metas(events.launches())
        else:
            self._frame = to_frame(events)
            self._known_metas = self._launch_metas(_launch_numbers(self._frame))
        self._launches: pd.DataFrame | None = None
        self._memo: dict[str, pd.DataFrame] = {}  # views already computed (`_view`)
        #: the sanitizer's report when the launch ran sanitized (the backend sets it)
        self.sanitizer: SanitizerReport | None = None

    def _launch_metas(self, present: Iterable[int]) -> dict[int, TraceMeta]:
        """Launch number → TraceMeta for the launch numbers `present` in the events."""
        present = sorted(present)
        if self._given_metas is None:
            return {k: self._meta for k in present} or {self._meta.launch: self._meta}
        missing = sorted(set(present) - set(self._given_metas))
        if missing:
            raise ValueError(f"no TraceMeta for launches {missing}")
        return dict(self._given_metas)

    @property
    def _metas(self) -> dict[int, TraceMeta]:
        if self._known_metas is None:
            present = self._log.launches() if self._log is not None else \
                _launch_numbers(self._frame)
            self._known_metas = self._launch_metas(present)
        return self._known_metas

    @classmethod
    def concat(cls, traces: Sequence[Trace]) -> Trace:
        """One Trace of several launches, in order. Launch numbers are kept when they are
        distinct across `traces`, else renumbered 0, 1, ... in order."""
        if not traces:
            raise ValueError("Trace.concat needs at least one Trace")
        pd = require_pandas()
        numbers = [k for t in traces for k in sorted(t._metas)]
        if len(set(numbers)) != len(numbers):
            numbers = list(range(len(numbers)))
        numbering = iter(numbers)
        frames, metas = [], {}
        for trace in traces:
            mine = {k: next(numbering) for k in sorted(trace._metas)}
            frames.append(trace._events.assign(launch=trace._events["launch"].map(mine)))
            metas.update({n: dataclasses.replace(trace._metas[k], launch=n)
                          for k, n in mine.items()})
        events = pd.concat(frames, ignore_index=True)
        return cls(events, metas[min(metas)], launch_metas=metas)

    # -- data ------------------------------------------------------------------------------
    @property
    def _events(self) -> pd.DataFrame:
        if self._frame is None:
            self._frame = to_frame(self._log)
            self._log = None
        return self._frame

    @property
    def events(self) -> pd.DataFrame:
        """All events, one row each, in the schema's columns (treat as read-only)."""
        return self._events

    @property
    def meta(self) -> TraceMeta:
        """What the (first) launch was measured on."""
        return self._meta

    @property
    def findings(self) -> pd.DataFrame:
        """Sanitizer findings, one row each (`SanitizerReport.to_frame()` plus `launch`): the
        `core`/`pipe`/`start` and `other_*` columns name the events involved. Empty when the
        launch was not sanitized."""
        from .findings import SanitizerReport

        return (self.sanitizer or SanitizerReport()).to_frame().assign(launch=self._meta.launch)

    @property
    def launch_metas(self) -> dict[int, TraceMeta]:
        """TraceMeta of every launch, by launch number."""
        return dict(self._metas)

    def launches(self) -> pd.DataFrame:
        """One row per launch: kernel, clock, instruction span, µs and wall-timeline offset."""
        if self._launches is None:
            self._launches = _views().launch_table(self._events, self._metas)
        return self._launches

    @property
    def duration_cycles(self) -> int:
        """Max end − min start over instruction events (summed over launches)."""
        return int(self.launches()["cycles"].sum())

    @property
    def duration_us(self) -> float:
        """`duration_cycles` in microseconds at each launch's clock."""
        return float(self.launches()["us"].sum())

    # -- views -----------------------------------------------------------------------------
    def _view(self, name: str, make: Callable[[], pd.DataFrame]) -> pd.DataFrame:
        """View `name`, computed once (the events never change once built: a summary, the
        workbench's tables and its text all read the same few views); each caller gets its
        own copy to change."""
        if name not in self._memo:
            self._memo[name] = make()
        return self._memo[name].copy()

    def block_detail(self) -> pd.DataFrame:
        """msprof-style per-block rows: one per core instance, span and per-pipe busy cycles."""
        return self._view("block_detail",
                          lambda: _views().block_detail(self._events, self.launches()))

    def mix_block_detail(self) -> pd.DataFrame:
        """Mix kernels: one row per block with AIC, AIV0 and AIV1 durations side by side."""
        return _views().mix_block_detail(self._events, self.launches())

    def pipe_utilization(self) -> pd.DataFrame:
        """Per core kind and pipe: busy cycles over all cores and ratio of their capacity."""
        return self._view("pipe_utilization",
                          lambda: _views().pipe_utilization(self._events, self.launches()))

    def stalls(self) -> pd.DataFrame:
        """Stall count and cycles by launch, core and stall reason."""
        return self._view("stalls", lambda: _views().stalls(self._events, self.launches()))

    def waves(self) -> pd.DataFrame:
        """The wave each block ran in, with its span."""
        return self._view("waves", lambda: _views().waves(self._events))

    def overlap(self, pipe_a: str, pipe_b: str, by: str = "core") -> pd.DataFrame:
        """Per launch and core: cycles and µs in which pipes `pipe_a` and `pipe_b` (e.g.
        "MTE2", "V") were both busy (their instructions overlapped in time); `by="block"`
        counts the pipes of all cores of a block (a mix kernel's AIC M against its AIVs' V)."""
        return _views().overlap(self._events, self.launches(), pipe_a, pipe_b, by)

    def for_line(self, file: str, line: int) -> pd.DataFrame:
        """Events of one kernel source line (`file` may be a base name)."""
        return _views().for_line(self._events, file, line)

    def source_lines(self) -> pd.DataFrame:
        """Instructions and instruction cycles per source line, busiest first."""
        return self._view("source_lines", lambda: _views().source_lines(self._events))

    def roofline(self, soc_peaks: Mapping[str, float] | None = None) -> Roofline:
        """Achieved HBM bytes/s and FLOP/s against `soc_peaks` (`hbm_bytes_per_s`,
        `cube_flops_per_s`, `vector_flops_per_s`; default: the peaks of the Trace's SoC
        table), spec §7."""
        from .roofline import roofline
        from .roofline import soc_peaks as peaks_of

        peaks = soc_peaks if soc_peaks is not None else peaks_of(self._meta.soc)
        return roofline(self._events, self._meta, self.duration_us * 1e-6, peaks)

    def summary(self, where: Callable[[str, int], str] | None = None) -> str:
        """A short text summary for terminals; `where(file, line)` names a source line (e.g.
        "Cell In[5], line 15"; by default "<file name>:<line>")."""
        return _views().summary_text(self._meta, self._events, self.launches(), where, self)

    # -- reprs -----------------------------------------------------------------------------
    def _headline(self) -> str:
        m = self._meta
        n = len(self._metas)
        blocks = self._events["block"].nunique()
        kernels = dict.fromkeys(f"{k.kernel} [{k.kernel_type}]" for k in self._metas.values())
        return (f"{', '.join(kernels) or m.kernel} on {m.soc} via {m.backend}: "
                f"{n} launch{'es' if n > 1 else ''}, {blocks} blocks, {len(self._events):,} "
                f"events, {self.duration_cycles:,} cycles = {self.duration_us:.3f} us")

    def __repr__(self) -> str:
        return f"<Trace {self._headline()}>"

    def _repr_html_(self) -> str:
        table = self.pipe_utilization().to_html(index=False, float_format="{:.3f}".format)
        return (f"<div class='pypto-trace'><p><b>Trace</b> {html.escape(self._headline())}</p>"
                f"{table}</div>")


def _launch_numbers(frame: pd.DataFrame) -> list[int]:
    return [int(k) for k in frame["launch"].unique()]


def _views():
    from . import summary

    return summary
