"""A sweep of the data-movement API as its docs describe it (issue 21, datacopy): `load`,
`load_tile`, `store`, `store_tile`, `move`, `insert`, tile sub-views, `ssbuf_load` /
`ssbuf_store`, written as a user of the real PyPTO Pro writes them from
`docs/zh/pypto_pro/api/SIMD-API/operation/memory_data_movement/`.

Each case is a small kernel built for its parameters: every documented element width (b8 / b16 /
b32 / b64, the fp8 and unsigned types as their torch bit-twins), absolute and tile-index offsets,
`order=` axis maps on 2-D to 5-D tensors (ascending, and descending for a transposed load), tails
by static and runtime valid shapes, strided and merged-axis tensor views, atomic-add stores, the
cube path GM → Mat (ND / transposed ZN) → Left / Right (whole or extracted at an offset) → Acc →
GM or Vec, Vec → Mat inserts, sub-views and SSBUF messages. Each is checked against torch on the
simulator; one case per path (ten kernels: a native build takes seconds the first time) also
runs natively and must be bit-identical to the simulator; PYPTOPRO_SWEEP_NATIVE=1 runs every
case natively too.

What the real frontend refuses is refused here with its error class, at the kernel line.
"""
from __future__ import annotations

import re
from collections.abc import Callable

import pytest
import torch
from dual_backend import HAS_CXX, SWEEP_ALL_NATIVE, on_backend, sim_and_native
from kernel_source import assert_refused, line_of

import pypto_pro.language as pl
from pypto_pro.errors import InvalidShape, NotSupported, ParserSyntaxError

M = pl.MemorySpace

# every documented element width; unsigned / fp8 values travel as torch's bit-twins
DTYPES = {
    "int8": (pl.DT_INT8, torch.int8), "uint8": (pl.DT_UINT8, torch.uint8),
    "fp8e4m3": (pl.DT_FP8E4M3FN, torch.float8_e4m3fn), "fp8e5m2": (pl.DT_FP8E5M2,
                                                                  torch.float8_e5m2),
    "fp16": (pl.DT_FP16, torch.float16), "bf16": (pl.DT_BF16, torch.bfloat16),
    "int16": (pl.DT_INT16, torch.int16), "uint16": (pl.DT_UINT16, torch.int16),
    "fp32": (pl.DT_FP32, torch.float32), "int32": (pl.DT_INT32, torch.int32),
    "uint32": (pl.DT_UINT32, torch.int32), "int64": (pl.DT_INT64, torch.int64),
    "uint64": (pl.DT_UINT64, torch.uint64),
}


def rand(shape, tdtype: torch.dtype, seed: int = 0) -> torch.Tensor:
    """Distinct-looking values of `tdtype` (ints cover the type's range, floats are exact)."""
    g = torch.Generator().manual_seed(seed)
    if tdtype is torch.uint64:
        return rand(shape, torch.int64, seed).view(torch.uint64)
    if tdtype.is_floating_point:
        return (torch.randint(-64, 64, shape, generator=g).float() / 8).to(tdtype)
    info = torch.iinfo(tdtype)
    lo, hi = max(info.min, -2 ** 40), min(info.max, 2 ** 40)
    return torch.randint(lo, hi, shape, generator=g, dtype=torch.int64).to(tdtype)


def check(run: Callable[[], torch.Tensor], want: torch.Tensor, native: bool) -> None:
    """`run()` on the simulator equals `want`; natively too (bit for bit) where asked."""
    got = sim_and_native(run) if native or SWEEP_ALL_NATIVE else on_backend("sim", run)
    if got.dtype.is_floating_point and got.element_size() == 1 or got.dtype is torch.uint64:
        bits = torch.uint8 if got.element_size() == 1 else torch.int64
        got, want = got.view(bits), want.view(bits)
    assert torch.equal(got, want), f"{int((got != want).sum())} of {got.numel()} differ"


# ---------------------------------------------------------------- 2-D copies, every dtype


def vec_copy(shape, tile, dtype, load_at, store_at, out_shape):
    """The docs' add kernel reduced to its movement: one Vec tile in, out at another offset."""
    @pl.jit(auto_mutex=True)
    def k(a: pl.Tensor[shape, dtype], out: pl.Tensor[out_shape, dtype]):
        tt = pl.TileType(shape=tile, dtype=dtype, target_memory=pl.MemorySpace.Vec)
        ring = pl.make_tile_group(type=tt, addrs=0x0000, mutex_ids=[0])
        with pl.section_vector():
            t = ring.current()
            pl.load(t, a, load_at)
            pl.store(out, t, store_at)
    return k


@pytest.mark.parametrize("name", list(DTYPES))
def test_copy_every_dtype_at_offsets(name):
    dt, tdt = DTYPES[name]
    cols = 64 // tdt.itemsize  # two 32-byte blocks a row
    k = vec_copy([24, 3 * cols], [8, cols], dt, [5, cols], [16, 0], [24, 2 * cols])
    a = rand((24, 3 * cols), tdt, 1)
    want = torch.zeros(24, 2 * cols, dtype=tdt)
    want[16:, :cols] = a[5:13, cols:2 * cols]
    check(lambda: _launch(k, a, torch.zeros_like(want)), want, name == "int8")


def _launch(k, *args):
    k(*[x.clone() for x in args[:-1]], out := args[-1].clone())
    return out


def load_tile_copy(shape, tile, dtype, blocks):
    """The docs' load_tile / store_tile kernel: blocks by tile index, doubled."""
    @pl.jit(auto_mutex=True)
    def k(x: pl.Tensor[shape, dtype], out: pl.Tensor[shape, dtype]):
        tt = pl.TileType(shape=tile, dtype=dtype, target_memory=pl.MemorySpace.Vec)
        x_db = pl.make_tile_group(type=tt, addrs=0x0000, mutex_ids=[0, 1])
        out_db = pl.make_tile_group(type=tt, addrs=0x4000, mutex_ids=[2, 3])
        with pl.section_vector():
            for ti in pl.range(0, blocks[0], 1):
                for tj in pl.range(0, blocks[1], 1):
                    cur_x = x_db.next()
                    cur_out = out_db.next()
                    pl.load_tile(cur_x, x, [ti, tj])
                    pl.add(cur_out, cur_x, cur_x)
                    pl.store_tile(out, cur_out, [ti, tj])
    return k


@pytest.mark.parametrize("name", ["fp16", "fp32", "int32", "int16", "bf16"])
def test_load_tile_store_tile_blocks(name):
    dt, tdt = DTYPES[name]
    k = load_tile_copy([32, 96], [16, 32], dt, [2, 3])
    x = rand((32, 96), tdt, 2)
    check(lambda: _launch(k, x, torch.zeros_like(x)), x + x, False)


# ---------------------------------------------------------------- tails: valid shapes


def tail_copy(shape, tile, dtype, rows, cols, at, static: bool):
    """A [rows, cols] window (cols not 32-byte aligned) through a larger tile: a runtime
    `set_validshape` on a [-1, -1] tile, or a static valid_shape."""
    valid = [rows, cols] if static else [-1, -1]

    @pl.jit(auto_mutex=True)
    def k(a: pl.Tensor[shape, dtype], out: pl.Tensor[shape, dtype]):
        tt = pl.TileType(shape=tile, dtype=dtype, target_memory=pl.MemorySpace.Vec,
                         valid_shape=valid)
        ring = pl.make_tile_group(type=tt, addrs=0x0, mutex_ids=[0])
        with pl.section_vector():
            t = ring.current()
            if not static:
                pl.set_validshape(t, [rows, cols])
            pl.load(t, a, at)
            pl.store(out, t, at)
    return k


@pytest.mark.parametrize("static", [False, True], ids=["runtime", "static"])
@pytest.mark.parametrize("name,rows,cols", [("fp16", 5, 17), ("fp32", 3, 7), ("int8", 7, 33),
                                            ("bf16", 1, 1), ("int64", 4, 3),
                                            ("fp32", 8, 16)])
def test_tail_windows(name, rows, cols, static):
    dt, tdt = DTYPES[name]
    tc = 64 // tdt.itemsize
    shape, at = [20, 3 * tc], [9, tc - 2]
    k = tail_copy(shape, [8, tc], dt, rows, cols, at, static)
    a = rand(tuple(shape), tdt, 3)
    want = torch.full(tuple(shape), 3, dtype=torch.int8).to(tdt)
    want[9:9 + rows, tc - 2:tc - 2 + cols] = a[9:9 + rows, tc - 2:tc - 2 + cols]
    check(lambda: _launch(k, a, torch.full_like(want, 3)), want, False)


def tail_loop(dtype, tile):
    """The docs' tail pattern: a dynamic-shape tensor walked by tiles, the last ones partial."""
    @pl.jit(auto_mutex=True)
    def k(a: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], dtype],
          out: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], dtype]):
        tt = pl.TileType(shape=tile, dtype=dtype, target_memory=pl.MemorySpace.Vec,
                         valid_shape=[-1, -1])
        ring = pl.make_tile_group(type=tt, addrs=0x0, mutex_ids=[0, 1])
        m = a.shape[0]
        n = a.shape[1]
        with pl.section_vector():
            for i in pl.range(0, m, tile[0]):
                for j in pl.range(0, n, tile[1]):
                    rows = m - i
                    if rows > tile[0]:
                        rows = tile[0]
                    cols = n - j
                    if cols > tile[1]:
                        cols = tile[1]
                    t = ring.next()
                    pl.set_validshape(t, [rows, cols])
                    pl.load(t, a, [i, j])
                    pl.store(out, t, [i, j])
    return k


@pytest.mark.parametrize("name,m,n", [("fp32", 37, 50), ("fp16", 16, 70), ("int8", 9, 130)])
def test_tail_loop_over_a_dynamic_tensor(name, m, n):
    dt, tdt = DTYPES[name]
    k = tail_loop(dt, [16, 64 // tdt.itemsize])
    a = rand((m, n), tdt, 4)
    check(lambda: _launch(k, a, torch.zeros_like(a)), a, False)


# ---------------------------------------------------------------- order: N-D tensors


def nd_copy(shape, tile, dtype, at, order, store_at, out_shape, via_tile: bool = False,
            dynamic: bool = False):
    """One Vec tile over tensor axes `order` (ascending), the other axes fixed by the offsets;
    stored into `out` with the same order (load_tile / store_tile when `via_tile`); the
    tensors' dims DYNAMIC when `dynamic`."""
    if dynamic:
        shape, out_shape = [pl.DYNAMIC] * len(shape), [pl.DYNAMIC] * len(out_shape)

    @pl.jit(auto_mutex=True)
    def k(a: pl.Tensor[shape, dtype], out: pl.Tensor[out_shape, dtype]):
        tt = pl.TileType(shape=tile, dtype=dtype, target_memory=pl.MemorySpace.Vec)
        ring = pl.make_tile_group(type=tt, addrs=0x0, mutex_ids=[0])
        with pl.section_vector():
            t = ring.current()
            if via_tile:
                pl.load_tile(t, a, at, order=order)
                pl.store_tile(out, t, store_at, order=order)
            else:
                pl.load(t, a, at, order=order)
                pl.store(out, t, store_at, order=order)
    return k


def _window(x: torch.Tensor, at, order, tile, via_tile: bool) -> tuple:
    """The index of `x` a tile over axes `order` at `at` covers."""
    idx = []
    for axis, o in enumerate(at):
        if axis in order:
            n = tile[sorted(order).index(axis)]
            start = o * n if via_tile else o
            idx.append(slice(start, start + n))
        else:
            idx.append(o)
    return tuple(idx)


ND_CASES = {  # name: (shape, tile, load at, order, store at, out shape)
    "3d-default": ([3, 16, 16], [8, 16], [2, 8, 0], None, [1, 0, 0], [2, 8, 16]),
    "3d-01": ([16, 8, 4], [8, 8], [8, 0, 2], [0, 1], [0, 0, 3], [8, 8, 4]),
    "3d-02": ([16, 3, 8], [4, 8], [4, 1, 0], [0, 2], [0, 2, 0], [4, 3, 8]),
    "3d-12": ([3, 8, 16], [8, 16], [1, 0, 0], [1, 2], [0, 0, 0], [1, 8, 16]),
    "4d-13-bsnd": ([2, 16, 3, 16], [8, 16], [1, 8, 2, 0], [1, 3], [0, 0, 1, 0], [1, 8, 2, 16]),
    "4d-02": ([4, 2, 8, 8], [4, 8], [0, 1, 0, 2], [0, 2], [0, 0, 0, 0], [4, 1, 8, 8]),
    "4d-23": ([2, 3, 8, 16], [8, 16], [1, 2, 0, 0], None, [0, 1, 0, 0], [1, 2, 8, 16]),
    "4d-01": ([8, 8, 2, 2], [8, 8], [0, 0, 1, 1], [0, 1], [0, 0, 0, 0], [8, 8, 1, 1]),
    "5d-14": ([2, 8, 2, 2, 8], [8, 8], [1, 0, 1, 0, 0], [1, 4], [0, 0, 0, 1, 0],
              [1, 8, 1, 2, 8]),
    "5d-34": ([2, 2, 2, 4, 8], [4, 8], [1, 1, 0, 0, 0], None, [0, 0, 1, 0, 0],
              [1, 1, 2, 4, 8]),
}


def _tile_index_form(case: str) -> bool:
    """Whether the case's windows sit at whole tile multiples (a load_tile form exists)."""
    shape, tile, at, order, store_at, _ = ND_CASES[case]
    axes = order or [len(shape) - 2, len(shape) - 1]
    return not any(o[a] % tile[sorted(axes).index(a)] for o in (at, store_at) for a in axes)


ND_PARAMS = [(c, via, dyn) for c in ND_CASES for via in (False, True) for dyn in (False, True)
             if (not via or _tile_index_form(c)) and
             (not dyn or c in ("3d-02", "4d-13-bsnd", "5d-14"))]


@pytest.mark.parametrize("case,via_tile,dynamic", ND_PARAMS, ids=[
    f"{c}-{'load_tile' if v else 'load'}{'-dynamic' if d else ''}" for c, v, d in ND_PARAMS])
def test_order_on_n_d_tensors(case, via_tile, dynamic):
    shape, tile, at, order, store_at, out_shape = ND_CASES[case]
    if via_tile:  # the tile-index form of the same windows
        axes = order or [len(shape) - 2, len(shape) - 1]
        at = [o // tile[sorted(axes).index(a)] if a in axes else o for a, o in enumerate(at)]
        store_at = [o // tile[sorted(axes).index(a)] if a in axes else o
                    for a, o in enumerate(store_at)]
    dt, tdt = DTYPES["fp32"]
    k = nd_copy(shape, tile, dt, at, order, store_at, out_shape, via_tile, dynamic)
    a = rand(tuple(shape), tdt, 5)
    axes = order or [len(shape) - 2, len(shape) - 1]
    want = torch.zeros(out_shape)
    want[_window(want, store_at, axes, tile, via_tile)] = a[_window(a, at, axes, tile, via_tile)]
    check(lambda: _launch(k, a, torch.zeros(out_shape)), want,
          case == "4d-13-bsnd" and not via_tile and not dynamic)


# ---------------------------------------------------------------- transposed (DN) loads


def transposed_vec(shape, rows, cols, dtype, at, via_tile: bool):
    """`order=[1, 0]` into a column-major (DN) Vec tile: the tile is the window transposed; its
    bytes read back as the row-major [cols, rows] window."""
    @pl.jit(auto_mutex=True)
    def k(x: pl.Tensor[shape, dtype], out: pl.Tensor[[cols, rows], dtype]):
        tt = pl.TileType(shape=[rows, cols], dtype=dtype, target_memory=pl.MemorySpace.Vec,
                         layout=pl.DN)
        ring = pl.make_tile_group(type=tt, addrs=0x0, mutex_ids=[0])
        with pl.section_vector():
            t = ring.current()
            if via_tile:
                pl.load_tile(t, x, at, order=[1, 0])
            else:
                pl.load(t, x, at, order=[1, 0])
            pl.store(out, pl.reinterpret(t, shape=[cols, rows], layout=pl.ND), [0, 0])
    return k


@pytest.mark.parametrize("via_tile", [False, True], ids=["load", "load_tile"])
@pytest.mark.parametrize("name", ["fp32", "fp16", "int8"])
def test_transposed_load_into_a_dn_tile(name, via_tile):
    dt, tdt = DTYPES[name]
    rows = 32 // tdt.itemsize  # one 32-byte block down each column
    cols = 16
    at = [1, 1] if via_tile else [16, rows]
    k = transposed_vec([48, 3 * rows], rows, cols, dt, at, via_tile)
    x = rand((48, 3 * rows), tdt, 6)
    # tile_dims sorted [0, 1]: tile index i along axis 0 steps by the tile's dim 0 (rows)
    r0, c0 = (at[0] * rows, at[1] * cols) if via_tile else at
    want = x[r0:r0 + cols, c0:c0 + rows].contiguous()
    check(lambda: _launch(k, x, torch.zeros(cols, rows, dtype=tdt)), want,
          name == "fp16" and not via_tile)


# ---------------------------------------------------------------- tensor views


def merged_view(b, s, d, ts, dtype):
    """The docs' axis merge: [B, S, D] viewed as [B*S, D] by make_tensor, walked by load_tile."""
    @pl.jit(auto_mutex=True)
    def k(q: pl.Tensor[[b, s, d], dtype], out: pl.Tensor[[b * s, d], dtype]):
        q_merged = pl.make_tensor(q, [b * s, d], [d, 1])
        tt = pl.TileType(shape=[ts, d], dtype=dtype, target_memory=pl.MemorySpace.Vec)
        ring = pl.make_tile_group(type=tt, addrs=0x0, mutex_ids=[0, 1])
        with pl.section_vector():
            for t in pl.range(b * s // ts):
                tile = ring.next()
                pl.load_tile(tile, q_merged, [t, 0])
                pl.store_tile(out, tile, [t, 0])
    return k


def strided_view(rows, cols, dtype):
    """make_tensor over a raw pointer with a row stride twice the row: every other row."""
    @pl.jit(auto_mutex=True)
    def k(x: pl.Ptr[dtype], out: pl.Tensor[[rows, cols], dtype]):
        every_other = pl.make_tensor(x, [rows, cols], [2 * cols, 1])
        tt = pl.TileType(shape=[rows, cols], dtype=dtype, target_memory=pl.MemorySpace.Vec)
        ring = pl.make_tile_group(type=tt, addrs=0x0, mutex_ids=[0])
        with pl.section_vector():
            t = ring.current()
            pl.load(t, every_other, [0, 0])
            pl.store(out, t, [0, 0])
    return k


def tnd_view(b, s, n, d, ts, dtype):
    """The docs' BSND → TND merge, then order=[0, 2] over (T, D) at a fixed head."""
    @pl.jit(auto_mutex=True)
    def k(q: pl.Tensor[[b, s, n, d], dtype], out: pl.Tensor[[b * s, d], dtype]):
        q_tnd = pl.make_tensor(q, [b * s, n, d], [n * d, d, 1])
        tt = pl.TileType(shape=[ts, d], dtype=dtype, target_memory=pl.MemorySpace.Vec)
        ring = pl.make_tile_group(type=tt, addrs=0x0, mutex_ids=[0, 1])
        with pl.section_vector():
            for t in pl.range(b * s // ts):
                tile = ring.next()
                pl.load_tile(tile, q_tnd, [t, 1, 0], order=[0, 2])
                pl.store_tile(out, tile, [t, 0])
    return k


def test_merged_axes_view():
    k = merged_view(3, 8, 16, 4, pl.DT_FP32)
    q = rand((3, 8, 16), torch.float32, 7)
    check(lambda: _launch(k, q, torch.zeros(24, 16)), q.reshape(24, 16), False)


def test_strided_pointer_view():
    k = strided_view(8, 16, pl.DT_FP16)
    x = rand((16, 16), torch.float16, 8)
    check(lambda: _launch(k, x, torch.zeros(8, 16, dtype=torch.float16)), x[::2].contiguous(),
          False)


def test_bsnd_merged_to_tnd_with_order():
    k = tnd_view(2, 8, 3, 8, 4, pl.DT_FP32)
    q = rand((2, 8, 3, 8), torch.float32, 9)
    check(lambda: _launch(k, q, torch.zeros(16, 8)), q[:, :, 1].reshape(16, 8), False)


# ---------------------------------------------------------------- atomic stores


def atomic_store(dtype, tile, times: int, via_tile: bool):
    """`atomic=AtomicAdd` onto a pre-filled output, `times` times over the same window."""
    @pl.jit(auto_mutex=True)
    def k(x: pl.Tensor[tile, dtype], out: pl.Tensor[[2 * tile[0], tile[1]], dtype]):
        tt = pl.TileType(shape=tile, dtype=dtype, target_memory=pl.MemorySpace.Vec)
        ring = pl.make_tile_group(type=tt, addrs=0x0, mutex_ids=[0])
        with pl.section_vector():
            t = ring.current()
            pl.load(t, x, [0, 0])
            for _ in pl.range(times):
                if via_tile:
                    pl.store_tile(out, t, [1, 0], atomic=pl.AtomicType.AtomicAdd)
                else:
                    pl.store(out, t, [tile[0], 0], atomic=pl.AtomicType.AtomicAdd)
    return k


@pytest.mark.parametrize("via_tile", [False, True], ids=["store", "store_tile"])
@pytest.mark.parametrize("name", ["fp32", "fp16", "bf16", "int32", "int16", "int8"])
def test_atomic_add_stores(name, via_tile):
    dt, tdt = DTYPES[name]
    tile = [4, 32 // tdt.itemsize]
    k = atomic_store(dt, tile, 2, via_tile)
    x = (rand(tuple(tile), torch.int8, 10) % 8).to(tdt)
    init = (rand((8, tile[1]), torch.int8, 11) % 8).to(tdt)
    want = init.clone()
    want[4:] += x + x
    check(lambda: _launch(k, x, init), want, False)


def atomic_blocks(dtype):
    """Every AIV adds its tile into one output row block: a reduction across cores."""
    @pl.jit(auto_mutex=True)
    def k(x: pl.Tensor[[pl.DYNAMIC, 16], dtype], out: pl.Tensor[[4, 16], dtype]):
        tt = pl.TileType(shape=[4, 16], dtype=dtype, target_memory=pl.MemorySpace.Vec)
        ring = pl.make_tile_group(type=tt, addrs=0x0, mutex_ids=[0])
        with pl.section_vector():
            t = ring.current()
            pl.load(t, x, [pl.get_block_idx() * 4, 0])
            pl.store(out, t, [0, 0], atomic=pl.AtomicType.AtomicAdd)
    return k


def test_atomic_add_from_every_core():
    k = atomic_blocks(pl.DT_FP32)
    x = rand((4 * 4, 16), torch.float32, 12)

    def run():
        out = torch.zeros(4, 16)
        k[4](x, out)
        return out
    check(run, x.reshape(4, 4, 16).sum(0), False)


# ---------------------------------------------------------------- cube: GM → Mat → L0 → Acc


def _mat(shape, dtype, layout=None):
    return pl.TileType(shape=shape, dtype=dtype, target_memory=pl.MemorySpace.Mat, layout=layout)


def cube_copy(m, k, n, dtype, acc_dtype, trans_a: bool, trans_b: bool):
    """The docs' matmul_move kernel with its transposed variants (load's Cube-side table): a
    transposed operand is the GM tensor of the transposed shape, loaded with order=[1, 0] into
    a ZN Mat tile of the L0 shape."""
    a_shape = [k, m] if trans_a else [m, k]
    b_shape = [n, k] if trans_b else [k, n]

    @pl.jit(auto_mutex=True)
    def kern(a: pl.Tensor[a_shape, dtype], b: pl.Tensor[b_shape, dtype],
             out: pl.Tensor[[m, n], acc_dtype]):
        a_l1 = pl.make_tile_group(type=_mat([m, k], dtype, pl.ZN if trans_a else pl.NZ),
                                  addrs=0x0000, mutex_ids=[0])
        b_l1 = pl.make_tile_group(type=_mat([k, n], dtype, pl.ZN if trans_b else pl.NZ),
                                  addrs=0x8000, mutex_ids=[1])
        a_l0a = pl.make_tile_group(type=pl.TileType(shape=[m, k], dtype=dtype,
                                                    target_memory=pl.MemorySpace.Left),
                                   addrs=0x0000, mutex_ids=[2])
        b_l0b = pl.make_tile_group(type=pl.TileType(shape=[k, n], dtype=dtype,
                                                    target_memory=pl.MemorySpace.Right),
                                   addrs=0x0000, mutex_ids=[3])
        c_l0c = pl.make_tile_group(type=pl.TileType(shape=[m, n], dtype=acc_dtype,
                                                    target_memory=pl.MemorySpace.Acc),
                                   addrs=0x0000, mutex_ids=[4])
        with pl.section_cube():
            ca, cb = a_l1.current(), b_l1.current()
            la, rb, acc = a_l0a.current(), b_l0b.current(), c_l0c.current()
            if trans_a:
                pl.load(ca, a, [0, 0], order=[1, 0])
            else:
                pl.load(ca, a, [0, 0])
            if trans_b:
                pl.load(cb, b, [0, 0], order=[1, 0])
            else:
                pl.load(cb, b, [0, 0])
            pl.move(la, ca)
            pl.move(rb, cb)
            pl.matmul(acc, la, rb)
            pl.store(out, acc, [0, 0])
    return kern


CUBE_DTYPES = {"fp16": (pl.DT_FP16, torch.float16, pl.DT_FP32, torch.float32),
               "bf16": (pl.DT_BF16, torch.bfloat16, pl.DT_FP32, torch.float32),
               "fp32": (pl.DT_FP32, torch.float32, pl.DT_FP32, torch.float32),
               "int8": (pl.DT_INT8, torch.int8, pl.DT_INT32, torch.int32)}


@pytest.mark.parametrize("trans_a,trans_b", [(False, False), (True, False), (False, True),
                                             (True, True)], ids=["NN", "TN", "NT", "TT"])
@pytest.mark.parametrize("name", list(CUBE_DTYPES))
def test_gm_to_mat_to_l0_with_transposes(name, trans_a, trans_b):
    dt, tdt, acc_dt, acc_tdt = CUBE_DTYPES[name]
    m, k, n = 32, 64, 32  # 32 rows: an int8 ZN tile is made of 32 x 16 fractals
    kern = cube_copy(m, k, n, dt, acc_dt, trans_a, trans_b)
    a = (rand((m, k), torch.int8, 13) % 4).to(tdt)
    b = (rand((k, n), torch.int8, 14) % 4).to(tdt)
    want = (a.double() @ b.double()).to(acc_tdt)
    ga = a.t().contiguous() if trans_a else a
    gb = b.t().contiguous() if trans_b else b
    check(lambda: _launch(kern, ga, gb, torch.zeros(m, n, dtype=acc_tdt)), want,
          name == "fp16" and (trans_a, trans_b) == (True, True))


def cube_extract(m, k, n, dtype, at_k: int, row: int):
    """TEXTRACT: Left / Right tiles taken out of wider Mat tiles at an offset (the docs'
    `pl.move(cur_a_left, a_wide_slot, offset=[0, KL0])`), A's rows from `row` on."""
    @pl.jit(auto_mutex=True)
    def kern(a: pl.Tensor[[2 * m, 2 * k], dtype], b: pl.Tensor[[2 * k, n], dtype],
             out: pl.Tensor[[m, n], pl.DT_FP32]):
        a_l1 = pl.make_tile_group(type=_mat([2 * m, 2 * k], dtype), addrs=0x0000, mutex_ids=[0])
        b_l1 = pl.make_tile_group(type=_mat([2 * k, n], dtype), addrs=0x8000, mutex_ids=[1])
        a_l0a = pl.make_tile_group(type=pl.TileType(shape=[m, k], dtype=dtype,
                                                    target_memory=pl.MemorySpace.Left),
                                   addrs=0x0000, mutex_ids=[2])
        b_l0b = pl.make_tile_group(type=pl.TileType(shape=[k, n], dtype=dtype,
                                                    target_memory=pl.MemorySpace.Right),
                                   addrs=0x0000, mutex_ids=[3])
        c_l0c = pl.make_tile_group(type=pl.TileType(shape=[m, n], dtype=pl.DT_FP32,
                                                    target_memory=pl.MemorySpace.Acc),
                                   addrs=0x0000, mutex_ids=[4])
        with pl.section_cube():
            ca, cb = a_l1.current(), b_l1.current()
            la, rb, acc = a_l0a.current(), b_l0b.current(), c_l0c.current()
            pl.load(ca, a, [0, 0])
            pl.load(cb, b, [0, 0])
            pl.move(la, ca, offset=[row, at_k])
            pl.move(rb, cb, offset=[at_k, 0])
            pl.matmul(acc, la, rb)
            pl.store(out, acc, [0, 0])
    return kern


@pytest.mark.parametrize("name,at_k,row", [("fp16", 32, 0), ("fp16", 0, 16), ("fp16", 32, 16),
                                           ("bf16", 32, 16), ("fp32", 16, 16)])
def test_move_extracts_l0_tiles_at_offsets(name, at_k, row):
    dt, tdt, _, _ = CUBE_DTYPES[name]
    m, k, n = 16, 32 if name != "fp32" else 16, 16
    kern = cube_extract(m, k, n, dt, at_k, row)
    a = (rand((2 * m, 2 * k), torch.int8, 15) % 4).to(tdt)
    b = (rand((2 * k, n), torch.int8, 16) % 4).to(tdt)
    want = (a[row:row + m, at_k:at_k + k].double() @ b[at_k:at_k + k].double()).float()
    check(lambda: _launch(kern, a, b, torch.zeros(m, n)), want, (name, row) == ("fp16", 16)
          and at_k == 32)


def acc_store(m, k, n, out_dtype, how: str):
    """Acc → GM by the fixpipe: a cast, a fused ReLU, a per-tensor scale, an atomic add, the
    final phase, or into an offset window of a larger output (store_tile)."""
    @pl.jit(auto_mutex=True)
    def kern(a: pl.Tensor[[m, k], pl.DT_FP16], b: pl.Tensor[[k, n], pl.DT_FP16],
             out: pl.Tensor[[2 * m, 2 * n], out_dtype]):
        a_l1 = pl.make_tile_group(type=_mat([m, k], pl.DT_FP16), addrs=0x0000, mutex_ids=[0])
        b_l1 = pl.make_tile_group(type=_mat([k, n], pl.DT_FP16), addrs=0x8000, mutex_ids=[1])
        a_l0a = pl.make_tile_group(type=pl.TileType(shape=[m, k], dtype=pl.DT_FP16,
                                                    target_memory=pl.MemorySpace.Left),
                                   addrs=0x0000, mutex_ids=[2])
        b_l0b = pl.make_tile_group(type=pl.TileType(shape=[k, n], dtype=pl.DT_FP16,
                                                    target_memory=pl.MemorySpace.Right),
                                   addrs=0x0000, mutex_ids=[3])
        c_l0c = pl.make_tile_group(type=pl.TileType(shape=[m, n], dtype=pl.DT_FP32,
                                                    target_memory=pl.MemorySpace.Acc),
                                   addrs=0x0000, mutex_ids=[4])
        with pl.section_cube():
            ca, cb = a_l1.current(), b_l1.current()
            la, rb, acc = a_l0a.current(), b_l0b.current(), c_l0c.current()
            pl.load(ca, a, [0, 0])
            pl.load(cb, b, [0, 0])
            pl.move(la, ca)
            pl.move(rb, cb)
            if how == "final":  # the unit-flag pair: the matmul's phase, then the store's
                pl.matmul(acc, la, rb, phase=pl.AccPhase.Final)
            else:
                pl.matmul(acc, la, rb)
            if how == "relu":
                pl.store(out, acc, [m, 0], relu_pre_mode=pl.ReluPreMode.NormalRelu)
            elif how == "scale":
                pl.store(out, acc, [m, n], scale=0.5)
            elif how == "atomic":
                pl.store(out, acc, [0, n], atomic=pl.AtomicType.AtomicAdd)
                pl.store(out, acc, [0, n], atomic=pl.AtomicType.AtomicAdd)
            elif how == "final":
                pl.store(out, acc, [m, n], phase=pl.STPhase.Final)
            elif how == "tile":
                pl.store_tile(out, acc, [1, 1])
            else:
                pl.store(out, acc, [0, 0])
    return kern


@pytest.mark.parametrize("name,how", [  # (a scaled FP32 -> BF16 store the real one refuses)
    (n, h) for n in ("fp32", "fp16", "bf16") for h in ("plain", "relu", "scale", "atomic", "tile")
    if (n, h) != ("bf16", "scale")])
def test_acc_stores(name, how):
    dt, tdt = DTYPES[name]
    m, k, n = 16, 32, 16
    kern = acc_store(m, k, n, dt, how)
    a = (rand((m, k), torch.int8, 17) % 5).to(torch.float16)
    b = (rand((k, n), torch.int8, 18) % 5).to(torch.float16)
    c = a.float() @ b.float()
    init = (rand((2 * m, 2 * n), torch.int8, 19) % 4).to(tdt)
    want = init.clone()
    window = {"plain": (0, 0), "relu": (m, 0), "scale": (m, n), "atomic": (0, n),
              "final": (m, n), "tile": (m, n)}[how]
    value = {"relu": c.clamp(min=0), "scale": c * 0.5,
             "atomic": init[:m, n:].float() + 2 * c}.get(how, c)
    want[window[0]:window[0] + m, window[1]:window[1] + n] = value.to(tdt)
    check(lambda: _launch(kern, a, b, init), want, (name, how) == ("fp16", "scale"))


# ---------------------------------------------------------------- Acc → Vec moves


def acc_to_vec(m, k, n, mode_name: str, how: str):
    """The cube's result moved to the AIVs' UB (FIX pipe) in one of the four modes, plus a
    ReLU or a per-tensor scale on the way; each AIV stores what it received."""
    mode = getattr(pl.AccToVecMode, mode_name)
    split_m = mode_name == "DualModeSplitM"
    split_n = mode_name == "DualModeSplitN"
    vec_shape = [m // 2, n] if split_m else [m, n // 2] if split_n else [m, n]

    @pl.jit(auto_mutex=True)
    def kern(a: pl.Tensor[[m, k], pl.DT_FP16], b: pl.Tensor[[k, n], pl.DT_FP16],
             out: pl.Tensor[[m, n], pl.DT_FP32]):
        vec = pl.make_tile_group(type=pl.TileType(shape=vec_shape, dtype=pl.DT_FP32,
                                                  target_memory=pl.MemorySpace.Vec),
                                 addrs=0x0, depth=1)
        with pl.section_cube():
            a_l1 = pl.make_tile_group(type=_mat([m, k], pl.DT_FP16), addrs=0x0, mutex_ids=[0])
            b_l1 = pl.make_tile_group(type=_mat([k, n], pl.DT_FP16), addrs=0x8000,
                                      mutex_ids=[1])
            left = pl.make_tile_group(type=pl.TileType(shape=[m, k], dtype=pl.DT_FP16,
                                                       target_memory=pl.MemorySpace.Left),
                                      addrs=0x0, mutex_ids=[2])
            right = pl.make_tile_group(type=pl.TileType(shape=[k, n], dtype=pl.DT_FP16,
                                                        target_memory=pl.MemorySpace.Right),
                                       addrs=0x0, mutex_ids=[3])
            accs = pl.make_tile_group(type=pl.TileType(shape=[m, n], dtype=pl.DT_FP32,
                                                       target_memory=pl.MemorySpace.Acc),
                                      addrs=0x0, mutex_ids=[4])
            ca, cb = a_l1.current(), b_l1.current()
            la, rb, acc = left.current(), right.current(), accs.current()
            pl.load(ca, a, [0, 0])
            pl.load(cb, b, [0, 0])
            pl.move(la, ca)
            pl.move(rb, cb)
            pl.matmul(acc, la, rb)
            if how == "relu":
                pl.move(vec.current(), acc, acc_to_vec_mode=mode,
                        relu_pre_mode=pl.ReluPreMode.NormalRelu)
            elif how == "scale":
                pl.move(vec.current(), acc, scale=2.0, acc_to_vec_mode=mode)
            else:
                pl.move(vec.current(), acc, acc_to_vec_mode=mode)
            pl.system.set_cross_core(pipe=pl.PipeType.FIX, event_id=0)
        with pl.section_vector():
            sub = pl.get_subblock_idx()
            pl.system.wait_cross_core(pipe=pl.PipeType.MTE3, event_id=0)
            if split_m:
                pl.store(out, vec.current(), [sub * (m // 2), 0])
            elif split_n:
                pl.store(out, vec.current(), [0, sub * (n // 2)])
            elif mode_name == "SingleModeVec0":
                if sub == 0:
                    pl.store(out, vec.current(), [0, 0])
            else:
                if sub == 1:
                    pl.store(out, vec.current(), [0, 0])
    return kern


@pytest.mark.parametrize("how", ["plain", "relu", "scale"])
@pytest.mark.parametrize("mode", ["SingleModeVec0", "SingleModeVec1", "DualModeSplitM",
                                  "DualModeSplitN"])
def test_acc_to_vec_moves(mode, how):
    m, k, n = 32, 32, 64
    kern = acc_to_vec(m, k, n, mode, how)
    a = (rand((m, k), torch.int8, 20) % 5).to(torch.float16)
    b = (rand((k, n), torch.int8, 21) % 5 - 2).to(torch.float16)
    c = a.float() @ b.float()
    want = {"relu": c.clamp(min=0), "scale": c * 2.0}.get(how, c)
    check(lambda: _launch(kern, a, b, torch.zeros(m, n)), want,
          (mode, how) == ("DualModeSplitN", "plain"))


# ---------------------------------------------------------------- Vec → Mat: insert


def insert_matmul(rows, cols, how: str, dtype=pl.DT_FP32):
    """The docs' insert kernel: each AIV computes x + y for its half of the rows, turns it NZ
    (a Vec → Vec move) and inserts it into a shared Mat tile (`pl.insert`, or `pl.move` with
    an offset, which is an insert there); the cube multiplies the Mat tile by `rhs`. `cols`
    splits the halves by column instead."""
    by_cols = how.endswith("cols")
    part = [rows, cols // 2] if by_cols else [rows // 2, cols]

    @pl.jit(auto_mutex=True)
    def kern(x: pl.Tensor[[rows, cols], dtype], y: pl.Tensor[[rows, cols], dtype],
             rhs: pl.Tensor[[cols, cols], dtype], out: pl.Tensor[[rows, cols], pl.DT_FP32]):
        v1_mat_group = pl.make_tile_group(type=_mat([rows, cols], dtype, pl.NZ),
                                          addrs=0x10000, mutex_ids=[0])
        with pl.section_vector():
            sub_index = pl.get_subblock_idx()
            at = [0, sub_index * (cols // 2)] if by_cols else [sub_index * (rows // 2), 0]
            tt = pl.TileType(shape=part, dtype=dtype, target_memory=pl.MemorySpace.Vec)
            tile_x = pl.make_tile_group(type=tt, addrs=0x0000, mutex_ids=[1]).current()
            tile_y = pl.make_tile_group(type=tt, addrs=0x2000, mutex_ids=[2]).current()
            tile_sum = pl.make_tile_group(type=tt, addrs=0x4000, mutex_ids=[3]).current()
            tile_nz = pl.make_tile_group(
                type=pl.TileType(shape=part, dtype=dtype, target_memory=pl.MemorySpace.Vec,
                                 layout=pl.NZ), addrs=0x6000, mutex_ids=[4]).current()
            v1_mat = v1_mat_group.current()
            pl.load(tile_x, x, at)
            pl.load(tile_y, y, at)
            pl.add(tile_sum, tile_x, tile_y)
            pl.move(tile_nz, tile_sum)  # ND -> NZ
            if how.startswith("move"):
                pl.move(v1_mat, tile_nz, offset=at)
            else:
                pl.insert(v1_mat, tile_nz, at)
            pl.system.set_cross_core(pipe=pl.PipeType.MTE3, event_id=2)
        with pl.section_cube():
            rhs_mat = pl.make_tile_group(type=_mat([cols, cols], dtype, pl.NZ), addrs=0x0000,
                                         mutex_ids=[5]).current()
            v1_left = pl.make_tile_group(type=pl.TileType(shape=[rows, cols], dtype=dtype,
                                                          target_memory=pl.MemorySpace.Left),
                                         addrs=0x0000, mutex_ids=[6]).current()
            rhs_right = pl.make_tile_group(type=pl.TileType(shape=[cols, cols], dtype=dtype,
                                                            target_memory=pl.MemorySpace.Right),
                                           addrs=0x0000, mutex_ids=[7]).current()
            c_l0c = pl.make_tile_group(type=pl.TileType(shape=[rows, cols], dtype=pl.DT_FP32,
                                                        target_memory=pl.MemorySpace.Acc),
                                       addrs=0x0000, mutex_ids=[8]).current()
            v1_mat = v1_mat_group.current()
            pl.load(rhs_mat, rhs, [0, 0])
            pl.move(rhs_right, rhs_mat)
            pl.system.wait_cross_core(pipe=pl.PipeType.MTE1, event_id=2,
                                      sync_mode=pl.CrossCoreSyncMode.INTRA_BLOCK)
            pl.move(v1_left, v1_mat)
            pl.matmul(c_l0c, v1_left, rhs_right)
            pl.store(out, c_l0c, [0, 0])
    return kern


@pytest.mark.parametrize("how", ["insert-rows", "move-rows", "insert-cols", "move-cols"])
@pytest.mark.parametrize("name", ["fp32", "fp16"])
def test_vec_to_mat_inserts(name, how):
    dt, tdt = DTYPES[name]
    rows, cols = 32, 64
    kern = insert_matmul(rows, cols, how, dt)
    x = (rand((rows, cols), torch.int8, 22) % 3).to(tdt)
    y = (rand((rows, cols), torch.int8, 23) % 3).to(tdt)
    rhs = (rand((cols, cols), torch.int8, 24) % 3).to(tdt)
    want = (x + y).float() @ rhs.float()
    check(lambda: _launch(kern, x, y, rhs, torch.zeros(rows, cols)), want,
          (name, how) == ("fp32", "insert-rows"))


# ---------------------------------------------------------------- sub-views


def subview_store(shape, rows, cols, valid, dtype, out_shape):
    """The docs' sub-view kernels: `tile[r0:r1, c0:c1]` stored directly, clamped by a runtime
    valid shape when `valid` is given."""
    @pl.jit(auto_mutex=True)
    def kern(a: pl.Tensor[shape, dtype], out: pl.Tensor[out_shape, dtype]):
        tile_group = pl.make_tile_group(
            type=pl.TileType(shape=shape, dtype=dtype, target_memory=pl.MemorySpace.Vec,
                             valid_shape=[-1, -1] if valid else None),
            addrs=0x0000, mutex_ids=[0])
        with pl.section_vector():
            tile = tile_group.next()
            if valid:
                pl.set_validshape(tile, valid)
            pl.load(tile, a, [0, 0])
            sub = tile[rows[0]:rows[1], cols[0]:cols[1]]
            pl.store(out, sub, [0, 0])
    return kern


SUBVIEWS = {  # name: (tile shape, rows, cols, runtime valid shape, dtype)
    "docs": ([8, 64], (2, 6), (16, 50), None, "fp16"),
    "docs-clamped": ([8, 64], (2, 6), (16, 50), [6, 40], "fp16"),
    "whole-rows": ([8, 32], (3, 8), (0, 32), None, "fp32"),
    "one-column": ([8, 32], (0, 8), (5, 6), None, "fp32"),
    "int8-cols": ([4, 64], (1, 3), (31, 64), None, "int8"),
    "bf16-corner": ([16, 16], (15, 16), (15, 16), None, "bf16"),
}


@pytest.mark.parametrize("case", list(SUBVIEWS))
def test_subviews(case):
    shape, rows, cols, valid, name = SUBVIEWS[case]
    dt, tdt = DTYPES[name]
    r1 = min(rows[1], valid[0]) if valid else rows[1]
    c1 = min(cols[1], valid[1]) if valid else cols[1]
    out_shape = [rows[1] - rows[0], cols[1] - cols[0]]
    kern = subview_store(shape, rows, cols, valid, dt, out_shape)
    a = rand(tuple(shape), tdt, 25)
    want = torch.zeros(out_shape, dtype=tdt)
    want[:r1 - rows[0], :c1 - cols[0]] = a[rows[0]:r1, cols[0]:c1]
    check(lambda: _launch(kern, a, torch.zeros(out_shape, dtype=tdt)), want, False)


def subview_runtime(rows, cols, dtype):
    """Sub-views at runtime offsets as operands of a vector op: out row block i = 2 * a[i]."""
    @pl.jit(auto_mutex=True)
    def kern(a: pl.Tensor[[rows, cols], dtype], out: pl.Tensor[[rows, cols], dtype]):
        tt = pl.TileType(shape=[rows, cols], dtype=dtype, target_memory=pl.MemorySpace.Vec)
        src = pl.make_tile_group(type=tt, addrs=0x0, mutex_ids=[0]).current()
        dst = pl.make_tile_group(type=tt, addrs=0x4000, mutex_ids=[1]).current()
        with pl.section_vector():
            pl.load(src, a, [0, 0])
            for i in pl.range(0, rows, 2):
                pl.add(dst[i:i + 2, 0:cols], src[i:i + 2, 0:cols], src[i:i + 2, 0:cols])
            pl.store(out, dst, [0, 0])
    return kern


def test_subviews_at_runtime_offsets_as_operands():
    kern = subview_runtime(8, 32, pl.DT_FP32)
    a = rand((8, 32), torch.float32, 26)
    check(lambda: _launch(kern, a, torch.zeros(8, 32)), a + a, False)


# ---------------------------------------------------------------- SSBUF messages


def ssbuf_message():
    """The docs' SSBUF kernel, its message used: the cube writes where the vector side loads
    from and stores to (rows `message.row`, `message.rows` of them, output row `message.at`)."""
    @pl.jit()
    def kern(x: pl.Tensor[[16, 32], pl.DT_FP32], out: pl.Tensor[[16, 32], pl.DT_FP32],
             row: pl.DT_INT32, at: pl.DT_INT32):
        message = pl.struct("Message", row=0, rows=0, at=0)
        with pl.section_cube():
            message.row = row
            message.rows = 4
            message.at = at
            pl.ssbuf_store(message, 64)
            pl.system.set_cross_core(pipe=pl.PipeType.S, event_id=15)
        with pl.section_vector():
            tt = pl.TileType(shape=[4, 32], dtype=pl.DT_FP32, target_memory=pl.MemorySpace.Vec,
                             valid_shape=[-1, -1])
            t = pl.make_tile(tt, addr=0x0)
            pl.system.wait_cross_core(pipe=pl.PipeType.S, event_id=15)
            pl.ssbuf_load(message, 64)
            if pl.get_subblock_idx() == 0:
                pl.set_validshape(t, [message.rows, 32])
                pl.load(t, x, [message.row, 0])
                pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE3,
                                   event_id=0)
                pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE3,
                                   event_id=0)
                pl.store(out, t, [message.at, 0])
    return kern


def test_ssbuf_message_drives_the_copy():
    kern = ssbuf_message()
    x = rand((16, 32), torch.float32, 27)
    want = torch.zeros(16, 32)
    want[9:13] = x[5:9]

    def run():
        out = torch.zeros(16, 32)
        kern(x, out, 5, 9)
        return out
    check(run, want, True)


# ---------------------------------------------------------------- pad values


def padded_tail(shape, rows, cols, dtype, pad):
    """The docs' tail recipe: load the valid [rows, cols] window of a [-1, -1] tile, then
    `fillpad` into a tile whose `pad` names the value for the rest; store the whole tile."""
    @pl.jit(auto_mutex=True)
    def kern(a: pl.Tensor[shape, dtype], out: pl.Tensor[shape, dtype]):
        src = pl.make_tile_group(type=pl.TileType(shape=shape, dtype=dtype,
                                                  target_memory=pl.MemorySpace.Vec,
                                                  valid_shape=[-1, -1]),
                                 addrs=0x0, mutex_ids=[0]).current()
        dst = pl.make_tile_group(type=pl.TileType(shape=shape, dtype=dtype,
                                                  target_memory=pl.MemorySpace.Vec, pad=pad),
                                 addrs=0x4000, mutex_ids=[1]).current()
        with pl.section_vector():
            pl.set_validshape(src, [rows, cols])
            pl.load(src, a, [0, 0])
            pl.fillpad(dst, src)
            pl.store(out, dst, [0, 0])
    return kern


def _pad_value(pad: str, tdt: torch.dtype):
    if pad == "zero":
        return 0
    if tdt.is_floating_point:
        return float("inf") if pad == "max" else float("-inf")
    return torch.iinfo(tdt).max if pad == "max" else torch.iinfo(tdt).min


@pytest.mark.parametrize("pad", ["zero", "max", "min"])
@pytest.mark.parametrize("name", ["fp32", "fp16", "int32", "int16"])
def test_pad_values_fill_a_tail(name, pad):
    dt, tdt = DTYPES[name]
    shape = [8, 64 // tdt.itemsize]
    kern = padded_tail(shape, 5, 3, dt, getattr(pl.TilePad, pad))
    a = rand(tuple(shape), tdt, 28)
    want = torch.full(tuple(shape), _pad_value(pad, tdt), dtype=tdt)
    want[:5, :3] = a[:5, :3]
    check(lambda: _launch(kern, a, torch.zeros_like(a)), want, False)


# ---------------------------------------------------------------- NZ GM tensors


def nz_gm_matmul(m, k, n):
    """An NZ GM tensor (its bytes in NZ fractal order) loaded into an NZ Mat tile as is."""
    @pl.jit(auto_mutex=True)
    def kern(a: pl.Tensor[[m, k], pl.DT_FP16, pl.NZ], b: pl.Tensor[[k, n], pl.DT_FP16],
             out: pl.Tensor[[m, n], pl.DT_FP32]):
        a_l1 = pl.make_tile_group(type=_mat([m, k], pl.DT_FP16), addrs=0x0, mutex_ids=[0])
        b_l1 = pl.make_tile_group(type=_mat([k, n], pl.DT_FP16), addrs=0x8000, mutex_ids=[1])
        left = pl.make_tile_group(type=pl.TileType(shape=[m, k], dtype=pl.DT_FP16,
                                                   target_memory=pl.MemorySpace.Left),
                                  addrs=0x0, mutex_ids=[2])
        right = pl.make_tile_group(type=pl.TileType(shape=[k, n], dtype=pl.DT_FP16,
                                                    target_memory=pl.MemorySpace.Right),
                                   addrs=0x0, mutex_ids=[3])
        accs = pl.make_tile_group(type=pl.TileType(shape=[m, n], dtype=pl.DT_FP32,
                                                   target_memory=pl.MemorySpace.Acc),
                                  addrs=0x0, mutex_ids=[4])
        with pl.section_cube():
            ca, cb = a_l1.current(), b_l1.current()
            la, rb, acc = left.current(), right.current(), accs.current()
            pl.load(ca, a, [0, 0])
            pl.load(cb, b, [0, 0])
            pl.move(la, ca)
            pl.move(rb, cb)
            pl.matmul(acc, la, rb)
            pl.store(out, acc, [0, 0])
    return kern


def test_nz_gm_tensors_are_refused_at_the_access():
    """The real codegen reads an NZ tensor's bytes in fractal order (a 5-D GlobalTensor); ours
    does not model that, and says so at the load rather than moving other elements."""
    m, k, n = 32, 32, 16
    kern = nz_gm_matmul(m, k, n)
    for backend in ("sim", "native") if HAS_CXX else ("sim",):
        with pytest.raises(NotSupported, match="NZ-layout GM tensor") as err:
            on_backend(backend, lambda: _launch(kern, torch.zeros(m, k, dtype=torch.float16),
                                                torch.zeros(k, n, dtype=torch.float16),
                                                torch.zeros(m, n)))
        assert err.value.span.line == line_of(kern, "pl.load(ca, a")


# ---------------------------------------------------------------- shapes pto-isa's Tile refuses


def one_tile(shape, dtype, space, layout=None):
    @pl.jit(auto_mutex=True)
    def kern(a: pl.Tensor[[64, 64], dtype]):
        tt = pl.TileType(shape=shape, dtype=dtype, target_memory=space, layout=layout)
        ring = pl.make_tile_group(type=tt, addrs=0x0, mutex_ids=[0])
        if space == pl.MemorySpace.Vec:
            with pl.section_vector():
                pl.load(ring.current(), a, [0, 0])
        else:
            with pl.section_cube():
                pl.load(ring.current(), a, [0, 0], order=[1, 0] if layout == pl.ZN else None)
    return kern


@pytest.mark.parametrize("shape,dtype,space,layout,words", [
    ([8, 7], pl.DT_FP32, M.Vec, None, "the row of a ND tile must span whole 32-byte blocks"),
    ([4, 40], pl.DT_INT8, M.Vec, None, "40 x 1 B is not a multiple of 32"),
    ([16, 64], pl.DT_INT8, M.Mat, pl.ZN, "made of 32 x 16 fractals: shape [16, 64]"),
    ([8, 16], pl.DT_FP16, M.Mat, None, "made of 16 x 16 fractals: shape [8, 16]"),
    ([16, 12], pl.DT_FP32, M.Mat, None, "made of 16 x 8 fractals: shape [16, 12]"),
], ids=["vec-fp32-7-cols", "vec-int8-40-cols", "mat-int8-zn-16-rows", "mat-fp16-8-rows",
        "mat-fp32-12-cols"])
def test_tile_shapes_pto_isa_refuses(shape, dtype, space, layout, words):
    """A tile shape whose C++ Tile static-asserts (bisheng refuses the kernel) is an
    InvalidShape at the tile's line on every backend (it was an internal ValueError of the
    simulator's layout model, or g++'s error only natively)."""
    kern = one_tile(shape, dtype, space, layout)
    arg = torch.zeros(64, 64, dtype={pl.DT_FP32: torch.float32, pl.DT_INT8: torch.int8,
                                     pl.DT_FP16: torch.float16}[dtype])
    for backend in ("sim", "native") if HAS_CXX else ("sim",):
        with pytest.raises(InvalidShape, match=re.escape(words)) as err:
            on_backend(backend, lambda: kern(arg))
        assert err.value.span.line == line_of(kern, "pl.make_tile_group(")


@pytest.mark.parametrize("shape,dtype,space", [
    ([1, 16], pl.DT_FP16, M.Mat), ([16, 8], pl.DT_FP32, M.Vec), ([8, 32], pl.DT_INT8, M.Vec)])
def test_tile_shapes_pto_isa_takes(shape, dtype, space):
    tdt = {pl.DT_FP32: torch.float32, pl.DT_INT8: torch.int8, pl.DT_FP16: torch.float16}[dtype]
    on_backend("sim", lambda: one_tile(shape, dtype, space)(torch.zeros(64, 64, dtype=tdt)))


# ---------------------------------------------------------------- move: more paths


def move_transposes(m, k, n, left_t: bool, right_t: bool):
    """A 2-D transposing move (dst shape = src shape reversed): an NZ Mat [N, K] holds the
    bytes of a ZN [K, N], which is what Right keeps, so Right gets B from Bᵀ in GM; likewise
    Left from an NZ Mat [K, M] of Aᵀ."""
    @pl.jit(auto_mutex=True)
    def kern(a: pl.Tensor[[k, m] if left_t else [m, k], pl.DT_FP16],
             b: pl.Tensor[[n, k] if right_t else [k, n], pl.DT_FP16],
             out: pl.Tensor[[m, n], pl.DT_FP32]):
        a_l1 = pl.make_tile_group(type=_mat([k, m] if left_t else [m, k], pl.DT_FP16),
                                  addrs=0x0, mutex_ids=[0])
        b_l1 = pl.make_tile_group(type=_mat([n, k] if right_t else [k, n], pl.DT_FP16),
                                  addrs=0x8000, mutex_ids=[1])
        left = pl.make_tile_group(type=pl.TileType(shape=[m, k], dtype=pl.DT_FP16,
                                                   target_memory=pl.MemorySpace.Left),
                                  addrs=0x0, mutex_ids=[2])
        right = pl.make_tile_group(type=pl.TileType(shape=[k, n], dtype=pl.DT_FP16,
                                                    target_memory=pl.MemorySpace.Right),
                                   addrs=0x0, mutex_ids=[3])
        accs = pl.make_tile_group(type=pl.TileType(shape=[m, n], dtype=pl.DT_FP32,
                                                   target_memory=pl.MemorySpace.Acc),
                                  addrs=0x0, mutex_ids=[4])
        with pl.section_cube():
            ca, cb = a_l1.current(), b_l1.current()
            la, rb, acc = left.current(), right.current(), accs.current()
            pl.load(ca, a, [0, 0])
            pl.load(cb, b, [0, 0])
            pl.move(la, ca)
            pl.move(rb, cb)
            pl.matmul(acc, la, rb)
            pl.store(out, acc, [0, 0])
    return kern


@pytest.mark.parametrize("left_t,right_t", [(False, True), (True, False), (True, True)],
                         ids=["right", "left", "both"])
def test_transposing_moves_out_of_mat_are_refused(left_t, right_t):
    """The builder lets a reversed shape through, but pto-isa's TMOV out of L1 static-asserts
    equal shapes: a typed error at the move on every backend (it was an internal error of the
    simulator and an out-of-tile trap natively). The docs' way is the ZN Mat tile above."""
    kern = move_transposes(32, 48, 16, left_t, right_t)
    args = (torch.zeros(48, 32, dtype=torch.float16) if left_t else
            torch.zeros(32, 48, dtype=torch.float16),
            torch.zeros(16, 48, dtype=torch.float16) if right_t else
            torch.zeros(48, 16, dtype=torch.float16), torch.zeros(32, 16))
    for backend in ("sim", "native") if HAS_CXX else ("sim",):
        with pytest.raises(InvalidShape, match="TMOV needs equal tile shapes") as err:
            on_backend(backend, lambda: kern(*args))
        assert err.value.span.line == line_of(kern, "pl.move(la" if left_t else "pl.move(rb")


def vec_to_mat_move(m, k, n):
    """A Vec tile moved whole into a same-shaped NZ Mat tile (TMOV UB → L1) as the left operand."""
    @pl.jit(auto_mutex=True)
    def kern(x: pl.Tensor[[m, k], pl.DT_FP16], b: pl.Tensor[[k, n], pl.DT_FP16],
             out: pl.Tensor[[m, n], pl.DT_FP32]):
        a_mat = pl.make_tile_group(type=_mat([m, k], pl.DT_FP16), addrs=0x10000, mutex_ids=[0])
        with pl.section_vector():
            if pl.get_subblock_idx() == 0:
                tx = pl.make_tile_group(type=pl.TileType(shape=[m, k], dtype=pl.DT_FP16,
                                                         target_memory=pl.MemorySpace.Vec),
                                        addrs=0x0, mutex_ids=[1]).current()
                tnz = pl.make_tile_group(type=pl.TileType(shape=[m, k], dtype=pl.DT_FP16,
                                                          target_memory=pl.MemorySpace.Vec,
                                                          layout=pl.NZ),
                                         addrs=0x4000, mutex_ids=[2]).current()
                pl.load(tx, x, [0, 0])
                pl.move(tnz, tx)
                pl.move(a_mat.current(), tnz)
            pl.system.set_cross_core(pipe=pl.PipeType.MTE3, event_id=3)
        with pl.section_cube():
            b_l1 = pl.make_tile_group(type=_mat([k, n], pl.DT_FP16), addrs=0x0,
                                      mutex_ids=[3]).current()
            la = pl.make_tile_group(type=pl.TileType(shape=[m, k], dtype=pl.DT_FP16,
                                                     target_memory=pl.MemorySpace.Left),
                                    addrs=0x0, mutex_ids=[4]).current()
            rb = pl.make_tile_group(type=pl.TileType(shape=[k, n], dtype=pl.DT_FP16,
                                                     target_memory=pl.MemorySpace.Right),
                                    addrs=0x0, mutex_ids=[5]).current()
            acc = pl.make_tile_group(type=pl.TileType(shape=[m, n], dtype=pl.DT_FP32,
                                                      target_memory=pl.MemorySpace.Acc),
                                     addrs=0x0, mutex_ids=[6]).current()
            pl.load(b_l1, b, [0, 0])
            pl.move(rb, b_l1)
            pl.system.wait_cross_core(pipe=pl.PipeType.MTE1, event_id=3,
                                      sync_mode=pl.CrossCoreSyncMode.INTRA_BLOCK)
            pl.move(la, a_mat.current())
            pl.matmul(acc, la, rb)
            pl.store(out, acc, [0, 0])
    return kern


def test_vec_tile_moved_whole_into_mat():
    m, k, n = 16, 32, 16
    kern = vec_to_mat_move(m, k, n)
    x = (rand((m, k), torch.int8, 33) % 4).to(torch.float16)
    b = (rand((k, n), torch.int8, 34) % 4).to(torch.float16)
    check(lambda: _launch(kern, x, b, torch.zeros(m, n)), x.float() @ b.float(), True)


@pytest.mark.parametrize("src,dst", [("Mat", "Vec"), ("Acc", "Mat"), ("Vec", "Left"),
                                     ("Acc", "Acc")])
def test_moves_the_real_frontend_refuses(src, dst, tmp_path):
    space = {"Mat": "pl.MemorySpace.Mat", "Vec": "pl.MemorySpace.Vec",
             "Acc": "pl.MemorySpace.Acc", "Left": "pl.MemorySpace.Left"}
    dtype = "pl.DT_FP32"
    assert_refused(
        ParserSyntaxError, f"move: unsupported data path src({src})->dst({dst}), supported "
        "paths: Mat->Left, Mat->Right, Mat->Scaling, Mat->Bias, Mat->ScaleLeft, "
        "Mat->ScaleRight, Acc->Vec, Vec->Vec, Vec->Mat", tmp_path, f"move_{src}_{dst}",
        "x: pl.Tensor[[16, 16], pl.DT_FP32]",
        f"""
        s = pl.make_tile(pl.TileType(shape=[16, 16], dtype={dtype}, target_memory={space[src]}),
                         addr=0x0)
        d = pl.make_tile(pl.TileType(shape=[16, 16], dtype={dtype}, target_memory={space[dst]}),
                         addr=0x8000)
        pl.move(d, s)
        """)


# ---------------------------------------------------------------- more store forms


def column_store(rows, cols):
    """A row reduction's [rows, 1] column vector (a DN Vec tile) stored to a [rows, 1] tensor."""
    @pl.jit(auto_mutex=True)
    def kern(x: pl.Tensor[[rows, cols], pl.DT_FP32], out: pl.Tensor[[rows, 1], pl.DT_FP32]):
        tt = pl.TileType(shape=[rows, cols], dtype=pl.DT_FP32, target_memory=pl.MemorySpace.Vec)
        col = pl.TileType(shape=[rows, 1], dtype=pl.DT_FP32, target_memory=pl.MemorySpace.Vec,
                          layout=pl.DN)
        with pl.section_vector():
            t = pl.make_tile_group(type=tt, addrs=0x0, mutex_ids=[0]).current()
            tmp = pl.make_tile_group(type=tt, addrs=0x4000, mutex_ids=[1]).current()
            red = pl.make_tile_group(type=col, addrs=0x8000, mutex_ids=[2]).current()
            pl.load(t, x, [0, 0])
            pl.maximum(red, t, tmp, dim=0)
            pl.store(out, red, [0, 0])
    return kern


def test_dn_column_vector_store():
    kern = column_store(16, 32)
    x = rand((16, 32), torch.float32, 35)
    check(lambda: _launch(kern, x, torch.zeros(16, 1)), x.amax(1, keepdim=True), False)


def runtime_offsets(dtype):
    """Offsets that are kernel arguments (runtime scalars) for both the load and the store."""
    @pl.jit(auto_mutex=True)
    def kern(a: pl.Tensor[[32, 64], dtype], out: pl.Tensor[[32, 64], dtype], r: pl.DT_INT32,
             c: pl.DT_INT32):
        tt = pl.TileType(shape=[8, 32], dtype=dtype, target_memory=pl.MemorySpace.Vec)
        ring = pl.make_tile_group(type=tt, addrs=0x0, mutex_ids=[0])
        with pl.section_vector():
            t = ring.current()
            pl.load(t, a, [r, c])
            pl.store(out, t, [c // 2, r])
    return kern


def test_runtime_offsets():
    kern = runtime_offsets(pl.DT_FP32)
    a = rand((32, 64), torch.float32, 36)
    want = torch.zeros(32, 64)
    want[8:16, 5:37] = a[5:13, 16:48]

    def run():
        out = torch.zeros(32, 64)
        kern(a, out, 5, 16)
        return out
    check(run, want, False)


def per_channel_store(m, k, n):
    """A per-channel scale (the docs' store_fp path): INT64 deq words loaded into an ND Mat
    tile, moved to Scaling, and the Acc stored to FP16 with each column's scale."""
    @pl.jit(auto_mutex=True)
    def kern(a: pl.Tensor[[m, k], pl.DT_FP16], b: pl.Tensor[[k, n], pl.DT_FP16],
             deq: pl.Tensor[[1, n], pl.DT_INT64], out: pl.Tensor[[m, n], pl.DT_FP16]):
        with pl.section_cube():
            ca = pl.make_tile_group(type=_mat([m, k], pl.DT_FP16), addrs=0x0,
                                    mutex_ids=[0]).current()
            cb = pl.make_tile_group(type=_mat([k, n], pl.DT_FP16), addrs=0x8000,
                                    mutex_ids=[1]).current()
            cd = pl.make_tile(_mat([1, n], pl.DT_INT64, pl.ND), addr=0x10000)
            fb = pl.make_tile(pl.TileType(shape=[1, n], dtype=pl.DT_INT64,
                                          target_memory=pl.MemorySpace.Scaling), addr=0x0)
            la = pl.make_tile_group(type=pl.TileType(shape=[m, k], dtype=pl.DT_FP16,
                                                     target_memory=pl.MemorySpace.Left),
                                    addrs=0x0, mutex_ids=[2]).current()
            rb = pl.make_tile_group(type=pl.TileType(shape=[k, n], dtype=pl.DT_FP16,
                                                     target_memory=pl.MemorySpace.Right),
                                    addrs=0x0, mutex_ids=[3]).current()
            acc = pl.make_tile_group(type=pl.TileType(shape=[m, n], dtype=pl.DT_FP32,
                                                      target_memory=pl.MemorySpace.Acc),
                                     addrs=0x0, mutex_ids=[4]).current()
            pl.load(ca, a, [0, 0])
            pl.load(cb, b, [0, 0])
            pl.load(cd, deq, [0, 0])
            pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.FIX, event_id=1)
            pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.FIX, event_id=1)
            pl.move(fb, cd)
            pl.system.sync_src(set_pipe=pl.PipeType.FIX, wait_pipe=pl.PipeType.FIX, event_id=2)
            pl.system.sync_dst(set_pipe=pl.PipeType.FIX, wait_pipe=pl.PipeType.FIX, event_id=2)
            pl.move(la, ca)
            pl.move(rb, cb)
            pl.matmul(acc, la, rb)
            pl.store(out, acc, [0, 0], scale=fb)
    return kern


def test_per_channel_scaled_store():
    import struct
    m, k, n = 16, 32, 32
    kern = per_channel_store(m, k, n)
    a = (rand((m, k), torch.int8, 37) % 4).to(torch.float16)
    b = (rand((k, n), torch.int8, 38) % 4).to(torch.float16)
    scales = [0.5 * (1 + j % 4) for j in range(n)]
    deq = torch.tensor([[struct.unpack("<I", struct.pack("<f", s))[0] for s in scales]],
                       dtype=torch.int64)
    want = ((a.float() @ b.float()) * torch.tensor(scales)).to(torch.float16)
    check(lambda: _launch(kern, a, b, deq, torch.zeros(m, n, dtype=torch.float16)), want, False)


@pytest.mark.parametrize("op", ["load", "store"])
def test_one_d_tensors_are_refused_as_the_real_builder_refuses_them(op, tmp_path):
    """A 2-D tile over a 1-D tensor: the real default order [-1, 0] is out of range."""
    assert_refused(ParserSyntaxError, f"{op}: order axis -1 is out of range for Tensor rank 1",
                   tmp_path, f"one_d_{op}", "x: pl.Tensor[[64], pl.DT_FP32]", f"""
        t = pl.make_tile(pl.TileType(shape=[1, 64], dtype=pl.DT_FP32), addr=0x0)
        with pl.section_vector():
            {"pl.load(t, x, [0])" if op == "load" else "pl.store(x, t, [0])"}
        """)
