"""Click on a timeline event or a source line → select that line, in the Workbench and in the
HTML report.

Owns `CLICK_JS` (the browser side, shared by both: attach a `plotly_click` handler to every
plotly graph inside a container, read the clicked hover-layer cell's source line from its
`customdata` and hand it to a callback; and report clicks on any element with
`data-pypto-line`: the Source tab's lines, the "L24" notes of IR and C++ lines) and
`TimelineClicks`, a tiny anywidget that runs both on the Workbench and syncs the clicked line
back to Python (`on_line`).
The figure itself stays a plain plotly-mimetype output, so the large plotly bundle is never
part of the widget state; without anywidget the timeline simply has no click-to-line.
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
function pyptoTimelineClicks(container, onLine) {
  function attach() {
    container.querySelectorAll('.js-plotly-plot').forEach(function (gd) {
      if (gd.dataset.pyptoClick || typeof gd.on !== 'function') { return; }
      gd.dataset.pyptoClick = '1';
      gd.on('plotly_click', function (ev) {
        var line = ev && ev.points && ev.points.length ? pyptoLineOf(ev.points[0]) : null;
        if (line !== null) { onLine(line); }
      });
    });
  }
  attach();
  var observer = new MutationObserver(attach);
  observer.observe(container, {childList: true, subtree: true});
  return function () { observer.disconnect(); };
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
    function pick(line) {
      model.set('clicked', {line: line, at: Date.now()});
      model.save_changes();
    }
    var stops = [pyptoTimelineClicks(box, pick), pyptoLineClicks(box, pick)];
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

    class TimelineClicks(anywidget.AnyWidget):
        """Runs `CLICK_JS` on the element with CSS class `scope`; `clicked` = {line, at}."""

        _esm = _WIDGET_ESM
        scope = traitlets.Unicode("").tag(sync=True)
        clicked = traitlets.Dict({}).tag(sync=True)

    return TimelineClicks


def timeline_clicks(scope: str, on_line: Callable[[int], None]) -> Any:
    """A `TimelineClicks` widget watching the plots inside the element with CSS class
    `scope`, calling `on_line(line)` per click; None when anywidget is not installed."""
    cls = _widget_class()
    if cls is None:
        return None
    widget = cls(scope=scope)

    def changed(change: dict) -> None:
        line = change["new"].get("line")
        if isinstance(line, int) and line > 0:
            on_line(line)

    widget.observe(changed, "clicked")
    return widget
