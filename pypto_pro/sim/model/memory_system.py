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

The L2's per-line tag walk is compiled C++ (`l2_model.cpp` via `l2_native`, built once per
machine on a background thread on first use) when a C++ compiler exists, else Python
(`PythonL2`); both give identical results. `PYPTOPRO_SIM_L2=python` forces the Python model,
`PYPTOPRO_SIM_L2=native` waits for the compiled one (see `l2_native`).
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from . import l2_native
from .l2_native import NativeL2
from ...soc import SoC


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
    """The L2 and HBM of one launch, shared by all its cores. The L2's tags live in a
    `NativeL2` (compiled) if its library is loaded by the time the launch starts, else in a
    `PythonL2`: the results are the same."""

    def __init__(self, soc: SoC) -> None:
        self.line = int(soc.l2_line_bytes)
        self.ways = int(soc.l2_ways)
        self.sets = int(soc.l2_bytes) // (self.line * self.ways) if soc.l2_bytes else 0
        if soc.l2_bytes and self.sets < 1:
            raise ValueError(f"L2 of {soc.l2_bytes} B is smaller than one set of {self.ways} "
                             f"lines of {self.line} B")
        self.miss_extra = int(soc.l2_miss_extra_cycles)
        self.hbm_rate = soc.hbm_bytes_per_s / soc.clock_hz  # bytes per core cycle
        self.l2: PythonL2 | NativeL2 | None = None
        self.reset()

    def reset(self) -> None:
        """Back to an empty L2, an idle HBM, no counters and no storages: a new system (the
        engine hands one launch's system to the next on the same SoC). Switches to the
        compiled L2 once its library is ready (only here: never within a launch)."""
        if self.sets:
            lib = l2_native.library()
            if lib is not None and not isinstance(self.l2, NativeL2):
                self.l2 = NativeL2(lib, self.sets, self.ways)
            elif lib is None and not isinstance(self.l2, PythonL2):
                self.l2 = PythonL2(self.sets, self.ways)
            self.l2.reset()
        self.hbm_free = 0.0
        self.stats = MemoryStats()
        # Each storage (address, bytes) gets a line-aligned device address in the order the
        # launch first touches it, so timing never depends on where the host allocator put the
        # tensors. (Storages sharing bytes get apart addresses, as they do for the memo.)
        self._base_line: dict[tuple[int, int], int] = {}
        self._next_line = 0

    @property
    def table(self) -> defaultdict[int, dict[int, float]]:
        """The L2's resident lines: set → {line: state} in LRU order (`PythonL2.table`)."""
        return self.l2.table if self.l2 is not None else defaultdict(dict)

    def access(self, now: int, gm: GMAccess, onchip_end: int) -> int:
        """The cycle the GM side of a transfer issued at `now` is done (>= `onchip_end`, the
        end its per-core rate alone gives)."""
        lines = gm.lines(self.line)
        n = lines.size
        if n == 0:
            return onchip_end
        storage = gm.storage
        base = self._base_line.get(storage)
        if base is None:
            base = self._device_line(storage)
        if self.l2 is None:  # no L2: straight to HBM (whole lines), reads and writes alike
            return max(onchip_end, self._hbm(now, n * self.line))
        missed, dirty_victims, wait_for = self.l2.lookup(lines, base, gm.write)
        stats = self.stats
        stats.writebacks += dirty_victims
        wb_bytes = dirty_victims * self.line
        if gm.write:
            stats.write_lines += n
            if wb_bytes:  # evictions use HBM bandwidth; the store itself only fills L2
                self._hbm(now, wb_bytes)
            return onchip_end
        stats.read_hits += n - missed
        stats.read_misses += missed
        end = float(max(onchip_end, wait_for))
        if missed:
            hbm_end = self._hbm(now, wb_bytes + missed * self.line)
            end = max(end + self.miss_extra, hbm_end + self.miss_extra)
            self.l2.settle(end)
        elif wb_bytes:
            self._hbm(now, wb_bytes)
        return int(end + 0.999)

    def _device_line(self, storage: tuple[int, int]) -> int:
        """The first device line of a storage the launch has not touched yet."""
        nbytes = storage[1]
        base = self._base_line[storage] = self._next_line
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


class PythonL2:
    """The L2's tags in Python: a dict per set (made on first use) mapping each resident line
    to its state, in LRU order (oldest first). A tile access touches a few hundred lines, and
    plain dict operations per line cost less than the numpy calls a vectorised lookup needs
    per access. A line's state is one float: -1.0 dirty (written here; dirty lines are never
    in flight), otherwise the cycle its fetch is done. `NativeL2` is the same model compiled."""

    def __init__(self, sets: int, ways: int) -> None:
        self.sets, self.ways = sets, ways
        # a power-of-two set count takes the hash modulo with a mask (0: it is not one)
        self._set_mask = sets - 1 if not sets & (sets - 1) else 0
        self.reset()

    def reset(self) -> None:
        self.table: defaultdict[int, dict[int, float]] = defaultdict(dict)
        self._missed: list[tuple[dict[int, float], int]] = []

    def lookup(self, lines: np.ndarray, base: int, write: bool) -> tuple[int, int, float]:
        """Look up and install the lines `lines + base` of one access, in order: (read misses,
        dirty victims, the latest ready cycle among read hits on lines still being fetched).
        A write installs its lines dirty; a read remembers its misses for `settle`."""
        lines = lines + base
        mixed = lines >> 13  # the set hash, in place: it is a large share of a small access
        mixed ^= lines
        mixed ^= lines >> 26
        sets_of = (mixed & self._set_mask if self._set_mask else mixed % self.sets).tolist()
        if write:
            return 0, self._write(lines.tolist(), sets_of), 0.0
        self._missed, dirty_victims, wait_for = self._read(lines.tolist(), sets_of)
        return len(self._missed), dirty_victims, wait_for

    def settle(self, end: float) -> None:
        """The last read's missed lines that are still resident (not evicted again by a later
        line of the same access) are ready at `end`."""
        for state, line in self._missed:
            if line in state:
                state[line] = end

    def _read(self, lines: list[int], sets_of: list[int]
              ) -> tuple[list[tuple[dict[int, float], int]], int, float]:
        """The read of `lookup`: ((its set, line) of each miss, whose state is still to be given
        its ready cycle; dirty victims; wait_for)."""
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
        return dirty_victims


def _evict_lru(state: dict[int, float]) -> int:
    """Drop the least recently used line of a full set: 1 if it was dirty (a write-back)."""
    return int(state.pop(next(iter(state))) < 0)
