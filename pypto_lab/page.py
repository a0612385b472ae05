"""Self-contained HTML pages with plotly figures: one file that opens offline, kept small.

Owns `figure_slot` (a figure's `<div>` plus its JSON in a `<script type="application/json">`)
and `plotly_page` (the page: plotly.js embedded once, gzip-compressed and base64-encoded — about
2 MB instead of 4.8 MB — unpacked by the browser's `DecompressionStream`, then every figure slot
drawn in page order, then the page's own script, which may use `window.Plotly`). No `src=`, no
stylesheet links, no network.
"""
from __future__ import annotations

import base64
import functools
import gzip
import json
from typing import Any

from .figures import figure_json
from .views.html import esc

_LOADER = """
(async function () {
  var packed = document.getElementById('pypto-plotly-gz').textContent;
  var bytes = Uint8Array.from(atob(packed), function (c) { return c.charCodeAt(0); });
  var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
  var code = await new Response(stream).text();
  var tag = document.createElement('script');
  tag.text = code;
  document.head.appendChild(tag);
  var slots = document.querySelectorAll('script.pypto-fig');
  for (var i = 0; i < slots.length; i++) {
    var fig = JSON.parse(slots[i].textContent);
    await Plotly.newPlot(slots[i].dataset.div, fig.data, fig.layout, {responsive: true});
  }
  document.body.dataset.plotted = String(slots.length);
  if (window.pyptoPageReady) { window.pyptoPageReady(); }
})();
"""


@functools.lru_cache(maxsize=1)
def packed_plotlyjs() -> str:
    """plotly.js (the copy plotly.py ships), gzip-compressed and base64-encoded."""
    from plotly.offline import get_plotlyjs

    data = gzip.compress(get_plotlyjs().encode(), compresslevel=9, mtime=0)
    return base64.b64encode(data).decode()


def figure_slot(fig: Any, div_id: str) -> str:
    """Where `fig` is drawn: its div and its JSON (drawn by the page's loader)."""
    data = json.dumps(figure_json(fig)).replace("</", "<\\/")
    return (f"<div id='{div_id}' class='pypto-plot'></div>"
            f"<script type='application/json' class='pypto-fig' data-div='{div_id}'>"
            f"{data}</script>")


def plotly_page(title: str, body: str, script: str = "", style: str = "") -> str:
    """A whole page: `body` (with figure slots), plotly.js packed once, then `script`, which
    runs at once; code that needs the figures goes in `window.pyptoPageReady`."""
    return ("<!doctype html><html><head><meta charset='utf-8'>"
            f"<title>{esc(title)}</title><style>{style}</style></head><body>{body}"
            f"<script type='application/octet-stream' id='pypto-plotly-gz'>"
            f"{packed_plotlyjs()}</script><script>{script}{_LOADER}</script></body></html>")
