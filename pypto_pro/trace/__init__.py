"""Traces: what every pipe of every core did and when (schema, summaries, exports).

`Trace` wraps the events a backend recorded (`EventLog`, `TraceMeta`); its views need pandas,
importing this package does not. Also public: the exports (`to_chrome_json`, `to_msprof_json`,
`write_text`: an atomic text write), `pipe_rank` (the display order of pipes), and, imported on
first use (they need pandas), `soc_peaks` (a SoC table's roofs) and `op_family` (an IR op's
family in the op registry, e.g. "load" or "cube").
"""
from __future__ import annotations

from typing import Any

from .events import pipe_rank
from .export import to_chrome_json, to_msprof_json
from .export.atomic import write_text
from .schema import COLUMNS, EventLog, TraceMeta
from .trace import Trace

__all__ = ["COLUMNS", "EventLog", "Trace", "TraceMeta", "op_family", "pipe_rank", "soc_peaks",
           "to_chrome_json", "to_msprof_json", "write_text"]


def __getattr__(name: str) -> Any:
    if name in ("soc_peaks", "op_family"):
        from . import roofline

        return getattr(roofline, name)
    raise AttributeError(f"module 'pypto_pro.trace' has no attribute {name!r}")
