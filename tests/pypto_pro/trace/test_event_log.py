"""The EventLog's row storage and the Trace built from it on first use (issue 9: a launch must
not pay for a DataFrame nobody looks at), plus the simulator writing rows in schema order."""
from __future__ import annotations

import pytest
import torch

from pypto_pro.examples import load
from pypto_pro.runtime.backends import use_backend
from pypto_pro.trace import COLUMNS, EventLog, Trace, TraceMeta
from pypto_pro.trace.events import KINDS, PIPES

META = TraceMeta(kernel="k", backend="sim", soc="Ascend950PR_9589", clock_mhz=1000.0,
                 block_dim=1, kernel_type="aiv")


def test_rows_transpose_to_columns_with_defaults() -> None:
    log = EventLog()
    log.add(kind="instr", pipe="V", start=3, end=9)
    log.add(launch=2, kind="sync", flow_id=7, flow_role="set")
    cols = log.columns
    assert list(cols) == list(COLUMNS)
    assert cols["start"] == [3, 0] and cols["end"] == [9, 0]
    assert cols["flow_id"] == [-1, 7] and cols["flow_role"] == ["", "set"]
    assert log.launches() == {0, 2} and len(log) == 2
    assert EventLog().columns == {name: [] for name in COLUMNS}


def test_rows_handed_over_later_are_made_once_when_first_read() -> None:
    """The stream engine hands over its rows' maker: a launch nobody looks at never makes them."""
    made = []

    def rows() -> list[tuple]:
        made.append(1)
        return [tuple(0 if typ is int else "" for typ, _ in COLUMNS.values())]

    log = EventLog()
    log.add(kind="instr", start=1, end=2)
    log.later(rows)
    assert made == []
    assert len(log) == 2 and log.columns["kind"] == ["instr", ""] and made == [1]
    assert len(log.rows) == 2 and made == [1]


def test_a_stream_engine_launch_makes_its_trace_rows_when_read(monkeypatch) -> None:
    from pypto_pro.sim import settings
    from pypto_pro.sim.fast import replay

    monkeypatch.setenv(settings.ENGINE, "native")
    ex = load("vector_add")
    x, y, z = ex.make_inputs(128, 256, seed=0)
    with use_backend("sim"):
        ex.add_kernel[None, 2](x, y, z)
    trace = ex.add_kernel.last_trace
    assert "stream engine" in dict(trace.meta.extra)["path"]
    pending = trace._log._later
    assert len(pending) == 1 and isinstance(pending[0].__self__, replay.TraceRows)
    assert (trace.events["kind"] == "instr").sum() == 2 * 4  # two loads, an add, a store
    assert not pending


def test_unknown_column_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"unknown event columns \['colour'\]"):
        EventLog().add(kind="instr", colour="red")


def test_trace_of_a_log_builds_its_frame_on_first_use() -> None:
    log = EventLog()
    log.add(launch=1, kind="instr", start=5, end=2)  # bad row: only the frame checks it
    trace = Trace(log, META)
    assert sorted(trace.launch_metas) == [1] and trace.meta is META
    with pytest.raises(ValueError, match="end before they start"):
        _ = trace.events


def test_trace_of_a_log_matches_the_same_rows_as_a_frame() -> None:
    log = EventLog()
    for i in range(4):
        log.add(core=i % 2, core_kind="AIV", pipe="MTE2", kind="instr", op="TLOAD",
                start=10 * i, end=10 * i + 5, bytes=64)
    lazy = Trace(log, META)
    eager = Trace(lazy.events.copy(), META)
    assert lazy.duration_cycles == eager.duration_cycles == 35
    assert lazy.events.equals(eager.events)


def test_simulator_rows_follow_the_schema_order() -> None:
    m = load("vector_add")
    x, y, z = m.make_inputs(128, 256, seed=0)
    with use_backend("sim"):
        m.add_kernel[None, 1](x, y, z)
    events = m.add_kernel.last_trace.events
    assert torch.equal(z, x + y)
    assert set(events["core_kind"]) == {"AIV"} and set(events["launch"]) == {0}
    assert set(events["pipe"]) <= set(PIPES) and set(events["kind"]) <= KINDS
    assert set(events["flow_role"]) <= {"", "set", "wait"}
    assert events["file"].str.endswith("vector_add.py").all() and (events["line"] > 0).all()
    instr = events[events["kind"] == "instr"]
    assert set(instr["op"]) == {"TLOAD", "TADD", "TSTORE"}
    assert (instr.loc[instr["op"] == "TADD", "bytes"] > 0).all()


def test_a_maker_may_hand_over_columns_kept_in_order_with_rows() -> None:
    """A column block (the stream engine's) is taken as it is by `columns`; rows added before
    and after it keep their places, and `rows` still gives every row as a tuple."""
    import numpy as np

    block = {name: np.array([7, 8]) if typ is int else np.array(["a", "b"], dtype=object)
             for name, (typ, _) in COLUMNS.items()}
    log = EventLog()
    log.add(kind="instr", start=1, end=2)
    log.later(lambda: block)
    log.later(lambda: {})  # a launch with no rows
    assert len(log) == 3 and log.launches() == {0, 7, 8}
    assert log.columns["start"] == [1, 7, 8] and log.columns["kind"] == ["instr", "a", "b"]
    only = EventLog()
    only.later(lambda: block)
    assert only.columns["start"] is block["start"]  # (no copy, no row tuples)
    log.add(kind="sync", start=3, end=3)
    rows = log.rows
    assert [r[COLUMNS_INDEX["start"]] for r in rows] == [1, 7, 8, 3]
    assert rows[1][COLUMNS_INDEX["kind"]] == "a" and len(log) == 4


COLUMNS_INDEX = {name: i for i, name in enumerate(COLUMNS)}
