"""Where a `--ref` check failed: the first mismatching elements and a heatmap of all of them.

Owns `mismatch_html`: a table of the first mismatches (index, value, reference, error) and the
mismatch grid of a `CheckResult` as a small PNG (`<img>` with a data URI, one pixel per cell,
scaled up without smoothing), so the picture needs no script and no plotly and stays a few KB
whatever the tensor's size. A cell is white with no mismatch and from pink to dark red with the
share of its elements that mismatch.
"""
from __future__ import annotations

import base64
import struct
import zlib

import pandas as pd

from ..records import CheckResult
from .html import esc, table


def png(grid: tuple[tuple[float, ...], ...]) -> bytes:
    """The grid (shares 0..1) as an RGB PNG, one pixel per cell."""
    rows = []
    for row in grid:
        line = bytearray(b"\x00")  # filter type: none
        for share in row:
            line += bytes(_colour(share))
        rows.append(bytes(line))
    height, width = len(grid), len(grid[0]) if grid else 0

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(b"".join(rows), 9)) + chunk(b"IEND", b""))


def _colour(share: float) -> tuple[int, int, int]:
    if share <= 0:
        return 255, 255, 255
    s = min(1.0, 0.25 + 0.75 * share)  # any mismatch is visible
    return 255 - int(80 * s), int(200 * (1 - s)), int(200 * (1 - s))


def heatmap_html(check: CheckResult, max_px: int = 320) -> str:
    rows, cols = len(check.grid), len(check.grid[0])
    scale = max(1, min(max_px // max(rows, cols), 12))
    uri = "data:image/png;base64," + base64.b64encode(png(check.grid)).decode()
    cr, cc = check.cell
    folded = "rows" if len(check.shape) <= 2 else "rows (leading dims folded)"
    per = f"{cr}x{cc} elements per pixel" if cr * cc > 1 else "one element per pixel"
    return (f"<div class='note'>where {esc(check.output)} differs: {folded} down, columns "
            f"across, {per}; darker = more of the cell wrong</div>"
            f"<img class='pypto-mismatch' alt='mismatch heatmap of {esc(check.output)}' "
            f"src='{uri}' width='{cols * scale}' height='{rows * scale}' "
            "style='image-rendering:pixelated;border:1px solid #d0d7de'>")


def mismatch_html(check: CheckResult) -> str:
    """The first mismatches and the heatmap of a failed check ('' for a PASS)."""
    if check.ok or not check.first:
        return ""
    frame = pd.DataFrame([{"index": "[" + ", ".join(map(str, m.index)) + "]",
                           "output": f"{m.actual:.6g}", "reference": f"{m.expected:.6g}",
                           "|err|": f"{m.error:.3g}"} for m in check.first])
    more = check.mismatched - len(check.first)
    tail = f"<div class='note'>... and {more:,} more</div>" if more > 0 else ""
    grid = heatmap_html(check) if check.grid else ""
    return (f"<h4>First mismatches of {esc(check.output)} (row-major)</h4>"
            + table(frame, numeric=("output", "reference", "|err|")) + tail + grid)
