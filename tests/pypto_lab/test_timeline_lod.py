"""Timeline level of detail and sync geometry on synthetic traces: 200 000 events stay under
the segment budget and the 5 MB output budget; mutex holds, flag arrows and cross-core
arrows pair the right events."""
from __future__ import annotations

import json

import numpy as np
import pytest

from pypto_lab.figures import figure_json
from pypto_lab.views import timeline as tl
from pypto_lab.views.timeline_lod import level_of_detail, mutex_holds
from timeline_traces import big_trace, events_frame, trace_of


def test_200k_events_fit_the_budgets():
    trace = big_trace(200_000)
    assert len(trace.events) == 200_000
    data = tl.timeline_data(trace, cores=tuple(range(8)))
    assert data.lod in ("merged", "binned")
    assert len(data.segments) <= 1.5 * tl.SEGMENT_BUDGET
    fig = tl.timeline_figure(trace, cores=tuple(range(8)))
    size = len(json.dumps(figure_json(fig)))
    assert size <= 5_000_000, size
    assert "200,000 events drawn as" in fig.layout.title.text
    hover = next(t for t in fig.data if t.name == "details")
    assert any("merged" in h for h in hover.text[0][:50])


def test_every_point_of_a_segment_hovers_and_clicks_to_its_line():
    """The hover layer of a lane: one cell per segment spanning exactly its [t0, t1], gaps
    that do not hover, the source line as customdata, overlaps cut at the next start."""
    events = events_frame([{"start": 0, "end": 100, "line": 7},
                           {"start": 150, "end": 160, "line": 8},
                           {"start": 155, "end": 170, "line": 9}])
    fig = tl.timeline_figure(trace_of(events))
    (layer,) = [t for t in fig.data if t.name == tl.HOVER_NAME]
    assert layer.type == "heatmap" and layer.hoverongaps is False
    us = 1 / 1650.0
    assert np.allclose(layer.x, np.array([0, 100, 150, 155, 155, 170]) * us)
    z = np.asarray(layer.z, dtype=float)[0]
    assert np.isnan(z[1::2]).all() and (z[0::2] == 0).all()  # gaps do not hover
    assert [t.split("</b>")[0] for t in layer.text[0][0::2]] == ["<b>TADD"] * 3
    assert "k.py:7 · 0.061 µs" in layer.text[0][0] and layer.text[0][1] == ""
    assert [tl.clicked_line(layer, [0, i]) for i in range(5)] == [7, None, 8, None, 9]
    assert tl.clicked_line(layer, 2) == 8
    assert tl.clicked_line(fig.data[0], 0) is None  # not a hover layer
    lo, hi = layer.y
    assert lo < 0 < hi  # covers the drawn bar of lane 0


def test_small_traces_are_drawn_raw():
    events = events_frame([{"start": 0, "end": 10}, {"start": 20, "end": 30}])
    seg, lod = level_of_detail(
        events.assign(lane=0, cat="vector", t0=events["start"] * 1.0, t1=events["end"] * 1.0),
        budget=10, span=30.0)
    assert lod == "raw" and len(seg) == 2
    assert seg["text"].iloc[0].startswith("<b>TADD</b> block.add")


def test_merging_keeps_idle_gaps_visible():
    starts = np.r_[np.arange(0, 1000, 10), np.arange(50_000, 51_000, 10)]
    events = events_frame([{"start": int(s), "end": int(s) + 10} for s in starts])
    frame = events.assign(lane=0, cat="vector", t0=events["start"] * 1.0,
                          t1=events["end"] * 1.0)
    seg, lod = level_of_detail(frame, budget=20, span=51_000.0)
    assert lod == "merged"
    assert (seg["t1"] <= 1000).sum() >= 1 and (seg["t0"] >= 50_000).sum() >= 1
    assert not ((seg["t0"] < 50_000) & (seg["t1"] > 1000)).any()  # the gap is not bridged


def test_mutex_holds_pair_lock_and_unlock_per_id():
    events = events_frame([
        {"pipe": "MTE2", "kind": "sync", "op": "get_buf", "sync_ids": "0", "start": 0, "end": 1},
        {"pipe": "MTE2", "kind": "sync", "op": "get_buf", "sync_ids": "2", "start": 2, "end": 3},
        {"pipe": "MTE2", "kind": "sync", "op": "rls_buf", "sync_ids": "0", "start": 9, "end": 10},
        {"pipe": "MTE2", "kind": "sync", "op": "rls_buf", "sync_ids": "2", "start": 20,
         "end": 21}])
    frame = events.assign(lane=0, cat="sync", t0=events["start"] * 1.0, t1=events["end"] * 1.0)
    holds = mutex_holds(frame).sort_values("t0")
    assert holds[["t0", "t1"]].to_numpy().tolist() == [[1.0, 9.0], [3.0, 20.0]]
    assert list(holds["op"]) == ["mutex 0 held", "mutex 2 held"]


def test_flag_and_cross_core_arrows_join_the_right_lanes():
    events = events_frame([
        {"pipe": "MTE2", "kind": "sync", "op": "set_flag", "ir_op": "system.sync_src",
         "start": 10, "end": 11, "flow_id": 0, "flow_role": "set",
         "sync_ids": "flag MTE2->V #0"},
        {"pipe": "V", "kind": "sync", "op": "wait_flag", "ir_op": "system.sync_dst",
         "start": 30, "end": 31, "flow_id": 0, "flow_role": "wait"},
        {"core": 1, "core_kind": "AIC", "pipe": "FIX", "kind": "sync",
         "op": "set_intra_block", "ir_op": "system.set_cross_core", "start": 40, "end": 41,
         "sync_ids": "(pl.CrossCoreSyncMode.INTRA_BLOCK, 5)"},
        {"pipe": "MTE2", "kind": "sync", "op": "wait_intra_block",
         "ir_op": "system.wait_cross_core", "start": 40, "end": 41,
         "sync_ids": "(pl.CrossCoreSyncMode.INTRA_BLOCK, 5)"}])
    data = tl.timeline_data(trace_of(events, "mix"))
    lanes = dict(zip(data.lanes["label"], data.lanes["lane"]))
    flag = data.arrows[data.arrows["kind"] == "flag"].iloc[0]
    assert (flag["y0"], flag["y1"]) == (lanes["b0 AIV · MTE2"], lanes["b0 AIV · V"])
    assert flag["x0"] == pytest.approx(11 / 1650) and flag["x1"] == pytest.approx(30 / 1650)
    xcore = data.arrows[data.arrows["kind"] == "xcore"].iloc[0]
    assert (xcore["y0"], xcore["y1"]) == (lanes["b0 AIC · FIX"], lanes["b0 AIV · MTE2"])
    assert "cross-core id 5" in xcore["text"]


def test_arrows_beyond_the_cap_are_sampled_over_the_run(monkeypatch):
    rows = []
    for i in range(50):
        rows += [{"pipe": "MTE2", "kind": "sync", "op": "set_flag", "start": 100 * i,
                  "end": 100 * i + 1, "flow_id": i, "flow_role": "set"},
                 {"pipe": "V", "kind": "sync", "op": "wait_flag", "start": 100 * i + 50,
                  "end": 100 * i + 51, "flow_id": i, "flow_role": "wait"}]
    monkeypatch.setattr(tl, "MAX_ARROWS", 10)
    fig = tl.timeline_figure(trace_of(events_frame(rows)))
    arrows = next(t for t in fig.data if t.name.startswith("set → wait flag"))
    assert arrows.name == "set → wait flag (10 of 50) · click to show"
    assert arrows.visible == "legendonly"  # many arrows start hidden: the legend shows them
    xs = [x for x in arrows.x[0::3]]
    assert min(xs) < 0.01 and max(xs) > 2.9  # spread from the start to the end of the run
