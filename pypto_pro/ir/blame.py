"""The kernel line an internal compiler failure happened at.

A pass or the code generator that fails with a plain Python exception (a bug of ours) is
reported as a typed `PassInner` / `CodegenInner`; this module finds the source line to point
it at: the innermost IR statement or expression with a real span that a frame of the failing
call stack was working on.
"""
from __future__ import annotations

from types import TracebackType

from .nodes import Node
from .span import Span


def span_of_failure(tb: TracebackType | None) -> Span | None:
    """The span of the innermost IR node any frame of `tb` holds in a local, or None."""
    frames = []
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    for frame in reversed(frames):
        for value in frame.f_locals.values():
            span = getattr(value, "span", None) if isinstance(value, Node) else None
            if isinstance(span, Span) and span.line > 0:
                return span
    return None


__all__ = ["span_of_failure"]
