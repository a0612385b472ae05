"""A sweep of the "system" API as its docs describe it (issue 21, system area): `struct`,
`struct_array`, `make_tuple`, TilingData classes (`int` / `float` / `bool` fields and `T[N]`
arrays), TilingKey schemas with `is_valid`, `datatype=` specialisation, `Ptr` / `addptr` /
`make_ptr` / `make_tensor` views, `make_tile`, Tile and Tensor aliases, the block / subblock
indices, `const`, `max` / `min` and shape policies, written as a user of the real PyPTO Pro
writes them from `docs/zh/pypto_pro/api/SIMD-API/{operation/utilities, basic_data_structures,
operation/resource_management, operation/system_variables}`, `api/Utils-API/python_syntax_sugar`
and `tutorials/operator_development/tile_based_python_programming/{TilingData, tiling_key}.md`.

Each case is a small kernel built for its parameters and checked against torch on the simulator;
the first case of each test also runs natively and must be bit-identical (`first_case_natively`),
PYPTOPRO_SWEEP_NATIVE=1 runs every case natively. What the real frontend refuses is refused here
with its error class and words, at the kernel line.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import pytest
import torch
from dual_backend import first_case_natively, on_backend
from kernel_source import assert_refused

import pypto_pro.language as pl
from pypto_pro.errors import (
    FinalRejectionError, InvalidArgument, InvalidOperationError, ParserIndexError,
    ParserSyntaxError, ParserTypeError, UnsupportedFeatureError,
)
from pypto_pro.runtime.tilingkey import TilingKeyField, build_schema

MS = pl.MemorySpace
VEC32 = pl.TileType(shape=[16, 32], dtype=pl.DT_FP32, target_memory=MS.Vec)


def _ints(kernel, n: int, *args, launch=None) -> list[int]:
    """`kernel(*args, out)` (or `kernel[launch](...)`) with an int32 `out` of n, as a list."""
    def run():
        out = torch.zeros(n, dtype=torch.int32)
        (kernel[launch] if launch is not None else kernel)(*args, out)
        return out
    return first_case_natively(run).tolist()


def _fp32(kernel, shape, *args, launch=None, tiling=None) -> torch.Tensor:
    """`kernel(*args, out[, tiling])` with an fp32 `out` of `shape`."""
    def run():
        out = torch.zeros(shape, dtype=torch.float32)
        extra = [tiling] if tiling is not None else []
        (kernel[launch] if launch is not None else kernel)(*args, out, *extra)
        return out
    return first_case_natively(run)


# ---------------------------------------------------------------- struct


def struct_fields(init, writes, reads):
    """A struct of scalar fields (`init`), `writes` assigned in the kernel body before the
    section, every field of `reads` written to out."""
    names = list(reads)

    @pl.jit()
    def k(out: pl.Tensor[[len(names)], pl.DT_INT32]):
        s = pl.struct("Info", **init)
        for name, value in writes.items():
            setattr(s, name, value)
        with pl.section_vector():
            for i, name in enumerate(names):
                pl.setval(out, i, getattr(s, name))
    return k


@pl.jit()
def struct_message_kernel(out: pl.Tensor[[6], pl.DT_INT32]):
    message = pl.struct("Message", batch=0, block=0, offsets=[0, 0, 0, 0])
    message.batch = 8
    message.block = 1
    message.offsets[0] = 32768
    message.offsets[2] = 65536
    with pl.section_vector():
        if pl.get_subblock_idx() == 0:
            pl.ssbuf_store(message, 0)
            pl.system.set_cross_core(pipe=pl.PipeType.S, event_id=15)
    with pl.section_cube():
        pl.system.wait_cross_core(pipe=pl.PipeType.S, event_id=15,
                                  sync_mode=pl.CrossCoreSyncMode.UNICAST_BLOCK)
        pl.ssbuf_load(message, 0)
        pl.printf("batch=%d, block=%d, offset0=%d",
                  message.batch, message.block, message.offsets[0])
    with pl.section_vector():
        pl.setval(out, 0, message.batch)
        pl.setval(out, 1, message.block)
        pl.setval(out, 2, message.offsets[0])
        pl.setval(out, 3, message.offsets[2])
        pl.setval(out, 4, message.offsets[1])
        pl.setval(out, 5, message.offsets[3])


def test_struct_docs_message_through_ssbuf():
    assert _ints(struct_message_kernel, 6) == [8, 1, 32768, 65536, 0, 0]


@pl.jit()
def struct_writes_in_sections(x: pl.Tensor[[4], pl.DT_INT32], n: pl.DT_INT32,
                              out: pl.Tensor[[8], pl.DT_INT32]):
    s = pl.struct("State", a=1, b=-2, arr=[5, 6, 7], big=1 << 40)
    with pl.section_vector():
        s.a = x[0] + n               # a runtime value into a field
        s.b = s.b * s.a              # a field from fields
        s.arr[1] = s.arr[0] + s.arr[2]
        for i in pl.range(0, 3):
            s.arr[i] = s.arr[i] + x[i + 1]
        if n > 2:
            s.a = s.a + 100          # modified in a branch
        else:
            s.a = s.a - 100
        pl.setval(out, 0, s.a)
        pl.setval(out, 1, s.b)
        for i in pl.range(0, 3):
            pl.setval(out, 2 + i, s.arr[i])
        pl.setval(out, 5, s.big // (1 << 30))
        pl.setval(out, 6, s.arr[n % 3])   # a runtime index into an array field
        pl.setval(out, 7, s.arr[2 - 1])


@pytest.mark.parametrize("n", [5, 1, 0])
def test_struct_fields_written_from_runtime_values(n):
    x = torch.tensor([3, 10, 20, 30], dtype=torch.int32)
    a = 3 + n
    arr = [5 + 10, (5 + 7) + 20, 7 + 30]
    want = [a + 100 if n > 2 else a - 100, -2 * a, *arr, 1024, arr[n % 3], arr[1]]
    assert _ints(struct_writes_in_sections, 8, x, n) == want


@pl.jit()
def struct_created_in_loop(out: pl.Tensor[[4], pl.DT_INT32]):
    with pl.section_vector():
        for i in pl.range(0, 4):
            s = pl.struct("Step", idx=i, sq=i * i, pair=[i, i + 1])
            s.pair[1] = s.pair[1] * 10
            pl.setval(out, i, s.idx + s.sq + s.pair[0] + s.pair[1])


def test_struct_created_inside_a_loop():
    assert _ints(struct_created_in_loop, 4) == [i + i * i + i + (i + 1) * 10 for i in range(4)]


@pl.jit()
def struct_float_fields(x: pl.Tensor[[16, 32], pl.DT_FP32], out: pl.Tensor[[16, 32], pl.DT_FP32]):
    cfg = pl.struct("Scale", mul=2.5, add=-1.0, pair=[0.5, 4.0])
    t = pl.make_tile(VEC32, addr=0x0)
    with pl.section_vector():
        cfg.add = cfg.add * cfg.pair[1]
        pl.load(t, x, [0, 0])
        pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
        pl.muls(t, t, cfg.mul)
        pl.adds(t, t, cfg.add)
        pl.muls(t, t, cfg.pair[0])
        pl.system.sync_src(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=1)
        pl.system.sync_dst(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=1)
        pl.store(out, t, [0, 0])


def test_struct_float_fields_scale_a_tile():
    x = torch.randint(-64, 64, (16, 32)).float() / 8
    assert torch.equal(_fp32(struct_float_fields, (16, 32), x), (x * 2.5 - 4.0) * 0.5)


def _bump(info, by):
    """A helper taking a struct: writes one field, reads another, returns a value."""
    info.count = info.count + by
    info.hist[by % 2] = info.hist[by % 2] + 1
    return info.count * 2


@pl.jit()
def struct_through_helpers(out: pl.Tensor[[4], pl.DT_INT32]):
    info = pl.struct("Counter", count=0, hist=[0, 0])
    with pl.section_vector():
        last = 0
        for i in pl.range(1, 6):
            last = _bump(info, i)
        pl.setval(out, 0, info.count)
        pl.setval(out, 1, last)
        pl.setval(out, 2, info.hist[0])
        pl.setval(out, 3, info.hist[1])


def test_struct_passed_to_a_helper_and_modified_there():
    assert _ints(struct_through_helpers, 4) == [15, 30, 2, 3]


# ---------------------------------------------------------------- struct_array


@pl.jit()
def struct_array_runtime_slots(n: pl.DT_INT32, out: pl.Tensor[[8], pl.DT_INT32]):
    ctx = pl.struct_array(4, "Ctx", task=-1, lens=[0, 0, 0], scale=1)
    with pl.section_vector():
        for t in pl.range(0, n):
            slot = t % 4
            ctx[slot].task = t
            ctx[slot].lens[t % 3] = ctx[slot].lens[t % 3] + t
            ctx[t % 4].scale = ctx[t % 4].scale * 2
        for i in pl.range(0, 4):
            pl.setval(out, i, ctx[i].task * 1000 + ctx[i].scale)
        pl.setval(out, 4, ctx[n % 4].lens[0] + ctx[n % 4].lens[1] + ctx[n % 4].lens[2])
        pl.setval(out, 5, ctx[3].lens[n % 3])
        last = ctx[(n - 1) % 4]
        pl.setval(out, 6, last.task)
        pl.setval(out, 7, last.lens[(n - 1) % 3])


def _ctx_reference(n: int) -> list[int]:
    ctx = [dict(task=-1, lens=[0, 0, 0], scale=1) for _ in range(4)]
    for t in range(n):
        c = ctx[t % 4]
        c["task"] = t
        c["lens"][t % 3] += t
        c["scale"] *= 2
    out = [c["task"] * 1000 + c["scale"] for c in ctx]
    out.append(sum(ctx[n % 4]["lens"]))
    out.append(ctx[3]["lens"][n % 3])
    last = ctx[(n - 1) % 4]
    return out + [last["task"], last["lens"][(n - 1) % 3]]


@pytest.mark.parametrize("n", [1, 6, 11])
def test_struct_array_slots_by_runtime_expressions(n):
    assert _ints(struct_array_runtime_slots, 8, n) == _ctx_reference(n)


@pl.jit()
def struct_array_nested_loops(out: pl.Tensor[[12], pl.DT_INT32]):
    grid = pl.struct_array(3, "Row", v=[0, 0, 0, 0], sum=0)
    with pl.section_vector():
        for i in pl.range(0, 3):
            for j in pl.range(0, 4):
                grid[i].v[j] = i * 10 + j
                grid[i].sum = grid[i].sum + grid[i].v[j]
        for i in pl.range(0, 3):
            for j in pl.range(0, 3):
                pl.setval(out, i * 3 + j, grid[i].v[j + 1] - grid[i].v[j])
        pl.setval(out, 9, grid[0].sum)
        pl.setval(out, 10, grid[1].sum)
        pl.setval(out, 11, grid[2].sum)


def test_struct_array_indexed_by_nested_loop_variables():
    want = [1] * 9 + [sum(i * 10 + j for j in range(4)) for i in range(3)]
    assert _ints(struct_array_nested_loops, 12) == want


# ---------------------------------------------------------------- make_tuple


def _pair(g, scale):
    """A helper returning a make_tuple of a tile and a scalar."""
    return pl.make_tuple(tile=g.next(), scale=scale * 2.0)


def _two(a, b):
    return a + b, a * b


@pl.jit(auto_mutex=True)
def tuple_of_tiles(x: pl.Tensor[[64, 32], pl.DT_FP32], out: pl.Tensor[[64, 32], pl.DT_FP32]):
    g = pl.make_tile_group(type=VEC32, addrs=0x0, mutex_ids=[0, 1])
    h = pl.make_tile_group(type=VEC32, addrs=0x8000, mutex_ids=[2, 3])
    bufs = pl.make_tuple(ping=h[0], pong=h[1], both=(h[0], h[1]))
    with pl.section_vector():
        for i in pl.range(0, 4):
            p = _pair(g, 1.5)
            pl.load(p.tile, x, [i * 16, 0])
            pl.muls(p.tile, p.tile, p.scale)
            s, m = _two(i, 2)
            dst = bufs.both[i % 2]
            pl.adds(dst, p.tile, s * m)
            pl.store(out, dst, [i * 16, 0])


def test_make_tuple_of_tiles_returned_by_helpers_and_indexed():
    x = torch.randint(-64, 64, (64, 32)).float() / 8
    want = x * 3.0
    for i in range(4):
        want[i * 16:(i + 1) * 16] += (i + 2) * (i * 2)
    assert torch.equal(_fp32(tuple_of_tiles, (64, 32), x), want)


@pl.jit()
def tuple_unpacking(n: pl.DT_INT32, out: pl.Tensor[[6], pl.DT_INT32]):
    t = pl.make_tuple(dims=(4, 8), base=n, nested=((1, 2), (3, 4)))
    with pl.section_vector():
        rows, cols = t.dims
        (a, b), (c, d) = t.nested
        pl.setval(out, 0, rows * cols + t.base)
        pl.setval(out, 1, a * 1000 + b * 100 + c * 10 + d)
        pl.setval(out, 2, t.nested[n % 2][1])
        pl.setval(out, 3, t.dims[n % 2])
        total = 0
        for i in pl.range(0, 2):
            total = total + t.nested[i][0] * t.dims[i]
        pl.setval(out, 4, total)
        pl.setval(out, 5, len(t.nested))


@pytest.mark.parametrize("n", [7, 2])
def test_make_tuple_unpacked_and_indexed_at_runtime(n):
    assert _ints(tuple_unpacking, 6, n) == [32 + n, 1234, [2, 4][n % 2], [4, 8][n % 2],
                                          1 * 4 + 3 * 8, 2]


# ---------------------------------------------------------------- TilingData classes


@dataclass
class EveryField:
    n: int
    scale: float
    flag: bool
    offsets: int[4]
    weights: float[2]
    masks: bool[3]
    bias: float = 0.25
    extra: int[2] = field(default_factory=lambda: [7, -9])


@pl.jit(auto_mutex=True)
def tiling_every_field(x: pl.Tensor[[64, 32], pl.DT_FP32], out: pl.Tensor[[64, 32], pl.DT_FP32],
                       tiling: EveryField):
    g = pl.make_tile_group(type=VEC32, addrs=0x0, mutex_ids=[0, 1])
    with pl.section_vector():
        for i in pl.range(0, tiling.n, 1):
            t = g.next()
            row = tiling.offsets[i]
            pl.load(t, x, [row, 0])
            pl.muls(t, t, tiling.scale)
            if tiling.flag:
                pl.adds(t, t, tiling.weights[i % 2])
            if tiling.masks[i % 3]:
                pl.adds(t, t, tiling.bias)
            offsets = tiling.offsets
            pl.adds(t, t, tiling.extra[0] + offsets[0])
            pl.store(out, t, [row, 0])


@pytest.mark.parametrize("n,flag,masks,extra", [
    (4, True, [True, False, True], None), (2, False, [False, False, True], [1, 2]),
    (3, True, [False, True, False], [0, 5])])
def test_tiling_data_every_documented_field_type(n, flag, masks, extra):
    x = torch.randint(-64, 64, (64, 32)).float() / 8
    offsets = [48, 0, 32, 16]
    kw = {} if extra is None else {"extra": extra}
    tiling = EveryField(n=n, scale=0.5, flag=flag, offsets=offsets, weights=[1.0, -2.0],
                        masks=masks, **kw)
    want = torch.zeros(64, 32)
    for i in range(n):
        r = offsets[i]
        v = x[r:r + 16] * 0.5
        if flag:
            v = v + [1.0, -2.0][i % 2]
        if masks[i % 3]:
            v = v + 0.25
        want[r:r + 16] = v + ((extra or [7])[0] + offsets[0])
    assert torch.equal(_fp32(tiling_every_field, (64, 32), x, tiling=tiling), want)


@dataclass
class AddTiling:
    shape: int[4]
    opkind: int[8]


@pl.jit(auto_mutex=True)
def add_dynrank_kernel(x: pl.Ptr[pl.DT_FP16], y: pl.Ptr[pl.DT_FP16], z: pl.Ptr[pl.DT_FP16],
                       tiling: AddTiling):
    n = tiling.shape[3]
    m = tiling.shape[0] * tiling.shape[1] * tiling.shape[2]
    tensor_x = pl.make_tensor(x, [m, n])
    tensor_y = pl.make_tensor(y, [m, n])
    tensor_z = pl.make_tensor(z, [m, n])
    tile_type = pl.TileType(shape=[32, 64], dtype=pl.DT_FP16, target_memory=pl.MemorySpace.Vec,
                            valid_shape=[-1, -1])
    a_db = pl.make_tile_group(type=tile_type, addrs=0x0000, mutex_ids=[0, 1])
    b_db = pl.make_tile_group(type=tile_type, addrs=0x10000, mutex_ids=[2, 3])
    c_db = pl.make_tile_group(type=tile_type, addrs=0x20000, mutex_ids=[30, 31])
    with pl.section_vector():
        num_cores = pl.get_block_num()
        core_id = pl.get_block_idx()
        m_tiles = (m + 32 - 1) // 32
        n_tiles = (n + 64 - 1) // 64
        total_tiles = m_tiles * n_tiles
        for idx in pl.range(core_id, total_tiles, num_cores):
            i = idx // n_tiles
            j = idx % n_tiles
            tile_a = a_db.next()
            tile_b = b_db.next()
            tile_c = c_db.next()
            rem_r = m - i * 32
            rem_c = n - j * 64
            rows = min(rem_r, 32)
            cols = min(rem_c, 64)
            pl.set_validshape(tile_a, [rows, cols])
            pl.set_validshape(tile_b, [rows, cols])
            pl.set_validshape(tile_c, [rows, cols])
            pl.load_tile(tile_a, tensor_x, [i, j])
            pl.load_tile(tile_b, tensor_y, [i, j])
            if tiling.opkind[4] == 0:
                pl.add(tile_c, tile_a, tile_b)
            elif tiling.opkind[4] == 1:
                pl.sub(tile_c, tile_a, tile_b)
            else:
                pl.mul(tile_c, tile_a, tile_b)
            pl.store_tile(tensor_z, tile_c, [i, j])


@pytest.mark.parametrize("shape,op", [([64, 128], 0), ([2, 33, 70], 1), ([2, 2, 3, 50], 2),
                                      ([40, 64], 1)])
def test_tiling_data_docs_dynamic_rank_kernel(shape, op):
    g = torch.Generator().manual_seed(len(shape) + op)
    x = (torch.randint(-64, 64, shape, generator=g).float() / 8).half()
    y = (torch.randint(-64, 64, shape, generator=g).float() / 8).half()
    dims = [1] * (4 - len(shape)) + list(shape)
    opkind = [0] * 8
    opkind[4] = op
    tiling = AddTiling(shape=dims, opkind=opkind)
    m = x.numel() // shape[-1]
    tiles = -(-m // 32) * -(-shape[-1] // 64)

    def run():
        z = torch.zeros(shape, dtype=torch.float16)
        add_dynrank_kernel[None, min(tiles, 3)](x, y, z, tiling)
        return z
    ref = [torch.add, torch.sub, torch.mul][op](x.float(), y.float()).half()
    assert torch.equal(first_case_natively(run), ref)


@dataclass
class LoopTiling:
    n_iters: int


@pl.jit(auto_mutex=True)
def copy_rows_kernel(x: pl.Tensor[[16, 64], pl.DT_FP16], z: pl.Tensor[[16, 64], pl.DT_FP16],
                     tiling: LoopTiling):
    tt = pl.TileType(shape=[1, 64], dtype=pl.DT_FP16, target_memory=pl.MemorySpace.Vec)
    g = pl.make_tile_group(type=tt, addrs=0x0, mutex_ids=[0, 1])
    with pl.section_vector():
        for i in pl.range(0, tiling.n_iters, 1):
            buf = g.next()
            pl.load_tile(buf, x, [i, 0])
            pl.store_tile(z, buf, [i, 0])


@pytest.mark.parametrize("n", [4, 0, 16])
def test_tiling_data_scalar_loop_bound(n):
    x = torch.arange(16 * 64, dtype=torch.float16).reshape(16, 64)

    def run():
        z = torch.zeros(16, 64, dtype=torch.float16)
        copy_rows_kernel[None, 1](x, z, LoopTiling(n_iters=n))
        return z
    want = torch.zeros(16, 64, dtype=torch.float16)
    want[:n] = x[:n]
    assert torch.equal(first_case_natively(run), want)


# ---------------------------------------------------------------- TilingKey


class AttentionKey:
    HasAtten = TilingKeyField(bits=1, values=[0, 1])
    BlockM = TilingKeyField(bits=8, values=[16, 32])

    def is_valid(self, key):
        has_atten, block_m = key
        return has_atten == 0 or block_m == 32


@pl.jit(auto_mutex=True, tiling_key=AttentionKey)
def keyed_kernel(x: pl.Tensor[[64, 32], pl.DT_FP32], out: pl.Tensor[[64, 32], pl.DT_FP32]):
    tt = pl.TileType(shape=[BlockM, 32], dtype=pl.DT_FP32, target_memory=MS.Vec)  # noqa: F821
    g = pl.make_tile_group(type=tt, addrs=0x0, mutex_ids=[0, 1])
    with pl.section_vector():
        for qi in pl.range(0, 64 // BlockM):  # noqa: F821
            t = g.next()
            pl.load(t, x, [qi * BlockM, 0])  # noqa: F821
            add = 0
            if HasAtten == 1:  # noqa: F821
                add = qi + 1
            pl.adds(t, t, add)
            pl.store(out, t, [qi * BlockM, 0])  # noqa: F821


@pytest.mark.parametrize("has,block", [(0, 16), (0, 32), (1, 32)])
def test_tiling_key_fields_fold_per_key(has, block):
    x = torch.randint(-64, 64, (64, 32)).float() / 8
    want = x.clone()
    if has:
        for qi in range(64 // block):
            want[qi * block:(qi + 1) * block] += qi + 1
    key = {"HasAtten": has, "BlockM": block}
    assert torch.equal(_fp32(keyed_kernel, (64, 32), x, launch=(None, 1, key)), want)


class MaskKey:
    NeedAttnMask = TilingKeyField(bits=1, values=[1, 0])
    Mode = TilingKeyField(bits=3, values=[16, 64, 128])


@pl.jit(tiling_key=MaskKey)
def mask_key_kernel(out: pl.Tensor[[2], pl.DT_INT32]):
    with pl.section_vector():
        pl.setval(out, 0, NeedAttnMask)  # noqa: F821
        pl.setval(out, 1, Mode)  # noqa: F821


@pytest.mark.parametrize("mask,mode", [(0, 16), (1, 128), (0, 64)])
def test_tiling_key_values_are_the_actual_values_not_indices(mask, mode):
    key = {"NeedAttnMask": mask, "Mode": mode}
    assert _ints(mask_key_kernel, 2, launch=(None, 1, key)) == [mask, mode]
    assert build_schema(MaskKey).pack(key) == [1, 0].index(mask) | (
        [16, 64, 128].index(mode) << 1)


def test_tiling_key_is_valid_refuses_a_combination_at_launch():
    with pytest.raises(InvalidArgument, match="is_valid"):
        keyed_kernel[None, 1, {"HasAtten": 1, "BlockM": 16}](torch.zeros(64, 32),
                                                             torch.zeros(64, 32))


class SchKey:
    sch_mode = TilingKeyField(bits=1, values=[0, 1])


@dataclass
class AddExampleTilingData:
    total_length: int
    tile_num: int


@pl.jit(tiling_key=SchKey, datatype={"x": "data_dtype", "y": "data_dtype", "z": "data_dtype"},
        auto_mutex=True)
def add_example(x: pl.Ptr[pl.DT_UINT8], y: pl.Ptr[pl.DT_UINT8], z: pl.Ptr[pl.DT_UINT8],
                workspace: pl.Ptr[pl.DT_UINT8], tiling: AddExampleTilingData):
    x_tensor = pl.make_tensor(x, [1, tiling.total_length], [tiling.total_length, 1],
                               dtype=data_dtype)  # noqa: F821
    y_tensor = pl.make_tensor(y, [1, tiling.total_length], [tiling.total_length, 1],
                               dtype=data_dtype)  # noqa: F821
    z_tensor = pl.make_tensor(z, [1, tiling.total_length], [tiling.total_length, 1],
                               dtype=data_dtype)  # noqa: F821
    tt = pl.TileType(shape=[1, 256], dtype=data_dtype, target_memory=MS.Vec,  # noqa: F821
                     valid_shape=[-1, -1])
    a = pl.make_tile_group(type=tt, addrs=0x0, mutex_ids=[0, 1])
    b = pl.make_tile_group(type=tt, addrs=0x4000, mutex_ids=[2, 3])
    with pl.section_vector():
        per = tiling.total_length // tiling.tile_num
        for i in pl.range(0, tiling.tile_num):
            ta = a.next()
            tb = b.next()
            pl.set_validshape(ta, [1, per])
            pl.set_validshape(tb, [1, per])
            pl.load(ta, x_tensor, [0, i * per])
            pl.load(tb, y_tensor, [0, i * per])
            if sch_mode == 0:  # noqa: F821
                pl.add(ta, ta, tb)
            else:
                pl.mul(ta, ta, tb)
            pl.store(z_tensor, ta, [0, i * per])


@pytest.mark.parametrize("dt,tdt,mode,length,tiles", [
    (pl.DT_FP16, torch.float16, 0, 512, 2), (pl.DT_FP32, torch.float32, 1, 384, 3),
    (pl.DT_INT32, torch.int32, 0, 200, 4), (pl.DT_INT16, torch.int16, 1, 256, 1)])
def test_tiling_key_with_datatype_over_byte_pointers(dt, tdt, mode, length, tiles):
    g = torch.Generator().manual_seed(length)
    x = torch.randint(-20, 20, (length,), generator=g).to(tdt)
    y = torch.randint(-20, 20, (length,), generator=g).to(tdt)
    ws = torch.zeros(64, dtype=torch.uint8)

    def run():
        z = torch.zeros(length, dtype=tdt)
        add_example[None, 1, {"sch_mode": mode}, {"x": dt, "y": dt, "z": dt}](
            x, y, z, ws, AddExampleTilingData(total_length=length, tile_num=tiles))
        return z
    assert torch.equal(first_case_natively(run), x + y if mode == 0 else x * y)


# ---------------------------------------------------------------- Ptr, addptr, make_ptr, views


def workspace_kernel(dtype, ws_offset, stride, dyn_offset: bool):
    """The docs' workspace kernel: `a * 2` staged through a (strided) view of a workspace
    pointer moved by `addptr`, in two halves (the second at a non-zero view offset)."""
    rows, cols = 64, 64

    @pl.jit(auto_mutex=True)
    def k(a: pl.Tensor[[rows, cols], dtype], workspace: pl.Ptr[dtype], off: pl.DT_INT64,
          out: pl.Tensor[[rows, cols], dtype]):
        if dyn_offset:
            ws_buf_ptr = pl.addptr(workspace, off)
        else:
            ws_buf_ptr = pl.addptr(workspace, ws_offset)
        ws_buf = pl.make_tensor(ws_buf_ptr, [rows, cols], [stride, 1])
        tt = pl.TileType(shape=[32, cols], dtype=dtype, target_memory=pl.MemorySpace.Vec)
        tile = pl.make_tile_group(type=tt, addrs=0x0000, mutex_ids=[0])
        with pl.section_vector():
            t = tile.current()
            for h in pl.range(0, 2):
                pl.load(t, a, [h * 32, 0])
                pl.add(t, t, t)
                pl.store(ws_buf, t, [h * 32, 0])
                pl.load(t, ws_buf, [h * 32, 0])
                pl.store(out, t, [h * 32, 0])
    return k


@pytest.mark.parametrize("dt,tdt,ws_offset,stride,dyn", [
    (pl.DT_FP16, torch.float16, 64 * 64, 64, False), (pl.DT_FP16, torch.float16, 64 * 64, 128,
                                                      False),
    (pl.DT_FP32, torch.float32, 96, 80, True), (pl.DT_INT32, torch.int32, 0, 64, True),
    (pl.DT_INT16, torch.int16, 32, 96, False), (pl.DT_BF16, torch.bfloat16, 16, 64, True)])
def test_addptr_make_tensor_workspace_views(dt, tdt, ws_offset, stride, dyn):
    k = workspace_kernel(dt, ws_offset, stride, dyn)
    a = torch.randint(-50, 50, (64, 64)).to(tdt)
    ws_len = ws_offset + 64 * stride + 16

    def run():
        ws = torch.full((ws_len,), 7, dtype=torch.int8).to(tdt)
        out = torch.zeros(64, 64, dtype=tdt)
        k(a, ws, ws_offset, out)
        # the workspace holds 2a at the view's strided addresses, and nothing in its row gaps
        view = ws[ws_offset:ws_offset + 64 * stride].reshape(64, stride)
        assert torch.equal(view[:, :64], a + a)
        assert (view[:, 64:] == 7).all() and (ws[:ws_offset] == 7).all()
        return out
    assert torch.equal(first_case_natively(run), a + a)


@pl.jit(auto_mutex=True)
def make_ptr_kernel(workspace: pl.Ptr[pl.DT_UINT8], out: pl.Tensor[[64, 128], pl.DT_FP16]):
    fp16_ptr = pl.make_ptr(workspace, dtype=pl.DT_FP16)
    ws_buf = pl.make_tensor(fp16_ptr, [64, 128], [128, 1])
    tt = pl.TileType(shape=[64, 128], dtype=pl.DT_FP16, target_memory=pl.MemorySpace.Vec)
    tile = pl.make_tile_group(type=tt, addrs=0x0000, mutex_ids=[0])
    with pl.section_vector():
        t = tile.current()
        pl.load(t, ws_buf, [0, 0])
        pl.store(out, t, [0, 0])


def test_make_ptr_reinterprets_a_byte_workspace():
    want = torch.randn(64, 128).half()

    def run():
        out = torch.zeros(64, 128, dtype=torch.float16)
        make_ptr_kernel(want.view(torch.uint8).reshape(-1).clone(), out)
        return out
    assert torch.equal(first_case_natively(run), want)


@pl.jit(auto_mutex=True)
def ptr_views_kernel(x: pl.Tensor[[16, 32], pl.DT_FP32], ws: pl.Ptr[pl.DT_UINT8],
                     out: pl.Tensor[[16, 32], pl.DT_FP32], out2: pl.Tensor[[16, 32], pl.DT_INT32]):
    base = pl.make_ptr(x)                            # a Tensor's pointer, same dtype
    same = pl.make_ptr(base)                         # identity
    shifted = pl.addptr(pl.addptr(same, 8), 24)      # chained: 32 elements = one row further
    rows_from_1 = pl.make_tensor(shifted, [15, 32])  # default contiguous strides
    as_int = pl.make_tensor(x, [16, 32], [32, 1], dtype=pl.DT_INT32)  # a Tensor reinterpreted
    staged = pl.make_tensor(pl.addptr(pl.make_ptr(ws, dtype=pl.DT_FP32), 32), [16, 32])
    tt = pl.TileType(shape=[16, 32], dtype=pl.DT_FP32, target_memory=MS.Vec, valid_shape=[-1, -1])
    ti = pl.TileType(shape=[16, 32], dtype=pl.DT_INT32, target_memory=MS.Vec)
    g = pl.make_tile_group(type=tt, addrs=0x0, mutex_ids=[0, 1])
    gi = pl.make_tile_group(type=ti, addrs=0x8000, mutex_ids=[2])
    with pl.section_vector():
        t = g.next()
        pl.set_validshape(t, [15, 32])
        pl.load(t, rows_from_1, [0, 0])
        pl.store(out, t, [1, 0])
        u = g.next()
        pl.set_validshape(u, [16, 32])
        pl.load(u, x, [0, 0])
        pl.muls(u, u, 3.0)
        pl.store(staged, u, [0, 0])
        w = gi.current()
        pl.load(w, as_int, [0, 0])
        pl.store(out2, w, [0, 0])


def test_ptr_of_a_tensor_chained_addptr_and_reinterpreting_views():
    x = torch.randn(16, 32)

    def run():
        ws = torch.zeros(4 * (32 + 16 * 32), dtype=torch.uint8)
        out = torch.zeros(16, 32)
        out2 = torch.zeros(16, 32, dtype=torch.int32)
        ptr_views_kernel(x, ws, out, out2)
        assert torch.equal(ws.view(torch.float32)[32:].reshape(16, 32), x * 3.0)
        assert torch.equal(out2, x.view(torch.int32))
        return out
    want = torch.zeros(16, 32)
    want[1:] = x[1:]
    assert torch.equal(first_case_natively(run), want)


# ---------------------------------------------------------------- block / subblock indices


@pl.jit()
def vector_only_indices(out: pl.Tensor[[256], pl.DT_INT32]):
    with pl.section_vector():
        vidx = pl.get_block_idx()
        base = vidx * 4
        pl.setval(out, base, vidx)
        pl.setval(out, base + 1, pl.get_block_num())
        pl.setval(out, base + 2, pl.get_subblock_idx())
        pl.setval(out, base + 3, pl.get_subblock_num())


@pl.jit()
def cube_only_indices(out: pl.Tensor[[256], pl.DT_INT32]):
    with pl.section_cube():
        idx = pl.get_block_idx()
        pl.setval(out, idx * 4, idx)
        pl.setval(out, idx * 4 + 1, pl.get_block_num())
        pl.setval(out, idx * 4 + 2, pl.get_subblock_idx())
        pl.setval(out, idx * 4 + 3, pl.get_subblock_num())


@pl.jit()
def mixed_indices(out: pl.Tensor[[512], pl.DT_INT32]):
    core_id = pl.get_block_idx() // pl.get_subblock_num()
    with pl.section_cube():
        c = pl.get_block_idx()
        pl.setval(out, c * 4, c)
        pl.setval(out, c * 4 + 1, pl.get_subblock_num())
        pl.setval(out, c * 4 + 2, core_id)
        pl.setval(out, c * 4 + 3, pl.get_subblock_idx())
    with pl.section_vector():
        v = pl.get_block_idx()
        pl.setval(out, 160 + v * 4, v)
        pl.setval(out, 160 + v * 4 + 1, pl.get_subblock_num())
        pl.setval(out, 160 + v * 4 + 2, core_id)
        pl.setval(out, 160 + v * 4 + 3, pl.get_subblock_idx())


@pytest.mark.parametrize("blocks", [1, 3, 40])  # 40: more blocks than the SoC has cube cores
def test_block_and_subblock_indices_per_execution_domain(blocks):
    want = [0] * 256
    for b in range(blocks):
        want[b * 4:b * 4 + 4] = [b, blocks, 0, 1]
    assert _ints(vector_only_indices, 256, launch=(None, blocks)) == want
    assert _ints(cube_only_indices, 256, launch=(None, blocks)) == want
    mixed = [0] * 512
    for b in range(blocks):
        mixed[b * 4:b * 4 + 4] = [b, 1, b, 0]
        for s in range(2):
            v = b * 2 + s
            mixed[160 + v * 4:160 + v * 4 + 4] = [v, 2, b, s]
    assert _ints(mixed_indices, 512, launch=(None, blocks)) == mixed


@pl.jit(auto_mutex=True)
def multicore_add_kernel(x: pl.Tensor[[128, 128], pl.DT_FP16], y: pl.Tensor[[128, 128], pl.DT_FP16],
                         z: pl.Tensor[[128, 128], pl.DT_FP16]):
    tt = pl.TileType(shape=[64, 128], dtype=pl.DT_FP16, target_memory=pl.MemorySpace.Vec)
    tile_a = pl.make_tile_group(type=tt, addrs=0x0000, mutex_ids=[0])
    tile_b = pl.make_tile_group(type=tt, addrs=0x4000, mutex_ids=[1])
    tile_c = pl.make_tile_group(type=tt, addrs=0x8000, mutex_ids=[2])
    with pl.section_vector():
        vidx = pl.get_block_idx()
        _bnum = pl.get_block_num()
        offset = vidx * 64
        cur_a = tile_a.current()
        cur_b = tile_b.current()
        cur_c = tile_c.current()
        pl.load(cur_a, x, [offset, 0])
        pl.load(cur_b, y, [offset, 0])
        pl.add(cur_c, cur_a, cur_b)
        pl.store(z, cur_c, [offset, 0])


def test_get_block_idx_docs_multicore_add():
    x, y = torch.randn(128, 128).half(), torch.randn(128, 128).half()

    def run():
        z = torch.zeros(128, 128, dtype=torch.float16)
        multicore_add_kernel[None, 2](x, y, z)
        return z
    assert torch.equal(first_case_natively(run), x + y)


# ---------------------------------------------------------------- const, max, min


def const_kernel(dtype, value):
    @pl.jit()
    def k(out: pl.Tensor[[2], dtype]):
        c = pl.const(value, dtype)
        with pl.section_vector():
            pl.setval(out, 0, c)
            pl.setval(out, 1, c + c)
    return k


CONSTS = [(pl.DT_INT8, torch.int8, -7), (pl.DT_INT16, torch.int16, 300),
          (pl.DT_INT32, torch.int32, -1), (pl.DT_INT64, torch.int64, 1 << 40),
          (pl.DT_UINT8, torch.uint8, 200), (pl.DT_UINT16, torch.int16, 40000),
          (pl.DT_UINT32, torch.int32, 3000000000), (pl.DT_FP16, torch.float16, 1.5),
          (pl.DT_FP32, torch.float32, -2.25), (pl.DT_BF16, torch.bfloat16, 0.375),
          (pl.DT_INT32, torch.int32, 42), (pl.DT_UINT64, torch.uint64, 1 << 40)]


def _wrap(value, tdt: torch.dtype, bits_of):
    """`value` stored as the kernel's dtype, read back through torch's bit-twin `tdt`."""
    return torch.tensor([value], dtype=torch.int64).to(bits_of).view(tdt) if not isinstance(
        value, float) else torch.tensor([value], dtype=tdt)


@pytest.mark.parametrize("dt,tdt,value", CONSTS, ids=lambda v: getattr(v, "name", str(v)))
def test_const_every_documented_dtype(dt, tdt, value):
    k = const_kernel(dt, value)

    def run():
        out = torch.zeros(2, dtype=tdt)
        k(out)
        return out
    got = first_case_natively(run)
    bits = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[tdt.itemsize]
    if isinstance(value, float):
        assert got.tolist() == [value, value * 2]
    else:
        mask = (1 << (8 * tdt.itemsize)) - 1
        as_bits = [v & mask for v in got.view(bits).tolist()]
        assert as_bits == [value & mask, (2 * value) & mask]


@pl.jit()
def max_min_kernel(a: pl.DT_INT32, b: pl.DT_INT64, f: pl.DT_FP32,
                   out: pl.Tensor[[8], pl.DT_INT64], outf: pl.Tensor[[2], pl.DT_FP32]):
    with pl.section_vector():
        pl.setval(out, 0, max(a, b))
        pl.setval(out, 1, min(a, b))
        pl.setval(out, 2, pl.max(a - 10, 0))
        pl.setval(out, 3, pl.min(7, b))
        pl.setval(out, 4, max(1, a - b + 1))
        pl.setval(out, 5, min(max(a, -3), 3))
        total = 0
        for i in pl.range(0, 4):
            total = total + min(i * a, 5)
        pl.setval(out, 6, total)
        pl.setval(out, 7, max(3, 9))
        pl.setval(outf, 0, max(f, 0.5))
        pl.setval(outf, 1, pl.min(f * 2.0, 1.0))


@pytest.mark.parametrize("a,b,f", [(5, 9, 0.25), (-4, -20, 3.0), (12, 12, -1.5)])
def test_max_min_builtins_and_pl_forms(a, b, f):
    def run():
        out = torch.zeros(8, dtype=torch.int64)
        outf = torch.zeros(2)
        max_min_kernel(a, b, f, out, outf)
        return torch.cat([out.double(), outf.double()])
    want = [max(a, b), min(a, b), max(a - 10, 0), min(7, b), max(1, a - b + 1),
            min(max(a, -3), 3), sum(min(i * a, 5) for i in range(4)), 9,
            max(f, 0.5), min(f * 2.0, 1.0)]
    assert first_case_natively(run).tolist() == want


# ---------------------------------------------------------------- shape policies


@pl.jit(auto_mutex=True)
def add_static(x: pl.Tensor[[pl.STATIC, pl.STATIC], pl.DT_FP16],
               y: pl.Tensor[[pl.STATIC, pl.STATIC], pl.DT_FP16],
               z: pl.Tensor[[pl.STATIC, pl.STATIC], pl.DT_FP16]):
    tile_type = pl.TileType(shape=[32, 64], dtype=pl.DT_FP16, target_memory=pl.MemorySpace.Vec)
    a_db = pl.make_tile_group(type=tile_type, addrs=0x0000, mutex_ids=[0, 1])
    b_db = pl.make_tile_group(type=tile_type, addrs=0x10000, mutex_ids=[2, 3])
    c_db = pl.make_tile_group(type=tile_type, addrs=0x20000, mutex_ids=[4, 5])
    with pl.section_vector():
        num_cores = pl.get_block_num()
        core_id = pl.get_block_idx()
        m_tile_num = x.shape[0] / 32
        n_tile_num = x.shape[1] / 64
        for i in pl.range(core_id, m_tile_num, num_cores):
            for j in pl.range(0, n_tile_num, 1):
                tile_a = a_db.next()
                tile_b = b_db.next()
                tile_c = c_db.next()
                pl.load_tile(tile_a, x, [i, j])
                pl.load_tile(tile_b, y, [i, j])
                pl.add(tile_c, tile_a, tile_b)
                pl.store_tile(z, tile_c, [i, j])


@pl.jit(auto_mutex=True)
def mixed_policies(x: pl.Tensor[[2, pl.DYNAMIC, ...], pl.DT_FP32],
                   out: pl.Tensor[[pl.DYNAMIC, pl.STATIC], pl.DT_FP32]):
    g = pl.make_tile_group(type=VEC32, addrs=0x0, mutex_ids=[0, 1])
    flat = pl.make_tensor(x, [x.shape[0] * x.shape[1], x.shape[2]])
    with pl.section_vector():
        for i in pl.range(0, out.shape[0] // 16):
            for j in pl.range(0, out.shape[1] // 32):
                t = g.next()
                pl.load_tile(t, flat, [i, j])
                pl.adds(t, t, x.shape[2] + x.shape[0])
                pl.store_tile(out, t, [i, j])


@pytest.mark.parametrize("m,n,cores", [(64, 128, 1), (96, 64, 2), (64, 128, 2)])
def test_shape_policies_static_dynamic_and_ellipsis(m, n, cores):
    x, y = torch.randn(m, n).half(), torch.randn(m, n).half()

    def run():
        z = torch.zeros(m, n, dtype=torch.float16)
        add_static[None, cores](x, y, z)
        return z
    assert torch.equal(first_case_natively(run), x + y)
    rows = m // 16
    x3 = torch.randn(2, rows * 8, n)

    def run3():
        out = torch.zeros(2 * rows * 8, n)
        mixed_policies(x3, out)
        return out
    assert torch.equal(on_sim(run3), x3.reshape(-1, n) + (n + 2))


def on_sim(run):
    return on_backend("sim", run)


# ---------------------------------------------------------------- make_tile, aliases, TileType


@pl.jit()
def make_tile_add_kernel(a: pl.Tensor[[64, 128], pl.DT_FP16], b: pl.Tensor[[64, 128], pl.DT_FP16],
                         out: pl.Tensor[[64, 128], pl.DT_FP16]):
    tt = pl.TileType(shape=[64, 128], dtype=pl.DT_FP16, target_memory=pl.MemorySpace.Vec)
    tile_a = pl.make_tile(tt, addr=0x0000)
    tile_b = pl.make_tile(tt, addr=0x4000, size=16384)
    tile_out: pl.Tile[[64, 128], pl.DT_FP16] = pl.make_tile(tt, addr=0x8000)
    with pl.section_vector():
        pl.load(tile_a, a, [0, 0])
        pl.load(tile_b, b, [0, 0])
        pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
        pl.add(tile_out, tile_a, tile_b)
        pl.system.sync_src(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=1)
        pl.system.sync_dst(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=1)
        pl.store(out, tile_out, [0, 0])


def test_make_tile_docs_add_kernel():
    a, b = torch.randn(64, 128).half(), torch.randn(64, 128).half()

    def run():
        out = torch.zeros(64, 128, dtype=torch.float16)
        make_tile_add_kernel(a, b, out)
        return out
    assert torch.equal(first_case_natively(run), a + b)


@pl.jit(auto_mutex=True)
def alias_kernel(input_tensor: pl.Tensor[[16, 32], pl.DT_FP32],
                 replacement_tensor: pl.Tensor[[16, 32], pl.DT_FP32],
                 out: pl.Tensor[[32, 32], pl.DT_FP32]):
    input_tile_group = pl.make_tile_group(type=VEC32, addrs=0x0, mutex_ids=[0])
    replacement_tile_group = pl.make_tile_group(type=VEC32, addrs=0x4000, mutex_ids=[1])
    with pl.section_vector():
        original_input_alias = input_tensor
        original_input_alias_chain = original_input_alias
        input_tile = input_tile_group.current()
        saved_input_tile = input_tile
        input_tile = replacement_tile_group.current()
        input_tensor = replacement_tensor
        pl.load(saved_input_tile, original_input_alias_chain, [0, 0])
        pl.load(input_tile, input_tensor, [0, 0])
        pl.muls(input_tile, input_tile, 2.0)
        pl.store(out, saved_input_tile, [0, 0])
        pl.store(out, input_tile, [16, 0])


def test_tile_and_tensor_aliases_keep_what_they_were_bound_to():
    a, b = torch.randn(16, 32), torch.randn(16, 32)

    def run():
        out = torch.zeros(32, 32)
        alias_kernel(a, b, out)
        return out
    assert torch.equal(first_case_natively(run), torch.cat([a, b * 2]))


@pytest.mark.parametrize("pad,fill", [
    (pl.TilePad.zero, 0.0), (pl.TilePad.max, float("inf")), (pl.TilePad.min, float("-inf")),
    (1, 0.0), (3, float("-inf"))])
def test_tile_pad_fills_the_invalid_region(pad, fill):
    tt = pl.TileType(shape=[16, 32], dtype=pl.DT_FP32, valid_shape=[-1, -1], pad=pad)

    @pl.jit(auto_mutex=True)
    def k(x: pl.Tensor[[16, 32], pl.DT_FP32], out: pl.Tensor[[16, 32], pl.DT_FP32]):
        g = pl.make_tile_group(type=tt, addrs=0x0, mutex_ids=[0])
        with pl.section_vector():
            t = g.current()
            pl.set_validshape(t, [5, 7])
            pl.load(t, x, [0, 0])
            pl.fillpad(t, t)
            pl.set_validshape(t, [16, 32])
            pl.store(out, t, [0, 0])
    x = torch.randn(16, 32)
    want = torch.full((16, 32), fill)
    want[:5, :7] = x[:5, :7]
    got = on_sim(lambda: _launch_out(k, x))
    assert torch.equal(got, want)


def _launch_out(k, x):
    out = torch.zeros_like(x)
    k(x, out)
    return out


def test_datatype_queries_as_documented():
    assert pl.DT_FP16.get_bit() == 16 and pl.DT_FP16.bits() == 16
    assert pl.DT_FP16.is_float() and not pl.DT_INT8.is_float()
    assert pl.DT_INT8.is_signed_int() and pl.DT_INT8.is_signed()
    assert pl.DT_UINT8.is_unsigned_int() and pl.DT_UINT8.is_unsigned()
    assert pl.DT_UINT32.is_int() and pl.DT_INT64.is_int() and not pl.DT_BF16.is_int()
    assert not pl.DT_FP16.is_signed_int() and not pl.DT_UINT8.is_signed()
    assert pl.DT_FP16.to_string() == "fp16" and pl.DT_BF16.to_string() == "bfloat16"
    assert pl.DT_FP16.to_c_type_string() == "half" and pl.DT_INT32.to_c_type_string() == "int32_t"
    assert pl.DT_INT4.get_bit() == 4 and pl.DT_FP4E2M1.get_bit() == 4
    assert [d.bits() for d in (pl.DT_BOOL, pl.DT_INT64, pl.DT_HF8)] == [8, 64, 8]


@pl.jit(auto_mutex=True)
def dynamic_true_division_bound(x: pl.Tensor[[pl.DYNAMIC, 32], pl.DT_FP32],
                                out: pl.Tensor[[pl.DYNAMIC, 32], pl.DT_FP32]):
    tt = pl.TileType(shape=[16, 32], dtype=pl.DT_FP32, target_memory=MS.Vec, valid_shape=[-1, -1])
    g = pl.make_tile_group(type=tt, addrs=0x0, mutex_ids=[0, 1])
    with pl.section_vector():
        rows = x.shape[0]
        for i in pl.range(0, rows / 16):   # a true division: the loop runs while i < rows / 16
            t = g.next()
            pl.set_validshape(t, [min(rows - i * 16, 16), 32])
            pl.load(t, x, [i * 16, 0])
            pl.adds(t, t, 1.0)
            pl.store(out, t, [i * 16, 0])


@pytest.mark.parametrize("rows", [48, 40, 17, 1])
def test_true_division_loop_bound_runs_while_below_the_quotient(rows):
    x = torch.randint(-64, 64, (rows, 32)).float() / 8

    def run():
        out = torch.zeros(rows, 32)
        dynamic_true_division_bound(x, out)
        return out
    assert torch.equal(first_case_natively(run), x + 1)


# ---------------------------------------------------------------- documented refusals

PARAMS = ("out: pl.Tensor[[4], pl.DT_INT32], n: pl.DT_INT32, f: pl.DT_FP32, "
          "p4: pl.Ptr[pl.DT_INT4]")


@pytest.mark.parametrize("name,body,error,fragment", [
    ("tuple_positional", "t = pl.make_tuple(1, 2)", ParserSyntaxError,
     "pl.make_tuple() does not accept positional arguments; use keyword args"),
    ("tuple_empty", "t = pl.make_tuple()", ParserSyntaxError,
     "pl.make_tuple() requires at least one keyword argument (field=value)"),
    ("tuple_star_kwargs", "t = pl.make_tuple(**{'a': 1})", ParserSyntaxError,
     "pl.make_tuple() does not support **kwargs"),
    ("struct_no_field", "s = pl.struct('S')", ParserSyntaxError,
     'pl.struct("Name", ...) requires at least one keyword field'),
    ("struct_star_kwargs", "s = pl.struct('S', **{'a': 1})", ParserSyntaxError,
     "pl.struct() does not support **kwargs"),
    ("array_runtime_size", "a = pl.struct_array(n, 'S', x=0)", ParserSyntaxError,
     "pl.struct_array() requires an integer size as first argument"),
    ("array_zero_size", "a = pl.struct_array(0, 'S', x=0)", ParserSyntaxError,
     "pl.struct_array() size must be a positive integer, got 0"),
    ("array_no_name", "a = pl.struct_array(2, x=0)", ParserSyntaxError,
     'pl.struct_array(N, "Name", ...) requires a string struct name as second arg'),
    ("array_name_not_str", "a = pl.struct_array(2, 7, x=0)", ParserSyntaxError,
     'pl.struct_array(N, "Name", ...) requires a string struct name as second arg'),
    ("array_no_field", "a = pl.struct_array(2, 'S')", ParserSyntaxError,
     'pl.struct_array(N, "Name", ...) requires at least one keyword field'),
    ("array_star_kwargs", "a = pl.struct_array(2, 'S', **{'x': 1})", ParserSyntaxError,
     "pl.struct_array() does not support **kwargs"),
    ("array_out_of_bounds", "a = pl.struct_array(2, 'S', x=0)\npl.setval(out, 0, a[2].x)",
     ParserIndexError, "GetItemExpr index 2 out of bounds for tuple with 2 elements"),
    ("array_negative_index", "a = pl.struct_array(2, 'S', x=0)\npl.setval(out, 0, a[-1].x)",
     ParserIndexError, "GetItemExpr index -1 out of bounds"),
    ("array_slice", "a = pl.struct_array(3, 'S', x=0)\nb = a[0:2]", UnsupportedFeatureError,
     "'Slice' expressions are not supported"),
    ("array_iterated", "a = pl.struct_array(2, 'S', x=0)\nfor slot in a:\n"
                       "    pl.setval(out, 0, slot.x)", ParserSyntaxError,
     "For loop must use pl.range()"),
    ("max_of_three", "pl.setval(out, 0, max(n, 1, 2))", InvalidOperationError,
     "Scalar binary operation 'max' requires exactly 2 arguments, got 3"),
    ("min_of_one", "pl.setval(out, 0, pl.min(n))", InvalidOperationError,
     "Scalar binary operation 'min' requires exactly 2 arguments, got 1"),
    ("max_keywords", "pl.setval(out, 0, pl.max(n, rhs=2))", InvalidOperationError,
     "Scalar operation 'max' does not accept keyword arguments"),
    ("const_runtime", "c = pl.const(n, pl.DT_INT32)", ParserSyntaxError,
     "pl.const needs a compile-time number"),
    ("make_tile_positional_addr", "tt = pl.TileType(shape=[16, 32], dtype=pl.DT_FP32)\n"
                                  "t = pl.make_tile(tt, 0x0)", FinalRejectionError,
     "pl.make_tile() takes 1 positional argument"),
    ("make_tile_no_addr", "tt = pl.TileType(shape=[16, 32], dtype=pl.DT_FP32)\n"
                          "t = pl.make_tile(tt)", FinalRejectionError,
     "missing required keyword 'addr'"),
    ("make_tile_runtime_addr", "tt = pl.TileType(shape=[16, 32], dtype=pl.DT_FP32)\n"
                               "t = pl.make_tile(tt, addr=n)", FinalRejectionError,
     "'addr' must be a compile-time integer"),
    ("addptr_sub_byte", "q = pl.addptr(p4, 2)", ParserTypeError,
     "not supported on the sub-byte element type"),
    ("load_rank1_into_2d_tile", "tt = pl.TileType(shape=[1, 4], dtype=pl.DT_INT32)\n"
                                "t = pl.make_tile(tt, addr=0)\nwith pl.section_vector():\n"
                                "    pl.load(t, out, [0])", ParserSyntaxError,
     "load: order axis -1 is out of range for Tensor rank 1"),
    ("runtime_float_range_bound", "with pl.section_vector():\n    for i in pl.range(0, f):\n"
                                  "        pl.setval(out, 0, i)", UnsupportedFeatureError,
     "a run-time float pl.range bound"),
])
def test_documented_refusals(tmp_path, name, body, error, fragment):
    assert_refused(error, fragment, tmp_path, name, PARAMS, body + "\n")


# ---------------------------------------------------------------- scalars, annotations, snapshots


@pl.jit()
def scalar_params(rows: pl.DT_INT64, cols: pl.DT_INT32, small: pl.DT_INT16, big: pl.DT_UINT32,
                  flag: pl.DT_BOOL, scale: pl.DT_FP32, out: pl.Tensor[[8], pl.DT_INT64],
                  outf: pl.Tensor[[2], pl.DT_FP32]):
    with pl.section_vector():
        vidx = pl.get_block_idx()
        offset: pl.DT_INT64 = vidx * 64 + rows
        pl.setval(out, 0, offset)
        pl.setval(out, 1, rows * cols)
        pl.setval(out, 2, small * 2)
        pl.setval(out, 3, big)
        pl.setval(out, 4, big // 3)
        total = 0
        for i in pl.range(0, 4):
            total = total + i * cols
        snapshot = total             # the value now, not after the next line
        total = total + 1000
        pl.setval(out, 5, snapshot)
        pl.setval(out, 6, total)
        if flag:
            pl.setval(out, 7, 1)
        pl.setval(outf, 0, scale * 2.0)
        pl.setval(outf, 1, scale + rows)


@pytest.mark.parametrize("rows,cols,small,big,flag,scale", [
    (3, 5, -7, 3212836864, True, 0.5), (100, -2, 300, 7, False, -1.25)])
def test_scalar_parameters_annotations_and_snapshots(rows, cols, small, big, flag, scale):
    def run():
        out = torch.zeros(8, dtype=torch.int64)
        outf = torch.zeros(2)
        scalar_params(rows, cols, small, big, flag, scale, out, outf)
        return torch.cat([out.double(), outf.double()])
    want = [rows, rows * cols, small * 2, big, big // 3, 6 * cols, 6 * cols + 1000, int(flag),
            scale * 2, scale + rows]
    assert first_case_natively(run).tolist() == want


# ---------------------------------------------------------------- compact=1 (CompactMode.md)

TILE_LARGE = 128


@pl.jit(auto_mutex=True)
def call_kernel_tail_row(a: pl.Tensor[[72, TILE_LARGE], pl.DT_FP16],
                         b: pl.Tensor[[TILE_LARGE, TILE_LARGE], pl.DT_FP16],
                         out: pl.Tensor[[72, TILE_LARGE], pl.DT_FP32]):
    a_l1 = pl.make_tile_group(
        type=pl.TileType(shape=[TILE_LARGE, TILE_LARGE], dtype=pl.DT_FP16,
                         target_memory=pl.MemorySpace.Mat, valid_shape=[-1, -1], compact=1),
        addrs=0x00000, mutex_ids=[0])
    b_l1 = pl.make_tile_group(
        type=pl.TileType(shape=[TILE_LARGE, TILE_LARGE], dtype=pl.DT_FP16,
                         target_memory=pl.MemorySpace.Mat),
        addrs=0x20000, mutex_ids=[1])
    a_l0a = pl.make_tile_group(
        type=pl.TileType(shape=[TILE_LARGE, TILE_LARGE], dtype=pl.DT_FP16,
                         target_memory=pl.MemorySpace.Left, valid_shape=[-1, -1], compact=1),
        addrs=0x0000, mutex_ids=[2])
    b_l0b = pl.make_tile_group(
        type=pl.TileType(shape=[TILE_LARGE, TILE_LARGE], dtype=pl.DT_FP16,
                         target_memory=pl.MemorySpace.Right),
        addrs=0x0000, mutex_ids=[3])
    c_l0c = pl.make_tile_group(
        type=pl.TileType(shape=[TILE_LARGE, TILE_LARGE], dtype=pl.DT_FP32,
                         target_memory=pl.MemorySpace.Acc, valid_shape=[-1, -1], compact=1),
        addrs=0x0000, mutex_ids=[4])
    with pl.section_cube():
        cur_a = a_l1.current()
        cur_b = b_l1.current()
        al = a_l0a.current()
        br = b_l0b.current()
        ac = c_l0c.current()
        pl.set_validshape(cur_a, [72, TILE_LARGE])
        pl.load(cur_a, a, [0, 0])
        pl.load(cur_b, b, [0, 0])
        pl.set_validshape(al, [72, TILE_LARGE])
        pl.move(al, cur_a)
        pl.move(br, cur_b)
        pl.set_validshape(ac, [72, TILE_LARGE])
        pl.matmul(ac, al, br)
        pl.store(out, ac, [0, 0])


def test_compact_normal_tail_rows_through_the_cube():
    g = torch.Generator().manual_seed(5)
    a = (torch.randint(-8, 8, (72, 128), generator=g) / 4).half()
    b = (torch.randint(-8, 8, (128, 128), generator=g) / 4).half()

    def run():
        out = torch.zeros(72, 128)
        call_kernel_tail_row(a, b, out)
        return out
    assert torch.equal(first_case_natively(run), (a.double() @ b.double()).float())


# ---------------------------------------------------------------- mixed kernel sharing core_id


@pl.jit(auto_mutex=True)
def shared_core_id(a: pl.Tensor[[pl.DYNAMIC, 32], pl.DT_FP16], b: pl.Tensor[[32, 32], pl.DT_FP16],
                   out: pl.Tensor[[pl.DYNAMIC, 32], pl.DT_FP32],
                   rows_seen: pl.Tensor[[16], pl.DT_INT32]):
    a_l1 = pl.make_tile_group(type=pl.TileType(shape=[32, 32], dtype=pl.DT_FP16,
                                               target_memory=MS.Mat), addrs=0x0, mutex_ids=[0])
    b_l1 = pl.make_tile_group(type=pl.TileType(shape=[32, 32], dtype=pl.DT_FP16,
                                               target_memory=MS.Mat), addrs=0x8000, mutex_ids=[1])
    al = pl.make_tile_group(type=pl.TileType(shape=[32, 32], dtype=pl.DT_FP16,
                                             target_memory=MS.Left), addrs=0x0, mutex_ids=[2])
    br = pl.make_tile_group(type=pl.TileType(shape=[32, 32], dtype=pl.DT_FP16,
                                             target_memory=MS.Right), addrs=0x0, mutex_ids=[3])
    acc = pl.make_tile_group(type=pl.TileType(shape=[32, 32], dtype=pl.DT_FP32,
                                              target_memory=MS.Acc), addrs=0x0, mutex_ids=[4])
    num_cores = pl.get_block_num()
    core_id = pl.get_block_idx() // pl.get_subblock_num()
    with pl.section_cube():
        for i in pl.range(core_id, a.shape[0] // 32, num_cores):
            ca = a_l1.current()
            cb = b_l1.current()
            pl.load(ca, a, [i * 32, 0])
            pl.load(cb, b, [0, 0])
            l0a = al.current()
            l0b = br.current()
            pl.move(l0a, ca)
            pl.move(l0b, cb)
            c = acc.current()
            pl.matmul(c, l0a, l0b)
            pl.store(out, c, [i * 32, 0])
    with pl.section_vector():
        for i in pl.range(core_id, a.shape[0] // 32, num_cores):
            if pl.get_subblock_idx() == 0:
                pl.setval(rows_seen, i, core_id + 1)


@pytest.mark.parametrize("tiles,cores", [(4, 2), (3, 3), (5, 2)])
def test_core_id_shared_by_cube_and_vector_sides(tiles, cores):
    g = torch.Generator().manual_seed(tiles)
    a = (torch.randint(-8, 8, (tiles * 32, 32), generator=g) / 4).half()
    b = (torch.randint(-8, 8, (32, 32), generator=g) / 4).half()

    def run():
        out = torch.zeros(tiles * 32, 32)
        seen = torch.zeros(16, dtype=torch.int32)
        shared_core_id[None, cores](a, b, out, seen)
        assert seen.tolist() == [i % cores + 1 for i in range(tiles)] + [0] * (16 - tiles)
        return out
    assert torch.equal(first_case_natively(run), (a.double() @ b.double()).float())


# ---------------------------------------------------------------- structs across cores, helpers


@pl.jit()
def ssbuf_struct_array(x: pl.Tensor[[8], pl.DT_INT32], out: pl.Tensor[[8], pl.DT_INT32]):
    infos = pl.struct_array(2, "RunInfo", row=0, scale=1.0, lens=[0, 0])
    with pl.section_vector():
        if pl.get_subblock_idx() == 0:
            for i in pl.range(0, 2):
                infos[i].row = x[i] * 2
                infos[i].scale = 0.5 * (i + 1)
                infos[i].lens[1] = x[i + 2]
                pl.ssbuf_store(infos[i], i * 64)
            pl.system.set_cross_core(pipe=pl.PipeType.S, event_id=3)
    with pl.section_cube():
        pl.system.wait_cross_core(pipe=pl.PipeType.S, event_id=3,
                                  sync_mode=pl.CrossCoreSyncMode.UNICAST_BLOCK)
        for i in pl.range(0, 2):
            pl.ssbuf_load(infos[i], i * 64)
            pl.setval(out, i * 4, infos[i].row)
            pl.setval(out, i * 4 + 1, infos[i].lens[1])
            pl.setval(out, i * 4 + 2, infos[i].lens[0])
            pl.setval(out, i * 4 + 3, infos[i].scale * 10.0)


def test_struct_array_slots_sent_from_vector_to_cube_through_ssbuf():
    x = torch.arange(8, dtype=torch.int32) + 1
    assert _ints(ssbuf_struct_array, 8, x) == [2, 3, 0, 5, 4, 4, 0, 10]


def _new_info(base):
    s = pl.struct("Info", a=base, b=base * 2, arr=[base, 0])
    s.arr[1] = s.a + s.b
    return s


def _bump_a(s):
    s.a = s.a + 1
    return s


@pl.jit()
def struct_returned(n: pl.DT_INT32, out: pl.Tensor[[6], pl.DT_INT32]):
    with pl.section_vector():
        s = _new_info(n)
        t = _bump_a(s)
        pl.setval(out, 0, s.a)
        pl.setval(out, 1, t.a)
        pl.setval(out, 2, s.arr[1])
        u = _new_info(5)
        pl.setval(out, 3, u.b)
        pl.setval(out, 4, s.b)
        pl.setval(out, 5, u.arr[0] + u.arr[1])


@pytest.mark.parametrize("n", [3, -8])
def test_structs_created_and_returned_by_helpers(n):
    assert _ints(struct_returned, 6, n) == [n + 1, n + 1, 3 * n, 10, 2 * n, 20]


@dataclass
class RowsTiling:
    n: int
    rows: int[4]
    w: float[4]
    on: bool[4]


def _row_end(t, i):
    return t.rows[i] + t.n


@pl.jit(auto_mutex=True)
def tiling_both_sides(x: pl.Tensor[[64, 32], pl.DT_FP32], idx: pl.Tensor[[8], pl.DT_INT32],
                      out: pl.Tensor[[64, 32], pl.DT_FP32], tiling: RowsTiling):
    g = pl.make_tile_group(type=pl.TileType(shape=[16, 32], dtype=pl.DT_FP32), addrs=0,
                           mutex_ids=[0, 1])
    with pl.section_cube():
        for i in pl.range(0, 4):
            pl.setval(idx, i, _row_end(tiling, i))
    with pl.section_vector():
        for i in pl.range(0, tiling.n):
            t = g.next()
            r = tiling.rows[i]
            pl.load(t, x, [r, 0])
            if tiling.on[i]:
                pl.muls(t, t, tiling.w[i])
            pl.store(out, t, [r, 0])


@pytest.mark.parametrize("n,on", [(3, [True, False, True, True]), (4, [False, True, False, True])])
def test_tiling_arrays_indexed_at_run_time_on_both_sides_and_in_helpers(n, on):
    x = torch.randint(-64, 64, (64, 32)).float() / 8
    tl = RowsTiling(n=n, rows=[16, 0, 48, 32], w=[2.0, 3.0, 0.5, 4.0], on=on)
    idx = torch.zeros(8, dtype=torch.int32)
    want = torch.zeros(64, 32)
    for i in range(n):
        r = tl.rows[i]
        want[r:r + 16] = x[r:r + 16] * (tl.w[i] if on[i] else 1)
    assert torch.equal(_fp32(tiling_both_sides, (64, 32), x, idx, tiling=tl), want)
    assert idx.tolist() == [r + n for r in tl.rows] + [0] * 4


@pl.jit(auto_mutex=True)
def views_in_a_tuple(x: pl.Tensor[[32, 32], pl.DT_FP32], ws: pl.Ptr[pl.DT_FP32],
                     out: pl.Tensor[[32, 32], pl.DT_FP32]):
    halves = pl.make_tuple(
        src=(pl.make_tensor(x, [16, 32]), pl.make_tensor(pl.addptr(pl.make_ptr(x), 512), [16, 32])),
        dst=pl.make_tuple(top=out, ws=ws))
    g = pl.make_tile_group(type=pl.TileType(shape=[16, 32], dtype=pl.DT_FP32), addrs=0,
                           mutex_ids=[0, 1])
    with pl.section_vector():
        for h in pl.range(0, 2):
            t = g.next()
            pl.load(t, halves.src[h], [0, 0])
            pl.adds(t, t, h * 10.0)
            pl.store(halves.dst.top, t, [h * 16, 0])
            view = pl.make_tensor(pl.addptr(halves.dst.ws, h * 512), [16, 32])
            pl.store(view, t, [0, 0])


def test_make_tuple_of_tensor_views_and_pointers():
    x = torch.randn(32, 32)
    want = x.clone()
    want[16:] += 10

    def run():
        ws = torch.zeros(1024)
        out = torch.zeros(32, 32)
        views_in_a_tuple(x, ws, out)
        assert torch.equal(ws.reshape(32, 32), want)
        return out
    assert torch.equal(first_case_natively(run), want)


@pl.jit(auto_mutex=True)
def snapshots_in_a_ring(x: pl.Tensor[[64, 32], pl.DT_FP32], cnt: pl.Tensor[[4], pl.DT_INT32],
                        out: pl.Tensor[[64, 32], pl.DT_FP32]):
    g = pl.make_tile_group(type=pl.TileType(shape=[16, 32], dtype=pl.DT_FP32), addrs=0,
                           mutex_ids=[0, 1, 2])
    with pl.section_vector():
        total = 0
        prev = g.current()
        pl.load(prev, x, [0, 0])
        for i in pl.range(0, 4):
            before = total
            total = total + i + 1
            pl.setval(cnt, i, before)
            cur = g.next()
            pl.load(cur, x, [i * 16, 0])
            keep = prev
            prev = cur
            pl.add(cur, cur, keep)
            pl.store(out, cur, [i * 16, 0])


def test_snapshots_of_a_running_total_and_of_the_previous_tile():
    x = torch.randint(-8, 8, (64, 32)).float()
    cnt = torch.zeros(4, dtype=torch.int32)
    want, prev = torch.zeros(64, 32), x[0:16]
    for i in range(4):
        prev = want[i * 16:(i + 1) * 16] = x[i * 16:(i + 1) * 16] + prev
    assert torch.equal(_fp32(snapshots_in_a_ring, (64, 32), x, cnt), want)
    assert cnt.tolist() == [0, 1, 3, 6]


@pytest.mark.parametrize("kw,error,fragment", [
    (dict(target_memory=MS.Right, layout=pl.NZ), ValueError,
     "Right tiles require layout in {ZN}, got NZ. Default for 'a5' is ZN."),
    (dict(target_memory=MS.Acc, layout=pl.ND, dtype=pl.DT_FP32), ValueError,
     "Acc tiles require layout in {NZ}, got ND"),
    (dict(target_memory=MS.Mat, layout=pl.ND), ValueError, "Mat tiles require layout in {NZ, ZN}"),
    (dict(target_memory=MS.Scaling, layout=pl.NZ, dtype=pl.DT_UINT64), ValueError,
     "Scaling tiles require layout in {ND}"),
    (dict(pad=4), ValueError, "TileType.pad must be one of TilePad.null/zero/max/min"),
    (dict(pad="zero"), TypeError, "TileType.pad must be a TilePad or integer 0/1/2/3"),
])
def test_tile_type_refuses_what_no_arch_holds_when_constructed(kw, error, fragment):
    args = dict(shape=[16, 16], dtype=pl.DT_FP16) | kw
    with pytest.raises(error) as info:
        pl.TileType(**args)
    assert fragment in str(info.value)


@pytest.mark.parametrize("kw", [
    dict(target_memory=MS.Mat, layout=pl.ND, dtype=pl.DT_INT64),
    dict(target_memory=MS.Left, layout=pl.ZZ), dict(target_memory=MS.Mat, layout=pl.ZN),
    dict(target_memory=MS.Mat, layout=pl.ZZ, dtype=pl.DT_FP8E8M0, shape=[16, 2]),
    dict(pad=pl.TilePad.min), dict(pad=0), dict(layout=pl.DN, shape=[16, 1])])
def test_tile_type_accepts_the_documented_combinations(kw):
    pl.TileType(**(dict(shape=[16, 16], dtype=pl.DT_FP16) | kw))


# ---------------------------------------------------------------- TilingData refusals


@dataclass
class Arr4:
    n: int
    arr: int[4]


@pl.jit()
def arr4_kernel(out: pl.Tensor[[4], pl.DT_INT32], t: Arr4):
    with pl.section_vector():
        pl.setval(out, 0, t.arr[t.n])


@pytest.mark.parametrize("arr", [[1, 2, 3], [1, 2, 3, 4, 5]])
def test_an_array_field_of_another_length_is_refused_at_launch(arr):
    with pytest.raises(ValueError, match=f"expected 4 elements, got {len(arr)}"):
        arr4_kernel(torch.zeros(4, dtype=torch.int32), Arr4(n=1, arr=arr))


@pytest.mark.parametrize("annotation,fragment", [
    ("int[0]", "array size must be in 1..2048, got 0"),
    ("int[2049]", "array size must be in 1..2048, got 2049"),
    ("bool[True]", "array size must be in 1..2048, got True"),
    ("str", "unsupported annotation 'str'"), ("list", "unsupported annotation 'list'"),
    ("int[2 + 2]", "array size must be an int literal or a module constant")])
def test_tiling_field_annotations_outside_the_documented_set_are_value_errors(annotation,
                                                                               fragment):
    ns: dict = {}
    exec(f"from __future__ import annotations\nfrom dataclasses import dataclass\n"
         f"@dataclass\nclass Bad:\n    x: {annotation}\n", ns)

    def declare():
        @pl.jit()
        def k(out: pl.Tensor[[4], pl.DT_INT32], t: ns["Bad"]):
            with pl.section_vector():
                pl.setval(out, 0, 1)
        k(torch.zeros(4, dtype=torch.int32), ns["Bad"](x=0))
    with pytest.raises(ValueError, match=fragment.replace("[", r"\[").replace("+", r"\+")):
        declare()


def test_tiling_data_must_be_the_last_parameter():
    with pytest.raises(InvalidArgument, match="TilingData parameter 't' must be the last"):
        @pl.jit()
        def k(t: Arr4, out: pl.Tensor[[4], pl.DT_INT32]):
            with pl.section_vector():
                pl.setval(out, 0, 1)


@pl.jit()
def struct_member_types(f: pl.DT_FP32, n: pl.DT_INT32, out: pl.Tensor[[8], pl.DT_FP32]):
    s = pl.struct("Typed", v=0, w=1.0, arr=[0, 0], farr=[0.5, 0.0], small=n)
    ring = pl.struct_array(2, "TypedSlot", v=0, arr=[0, 0])
    with pl.section_vector():
        s.v = 2.5                 # an int member keeps 2, as the C++ struct member does
        s.w = 3
        s.arr[0] = f
        s.arr[1] = -f             # truncated toward zero
        s.farr[1] = 7
        s.small = n * 3000000000  # an INT32 member (initialised from an INT32) wraps
        ring[1].v = f * 2.0
        ring[n % 2].arr[1] = f + 0.75
        pl.setval(out, 0, s.v)
        pl.setval(out, 1, s.w)
        pl.setval(out, 2, s.arr[0])
        pl.setval(out, 3, s.arr[1])
        pl.setval(out, 4, s.farr[1] + s.v / 4)
        pl.setval(out, 5, s.small)
        pl.setval(out, 6, ring[1].v)
        pl.setval(out, 7, ring[n % 2].arr[1])


@pytest.mark.parametrize("f,n", [(2.75, 1), (-3.5, 2)])
def test_struct_fields_keep_the_type_of_their_initial_value(f, n):
    def run():
        out = torch.zeros(8)
        struct_member_types(f, n, out)
        return out
    wrapped = torch.tensor([n * 3000000000]).to(torch.int32).item()
    want = [2.0, 3.0, float(int(f)), float(int(-f)), 7.5, float(wrapped), float(int(f * 2)),
            float(int(f + 0.75))]
    assert first_case_natively(run).tolist() == want


@pl.jit(auto_mutex=True)
def batch_major_view(ws: pl.Ptr[pl.DT_FP32], out: pl.Tensor[[pl.DYNAMIC, 16, 32], pl.DT_FP32],
                     nb: pl.DT_INT64):
    view = pl.make_tensor(ws, [nb, 16, 32], [32, nb * 32, 1])  # [B, S, D] over [S, B, D]
    g = pl.make_tile_group(type=pl.TileType(shape=[16, 32], dtype=pl.DT_FP32), addrs=0,
                           mutex_ids=[0, 1])
    with pl.section_vector():
        for b in pl.range(0, nb):
            t = g.next()
            pl.load(t, view, [b, 0, 0])
            pl.store(out, t, [b, 0, 0])


@pl.jit(auto_mutex=True)
def transposed_view(x: pl.Tensor[[16, 32], pl.DT_FP32], out: pl.Tensor[[32, 16], pl.DT_FP32]):
    transposed = pl.make_tensor(pl.make_ptr(x), [32, 16], [1, 32])  # the docs' swapped strides
    g = pl.make_tile_group(type=pl.TileType(shape=[32, 16], dtype=pl.DT_FP32), addrs=0,
                           mutex_ids=[0])
    with pl.section_vector():
        t = g.current()
        pl.load(t, transposed, [0, 0])
        pl.store(out, t, [0, 0])


@pytest.mark.parametrize("nb", [2, 3])
def test_make_tensor_strided_3d_and_transposed_views(nb):
    src = torch.randn(16, nb, 32)

    def run():
        out = torch.zeros(nb, 16, 32)
        batch_major_view(src.reshape(-1).clone(), out, nb)
        return out
    assert torch.equal(first_case_natively(run), src.permute(1, 0, 2))
    x = torch.randn(16, 32)
    assert torch.equal(on_sim(lambda: _launch_out_shape(transposed_view, x, (32, 16))), x.t())


def _launch_out_shape(k, x, shape):
    out = torch.zeros(shape)
    k(x, out)
    return out


@pl.jit()
def nested_struct(n: pl.DT_INT32, out: pl.Tensor[[4], pl.DT_INT32]):
    s = pl.struct("Outer", a=1, inner=pl.struct("Inner", x=2, y=[3, 4]))
    with pl.section_vector():
        s.inner.x = n
        s.inner.y[1] = s.inner.x * 10
        pl.setval(out, 0, s.a)
        pl.setval(out, 1, s.inner.x)
        pl.setval(out, 2, s.inner.y[0])
        pl.setval(out, 3, s.inner.y[1])


@pytest.mark.parametrize("n", [7, -3])
def test_a_struct_field_holding_a_struct(n):
    assert _ints(nested_struct, 4, n) == [1, n, 3, n * 10]


@pl.jit(auto_mutex=True)
def static_rows(x: pl.Tensor[[pl.STATIC, 32], pl.DT_FP32],
                y: pl.Tensor[[pl.DYNAMIC, 32], pl.DT_FP32]):
    g = pl.make_tile_group(type=pl.TileType(shape=[16, 32], dtype=pl.DT_FP32), addrs=0,
                           mutex_ids=[0, 1])
    with pl.section_vector():
        for i in pl.range(0, x.shape[0] / 16):
            t = g.next()
            pl.load(t, x, [i * 16, 0])
            pl.store(y, t, [i * 16, 0])


def test_static_dims_specialise_per_value_and_dynamic_dims_do_not():
    static_rows.compiled_variants.clear()
    for rows, yrows, variants in [(32, 32, 1), (32, 48, 1), (48, 48, 2), (32, 64, 2)]:
        x = torch.randn(rows, 32)
        y = on_sim(lambda x=x, yrows=yrows: _launch_out_shape(static_rows, x, (yrows, 32)))
        assert torch.equal(y[:rows], x) and not y[rows:].any()
        assert len(static_rows.compiled_variants) == variants


class ModeKey:
    A = TilingKeyField(bits=1, values=[0, 1])


@pl.jit(tiling_key=ModeKey, datatype={"x": "dt", "y": "dt"}, auto_mutex=True)
def dtype_branches(x: pl.Tensor[[16, 32], pl.DT_FP32], y: pl.Tensor[[16, 32], pl.DT_FP32]):
    g = pl.make_tile_group(type=pl.TileType(shape=[16, 32], dtype=dt), addrs=0,  # noqa: F821
                           mutex_ids=[0])
    with pl.section_vector():
        t = g.current()
        pl.load(t, x, [0, 0])
        if dt == pl.DT_FP16:  # noqa: F821  (a compile-time comparison of the datatype variable)
            pl.adds(t, t, 1.0)
        else:
            pl.adds(t, t, 2.0)
        if A == 1:  # noqa: F821
            pl.muls(t, t, 3.0)
        pl.store(y, t, [0, 0])


@pytest.mark.parametrize("a,dt,tdt", [
    (0, pl.DT_FP32, torch.float32), (0, pl.DT_FP16, torch.float16),
    (1, pl.DT_FP32, torch.float32), (1, pl.DT_BF16, torch.bfloat16)])
def test_datatype_variable_compared_at_compile_time(a, dt, tdt):
    x = torch.ones(16, 32, dtype=tdt)

    def run():
        y = torch.zeros(16, 32, dtype=tdt)
        dtype_branches[None, 1, {"A": a}, {"x": dt, "y": dt}](x, y)
        return y
    want = (1 + (1 if dt == pl.DT_FP16 else 2)) * (3 if a else 1)
    assert (first_case_natively(run) == want).all()


@pytest.mark.parametrize("launch,error,fragment", [
    (lambda k, x: k(x, x.clone()), InvalidArgument, "cannot be called directly"),
    (lambda k, x: k[None, 1, [0]](x, x.clone()), InvalidArgument, "Expected kernel[stream"),
    (lambda k, x: k[None, 1, {"A": 0}, {"x": pl.DT_FP32, "y": pl.DT_FP16}](x, x.clone()),
     InvalidArgument, "disagree"),
    (lambda k, x: k[None, 1, {"A": 0}, {"x": "fp32", "y": "fp32"}](x, x.clone()), TypeError,
     "must be a pl.DT_* dtype"),
    (lambda k, x: k[None, 1, {"A": 2}, {"x": pl.DT_FP32, "y": pl.DT_FP32}](x, x.clone()),
     InvalidArgument, "not a candidate")])
def test_tiling_key_and_datatype_launch_refusals(launch, error, fragment):
    with pytest.raises(error, match=re.escape(fragment)):
        launch(dtype_branches, torch.ones(16, 32))


@dataclass
class BoundTiling:
    n: int
    offs: int[4]
    scale: float


@pl.jit(auto_mutex=True)
def fields_as_bounds(x: pl.Tensor[[16, 32], pl.DT_FP16], o2: pl.Tensor[[3], pl.DT_INT32],
                     out: pl.Tensor[[16, 32], pl.DT_FP16], t: BoundTiling):
    s = pl.struct("Bound", n=0, arr=[1, 2, 3])
    g = pl.make_tile_group(type=pl.TileType(shape=[16, 32], dtype=pl.DT_FP16), addrs=0,
                           mutex_ids=[0])
    with pl.section_vector():
        s.n = t.n
        total = 0
        for i in pl.range(0, s.n):          # a struct field as a loop bound
            total = total + t.offs[i]
        for j in pl.range(3):
            total = total + s.arr[j] * 4
        pl.setval(o2, 0, total)
        pl.setval(o2, 1, max(t.scale, 1.5) * 2)
        pl.setval(o2, 2, min(t.n, 2))
        c = g.current()
        pl.load(c, x, [0, 0])
        pl.adds(c, c, pl.const(0.5, pl.DT_FP16))
        pl.muls(c, c, t.scale)
        pl.store(out, c, [0, 0])


@pytest.mark.parametrize("n,scale", [(3, 0.75), (1, 2.5)])
def test_struct_and_tiling_fields_as_loop_bounds_and_scalars(n, scale):
    x = (torch.randint(-8, 8, (16, 32)) / 4).half()
    o2 = torch.zeros(3, dtype=torch.int32)
    offs = [1, 10, 100, 1000]

    def run():
        out = torch.zeros(16, 32, dtype=torch.float16)
        fields_as_bounds(x, o2, out, BoundTiling(n=n, offs=offs, scale=scale))
        return out
    assert torch.equal(first_case_natively(run), ((x + 0.5) * scale))
    assert o2.tolist() == [sum(offs[:n]) + 24, int(max(scale, 1.5) * 2), min(n, 2)]
