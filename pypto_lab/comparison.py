"""Comparisons behind `pypto_lab.compare(a, b)`: two runs side by side.

Owns `Comparison`: the final IR of each side's kernel diffed with difflib (concise, each
kernel's own name written `KERNEL`, so a renamed copy differs only where its code does), the
per-pipe busy time of both launches (summed over the cores of each kind, and per core) with the
change, the headline numbers (simulated µs, cycles, wall time, pass count), and both timelines
on one shared time axis (two plotly subplots, `shared_xaxes`). Accepts `CellResult`s, Traces or
jit kernels (their last launch). Renders as text, script-free HTML and plotly JSON like a
`CellResult`.
"""
from __future__ import annotations

import difflib
import re
from typing import Any

import pandas as pd

from .figures import PLOTLY_MIME, figure_json, under_kernel, widget_view
from .views.html import esc, table, wrap


def trace_of(obj: Any) -> Any:
    """The Trace behind a CellResult, LaunchRecord, jit kernel or Trace (None if none)."""
    from pypto_pro.trace import Trace

    if isinstance(obj, Trace):
        return obj
    for attr in ("trace", "last_trace"):
        value = getattr(obj, attr, None)
        if value is not None:
            return value
    return None


def _final_ir(obj: Any) -> tuple[str, str]:
    """(kernel name, its final IR, concise, with the kernel's own name written `KERNEL`: a
    diff of two versions then shows what changed in the code, not the rename)."""
    from .views.source import ir_spans

    kernels = getattr(obj, "kernels", None)
    variants = getattr(obj, "variants", None)
    if kernels:
        compiled = kernels[0].compiled
    elif variants:
        compiled = variants[0]
    else:
        return "?", ""
    text = "\n".join(ir_spans(r[-1], concise=True)[0] for r in compiled.passes.values())
    return compiled.name, re.sub(rf"\b{re.escape(compiled.name)}\b", "KERNEL", text)


class Comparison:
    """Two runs side by side (see the module docstring)."""

    def __init__(self, a: Any, b: Any, labels: tuple[str, str] = ("A", "B")) -> None:
        self.a, self.b = a, b
        self.labels = labels
        self.traces = (trace_of(a), trace_of(b))

    def ir_diff(self, context: int = 3) -> str:
        (na, ia), (nb, ib) = _final_ir(self.a), _final_ir(self.b)
        return "".join(difflib.unified_diff(
            ia.splitlines(keepends=True), ib.splitlines(keepends=True),
            fromfile=f"{self.labels[0]}: {na}", tofile=f"{self.labels[1]}: {nb}", n=context))

    def headline(self) -> pd.DataFrame:
        rows = []
        for label, trace in zip(self.labels, self.traces):
            rows.append({"run": label,
                         "kernel": trace.meta.kernel if trace is not None else "-",
                         "simulated_us": trace.duration_us if trace is not None else None,
                         "cycles": trace.duration_cycles if trace is not None else None,
                         "events": len(trace.events) if trace is not None else 0})
        frame = pd.DataFrame(rows)
        if all(t is not None for t in self.traces):
            frame["speedup_vs_A"] = frame["simulated_us"].iloc[0] / frame["simulated_us"]
        return frame

    def pipe_table(self) -> pd.DataFrame:
        """Per core kind and pipe: busy µs of A and B summed over the kind's cores (columns
        named after the labels), per core (µs of the average core: `<label> per core`),
        B − A and B / A of the sums."""
        frames = []
        for label, trace in zip(self.labels, self.traces):
            if trace is None:
                continue
            util = trace.pipe_utilization().groupby(["core_kind", "pipe"], observed=True,
                                                    sort=False)[["busy_us", "cores"]].sum()
            frames.append(pd.DataFrame({label: util["busy_us"],
                                        f"{label} per core": util["busy_us"] / util["cores"]}))
        if len(frames) < 2:
            return pd.DataFrame()
        both = pd.concat(frames, axis=1).fillna(0.0).reset_index()
        a, b = self.labels
        both["delta_us"] = both[b] - both[a]
        both["ratio"] = both[b] / both[a].where(both[a] > 0)
        return both

    def figure(self) -> Any:
        """Both timelines on one time axis, as a plotly `go.Figure` (`plain_figure`'s)."""
        import plotly.graph_objects as go

        return go.Figure(self.plain_figure())

    def plain_figure(self) -> dict:
        """Both timelines as one plain figure dict: run A above run B, each its own y axis,
        the x axes matched (what plotly's `make_subplots(rows=2, shared_xaxes=True)` lays
        out), without building plotly objects (see `figures.figure_json`)."""
        from .views.timeline import lane_axis, lane_px, timeline_data, timeline_style, \
            timeline_traces

        datas = [timeline_data(t) if t is not None else None for t in self.traces]
        lanes = [max(1, len(d.lanes)) if d else 1 for d in datas]
        px = lane_px(sum(lanes))
        title = " vs ".join(f"<b>{lab}</b> {t.meta.kernel} {t.duration_us:,.3f} us"
                            for lab, t in zip(self.labels, self.traces) if t is not None)
        spacing = 0.06
        low = (1 - spacing) * lanes[1] / sum(lanes)  # the bottom row's share of the height
        domains = ([low + spacing, 1.0], [0.0, low])
        layout: dict[str, Any] = {
            **timeline_style(title + " (shared time axis)"),
            "height": int(min(2400, 200 + px * sum(lanes))),
            "xaxis": {"anchor": "y", "domain": [0.0, 1.0], "matches": "x2",
                      "showticklabels": False},
            "xaxis2": {"anchor": "y2", "domain": [0.0, 1.0], "title": {"text": "time (us)"}}}
        traces: list[dict] = []
        for row, (data, label) in enumerate(zip(datas, self.labels), start=1):
            axis = {"anchor": f"x{row if row > 1 else ''}", "domain": domains[row - 1],
                    "title": {"text": f"<b>{label}</b>", "standoff": 4}}
            if data is not None:
                traces += timeline_traces(data, row=row, legend=row == 1, lane_px=px)
                axis = {**lane_axis(data.lanes), **axis}
            layout[f"yaxis{row if row > 1 else ''}"] = axis
        return {"data": traces, "layout": layout}

    def summary(self) -> str:
        head = self.headline()
        lines = [f"compare {self.labels[0]} vs {self.labels[1]}"]
        for r in head.itertuples():
            us = "-" if r.simulated_us is None else f"{r.simulated_us:,.3f} us"
            lines.append(f"  {r.run}: {r.kernel} {us}")
        if "speedup_vs_A" in head:
            lines.append(f"  B is {head['speedup_vs_A'].iloc[1]:.2f}x the speed of A")
        diff = self.ir_diff()
        added = sum(1 for ln in diff.splitlines() if ln.startswith("+") and ln[:3] != "+++")
        removed = sum(1 for ln in diff.splitlines() if ln.startswith("-") and ln[:3] != "---")
        lines.append(f"  final IR: +{added} / -{removed} lines")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.summary()

    def to_html(self) -> str:
        from pygments.lexers import DiffLexer

        from .views.html import code_block

        diff = self.ir_diff()
        pipes = self.pipe_table()
        body = ["<div class='head'><b>compare</b>"
                f"<span>{esc(self.labels[0])} vs {esc(self.labels[1])}</span></div>",
                "<h3>Headline</h3>", table(self.headline(), {"simulated_us": ",.3f",
                                                             "speedup_vs_A": ".2f"})]
        if not pipes.empty:
            a, b = self.labels
            body += ["<h3>Busy time per pipe (µs)</h3><p class='note'>"
                     f"<b>{esc(a)}</b>, <b>{esc(b)}</b>: summed over all cores of the kind; "
                     "<i>per core</i>: the average core; delta and ratio of the sums</p>",
                     table(pipes, {a: ".3f", b: ".3f", f"{a} per core": ".3f",
                                   f"{b} per core": ".3f", "delta_us": "+.3f",
                                   "ratio": ".2f"})]
        body += ["<h3>Final IR diff</h3>",
                 code_block(diff, DiffLexer(), "cmpdiff") if diff else
                 "<p class='note'>identical final IR</p>"]
        return wrap("".join(body))

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict:
        bundle: dict[str, Any] = {"text/plain": self.summary(), "text/html": self.to_html()}
        if all(t is not None for t in self.traces):
            fig = self.plain_figure()
            if under_kernel():
                bundle.update(widget_view(bundle["text/html"], fig))
            else:
                bundle[PLOTLY_MIME] = figure_json(fig)
        return bundle


def compare(a: Any, b: Any, labels: tuple[str, str] = ("A", "B")) -> Comparison:
    """Two results (CellResults, Traces or kernels) side by side."""
    return Comparison(a, b, labels)
