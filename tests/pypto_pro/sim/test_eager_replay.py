"""The stream engine's eager replay (`sim/fast/replay.py`, `footprints.py`, `scheduler.cpp`
`first_race`): a launch whose schedule never starts an op on memory a running op writes runs
its ops at their starts; a racy one keeps the deferred replay and computes what the Python
engine computes. The footprint overlap test is exact for GM windows of one tensor: tiles whose
byte ranges interleave but share no byte are not a race."""
from __future__ import annotations

import random

import numpy as np
import pytest
import torch

import pypto_pro.language as pl
from pypto_pro.errors import SimulationError
from pypto_pro.examples import load
from pypto_pro.ir.dtype import DataType
from pypto_pro.ir.types import MemorySpace, TileLayout
from pypto_pro.runtime.backends import use_backend
from pypto_pro.sim.reference import engine
from pypto_pro.sim.fast import replay, scheduler_native
from pypto_pro.sim.fast.footprints import FP_W, _block_rect
from pypto_pro.sim.model.memory import TileGeometry, TileRef
from pypto_pro.sim import settings

V, MTE2, MTE3 = pl.PipeType.V, pl.PipeType.MTE2, pl.PipeType.MTE3
T64 = pl.TileType([64, 64], pl.DT_FP32)
T128_FP32 = pl.TileType([128, 128], pl.DT_FP32)
T128 = pl.TileType([128, 128], pl.DT_FP16)


pytestmark = pytest.mark.usefixtures("stream_engine")  # (conftest)


def _run(monkeypatch, mode: str, kernel, block_dim: int, args: tuple) -> tuple[list, str]:
    """(the trace rows, the replay that ran: "eager", "deferred" or "python")."""
    before = dict(replay.PATHS)
    with monkeypatch.context() as m, use_backend("sim"):
        m.setenv(settings.ENGINE, mode)
        kernel[None, block_dim](*args)
    ran = [p for p in ("eager", "deferred") if replay.PATHS[p] != before.get(p, 0)]
    return list(kernel.last_trace._log.rows), ran[0] if ran else "python"


# ---------------------------------------------------------------- which replay runs


def test_a_race_free_kernel_replays_eagerly(monkeypatch) -> None:
    ex = load("vector_add")
    x, y, z = ex.make_inputs(512, 512, seed=0)
    rows, ran = _run(monkeypatch, "native", ex.add_kernel, 4, (x, y, z))
    assert ran == "eager"
    assert torch.equal(z, x + y)
    z_python = torch.zeros_like(z)
    rows_python, _ = _run(monkeypatch, "python", ex.add_kernel, 4, (x, y, z_python))
    assert rows == rows_python and torch.equal(z, z_python)


@pl.jit(arch="a5", auto_mutex=False)
def add_before_its_load_lands(x: pl.Tensor[[64, 64], pl.DT_FP32],
                              out: pl.Tensor[[64, 64], pl.DT_FP32]):
    with pl.section_vector():
        a = pl.make_tile(T64, addr=0x0)
        b = pl.make_tile(T64, addr=0x4000)
        pl.load(a, x, [0, 0])
        pl.add(b, a, a)  # no MTE2 -> V flag: V reads `a` while the load still writes it
        pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=V, wait_pipe=MTE3, event_id=0)
        pl.store(out, b, [0, 0])


def test_a_missing_flag_between_two_pipes_keeps_the_deferred_replay(monkeypatch) -> None:
    x = torch.arange(64 * 64, dtype=torch.float32).reshape(64, 64)
    out_native, out_python = torch.zeros(64, 64), torch.zeros(64, 64)
    rows, ran = _run(monkeypatch, "native", add_before_its_load_lands, 1, (x, out_native))
    assert ran == "deferred"
    rows_python, _ = _run(monkeypatch, "python", add_before_its_load_lands, 1, (x, out_python))
    assert rows == rows_python
    assert torch.equal(out_native, out_python)
    assert not torch.equal(out_native, 2 * x)  # the add read `a` before the load landed


@pl.jit(arch="a5", auto_mutex=False)
def column_tiles(x: pl.Tensor[[128, 1024], pl.DT_FP16], z: pl.Tensor[[128, 1024], pl.DT_FP16]):
    with pl.section_vector():
        t = pl.make_tile(T128, addr=0x0)
        b = pl.get_block_idx()
        pl.load(t, x, [0, b * 128])
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.store(z, t, [0, b * 128])  # the cores' stores interleave row by row in z


def test_adjacent_tile_stores_of_different_cores_are_not_a_race(monkeypatch) -> None:
    x = torch.randn(128, 1024).half()
    z = torch.zeros_like(x)
    rows, ran = _run(monkeypatch, "native", column_tiles, 8, (x, z))
    assert ran == "eager"
    assert torch.equal(z, x)
    stores = sorted((r[11], r[12]) for r in rows if r[7] == "TSTORE")
    assert stores[1][0] < stores[0][1]  # two stores were in flight together


@pl.jit(arch="a5", auto_mutex=False)
def load_races_store_and_add(x: pl.Tensor[[64, 64], pl.DT_FP32],
                             g: pl.Tensor[[128, 128], pl.DT_FP32],
                             out: pl.Tensor[[128, 128], pl.DT_FP32]):
    with pl.section_vector():
        a = pl.make_tile(T64, addr=0x0)
        b = pl.make_tile(T128_FP32, addr=0x10000)
        c = pl.make_tile(T128_FP32, addr=0x20000)
        pl.load(a, x, [0, 0])
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.load(b, g, [0, 0])  # MTE2 reads g while ...
        pl.store(g, a, [0, 0])  # ... MTE3 overwrites a corner of it
        pl.system.sync_src(set_pipe=MTE3, wait_pipe=V, event_id=3)
        pl.system.sync_dst(set_pipe=MTE3, wait_pipe=V, event_id=3)
        pl.add(c, b, b)  # V reads b while its load still runs: a race on the tile
        pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=1)
        pl.system.sync_dst(set_pipe=V, wait_pipe=MTE3, event_id=1)
        pl.store(out, c, [0, 0])


def test_the_deferred_replay_keeps_a_racing_load_from_seeing_a_store(monkeypatch) -> None:
    snapshots: list = []
    snapshot = engine.Pipe.snapshot
    monkeypatch.setattr(engine.Pipe, "snapshot", lambda pipe: (snapshots.append(pipe.kind),
                                                               snapshot(pipe)))
    results = {}
    for mode in ("python", "native"):
        x, g = torch.full((64, 64), 1.0), torch.full((128, 128), 2.0)
        out = torch.zeros(128, 128)
        rows, ran = _run(monkeypatch, mode, load_races_store_and_add, 1, (x, g, out))
        results[mode] = rows, out, g, list(snapshots)
        snapshots.clear()
        assert ran == ("deferred" if mode == "native" else "python")
    rows, out, g, taken = results["native"]
    assert taken == results["python"][3] == [MTE2]  # the load copied g as the store landed
    assert rows == results["python"][0]
    assert torch.equal(out, results["python"][1]) and torch.equal(g, results["python"][2])


@pl.jit(arch="a5", auto_mutex=False)
def store_of_another_size(x: pl.Tensor[[64, 64], pl.DT_FP32],
                          z: pl.Tensor[[64, 64], pl.DT_FP16]):
    with pl.section_vector():
        t = pl.make_tile(T64, addr=0x0)
        pl.load(t, x, [0, 0])
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.store(z, t, [0, 0])  # BUG: FP32 elements into an FP16 tensor


def test_an_op_failing_in_the_eager_replay_raises_the_python_engines_error(monkeypatch
                                                                            ) -> None:
    errors = {}
    for mode in ("python", "native"):
        before = replay.PATHS["eager"]
        with monkeypatch.context() as m, use_backend("sim"), \
                pytest.raises(SimulationError) as err:
            m.setenv(settings.ENGINE, mode)
            store_of_another_size[None, 1](torch.zeros(64, 64), torch.zeros(64, 64).half())
        errors[mode] = err.value
        assert replay.PATHS["eager"] == before + (mode == "native")
    assert str(errors["native"]) == str(errors["python"])
    assert errors["native"].span == errors["python"].span


def test_two_vector_cores_inserting_halves_of_one_cube_tile_are_not_a_race(monkeypatch
                                                                           ) -> None:
    ex = load("flash_attention")  # each AIV inserts its 64 rows of P into the AIC's L1 tile
    args, expected = (ex.make_inputs(sq=256, skv=256, seed=0) for _ in range(2))
    bd = ex.block_dim(*args)
    rows, ran = _run(monkeypatch, "native", ex.flash_attention_kernel, bd, args)
    assert ran == "eager"
    rows_python, _ = _run(monkeypatch, "python", ex.flash_attention_kernel, bd, expected)
    assert rows == rows_python
    for a, b in zip(args, expected):
        assert torch.equal(a, b) if isinstance(a, torch.Tensor) else a == b


# ---------------------------------------------------------------- the overlap test


def test_an_insert_writes_only_its_block_of_a_fractal_tile() -> None:
    nz = TileGeometry(128, 128, DataType.FP16, MemorySpace.Mat, TileLayout.NZ, 512, 0x28000)
    tile = TileRef(None, nz)
    # NZ: 16x16 fractals of 512 B, 8 per 16-column strip (4096 B); 64 rows = 4 of them
    assert _block_rect(tile, 0, 0, 64, 128) == (0x28000, 8, 4096, 2048)
    assert _block_rect(tile, 64, 0, 64, 128) == (0x28000 + 2048, 8, 4096, 2048)
    assert _block_rect(tile, 16, 16, 3, 5) == (0x28000 + 4096 + 512, 3, 32, 10)
    assert _block_rect(tile, 120, 0, 16, 16) is None  # past the tile: the op reports it


def _bytes(fp: tuple[int, ...]) -> set[tuple[int, int]]:
    """(space, byte) of every byte a footprint covers."""
    _, space, first, rows, stride, length = fp
    return {(space, first + i * stride + k) for i in range(rows) for k in range(length)}


def _fp(first: int, rows: int, stride: int, length: int, space: int = 0) -> tuple[int, ...]:
    return (1, space, first, rows, stride, length)


@pytest.mark.parametrize("a, b, expected", [
    # tiles [0, 0] and [0, 1] of a [*, 256] fp16 tensor: interleaved rows, no shared byte
    (_fp(0, 128, 512, 256), _fp(256, 128, 512, 256), False),
    (_fp(0, 128, 512, 256), _fp(254, 128, 512, 256), True),  # one element in common per row
    (_fp(0, 128, 512, 256), _fp(127 * 512 + 255, 1, 0, 1), True),  # the last byte
    (_fp(0, 128, 512, 256), _fp(127 * 512 + 256, 1, 0, 100), False),  # just past it
    (_fp(0, 128, 512, 256), _fp(256, 64, 1024, 256), False),  # different strides, no byte
    (_fp(0, 128, 512, 256), _fp(1200, 64, 1024, 256), True),  # different strides, rows meet
    (_fp(0, 128, 512, 256), _fp(0, 128, 512, 256, space=1), False),  # another memory
])
def test_footprints_overlap_exactly(stream_engine, a, b, expected) -> None:
    assert bool(_bytes(a) & _bytes(b)) == expected
    assert scheduler_native.overlaps(stream_engine, a, b) == expected
    assert scheduler_native.overlaps(stream_engine, b, a) == expected


def test_the_overlap_test_agrees_with_the_bytes(stream_engine) -> None:
    rng = random.Random(7)
    for _ in range(2000):
        a, b = (_fp(rng.randrange(64), rng.randrange(1, 6), rng.choice((0, 4, 8, 12, 16, 32)),
                    rng.randrange(1, 12)) for _ in range(2))
        assert scheduler_native.overlaps(stream_engine, a, b) == bool(_bytes(a) & _bytes(b)), (a, b)


def test_the_first_race_names_the_running_op_and_the_starting_one(stream_engine) -> None:
    # op 0 writes bytes [0, 64), op 1 reads [32, 40), op 2 reads [64, 80)
    table = np.array([*_fp(0, 1, 0, 64), 0, 0, 32, 1, 0, 8, 0, 0, 64, 1, 0, 16],
                     dtype=np.int64)
    index = np.array([0, 0, 1, FP_W, 2, 2 * FP_W], dtype=np.int64)

    def race(*events: int) -> tuple[int, int] | None:
        return scheduler_native.first_race(stream_engine, np.array(events, dtype=np.int64), table,
                                           index, 3)

    assert race(0, ~0, 1, ~1, 2, ~2) is None  # op 1 starts after op 0 finished
    assert race(0, 2, ~2, ~0, 1, ~1) is None  # op 2 runs with op 0 on other bytes
    assert race(0, 2, 1, ~0, ~1, ~2) == (0, 1)
    assert race(1, 0, ~0, ~1) is None  # op 1 read at its start, before op 0 wrote
