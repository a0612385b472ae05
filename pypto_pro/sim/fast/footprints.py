"""The memory each op of a recorded launch reads and writes, for the stream engine's eager
replay (`replay`): `scheduler.cpp` (`pypto_sched_first_race`) tests whether an op ever starts
while another op that writes memory it touches is still running; when none does, running every
op at its start gives the values of the deferred replay.

A footprint row is FP_W int64: (write, space, first byte, rows, row stride, row bytes), the
bytes [first + i * stride, first + i * stride + row bytes) for i < rows of memory `space` (a
small int per on-chip buffer of a core, or per GM storage). It errs on the side of overlap: an
operand the op registry gives no role (or an op without a spec) counts as written, a GM
operand other than the window of a tile load or store (its cost's) as its whole storage, a
tile as every byte it can touch (but for the block an insert writes).
"""
from __future__ import annotations

import functools
import struct
from array import array
from typing import Any

import numpy as np

from pypto_pro.ir.ops import REGISTRY

from ..model.memory import GMRef, TileRef, WindowLines
from ..model.memory_system import GMAccess

FP_W = 6  # scheduler.cpp FP_W
#: a footprint row as bytes (int64s): appending bytes to the table costs a third of a tuple
_ROW = struct.Struct(f"{FP_W}q").pack
_WHOLE = (0, 1, 0, 1 << 62)  # a buffer's every byte (its size is not needed)
_MEMORY = (TileRef, GMRef)
_SCALARS = frozenset({int, float, bool, str, type(None)})
#: (id(geometry), valid rows, valid cols) → (geometry, first byte, end byte): the entry keeps
#: the geometry (and so its id) alive
_TILE_SPANS: dict[tuple[int, int, int], tuple[Any, int, int]] = {}
_TILE_SPANS_MAX = 100_000
#: ops that write only a block of a tile: op → (the tile's position, the position of the tile
#: whose valid shape is the block's, the position of the block's (row, col))
_SUB_BLOCK_OPS = {"block.insert": (0, 1, 2)}
#: ops whose cost names the GM window of one operand: op → that operand's position
_WINDOW_AT = {"block.load": 1, "block.store": 0, "block.store_fp": 0}
#: (id(geometry), valid shape, block) → (geometry, `_block_rect`)
_BLOCKS: dict[tuple, tuple[Any, tuple[int, int, int, int] | None]] = {}


@functools.lru_cache(maxsize=None)
def _op_info(ir_op: str, nargs: int) -> tuple[tuple[int, ...], tuple[int, int, int] | None, int]:
    """What `Footprints.add` needs of an op called with `nargs` operands: per operand position
    1 written or 0 only read, its `_SUB_BLOCK_OPS` entry, and its `_WINDOW_AT` position."""
    spec = REGISTRY.get(ir_op)
    if spec is None:
        written = (1,) * nargs
    else:
        reads, writes = spec.roles(nargs)
        written = tuple(int(k in writes or k not in reads) for k in range(nargs))
    return written, _SUB_BLOCK_OPS.get(ir_op), _WINDOW_AT.get(ir_op, -1)


class Footprints:
    """The footprints of one launch's ops (`table`) and per op (instruction, its first int in
    the table) (`index`), in instruction order."""

    __slots__ = ("table", "index", "spaces", "gm_spaces", "_known")

    def __init__(self) -> None:
        self.table = array("q")
        self.index = array("q")
        # (id(memory), space) or GM storage (address, bytes) → space; the GM ones
        self.spaces: dict[Any, int] = {}
        self.gm_spaces: set[int] = set()
        # id(a tile, tile geometry, GM view or kwargs) → (it, ...): the entry keeps it alive
        self._known: dict[int, tuple] = {}

    def add(self, i: int, ir_op: str, args: list, kwargs: dict, gm: GMAccess | None) -> None:
        """The footprints of instruction `i`, op `ir_op` on resolved operands `args` (`gm`: the
        GM side of its cost)."""
        index = self.index
        index.append(i)  # (two appends: extending an array by a tuple costs more)
        index.append(len(self.table))
        self._rows(ir_op, args, kwargs, gm)

    def rows(self, ir_op: str, args: list, kwargs: dict | None) -> bytes:
        """The rows `add` gives an op without a GM window, as bytes (not added)."""
        table = self.table
        start = len(table)
        self._rows(ir_op, args, kwargs, None)
        found = table[start:].tobytes()
        del table[start:]
        return found

    def window_parts(self, ir_op: str, args: list, kwargs: dict) -> tuple[bytes, int, int, bytes]:
        """What `add` gives a tile load or store but for its GM window's row: (the rows of the
        operands before the GM one, the GM operand's space and write flag, the rows of the
        operands after it and of the kwargs), spaces numbered in `add`'s order."""
        written, _, at = _op_info(ir_op, len(args))
        head = self.rows(ir_op, [a if k < at else None for k, a in enumerate(args)], None)
        space = self._gm(args[at])[2]
        tail = self.rows(ir_op, [a if k > at else None for k, a in enumerate(args)], kwargs)
        return head, space, written[at], tail

    def _rows(self, ir_op: str, args: list, kwargs: dict | None, gm: GMAccess | None) -> None:
        """`add`'s rows, appended to the table."""
        table = self.table
        written, sub, window_at = _op_info(ir_op, len(args))
        known = self._known
        if sub is not None:
            args = self._sub_block(args, *sub)
        for k, arg in enumerate(args):
            kind = type(arg)
            if kind is TileRef:
                rows = known.get(id(arg))
                if rows is None:
                    rows = self._tile(arg)
                table.extend(rows[1 + written[k]])
            elif kind is GMRef:
                self._add_gm(arg, written[k], gm if k == window_at else None)
            elif kind in _SCALARS:
                continue
            elif isinstance(arg, _MEMORY):
                self._add(arg, written[k], gm if k == window_at else None)
            elif kind is tuple or kind is list:
                for value in arg:
                    if type(value) is not int:  # (offsets are ints)
                        self._add_nested(arg)
                        break
        if kwargs:
            found = known.get(id(kwargs))  # (a call site's static kwargs: one dict)
            if found is None:
                found = known[id(kwargs)] = (kwargs, any(
                    type(v) not in _SCALARS and not _ints(v) for v in kwargs.values()))
            if found[1]:
                self._add_nested(kwargs.values())

    def _add_nested(self, values: Any) -> None:
        """Memory operands inside a tuple, list or the kwargs: written, to be safe."""
        for value in values:
            if isinstance(value, _MEMORY):
                self._add(value, 1, None)
            elif isinstance(value, (tuple, list)):
                self._add_nested(value)

    def _add(self, ref: TileRef | GMRef, write: int, gm: GMAccess | None) -> None:
        """A memory operand other than a plain TileRef (`gm`: the window of a GM one)."""
        if isinstance(ref, TileRef):
            self.table.extend(self._tile(ref)[1 + write])
        else:
            self._add_gm(ref, write, gm)

    def _add_gm(self, ref: GMRef, write: int, gm: GMAccess | None) -> None:
        """A GM operand: the window `gm` when it is this operand's, else its whole storage."""
        found = self._gm(ref)
        lines = gm.lines if gm is not None and gm.storage == found[1] else None
        if type(lines) is WindowLines:
            self.table.frombytes(_window_row(lines, write, found[2]))
        else:
            self.table.frombytes(_ROW(write, found[2], *_WHOLE))

    def _gm(self, ref: GMRef) -> tuple:
        """(the GM view, its storage's identity, its space), known by the view."""
        found = self._known.get(id(ref))
        if found is None:
            storage = ref.storage
            space = self._space(storage)
            self.gm_spaces.add(space)
            found = self._known[id(ref)] = (ref, storage, space)
        return found

    def _tile(self, tile: TileRef) -> tuple:
        """(the tile, its row read, its row written), known by the tile and by its geometry
        (an equal tile in a new TileRef); the rows are arrays (extending by one is cheap)."""
        known, g = self._known, tile.geometry
        found = known.get(id(g))
        if found is None or found[1] is not tile.memory or found[2] != tile.valid_rows \
                or found[3] != tile.valid_cols:
            first, end = _tile_span(tile)
            space = self._space((id(tile.memory), g.space))
            found = known[id(g)] = (g, tile.memory, tile.valid_rows, tile.valid_cols,
                                    array("q", (0, space, first, 1, 0, end - first)),
                                    array("q", (1, space, first, 1, 0, end - first)))
        rows = known[id(tile)] = (tile, found[4], found[5])
        return rows

    def _sub_block(self, args: list, at: int, source: int, offsets: int) -> list:
        """`args` after the footprint of a tile that an op writes only a block of (the valid
        shape of tile `source` at `offsets`), that operand taken out; else `args` as they are."""
        dst, src, where = args[at], args[source], args[offsets]
        if type(dst) is not TileRef or not isinstance(src, TileRef) or not _ints(where) or \
                len(where) != 2:
            return args
        rect = _block_rect(dst, where[0], where[1], src.valid_rows, src.valid_cols)
        if rect is None:
            return args
        self.table.frombytes(_ROW(1, self._space((id(dst.memory), dst.geometry.space)), *rect))
        args = list(args)
        args[at] = None
        return args

    def _space(self, key: Any) -> int:
        return number(self.spaces, key)


def _tile_span(tile: TileRef) -> tuple[int, int]:
    """[first, end) bytes a tile can touch: its layout's span and its whole allocation."""
    g = tile.geometry
    key = (id(g), tile.valid_rows, tile.valid_cols)
    found = _TILE_SPANS.get(key)
    if found is None or found[0] is not g:
        lo, hi = tile.byte_span()
        alloc_end = g.addr + -(-g.rows * g.cols * g.dtype.bits // 8)
        if len(_TILE_SPANS) >= _TILE_SPANS_MAX:
            _TILE_SPANS.clear()
        found = _TILE_SPANS[key] = (g, min(lo, g.addr), max(hi, alloc_end))
    return found[1], found[2]


def _block_rect(tile: TileRef, r0: int, c0: int, rows: int, cols: int
                ) -> tuple[int, int, int, int] | None:
    """(first byte, rows, row stride, row bytes) of the bytes of block [r0 : r0 + rows,
    c0 : c0 + cols] of a tile in its layout (the bounding range when its runs of bytes are not
    evenly spaced), or None: 4-bit elements, or a block outside the tile (the op fails)."""
    g = tile.geometry
    key = (id(g), tile.valid_rows, tile.valid_cols, r0, c0, rows, cols)
    found = _BLOCKS.get(key)
    if found is None or found[0] is not g:
        if len(_BLOCKS) >= _TILE_SPANS_MAX:
            _BLOCKS.clear()
        found = _BLOCKS[key] = (g, _block_bytes(tile, r0, c0, rows, cols))
    return found[1]


def _block_bytes(tile: TileRef, r0: int, c0: int, rows: int, cols: int
                 ) -> tuple[int, int, int, int] | None:
    g = tile.geometry
    if g.dtype.bits % 8 or rows <= 0 or cols <= 0 or r0 < 0 or c0 < 0 or \
            r0 + rows > g.rows or c0 + cols > g.cols:
        return None
    size = g.dtype.bits // 8
    elems = np.unique(g.offsets(tile.valid)[r0:r0 + rows, c0:c0 + cols].numpy())
    cut = np.flatnonzero(np.diff(elems) != 1) + 1  # where a run of elements ends
    firsts, lasts = elems[np.r_[0, cut]], elems[np.r_[cut - 1, elems.size - 1]]
    lengths, gaps = lasts - firsts + 1, np.diff(firsts)
    if (lengths == lengths[0]).all() and (gaps.size == 0 or (gaps == gaps[0]).all()):
        stride = int(gaps[0]) * size if gaps.size else 0
        return g.addr + int(firsts[0]) * size, int(firsts.size), stride, int(lengths[0]) * size
    return g.addr + int(elems[0]) * size, 1, 0, int(elems[-1] - elems[0] + 1) * size


def _ints(value: Any) -> bool:
    """Whether `value` is a tuple or list of ints (offsets, dims)."""
    return type(value) in (tuple, list) and all(type(v) is int for v in value)


def _window_row(w: WindowLines, write: int, space: int) -> bytes:
    """The footprint of a GM window as bytes (`window_span`), none when it is empty."""
    span = window_span(w)
    return b"" if span is None else _ROW(write, space, *span)


def window_span(w: WindowLines) -> tuple[int, int, int, int] | None:
    """(first byte, rows, row stride, row bytes) of a GM window (elements `base + r * rs +
    c * cs`), None when it is empty: a row is the bytes from its first to its last element; a
    window whose columns run down the storage is taken by columns; 4-bit elements and negative
    strides take the bounding range or the whole storage."""
    base, rs, cs, rows, cols, bits = w.base, w.rs, w.cs, w.rows, w.cols, w.bits
    if rows <= 0 or cols <= 0:
        return None
    if rs < 0 or cs < 0:
        return _WHOLE
    if cs != 1 and rs == 1:
        rows, cols, rs, cs = cols, rows, cs, rs
    if bits % 8:
        last = base + (rows - 1) * rs + (cols - 1) * cs
        first = base * bits // 8
        return first, 1, 0, -(-(last + 1) * bits // 8) - first
    size = bits // 8
    return base * size, rows, rs * size if rows > 1 else 0, ((cols - 1) * cs + 1) * size


def number(table: dict, key: Any) -> int:
    """`key`'s number in `table`: the next one on its first use (ids the compiled code takes)."""
    found = table.get(key)
    if found is None:
        found = table[key] = len(table)
    return found
