"""Memories: garbage and init tracking, typed views with aliasing, bounds, GM windows."""
from __future__ import annotations

import pytest
import torch

from pypto_pro.ir.dtype import DataType as D
from pypto_pro.ir.types import MemorySpace as M
from pypto_pro.ir.types import TileLayout as L
from pypto_pro.ir.types import TilePad, TileType
from pypto_pro.sim.model.memory import (
    GARBAGE_PATTERN,
    CoreMemory,
    GMRef,
    SimMemoryError,
    TileGeometry,
    TileRef,
)
from pypto_pro.soc import soc


def tile(mem, rows, cols, dtype, space=M.Vec, layout=L.ND, addr=0, valid=None, **kw):
    return TileRef(mem, TileGeometry(rows, cols, dtype, space, layout, addr=addr, **kw),
                   *(valid or (rows, cols)))


def test_buffers_sized_from_the_soc_and_filled_with_garbage():
    aic, aiv = CoreMemory(soc(), "aic"), CoreMemory(soc(), "aiv")
    assert set(aiv.buffers) == {M.Vec} and aiv.buffers[M.Vec].numel() == 253952
    assert aic.buffers[M.Acc].numel() == 262144 and M.Vec not in aic.buffers
    assert aiv.buffers[M.Vec][:4].tolist() == list(GARBAGE_PATTERN)
    fresh = tile(aiv, 1, 2, D.FP32).read()
    assert torch.all(fresh != 0) and fresh[0, 0].item() == pytest.approx(-1.1800e29, rel=1e-3)


def test_initialised_mask_tracks_written_bytes():
    mem = CoreMemory(soc(), "aiv")
    t = tile(mem, 4, 16, D.FP16, addr=64, valid=(2, 8))
    assert mem.uninitialised_bytes(M.Vec, 64, 64 + 128).numel() == 128
    t.write(torch.ones(2, 8, dtype=torch.float16))
    holes = mem.uninitialised_bytes(M.Vec, 64, 64 + 64)
    assert holes.tolist() == list(range(80, 96)) + list(range(112, 128))


@pytest.mark.parametrize("layout,valid", [(L.ND, (2, 8)), (L.NZ, (2, 8)), (L.NZ, (16, 16))])
def test_writes_leave_the_mask_alone_when_not_tracking(layout, valid):
    mem = CoreMemory(soc(), "aiv")
    mem.track_init = False  # what the engine does for a core no sanitizer observes
    t = TileRef(mem, TileGeometry(16, 16, D.FP16, M.Vec, layout, addr=64), *valid)
    t.write(torch.ones(valid, dtype=torch.float16))
    assert not mem.initialised[M.Vec].any()
    assert torch.equal(t.read(), torch.ones(valid, dtype=torch.float16))


def test_aliased_dn_and_nd_views_share_bytes():
    mem = CoreMemory(soc(), "aiv")
    column = tile(mem, 8, 1, D.FP32, layout=L.DN, addr=256)
    row = tile(mem, 1, 8, D.FP32, addr=256)
    column.write(torch.arange(8.0).reshape(8, 1))
    assert row.read().tolist() == [list(map(float, range(8)))]


def test_fp16_view_of_fp32_bytes_reinterprets():
    mem = CoreMemory(soc(), "aiv")
    f32 = tile(mem, 1, 2, D.FP32, addr=0)
    f32.write(torch.tensor([[1.0, -2.0]]))
    halves = tile(mem, 1, 4, D.FP16, addr=0).read()
    expect = torch.tensor([1.0, -2.0]).view(torch.float16)
    assert torch.equal(halves.view(torch.int16), expect.view(torch.int16).reshape(1, 4))


def test_nz_tile_bytes_are_in_fractal_order():
    mem = CoreMemory(soc(), "aic")
    t = tile(mem, 32, 32, D.FP16, M.Mat, L.NZ, addr=512)
    x = torch.arange(32 * 32, dtype=torch.float16).reshape(32, 32)
    t.write(x)
    raw = mem.buffers[M.Mat][512:512 + 2048].view(torch.float16)
    assert raw[16].item() == 32 and raw[256].item() == 512 and raw[512].item() == 16
    assert torch.equal(t.read_full(), x)


def test_out_of_buffer_access_raises_typed_error():
    mem = CoreMemory(soc(), "aic")
    t = tile(mem, 128, 256, D.FP32, M.Left, L.NZ, addr=0, fractal=512)
    with pytest.raises(SimMemoryError) as err:
        t.read()
    assert isinstance(err.value, IndexError)
    assert err.value.space == "Left" and err.value.size == 65536 and err.value.end == 131072
    assert "Left" in str(err.value)


def test_from_tile_type_and_valid_window():
    tt = TileType((16, 32), D.FP16, M.Vec, TileLayout_ := L.ND, pad=TilePad.zero, addr=96)
    geometry = TileGeometry.from_tile_type(tt)
    assert (geometry.addr, geometry.pad, geometry.layout) == (96, TilePad.zero, TileLayout_)
    mem = CoreMemory(soc(), "aiv")
    t = TileRef(mem, geometry, 3, 5)
    t.write(torch.full((3, 5), 2.0, dtype=torch.float16))
    assert t.read().shape == (3, 5) and t.read_full()[3, 0].item() != 2.0
    t.write(torch.ones(1, 2, dtype=torch.float16), offset=(15, 30))
    assert t.read_full()[15, 30:].tolist() == [1.0, 1.0]
    with pytest.raises(ValueError):
        TileGeometry.from_tile_type(TileType((16, 32), D.FP16, M.Vec))



def test_equal_tile_types_share_one_geometry_and_its_views():
    """An edited kernel makes new tile type objects, mostly equal to the old ones: equal ones
    get the old geometry object, so the caches keyed by it (block views, costs) still hit."""
    first = TileType((16, 32), D.FP16, M.Vec, L.ND, addr=128)
    again = TileType((16, 32), D.FP16, M.Vec, L.ND, addr=128)
    other = TileType((16, 32), D.FP16, M.Vec, L.ND, addr=1152)
    assert first is not again
    g = TileGeometry.from_tile_type(first)
    assert TileGeometry.from_tile_type(again) is g
    assert TileGeometry.from_tile_type(other) is not g
    assert TileGeometry.from_tile_type(first, 1152) is TileGeometry.from_tile_type(other)
    mem = CoreMemory(soc(), "aiv")
    views = mem.block_views(g, 0, 0, 16, 32)
    assert mem.block_views(TileGeometry.from_tile_type(again), 0, 0, 16, 32) is views

def test_byte_span_covers_every_byte_a_tile_can_touch():
    mem = CoreMemory(soc(), "aic")
    assert tile(mem, 32, 32, D.FP16, M.Mat, L.NZ, addr=1024).byte_span() == (1024, 1024 + 2048)
    assert tile(mem, 4, 8, D.INT4, M.Mat, addr=64).byte_span() == (64, 64 + 16)


def test_compact_tile_packs_column_blocks_by_valid_rows():
    mem = CoreMemory(soc(), "aic")
    t = tile(mem, 64, 32, D.FP16, M.Mat, L.NZ, addr=0, valid=(20, 32), compact=1)
    t.write(torch.ones(20, 32, dtype=torch.float16))
    raw = mem.buffers[M.Mat][:4096].view(torch.float16)
    assert raw[32 * 16].item() == 1.0  # block 1 starts after 32 (= align16(20)) rows
    assert raw[20 * 16].item() != 1.0  # rows 20..31 of block 0 are untouched padding


def test_four_bit_tiles_pack_two_per_byte():
    mem = CoreMemory(soc(), "aiv")
    t = tile(mem, 1, 4, D.INT4, addr=0)
    t.write(torch.tensor([[1, 2, 15, 7]], dtype=torch.uint8))
    assert mem.buffers[M.Vec][:2].tolist() == [0x21, 0x7F]
    assert t.read().tolist() == [[1, 2, 15, 7]]
    t.write_linear(1, torch.tensor([9], dtype=torch.uint8))
    assert t.read_linear(0, 3).tolist() == [1, 9, 15]


def test_gm_rank3_windows_transpose_and_strides():
    x = torch.arange(2 * 4 * 6, dtype=torch.float32).reshape(2, 4, 6)
    gm = GMRef(x)
    assert torch.equal(gm.read_window([1, 1, 2], 2, 3), x[1, 1:3, 2:5])
    assert torch.equal(gm.read_window([0, 1, 0], 3, 2, transpose=True), x[0, 1:3, 0:3].t())
    gm.write_window([1, 0, 0], torch.zeros(2, 2))
    assert x[1, :2, :2].eq(0).all() and x[1, 2, 0].item() == 36
    view = GMRef(x, shape=(4, 3), strides=(6, 2), base_offset=1)  # every other column
    assert view.read_window([0, 0], 2, 3).tolist() == [[1.0, 3.0, 5.0], [7.0, 9.0, 11.0]]
    with pytest.raises(SimMemoryError):
        gm.read_window([0, 3, 0], 2, 6)


def test_gm_atomic_add_fill_and_linear_access():
    y = torch.ones(4, 4, dtype=torch.float16)
    gm = GMRef(y)
    gm.atomic_add_window([1, 1], torch.full((2, 2), 0.5, dtype=torch.float16))
    assert y[1:3, 1:3].eq(1.5).all() and y[0, 0].item() == 1.0
    gm.fill_logical(14, 2, 7)
    assert y[3, 2:].tolist() == [7.0, 7.0]
    assert gm.read_linear(15, 1).item() == 7.0
    ints = torch.zeros(8, dtype=torch.int32)
    GMRef(ints[2:]).write_linear(1, torch.tensor([5], dtype=torch.int32))
    assert ints.tolist() == [0, 0, 0, 5, 0, 0, 0, 0]


def test_gm_views_of_a_slice_keep_the_storage_offset():
    base = torch.arange(10, dtype=torch.int16)
    gm = GMRef(base[4:8].reshape(2, 2))
    assert gm.read_window([1, 0], 1, 2).tolist() == [[6, 7]]


@pytest.mark.parametrize("layout", [L.NZ, L.ZN, L.ZZ, L.NN])
@pytest.mark.parametrize("dtype,space,fractal", [
    (D.FP16, M.Mat, 512), (D.FP32, M.Acc, 1024), (D.INT8, M.Mat, 512),
    (D.FP8E4M3FN, M.Mat, 512)])
def test_fractal_blocks_move_the_elements_their_layout_places(layout, dtype, space, fractal):
    """Blocks of whole fractals go through strided views, others through element offsets:
    both put each logical element where `layout.element_offsets` says, bit for bit, and mark
    exactly its bytes initialised."""
    size = dtype.itemsize
    word = {1: torch.uint8, 2: torch.int16, 4: torch.int32}[size]
    geometry = TileGeometry(64, 128, dtype, space, layout, fractal, addr=1024)
    fr, fc = geometry.fractal_shape
    offs = geometry.offsets((64, 128))  # physical element of each logical one
    g = torch.Generator().manual_seed(0)
    for r0, c0, rows, cols in [(0, 0, 64, 128), (fr, fc, fr, 2 * fc), (1, 3, 5, 7)]:
        mem = CoreMemory(soc(), "aic")
        t = TileRef(mem, geometry)
        bits = torch.randint(0, 100, (rows, cols), generator=g).to(word)
        t.write(bits.view(t.read_block(0, 0, 1, 1).dtype), offset=(r0, c0))
        block = 1024 // size + offs[r0:r0 + rows, c0:c0 + cols]
        assert torch.equal(mem.buffers[space].view(word)[block], bits)
        assert torch.equal(t.read_block(r0, c0, rows, cols).view(word), bits)
        marked = mem.initialised[space].view(torch.uint8).view(word)[block]
        assert torch.equal(marked, torch.full_like(marked, {1: 1, 2: 0x0101, 4: 0x01010101}[size]))
        assert int(mem.initialised[space].sum()) == rows * cols * size


def test_fractal_block_past_the_buffer_raises_typed_error():
    mem = CoreMemory(soc(), "aic")
    t = tile(mem, 128, 256, D.FP32, M.Left, L.NZ, addr=0, fractal=512)  # 128 KiB in 64 KiB
    assert t.read_block(0, 0, 64, 32).shape == (64, 32)  # the block fits
    with pytest.raises(SimMemoryError):
        t.write(torch.zeros(16, 8), offset=(112, 248))


def test_gm_window_plans_are_reused_per_shape_and_still_checked():
    x = torch.arange(6 * 8, dtype=torch.float32).reshape(6, 8)
    gm = GMRef(x)
    assert torch.equal(gm.read_window([2, 4], 2, 3), x[2:4, 4:7])
    assert torch.equal(gm.read_window([4, 0], 2, 3), x[4:6, 0:3])  # same plan, new offsets
    with pytest.raises(SimMemoryError, match=r"window \[4, 6\]\+\[2, 3\]"):
        gm.read_window([4, 6], 2, 3)  # column 8 of row 4 wraps into row 5
    # past the last row: the bytes the device allocator reserves, zeros (test_gm_past_tensor_end)
    assert torch.equal(gm.read_window([5, 0], 2, 3), torch.cat([x[5:, 0:3], torch.zeros(1, 3)]))
    row = GMRef(torch.arange(10, dtype=torch.int32))
    assert row.read_window([3], 1, 4).tolist() == [[3, 4, 5, 6]]
    assert row.read_window(2, 1, 2).tolist() == [[2, 3]]  # a bare int offset
    with pytest.raises(ValueError, match="3 offsets for a rank-1"):
        row.read_window([0, 0, 0], 1, 2)


@pytest.mark.parametrize("src_layout, dst_layout, copied", [
    (L.NZ, L.NZ, True), (L.NZ, L.ZN, True), (L.ND, L.DN, True), (L.ND, L.NZ, False)])
def test_copy_from_moves_buffer_to_buffer_like_read_then_write(src_layout, dst_layout, copied):
    values = torch.randn(32, 32).half()
    fast, slow = CoreMemory(soc(), "aic"), CoreMemory(soc(), "aic")
    for mem in (fast, slow):
        tile(mem, 32, 32, D.FP16, M.Mat, src_layout, addr=512).write(values)
    src = tile(fast, 32, 32, D.FP16, M.Mat, src_layout, 512, (16, 32))
    assert tile(fast, 32, 32, D.FP16, M.Left, dst_layout, 1024, (16, 32)).copy_from(src) is copied
    if copied:
        tile(slow, 32, 32, D.FP16, M.Left, dst_layout, 1024, (16, 32)).write(
            tile(slow, 32, 32, D.FP16, M.Mat, src_layout, 512, (16, 32)).read())
        assert torch.equal(fast.buffers[M.Left], slow.buffers[M.Left])
        assert torch.equal(fast.initialised[M.Left], slow.initialised[M.Left])
    same_buffer = tile(fast, 32, 32, D.FP16, M.Mat, src_layout, addr=8192)
    assert not same_buffer.copy_from(src)  # may overlap: the caller reads first
    assert not tile(fast, 32, 32, D.BF16, M.Left, dst_layout, 1024).copy_from(src)


@pytest.mark.parametrize("layout", [L.NZ, L.ND])
def test_add_from_accumulates_fp32_in_place_bit_for_bit(layout):
    mem = CoreMemory(soc(), "aic")
    acc = tile(mem, 32, 32, D.FP32, M.Acc, layout, fractal=1024)
    before = torch.randn(32, 32)
    acc.write(before)
    addend = torch.randn(16, 32)
    assert acc.add_from(addend)
    assert torch.equal(acc.read_block(0, 0, 16, 32), addend + before[:16])
    assert torch.equal(acc.read_block(16, 0, 16, 32), before[16:])
    assert not tile(mem, 32, 32, D.FP16, M.Acc, layout, fractal=1024).add_from(addend)


def test_compute_target_is_the_window_unless_a_source_overlaps_it_partly():
    mem = CoreMemory(soc(), "aiv")
    out = tile(mem, 8, 16, D.FP32, valid=(5, 9))
    apart = tile(mem, 8, 16, D.FP32, addr=8 * 16 * 4)
    shifted = tile(mem, 8, 16, D.FP32, addr=16 * 4)  # one row further: a partial overlap
    same = tile(mem, 8, 16, D.FP32, valid=(5, 9))  # another ref of the same window
    target = out.compute_target((apart,), same_ok=False)
    assert target is not None and target.shape == (5, 9)
    target.fill_(2.5)
    assert torch.equal(out.read(), torch.full((5, 9), 2.5))
    assert out.compute_target((same,), same_ok=True) is not None
    assert out.compute_target((same,), same_ok=False) is None
    assert out.compute_target((shifted,), same_ok=True) is None
    other_core = tile(CoreMemory(soc(), "aiv"), 8, 16, D.FP32, valid=(5, 9))
    assert out.compute_target((other_core,), same_ok=False) is not None
    assert tile(mem, 16, 16, D.FP32, layout=L.NZ).compute_target((), same_ok=True) is None
    deferred = tile(mem, 8, 16, D.FP32)
    deferred.writes_now = False  # the engine's per-instruction copies write at the end
    assert deferred.compute_target((), same_ok=True) is None
