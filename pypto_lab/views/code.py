"""The CCE view: the generated kernel.cpp, tiling headers and call_kernel.cpp, highlighted.

Owns `artifact_files` (file name → text of an `Artifacts`, in build-directory order),
`code_html` (one file with pygments' C++ lexer, each line linked to the kernel line it came
from through the code generator's line map, the lines of a selected kernel line marked),
`cce_html` (the static section: every file, kernel.cpp open) and `cce_widget` (a file picker
over the same). When code generation is unavailable or failed, the view says so.
"""
from __future__ import annotations

import os
from typing import Any

from pygments.lexers import CppLexer

from ..records import KernelRecord
from .html import code_block, esc, excerpt, line_note
from .source import cpp_line_map, cpp_lines_for


def artifact_files(artifacts: Any) -> dict[str, str]:
    """File name → text: kernel.cpp, the tiling headers, call_kernel.cpp."""
    files = getattr(artifacts, "files", None)
    if callable(files):
        return dict(files())
    return {"kernel.cpp": artifacts.kernel_cpp, **dict(artifacts.tiling_headers),
            "call_kernel.cpp": artifacts.call_kernel_cpp}


def code_html(kernel: KernelRecord, name: str, prefix: str,
              highlight_line: int | None = None) -> str:
    """One generated file; each mapped line ends with a link-like "L<n>" note. The lines
    before the kernel's body (includes, scalar helpers) come folded, so the pane opens at
    the code the kernel became."""
    text = artifact_files(kernel.artifacts)[name]
    mapping = [(cpp, line) for cpp, file, line in cpp_line_map(kernel.artifacts, name)
               if file == kernel.file]
    notes = {cpp: line_note(line) for cpp, line in mapping}
    marked = cpp_lines_for(kernel.artifacts, name, kernel.file, highlight_line) \
        if highlight_line else []
    # the generator's own "// file:line" trailer says the same as the note: drop it in the view
    base = os.path.basename(kernel.file)
    lines = [_strip_trailer(ln, base) for ln in text.splitlines()]
    body = body_start(lines, min((cpp for cpp, _ in mapping), default=1))
    if body <= 1:
        return code_block("\n".join(lines), CppLexer(), prefix, marked, notes, max_height=520)
    prelude = code_block("\n".join(lines[:body - 1]), CppLexer(), f"{prefix}-pre", marked,
                         notes, max_height=300)
    return (f"<details><summary class='muted'>lines 1&ndash;{body - 1}: includes and helpers"
            f"</summary>{prelude}</details>"
            + code_block("\n".join(lines[body - 1:]), CppLexer(), prefix, marked, notes,
                         max_height=520, start=body))


def body_start(lines: list[str], first_mapped: int) -> int:
    """The line the kernel's code starts on: after the last blank line before the first line
    that came from the kernel (1 when nothing comes before it)."""
    for n in range(first_mapped - 1, 0, -1):
        if not lines[n - 1].strip():
            return n + 1
    return 1


def line_excerpt(kernel: KernelRecord, name: str, prefix: str, line: int | None) -> str:
    """The C++ lines of `name` generated from kernel line `line`, as a preface."""
    if not line:
        return ""
    mapped = cpp_lines_for(kernel.artifacts, name, kernel.file, line)
    if not mapped:
        return f"<div class='note'>no line of {esc(name)} comes from kernel line {line}</div>"
    base = os.path.basename(kernel.file)
    text = "\n".join(_strip_trailer(ln, base) for ln in artifact_files(kernel.artifacts)[
        name].splitlines())
    return (f"<div class='note'>kernel line {line} &rarr; {esc(name)} line(s) "
            f"{', '.join(map(str, mapped))}:</div>"
            + excerpt(text, CppLexer(), f"{prefix}-ex", mapped)
            + f"<div class='note'>full {esc(name)}:</div>")


def _strip_trailer(line: str, base: str) -> str:
    head, sep, tail = line.rpartition("  // ")
    return head if sep and tail.startswith(base + ":") else line


def unavailable_html(kernel: KernelRecord, codegen_available: bool) -> str | None:
    """Why there is no C++ to show, or None when there is."""
    if not codegen_available:
        return ("<p class='note'>Code generation is not available in this installation "
                "(<code>pypto_pro.codegen</code> cannot be imported).</p>")
    if kernel.codegen_error:
        return (f"<p class='note'>Code generation failed for {esc(kernel.name)}:</p>"
                f"<div class='diag'>{esc(kernel.codegen_error)}</div>")
    if kernel.artifacts is None:
        return "<p class='note'>no generated code</p>"
    return None


def cce_html(kernel: KernelRecord, codegen_available: bool, prefix: str,
             highlight_line: int | None = None) -> str:
    missing = unavailable_html(kernel, codegen_available)
    if missing:
        return missing
    parts = []
    for i, name in enumerate(artifact_files(kernel.artifacts)):
        body = code_html(kernel, name, f"{prefix}-{i}", highlight_line)
        lines = artifact_files(kernel.artifacts)[name].count("\n") + 1
        parts.append(f"<details{' open' if i == 0 else ''}><summary>{esc(name)} "
                     f"<span class='muted'>({lines} lines)</span></summary>{body}</details>")
    return "".join(parts)


def cce_widget(kernel: KernelRecord, codegen_available: bool, prefix: str,
               highlight: Any = None) -> Any:
    """A file picker over the generated sources; `highlight()` gives the selected kernel line."""
    import ipywidgets as w

    missing = unavailable_html(kernel, codegen_available)
    if missing:
        box = w.VBox([w.HTML(f"<div class='pypto-wb'>{missing}</div>")])
        box.refresh = lambda *_: None
        return box
    names = list(artifact_files(kernel.artifacts))
    picker = w.ToggleButtons(options=names, value=names[0],
                             style={"button_width": "auto"})
    view = w.HTML()

    def render(*_: Any) -> None:
        line = highlight() if highlight else None
        view.value = (f"<div class='pypto-wb'>{line_excerpt(kernel, picker.value, prefix, line)}"
                      f"{code_html(kernel, picker.value, prefix, line)}</div>")

    picker.observe(render, "value")
    render()
    box = w.VBox([picker, view])
    box.refresh = render
    return box
