"""Fuzzing the relaunch caches against the oracle (`SimBackend(cache=False)`): random GM views
(row padding, storage offsets, transposed layouts), random aliasing between the arguments (an
output in place of an input, one shifted over it, overlapping numpy storages, two storages at
one address), random float scalars (±0.0, NaN, infinities, denormals) and random sequences of
relaunches (the same tensors, a new scalar, new tensors of the same layout), timed and
functional-only. Every launch must give the oracle's bytes (of every storage an argument
views), printed text and trace rows. `PYPTOPRO_FUZZ_EXAMPLES` scales the example count
(tests/README.md: the slow fuzz job).
"""
from __future__ import annotations

import dataclasses
import os

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pypto_pro.language as pl
from pypto_pro.errors import PyptoError
from pypto_pro.runtime.backends import register_backend, use_backend
from pypto_pro.runtime.backends.sim import SimBackend
from pypto_pro.sim import settings as sim_settings
from pypto_pro.sim.fast import lanes, memo

EXAMPLES = int(os.environ.get("PYPTOPRO_FUZZ_EXAMPLES", "6"))
MTE2, V, MTE3 = pl.PipeType.MTE2, pl.PipeType.V, pl.PipeType.MTE3
T = pl.TileType([16, 64], pl.DT_FP32)
COLS = 64
SCALARS = [0.0, -0.0, 1.0, -2.5, float("nan"), float("inf"), float("-inf"), 1e-40, 3.0e38]
#: how the output relates to the inputs
ALIASING = ["apart", "in place", "shifted", "numpy overlap", "one address"]


@pl.jit(arch="a5")
def scaled_add(x: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP32],
               y: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP32],
               z: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP32], a: pl.DT_FP32):
    """z = x * a + y, 16-row tiles dealt round-robin to the blocks."""
    with pl.section_vector():
        xt = pl.make_tile(T, addr=0x0)
        yt = pl.make_tile(T, addr=0x1000)
        for t in pl.range(pl.get_block_idx(), x.shape[0] // 16, pl.get_block_num()):
            pl.load(xt, x, [t, 0])
            pl.load(yt, y, [t, 0])
            pl.system.sync_src(set_pipe=MTE2, wait_pipe=V, event_id=0)
            pl.system.sync_dst(set_pipe=MTE2, wait_pipe=V, event_id=0)
            pl.mul(xt, xt, a)
            pl.add(xt, xt, yt)
            pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=0)
            pl.system.sync_dst(set_pipe=V, wait_pipe=MTE3, event_id=0)
            pl.store(z, xt, [t, 0])
            pl.system.sync_src(set_pipe=MTE3, wait_pipe=MTE2, event_id=1)
            pl.system.sync_dst(set_pipe=MTE3, wait_pipe=MTE2, event_id=1)


@dataclasses.dataclass(frozen=True)
class Layout:
    """How the arguments are laid out: rows, each view's row padding and storage offset (in
    elements), whether x is a transposed view, and how z aliases x."""

    rows: int
    pads: tuple[int, int, int]
    offsets: tuple[int, int, int]
    transposed: bool
    aliasing: str


class Setup:
    """One set of tensors of a `Layout`: the buffers holding them (whose every byte is
    compared) and the views passed; `reset` puts the first contents back."""

    def __init__(self, layout: Layout, seed: int) -> None:
        g = torch.Generator().manual_seed(seed)
        rows = layout.rows
        self.buffers: list[torch.Tensor] = []
        self.keep: list = []
        x = self._view(layout, 0, g, layout.transposed)
        y = self._view(layout, 1, g, False)
        kind = layout.aliasing
        if kind == "apart":
            z = self._view(layout, 2, g, False)
        elif kind == "in place":
            z = x
        elif kind == "shifted":  # z starts a tile further down x: blocks read what others write
            z = x[16:] if rows > 16 else x
        else:
            array = torch.randn(3 * rows * COLS, generator=g).numpy()
            self.keep.append(array)
            if kind == "numpy overlap":  # storages [0, 2n) and [n, 3n)
                n = rows * COLS
                x = torch.from_numpy(array[0:2 * n])[:n].view(rows, COLS)
                z = torch.from_numpy(array[n:3 * n])[:n].view(rows, COLS)
            else:  # one address: x's storage of 3n elements, z's of n
                base = torch.from_numpy(array)
                x = base[:rows * COLS].view(rows, COLS)
                z = torch.empty(0).set_(base.untyped_storage()[0:4 * rows * COLS], 0,
                                        (rows, COLS), (COLS, 1))
            self.buffers.append(torch.from_numpy(array))
        self.args = (x, y, z)
        self.first = [b.clone() for b in self.buffers]

    def _view(self, layout: Layout, k: int, g: torch.Generator, transposed: bool
              ) -> torch.Tensor:
        rows, pad, offset = layout.rows, layout.pads[k], layout.offsets[k]
        if transposed:  # x[r, c] at c * (rows + pad) + r
            buf = torch.randn(offset + COLS * (rows + pad), generator=g)
            view = buf[offset:].view(COLS, rows + pad)[:, :rows].t()
        else:
            buf = torch.randn(offset + rows * (COLS + pad), generator=g)
            view = buf[offset:].view(rows, COLS + pad)[:, :COLS]
        self.buffers.append(buf)
        return view

    def reset(self) -> None:
        for buf, first in zip(self.buffers, self.first):
            buf.copy_(first)

    def bytes(self) -> list[bytes]:
        return [b.view(torch.uint8).numpy().tobytes() for b in self.buffers]


@pytest.fixture
def fuzz_backends(monkeypatch, stream_engine):
    monkeypatch.setenv(sim_settings.LANES, "2")
    monkeypatch.setattr(lanes, "_MIN_LANE", 1)
    for mode, options in {"timed": {}, "functional": {"functional_only": True}}.items():
        register_backend(f"fuzz-cached-{mode}", lambda o=options: SimBackend(cache=True, **o))
        register_backend(f"fuzz-oracle-{mode}", lambda o=options: SimBackend(cache=False, **o))


def _observed(setup: Setup, block_dim: int, scalar: float, backend: str) -> dict:
    """What a launch leaves: every byte of the buffers, and its printed text and trace rows,
    or its error (a shifted output runs past its end)."""
    setup.reset()
    seen: dict = {}
    try:
        with use_backend(backend):
            scaled_add[None, block_dim](*setup.args, scalar)
    except PyptoError as err:
        seen["error"] = str(err)
    else:
        trace = scaled_add.last_result.trace
        seen["printed"] = scaled_add.last_result.printed
        if trace is not None:
            seen["rows"] = list(trace._log.rows)
    seen["bytes"] = setup.bytes()
    return seen


layouts = st.builds(
    Layout, rows=st.sampled_from([16, 32, 48, 64, 128]),
    pads=st.tuples(*[st.sampled_from([0, 0, 3, 64])] * 3),
    offsets=st.tuples(*[st.sampled_from([0, 0, 5, 1024])] * 3),
    transposed=st.booleans(), aliasing=st.sampled_from(ALIASING))


@settings(max_examples=EXAMPLES, deadline=None, derandomize=EXAMPLES <= 6,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(layout=layouts, block_dim=st.integers(1, 6), mode=st.sampled_from(["timed", "functional"]),
       steps=st.lists(st.tuples(st.sampled_from(["again", "again", "scalar", "new"]),
                                st.sampled_from(SCALARS)), min_size=3, max_size=8),
       seed=st.integers(0, 2 ** 16))
def test_cached_relaunches_are_the_oracles(fuzz_backends, layout, block_dim, mode, steps, seed):
    memo.clear()
    setup, scalar = Setup(layout, seed), SCALARS[0]
    for k, (action, value) in enumerate(steps):
        if action == "scalar":
            scalar = value
        elif action == "new":
            setup = Setup(layout, seed)
        oracle = _observed(Setup(layout, seed), block_dim, scalar, f"fuzz-oracle-{mode}")
        cached = _observed(setup, block_dim, scalar, f"fuzz-cached-{mode}")
        assert cached == oracle, (k, action, scalar)
