"""The sweep as a notebook form: pick values per parameter, run, watch, click into a point.

`sweep_widget(make_kernel, space, inputs, reference, **sweep_options)` shows one multi-select
per parameter (every value selected at first), a Run button, a progress bar with the running
count of invalid points, then the table, the time-over-grid figure and the Pareto figure (plain
plotly outputs). A click on any marker (`views.plot_clicks.point_clicks`) opens that point's
full tabbed Workbench (timeline, passes, CCE) below.
The kernel's interrupt button stops a running sweep; the points that finished stay in the
table.
"""
from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .sweep import SweepResult, expand_space, sweep

_SCOPES = itertools.count()  # one CSS class per widget: its clicks stay its own


def sweep_widget(make_kernel: Callable[..., Any], space: Mapping[str, Iterable[Any]],
                 inputs: Any, reference: Callable[..., Any] | None = None,
                 **options: Any) -> Any:
    from html import escape


    import ipywidgets as w
    from IPython.display import HTML, display

    from .views.plot_clicks import point_clicks
    from .views.widget import show_figure

    expand_space(space)  # the same checks as the sweep, before any widget is built
    values = {name: list(vals) for name, vals in space.items()}
    pickers = {name: w.SelectMultiple(options=[(str(v), v) for v in vals], value=tuple(vals),
                                      description=name, rows=min(6, len(vals)))
               for name, vals in values.items()}
    run = w.Button(description="Run sweep", button_style="primary", icon="play")
    bar = w.IntProgress(value=0, min=0, max=1, description="points")
    status = w.HTML()
    table, grid, pareto, drill = w.HTML(), w.Output(), w.Output(), w.Output()
    state: dict[str, SweepResult] = {}

    def on_point(row: dict, done: int, total: int) -> None:
        bar.max, bar.value = total, done
        if row["status"] != "ok":
            status.value += f"<div>point {row['point']}: {row['status']}: {row['error']}</div>"

    def open_point(index: int) -> None:
        result = state.get("result")
        if result is None or index >= len(result.specs):
            return
        params = ", ".join(f"{k}={v!r}" for k, v in result.specs[index].params.items())
        drill.clear_output()
        with drill:
            display(HTML(f"<h4>point {index}: {escape(params)}</h4>"))
            display(result.workbench(index).workbench().widget)

    def start(_button: Any) -> None:
        chosen = {n: list(p.value) for n, p in pickers.items()}
        if not all(chosen.values()):
            status.value = "<b>select at least one value of every parameter</b>"
            return
        status.value, bar.value = "", 0
        run.disabled = True
        try:
            result = sweep(make_kernel, chosen, inputs, reference, progress=False,
                           on_point=on_point, **options)
        finally:
            run.disabled = False
        state["result"] = result
        table.value = result.html()
        show_figure(grid, result.figure(), "sweep figure")
        show_figure(pareto, result.pareto(), "sweep Pareto figure")

    run.on_click(start)
    scope = f"pypto-sweep-{next(_SCOPES)}"
    clicks = point_clicks(scope, open_point)
    box = w.VBox([w.HBox(list(pickers.values())), w.HBox([run, bar]), status, table, grid,
                  pareto, *([clicks] if clicks else []), drill])
    box.add_class(scope)
    return box
