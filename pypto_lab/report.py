"""The standalone HTML report of a cell result, and result export by file extension.

Owns `report_html` (one self-contained page, `page.plotly_page`: the static overview with every
panel, then the timeline, blocks and roofline figures; plotly.js embedded once, compressed, no
`src=` and no stylesheet links, so it opens offline) and `export_result` (`.html` → report,
`.json` → Perfetto trace, `.msprof.json` → msprof simulator JSON; files are written
atomically). In the report, picking a kernel line highlights its IR and C++ lines (CSS) and its
timeline events (a few lines of script restyling a halo trace), and clicking a timeline event
picks its line.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from .figures import export_trace, write_text
from .options import PANELS
from .page import figure_slot, plotly_page
from .views.plot_clicks import CLICK_JS

_LINK_SCRIPT = """
document.querySelectorAll('input[type=radio][data-halo]').forEach(function (radio) {
  radio.addEventListener('change', function () {
    var gd = document.getElementById(radio.dataset.halo);
    var data = JSON.parse(document.getElementById(radio.dataset.halo + '-lines').textContent);
    var seg = data[radio.dataset.line] || {x: [], y: []};
    if (gd && window.Plotly) { Plotly.restyle(gd, {x: [seg.x], y: [seg.y]}, [0]); }
  });
});
window.pyptoPageReady = function () {
  pyptoTimelineClicks(document.body, function (line) {
    var radio = document.querySelector('input[type=radio][data-halo][data-line="' + line +
                                       '"]');
    if (radio) {
      radio.checked = true;
      radio.dispatchEvent(new Event('change'));
    }
  });
};
"""


def _halo_data(result: Any, trace: Any, budget: int = 2000) -> dict[str, dict]:
    """Kernel line → thick-segment x/y of its events (level of detail per line)."""
    from .views.timeline import prepare
    from .views.timeline_lod import level_of_detail

    if not result.kernels:
        return {}
    file = result.kernels[0].file
    prepared = prepare(trace, result.options.cores)
    out: dict[str, dict] = {}
    for line in sorted(int(n) for n in prepared.frame["line"].unique() if n > 0):
        seg, _ = level_of_detail(prepared.line_events(file, line), budget, prepared.span)
        if seg.empty:
            continue
        n = len(seg)
        xs: list = [None] * (3 * n)
        ys: list = [None] * (3 * n)
        xs[0::3], xs[1::3] = seg["t0"].round(6).tolist(), seg["t1"].round(6).tolist()
        ys[0::3] = ys[1::3] = seg["lane"].astype(int).tolist()
        out[str(line)] = {"x": xs, "y": ys}
    return out


def _timeline_block(result: Any, div_id: str) -> str:
    fig = result.timeline_plain()
    if fig is None:
        return ""
    from .views.timeline import lane_px, prepare

    lanes = len(prepare(result.trace, result.options.cores).lanes)
    width = max(3.0, lane_px(lanes) * 0.62) + 7
    kind = next((t["type"] for t in fig["data"] if t.get("type") in ("scatter", "scattergl")),
                "scatter")
    halo = {"type": kind, "x": [], "y": [], "mode": "lines", "name": "selected line",
            "hoverinfo": "skip", "line": {"color": "#ffc400", "width": width}}
    fig = {**fig, "data": [halo, *fig["data"]]}
    lines = json.dumps(_halo_data(result, result.trace)).replace("</", "<\\/")
    return ("<h2>Timeline</h2>" + figure_slot(fig, div_id)
            + f"<script type='application/json' id='{div_id}-lines'>{lines}</script>")


def report_html(result: Any, title: str | None = None) -> str:
    """The report page as one string (see the module docstring)."""
    full = dataclasses.replace(result, options=dataclasses.replace(result.options, show=PANELS))
    body = full.to_html(report=True)
    timeline_id = "pypto-report-timeline"
    figures = [_timeline_block(full, timeline_id)]
    blocks, roof = full.blocks_figure(), full.roofline_figure()
    if blocks is not None:
        figures.append("<h2>Blocks</h2>" + figure_slot(blocks, "pypto-report-blocks"))
    if roof is not None:
        figures.append("<h2>Roofline</h2>" + figure_slot(roof, "pypto-report-roofline"))
    body = _tag_radios(body, timeline_id)
    name = title or ", ".join(k.name for k in result.kernels) or result.source.label
    return plotly_page(f"PyPTO Pro report: {name}", body + "".join(figures),
                       CLICK_JS + _LINK_SCRIPT,
                       "body{margin:16px 24px;font-family:system-ui,sans-serif}"
                       "h2{font:600 16px system-ui,sans-serif;margin:18px 0 6px}")


def _tag_radios(body: str, timeline_id: str) -> str:
    """Mark the source-line radios so the script knows which timeline to restyle."""
    import re

    return re.sub(r"<input type='radio' name='([^']+)' id='([^']+)-r(\d+)'",
                  lambda m: (f"<input type='radio' name='{m.group(1)}' id='{m.group(2)}-r"
                             f"{m.group(3)}' data-halo='{timeline_id}' "
                             f"data-line='{m.group(3)}'"), body)


def write_report(result: Any, path: str | Path, title: str | None = None) -> Path:
    """Write the report atomically; returns the path."""
    return write_text(path, report_html(result, title))


def export_result(result: Any, path: Path) -> Path:
    """Export by extension: .html report, .json Perfetto, .msprof.json msprof simulator."""
    name = path.name.lower()
    if name.endswith((".html", ".htm")):
        return write_report(result, path)
    if name.endswith(".json"):
        traces = [r.trace for r in result.launches if r.trace is not None]
        if not traces:
            raise ValueError("the cell made no timed launch: there is no trace to export")
        from pypto_pro.trace import Trace

        trace = traces[0] if len(traces) == 1 else Trace.concat(traces)
        return export_trace(trace, path)
    raise ValueError(f"cannot export to {path.name!r}: use .html (report), .json (Perfetto) "
                     "or .msprof.json")
