"""Indexing and assigning through compile-time containers (issue 21, class 1): struct array
fields, `pl.struct_array` elements, `pl.make_tuple` results and tuples / lists of tiles, tile
groups and tensors, indexed with constants or loop variables, nested, and written where the
real PyPTO Pro allows it (struct fields and their array elements). Each kernel's values are
checked against torch on the simulator and the native backend (`dual_backend`); the kernels
of the struct / struct_array / make_tuple API pages are the docs' own examples.
"""
from __future__ import annotations

import pytest
import torch
from dual_backend import sim_and_native
from kernel_source import assert_refused

import pypto_pro.language as pl
from pypto_pro.errors import (
    OutOfRange, ParserSyntaxError, ParserTypeError, UnsupportedFeatureError,
)
from pypto_pro.runtime.kernel_def import Specialization

VT = pl.TileType(shape=[16, 32], dtype=pl.DT_FP32, target_memory=pl.MemorySpace.Vec)


def _ints(kernel, n: int) -> list[int]:
    def run():
        out = torch.zeros(n, dtype=torch.int32)
        kernel(out)
        return out

    return sim_and_native(run).tolist()


def _ir(kernel) -> str:
    kernel.compiled_variants.clear()
    return kernel.compile(Specialization(arch="a5")).passes["vector"][0].ir_text


# ---------------------------------------------------------------- struct array fields


@pl.jit()
def struct_array_field_kernel(out: pl.Tensor[[5], pl.DT_INT32]):
    s = pl.struct("RunInfo", batch_id=0, offsets=[0, 0, 0, 0])
    with pl.section_vector():
        s.offsets[0] = 10
        s.offsets[1] = 20
        s.offsets[2] = 30
        s.offsets[3] = 40
        total = 0
        for i in pl.range(0, 4):
            total = total + s.offsets[i]
        pl.setval(out, 0, s.offsets[0])
        pl.setval(out, 1, s.offsets[3])
        pl.setval(out, 2, total)
        pl.setval(out, 3, s.batch_id)
        pl.setval(out, 4, s.offsets[1] + s.offsets[2])


@pl.jit()
def whole_array_field(out: pl.Tensor[[4], pl.DT_INT32]):
    s = pl.struct("Offs", base=[1, 2, 3, 4])
    with pl.section_vector():
        s.base = [7, 8, 9, 10]
        for i in pl.range(1, 4):
            s.base[i] = s.base[i] + s.base[i - 1]
        for i in pl.range(4):
            pl.setval(out, i, s.base[i])


def test_struct_array_field_read_and_written_with_loop_indices():
    assert _ints(struct_array_field_kernel, 5) == [10, 40, 100, 0, 50]
    assert "total: ir.INDEX = total + s.offsets[i]" in _ir(struct_array_field_kernel)


def test_assigning_a_list_to_an_array_field_writes_every_element():
    assert _ints(whole_array_field, 4) == [7, 15, 24, 34]


# ---------------------------------------------------------------- struct_array


@pl.jit()
def struct_array_kernel(out: pl.Tensor[[4], pl.DT_INT32]):
    run_infos = pl.struct_array(2, "run_info", batch_id=0, innerS1Realsize=[0, 0, 0, 0])
    run_infos[0].batch_id = 7
    run_infos[1].batch_id = 9
    run_infos[0].innerS1Realsize[3] = 128
    run_infos[1].innerS1Realsize[1] = 64
    with pl.section_vector():
        pl.setval(out, 0, run_infos[0].batch_id)
        pl.setval(out, 1, run_infos[1].batch_id)
        pl.setval(out, 2, run_infos[0].innerS1Realsize[3])
        pl.setval(out, 3, run_infos[1].innerS1Realsize[1])


@pl.jit()
def struct_array_loop_kernel(out: pl.Tensor[[4], pl.DT_INT32]):
    run_infos = pl.struct_array(4, "run_info", batch_id=0, innerS1Realsize=[0, 0, 0, 0])
    with pl.section_vector():
        for i in pl.range(0, 4):
            run_infos[i].innerS1Realsize[0] = i * 100
        for i in pl.range(0, 4):
            pl.setval(out, i, run_infos[i].innerS1Realsize[0])


@pl.jit()
def struct_array_ring(x: pl.Tensor[[8], pl.DT_INT32], out: pl.Tensor[[8], pl.DT_INT32]):
    """A ring of contexts as a pipeline keeps them: slot i % 3 written, read two steps later."""
    ring = pl.struct_array(3, "Ctx", value=0, seen=[0, 0])
    with pl.section_vector():
        for i in pl.range(8):
            slot = ring[i % 3]
            slot.value = x[i]
            slot.seen[i % 2] = i
            if i >= 2:
                back = ring[(i - 2) % 3]
                pl.setval(out, i - 2, back.value * 10 + back.seen[i % 2])


def test_struct_array_elements_by_constant_and_loop_index():
    assert _ints(struct_array_kernel, 4) == [7, 9, 128, 64]
    assert _ints(struct_array_loop_kernel, 4) == [0, 100, 200, 300]
    text = _ir(struct_array_loop_kernel)
    assert "run_infos[i].innerS1Realsize[0] = i * 100" in text


def test_struct_array_as_a_ring_of_contexts():
    x = torch.arange(8, dtype=torch.int32) + 1

    def run():
        out = torch.zeros(8, dtype=torch.int32)
        struct_array_ring(x, out)
        return out

    # slot of i - 2 has value x[i - 2] and seen[i % 2] == i - 2 (written by iteration i - 2)
    expected = [int(x[i - 2]) * 10 + (i - 2) for i in range(2, 8)] + [0, 0]
    assert sim_and_native(run).tolist() == expected


# ---------------------------------------------------------------- make_tuple


@pl.jit()
def tuple_scalar_kernel(out: pl.Tensor[[2], pl.DT_INT32]):
    s = pl.struct("TScalar", a=11, b=22)
    with pl.section_vector():
        t = pl.make_tuple(first=s.a, second=s.b)
        pl.setval(out, 0, t.first + t.second)
        pl.setval(out, 1, t.second - t.first)


@pl.jit()
def tuple_in_loop_kernel(out: pl.Tensor[[1], pl.DT_INT32]):
    acc = pl.struct("LoopT", v=0, cur=0)
    with pl.section_vector():
        for i in pl.range(0, 4):
            acc.cur = i
            t = pl.make_tuple(x=acc.cur, y=acc.cur * 10)
            acc.v = acc.v + t.x + t.y
        pl.setval(out, 0, acc.v)


@pl.jit()
def tuple_chain(out: pl.Tensor[[3], pl.DT_INT32]):
    inner = pl.make_tuple(x=10, y=20)
    outer = pl.make_tuple(a=inner, b=(inner, 5))
    with pl.section_vector():
        pl.setval(out, 0, outer.a.x + outer.a.y)
        pl.setval(out, 1, outer.b[0].y + outer.b[1] + len(outer.b))
        first, second = outer.a
        pl.setval(out, 2, first * second)


def test_make_tuple_doc_examples():
    assert _ints(tuple_scalar_kernel, 2) == [33, 11]
    assert _ints(tuple_in_loop_kernel, 1) == [66]


def test_make_tuple_fields_fold_to_the_values_packed_into_them():
    assert _ints(tuple_chain, 3) == [30, 27, 200]
    assert "block.setval(out, 0, 30)" in _ir(tuple_chain)


# ---------------------------------------------------------------- tuples of tiles, groups, tensors


@pl.jit(auto_mutex=True)
def grid_of_slots(x: pl.Tensor[[32, 64], pl.DT_FP32], y: pl.Tensor[[32, 64], pl.DT_FP32]):
    g = pl.make_tile_group(type=VT, addrs=0, mutex_ids=[0, 1, 2, 3])
    cfg = pl.make_tuple(tiles=[[g[0], g[1]], [g[2], g[3]]], scale=(1.0, 2.0))
    with pl.section_vector():
        for i in pl.range(2):
            for j in pl.range(2):
                t = cfg.tiles[i][j]
                pl.load(t, x, [i * 16, j * 32])
                pl.mul(t, t, cfg.scale[j])
                pl.store(y, t, [i * 16, j * 32])


@pl.jit(auto_mutex=True)
def groups_by_loop_index(x: pl.Tensor[[64, 32], pl.DT_FP32], y: pl.Tensor[[64, 32], pl.DT_FP32]):
    ga = pl.make_tile_group(type=VT, addrs=0, mutex_ids=[0, 1])
    gb = pl.make_tile_group(type=VT, addrs=0x1000, mutex_ids=[2, 3])
    bufs = pl.make_tuple(rings=[ga, gb], extra=gb)
    with pl.section_vector():
        for i in pl.range(4):
            t = bufs.rings[i % 2].next()
            pl.load(t, x, [i * 16, 0])
            pl.add(t, t, 1.0)
            pl.store(y, t, [i * 16, 0])
        last = bufs.extra.current()  # gb advanced twice: its current slot is its slot 1
        pl.muls(last, last, 2.0)
        pl.store(y, last, [48, 0])


@pl.jit(auto_mutex=True)
def tensors_by_loop_index(x: pl.Tensor[[16, 32], pl.DT_FP32], y0: pl.Tensor[[16, 32], pl.DT_FP32],
                          y1: pl.Tensor[[16, 32], pl.DT_FP32], y2: pl.Tensor[[16, 32],
                                                                             pl.DT_FP32]):
    g = pl.make_tile_group(type=VT, addrs=0, mutex_ids=[0, 1])
    outs = [y0, y1, y2]
    with pl.section_vector():
        for i in pl.range(3):
            t = g.next()
            pl.load(t, x, [0, 0])
            pl.mul(t, t, 2.0)
            pl.store(outs[i], t, [0, 0])


def test_nested_tuple_of_tiles_indexed_by_loop_variables():
    x = torch.randn(32, 64)

    def run():
        y = torch.zeros(32, 64)
        grid_of_slots(x, y)
        return y

    expected = torch.cat([x[:, :32], x[:, 32:] * 2], dim=1)
    assert torch.equal(sim_and_native(run), expected)


def test_tile_groups_picked_from_a_make_tuple_by_loop_index():
    x = torch.randn(64, 32)

    def run():
        y = torch.zeros(64, 32)
        groups_by_loop_index(x, y)
        return y

    expected = x + 1
    expected[48:] = (x[48:] + 1) * 2
    assert torch.equal(sim_and_native(run), expected)


def test_tensors_picked_by_loop_index():
    x = torch.randn(16, 32)

    def run():
        ys = [torch.zeros(16, 32) for _ in range(3)]
        tensors_by_loop_index(x, *ys)
        return torch.cat(ys)

    assert torch.equal(sim_and_native(run), torch.cat([x * 2] * 3))


# ---------------------------------------------------------------- what stays refused


@pytest.mark.parametrize("name,body,error,fragment", [
    ("tuple_field_write", """
        t = pl.make_tuple(a=1)
        t.a = 2
     """, ParserSyntaxError, "immutable named tuple field 't.a'"),
    ("tuple_element_write", """
        t = pl.make_tuple(a=[1, 2, 3])
        t.a[0] = 99
     """, ParserSyntaxError, "immutable named tuple field 't.a[0]'"),
    ("missing_field", """
        t = pl.make_tuple(a=1)
        pl.setval(out, 0, t.b)
     """, UnsupportedFeatureError, "make_tuple has no field 'b'"),
    ("array_index_out_of_bounds", """
        s = pl.struct("S", arr=[0, 0, 0, 0])
        pl.setval(out, 0, s.arr[4])
     """, OutOfRange, "index 4 out of bounds for an array of 4"),
    ("array_write_out_of_bounds", """
        s = pl.struct("S", arr=[0, 0, 0, 0])
        s.arr[-1] = 3
     """, OutOfRange, "index -1 out of bounds"),
    ("struct_array_out_of_bounds", """
        a = pl.struct_array(3, "S", data=[0])
        pl.setval(out, 0, a[5].data[0])
     """, OutOfRange, "index 5 out of bounds for an array of 3"),
    ("array_field_length", """
        s = pl.struct("S", arr=[0, 0, 0, 0])
        s.arr = [1, 2]
     """, ParserSyntaxError, "expects 4 elements, got 2"),
    ("scalar_field_subscript", """
        s = pl.struct("S", x=0)
        pl.setval(out, 0, s.x[0])
     """, ParserTypeError, "Subscript requires a tuple, tile or tensor, got a scalar"),
    ("two_dim_array_index", """
        s = pl.struct("S", arr=[0, 0, 0, 0])
        s.arr[0, 1] = 10
     """, ParserSyntaxError, "indexed with one integer"),
    ("tuples_of_other_lengths_at_runtime", """
        t = ((1, 2), (3,))
        pl.setval(out, 0, t[n][0])
     """, ParserTypeError, "elements of one shape"),
    ("struct_indexed", """
        s = pl.struct("S", x=0)
        pl.setval(out, 0, s[0])
     """, UnsupportedFeatureError, "a struct cannot be indexed"),
])
def test_refused_container_uses(tmp_path, name, body, error, fragment):
    assert_refused(error, fragment, tmp_path, name,
                   "out: pl.Tensor[[4], pl.DT_INT32], n: pl.DT_INT32", body)
