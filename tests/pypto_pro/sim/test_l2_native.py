"""The compiled L2 model (`l2_native`, issue 9) gives exactly the Python model's results: per-access
end cycles, counters, HBM queue and resident tags, on random access streams and in a timed
launch. The compiled half is skipped without a C++ compiler."""
from __future__ import annotations

import shutil

import numpy as np
import pytest
import torch

from pypto_pro.errors import CompileError
from pypto_pro.examples import load
from pypto_pro.runtime.backends import get_backend, use_backend
from pypto_pro.runtime.backends.native import compiler
from pypto_pro.runtime.backends.sim import SimBackend
from pypto_pro.sim.model import l2_native
from pypto_pro.sim import settings
from pypto_pro.sim.native_build import BackgroundLibrary
from pypto_pro.sim.model.l2_native import NativeL2
from pypto_pro.sim.model.memory_system import GMAccess, MemorySystem, PythonL2
from pypto_pro.soc import SoC, soc

LINE = 512


@pytest.fixture(scope="module")
def compiled() -> None:
    """The compiled model, built (or found in the kernel cache) before the test runs."""
    if shutil.which(compiler()) is None:
        pytest.skip("the compiled L2 model needs a C++ compiler")
    l2_native.library(wait=True)


def _system(monkeypatch: pytest.MonkeyPatch, chip: SoC, model: str) -> MemorySystem:
    with monkeypatch.context() as m:
        m.setenv(settings.L2, model)
        return MemorySystem(chip)


def _stream(seed: int, accesses: int, pool: int, most: int = 300
            ) -> list[tuple[int, GMAccess, int]]:
    """(now, access, onchip_end) of random reads and writes of up to `most` lines drawn from a
    pool of `pool` lines in each of three storages: repeats, hits on lines in flight, set
    conflicts and evictions of dirty and clean lines (also within one access)."""
    rng = np.random.default_rng(seed)
    storages = [(1, pool * LINE), (2, pool * LINE - 100), (3, 7)]
    out, now = [], 0
    for _ in range(accesses):
        now += int(rng.integers(0, 400))
        key, nbytes = storages[int(rng.integers(0, 3))]
        span = -(-nbytes // LINE)
        lines = np.unique(rng.integers(0, span, size=int(rng.integers(0, most + 1))))
        gm = GMAccess(lambda _l, lines=lines: lines, bool(rng.random() < 0.4), (key, nbytes))
        out.append((now, gm, now + int(rng.integers(1, 200))))
    return out


def _run(mem: MemorySystem, stream: list[tuple[int, GMAccess, int]]) -> tuple:
    ends = [mem.access(now, gm, onchip_end) for now, gm, onchip_end in stream]
    return ends, mem.stats, mem.hbm_free, mem.table


CHIPS = {
    "950PR": {},  # 16384 sets of 16 ways
    "4 sets x 2 ways": {"l2_bytes": LINE * 2 * 4, "l2_ways": 2},
    "3 sets x 2 ways": {"l2_bytes": LINE * 2 * 3, "l2_ways": 2},  # the hash modulo, no mask
    "1 set x 5 ways": {"l2_bytes": LINE * 5, "l2_ways": 5},
    "no HBM limit": {"l2_bytes": LINE * 4 * 8, "l2_ways": 4, "hbm_bytes_per_s": 0},
    "no L2": {"l2_bytes": 0},
}


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("chip", list(CHIPS))
def test_random_streams_give_identical_results(compiled, monkeypatch, chip, seed) -> None:
    s = soc("950PR", **CHIPS[chip])
    small = 0 < s.l2_bytes < 1 << 20
    stream = _stream(seed, 150, *((16, 8) if small else (3000, 300)))
    python, native = (_system(monkeypatch, s, m) for m in ("python", "native"))
    assert type(python.l2) is (PythonL2 if s.l2_bytes else type(None))
    assert type(native.l2) is (NativeL2 if s.l2_bytes else type(None))
    want = _run(python, stream)
    assert _run(native, stream) == want
    assert (want[1].read_misses and want[1].read_hits) or not s.l2_bytes
    if small:  # evictions of dirty lines too
        assert want[1].writebacks
    # a reset system replays the stream alike
    python.reset()
    native.reset()
    assert _run(native, stream) == _run(python, stream) == want


def test_a_system_switches_model_only_on_reset(compiled, monkeypatch) -> None:
    mem = _system(monkeypatch, soc("950PR"), "python")
    stream = _stream(5, 20, 500)
    want = _run(mem, stream)
    monkeypatch.setenv(settings.L2, "native")
    assert isinstance(mem.l2, PythonL2)  # never within a launch
    mem.reset()
    assert isinstance(mem.l2, NativeL2)
    assert _run(mem, stream) == want


def _timed_add() -> tuple:
    m = load("vector_add")
    x, y, z = m.make_inputs(1024, 512, seed=3)
    with use_backend("sim"):
        m.add_kernel[None, 4](x, y, z)
    assert torch.equal(z, x + y)
    trace = m.add_kernel.last_trace
    soc = SimBackend().soc  # the SoC this launch ran on (other tests leave other SoCs' systems)
    models = {type(get_backend("sim").pools.last_memory_system(soc).l2)}
    return trace.duration_cycles, trace.events, models


def test_a_timed_launch_is_the_same_with_either_model(compiled, monkeypatch) -> None:
    monkeypatch.setenv(settings.L2, "python")
    cycles, events, models = _timed_add()
    assert PythonL2 in models and NativeL2 not in models
    monkeypatch.setenv(settings.L2, "native")
    cycles_native, events_native, models = _timed_add()
    assert NativeL2 in models and PythonL2 not in models
    assert cycles_native == cycles
    assert events_native.equals(events)


def test_forcing_python_uses_the_python_model(monkeypatch) -> None:
    monkeypatch.setenv(settings.L2, "python")
    assert l2_native.library() is None
    assert isinstance(MemorySystem(soc("950PR")).l2, PythonL2)


def test_without_a_compiler_the_python_model_stays(monkeypatch) -> None:
    kept = l2_native.LIBRARY  # a process that has not tried yet:
    monkeypatch.setattr(l2_native, "LIBRARY", BackgroundLibrary(
        kept.tag, kept.sources, kept.library, kept.env, kept.declare))
    monkeypatch.setenv("PYPTOPRO_NATIVE_CXX", "/nonexistent/g++")
    monkeypatch.delenv(settings.L2, raising=False)
    mem = MemorySystem(soc("950PR"))  # starts the build, does not wait for it
    with pytest.raises(CompileError, match="compiler .* was not found"):
        l2_native.library(wait=True)
    assert l2_native.library() is None
    mem.reset()
    assert isinstance(mem.l2, PythonL2)
    stream = _stream(7, 30, 500)
    assert _run(mem, stream)[1].read_misses
