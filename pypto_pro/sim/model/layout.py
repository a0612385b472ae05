"""Physical element order of on-chip tiles: ND, DN and the fractal layouts NZ, ZN, ZZ, NN.

Owns the conversion between a logical [rows, cols] matrix and the order in which the hardware
stores its elements. Big letter = order of fractals (Z row-major, N column-major), small letter =
order inside a fractal (z row-major, n column-major); ND is plain row-major, DN column-major.
A fractal holds `fractal_bytes` (512 B default; 1024 B for FP32/INT32 in Acc; 32 B for E8M0
scales): 16 rows x (fractal elements / 16) columns when the small letter is z ("A-style", e.g.
FP16 16x16, FP32 16x8, INT8 16x32), and (fractal elements / 16) rows x 16 columns when it is n
("B-style", e.g. FP32 8x16). Everything is whole-tensor reshape/permute or arange arithmetic.
Imports only `pypto_pro.ir.types`.
"""
from __future__ import annotations

import functools

import torch

from pypto_pro.ir.types import TileLayout

#: rows of an A-style fractal, columns of a B-style one [PTOCONST FRACTAL_NZ_ROW=16]
FRACTAL_SIDE = 16


def fractal_shape(layout: TileLayout, bits: int, fractal_bytes: int = 512) -> tuple[int, int]:
    """(rows, cols) of one fractal of `layout` for elements of `bits` bits; (1, 1) for ND/DN."""
    if not layout.is_fractal:
        return (1, 1)
    elems = fractal_bytes * 8 // bits
    if elems % FRACTAL_SIDE:
        raise ValueError(f"a {fractal_bytes} B fractal of {bits}-bit elements is not 16-aligned")
    if layout.slayout == "row":
        return (FRACTAL_SIDE, elems // FRACTAL_SIDE)
    return (elems // FRACTAL_SIDE, FRACTAL_SIDE)


def _check_divisible(shape: tuple[int, int], fractal: tuple[int, int], layout: TileLayout) -> None:
    rows, cols = shape
    if rows % fractal[0] or cols % fractal[1]:
        raise ValueError(f"tile shape {list(shape)} is not a multiple of the {layout.value} "
                         f"fractal {list(fractal)}")


def _fractal_axes(layout: TileLayout) -> tuple[int, int, int, int]:
    """Permutation of a (grid_row, in_row, grid_col, in_col) view into physical order."""
    outer = (0, 2) if layout.blayout == "row" else (2, 0)
    inner = (1, 3) if layout.slayout == "row" else (3, 1)
    return (*outer, *inner)


def to_physical(matrix: torch.Tensor, layout: TileLayout,
                fractal: tuple[int, int] = (1, 1)) -> torch.Tensor:
    """The elements of a logical [rows, cols] matrix as a 1-D tensor in physical order."""
    if layout is TileLayout.ND:
        return matrix.reshape(-1)
    if layout is TileLayout.DN:
        return matrix.t().reshape(-1)
    rows, cols = matrix.shape
    _check_divisible((rows, cols), fractal, layout)
    fr, fc = fractal
    grid = matrix.reshape(rows // fr, fr, cols // fc, fc)
    return grid.permute(_fractal_axes(layout)).reshape(-1)


def from_physical(flat: torch.Tensor, layout: TileLayout, shape: tuple[int, int],
                  fractal: tuple[int, int] = (1, 1)) -> torch.Tensor:
    """The logical [rows, cols] matrix stored as `flat` (physical order); inverse of to_physical."""
    rows, cols = shape
    if layout is TileLayout.ND:
        return flat.reshape(rows, cols)
    if layout is TileLayout.DN:
        return flat.reshape(cols, rows).t()
    _check_divisible(shape, fractal, layout)
    fr, fc = fractal
    axes = _fractal_axes(layout)
    physical_shape = [(rows // fr, fr, cols // fc, fc)[a] for a in axes]
    inverse = [axes.index(i) for i in range(4)]
    return flat.reshape(physical_shape).permute(inverse).reshape(rows, cols)


def default_stride(layout: TileLayout, shape: tuple[int, int]) -> int:
    """Elements (ND), rows (DN, big N) or columns (big Z) between consecutive outer blocks."""
    rows, cols = shape
    if layout is TileLayout.ND or layout.blayout == "row":
        return cols
    return rows


def outer_stride(layout: TileLayout, shape: tuple[int, int], fractal: tuple[int, int],
                 compact: int, valid: tuple[int, int]) -> int:
    """The outer-block stride of a tile, honouring `compact`.

    compact 0 (null): the full shape. compact 1 (normal, cube tail blocks): fractal layouts pack
    their outer blocks by the valid extent aligned to the fractal (big N: valid rows, big Z: valid
    cols). compact 2 (row_plus_one): the major-axis stride is one element longer than the minor
    extent (pto-isa `CompactMode::RowPlusOne`, against bank conflicts).
    """
    base = default_stride(layout, shape)
    if compact == 1 and layout.is_fractal:
        axis = 0 if layout.blayout == "col" else 1
        step = fractal[axis]
        return -(-valid[axis] // step) * step
    if compact == 2:
        return base + 1
    return base


def element_offsets(shape: tuple[int, int], layout: TileLayout, fractal: tuple[int, int] = (1, 1),
                    stride: int | None = None) -> torch.Tensor:
    """Physical element offset of every logical element, as an int64 [rows, cols] tensor.

    With the default stride this is the position of each element in `to_physical`'s output;
    another `stride` (see `outer_stride`) spaces the outer blocks differently. Cached per
    geometry: callers must not modify the result.
    """
    return _element_offsets(tuple(shape), layout, tuple(fractal),
                            default_stride(layout, shape) if stride is None else stride)


@functools.lru_cache(maxsize=512)
def _element_offsets(shape: tuple[int, int], layout: TileLayout, fractal: tuple[int, int],
                     stride: int) -> torch.Tensor:
    rows, cols = shape
    r = torch.arange(rows, dtype=torch.int64)[:, None]
    c = torch.arange(cols, dtype=torch.int64)[None, :]
    if layout is TileLayout.ND:
        return r * stride + c
    if layout is TileLayout.DN:
        return c * stride + r
    _check_divisible(shape, fractal, layout)
    fr, fc = fractal
    gr, ir, gc, ic = r // fr, r % fr, c // fc, c % fc
    inner = ir * fc + ic if layout.slayout == "row" else ic * fr + ir
    if layout.blayout == "col":  # fractals stacked down a column block of `stride` rows
        return gc * (stride * fc) + gr * (fr * fc) + inner
    return gr * (fr * stride) + gc * (fr * fc) + inner  # row blocks of `stride` columns
