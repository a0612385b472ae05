"""Placing a Trace's events on a wall timeline: microsecond times, lanes and labels.

Owns what the Chrome and msprof exporters share: `times_us` (cycles at each launch's clock, with
launches laid back to back), `lane_levels` (events that overlap an earlier event of their lane
move to overflow lanes, because Chrome-format viewers cannot draw partly overlapping complete
events on one thread), `flow_pairs` (the set → wait pairs sharing a `flow_id`) and `labels` (text
built once per distinct combination of columns, not per event). Vectorised with numpy; must not
import the views.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

    from ..trace import Trace

#: lanes per pipe: events still overlapping after this many go to the last lane together
MAX_LEVELS = 16


def times_us(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """(ts, dur) of every event in microseconds on the wall timeline, rounded to 1 ps. The
    duration is taken between the rounded ends, so back-to-back events stay back to back."""
    events, launches = trace.events, trace.launches()
    clock = events["launch"].map(launches["clock_mhz"]).to_numpy(dtype=float)
    offset = events["launch"].map(launches["offset_us"]).to_numpy(dtype=float)
    ts = np.round(events["start"].to_numpy() / clock + offset, 6)
    end = np.round(events["end"].to_numpy() / clock + offset, 6)
    return ts, np.round(end - ts, 6)


def lane_levels(group: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Lane level per event: 0 unless it overlaps an earlier event of its `group` (a lane key),
    then the first level where it starts after every earlier event there has ended.
    Zero-length events always stay on level 0 (inside a slice they nest, which viewers draw)."""
    level = np.full(len(group), MAX_LEVELS - 1, dtype=np.int64)
    if not len(group):
        return level
    origin = int(start.min())
    span = int(end.max()) - origin + 1
    todo = np.lexsort((-end, start, group))  # by lane, then start, longer first
    for k in range(MAX_LEVELS - 1):
        if not todo.size:
            break
        g = group[todo]
        first = np.ones(todo.size, dtype=bool)
        first[1:] = g[1:] != g[:-1]
        base = np.cumsum(first) * span  # lanes never mix in the running maximum below
        reach = np.maximum.accumulate(end[todo] - origin + base)
        keep = first | (start[todo] == end[todo])
        keep[1:] |= start[todo][1:] - origin + base[1:] >= reach[:-1]
        level[todo[keep]] = k
        todo = todo[~keep]
    return level


def flow_pairs(events: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(flow_id, row of the set, row of the wait) for every id with both ends; when an id
    repeats, its earliest set and earliest wait."""
    ids = events["flow_id"].to_numpy()
    role = events["flow_role"].astype(str).to_numpy()
    start = events["start"].to_numpy()
    ends = []
    for which in ("set", "wait"):
        rows = np.flatnonzero((ids >= 0) & (role == which))
        rows = rows[np.lexsort((start[rows], ids[rows]))]
        first = np.ones(rows.size, dtype=bool)
        first[1:] = ids[rows][1:] != ids[rows][:-1]
        ends.append(rows[first])
    both, set_at, wait_at = np.intersect1d(ids[ends[0]], ids[ends[1]], return_indices=True)
    return both, ends[0][set_at], ends[1][wait_at]


def text(column: pd.Series) -> np.ndarray:
    """A categorical column of the events table as an object array of str."""
    categories = np.array([str(c) for c in column.cat.categories], dtype=object)
    return categories[column.cat.codes.to_numpy()]


def labels(frame: pd.DataFrame, columns: Sequence[str], fmt: Callable[..., Any]) -> np.ndarray:
    """`fmt(*values)` of every row's `columns`, computed once per distinct combination."""
    codes = frame.groupby(list(columns), observed=True, sort=False).ngroup().to_numpy()
    _, firsts = np.unique(codes, return_index=True)
    distinct = frame.iloc[firsts][list(columns)]
    values = [fmt(*row) for row in distinct.itertuples(index=False)]
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out[codes]
