"""Trace exporters: Chrome trace JSON for Perfetto and the msprof op simulator `trace.json` that
MindStudio Insight imports. Importing them needs no pandas."""
from __future__ import annotations

from .chrome import to_chrome_json
from .msprof import to_msprof_json

__all__ = ["to_chrome_json", "to_msprof_json"]
