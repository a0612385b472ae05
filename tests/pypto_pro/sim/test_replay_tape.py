"""The eager replay's tape (`sim/fast/tape.py`, `ops.STEPS`): a kept recording's relaunch makes it,
the later ones run its ops' steps (views and plans bound) instead of dispatching each op, with
the values and trace rows of the Python engine for new data in the same tensors (NaN bits of
the FP16 fallback included); relaunches on new tensors (the memo rebinds) move the tape to
them; an epoch change makes the next replay make a new tape; an op failing in a taped relaunch, or in
the relaunch making the tape, raises the Python engine's error."""
from __future__ import annotations

import sys
import weakref
from pathlib import Path

import pytest
import torch

import pypto_pro.language as pl
from pypto_pro.errors import SimulationError
from pypto_pro.examples import load
from pypto_pro.runtime.backends import use_backend
from pypto_pro.sim.fast import replay
from pypto_pro.ir.dtype import DataType
from pypto_pro.ir.types import MemorySpace
from pypto_pro.sim.model.memory import CoreMemory, TileGeometry, TileRef
from pypto_pro.sim import settings
from pypto_pro.soc import soc

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
import dsl_kernels as dk  # noqa: E402


pytestmark = pytest.mark.usefixtures("stream_engine")  # (conftest)


def _launch(monkeypatch, mode: str, kernel, block_dim: int, args: tuple) -> tuple[list, int]:
    """(the trace rows, whether the replay ran a tape) of one launch on engine `mode`."""
    before = replay.PATHS["tape"]
    with monkeypatch.context() as m, use_backend("sim"):
        m.setenv(settings.ENGINE, mode)
        kernel[None, block_dim](*args)
    return list(kernel.last_trace._log.rows), replay.PATHS["tape"] - before


def _taping(monkeypatch, kernel, block_dim: int, args: tuple) -> tuple[int, int]:
    """(whether the replay made a tape, whether it ran one) of a launch on the stream engine."""
    before = replay.PATHS["taping"]
    played = _launch(monkeypatch, "native", kernel, block_dim, args)[1]
    return replay.PATHS["taping"] - before, played


def _refill(args: tuple, new: tuple) -> None:
    """`new`'s values into the tensors of `args` (the same tensors: the memo hits)."""
    for a, b in zip(args, new):
        if isinstance(a, torch.Tensor):
            a.copy_(b)


def _example(name: str, kernel: str, **shape):
    ex = load(name)
    return getattr(ex, kernel), lambda seed: ex.make_inputs(**shape, seed=seed), ex.block_dim


def _bench(kernel, make, block_dim: int):
    return kernel, make, lambda *args: block_dim


CASES = {
    "add": _example("vector_add", "add_kernel", m=256, n=384),
    "softmax": _example("softmax", "softmax_kernel", rows=100, cols=300),
    "layernorm": _example("layernorm", "layernorm_kernel", rows=50, cols=200),
    "matmul": _example("matmul", "matmul_kernel", m=384, n=256),
    "mix": _example("matmul_softmax", "matmul_softmax_kernel", n=256),
    "add_fp32": _bench(dk.add_fp32_kernel, lambda s: (
        dk.rand((512, 512), torch.float32, s), dk.rand((512, 512), torch.float32, s + 7),
        torch.zeros(512, 512)), 8),
    "softmax_1k": _bench(dk.softmax_1k_kernel, lambda s: (
        dk.rand((256, 1024), torch.float32, s, 3.0), torch.zeros(256, 1024)), 8),
    "layernorm_1k": _bench(dk.layernorm_1k_kernel, lambda s: (
        dk.rand((128, 1024), torch.float32, s, 3.0), dk.rand((1, 1024), torch.float32, s + 2),
        dk.rand((1, 1024), torch.float32, s + 3), torch.zeros(128, 1024), 1e-5), 8),
    "matmul_k": _bench(dk.matmul_k_kernel, lambda s: (
        dk.rand((256, 512), torch.float16, s, .25), dk.rand((512, 384), torch.float16, s + 1, .25),
        torch.zeros(256, 384)), 4),
    "mix_bench": _bench(dk.matmul_softmax_kernel, lambda s: (
        dk.rand((128, 512), torch.float16, s, .25), dk.rand((512, 1024), torch.float16, s + 1, .25),
        torch.zeros(128, 1024), torch.zeros(128, 1024)), 2),
}


def _same(a: object, b: object) -> bool:
    if isinstance(a, torch.Tensor):  # bit for bit (NaNs included)
        return a.dtype == b.dtype and torch.equal(a.contiguous().view(torch.uint8),
                                                  b.contiguous().view(torch.uint8))
    return a == b


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_taped_relaunch_with_new_data_equals_the_python_engine(monkeypatch, case):
    kernel, make, block_dim = CASES[case]
    args = make(0)
    bd = block_dim(*args)
    _, played = _launch(monkeypatch, "native", kernel, bd, args)  # records: no tape yet
    assert played == 0
    taped = {}
    for seed in (1, 2, 3):  # new values in the same tensors: the relaunch makes the tape, the
        _refill(args, make(seed))  # later ones run it
        rows, played = _launch(monkeypatch, "native", kernel, bd, args)
        assert played == (seed > 1)
        taped[seed] = rows, [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    for seed, (rows, values) in taped.items():  # (a launch of other tensors ends the memo)
        expected = make(seed)
        rows_python, _ = _launch(monkeypatch, "python", kernel, bd, expected)
        assert rows == rows_python
        assert all(_same(a, b) for a, b in zip(values, expected))


def test_relaunches_on_new_tensors_make_the_tape_and_move_it(monkeypatch):
    kernel, make, block_dim = CASES["mix"]
    launches = [make(seed) for seed in range(3)]
    bd = block_dim(*launches[0])
    # new tensors of one geometry: the memo rebinds the recording; the second replay makes the
    # tape on its tensors, the next ones move it to theirs (or keep it: the same tensors)
    made = [_taping(monkeypatch, kernel, bd, args) for args in launches]
    made += [_taping(monkeypatch, kernel, bd, launches[-1]) for _ in range(2)]
    assert made == [(0, 0), (1, 0), (0, 1), (0, 1), (0, 1)]
    for seed, args in enumerate(launches):
        expected = make(seed)
        _launch(monkeypatch, "python", kernel, bd, expected)
        assert all(_same(a, b) for a, b in zip(args, expected))


def test_the_fp16_nan_fallback_runs_in_a_taped_relaunch(monkeypatch):
    kernel, make, block_dim = CASES["add"]
    args = make(0)
    bd = block_dim(*args)
    for _ in range(2):  # a launch and the relaunch that makes the tape
        _launch(monkeypatch, "native", kernel, bd, args)
    x, y, _ = make(1)
    x[::7, ::5], y[::7, ::5] = float("inf"), float("-inf")  # inf - inf: NaN (the float32 path)
    _refill(args, (x, y))
    _, played = _launch(monkeypatch, "native", kernel, bd, args)
    expected = (x.clone(), y.clone(), torch.zeros_like(args[2]))
    _launch(monkeypatch, "python", kernel, bd, expected)
    assert played == 1 and args[2].isnan().any()
    assert _same(args[2], expected[2])


def test_a_tape_is_made_again_after_an_epoch_change(monkeypatch):
    kernel, make, block_dim = CASES["matmul_k"]
    args = make(0)
    bd = block_dim(*args)
    assert [_launch(monkeypatch, "native", kernel, bd, args)[1] for _ in range(3)] == [0, 0, 1]
    moved = TileRef(CoreMemory(soc(), "aiv"), TileGeometry(8, 8, DataType.FP32, MemorySpace.Vec))
    moved.valid_rows = 1  # any made ref's change: every kept view may be stale
    _refill(args, make(3))
    assert _launch(monkeypatch, "native", kernel, bd, args)[1] == 0  # the impls, a new tape
    _refill(args, make(4))
    assert _launch(monkeypatch, "native", kernel, bd, args)[1] == 1
    expected = make(4)
    _launch(monkeypatch, "python", kernel, bd, expected)
    assert _same(args[2], expected[2])


VEC_T = pl.TileType([8, 64], pl.DT_FP32)
OFF_T = pl.TileType([8, 8], pl.DT_INT32)
V, MTE2, MTE3 = pl.PipeType.V, pl.PipeType.MTE2, pl.PipeType.MTE3


@pl.jit(arch="a5")
def gather_blocks(x: pl.Tensor[[8, 64], pl.DT_FP32], offsets: pl.Tensor[[8, 8], pl.DT_INT32],
                  out: pl.Tensor[[8, 64], pl.DT_FP32]):
    with pl.section_vector():
        src = pl.make_tile(VEC_T, addr=0x0)
        off = pl.make_tile(OFF_T, addr=0x1000)
        dst = pl.make_tile(VEC_T, addr=0x2000)
        pl.load(src, x, [0, 0])
        pl.load(off, offsets, [0, 0])
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=V, event_id=0)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=V, event_id=0)
        pl.gatherb(dst, src, off)  # 32-byte blocks at byte offsets: a value check
        pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=V, wait_pipe=MTE3, event_id=0)
        pl.store(out, dst, [0, 0])


@pytest.mark.parametrize("taped", [True, False], ids=["taped", "making the tape"])
def test_an_op_failing_in_a_relaunch_raises_the_python_engines_error(monkeypatch, taped):
    x = torch.arange(8 * 64, dtype=torch.float32).reshape(8, 64)
    offsets = (torch.arange(8 * 8, dtype=torch.int32).reshape(8, 8) * 32).flip(1)
    out = torch.zeros(8, 64)
    args = (x, offsets, out)
    launches = 3 if taped else 1  # (the second makes the tape, the third runs it)
    assert [_launch(monkeypatch, "native", gather_blocks, 1, args)[1]
            for _ in range(launches)] == [0, 0, 1][:launches]
    assert torch.equal(out.reshape(-1, 8), x.reshape(-1, 8)[(offsets // 32).reshape(-1)])
    offsets[3, 2] = 4096  # past the 2 KiB source tile
    errors = {}
    for mode in ("native", "python"):
        before, making = replay.PATHS["tape"], replay.PATHS["taping"]
        with monkeypatch.context() as m, use_backend("sim"), \
                pytest.raises(SimulationError) as err:
            m.setenv(settings.ENGINE, mode)
            gather_blocks[None, 1](*args)
        assert replay.PATHS["tape"] == before + (mode == "native" and taped)
        assert replay.PATHS["taping"] == making  # (a replay that fails makes none)
        errors[mode] = err.value
    assert "byte offset falls outside" in str(errors["native"])
    assert str(errors["native"]) == str(errors["python"])
    assert errors["native"].span == errors["python"].span


@pytest.mark.parametrize("case", ["add", "layernorm_1k", "matmul", "mix_bench"])
def test_a_tape_moves_to_new_tensors_of_its_geometry(monkeypatch, case):
    """A relaunch on new tensors rebinds the recording and moves its tape's compiled copies to
    the new storages: it runs the tape, with the Python engine's values and trace rows, and
    lets the old tensors go."""
    kernel, make, block_dim = CASES[case]
    first = make(0)
    bd = block_dim(*first)
    assert [_taping(monkeypatch, kernel, bd, first) for _ in range(2)] == [(0, 0), (1, 0)]
    gone = [weakref.ref(a) for a in first if isinstance(a, torch.Tensor)]
    del first
    runs = {}
    for seed in (1, 2):
        args = make(seed)
        rows, played = _launch(monkeypatch, "native", kernel, bd, args)
        assert played == 1
        runs[seed] = rows, args
    assert all(ref() is None for ref in gone)
    for seed, (rows, args) in runs.items():
        expected = make(seed)
        assert rows == _launch(monkeypatch, "python", kernel, bd, expected)[0]
        assert all(_same(a, b) for a, b in zip(args, expected))


def test_a_tape_moves_to_tensors_that_swap_places(monkeypatch):
    kernel, make, block_dim = CASES["add"]
    x, y, z = make(0)
    for _ in range(2):
        _taping(monkeypatch, kernel, block_dim(x, y, z), (x, y, z))
    z2 = torch.zeros_like(z)
    assert _launch(monkeypatch, "native", kernel, block_dim(x, y, z), (y, x, z2))[1] == 1
    assert torch.equal(z2, y + x) and not torch.equal(z2, x + x)


def test_a_tape_with_gm_steps_in_torch_is_not_moved(monkeypatch):
    monkeypatch.setenv(settings.COPIES, "python")  # (loads and stores stay torch's)
    kernel, make, block_dim = CASES["add"]
    args = make(0)
    bd = block_dim(*args)
    assert [_taping(monkeypatch, kernel, bd, args) for _ in range(2)][-1] == (1, 0)
    fresh = make(1)
    assert _launch(monkeypatch, "native", kernel, bd, fresh)[1] == 0
    expected = make(1)
    _launch(monkeypatch, "python", kernel, bd, expected)
    assert all(_same(a, b) for a, b in zip(fresh, expected))
