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
from kernel_source import line_of

import pypto_pro.language as pl
from pypto_pro.errors import InvalidShape, InvalidType, SimulationError

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


# ---------------------------------------------------------------- shape binding at launch


@pl.jit
def rows_copy(x: pl.Tensor[[pl.DYNAMIC, 32], pl.DT_FP32],
              z: pl.Tensor[[pl.DYNAMIC, 32], pl.DT_FP32]):
    with pl.section_vector():
        a = pl.make_tile(VT, addr=0x0)
        pl.load(a, x, [0, 0])
        pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.store(z, a, [0, 0])


@pl.jit
def static_rows(x: pl.Tensor[[pl.STATIC, 32], pl.DT_FP32], z: pl.Tensor[[16, 32], pl.DT_FP32]):
    with pl.section_vector():
        a = pl.make_tile(VT, addr=0x0)
        pl.load(a, x, [0, 0])
        pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.store(z, a, [0, 0])


@pytest.mark.parametrize("x, z, match", [
    (torch.zeros(512), torch.zeros(16, 32), r"'x': rank mismatch — expected 2, got 1"),
    (torch.zeros(16, 64), torch.zeros(16, 32), r"'x': dim mismatch — axis 1 expected 32, got 64"),
    (torch.zeros(0, 32), torch.zeros(16, 32), r"'x': axis 0 must be positive, got 0"),
], ids=["rank", "fixed-dim", "zero-size"])
def test_shape_errors_at_launch_are_value_errors_naming_parameter_and_axis(x, z, match):
    kernel = copy16x32 if x.shape[0] != 0 else rows_copy
    with pytest.raises(InvalidShape, match=match) as info:
        kernel(x, z)
    assert isinstance(info.value, ValueError)


def test_dtype_and_type_errors_at_launch_stay_type_errors():
    with pytest.raises(InvalidType, match=r"'x': dtype mismatch"):
        copy16x32(torch.zeros(16, 32, dtype=torch.float64), torch.zeros(16, 32))
    with pytest.raises(InvalidType, match=r"'x': type mismatch — expected torch.Tensor"):
        copy16x32((1.0, 2.0), torch.zeros(16, 32))


def test_none_cannot_stand_for_a_tensor_with_static_dims():
    with pytest.raises(InvalidShape, match=r"arg\[0\] 'x': None cannot bind the STATIC"):
        static_rows(None, torch.zeros(16, 32))


def test_a_none_tensor_the_kernel_reads_is_a_typed_error_at_the_load():
    with pytest.raises(SimulationError, match="block.load") as info:
        rows_copy(None, torch.zeros(16, 32))
    assert info.value.span.line == line_of(rows_copy, "pl.load(a, x, [0, 0])")


def test_a_none_tensor_the_kernel_does_not_touch_runs():
    x = torch.randn(16, 32)

    @pl.jit
    def copy_unless(x: pl.Tensor[[16, 32], pl.DT_FP32],
                    spare: pl.Tensor[[pl.DYNAMIC], pl.DT_FP32],
                    z: pl.Tensor[[16, 32], pl.DT_FP32]):
        with pl.section_vector():
            a = pl.make_tile(VT, addr=0x0)
            pl.load(a, x, [0, 0])
            pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE3, event_id=0)
            pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE3, event_id=0)
            pl.store(z, a, [0, 0])

    def run():
        z = torch.zeros(16, 32)
        copy_unless(x, None, z)
        return z

    assert torch.equal(sim_and_native(run), x)


# ---------------------------------------------------------------- tensor annotations


@pl.jit
def call_style_copy(x: pl.Tensor([pl.DYNAMIC, 32], pl.DT_FP32),
                    z: pl.Tensor([pl.STATIC, 32], pl.DT_FP32)):
    with pl.section_vector():
        a = pl.make_tile(VT, addr=0x0)
        pl.load(a, x, [0, 0])
        pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.store(z, a, [0, 0])


def test_call_style_tensor_annotation_is_the_subscript_form():
    assert pl.Tensor([pl.DYNAMIC, 4], pl.DT_FP16) == pl.Tensor[[pl.DYNAMIC, 4], pl.DT_FP16]
    assert pl.Tensor((8, 8), pl.DT_FP16, pl.DN) == pl.Tensor[[8, 8], pl.DT_FP16, pl.DN]
    x = torch.randn(16, 32)

    def run():
        z = torch.zeros(16, 32)
        call_style_copy(x, z)
        return z

    assert torch.equal(sim_and_native(run), x)


@pytest.mark.parametrize("dim", [True, False, 0, -1, 1.5, "32", None, object()])
def test_a_bad_annotation_dim_is_a_type_error_naming_the_axis(dim):
    with pytest.raises(InvalidType, match="axis 1 annotation must be"):
        pl.Tensor[[4, dim], pl.DT_FP32]


@pytest.mark.parametrize("dims", [[..., pl.STATIC], [pl.DYNAMIC, ..., ...]])
def test_an_ellipsis_only_ends_the_dims(dims):
    with pytest.raises(InvalidType, match="ellipsis must appear once and only as the final"):
        pl.Tensor[dims, pl.DT_FP32]
