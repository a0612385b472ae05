"""The issue path shares what it can between issues: a sync call site issues one instruction
per id (a core copies it before keeping per-issue state on it), a lock granted at issue joins
its mutex's FIFO as a shared entry of its pipe, and a tile operand reuses the TileRef it made
while its memory and valid shape are unchanged (`Launch.tile_ref`). None of it may show: the
same site queued twice keeps two issue orders, a held mutex still stalls or fails a lock by
the right pipe, and a changed valid shape reaches the next op. Each kernel runs on the timing
engine and the functional executor, which must agree."""
from __future__ import annotations

import re

import pytest
import torch

import pypto_pro.language as pl
from pypto_pro.errors import DeadlockError, PyptoError, SimulationError
from pypto_pro.runtime import backends

MTE2, MTE3 = pl.PipeType.MTE2, pl.PipeType.MTE3
T16 = pl.TileType([16, 16], pl.DT_FP32)
BLOCK = pl.Tensor[[16, 16], pl.DT_FP32]
PAIR = pl.Tensor[[32, 16], pl.DT_FP32]
QUAD = pl.Tensor[[64, 16], pl.DT_FP32]
MODES = ("sim", "functional")


pytestmark = pytest.mark.usefixtures("functional_backend")  # (conftest)


def _run(mode: str, kernel, args: tuple) -> tuple:
    args = tuple(a.clone() for a in args)
    with backends.use_backend(mode):
        kernel[None, 1](*args)
    return args


def _both(kernel, args: tuple) -> tuple:
    """The tensors after the launch, the same on both engines."""
    timed, functional = (_run(m, kernel, args) for m in MODES)
    for t, f in zip(timed, functional):
        assert torch.equal(t, f)
    return functional


def _failure(kernel, args: tuple) -> PyptoError:
    """Both engines fail alike (cycle numbers aside); the functional executor's error."""
    errors = []
    for mode in MODES:
        with pytest.raises(PyptoError) as info:
            _run(mode, kernel, args)
        errors.append(info.value)
    timed, functional = errors
    assert type(timed) is type(functional) and timed.span == functional.span
    assert re.sub(r"cycle \d+", "", timed.message) == re.sub(r"cycle \d+", "",
                                                             functional.message)
    return functional


@pl.jit(arch="a5", auto_mutex=False)
def syncs_queued_twice(x: PAIR, z: PAIR):
    """MTE3 stalls on flag 1 until the end, so both issues of the loop's wait on flag 0 and of
    its lock and unlock of mutex 5 queue behind it: each lock keeps its own place in the
    mutex's FIFO, and the second set of flag 0 is legal only because the first wait was
    issued between the two sets (judged by the queued waits' issue order)."""
    with pl.section_vector():
        tiles = pl.make_tile_group(type=T16, addrs=0x0, depth=2)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=1)
        for i in pl.range(2):
            a = tiles.next()
            pl.load(a, x, [i * 16, 0])
            pl.system.sync_src(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
            pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
            pl.system.mutex_lock(pipe=MTE3, mutex_id=5)
            pl.store(z, a, [i * 16, 0])
            pl.system.mutex_unlock(pipe=MTE3, mutex_id=5)
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=MTE3, event_id=1)


def test_sync_sites_queued_twice_keep_both_issues():
    x = torch.randn(32, 16)
    _, z = _both(syncs_queued_twice, (x, torch.zeros(32, 16)))
    assert torch.equal(z, x)


@pl.jit(arch="a5", auto_mutex=False)
def validshape_between_ops(x: BLOCK, z: QUAD):
    """One tile stored at alternating valid shapes: each store sees the shape set before it."""
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        pl.load(a, x, [0, 0])
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        for i in pl.range(2):
            pl.set_validshape(a, [8 + 8 * i, 16])
            pl.store(z, a, [i * 32, 0])
            pl.set_validshape(a, [4, 16])
            pl.store(z, a, [i * 32 + 16, 0])


def test_a_changed_valid_shape_reaches_the_next_op():
    x = torch.randn(16, 16)
    _, z = _both(validshape_between_ops, (x, torch.zeros(64, 16)))
    expected = torch.zeros(64, 16)
    expected[0:8], expected[16:20], expected[32:48], expected[48:52] = x[:8], x[:4], x, x[:4]
    assert torch.equal(z, expected)


@pl.jit(arch="a5", auto_mutex=False)
def lock_twice_on_one_pipe(x: BLOCK, z: BLOCK):
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        pl.system.mutex_lock(pipe=MTE2, mutex_id=4)
        pl.load(a, x, [0, 0])
        pl.system.mutex_lock(pipe=MTE2, mutex_id=4)  # its own lock: hangs the hardware


@pl.jit(arch="a5", auto_mutex=False)
def unlock_on_another_pipe(x: BLOCK, z: BLOCK):
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        pl.system.mutex_lock(pipe=MTE2, mutex_id=4)
        pl.load(a, x, [0, 0])
        pl.system.mutex_unlock(pipe=MTE3, mutex_id=4)  # MTE2 holds it


@pl.jit(arch="a5", auto_mutex=False)
def relock_in_a_loop(x: BLOCK, z: BLOCK):
    """Each pass takes mutex 4 on MTE2 (granted at issue) and leaves it held: the second
    pass's lock waits on the first one's forever."""
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        for i in pl.range(2):
            pl.system.mutex_lock(pipe=MTE2, mutex_id=4)
            pl.load(a, x, [0, 0])


@pytest.mark.parametrize("kernel,error,pattern", [
    (lock_twice_on_one_pipe, DeadlockError,
     "mutex 4 (held by this same pipe: a double lock hangs the hardware)"),
    (unlock_on_another_pipe, SimulationError, "mutex 4 unlocked on pipe MTE3 without a "
                                              "matching lock"),
    (relock_in_a_loop, DeadlockError, "mutex 4 (held by this same pipe"),
], ids=["lock_twice", "unlock_elsewhere", "relock_in_loop"])
def test_a_mutex_granted_at_issue_still_holds(kernel, error, pattern):
    err = _failure(kernel, (torch.randn(16, 16), torch.zeros(16, 16)))
    assert isinstance(err, error) and pattern in err.message
