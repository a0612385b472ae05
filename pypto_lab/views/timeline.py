"""The Timeline view: one lane per pipe per core, every instruction, stall, flag and mutex hold.

Owns `timeline_data` (events → lanes and drawable segments, with level of detail: beyond the
segment budget, consecutive same-kind events of a lane closer than a pixel merge, and if that is
still too many each lane is binned by pixel with the dominant kind per bin), `add_timeline`
(the plotly traces: `Scattergl` thick line segments per op kind, stalls shaded per reason and the
longest ones labelled, mutex hold intervals, set→wait flag arrows and cross-core signals, a halo
over the events of a selected source line) and `timeline_figure`. Hover shows op, IR op,
source line, bytes, cycles. Level-of-detail arithmetic lives in `timeline_lod`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from .timeline_lod import (
    CATEGORY_COLORS, STALL_COLORS, categorize, flag_arrows, lane_table, level_of_detail,
    mutex_holds, xcore_arrows,
)

#: drawn segments (all kinds) above which level of detail starts merging
SEGMENT_BUDGET = 16_000
#: arrows drawn at most (the rest are counted in the title)
MAX_ARROWS = 200
#: core instances shown when none are chosen
DEFAULT_MAX_CORES = 8


@dataclass
class TimelineData:
    """What the figure draws; `lod` is "raw", "merged" or "binned"."""

    lanes: pd.DataFrame
    segments: pd.DataFrame
    stalls: pd.DataFrame
    holds: pd.DataFrame
    arrows: pd.DataFrame
    highlight: pd.DataFrame
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


def prepare(trace: Any, cores: tuple[int, ...] | None = None,
            max_cores: int = DEFAULT_MAX_CORES) -> Prepared:
    events = trace.events
    all_cores = list(dict.fromkeys(lane_table(events)["core"]))
    chosen = [c for c in all_cores if c in set(cores)] if cores else all_cores[:max_cores]
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
                  prepared: Prepared | None = None) -> TimelineData:
    """Lanes and segments of `trace` for the chosen core instances (default: the first
    `max_cores`); `highlight` = (file, line) whose events get a halo."""
    p = prepared or prepare(trace, cores, max_cores)
    frame, span = p.frame, p.span
    ops = frame[frame["kind"] != "stall"]
    stalls = frame[frame["kind"] == "stall"]
    holds = mutex_holds(frame)
    share = max(1000, budget - min(len(stalls), budget // 4) - min(len(holds), budget // 8))
    segments, lod = level_of_detail(ops, share, span)
    stall_segments, _ = level_of_detail(stalls, budget // 4, span)
    hold_segments, _ = level_of_detail(holds, budget // 8, span)
    arrows = pd.concat([flag_arrows(frame), xcore_arrows(frame)], ignore_index=True)
    lit = frame.iloc[:0] if highlight is None else p.line_events(*highlight)
    lit_segments, _ = level_of_detail(lit, budget // 4, span)
    data = TimelineData(p.lanes, segments, stall_segments, hold_segments, arrows,
                        lit_segments, lod, len(frame), p.cores_shown, p.cores_total)
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
    """A trace of thick line segments (its hover is carried by `_hover_trace`)."""
    x, y = _segment_xy(seg, offset)
    return {"type": "scattergl", "x": x, "y": y, "mode": "lines", "name": name,
            "legendgroup": group or name, "showlegend": legend, "hoverinfo": "skip",
            "opacity": opacity, "line": {"color": color, "width": width}, **row_kw}


def _hover_trace(parts: list[tuple[pd.DataFrame, float]], width: float, row_kw: dict) -> dict:
    """One invisible marker per segment, at its middle, carrying the hover text of all
    segments (one trace instead of one per kind keeps WebGL draw calls low)."""
    mid_x = np.concatenate([((s["t0"] + s["t1"]) / 2).to_numpy(dtype=np.float32)
                            for s, _ in parts])
    mid_y = np.concatenate([s["lane"].to_numpy(dtype=np.float32) + off for s, off in parts])
    text = np.concatenate([s["text"].to_numpy() for s, _ in parts])
    return {"type": "scattergl", "x": mid_x, "y": mid_y, "mode": "markers", "name": "details",
            "showlegend": False, "hovertext": text, "hoverinfo": "text",
            "marker": {"color": "#57606a", "size": max(4.0, width), "opacity": 0.0},
            "hoverlabel": {"bgcolor": "white", "bordercolor": "#8c959f",
                           "font": {"color": "#1f2328"}}, **row_kw}


def add_timeline(fig: go.Figure, data: TimelineData, row: int | None = None,
                 legend: bool = True, lane_px: float = 20.0) -> None:
    """Draw `data` into `fig` (into subplot `row` when given)."""
    fig.add_traces(timeline_traces(data, row, legend, lane_px))


def timeline_traces(data: TimelineData, row: int | None = None, legend: bool = True,
                    lane_px: float = 20.0) -> list[dict]:
    """The plotly traces (as dicts) drawing `data`: halo, stalls, syncs, op kinds, mutex
    holds, one hover layer, arrows, stall labels."""
    row_kw = {} if row is None else {"xaxis": f"x{row if row > 1 else ''}",
                                     "yaxis": f"y{row if row > 1 else ''}"}
    width = max(3.0, lane_px * 0.62)
    traces: list[Any] = []
    hover: list[tuple[pd.DataFrame, float]] = []
    if len(data.highlight):
        traces.append(_bar_trace(data.highlight, "selected line", "#ffc400", width + 7,
                                 row_kw, legend=legend))
    for reason, seg in data.stalls.groupby("reason", observed=True, sort=True):
        traces.append(_bar_trace(seg, f"stall: {reason}", STALL_COLORS.get(reason, "#bbb"),
                                 width * 0.8, row_kw, opacity=0.45, legend=legend))
        hover.append((seg, 0.0))
    by_kind = dict(tuple(data.segments.groupby("cat", observed=True, sort=False)))
    for cat in sorted(by_kind, key=lambda c: c != "sync"):  # syncs first: thin, underneath
        thin = width * 0.35 if cat == "sync" else width
        traces.append(_bar_trace(by_kind[cat], str(cat), CATEGORY_COLORS[str(cat)], thin,
                                 row_kw, legend=legend))
        hover.append((by_kind[cat], 0.0))
    if len(data.holds):
        traces.append(_bar_trace(data.holds, "mutex hold", "#d4a72c", max(2.0, width * 0.18),
                                 row_kw, offset=0.36, legend=legend))
        hover.append((data.holds, 0.36))
    if hover:
        traces.append(_hover_trace(hover, width, row_kw))
    traces += _arrow_traces(data.arrows, row_kw, legend)
    traces += _stall_labels(data.stalls, row_kw)
    return traces


def _arrow_traces(arrows: pd.DataFrame, row_kw: dict, legend: bool) -> list[Any]:
    out = []
    styles = {"flag": ("set → wait flag", "#6639ba", "solid"),
              "xcore": ("cross-core signal", "#cf222e", "dot")}
    for kind, (name, color, dash) in styles.items():
        sub = arrows[arrows["kind"] == kind]
        if sub.empty:
            continue
        if len(sub) > MAX_ARROWS:  # evenly spread over the run, not just its start
            sub = sub.sort_values("x0").iloc[np.linspace(0, len(sub) - 1, MAX_ARROWS).astype(int)]
            name = f"{name} ({MAX_ARROWS} of {len(arrows[arrows['kind'] == kind]):,})"
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
                    "hovertext": text, "hoverinfo": "text", **row_kw})
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
                    budget: int = SEGMENT_BUDGET, title: str | None = None) -> go.Figure:
    """The timeline of `trace` as a plotly figure (see the module docstring)."""
    data = timeline_data(trace, cores, max_cores, budget, highlight)
    px = lane_px(len(data.lanes))
    fig = go.Figure(data=timeline_traces(data, lane_px=px))
    head = title or f"{trace.meta.kernel}: {trace.duration_us:,.3f} us simulated"
    if data.notes:
        head += f"  <span style='font-size:11px;color:#6e7781'>({'; '.join(data.notes)})</span>"
    style_timeline(fig, data.lanes, px, head)
    return fig


def style_timeline(fig: go.Figure, lanes: pd.DataFrame, px: float, title: str,
                   row: int | None = None) -> None:
    axis = {"tickvals": lanes["lane"].tolist(), "ticktext": lanes["label"].tolist(),
            "autorange": "reversed", "showgrid": True, "gridcolor": "#eef1f4",
            "zeroline": False, "tickfont": {"size": 10, "family": "monospace"}}
    if row is None:
        fig.update_yaxes(**axis)
        fig.update_xaxes(title_text="time (us)", showgrid=True, gridcolor="#eef1f4",
                         zeroline=False)
        fig.update_layout(height=int(min(2400, 154 + px * max(3, len(lanes)))))
    else:
        fig.update_yaxes(row=row, col=1, **axis)
    fig.update_layout(
        title={"text": title, "font": {"size": 13}, "x": 0.01, "xanchor": "left",
               "y": 0.995, "yanchor": "top", "yref": "container"},
        template="plotly_white", hovermode="closest", dragmode="zoom",
        margin={"l": 10, "r": 10, "t": 74, "b": 40},
        legend={"orientation": "h", "y": 1.0, "yanchor": "bottom", "x": 0, "xanchor": "left",
                "font": {"size": 11}, "itemclick": "toggle"},
        hoverlabel={"font": {"family": "monospace", "size": 11}})


def utilization_table(trace: Any) -> pd.DataFrame:
    """PipeUtilization summary: per core kind and pipe, busy µs and ratios."""
    util = trace.pipe_utilization()
    cols = ["core_kind", "pipe", "cores", "busy_cycles", "busy_us", "ratio", "max_core_ratio"]
    return util[cols] if len(trace.launch_metas) == 1 else util
