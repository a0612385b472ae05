"""A functional-only relaunch replays the ops its last launch ran, in their order
(`sim/fast/memo.py`; issue 9), from the third launch of the same operands on as a tape of
prebuilt steps (`sim/fast/tape.py`, moved to new tensors of the same geometry): with new data in the
same tensors or in new tensors of the same geometry it computes exactly what the functional
executor computes, while a launch whose control flow or text depends on values (a scalar read
of memory, printf), a changed launch, or a failed one runs the executor."""
from __future__ import annotations

import pytest
import torch

import pypto_pro.language as pl
from pypto_pro.errors import DeadlockError, SimulationError
from pypto_pro.examples import load
from pypto_pro.runtime.backends import use_backend
from pypto_pro.sim.reference import functional
from pypto_pro.sim.fast import memo, tape
from pypto_pro.sim.ops import IMPLS
from sim_support import barrier_missing_a_core, printing_copy

pytestmark = pytest.mark.usefixtures("functional_backend")  # (conftest)

MTE2, V, MTE3 = pl.PipeType.MTE2, pl.PipeType.V, pl.PipeType.MTE3
T32 = pl.TileType([16, 64], pl.DT_FP32)


@pytest.fixture
def executed(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per launch the functional executor ran (not replayed)."""
    memo.clear()
    calls: list[int] = []
    run = functional.FunctionalEngine.run
    monkeypatch.setattr(functional.FunctionalEngine, "run",
                        lambda self: calls.append(1) or run(self))
    return calls


def _launch(kernel, block_dim: int, args: tuple) -> None:
    with use_backend("functional"):
        kernel[None, block_dim](*args)


@pytest.mark.parametrize("name, kernel, shape, block_dim", [
    ("vector_add", "add_kernel", {"m": 256, "n": 384}, None),
    ("vector_add", "add_kernel", {"m": 512, "n": 512}, 70),  # 64 AIVs: a second wave
    ("matmul_softmax", "matmul_softmax_kernel", {"n": 64}, 34),  # mix: batched ops, waves
])
def test_a_relaunch_replays_and_computes_the_new_data(executed, monkeypatch, name, kernel,
                                                      shape, block_dim) -> None:
    played: list[int] = []
    play = tape.play
    monkeypatch.setattr(tape, "play", lambda *a: played.append(1) or play(*a))
    ex = load(name)
    k = getattr(ex, kernel)
    args = ex.make_inputs(**shape, seed=0)
    bd = block_dim or ex.block_dim(*args)
    expected = ex.make_inputs(**shape, seed=1)
    _launch(k, bd, expected)  # what the executor computes for the new data
    memo.clear()
    _launch(k, bd, ex.make_inputs(**shape, seed=2))  # kept: its ops
    _launch(k, bd, args)  # other tensors of the same geometry: rebound
    for _ in range(3):  # the same tensors, new data: the tape made, then run twice
        for a, b in zip(args, ex.make_inputs(**shape, seed=1)):
            a.copy_(b)
        _launch(k, bd, args)
        for a, b in zip(args, expected):
            assert torch.equal(a, b)
    fresh = ex.make_inputs(**shape, seed=1)  # new tensors again: the tape moved to them
    _launch(k, bd, fresh)
    for a, b in zip(fresh, expected):
        assert torch.equal(a, b)
    assert executed == [1, 1]
    assert played == [1, 1, 1]


def test_a_changed_launch_runs_the_executor(executed) -> None:
    ex = load("vector_add")
    x, y, z = ex.make_inputs(256, 256, seed=0)
    for bd in (4, 4, 8, 8):
        _launch(ex.add_kernel, bd, (x, y, z))
    _launch(ex.add_kernel, 8, ex.make_inputs(256, 128, seed=0))
    assert executed == [1, 1, 1]
    assert torch.equal(z, x + y)


@pl.jit(arch="a5")
def chosen_op(x: pl.Tensor[[16, 64], pl.DT_FP32], y: pl.Tensor[[16, 64], pl.DT_FP32],
              op: pl.Tensor[[1], pl.DT_INT32], z: pl.Tensor[[16, 64], pl.DT_FP32]):
    """Adds or subtracts as `op` (read from memory by the scalar unit) says."""
    with pl.section_vector():
        a = pl.make_tile(T32, addr=0x0)
        b = pl.make_tile(T32, addr=0x1000)
        pl.load(a, x, [0, 0])
        pl.load(b, y, [0, 0])
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=V, event_id=0)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=V, event_id=0)
        if pl.getval(op, 0) == 0:
            pl.add(a, a, b)
        else:
            pl.sub(a, a, b)
        pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=V, wait_pipe=MTE3, event_id=0)
        pl.store(z, a, [0, 0])


def test_control_flow_read_from_memory_runs_the_executor_every_time(executed) -> None:
    x, y, z = torch.randn(16, 64), torch.randn(16, 64), torch.zeros(16, 64)
    op = torch.zeros(1, dtype=torch.int32)
    _launch(chosen_op, 1, (x, y, op, z))
    assert torch.equal(z, x + y)
    op.fill_(1)
    _launch(chosen_op, 1, (x, y, op, z))
    assert torch.equal(z, x - y)
    assert executed == [1, 1]


def test_printed_text_runs_the_executor_every_time(executed) -> None:
    x, z = torch.randn(64, 128).half(), torch.zeros(64, 128).half()
    printed = []
    for _ in range(2):
        _launch(printing_copy, 1, (x, z, 3))
        printed.append(printing_copy.last_result.printed)
    assert printed == [{0: "k=3\n"}] * 2
    assert executed == [1, 1]


def test_a_failed_launch_is_not_kept(executed) -> None:
    x = torch.randn(128, 128).half()
    for _ in range(2):
        with pytest.raises(DeadlockError):
            _launch(barrier_missing_a_core, 2, (x,))
    assert executed == [1, 1]


def test_an_op_error_in_a_replay_is_the_executors_error(executed, monkeypatch) -> None:
    """An op that fails on its values (here: its third run fails) names its op, core and span
    as the executor does; the replay runs the ops in the executor's order."""
    ex = load("vector_add")
    args = ex.make_inputs(256, 256, seed=0)
    add = IMPLS["block.add"]
    calls = []

    def failing(args, kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise ValueError("bad value")
        return add(args, kwargs)

    errors = []
    for replay in (False, True):
        _launch(ex.add_kernel, 4, args)  # (run by the executor, then replayed)
        calls.clear()
        with monkeypatch.context() as m, pytest.raises(SimulationError) as err:
            m.setitem(IMPLS, "block.add", failing)
            if not replay:
                memo.clear()
            _launch(ex.add_kernel, 4, args)
        errors.append(err.value)
    assert executed == [1, 1, 1]
    assert str(errors[0]) == str(errors[1]) and "block.add on" in str(errors[0])
    assert errors[0].span == errors[1].span
