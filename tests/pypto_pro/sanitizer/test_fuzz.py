"""Hypothesis fuzzing of the sanitizer.

* No false positives: correct kernels (softmax with row/column tails, double-buffered vector add)
  at random shapes and block counts (waves included) give zero findings.
* No false negatives: a correct explicit-sync pipeline (load, load → add → abs → store) with a
  random subset of its flag pairs deleted reports a race on exactly the pipes whose sync was
  deleted, and nothing when none was.

`PYPTOPRO_FUZZ_EXAMPLES` scales the number of examples (default 6: the CI budget); the slow job
runs e.g. `PYPTOPRO_FUZZ_EXAMPLES=300` (see tests/README.md).
"""
from __future__ import annotations

import os

import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pypto_pro.language as pl
from pypto_pro.examples import load
from pypto_pro.runtime.backends import use_backend
from pypto_pro.sanitizer import sanitize

EXAMPLES = int(os.environ.get("PYPTOPRO_FUZZ_EXAMPLES", "6"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=EXAMPLES <= 6,
                    suppress_health_check=[HealthCheck.too_slow])
MTE2, V, MTE3 = pl.PipeType.MTE2, pl.PipeType.V, pl.PipeType.MTE3
T = pl.TileType([32, 128], pl.DT_FP16)


@SETTINGS
@given(rows=st.integers(1, 200), cols=st.integers(1, 512), blocks=st.integers(1, 70))
def test_softmax_is_clean_at_any_shape(rows, cols, blocks):
    m = load("softmax")
    x, y = m.make_inputs(rows, cols, seed=rows + cols)
    with use_backend("sim"), sanitize():
        m.softmax_kernel[None, blocks](x, y)
    assert len(m.softmax_kernel.last_result.sanitizer) == 0
    torch.testing.assert_close(y, torch.softmax(x, dim=-1), rtol=1e-5, atol=1e-5)


@SETTINGS
@given(mt=st.integers(1, 4), nt=st.integers(1, 2), blocks=st.integers(1, 68))
def test_vector_add_is_clean_at_any_tiling(mt, nt, blocks):
    m = load("vector_add")
    x, y, z = m.make_inputs(128 * mt, 128 * nt, seed=mt + nt)
    with use_backend("sim"), sanitize():
        m.add_kernel[None, blocks](x, y, z)
    assert len(m.add_kernel.last_result.sanitizer) == 0
    assert torch.equal(z, x + y)


def make_pipeline(keep_load: bool, keep_add: bool, keep_store: bool):
    """load a, b (MTE2) → add (V) → abs (V) → store (MTE3); each `keep_*` keeps one flag pair."""

    @pl.jit(arch="a5")
    def pipeline(x: pl.Tensor[[32, 128], pl.DT_FP16], y: pl.Tensor[[32, 128], pl.DT_FP16],
                 z: pl.Tensor[[32, 128], pl.DT_FP16]):
        with pl.section_vector():
            a = pl.make_tile(T, addr=0x0)
            b = pl.make_tile(T, addr=0x2000)
            c = pl.make_tile(T, addr=0x4000)
            pl.load(a, x, [0, 0])
            pl.load(b, y, [0, 0])
            if keep_load:
                pl.system.sync_src(set_pipe=MTE2, wait_pipe=V, event_id=0)
                pl.system.sync_dst(set_pipe=MTE2, wait_pipe=V, event_id=0)
            pl.add(c, a, b)
            if keep_add:
                pl.system.bar_v()
            pl.abs(c, c)
            if keep_store:
                pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=0)
                pl.system.sync_dst(set_pipe=V, wait_pipe=MTE3, event_id=0)
            pl.store(z, c, [0, 0])

    return pipeline


@SETTINGS
@given(keep=st.tuples(st.booleans(), st.booleans(), st.booleans()))
def test_deleting_a_sync_is_always_caught(keep):
    kernel = make_pipeline(*keep)
    x, y = torch.randn(32, 128).half(), torch.randn(32, 128).half()
    with use_backend("sim"), sanitize():
        kernel[None, 1](x, y, torch.zeros_like(x))
    races = {(f.other.pipe, f.site.pipe) for f in kernel.last_result.sanitizer
             if f.kind.startswith("DATA_RACE")}
    keep_load, _, keep_store = keep  # V after V is in order: bar_v is never needed
    assert (("MTE2", "V") in races) == (not keep_load)
    assert (("V", "MTE3") in races) == (not keep_store)
    assert races <= {("MTE2", "V"), ("V", "MTE3")}
