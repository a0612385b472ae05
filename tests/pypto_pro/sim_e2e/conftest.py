"""Fixtures for the end-to-end simulator tests: every launch runs on the timing simulator
(backend "sim", default SoC Ascend950PR_9589: 32 AIC + 64 AIV), and every Trace can be checked
against the invariants any simulated timeline must satisfy."""
from __future__ import annotations

import pandas as pd
import pytest

from pypto_pro.runtime import backends
from pypto_pro.sim import settings


@pytest.fixture(autouse=True)
def timing_sim(monkeypatch):
    """Launches in the test run on the default "sim" backend on the default SoC, and backends
    a test registers do not leak into other tests."""
    monkeypatch.delenv(settings.SOC, raising=False)
    monkeypatch.setattr(backends, "_factories", dict(backends._factories))
    monkeypatch.setattr(backends, "_instances", dict(backends._instances))
    with backends.use_backend("sim"):
        yield


def trace_invariants(trace) -> None:
    """Assert what every simulated Trace must satisfy.

    * every event ends at or after its start;
    * on one pipe of one core, executed instructions and sync events never overlap (in-order
      queues), so per-pipe busy time never exceeds the launch's wall time;
    * busy ratios (per pipe, per block) are within [0, 1];
    * every stall names its reason;
    * set/wait flows pair up: each flow id appears exactly once as 'set' and once as 'wait',
      on the same core, and the wait does not start before its set.
    """
    ev = trace.events
    assert len(ev) > 0
    assert (ev["end"] >= ev["start"]).all(), "an event ends before it starts"

    busy = ev[ev["kind"].isin(["instr", "sync"])].sort_values(
        ["launch", "core", "pipe", "start", "end"], kind="mergesort")
    for (_, core, pipe), g in busy.groupby(["launch", "core", "pipe"], observed=True):
        starts, ends = g["start"].to_numpy(), g["end"].to_numpy()
        assert (starts[1:] >= ends[:-1]).all(), f"core {core} pipe {pipe}: overlapping events"

    launches = trace.launches()
    util = trace.pipe_utilization()
    assert ((util["ratio"] >= 0) & (util["ratio"] <= 1)).all()
    assert (util["max_core_ratio"] <= 1).all()
    for launch, rows in util.groupby("launch"):
        cycles = int(launches.loc[launch, "cycles"])
        per_core = rows["busy_cycles"] / rows["cores"]
        assert (per_core <= cycles).all()
    detail = trace.block_detail()
    ratios = detail[[c for c in detail.columns if c.endswith("_ratio")]]
    assert ((ratios >= 0) & (ratios <= 1 + 1e-9)).all().all()
    cycles = detail[[c for c in detail.columns if c.endswith("_cycles") and c not in (
        "start_cycle", "end_cycle", "duration_cycles")]]
    assert cycles.le(detail["duration_cycles"], axis=0).all().all()

    stalls = ev[ev["kind"] == "stall"]
    assert (stalls["stall_reason"].astype(str) != "").all(), "a stall without a reason"

    flows = ev[ev["flow_id"] >= 0]
    roles = flows.groupby("flow_id")["flow_role"].agg(lambda r: tuple(sorted(map(str, r))))
    unpaired = roles[roles != ("set", "wait")]
    assert unpaired.empty, f"unpaired set/wait flows: {unpaired.to_dict()}"
    if not flows.empty:
        sets = flows[flows["flow_role"] == "set"].set_index("flow_id")
        waits = flows[flows["flow_role"] == "wait"].set_index("flow_id").loc[sets.index]
        assert (waits["start"] >= sets["start"]).all(), "a wait released before its set"
        assert (waits["core"] == sets["core"]).all(), "a flag crossed cores"


@pytest.fixture
def check_trace():
    return trace_invariants


def events_of(trace, **where) -> pd.DataFrame:
    ev = trace.events
    mask = pd.Series(True, index=ev.index)
    for column, value in where.items():
        mask &= ev[column].astype(str) == str(value) if not isinstance(value, int) else \
            ev[column] == value
    return ev[mask]


@pytest.fixture
def select():
    """`select(trace, kind="instr", pipe="V")`: the events matching every column value."""
    return events_of
