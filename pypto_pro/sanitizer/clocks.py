"""Vector clocks for the happens-before analysis.

A thread is one pipe of one core instance, or its scalar unit (pipe S). A clock maps thread id →
the count of that thread's events known to have happened before; clocks are sparse dicts
because most threads only ever learn about the few others they synchronise with.
"""
from __future__ import annotations

Clock = dict[int, int]


def join(into: Clock, other: Clock) -> None:
    """`into` := pointwise max(into, other)."""
    for t, c in other.items():
        if into.get(t, 0) < c:
            into[t] = c


def ordered_before(tid: int, clock: int, now: Clock) -> bool:
    """Whether event `clock` of thread `tid` happened before the event whose clock is `now`."""
    return now.get(tid, 0) >= clock
