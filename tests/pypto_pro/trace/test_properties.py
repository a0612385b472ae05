"""Properties over random interval sets: busy cycles equal a brute-force union, busy ratios stay
in [0, 1], and overflow lanes never hold partly overlapping events."""
from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from pypto_pro.trace import EventLog, Trace, TraceMeta
from pypto_pro.trace.export.layout import MAX_LEVELS, lane_levels
from pypto_pro.trace.summary import interval_union

META = TraceMeta(kernel="k", backend="sim", soc="soc", clock_mhz=1650.0, block_dim=3,
                 kernel_type="aiv")

intervals = st.lists(
    st.tuples(st.integers(0, 2), st.sampled_from(["MTE2", "V"]), st.integers(0, 200),
              st.integers(0, 60)),
    min_size=1, max_size=40)


def _trace(rows: list[tuple[int, str, int, int]]) -> Trace:
    log = EventLog()
    for core, pipe, start, length in rows:
        log.add(core=core, block=core, core_kind="AIV", pipe=pipe, kind="instr", start=start,
                end=start + length)
    return Trace(log, META)


@settings(max_examples=50, deadline=None)
@given(intervals)
def test_busy_is_the_union_of_intervals_and_fits_the_span(rows) -> None:
    frame = pd.DataFrame([(c, p, s, s + n) for c, p, s, n in rows],
                         columns=["core", "pipe", "start", "end"])
    frame["pipe"] = frame["pipe"].astype("category")  # as in a Trace's events
    union = interval_union(frame, ["core", "pipe"])
    assert len(union) == len(frame.groupby(["core", "pipe"]))
    for core, pipe, busy in zip(union["core"], union["pipe"], union["busy"]):
        mine = frame[(frame["core"] == core) & (frame["pipe"] == pipe)]
        covered = set()
        for start, end in zip(mine["start"], mine["end"]):
            covered.update(range(start, end))
        assert busy == len(covered)
        assert 0 <= busy <= mine["end"].max() - mine["start"].min()


@settings(max_examples=20, deadline=None)
@given(intervals)
def test_busy_ratios_stay_in_unit_interval(rows) -> None:
    trace = _trace(rows)
    util = trace.pipe_utilization()
    assert ((util["ratio"] >= 0) & (util["ratio"] <= 1)).all()
    assert ((util["max_core_ratio"] >= 0) & (util["max_core_ratio"] <= 1)).all()
    assert (util["busy_cycles"] <= util["cores"] * trace.duration_cycles).all()
    ratios = trace.block_detail().filter(like="_ratio")
    assert ((ratios >= 0) & (ratios <= 1)).all().all()


@settings(max_examples=60, deadline=None)
@given(intervals)
def test_lanes_hold_no_overlapping_events(rows) -> None:
    group = np.array([core * 2 + (pipe == "V") for core, pipe, _, _ in rows])
    start = np.array([s for _, _, s, _ in rows])
    end = start + np.array([n for _, _, _, n in rows])
    level = lane_levels(group, start, end)
    assert ((level >= 0) & (level < MAX_LEVELS)).all()
    for lane in set(zip(group.tolist(), level.tolist())):
        pick = (group == lane[0]) & (level == lane[1]) & (end > start)
        spans = sorted(zip(start[pick].tolist(), end[pick].tolist()))
        if lane[1] < MAX_LEVELS - 1:
            assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(spans, spans[1:]))
