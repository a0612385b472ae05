"""The functional-only executor (`sim/reference/functional.py`): every example and benchmark kernel gives
bit-identical values to the timing engine; cross-core hand-offs (INTER_BLOCK / INTER_SUBBLOCK
barriers, sync_all, intra-block AIC<->AIV events) order the cores' data as on the engine even
though each core runs until it blocks; a pipe whose head waits for a set issued later keeps its
order; blocks beyond the cores run in waves; and bad kernels (deadlocks, a second set_flag, an
unlock without a lock, a lock never released) raise the engine's typed errors with the same
spans and stuck units."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import torch

import pypto_pro.language as pl
from pypto_pro.errors import DeadlockError, NotSupported, PyptoError, SimulationError
from pypto_pro.examples import SMALL_CASES, load
from pypto_pro.runtime import backends
from pypto_pro.runtime.backends.sim import SimBackend
from pypto_pro.sim.reference.functional import FunctionalCore
from pypto_pro.sim.launch import Launch

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
import dsl_kernels as dk  # noqa: E402

MTE2, MTE3, V, FIX = pl.PipeType.MTE2, pl.PipeType.MTE3, pl.PipeType.V, pl.PipeType.FIX
INTER_BLOCK, INTER_SUBBLOCK = pl.CrossCoreSyncMode.INTER_BLOCK, pl.CrossCoreSyncMode.INTER_SUBBLOCK
T16 = pl.TileType([16, 16], pl.DT_FP32)
BLOCK = pl.Tensor[[16, 16], pl.DT_FP32]
ROWS = pl.Tensor[[pl.DYNAMIC, 16], pl.DT_FP32]
MODES = ("sim", "functional")


pytestmark = pytest.mark.usefixtures("functional_backend")  # (conftest)


def _launch(mode: str, kernel, block_dim: int, args: tuple) -> tuple:
    """Launch on fresh copies of `args`; the tensors after the launch."""
    args = tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args)
    with backends.use_backend(mode):
        kernel[None, block_dim](*args)
    return args


def _same_values(kernel, block_dim: int, args: tuple) -> tuple:
    timed, functional = (_launch(m, kernel, block_dim, args) for m in MODES)
    for i, (t, f) in enumerate(zip(timed, functional)):
        if isinstance(t, torch.Tensor):
            assert torch.equal(t, f), f"argument {i} differs between timing and functional"
    return functional


def _failure(mode: str, kernel, block_dim: int, args: tuple) -> PyptoError:
    with pytest.raises(PyptoError) as info:
        _launch(mode, kernel, block_dim, args)
    return info.value


def _same_failure(kernel, block_dim: int, args: tuple) -> PyptoError:
    """Both modes fail alike: error class, span and message (cycle numbers aside)."""
    timed, functional = (_failure(m, kernel, block_dim, args) for m in MODES)
    assert type(timed) is type(functional)
    assert timed.span == functional.span

    def text(err: PyptoError) -> str:
        return re.sub(r"cycle \d+", "cycle N", err.message)

    assert text(timed) == text(functional)
    return functional


# ---------------------------------------------------------------- every example and benchmark


@pytest.mark.parametrize("name,kernel,shape", SMALL_CASES,
                         ids=[f"{k}-{'-'.join(map(str, s.values())) or 'default'}"
                              for _, k, s in SMALL_CASES])
def test_examples_give_the_timing_values(name, kernel, shape):
    m = load(name)
    args = m.make_inputs(**shape, seed=5)
    try:
        _same_values(m.KERNELS[kernel], m.block_dim(*args), tuple(args))
    except NotSupported as e:
        pytest.skip(f"simulator: {e.message}")


def _rand(*shape: int, dtype=torch.float32, seed: int = 0) -> torch.Tensor:
    return dk.rand(shape, dtype, seed, 0.25 if dtype is torch.float16 else 1.0)


BENCH_CASES = {
    "add_fp32": (dk.add_fp32_kernel, 4, lambda: (_rand(256, 384), _rand(256, 384, seed=1),
                                                 torch.zeros(256, 384))),
    "softmax_1k": (dk.softmax_1k_kernel, 3, lambda: (_rand(80, dk.COLS), torch.zeros(80, dk.COLS))),
    "layernorm_1k": (dk.layernorm_1k_kernel, 3, lambda: (
        _rand(48, dk.COLS), _rand(1, dk.COLS, seed=2), _rand(1, dk.COLS, seed=3),
        torch.zeros(48, dk.COLS), 1e-5)),
    "matmul_k": (dk.matmul_k_kernel, 3, lambda: (
        _rand(256, 384, dtype=torch.float16), _rand(384, 256, dtype=torch.float16, seed=1),
        torch.zeros(256, 256))),
    "matmul_softmax": (dk.matmul_softmax_kernel, 2, lambda: (
        _rand(192, dk.FK, dtype=torch.float16), _rand(dk.FK, dk.COLS, dtype=torch.float16, seed=1),
        torch.zeros(192, dk.COLS), torch.zeros(192, dk.COLS))),
}


@pytest.mark.parametrize("key", list(BENCH_CASES))
def test_benchmark_kernels_give_the_timing_values(key):
    kernel, block_dim, make = BENCH_CASES[key]
    _same_values(kernel, block_dim, make())


def test_blocks_beyond_the_cores_run_in_waves():
    tiles = SimBackend().soc.aiv_cores + 6  # one tile per block: 6 blocks in a second wave
    x, y = _rand(128, 128 * tiles), _rand(128, 128 * tiles, seed=1)
    _, _, z = _same_values(dk.add_fp32_kernel, tiles, (x, y, torch.zeros_like(x)))
    assert torch.equal(z, x + y)


def test_the_functional_launch_runs_on_the_functional_executor(monkeypatch):
    cores = []
    run = Launch.run

    def spy(self):
        blocks = run(self)
        cores.extend(c for b in blocks for c in b.cores)
        return blocks

    monkeypatch.setattr(Launch, "run", spy)
    kernel, block_dim, make = BENCH_CASES["add_fp32"]
    _launch("functional", kernel, block_dim, make())
    assert kernel.last_trace is None  # no timeline in this mode
    assert len(cores) == block_dim and all(type(c) is FunctionalCore for c in cores)


# ---------------------------------------------------------------- cross-core hand-offs


def _last_block_hands_off(barrier: str):
    """The last block writes the workspace, every block reads it after the barrier: each core
    runs until it blocks, so the readers must really wait for the last block."""
    sync_all = barrier == "sync_all"  # else INTER_BLOCK cross-core sync (needs a mix kernel)

    @pl.jit(arch="a5", auto_mutex=False, name=f"handoff_{barrier}")
    def handoff(x: BLOCK, ws: BLOCK, z: ROWS):
        if not sync_all:
            with pl.section_cube():
                pl.system.bar_all()
        with pl.section_vector():
            a = pl.make_tile(T16, addr=0x0)
            b = pl.get_block_idx()
            if b == pl.get_block_num() - 1:
                pl.load(a, x, [0, 0])
                pl.system.sync_src(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
                pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
                pl.store(ws, a, [0, 0])
            if sync_all:
                pl.system.sync_all(core_type=pl.SyncCoreType.AIV_ONLY)
                pl.load(a, ws, [0, 0])
            else:
                pl.system.set_cross_core(pipe=MTE3, event_id=1, sync_mode=INTER_BLOCK)
                pl.system.wait_cross_core(pipe=MTE2, event_id=1, sync_mode=INTER_BLOCK)
                pl.load(a, ws, [0, 0])
            pl.system.sync_src(set_pipe=MTE2, wait_pipe=MTE3, event_id=1)
            pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=1)
            pl.store(z, a, [b * 16, 0])

    return handoff


@pytest.mark.parametrize("barrier,block_dim,aivs", [("sync_all", 4, 4), ("cross_core", 2, 4)])
def test_a_barrier_orders_a_gm_handoff_from_the_last_block(barrier, block_dim, aivs):
    x = torch.randn(16, 16)
    args = (x, torch.zeros(16, 16), torch.zeros(16 * aivs, 16))
    _, _, z = _same_values(_last_block_hands_off(barrier), block_dim, args)
    assert torch.equal(z, x.repeat(aivs, 1))


@pl.jit(arch="a5", auto_mutex=False)
def subblock_handoff(x: BLOCK, ws: BLOCK, z: pl.Tensor[[32, 16], pl.DT_FP32]):
    with pl.section_cube():
        pl.system.bar_all()
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        s = pl.get_subblock_idx()
        if s == 1:  # the second AIV produces
            pl.load(a, x, [0, 0])
            pl.system.sync_src(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
            pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
            pl.store(ws, a, [0, 0])
        pl.system.set_cross_core(pipe=MTE3, event_id=2, sync_mode=INTER_SUBBLOCK)
        pl.system.wait_cross_core(pipe=MTE2, event_id=2, sync_mode=INTER_SUBBLOCK)
        pl.load(a, ws, [0, 0])
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=MTE3, event_id=1)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=1)
        pl.store(z, a, [s * 16, 0])


def test_an_inter_subblock_barrier_orders_the_two_aivs():
    x = torch.randn(16, 16)
    _, _, z = _same_values(subblock_handoff, 1, (x, torch.zeros(16, 16), torch.zeros(32, 16)))
    assert torch.equal(z, x.repeat(2, 1))


DEPTH = 256  # the SoC's pipe_queue_depth: the AIV issues more V ops than its queue holds
ROW = pl.TileType([1, 16], pl.DT_FP32)


@pl.jit(arch="a5", auto_mutex=False)
def ping_pong(x: pl.Tensor[[2, 16], pl.DT_FP32], z: pl.Tensor[[4, 16], pl.DT_FP32]):
    """Each AIV tells the cube it started, then its V pipe waits for the cube's answer with
    more than a queue of V instructions issued behind that wait: the scalar unit must stop on
    the full queue and the other cores must run until the cube answers."""
    with pl.section_cube():
        pl.system.wait_cross_core(pipe=FIX, event_id=3)  # both AIVs started
        pl.system.set_cross_core(pipe=FIX, event_id=4)
    with pl.section_vector():
        s = pl.get_subblock_idx()
        a = pl.make_tile(ROW, addr=0x0)
        pl.load(a, x, [s, 0])
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=V, event_id=0)
        pl.system.set_cross_core(pipe=MTE2, event_id=3)
        pl.system.wait_cross_core(pipe=V, event_id=4)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=V, event_id=0)
        for _ in pl.range(DEPTH + 8):
            pl.add(a, a, 1.0)
        pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=V, wait_pipe=MTE3, event_id=0)
        pl.store(z, a, [2 * s, 0])


def test_a_cross_core_wait_with_a_full_queue_behind_it_yields_to_the_other_cores(monkeypatch):
    full = []
    original = FunctionalCore._issue_when_room
    monkeypatch.setattr(FunctionalCore, "_issue_when_room",
                        lambda self, *a: full.append(self.label) or original(self, *a))
    x = torch.randn(2, 16)
    _, z = _same_values(ping_pong, 1, (x, torch.zeros(4, 16)))
    expected = x.clone()
    for _ in range(DEPTH + 8):
        expected += 1.0
    assert torch.equal(z[::2], expected)
    assert "block 0 AIV0" in full  # the scalar unit did stop on the full V queue


@pl.jit(arch="a5", auto_mutex=False)
def wait_issued_before_its_set(x: BLOCK, z: BLOCK):
    """V's wait is issued before the load whose end sets it: legal (pipes are in order, the
    scalar unit does not wait), so V's add queues behind the wait until MTE2 sets."""
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        c = pl.make_tile(T16, addr=0x400)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=V, event_id=0)
        pl.add(c, a, 2.0)
        pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=0)
        pl.load(a, x, [0, 0])
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=V, event_id=0)
        pl.system.sync_dst(set_pipe=V, wait_pipe=MTE3, event_id=0)
        pl.store(z, c, [0, 0])


def test_a_wait_issued_before_its_set_holds_back_its_pipe():
    x = torch.randn(16, 16)
    _, z = _same_values(wait_issued_before_its_set, 1, (x, torch.zeros(16, 16)))
    assert torch.equal(z, x + 2.0)


# ---------------------------------------------------------------- bad kernels


def _missing_sync(sanitizer: bool):
    @pl.jit(arch="a5", auto_mutex=False, sanitizer=sanitizer,
            name=f"missing_sync_{int(sanitizer)}")
    def missing_sync(x: BLOCK, z: BLOCK):
        with pl.section_vector():
            a = pl.make_tile(T16, addr=0x0)
            pl.load(a, x, [0, 0])
            pl.store(z, a, [0, 0])  # no MTE2 -> MTE3 flag: the store may read before the load

    return missing_sync


def test_a_missing_intra_core_sync_is_left_to_the_sanitizer(capsys):
    x = torch.randn(16, 16)
    _, z = _launch("functional", _missing_sync(False), 1, (x, torch.zeros(16, 16)))
    assert torch.equal(z, x)  # program order: right by luck, nothing reported
    kernel = _missing_sync(True)  # a sanitized launch keeps the engine, which sees the race
    _launch("functional", kernel, 1, (x, torch.zeros(16, 16)))
    assert any(f.kind == "DATA_RACE_RAW" for f in kernel.last_result.sanitizer)
    assert "DATA_RACE_RAW" in capsys.readouterr().out



@pl.jit(arch="a5", auto_mutex=False)
def wait_without_set(x: BLOCK, z: BLOCK):
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        pl.load(a, x, [0, 0])
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=5)
        pl.store(z, a, [0, 0])


@pl.jit(arch="a5", auto_mutex=False)
def set_twice(x: BLOCK, z: BLOCK):
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=0)  # V idle: both sets run
        pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=0)  # before the wait issues
        pl.system.sync_dst(set_pipe=V, wait_pipe=MTE3, event_id=0)
        pl.store(z, a, [0, 0])


@pl.jit(arch="a5", auto_mutex=False)
def unlock_without_lock(x: BLOCK, z: BLOCK):
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        pl.load(a, x, [0, 0])
        pl.system.mutex_unlock(pipe=MTE2, mutex_id=1)


@pl.jit(arch="a5", auto_mutex=False)
def lock_never_unlocked(x: BLOCK, z: BLOCK):
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        pl.system.mutex_lock(pipe=MTE2, mutex_id=1)
        pl.load(a, x, [0, 0])
        pl.system.mutex_lock(pipe=MTE3, mutex_id=1)  # MTE2 never releases it
        pl.store(z, a, [0, 0])
        pl.system.mutex_unlock(pipe=MTE3, mutex_id=1)


@pl.jit(arch="a5", auto_mutex=False)
def cube_never_answers(x: BLOCK, z: BLOCK):
    with pl.section_cube():
        pl.system.bar_all()
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        pl.system.wait_cross_core(pipe=MTE2, event_id=7)
        pl.load(a, x, [0, 0])


@pl.jit(arch="a5", auto_mutex=False)
def barrier_missing_a_block(x: BLOCK, z: BLOCK):
    with pl.section_cube():
        pl.system.bar_all()
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        pl.load(a, x, [0, 0])
        if pl.get_block_idx() == 0:
            pl.system.set_cross_core(pipe=MTE2, event_id=3, sync_mode=INTER_BLOCK)
        pl.system.wait_cross_core(pipe=MTE3, event_id=3, sync_mode=INTER_BLOCK)


@pl.jit(arch="a5", auto_mutex=False)
def sync_all_missing_a_block(x: BLOCK, z: ROWS):
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        if pl.get_block_idx() > 0:
            pl.system.sync_all(core_type=pl.SyncCoreType.AIV_ONLY)


BAD = [  # kernel, block dim, error, message part, text of the span's line
    (wait_without_set, 1, DeadlockError, "flag MTE2->MTE3 #5", "sync_dst(set_pipe=MTE2"),
    (set_twice, 1, SimulationError, "set twice before its wait_flag", "before the wait issues"),
    (unlock_without_lock, 1, SimulationError, "without a matching lock", "mutex_unlock"),
    (lock_never_unlocked, 1, DeadlockError, "mutex 1 (held by pipe MTE2)", "never releases"),
    (cube_never_answers, 1, DeadlockError, "xcore 7", "event_id=7"),
    (barrier_missing_a_block, 1, DeadlockError, "xcore 3", "wait_cross_core(pipe=MTE3"),
    (sync_all_missing_a_block, 3, DeadlockError, "waiting on sync_all", "sync_all(core_type"),
]


@pytest.mark.parametrize("kernel,block_dim,error,pattern,source", BAD,
                         ids=[b[0].kernel_def.name for b in BAD])
def test_bad_kernels_fail_as_on_the_engine(kernel, block_dim, error, pattern, source):
    out = torch.zeros(16 * block_dim, 16)
    err = _same_failure(kernel, block_dim, (torch.randn(16, 16), out))
    assert isinstance(err, error)
    assert pattern in err.message
    lines = Path(__file__).read_text().splitlines()
    assert err.span.file == __file__ and source in lines[err.span.line - 1]
