"""Source spans: where in the user's kernel source an IR node, a diagnostic or an event came from.

Lines and columns are 1-based and refer to the real file (or the registered notebook cell),
not to the dedented function source.
"""
from __future__ import annotations

import linecache
from dataclasses import dataclass


@dataclass(frozen=True)
class Span:
    file: str
    line: int
    col: int = 1
    end_line: int | None = None
    end_col: int | None = None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"

    def source_line(self, line: int | None = None) -> str:
        """The text of `line` (default: the first line of the span), without its newline."""
        return linecache.getline(self.file, line or self.line).rstrip("\n")


#: span of nodes the compiler made up (e.g. by a pass) without a user line.
UNKNOWN = Span("<unknown>", 0, 0)
