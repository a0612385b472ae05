"""The Roofline view: achieved HBM bandwidth and FLOP/s against the SoC's roofs.

Owns `roofline_rows` (per launch the `Trace.roofline` point against its SoC's peaks,
`pypto_pro.trace.soc_peaks`: bytes, FLOPs, intensity, achieved vs peak, bound),
`roofline_figure` (log-log plotly chart: memory roof, cube and vector roofs, ridge points, one
marker per launch) and `roofline_html` (the static table).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from pypto_pro.trace import soc_peaks

from .html import table


def roofline_rows(launches: list[Any]) -> pd.DataFrame:
    rows = []
    for i, rec in enumerate(launches):
        if not rec.pipe_work:  # (scalar work only: no bytes moved, no FLOPs)
            continue
        peaks = soc_peaks(rec.trace.meta.soc)
        r = rec.trace.roofline(peaks)
        rows.append({"#": i, "kernel": rec.kernel, "unit": r.unit, "hbm_MB": r.hbm_bytes / 1e6,
                     "GFLOP": r.flops / 1e9, "intensity": r.intensity,
                     "GB/s": r.achieved_bytes_per_s / 1e9,
                     "peak GB/s": r.peak_bytes_per_s / 1e9,
                     "TFLOP/s": r.achieved_flops_per_s / 1e12,
                     "peak TFLOP/s": r.peak_flops_per_s / 1e12, "bound": r.bound,
                     "of roof": r.fraction_of_roof, "soc": rec.trace.meta.soc})
    return pd.DataFrame(rows)


def roofline_figure(launches: list[Any]) -> go.Figure | None:
    rows = roofline_rows(launches)
    if rows.empty:
        return None
    peaks = soc_peaks(rows["soc"].iloc[0])
    bw = peaks["hbm_bytes_per_s"]
    finite = rows["intensity"].replace(math.inf, np.nan).dropna()
    lo = min(0.01, float(finite.min()) / 3) if len(finite) else 0.01
    x = np.logspace(math.log10(lo), 4, 200)
    fig = go.Figure()
    for unit, color in (("cube", "#E45756"), ("vector", "#F58518")):
        peak = peaks[f"{unit}_flops_per_s"]
        fig.add_trace(go.Scatter(x=x, y=np.minimum(peak, x * bw) / 1e12, mode="lines",
                                 name=f"{unit} roof ({peak / 1e12:,.1f} TFLOP/s)",
                                 line={"color": color, "width": 2}))
        fig.add_trace(go.Scatter(x=[peak / bw], y=[peak / 1e12], mode="markers",
                                 marker={"color": color, "symbol": "diamond-open", "size": 9},
                                 name=f"{unit} ridge {peak / bw:,.1f} FLOP/B", showlegend=False,
                                 hovertext=f"{unit} ridge: {peak / bw:,.1f} FLOP/byte",
                                 hoverinfo="text"))
    for _, r in rows.iterrows():
        if not math.isfinite(r["intensity"]) or r["intensity"] <= 0:
            continue
        fig.add_trace(go.Scatter(
            x=[r["intensity"]], y=[r["TFLOP/s"]], mode="markers+text", text=[r["kernel"]],
            textposition="top center", name=f"#{r['#']} {r['kernel']}",
            marker={"size": 12, "color": "#1f6feb", "line": {"color": "white", "width": 1}},
            hovertext=f"{r['kernel']}: {r['intensity']:.3g} FLOP/B, {r['GB/s']:,.1f} GB/s, "
                      f"{r['TFLOP/s']:.3g} TFLOP/s ({r['bound']} bound, "
                      f"{r['of roof']:.1%} of roof)",
            hoverinfo="text"))
    fig.update_xaxes(type="log", dtick=1, title_text="arithmetic intensity (FLOP / HBM byte)")
    fig.update_yaxes(type="log", dtick=1, title_text="TFLOP/s")
    fig.update_layout(template="plotly_white", height=420,
                      title={"text": f"Roofline on {rows['soc'].iloc[0]} (HBM "
                                     f"{bw / 1e12:,.2f} TB/s, FP16 peaks)",
                             "font": {"size": 13}, "x": 0.01},
                      margin={"l": 10, "r": 10, "t": 50, "b": 40})
    return fig


def roofline_html(launches: list[Any]) -> str:
    rows = roofline_rows(launches)
    if rows.empty:
        return ("<p class='note'>no launch moved data or computed on a pipe: nothing to place "
                "under the roofs</p>")
    fmts = {"hbm_MB": ".3f", "GFLOP": ".4f", "intensity": ".3g", "GB/s": ",.1f",
            "peak GB/s": ",.0f", "TFLOP/s": ".4g", "peak TFLOP/s": ",.1f", "of roof": ".1%"}
    return table(rows.drop(columns=["soc"]), fmts, numeric=("#",))
