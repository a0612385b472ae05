"""A tape in two lanes (`sim/fast/lanes.py`): ops touching one on-chip buffer, or GM bytes another
op writes, stay in one group; the groups are dealt to two lanes run at once (the second on a
worker thread) or one after the other, and either way a taped relaunch gives the values,
trace rows and op errors of one lane in the replay's order."""
from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
import torch

import pypto_pro.language as pl
from pypto_pro.errors import SimulationError
from pypto_pro.examples import load
from pypto_pro.runtime.backends import use_backend
from pypto_pro.sim import settings
from pypto_pro.sim.step import Step
from pypto_pro.sim.fast import lanes, replay, scheduler_native, memo, tape
from sim_support import ROWS_T, gather_rows

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
import dsl_kernels as dk  # noqa: E402

pytestmark = pytest.mark.usefixtures("stream_engine")  # (conftest)

V, MTE2, MTE3 = pl.PipeType.V, pl.PipeType.MTE2, pl.PipeType.MTE3


@pytest.fixture
def small_lanes(monkeypatch):
    """Two lanes here, however few steps each gets (the test kernels are small), and a tape
    from the relaunch after next."""
    monkeypatch.setenv(settings.LANES, "2")
    monkeypatch.setattr(lanes, "_MIN_LANE", 1)


def _at(*rows: tuple[int, ...]) -> np.ndarray:
    return np.array(rows, dtype=np.int64).reshape(-1)


def test_groups_join_on_a_shared_buffer_and_on_gm_a_write_meets():
    lib = scheduler_native.library(wait=True)
    # footprints (write, space, first, rows, stride, bytes); spaces 0, 1 on chip, 2 GM
    table = _at((1, 0, 0, 1, 0, 64),      # op 0: writes buffer 0
                (0, 0, 0, 1, 0, 64),      # op 1: reads buffer 0 → op 0's group
                (1, 2, 0, 4, 256, 128),   # op 1: writes GM rows [0, 128) of 4 rows
                (1, 1, 0, 1, 0, 64),      # op 2: buffer 1
                (1, 2, 128, 4, 256, 128),  # op 2: the neighbouring columns: no byte shared
                (0, 2, 64, 1, 0, 8),      # op 3: reads a byte op 1 writes → op 0's group
                (0, 2, 1024, 1, 0, 64))   # op 4: reads GM nobody writes
    firsts = np.array([0, 1, 3, 5, 6], dtype=np.int64)
    comp = scheduler_native.components(lib, table, firsts, np.array([0, 0, 1]))
    assert comp.tolist() == [0, 0, 2, 0, 4]


@pytest.mark.parametrize("together", [True, False])
def test_two_lanes_raise_the_failure_first_in_the_replays_order(together):
    split = [lanes.Lane([0, 3], [0, 0]), lanes.Lane([1, 2], [1, 1])]
    threads: dict[int, int] = {}

    def step(item: int) -> Step:
        def run() -> None:
            threads[item] = threading.get_ident()
            if item in (2, 3):
                raise ValueError(f"op {item}")
        return Step(run)

    steps = [[step(0), step(3)], [step(1), step(2)]]
    failed = lanes.run_lanes(steps, split, together)
    assert failed[:3] == (2, 1, 1) and str(failed[3]) == "op 2"
    assert threads[1] == lanes.worker().thread.ident != threads[0] == threading.get_ident()
    threads.clear()
    failed = lanes.run_lanes(steps, split, False, here=True)
    assert failed[0] == 2 and set(threads.values()) == {threading.get_ident()}


def _splits(monkeypatch) -> list:
    """What `lanes.split` gives from now on, in a list."""
    made: list = []
    split = lanes.split
    monkeypatch.setattr(lanes, "split", lambda *args: made.append(split(*args)) or made[-1])
    return made


def _taped_relaunch(kernel, args: tuple, block_dim: int, backend: str) -> list:
    """The trace rows of the fourth launch of `kernel` on `args` (the tape's first play)."""
    memo.clear()
    with use_backend(backend):
        for _ in range(4):
            kernel[None, block_dim](*args)
    trace = kernel.last_trace
    return [] if trace is None else list(trace._log.rows)


def _example(name: str, kernel: str, **shape):
    ex = load(name)
    return getattr(ex, kernel), lambda: ex.make_inputs(**shape, seed=3), ex.block_dim


CASES = {
    "matmul": _example("matmul", "matmul_kernel", m=384, n=256),
    "layernorm": _example("layernorm", "layernorm_kernel", rows=50, cols=200),
    "mix": (dk.matmul_softmax_kernel, lambda: (
        dk.rand((128, 512), torch.float16, 0, .25), dk.rand((512, 1024), torch.float16, 1, .25),
        torch.zeros(128, 1024), torch.zeros(128, 1024)), lambda *args: 2),
}


@pytest.mark.parametrize("backend", ["sim", "functional"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_two_lanes_at_once_or_apart_give_one_lanes_values(monkeypatch, small_lanes,
                                                          functional_backend, case, backend):
    kernel, make, block_dim = CASES[case]
    results = {}
    for way in ("one lane", "at once", "apart"):
        with monkeypatch.context() as m:
            if way == "one lane":
                m.setenv(settings.LANES, "1")
            else:
                m.setattr(tape.Tape, "together", lambda self, w=way: w == "at once")
            made = _splits(m)
            args = make()
            rows = _taped_relaunch(kernel, args, block_dim(*args), backend)
        assert len(made[-1]) == (1 if way == "one lane" else 2)
        results[way] = rows, args
    for way in ("at once", "apart"):
        assert results[way][0] == results["one lane"][0]
        for a, b in zip(results[way][1], results["one lane"][1]):
            assert not isinstance(a, torch.Tensor) or torch.equal(a, b)


@pytest.mark.parametrize("together", [True, False])
def test_a_tape_that_may_fail_keeps_one_lane_and_fails_as_the_python_engine(
        monkeypatch, small_lanes, together):
    """The gather's step is its impl (it checks the offsets it reads): its tape keeps one lane
    in the replay's order, and a relaunch failing there leaves the Python engine's GM."""
    x = torch.arange(32 * 64, dtype=torch.float32).reshape(32, 64)
    offsets = (torch.arange(8, dtype=torch.int32) * 32).flip(0).repeat(32, 1)
    out = torch.zeros(32, 64)
    monkeypatch.setattr(tape.Tape, "together", lambda self: together)
    expected = torch.zeros(32, 64)
    with monkeypatch.context() as m, use_backend("sim"):
        m.setenv(settings.ENGINE, "python")
        gather_rows[None, 4](x, offsets, expected)
    made = _splits(monkeypatch)
    played = []
    run_lanes = lanes.run_lanes
    monkeypatch.setattr(lanes, "run_lanes", lambda steps, *a, **k: played.append(len(steps))
                        or run_lanes(steps, *a, **k))
    _taped_relaunch(gather_rows, (x, offsets, out), 4, "sim")
    assert len(made[0]) == 2 and torch.equal(out, expected) and out.any()
    assert played == []  # (one lane: `tape.play` runs it itself)
    offsets[8 + 2, 1] = offsets[24 + 5, 3] = 4096  # blocks 1 and 3 fail
    errors, left = {}, {}
    for mode in ("native", "python"):
        before = replay.PATHS["tape"]
        left[mode] = torch.full((32, 64), -1.0)
        with monkeypatch.context() as m, use_backend("sim"), \
                pytest.raises(SimulationError) as err:
            m.setenv(settings.ENGINE, mode)
            gather_rows[None, 4](x, offsets, left[mode])
        assert replay.PATHS["tape"] == before + (mode == "native")
        errors[mode] = err.value
    assert "byte offset falls outside" in str(errors["native"])
    assert str(errors["native"]) == str(errors["python"])
    assert errors["native"].span == errors["python"].span
    assert torch.equal(left["native"], left["python"])


@pl.jit(arch="a5")
def add_into_one_window(x: pl.Tensor[[32, 64], pl.DT_FP32], out: pl.Tensor[[8, 64], pl.DT_FP32]):
    """Every block adds its 8 rows into the same 8 rows of `out` (atomic adds: their order
    rounds)."""
    with pl.section_vector():
        t = pl.make_tile(ROWS_T, addr=0x0)
        pl.load(t, x, [pl.get_block_idx() * 8, 0])
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.store(out, t, [0, 0], atomic=pl.AtomicType.AtomicAdd)


def test_blocks_adding_into_one_gm_window_stay_one_group(monkeypatch, small_lanes,
                                                        functional_backend):
    made = _splits(monkeypatch)
    x = torch.randn(32, 64, generator=torch.Generator().manual_seed(0)) * 1e3
    expected = torch.zeros(8, 64)
    with use_backend("functional"):  # (the timed engine finds the adds racing: no tape)
        add_into_one_window[None, 4](x, expected)
        out = torch.zeros(8, 64)
        for _ in range(4):
            out.zero_()
            add_into_one_window[None, 4](x, out)
    assert made == [None]
    assert torch.equal(out, expected)


def test_one_lane_is_kept_when_asked_or_with_one_cpu(monkeypatch):
    monkeypatch.setenv(settings.LANES, "1")
    assert not lanes.wanted()
    monkeypatch.setenv(settings.LANES, "")
    monkeypatch.setattr(lanes.os, "sched_getaffinity", lambda pid: {0}, raising=False)
    lanes._cpus.cache_clear()  # (asked once per process)
    assert not lanes.wanted()
    monkeypatch.setattr(lanes.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    lanes._cpus.cache_clear()
    assert lanes.wanted()
    lanes._cpus.cache_clear()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_forked_child_starts_its_own_worker():
    parent = lanes.worker()
    pid = os.fork()
    if pid == 0:  # the child: a job for the parent's thread would wait forever
        code = 1
        try:
            job = lanes.worker().start(lambda: 7)
            code = 0 if job.done.wait(30) and job.value == 7 and lanes.worker() is not parent \
                else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_an_interrupt_while_waiting_for_the_worker_waits_for_its_lane(monkeypatch):
    release = threading.Event()
    job = lanes.worker().start(lambda: release.wait(10) and "through")
    waits = []

    def interrupted(timeout=None):  # the first wait is interrupted (Ctrl-C in a notebook)
        waits.append(timeout)
        if len(waits) == 1:
            release.set()
            raise KeyboardInterrupt
        return threading.Event.wait(job.done, timeout)
    monkeypatch.setattr(job.done, "wait", interrupted)
    with pytest.raises(KeyboardInterrupt):
        job.wait()
    assert len(waits) == 2 and job.done.is_set() and job.value == "through"


def test_two_lanes_run_the_way_whose_recent_plays_were_faster():
    kept = tape.Tape([], 0, None, None, None)
    ways = []
    for play in range(1, 34):
        together = kept.together()
        ways.append(together)
        # at once is faster, but its first play is slow (a noisy machine)
        kept.timed(together, (0.5 if play == 1 else 0.07) if together else 0.1)
    assert ways[:4] == [True, False, True, False]  # each way twice, alternating
    assert ways[4:] == [play % tape.RETIME != 0 for play in range(5, 34)]
