"""The sweep as a notebook form: pick values per parameter, run, watch, click into a point.

`sweep_widget(make_kernel, space, inputs, reference, **sweep_options)` shows one multi-select
per parameter (every value selected at first), a Run button, a progress bar with the running
count of invalid points, then the table, the time-over-grid figure and the Pareto figure. A
click on any marker opens that point's full tabbed Workbench (timeline, passes, CCE) below.
The kernel's interrupt button stops a running sweep; the points that finished stay in the
table.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .sweep import SweepResult, expand_space, sweep


def sweep_widget(make_kernel: Callable[..., Any], space: Mapping[str, Iterable[Any]],
                 inputs: Any, reference: Callable[..., Any] | None = None,
                 **options: Any) -> Any:
    from html import escape

    import ipywidgets as w
    from IPython.display import HTML, display

    expand_space(space)  # the same checks as the sweep, before any widget is built
    values = {name: list(vals) for name, vals in space.items()}
    pickers = {name: w.SelectMultiple(options=[(str(v), v) for v in vals], value=tuple(vals),
                                      description=name, rows=min(6, len(vals)))
               for name, vals in values.items()}
    run = w.Button(description="Run sweep", button_style="primary", icon="play")
    bar = w.IntProgress(value=0, min=0, max=1, description="points")
    status = w.HTML()
    results, drill = w.Output(), w.Output()
    state: dict[str, SweepResult] = {}

    def on_point(row: dict, done: int, total: int) -> None:
        bar.max, bar.value = total, done
        if row["status"] != "ok":
            status.value += f"<div>point {row['point']}: {row['status']}: {row['error']}</div>"

    def open_point(trace: Any, points: Any, _selector: Any) -> None:
        if not points.point_inds:
            return
        index = int(trace.customdata[points.point_inds[0]])
        params = ", ".join(f"{k}={v!r}" for k, v in state["result"].specs[index].params.items())
        drill.clear_output()
        with drill:
            display(HTML(f"<h4>point {index}: {escape(params)}</h4>"))
            display(state["result"].workbench(index).workbench().widget)

    def start(_button: Any) -> None:
        import plotly.graph_objects as go

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
        results.clear_output()
        with results:
            display(HTML(result.html()))
            for fig in (result.figure(), result.pareto()):
                widget = go.FigureWidget(fig)
                for t in widget.data:
                    t.on_click(open_point)
                display(widget)

    run.on_click(start)
    return w.VBox([w.HBox(list(pickers.values())), w.HBox([run, bar]), status, results,
                   drill])
