"""Clicks on plotly graphs and source lines, sent back to Python: a timeline event or a source
line selects that line (in the Workbench and in the HTML report), a sweep marker opens that
point.

Owns `CLICK_JS` (the browser side: `pyptoPlotClicks` attaches a `plotly_click` handler to every
plotly graph inside a container, drawn now or later, and hands the value a clicked point
carries to a callback; `pyptoTimelineClicks` reads a timeline hover-layer cell's source line,
`pyptoPointClicks` a sweep marker's point number; `pyptoLineClicks` reports clicks on any element
with `data-pypto-line`: the Source tab's lines, the "L24" notes of IR and C++ lines) and
`PlotClicks`, a tiny anywidget that runs them on a live view and syncs the clicked value back
(`timeline_clicks`, `point_clicks`).
The figures stay plain plotly-mimetype outputs, so the large plotly bundle is never part of
the widget state (plotly's own FigureWidget, an anywidget since plotly 6, sometimes drew its
axes without its traces when displayed from a callback); without anywidget there are no clicks.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .timeline import HOVER_NAME

#: `pyptoTimelineClicks(container, onLine)`: call onLine(line) when an event of a plotly
#: graph under `container` is clicked (graphs drawn later are picked up too)
CLICK_JS = """
function pyptoLineOf(pt) {
  if (pt.data === undefined || pt.data.name !== 'HOVER_NAME') { return null; }
  var value = pt.customdata;
  if (value === undefined && Array.isArray(pt.pointNumber)) {
    var row = pt.data.customdata[pt.pointNumber[0]];
    value = row === undefined ? undefined : row[pt.pointNumber[1]];
  }
  return (typeof value === 'number' && value > 0) ? Math.round(value) : null;
}
function pyptoPointOf(pt) {
  var value = pt.customdata;
  return (typeof value === 'number' && value >= 0) ? Math.round(value) : null;
}
function pyptoPlotClicks(container, valueOf, onValue) {
  function attach() {
    container.querySelectorAll('.js-plotly-plot').forEach(function (gd) {
      if (gd.dataset.pyptoClick || typeof gd.on !== 'function') { return; }
      gd.dataset.pyptoClick = '1';
      gd.on('plotly_click', function (ev) {
        var value = ev && ev.points && ev.points.length ? valueOf(ev.points[0]) : null;
        if (value !== null) { onValue(value); }
      });
    });
  }
  attach();
  var observer = new MutationObserver(attach);
  observer.observe(container, {childList: true, subtree: true});
  return function () { observer.disconnect(); };
}
function pyptoTimelineClicks(container, onLine) {
  return pyptoPlotClicks(container, pyptoLineOf, onLine);
}
function pyptoPointClicks(container, onPoint) {
  return pyptoPlotClicks(container, pyptoPointOf, onPoint);
}
function pyptoLineClicks(container, onLine) {
  function click(ev) {
    var el = ev.target.closest ? ev.target.closest('[data-pypto-line]') : null;
    if (el && container.contains(el)) { onLine(Number(el.dataset.pyptoLine)); }
  }
  container.addEventListener('click', click);
  return function () { container.removeEventListener('click', click); };
}
""".replace("HOVER_NAME", HOVER_NAME)

_WIDGET_ESM = CLICK_JS + """
function render({ model, el }) {
  var scope = model.get('scope');
  var stop = null;
  function start() {
    var box = document.querySelector('.' + scope);
    if (!box) { setTimeout(start, 200); return; }
    function pick(value) {
      model.set('clicked', {value: value, at: Date.now()});
      model.save_changes();
    }
    var stops = model.get('kind') === 'point' ? [pyptoPointClicks(box, pick)]
        : [pyptoTimelineClicks(box, pick), pyptoLineClicks(box, pick)];
    stop = function () { stops.forEach(function (s) { s(); }); };
  }
  start();
  return function () { if (stop) { stop(); } };
}
export default { render };
"""


@functools.cache
def _widget_class() -> type | None:
    try:
        import anywidget
        import traitlets
    except ImportError:
        return None

    class PlotClicks(anywidget.AnyWidget):
        """Runs `CLICK_JS` on the element with CSS class `scope`: `kind` "line" reads timeline
        events and source lines, "point" sweep markers; `clicked` = {value, at}."""

        _esm = _WIDGET_ESM
        scope = traitlets.Unicode("").tag(sync=True)
        kind = traitlets.Unicode("line").tag(sync=True)
        clicked = traitlets.Dict({}).tag(sync=True)

    return PlotClicks


def _clicks(scope: str, kind: str, minimum: int, on_value: Callable[[int], None]) -> Any:
    cls = _widget_class()
    if cls is None:
        return None
    widget = cls(scope=scope, kind=kind)

    def changed(change: dict) -> None:
        value = change["new"].get("value")
        if isinstance(value, int) and value >= minimum:
            on_value(value)

    widget.observe(changed, "clicked")
    return widget


def timeline_clicks(scope: str, on_line: Callable[[int], None]) -> Any:
    """A `PlotClicks` widget watching the timelines and source lines inside the element with
    CSS class `scope`, calling `on_line(line)` per click; None without anywidget."""
    return _clicks(scope, "line", 1, on_line)


def point_clicks(scope: str, on_point: Callable[[int], None]) -> Any:
    """A `PlotClicks` widget watching the sweep figures inside the element with CSS class
    `scope`, calling `on_point(point)` per click on a marker; None without anywidget."""
    return _clicks(scope, "point", 0, on_point)
