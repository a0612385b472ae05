"""SIMT atomics under contention (spec §2.14): 2048 threads of one launch hitting one UB or GM
address give the exact result of running the threads one after another in linear order, and
each thread's returned old value is the one that order gives it. The same kernel runs natively
in `tests/pypto_pro/native/test_native_simt.py`."""
from __future__ import annotations

import pytest
import torch

import pypto_pro.language as pl
from pypto_pro.errors import SimulationError
from pypto_pro.runtime.backends import use_backend

N = 2048
I32, F32 = pl.DT_INT32, pl.DT_FP32


@pl.simt.function(max_threads=N)
def hammer(t: pl.Tile[[1, N], I32], g: pl.Tensor[[1, 16], I32], f: pl.Tensor[[1, 4], F32],
           olds: pl.Tensor[[3, N], I32]):
    tid = pl.simt.thread_idx().x
    olds[0, tid] = pl.simt.atomic_add(t[0, 0], 1)  # UB, every thread, old value used
    pl.simt.atomic_add(g[0, 0], tid)  # GM, old value unused: one index_add_
    pl.simt.atomic_sub(g[0, 1], 2)
    pl.simt.atomic_max(g[0, 2], tid % 1000)
    pl.simt.atomic_min(g[0, 3], 0 - tid)
    pl.simt.atomic_or(g[0, 4], 1 << (tid % 31))
    pl.simt.atomic_and(g[0, 5], 65535 - (1 << (tid % 16)))
    pl.simt.atomic_xor(g[0, 6], tid)
    olds[1, tid] = pl.simt.atomic_inc(g[0, 7], 100)
    pl.simt.atomic_dec(g[0, 8], 100)
    pl.simt.atomic_exch(g[0, 9], tid)
    olds[2, tid] = pl.simt.atomic_cas(g[0, 10], tid, tid + 1)
    if tid % 4 == 0:
        pl.simt.atomic_add(t[0, 1 + tid % 8], 1)  # two addresses, 256 threads each
    pl.simt.atomic_add(f[0, 0], 0.5)
    pl.simt.atomic_add(f[0, 1], pl.simt.cast(tid, F32))
    t[0, 16 + tid % 16] = 7


@pl.jit(arch="a5")
def atomics_kernel(g: pl.Tensor[[1, 16], I32], f: pl.Tensor[[1, 4], F32],
                   olds: pl.Tensor[[3, N], I32], ub: pl.Tensor[[1, N], I32]):
    with pl.section_vector():
        t = pl.make_tile(pl.TileType([1, N], I32), addr=0)
        pl.load(t, ub, [0, 0])
        pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
        pl.simt.launch(hammer, threads=N, args=(t, g, f, olds))
        pl.system.sync_src(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=1)
        pl.system.sync_dst(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=1)
        pl.store(ub, t, [0, 0])


def make_inputs() -> list[torch.Tensor]:
    g = torch.zeros(1, 16, dtype=torch.int32)
    g[0, 5] = 0xFFFF
    g[0, 6] = 5
    return [g, torch.zeros(1, 4), torch.zeros(3, N, dtype=torch.int32),
            torch.zeros(1, N, dtype=torch.int32)]


def test_contended_atomics_are_exact():
    g, f, olds, ub = make_inputs()
    with use_backend("sim"):
        atomics_kernel(g, f, olds, ub)
    tids = torch.arange(N)
    assert ub[0, 0] == N
    assert torch.equal(olds[0], tids.int())  # thread i saw i earlier increments
    assert ub[0, 1:9].tolist() == [256, 0, 0, 0, 256, 0, 0, 0]
    assert ub[0, 16:32].tolist() == [7] * 16
    assert g[0, 0] == N * (N - 1) // 2 and g[0, 1] == -2 * N
    assert g[0, 2] == 999 and g[0, 3] == -(N - 1)
    assert g[0, 4] == 0x7FFFFFFF and g[0, 5] == 0
    xor = 5
    for i in range(N):
        xor ^= i
    assert g[0, 6] == xor
    inc = [0]
    for _ in range(N):
        inc.append(0 if inc[-1] >= 100 else inc[-1] + 1)
    assert torch.equal(olds[1], torch.tensor(inc[:N], dtype=torch.int32))
    assert g[0, 7] == inc[N]
    dec = 0
    for _ in range(N):
        dec = 100 if dec == 0 or dec > 100 else dec - 1
    assert g[0, 8] == dec
    assert g[0, 9] == N - 1  # the last thread's exchange
    assert torch.equal(olds[2], tids.int()) and g[0, 10] == N  # a compare-and-swap chain
    assert f[0, 0] == 0.5 * N
    assert f[0, 1] == float(N * (N - 1) // 2)  # every partial sum is exact in FP32


@pl.simt.function(max_threads=32)
def half_atomic(t: pl.Tile[[1, 32], pl.DT_FP16]):
    pl.simt.atomic_add(t[0, 0], 1.0)


@pl.jit(arch="a5")
def half_atomic_kernel(x: pl.Tensor[[1, 32], pl.DT_FP16]):
    with pl.section_vector():
        t = pl.make_tile(pl.TileType([1, 32], pl.DT_FP16), addr=0)
        pl.simt.launch(half_atomic, threads=32, args=(t,))


def test_atomics_need_32_bit_elements():
    with use_backend("sim"), pytest.raises(SimulationError, match="32-bit elements"):
        half_atomic_kernel(torch.zeros(1, 32, dtype=torch.float16))
