"""Shared pieces of the script-free HTML every view emits: the stylesheet, code blocks, tables.

Owns `STYLE` (one `<style>` scoped under `.pypto-wb`, including the pygments token colours),
`code_block` (pygments highlighting with one `<span id=...>` per line, so a line can be linked
and highlighted), `table` (a pandas DataFrame as a compact HTML table), `uid` (element-id
prefixes that are unique per page) and small formatters. No `<script>` ever: these fragments go
into `text/html` outputs that JupyterLab, VS Code and nbconvert show without running code.
"""
from __future__ import annotations

import functools
import html
import itertools
import os
from collections.abc import Iterable
from typing import Any

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer

_ids = itertools.count(1)

#: colour of the highlighted (selected) source line and everything linked to it
HIGHLIGHT = "#ffe58a"


def uid(prefix: str = "pw") -> str:
    """A page-unique element id prefix."""
    return f"{prefix}{os.getpid() % 10000}x{next(_ids)}"


def esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _pygments_css() -> str:
    return HtmlFormatter(style="friendly").get_style_defs(".pypto-wb .hl")


STYLE = """<style>
.pypto-wb{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;font-size:13px;
  color:#1f2328;line-height:1.4;max-width:100%}
.pypto-wb h3{font-size:14px;margin:10px 0 4px 0;font-weight:600}
.pypto-wb h4{font-size:13px;margin:8px 0 4px 0;font-weight:600;color:#444}
.pypto-wb .head{display:flex;flex-wrap:wrap;gap:6px 14px;align-items:baseline;
  padding:6px 10px;background:#f3f5f8;border:1px solid #d8dee4;border-radius:6px}
.pypto-wb .head b{font-size:14px}
.pypto-wb .chip{display:inline-block;padding:0 7px;border-radius:9px;font-size:11px;
  background:#e7ecf2;color:#333;border:1px solid #d0d7de}
.pypto-wb .ok{background:#dafbe1;border-color:#8fd19e;color:#1a7f37}
.pypto-wb .bad{background:#ffebe9;border-color:#ff8182;color:#cf222e}
.pypto-wb .warn{background:#fff8c5;border-color:#d4a72c;color:#7d4e00}
.pypto-wb .muted{color:#6e7781}
.pypto-wb table.t{border-collapse:collapse;font-size:12px;margin:4px 0}
.pypto-wb table.t th{background:#f6f8fa;text-align:left;padding:2px 8px;
  border-bottom:1px solid #d0d7de;font-weight:600}
.pypto-wb table.t td{padding:2px 8px;border-bottom:1px solid #eaeef2;
  font-variant-numeric:tabular-nums}
.pypto-wb table.t td.num{text-align:right}
.pypto-wb .code{font-family:ui-monospace,'SFMono-Regular',Menlo,Consolas,monospace;
  font-size:12px;line-height:1.45;max-height:460px;overflow:auto;border:1px solid #d8dee4;
  border-radius:6px;background:#fbfcfd;max-width:100%;box-sizing:border-box}
.pypto-wrap .pypto-wb .code pre,.pypto-wb:has(.pypto-wrap-toggle:checked) .code pre{
  white-space:pre-wrap;overflow-wrap:anywhere}
.pypto-wb [data-pypto-line]{cursor:pointer}
.pypto-wb .src[data-pypto-line]:hover{text-decoration:underline}
.pypto-wb table.diff{font-family:ui-monospace,monospace;font-size:12px;border-collapse:collapse}
.pypto-wb table.diff td{padding:0 6px;white-space:pre;vertical-align:top}
.pypto-wb table.diff .diff_header{color:#8c959f;text-align:right}
.pypto-wb table.diff .diff_next{display:none}
.pypto-wb .diff_add{background:#dafbe1}.pypto-wb .diff_chg{background:#fff8c5}
.pypto-wb .diff_sub{background:#ffebe9}
.pypto-wb .code pre{margin:0;padding:4px 0;background:transparent;white-space:pre}
.pypto-wb .code .ln{display:block;padding:0 8px 0 0}
.pypto-wb .code label.ln{cursor:pointer}
.pypto-wb .code label.ln:hover{background:#f1f4f8}
.pypto-wb .code .no{display:inline-block;width:3.5em;text-align:right;color:#8c959f;
  padding-right:10px;user-select:none}
.pypto-wb .code .src{color:#8250df;font-size:11px;padding-left:10px;user-select:none}
.pypto-wb .code .ln.sel,.pypto-wb .code .ln:target{background:#ffe58a}
.pypto-wb .code .ln.chg{background:#eef6ff}
.pypto-wb details{margin:6px 0;border:1px solid #e1e4e8;border-radius:6px;padding:2px 8px}
.pypto-wb details>summary{cursor:pointer;font-weight:600;padding:4px 0}
.pypto-wb .bar{display:inline-block;height:9px;background:#4C78A8;vertical-align:middle}
.pypto-wb .note{font-size:12px;color:#57606a;margin:4px 0}
.pypto-wb .diag{font-family:ui-monospace,monospace;font-size:12px;white-space:pre;
  background:#fff5f5;border:1px solid #ffcecb;border-radius:6px;padding:6px 8px;overflow:auto}
.pypto-wb .hot{font-family:ui-monospace,monospace;font-size:11px;color:#57606a;
  text-align:right;padding-right:8px;user-select:none}
.pypto-mono select,.pypto-mono option{font-family:ui-monospace,'SFMono-Regular',Menlo,
  Consolas,monospace!important;font-size:12px!important}
.pypto-wb .code.hl{background:#fbfcfd}
.pypto-wb .excerpt .code{max-height:none;margin-bottom:4px}
""" + _pygments_css() + "\n.pypto-wb .code.hl{background:#fbfcfd}\n</style>"


def code_block(text: str, lexer: Lexer, prefix: str, highlight_lines: Iterable[int] = (),
               annotations: dict[int, str] | None = None, max_height: int = 460,
               start: int = 1, radios: str | None = None, pick_lines: bool = False) -> str:
    """Highlighted code, one `<span class="ln" id="{prefix}-{n}">` per line (numbered from
    `start`), the `highlight_lines` marked with class `sel`, an optional note per line (HTML).
    With `radios` each line is a `<label>` for the radio `{radios}-r{n}` (see `links`); with
    `pick_lines` each line carries `data-pypto-line` (the Workbench selects it on a click)."""
    body = _highlighted(type(lexer), text) if not lexer.options else \
        highlight(text, lexer, _formatter())
    marked = set(highlight_lines)
    notes = annotations or {}
    lines = []
    for n, line in enumerate(body.split("\n")[: len(text.splitlines())], start=start):
        cls = "ln sel" if n in marked else "ln"
        note = f"<span class='src'>{notes[n]}</span>" if n in notes else ""
        tag, extra = ("label", f" for='{radios}-r{n}'") if radios else ("span", "")
        if pick_lines:
            extra += f" data-pypto-line='{n}'"
        lines.append(f"<{tag} class='{cls}' id='{prefix}-{n}'{extra}><span class='no'>{n}</span>"
                     f"{line}{note}</{tag}>")
    return (f"<div class='code hl' style='max-height:{max_height}px'><pre>"
            + "".join(lines) + "</pre></div>")


@functools.cache
def _formatter() -> HtmlFormatter:
    return HtmlFormatter(nowrap=True, style="friendly")


@functools.lru_cache(maxsize=64)
def _highlighted(lexer: type[Lexer], text: str) -> str:
    """`text` highlighted by a default `lexer`, kept: a result's views render the same code
    more than once (its static HTML beside the workbench, both again on a re-run)."""
    return highlight(text, lexer(), _formatter())


def excerpt(text: str, lexer: Lexer, prefix: str, lines: Iterable[int], context: int = 1,
            limit: int = 40) -> str:
    """Only the `lines` of `text` (with `context` lines around them), one block per run of
    nearby lines, the lines themselves marked; at most `limit` lines."""
    all_lines = text.splitlines()
    wanted = sorted({n for n in lines if 0 < n <= len(all_lines)})
    shown = sorted({m for n in wanted for m in range(n - context, n + context + 1)
                    if 0 < m <= len(all_lines)})[:limit]
    if not shown:
        return ""
    runs, run = [], [shown[0]]
    for n in shown[1:]:
        if n == run[-1] + 1:
            run.append(n)
        else:
            runs.append(run)
            run = [n]
    runs.append(run)
    blocks = [code_block("\n".join(all_lines[r[0] - 1:r[-1]]), lexer, f"{prefix}-x{i}",
                         wanted, start=r[0]) for i, r in enumerate(runs)]
    return "<div class='excerpt'>" + "".join(blocks) + "</div>"


def table(frame: Any, formats: dict[str, str] | None = None, numeric: Iterable[str] = (),
          escape: bool = True) -> str:
    """A DataFrame as `<table class="t">` (formats: column → format spec)."""
    formats = formats or {}
    numeric = set(numeric) | set(formats)
    head = "".join(f"<th>{esc(c)}</th>" for c in frame.columns)
    rows = []
    for values in frame.itertuples(index=False):
        cells = []
        for col, value in zip(frame.columns, values):
            text = _cell(value, formats.get(col))
            cls = " class='num'" if col in numeric else ""
            cells.append(f"<td{cls}>{esc(text) if escape else text}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table class='t'><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def line_note(line: int) -> str:
    """The "L24" note of a generated line: a click on it selects kernel line 24."""
    return f"<span data-pypto-line='{line}'>L{line}</span>"


def side_by_side(a: str, b: str, names: tuple[str, str]) -> str:
    """Two texts side by side, changed lines coloured and only the changes with three lines
    of context shown (difflib's `HtmlDiff`, styled by `STYLE`)."""
    import difflib

    if a == b:
        return "<p class='note'>no differences</p>"
    table_html = difflib.HtmlDiff(tabsize=4).make_table(
        a.splitlines(), b.splitlines(), esc(names[0]), esc(names[1]), context=True, numlines=3)
    return f"<div class='code' style='max-height:520px'>{table_html}</div>"


def _cell(value: Any, spec: str | None) -> str:
    """A table cell's text: `spec` applied to numbers, "–" for a missing value."""
    import pandas as pd

    if not isinstance(value, (str, list, tuple, dict)) and pd.isna(value):
        return "–"
    if spec is None:
        return str(value)
    try:
        return format(value, spec)
    except (TypeError, ValueError):
        return str(value)


def chip(text: str, kind: str = "") -> str:
    return f"<span class='chip {kind}'>{esc(text)}</span>"


def wrap(inner: str, element_id: str | None = None) -> str:
    """A fragment inside the scoped workbench container with the stylesheet."""
    ident = f" id='{element_id}'" if element_id else ""
    return f"<div class='pypto-wb'{ident}>{STYLE}{inner}</div>"


def fmt_us(us: float | None) -> str:
    return "-" if us is None else (f"{us:,.3f} us" if us < 1000 else f"{us / 1000:,.3f} ms")


def fmt_seconds(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"
