"""The Timeline view: one lane per pipe per core, every instruction, stall, flag and mutex hold.

Owns `timeline_data` (events → lanes and drawable segments, with level of detail: beyond the
segment budget, consecutive same-kind events of a lane closer than a pixel merge, and if that is
still too many each lane is binned by pixel with the dominant kind per bin), `timeline_traces`
(the plotly traces, as dicts: `Scattergl` thick line segments per op kind, stalls shaded per
reason and the longest ones labelled, mutex hold intervals, set→wait flag arrows and cross-core
signals, a halo over the events of a selected source line, and the sanitizer's findings: both
instructions of a race outlined in red, crossed and joined by a dashed line whose hover names
the finding kind and both lines), `timeline_plain` (the figure as a plain dict of traces and
layout: what the outputs send, turned into JSON by `figures.figure_json` without plotly's
validation) and `timeline_figure` (the same as a `go.Figure`). Hover, anywhere on a segment,
shows op, IR op, source line, bytes, cycles: each lane has a transparent one-row heatmap whose
cells are exactly its segments (gaps do not hover), drawn as one image however many segments;
the cells' `customdata` is the source line, so a click selects it (`clicked_line`). Level-of-
detail arithmetic lives in `timeline_lod`."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from .timeline_lod import (
    CATEGORY_COLORS,
    STALL_COLORS,
    categorize,
    finding_marks,
    flag_arrows,
    lane_table,
    level_of_detail,
    mutex_holds,
    xcore_arrows,
)

#: drawn segments (all kinds) above which level of detail starts merging
SEGMENT_BUDGET = 16_000
#: arrows drawn at most (the rest are counted in the title)
MAX_ARROWS = 200
#: drawn segments up to which the timeline is SVG (beyond: WebGL)
SVG_SEGMENTS = 3000
#: more arrows of a kind than this start hidden (a click on their legend entry shows them)
SHOWN_ARROWS = 40
#: core instances shown when none are chosen (whole blocks: at least one block)
DEFAULT_MAX_CORES = 8
#: name of the hover layers (one transparent heatmap per lane and band)
HOVER_NAME = "details"
#: legend group and colour of the sanitizer's finding marks
FINDING_NAME = "sanitizer finding"
FINDING_COLOR = "#cf222e"
#: half height of an op / stall bar, and the band of mutex holds, in lane units
_BAR_HALF = 0.31
_HOLD_BAND = (0.27, 0.45)
_CLEAR = [[0.0, "rgba(0,0,0,0)"], [1.0, "rgba(0,0,0,0)"]]


@dataclass
class TimelineData:
    """What the figure draws; `lod` is "raw", "merged" or "binned"."""

    lanes: pd.DataFrame
    segments: pd.DataFrame
    stalls: pd.DataFrame
    holds: pd.DataFrame
    arrows: pd.DataFrame
    highlight: pd.DataFrame
    findings: pd.DataFrame = field(default_factory=pd.DataFrame)  # `finding_marks` rows
    lod: str = "raw"
    events: int = 0
    cores_shown: int = 0
    cores_total: int = 0
    notes: list[str] = field(default_factory=list)


def core_choices(trace: Any) -> list[tuple[str, int]]:
    """(label, core) of every core instance, in lane order."""
    lanes = lane_table(trace.events)
    units = lanes.drop_duplicates("core")
    return [(f"{r.unit} (core {r.core})", int(r.core)) for r in units.itertuples()]


def _times(trace: Any, frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    launches = trace.launches()
    clock = frame["launch"].map(launches["clock_mhz"]).to_numpy(dtype=float)
    offset = frame["launch"].map(launches["offset_us"]).to_numpy(dtype=float)
    return frame["start"].to_numpy() / clock + offset, frame["end"].to_numpy() / clock + offset


@dataclass
class Prepared:
    """The chosen cores' events with lane, op kind and µs times (t0, t1)."""

    frame: pd.DataFrame
    lanes: pd.DataFrame
    span: float
    cores_shown: int
    cores_total: int

    def line_events(self, file: str, line: int) -> pd.DataFrame:
        f = self.frame
        return f[(f["file"].astype(str) == file) & (f["line"] == line)]


def default_cores(lanes: pd.DataFrame, max_cores: int = DEFAULT_MAX_CORES) -> list[int]:
    """The core instances shown when none are chosen: whole blocks (a mix block's AIC, AIV0
    and AIV1 together) in lane order, as many as fit in `max_cores`, at least one block."""
    units = lanes.drop_duplicates("core")
    chosen: list[int] = []
    for _, block in units.groupby(["launch", "block"], sort=False):
        cores = block["core"].tolist()
        if chosen and len(chosen) + len(cores) > max_cores:
            break
        chosen += cores
    return chosen


def prepare(trace: Any, cores: tuple[int, ...] | None = None,
            max_cores: int = DEFAULT_MAX_CORES) -> Prepared:
    events = trace.events
    table = lane_table(events)
    all_cores = list(dict.fromkeys(table["core"]))
    chosen = [c for c in all_cores if c in set(cores)] if cores else \
        default_cores(table, max_cores)
    frame = events[events["core"].isin(chosen)]
    lanes = lane_table(frame)
    frame = frame.assign(lane=_lanes_of(frame, lanes), cat=categorize(frame))
    start, end = _times(trace, frame)
    frame = frame.assign(t0=start, t1=end)
    span = float(end.max() - start.min()) if len(frame) else 1.0
    return Prepared(frame, lanes, span, len(chosen), len(all_cores))


def timeline_data(trace: Any, cores: tuple[int, ...] | None = None,
                  max_cores: int = DEFAULT_MAX_CORES, budget: int = SEGMENT_BUDGET,
                  highlight: tuple[str, int] | None = None,
                  prepared: Prepared | None = None, arrows: bool = True) -> TimelineData:
    """Lanes and segments of `trace` for the chosen core instances (default: the first
    `max_cores`); `highlight` = (file, line) whose events get a halo; the instructions of
    `trace.findings` (a sanitized launch) are marked."""
    p = prepared or prepare(trace, cores, max_cores)
    frame, span = p.frame, p.span
    ops = frame[frame["kind"] != "stall"]
    stalls = frame[frame["kind"] == "stall"]
    holds = mutex_holds(frame)
    share = max(1000, budget - min(len(stalls), budget // 4) - min(len(holds), budget // 8))
    segments, lod = level_of_detail(ops, share, span)
    stall_segments, _ = level_of_detail(stalls, budget // 4, span)
    hold_segments, _ = level_of_detail(holds, budget // 8, span)
    arrows = (pd.concat([flag_arrows(frame), xcore_arrows(frame)], ignore_index=True)
              if arrows else pd.DataFrame(columns=["kind", "x0", "y0", "x1", "y1", "text"]))
    lit = frame.iloc[:0] if highlight is None else p.line_events(*highlight)
    lit_segments, _ = level_of_detail(lit, budget // 4, span)
    findings = getattr(trace, "findings", None)
    marks = finding_marks(frame, findings)
    data = TimelineData(p.lanes, segments, stall_segments, hold_segments, arrows,
                        lit_segments, marks, lod, len(frame), p.cores_shown, p.cores_total)
    timed = 0 if findings is None else int((findings["start"] >= 0).sum())
    if timed:
        shown = marks["finding"].nunique()
        elsewhere = f", {timed - shown} on cores not shown" if timed > shown else ""
        data.notes.append(f"{shown} sanitizer finding(s) marked{elsewhere}")
    if p.cores_shown < p.cores_total:
        data.notes.append(f"showing {p.cores_shown} of {p.cores_total} cores")
    if lod != "raw":
        data.notes.append(f"{len(frame):,} events drawn as {len(segments):,} {lod} segments")
    return data


def _lanes_of(frame: pd.DataFrame, lanes: pd.DataFrame) -> np.ndarray:
    """The lane number of every event."""
    lane_of = lanes.set_index(["launch", "core", "pipe"])["lane"]
    index = pd.MultiIndex.from_arrays([frame["launch"], frame["core"],
                                       frame["pipe"].astype(str)])
    return lane_of.reindex(index).to_numpy()


def _segment_xy(seg: pd.DataFrame, offset: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """x = [t0, t1, nan, ...], y = [lane, lane, nan, ...] for thick line segments."""
    n = len(seg)
    x = np.empty(3 * n, dtype=np.float32)
    y = np.empty(3 * n, dtype=np.float32)
    x[0::3], x[1::3], x[2::3] = seg["t0"].to_numpy(), seg["t1"].to_numpy(), np.nan
    lane = seg["lane"].to_numpy(dtype=np.float32) + offset
    y[0::3], y[1::3], y[2::3] = lane, lane, np.nan
    return x, y


def _bar_trace(seg: pd.DataFrame, name: str, color: str, width: float, row_kw: dict,
               offset: float = 0.0, opacity: float = 1.0, legend: bool = True,
               group: str | None = None) -> dict:
    """A trace of thick line segments (its hover is carried by `_hover_layers`); `row_kw`
    carries the trace type (`line_type`) besides the subplot axes."""
    x, y = _segment_xy(seg, offset)
    return {"x": x, "y": y, "mode": "lines", "name": name,
            "legendgroup": group or name, "showlegend": legend, "hoverinfo": "skip",
            "opacity": opacity, "line": {"color": color, "width": width}, **row_kw}


def _lane_cells(t0: np.ndarray, t1: np.ndarray, text: np.ndarray, line: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(x edges, z, text, line) of one lane's hover row from its segments in start order:
    cells alternate segment, gap, segment, ...; a segment overlapping the next one is cut
    where the next starts."""
    end = np.minimum(t1, np.append(t0[1:], np.inf))
    n = len(t0)
    edges = np.empty(2 * n)
    edges[0::2], edges[1::2] = t0, end
    z = np.full(2 * n - 1, np.nan)
    z[0::2] = 0.0
    cells = np.full(2 * n - 1, "", dtype=object)
    cells[0::2] = text
    lines = np.full(2 * n - 1, np.nan)
    lines[0::2] = line
    return edges, z, cells, lines


def _hover_layers(parts: list[tuple[pd.DataFrame, tuple[float, float]]],
                  row_kw: dict) -> list[dict]:
    """Per lane and band (op/stall bars, mutex holds), a transparent one-row heatmap with
    one cell per segment: the hover (and click) target for every point of every segment."""
    parts = [(s, band) for s, band in parts if len(s)]
    if not parts:
        return []

    def column(name: str, dtype: Any = None) -> np.ndarray:
        return np.concatenate([s[name].to_numpy(dtype=dtype) for s, _ in parts])

    lane, t0, t1 = column("lane"), column("t0", float), column("t1", float)
    lo = np.concatenate([np.full(len(s), band[0]) for s, band in parts])
    hi = np.concatenate([np.full(len(s), band[1]) for s, band in parts])
    # by lane and band, then start; stable (as grouping, then a stable sort by start); a
    # segment without a lane has no row (as a group key, it would be dropped)
    order = np.lexsort((t0, hi, lo, lane))
    order = order[~pd.isna(lane[order])]
    lane, lo, hi, t0, t1 = lane[order], lo[order], hi[order], t0[order], t1[order]
    text, line = column("text")[order], column("line", float)[order]
    new = np.flatnonzero((lane[1:] != lane[:-1]) | (lo[1:] != lo[:-1]) | (hi[1:] != hi[:-1]))
    bounds = [0, *(new + 1).tolist(), len(lane)]
    out = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        edges, z, cells, lines = _lane_cells(t0[a:b], t1[a:b], text[a:b], line[a:b])
        out.append({"type": "heatmap", "name": HOVER_NAME, "x": edges,
                    "y": [lane[a] + lo[a], lane[a] + hi[a]], "z": z[None, :],
                    "text": cells[None, :], "customdata": lines[None, :], "hoverinfo": "text",
                    "hoverongaps": False, "colorscale": _CLEAR, "showscale": False,
                    "showlegend": False,
                    "hoverlabel": {"bgcolor": "white", "bordercolor": "#8c959f",
                                   "font": {"color": "#1f2328"}}, **row_kw})
    return out


def clicked_line(trace: Any, point_index: Any) -> int | None:
    """The source line of a clicked hover-layer cell (`point_index`: the cell's column, or
    plotly's [row, column]); None for a gap or another trace."""
    if getattr(trace, "name", None) != HOVER_NAME:
        return None
    column = point_index[-1] if isinstance(point_index, (list, tuple)) else point_index
    value = np.asarray(trace.customdata, dtype=float).reshape(-1)[int(column)]
    return int(value) if np.isfinite(value) and value > 0 else None


def timeline_traces(data: TimelineData, row: int | None = None, legend: bool = True,
                    lane_px: float = 20.0) -> list[dict]:
    """The plotly traces (as dicts) drawing `data`: halo, stalls, syncs, op kinds, mutex
    holds, one hover layer, arrows, stall labels."""
    axes = {} if row is None else {"xaxis": f"x{row if row > 1 else ''}",
                                   "yaxis": f"y{row if row > 1 else ''}"}
    row_kw = {**axes, "type": line_type(data)}
    width = max(3.0, lane_px * 0.62)
    traces: list[Any] = []
    bar = (-_BAR_HALF, _BAR_HALF)
    hover: list[tuple[pd.DataFrame, tuple[float, float]]] = []
    if len(data.highlight):
        traces.append(_bar_trace(data.highlight, "selected line", "#ffc400", width + 7,
                                 row_kw, legend=legend))
    if len(data.findings):  # under the op bars: a red outline around each marked event
        traces.append(_bar_trace(data.findings, FINDING_NAME, FINDING_COLOR, width + 5,
                                 row_kw, legend=legend, group=FINDING_NAME))
    for reason, seg in data.stalls.groupby("reason", observed=True, sort=True):
        traces.append(_bar_trace(seg, f"stall: {reason}", STALL_COLORS.get(reason, "#bbb"),
                                 width * 0.8, row_kw, opacity=0.45, legend=legend))
        hover.append((seg, bar))
    by_kind = dict(tuple(data.segments.groupby("cat", observed=True, sort=False)))
    for cat in sorted(by_kind, key=lambda c: c != "sync"):  # syncs first: thin, underneath
        thin = width * 0.35 if cat == "sync" else width
        traces.append(_bar_trace(by_kind[cat], str(cat), CATEGORY_COLORS[str(cat)], thin,
                                 row_kw, legend=legend))
        hover.append((by_kind[cat], bar))
    if len(data.holds):
        traces.append(_bar_trace(data.holds, "mutex hold", "#d4a72c", max(2.0, width * 0.18),
                                 row_kw, offset=0.36, legend=legend))
        hover.append((data.holds, _HOLD_BAND))
    traces += _hover_layers(hover, axes)
    traces += _arrow_traces(data.arrows, axes, legend)
    traces += _finding_links(data.findings, row_kw)
    traces += _stall_labels(data.stalls, axes)
    return traces


def line_type(data: TimelineData) -> str:
    """"scatter" (SVG) for a timeline of up to `SVG_SEGMENTS` segments, else "scattergl":
    a browser has few WebGL contexts (a page of small timelines must not use them up)."""
    drawn = len(data.segments) + len(data.stalls) + len(data.holds)
    return "scattergl" if drawn > SVG_SEGMENTS else "scatter"


def _finding_links(marks: pd.DataFrame, row_kw: dict) -> list[dict]:
    """A cross on the middle of every marked event and a dashed line joining the two
    instructions of each finding; hovering either shows the finding."""
    if marks.empty:
        return []
    x, y, text = [], [], []
    for _, m in marks.groupby("finding", sort=True):
        x += [*((m["t0"] + m["t1"]) / 2), None]
        y += [*m["lane"], None]
        text += [*m["text"], ""]
    # the op bars' own type (row_kw): drawn after them, so above them
    return [{"x": x, "y": y, "mode": "lines+markers", "name": FINDING_NAME,
             "legendgroup": FINDING_NAME, "showlegend": False, "hovertext": text,
             "hoverinfo": "text", "line": {"color": FINDING_COLOR, "width": 1.5, "dash": "dash"},
             "marker": {"symbol": "x", "size": 11, "color": FINDING_COLOR,
                        "line": {"width": 1.5, "color": "white"}}, **row_kw}]


def _arrow_traces(arrows: pd.DataFrame, row_kw: dict, legend: bool) -> list[Any]:
    out = []
    styles = {"flag": ("set → wait flag", "#6639ba", "solid"),
              "xcore": ("cross-core signal", "#cf222e", "dot")}
    for kind, (name, color, dash) in styles.items():
        sub = arrows[arrows["kind"] == kind]
        if sub.empty:
            continue
        total = len(sub)
        if total > MAX_ARROWS:  # evenly spread over the run, not just its start
            sub = sub.sort_values("x0").iloc[np.linspace(0, len(sub) - 1, MAX_ARROWS).astype(int)]
            name = f"{name} ({MAX_ARROWS} of {total:,})"
        hidden = total > SHOWN_ARROWS
        if hidden:
            name += " · click to show"
        n = len(sub)
        x = np.full(3 * n, np.nan)
        y = np.full(3 * n, np.nan)
        x[0::3], x[1::3] = sub["x0"], sub["x1"]
        y[0::3], y[1::3] = sub["y0"], sub["y1"]
        symbols = np.array(["circle", "arrow", "circle"] * n, dtype=object)
        sizes = np.array([0, 9, 0] * n)
        text = np.repeat(sub["text"].to_numpy(), 3)
        out.append({"type": "scatter", "x": x, "y": y, "mode": "lines+markers", "name": name,
                    "showlegend": legend, "line": {"color": color, "width": 1.2, "dash": dash},
                    "marker": {"symbol": symbols, "size": sizes, "angleref": "previous",
                               "color": color},
                    "hovertext": text, "hoverinfo": "text",
                    **({"visible": "legendonly"} if hidden else {}), **row_kw})
    return out


def _stall_labels(stalls: pd.DataFrame, row_kw: dict, top: int = 10) -> list[Any]:
    """The reason written on the longest stalls (the rest say it on hover)."""
    if stalls.empty:
        return []
    longest = stalls.assign(d=stalls["t1"] - stalls["t0"]).nlargest(top, "d")
    span = float(stalls["t1"].max() - stalls["t0"].min()) or 1.0
    longest = longest[longest["d"] > span * 0.04]
    if longest.empty:
        return []
    return [{"type": "scatter", "x": ((longest["t0"] + longest["t1"]) / 2).to_numpy(),
             "y": longest["lane"].to_numpy(), "mode": "text",
             "text": longest["reason"].astype(str).to_numpy(), "showlegend": False,
             "textfont": {"size": 10, "color": "#57606a"}, "hoverinfo": "skip", **row_kw}]


def lane_px(lanes: int) -> float:
    return 20.0 if lanes <= 40 else max(8.0, 800.0 / lanes)


def timeline_figure(trace: Any, cores: tuple[int, ...] | None = None,
                    highlight: tuple[str, int] | None = None, max_cores: int = DEFAULT_MAX_CORES,
                    budget: int = SEGMENT_BUDGET, title: str | None = None,
                    arrows: bool = True) -> go.Figure:
    """The timeline of `trace` as a plotly figure (see the module docstring); `arrows=False`
    leaves out the flag and cross-core arrows."""
    return go.Figure(timeline_plain(trace, cores, highlight, max_cores, budget, title, arrows))


def timeline_plain(trace: Any, cores: tuple[int, ...] | None = None,
                   highlight: tuple[str, int] | None = None,
                   max_cores: int = DEFAULT_MAX_CORES, budget: int = SEGMENT_BUDGET,
                   title: str | None = None, arrows: bool = True) -> dict:
    """`timeline_figure` as a plain figure dict (`figures.figure_json` turns it into the
    plotly mimetype's JSON without plotly's validation, the costly part of a big timeline)."""
    data = timeline_data(trace, cores, max_cores, budget, highlight, arrows=arrows)
    px = lane_px(len(data.lanes))
    head = title or f"{trace.meta.kernel}: {trace.duration_us:,.3f} us simulated"
    if data.notes:
        head += f"  <span style='font-size:11px;color:#6e7781'>({'; '.join(data.notes)})</span>"
    layout = {"yaxis": lane_axis(data.lanes), "height": _height(px, len(data.lanes)),
              "xaxis": {"title": {"text": "time (us)"}, "showgrid": True,
                        "gridcolor": "#eef1f4", "zeroline": False},
              **timeline_style(head)}
    return {"data": timeline_traces(data, lane_px=px), "layout": layout}


def lane_axis(lanes: pd.DataFrame) -> dict:
    """The y axis of a timeline: one tick per lane, labelled, first lane on top."""
    return {"tickvals": lanes["lane"].tolist(), "ticktext": lanes["label"].tolist(),
            "autorange": "reversed", "showgrid": True, "gridcolor": "#eef1f4",
            "zeroline": False, "tickfont": {"size": 10, "family": "monospace"},
            "automargin": True, "ticklabelposition": "outside", "ticks": "outside",
            "ticklen": 4, "tickcolor": "rgba(0,0,0,0)"}


def _height(px: float, lanes: int) -> int:
    return int(min(2400, 154 + px * max(3, lanes)))


def timeline_style(title: str) -> dict:
    """The layout properties of every timeline (title, template, legend, hover)."""
    return {"title": {"text": title, "font": {"size": 13}, "x": 0.01, "xanchor": "left",
                      "y": 0.995, "yanchor": "top", "yref": "container"},
            "template": "plotly_white", "hovermode": "closest", "dragmode": "zoom",
            "margin": {"l": 10, "r": 10, "t": 74, "b": 40},
            "legend": {"orientation": "h", "y": 1.0, "yanchor": "bottom", "x": 0,
                       "xanchor": "left", "font": {"size": 11}, "itemclick": "toggle"},
            "hoverlabel": {"font": {"family": "monospace", "size": 11}}}


#: PipeUtilization columns as the tables label them: what is summed over cores says so
UTILIZATION_LABELS = {"busy_us": "busy µs (sum over cores)",
                      "ratio": "busy (all cores)", "max_core_ratio": "busy (busiest core)"}
UTILIZATION_FORMATS = {"busy µs (sum over cores)": ".3f", "busy (all cores)": ".1%",
                       "busy (busiest core)": ".1%"}


def utilization_table(trace: Any) -> pd.DataFrame:
    """PipeUtilization summary: per core kind and pipe, busy µs summed over the kind's cores,
    the share of all those cores' time and of the busiest one's."""
    util = trace.pipe_utilization()
    cols = ["core_kind", "pipe", "cores", "busy_us", "ratio", "max_core_ratio"]
    util = util[cols] if len(trace.launch_metas) == 1 else util.drop(columns=["busy_cycles"])
    return util.rename(columns=UTILIZATION_LABELS)
