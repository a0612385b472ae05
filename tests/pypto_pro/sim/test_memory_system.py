"""The chip memory system: GM lines of a window, L2 hits/misses/LRU/write-back, shared HBM."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from pypto_pro.sim.model.memory import GMRef
from pypto_pro.sim.model.memory_system import GMAccess, MemorySystem
from pypto_pro.soc import soc

LINE = 512


def brute_lines(gm: GMRef, offsets, rows, cols, transpose=False) -> np.ndarray:
    """Lines touched, element by element (reference for GMRef.window_lines)."""
    elems = gm._window_offsets(offsets, rows, cols, transpose, None).reshape(-1)
    start = elems * gm.dtype.itemsize  # byte offsets in the storage
    end = start + gm.dtype.itemsize - 1
    return np.unique(torch.cat([start, end]).numpy() // LINE)


@pytest.mark.parametrize("dtype,shape,offsets,window,transpose", [
    (torch.float16, (64, 1024), (3, 17), (20, 300), False),  # unaligned rows spanning lines
    (torch.float16, (64, 1024), (0, 0), (64, 256), False),   # whole 512 B rows
    (torch.float16, (64, 256), (3, 0), (20, 256), False),    # full-width rows: one run
    (torch.float32, (256, 32), (5, 0), (30, 32), False),     # rows shorter than a line
    (torch.float16, (128, 96), (8, 16), (64, 40), True),      # DN window: runs down columns
    (torch.int8, (4, 4096), (1, 100), (3, 2000), False),
])
def test_window_lines_match_the_bytes_touched(dtype, shape, offsets, window, transpose):
    gm = GMRef(torch.zeros(shape, dtype=dtype))
    got = gm.window_lines(list(offsets), *window, LINE, transpose=transpose)
    assert np.array_equal(got, brute_lines(gm, list(offsets), *window, transpose))


def test_linear_and_element_lines():
    gm = GMRef(torch.zeros(64, 64, dtype=torch.float32))
    assert np.array_equal(gm.linear_lines(8, 1024, LINE), np.arange(0, 9))  # bytes 32..4127
    assert np.array_equal(gm.element_lines(200, 1, LINE), [1])
    assert gm.storage[1] == 64 * 64 * 4


def test_storages_get_separate_line_aligned_device_addresses():
    mem = MemorySystem(soc("950PR"))
    a, b = (0xA000, 1000), (0xB000, 512)
    mem.access(0, GMAccess(lambda _l: np.array([0, 1]), False, a), onchip_end=1)
    mem.access(0, GMAccess(lambda _l: np.array([0]), False, b), onchip_end=1)  # not a's line 0
    mem.access(0, GMAccess(lambda _l: np.array([1]), False, a), onchip_end=1)
    assert (mem.stats.read_misses, mem.stats.read_hits) == (3, 1)


def access(lines, write=False) -> GMAccess:
    arr = np.asarray(lines, dtype=np.int64)
    return GMAccess(lambda line_bytes: arr, write, (1, 1 << 30))  # one 1 GiB tensor


def test_second_read_hits_and_costs_no_hbm():
    s = soc("950PR")
    mem = MemorySystem(s)
    first = mem.access(0, access(range(64)), onchip_end=400)
    hbm_cycles = 64 * LINE / (s.hbm_bytes_per_s / s.clock_hz)
    assert first == pytest.approx(max(400, hbm_cycles) + s.l2_miss_extra_cycles, abs=1)
    assert (mem.stats.read_misses, mem.stats.hbm_bytes) == (64, 64 * LINE)
    again = mem.access(first + 10, access(range(64)), onchip_end=first + 410)
    assert again == first + 410  # all hits: only the per-core (L2-side) rate counts
    assert (mem.stats.read_hits, mem.stats.hbm_bytes) == (64, 64 * LINE)


def test_a_hit_on_a_line_still_in_flight_waits_for_it():
    mem = MemorySystem(soc("950PR"))
    ready = mem.access(0, access(range(32)), onchip_end=10)
    other_core = mem.access(1, access(range(32)), onchip_end=11)
    assert other_core == ready and mem.stats.read_misses == 32


def test_lru_eviction_and_write_back_of_dirty_lines():
    s = soc("950PR", l2_bytes=LINE * 16, l2_ways=16)  # one set of 16 lines
    mem = MemorySystem(s)
    mem.access(0, access(range(16), write=True), onchip_end=10)  # 16 dirty lines, no fetch
    assert mem.stats.hbm_bytes == 0 and mem.stats.write_lines == 16
    mem.access(20, access([100, 101]), onchip_end=30)  # evicts the two oldest: written back
    assert (mem.stats.writebacks, mem.stats.read_misses) == (2, 2)
    assert mem.stats.hbm_bytes == 4 * LINE
    mem.access(40, access([2]), onchip_end=50)  # line 2 was recently used: still there
    assert mem.stats.read_hits == 1
    mem.access(60, access([0]), onchip_end=70)  # line 0 was evicted: a miss
    assert mem.stats.read_misses == 3


def test_without_l2_every_access_waits_for_hbm():
    s = soc("950PR", l2_bytes=0)
    mem = MemorySystem(s)
    rate = s.hbm_bytes_per_s / s.clock_hz
    end1 = mem.access(0, access(range(10)), onchip_end=1)
    end2 = mem.access(0, access(range(10), write=True), onchip_end=1)
    assert end1 == pytest.approx(10 * LINE / rate, abs=1)
    assert end2 == pytest.approx(20 * LINE / rate, abs=1)  # FIFO behind the first
    assert mem.stats.hbm_bytes == 20 * LINE


def test_hbm_is_shared_first_come_first_served():
    s = soc("950PR")
    mem = MemorySystem(s)
    rate = s.hbm_bytes_per_s / s.clock_hz
    a = mem.access(0, access(range(100)), onchip_end=1)
    b = mem.access(0, access(range(1000, 1100)), onchip_end=1)
    assert b - a == pytest.approx(100 * LINE / rate, abs=2)
    unlimited = MemorySystem(soc("950PR", hbm_bytes_per_s=0.0))
    assert unlimited.access(0, access(range(100)), onchip_end=5) == 5 + s.l2_miss_extra_cycles


def test_gemm_panels_reread_by_other_cores_hit_l2():
    """The GEMM pattern of issue 3: cores sharing a row panel of A read it once from HBM."""
    s = soc("910B1")
    mem = MemorySystem(s)
    a = GMRef(torch.zeros(1024, 2048, dtype=torch.float16))
    lines = a.window_lines([0, 0], 128, 256, LINE)  # 512 B rows: one line each
    assert lines.size == 128
    for core in range(6):  # six cores read the same 128 x 256 panel
        mem.access(core, GMAccess(lambda _l: lines, False, a.storage), onchip_end=core + 600)
    assert mem.stats.read_misses == 128 and mem.stats.read_hits == 5 * 128


def test_lines_of_one_access_sharing_a_set_go_in_order():
    s = soc("950PR", l2_bytes=LINE * 2, l2_ways=2)  # one set of 2 lines
    mem = MemorySystem(s)
    mem.access(0, access([0, 1, 2], write=True), onchip_end=10)  # 2 evicts 0 (dirty)
    assert (mem.stats.writebacks, mem.stats.hbm_bytes) == (1, LINE)
    # 3 evicts 1 (dirty), then 1 evicts 2 (dirty), then 4 evicts 3 (clean)
    end = mem.access(20, access([3, 1, 4]), onchip_end=30)
    assert (mem.stats.read_misses, mem.stats.writebacks) == (3, 3)
    assert sorted(mem.table[0]) == [1, 4]  # the evicted lines are not put back
    assert mem.access(end, access([1, 4]), onchip_end=end + 5) == end + 5  # fetched: hits
    assert mem.stats.read_hits == 2
