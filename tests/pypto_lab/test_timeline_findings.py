"""Sanitizer findings on the timeline: `Trace.findings`, and both racing instructions of a race
outlined, crossed and joined, with a hover naming the kind and both lines, in the static figure,
the workbench widget and the HTML report; nothing extra when the launch was not sanitized."""
from __future__ import annotations

from pypto_lab.figures import PLOTLY_MIME
from pypto_lab.views.timeline import FINDING_NAME, timeline_data, timeline_figure


def _finding_traces(fig_data: list) -> list[dict]:
    return [t for t in fig_data if t.get("name") == FINDING_NAME]


def _check_marks(fig_data: list, lanes: dict[str, int]) -> None:
    """One red outline over the two events and one dashed link whose ends sit on the V and
    MTE2 lanes and hover the kind and both lines."""
    outline, link = _finding_traces(fig_data)
    assert outline["mode"] == "lines" and link["mode"] == "lines+markers"
    ys = [y for y in link["y"] if y is not None]
    assert sorted(ys) == sorted([lanes["V"], lanes["MTE2"]])
    text = [t for t in link["hovertext"] if t]
    assert len(text) == 2
    assert all("DATA_RACE_RAW" in t and "V line 10" in t and "MTE2 line 9" in t for t in text)


def _lanes(trace) -> dict[str, int]:
    lanes = timeline_data(trace).lanes
    return dict(zip(lanes["pipe"], lanes["lane"]))


def test_trace_findings_name_the_racing_events(race_result):
    trace = race_result.trace
    frame = trace.findings
    row = frame[frame["kind"] == "DATA_RACE_RAW"].iloc[0]
    assert (row["line"], row["other_line"], row["launch"]) == (10, 9, trace.meta.launch)
    data = timeline_data(trace)
    marks = data.findings
    assert list(marks["role"]) == [0, 1] and (marks["finding"] == 0).all()
    ev = trace.events
    for mark, site in zip(marks.itertuples(), (row[["pipe", "start"]], row[["other_pipe",
                                                                              "other_start"]])):
        assert mark.lane == _lanes(trace)[site.iloc[0]]
        assert ev[(ev["pipe"] == site.iloc[0]) & (ev["start"] == site.iloc[1])].shape[0] >= 1
    assert "1 sanitizer finding(s) marked" in data.notes


def test_static_figure_marks_both_instructions(race_result):
    fig = timeline_figure(race_result.trace)
    _check_marks([t.to_plotly_json() for t in fig.data], _lanes(race_result.trace))


def test_widget_timeline_marks_both_instructions(race_result):
    wb = race_result.workbench()
    wb.tabs.selected_index = wb.panels.index("timeline")
    out = wb._built["timeline"].children[1]
    fig = out.outputs[0]["data"][PLOTLY_MIME]
    _check_marks(fig["data"], _lanes(race_result.trace))


def test_html_report_marks_both_instructions(race_result, tmp_path):
    html = race_result.export(tmp_path / "report.html").read_text()
    start = html.index("<h2>Timeline</h2>")
    assert FINDING_NAME in html[start:] and "DATA_RACE_RAW" in html[start:]


def test_unsanitized_launch_has_no_findings_and_no_marks(add_result):
    trace = add_result.trace
    assert trace.findings.empty and {"kind", "line", "other_line"} <= set(trace.findings)
    assert timeline_data(trace).findings.empty
    assert not _finding_traces([t.to_plotly_json() for t in timeline_figure(trace).data])


def test_findings_off_the_shown_cores_are_counted(race_result, monkeypatch):
    from pypto_pro.sanitizer import Finding, SanitizerReport, Site

    trace = race_result.trace
    report = SanitizerReport("racy", list(trace.sanitizer.findings))
    report.add(Finding("GM_WRITE_CONFLICT", "m", Site("k.py", 3, "block 9 AIV", 99, 9, "MTE3",
                                                      5)))
    monkeypatch.setattr(trace, "sanitizer", report)
    data = timeline_data(trace)
    assert set(data.findings["finding"]) == {0}
    assert "1 sanitizer finding(s) marked, 1 on cores not shown" in data.notes
