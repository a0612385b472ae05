"""`CellResult` (what a `%%pypto` cell returns) and `Workbench` (its interactive view).

`CellResult` holds the records of one run (kernels with their pass records and generated code,
launches with their Traces) and renders as one rich bundle: `text/plain` (a terminal summary),
script-free `text/html` (`views.overview`), the timeline as plotly JSON, a machine-readable
`application/vnd.pypto.cell+json`, and, when displayed interactively under a Jupyter kernel with
ipywidgets, the `Workbench` widget. Next to a widget the magic first displays
`fallback_bundle()`: the same static HTML in its own output, hidden by CSS while the live
Workbench (or the bundle's own `text/html`) is on the page; a notebook exported with its widget
state but opened without the widget JavaScript (nbconvert HTML offline) still shows it.

`Workbench` is the tabbed ipywidgets UI (Source, Passes, CCE, Run, Blocks, Timeline, Sanitizer,
Roofline) with a kernel picker, a source-line picker whose selection (or a click on a source
line, on an IR or C++ line's "L24" note, or on a timeline event) highlights the line's IR ops,
C++ lines and timeline events in every tab, and a "wrap long lines" switch for the code panes
(each pane scrolls on its own otherwise).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .figures import PLOTLY_MIME, PYPTO_MIME, WIDGET_MIME, figure_json, under_kernel
from .options import PANELS, CellOptions
from .records import CheckResult, KernelRecord, LaunchRecord, SourceInfo


@dataclass
class CellResult:
    """Everything one cell run produced (see the module docstring)."""

    source: SourceInfo
    options: CellOptions
    kernels: list[KernelRecord]
    launches: list[LaunchRecord]
    notes: list[str] = field(default_factory=list)
    stages: list[tuple[str, float]] = field(default_factory=list)
    codegen_available: bool = False
    seconds: float = 0.0
    check: CheckResult | None = None

    # -- access -------------------------------------------------------------------------
    def kernel(self, name: str | None = None) -> KernelRecord:
        """The kernel record called `name` (default: the first one)."""
        if not self.kernels:
            raise LookupError("the cell compiled no kernel")
        if name is None:
            return self.kernels[0]
        for k in self.kernels:
            if k.name == name:
                return k
        raise LookupError(f"no kernel {name!r}; kernels: {[k.name for k in self.kernels]}")

    def launch_for(self, kernel: KernelRecord) -> LaunchRecord | None:
        """The last launch of `kernel` (by compiled variant, else by name)."""
        same = [r for r in self.launches if r.compiled is kernel.compiled]
        same = same or [r for r in self.launches if r.kernel == kernel.name]
        return same[-1] if same else None

    @property
    def panels(self) -> list[str]:
        """The panels this result shows, in order: asked for and with something to show
        (Blocks and Timeline need a launch with timed events, the scalar unit's printf or
        setval included; Roofline one that moved data or computed on a pipe)."""
        timed = any(r.trace is not None and len(r.trace.events) for r in self.launches)
        needs = {"blocks": timed, "timeline": timed,
                 "roofline": any(r.pipe_work for r in self.launches),
                 **{p: bool(self.kernels) for p in ("source", "passes", "ir", "cce")}}
        return [p for p in PANELS if self.shows(p) and needs.get(p, True)]

    @property
    def tabs(self) -> list[str]:
        """The Workbench's tab titles (e.g. ["Source", "Passes", "CCE", "Run"])."""
        return [TAB_TITLES[p] for p in self.panels]

    def shows(self, panel: str) -> bool:
        """Whether `panel` is shown: asked for (`--show`), or the Sanitizer panel of a cell
        whose launches were sanitized."""
        return self.options.shows(panel) or (
            panel == "sanitizer" and any(r.sanitizer is not None for r in self.launches))

    @property
    def trace(self) -> Any:
        """The Trace of the last timed launch (None when nothing was timed)."""
        timed = [r.trace for r in self.launches if r.trace is not None]
        return timed[-1] if timed else None

    def passes(self, kernel: str | None = None, target: str | None = None) -> Any:
        return self.kernel(kernel).passes(target)

    def diff(self, a: int | str, b: int | str | None = None, kernel: str | None = None,
             target: str | None = None) -> str:
        """Unified diff of the IR between two passes (one pass: what it changed)."""
        from .views.passes import diff_text

        return diff_text(self.passes(kernel, target), a, b)

    def ir(self, after: int | str = -1, kernel: str | None = None,
           target: str | None = None) -> str:
        records = self.passes(kernel, target)
        return (records[after] if isinstance(after, int) else records.get(after)).ir_text

    def cce(self, kernel: str | None = None) -> dict[str, str]:
        """Generated file name → text ({} when code generation did not run)."""
        from .views.code import artifact_files

        rec = self.kernel(kernel)
        return artifact_files(rec.artifacts) if rec.artifacts is not None else {}

    # -- figures --------------------------------------------------------------------------
    def timeline_figure(self, cores: tuple[int, ...] | None = None,
                        highlight_line: int | None = None, **kw: Any) -> Any:
        """The per-pipe timeline of the last timed launch (None without one)."""
        import plotly.graph_objects as go

        plain = self.timeline_plain(cores, highlight_line, **kw)
        return None if plain is None else go.Figure(plain)

    def timeline_plain(self, cores: tuple[int, ...] | None = None,
                       highlight_line: int | None = None, **kw: Any) -> dict | None:
        """`timeline_figure` as a plain figure dict (what the outputs send: `figure_json`
        makes its JSON without plotly's validation)."""
        from .views.timeline import timeline_plain

        trace = self.trace
        if trace is None or not len(trace.events):
            return None
        highlight = None
        if highlight_line:
            highlight = (self.kernels[0].file if self.kernels else self.source.file,
                         highlight_line)
        return timeline_plain(trace, cores or self.options.cores, highlight, **kw)

    def blocks_figure(self) -> Any:
        from .views.blocks import blocks_figure

        trace = self.trace
        return None if trace is None or not len(trace.events) else blocks_figure(trace)

    def roofline_figure(self) -> Any:
        from .views.roofline import roofline_figure

        return roofline_figure(self.launches)

    # -- rendering ------------------------------------------------------------------------
    def summary(self) -> str:
        """A text summary for terminals, logs and `text/plain`."""
        from .views.html import fmt_seconds

        lines = [f"{self.source.title}: {len(self.kernels)} kernel(s), "
                 f"{len(self.launches)} launch(es) in {fmt_seconds(self.seconds)}"]
        for k in self.kernels:
            changed = sum(r.changed for recs in k.compiled.passes.values() for r in recs[1:])
            code = (f"; kernel.cpp {len(k.artifacts.kernel_cpp.splitlines())} lines"
                    if k.artifacts is not None else
                    "; codegen failed" if k.codegen_error else "")
            how = "cached" if k.cached else fmt_seconds(k.compile_seconds)
            lines.append(f"  {k.name} [{k.kernel_type}, {k.arch}] "
                         f"{'+'.join(k.targets)}: {k.pass_count} passes ({changed} changed) "
                         f"{how}{code}")
        for rec in self.launches:
            lines.append(f"  launch {rec.describe()}")
            if rec.trace is not None and len(rec.trace.events):
                summary = rec.trace.summary(where=self.source.where)
                lines += ["    " + ln for ln in summary.splitlines()[2:]]
            for block, text in sorted(rec.printed.items()):
                lines.append(f"    printf block {block}: {text.rstrip()}")
        if self.check is not None:
            lines.append(f"  check: {self.check.describe()}")
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.summary()

    def to_html(self, highlight_line: int | None = None, report: bool = False) -> str:
        """Script-free HTML of every panel in `options.show` (`report`: as the report's body)."""
        from .views.overview import result_html

        return result_html(self, highlight_line, report)

    def to_json(self) -> dict:
        """Machine-readable summary: kernels, passes, launches, timings, check."""
        kernels = [{"name": k.name, "kernel_type": k.kernel_type, "arch": k.arch,
                    "targets": k.targets, "cached": k.cached,
                    "compile_seconds": k.compile_seconds,
                    "passes": {t: k.passes(t).rows() for t in k.targets},
                    "codegen": None if k.artifacts is None else sorted(
                        self.cce(k.name)), "codegen_error": k.codegen_error}
                   for k in self.kernels]
        launches = [{"kernel": r.kernel, "block_dim": r.block_dim, "backend": r.backend,
                     "wall_seconds": r.wall_seconds, "cycles": r.cycles, "sim_us": r.sim_us,
                     "args": [a.__dict__ for a in r.args], "printed": r.printed,
                     "events": None if r.trace is None else len(r.trace.events)}
                    for r in self.launches]
        check = None if self.check is None else dict(self.check.__dict__)
        return json.loads(json.dumps({"cell": self.source.label, "kernels": kernels,
                                      "launches": launches, "check": check,
                                      "notes": self.notes, "seconds": self.seconds},
                                     default=str))

    @property
    def dom_class(self) -> str:
        """A page-unique CSS class prefix of this result's outputs (see `fallback_bundle`)."""
        name = getattr(self, "_dom_class", None)
        if name is None:
            from .views.html import uid

            name = self._dom_class = uid("pypto-cell")
        return name

    def fallback_bundle(self) -> dict:
        """The static view as its own output, shown only where neither the live Workbench
        (class `<dom_class>-live`) nor the bundle's `text/html` (`<dom_class>-static`)
        rendered: e.g. nbconvert HTML of a notebook saved with its widget state, offline.
        Rendered anew (its own element ids: both copies can be on one page)."""
        c = self.dom_class
        css = (f"<style>body:has(.{c}-live) .{c}-fallback,body:has(.{c}-static) "
               f".{c}-fallback{{display:none}}</style>")
        return {"text/html": f"{css}<div class='{c}-fallback'>{self.to_html()}</div>",
                "text/plain": ""}

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict:
        bundle: dict[str, Any] = {"text/plain": self.summary()}
        if not self.options.show:
            return bundle
        bundle["text/html"] = f"<div class='{self.dom_class}-static'>{self.to_html()}</div>"
        bundle[PYPTO_MIME] = self.to_json()
        if self.options.interactive and under_kernel():
            bundle.update(self.workbench().widget_bundle())
        elif self.options.shows("timeline"):
            fig = self.timeline_plain()
            if fig is not None:
                bundle[PLOTLY_MIME] = figure_json(fig)
        if include:
            bundle = {k: v for k, v in bundle.items() if k in include}
        if exclude:
            bundle = {k: v for k, v in bundle.items() if k not in exclude}
        return bundle

    def workbench(self) -> Workbench:
        """The interactive Workbench of this result (built once; needs ipywidgets)."""
        wb = getattr(self, "_workbench", None)
        if wb is None:
            wb = Workbench(self)
            self._workbench = wb
        return wb

    def export(self, path: str | Path) -> Path:
        """Write the HTML report (`.html`), the Perfetto trace (`.json`) or the msprof
        simulator JSON (`.msprof.json`) atomically; returns the path."""
        from .report import export_result

        return export_result(self, Path(path))


TAB_TITLES = {"source": "Source", "passes": "Passes", "ir": "IR", "cce": "CCE", "run": "Run",
              "blocks": "Blocks", "timeline": "Timeline", "sanitizer": "Sanitizer",
              "roofline": "Roofline"}


class Workbench:
    """Tabbed interactive view of a `CellResult` (ipywidgets). Tabs are built when first
    opened; `select_line(n)` highlights kernel line n in every tab."""

    def __init__(self, result: CellResult, tab: str | None = None) -> None:
        import ipywidgets as w

        from .views.html import STYLE
        from .views.overview import header_html
        from .views.plot_clicks import timeline_clicks

        self.result = result
        self.kernel_index = 0
        self.line: int | None = None
        self.panels = result.panels
        self.kernel_pick = w.Dropdown(
            options=[(f"{k.name} [{k.kernel_type}]", i) for i, k in enumerate(result.kernels)],
            description="kernel", layout=w.Layout(width="300px",
                                                  display="flex" if len(result.kernels) > 1
                                                  else "none"))
        self.line_pick = w.Dropdown(description="line", layout=w.Layout(width="640px"),
                                    style={"description_width": "40px"})
        self.line_pick.add_class("pypto-mono")
        self.tabs = w.Tab(children=[w.VBox() for _ in self.panels])
        self.tabs.titles = tuple(TAB_TITLES[p] for p in self.panels)
        self._built: dict[str, Any] = {}
        self.header = w.HTML(f"<div class='pypto-wb'>{STYLE}{header_html(result)}</div>")
        self.wrap = w.Checkbox(value=False, description="wrap long lines", indent=False,
                               layout=w.Layout(width="150px"))
        scope = f"{result.dom_class}-live"
        self.clicks = timeline_clicks(scope, self._pick_line)
        self.widget = w.VBox([self.header,
                              w.HBox([self.kernel_pick, self.line_pick, self.wrap]),
                              self.tabs, *([self.clicks] if self.clicks else [])],
                             layout=w.Layout(width="100%"))
        self.widget.add_class(scope)
        self.wrap.observe(self._on_wrap, "value")
        self._fill_lines()
        self.kernel_pick.observe(self._on_kernel, "value")
        self.line_pick.observe(self._on_line, "value")
        self.tabs.observe(self._on_tab, "selected_index")
        start = tab or ("timeline" if "timeline" in self.panels else None)
        index = self.panels.index(start) if start in self.panels else 0
        self._build(index)
        self.tabs.selected_index = index

    # -- state ----------------------------------------------------------------------------
    @property
    def kernel(self) -> KernelRecord | None:
        return self.result.kernels[self.kernel_index] if self.result.kernels else None

    @property
    def launch(self) -> LaunchRecord | None:
        k = self.kernel
        found = self.result.launch_for(k) if k is not None else None
        return found or (self.result.launches[-1] if self.result.launches else None)

    def select_line(self, line: int | None) -> None:
        """Highlight kernel source line `line` (None clears) in every tab."""
        self.line_pick.value = line or 0

    def _pick_line(self, line: int) -> None:
        """A click on a source line, an "L24" note or a timeline event: select that line if
        the line picker offers it."""
        if line in {value for _, value in self.line_pick.options}:
            self.select_line(line)

    def _on_wrap(self, change: Any) -> None:
        (self.widget.add_class if change["new"] else self.widget.remove_class)("pypto-wrap")

    # -- events ---------------------------------------------------------------------------
    def _fill_lines(self) -> None:
        from .views.source import source_choices

        k, launch = self.kernel, self.launch
        choices = source_choices(k, launch.trace if launch else None) if k else []
        self.line_pick.options = [("(no line selected: pick a kernel line to trace it)", 0),
                                  *choices]
        self.line_pick.value = 0

    def _on_kernel(self, change: Any) -> None:
        self.kernel_index = change["new"]
        import ipywidgets as w

        index = self.tabs.selected_index or 0
        self._built.clear()
        self.tabs.children = [w.VBox() for _ in self.panels]
        self._fill_lines()
        self._build(index)
        self.tabs.selected_index = index

    def _on_line(self, change: Any) -> None:
        self.line = change["new"] or None
        for name, panel in self._built.items():
            refresh = getattr(panel, "refresh", None)
            if refresh is not None and name in ("source", "passes", "ir", "cce", "timeline"):
                refresh()

    def _on_tab(self, change: Any) -> None:
        if change["new"] is not None:
            self._build(change["new"])

    def _build(self, index: int) -> None:
        from .views.widget import build_panel

        name = self.panels[index]
        if name in self._built:
            return
        panel = build_panel(self, name)
        self._built[name] = panel
        children = list(self.tabs.children)
        children[index] = panel
        selected = self.tabs.selected_index
        self.tabs.children = children
        if selected is not None and self.tabs.selected_index != selected:
            self.tabs.selected_index = selected

    # -- display --------------------------------------------------------------------------
    def widget_bundle(self) -> dict:
        data = self.widget._repr_mimebundle_()
        return {WIDGET_MIME: data[WIDGET_MIME]} if WIDGET_MIME in data else {}

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict:
        return {"text/plain": self.result.summary(), "text/html": self.result.to_html(),
                **self.widget_bundle()}
