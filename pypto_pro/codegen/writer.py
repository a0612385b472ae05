"""The line writer every generated C++ file goes through: indentation, source comments, line map.

`CodeWriter.line(text, span)` appends one indented line; when the span names a kernel source
line the line ends with `  // <file>:<line>` and the (C++ line, source file, source line) triple
is recorded, so every emitted statement maps back to the DSL line it came from. Blocks open with
`open(head)` (K&R brace) and close with `close()`; functions use `open_function` (Allman brace,
the style of the real generator's output). Imports only the IR span type.
"""
from __future__ import annotations

import functools
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from ..ir.span import Span

INDENT = "    "


@functools.lru_cache(maxsize=256)
def source_label(file: str) -> str:
    """How generated code names a kernel's source file: a notebook cell the way IPython shows
    it ("Cell In[3]", not the kernel's temp file), a `linecache` name (`<pypto-cell-…>`) as
    is, else the file's base name."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    name_of = getattr(getattr(shell, "compile", None), "format_code_name", None)
    label = name_of(file) if name_of is not None else None
    return " ".join(label) if label else os.path.basename(file)


class CodeWriter:
    """Collects the lines of one generated file."""

    def __init__(self, file_name: str) -> None:
        self.file_name = file_name
        self.lines: list[str] = []
        self.line_map: list[tuple[int, str, int]] = []
        self.depth = 0

    # ------------------------------------------------------------ lines
    def line(self, text: str = "", span: Span | None = None) -> None:
        """One line at the current indentation (an empty `text` gives an empty line)."""
        if not text:
            self.lines.append("")
            return
        out = INDENT * self.depth + text
        if span is not None and span.line > 0:
            out += f"  // {source_label(span.file)}:{span.line}"
            self.line_map.append((len(self.lines) + 1, span.file, span.line))
        self.lines.append(out)

    def raw(self, text: str) -> None:
        """A line without indentation (preprocessor directives)."""
        self.lines.append(text)

    def comment(self, text: str) -> None:
        self.line(f"// {text}")

    # ------------------------------------------------------------ blocks
    def open(self, head: str, span: Span | None = None) -> None:
        self.line(f"{head} {{", span)
        self.depth += 1

    def middle(self, text: str) -> None:
        """A line between two blocks at the outer indentation, e.g. `} else {`."""
        self.depth -= 1
        self.line(text)
        self.depth += 1

    def close(self, tail: str = "") -> None:
        self.depth -= 1
        self.line("}" + tail)

    @contextmanager
    def block(self, head: str, span: Span | None = None) -> Iterator[None]:
        self.open(head, span)
        try:
            yield
        finally:
            self.close()

    @contextmanager
    def function(self, signature: str, span: Span | None = None) -> Iterator[None]:
        """`signature` on its own line, then the body between Allman braces."""
        self.line(signature, span)
        self.line("{")
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1
            self.line("}")

    def splice(self, other: CodeWriter) -> None:
        """Append `other`'s lines (written at this writer's depth), keeping its line map."""
        offset = len(self.lines)
        self.lines.extend(other.lines)
        self.line_map.extend((n + offset, f, ln) for n, f, ln in other.line_map)

    def child(self) -> CodeWriter:
        """An empty writer at this writer's indentation (emit now, splice later)."""
        sub = CodeWriter(self.file_name)
        sub.depth = self.depth
        return sub

    # ------------------------------------------------------------ result
    @property
    def next_line(self) -> int:
        return len(self.lines) + 1

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def c_string(text: str) -> str:
    """A C string literal for `text` (escapes quotes, backslashes and non-printables)."""
    out = []
    for ch in text:
        code = ord(ch)
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\{code:03o}")
        elif code > 0x7F:
            out.extend(f"\\{b:03o}" for b in ch.encode("utf-8"))
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'
