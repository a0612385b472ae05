"""The stream engine (`sim/fast/stream.py`, `scheduler.cpp`, `replay.py`; issue 9): a timed launch
recorded, scheduled in C++ and replayed gives exactly what the Python engine gives — every
trace row, the instruction count, the outputs (races included), the L2 counters — and the
Python engine's exact error when the run fails. Ineligible launches, a missing library and
`PYPTOPRO_SIM_ENGINE=python` take the Python engine. Skipped without a C++ compiler."""
from __future__ import annotations

import pytest
import torch

import pypto_pro.language as pl
from pypto_pro.errors import DeadlockError, PyptoError, SimulationError
from pypto_pro.examples import load
from pypto_pro.runtime.backends import get_backend, use_backend
from pypto_pro.sim.fast import scheduler_native, stream
from pypto_pro.sim import settings
from sim_support import barrier_missing_a_core

MTE2, V, MTE3 = pl.PipeType.MTE2, pl.PipeType.V, pl.PipeType.MTE3
INTER_BLOCK = pl.CrossCoreSyncMode.INTER_BLOCK
T16 = pl.TileType([64, 128], pl.DT_FP16)
T128 = pl.TileType([128, 128], pl.DT_FP32)

pytestmark = pytest.mark.usefixtures("stream_engine")  # (conftest)


@pytest.fixture
def paths(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Which engine each timed launch took ("native" or "python")."""
    taken: list[str] = []
    run = stream.run

    def spy(launch):
        blocks = run(launch)
        taken.append("python" if blocks is None else "native")
        return blocks

    monkeypatch.setattr(stream, "run", spy)
    return taken


def _launch(monkeypatch: pytest.MonkeyPatch, mode: str, kernel, block_dim: int,
            make_args) -> tuple:
    """(trace rows, instructions, outputs, L2 stats) of one timed launch with engine `mode`."""
    args = make_args()
    with monkeypatch.context() as m, use_backend("sim"):
        m.setenv(settings.ENGINE, mode)
        kernel[None, block_dim](*args)
    trace = kernel.last_trace
    backend = get_backend("sim")
    memory = backend.pools.last_memory_system(backend.soc)
    return (list(trace._log.rows), dict(trace.meta.extra)["instructions"],
            [a.clone() if isinstance(a, torch.Tensor) else a for a in args],
            repr(memory.stats) if memory else None)


def _same(monkeypatch, paths, kernel, block_dim: int, make_args) -> tuple:
    python = _launch(monkeypatch, "python", kernel, block_dim, make_args)
    native = _launch(monkeypatch, "native", kernel, block_dim, make_args)
    assert paths == ["python", "native"]
    rows_p, count_p, outs_p, l2_p = python
    rows_n, count_n, outs_n, l2_n = native
    assert len(rows_n) == len(rows_p)
    assert rows_n == rows_p
    assert count_n == count_p and l2_n == l2_p
    for a, b in zip(outs_p, outs_n):
        assert torch.equal(a, b) if isinstance(a, torch.Tensor) else a == b
    return python


# ---------------------------------------------------------------- identical runs


@pytest.mark.parametrize("name, kernel, shape, block_dim", [
    ("vector_add", "add_kernel", {"m": 256, "n": 384}, None),
    ("vector_add", "add_kernel", {"m": 512, "n": 512}, 70),  # 64 AIVs: a second wave
    ("matmul_softmax", "matmul_softmax_kernel", {"n": 256}, None),  # mix: cross-core syncs
    ("matmul_softmax", "matmul_softmax_kernel", {"n": 64}, 34),  # mix, 32 AI cores: waves
    ("softmax", "softmax_kernel", {"rows": 100, "cols": 300}, None),
])
def test_examples_run_identically(monkeypatch, paths, name, kernel, shape,
                                  block_dim) -> None:
    ex = load(name)
    k = getattr(ex, kernel)
    bd = block_dim or ex.block_dim(*ex.make_inputs(**shape, seed=0))
    _same(monkeypatch, paths, k, bd, lambda: ex.make_inputs(**shape, seed=0))


@pl.jit(arch="a5")
def staggered_barrier(x: pl.Tensor[[256, 128], pl.DT_FP16],
                      z: pl.Tensor[[256, 128], pl.DT_FP16]):
    with pl.section_cube():
        pl.system.bar_all()
    with pl.section_vector():
        t = pl.make_tile(T16, addr=0x0)
        b = pl.get_block_idx()
        for _ in pl.range(3 * b + 1):
            pl.load(t, x, [b * 64, 0])
        for _ in pl.range(2):
            pl.system.set_cross_core(pipe=MTE2, event_id=1, sync_mode=INTER_BLOCK)
            pl.system.wait_cross_core(pipe=MTE3, event_id=1, sync_mode=INTER_BLOCK)
        pl.store(z, t, [b * 64, 0])
        pl.system.sync_all(core_type=pl.SyncCoreType.AIV_ONLY)


def test_inter_block_sync_and_sync_all_run_identically(monkeypatch, paths) -> None:
    x = torch.randn(256, 128).half()
    _same(monkeypatch, paths, staggered_barrier, 2, lambda: (x, torch.zeros_like(x)))


@pl.jit(arch="a5")
def printing_copy(x: pl.Tensor[[pl.DYNAMIC, 128], pl.DT_FP16],
                  z: pl.Tensor[[pl.DYNAMIC, 128], pl.DT_FP16]):
    with pl.section_vector():
        b = pl.get_block_idx()
        t = pl.make_tile(T16, addr=0x0)
        pl.load(t, x, [b * 64, 0])
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.printf("block %d loaded %f\n", b, 0.5)  # the scalar unit, while MTE2 runs
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.store(z, t, [b * 64, 0])


@pytest.mark.parametrize("block_dim", [3, 70])  # 64 AIVs: printf rows in a second wave too
def test_printf_rows_run_identically(monkeypatch, paths, block_dim) -> None:
    x = torch.randn(64 * block_dim, 128).half()
    rows = _same(monkeypatch, paths, printing_copy, block_dim,
                 lambda: (x, torch.zeros_like(x)))[0]
    printf = [r for r in rows if r[7] == "printf"]
    assert len(printf) == block_dim and {(r[5], r[6], r[12] - r[11]) for r in printf} == {
        ("S", "instr", 10 * (44 + 2 * 15))}  # `cost_model.printf_cost`: 44 bytes, 15 writes


# ---------------------------------------------------------------- failing runs


@pl.jit(arch="a5")
def set_twice(x: pl.Tensor[[64, 128], pl.DT_FP16], z: pl.Tensor[[64, 128], pl.DT_FP16]):
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=1)
        pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=1)  # BUG: set twice
        pl.load(a, x, [0, 0])
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=V, wait_pipe=MTE3, event_id=1)
        pl.store(z, a, [0, 0])


def _error(monkeypatch, mode: str, kernel, args) -> PyptoError:
    with monkeypatch.context() as m, use_backend("sim"):
        m.setenv(settings.ENGINE, mode)
        with pytest.raises(PyptoError) as err:
            kernel[None, 1](*args)
    return err.value


@pytest.mark.parametrize("kernel, args, error", [
    (barrier_missing_a_core, lambda: (torch.zeros(128, 128).half(),), DeadlockError),
    (set_twice, lambda: (torch.zeros(64, 128).half(), torch.zeros(64, 128).half()),
     SimulationError),
])
def test_a_failing_run_gives_the_python_engines_exact_error(monkeypatch, paths,
                                                            kernel, args, error) -> None:
    python, native = (_error(monkeypatch, mode, kernel, args()) for mode in ("python", "native"))
    assert paths == ["python", "python"]  # the schedule failed: the Python engine reran it
    assert type(native) is type(python) and isinstance(native, error)
    assert str(native) == str(python) and native.span == python.span


# ---------------------------------------------------------------- fallbacks and the switch


@pl.jit(arch="a5")
def setval_then_store(g: pl.Tensor[[128, 128], pl.DT_FP32],
                      out: pl.Tensor[[128, 128], pl.DT_FP32]):
    with pl.section_vector():
        b = pl.make_tile(T128, addr=0x0)
        pl.setval(g, 0, 5.0)  # a scalar write of memory: the stream engine cannot record it
        pl.load(b, g, [0, 0])
        pl.store(out, b, [0, 0])


def test_an_ineligible_kernel_takes_the_python_engine(monkeypatch, paths) -> None:
    recorded: list[int] = []
    record = stream.record
    monkeypatch.setattr(stream, "record", lambda rec: recorded.append(1) or record(rec))
    g, out = torch.full((128, 128), 2.0), torch.zeros(128, 128)
    with monkeypatch.context() as m, use_backend("sim"):
        m.setenv(settings.ENGINE, "native")
        setval_then_store[None, 1](g, out)
        setval_then_store[None, 1](g, out)
    assert paths == ["python", "python"]
    assert recorded == [1]  # the program is remembered as ineligible: not recorded again


def test_a_sanitized_launch_takes_the_python_engine(monkeypatch, paths) -> None:
    from pypto_pro.sanitizer import sanitize

    ex = load("vector_add")
    with monkeypatch.context() as m, use_backend("sim"), sanitize():
        m.setenv(settings.ENGINE, "native")
        ex.add_kernel[None, 2](*ex.make_inputs(128, 128, seed=0))
    assert paths == ["python"]


def test_without_the_library_the_python_engine_runs(monkeypatch, paths) -> None:
    monkeypatch.setattr(scheduler_native, "library", lambda wait=False: None)
    ex = load("vector_add")
    x, y, z = ex.make_inputs(128, 128, seed=0)
    with use_backend("sim"):
        ex.add_kernel[None, 2](x, y, z)
    assert paths == ["python"] and torch.equal(z, x + y)


def test_the_env_switch_picks_the_engine(monkeypatch, paths) -> None:
    ex = load("vector_add")
    args = ex.make_inputs(128, 128, seed=0)
    for mode in ("python", "native", "auto"):
        with monkeypatch.context() as m, use_backend("sim"):
            m.setenv(settings.ENGINE, mode)
            ex.add_kernel[None, 2](*args)
    # auto: the library is built (`stream_engine`), so even a 1-tile launch takes it: a relaunch
    # replays its kept schedule (`memo`) for less than the Python engine's event loop
    assert paths == ["python", "native", "native"]
