"""Errors a cell run raises so that the notebook cell fails with a readable diagnostic.

Owns `CellError`: it wraps what went wrong (a PyPTO Pro compile or simulation error, or an
ordinary Python error in the cell body) and renders it through `_render_traceback_`, which
IPython calls instead of printing its own frames. A DSL error renders as its diagnostic (coded
first line, pass name, the cell line with a caret, hint) with the cell's linecache name replaced
by "Cell In[n]"; a Python error renders as a traceback that starts at the cell's frame, so the
magic's own frames never show. A `--ref` FAIL (`check.ReferenceMismatch`) renders as the
verdict with the first mismatches; its `result` is the finished `CellResult`, which the magic
shows before the cell fails. `show_stack=True` (`--traceback`) adds the full Python stack.
"""
from __future__ import annotations

import traceback
from types import TracebackType
from typing import Any

from .records import SourceInfo

_RED, _BOLD, _RESET = "\x1b[31m", "\x1b[1m", "\x1b[0m"


class CellError(Exception):
    """A `%%pypto` cell failed; `error` is the original exception, `stage` where it happened
    ("cell", "compile", "launch", "check", "export")."""

    def __init__(self, error: BaseException, source: SourceInfo | None, stage: str,
                 show_stack: bool = False, shell: Any = None) -> None:
        self.error = error
        self.source = source
        self.stage = stage
        self.show_stack = show_stack
        self._shell = shell
        self.result: Any = None  # the finished CellResult when only the --ref check failed
        super().__init__(self.diagnostic())

    @property
    def is_dsl_error(self) -> bool:
        from pypto_pro.errors import PyptoError

        return isinstance(self.error, PyptoError)

    @property
    def is_mismatch(self) -> bool:
        from .check import ReferenceMismatch

        return isinstance(self.error, ReferenceMismatch)

    def diagnostic(self) -> str:
        """The plain-text diagnostic (no colours): what the cell output shows."""
        if self.is_mismatch:
            return (f"{self.error.check.describe()}\n(the Run tab shows where; --keep-going "
                    f"shows the result without failing the cell)")
        if self.is_dsl_error:
            text = str(self.error)
            return self.source.relabel(text) if self.source else text
        return "".join(traceback.format_exception_only(type(self.error), self.error)).rstrip()

    def _headline(self) -> str:
        err = self.error
        where = {"compile": "compiling", "launch": "running", "check": "checking",
                 "export": "exporting", "cell": "running"}.get(self.stage, self.stage)
        kind = type(err).__name__
        pass_name = getattr(err, "pass_name", None)
        in_pass = f" in pass {pass_name}" if pass_name else ""
        return f"{_RED}{_BOLD}{kind}{_RESET} while {where} the %%pypto cell{in_pass}"

    def _render_traceback_(self) -> list[str]:
        lines: list[str] = []
        if self.show_stack:
            lines += _format_stack(self.error, None, None)
            lines.append("")
        if self.is_dsl_error or self.is_mismatch:
            lines.append(self._headline())
            lines += self.diagnostic().splitlines()
            return lines
        if isinstance(self.error, SyntaxError):
            text = "".join(traceback.format_exception_only(type(self.error), self.error))
            return lines + (self.source.relabel(text) if self.source else text).splitlines()
        if not self.show_stack:
            lines += _format_stack(self.error, self.source, self._shell)
        return lines

    def __str__(self) -> str:
        return self.diagnostic()


def _cell_frames(tb: TracebackType | None, source: SourceInfo | None) -> TracebackType | None:
    """The traceback from the first frame of the cell's code on (all of it if none is)."""
    if source is None:
        return tb
    node = tb
    while node is not None:
        if node.tb_frame.f_code.co_filename == source.file:
            return node
        node = node.tb_next
    return tb


def _format_stack(error: BaseException, source: SourceInfo | None, shell: Any) -> list[str]:
    tb = _cell_frames(error.__traceback__, source)
    if shell is not None and hasattr(shell, "InteractiveTB"):
        return list(shell.InteractiveTB.structured_traceback(type(error), error, tb))
    text = "".join(traceback.format_exception(type(error), error, tb))
    return (source.relabel(text) if source else text).rstrip().splitlines()
