"""Diagnostics at the first wrong use, in the tensor's own terms: a tile in the wrong memory
space fails where it is loaded or computed on (not at a later store), and an out-of-bounds load
says which axis of the tensor the window leaves, in indices, not bytes."""
from __future__ import annotations

import inspect

import pytest
import torch

import pypto_pro.language as pl
from pypto_pro.errors import InvalidOperationError, SimulationError

MAT = pl.TileType([128, 128], pl.DT_FP16, pl.MemorySpace.Mat)
VEC = pl.TileType([128, 128], pl.DT_FP16, pl.MemorySpace.Vec)
F16 = pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP16]


def line_of(kernel, text: str) -> int:
    lines, start = inspect.getsourcelines(kernel.kernel_def.fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


@pl.jit
def mat_in_vector(x: F16, z: F16):
    with pl.section_vector():
        a = pl.make_tile(MAT, addr=0x0)
        c = pl.make_tile(VEC, addr=0x10000)
        pl.load_tile(a, x, [0, 0])  # first wrong use
        pl.add(c, a, a)
        pl.store_tile(z, a, [0, 0])


@pl.jit
def mat_operand(x: F16, z: F16):
    with pl.section_vector():
        a = pl.make_tile(VEC, addr=0x0)
        m = pl.make_tile(MAT, addr=0x0)
        c = pl.make_tile(VEC, addr=0x10000)
        pl.load_tile(a, x, [0, 0])
        pl.add(c, a, m)  # first wrong use
        pl.store_tile(z, c, [0, 0])


def test_a_mat_tile_loaded_in_a_vector_section_fails_at_the_load():
    x = torch.zeros(128, 128).half()
    with pytest.raises(InvalidOperationError) as err:
        mat_in_vector(x, torch.zeros_like(x))
    e = err.value
    assert e.span.line == line_of(mat_in_vector, "first wrong use")
    assert "load into `a`, a Mat tile, in a vector section" in e.message
    assert "pl.MemorySpace.Vec" in e.hint


def test_a_vector_op_on_a_mat_tile_fails_at_the_op():
    x = torch.zeros(128, 128).half()
    with pytest.raises(InvalidOperationError) as err:
        mat_operand(x, torch.zeros_like(x))
    assert err.value.span.line == line_of(mat_operand, "first wrong use")
    assert "pl.add works on Vec (UB) tiles; `m` is a Mat tile" in err.value.message


@pl.jit
def past_the_end(x: F16, z: F16):
    with pl.section_vector():
        a = pl.make_tile(VEC, addr=0x0)
        pl.load_tile(a, x, [8, 0])  # rows 1024..1151 of 1024
        pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.store_tile(z, a, [0, 0])


def test_an_out_of_bounds_load_is_said_in_indices_and_shape():
    x = torch.zeros(1024, 1024).half()
    with pytest.raises(SimulationError) as err:
        past_the_end(x, torch.zeros_like(x))
    message = err.value.message
    assert "window [1024, 0]+[128, 128] of tensor [1024, 1024]" in message
    assert "axis 0 spans [1024, 1152) but the tensor has 1024 there" in message
    assert "bytes" not in message
    assert err.value.span.line == line_of(past_the_end, "rows 1024..1151")
