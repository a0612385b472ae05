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

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .soc import SoC


class GMAccess(NamedTuple):
    """The GM side of one instruction: `lines(line_bytes)` gives the lines it touches in its
    tensor's storage (unique int64 byte offset // line_bytes; computed only when timed);
    `storage` = (identity, bytes) of that storage. (A named tuple: one is made per GM
    instruction, and a frozen dataclass costs more to make.)"""

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
    """The L2 and HBM of one launch, shared by all its cores.

    The L2 is a dict per set (made on first use) mapping each resident line to its state, in
    LRU order (oldest first): a tile access touches a few hundred lines, and plain dict
    operations per line cost less than the numpy calls a vectorised lookup needs per access.
    A line's state is one float: -1.0 dirty (written here; dirty lines are never in flight),
    otherwise the cycle its fetch is done.
    """

    def __init__(self, soc: SoC) -> None:
        self.line = int(soc.l2_line_bytes)
        self.ways = int(soc.l2_ways)
        self.sets = int(soc.l2_bytes) // (self.line * self.ways) if soc.l2_bytes else 0
        if soc.l2_bytes and self.sets < 1:
            raise ValueError(f"L2 of {soc.l2_bytes} B is smaller than one set of {self.ways} "
                             f"lines of {self.line} B")
        # a power-of-two set count takes the hash modulo with a mask (0: it is not one)
        self._set_mask = self.sets - 1 if self.sets and not self.sets & (self.sets - 1) else 0
        self.miss_extra = int(soc.l2_miss_extra_cycles)
        self.hbm_rate = soc.hbm_bytes_per_s / soc.clock_hz  # bytes per core cycle
        self.reset()

    def reset(self) -> None:
        """Back to an empty L2, an idle HBM, no counters and no storages: a new system (the
        engine hands one launch's system to the next on the same SoC)."""
        self.table: defaultdict[int, dict[int, float]] = defaultdict(dict)
        self.hbm_free = 0.0
        self.stats = MemoryStats()
        # Each storage gets a line-aligned device address in the order the launch first touches
        # it, so timing never depends on where the host allocator put the tensors.
        self._base_line: dict[int, int] = {}
        self._next_line = 0

    def access(self, now: int, gm: GMAccess, onchip_end: int) -> int:
        """The cycle the GM side of a transfer issued at `now` is done (>= `onchip_end`, the
        end its per-core rate alone gives)."""
        lines = gm.lines(self.line)
        if lines.size == 0:
            return onchip_end
        lines = lines + self._device_line(gm.storage)
        if self.sets == 0:  # no L2: straight to HBM (whole lines), reads and writes alike
            return max(onchip_end, self._hbm(now, lines.size * self.line))
        mixed = lines >> 13  # the set hash, in place: it is a large share of a small access
        mixed ^= lines
        mixed ^= lines >> 26
        sets_of = (mixed & self._set_mask if self._set_mask else mixed % self.sets).tolist()
        if gm.write:
            dirty_victims = self._write(lines.tolist(), sets_of)
            self.stats.write_lines += lines.size
            if dirty_victims:  # evictions use HBM bandwidth; the store itself only fills L2
                self._hbm(now, dirty_victims * self.line)
            return onchip_end
        missed, dirty_victims, wait_for = self._read(lines.tolist(), sets_of)
        wb_bytes = dirty_victims * self.line
        end = float(max(onchip_end, wait_for))
        if missed:
            hbm_end = self._hbm(now, wb_bytes + len(missed) * self.line)
            end = max(end + self.miss_extra, hbm_end + self.miss_extra)
            for state, line in missed:
                if line in state:  # not evicted again by a later line of this access
                    state[line] = end
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

    def _read(self, lines: list[int], sets_of: list[int]
              ) -> tuple[list[tuple[dict[int, float], int]], int, float]:
        """Look up and install the lines of a read, in order: ((its set, line) of each miss,
        whose state is still to be given its ready cycle; dirty victims; the latest ready cycle
        among hits on lines still being fetched)."""
        table, ways = self.table, self.ways
        missed: list[tuple[dict[int, float], int]] = []
        dirty_victims, wait_for = 0, 0.0
        for line, s in zip(lines, sets_of):  # subscripts, not method calls: the hot loop
            state = table[s]
            if line in state:
                ready = state[line]
                del state[line]
                if ready > wait_for:
                    wait_for = ready
            else:
                if len(state) >= ways:
                    dirty_victims += _evict_lru(state)
                missed.append((state, line))
                ready = 0.0  # clean; its ready cycle is set once the access's end is known
            state[line] = ready  # now the most recently used
        hits = len(lines) - len(missed)
        self.stats.read_hits += hits
        self.stats.read_misses += len(missed)
        self.stats.writebacks += dirty_victims
        return missed, dirty_victims, wait_for

    def _write(self, lines: list[int], sets_of: list[int]) -> int:
        """Install the lines of a write (allocate, no fetch) as dirty: the dirty victims."""
        table, ways = self.table, self.ways
        dirty_victims = 0
        for line, s in zip(lines, sets_of):
            state = table[s]
            if line in state:
                del state[line]
            elif len(state) >= ways:
                dirty_victims += _evict_lru(state)
            state[line] = -1.0
        self.stats.writebacks += dirty_victims
        return dirty_victims


def _evict_lru(state: dict[int, float]) -> int:
    """Drop the least recently used line of a full set: 1 if it was dirty (a write-back)."""
    return int(state.pop(next(iter(state))) < 0)
