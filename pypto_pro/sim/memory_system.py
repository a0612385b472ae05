"""The chip's memory system behind GM: one L2 cache shared by all cores, and HBM behind it.

Owns `MemorySystem` (per launch) and `GMAccess` (which GM lines one instruction touches).
Every GM access of every core goes through the L2 (spec `ascend_950_model.md` §1.1 L2 sizes,
§1.3 line size and latencies, §3.5 item 3):

* set-associative, `l2_ways` ways, LRU within a set, `l2_line_bytes` lines; the set index is a
  hash of the line number (so power-of-two strides do not all land in one set);
* reads hit or miss by line; a missed line is fetched from HBM and costs `l2_miss_extra_cycles`
  more latency; a hit on a line still being fetched waits for it;
* writes allocate without a fetch and are written back to HBM when a dirty line is evicted
  (write-back: the 950 profiler counts L2 "victims" [MSOPPROF]); dirty lines left at the end of
  the launch stay in L2, as on hardware (a launch starts with an empty L2);
* HBM bandwidth (`hbm_bytes_per_s`) is shared first come, first served by the misses and
  write-backs of all cores; `hbm_bytes_per_s = 0` means no HBM limit.

The per-core rate of a GM transfer (its on-chip duration, from `cost_model`) is the L2-side
rate (INI `l2_read_rate`, `ub_to_l2_rate`, `l2_write_rate`); HBM bounds it only when it misses.
With `l2_bytes = 0` there is no L2: every read and write goes to HBM and waits for it.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .soc import SoC


@dataclass(frozen=True)
class GMAccess:
    """The GM side of one instruction: `lines(line_bytes)` gives the lines it touches in its
    tensor's storage (unique int64 byte offset // line_bytes; computed only when timed);
    `storage` = (identity, bytes) of that storage."""

    lines: Callable[[int], np.ndarray]
    write: bool
    storage: tuple[int, int]


@dataclass
class MemoryStats:
    """Counters of one launch (lines and bytes)."""

    read_hits: int = 0
    read_misses: int = 0
    write_lines: int = 0
    writebacks: int = 0
    hbm_bytes: int = 0


class MemorySystem:
    """The L2 and HBM of one launch, shared by all its cores."""

    def __init__(self, soc: SoC) -> None:
        self.line = int(soc.l2_line_bytes)
        ways = int(soc.l2_ways)
        self.sets = int(soc.l2_bytes) // (self.line * ways) if soc.l2_bytes else 0
        if soc.l2_bytes and self.sets < 1:
            raise ValueError(f"L2 of {soc.l2_bytes} B is smaller than one set of {ways} "
                             f"lines of {self.line} B")
        shape = (max(self.sets, 1), ways)
        self.tags = np.full(shape, -1, dtype=np.int64)
        self.last_use = np.zeros(shape, dtype=np.int64)  # LRU stamp; empty ways stay 0
        self.dirty = np.zeros(shape, dtype=bool)
        self.ready = np.zeros(shape, dtype=np.float64)  # cycle a fetched line is in L2
        self.miss_extra = int(soc.l2_miss_extra_cycles)
        self.hbm_rate = soc.hbm_bytes_per_s / soc.clock_hz  # bytes per core cycle
        self._state()

    def _state(self) -> None:
        """The per-launch state besides the arrays: idle HBM, no counters, no storages."""
        self.uses = 0
        self.hbm_free = 0.0
        self.stats = MemoryStats()
        # Each storage gets a line-aligned device address in the order the launch first touches
        # it, so timing never depends on where the host allocator put the tensors.
        self._base_line: dict[int, int] = {}
        self._next_line = 0
        # flat cells written since the arrays were last clean (None: too many to list)
        self._touched: list[np.ndarray] | None = []
        self._touched_count = 0

    def reset(self) -> None:
        """Back to an empty L2 and an idle HBM, as a new system: a launch reuses the last
        one's arrays (allocating MiBs of fresh pages costs more than a small launch) and
        clears only the cells it touched when they are few."""
        if self._touched is None:
            self.tags.fill(-1)
            self.last_use.fill(0)
            self.dirty.fill(False)
            self.ready.fill(0.0)
        elif self._touched:
            cells = np.concatenate(self._touched)
            self.tags.reshape(-1)[cells] = -1
            self.last_use.reshape(-1)[cells] = 0
            self.dirty.reshape(-1)[cells] = False
            self.ready.reshape(-1)[cells] = 0.0
        self._state()

    def access(self, now: int, gm: GMAccess, onchip_end: int) -> int:
        """The cycle the GM side of a transfer issued at `now` is done (>= `onchip_end`, the
        end its per-core rate alone gives)."""
        lines = gm.lines(self.line)
        if lines.size == 0:
            return onchip_end
        lines = lines + self._device_line(gm.storage)
        if self.sets == 0:  # no L2: straight to HBM (whole lines), reads and writes alike
            return max(onchip_end, self._hbm(now, lines.size * self.line))
        misses, dirty_victims, wait_for = self._lookup(lines, gm.write)
        wb_bytes = dirty_victims * self.line
        if gm.write:
            self.stats.write_lines += lines.size
            if wb_bytes:  # evictions use HBM bandwidth; the store itself only fills L2
                self._hbm(now, wb_bytes)
            return onchip_end
        end = float(max(onchip_end, wait_for))
        if misses.size:
            hbm_end = self._hbm(now, wb_bytes + misses.size * self.line)
            end = max(end + self.miss_extra, hbm_end + self.miss_extra)
            self.ready.reshape(-1)[misses] = end
        elif wb_bytes:
            self._hbm(now, wb_bytes)
        return int(end + 0.999)

    def _device_line(self, storage: tuple[int, int]) -> int:
        key, nbytes = storage
        base = self._base_line.get(key)
        if base is None:
            base = self._base_line[key] = self._next_line
            self._next_line += -(-max(nbytes, 1) // self.line)
        return base

    def _hbm(self, now: int, nbytes: int) -> float:
        """FIFO share of the chip's HBM: the cycle these bytes are through."""
        self.stats.hbm_bytes += nbytes
        if self.hbm_rate <= 0:
            return float(now)
        begin = max(float(now), self.hbm_free)
        self.hbm_free = begin + nbytes / self.hbm_rate
        return self.hbm_free

    def _note_touched(self, cells: np.ndarray) -> None:
        if self._touched is None:
            return
        self._touched_count += cells.size
        if self._touched_count > self.tags.size // 8:  # a full refill is cheaper from here
            self._touched = None
        else:
            self._touched.append(cells)

    def _set_of(self, lines: np.ndarray) -> np.ndarray:
        mixed = lines ^ (lines >> 13) ^ (lines >> 26)
        return mixed % self.sets

    def _lookup(self, lines: np.ndarray, write: bool) -> tuple[np.ndarray, int, float]:
        """Look up and install `lines`: (flat cells of the read misses, dirty victims, the
        latest ready cycle among hits on lines still being fetched)."""
        ways = self.tags.shape[1]
        tags, last_use = self.tags.reshape(-1), self.last_use.reshape(-1)  # flat views
        dirty, ready = self.dirty.reshape(-1), self.ready.reshape(-1)
        sets_of = self._set_of(lines)
        miss_cells = []
        dirty_victims, wait_for = 0, 0.0
        pending = np.arange(lines.size)
        while pending.size:  # lines sharing a set go in later rounds, in order
            ordered = np.sort(sets_of[pending])
            if (ordered[1:] != ordered[:-1]).all():  # the usual case: all in different sets
                now_idx, pending = pending, pending[:0]
            else:
                _, first = np.unique(sets_of[pending], return_index=True)
                now_idx = pending[first]
                keep = np.ones(pending.size, dtype=bool)
                keep[first] = False
                pending = pending[keep]
            s, ln = sets_of[now_idx], lines[now_idx]
            match = self.tags[s] == ln[:, None]
            hit = match.any(axis=1)
            cell = s * ways + np.where(hit, match.argmax(axis=1), self.last_use[s].argmin(axis=1))
            hits = int(hit.sum())
            if hits:
                wait_for = max(wait_for, float(ready[cell[hit]].max()))
            if hits < s.size:
                miss = ~hit
                dirty_victims += int((miss & (tags[cell] >= 0) & dirty[cell]).sum())
            self.uses += 1
            self._note_touched(cell)
            tags[cell] = ln
            last_use[cell] = self.uses
            if write:
                dirty[cell] = True
                ready[cell] = 0.0
            elif hits < s.size:
                missed = cell[miss]
                dirty[missed] = False
                miss_cells.append(missed)
            if not write:
                self.stats.read_hits += hits
                self.stats.read_misses += s.size - hits
        self.stats.writebacks += dirty_victims
        misses = np.concatenate(miss_cells) if miss_cells else np.zeros(0, dtype=np.int64)
        return misses, dirty_victims, wait_for
