"""The Workbench's tab contents as ipywidgets: one builder per panel, each with `refresh()`.

Owns `build_panel(workbench, name)`: Source (highlighted kernel with per-line cycles), Passes
(`passes.passes_widget`), IR (final IR per target), CCE (`code.cce_widget`), Run, Blocks
(plotly bars and imbalance), Timeline (core picker, plotly timeline with the selected line's
events haloed, a click on an event selecting its line, PipeUtilization table), Sanitizer and
Roofline. Plotly figures go into `Output` widgets as raw plotly-mimetype outputs, so they render
in JupyterLab, Notebook 7 and VS Code and are kept in saved widget state; nothing here depends
on the process-global plotly renderer.
"""
from __future__ import annotations

from typing import Any

from .html import STYLE, esc, table


def _html(body: str) -> str:
    return f"<div class='pypto-wb'>{STYLE}{body}</div>"


def show_figure(out: Any, fig: Any, label: str) -> None:
    """Replace the outputs of an `Output` widget with one plotly figure (a `go.Figure` or a
    plain figure dict)."""
    from ..figures import PLOTLY_MIME, figure_json

    data = {"text/plain": f"<{label}>"}
    if fig is not None:
        data[PLOTLY_MIME] = figure_json(fig)
    out.outputs = ({"output_type": "display_data", "data": data, "metadata": {}},)


def _source_panel(wb: Any) -> Any:
    import ipywidgets as w

    from .source import source_html

    view = w.HTML()

    def refresh() -> None:
        launch = wb.launch
        view.value = _html(source_html(wb.kernel, launch.trace if launch else None,
                                       "wbsrc", wb.line))

    refresh()
    box = w.VBox([view])
    box.refresh = refresh
    return box


def _ir_panel(wb: Any) -> Any:
    import ipywidgets as w

    from .passes import ir_html, line_excerpt

    view = w.HTML(layout=w.Layout(width="100%"))
    concise = w.Checkbox(value=True, description="concise (no assignment types)",
                         indent=False)

    def refresh(*_: Any) -> None:
        k, short = wb.kernel, concise.value
        parts = [f"<h4>{t}: IR after {esc(k.passes(t)[-1].name)}</h4>"
                 + line_excerpt(k.passes(t)[-1], k.file, f"wbirx-{t}", wb.line, short)
                 + ir_html(k.passes(t)[-1], k.file, f"wbir-{t}", wb.line, short)
                 for t in k.targets]
        view.value = _html("".join(parts))

    concise.observe(refresh, "value")
    refresh()
    box = w.VBox([concise, view])
    box.refresh = refresh
    return box


def _run_panel(wb: Any) -> Any:
    import ipywidgets as w

    from .run import run_html

    r = wb.result
    box = w.VBox([w.HTML(_html(run_html(r.kernels, r.launches, r.codegen_available, r.check,
                                        r.notes)))])
    box.refresh = lambda: None
    return box


def _blocks_panel(wb: Any) -> Any:
    import ipywidgets as w

    from .blocks import blocks_figure, blocks_html

    trace = wb.launch.trace
    out = w.Output()
    show_figure(out, blocks_figure(trace), "blocks")
    box = w.VBox([w.HTML(_html(blocks_html(trace, max_rows=16))), out])
    box.refresh = lambda: None
    return box


def _timeline_panel(wb: Any) -> Any:
    import ipywidgets as w

    from .timeline import (
        UTILIZATION_FORMATS,
        core_choices,
        default_cores,
        timeline_plain,
        utilization_table,
    )
    from .timeline_lod import lane_table

    trace = wb.launch.trace
    choices = core_choices(trace)
    cores = w.SelectMultiple(options=choices, value=tuple(default_cores(lane_table(
                                 trace.events))),
                             rows=min(8, len(choices)), description="cores",
                             style={"description_width": "40px"},
                             layout=w.Layout(width="300px",
                                             display="flex" if len(choices) > 1 else "none"))
    cores.add_class("pypto-mono")
    arrows = w.Checkbox(value=True, description="flow arrows", indent=False,
                        layout=w.Layout(width="110px"))
    out = w.Output(layout=w.Layout(width="100%"))
    util = utilization_table(trace)
    summary = w.HTML(_html("<h4>PipeUtilization</h4>" + table(
        util, UTILIZATION_FORMATS, numeric=("cores",))))

    def refresh(*_: Any) -> None:
        highlight = (wb.kernel.file, wb.line) if wb.line and wb.kernel else None
        fig = timeline_plain(trace, tuple(cores.value) or None, highlight,
                             arrows=arrows.value)
        show_figure(out, fig, "timeline")

    cores.observe(refresh, "value")
    arrows.observe(refresh, "value")
    refresh()
    how = "click an event" if wb.clicks is not None else "pick a kernel line above"
    hint = w.HTML(_html("<div class='note' style='margin-left:12px'>Drag to zoom, "
                        "double-click to reset, hover a bar for op, IR op, line, bytes and "
                        f"µs. Ctrl/shift-click cores to choose lanes; {how} to select "
                        "its source line (its IR, C++ and events light up).</div>"))
    box = w.VBox([w.HBox([cores, w.VBox([arrows, hint])]), out, summary])
    box.refresh = refresh
    return box


def _sanitizer_panel(wb: Any) -> Any:
    import ipywidgets as w

    from .overview import sanitizer_panel_html

    box = w.VBox([w.HTML(_html(sanitizer_panel_html(wb.result.launches)))])
    box.refresh = lambda: None
    return box


def _roofline_panel(wb: Any) -> Any:
    import ipywidgets as w

    from .roofline import roofline_figure, roofline_html

    out = w.Output()
    show_figure(out, roofline_figure(wb.result.launches), "roofline")
    box = w.VBox([out, w.HTML(_html(roofline_html(wb.result.launches)))])
    box.refresh = lambda: None
    return box


def _passes_panel(wb: Any) -> Any:
    from .passes import passes_widget

    return passes_widget(wb.kernel, "wbpass", wb.result.options.diff, lambda: wb.line)


def _cce_panel(wb: Any) -> Any:
    from .code import cce_widget

    return cce_widget(wb.kernel, wb.result.codegen_available, "wbcce", lambda: wb.line)


_BUILDERS = {"source": _source_panel, "passes": _passes_panel, "ir": _ir_panel,
             "cce": _cce_panel, "run": _run_panel, "blocks": _blocks_panel,
             "timeline": _timeline_panel, "sanitizer": _sanitizer_panel,
             "roofline": _roofline_panel}


def build_panel(wb: Any, name: str) -> Any:
    """The widget of tab `name` for Workbench `wb` (it has a `refresh()`)."""
    return _BUILDERS[name](wb)
