"""Hints for on-chip races whose cause is two buffers sharing bytes, not a missing sync.

A race between two instructions that reach the raced bytes through different buffers (two
tiles, two tile groups, or a tile and a group slot, as `passes.buffer_use` traces the kernel's
IR) is not fixed by a sync between their pipes: the buffers overlap. `OverlapHints` answers,
for the two source lines of a race and the bytes it touched, which two buffers those lines use
that overlap there, and words the hint that names both (ranges and lines).
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..passes.buffer_use import Owner, line_owners


class OverlapHints:
    """The buffers each source line of a kernel's programs uses (built on first question)."""

    def __init__(self, programs: Iterable[Any]) -> None:
        self._programs = list(programs)
        self._lines: dict[int, list[tuple[Owner, int | None]]] | None = None

    def _by_line(self) -> dict[int, list[tuple[Owner, int | None]]]:
        if self._lines is None:
            self._lines = {}
            for program in self._programs:
                for line, owners in line_owners(program).items():
                    self._lines.setdefault(line, []).extend(owners)
        return self._lines

    def for_race(self, early: int, late: int, extent: tuple[int, int]) -> str | None:
        """The hint for a race between lines `early` and `late` on bytes [extent), or None
        when both lines reach those bytes through the same buffer."""
        lines = self._by_line()
        lo, hi = extent
        for a, sa in lines.get(early, ()):
            for b, sb in lines.get(late, ()):
                if a is b or a.space is not b.space:
                    continue
                for ia in _slots(a, sa):
                    for ib in _slots(b, sb):
                        (alo, ahi), (blo, bhi) = a.ranges[ia], b.ranges[ib]
                        start, end = max(alo, blo, lo), min(ahi, bhi, hi)
                        if start < end:
                            return (f"line {early} uses {_where(a, ia)} and line {late} uses "
                                    f"{_where(b, ib)}: two buffers that share bytes "
                                    f"[{start:#x}, {end:#x}), so a sync would only hide the "
                                    f"clash; give {b.name} its own address range")
        return None


def _slots(owner: Owner, slot: int | None) -> range:
    return range(len(owner.ranges)) if slot is None else range(slot, slot + 1)


def _where(owner: Owner, index: int) -> str:
    return owner.where(index if owner.kind == "group" else None)
