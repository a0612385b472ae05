"""The stream engine's memo (`sim/stream_memo.py`; issue 9): a relaunch of a kernel with the same
tensors and scalars replays the kept recording and schedule instead of recording again, and gives
exactly what a fresh launch gives — trace rows, instruction count, L2 counters, the values of the
new data, the text printed — while any change of what the schedule depends on records afresh.
Skipped without a C++ compiler (the stream engine is not built then)."""
from __future__ import annotations

import gc
import shutil
import weakref

import pytest
import torch

import pypto_pro.language as pl
from pypto_pro.examples import load
from pypto_pro.runtime.backends import use_backend
from pypto_pro.runtime.backends.native import compiler
from pypto_pro.sim import engine, scheduler_native, stream, stream_memo
from pypto_pro.sim.scheduler_native import ENV_ENGINE


@pytest.fixture(autouse=True)
def native(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every timed launch here may take the stream engine (built before the tests run)."""
    if shutil.which(compiler()) is None:
        pytest.skip("the stream engine needs a C++ compiler")
    scheduler_native.library(wait=True)
    monkeypatch.setenv(ENV_ENGINE, "native")
    stream_memo.clear()


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per launch that recorded its streams (a memo miss)."""
    calls: list[int] = []
    record = stream.record
    monkeypatch.setattr(stream, "record", lambda rec: calls.append(1) or record(rec))
    return calls


def _launch(kernel, block_dim: int, args: tuple) -> tuple:
    """(trace rows, instructions, L2 stats) of one timed launch."""
    with use_backend("sim"):
        kernel[None, block_dim](*args)
    trace = kernel.last_trace
    memory = engine._IDLE_MEMORY.get(trace.meta.soc)
    return list(trace._log.rows), dict(trace.meta.extra)["instructions"], repr(memory[1].stats)


@pytest.mark.parametrize("name, kernel, shape, block_dim", [
    ("vector_add", "add_kernel", {"m": 256, "n": 384}, None),
    ("vector_add", "add_kernel", {"m": 512, "n": 512}, 70),  # 64 AIVs: a second wave
    ("matmul_softmax", "matmul_softmax_kernel", {"n": 64}, 34),  # mix, 32 AI cores: waves
])
def test_a_relaunch_replays_and_computes_the_new_data(recorded, name, kernel, shape,
                                                      block_dim) -> None:
    ex = load(name)
    k = getattr(ex, kernel)
    args = ex.make_inputs(**shape, seed=0)
    bd = block_dim or ex.block_dim(*args)
    expected = ex.make_inputs(**shape, seed=1)
    fresh = _launch(k, bd, expected)  # what a recorded launch computes for the new data
    first = _launch(k, bd, args)  # other tensors: records again
    assert recorded == [1, 1]
    for a, b in zip(args, ex.make_inputs(**shape, seed=1)):  # the same tensors, new data
        a.copy_(b)
    again = _launch(k, bd, args)
    assert recorded == [1, 1]  # the kept recording ran
    assert again == first == fresh
    for a, b in zip(args, expected):
        assert torch.equal(a, b)


def test_what_the_schedule_depends_on_records_afresh(recorded) -> None:
    ex = load("vector_add")
    x, y, z = ex.make_inputs(256, 256, seed=0)
    _launch(ex.add_kernel, 4, (x, y, z))
    _launch(ex.add_kernel, 4, (x, y, z))
    assert recorded == [1]
    _launch(ex.add_kernel, 2, (x, y, z))  # another block count
    _launch(ex.add_kernel, 2, (x, y, z.clone()))  # another tensor
    stream_memo.clear()
    _launch(ex.add_kernel, 2, (x, y, z))
    assert recorded == [1, 1, 1, 1]
    assert torch.equal(z, x + y)


def test_another_kernel_in_between_keeps_the_values_right(recorded) -> None:
    add, softmax = load("vector_add"), load("softmax")
    x, y, z = add.make_inputs(256, 256, seed=0)
    s_args = softmax.make_inputs(rows=64, cols=256, seed=0)
    for _ in range(2):
        _launch(add.add_kernel, 4, (x, y, z))
        _launch(softmax.softmax_kernel, softmax.block_dim(*s_args), s_args)
        x.add_(1.0)
    _launch(add.add_kernel, 4, (x, y, z))
    assert torch.equal(z, x + y)
    assert torch.allclose(s_args[-1], torch.softmax(s_args[0].float(), -1).to(s_args[-1].dtype),
                          atol=1e-3)


T = pl.TileType([64, 128], pl.DT_FP16)


@pl.jit(arch="a5")
def printing_copy(x: pl.Tensor[[64, 128], pl.DT_FP16], z: pl.Tensor[[64, 128], pl.DT_FP16],
                  k: pl.DT_INT32):
    with pl.section_vector():
        t = pl.make_tile(T, addr=0x0)
        pl.load(t, x, [0, 0])
        pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.store(z, t, [0, 0])
        pl.printf("k=%d\n", k)


def test_a_scalar_is_part_of_the_key_and_printed_text_is_kept(recorded, capsys) -> None:
    x, z = torch.randn(64, 128).half(), torch.zeros(64, 128).half()
    printed = []
    with use_backend("sim"):
        for k in (3, 3, 4):
            printing_copy[None, 1](x, z, k)
            printed.append(printing_copy.last_result.printed)
    assert recorded == [1, 1]
    assert printed == [{0: "k=3\n"}, {0: "k=3\n"}, {0: "k=4\n"}]
    assert torch.equal(z, x)


def test_timing_only_then_values(recorded) -> None:
    from pypto_pro.runtime.backends import register_backend
    from pypto_pro.runtime.backends.sim import SimBackend

    register_backend("sim-tonly-memo", lambda: SimBackend(timing_only=True))
    ex = load("vector_add")
    x, y, z = ex.make_inputs(512, 512, seed=0)
    with use_backend("sim-tonly-memo"):
        ex.add_kernel[None, 70](x, y, z)  # waves: the placeholders' rebinding is kept
    assert not torch.equal(z, x + y)
    _launch(ex.add_kernel, 70, (x, y, z))
    assert torch.equal(z, x + y)


def test_the_memo_keeps_no_tensor_of_an_earlier_launch_alive(recorded) -> None:
    ex = load("vector_add")
    x, y, z = ex.make_inputs(256, 256, seed=0)
    _launch(ex.add_kernel, 4, (x, y, z))
    gone = weakref.ref(z)
    del z
    _launch(ex.add_kernel, 4, (x, y, torch.zeros_like(x)))
    gc.collect()
    assert gone() is None


def test_a_pointer_whose_storage_was_swapped_is_another_key() -> None:
    t = torch.zeros(64)
    before = stream_memo._value_key((t, 0))
    t.set_(torch.zeros(64).untyped_storage())
    assert stream_memo._value_key((t, 0)) != before
    assert stream_memo._value_key((t, 0)) == stream_memo._value_key((t, 0))
