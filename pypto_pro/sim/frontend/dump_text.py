"""The text `pl.dump_data` prints, as the real toolchain's device code prints it.

The generated C++ prints a tile or a GM tensor with `TPRINT`, which PyPTO Pro's runtime header
`pypto_tprint.h` implements, and a tile window with print loops of its own (the code generator
emits them); every element goes through `__pypto_print_val` (`%f ` for floats, `%d ` / `%u `
of the value cast to 32 bits for integers, the raw byte of an 8-bit float). The native
backend's headers print the same, so a dump reads the same on every backend:

* a tile: `=== [dump_tile] dtype: D, shape=[R,C], valid=[VR,VC], Layout: L ===`, then every
  element of the tile's storage in row-major (or, for a column-major tile, column-major) order,
  `| ` after the last valid column and a `--------` line after the last valid row;
* a tile window: `=== [TPRINT Tile Window] ...` and a `Source Shape ... Valid Shape` line (the
  window clamped to the tile's valid shape), then the window's elements;
* a GM tensor window: `=== [dump_tensor] dtype: D, Layout: L, shape=[n0,...,n4] ===` (the
  window's extents right-aligned in five dims), then `  Batch [i0, i1, i2]:` and the rows.

A `flag` prints `=== [flag] F ===` first, `loc=True` a `[file:line] dump_tile` line before it.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from pypto_pro.ir.dtype import DataType
from pypto_pro.ir.types import TileLayout

from ..model.memory import GMRef, TileRef
from ..ops.numerics import to_compute

#: `__pypto_dtype_name<T>()` (anything else is "unknown")
_DTYPE_NAMES = {DataType.FP32: "float32", DataType.FP16: "float16", DataType.INT32: "int32",
                DataType.UINT32: "uint32", DataType.INT16: "int16", DataType.UINT16: "uint16",
                DataType.INT8: "int8", DataType.UINT8: "uint8"}
_FLOATS = (DataType.FP32, DataType.FP16, DataType.BF16)
_SIGNED = (DataType.INT8, DataType.INT16, DataType.INT32, DataType.INT64)
_UNSIGNED = (DataType.UINT8, DataType.UINT16, DataType.UINT32, DataType.UINT64, DataType.BOOL)
#: pto::GetLayoutName(BLayout, SLayout) by (blayout, slayout)
_LAYOUT_NAMES = {("row", "none"): "ND", ("col", "none"): "DN", ("row", "row"): "Zz",
                 ("col", "row"): "Nz", ("row", "col"): "Zn", ("col", "col"): "Nn"}


def dtype_name(dtype: DataType) -> str:
    return _DTYPE_NAMES.get(dtype, "unknown")


def _float_text(x: float) -> str:
    if math.isnan(x):  # C's printf shows the sign of a NaN
        return "-nan " if math.copysign(1.0, x) < 0 else "nan "
    return "%f " % x


def values_text(stored: torch.Tensor, dtype: DataType) -> list[str]:
    """`__pypto_print_val` of every element of `stored` (the dtype's storage values)."""
    flat = stored.reshape(-1)
    if dtype in _FLOATS:
        return [_float_text(x) for x in flat.float().tolist()]
    if dtype in _SIGNED or dtype in _UNSIGNED:
        words = [x & 0xFFFFFFFF for x in to_compute(flat, dtype).tolist()]  # the (int) cast
        if dtype in _UNSIGNED:
            return ["%u " % x for x in words]
        return ["%d " % (x - (1 << 32) if x >> 31 else x) for x in words]
    if dtype.itemsize == 1:  # an 8-bit float: its raw byte
        return ["%u " % x for x in flat.view(torch.uint8).tolist()]
    return ["? "] * flat.numel()


def layout_name(tile: TileRef) -> str:
    """The tile's C++ layout as `pto::GetLayoutName` names it (one column: column-major)."""
    layout: TileLayout = tile.geometry.layout
    blayout = "col" if tile.geometry.cols == 1 else layout.blayout
    return _LAYOUT_NAMES[blayout, layout.slayout]


def headers(file: str, line: int, op: str, loc: bool, flag: str | None) -> str:
    out = f"[{file.replace(chr(92), '/').rsplit('/', 1)[-1]}:{line}] {op}\n" if loc else ""
    return out + (f"=== [flag] {flag} ===\n" if flag else "")


def tile_text(tile: TileRef) -> str:
    """A whole tile, as `TPRINT(tile)` prints it."""
    g = tile.geometry
    rows, cols = g.rows, g.cols
    vr, vc = tile.valid
    raw = values_text(tile.read_linear(0, rows * cols), tile.dtype)
    column_major = g.cols == 1 or g.layout.blayout == "col"
    out = [f"=== [dump_tile] dtype: {dtype_name(tile.dtype)}, shape=[{rows},{cols}], "
           f"valid=[{vr},{vc}], Layout: {layout_name(tile)} ===\n"]
    for r in range(rows):
        for c in range(cols):
            out.append(raw[c * rows + r if column_major else r * cols + c])
            if c == vc - 1 and vc < cols:
                out.append("| ")
        out.append("\n")
        if r == vr - 1 and vr < rows:
            out.append("--------\n")
    return "".join(out)


def tile_window_text(tile: TileRef, offsets: Sequence[int], shapes: Sequence[int]) -> str:
    """A window of a tile, as the code generator's print loops print it."""
    rows, cols = tile.geometry.rows, tile.geometry.cols
    r0, c0 = (int(x) for x in offsets)
    want_r, want_c = (max(int(x), 0) for x in shapes)
    vr = max(min(want_r, max(tile.valid_rows - r0, 0)), 0)
    vr = min(vr, rows)
    vc = max(min(want_c, max(tile.valid_cols - c0, 0)), 0)
    vc = min(vc, cols)
    out = [f"=== [TPRINT Tile Window] Data Type: {dtype_name(tile.dtype)}, Layout: "
           f"{layout_name(tile)}, TileType: Vec ===\n",
           f"  Source Shape: [{rows}, {cols}], Window Offsets: [{r0}, {c0}], Requested Shape: "
           f"[{want_r}, {want_c}], Valid Shape: [{vr}, {vc}]\n"]
    block = tile.read_block(r0, c0, vr, vc) if vr and vc else None
    for r in range(vr):
        out.extend(values_text(block[r], tile.dtype))
        out.append("\n")
    return "".join(out)


def tensor_text(gm: GMRef, offsets: Sequence[int], shapes: Sequence[int],
                layout: str = "ND") -> str:
    """A window of a GM tensor, as `TPRINT` of a GlobalTensor over it prints it."""
    offsets, shapes = [int(x) for x in offsets], [int(x) for x in shapes]
    n = [1] * (5 - len(shapes)) + shapes
    strides = [0] * (5 - len(shapes)) + list(gm.strides)
    base = sum(o * s for o, s in zip(offsets, gm.strides))
    out = [f"=== [dump_tensor] dtype: {dtype_name(gm.dtype)}, Layout: {layout}, "
           f"shape=[{','.join(map(str, n))}] ===\n"]
    for i0 in range(n[0]):
        for i1 in range(n[1]):
            for i2 in range(n[2]):
                out.append(f"  Batch [{i0}, {i1}, {i2}]:\n")
                for r in range(n[3]):
                    start = base + i0 * strides[0] + i1 * strides[1] + i2 * strides[2] + \
                        r * strides[3]
                    row = torch.cat([gm.read_linear(start + c * strides[4], 1)
                                     for c in range(n[4])]) if n[4] else torch.empty(0)
                    out.extend(values_text(row, gm.dtype))
                    out.append("\n")
    return "".join(out)


__all__ = ["dtype_name", "headers", "layout_name", "tensor_text", "tile_text",
           "tile_window_text", "values_text"]
