"""The stream engine's memo (`sim/fast/memo.py`; issue 9): a relaunch of a kernel with tensors of
the same geometry (the same tensors, or new ones: the recording is rebound to them) and the same
scalars replays the kept recording and schedule instead of recording again, and gives exactly what
a fresh launch gives — trace rows, instruction count, L2 counters, the values of the new data, the
text printed — while any change of what the schedule depends on records afresh. Skipped without a
C++ compiler (the stream engine is not built then)."""
from __future__ import annotations

import gc
import weakref

import pytest
import torch

import pypto_pro.language as pl
from pypto_pro.examples import load
from pypto_pro.runtime.backends import get_backend, use_backend
from pypto_pro.sim.fast import replay, stream, memo
from pypto_pro.sim.model.memory import GMRef
from sim_support import printing_copy


pytestmark = pytest.mark.usefixtures("stream_engine")  # (conftest)


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
    backend = get_backend("sim")
    memory = backend.pools.last_memory_system(backend.soc)
    return list(trace._log.rows), dict(trace.meta.extra)["instructions"], repr(memory.stats)


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
    first = _launch(k, bd, args)  # other tensors of the same geometry: rebound
    for a, b in zip(args, ex.make_inputs(**shape, seed=1)):  # the same tensors, new data
        a.copy_(b)
    again = _launch(k, bd, args)
    assert recorded == [1]  # the kept recording ran
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
    _launch(ex.add_kernel, 2, (x, y, z.clone()))  # another tensor: rebound
    memo.clear()
    _launch(ex.add_kernel, 2, (x, y, z))
    assert recorded == [1, 1, 1]
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


@pytest.mark.parametrize("name, kernel, shape, block_dim", [
    ("vector_add", "add_kernel", {"m": 512, "n": 512}, 70),  # waves: placeholders rebound too
    ("matmul_softmax", "matmul_softmax_kernel", {"n": 64}, 34),  # mix, waves
])
def test_the_memo_keeps_no_tensor_of_an_earlier_launch_alive(recorded, name, kernel, shape,
                                                             block_dim) -> None:
    ex = load(name)
    k = getattr(ex, kernel)
    args = ex.make_inputs(**shape, seed=0)
    _launch(k, block_dim, args)
    gone = [weakref.ref(a) for a in args]
    del args
    args = ex.make_inputs(**shape, seed=1)
    _launch(k, block_dim, args)
    assert recorded == [1]  # a rebinding hit
    gc.collect()
    assert [ref() for ref in gone] == [None] * len(gone)
    expected = ex.make_inputs(**shape, seed=1)
    memo.clear()
    _launch(k, block_dim, expected)
    for a, b in zip(args, expected):
        assert torch.equal(a, b)


def _add_args(shape: tuple = (256, 256), seed: int = 0) -> tuple:
    return load("vector_add").make_inputs(*shape, seed=seed)


def _in(size: int, offset: int = 0, shape: tuple = (256, 256)) -> torch.Tensor:
    """A zero FP16 tensor of `shape` at element `offset` of a storage of `size` elements."""
    return torch.zeros(size, dtype=torch.float16)[offset:offset + shape[0] * shape[1]].view(shape)


@pytest.mark.parametrize("change", [
    # (an output's strides are no change of geometry: a kernel reads and writes a tensor
    # row-major from its first element, as the real runtime passes it)
    lambda x, y, z: (x, y, _in(2 * z.numel())),  # the output's storage size
    lambda x, y, z: (x, y, _in(2 * z.numel(), z.numel())),  # a view at another offset
    lambda x, y, z: (x, x, z),  # aliasing: one tensor passed twice
    lambda x, y, z: (x, y, x),  # in place: the output is an input
    lambda x, y, z: _add_args((256, 384)),  # the shape
], ids=["storage", "offset", "twice", "in-place", "shape"])
def test_a_change_of_geometry_records_afresh_and_then_rebinds(recorded, change) -> None:
    add = load("vector_add").add_kernel
    first = _launch(add, 4, _add_args())
    changed = change(*_add_args(seed=1))
    x, y = changed[0].clone(), changed[1].clone()
    again = _launch(add, 4, changed)
    assert recorded == [1, 1]
    assert torch.equal(changed[2], x + y)
    if changed[0].shape == (256, 256):
        assert again[1] == first[1]  # (the same instructions: only the memory differs)
    # new tensors of that same geometry replay the recording of the changed launch
    renewed = change(*_add_args(seed=2))
    x, y = renewed[0].clone(), renewed[1].clone()
    assert _launch(add, 4, renewed) == again
    assert recorded == [1, 1]
    assert torch.equal(renewed[2], x + y)


def test_equal_geometry_is_an_equal_key() -> None:
    def key(*args) -> tuple:
        storages: dict = {}
        return tuple(memo._value_key(a, storages, []) for a in args)

    a, b = torch.zeros(8, 16), torch.ones(8, 16)
    assert key(GMRef(a)) == key(GMRef(b))
    assert key(GMRef(a)) != key(GMRef(a.half()))  # the dtype
    assert key(GMRef(a)) != key(GMRef(a.t()))  # the strides (and shape)
    c = torch.zeros(16, 16)
    assert key(GMRef(c[:8])) != key(GMRef(c[8:]))  # the offset in the storage
    assert key(GMRef(a)) != key(GMRef(c[:8]))  # the storage size
    assert key(GMRef(a), GMRef(b)) == key(GMRef(b), GMRef(a))
    assert key(GMRef(a), GMRef(a)) != key(GMRef(a), GMRef(b))  # aliasing
    assert key((a, 0), (a[2:], 0)) != key((a, 0), (b[2:], 0))  # a pointer's storage too
    assert key((a, 0), 3) == key((b, 0), 3) != key((b, 0), 3.0)


@pl.jit(arch="a5")
def pointer_copy(p: pl.Ptr[pl.DT_FP16], z: pl.Tensor[[64, 128], pl.DT_FP16]):
    with pl.section_vector():
        x = pl.make_tensor(p, [64, 128])  # a view the kernel makes: rebound with its storage
        t = pl.make_tile(T, addr=0x0)
        pl.load(t, x, [0, 0])
        pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.store(z, t, [0, 0])


def test_a_pointer_is_rebound_even_when_its_storage_was_swapped(recorded) -> None:
    z = torch.zeros(64, 128).half()
    rows = []
    for p in (torch.randn(64, 128).half(), torch.randn(64, 128).half()):
        rows.append(_launch(pointer_copy, 1, (p, z)))
        assert torch.equal(z, p)
    # the same tensor object and geometry, another storage
    p.set_(torch.randn(64, 128).half().untyped_storage(), 0, (64, 128), (128, 1))
    rows.append(_launch(pointer_copy, 1, (p, z)))
    assert torch.equal(z, p)
    assert recorded == [1]
    assert rows[0] == rows[1] == rows[2]
    big = torch.randn(2 * 64 * 128).half()
    _launch(pointer_copy, 1, (big[64 * 128:], z))  # a pointer at another offset
    assert recorded == [1, 1]
    assert torch.equal(z.view(-1), big[64 * 128:])


def test_an_operand_it_cannot_rebind_records_afresh(recorded, monkeypatch) -> None:
    entries: list[memo.Entry] = []
    store = memo.store
    monkeypatch.setattr(memo, "store", lambda *a, **k: entries.append(store(*a, **k))
                        or entries[-1])
    add = load("vector_add").add_kernel
    x, y, z = _add_args()
    _launch(add, 4, (x, y, z))
    # a GM view of a storage no parameter has (as a kernel-made GM buffer would be)
    instr = next(i for i in entries[0].rec.instrs if i.kind == "op" and
                 any(type(a) is GMRef for a in i.args))
    at = next(k for k, a in enumerate(instr.args) if type(a) is GMRef)
    instr.args[at] = GMRef(instr.args[at].tensor.clone())
    x, y, z = _add_args(seed=1)
    _launch(add, 4, (x, y, z))
    assert recorded == [1, 1]
    assert torch.equal(z, x + y)


@pl.jit(arch="a5")
def racy_copy(x: pl.Tensor[[64, 128], pl.DT_FP16], z: pl.Tensor[[64, 128], pl.DT_FP16]):
    with pl.section_vector():
        t = pl.make_tile(T, addr=0x0)
        pl.load(t, x, [0, 0])
        pl.store(z, t, [0, 0])  # BUG: no sync: the store reads the tile the load writes


def test_a_racy_kernel_with_new_tensors_computes_what_a_recorded_launch_does(recorded) -> None:
    def args(seed: int) -> tuple:
        g = torch.Generator().manual_seed(seed)
        return torch.randn(64, 128, generator=g).half(), torch.full((64, 128), -1.0).half()

    deferred = replay.PATHS["deferred"]
    _launch(racy_copy, 1, args(0))
    rebound = args(1)
    got = _launch(racy_copy, 1, rebound)
    assert recorded == [1]
    assert replay.PATHS["deferred"] == deferred + 2  # (the race: writes land at the finish)
    memo.clear()
    fresh = args(1)
    assert _launch(racy_copy, 1, fresh) == got
    assert torch.equal(rebound[1], fresh[1])
