"""Plotly figures as notebook outputs and files, independent of plotly's global renderer.

Owns the mimetype names, `figure_json` (a figure as the plain JSON the plotly mimetype carries),
`FigureOutput` (a figure plus a text summary with its own `_repr_mimebundle_`, so a terminal
shows text and never opens a browser) and `export_trace` (Perfetto JSON, msprof JSON or a
standalone figure page, `page.plotly_page`, chosen by the file extension). Files are written
atomically with the trace package's `write_text`, re-exported here for the report.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pypto_pro.trace import write_text

PLOTLY_MIME = "application/vnd.plotly.v1+json"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
PYPTO_MIME = "application/vnd.pypto.cell+json"


def figure_json(fig: Any) -> dict:
    """A plotly figure as the plain JSON dict the plotly mimetype carries."""
    import plotly.io as pio

    return json.loads(pio.to_json(fig, validate=False))


def under_kernel() -> bool:
    """True under a Jupyter kernel with ipywidgets installed (widgets can be shown)."""
    try:
        import ipywidgets  # noqa: F401
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def widget_view(children_html: str, figure: Any) -> dict:
    """The widget-view mimetype of an HTML block above a plotly figure."""
    import ipywidgets as w

    out = w.Output()
    data = {"text/plain": "<figure>", PLOTLY_MIME: figure_json(figure)}
    out.outputs = ({"output_type": "display_data", "data": data, "metadata": {}},)
    box = w.VBox([w.HTML(children_html), out])
    return {WIDGET_MIME: box._repr_mimebundle_()[WIDGET_MIME]}


class FigureOutput:
    """A plotly figure shown through the plotly mimetype, with a text fallback."""

    def __init__(self, figure: Any, text: str) -> None:
        self.figure = figure
        self.text = text

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict:
        bundle: dict[str, Any] = {"text/plain": self.text}
        if self.figure is not None:
            bundle[PLOTLY_MIME] = figure_json(self.figure)
        return bundle

    def __repr__(self) -> str:
        return self.text


def export_trace(trace: Any, path: str | os.PathLike[str], fig: Any = None) -> Path:
    """`.msprof.json` → msprof simulator JSON, `.json` → Perfetto (Chrome trace) JSON,
    `.html` → the timeline figure as a standalone page."""
    from pypto_pro.trace import to_chrome_json, to_msprof_json

    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    name = target.name.lower()
    if name.endswith(".json"):
        (to_msprof_json if name.endswith(".msprof.json") else to_chrome_json)(trace, target)
        _relabel_file(target)
    elif name.endswith((".html", ".htm")):
        if fig is None:
            from .views.timeline import timeline_figure

            fig = timeline_figure(trace)
        from .page import figure_slot, plotly_page

        write_text(target, plotly_page(f"timeline: {trace.meta.kernel}",
                                       figure_slot(fig, "pypto-timeline")))
    else:
        raise ValueError(f"cannot export a trace to {target.name!r}: use .json (Perfetto), "
                         ".msprof.json or .html")
    return target


def _relabel_file(path: Path) -> None:
    """Name notebook cells in an exported trace as "Cell In[n], line m" (`locations`)."""
    from .locations import relabel

    text = path.read_text()
    new = relabel(text)
    if new != text:
        write_text(path, new)
