"""The compiled L2 tag walk: `l2_model.cpp` built with the host C++ compiler, loaded with ctypes.

`NativeL2` has the interface of `memory_system.PythonL2` and gives bit-identical results; it
only makes the per-line loop (a few hundred lines per tile access) compiled code.

Build. Once per machine and compiler, into the kernel cache like the native launcher (the key:
compiler id, flags, source), on first use, on a background thread: `library()` never waits
for g++ unless asked, so a first launch runs the Python model meanwhile and a machine without
a compiler simply keeps it. `PYPTOPRO_SIM_L2` picks the model: `python` forces the Python one,
`native` waits for the build (and raises its error), anything else (default `auto`) uses the
compiled model once it is ready.
"""
from __future__ import annotations

import ctypes
import weakref
from collections import defaultdict
from pathlib import Path

import numpy as np

from .. import settings
from ..native_build import BackgroundLibrary

SOURCE = Path(__file__).with_name("l2_model.cpp")
FORMAT = 1


def library(wait: bool = False) -> ctypes.CDLL | None:
    """The loaded library, or None: forced off, no compiler, or still building (`wait`: wait
    for the build and raise its error)."""
    return LIBRARY.get(wait)


def declare(lib: ctypes.CDLL) -> ctypes.CDLL:
    """Set the C signatures of l2_model.cpp's calls in `lib` once (also in the stream
    engine's library, which links it)."""
    i64, ptr = ctypes.c_int64, ctypes.c_void_p
    lib.pypto_l2_new.argtypes, lib.pypto_l2_new.restype = (i64, i64), ptr
    lib.pypto_l2_free.argtypes, lib.pypto_l2_free.restype = (ptr,), None
    lib.pypto_l2_reset.argtypes, lib.pypto_l2_reset.restype = (ptr,), None
    # The two calls of every access are called without argtypes, faster (≈0.8 µs a call): with
    # pointers as c_void_p, C ints as Python ints, int64 and double as c_int64 / c_double.
    lib.pypto_l2_access.restype = ctypes.c_int32
    lib.pypto_l2_settle.restype = None
    lib.pypto_l2_snapshot.argtypes, lib.pypto_l2_snapshot.restype = (ptr, ptr, ptr, ptr), None
    return lib


class NativeL2:
    """The tag state of one L2 in C++ (see `memory_system.PythonL2` for the model)."""

    def __init__(self, lib: ctypes.CDLL, sets: int, ways: int) -> None:
        self.sets, self.ways = sets, ways
        self.lib = lib  # (the stream engine needs an L2 of its own library)
        self._snapshot = lib.pypto_l2_snapshot
        handle = lib.pypto_l2_new(sets, ways)
        if not handle:
            raise MemoryError(f"cannot allocate an L2 model of {sets} sets x {ways} ways")
        weakref.finalize(self, lib.pypto_l2_free, handle)
        self._handle = ctypes.c_void_p(handle)
        self._reset, self._access, self._settle = (lib.pypto_l2_reset, lib.pypto_l2_access,
                                                   lib.pypto_l2_settle)
        self._out = (ctypes.c_double * 2)()  # (dirty victims, wait_for) of the last access
        self._out_at = ctypes.c_void_p(ctypes.addressof(self._out))
        self._base, self._end = ctypes.c_int64(), ctypes.c_double()  # reused argument objects
        # the lines are copied here: cheaper than `arr.ctypes.data` on each access
        self._lines = np.empty(0, dtype=np.int64)
        self._lines_at = ctypes.c_void_p(0)

    def reset(self) -> None:
        self._reset(self._handle)

    def lookup(self, lines: np.ndarray, base: int, write: bool) -> tuple[int, int, float]:
        """Look up and install `lines + base` (`PythonL2.lookup`)."""
        n = lines.size
        if n > self._lines.size:
            self._lines = np.empty(max(n, 2 * self._lines.size), dtype=np.int64)
            self._lines_at = ctypes.c_void_p(self._lines.ctypes.data)
        self._lines[:n] = lines
        self._base.value = base
        missed = self._access(self._handle, self._lines_at, n, self._base, write, self._out_at)
        out = self._out
        return missed, int(out[0]), out[1]

    def settle(self, end: float) -> None:
        """The last read's missed lines still resident are ready at `end`."""
        self._end.value = end
        self._settle(self._handle, self._end)

    @property
    def table(self) -> defaultdict[int, dict[int, float]]:
        """A copy of the tags in the form of `PythonL2.table`: set → {line: state} in LRU
        order, the non-empty sets only."""
        lines = np.empty((self.sets, self.ways), dtype=np.int64)
        states = np.empty((self.sets, self.ways), dtype=np.float64)
        counts = np.empty(self.sets, dtype=np.int32)
        self._snapshot(self._handle, lines.ctypes.data, states.ctypes.data, counts.ctypes.data)
        table: defaultdict[int, dict[int, float]] = defaultdict(dict)
        for s in np.flatnonzero(counts).tolist():
            n = counts[s]
            table[s] = dict(zip(lines[s, :n].tolist(), states[s, :n].tolist()))
        return table


LIBRARY = BackgroundLibrary(f"sim-l2-{FORMAT}", [SOURCE], "pypto_l2_model.so", settings.L2,
                            declare)
