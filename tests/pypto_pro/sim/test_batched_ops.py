"""Batched ops (`sim/ops/batching.py`, `BATCH_IMPLS`) and the lockstep functional executor.

Every batched op of the vector families gives bit-for-bit the memories of the per-core loop on
random operands (tails smaller than the tile, several dtypes), also through the engine's
deferring proxies; a mixed batch and a batch whose calls share a memory take the loop; an
error in the middle of a batch leaves what the loop leaves and names the same call. The
lockstep executor batches the cores of a wave (memory-bound ops run at issue), gives the timing
engine's values when blocks run different numbers of iterations and in a cross-core mix kernel,
and names the failing block, also for an error inside a batch.
"""
from __future__ import annotations

import re
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

import pypto_pro.language as pl
from pypto_pro.errors import PyptoError, SimulationError
from pypto_pro.ir.dtype import DataType as D
from pypto_pro.ir.types import MemorySpace as M
from pypto_pro.ir.types import TileLayout as L
from pypto_pro.runtime import backends
from pypto_pro.sim.reference import functional
from pypto_pro.sim.fast import memo
from pypto_pro.sim.reference.engine import _defer
from pypto_pro.sim.model.memory import CoreMemory, GMRef, TileGeometry, TileRef, storage_dtype
from pypto_pro.sim.ops import BATCH_IMPLS, IMPLS, batch_key, error_index, run_grouped
from pypto_pro.sim.ops import batching, convert, elementwise, expand, movement, reduce
from pypto_pro.sim.ops.operands import AtomicType
from pypto_pro.soc import soc

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
import dsl_kernels as dk  # noqa: E402

ROWS, COLS, VALID, CORES = 8, 64, (5, 37), 4
GM_ROWS = 40  # GM tensors: [GM_ROWS, COLS]; core c's window starts at row 8 * c
MINE = (elementwise, reduce, expand, convert, movement)  # the families this file covers


_POOLS: dict[int, list[CoreMemory]] = {}  # new core memories are slow to make


class Env:
    """`CORES` AIV memories (those of `pool`: two envs alive at once need two pools) with
    random tiles at slots 0..3 and two GM tensors, the same for the same seed."""

    def __init__(self, dtype: D, seed: int, pool: int, valid: tuple[int, int] = VALID,
                 out_dtype: D | None = None) -> None:
        gen = torch.Generator().manual_seed(seed)
        if pool not in _POOLS:
            _POOLS[pool] = [CoreMemory(soc(), "aiv") for _ in range(CORES)]
        self.memories = _POOLS[pool]
        size = ROWS * COLS * 8
        self.tiles = []
        for mem in self.memories:
            mem.buffers[M.Vec].fill_(0xA5)
            mem.buffers[M.Vec][:4 * size] = torch.randint(0, 256, (4 * size,), generator=gen,
                                                           dtype=torch.uint8)
            row = [TileRef(mem, _geometry(out_dtype or dtype, 0), *valid)]
            row += [TileRef(mem, _geometry(dtype, i * size), *valid) for i in (1, 2, 3)]
            for t in row[1:]:
                t.write(_values(dtype, valid, gen))
            self.tiles.append(row)
        self.gm = [GMRef(_values(dtype, (GM_ROWS, COLS), gen)) for _ in range(2)]

    def state(self) -> list[torch.Tensor]:
        return [m.buffers[M.Vec].clone() for m in self.memories] + \
            [g.tensor.view(torch.uint8).clone() for g in self.gm]


_GEOMETRIES: dict[tuple[D, int], TileGeometry] = {}


def _geometry(dtype: D, addr: int) -> TileGeometry:
    """One object per (dtype, address), as the engine's tiles share theirs (the batch key)."""
    return _GEOMETRIES.setdefault((dtype, addr), TileGeometry(ROWS, COLS, dtype, M.Vec, L.ND,
                                                              addr=addr))


def _values(dtype: D, shape: tuple[int, int], gen: torch.Generator) -> torch.Tensor:
    if dtype.is_float:  # positive and negative, some NaN-free zeros of log / sqrt domains
        return (torch.rand(shape, generator=gen) * 8 - 3).to(storage_dtype(dtype))
    return torch.randint(-50, 50, shape, generator=gen).to(storage_dtype(dtype))


# ---------------------------------------------------------------- per-op cases

#: a case: (op, dtype, kwargs, args of core c: (env, c) -> list, output dtype or None)
Case = tuple[str, D, dict, Callable[[Env, int], list], "D | None"]


def _tiles(*slots: int) -> Callable[[Env, int], list]:
    return lambda env, c: [env.tiles[c][s] for s in slots]


def _with(*extra: object, slots: tuple[int, ...]) -> Callable[[Env, int], list]:
    return lambda env, c: [env.tiles[c][s] for s in slots] + list(extra)


def _cases() -> list[Case]:
    cases: list[Case] = []
    for name, (_, allowed) in elementwise.BINARY.items():
        for dtype in (D.FP32, D.FP16, D.INT32):
            if dtype in allowed:
                cases.append((f"block.{name}", dtype, {}, _tiles(0, 1, 2), None))
    for name, binary in elementwise.SCALAR.items():
        for dtype in (D.FP32, D.FP16, D.INT32):
            if dtype in elementwise.BINARY[binary][1]:
                scalar = 1.5 if dtype.is_float else 3
                cases.append((f"block.{name}", dtype, {}, _with(scalar, slots=(0, 1)), None))
    for name, (_, allowed) in elementwise.UNARY.items():
        for dtype in (D.FP32, D.FP16, D.INT32):
            if dtype in allowed:
                cases.append((f"block.{name}", dtype, {}, _tiles(0, 1), None))
    for kind in reduce.REDUCERS:
        for axis in ("row", "col"):
            out = D.INT32 if kind.startswith("arg") else None
            cases.append((f"block.{axis}_{kind}", D.FP32, {}, _tiles(0, 1, 2), out))
    for axis in ("row", "col"):
        cases.append((f"block.{axis}_reduce", D.FP32, {"op": "SUM"}, _tiles(0, 1, 2), None))
        cases.append((f"block.{axis}_sum", D.INT32, {}, _tiles(0, 1, 2), None))
        for name in expand.OPS:
            cases.append((f"block.{axis}_expand_{name}", D.FP32, {}, _tiles(0, 1, 2), None))
    cases.append(("block.row_expand_mul", D.FP16, {}, _tiles(0, 1, 2), None))
    cases.append(("block.exp", D.FP32, {}, _tiles(1, 1), None))  # in place
    cases.append(("block.row_expand_sub", D.FP32, {}, _tiles(1, 1, 2), None))
    cases.append(("block.row_expand_div", D.FP32, {}, _tiles(1, 1, 1), None))  # s inside out
    cases.append(("block.cast", D.FP32, {}, _tiles(0, 1), D.FP16))
    cases.append(("block.cast", D.FP32, {"mode": "CAST_FLOOR"}, _tiles(0, 1), D.INT16))
    for dtype in (D.FP32, D.FP16):
        cases.append(("block.load", dtype, {},
                      lambda env, c: [env.tiles[c][0], env.gm[0], (8 * c, 3)], None))
        cases.append(("block.store", dtype, {},
                      lambda env, c: [env.gm[1], env.tiles[c][1], (8 * c, 2)], None))
    cases.append(("block.store", D.FP32, {},  # overlapping windows: the last core wins
                  lambda env, c: [env.gm[1], env.tiles[c][1], (c, 0)], None))
    cases.append(("block.store", D.FP32, {"atomic": AtomicType.AtomicAdd},
                  lambda env, c: [env.gm[1], env.tiles[c][1], (c, 0)], None))
    cases.append(("block.move", D.FP32, {}, _tiles(0, 1), None))
    cases.append(("block.move", D.FP16, {}, _with((1, 2), slots=(0, 1)), None))
    cases.append(("block.move", D.FP32, {}, _tiles(0, 1), D.FP16))  # converted (a bias)
    return cases


CASES = _cases()


def _sequential(case: Case, seed: int, defer: bool = False) -> list[torch.Tensor]:
    op, dtype, kwargs, args_of, out = case
    env = Env(dtype, seed, 0, out_dtype=out)
    for c in range(CORES):
        _land(lambda calls: [IMPLS[op](a, kwargs) for a in calls], [args_of(env, c)], defer)
    return env.state()


def _batched(case: Case, seed: int, defer: bool = False) -> list[torch.Tensor]:
    """The batch impl on the cores' calls, which must not fall back to the loop."""
    op, dtype, kwargs, args_of, out = case
    env = Env(dtype, seed, 1, out_dtype=out)
    loop = batching.run_sequential
    batching.run_sequential = None  # (a fallback would fail on calling it)
    try:
        _land(lambda calls: BATCH_IMPLS[op](calls, kwargs),
              [args_of(env, c) for c in range(CORES)], defer)
    finally:
        batching.run_sequential = loop
    return env.state()


def _land(run: Callable[[list[list]], object], calls: list[list], defer: bool) -> None:
    """`run(calls)`, through deferring proxies whose writes land afterwards, call by call."""
    if not defer:
        run(calls)
        return
    queues: list[list] = [[] for _ in calls]
    run([[_defer(a, q) for a in args] for args, q in zip(calls, queues)])
    for q in queues:
        for fn, args, kwargs in q:
            fn(*args, **kwargs)


def _same(a: list[torch.Tensor], b: list[torch.Tensor]) -> None:
    for i, (x, y) in enumerate(zip(a, b)):
        assert torch.equal(x, y), f"memory {i} differs"


def test_every_batched_op_of_the_vector_families_is_covered():
    mine = {op for module in MINE for op in module.BATCH_IMPLS}
    assert mine <= set(BATCH_IMPLS)
    assert mine == {case[0] for case in CASES}


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{c[1].value}-{i}"
                                              for i, c in enumerate(CASES)])
def test_a_batch_writes_what_the_loop_writes(case):
    _same(_sequential(case, seed=3), _batched(case, seed=3))


@pytest.mark.parametrize("op", ["block.add", "block.exp", "block.row_sum", "block.load",
                                "block.store", "block.row_expand_sub", "block.cast"])
def test_a_batch_through_deferring_proxies_writes_what_the_loop_writes(op):
    case = next(c for c in CASES if c[0] == op)
    _same(_sequential(case, seed=4, defer=True), _batched(case, seed=4, defer=True))


def test_a_batch_takes_the_stacked_path():
    env = Env(D.FP16, 5, 0)  # (FP32 exp runs in place per core)
    calls = [[env.tiles[c][0], env.tiles[c][1]] for c in range(CORES)]
    seen = []
    stack = torch.stack

    def spy(tensors, *args, **kwargs):
        seen.append(len(tensors))
        return stack(tensors, *args, **kwargs)

    torch.stack = spy
    try:
        BATCH_IMPLS["block.exp"](calls, {})
    finally:
        torch.stack = stack
    assert seen == [CORES]  # one stack of every core's source, one exp for the batch


def test_a_mixed_batch_runs_the_loop():
    """Valid shapes differ across the calls: same keys fail, the batch impl takes the loop."""
    envs = [Env(D.FP32, 6, 0), Env(D.FP32, 6, 1)]
    for env in envs:
        env.tiles[2][1].valid_rows = 3  # core 2's source has a shorter tail
        env.tiles[2][0].valid_rows = 3
    calls = [[[env.tiles[c][0], env.tiles[c][1]] for c in range(CORES)] for env in envs]
    assert batch_key("block.exp", calls[0][2], {}) != batch_key("block.exp", calls[0][0], {})
    for args in calls[0]:
        IMPLS["block.exp"](args, {})
    BATCH_IMPLS["block.exp"](calls[1], {})
    _same(envs[0].state(), envs[1].state())


def test_calls_sharing_a_memory_run_the_loop():
    """Two calls on one core's memory (an in-place chain): the second reads the first's result."""
    envs = [Env(D.FP32, 7, 0), Env(D.FP32, 7, 1)]
    calls = [[[env.tiles[0][1], env.tiles[0][1], 2.0]] * 2 for env in envs]
    for args in calls[0]:
        IMPLS["block.muls"](args, {})
    run_grouped(BATCH_IMPLS["block.muls"], calls[1], {})
    _same(envs[0].state(), envs[1].state())


def test_an_error_in_the_middle_of_a_batch_is_the_loops():
    """Core 2's window runs past the tensor: cores 0 and 1 load, core 2 raises, core 3 not."""
    def calls(env: Env) -> list[list]:
        return [[env.tiles[c][0], env.gm[0], (8 * c if c != 2 else GM_ROWS - 2, 0)]
                for c in range(CORES)]

    errors, states = [], []
    for batch in (False, True):
        env = Env(D.FP32, 8, int(batch))
        with pytest.raises(IndexError) as info:
            if batch:
                BATCH_IMPLS["block.load"](calls(env), {})
            else:
                for i, args in enumerate(calls(env)):
                    try:
                        IMPLS["block.load"](args, {})
                    except IndexError as err:
                        err.batch_index = i
                        raise
        errors.append((type(info.value), str(info.value), error_index(info.value)))
        states.append(env.state())
    assert errors[0] == errors[1] and errors[1][2] == 2
    _same(*states)


def test_a_nan_in_a_native_fp16_batch_is_decided_per_core():
    """FP16 add of a NaN: the per-core path recomputes in float32; the batch gives its bits."""
    case = next(c for c in CASES if c[0] == "block.add" and c[1] is D.FP16)
    results = []
    for pool, run in enumerate((_sequential, _batched)):
        nan_env = Env(D.FP16, 9, pool)
        nan_env.tiles[1][1].write(torch.full(VALID, float("nan"), dtype=torch.float16))
        if run is _sequential:
            for c in range(CORES):
                IMPLS[case[0]](case[3](nan_env, c), {})
        else:
            BATCH_IMPLS[case[0]]([case[3](nan_env, c) for c in range(CORES)], {})
        results.append(nan_env.state())
    _same(*results)


# ---------------------------------------------------------------- the lockstep executor


pytestmark = pytest.mark.usefixtures("functional_backend")  # (conftest)


@pytest.fixture
def batches(monkeypatch) -> Counter:
    """(op, batch size) → how many batches the functional engine ran (every launch runs the
    executor: no kept ops are replayed)."""
    memo.clear()
    seen: Counter = Counter()
    run = functional.FunctionalEngine._run_batch

    def spy(self, group):
        seen[(group[0].parked.ir_op, len(group))] += 1
        return run(self, group)

    monkeypatch.setattr(functional.FunctionalEngine, "_run_batch", spy)
    return seen


def _launch(mode: str, kernel, block_dim: int, args: tuple) -> tuple:
    args = tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args)
    with backends.use_backend(mode):
        kernel[None, block_dim](*args)
    return args


def _same_values(kernel, block_dim: int, args: tuple) -> tuple:
    timed, lockstep = (_launch(m, kernel, block_dim, args) for m in ("sim", "functional"))
    for t, f in zip(timed, lockstep):
        if isinstance(t, torch.Tensor):
            assert torch.equal(t, f)
    return lockstep


def test_blocks_running_different_iteration_counts_stay_exact(batches):
    """5 row blocks over 3 blocks: blocks 0 and 1 run two iterations, block 2 one."""
    x = dk.rand((80, dk.COLS), torch.float32, 0, 3.0)
    _same_values(dk.softmax_1k_kernel, 3, (x, torch.zeros(80, dk.COLS)))
    assert batches[("block.row_max", 3)] == 1 and batches[("block.row_max", 2)] == 1


def test_a_cross_core_mix_kernel_stays_exact(batches):
    a = dk.rand((192, dk.FK), torch.float16, 0, 0.25)
    b = dk.rand((dk.FK, dk.COLS), torch.float16, 1, 0.25)
    _same_values(dk.matmul_softmax_kernel, 2, (a, b, torch.zeros(192, dk.COLS),
                                               torch.zeros(192, dk.COLS)))
    assert any(size > 1 for _, size in batches)


def test_memory_bound_ops_run_at_issue_and_small_ones_in_batches(batches):
    """Softmax: the loads, stores and in-place FP32 ops on 16 x 1024 tiles run where they are
    issued (each core's data still in cache), the row reductions in batches of the wave."""
    x = dk.rand((256, dk.COLS), torch.float32, 0, 3.0)
    _same_values(dk.softmax_1k_kernel, 4, (x, torch.zeros(256, dk.COLS)))
    assert set(batches) == {("block.row_max", 4), ("block.row_sum", 4)}


T16 = pl.TileType([16, 16], pl.DT_FP32)
MTE2, MTE3, V = pl.PipeType.MTE2, pl.PipeType.MTE3, pl.PipeType.V
ROWS16 = pl.Tensor[[pl.DYNAMIC, 16], pl.DT_FP32]


@pl.jit(arch="a5", auto_mutex=False)
def copy_rows(x: ROWS16, z: ROWS16):
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        b = pl.get_block_idx()
        pl.load(a, x, [b * 16, 0])  # block 3 reads past x's 40 rows and their reserve
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.store(z, a, [b * 16, 0])


@pl.jit(arch="a5", auto_mutex=False)
def row_sums(x: ROWS16, z: ROWS16):
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        red = pl.make_tile(T16, addr=0x400)
        tmp = pl.make_tile(T16, addr=0x800)
        b = pl.get_block_idx()
        pl.load(a, x, [b * 16, 0])
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=V, event_id=0)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=V, event_id=0)
        pl.row_sum(red, a, tmp)  # fails on the core whose rows hold the sentinel
        pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=V, wait_pipe=MTE3, event_id=0)
        pl.store(z, red, [b * 16, 0])


def _same_failure(kernel, block_dim: int, args: tuple) -> PyptoError:
    errors = []
    for mode in ("sim", "functional"):
        with pytest.raises(PyptoError) as info:
            _launch(mode, kernel, block_dim, args)
        errors.append(info.value)
    timed, lockstep = errors
    assert type(timed) is type(lockstep) and lockstep.span == timed.span
    assert re.sub(r"cycle \d+", "", timed.message) == re.sub(r"cycle \d+", "", lockstep.message)
    return lockstep


def _source_line(err: PyptoError) -> str:
    assert err.span.file == __file__
    return Path(__file__).read_text().splitlines()[err.span.line - 1]


def test_an_op_error_on_block_3_names_block_3():
    # 40 fp32 rows are 2560 bytes, reserved as 3072 (soc.device_allocation): block 2's window
    # ends inside the reserve (reads zero), block 3's starts past it.
    err = _same_failure(copy_rows, 5, (torch.randn(40, 16), torch.zeros(80, 16)))
    assert isinstance(err, SimulationError)
    assert "block.load on block 3 AIV" in err.message
    assert "block 3 reads past" in _source_line(err)


def test_an_error_inside_a_batch_names_its_core(batches, monkeypatch):
    """Block 3's rows hold a value the (patched) reducer rejects: the batch falls back to the
    loop, which raises on block 3 after blocks 0 to 2 ran; the error names block 3."""
    total = reduce.REDUCERS["sum"]

    def picky(x: torch.Tensor, dim: int) -> torch.Tensor:
        if bool((x == 999).any()):
            raise ValueError("the sentinel")
        return total(x, dim)

    monkeypatch.setitem(reduce.REDUCERS, "sum", picky)
    x = torch.randn(80, 16)
    x[3 * 16 + 5, 7] = 999
    err = _same_failure(row_sums, 5, (x, torch.zeros(80, 16)))
    assert err.message == "block.row_sum on block 3 AIV: the sentinel"
    assert "fails on the core" in _source_line(err)
    assert batches[("block.row_sum", 5)] == 1
