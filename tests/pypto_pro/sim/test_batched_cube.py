"""Batched cube ops (`cube.BATCH_IMPLS`) against the per-core loop they replace.

Every case builds the same cores from one seed three times, runs the calls as
`for args in calls: IMPLS[op](args, kwargs)`, through the batch, and through the batch's compute
directly (`run_grouped`: mixed batches reach it), and compares every on-chip byte (and the
"initialised" masks) of every core, plus the error raised and which call raised it.
"""
from __future__ import annotations

import dataclasses

import pytest
import torch

from pypto_pro.ir.dtype import DataType as D
from pypto_pro.ir.types import MemorySpace as M
from pypto_pro.ir.types import TileLayout as L
from pypto_pro.sim.model.memory import CoreMemory, TileGeometry, TileRef, storage_dtype
from pypto_pro.sim.ops import BATCH_IMPLS, IMPLS, SimOpError, cube, error_index
from pypto_pro.sim.ops.batching import run_grouped
from pypto_pro.soc import soc
from sim_support import Deferred, land

SHAPE = (64, 128, 48)  # tile M, K, N
SPACES = (M.Acc, M.Left, M.Right, M.Bias)  # the ones the tests use
_PRISTINE = CoreMemory(soc(), "aic")
_POOL: list[CoreMemory] = []  # memories are costly to allocate: reset them instead


def core_memory(slot: int) -> CoreMemory:
    """Pooled core memory `slot`, its `SPACES` as new (garbage pattern, nothing initialised)."""
    while len(_POOL) <= slot:
        _POOL.append(CoreMemory(soc(), "aic"))
    mem = _POOL[slot]
    for space in SPACES:
        mem.buffers[space].copy_(_PRISTINE.buffers[space])
        mem.initialised[space].zero_()
    return mem


def random_storage(dtype: D, shape: tuple[int, int], gen: torch.Generator) -> torch.Tensor:
    if dtype.is_int:
        return torch.randint(-128, 128, shape, generator=gen).to(storage_dtype(dtype))
    return (torch.randn(shape, generator=gen) / 4).to(storage_dtype(dtype))


def make_core(seed: int, dtype: D = D.FP16, layouts=(L.NZ, L.ZN), valid=SHAPE,
              acc_dtype: D | None = None, rhs_dtype: D | None = None) -> dict[str, TileRef]:
    """One core's cube tiles (lhs, rhs, acc, a second accumulator, bias), random contents."""
    m, k, n = SHAPE
    vm, vk, vn = valid
    acc_dtype = acc_dtype or (D.INT32 if dtype.is_int else D.FP32)
    rhs_dtype = rhs_dtype or dtype
    mem = core_memory(seed)
    acc = TileGeometry(m, n, acc_dtype, M.Acc, L.NZ, 1024 if acc_dtype.bits == 32 else 512)
    tiles = {
        "lhs": TileRef(mem, TileGeometry(m, k, dtype, M.Left, layouts[0], addr=0), vm, vk),
        "rhs": TileRef(mem, TileGeometry(k, n, rhs_dtype, M.Right, layouts[1], addr=0), vk, vn),
        "acc": TileRef(mem, acc, vm, vn),
        "acc2": TileRef(mem, dataclasses.replace(acc, addr=0x8000), vm, vn),
        "bias": TileRef(mem, TileGeometry(1, n, acc_dtype, M.Bias, L.ND, addr=0), 1, vn),
    }
    gen = torch.Generator().manual_seed(seed)
    for tile in tiles.values():
        tile.write(random_storage(tile.dtype, tile.valid, gen))
    return tiles


def run(op: str, cores: list[dict], order: tuple[str, ...], how: str, defer: bool = False):
    """Run `op` on every core ("loop", "batch": the checked entry, "grouped": straight to the
    batch's compute, as an engine that grouped the calls does); returns the error raised and
    its call index."""
    queue: list = []
    calls = [[Deferred(t[name], queue) if defer and i == 0 else t[name]
              for i, name in enumerate(order)] for t in cores]
    try:
        if how == "batch":
            BATCH_IMPLS[op](calls, {})
        elif how == "grouped":
            run_grouped(BATCH_IMPLS[op], calls, {})
        else:
            for index, args in enumerate(calls):
                try:
                    IMPLS[op](args, {})
                except SimOpError as err:
                    err.batch_index = index
                    raise
    except SimOpError as err:
        return type(err), str(err), error_index(err)
    finally:
        land(queue)
    return None


def state(cores: list[dict]) -> list[bytes]:
    out = []
    for tiles in cores:
        mem = tiles["lhs"].memory
        for space in SPACES:
            out.append(mem.buffer(space).numpy().tobytes())
            out.append(mem.initialised[space].numpy().tobytes())
    return out


def check_same(op: str, order: tuple[str, ...], make, count: int = 3, defer: bool = False):
    """The batch and the loop leave identical memories and raise the same error."""
    results = []
    for how in ("loop", "batch", "grouped"):
        cores = [make(seed) for seed in range(count)]
        error = run(op, cores, order, how, defer)
        results.append((error, state(cores)))
    assert results[1] == results[0]
    assert results[2] == results[0]
    return results[0][0]


MATMUL = ("block.matmul", ("acc", "lhs", "rhs"))
ACC_IN_PLACE = ("block.matmul_acc", ("acc", "acc", "lhs", "rhs"))
ACC_OTHER = ("block.matmul_acc", ("acc2", "acc", "lhs", "rhs"))
BIAS = ("block.matmul_bias", ("acc", "lhs", "rhs", "bias"))
GEMV = ("block.gemv_acc", ("acc", "acc", "lhs", "rhs"))


@pytest.mark.parametrize("op,order", [MATMUL, ACC_IN_PLACE, ACC_OTHER, BIAS, GEMV])
@pytest.mark.parametrize("dtype", [D.FP16, D.BF16, D.FP32, D.FP8E4M3FN, D.INT8])
def test_batch_equals_loop_per_dtype(op, order, dtype):
    assert check_same(op, order, lambda seed: make_core(seed, dtype)) is None


@pytest.mark.parametrize("layouts,valid", [
    ((L.ND, L.ND), (48, 96, 32)), ((L.ZZ, L.NN), (48, 96, 32)), ((L.NZ, L.DN), SHAPE),
    ((L.DN, L.NZ), (48, 96, 32)), ((L.NZ, L.ZN), (40, 50, 20)), ((L.ND, L.ND), (16, 1, 16)),
    ((L.ZZ, L.NN), (40, 50, 20))])  # aligned M, N (batched) and not (the loop)
def test_batch_equals_loop_layouts_and_partial_valid(layouts, valid):
    for op, order in (MATMUL, ACC_IN_PLACE):
        assert check_same(op, order, lambda seed: make_core(seed, D.FP16, layouts, valid)) is None


def test_int8_any_shape_and_fp16_accumulator():
    def int8(seed):
        return make_core(seed, D.INT8, valid=(40, 50, 20))

    assert check_same(*ACC_IN_PLACE, int8) is None
    assert check_same(*ACC_IN_PLACE, lambda seed: make_core(seed, acc_dtype=D.FP16)) is None


def test_deferred_writes_take_the_read_write_path():
    for op, order in (ACC_IN_PLACE, MATMUL, BIAS):
        assert check_same(op, order, lambda seed: make_core(seed), defer=True) is None


def test_mixed_batch_runs_the_loop():
    """A core with another valid shape (or another layout) sends the batch down the loop."""
    def mixed(seed):
        return make_core(seed, valid=(32, 128, 48) if seed == 2 else SHAPE)

    assert check_same(*ACC_IN_PLACE, mixed) is None
    pairs = [(t["lhs"], t["rhs"]) for t in (mixed(s) for s in range(4))]
    assert cube._batch_products("block.matmul_acc", pairs) is None


def test_an_erroring_call_reports_its_index_after_the_earlier_cores_wrote():
    def bad_third(seed):
        return make_core(seed, rhs_dtype=D.FP32 if seed == 2 else None)

    error = check_same(*ACC_IN_PLACE, bad_third, count=4)
    assert error is not None
    kind, message, index = error
    assert kind is SimOpError and index == 2 and "FP16 x FP32" in message


def test_the_fast_path_is_taken_and_matches_each_product():
    cores = [make_core(seed) for seed in range(5)]
    pairs = [(t["lhs"], t["rhs"]) for t in cores]
    products = cube._batch_products("block.matmul", pairs)
    assert products is not None and products.shape == (5, 64, 48)
    for product, (lhs, rhs) in zip(products, pairs):
        assert torch.equal(product, cube._product("block.matmul", lhs, rhs))
        assert torch.equal(product, lhs.read().float() @ rhs.read().float())


@pytest.mark.parametrize("m,k,n", [(128, 128, 128), (64, 256, 32), (16, 7, 48), (112, 128, 16)])
def test_this_torch_build_sums_aligned_products_like_a_row_major_matmul(m, k, n):
    """The premise of `cube.ALIGNED`: for M, N multiples of 16, `bmm` (1 or 2 threads) and a
    column-major rhs give the values of `a @ b` bit for bit."""
    gen = torch.Generator().manual_seed(m + k + n)
    a, b = torch.randn(6, m, k, generator=gen), torch.randn(6, k, n, generator=gen)
    expect = torch.stack([x @ y for x, y in zip(a, b)])
    column_major = b.transpose(1, 2).contiguous().transpose(1, 2)
    threads = torch.get_num_threads()
    try:
        for count in (1, 2):
            torch.set_num_threads(count)
            assert torch.equal(torch.bmm(a, b), expect)
            assert torch.equal(torch.bmm(a, column_major), expect)
    finally:
        torch.set_num_threads(threads)
    assert all(torch.equal(x @ y, e) for x, y, e in zip(a, column_major, expect))
