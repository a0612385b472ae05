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

from dataclasses import dataclass

import numpy as np
import pytest
import torch

import pypto_pro.language as pl
from pypto_pro.runtime.backends import use_backend
from pypto_pro.sim import scheduler_native

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
    monkeypatch.setenv(scheduler_native.ENV_ENGINE, "python" if engine == "python" else "native")
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
