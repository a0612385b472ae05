"""The Blocks view: when every block ran on its AIC / AIV0 / AIV1, in which wave, and how even
the work was.

Owns `block_spans` (one row per block unit from `Trace.block_detail` with its wave and unit
label), `imbalance` (per unit: slowest and fastest block, mean, max/mean − 1, waves, and how
much of the last wave's time the cores sat idle), `idle_blocks` (launched blocks that issued no
pipe work: the trace has no event of theirs), `blocks_figure` (plotly bars from each unit's
start to end, one colour per unit, waves shaded behind, idle blocks as grey ticks) and
`blocks_html` (the static table and summary).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from .html import esc, table

UNIT_COLORS = {"AIC": "#E45756", "AIV": "#F58518", "AIV0": "#F58518", "AIV1": "#4C78A8"}


def block_spans(trace: Any) -> pd.DataFrame:
    """launch, block, unit, wave, start/end/duration in µs and cycles, per-pipe busy ratios."""
    detail = trace.block_detail()
    mix = {k for k, m in trace.launch_metas.items() if m.kernel_type == "mix"}
    suffix = np.where(detail["launch"].isin(mix) & (detail["core_kind"] == "AIV"),
                      detail["subblock"].astype(str), "")
    detail = detail.assign(unit=detail["core_kind"].astype(str) + suffix)
    waves = trace.waves()[["launch", "block", "wave"]]
    return detail.merge(waves, on=["launch", "block"], how="left")


def imbalance(spans: pd.DataFrame) -> pd.DataFrame:
    """Per unit kind: blocks, waves, mean/min/max duration, slowest block, imbalance."""
    rows = []
    for unit, g in spans.groupby("unit", sort=True):
        dur = g["duration_us"]
        slow = g.loc[dur.idxmax()]
        rows.append({"unit": unit, "blocks": int(g["block"].nunique()),
                     "waves": int(g["wave"].max()) + 1, "mean_us": dur.mean(),
                     "min_us": dur.min(), "max_us": dur.max(),
                     "slowest": f"block {int(slow['block'])}",
                     "imbalance": dur.max() / dur.mean() - 1 if dur.mean() > 0 else 0.0})
    return pd.DataFrame(rows)


def tail_idle(spans: pd.DataFrame) -> float:
    """Fraction of the last wave's core time spent idle waiting for its slowest block."""
    last = spans[spans["wave"] == spans["wave"].max()]
    end = last["end_us"].max()
    start = last["start_us"].min()
    if end <= start:
        return 0.0
    return float(((end - last["end_us"]) / (end - start)).mean())


def idle_blocks(trace: Any, spans: pd.DataFrame) -> dict[int, list[int]]:
    """Launch → the blocks it launched (its `block_dim`) that issued no pipe work."""
    out = {}
    for launch, meta in trace.launch_metas.items():
        busy = set(spans.loc[spans["launch"] == launch, "block"].astype(int))
        idle = [b for b in range(int(meta.block_dim)) if b not in busy]
        if idle:
            out[launch] = idle
    return out


def _ranges(blocks: list[int]) -> str:
    parts, start = [], blocks[0]
    for a, b in zip(blocks, [*blocks[1:], None]):
        if b != a + 1:
            parts.append(f"{start}" if start == a else f"{start}–{a}")
            start = b
    return ", ".join(parts)


def summary_lines(spans: pd.DataFrame, idle: dict[int, list[int]] | None = None) -> list[str]:
    lines = []
    for launch, blocks in (idle or {}).items():
        where = f"launch {launch}: " if len(idle) > 1 else ""
        lines.append(f"{where}{len(blocks)} block(s) issued no pipe work (blocks "
                     f"{_ranges(blocks)}): the kernel gave them nothing to do")
    if spans.empty:
        return lines
    for r in imbalance(spans).itertuples():
        lines.append(f"{r.unit}: {r.blocks} blocks in {r.waves} wave(s); duration "
                     f"{r.min_us:.3f}–{r.max_us:.3f} us (mean {r.mean_us:.3f}); slowest "
                     f"{r.slowest}; imbalance {r.imbalance:.1%}")
    waves = int(spans["wave"].max()) + 1
    if waves > 1:
        lines.append(f"last wave: cores idle {tail_idle(spans):.0%} of its time on average "
                     f"waiting for its slowest block")
    return lines


def blocks_figure(trace: Any, max_blocks: int = 256) -> go.Figure:
    spans = block_spans(trace)
    idle = sorted({b for bs in idle_blocks(trace, spans).values() for b in bs})
    blocks = sorted(set(spans["block"].unique()) | set(idle))[:max_blocks]
    spans = spans[spans["block"].isin(blocks)]
    fig = go.Figure()
    for wave, g in spans.groupby("wave"):
        if wave % 2:
            fig.add_vrect(x0=g["start_us"].min(), x1=g["end_us"].max(), fillcolor="#f0f3f6",
                          line_width=0, layer="below")
    for unit, g in spans.groupby("unit", sort=True):
        text = (unit + " block " + g["block"].astype(str) + ", wave " + g["wave"].astype(str)
                + "<br>" + g["start_us"].map("{:.3f}".format) + "–"
                + g["end_us"].map("{:.3f}".format) + " us (" + g["duration_cycles"].map(
                    "{:,}".format) + " cyc)")
        fig.add_trace(go.Bar(y=g["block"], x=g["duration_us"], base=g["start_us"],
                             orientation="h", name=unit, marker_color=UNIT_COLORS.get(unit),
                             hovertext=text, hoverinfo="text"))
    shown_idle = [b for b in idle if b in set(blocks)]
    if shown_idle:  # a grey tick at time 0: launched, never busy
        fig.add_trace(go.Scatter(y=shown_idle, x=[0.0] * len(shown_idle), mode="markers",
                                 name="idle (no pipe work)",
                                 marker={"symbol": "line-ew-open", "size": 10,
                                         "color": "#8c959f"},
                                 hovertext=[f"block {b}: issued no pipe work"
                                            for b in shown_idle], hoverinfo="text"))
    label = f"first {max_blocks} of " if len(blocks) == max_blocks else ""
    busy = len(set(spans["block"]) & set(blocks))
    what = (f"{busy} busy + {len(shown_idle)} idle blocks" if shown_idle
            else f"{len(blocks)} blocks")
    fig.update_layout(
        barmode="group", template="plotly_white", bargap=0.25,
        height=int(min(1400, 140 + 18 * len(blocks) * max(1, spans["unit"].nunique()) / 1.6)),
        title={"text": f"{label}{what} per unit (shaded: odd waves)",
               "font": {"size": 13}, "x": 0.01},
        margin={"l": 10, "r": 10, "t": 60, "b": 40},
        legend={"orientation": "h", "y": 1.0, "yanchor": "bottom", "x": 0.6})
    fig.update_yaxes(title_text="block", autorange="reversed", dtick=1 if len(blocks) <= 40
                     else None)
    fig.update_xaxes(title_text="time (us)")
    return fig


def blocks_html(trace: Any, max_rows: int = 64) -> str:
    spans = block_spans(trace)
    lines = summary_lines(spans, idle_blocks(trace, spans))
    if spans.empty:
        return "<p class='note'>no block issued pipe work</p>" + "".join(
            f"<p class='note'>{esc(line)}</p>" for line in lines)
    items = "".join(f"<li>{esc(line)}</li>" for line in lines)
    cols = ["block", "unit", "wave", "start_us", "end_us", "duration_us", "duration_cycles"]
    ratios = [c for c in spans.columns if c.endswith("_ratio") and spans[c].max() > 0]
    shown = spans[cols + ratios].head(max_rows)
    more = (f"<p class='note'>first {max_rows} of {len(spans)} rows</p>"
            if len(spans) > max_rows else "")
    fmts = {c: ".3f" for c in ("start_us", "end_us", "duration_us")}
    fmts.update({c: ".0%" for c in ratios})
    return (f"<ul class='note'>{items}</ul>"
            + table(shown, fmts, numeric=("block", "wave", "duration_cycles")) + more)
