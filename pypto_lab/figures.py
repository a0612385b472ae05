"""Plotly figures as notebook outputs and files, independent of plotly's global renderer.

Owns the mimetype names, `figure_json` (a figure as the plain JSON the plotly mimetype carries;
a figure given as a plain dict, `{"data": [trace dicts], "layout": {...}}` with the template
named, skips plotly's validation and deep copies and gives what the validated figure would),
`FigureOutput` (a figure plus a text summary with its own `_repr_mimebundle_`, so a terminal
shows text and never opens a browser) and `export_trace` (Perfetto JSON, msprof JSON or a
standalone figure page, `page.plotly_page`, chosen by the file extension). Files are written
atomically with the trace package's `write_text`, re-exported here for the report.
"""
from __future__ import annotations

import base64
import functools
import json
import math
import os
from pathlib import Path
from typing import Any

from pypto_pro.trace import write_text

PLOTLY_MIME = "application/vnd.plotly.v1+json"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
PYPTO_MIME = "application/vnd.pypto.cell+json"


def figure_json(fig: Any) -> dict:
    """A plotly figure (a `go.Figure` or a plain dict, see the module docstring) as the plain
    JSON dict the plotly mimetype carries."""
    if isinstance(fig, dict):
        return _plain_json(fig)
    import plotly.io as pio

    return json.loads(pio.to_json(fig, validate=False))


def _plain_json(fig: dict) -> dict:
    """What `json.loads(pio.to_json(go.Figure(fig)))` gives for a plain figure whose values
    are already what plotly's validators keep (the timeline's builder): the named template
    expanded, the numeric arrays that are dict values as plotly.js typed arrays (plotly's
    `to_dict`), NaN and infinities as null and every value JSON-native (plotly's encoder and
    a JSON round trip), built in one walk."""
    out = _json_value(fig)
    for trace in out.get("data", []):
        trace.pop("uid", None)
    layout = out.setdefault("layout", {})
    if isinstance(layout.get("template"), str):
        layout["template"] = json.loads(_template_json(layout["template"]))
    return out


#: dict keys whose values plotly never turns into typed arrays (`is_skipped_key`)
_UNTYPED_KEYS = frozenset({"geojson", "layer", "layers", "range"})
#: numpy dtype → plotly.js typed-array name (`plotlyjsShortTypes`)
_TYPED = {"int8": "i1", "uint8": "u1", "int16": "i2", "uint16": "u2", "int32": "i4",
          "uint32": "u4", "float32": "f4", "float64": "f8"}
_NARROW = {"int64": ("int8", "int16", "int32"), "uint64": ("uint8", "uint16", "uint32")}


def _json_value(value: Any, typed: bool = True) -> Any:
    """`value` as JSON would bring it back (containers copied, strings shared); with `typed`,
    numeric arrays that are dict values become typed-array specs on the way (not below a
    key plotly skips)."""
    if isinstance(value, dict):
        if not typed:
            return {_json_key(k): _json_value(v, False) for k, v in value.items()}
        return {_json_key(k): _json_value(v, False) if k in _UNTYPED_KEYS else
                _json_value(_typed_array(v)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_value(v, typed) for v in value]
    if isinstance(value, str) or value is None or value is True or value is False:
        return value
    if isinstance(value, float):  # (numpy's float64 too)
        return float(value) if math.isfinite(value) else None
    if isinstance(value, int):
        return int(value)
    import numpy as np

    if isinstance(value, (np.ndarray, np.generic)) and value.dtype.kind != "M":
        return _json_value(value.tolist())
    return json.loads(json.dumps(value, cls=_encoder()))  # anything else: plotly's encoder


def _json_key(key: Any) -> str:
    if isinstance(key, str):
        return key
    return next(iter(json.loads(json.dumps({key: 0}))))


def _typed_array(value: Any) -> Any:
    """A dict value as plotly's `to_dict` leaves it: a numeric numpy array as a typed-array
    spec (int64 narrowed to the smallest int type holding it), others unchanged."""
    import numpy as np

    if isinstance(value, (dict, list, tuple, str, int, float)) or value is None:
        return value
    if not isinstance(value, np.ndarray):
        from _plotly_utils.utils import is_homogeneous_array, to_typed_array_spec

        return to_typed_array_spec(value) if is_homogeneous_array(value) else value
    if value.dtype.kind not in "iuf" or value.size == 0:
        return value
    dtype = str(value.dtype)
    if dtype in _NARROW:
        low, high = value.min(), value.max()
        for narrow in _NARROW[dtype]:
            info = np.iinfo(narrow)
            if info.min <= low and high <= info.max:
                value, dtype = value.astype(narrow), narrow
                break
        else:
            return value
    if dtype not in _TYPED:
        return value
    spec = {"dtype": _TYPED[dtype],
            "bdata": base64.b64encode(np.ascontiguousarray(value)).decode("ascii")}
    if value.ndim > 1:
        spec["shape"] = str(value.shape)[1:-1]
    return spec


@functools.cache
def _encoder() -> type:
    from _plotly_utils.utils import PlotlyJSONEncoder

    return PlotlyJSONEncoder


@functools.cache
def _template_json(name: str) -> str:
    """The layout template `name` as JSON, as a validated figure's JSON carries it."""
    import plotly.graph_objects as go
    import plotly.io as pio

    return json.dumps(json.loads(pio.to_json(go.Figure(layout={"template": name})))[
        "layout"]["template"])


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
    """A plotly figure shown through the plotly mimetype, with a text fallback. Given as a
    plain figure dict (what the outputs send, see `figure_json`) or a `go.Figure`; `figure`
    is a `go.Figure` either way, built on first use."""

    def __init__(self, figure: Any, text: str) -> None:
        self.plain = figure
        self.text = text

    @property
    def figure(self) -> Any:
        if isinstance(self.plain, dict):
            import plotly.graph_objects as go

            self.plain = go.Figure(self.plain)
        return self.plain

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict:
        bundle: dict[str, Any] = {"text/plain": self.text}
        if self.plain is not None:
            bundle[PLOTLY_MIME] = figure_json(self.plain)
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
            from .views.timeline import timeline_plain

            fig = timeline_plain(trace)
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
