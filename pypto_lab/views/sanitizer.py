"""The Sanitizer tab: a launch's sanitizer findings as script-free HTML.

`sanitizer_html(findings)` takes a `pypto_pro.sanitizer.SanitizerReport` (or any iterable of
`Finding`s, or None) and returns one self-contained fragment: a summary line (errors, warnings),
then one table row per finding with its kind, the source line(s) involved (the code itself, read
from the kernel's file), where it ran (core, pipe, start cycle: the Trace event `views.timeline`
marks in red), the other instruction of a race or pairing bug, the message and the hint.
"""
from __future__ import annotations

import linecache
import re
from collections.abc import Iterable
from typing import Any

from ..locations import cell_label, relabel, where
from .html import chip, esc, wrap


def sanitizer_html(findings: Any) -> str:
    """Findings as an HTML fragment (no `<script>`); an explicit all-clear when there are
    none."""
    items = list(_iter(findings))
    if not items:
        return wrap("<div class='head'><b>Sanitizer</b>" + chip("0 issues", "ok") +
                    "<span class='muted'>no memory, synchronisation or initialisation bug "
                    "found in this launch</span></div>")
    errors = sum(1 for f in items if f.severity == "ERROR")
    warnings = len(items) - errors
    head = ("<div class='head'><b>Sanitizer</b>" + chip(f"{len(items)} issue(s)", "bad") +
            (chip(f"{errors} error(s)", "bad") if errors else "") +
            (chip(f"{warnings} warning(s)", "warn") if warnings else "") +
            "<span class='muted'>the instructions are marked in red on the Timeline</span>"
            "</div>")
    rows = "".join(_row(i, f) for i, f in enumerate(items, 1))
    body = ("<table class='t'><thead><tr><th>#</th><th>kind</th><th>source</th><th>where</th>"
            "<th>with</th><th>message</th></tr></thead><tbody>" + rows + "</tbody></table>")
    return wrap(head + body)


def _iter(findings: Any) -> Iterable[Any]:
    if findings is None:
        return ()
    return getattr(findings, "findings", findings)


def _row(i: int, f: Any) -> str:
    kind = chip(f.kind, "bad" if f.severity == "ERROR" else "warn")
    hits = f" <span class='muted'>×{f.count}</span>" if f.count > 1 else ""
    source = _code(f.site) + (_code(f.other) if f.other is not None and f.other.line else "")
    other = _where(f.other) if f.other is not None else "<span class='muted'>-</span>"
    hint = f"<div class='note'>Hint: {esc(_cell_lines(f.hint, f.site.file))}</div>" \
        if f.hint else ""
    message = esc(_cell_lines(f.message, f.site.file))
    return (f"<tr><td class='num'>{i}</td><td>{kind}{hits}</td><td>{source}</td>"
            f"<td>{_where(f.site)}</td><td>{other}</td><td>{message}{hint}</td></tr>")


def _cell_lines(text: str, file: str) -> str:
    """"line 15" of a kernel in a notebook cell written as "Cell In[5], line 15"."""
    cell = cell_label(file)
    text = relabel(text)
    return re.sub(r"(?<!, )\bline (\d+)", f"{cell}, line \\1", text) if cell else text


def _code(site: Any) -> str:
    text = linecache.getline(site.file, site.line).strip() if site.line else ""
    return (f"<div><span class='muted'>{esc(where(site.file, site.line))}</span> "
            f"<code>{esc(text) or '?'}</code></div>")


def _where(site: Any) -> str:
    parts = [site.core or "?"]
    if site.pipe:
        parts.append(f"pipe {site.pipe}")
    if site.cycle >= 0:
        parts.append(f"cycle {site.cycle:,}")
    return (f"<div>{esc(', '.join(parts))}</div>"
            f"<div class='muted'>{esc(where(site.file, site.line))}</div>")
