"""Traces: what every pipe of every core did and when (schema, summaries, exports).

`Trace` wraps the events a backend recorded (`EventLog`, `TraceMeta`); its views need pandas,
importing this package does not.
"""
from __future__ import annotations

from .export import to_chrome_json, to_msprof_json
from .schema import COLUMNS, EventLog, TraceMeta
from .trace import Trace

__all__ = ["COLUMNS", "EventLog", "Trace", "TraceMeta", "to_chrome_json", "to_msprof_json"]
