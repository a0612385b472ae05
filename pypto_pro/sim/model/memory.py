"""Simulated memories: per-core on-chip byte buffers, typed tile views on them, and GM views.

Owns `CoreMemory` (one `torch.uint8` buffer per MemorySpace of a core, filled with a garbage
pattern, with a per-byte "initialised" mask for the uninitialised-read sanitizer, kept while
`track_init` is on), `TileGeometry`
and `TileRef` (a typed, layout-aware view of a tile's bytes: reads and writes reinterpret raw
bytes, so aliased views behave as on hardware; blocks of ND/DN tiles and whole-fractal blocks
of fractal tiles move through `BlockViews`, strided views of the buffer cached per core, the
rest through element offsets), `GMRef` (a strided view of a CPU torch tensor's storage as
global memory) and `SimMemoryError`. Dtypes without a torch dtype (HF8, FP4, INT4,
HF4) are read and written as raw uint8 codes (4-bit ones packed two per byte, low nibble first);
their values are decoded by `pypto_pro.sim.ops.numerics`. The `*_step` methods give the
`Step`s of ops' copies for a tape, in torch (the fast path compiles them). Imports
`pypto_pro.ir`, `pypto_pro.soc`, `sim.model.layout` and `sim.step` only: no compiled code.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import torch

from pypto_pro.ir.dtype import DataType
from pypto_pro.ir.types import MemorySpace, TileLayout, TilePad, TileType

from .layout import default_stride, element_offsets, fractal_shape, outer_stride
from ...soc import SoC, device_allocation
from ..step import Step

#: the byte pattern of never-written on-chip memory ("DEADBEEF" as bytes; fp32 -1.18e29)
GARBAGE_PATTERN = (0xDE, 0xAD, 0xBE, 0xEF)
CORE_SPACES = {
    "aic": (MemorySpace.Mat, MemorySpace.Left, MemorySpace.Right, MemorySpace.Acc,
            MemorySpace.Bias, MemorySpace.Scaling, MemorySpace.ScaleLeft, MemorySpace.ScaleRight),
    "aiv": (MemorySpace.Vec,),
}
_TORCH_NAMES = {
    DataType.BOOL: "bool", DataType.INT8: "int8", DataType.INT16: "int16",
    DataType.INT32: "int32", DataType.INT64: "int64", DataType.UINT8: "uint8",
    DataType.UINT16: "uint16", DataType.UINT32: "uint32", DataType.UINT64: "uint64",
    DataType.FP16: "float16", DataType.BF16: "bfloat16", DataType.FP32: "float32",
    DataType.FP8E4M3FN: "float8_e4m3fn", DataType.FP8E5M2: "float8_e5m2",
    DataType.FP8E8M0: "float8_e8m0fnu", DataType.HF8: "uint8", DataType.INDEX: "int64",
}

#: integer dtype per element size, for scatters of raw element bits
_WORDS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
#: an element's bytes in the "initialised" mask, all True, as one word of its size
_ALL_INITIALISED = {1: 1, 2: 0x0101, 4: 0x01010101, 8: 0x0101010101010101}
#: (bit offset in the line, rows, row stride, run, bits, line bytes) → lines of a strided
#: window relative to its first line (`GMRef._row_lines`); cleared when it grows this large
_ROW_LINES: dict[tuple[int, ...], np.ndarray] = {}
_ROW_LINES_MAX = 4096
_VIEWS_MAX = 1024  # per core
_PLANS_MAX = 512  # one-copy plans per ref or GM window before they start over
#: what a `TileRef`'s derived views depend on (`TileRef.epoch`)
_LOCATION = frozenset({"memory", "geometry", "valid_rows", "valid_cols"})
#: (id(tile type), addr) → (the tile type, its `TileGeometry`); see `from_tile_type`
_GEOMETRIES: dict[tuple[int, int], tuple[TileType, TileGeometry]] = {}
_GEOMETRIES_MAX = 4096
#: each geometry value's one object (`TileGeometry.from_tile_type`)
_INTERNED: dict[TileGeometry, TileGeometry] = {}
_WINDOWS_MAX = 1024  # `GMWindow`s per GM view before it starts over (a few lines arrays each)
_UNSET = object()  # `GMWindow.view` not made yet


class SimMemoryError(IndexError):
    """An access outside a simulated buffer (or outside a GM tensor's extent)."""

    def __init__(self, space: str, start: int, end: int, size: int, what: str = "access",
                 message: str | None = None):
        self.space, self.start, self.end, self.size = space, start, end, size
        super().__init__(message or f"{what} of bytes [{start:#x}, {end:#x}) is outside {space} "
                                    f"({size} bytes)")


def storage_dtype(dtype: DataType) -> torch.dtype:
    """The torch dtype tile reads return for `dtype` (uint8 codes for HF8 and 4-bit types)."""
    found = _STORAGE_DTYPES.get(dtype._value_)  # (by value: a DataType hashes in Python code)
    if found is None:
        found = _STORAGE_DTYPES[dtype._value_] = getattr(torch, _TORCH_NAMES.get(dtype, "uint8"))
    return found


_STORAGE_DTYPES: dict[str, torch.dtype] = {}


def is_packed4(dtype: DataType) -> bool:
    """4-bit types are stored two per byte, the first element in the low nibble."""
    return dtype.bits == 4


def read_nibbles(buf: torch.Tensor, nibbles: torch.Tensor) -> torch.Tensor:
    """4-bit codes at nibble positions (2 * byte + 0 for the low nibble, + 1 for the high)."""
    return (buf[nibbles // 2] >> (4 * (nibbles % 2)).to(torch.uint8)) & 0xF


def write_nibbles(buf: torch.Tensor, nibbles: torch.Tensor, codes: torch.Tensor) -> None:
    """Store 4-bit codes at nibble positions, keeping the other nibble of each byte."""
    nibbles, codes = nibbles.reshape(-1), codes.reshape(-1).to(torch.uint8)
    for parity in (0, 1):  # two passes so both nibbles of one byte survive
        sel = nibbles % 2 == parity
        byte = nibbles[sel] // 2
        keep = 0xF0 if parity == 0 else 0x0F
        buf[byte] = (buf[byte] & keep) | ((codes[sel] & 0xF) << (4 * parity))


class CoreMemory:
    """The on-chip buffers of one core ("aic": L1/L0A/L0B/L0C/BT/FB/MX scales, "aiv": UB)."""

    def __init__(self, soc: SoC, kind: str):
        if kind not in CORE_SPACES:
            raise ValueError(f"core kind must be 'aic' or 'aiv', not {kind!r}")
        self.soc, self.kind = soc, kind
        self.buffers: dict[MemorySpace, torch.Tensor] = {}
        self.initialised: dict[MemorySpace, torch.Tensor] = {}
        # writes mark `initialised` only while this is on: only the sanitizer reads the mask,
        # so the engine turns it off for cores no observer watches
        self.track_init = True
        # (id(geometry), block) → (geometry, `_block_views`); the buffers only change in place
        self._views: dict[tuple, tuple[TileGeometry, BlockViews | None]] = {}
        # (id(geometry), valid rows, valid cols) → the TileRef `ref` made for them
        self._refs: dict[tuple[int, int, int], TileRef] = {}
        word = int.from_bytes(bytes(GARBAGE_PATTERN), "little", signed=True)
        for space in CORE_SPACES[kind]:
            size = soc.buffer_size(space)
            words = torch.full((-(-size // 4),), word, dtype=torch.int32)
            self.buffers[space] = words.view(torch.uint8)[:size].clone()
            self.initialised[space] = torch.zeros(size, dtype=torch.bool)

    def buffer(self, space: MemorySpace) -> torch.Tensor:
        if space not in self.buffers:
            raise SimMemoryError(space.value, 0, 0, 0, what=f"{self.kind} has no {space.value}; "
                                 "access")
        return self.buffers[space]

    def check_range(self, space: MemorySpace, start: int, end: int) -> None:
        size = self.buffer(space).numel()
        if start < 0 or end > size or start > end:
            raise SimMemoryError(space.value, start, end, size)

    def block_views(self, g: TileGeometry, r0: int, c0: int, rows: int, cols: int
                    ) -> BlockViews | None:
        """`_block_views`, cached per geometry object and block (keyed by the object's id,
        which the entry keeps alive: hashing the dataclass's enums costs more than a view)."""
        key = (id(g), r0, c0, rows, cols)
        hit = self._views.get(key)
        if hit is not None and hit[0] is g:
            return hit[1]
        views = _block_views(self, g, r0, c0, rows, cols)
        if len(self._views) >= _VIEWS_MAX:
            self._views.clear()
        self._views[key] = (g, views)
        return views

    def ref(self, g: TileGeometry, rows: int, cols: int) -> TileRef:
        """The TileRef of a tile of geometry `g` (an interned object) with valid shape [rows,
        cols] in this memory: one object per triple for as long as the memory lives (a pooled
        memory serves launch after launch), so what ops keep per ref and per (GM window, ref)
        (`kept`, `load_step`'s plans, views) serves every launch, not only the one that made
        it. A ref someone moved (`__setattr__`) is not handed out again."""
        key = (id(g), rows, cols)
        ref = self._refs.get(key)
        if ref is None or ref.geometry is not g or ref.memory is not self or \
                ref.valid_rows != rows or ref.valid_cols != cols:
            if len(self._refs) >= _VIEWS_MAX:
                self._refs.clear()
            ref = self._refs[key] = TileRef(self, g, rows, cols)
        return ref

    def uninitialised_bytes(self, space: MemorySpace, start: int, end: int) -> torch.Tensor:
        """Addresses in [start, end) of `space` that no write has ever touched (int64)."""
        self.check_range(space, start, end)
        return torch.nonzero(~self.initialised[space][start:end]).flatten() + start


@dataclass(frozen=True)
class TileGeometry:
    """Where and how a tile lives: shape, dtype, space, layout, fractal bytes, byte address."""

    rows: int
    cols: int
    dtype: DataType
    space: MemorySpace
    layout: TileLayout = TileLayout.ND
    fractal: int = 512
    addr: int = 0
    pad: TilePad = TilePad.null
    compact: int = 0

    @classmethod
    def from_tile_type(cls, tile_type: TileType, addr: int | None = None) -> TileGeometry:
        """The geometry of a tile of (frozen) `tile_type` at `addr`: one object per pair, so
        every launch and loop iteration allocating it hits the caches keyed by the geometry's
        id (`CoreMemory.block_views`, `cost_model.op_cost`); and one object per value, so an
        edited kernel (new tile types, mostly equal to the old ones) hits them too."""
        address = tile_type.addr if addr is None else addr
        key = (id(tile_type), address)
        hit = _GEOMETRIES.get(key)
        if hit is not None and hit[0] is tile_type:
            return hit[1]
        if address is None:
            raise ValueError("a tile chosen at runtime needs an explicit addr")
        rows, cols = tile_type.shape
        geometry = cls(rows, cols, tile_type.dtype, tile_type.memory, tile_type.layout,
                       tile_type.fractal, address, tile_type.pad, tile_type.compact)
        if len(_GEOMETRIES) >= _GEOMETRIES_MAX:
            _GEOMETRIES.clear()
            _INTERNED.clear()
        geometry = _INTERNED.setdefault(geometry, geometry)
        _GEOMETRIES[key] = (tile_type, geometry)  # the entry keeps the type (and its id) alive
        return geometry

    @property
    def fractal_shape(self) -> tuple[int, int]:
        rows, cols = fractal_shape(self.layout, self.dtype.bits, self.fractal)
        if self.rows == 1 and self.layout is TileLayout.NZ:
            # a one-row NZ tile (a bias row in L1, as the docs keep it) is one contiguous row:
            # its column blocks lie one row apart (pto-isa allows Rows == 1 for fractals)
            return (1, cols)
        return (rows, cols)

    def offsets(self, valid: tuple[int, int]) -> torch.Tensor:
        """Physical element offset of every logical element ([rows, cols] int64)."""
        shape = (self.rows, self.cols)
        stride = outer_stride(self.layout, shape, self.fractal_shape, self.compact, valid)
        return element_offsets(shape, self.layout, self.fractal_shape, stride)


#: Writes through a `TileRef` or `GMRef` land at once; the engine's per-instruction copies
#: (`engine._defer`) set `writes_now` False, their writes landing at the instruction's end. An
#: op writing a value it read from another memory (tile <-> GM: they never alias) needs no
#: snapshot of it when its target writes now (`TileRef.peek_block`, `GMRef.peek_window`).
WRITES_NOW = True
#: A deferred tile whose engine snapshots GM reads late: a load into it may pass a view of the
#: GM window to its (deferred) write; the engine clones the view only if a write to the same
#: GM storage lands before the load does (`engine.Engine.protect_gm`), so the load still sees
#: GM as it was when it started, with one copy instead of two.
LATE_SNAPSHOT = False


class TileRef:
    """A typed view of a tile in a `CoreMemory`: logical reads/writes of its valid window."""

    writes_now = WRITES_NOW
    late_snapshot = LATE_SNAPSHOT
    #: bumped by every change of a made TileRef's memory, geometry or valid shape (a replay
    #: rebinding its copy, tests): what is derived from them alone and kept (per ref:
    #: `_valid_views`, (epoch, `BlockViews` of the valid window), and `_plans` (`kept`), the
    #: one-copy plans of `copy_from` per (source tile, offset) and of `add_from`, `ops.cube`'s
    #: product plans; per GM window: those of `load_window`) names the epoch it was made in
    epoch = 0
    _valid_views: tuple[int, BlockViews | None] | None = None
    _plans: dict | None = None
    dtype: DataType  # (the geometry's)
    space: MemorySpace  # (the geometry's)

    def __init__(self, memory: CoreMemory, geometry: TileGeometry, valid_rows: int | None = None,
                 valid_cols: int | None = None):
        rows = geometry.rows if valid_rows is None else valid_rows
        cols = geometry.cols if valid_cols is None else valid_cols
        if not (0 <= rows <= geometry.rows and 0 <= cols <= geometry.cols):
            raise ValueError(f"valid shape [{rows}, {cols}] exceeds tile "
                             f"shape [{geometry.rows}, {geometry.cols}]")
        # (not through `__setattr__`: a new ref changes nothing derived). `dtype` and `space`
        # are the geometry's, kept as plain attributes: ops read them tens of times per op.
        self.__dict__.update(memory=memory, geometry=geometry, valid_rows=rows, valid_cols=cols,
                             dtype=geometry.dtype, space=geometry.space)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _LOCATION:
            TileRef.epoch += 1
            if name == "geometry":
                self.__dict__.update(dtype=value.dtype, space=value.space)
        object.__setattr__(self, name, value)

    shape = property(lambda self: (self.geometry.rows, self.geometry.cols))
    valid = property(lambda self: (self.valid_rows, self.valid_cols))

    def __repr__(self) -> str:
        g = self.geometry
        return (f"TileRef({g.space.value}@{g.addr:#x} {g.dtype.value}[{g.rows},{g.cols}] "
                f"{g.layout.value} valid=[{self.valid_rows},{self.valid_cols}])")

    def read(self) -> torch.Tensor:
        """The logical [valid_rows, valid_cols] window (a fresh tensor)."""
        return self.read_block(0, 0, self.valid_rows, self.valid_cols)

    def read_full(self) -> torch.Tensor:
        """The whole logical [rows, cols] tile, padding included."""
        return self.read_block(0, 0, *self.shape)

    def peek_block(self, r0: int, c0: int, rows: int, cols: int) -> torch.Tensor:
        """The block like `read_block`, but as a view of the buffer where one exists (ND/DN
        layouts): only for computations that make a new tensor before anything is written."""
        views = self._views(r0, c0, rows, cols)
        if views is not None and not views.fractal:
            return views.values
        return self.read_block(r0, c0, rows, cols)

    def read_block_as(self, r0: int, c0: int, rows: int, cols: int, dtype: torch.dtype
                      ) -> torch.Tensor:
        """`read_block(...).to(dtype)` (a value conversion) in one copy out of the buffer."""
        views = self._views(r0, c0, rows, cols)
        if views is None or views.dtype is dtype:
            return self.read_block(r0, c0, rows, cols).to(dtype)
        return views.typed.to(dtype, memory_format=torch.contiguous_format).view(rows, cols)

    def read_block(self, r0: int, c0: int, rows: int, cols: int) -> torch.Tensor:
        views = self._views(r0, c0, rows, cols)
        if views is not None:
            if not views.fractal:
                return views.values.clone()
            out = views.values.clone(memory_format=torch.contiguous_format)
            return out.view(rows, cols).view(views.dtype)
        offs = self._window(r0, c0, rows, cols)
        buf = self.memory.buffer(self.space)
        if is_packed4(self.dtype):
            return read_nibbles(buf, 2 * self.geometry.addr + offs)
        size = self.dtype.itemsize
        if self.geometry.addr % size == 0:
            return buf.view(storage_dtype(self.dtype))[self.geometry.addr // size + offs]
        idx = (self.geometry.addr + offs * size)[..., None] + torch.arange(size)
        return buf[idx].view(storage_dtype(self.dtype)).reshape(rows, cols)

    def write(self, value: torch.Tensor, offset: tuple[int, int] | None = None) -> None:
        """Write `value` ([r, c]) at `offset` (default: the valid window at (0, 0))."""
        if not isinstance(value, torch.Tensor):
            value = torch.as_tensor(value)
        if offset is None:
            if value.shape != (self.valid_rows, self.valid_cols):
                raise ValueError(f"write of shape {list(value.shape)} into a tile with valid "
                                 f"shape {list(self.valid)}")
            offset = (0, 0)
        rows, cols = value.shape
        views = self._views(offset[0], offset[1], rows, cols)
        if views is not None:
            if value.dtype is not views.dtype:
                value = value.to(views.dtype)
            if views.fractal:  # typed element moves, not value conversions (FP8 & co.)
                views.values.copy_(value.view(views.values.dtype).reshape(*views.grid))
            else:
                views.values.copy_(value)
            self._mark_written(views)
            return
        offs = self._window(offset[0], offset[1], rows, cols)
        buf, init = self.memory.buffer(self.space), self.memory.initialised[self.space]
        track = self.memory.track_init
        if is_packed4(self.dtype):
            nibbles = 2 * self.geometry.addr + offs
            write_nibbles(buf, nibbles, value)
            if track:
                init[nibbles.reshape(-1) // 2] = True
            return
        size = self.dtype.itemsize
        data = value.to(storage_dtype(self.dtype)).contiguous()
        g = self.geometry
        if g.addr % size == 0:  # typed element moves, not bytes (fractal layouts)
            word, base = _WORDS[size], g.addr // size
            pos = (base + offs).reshape(-1)
            buf.view(word)[pos] = data.view(word).reshape(-1)
            if track:
                init.view(torch.uint8).view(word)[pos] = _ALL_INITIALISED[size]
            return
        idx = (self.geometry.addr + offs * size)[..., None] + torch.arange(size)
        buf[idx.reshape(-1)] = data.view(torch.uint8).reshape(-1)
        if track:
            init[idx.reshape(-1)] = True

    def write_step(self, value: torch.Tensor) -> Step | None:
        """The step of `write(value, offset=(0, 0))` for `value` that tensor, whatever it holds
        when the step runs, when the block has views of `value`'s dtype; else None."""
        views = self._views(0, 0, *value.shape)
        if not self.writes_now or views is None or value.dtype is not views.dtype or \
                (views.fractal and not value.is_contiguous()):  # (its reshape: a view)
            return None
        source = value.view(views.values.dtype).reshape(*views.grid) if views.fractal else value
        return _copy_into(self.memory, views, source)

    def read_step(self, into: torch.Tensor) -> Step | None:
        """The step copying the valid window's stored elements into `into` (a [rows, cols]
        view of another memory, e.g. a GM window), as `into.copy_(read())` would, when the
        window has views of `into`'s dtype; else None."""
        views = self._views(0, 0, self.valid_rows, self.valid_cols)
        if views is None or views.dtype is not into.dtype:
            return None
        if not views.fractal:
            return _copy(into, views.values)
        _, fr, _, fc = views.grid  # `into` in the grid's [row fractal, row, col fractal, col]
        rs, cs = into.stride()
        grid = into.as_strided(views.grid, (fr * rs, rs, fc * cs, cs), into.storage_offset())
        return _copy(grid, views.typed)

    def copy_from(self, src: TileRef, at: tuple[int, int] | None = None) -> bool:
        """Write `src`'s valid window (`at` (row, col): the block of this tile's valid shape
        there) at (0, 0) with one copy between the two buffers (no logical intermediate), when
        `copy_step` has one. False when the caller must take `read` + `write`."""
        return _ran(self.copy_step(src, at))

    def copy_step(self, src: TileRef, at: tuple[int, int] | None = None) -> Step | None:
        """The one-copy step of `copy_from`: when this tile writes now, the dtypes agree, the
        tiles live in different buffers (so nothing read is overwritten first) and both blocks
        have views of one element shape; else None."""
        if not self.writes_now:
            return None
        return self._kept_step(self.kept(), (src, at), self._copy_plan, src, at)

    def kept(self) -> dict:
        """What ops keep for this ref (`_plans`; each entry names the `epoch` it was made in),
        holding no more than `_PLANS_MAX`."""
        plans = self._plans
        if plans is None:
            plans = self.__dict__["_plans"] = {}  # (not an `epoch` change)
        elif len(plans) >= _PLANS_MAX:
            plans.clear()
        return plans

    def load_window(self, src: GMRef, offsets: list | tuple, transpose: bool = False,
                    axes: tuple[int, int] | None = None) -> bool:
        """Write GM view `src`'s window at `offsets` (this tile's valid shape; `transpose`,
        `axes` as in `read_window`) into the valid window with one copy out of the tensor, when
        `load_step` has one. False when the caller must take `read_window` + `write`."""
        return _ran(self.load_step(src, offsets, transpose, axes))

    def load_step(self, src: GMRef, offsets: list | tuple, transpose: bool = False,
                  axes: tuple[int, int] | None = None) -> Step | None:
        """The one-copy step of `load_window`: when this tile writes now (so a view of GM will
        do: `peek_window`), the dtypes agree and both have strided views; else None. Kept on
        the window (`GMWindow.plans`: it lives with the GM view, so no tile keeps a tensor
        alive)."""
        rows, cols = self.valid_rows, self.valid_cols
        if not self.writes_now or src.dtype is not self.dtype or src._bits == 4 or not rows \
                or not cols or type(axes) is MxAxes:
            return None
        window = src.window(offsets, rows, cols, transpose, axes)
        return self._kept_step(window.plans, self, self._load_plan, src, window)

    def _kept_step(self, plans: dict, key: object, plan_for: Callable[..., tuple],
                   *args: Any) -> Step | None:
        """The one-copy step `plan_for(*args)` makes, kept in `plans` under `key` as (epoch,
        the step or None when it does not apply)."""
        plan = plans.get(key)
        if plan is None or plan[0] != self.epoch:
            plan = plan_for(*args)
            if len(plans) >= _PLANS_MAX:
                plans.clear()
            plans[key] = plan
        return plan[1]

    def _copy_plan(self, src: TileRef, at: tuple[int, int] | None) -> tuple:
        """The `_kept_step` plan of `copy_step`."""
        if src.dtype is not self.dtype or (src.memory is self.memory and src.space is self.space):
            return (self.epoch, None)
        r0, c0, rows, cols = (0, 0, *src.valid) if at is None else (*at, *self.valid)
        theirs = src._views(r0, c0, rows, cols)
        mine = None if theirs is None else self._views(0, 0, rows, cols)
        if mine is None or mine.values.shape != theirs.values.shape or \
                mine.values.dtype is not theirs.values.dtype:
            return (self.epoch, None)
        return (self.epoch, _copy_into(self.memory, mine, theirs.values))

    def _load_plan(self, src: GMRef, window: GMWindow) -> tuple:
        """The `_kept_step` plan of `load_step`."""
        mine = self._views(0, 0, self.valid_rows, self.valid_cols)
        view = None if mine is None else src._strided_view(window)
        if view is None:
            return (self.epoch, None)
        if mine.fractal:  # element words split into the fractal grid: a view, never a copy
            view = view.view(mine.values.dtype).view(*mine.grid)
        return (self.epoch, _copy_into(self.memory, mine, view))

    def add_from(self, addend: torch.Tensor) -> bool:
        """block[0:r, 0:c] = addend + block in place for an FP32 tile writing now (one pass over
        the buffer instead of read, add, write; the same float32 sums), when `add_step` has
        one. False when the caller must take `read` + `write`."""
        return _ran(self.add_step(addend))

    def add_step(self, addend: torch.Tensor) -> Step | None:
        """The in-place step of `add_from` for `addend` (that tensor, whatever it holds when
        the step runs); None when it does not apply."""
        if not self.writes_now or self.dtype is not DataType.FP32:
            return None
        plans = self.kept()
        # one plan, for the last addend (a product's reused scratch: the same every time)
        plan = plans.get("add_from")
        if plan is None or plan[0] != self.epoch or plan[1] is not addend:
            views = None if addend.dtype is not torch.float32 else \
                self._views(0, 0, *addend.shape)
            plan = plans["add_from"] = (self.epoch, addend, None if views is None
                                        else _add_into(self.memory, views, addend))
        return plan[2]

    def compute_target(self, sources: tuple[TileRef | tuple[TileRef, tuple[int, int]], ...],
                       same_ok: bool) -> torch.Tensor | None:
        """The valid window of an ND/DN tile writing now, as a view of the buffer for an
        element-wise op to write its result into (`out=`), marked written. `sources` are the
        tiles whose same-shaped top-left blocks the op reads (`peek_block`), or (tile, block
        shape) for a block of another shape (a broadcast operand). None when the caller must
        compute a new tensor and `write` it: deferred writes, no view, or a source block
        overlapping the window other than exactly (exactly: only if `same_ok`)."""
        rows, cols = self.valid_rows, self.valid_cols
        if not self.writes_now or not rows or not cols:
            return None
        views = self._views(0, 0, rows, cols)
        if views is None or views.fractal:
            return None
        memory, space = self.memory, self.geometry.space
        lo, hi = views.place[0], views.place[1]
        for src in sources:
            exact_ok = same_ok
            if type(src) is tuple:
                src, (r, c) = src
                exact_ok = same_ok and (r, c) == (rows, cols)
            else:
                r, c = rows, cols
            if src.memory is not memory or src.geometry.space is not space:
                continue  # another buffer
            theirs = src._views(0, 0, r, c)
            if theirs is None or theirs.fractal:
                continue  # `peek_block` reads it as a copy
            place = theirs.place
            if place[1] <= lo or hi <= place[0]:
                continue
            if not (exact_ok and place == views.place):
                return None
        self._mark_written(views)
        return views.values

    def written_marker(self) -> Callable[[], None]:
        """The mark of the valid window written (after `compute_target` gave a target)."""
        return _marker(self.memory, self._views(0, 0, self.valid_rows, self.valid_cols))

    def peek_view(self, r0: int, c0: int, rows: int, cols: int) -> torch.Tensor | None:
        """The block as `peek_block` gives it when that is a view of the buffer, else None."""
        views = self._views(r0, c0, rows, cols)
        return views.values if views is not None and not views.fractal else None

    def _mark_written(self, views: BlockViews) -> None:
        if self.memory.track_init:
            views.mask.fill_(views.mask_fill)

    def _views(self, r0: int, c0: int, rows: int, cols: int) -> BlockViews | None:
        whole = r0 == 0 and c0 == 0 and rows == self.valid_rows and cols == self.valid_cols
        if whole:  # the valid window: kept on the ref
            memo = self._valid_views
            if memo is not None and memo[0] == self.epoch:
                return memo[1]
        g = self.geometry
        if r0 < 0 or c0 < 0 or r0 + rows > g.rows or c0 + cols > g.cols:
            raise ValueError(f"block [{r0}:{r0 + rows}, {c0}:{c0 + cols}] is outside tile shape "
                             f"[{g.rows}, {g.cols}]")
        views = self.memory.block_views(g, r0, c0, rows, cols)
        if whole:
            self.__dict__["_valid_views"] = (self.epoch, views)  # (not an `epoch` change)
        return views

    def read_linear(self, offset: int, count: int = 1) -> torch.Tensor:
        """`count` elements at physical element `offset` from the tile's address (scalar access)."""
        view, skip = self._linear_view(offset, count)
        return view.read_block(0, skip, 1, count).reshape(-1)

    def write_linear(self, offset: int, value: torch.Tensor) -> None:
        value = value.reshape(1, -1)
        view, skip = self._linear_view(offset, value.shape[1])
        view.write(value, offset=(0, skip))

    def _linear_view(self, offset: int, count: int) -> tuple[TileRef, int]:
        """A one-row ND view starting at (or, for 4-bit types, just before) element `offset`."""
        g = self.geometry
        if offset < 0 or offset + count > g.rows * g.cols:
            raise SimMemoryError(g.space.value, offset, offset + count, g.rows * g.cols,
                                 what=f"element access past tile {self}:")
        skip = offset % 2 if is_packed4(g.dtype) else 0
        base = g.addr + ((offset - skip) // 2 if is_packed4(g.dtype) else offset * g.dtype.itemsize)
        flat = TileGeometry(1, count + skip, g.dtype, g.space, TileLayout.ND, g.fractal, base)
        return TileRef(self.memory, flat), skip

    def byte_span(self) -> tuple[int, int]:
        """[start, end) bytes the whole tile can touch, for overlap and sanitizer checks."""
        offs = self.geometry.offsets(self.valid)
        return self._byte_bounds(offs)

    def _byte_bounds(self, offs: torch.Tensor) -> tuple[int, int]:
        if offs.numel() == 0:
            return (self.geometry.addr, self.geometry.addr)
        bits = self.dtype.bits if is_packed4(self.dtype) else self.dtype.itemsize * 8
        lo, hi = int(offs.min()), int(offs.max())
        return (self.geometry.addr + lo * bits // 8, self.geometry.addr + -(-(hi + 1) * bits // 8))

    def _window(self, r0: int, c0: int, rows: int, cols: int) -> torch.Tensor:
        g = self.geometry
        if r0 < 0 or c0 < 0 or r0 + rows > g.rows or c0 + cols > g.cols:
            raise ValueError(f"block [{r0}:{r0 + rows}, {c0}:{c0 + cols}] is outside tile shape "
                             f"[{g.rows}, {g.cols}]")
        offs = g.offsets(self.valid)[r0:r0 + rows, c0:c0 + cols]
        self.memory.check_range(g.space, *self._byte_bounds(offs))
        return offs


def _ran(step: Step | None) -> bool:
    """Run `step` if there is one; whether there was."""
    if step is None:
        return False
    step.run()
    return True


def _marker(memory: CoreMemory, views: BlockViews) -> Callable[[], None]:
    """Marks the block of `views` initialised, while its memory tracks that (a step's last
    act: `track_init` may change between the runs of a kept step)."""
    mask, fill = views.mask, views.mask_fill

    def mark() -> None:
        if memory.track_init:
            mask.fill_(fill)
    return mark


def _copy_into(memory: CoreMemory, views: BlockViews, source: torch.Tensor) -> Step:
    """The step copying `source` (a view) into the block of `views` and marking it written."""
    values, mark = views.values, _marker(memory, views)

    def run() -> None:
        values.copy_(source)
        mark()
    return Step(run, copy=(values, source), marks=(mark,))


def _copy(dst: torch.Tensor, src: torch.Tensor) -> Step:
    """The step `dst.copy_(src)`."""
    return Step(functools.partial(dst.copy_, src), copy=(dst, src))


def _add_into(memory: CoreMemory, views: BlockViews, addend: torch.Tensor) -> Step:
    """The step adding `addend` into the FP32 block of `views` in place (`TileRef.add_step`)."""
    block, grid, add, mark = views.typed, addend.view(*views.grid), torch.add, \
        _marker(memory, views)

    def run() -> None:
        add(grid, block, out=block)
        mark()
    return Step(run, sum=(block, grid), marks=(mark,))  # (a compiled product adds in its call)


@dataclass(frozen=True)
class BlockViews:
    """Zero-copy strided views of a block of a tile in its core's buffer: `values` (ND/DN: the
    [rows, cols] block of `dtype`, the tile's storage dtype; fractal layouts: element words as
    [row fractals, fractal rows, col fractals, fractal cols], the logical block once made
    contiguous) and `mask` (its bytes in the "initialised" mask), set to all-initialised by
    filling it with `mask_fill`."""

    values: torch.Tensor
    mask: torch.Tensor
    mask_fill: int | bool
    dtype: torch.dtype
    fractal: bool
    typed: torch.Tensor  # `values` reinterpreted as `dtype` (the same tensor for ND/DN)
    #: ND/DN: (first byte, end byte, outer stride, is ND) in the buffer, equal for equal views
    place: tuple = ()

    @functools.cached_property
    def grid(self) -> tuple[int, ...]:
        """`values.shape` as a plain tuple: `view(*grid)` parses several times faster than a
        `torch.Size` (the per-op cost of small tiles)."""
        return tuple(self.values.shape)

    @functools.cached_property
    def transposed(self) -> torch.Tensor:
        """`typed` in the order of the block's transpose (fractal layouts: [col fractals,
        fractal cols, row fractals, fractal rows]), made once per cached view."""
        return self.typed.permute(2, 3, 0, 1) if self.fractal else self.typed.t()


def _block_views(memory: CoreMemory, g: TileGeometry, r0: int, c0: int, rows: int, cols: int
                 ) -> BlockViews | None:
    """`BlockViews` of an in-tile block, or None when it needs the general offset path (compact
    layouts, 4-bit types, an address not aligned to the element size, a fractal-layout block
    not made of whole fractals, a fractal block past the buffer's end)."""
    size = g.dtype.itemsize
    if g.compact or is_packed4(g.dtype) or g.addr % size or rows == 0 or cols == 0:
        return None
    buf, init = memory.buffer(g.space), memory.initialised[g.space]
    if g.layout.is_fractal:
        return _fractal_views(buf, init, g, r0, c0, rows, cols)
    nd = g.layout is TileLayout.ND
    stride = g.cols if nd else g.rows
    first = r0 * stride + c0 if nd else c0 * stride + r0
    last = (first + (rows - 1) * stride + cols - 1 if nd
            else first + (cols - 1) * stride + rows - 1)
    memory.check_range(g.space, g.addr + first * size, g.addr + (last + 1) * size)
    base = g.addr // size + first
    typed = buf.view(storage_dtype(g.dtype))
    if nd:
        values = typed.as_strided((rows, cols), (stride, 1), base)
        mask = init.as_strided((rows, cols * size), (stride * size, 1), base * size)
    else:
        values = typed.as_strided((rows, cols), (1, stride), base)
        mask = init.as_strided((cols, rows * size), (stride * size, 1), base * size)
    place = (g.addr + first * size, g.addr + (last + 1) * size, stride, nd)
    return BlockViews(values, mask, True, typed.dtype, False, values, place)


def _fractal_views(buf: torch.Tensor, init: torch.Tensor, g: TileGeometry, r0: int, c0: int,
                   rows: int, cols: int) -> BlockViews | None:
    fr, fc = g.fractal_shape
    if r0 % fr or c0 % fc or rows % fr or cols % fc or g.rows % fr or g.cols % fc:
        return None
    stride = default_stride(g.layout, (g.rows, g.cols))  # not compact
    # element strides of (row fractal, row in fractal, col fractal, col in fractal); the same
    # arithmetic as layout.element_offsets
    in_row, in_col = (fc, 1) if g.layout.slayout == "row" else (1, fr)
    if g.layout.blayout == "col":
        grid_row, grid_col = fr * fc, stride * fc
    else:
        grid_row, grid_col = fr * stride, fr * fc
    shape = (rows // fr, fr, cols // fc, fc)
    strides = (grid_row, in_row, grid_col, in_col)
    first = r0 // fr * grid_row + c0 // fc * grid_col
    last = first + sum((n - 1) * st for n, st in zip(shape, strides))
    size = g.dtype.itemsize
    if g.addr + (last + 1) * size > buf.numel():
        return None  # the offset path reports it
    word = _WORDS[size]
    base = g.addr // size + first
    values = buf.view(word).as_strided(shape, strides, base)
    mask = init.view(torch.uint8).view(word).as_strided(shape, strides, base)
    dtype = storage_dtype(g.dtype)
    return BlockViews(values, mask, _ALL_INITIALISED[size], dtype, True,
                      buf.view(dtype).as_strided(shape, strides, base))


class GMRef:
    """A view of a CPU torch tensor's storage as global memory: shape, element strides, dtype.

    `base_offset` counts elements of `dtype` from the start of the storage. 4-bit dtypes count
    elements two per byte, the first in the low nibble.

    The storage is followed by the bytes the real NPU allocator reserves with it
    (`soc.device_allocation`): a window may run past the tensor's end into them, as kernels of
    the real docs do (a [1, 128] store into a [1, 64] output). There reads give zero and writes
    are discarded; a window whose part outside the tensor's shape lands anywhere else (before
    the tensor's last element, or past the reserved bytes) stays an error.
    """

    writes_now = WRITES_NOW

    def __init__(self, tensor: torch.Tensor, shape: Sequence[int] | None = None,
                 strides: Sequence[int] | None = None, dtype: DataType | None = None,
                 base_offset: int | None = None):
        self.tensor = tensor
        self.dtype = dtype if dtype is not None else _dtype_of(tensor)
        self.shape = tuple(int(s) for s in (tensor.shape if shape is None else shape))
        if strides is None:
            strides = _row_major(self.shape) if shape is not None else tensor.stride()
        self.strides = tuple(int(s) for s in strides)
        self._bytes = torch.empty(0, dtype=torch.uint8).set_(tensor.untyped_storage())
        bits = 4 if is_packed4(self.dtype) else self.dtype.itemsize * 8
        if base_offset is None:
            base_offset = tensor.storage_offset() * tensor.element_size() * 8 // bits
        self.base_offset = int(base_offset)
        self._bits = bits
        # derived values (typed view, window plans): one dict shared with the shallow copies
        # the engine makes of this view for every instruction
        self._memo: dict = {}
        self._windows: dict[tuple, GMWindow] = {}  # see `window`

    def __repr__(self) -> str:
        return f"GMRef({self.dtype.value}{list(self.shape)} strides={list(self.strides)})"

    @property
    def rank(self) -> int:
        return len(self.shape)

    def read_window(self, offsets: Sequence[int], rows: int, cols: int, transpose: bool = False,
                    axes: tuple[int, int] | None = None) -> torch.Tensor:
        """A [rows, cols] window at per-axis element `offsets`.

        The tile covers tensor axes `axes` (default: the last two; leading axes stay fixed at
        their offsets); `transpose` swaps them (tile rows run along the second axis).
        """
        view = self._strided_window(offsets, rows, cols, transpose, axes)
        if view is not None:
            return view.clone()
        return self._read_elems(self._window_offsets(offsets, rows, cols, transpose, axes))

    def peek_window(self, offsets: Sequence[int], rows: int, cols: int, transpose: bool = False,
                    axes: tuple[int, int] | None = None) -> torch.Tensor:
        """`read_window`, but a view of the tensor where one exists: only for a value written
        at once to on-chip memory (see `WRITES_NOW`; the sanitizer records `read_window`s)."""
        view = self._strided_window(offsets, rows, cols, transpose, axes)
        if view is not None:
            return view
        return self.read_window(offsets, rows, cols, transpose, axes)

    def write_window(self, offsets: Sequence[int], value: torch.Tensor, transpose: bool = False,
                     axes: tuple[int, int] | None = None) -> None:
        rows, cols = value.shape
        view = self._strided_window(offsets, rows, cols, transpose, axes)
        if view is not None:
            view.copy_(value if value.dtype is view.dtype else value.to(view.dtype))
            return
        self._write_elems(self._window_offsets(offsets, rows, cols, transpose, axes), value)

    def window_view(self, offsets: Sequence[int], rows: int, cols: int, transpose: bool = False,
                    axes: tuple[int, int] | None = None) -> torch.Tensor | None:
        """The window as `peek_window` gives it when that is a view of the tensor, else None."""
        return self._strided_window(offsets, rows, cols, transpose, axes)

    def _strided_window(self, offsets: Sequence[int], rows: int, cols: int, transpose: bool,
                        axes: tuple[int, int] | None) -> torch.Tensor | None:
        """The window as a strided view of the typed storage (byte-sized dtypes): no gathers."""
        if self._bits == 4 or rows == 0 or cols == 0:
            return None
        return self._strided_view(self.window(offsets, rows, cols, transpose, axes))

    def _strided_view(self, window: GMWindow) -> torch.Tensor | None:
        """`window`'s strided view (made once), None when it has none."""
        view = window.view
        if view is _UNSET:
            base, rs, cs = window.geometry
            rows, cols = window.lines.rows, window.lines.cols
            typed = self._typed()
            last = base + (rows - 1) * rs + (cols - 1) * cs
            view = window.view = None if base < 0 or last >= typed.numel() or rs < 0 or cs < 0 \
                else torch.as_strided(typed, (rows, cols), (rs, cs), base)  # None: checked path
        return view

    def window(self, offsets: Sequence[int], rows: int, cols: int, transpose: bool = False,
               axes: tuple[int, int] | MxAxes | None = None) -> GMWindow:
        """The bounds-checked window (`_window_geometry`) with what is derived from it, made once
        per window of this view: the op and its cost both ask, and a relaunch with unchanged
        arguments reuses the GMRef (`runtime.backends.sim`). An `MxAxes` window is the box it
        reads (`MxAxes`), not the tile's shape."""
        if not isinstance(offsets, (list, tuple)):
            offsets = offsets if isinstance(offsets, Sequence) else [offsets]
        key = (*offsets, rows, cols, transpose, axes)  # (ints convert only on a miss)
        windows = self._windows
        found = windows.get(key)
        if found is None:
            geometry = self._window_geometry(offsets, rows, cols, transpose, axes)
            if type(axes) is MxAxes:
                rows, cols = axes.box(rows, cols)
            if len(windows) >= _WINDOWS_MAX:
                windows.clear()
            found = windows[key] = GMWindow(geometry, WindowLines(*geometry, rows, cols,
                                                                  self._bits), self.storage)
        return found

    def _typed(self) -> torch.Tensor:
        typed = self._memo.get("typed")
        if typed is None:
            size = self._bits // 8
            n = self._bytes.numel() - self._bytes.numel() % size
            typed = self._memo["typed"] = self._bytes[:n].view(storage_dtype(self.dtype))
        return typed

    def atomic_add_window(self, offsets: Sequence[int], value: torch.Tensor,
                          transpose: bool = False, axes: tuple[int, int] | None = None) -> None:
        """GM[window] += value, rounded once to the GM dtype (float adds computed in fp32)."""
        rows, cols = value.shape
        elems = self._window_offsets(offsets, rows, cols, transpose, axes)
        old = self._read_elems(elems)
        if self.dtype.is_float:
            total = (old.float() + value.float()).to(old.dtype)
        else:
            total = (old.to(torch.int64) + value.to(torch.int64)).to(old.dtype)
        self._write_elems(elems, total)

    def read_linear(self, offset: int, count: int) -> torch.Tensor:
        """`count` elements from element `offset` past the base (no shape, as `getval` sees GM)."""
        return self._read_elems(torch.arange(offset, offset + count) + self.base_offset)

    def write_linear(self, offset: int, value: torch.Tensor) -> None:
        value = value.reshape(-1)
        self._write_elems(torch.arange(offset, offset + value.numel()) + self.base_offset, value)

    def logical_offsets(self, start: int, count: int) -> torch.Tensor:
        """Storage element offsets of the row-major logical elements [start, start + count)."""
        flat = torch.arange(start, start + count)
        offs = torch.full_like(flat, self.base_offset)
        for size, stride in zip(reversed(self.shape), reversed(self.strides)):
            offs += (flat % size) * stride
            flat = flat // size
        return offs

    def fill_logical(self, start: int, count: int, value: float) -> None:
        """Set the row-major logical elements [start, start + count) to `value`."""
        elems = self.logical_offsets(start, count)
        self._write_elems(elems, torch.full((count,), value).to(storage_dtype(self.dtype)))

    def _window_offsets(self, offsets: Sequence[int], rows: int, cols: int, transpose: bool,
                        axes: tuple[int, int] | MxAxes | None) -> torch.Tensor:
        base, rs, cs = self._window_geometry(offsets, rows, cols, transpose, axes)
        if type(axes) is MxAxes:
            rows, cols = axes.box(rows, cols)
        return base + torch.arange(rows)[:, None] * rs + torch.arange(cols)[None, :] * cs

    def _window_geometry(self, offsets: Sequence[int], rows: int, cols: int, transpose: bool,
                         axes: tuple[int, int] | None) -> tuple[int, int, int]:
        """(first element, row stride, col stride) of a window, after bounds checks."""
        if not isinstance(offsets, (list, tuple)):
            offsets = offsets if isinstance(offsets, Sequence) else [offsets]
        offsets = [int(o) for o in offsets]
        key = (len(offsets), rows, cols, transpose, axes)
        plan = self._memo.get(key)
        if plan is None:
            plan = self._memo[key] = self._window_plan(len(offsets), rows, cols, transpose, axes)
        pad, shape, strides, extents, row_stride, col_stride = plan
        if pad:  # a 1-D tensor is one row
            offsets = [0, *offsets] if len(offsets) == 1 else offsets
        base = self.base_offset
        past = False
        for axis, (o, e, n, st) in enumerate(zip(offsets, extents, shape, strides)):
            if o < 0 or o + e > n:  # said in the tensor's terms: indices and shape
                if past or (o >= 0 and type(axes) is not MxAxes
                            and self._runs_past_end(offsets, extents, shape, strides)):
                    past = True
                else:
                    raise SimMemoryError(
                        "GM", min(offsets), max(o + e for o, e in zip(offsets, extents)),
                        math.prod(shape), message=f"window {offsets}+{list(extents)} of tensor "
                        f"{list(shape)}: axis {axis} spans [{o}, {o + e}) but the tensor has "
                        f"{n} there")
            base += o * st
        return base, row_stride, col_stride

    def _runs_past_end(self, offsets: list[int], extents: Sequence[int],
                       shape: Sequence[int], strides: Sequence[int]) -> bool:
        """True when every element of the window outside the tensor's shape lies past the
        tensor's last element and inside the bytes reserved with its storage (class doc)."""
        if any(n == 0 for n in shape) or any(st < 0 for st in strides):
            return False
        elems = torch.tensor(self.base_offset)
        outside = torch.tensor(False)
        for o, e, n, st in zip(offsets, extents, shape, strides):
            idx = torch.arange(o, o + e)
            elems = elems[..., None] + idx * st
            outside = outside[..., None] | (idx >= n)
        last = self.base_offset + sum((n - 1) * st for n, st in zip(shape, strides))
        return bool(outside.any()) and int(elems[outside].min()) > last \
            and int(elems.max()) < self._reserved_elems()

    def _reserved_elems(self) -> int:
        """Elements of `dtype` from the storage's start to the end of its reserved bytes."""
        return device_allocation(self._bytes.numel()) * 8 // self._bits

    def _window_plan(self, count: int, rows: int, cols: int, transpose: bool,
                     axes: tuple[int, int] | None) -> tuple:
        """What `_window_geometry` needs besides the offsets: (pad a 1-D tensor to one row,
        shape, strides, window extent per axis, row stride, col stride)."""
        shape, strides = self.shape, self.strides
        if self._bits == 4 and shape:
            # a 4-bit tensor declares its packed shape (docs, matmul_mx.md: the last axis counts
            # bytes, two elements each) and is read in elements once set_stride says so
            shape = (*shape[:-1], 2 * shape[-1])
        pad = self.rank == 1
        if pad:
            shape, strides = (1, *shape), (0, *strides)
        if (count + 1 if pad and count == 1 else count) != len(shape):
            raise ValueError(f"{count} offsets for a rank-{self.rank} GM tensor")
        if type(axes) is MxAxes:
            return (pad, shape, strides, *axes.plan(shape, strides, rows, cols))
        row_axis, col_axis = (len(shape) - 2, len(shape) - 1) if axes is None else (
            axes[0] % len(shape), axes[1] % len(shape))
        if transpose:
            row_axis, col_axis = col_axis, row_axis
        extents = [1] * len(shape)
        extents[row_axis], extents[col_axis] = rows, cols
        return pad, shape, strides, tuple(extents), strides[row_axis], strides[col_axis]

    # ------------------------------------------------------------ cache lines (timing)
    def window_lines(self, offsets: Sequence[int], rows: int, cols: int, line_bytes: int,
                     transpose: bool = False, axes: tuple[int, int] | None = None
                     ) -> np.ndarray:
        """Lines (byte offset in the tensor's storage // line_bytes) a window touches, unique."""
        if rows == 0 or cols == 0:
            return np.zeros(0, dtype=np.int64)
        return self.window(offsets, rows, cols, transpose, axes).lines(line_bytes)

    def linear_lines(self, start: int, count: int, line_bytes: int) -> np.ndarray:
        """Lines of the row-major logical elements [start, start + count) (`init_output`)."""
        if count <= 0:
            return np.zeros(0, dtype=np.int64)
        if self.strides == _row_major(self.shape):
            return _run_lines(np.array([self.base_offset + start]), count, line_bytes,
                              self._bits)
        return _element_lines(self.logical_offsets(start, count).numpy(), line_bytes,
                              self._bits)

    def element_lines(self, offset: int, count: int, line_bytes: int) -> np.ndarray:
        """Lines of `count` storage elements from `offset` past the base (getval/setval)."""
        return _run_lines(np.array([self.base_offset + offset]), count, line_bytes, self._bits)

    @property
    def storage(self) -> tuple[int, int]:
        """(identity, bytes) of the storage behind this view, for the L2 model."""
        return self._bytes.data_ptr(), self._bytes.numel()

    def _read_elems(self, elems: torch.Tensor) -> torch.Tensor:
        self._check(elems)
        beyond = self._beyond_storage(elems)
        if beyond is not None:  # reserved bytes past the storage read as zero
            out = torch.zeros(elems.shape, dtype=storage_dtype(self.dtype))
            out[~beyond] = self._read_elems(elems[~beyond])
            return out
        if self._bits == 4:
            return read_nibbles(self._bytes, elems)
        size = self._bits // 8
        idx = (elems * size)[..., None] + torch.arange(size)
        return self._bytes[idx].view(storage_dtype(self.dtype)).reshape(elems.shape)

    def _write_elems(self, elems: torch.Tensor, value: torch.Tensor) -> None:
        self._check(elems)
        elems, value = elems.reshape(-1), value.reshape(-1)
        beyond = self._beyond_storage(elems)
        if beyond is not None:  # writes into the reserved bytes past the storage: discarded
            elems, value = elems[~beyond], value[~beyond]
        if self._bits == 4:
            write_nibbles(self._bytes, elems, value)
            return
        size = self._bits // 8
        idx = (elems * size)[:, None] + torch.arange(size)
        data = value.to(storage_dtype(self.dtype)).contiguous().view(torch.uint8)
        self._bytes[idx.reshape(-1)] = data.reshape(-1)

    def _beyond_storage(self, elems: torch.Tensor) -> torch.Tensor | None:
        """Which of `elems` lie in the reserved bytes past the storage; None when none do."""
        if elems.numel() == 0 or (int(elems.max()) + 1) * self._bits <= self._bytes.numel() * 8:
            return None
        return (elems + 1) * self._bits > self._bytes.numel() * 8

    def _check(self, elems: torch.Tensor) -> None:
        if elems.numel() == 0:
            return
        lo, hi = int(elems.min()) * self._bits // 8, -(-(int(elems.max()) + 1) * self._bits // 8)
        if lo < 0 or hi > device_allocation(self._bytes.numel()):
            raise SimMemoryError("GM", lo, hi, self._bytes.numel())


def _row_major(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, acc = [], 1
    for size in reversed(shape):
        strides.append(acc)
        acc *= size
    return tuple(reversed(strides))


def _dtype_of(tensor: torch.Tensor) -> DataType:
    for dtype, name in _TORCH_NAMES.items():
        if getattr(torch, name) == tensor.dtype and dtype not in (DataType.HF8, DataType.INDEX):
            return dtype
    raise ValueError(f"no PyPTO Pro dtype for torch {tensor.dtype}; pass dtype=")


class MxAxes(NamedTuple):
    """The window of an MX scale load (spec: `load` of an E8M0 tensor into a fractal-32 ZZ / NN
    Mat tile). The tensor's last axis is the physical phase (size 2) of consecutive K groups:
    the tile's rows / cols run along tensor axes `rows` / `cols`, and its dim `k_dim` (0 rows,
    1 cols) counts K groups, group k at k // 2 on its axis and k % 2 on the phase axis. GM
    holds that as the box [extent on the lower axis, 2 x extent on the higher one], the higher
    axis merged with the phase axis (which needs them adjacent, the higher one's stride twice
    the phase's); `unpack` turns the box into the tile."""

    rows: int
    cols: int
    k_dim: int

    def _extents(self, rows: int, cols: int) -> tuple[int, int, int, int]:
        """(lower axis, higher axis, extent on the lower, on the higher)."""
        k_axis = (self.rows, self.cols)[self.k_dim]
        ext = {k_axis: -(-(rows, cols)[self.k_dim] // 2),
               (self.cols, self.rows)[self.k_dim]: (cols, rows)[self.k_dim]}
        lo, hi = sorted((self.rows, self.cols))
        return lo, hi, ext[lo], ext[hi]

    def box(self, rows: int, cols: int) -> tuple[int, int]:
        """The [rows, cols] of the GM box a [rows, cols] tile reads."""
        _, _, lo_ext, hi_ext = self._extents(rows, cols)
        return lo_ext, 2 * hi_ext

    def plan(self, shape: tuple[int, ...], strides: tuple[int, ...], rows: int, cols: int
             ) -> tuple[tuple[int, ...], int, int]:
        """(extent per axis, row stride, col stride) of the box."""
        lo, hi, lo_ext, hi_ext = self._extents(rows, cols)
        phase = len(shape) - 1
        if shape[phase] != 2 or hi != phase - 1 or strides[hi] != 2 * strides[phase]:
            raise ValueError(f"an MX scale load of tensor axes {lo} and {hi} of a tensor of "
                             f"shape {list(shape)}, strides {list(strides)} is not supported: "
                             "the higher axis must be the one before the size-2 phase axis, "
                             "contiguous with it")
        extents = [1] * len(shape)
        extents[lo], extents[hi], extents[phase] = lo_ext, hi_ext, 2
        return tuple(extents), strides[lo], strides[phase]

    def unpack(self, box: torch.Tensor, rows: int, cols: int) -> torch.Tensor:
        """The [rows, cols] tile of a box `GMRef.read_window` returned."""
        lo, hi, lo_ext, hi_ext = self._extents(rows, cols)
        pairs = box.reshape(lo_ext, hi_ext, 2)
        k_axis = (self.rows, self.cols)[self.k_dim]
        # [k // 2, other, k % 2] or [other, k // 2, k % 2] → [k, other]
        by_k = pairs.permute(0, 2, 1) if k_axis == lo else pairs.permute(1, 2, 0)
        by_k = by_k.reshape(2 * by_k.shape[0], -1)
        tile = by_k if self.k_dim == 0 else by_k.T
        return tile[:rows, :cols]


class GMWindow:
    """One checked window of a `GMRef`: `geometry` (first element, row stride, col stride),
    `view` (its strided view of the typed storage, None when it has none, `_UNSET` until
    asked), `lines` (its L2 lines), `costs` (the `cost_model` costs naming it) and `plans`
    (`TileRef.load_window`'s, per tile)."""

    __slots__ = ("geometry", "lines", "storage", "view", "costs", "plans")

    def __init__(self, geometry: tuple[int, int, int], lines: WindowLines,
                 storage: tuple[int, int]) -> None:
        self.geometry, self.lines, self.storage = geometry, lines, storage
        self.view: torch.Tensor | None | object = _UNSET
        self.costs: dict = {}
        self.plans: dict = {}


class WindowLines:
    """`lines(line_bytes)`: the lines (byte offset in the storage // line_bytes, unique) a
    window touches, computed once per line size. It holds no tensor, so a `GMAccess` naming
    it keeps no storage alive."""

    __slots__ = ("base", "rs", "cs", "rows", "cols", "bits", "_line_bytes", "_lines")

    def __init__(self, base: int, rs: int, cs: int, rows: int, cols: int, bits: int) -> None:
        self.base, self.rs, self.cs = base, rs, cs
        self.rows, self.cols, self.bits = rows, cols, bits
        self._line_bytes, self._lines = 0, None

    def __call__(self, line_bytes: int) -> np.ndarray:
        if line_bytes != self._line_bytes:
            self._lines = self._compute(line_bytes)
            self._lines.flags.writeable = False
            self._line_bytes = line_bytes
        return self._lines

    def _compute(self, line_bytes: int) -> np.ndarray:
        base, rs, cs, bits = self.base, self.rs, self.cs, self.bits
        rows, cols = self.rows, self.cols
        if cs != 1 and rs == 1:  # runs go down the columns
            rows, cols, rs, cs = cols, rows, cs, rs
        if cs != 1:  # no contiguous runs: element by element
            elems = base + np.arange(rows)[:, None] * rs + np.arange(cols)[None, :] * cs
            return _element_lines(elems.reshape(-1), line_bytes, bits)
        if rs == cols:  # whole rows: one contiguous run
            return _run_lines(np.array([base]), rows * cols, line_bytes, bits)
        return _row_lines(base, rows, rs, cols, line_bytes, bits)


def _row_lines(base: int, rows: int, rs: int, count: int, line_bytes: int, bits: int
               ) -> np.ndarray:
    """`_run_lines` of `rows` runs `rs` elements apart from element `base`. Relative to the
    line of `base` they depend only on where `base` falls in it, so each pattern is
    computed once and shifted (every tile of a tiled loop has the same one)."""
    if (8 * line_bytes) % bits:  # lines that do not hold whole elements: no pattern
        return _run_lines(base + np.arange(rows, dtype=np.int64) * rs, count, line_bytes,
                          bits)
    q, rem = divmod(base * bits, 8 * line_bytes)
    key = (rem, rows, rs, count, bits, line_bytes)
    pattern = _ROW_LINES.get(key)
    if pattern is None:
        if len(_ROW_LINES) >= _ROW_LINES_MAX:
            _ROW_LINES.clear()
        firsts = rem // bits + np.arange(rows, dtype=np.int64) * rs
        pattern = _ROW_LINES[key] = _run_lines(firsts, count, line_bytes, bits)
        pattern.flags.writeable = False
    return pattern + q


def _run_lines(first_elems: np.ndarray, count: int, line_bytes: int, bits: int) -> np.ndarray:
    """Lines of runs of `count` consecutive elements starting at `first_elems`."""
    start = first_elems * bits // 8
    end = ((first_elems + count) * bits + 7) // 8  # exclusive
    first, last = start // line_bytes, (end - 1) // line_bytes
    if first.size == 1:
        return np.arange(first[0], last[0] + 1)
    spans = last - first + 1
    width = int(spans.max())
    lines = first[:, None] + np.arange(width)[None, :]
    if int(spans.min()) != width:
        lines = lines[np.arange(width)[None, :] < spans[:, None]]
    if (first[1:] > last[:-1]).all():  # ascending runs on separate lines: already unique
        return lines.reshape(-1)
    return np.unique(lines)


def _element_lines(elems: np.ndarray, line_bytes: int, bits: int) -> np.ndarray:
    return np.unique(elems * bits // 8 // line_bytes)
