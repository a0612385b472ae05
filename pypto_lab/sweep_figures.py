"""Plotly figures of a sweep: time over the grid, a heatmap of two parameters, the Pareto view.

Every marker carries its point number in `customdata`, so a click (`sweep_widget`) or a hover
names the point to drill into with `SweepResult.workbench(point)`.
Invalid points are grey crosses in their own strip above the plot (an "invalid" category axis,
off the numeric one) with their error in the hover, so a failed region of the grid is visible
rather than missing, and no time is made up for it.
"""
from __future__ import annotations

from typing import Any

import pandas as pd
import plotly.graph_objects as go

_VALID = "#1f77b4"


def _hover(frame: pd.DataFrame, params: list[str]) -> list[str]:
    out = []
    for _, r in frame.iterrows():
        lines = [f"point {r['point']}"] + [f"{p} = {r[p]}" for p in params]
        if r["status"] == "ok":
            lines.append(f"{r['sim_us']:.2f} µs, bottleneck {r.get('bottleneck', '')}")
        else:
            lines.append(f"{r['status']}: {str(r.get('error', ''))[:120]}")
        out.append("<br>".join(lines))
    return out


def _invalid_trace(bad: pd.DataFrame, x: str, params: list[str]) -> go.Scatter:
    """The invalid points on the strip's axis `y2` (one "invalid" row)."""
    return go.Scatter(x=bad[x].astype(str), y=["invalid"] * len(bad), yaxis="y2",
                      mode="markers", name="invalid",
                      marker={"symbol": "x", "color": "#999", "size": 9},
                      customdata=bad["point"], hovertext=_hover(bad, params),
                      hoverinfo="text")


def grid_figure(result: Any, x: str | None, color: str | None, y: str) -> go.Figure:
    """`y` (simulated µs) against parameter `x`, one line per value of `color`; the other
    parameters pick their best value per (x, color) cell."""
    params = result.params
    x = x or params[0]
    color = color if color is not None else (params[1] if len(params) > 1 else None)
    table = result.table
    ok = table[table["status"] == "ok"]
    fig = go.Figure()
    groups = ok.groupby(color, sort=True) if color else [(None, ok)]
    for value, frame in groups:
        best = frame.loc[frame.groupby(x)[y].idxmin()].sort_values(x)
        fig.add_trace(go.Scatter(
            x=best[x].astype(str), y=best[y], mode="lines+markers",
            name=f"{color}={value}" if color else y, customdata=best["point"],
            hovertext=_hover(best, params), hoverinfo="text"))
    bad = table[table["status"] != "ok"]
    if not bad.empty:
        fig.add_trace(_invalid_trace(bad, x, params))
        fig.update_layout(yaxis={"domain": [0, 0.84]},
                          yaxis2={"domain": [0.88, 1.0], "type": "category",
                                  "showgrid": False, "fixedrange": True})
    fig.update_layout(title=f"{_label(y)} over {x}" + (f" by {color}" if color else ""),
                      xaxis_title=x, yaxis_title=_label(y), height=380,
                      margin={"l": 60, "r": 20, "t": 40, "b": 40})
    fig.update_xaxes(type="category")
    return fig


def heatmap_figure(result: Any, x: str, y: str, value: str) -> go.Figure:
    """`value` over two parameters (best over the others); empty cells had no valid point."""
    ok = result.table[result.table["status"] == "ok"]
    grid = ok.groupby([y, x])[value].min().unstack(x)
    fig = go.Figure(go.Heatmap(z=grid.to_numpy(), x=[str(c) for c in grid.columns],
                               y=[str(r) for r in grid.index], colorscale="Viridis_r",
                               colorbar={"title": _label(value)},
                               hovertemplate=f"{x}=%{{x}}<br>{y}=%{{y}}<br>%{{z:.2f}}"
                                             "<extra></extra>"))
    fig.update_layout(title=f"{_label(value)}: {y} × {x}", xaxis_title=x, yaxis_title=y,
                      height=380, margin={"l": 60, "r": 20, "t": 40, "b": 40})
    fig.update_xaxes(type="category")
    fig.update_yaxes(type="category")
    return fig


def pareto_front(frame: pd.DataFrame, x: str, y: str) -> pd.DataFrame:
    """Rows no other row beats on both `x` and `y` (smaller is better), sorted by `x`."""
    front, best_y = [], float("inf")
    for _, r in frame.sort_values([x, y]).iterrows():
        if r[y] < best_y:
            front.append(r)
            best_y = r[y]
    return pd.DataFrame(front)


def pareto_figure(result: Any) -> go.Figure:
    """Simulated time against on-chip footprint; the Pareto front joined by a line."""
    ok = result.table[result.table["status"] == "ok"]
    params = result.params
    kib = ok["footprint_bytes"] / 1024
    fig = go.Figure(go.Scatter(x=kib, y=ok["sim_us"], mode="markers", name="points",
                               marker={"color": _VALID, "size": 8, "opacity": 0.6},
                               customdata=ok["point"], hovertext=_hover(ok, params),
                               hoverinfo="text"))
    front = pareto_front(ok, "footprint_bytes", "sim_us")
    if not front.empty:
        fig.add_trace(go.Scatter(x=front["footprint_bytes"] / 1024, y=front["sim_us"],
                                 mode="lines+markers", name="Pareto front",
                                 marker={"color": "#d62728", "size": 10},
                                 customdata=front["point"], hovertext=_hover(front, params),
                                 hoverinfo="text"))
    fig.update_layout(title="simulated time vs on-chip footprint", xaxis_title="on-chip KiB",
                      yaxis_title="simulated µs", height=380,
                      margin={"l": 60, "r": 20, "t": 40, "b": 40})
    return fig


def _label(column: str) -> str:
    return {"sim_us": "simulated µs", "roofline": "fraction of roofline",
            "footprint_bytes": "on-chip bytes"}.get(column, column)
