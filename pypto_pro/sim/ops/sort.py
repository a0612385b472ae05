"""Sorting primitives (pipe V): `sort32`, `mrgsort`, `mrgsort2` and the radix helper
`histogram`.

Sorted data are 8-byte (value, index) records [pto-isa TSORT32/TMRGSORT]: FP32 records are
(fp32 value, uint32 index); FP16 records are (fp16 value, 2 zero bytes, uint32 index). All
orders are descending by value; ties keep the smaller index (sort32) or the earlier list
(merges). Merges are computed as stable sorts of the concatenated, already sorted lists, which
yields exactly the merge order; the per-row work is batched, never an element loop.
`histogram` writes cumulative byte counts per row (bin b = elements whose byte is <= b), as the
PyPTO Pro doc example shows.
"""
from __future__ import annotations

from dataclasses import replace

import torch

from pypto_pro.ir.dtype import DataType

from ..model.memory import TileRef, storage_dtype
from . import SimOpError
from .operands import require_dtype, require_same_dtype, tile_arg

RECORD_BYTES = 8
GROUP = 32
SORTABLE = (DataType.FP16, DataType.FP32)


def encode_records(values: torch.Tensor, index: torch.Tensor, dtype: DataType) -> torch.Tensor:
    """[..., n] values (stored dtype) and int64 indices to [..., n * 8] record bytes."""
    value_bytes = values.contiguous().view(torch.uint8).reshape(*values.shape, -1)
    pad = torch.zeros(*values.shape, 4 - value_bytes.shape[-1], dtype=torch.uint8)
    index_bytes = index.to(torch.int32).contiguous().view(torch.uint8).reshape(*values.shape, 4)
    return torch.cat([value_bytes, pad, index_bytes], -1).reshape(*values.shape[:-1], -1)


def decode_records(raw: torch.Tensor, dtype: DataType) -> tuple[torch.Tensor, torch.Tensor]:
    """[..., n * 8] record bytes to (stored values [..., n], int64 indices [..., n])."""
    records = raw.reshape(*raw.shape[:-1], -1, RECORD_BYTES)
    values = records[..., :dtype.itemsize].contiguous().view(storage_dtype(dtype))[..., 0]
    index = records[..., 4:].contiguous().view(torch.int32)[..., 0].to(torch.int64) & 0xFFFFFFFF
    return values, index


def _sort_desc(values: torch.Tensor, index: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Stable descending sort along the last axis (ties keep their current order)."""
    order = torch.sort(values.float(), dim=-1, descending=True, stable=True).indices
    return values.gather(-1, order), index.gather(-1, order)


def _tile_bytes(tile: TileRef, cols: int) -> torch.Tensor:
    return tile.read_block(0, 0, tile.valid_rows, cols).contiguous().view(torch.uint8)


def _write_bytes(tile: TileRef, raw: torch.Tensor) -> None:
    tile.write(raw.contiguous().view(storage_dtype(tile.dtype)), offset=(0, 0))


def sort32(args: list, kwargs: dict) -> None:
    """`sort32(dst, src, idx[, tmp])`: each run of 32 values of a row, sorted with its indices."""
    op = "block.sort32"
    dst, src, idx = (tile_arg(a, op=op, position=i) for i, a in enumerate(args[:3]))
    require_same_dtype(op, dst, src)
    require_dtype(op, (src,), SORTABLE)
    require_dtype(op, (idx,), (DataType.UINT32, DataType.INT32))
    rows, cols = src.valid
    index = idx.read_block(0, 0, idx.valid_rows, cols).to(torch.int64) & 0xFFFFFFFF
    index = index.expand(rows, cols) if idx.valid_rows == 1 else index[:rows]
    groups = -(-cols // GROUP)
    values = torch.full((rows, groups * GROUP), float("-inf")).to(storage_dtype(src.dtype))
    values[:, :cols] = src.read()
    padded_index = torch.full((rows, groups * GROUP), 1 << 40, dtype=torch.int64)
    padded_index[:, :cols] = index
    v, i = values.reshape(rows, groups, GROUP), padded_index.reshape(rows, groups, GROUP)
    by_index = torch.sort(i, dim=-1, stable=True).indices  # ties then resolve by index
    v, i = _sort_desc(v.gather(-1, by_index), i.gather(-1, by_index))
    # padding (-inf, huge index) sorts to the end of the last group: drop it
    v, i = v.reshape(rows, -1)[:, :cols], i.reshape(rows, -1)[:, :cols]
    _write_bytes(dst, encode_records(v, i, src.dtype))


def _records_per(dtype: DataType, elements: int) -> int:
    return elements * dtype.itemsize // RECORD_BYTES


def mrgsort(args: list, kwargs: dict) -> None:
    """`mrgsort(dst, src, block_len=)`: merge each 4 consecutive sorted blocks of src's row.

    `block_len` counts storage elements (values and indices), e.g. 64 for 32 FP32 records.
    """
    op = "block.mrgsort"
    dst, src = (tile_arg(a, op=op, position=i) for i, a in enumerate(args[:2]))
    require_same_dtype(op, dst, src)
    require_dtype(op, (src,), SORTABLE)
    block_len = int(kwargs.get("block_len", 0))
    cols = src.valid_cols
    if block_len <= 0 or cols % (4 * block_len):
        raise SimOpError(f"{op}: valid cols {cols} must be a multiple of 4 * block_len "
                         f"({block_len})")
    values, index = decode_records(_tile_bytes(src, cols), src.dtype)
    merged = _records_per(src.dtype, 4 * block_len)
    v, i = _sort_desc(values.reshape(src.valid_rows, -1, merged),
                      index.reshape(src.valid_rows, -1, merged))
    _write_bytes(dst, encode_records(v.reshape(src.valid_rows, -1),
                                     i.reshape(src.valid_rows, -1), src.dtype))


def mrgsort2(args: list, kwargs: dict) -> None:
    """`mrgsort2(src0, src1, dst, tmp, *more, exhausted=)`: merge 2-4 sorted single-row lists.

    The merge goes to `tmp`, then `dst`'s valid columns are copied from it. With `exhausted`
    the hardware stops as soon as one list is used up, so only the records up to and including
    the first list's last record are merged.
    """
    op = "block.mrgsort2"
    tiles = [tile_arg(a, op=op, position=i) for i, a in enumerate(args)]
    lists, dst, tmp = [tiles[0], tiles[1], *tiles[4:]], tiles[2], tiles[3]
    if not 2 <= len(lists) <= 4:
        raise SimOpError(f"{op}: 2 to 4 source lists, got {len(lists)}")
    require_same_dtype(op, dst, tmp, *lists)
    require_dtype(op, (dst,), SORTABLE)
    decoded = [decode_records(_tile_bytes(t, t.valid_cols)[:1], t.dtype) for t in lists]
    values = torch.cat([v for v, _ in decoded], -1)
    index = torch.cat([i for _, i in decoded], -1)
    source = torch.cat([torch.full_like(i, n) for n, (_, i) in enumerate(decoded)], -1)
    order = torch.sort(values.float(), dim=-1, descending=True, stable=True).indices
    count = values.shape[-1]
    if kwargs.get("exhausted", False):
        position = torch.empty_like(order)
        position[0, order[0]] = torch.arange(count)
        count = min(int(position[0, source[0] == n].max()) + 1 for n in range(len(lists)))
    order = order[:, :count]
    merged = encode_records(values.gather(-1, order), index.gather(-1, order), dst.dtype)
    # vmrgsort4 writes the whole merge from tmp's address (past tmp's own columns when it is
    # shorter: pto-isa sizes tmp only against the UB), then dst's valid columns are copied
    dst_bytes = dst.valid_cols * dst.dtype.itemsize
    out = _run(tmp, max(merged.shape[-1], dst_bytes))
    raw = _tile_bytes(out, out.shape[1])[:1].clone()
    raw[:, :merged.shape[-1]] = merged
    data = raw.contiguous().view(storage_dtype(tmp.dtype))
    target = getattr(tmp, "_deferred_target", None)  # an engine operand writes at the op's end
    if target is None:
        out.write(data, offset=(0, 0))
    else:
        tmp._deferred_writes.append((out.write, (data,), {"offset": (0, 0)}))
    dst.write(raw[:, :dst_bytes].contiguous().view(storage_dtype(dst.dtype)), offset=(0, 0))


def _run(tile: TileRef, nbytes: int) -> TileRef:
    """The single-row run of at least `nbytes` bytes (whole elements) from `tile`'s address,
    in the memory `tile` writes to."""
    cols = max(tile.shape[1], -(-nbytes // tile.dtype.itemsize))
    target = getattr(tile, "_deferred_target", tile)
    return TileRef(target.memory, replace(target.geometry, cols=cols), 1, cols)


def histogram(args: list, kwargs: dict) -> None:
    """`histogram(dst, src, idx, is_msb=)`: cumulative counts of one byte of each element.

    UINT16 src: is_msb counts byte 1; else byte 0 of the elements whose byte 1 equals the row's
    idx[r, 0]. UINT32 src: is_msb counts byte 3; else byte 0 of the elements whose bytes 3, 2, 1
    equal idx[0, 0], idx[1, 0], idx[2, 0].
    """
    op = "block.histogram"
    dst, src, idx = (tile_arg(a, op=op, position=i) for i, a in enumerate(args[:3]))
    require_dtype(op, (src,), (DataType.UINT16, DataType.UINT32))
    require_dtype(op, (dst,), (DataType.UINT32,))
    require_dtype(op, (idx,), (DataType.UINT8,))
    data = src.read().to(torch.int64) & (0xFFFF if src.dtype is DataType.UINT16 else 0xFFFFFFFF)
    top = 1 if src.dtype is DataType.UINT16 else 3
    if kwargs.get("is_msb", False):
        byte, keep = (data >> (8 * top)) & 0xFF, torch.ones_like(data, dtype=torch.bool)
    else:
        byte, keep = data & 0xFF, _histogram_filter(data, idx, src.dtype, top)
    counts = torch.zeros(src.valid_rows, 256, dtype=torch.int64)
    counts.scatter_add_(1, byte, keep.to(torch.int64))
    dst.write(counts.cumsum(1).to(torch.uint32), offset=(0, 0))


def _histogram_filter(data: torch.Tensor, idx: TileRef, dtype: DataType,
                      top: int) -> torch.Tensor:
    if dtype is DataType.UINT16:
        want = idx.read_block(0, 0, data.shape[0], 1).to(torch.int64)
        return ((data >> 8) & 0xFF) == want
    want = idx.read_block(0, 0, 3, 1).to(torch.int64).reshape(-1)
    keep = torch.ones_like(data, dtype=torch.bool)
    for row, byte in enumerate(range(top, 0, -1)):  # bytes 3, 2, 1: three whole-tile compares
        keep &= ((data >> (8 * byte)) & 0xFF) == want[row]
    return keep


IMPLS = {"block.sort32": sort32, "block.mrgsort": mrgsort, "block.mrgsort2": mrgsort2,
         "block.histogram": histogram}
