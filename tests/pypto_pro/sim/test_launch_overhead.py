"""What the simulator keeps between launches or instructions to cut its fixed costs (issue 9)
must give what computing it afresh gives: the on-chip memories handed to the next launch, the
memoised instruction costs, the cached kernel signature, the deferred-write operand copies."""
from __future__ import annotations

import pytest
import torch

import pypto_pro.language as pl
from pypto_pro.errors import InvalidType
from pypto_pro.examples import load
from pypto_pro.ir.dtype import DataType
from pypto_pro.ir.types import MemorySpace
from pypto_pro.runtime.backends import use_backend
from pypto_pro.runtime.binding import bind
from pypto_pro.runtime.kernel_def import Specialization
from pypto_pro.sanitizer import sanitize
from pypto_pro.runtime import backends
from pypto_pro.sim.pools import Pools
from pypto_pro.sim.model.cost_model import _op_cost, op_cost
from pypto_pro.sim.reference.engine import _defer
from pypto_pro.sim.model.memory import CoreMemory, GMRef, TileGeometry, TileRef
from pypto_pro.sim.ops import IMPLS
from pypto_pro.soc import soc


def _same_memory(a: CoreMemory, b: CoreMemory) -> bool:
    return a.buffers.keys() == b.buffers.keys() and all(
        torch.equal(a.buffers[s], b.buffers[s]) and torch.equal(a.initialised[s],
                                                                b.initialised[s])
        for s in a.buffers)


def test_a_reused_core_memory_is_as_new() -> None:
    ex = load("vector_add")
    x, y, z = ex.make_inputs(128, 128, seed=0)
    with use_backend("sim"), sanitize():  # only a sanitized launch marks bytes initialised
        ex.add_kernel[None, 1](x, y, z)
    table = soc()
    pools = backends.get_backend("sim").pools
    used = pools._idle[(table.name, "aiv")][-1]
    assert bool(used.initialised[MemorySpace.Vec].any())  # the launch wrote its UB
    reused = pools.core_memory(table, "aiv")
    assert reused is used
    assert _same_memory(reused, CoreMemory(table, "aiv"))


def test_only_a_sanitized_launch_marks_bytes_initialised() -> None:
    ex = load("vector_add")
    table = soc()
    for sanitized in (False, True):
        with use_backend("sim"), sanitize(sanitized):
            ex.add_kernel[None, 1](*ex.make_inputs(128, 128, seed=0))
        used = backends.get_backend("sim").pools._idle[(table.name, "aiv")][-1]
        assert bool(used.initialised[MemorySpace.Vec].any()) is sanitized


def test_a_memory_of_another_soc_table_is_not_reused() -> None:
    base, faster = soc(), soc(clock_mhz=2000)
    assert base.name == faster.name
    pools = Pools()
    mem = pools.core_memory(base, "aic")
    pools.give_back(mem)
    other = pools.core_memory(faster, "aic")
    assert other is not mem and other.soc is faster


def _tile(mem: CoreMemory, dtype: DataType, rows: int, cols: int, addr: int,
          valid: tuple[int, int] | None = None) -> TileRef:
    g = TileGeometry(rows, cols, dtype, MemorySpace.Vec, addr=addr)
    return TileRef(mem, g, *(valid or (rows, cols)))


@pytest.mark.parametrize("op", ["block.add", "block.exp", "block.row_sum", "block.ub_copy"])
def test_memoised_costs_are_the_computed_ones(op: str) -> None:
    table = soc()
    mem = CoreMemory(table, "aiv")
    n_args = 2 if op in ("block.exp", "block.ub_copy") else 3
    for valid in [(64, 128), (64, 128), (17, 128), (64, 100)]:
        args = [_tile(mem, DataType.FP32, 64, 128, 0x8000 * i, valid) for i in range(n_args)]
        if op == "block.row_sum":
            args[0] = _tile(mem, DataType.FP32, 64, 8, 0, (valid[0], 1))
        assert op_cost(op, args, {}, table) == _op_cost(op, args, {}, table)


def test_the_memo_tells_valid_shapes_apart() -> None:
    table = soc()
    mem = CoreMemory(table, "aiv")

    def add(valid: tuple[int, int]) -> int:
        args = [_tile(mem, DataType.FP32, 64, 128, 0x8000 * i, valid) for i in range(3)]
        return op_cost("block.add", args, {}, table).cycles

    assert add((1, 128)) < add((64, 128)) == add((64, 128))


def test_deferred_operands_queue_their_writes_until_applied() -> None:
    mem = CoreMemory(soc(), "aiv")
    tile = _tile(mem, DataType.FP32, 8, 8, 0)
    tile.write(torch.zeros(8, 8))
    writes: list = []
    proxy = _defer(tile, writes)
    assert isinstance(proxy, TileRef) and type(proxy).__name__ == "TileRef"
    proxy.write(torch.ones(8, 8))
    proxy.write_linear(0, torch.full((4,), 2.0))
    assert torch.equal(tile.read(), torch.zeros(8, 8))  # nothing landed yet
    assert [fn.__self__ for fn, _, _ in writes] == [tile, tile]  # what the sanitizer reads
    assert [fn.__name__ for fn, _, _ in writes] == ["write", "write_linear"]
    for fn, args, kwargs in writes:
        fn(*args, **kwargs)
    expected = torch.ones(8, 8)
    expected[0, :4] = 2.0
    assert torch.equal(tile.read(), expected)
    assert _defer(3, writes) == 3 and _defer((tile,), writes)[0] is not tile


@pytest.mark.parametrize("deferred", [False, True])
def test_load_and_store_move_what_their_source_held_when_they_ran(deferred) -> None:
    """Through the engine's copies a load / store lands at the instruction's end, so it must
    snapshot its source; written at once, it may move an unsnapshotted view of it."""
    mem = CoreMemory(soc(), "aiv")
    tile = _tile(mem, DataType.FP32, 8, 8, 0)
    first = torch.arange(64.0).reshape(8, 8)
    gm_in, gm_out = first.clone(), torch.zeros(8, 8)
    writes: list = []
    dst, out = tile, GMRef(gm_out)
    if deferred:
        dst, out = _defer(tile, writes), _defer(out, writes)
    assert dst.writes_now is out.writes_now is not deferred
    IMPLS["block.load"]([dst, GMRef(gm_in), [0, 0]], {})
    gm_in += 100  # the source changes before a deferred write lands
    for fn, args, kwargs in writes:
        fn(*args, **kwargs)
    assert torch.equal(tile.read(), first)
    writes.clear()
    IMPLS["block.store"]([out, tile, [0, 0]], {})
    tile.write(torch.full((8, 8), -1.0))
    for fn, args, kwargs in writes:
        fn(*args, **kwargs)
    assert torch.equal(gm_out, first)


A5 = Specialization(arch="a5")


def test_binding_by_position_keyword_and_default_agree() -> None:
    @pl.kernel
    def k(x: pl.Tensor[[4], pl.DT_FP32], n: pl.DT_INT32 = 3):
        pass

    x = torch.zeros(4)
    calls = [((x, 3), {}), ((x,), {}), ((), {"x": x, "n": 3}), ((x,), {"n": 3})]
    bound = [bind(k, args, kwargs, A5) for args, kwargs in calls]
    assert all(b.args[0] is x and b.args[1] == 3 and b.spec == bound[0].spec for b in bound)
    with pytest.raises(InvalidType, match="wrong arguments"):
        bind(k, (x, 3, 4), {}, A5)


def test_keyword_only_parameters_still_need_their_keyword() -> None:
    @pl.kernel
    def k(x: pl.Tensor[[4], pl.DT_FP32], *, n: pl.DT_INT32):
        pass

    x = torch.zeros(4)
    assert bind(k, (x,), {"n": 5}, A5).args[1] == 5
    with pytest.raises(InvalidType, match="wrong arguments"):
        bind(k, (x, 5), {}, A5)
