"""The audit of the relaunch caches (issue 23), kept as regression tests: each case gives what a
fresh launch gives, on every path, and never crashes.

1. GM storages that start at one address with different sizes, and storages that overlap
   (`untyped_storage()[0:n]`, `torch.frombuffer`, numpy slices through `torch.from_numpy`):
   a relaunch, a taped one, a move of the tape to new tensors (run in a child process: a
   regression would write outside the tensors);
2. a float scalar changed between 0.0 and -0.0;
3. a tiling dataclass whose array field is changed in place;
4. `torch.set_flush_denormal` changed after the lanes' worker started;
5. a relaunch failing with an op error leaves the GM writes of the same launch run fresh;
6. `pl.cast` keeps the sign of -0.0 (FP16 -> FP32 -> FP16), on every engine.
"""
from __future__ import annotations

import array
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch

import pypto_pro
import pypto_pro.language as pl
from pypto_pro.runtime.backends import use_backend
from pypto_pro.sim import settings
from pypto_pro.sim.fast import lanes, scheduler_native, memo, tape
from pypto_pro.sim.fast.copies_native import REC_W, Moves
from pypto_pro.sim.step import Step
from sim_support import OFF_T, ROWS_T, gather_rows

V, MTE2, MTE3 = pl.PipeType.V, pl.PipeType.MTE2, pl.PipeType.MTE3
H16 = pl.TileType([16, 64], pl.DT_FP16)
F32 = pl.TileType([16, 64], pl.DT_FP32)


@pl.jit(arch="a5")
def cast_there_and_back(x: pl.Tensor[[16, 64], pl.DT_FP16], wide: pl.Tensor[[16, 64], pl.DT_FP32],
                        back: pl.Tensor[[16, 64], pl.DT_FP16]):
    """wide = FP32(x), back = FP16(wide) (`pl.cast`'s default rounding, CAST_ROUND)."""
    with pl.section_vector():
        a = pl.make_tile(H16, addr=0x0)
        w = pl.make_tile(F32, addr=0x1000)
        b = pl.make_tile(H16, addr=0x3000)
        pl.load(a, x, [0, 0])
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=V, event_id=0)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=V, event_id=0)
        pl.cast(w, a)
        pl.cast(b, w)
        pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=V, wait_pipe=MTE3, event_id=0)
        pl.store(wide, w, [0, 0])
        pl.store(back, b, [0, 0])


@pytest.mark.parametrize("engine", ["python", "native", "functional"])
def test_cast_keeps_the_sign_of_zero(monkeypatch, functional_backend, engine):
    if engine == "native":
        scheduler_native.library(wait=True)
    monkeypatch.setenv(settings.ENGINE, "python" if engine == "python" else "native")
    x = torch.tensor([-0.0, 0.0, -1.5, 2.0] * 256, dtype=torch.float16).reshape(16, 64)
    wide, back = torch.zeros(16, 64), torch.zeros(16, 64, dtype=torch.float16)
    with use_backend("functional" if engine == "functional" else "sim"):
        cast_there_and_back[None, 1](x, wide, back)
    assert torch.equal(torch.signbit(wide), torch.signbit(x))
    assert torch.equal(back.view(torch.int16), x.view(torch.int16))
    assert torch.equal(wide, x.float())


@pl.jit(arch="a5")
def divide_by(x: pl.Tensor[[16, 64], pl.DT_FP32], z: pl.Tensor[[16, 64], pl.DT_FP32],
              s: pl.DT_FP32):
    """z = x / s."""
    with pl.section_vector():
        t = pl.make_tile(F32, addr=0x0)
        pl.load(t, x, [0, 0])
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=V, event_id=0)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=V, event_id=0)
        pl.div(t, t, s)
        pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=V, wait_pipe=MTE3, event_id=0)
        pl.store(z, t, [0, 0])


@pl.jit(arch="a5")
def print_scalar(x: pl.Tensor[[16, 64], pl.DT_FP32], s: pl.DT_FP32):
    with pl.section_vector():
        pl.printf("s=%f\n", s)


@pytest.mark.parametrize("backend", ["sim", "functional"])
def test_a_float_scalar_is_kept_by_its_bits(stream_engine, functional_backend, backend):
    x = torch.ones(16, 64)
    for s in (0.0, -0.0, 0.0, 0.0, 0.0, -0.0, -0.0, -0.0, 0.0):
        z = torch.zeros(16, 64)
        with use_backend(backend):
            divide_by[None, 1](x, z, s)
        assert torch.equal(z, x / torch.tensor(s))  # (+inf, then -inf: a fresh launch's)
    printed = []
    with use_backend("sim"):
        for s in (0.0, -0.0, 0.0):
            print_scalar[None, 1](x, s)
            printed.append(print_scalar.last_result.printed[0])
    assert printed == ["s=0.000000\n", "s=-0.000000\n", "s=0.000000\n"]


@dataclass
class Rows:
    first: int[2]


@pl.jit(arch="a5")
def copy_rows(x: pl.Tensor[[32, 64], pl.DT_FP32], z: pl.Tensor[[16, 64], pl.DT_FP32], t: Rows):
    """z = x[t.first[0]:][:16]; then the kernel writes t.first[1] (its own copy)."""
    with pl.section_vector():
        tile = pl.make_tile(F32, addr=0x0)
        pl.load(tile, x, [t.first[0], 0])
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.store(z, tile, [0, 0])
        t.first[1] = 7


@pytest.mark.parametrize("array", [list, np.array])
@pytest.mark.parametrize("backend", ["sim", "functional"])
def test_a_struct_array_changed_in_place_is_another_launch(stream_engine, functional_backend,
                                                           backend, array):
    x = torch.arange(32 * 64, dtype=torch.float32).reshape(32, 64)
    t = Rows(array([0, 0]))
    for first in (0, 0, 0, 16, 16, 16, 0):
        t.first[0] = first  # in place: the same list or array object
        z = torch.zeros(16, 64)
        with use_backend(backend):
            copy_rows[None, 2](x, z, t)
        assert torch.equal(z, x[first:first + 16])
        assert list(t.first) == [first, 0]  # the kernel's write stays in the kernel


#: the audit's aliasing shapes, run in a child process (a regression must not take the test run
#: down): per shape and backend, eight launches of z = x + y, three on one set of tensors (the
#: third makes the tape), then two and three on new sets (the kept recording and its tape are
#: moved to them), freed memory refilled in between; each prints its verdict
ALIASING = textwrap.dedent("""
    import gc, sys, torch, numpy as np
    from pypto_pro.examples import load
    from pypto_pro.runtime.backends import register_backend, use_backend
    from pypto_pro.runtime.backends.sim import SimBackend
    register_backend("functional", lambda: SimBackend(functional_only=True))
    add = load("vector_add").add_kernel
    M = N = 256
    E = M * N

    def same_address(seed):  # x: a storage of E elements; z: one of 2E at the same address
        g = torch.Generator().manual_seed(seed)
        base = torch.randn(2 * E, generator=g).half()
        x = torch.empty(0, dtype=torch.float16).set_(base.untyped_storage()[0:2 * E], 0,
                                                     (M, N), (N, 1))
        return base, x, torch.randn(M, N, generator=g).half(), base[E:].view(M, N)

    def frombuffer(seed):
        g = torch.Generator().manual_seed(seed)
        buf = bytearray(torch.randn(2 * E, generator=g).half().numpy().tobytes())
        x = torch.frombuffer(buf, dtype=torch.float16, count=E).view(M, N)
        z = torch.frombuffer(buf, dtype=torch.float16)[E:].view(M, N)
        return buf, x, torch.randn(M, N, generator=g).half(), z

    def overlapping(seed):  # numpy slices: storages [0, 2E) and [E, 3E)
        rng = np.random.default_rng(seed)
        a = rng.standard_normal(3 * E).astype(np.float16)
        x = torch.from_numpy(a[0:2 * E])[:E].view(M, N)
        z = torch.from_numpy(a[E:3 * E])[:E].view(M, N)
        y = torch.from_numpy(rng.standard_normal(E).astype(np.float16)).view(M, N)
        return a, x, y, z

    for make in (same_address, frombuffer, overlapping):
        for backend in ("sim", "functional"):
            verdicts, current = [], None
            for s in (0, 0, 0, 1, 1, 2, 2, 2):
                if s != current:
                    made = None
                    gc.collect()
                    junk = [np.full(4 * E, 7.0, dtype=np.float16) for _ in range(6)]
                    made, current = make(s), s
                _, x, y, z = made
                z.zero_()
                want = (x.float() + y.float()).half()
                with use_backend(backend):
                    add[None, 4](x, y, z)
                verdicts.append("ok" if torch.equal(z, want) else "WRONG")
            print(make.__name__, backend, " ".join(verdicts), flush=True)
""")


def test_aliased_storages_relaunch_as_fresh_launches(tmp_path):
    root = str(Path(pypto_pro.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", ALIASING], env=env, capture_output=True,
                          text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert len(lines) == 6 and all(line.endswith(" ".join(["ok"] * 8)) for line in lines), lines


def test_storages_sharing_bytes_are_not_kept():
    assert not memo.overlapping({(100, 50): 0, (150, 10): 1, (0, 0): 2})
    assert memo.overlapping({(100, 50): 0, (100, 20): 1})  # one address, two sizes
    assert memo.overlapping({(100, 50): 0, (140, 20): 1})


def test_a_move_gives_each_address_to_the_one_storage_holding_it():
    a, b = torch.zeros(64), torch.zeros(64)
    new_a, new_b = torch.zeros(64), torch.zeros(64)
    record = [0, a.data_ptr() + 8, b.data_ptr() + 4]  # a copy: kind, dst, src
    ints = array.array("q", [1, *record, *[0] * (REC_W - len(record))])
    moves = Moves([Step(lambda: None, records=(ints, []), written=[])])  # a compiled call
    storage = lambda t: (t.untyped_storage().data_ptr(), t.untyped_storage().nbytes())  # noqa: E731
    assert not moves.move({storage(a): new_a, (storage(a)[0] + 8, 16): new_b})  # shared bytes
    assert list(moves.addresses) == [a.data_ptr() + 8, b.data_ptr() + 4]
    assert moves.move({storage(a): new_a, storage(b): new_b})
    assert list(moves.addresses) == [new_a.data_ptr() + 8, new_b.data_ptr() + 4]


@pl.jit(arch="a5")
def add_rows(x: pl.Tensor[[64, 64], pl.DT_FP32], y: pl.Tensor[[64, 64], pl.DT_FP32],
             z: pl.Tensor[[64, 64], pl.DT_FP32]):
    """z = x + y, 16 rows per block."""
    with pl.section_vector():
        a = pl.make_tile(F32, addr=0x0)
        b = pl.make_tile(F32, addr=0x1000)
        row = pl.get_block_idx() * 16
        pl.load(a, x, [row, 0])
        pl.load(b, y, [row, 0])
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=V, event_id=0)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=V, event_id=0)
        pl.add(a, a, b)
        pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=V, wait_pipe=MTE3, event_id=0)
        pl.store(z, a, [row, 0])


@pytest.fixture
def flush_denormal():
    """`torch.set_flush_denormal` as the test leaves it is put back."""
    yield
    torch.set_flush_denormal(False)


@pytest.mark.parametrize("backend", ["sim", "functional"])
def test_flush_denormal_set_after_the_worker_started_holds_on_it(
        monkeypatch, stream_engine, functional_backend, flush_denormal, backend):
    monkeypatch.setenv(settings.LANES, "2")
    monkeypatch.setattr(lanes, "_MIN_LANE", 1)  # (two lanes however few steps each gets)
    monkeypatch.setattr(tape.Tape, "together", lambda self: True)
    lanes.worker().start(lambda: None).wait()  # the worker runs, flushing nothing
    if not torch.set_flush_denormal(True):
        pytest.skip("no flush-denormal control on this CPU")
    # denormals, made from their bits (made from floats they are flushed): their sums are
    # flushed to 0 on this thread
    x = torch.full((64, 64), 0x00200000, dtype=torch.int32).view(torch.float32)
    y = torch.full((64, 64), 0x00100000, dtype=torch.int32).view(torch.float32)
    sums = []
    with use_backend(backend):
        for _ in range(6):  # the fourth plays the tape, its second lane on the worker
            z = torch.ones(64, 64)
            add_rows[None, 4](x, y, z)
            sums.append(z)
    # (bits: under DAZ a denormal compares equal to 0.0)
    assert all(torch.equal(z.view(torch.int32), torch.zeros(64, 64, dtype=torch.int32))
               for z in sums)




def _failing(backend: str, offsets: torch.Tensor, x: torch.Tensor) -> tuple[str, torch.Tensor]:
    """(the error, GM `out` after it) of a launch of `gather_rows` on `offsets` that fails."""
    out = torch.full((64, 64), -1.0)
    with use_backend(backend), pytest.raises(pypto_pro.errors.SimulationError) as err:
        gather_rows[None, 8](x, offsets, out)
    return str(err.value), out


@pytest.mark.parametrize("together", [True, False])
@pytest.mark.parametrize("backend", ["sim", "functional"])
def test_a_failing_relaunch_leaves_the_gm_writes_of_a_fresh_launch(
        monkeypatch, stream_engine, functional_backend, backend, together):
    monkeypatch.setenv(settings.LANES, "2")
    monkeypatch.setattr(lanes, "_MIN_LANE", 1)
    monkeypatch.setattr(tape.Tape, "together", lambda self: together)
    x = torch.arange(64 * 64, dtype=torch.float32).reshape(64, 64)
    good = (torch.arange(8, dtype=torch.int32) * 32).flip(0).repeat(64, 1)
    bad = good.clone()
    bad[8 * 2 + 3, 1] = bad[8 * 6 + 5, 4] = 4096  # blocks 2 and 6 fail
    for launches in range(5):  # 0: fresh; 1: a relaunch; 2: it makes the tape; 3, 4: taped
        memo.clear()
        with use_backend(backend):
            for _ in range(launches):
                gather_rows[None, 8](x, good, torch.zeros(64, 64))
        error, out = _failing(backend, bad, x)
        if not launches:
            fresh = error, out
        assert error == fresh[0]
        assert torch.equal(out, fresh[1]), launches
    assert (fresh[1][16:24] == -1).all()  # the failing block wrote nothing


BIG = pl.TileType([64, 64], pl.DT_FP32)


@pl.jit(arch="a5")
def store_while_gathering(x: pl.Tensor[[64, 64], pl.DT_FP32],
                          offsets: pl.Tensor[[8, 8], pl.DT_INT32],
                          out: pl.Tensor[[64, 64], pl.DT_FP32],
                          picked: pl.Tensor[[8, 64], pl.DT_FP32]):
    """Block 0 stores a large tile; block 1's gather starts while that store runs."""
    with pl.section_vector():
        if pl.get_block_idx() == 0:
            t = pl.make_tile(BIG, addr=0x0)
            pl.load(t, x, [0, 0])
            pl.system.sync_src(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
            pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
            pl.store(out, t, [0, 0])
        else:
            src = pl.make_tile(ROWS_T, addr=0x0)
            off = pl.make_tile(OFF_T, addr=0x1000)
            dst = pl.make_tile(ROWS_T, addr=0x2000)
            pl.load(src, x, [0, 0])
            pl.load(off, offsets, [0, 0])
            pl.system.sync_src(set_pipe=MTE2, wait_pipe=V, event_id=0)
            pl.system.sync_dst(set_pipe=MTE2, wait_pipe=V, event_id=0)
            pl.gatherb(dst, src, off)
            pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=0)
            pl.system.sync_dst(set_pipe=V, wait_pipe=MTE3, event_id=0)
            pl.store(picked, dst, [0, 0])


@pytest.mark.parametrize("path", ["python", "eager", "deferred", "relaunch", "taped"])
def test_a_failed_launch_leaves_the_writes_of_every_op_started_before_the_failing_one(
        monkeypatch, stream_engine, path):
    """Block 1's gather fails while block 0's store runs: the store's write lands, on the
    Python engine too (its pending writes land as they would have finished)."""
    x = torch.arange(64 * 64, dtype=torch.float32).reshape(64, 64)
    good = (torch.arange(8, dtype=torch.int32) * 32).repeat(8, 1)
    bad = good.clone()
    bad[3, 2] = 4096
    if path == "python":
        monkeypatch.setenv(settings.ENGINE, "python")
    if path == "deferred":  # (a race found: the replay lands writes at the finishes)
        monkeypatch.setattr(scheduler_native, "first_race", lambda *args: (0, 1))
    with use_backend("sim"):
        for _ in range({"relaunch": 1, "taped": 3}.get(path, 0)):
            store_while_gathering[None, 2](x, good, torch.zeros(64, 64), torch.zeros(8, 64))
        out, picked = torch.full((64, 64), -1.0), torch.full((8, 64), -1.0)
        with pytest.raises(pypto_pro.errors.SimulationError, match="byte offset falls outside"):
            store_while_gathering[None, 2](x, bad, out, picked)
    assert torch.equal(out, x) and (picked == -1).all()
