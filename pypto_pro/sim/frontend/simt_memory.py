"""Element memory of one SIMT launch: the Vec tiles and GM tensors its threads index.

A launch reads its operands when it starts and its writes land when it ends (like every pipe
instruction), so threads work on launch-local copies: a tile argument is its whole [rows, cols]
tile read on first use, a GM argument the window of elements its threads have touched so far
(grown on demand, so a launch on a slice of a large tensor copies only the slice). Loads gather and
stores scatter over all active threads at once (colliding stores: the highest linear thread
wins, as when the native backend runs the threads x fastest); atomics serialise colliding
threads in that same order. At the end `commit` hands the touched elements to the engine's
deferred writers: written tile rows, runs of written GM elements, and GM atomic adds as
`atomic_add_window` deltas, so that launches on other cores adding to the same address sum up.
Unsigned ints are computed as int64 (torch has no uint32 arithmetic) and stored back wrapped.
"""
from __future__ import annotations

import math

import torch

from ...errors import NotSupported, SimulationError
from ...ir.span import Span
from ...ir.types import TileLayout
from ..model.memory import GMRef, TileRef, storage_dtype

_REDUCE = {"max": "amax", "min": "amin"}
_BITWISE = {"and": torch.bitwise_and, "or": torch.bitwise_or, "xor": torch.bitwise_xor}
#: atomics whose update is an associative combine(old, value): run as segmented scans
_ASSOCIATIVE = {"max": torch.maximum, "min": torch.minimum, "exch": lambda a, b: b,
                **_BITWISE}


class ElementArray:
    """A launch-local typed copy of one tile or GM tensor, flat in element order."""

    def __init__(self, ref: TileRef | GMRef, span: Span) -> None:
        self.ref = ref
        self.is_tile = isinstance(ref, TileRef)
        if self.is_tile and ref.geometry.layout is not TileLayout.ND:
            raise NotSupported(f"SIMT element access needs an ND Vec tile, not "
                               f"{ref.geometry.layout.value}", span)
        self.dtype = ref.dtype
        self.size = ref.shape[0] * ref.shape[1] if self.is_tile else math.prod(ref.shape)
        self.data = torch.empty(0, dtype=torch.int64)  # the local window, from element `base`
        self.base = 0
        # per window element: written, GM atomic-add delta (committed as an add), has a delta
        self.written: torch.Tensor | None = None
        self.added: torch.Tensor | None = None
        self.touched: torch.Tensor | None = None

    @property
    def loaded_bytes(self) -> int:
        return self.data.numel() * self.dtype.itemsize

    def _read(self, start: int, count: int) -> torch.Tensor:
        raw = (self.ref.read_full().reshape(-1) if self.is_tile
               else self.ref.read_linear(start, count))
        return raw.to(torch.int64) if self.dtype.kind == "uint" else raw

    def _cover(self, lo: int, hi: int) -> None:
        """Make elements [lo, hi] part of the local window (tiles: the whole tile at once)."""
        if not self.data.numel():
            lo, hi = (0, self.size - 1) if self.is_tile else (lo, hi)
            self.base, self.data = lo, self._read(lo, hi - lo + 1)
            return
        end = self.base + self.data.numel() - 1
        if lo >= self.base and hi <= end:
            return
        front = max(0, self.base - lo)
        back = max(0, hi - end)
        parts = [self._read(lo, front)] if front else []
        parts += [self.data] + ([self._read(end + 1, back)] if back else [])
        self.data = torch.cat(parts)
        self.written, self.added, self.touched = (
            None if m is None else torch.cat([m.new_zeros(front), m, m.new_zeros(back)])
            for m in (self.written, self.added, self.touched))
        self.base -= front

    # ------------------------------------------------------------ gathers and scatters
    def load(self, offsets, active: torch.Tensor | None, span: Span):
        """The element at `offsets` per thread (a Python scalar when every thread reads one)."""
        if not isinstance(offsets, torch.Tensor):
            at = self._local(torch.tensor([int(offsets)]), None, span)
            return self.data[at].item()
        at = self._local(offsets, active, span)  # may grow the window: index it afterwards
        return self.data[at]

    def store(self, offsets, values, active: torch.Tensor | None, n: int, span: Span) -> None:
        idx = offsets if isinstance(offsets, torch.Tensor) else torch.full((n,), int(offsets))
        idx = self._local(idx, active, span)
        data = self.data
        vals = _as_lanes(values, data.dtype, n)
        if active is not None:
            idx, vals = idx[active], vals[active]
        data[idx] = vals  # CPU index_put_ runs in lane order: the last thread wins
        self._mark(idx)

    def atomic(self, fn: str, offsets, operands: list, active: torch.Tensor | None,
               want_old: bool, n: int, span: Span) -> torch.Tensor | None:
        """Apply atomic `fn` for every active thread; each thread's old value if wanted."""
        if self.dtype.bits not in (32, 64) or (self.dtype.bits == 64 and self.is_tile):
            raise SimulationError(f"SIMT atomics need 32-bit elements (64-bit only in GM), "
                                  f"not {self.dtype.value}", span)
        idx = offsets if isinstance(offsets, torch.Tensor) else torch.full((n,), int(offsets))
        idx = self._local(idx, active, span)
        data = self.data
        lanes = torch.arange(n) if active is None else active.nonzero().flatten()
        idx = idx[lanes]
        vals = [_as_lanes(v, data.dtype, n)[lanes] for v in operands]
        old = torch.zeros(n, dtype=data.dtype) if want_old else None
        if fn in ("add", "sub"):
            delta = vals[0] if fn == "add" else -vals[0]
            if want_old and self.dtype.is_float:  # each thread sees its predecessors' roundings
                old[lanes] = self._serial("add", idx, [delta])
                self._accumulate(idx, delta, apply=False)
            else:
                if want_old:
                    old[lanes] = data[idx] + _exclusive_segment_sums(idx, delta)
                self._accumulate(idx, delta)
        elif not want_old and fn in _REDUCE:
            data.scatter_reduce_(0, idx, vals[0], _REDUCE[fn])
            self._mark(idx)
        elif fn in _ASSOCIATIVE:
            got = self._scan(fn, idx, vals[0])
            if want_old:
                old[lanes] = got
        else:
            got = self._serial(fn, idx, vals)
            if want_old:
                old[lanes] = got
        return old

    def _scan(self, fn: str, idx: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """An associative atomic as a segmented scan over the threads of each address (in
        lane order, log2(threads) steps): each thread's old value, and the final values."""
        data, combine = self.data, _ASSOCIATIVE[fn]
        order = torch.argsort(idx, stable=True)
        sidx, acc = idx[order], v[order].to(data.dtype)
        step = 1
        while step < acc.numel():  # Hillis-Steele: acc[k] = v[first of segment .. k]
            same = sidx[step:] == sidx[:-step]
            acc = torch.cat([acc[:step], torch.where(same, combine(acc[:-step], acc[step:]),
                                                     acc[step:])])
            step *= 2
        base = data[sidx]
        first = torch.ones_like(sidx, dtype=torch.bool)
        first[1:] = sidx[1:] != sidx[:-1]
        before = torch.cat([acc[:1], acc[:-1]])
        old_sorted = torch.where(first, base, combine(base, before))
        last = torch.ones_like(first)
        last[:-1] = first[1:]
        data[sidx[last]] = combine(base[last], acc[last])
        self._mark(idx)
        old = torch.empty_like(old_sorted)
        old[order] = old_sorted
        return old

    def _serial(self, fn: str, idx: torch.Tensor, vals: list) -> torch.Tensor:
        """Colliding threads in rounds: round k applies every address's k-th thread (in lane
        order) at once, so a launch costs as many rounds as its worst collision."""
        data = self.data
        order = torch.argsort(idx, stable=True)
        _, counts = torch.unique_consecutive(idx[order], return_counts=True)
        starts = torch.cumsum(counts, 0) - counts
        rank = torch.empty_like(order)
        rank[order] = torch.arange(idx.numel()) - torch.repeat_interleave(starts, counts)
        by_round = torch.argsort(rank, stable=True)  # lanes of round 0, then round 1, ...
        sizes = torch.bincount(rank).tolist()
        ridx = idx[by_round]
        rvals = [v.to(data.dtype)[by_round] for v in vals]
        old = torch.empty(idx.numel(), dtype=data.dtype)
        at = 0
        for size in sizes:
            where = ridx[at:at + size]
            cur = data[where]
            old[at:at + size] = cur
            data[where] = _apply(fn, cur, [v[at:at + size] for v in rvals])
            at += size
        if fn != "add" or self.is_tile:  # GM adds commit as deltas (_accumulate)
            self._mark(idx)
        out = torch.empty_like(old)
        out[by_round] = old
        return out

    def _accumulate(self, idx: torch.Tensor, delta: torch.Tensor, apply: bool = True) -> None:
        """`data[idx] += delta` in lane order; GM adds are also kept as deltas to commit."""
        delta = delta.to(self.data.dtype)
        if apply:
            self.data.index_add_(0, idx, delta)
        if self.is_tile:
            self._mark(idx)
            return
        if self.added is None:
            self.added = torch.zeros_like(self.data)
            self.touched = torch.zeros(self.data.numel(), dtype=torch.bool)
        self.added.index_add_(0, idx, delta)
        self.touched[idx] = True

    # ------------------------------------------------------------ bookkeeping
    def _local(self, offsets: torch.Tensor, active: torch.Tensor | None, span: Span
               ) -> torch.Tensor:
        """Window positions of the active threads' element offsets, bounds-checked (inactive
        threads point at the first active one's element)."""
        live = offsets if active is None else offsets[active]
        lo, hi = int(live.min()), int(live.max())  # callers run with some thread active
        if lo < 0 or hi >= self.size:
            what = "tile" if self.is_tile else "GM tensor"
            raise SimulationError(
                f"SIMT element access out of bounds: offset {lo if lo < 0 else hi} of a "
                f"{what} of shape {list(self.ref.shape)} ({self.size} elements)", span)
        self._cover(lo, hi)
        local = offsets - self.base
        return local if active is None else torch.where(active, local, lo - self.base)

    def _mark(self, idx: torch.Tensor) -> None:
        if self.written is None:
            self.written = torch.zeros(self.data.numel(), dtype=torch.bool)
        self.written[idx] = True

    def commit(self, ref: TileRef | GMRef) -> None:
        """Hand the touched elements to `ref`'s (deferred) writers."""
        out = self.data.to(storage_dtype(self.dtype))
        if self.written is not None and self.is_tile:
            cols = ref.shape[1]
            rows = self.written.view(-1, cols).any(1).nonzero().flatten()
            r0, r1 = int(rows[0]), int(rows[-1]) + 1
            ref.write(out.view(-1, cols)[r0:r1], offset=(r0, 0))
        elif self.written is not None:
            plain = self.written if self.touched is None else self.written & ~self.touched
            for start, end in _runs(plain):
                ref.write_linear(self.base + start, out[start:end])
        if self.added is not None:
            for e in self.touched.nonzero().flatten().tolist():
                ref.atomic_add_window(_unravel(self.base + e, ref.shape),
                                      self.added[e:e + 1].view(1, 1).to(storage_dtype(
                                          self.dtype)))


def _as_lanes(value, dtype: torch.dtype, n: int) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        return value.to(dtype).expand(n) if value.dim() == 0 else value.to(dtype)
    return torch.full((n,), value, dtype=dtype)


def _exclusive_segment_sums(idx: torch.Tensor, delta: torch.Tensor) -> torch.Tensor:
    """Per thread, the sum of `delta` over the earlier threads hitting the same address."""
    order = torch.argsort(idx, stable=True)
    sd = delta[order]
    excl = torch.cumsum(sd, 0, dtype=sd.dtype) - sd
    _, counts = torch.unique_consecutive(idx[order], return_counts=True)
    starts = torch.cumsum(counts, 0) - counts
    out = torch.empty_like(sd)
    out[order] = excl - torch.repeat_interleave(excl[starts], counts)
    return out


def _apply(fn: str, cur: torch.Tensor, vals: list) -> torch.Tensor:
    v = vals[0] if vals else None
    if fn == "add":
        return cur + v
    if fn == "exch":
        return v
    if fn == "max":
        return torch.maximum(cur, v)
    if fn == "min":
        return torch.minimum(cur, v)
    if fn == "inc":  # CUDA semantics: back to 0 once the old value reaches v
        return torch.where(cur >= v, 0, cur + 1)
    if fn == "dec":
        return torch.where((cur == 0) | (cur > v), v, cur - 1)
    if fn == "cas":
        return torch.where(cur == v, vals[1], cur)
    if fn in _BITWISE:
        return _BITWISE[fn](cur, v)
    raise NotSupported(f"the simulator has no SIMT atomic_{fn}")


def _runs(mask: torch.Tensor) -> list[tuple[int, int]]:
    """[start, end) of every run of True in a bool vector."""
    pad = torch.zeros(1, dtype=torch.int8)
    edges = torch.diff(mask.to(torch.int8), prepend=pad, append=pad)
    return list(zip((edges == 1).nonzero().flatten().tolist(),
                    (edges == -1).nonzero().flatten().tolist()))


def _unravel(e: int, shape: tuple[int, ...]) -> list[int]:
    out = []
    for size in reversed(shape):
        out.append(e % size)
        e //= size
    return out[::-1]
