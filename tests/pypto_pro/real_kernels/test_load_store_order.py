"""Issue 21, class 5: `load` / `store` with `order=` as the docs use it, and MX scale loads.

`order` names the tensor axes (absolute indices) the tile's rows and cols run along; a
descending order is a transposed (DN) access, into a column-major (DN) tile as pto-isa's TLOAD
requires; the other axes stay at their offsets. `store`
takes ascending orders only. `load_tile` / `store_tile` multiply the tile indices by the
tile's extents, pairing the ascending axes with the tile's dims in order (the real
`_compute_absolute_offsets`). An MX scale tensor (E8M0 loaded into a fractal-32 ZZ / NN Mat
tile) ends in a physical phase axis of size 2: K group k sits at k // 2 on its axis and k % 2
on the phase axis, so `[M, K/64, 2]` holds the `[M, K/32]` tile of scale A; the default order
is the two axes before the phase axis. Every kernel runs on every backend and is checked
against torch.
"""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

import pypto_pro.language as pl
from pypto_pro.codegen import generate
from pypto_pro.compiler import compile_kernel
from pypto_pro.errors import (NotSupported, ParserSyntaxError, ParserTypeError,
                              UnsupportedFeatureError)
from pypto_pro.runtime.backends import use_backend
from pypto_pro.runtime.kernel_def import Specialization

SPEC = Specialization(arch="a5")
F32 = pl.DT_FP32


def _vec(rows: int, cols: int, layout: pl.TensorLayout | None = None) -> pl.TileType:
    return pl.TileType([rows, cols], F32, layout=layout)


# ---------------------------------------------------------------- transposed and N-D windows


def t_as_rows(t: pl.Tile, rows: int, cols: int) -> pl.Tile:
    """A column-major (DN) Vec tile's bytes as the row-major tile of the transposed shape."""
    return pl.reinterpret(t, shape=[rows, cols], layout=pl.ND)


@pl.jit(arch="a5", auto_mutex=True)
def transposed_kernel(x: pl.Tensor[[32, 16], F32], out: pl.Tensor[[32, 16], F32]):
    with pl.section_vector():
        t = pl.make_tile_group(type=_vec(16, 32, pl.DN), addrs=0x0, mutex_ids=[0]).current()
        pl.load(t, x, [0, 0], order=[1, 0])  # tile rows along axis 1: t = xᵀ, column-major
        pl.store(out, t_as_rows(t, 32, 16), [0, 0])  # its bytes, read row-major: x


@pl.jit(arch="a5", auto_mutex=True)
def transposed_into_nd_kernel(x: pl.Tensor[[32, 16], F32]):
    with pl.section_vector():
        t = pl.make_tile(_vec(16, 32), addr=0x0)
        pl.load(t, x, [0, 0], order=[1, 0])


@pl.jit(arch="a5", auto_mutex=True)
def three_d_kernel(x: pl.Tensor[[8, 3, 16], F32], out: pl.Tensor[[2, 16, 16], F32],
                   back: pl.Tensor[[8, 3, 16], F32]):
    with pl.section_vector():
        a = pl.make_tile_group(type=_vec(8, 16), addrs=0x0, mutex_ids=[0]).current()
        b = pl.make_tile_group(type=_vec(16, 8, pl.DN), addrs=0x1000, mutex_ids=[1]).current()
        pl.load(a, x, [0, 1, 0], order=[0, 2])  # axes 0 and 2 at axis-1 index 1
        pl.load(b, x, [0, 2, 0], order=[2, 0])  # the same axes transposed, index 2
        pl.store(out, t_as_rows(b, 8, 16), [1, 4, 0], order=[1, 2])
        pl.store(back, a, [0, 0, 0], order=[0, 2])


B, S, N, D, TS = 2, 32, 3, 16, 16


@pl.jit(arch="a5", auto_mutex=True)
def bsnd_kernel(k: pl.Tensor[[B, S, N, D], F32], out: pl.Tensor[[B, N, S, D], F32]):
    """The docs' BSND load: tile rows along S (axis 1), cols along D (axis 3)."""
    with pl.section_vector():
        ring = pl.make_tile_group(type=_vec(TS, D), addrs=0x0, mutex_ids=[0, 1])
        for b in pl.range(B):
            for n in pl.range(N):
                for ki in pl.range(S // TS):
                    t = ring.next()
                    pl.load_tile(t, k, [b, ki, n, 0], order=[1, 3])
                    pl.store_tile(out, t, [b, n, ki, 0], order=[2, 3])


def _run(everywhere, kernel, inputs, outputs):
    def launch():
        outs = [torch.zeros(shape) for shape in outputs]
        kernel(*inputs, *outs)
        return outs

    return everywhere(launch)


def test_transposed_load(everywhere):
    x = torch.randn(32, 16)
    for engine, (out,) in _run(everywhere, transposed_kernel, [x], [(32, 16)]).items():
        assert torch.equal(out, x), engine


def test_transposed_load_into_a_row_major_vec_tile_is_refused():
    """pto-isa's TLOAD: a DN window goes into a DN (column-major) Vec tile only. The pass
    verify_memory refuses it, so the simulator does too (not only the code generator)."""
    with pytest.raises(NotSupported, match="transposed GM window into a ND Vec tile") as err:
        compile_kernel(transposed_into_nd_kernel.kernel_def, SPEC)
    assert "order=[1, 0]" in Path(__file__).read_text().splitlines()[err.value.span.line - 1]
    with use_backend("sim"), pytest.raises(NotSupported, match="transposed GM window"):
        transposed_into_nd_kernel[None, 1](torch.randn(32, 16))


def test_order_on_a_three_d_tensor(everywhere):
    x = torch.randn(8, 3, 16)
    want_out = torch.zeros(2, 16, 16)
    want_out[1, 4:12, :] = x[:, 2, :]
    want_back = torch.zeros(8, 3, 16)
    want_back[:, 0, :] = x[:, 1, :]
    results = _run(everywhere, three_d_kernel, [x], [(2, 16, 16), (8, 3, 16)])
    for engine, (out, back) in results.items():
        assert torch.equal(out, want_out) and torch.equal(back, want_back), engine


def test_bsnd_tiles_by_order(everywhere):
    k = torch.randn(B, S, N, D)
    for engine, (out,) in _run(everywhere, bsnd_kernel, [k], [(B, N, S, D)]).items():
        assert torch.equal(out, k.permute(0, 2, 1, 3)), engine


def _bad_order_kernel(mode: int):
    @pl.jit(arch="a5", name=f"bad_order_{mode}")
    def bad_order(x: pl.Tensor[[8, 3, 16], F32]):
        with pl.section_vector():
            t = pl.make_tile(_vec(8, 16), addr=0x0)
            if mode == 0:
                pl.load(t, x, [0, 0, 0], order=[0, 0])
            elif mode == 1:
                pl.load(t, x, [0, 0, 0], order=[0, 3])
            elif mode == 2:
                pl.load(t, x, [0, 0, 0], order=[0, 1, 2])
            else:
                pl.store(x, t, [0, 0, 0], order=[2, 0])

    return bad_order


@pytest.mark.parametrize("mode, cls, message", [
    # the real builders' ValueErrors (block_ops._validate_tile_dims): ParserSyntaxError
    (0, ParserSyntaxError, r"load: order axes must be unique, got \[0, 0\]"),
    (1, ParserSyntaxError, r"load: order axis 3 is out of range for Tensor rank 3"),
    (2, ParserTypeError, r"naming two distinct tensor axes .*got \[0, 1, 2\]"),
    (3, ParserSyntaxError, r"store: order must be ascending, got \[2, 0\]"),
])
def test_bad_orders_are_typed_errors_at_their_line(mode, cls, message):
    with pytest.raises(cls, match=message) as info:
        compile_kernel(_bad_order_kernel(mode).kernel_def, SPEC)
    assert "order=[" in str(info.value)


# ---------------------------------------------------------------- MX scale loads

TILE = 128
SCALE_K = TILE // 32


def _mx_kernel(a_dn: bool, b_dn: bool):
    """The docs' MXFP8 matmul, its scales in ND ([M, G/2, 2], [G/2, N, 2]) or DN ([G/2, M, 2],
    [N, G/2, 2], loaded with order=[1, 0]) form."""
    sa_shape = [SCALE_K // 2, TILE, 2] if a_dn else [TILE, SCALE_K // 2, 2]
    sb_shape = [TILE, SCALE_K // 2, 2] if b_dn else [SCALE_K // 2, TILE, 2]
    a_order = [1, 0] if a_dn else [0, 1]
    b_order = [1, 0] if b_dn else [0, 1]

    name = f"mx_{'dn' if a_dn else 'nd'}_{'dn' if b_dn else 'nd'}"
    M = pl.MemorySpace

    @pl.jit(arch="a5", auto_mutex=True, name=name)
    def mxfp8_matmul(a: pl.Tensor[[TILE, TILE], pl.DT_FP8E4M3FN],
                     b: pl.Tensor[[TILE, TILE], pl.DT_FP8E5M2],
                     scale_a: pl.Tensor[sa_shape, pl.DT_FP8E8M0],
                     scale_b: pl.Tensor[sb_shape, pl.DT_FP8E8M0],
                     out: pl.Tensor[[TILE, TILE], F32]):
        a_l1 = pl.make_tile_group(type=pl.TileType([TILE, TILE], pl.DT_FP8E4M3FN, M.Mat,
                                                   layout=pl.NZ), addrs=0x00000, mutex_ids=[0])
        b_l1 = pl.make_tile_group(type=pl.TileType([TILE, TILE], pl.DT_FP8E5M2, M.Mat,
                                                   layout=pl.NZ), addrs=0x10000, mutex_ids=[1])
        sa_l1 = pl.make_tile_group(type=pl.TileType([TILE, SCALE_K], pl.DT_FP8E8M0, M.Mat,
                                                    layout=pl.ZZ), addrs=0x20000, mutex_ids=[2])
        sb_l1 = pl.make_tile_group(type=pl.TileType([SCALE_K, TILE], pl.DT_FP8E8M0, M.Mat,
                                                    layout=pl.NN), addrs=0x21000, mutex_ids=[3])
        a_l0 = pl.make_tile_group(type=pl.TileType([TILE, TILE], pl.DT_FP8E4M3FN, M.Left,
                                                   layout=pl.NZ), addrs=0x0, mutex_ids=[4])
        b_l0 = pl.make_tile_group(type=pl.TileType([TILE, TILE], pl.DT_FP8E5M2, M.Right,
                                                   layout=pl.ZN), addrs=0x0, mutex_ids=[5])
        sa_l0 = pl.make_tile_group(type=pl.TileType([TILE, SCALE_K], pl.DT_FP8E8M0, M.ScaleLeft,
                                                    layout=pl.ZZ), addrs=0x0, mutex_ids=[6])
        sb_l0 = pl.make_tile_group(type=pl.TileType([SCALE_K, TILE], pl.DT_FP8E8M0,
                                                    M.ScaleRight, layout=pl.NN), addrs=0x0,
                                   mutex_ids=[7])
        acc = pl.make_tile_group(type=pl.TileType([TILE, TILE], F32, M.Acc, layout=pl.NZ,
                                                  fractal=1024), addrs=0x0, mutex_ids=[8])
        with pl.section_cube():
            al1, bl1 = a_l1.current(), b_l1.current()
            sal1, sbl1 = sa_l1.current(), sb_l1.current()
            al0, bl0 = a_l0.current(), b_l0.current()
            sal0, sbl0 = sa_l0.current(), sb_l0.current()
            ac = acc.current()
            pl.load(al1, a, [0, 0])
            pl.load(bl1, b, [0, 0])
            pl.load(sal1, scale_a, [0, 0, 0], order=a_order)
            pl.load(sbl1, scale_b, [0, 0, 0], order=b_order)
            pl.move(al0, al1)
            pl.move(bl0, bl1)
            pl.move(sal0, sal1)
            pl.move(sbl0, sbl1)
            pl.matmul_mx(ac, al0, bl0, sal0, sbl0)
            pl.store(out, ac, [0, 0])

    return mxfp8_matmul


def _e8m0(codes: torch.Tensor) -> torch.Tensor:
    return torch.exp2(codes.to(torch.float64) - 127)


@pytest.mark.parametrize("a_dn, b_dn", [(False, False), (True, True), (False, True)])
def test_mx_scales_load_from_packed_three_d_tensors(everywhere, a_dn, b_dn):
    g = torch.Generator().manual_seed(5)
    a = torch.randn(TILE, TILE, generator=g).to(torch.float8_e4m3fn)
    b = torch.randn(TILE, TILE, generator=g).to(torch.float8_e5m2)
    sa = torch.randint(120, 134, (TILE, SCALE_K), generator=g, dtype=torch.uint8)  # [M, G]
    sb = torch.randint(120, 134, (SCALE_K, TILE), generator=g, dtype=torch.uint8)  # [G, N]
    # packed: group k at k // 2 on its axis, k % 2 on the trailing phase axis
    sa_gm = sa.view(TILE, SCALE_K // 2, 2)
    sa_gm = sa_gm.permute(1, 0, 2).contiguous() if a_dn else sa_gm
    sb_gm = sb.view(SCALE_K // 2, 2, TILE).permute(0, 2, 1)
    sb_gm = sb_gm.permute(1, 0, 2).contiguous() if b_dn else sb_gm.contiguous()
    kernel = _mx_kernel(a_dn, b_dn)

    def launch():
        out = torch.zeros(TILE, TILE)
        kernel(a, b, sa_gm, sb_gm, out)
        return out

    deq_a = a.to(torch.float64) * _e8m0(sa).repeat_interleave(32, dim=1)
    deq_b = b.to(torch.float64) * _e8m0(sb).repeat_interleave(32, dim=0)
    want = (deq_a @ deq_b).float()
    for engine, out in everywhere(launch).items():
        assert torch.allclose(out, want, rtol=1e-5, atol=1e-3), engine


@pl.jit(arch="a5")
def mx_phase_order_kernel(scale: pl.Tensor[[TILE, SCALE_K // 2, 2], pl.DT_FP8E8M0]):
    with pl.section_cube():
        t = pl.make_tile(pl.TileType(shape=[TILE, SCALE_K], dtype=pl.DT_FP8E8M0,
                                     target_memory=pl.MemorySpace.Mat, layout=pl.ZZ), addr=0x0)
        pl.load(t, scale, [0, 0, 0], order=[0, 2])


def test_mx_order_cannot_select_the_phase_axis():
    with pytest.raises(UnsupportedFeatureError, match="the phase axis 2 cannot be selected") \
            as info:
        compile_kernel(mx_phase_order_kernel.kernel_def, SPEC)
    assert "order=[0, 2]" in str(info.value)


def test_mx_loads_are_spelled_as_the_real_codegen():

    text = generate(compile_kernel(_mx_kernel(False, True).kernel_def, SPEC)).kernel_cpp
    assert "pto::TileShape2D<float8_e8m0_t, pto::DYNAMIC, pto::DYNAMIC, Layout::MX_A_ND>" in text
    assert "GlobalTensor<float8_e8m0_t, mx_load_1Shape, mx_load_1Stride, Layout::MX_B_DN>" in text
    assert "mx_load_1Stride(1, 1, scale_b_stride[0], scale_b_stride[1], 1)" in text
    assert "TLOAD(tmp_3, mx_load_1);" in text
