"""Runtime behaviour the real PyPTO Pro shows to a kernel author (learned from its runtime
source: `runtime/jit.py`, `runtime/shape_policy.py`, `runtime/tilingkey.py`,
`language/typing/_tiling.py`), checked with our own kernels on the simulator and, where cheap,
the native backend.

Covered: how tensor arguments reach the kernel (a pointer to the first element, read
row-major: non-contiguous views read the storage behind them), shape-binding errors (ValueError
naming the parameter and axis), None tensors, the launch brackets, tiling-key schema checks
and launch keys, tiling-class fields and their serialisation.
"""
from __future__ import annotations

import pytest
import torch
from dual_backend import sim_and_native

import pypto_pro.language as pl

VT = pl.TileType(shape=[16, 32], dtype=pl.DT_FP32, target_memory=pl.MemorySpace.Vec)


@pl.jit
def copy16x32(x: pl.Tensor[[16, 32], pl.DT_FP32], z: pl.Tensor[[16, 32], pl.DT_FP32]):
    with pl.section_vector():
        a = pl.make_tile(VT, addr=0x0)
        pl.load(a, x, [0, 0])
        pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.store(z, a, [0, 0])


# ---------------------------------------------------------------- tensors: pointer + row-major


def test_a_transposed_input_is_read_from_its_storage_row_major():
    storage = torch.arange(32 * 16, dtype=torch.float32).reshape(32, 16)

    def run():
        z = torch.zeros(16, 32)
        copy16x32(storage.t(), z)
        return z

    assert torch.equal(sim_and_native(run), storage.reshape(16, 32))


def test_a_column_slice_input_reads_the_rows_that_follow_in_memory():
    wide = torch.arange(16 * 64, dtype=torch.float32).reshape(16, 64)

    def run():
        z = torch.zeros(16, 32)
        copy16x32(wide[:, 32:], z)  # starts at element 32 of the storage
        return z

    assert torch.equal(sim_and_native(run), wide.flatten()[32:32 + 512].reshape(16, 32))


def test_a_transposed_output_is_written_row_major_into_its_storage():
    x = torch.randn(16, 32)

    def run():
        storage = torch.zeros(32, 16)
        copy16x32(x, storage.t())
        return storage

    assert torch.equal(sim_and_native(run).reshape(16, 32), x)
