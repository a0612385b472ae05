"""Trace construction, the events table's schema, durations, concatenation, line lookup, reprs
and importing without pandas."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pypto_pro.trace import COLUMNS, EventLog, Trace, TraceMeta

ROOT = Path(__file__).resolve().parents[3]
META = TraceMeta(kernel="k", backend="sim", soc="Ascend950PR_9589", clock_mhz=1000.0,
                 block_dim=2, kernel_type="aiv")


def test_events_have_exactly_the_schema_columns_and_dtypes(two_block: Trace) -> None:
    events = two_block.events
    assert list(events.columns) == list(COLUMNS)
    for name, (typ, _) in COLUMNS.items():
        if typ is int:
            assert events[name].dtype == np.int64, name
        else:
            assert isinstance(events[name].dtype, pd.CategoricalDtype), name
    assert len(events) == 16
    assert events["flow_id"].tolist().count(-1) == 12  # EventLog default for rows without flow


def test_duration_is_instruction_span(two_block: Trace) -> None:
    # first instruction starts at 0 (block 0 load), last ends at 380 (block 1 store)
    assert two_block.duration_cycles == 380
    assert two_block.duration_us == pytest.approx(0.380)


def test_dataframe_input_round_trips(two_block: Trace) -> None:
    plain = two_block.events.astype({c: object for c, (t, _) in COLUMNS.items() if t is str})
    again = Trace(plain.assign(extra=1), two_block.meta)
    pd.testing.assert_frame_equal(again.events, two_block.events)


@pytest.mark.parametrize("change, message", [
    (lambda f: f.drop(columns="pipe"), "missing schema columns"),
    (lambda f: f.assign(end=f["start"] - 1), "end before they start"),
    (lambda f: f.assign(kind="busy"), "unknown event kinds"),
    (lambda f: f.assign(line="twelve"), "must hold integers"),
])
def test_bad_events_are_rejected(two_block: Trace, change, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Trace(change(two_block.events.copy()), two_block.meta)


def test_empty_trace_has_zero_duration() -> None:
    trace = Trace(EventLog(), META)
    assert trace.duration_cycles == 0 and trace.duration_us == 0.0
    assert trace.pipe_utilization().empty and trace.block_detail().empty
    assert "0 events" in repr(trace)


def test_concat_renumbers_clashing_launches_and_sums_durations(two_block: Trace) -> None:
    both = Trace.concat([two_block, two_block])
    assert sorted(both.launch_metas) == [0, 1]
    assert [m.launch for m in both.launch_metas.values()] == [0, 1]
    assert both.duration_cycles == 2 * 380
    launches = both.launches()
    # launch 1 starts on the wall timeline where launch 0's last event ended (cycle 380)
    assert launches.loc[1, "offset_us"] == pytest.approx(0.380)
    assert len(both.block_detail()) == 4


def test_concat_keeps_distinct_launch_numbers(two_block: Trace) -> None:
    later = Trace(two_block.events.assign(launch=7), two_block.meta)
    both = Trace.concat([two_block, later])
    assert sorted(both.launch_metas) == [0, 7]
    assert set(both.events["launch"]) == {0, 7}


def test_for_line_matches_full_path_or_base_name(two_block: Trace) -> None:
    by_name = two_block.for_line("kern.py", 11)
    by_path = two_block.for_line("/src/kern.py", 11)
    pd.testing.assert_frame_equal(by_name, by_path)
    assert sorted(by_name["op"].astype(str).unique()) == ["TADD", "wait_flag"]
    assert len(by_name) == 6 and (by_name["line"] == 11).all()
    assert by_name["start"].is_monotonic_increasing
    assert two_block.for_line("other.py", 11).empty


def test_source_lines_rank_lines_by_instruction_cycles(two_block: Trace) -> None:
    lines = two_block.source_lines()
    assert lines[["line", "instructions", "cycles"]].values.tolist() == [
        [10, 4, 350], [11, 2, 200], [12, 2, 200]]


def test_summary_and_reprs(two_block: Trace) -> None:
    text = two_block.summary()
    assert "k [aiv, block_dim 2] on Ascend950PR_9589 via sim" in text
    assert "380 cycles = 0.380 us" in text and "1 wave(s)" in text
    assert "AIV x2 busy: MTE2 39%  V 26%  MTE3 26%" in text
    assert "stalls: flag 298 cycles" in text
    assert "hot lines: kern.py:10 (350 cycles)" in text
    assert repr(two_block).startswith("<Trace k [aiv] on Ascend950PR_9589 via sim: 1 launch, "
                                      "2 blocks, 16 events, 380 cycles")
    page = two_block._repr_html_()
    assert "<table" in page and "<script" not in page and "MTE2" in page


def test_package_imports_without_pandas(tmp_path: Path) -> None:
    blocker = tmp_path / "pandas"
    blocker.mkdir()
    (blocker / "__init__.py").write_text('raise ModuleNotFoundError("pandas blocked")\n')
    script = (
        "import pypto_pro, pypto_pro.trace as t\n"
        "from pypto_pro.trace.export import to_chrome_json\n"
        "log = t.EventLog(); log.add(kind='instr', start=0, end=1)\n"
        "meta = t.TraceMeta('k', 'sim', 'soc', 1000.0, 1, 'aiv')\n"
        "trace = t.Trace(log, meta)  # a launch's Trace: pandas only when it is read\n"
        "try:\n"
        "    trace.events\n"
        "except ModuleNotFoundError as e:\n"
        "    print('needs:', e)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "needs: pypto_pro.trace.Trace needs pandas" in done.stdout
    assert "pypto-pro-workbench[lab]" in done.stdout


def test_launch_metas_must_cover_every_launch(two_block: Trace) -> None:
    with pytest.raises(ValueError, match=r"no TraceMeta for launches \[0\]"):
        Trace(two_block.events, two_block.meta, launch_metas={5: two_block.meta})
