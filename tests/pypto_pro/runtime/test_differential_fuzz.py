"""Differential fuzzing, simulator vs native backend, of random op sequences: one kernel reads
a random program (op codes in an INT32 tensor) and applies it to a tile with a runtime-chosen
valid shape, so one native build serves every example. Random shapes (tails included), random
data and random programs must give bit-identical outputs on both backends. Skipped without g++.
`PYPTOPRO_FUZZ_EXAMPLES` scales the example count (see tests/README.md)."""
from __future__ import annotations

import os
import shutil

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pypto_pro.language as pl
from pypto_pro.runtime import backends
from pypto_pro.runtime.backends import use_backend
from pypto_pro.runtime.backends.sim import SimBackend

if shutil.which("g++") is None:
    pytest.skip("the native backend needs g++", allow_module_level=True)

EXAMPLES = int(os.environ.get("PYPTOPRO_FUZZ_EXAMPLES", "6"))
MTE2, V, MTE3 = pl.PipeType.MTE2, pl.PipeType.V, pl.PipeType.MTE3
TILE = pl.TileType([32, 64], pl.DT_FP32, valid_shape=[-1, -1])
OPS = ("add", "sub", "mul", "maximum", "minimum", "abs", "neg", "relu")


@pl.jit(arch="a5")
def op_chain(x: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP32],
             y: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP32],
             prog: pl.Tensor[[pl.DYNAMIC], pl.DT_INT32],
             z: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP32]):
    with pl.section_vector():
        a = pl.make_tile(TILE, addr=0x0)
        b = pl.make_tile(TILE, addr=0x2000)
        pl.set_validshape(a, [x.shape[0], x.shape[1]])
        pl.set_validshape(b, [x.shape[0], x.shape[1]])
        pl.load(a, x, [0, 0])
        pl.load(b, y, [0, 0])
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=V, event_id=0)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=V, event_id=0)
        for i in pl.range(prog.shape[0]):
            op = pl.getval(prog, i)
            if op == 0:
                pl.add(a, a, b)
            elif op == 1:
                pl.sub(a, a, b)
            elif op == 2:
                pl.mul(a, a, b)
            elif op == 3:
                pl.maximum(a, a, b)
            elif op == 4:
                pl.minimum(a, a, b)
            elif op == 5:
                pl.abs(a, a)
            elif op == 6:
                pl.neg(a, a)
            else:
                pl.relu(a, a)
        pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=V, wait_pipe=MTE3, event_id=0)
        pl.store(z, a, [0, 0])


def reference(x: torch.Tensor, y: torch.Tensor, prog: list[int]) -> torch.Tensor:
    a = x.clone()
    fns = (torch.add, torch.sub, torch.mul, torch.maximum, torch.minimum)
    for op in prog:
        if op < len(fns):
            a = fns[op](a, y)
        else:
            a = {5: torch.abs, 6: torch.neg, 7: torch.relu}[op](a)
    return a


@pytest.fixture(scope="module")
def both_backends():
    """A functional simulator as "sim-functional" next to "native"; the native backend (and
    its worker) is closed afterwards only if this module created it."""
    saved = dict(backends._factories), dict(backends._instances)
    backends.register_backend("sim-functional", lambda: SimBackend(functional_only=True))
    yield
    if "native" not in saved[1] and "native" in backends._instances:
        backends._instances["native"].close()
    backends._factories.clear()
    backends._factories.update(saved[0])
    backends._instances.clear()
    backends._instances.update(saved[1])


@settings(max_examples=EXAMPLES, deadline=None, derandomize=EXAMPLES <= 6,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.integers(1, 32), cols=st.integers(1, 64),
       prog=st.lists(st.integers(0, len(OPS) - 1), min_size=1, max_size=12),
       seed=st.integers(0, 2 ** 16))
def test_random_op_sequences_agree_bit_for_bit(both_backends, rows, cols, prog, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, cols, generator=g)
    y = torch.randn(rows, cols, generator=g)
    code = torch.tensor(prog, dtype=torch.int32)
    outs = []
    for backend in ("sim-functional", "native"):
        z = torch.zeros(rows, cols)
        with use_backend(backend):
            op_chain[None, 1](x, y, code, z)
        outs.append(z)
    assert torch.equal(outs[0], outs[1]), f"{int((outs[0] != outs[1]).sum())} elements differ"
    assert torch.equal(outs[0], reference(x, y, prog))
