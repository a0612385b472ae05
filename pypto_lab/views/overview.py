"""The static overview of a cell result: every requested panel as script-free HTML.

Owns `result_html`, the `text/html` of a `CellResult` (and the body of the standalone report):
a header (cell, kernels, launches, time, check verdict), then per kernel its source with
per-line cycles, passes, final IR and generated C++, linked so that clicking a source line
highlights the IR and C++ lines it became (CSS only, see `links`), then Run, Blocks, the
timeline's PipeUtilization summary, the sanitizer's findings (`sanitizer_panel_html`) and the
Roofline table. Sections are `<details>` so a long result stays readable in exported notebooks.
"""
from __future__ import annotations

from typing import Any

from pygments.lexers import PythonLexer

from .blocks import blocks_html
from .code import artifact_files, cce_html
from .html import chip, code_block, esc, fmt_seconds, fmt_us, table, uid, wrap
from .links import link_css, link_radios
from .passes import passes_html
from .roofline import roofline_html
from .run import run_html
from .source import cpp_lines_for, ir_lines_for, ir_spans, source_html
from .timeline import UTILIZATION_FORMATS, utilization_table


def header_html(result: Any) -> str:
    launches = result.launches
    chips = [chip(f"{len(result.kernels)} kernel(s)"), chip(f"{len(launches)} launch(es)"),
             chip(f"cell {fmt_seconds(result.seconds)}")]
    if launches and launches[-1].sim_us is not None:
        chips.append(chip(f"simulated {fmt_us(launches[-1].sim_us)}", "ok"))
    if result.check is not None:
        chips.append(chip("PASS" if result.check.ok else "FAIL",
                          "ok" if result.check.ok else "bad"))
    reports = [r.sanitizer for r in launches if r.sanitizer is not None]
    if reports:
        issues = sum(len(r) for r in reports)
        chips.append(chip(f"sanitizer: {issues} issue(s)", "bad" if issues else "ok"))
    names = ", ".join(esc(k.name) for k in result.kernels) or "no kernel"
    return (f"<div class='head'><b>%%pypto</b><span class='muted'>"
            f"{esc(result.source.label)}</span><span>{names}</span>{''.join(chips)}</div>")


def sanitizer_panel_html(launches: list[Any]) -> str:
    """The findings of every sanitized launch (`views.sanitizer`), or why there are none."""
    sanitized = [r for r in launches if r.sanitizer is not None]
    if not sanitized:
        return ("<div class='note'>no sanitizer run: run the cell with <code>--sanitize</code> "
                "(or the kernel with <code>@pl.jit(sanitizer=True)</code>)</div>")
    from .sanitizer import sanitizer_html

    return "".join(f"<h4>{esc(r.kernel)}[None, {r.block_dim}]</h4>"
                   + sanitizer_html(r.sanitizer) for r in sanitized)


def _section(title: str, body: str, open_: bool = True) -> str:
    return f"<details{' open' if open_ else ''}><summary>{title}</summary>{body}</details>"


def _link_map(kernel: Any, prefix: str) -> dict[int, list[str]]:
    """Kernel line → ids of its final-IR lines and generated C++ lines in this overview."""
    mapping: dict[int, list[str]] = {}
    lines = [n for n, text in kernel.source_lines() if text.strip()]
    for target in kernel.targets:
        record = kernel.passes(target)[-1]
        ir_spans(record)
        for n in lines:
            mapping.setdefault(n, []).extend(
                f"{prefix}-p-{target}-ir-{i}" for i in ir_lines_for(record, kernel.file, n))
    if kernel.artifacts is not None:
        for f, name in enumerate(artifact_files(kernel.artifacts)):
            for n in lines:
                mapping.setdefault(n, []).extend(
                    f"{prefix}-c-{f}-{i}" for i in cpp_lines_for(kernel.artifacts, name,
                                                                 kernel.file, n))
    return {n: ids for n, ids in mapping.items() if ids}


def kernel_html(result: Any, kernel: Any, prefix: str, box: str,
                highlight: int | None = None) -> str:
    opts = result.options
    launch = result.launch_for(kernel)
    trace = launch.trace if launch is not None else None
    radios = f"{prefix}-lnk"
    parts = [f"<h3>{esc(kernel.name)} <span class='muted'>[{kernel.kernel_type}, "
             f"{esc(kernel.arch)}]</span></h3>"]
    links = _link_map(kernel, prefix)
    if opts.shows("source"):
        src = source_html(kernel, trace, f"{prefix}-s", highlight, radios=radios)
        hint = ("<div class='note'>click a line to highlight the IR and C++ it became</div>"
                if links else "")
        parts.append(_section("Source", hint + src))
        parts.insert(0, link_radios(radios, links) + link_css(box, radios, links, f"{prefix}-s"))
    if opts.shows("passes"):
        parts.append(_section("Passes", passes_html(kernel, f"{prefix}-p", opts.diff,
                                                    highlight), open_=False))
    elif opts.shows("ir"):
        for target in kernel.targets:
            record = kernel.passes(target)[-1]
            text, _ = ir_spans(record)
            body = code_block(text, PythonLexer(), f"{prefix}-p-{target}-ir")
            parts.append(_section(f"IR ({target}, after {esc(record.name)})", body))
    if opts.shows("cce"):
        parts.append(_section("Generated C++ (CCE)", cce_html(
            kernel, result.codegen_available, f"{prefix}-c", highlight), open_=False))
    return "".join(parts)


def result_html(result: Any, highlight: int | None = None, report: bool = False) -> str:
    """The whole result as one script-free HTML fragment (with its stylesheet); `report`
    drops the pointer to the interactive timeline (the report draws it below)."""
    box = uid("pypto")
    opts = result.options
    parts = [header_html(result)]
    for i, kernel in enumerate(result.kernels):
        parts.append(kernel_html(result, kernel, f"{box}-k{i}", box, highlight))
    if opts.shows("run"):
        parts.append(_section("Run", run_html(result.kernels, result.launches,
                                              result.codegen_available, result.check,
                                              result.notes)))
    timed = [r for r in result.launches if r.trace is not None and len(r.trace.events)]
    if opts.shows("blocks") and timed:
        parts.append(_section("Blocks", blocks_html(timed[-1].trace)))
    if opts.shows("timeline") and timed:
        util = utilization_table(timed[-1].trace)
        body = table(util, UTILIZATION_FORMATS, numeric=("cores",))
        if not report:
            body += ("<p class='note'>The interactive per-pipe timeline is in the Workbench "
                     "(JupyterLab / VS Code) and in the HTML report (<code>--export "
                     "report.html</code>).</p>")
        parts.append(_section("Timeline: pipe utilization", body))
    if result.shows("sanitizer"):
        parts.append(_section("Sanitizer", sanitizer_panel_html(result.launches)))
    if opts.shows("roofline") and any(r.pipe_work for r in timed):  # (as the tabs: `panels`)
        parts.append(_section("Roofline", roofline_html(timed)))
    return wrap("".join(parts), box)
