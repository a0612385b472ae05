"""The display bundle's fast paths give what the paths they replaced gave (issue 25): a plain
figure dict's JSON equals plotly's validated figure's, value for value and type for type; the
timeline's hover layers and hover texts equal the grouped pandas computation they replaced;
highlighted code is the same from the memo; a Trace's views are computed once and handed out
as copies."""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest
from timeline_traces import big_trace, events_frame, trace_of

from pypto_lab.figures import figure_json
from pypto_lab.views import timeline as tl
from pypto_lab.views import timeline_lod as lod


def _same(a, b, path="") -> None:
    """Equal JSON values with equal types (1 and 1.0 differ in a typed array's dtype)."""
    assert type(a) is type(b), f"{path}: {type(a).__name__} vs {type(b).__name__}"
    if isinstance(a, dict):
        assert a.keys() == b.keys(), path
        for k in a:
            _same(a[k], b[k], f"{path}/{k}")
    elif isinstance(a, list):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{path}[{i}]")
    else:
        assert a == b, f"{path}: {a!r} vs {b!r}"


def _validated(plain: dict) -> dict:
    """What the bundle sent before: plotly's figure built (validated) from the dict."""
    return figure_json(go.Figure(plain))


@pytest.mark.parametrize("kw", [{}, {"highlight_line": 19}, {"cores": (0,), "arrows": False}])
def test_the_timeline_json_equals_plotlys_for_the_add(add_result, kw):
    plain = add_result.timeline_plain(**kw)
    _same(figure_json(plain), _validated(plain))
    _same(figure_json(plain), figure_json(add_result.timeline_figure(**kw)))


def test_the_timeline_json_equals_plotlys_for_a_mix_kernel_and_a_race(flash_result,
                                                                      race_result):
    for result in (flash_result, race_result):
        plain = result.timeline_plain()
        _same(figure_json(plain), _validated(plain))
    kinds = {t.get("name", "") for t in figure_json(flash_result.timeline_plain())["data"]}
    assert any(k.startswith("cross-core signal") for k in kinds)  # arrows are in it
    assert tl.FINDING_NAME in {t.get("name") for t in race_result.timeline_plain()["data"]}


def test_the_comparison_and_trace_outputs_send_plotlys_json(add_result, flash_result):
    """`%pypto_compare` and `%pypto_trace` send their figures as plain dicts: the JSON plotly
    gives for the same figure built as plotly objects; `FigureOutput.figure` is still one."""
    import pypto_lab
    from pypto_lab.figures import PLOTLY_MIME, FigureOutput

    cmp = pypto_lab.compare(add_result, flash_result)
    plain = cmp.plain_figure()
    _same(figure_json(plain), _validated(plain))
    assert plain["layout"]["xaxis"]["matches"] == "x2"  # one time axis for both runs
    out = FigureOutput(add_result.timeline_plain(), "text")
    _same(out._repr_mimebundle_()[PLOTLY_MIME], _validated(add_result.timeline_plain()))
    assert isinstance(out.figure, go.Figure) and out.figure is out.figure


def test_the_timeline_json_equals_plotlys_with_merged_segments():
    plain = tl.timeline_plain(big_trace(40_000), cores=tuple(range(8)))
    assert "merged" in plain["layout"]["title"]["text"] or "binned" in plain["layout"][
        "title"]["text"]
    _same(figure_json(plain), _validated(plain))


def test_plain_json_types_every_kind_of_value_as_plotly_does():
    """int64 narrowed to the smallest int type, float32/float64 typed, float16 / bool /
    object / huge ints as lists, NaN as null, numpy scalars as numbers, no typed array below a
    key plotly skips or inside a list, 2-D arrays with their shape."""
    plain = {"data": [{"type": "scatter", "x": np.arange(5, dtype=np.int64) * 1000,
                       "y": np.array([0.5, np.nan, 2.0], dtype=np.float32),
                       "customdata": np.array([1.5, np.nan, "a"], dtype=object),
                       "text": np.array(["a", "b"]),
                       "marker": {"size": np.array([0, 9, 0]),
                                  "color": np.array([True, False]),
                                  "opacity": np.float64(0.5)},
                       "ids": np.array(["p", "q"], dtype=object),
                       "hovertext": ["x", None]},
                      {"type": "heatmap", "z": np.array([[0.0, np.nan, 1.0]]),
                       "x": np.array([2**40, 1], dtype=np.int64),
                       "y": np.array([1, 2], dtype=np.uint64), "zmin": np.int64(3)},
                      {"type": "scatter", "x": np.array([1.0, 2.0], dtype=np.float16),
                       "y": (1, np.float64(np.inf))}],
             "layout": {"template": "plotly_white", "height": 300,
                        "xaxis": {"range": np.array([0.0, 1.5])},
                        "yaxis": {"tickvals": [np.int64(1), 2], "ticktext": ["a", "b"]}}}
    _same(figure_json(plain), _validated(plain))
    assert figure_json(plain)["data"][0]["x"]["dtype"] == "i2"


def _grouped_hover_layers(parts, row_kw):
    """The hover layers as the workbench built them before the fast path (the oracle)."""
    frames = [s.assign(_lo=lo, _hi=hi) for s, (lo, hi) in parts if len(s)]
    out = []
    for (lane, lo, hi), seg in pd.concat(frames).groupby(["lane", "_lo", "_hi"], sort=True):
        seg = seg.sort_values("t0", kind="mergesort")
        t0, t1 = seg["t0"].to_numpy(dtype=float), seg["t1"].to_numpy(dtype=float)
        edges, z, text, line = tl._lane_cells(t0, t1, seg["text"].to_numpy(),
                                              seg["line"].to_numpy(dtype=float))
        out.append({"x": edges, "y": [lane + lo, lane + hi], "text": text[None, :],
                    "customdata": line[None, :]})
    return out


def test_hover_layers_equal_the_grouped_computation():
    """Overlapping segments, equal start times across bands and lanes out of order."""
    rows = [{"pipe": p, "start": s, "end": e, "line": ln, "op": op}
            for p, s, e, ln, op in [("V", 50, 90, 3, "TADD"), ("V", 0, 60, 2, "TMUL"),
                                    ("MTE2", 10, 20, 4, "TLOAD"), ("V", 50, 55, 5, "TSUB"),
                                    ("MTE2", 0, 5, 6, "TLOAD")]]
    rows += [{"pipe": "MTE2", "kind": "sync", "op": o, "ir_op": ir, "start": s, "end": s + 1,
              "sync_ids": "mutex 3"}
             for o, ir, s in [("get_buf", "system.mutex_lock_dyn", 30),
                              ("rls_buf", "system.mutex_unlock_dyn", 70)]]
    data = tl.timeline_data(trace_of(events_frame(rows)))
    parts = [(data.segments, (-0.31, 0.31)), (data.stalls, (-0.31, 0.31)),
             (data.holds, (0.27, 0.45))]
    fast = tl._hover_layers(parts, {})
    slow = _grouped_hover_layers(parts, {})
    assert len(fast) == len(slow) == 3
    for f, s in zip(fast, slow):
        np.testing.assert_array_equal(f["x"], s["x"])
        assert f["y"] == s["y"] and f["text"].tolist() == s["text"].tolist()
        np.testing.assert_array_equal(f["customdata"], s["customdata"])


def test_hover_texts_equal_the_pandas_string_arithmetic(flash_result):
    """The hover text of every raw event as the Series concatenation wrote it."""
    frame = tl.prepare(flash_result.trace).frame
    f = frame.assign(file=frame["file"].astype(object))  # one categorical, one plain column
    for g in (frame, f):
        us = lambda v: pd.Series(np.asarray(v, dtype=float)).map("{:,.3f}".format)  # noqa: E731
        where = (g["file"].astype(str).map(lambda n: n.rsplit("/", 1)[-1] + ":")
                 + g["line"].astype(int).astype(str))
        expected = ("<b>" + g["op"].astype(str) + "</b> " + g["ir_op"].astype(str)
                    + "<br>" + where.to_numpy() + " · " + us(g["t1"] - g["t0"]).to_numpy()
                    + " µs · " + g["bytes"].map("{:,}".format) + " B<br>@"
                    + us(g["t0"]).to_numpy() + "–" + us(g["t1"]).to_numpy() + " µs")
        ids = g["sync_ids"].astype(str)
        expected = expected + np.where(ids != "", "<br>" + ids, "")
        assert lod._raw_text(g) == expected.tolist()


def test_lane_table_is_unchanged_by_deduplicating_first(flash_result):
    events = flash_result.trace.events
    cols = ["launch", "block", "core_kind", "subblock", "core", "pipe"]
    first = events[cols].astype({"core_kind": str, "pipe": str}).drop_duplicates()
    table = lod.lane_table(events)
    assert table[cols].astype({"core_kind": str, "pipe": str}).sort_values(cols).values.tolist() \
        == first.sort_values(cols).values.tolist()


def test_highlighting_is_kept_and_the_same(add_result):
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import CppLexer, PythonLexer

    from pypto_lab.views import html

    text = add_result.kernels[0].passes(add_result.kernels[0].targets[0])[-1].ir_text
    for lexer in (PythonLexer, CppLexer):
        fresh = highlight(text, lexer(), HtmlFormatter(nowrap=True, style="friendly"))
        assert html._highlighted(lexer, text) == fresh
        hits = html._highlighted.cache_info().hits
        assert html._highlighted(lexer, text) == fresh
        assert html._highlighted.cache_info().hits == hits + 1
    block = html.code_block(text, PythonLexer(stripnl=False), "p")  # options: not kept
    assert block.count("class='ln'") == len(text.splitlines())


def test_trace_views_are_computed_once_and_copied(add_result, monkeypatch):
    from pypto_pro.trace import summary

    trace = add_result.trace
    calls = []
    real = summary.pipe_utilization
    monkeypatch.setattr(summary, "pipe_utilization",
                        lambda *a: calls.append(1) or real(*a))
    trace._memo.clear()
    first = trace.pipe_utilization()
    first["ratio"] = -1.0
    again = trace.pipe_utilization()
    trace.summary()
    assert calls == [1] and (again["ratio"] >= 0).all()
    assert again.equals(real(trace.events, trace.launches()))
