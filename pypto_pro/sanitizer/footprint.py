"""Exact byte footprints of simulated memory accesses.

On-chip: the bytes of a tile's logical window (layout-aware, 4-bit types share bytes), as
addresses inside its space. GM: byte offsets inside the tensor's storage. Writes are recovered
from the engine's deferred write list `(bound method, args, kwargs)`, so the footprint is the
one the write will really touch when it lands.
"""
from __future__ import annotations

from typing import Any

import torch

from ..ir.types import TileLayout
from ..sim.model.memory import GMRef, TileGeometry, TileRef, is_packed4

_OFFSETS: dict[tuple[TileGeometry, tuple[int, int]], torch.Tensor] = {}


def _offsets(g: TileGeometry, valid: tuple[int, int]) -> torch.Tensor:
    key = (g, valid)
    offs = _OFFSETS.get(key)
    if offs is None:
        if len(_OFFSETS) > 4096:
            _OFFSETS.clear()
        offs = _OFFSETS[key] = g.offsets(valid)
    return offs


def tile_bytes(ref: TileRef, r0: int = 0, c0: int = 0, rows: int | None = None,
               cols: int | None = None) -> torch.Tensor | slice:
    """Byte addresses of a block of `ref` (default: its valid window): an int64 tensor, or a
    slice when the block is whole rows of a plain row-major tile."""
    g = ref.geometry
    rows = ref.valid_rows if rows is None else rows
    cols = ref.valid_cols if cols is None else cols
    if (g.layout is TileLayout.ND and not g.compact and not is_packed4(g.dtype)
            and c0 == 0 and cols == g.cols):
        row_bytes = g.cols * g.dtype.itemsize
        return slice(g.addr + r0 * row_bytes, g.addr + (r0 + rows) * row_bytes)
    offs = _offsets(g, ref.valid)[r0:r0 + rows, c0:c0 + cols].reshape(-1)
    if is_packed4(g.dtype):
        return torch.unique((2 * g.addr + offs) // 2)
    size = g.dtype.itemsize
    return ((g.addr + offs * size)[:, None] + torch.arange(size)).reshape(-1)


def tile_extent(ref: TileRef) -> tuple[int, int]:
    """[start, end) bytes of the whole declared tile (padding included)."""
    g = ref.geometry
    bits = g.dtype.bits if is_packed4(g.dtype) else g.dtype.itemsize * 8
    return g.addr, g.addr + -(-g.rows * g.cols * bits // 8)


def gm_bytes(ref: GMRef, elems: torch.Tensor) -> torch.Tensor:
    """Storage byte offsets of GM element offsets `elems`."""
    elems = elems.reshape(-1)
    bits = ref._bits
    if bits == 4:
        return torch.unique(elems // 2)
    size = bits // 8
    return ((elems * size)[:, None] + torch.arange(size)).reshape(-1)


def gm_read_bytes(ref: GMRef, name: str, args: tuple, kwargs: dict) -> torch.Tensor:
    """Storage bytes of a GM read the op library made (`read_window` / `read_linear`)."""
    if name == "read_linear":
        offset, count = args[0], args[1] if len(args) > 1 else kwargs["count"]
        return gm_bytes(ref, torch.arange(offset, offset + count) + ref.base_offset)
    return gm_bytes(ref, _window_elems(ref, *args, **kwargs))


def _window_elems(ref: GMRef, offsets: Any, rows: int, cols: int, transpose: bool = False,
                  axes: tuple[int, int] | None = None) -> torch.Tensor:
    return ref._window_offsets(offsets, rows, cols, transpose, axes)


def write_footprint(fn: Any, args: tuple, kwargs: dict) -> tuple[Any, torch.Tensor, bool]:
    """(target ref, bytes it will write, is_atomic) of one deferred write.

    Raises the memory module's own errors (SimMemoryError / ValueError) when the write is out
    of bounds, before anything lands.
    """
    ref, name = fn.__self__, fn.__name__
    handler = _WRITES[(type(ref), name)]
    return ref, handler(ref, *args, **kwargs), name == "atomic_add_window"


def _tile_write(ref: TileRef, value: Any, offset: tuple[int, int] | None = None) -> torch.Tensor:
    rows, cols = torch.as_tensor(value).shape
    r0, c0 = offset if offset is not None else (0, 0)
    if r0 < 0 or c0 < 0 or r0 + rows > ref.geometry.rows or c0 + cols > ref.geometry.cols:
        raise ValueError(f"block [{r0}:{r0 + rows}, {c0}:{c0 + cols}] is outside tile shape "
                         f"[{ref.geometry.rows}, {ref.geometry.cols}]")
    return tile_bytes(ref, r0, c0, rows, cols)


def _tile_write_linear(ref: TileRef, offset: int, value: Any) -> torch.Tensor:
    n = torch.as_tensor(value).numel()
    view, skip = ref._linear_view(offset, n)
    return tile_bytes(view, 0, skip, 1, n)


def _gm_window(ref: GMRef, offsets: Any, value: Any, transpose: bool = False,
               axes: tuple[int, int] | None = None) -> torch.Tensor:
    rows, cols = value.shape
    elems = ref._window_offsets(offsets, rows, cols, transpose, axes)
    ref._check(elems)
    return gm_bytes(ref, elems)


def _gm_linear(ref: GMRef, offset: int, value: Any) -> torch.Tensor:
    elems = torch.arange(offset, offset + torch.as_tensor(value).numel()) + ref.base_offset
    ref._check(elems)
    return gm_bytes(ref, elems)


def _gm_fill(ref: GMRef, start: int, count: int, value: Any) -> torch.Tensor:
    elems = ref.logical_offsets(start, count)
    ref._check(elems)
    return gm_bytes(ref, elems)


_WRITES = {
    (TileRef, "write"): _tile_write,
    (TileRef, "write_linear"): _tile_write_linear,
    (GMRef, "write_window"): _gm_window,
    (GMRef, "atomic_add_window"): _gm_window,
    (GMRef, "write_linear"): _gm_linear,
    (GMRef, "fill_logical"): _gm_fill,
}


def view_overflow(ref: GMRef) -> tuple[int, int] | None:
    """(footprint bytes, source bytes) when a GM view reaches past its source tensor's data
    (a `make_tensor` view larger than what it was made from), else None."""
    if not ref.shape or any(s == 0 for s in ref.shape):
        return None
    t = ref.tensor
    if t.numel() == 0:
        return None
    t_last = t.storage_offset() + sum((s - 1) * st for s, st in zip(t.shape, t.stride()))
    source_end = (t_last + 1) * t.element_size()
    last = ref.base_offset + sum((s - 1) * st for s, st in zip(ref.shape, ref.strides))
    end = -(-(last + 1) * ref._bits // 8)
    first = ref.base_offset * ref._bits // 8
    return (end - first, source_end - first) if end > source_end else None
