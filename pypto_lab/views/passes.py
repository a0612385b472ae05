"""The Passes view: every pass of a kernel target, the IR after it, and diffs between passes.

Owns `pass_rows` (one row per pass record: time, changed or not, lines added/removed, warnings),
`diff_text` (a unified diff between any two pass records, difflib through `PassRecord.diff`),
`ir_html` / `diff_html` (pygments-highlighted, IR lines annotated with the kernel line they came
from), `passes_html` (the static section: table, requested diffs, final IR) and
`passes_widget` (pass list with hide-unchanged, IR after the selected pass — concise, without
assignment types, unless unticked — and its diff against the previous or any chosen pass,
unified or side by side). Reads `PassRecords` only.
"""
from __future__ import annotations

import difflib
from typing import Any

import pandas as pd
from pygments.lexers import DiffLexer, PythonLexer

from ..records import KernelRecord
from .html import chip, code_block, esc, excerpt, side_by_side, table
from .source import ir_lines_for, ir_source_notes, ir_spans


def _resolve(records: Any, key: int | str) -> int:
    if isinstance(key, int):
        return key
    names = records.names()
    if key not in names:
        raise KeyError(f"no pass named {key!r}; passes: {', '.join(names)}")
    return names.index(key)


def diff_text(records: Any, a: int | str, b: int | str | None = None, context: int = 3) -> str:
    """Unified diff of the IR from pass `a` to pass `b` (default: `a` against the pass before
    it, i.e. what `a` changed)."""
    if b is None:
        b = _resolve(records, a)
        a = max(0, b - 1)
    return records[_resolve(records, a)].diff(records[_resolve(records, b)], context)


def _record_diff(a: Any, b: Any, concise: bool = False) -> str:
    """Unified diff between two pass records (of the concise print when asked)."""
    if not concise:
        return a.diff(b)
    return "".join(difflib.unified_diff(
        ir_spans(a, True)[0].splitlines(keepends=True),
        ir_spans(b, True)[0].splitlines(keepends=True), fromfile=a.name, tofile=b.name))


def _counts(diff: str) -> tuple[int, int]:
    lines = diff.splitlines()
    added = sum(1 for ln in lines if ln.startswith("+") and not ln.startswith("+++"))
    removed = sum(1 for ln in lines if ln.startswith("-") and not ln.startswith("---"))
    return added, removed


def pass_rows(records: Any) -> pd.DataFrame:
    """index, pass, ms, state (changed / unchanged / FAILED), +lines, -lines, warnings."""
    rows = []
    for i, rec in enumerate(records):
        added, removed = _counts(records[i - 1].diff(rec, 0)) if i else (0, 0)
        state = "FAILED" if rec.error is not None else (
            "parsed" if i == 0 else ("changed" if rec.changed else "unchanged"))
        rows.append({"#": i, "pass": rec.name, "ms": rec.seconds * 1e3, "state": state,
                     "+": added, "-": removed, "warnings": len(rec.warnings)})
    return pd.DataFrame(rows)


#: what the marks of the pass list mean (shown under it)
MARKER_KEY = ("◆ the IR as parsed · ● the pass changed the IR (+added/−removed lines) · "
              "○ no change · ✗ the pass failed")


def pass_label(row: Any) -> str:
    mark = {"changed": "●", "unchanged": "○", "parsed": "◆", "FAILED": "✗"}[row.state]
    delta = f"+{row[4]}/-{row[5]}" if row.state == "changed" else ""
    return f"{mark} {row[1]:<21} {row.ms:6.2f} ms {delta}"


def ir_html(record: Any, file: str, prefix: str, highlight_line: int | None = None,
            concise: bool = False) -> str:
    """The IR after `record`, each line noted with the kernel line it came from."""
    text, _ = ir_spans(record, concise)
    marked = ir_lines_for(record, file, highlight_line, concise) if highlight_line else []
    return code_block(text, PythonLexer(), prefix, marked,
                      ir_source_notes(record, file, concise))


def line_excerpt(record: Any, file: str, prefix: str, line: int | None,
                 concise: bool = False) -> str:
    """The IR lines of kernel line `line` in `record`, with a line of context, as a preface."""
    if not line:
        return ""
    marked = ir_lines_for(record, file, line, concise)
    if not marked:
        return f"<div class='note'>kernel line {line} has no IR op after {esc(record.name)}</div>"
    text, _ = ir_spans(record, concise)
    return (f"<div class='note'>kernel line {line} &rarr; IR line(s) "
            f"{', '.join(map(str, marked))} after {esc(record.name)}:</div>"
            + excerpt(text, PythonLexer(), prefix, marked) + "<div class='note'>full IR:</div>")


def diff_html(diff: str, prefix: str) -> str:
    if not diff.strip():
        return "<p class='note'>no differences</p>"
    return code_block(diff, DiffLexer(), prefix)


def _warnings_html(records: Any) -> str:
    items = [f"<li><b>{esc(rec.name)}</b>: {esc(w.message)}</li>"
             for rec in records for w in rec.warnings]
    return f"<h4>Warnings</h4><ul class='note'>{''.join(items)}</ul>" if items else ""


def passes_html(kernel: KernelRecord, prefix: str, diff: tuple[str, ...] = (),
                highlight_line: int | None = None) -> str:
    """Static Passes section: per target the pass table, the `--diff` requested (or every
    changing pass, collapsed) and the final IR."""
    parts = []
    for target in kernel.targets:
        records = kernel.passes(target)
        rows = pass_rows(records)
        parts.append(f"<h3>{esc(kernel.name)} &middot; {target} &middot; {len(records) - 1} "
                     f"passes, {rows['ms'].sum():.1f} ms</h3>")
        parts.append(table(rows, {"ms": ".2f"}, numeric=("#", "+", "-", "warnings")))
        parts.append(_warnings_html(records))
        parts.append(_diffs_html(records, f"{prefix}-{target}", diff))
        final = ir_html(records[-1], kernel.file, f"{prefix}-{target}-ir", highlight_line,
                        concise=True)
        parts.append(f"<details><summary>IR after the last pass ({esc(records[-1].name)}, "
                     f"concise: <code>kernel.compile().ir</code> has the types)"
                     f"</summary>{final}</details>")
    return "".join(parts)


def _diffs_html(records: Any, prefix: str, diff: tuple[str, ...]) -> str:
    if diff:
        try:
            text = diff_text(records, *diff)
        except KeyError as e:
            return f"<p class='note'>--diff: {esc(e.args[0])}</p>"
        title = " → ".join(diff) if len(diff) == 2 else f"what {diff[0]} changed"
        return f"<h4>Diff: {esc(title)}</h4>{diff_html(text, prefix + '-diff')}"
    out = []
    for i, rec in enumerate(records):
        if i and rec.changed:
            body = diff_html(records[i - 1].diff(rec), f"{prefix}-d{i}")
            out.append(f"<details><summary>{esc(rec.name)} {chip('changed', 'warn')}</summary>"
                       f"{body}</details>")
    return "".join(out)


class PassBrowser:
    """Interactive pass browser (ipywidgets): target picker, hide-unchanged, pass list, IR
    after the selected pass or its diff against the previous / a chosen pass."""

    def __init__(self, kernel: KernelRecord, prefix: str, highlight: Any = None) -> None:
        import ipywidgets as w

        self.kernel, self.prefix, self.highlight = kernel, prefix, highlight
        shown = "flex" if len(kernel.targets) > 1 else "none"
        self.target = w.ToggleButtons(options=kernel.targets, value=kernel.targets[0],
                                      layout=w.Layout(display=shown))
        self.hide = w.Checkbox(value=False, description="hide unchanged", indent=False)
        self.concise = w.Checkbox(value=True, description="concise (no assignment types)",
                                  indent=False)
        self.split = w.Checkbox(value=False, description="diff side by side", indent=False)
        self.passes = w.Select(rows=16, layout=w.Layout(width="350px"))
        self.passes.add_class("pypto-mono")
        self.mode = w.ToggleButtons(options=["IR", "diff vs previous", "diff vs"], value="IR",
                                    style={"button_width": "130px"})
        self.against = w.Dropdown(layout=w.Layout(width="200px"))
        self.view = w.HTML(layout=w.Layout(flex="1 1 auto", min_width="0"))
        self._busy = False
        for control in (self.target, self.hide):
            control.observe(self.refill, "value")
        for control in (self.passes, self.mode, self.against, self.concise, self.split):
            control.observe(self.render, "value")
        self.refill()
        key = w.HTML("<div class='pypto-wb'><div class='note'>" + esc(MARKER_KEY) + "</div></div>")
        left = w.VBox([self.target, self.hide, self.concise, self.split, self.passes, key],
                      layout=w.Layout(width="360px", flex="0 0 auto"))
        self.widget = w.VBox([w.HBox([self.mode, self.against]), w.HBox([left, self.view])])
        self.widget.refresh = self.render

    def records(self) -> Any:
        return self.kernel.passes(self.target.value)

    def refill(self, *_: Any) -> None:
        self._busy = True
        rows = pass_rows(self.records())
        shown = rows if not self.hide.value else rows[rows["state"] != "unchanged"]
        self.passes.options = [(pass_label(r), int(r[0])) for r in shown.itertuples(index=False)]
        self.against.options = [(f"{i}: {n}", i) for i, n in enumerate(self.records().names())]
        self.against.value = 0
        self.passes.value = int(shown.iloc[-1]["#"])
        self._busy = False
        self.render()

    def render(self, *_: Any) -> None:
        if self._busy or self.passes.value is None:
            return
        recs, i = self.records(), self.passes.value
        self.against.layout.display = "flex" if self.mode.value == "diff vs" else "none"
        line = self.highlight() if self.highlight else None
        if self.mode.value == "IR":
            file, concise = self.kernel.file, self.concise.value
            body = (line_excerpt(recs[i], file, f"{self.prefix}-ex", line, concise)
                    + ir_html(recs[i], file, f"{self.prefix}-ir", line, concise))
            title = f"IR after <b>{esc(recs[i].name)}</b>"
        else:
            base = max(0, i - 1) if self.mode.value == "diff vs previous" else self.against.value
            if self.split.value:
                concise = self.concise.value
                body = side_by_side(ir_spans(recs[base], concise)[0],
                                    ir_spans(recs[i], concise)[0],
                                    (recs[base].name, recs[i].name))
            else:
                body = diff_html(_record_diff(recs[base], recs[i], self.concise.value),
                                 f"{self.prefix}-diff")
            title = f"diff <b>{esc(recs[base].name)}</b> → <b>{esc(recs[i].name)}</b>"
        self.view.value = f"<div class='pypto-wb'><div class='note'>{title}</div>{body}</div>"


def passes_widget(kernel: KernelRecord, prefix: str, diff: tuple[str, ...] = (),
                  highlight: Any = None) -> Any:
    """The pass browser's widget (`highlight()` returns the selected kernel line); `diff`
    preselects `--diff` passes."""
    browser = PassBrowser(kernel, prefix, highlight)
    if diff:
        _preselect(browser.records(), diff, browser.passes, browser.mode, browser.against)
    return browser.widget


def _preselect(records: Any, diff: tuple[str, ...], passes: Any, mode: Any, against: Any) -> None:
    try:
        indices = [_resolve(records, d) for d in diff]
    except KeyError:
        return
    if len(indices) == 2:
        mode.value = "diff vs"
        against.value = indices[0]
        passes.value = indices[1]
    else:
        mode.value = "diff vs previous"
        passes.value = indices[0]
