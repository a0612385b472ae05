"""Physical layouts: round trips for every layout and element size, pinned positions."""
from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pypto_pro.ir.types import TileLayout
from pypto_pro.sim.model.layout import (
    element_offsets,
    fractal_shape,
    from_physical,
    outer_stride,
    to_physical,
)

ALL = list(TileLayout)


def test_fractal_shapes_follow_the_small_letter():
    assert fractal_shape(TileLayout.NZ, 16) == (16, 16)
    assert fractal_shape(TileLayout.NZ, 32) == (16, 8)
    assert fractal_shape(TileLayout.ZN, 32) == (8, 16)
    assert fractal_shape(TileLayout.NZ, 8) == (16, 32)
    assert fractal_shape(TileLayout.ZN, 8) == (32, 16)
    assert fractal_shape(TileLayout.NZ, 4) == (16, 64)
    assert fractal_shape(TileLayout.NZ, 32, 1024) == (16, 16)  # Acc FP32
    assert fractal_shape(TileLayout.ZZ, 8, 32) == (16, 2)  # E8M0 ScaleLeft
    assert fractal_shape(TileLayout.NN, 8, 32) == (2, 16)  # E8M0 ScaleRight
    assert fractal_shape(TileLayout.ND, 16) == (1, 1)


@settings(max_examples=60, deadline=None)
@given(layout=st.sampled_from(ALL), bits=st.sampled_from([4, 8, 16, 32]),
       grid=st.tuples(st.integers(1, 3), st.integers(1, 3)),
       fractal_bytes=st.sampled_from([512, 1024]))
def test_round_trip_every_layout_and_size(layout, bits, grid, fractal_bytes):
    fr, fc = fractal_shape(layout, bits, fractal_bytes)
    scale = (1, 1) if layout.is_fractal else (5, 3)
    shape = (grid[0] * fr * scale[0], grid[1] * fc * scale[1])
    matrix = torch.arange(shape[0] * shape[1]).reshape(shape)
    flat = to_physical(matrix, layout, (fr, fc))
    assert flat.shape == (shape[0] * shape[1],)
    assert torch.equal(from_physical(flat, layout, shape, (fr, fc)), matrix)
    offsets = element_offsets(shape, layout, (fr, fc))
    assert torch.equal(flat[offsets], matrix)  # offsets agree with to_physical


def test_pinned_positions_fp16_nz_and_zn():
    matrix = torch.arange(32 * 32).reshape(32, 32)
    nz = to_physical(matrix, TileLayout.NZ, (16, 16))
    assert nz[:3].tolist() == [0, 1, 2]  # row 0 of fractal (0, 0)
    assert nz[16].item() == 32  # row 1 of the same fractal
    assert nz[256].item() == 16 * 32  # N: the next fractal is below (rows 16..31, cols 0..15)
    assert nz[512].item() == 16  # then the next column of fractals
    zn = to_physical(matrix, TileLayout.ZN, (16, 16))
    assert zn[:3].tolist() == [0, 32, 64]  # n: column-major inside the fractal
    assert zn[256].item() == 16  # Z: the next fractal is to the right


def test_pinned_positions_nd_dn_zz_nn():
    matrix = torch.arange(4 * 6).reshape(4, 6)
    assert to_physical(matrix, TileLayout.ND).tolist() == list(range(24))
    assert to_physical(matrix, TileLayout.DN)[:5].tolist() == [0, 6, 12, 18, 1]
    m = torch.arange(32 * 4).reshape(32, 4)
    zz = to_physical(m, TileLayout.ZZ, (16, 2))
    assert zz[:4].tolist() == [0, 1, 4, 5]  # 16x2 fractals, row-major inside
    assert zz[32].item() == 2  # Z: fractal (0, 1) next
    nn = to_physical(torch.arange(4 * 32).reshape(4, 32), TileLayout.NN, (2, 16))
    assert nn[:3].tolist() == [0, 32, 1]  # 2x16 fractal, column-major inside
    assert nn[32].item() == 64  # N: fractal (1, 0) next


def test_outer_stride_for_compact_tiles():
    assert outer_stride(TileLayout.NZ, (64, 32), (16, 16), 0, (20, 32)) == 64
    assert outer_stride(TileLayout.NZ, (64, 32), (16, 16), 1, (20, 32)) == 32
    assert outer_stride(TileLayout.ZN, (32, 64), (16, 16), 1, (32, 40)) == 48
    assert outer_stride(TileLayout.ND, (8, 16), (1, 1), 2, (8, 16)) == 17
    offsets = element_offsets((64, 32), TileLayout.NZ, (16, 16), stride=32)
    assert offsets[0, 16].item() == 32 * 16  # the second column block starts after 32 rows
    assert offsets[17, 3].item() == 17 * 16 + 3


def test_shapes_that_do_not_tile_are_rejected():
    with pytest.raises(ValueError, match="fractal"):
        to_physical(torch.zeros(20, 16), TileLayout.NZ, (16, 16))
