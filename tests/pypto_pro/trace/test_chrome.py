"""Chrome trace JSON: process and thread metadata, complete events in µs, flows, overflow lanes,
launches back to back, and the atomic file write."""
from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path

import pytest

from pypto_pro.trace import Trace, to_chrome_json
from pypto_pro.trace.export import atomic


def _meta_events(doc: dict, name: str) -> list[dict]:
    return [e for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == name]


def _lane_names(doc: dict) -> dict[tuple[int, int], str]:
    return {(e["pid"], e["tid"]): e["args"]["name"] for e in _meta_events(doc, "thread_name")}


def test_one_process_per_core_instance_sorted_by_block(mix: Trace) -> None:
    doc = to_chrome_json(mix)
    names = {e["pid"]: e["args"]["name"] for e in _meta_events(doc, "process_name")}
    assert [names[p] for p in sorted(names)] == [
        "block 0 AIC", "block 0 AIV0", "block 0 AIV1", "block 1 AIC", "block 1 AIV0",
        "block 1 AIV1"]
    labels = {e["pid"]: e["args"]["labels"] for e in _meta_events(doc, "process_labels")}
    assert labels[6] == "AIV core 3"
    assert doc["otherData"]["kernel_type"] == "mix"


def test_threads_are_pipes_in_stable_order(two_block: Trace, mix: Trace) -> None:
    lanes = _lane_names(to_chrome_json(two_block))
    block1 = [name for (pid, tid), name in sorted(lanes.items()) if pid == 2]
    assert block1 == ["MTE2", "V", "MTE3"]
    block0 = [name for (pid, tid), name in sorted(lanes.items()) if pid == 1]
    assert block0 == ["MTE2", "MTE2 #2", "V", "MTE3"]  # the overlapping load overflows
    aic = [name for (pid, tid), name in sorted(_lane_names(to_chrome_json(mix)).items())
           if pid == 1]
    assert aic == ["M", "FIX"]


def test_complete_events_in_microseconds(two_block: Trace) -> None:
    doc = to_chrome_json(two_block)
    complete = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert len(complete) == len(two_block.events) == 16
    assert {e["cat"] for e in complete} == {"instr", "stall", "sync"}
    load = next(e for e in complete if e["name"] == "TLOAD" and e["pid"] == 2)
    assert (load["ts"], load["dur"]) == (pytest.approx(0.02), pytest.approx(0.1))
    assert load["args"] == {"ir_op": "block.load", "source": "/src/kern.py:10", "bytes": 4096,
                            "flops": 0, "sync_ids": ""}
    stalls = [e for e in complete if e["cat"] == "stall"]
    assert {e["name"] for e in stalls} == {"stall: flag"} and len(stalls) == 4
    timed = [e["ts"] for e in doc["traceEvents"] if e["ph"] != "M"]
    assert timed == sorted(timed)
    assert doc["displayTimeUnit"] == "ns"


def _nested(spans: list[tuple[float, float]]) -> bool:
    """True when any two spans are disjoint or one contains the other."""
    stack: list[float] = []
    for start, end in sorted(spans, key=lambda s: (s[0], -s[1])):
        while stack and stack[-1] <= start:
            stack.pop()
        if stack and end > stack[-1]:
            return False
        stack.append(end)
    return True


def test_no_partial_overlap_within_a_lane(two_block: Trace, mix: Trace) -> None:
    for trace in (two_block, mix):
        lanes = defaultdict(list)
        for e in to_chrome_json(trace)["traceEvents"]:
            if e["ph"] == "X":
                lanes[e["pid"], e["tid"]].append((e["ts"], round(e["ts"] + e["dur"], 6)))
        assert all(_nested(spans) for spans in lanes.values())
    assert not _nested([(0, 10), (5, 15)]) and _nested([(0, 10), (5, 5), (10, 12)])


def test_set_wait_flows_pair_by_id(two_block: Trace, mix: Trace) -> None:
    for trace, ids in ((two_block, {0, 1}), (mix, {10, 11})):
        doc = to_chrome_json(trace)
        flows = [e for e in doc["traceEvents"] if e["ph"] in ("s", "f")]
        by_id = defaultdict(dict)
        for e in flows:
            by_id[e["id"]][e["ph"]] = e
        assert set(by_id) == ids
        lanes = _lane_names(doc)
        for pair in by_id.values():
            start, finish = pair["s"], pair["f"]
            assert finish["bp"] == "e" and start["ts"] <= finish["ts"]
            assert start["name"] == finish["name"] and start["cat"] == finish["cat"] == "flow"
            assert (start["pid"], start["tid"]) in lanes and (finish["pid"], finish["tid"]) in lanes
    mix_flows = [e for e in doc["traceEvents"] if e["ph"] in ("s", "f")]
    assert {lanes[e["pid"], e["tid"]] for e in mix_flows} == {"FIX", "V"}


def test_unpaired_flow_ends_are_dropped(two_block: Trace) -> None:
    events = two_block.events.copy()
    events.loc[(events["flow_id"] == 1) & (events["flow_role"] == "wait"), "flow_id"] = -1
    doc = to_chrome_json(Trace(events, two_block.meta))
    assert {e["id"] for e in doc["traceEvents"] if e["ph"] in ("s", "f")} == {0}


def test_launches_are_laid_back_to_back(two_block: Trace) -> None:
    doc = to_chrome_json(Trace.concat([two_block, two_block]))
    names = sorted(e["args"]["name"] for e in _meta_events(doc, "process_name"))
    assert names == ["launch 0 block 0 AIV", "launch 0 block 1 AIV", "launch 1 block 0 AIV",
                     "launch 1 block 1 AIV"]
    starts = sorted(e["ts"] for e in doc["traceEvents"] if e["name"] == "TLOAD")
    assert starts == pytest.approx([0.0, 0.02, 0.05, 0.12, 0.38, 0.40, 0.43, 0.50])


def test_write_is_atomic_and_complete(two_block: Trace, tmp_path: Path) -> None:
    target = tmp_path / "trace.json"
    target.write_text("old")
    doc = to_chrome_json(two_block, target)
    assert json.loads(target.read_text()) == doc
    assert os.listdir(tmp_path) == ["trace.json"]


def test_failed_write_keeps_the_old_file(two_block: Trace, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "trace.json"
    target.write_text("old")

    def refuse(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(atomic.os, "replace", refuse)
    with pytest.raises(OSError, match="disk full"):
        to_chrome_json(two_block, str(target))
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["trace.json"]
