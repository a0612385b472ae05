"""What launches reuse to cut their fixed cost (issue 9) must not leak state between them: the
L2 handed from one launch to the next, the cached line patterns of strided GM windows."""
from __future__ import annotations

import functools
import numpy as np
import pytest
import torch

from pypto_pro.examples import load
from pypto_pro.runtime.backends import register_backend, use_backend
from pypto_pro.runtime.backends.sim import SimBackend
from pypto_pro.sim.model.memory import GMRef
from pypto_pro.sim.model.memory_system import GMAccess, MemorySystem
from pypto_pro.soc import soc

LINE = 512


def _state(mem: MemorySystem) -> tuple:
    resident = {s: list(lines.items()) for s, lines in mem.table.items() if lines}
    return (resident, mem.hbm_free, mem.stats, dict(mem._base_line), mem._next_line)


def _traffic(mem: MemorySystem, tiles: int) -> None:
    gm = GMRef(torch.zeros(1024, 1024, dtype=torch.float16))
    for t in range(tiles):
        offsets = [128 * (t % 8), 128 * (t // 8 % 8)]
        lines = functools.partial(gm.window_lines, offsets, 128, 128)
        mem.access(10 * t, GMAccess(lines, t % 3 == 2, gm.storage), 10 * t + 5)


@pytest.mark.parametrize("tiles", [3, 4000])  # a few resident lines; many
def test_reset_gives_the_state_of_a_new_system(tiles: int) -> None:
    fresh = _state(MemorySystem(soc("950PR")))
    mem = MemorySystem(soc("950PR"))
    _traffic(mem, tiles)
    assert _state(mem) != fresh
    mem.reset()
    assert _state(mem) == fresh


def test_strided_window_lines_are_shifted_patterns() -> None:
    gm = GMRef(torch.zeros(300, 700, dtype=torch.float16))
    for offsets in ([0, 0], [5, 3], [17, 250], [5, 3]):
        elems = gm._window_offsets(offsets, 40, 90, False, None).numpy()
        want = np.unique(np.concatenate([elems * 2 // LINE, (elems * 2 + 1) // LINE]))
        assert np.array_equal(gm.window_lines(offsets, 40, 90, LINE), want)


def _traced_add(backend: str) -> tuple:
    m = load("vector_add")
    x, y, z = m.make_inputs(512, 512, seed=1)
    with use_backend(backend):
        m.add_kernel[None, 2](x, y, z)
    trace = m.add_kernel.last_trace
    assert torch.equal(z, x + y)
    return trace.duration_cycles, trace.events


def test_back_to_back_launches_time_the_same() -> None:
    register_backend("sim-910b1-reuse-test", lambda: SimBackend(soc_name="910B1"))
    cycles, events = _traced_add("sim")
    _traced_add("sim-910b1-reuse-test")  # another SoC in between
    again, events_again = _traced_add("sim")
    assert again == cycles
    assert events_again.equals(events)
