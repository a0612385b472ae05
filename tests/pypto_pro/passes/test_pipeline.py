"""The spine and the whole pipeline on real kernels, parsed from this file."""
from __future__ import annotations

import inspect
from types import SimpleNamespace

import pytest

import pypto_pro.language as pl
from pypto_pro.compiler import compile_kernel
from pypto_pro.errors import InvalidTile
from pypto_pro.passes.pipeline import PASSES, default_passes
from pypto_pro.runtime.kernel_def import Specialization

VEC = pl.TileType([64, 64], pl.DT_FP16, target_memory=pl.MemorySpace.Vec)
MAT = pl.TileType([64, 64], pl.DT_FP16, target_memory=pl.MemorySpace.Mat)
LEFT = pl.TileType([64, 64], pl.DT_FP16, target_memory=pl.MemorySpace.Left)
RIGHT = pl.TileType([64, 64], pl.DT_FP16, target_memory=pl.MemorySpace.Right)
ACC = pl.TileType([64, 64], pl.DT_FP32, target_memory=pl.MemorySpace.Acc)
DYN = pl.DYNAMIC


@pl.kernel(arch="a5")
def add_kernel(x: pl.Tensor[[DYN, DYN], pl.DT_FP16], y: pl.Tensor[[DYN, DYN], pl.DT_FP16],
               z: pl.Tensor[[DYN, DYN], pl.DT_FP16]):
    ga = pl.make_tile_group(type=VEC, addrs=0x0, mutex_ids=[0, 1])
    gb = pl.make_tile_group(type=VEC, addrs=0x4000, mutex_ids=[2, 3])
    gc = pl.make_tile_group(type=VEC, addrs=0x8000, mutex_ids=[30, 31])
    with pl.section_vector():
        for i in pl.range(pl.get_block_idx(), x.shape[0] // 64, pl.get_block_num()):
            for j in pl.range(x.shape[1] // 64):
                a = ga.next()
                b = gb.next()
                c = gc.next()
                pl.load_tile(a, x, [i, j])
                pl.load_tile(b, y, [i, j])
                pl.add(c, a, b)
                pl.store_tile(z, c, [i, j])


@pl.kernel(arch="a5")
def matmul_kernel(a: pl.Tensor[[DYN, 64], pl.DT_FP16], b: pl.Tensor[[64, DYN], pl.DT_FP16],
                  out: pl.Tensor[[DYN, DYN], pl.DT_FP32]):
    with pl.section_cube():
        a_l1 = pl.make_tile_group(type=MAT, addrs=0x0, mutex_ids=[0, 1])
        b_l1 = pl.make_tile_group(type=MAT, addrs=0x10000, mutex_ids=[2, 3])
        left = pl.make_tile_group(type=LEFT, addrs=0x0, mutex_ids=[4, 5])
        right = pl.make_tile_group(type=RIGHT, addrs=0x0, mutex_ids=[6, 7])
        acc = pl.make_tile_group(type=ACC, addrs=0x0, mutex_ids=[8, 9])
        for i in pl.range(a.shape[0] // 64):
            ta = a_l1.next()
            pl.load_tile(ta, a, [i, 0])
            for j in pl.range(b.shape[1] // 64):
                tb = b_l1.next()
                pl.load_tile(tb, b, [0, j])
                lt = left.next()
                pl.move(lt, a_l1.current())
                rt = right.next()
                pl.move(rt, tb)
                c = acc.next()
                pl.matmul(c, lt, rt)
                pl.store_tile(out, c, [i, j])


@pl.kernel(arch="a5")
def overlapping_kernel(x: pl.Tensor[[64, 64], pl.DT_FP16]):
    with pl.section_vector():
        t = pl.make_tile(VEC, addr=0x0)
        u = pl.make_tile(VEC, addr=0x1000)
        pl.load(t, x, [0, 0])
        pl.load(u, x, [0, 0])
        pl.store(x, t, [0, 0])


@pl.kernel(arch="a5")
def oversized_kernel(x: pl.Tensor[[64, 64], pl.DT_FP16]):
    with pl.section_vector():
        t = pl.make_tile(VEC, addr=0x3E000)
        pl.load(t, x, [0, 0])


def compiled(kernel):
    return compile_kernel(kernel, Specialization(arch="a5"))


def test_the_spine_names_one_module_per_pass():
    modules = default_passes()
    assert [m.NAME for m in modules] == list(PASSES)
    assert all(m.__name__ == f"pypto_pro.passes.{m.NAME}" for m in modules)
    assert PASSES.index("tile_group_lowering") < PASSES.index("auto_mutex") < \
        PASSES.index("convert_to_ssa") < PASSES.index("mutex_dedup") < PASSES.index("verify")
    without = [m.NAME for m in default_passes(SimpleNamespace(auto_mutex=False))]
    assert "auto_mutex" not in without and len(without) == len(PASSES) - 1


@pytest.mark.parametrize("kernel, target, params", [
    (add_kernel, "vector", {"__pypto_dyn_x_0": 128, "__pypto_dyn_x_1": 192,
                            "get_block_idx": 0, "get_block_num": 1}),
    (matmul_kernel, "cube", {"__pypto_dyn_a_0": 192, "__pypto_dyn_b_1": 128}),
])
def test_real_kernels_keep_their_ops_and_lock_every_access(kernel, target, params, trace,
                                                           locked):
    result = compiled(kernel)
    records = result.passes[target]
    assert records.names() == ["parse", *PASSES]
    lowered, final = records["pipe_assignment"].program, result.programs[target]
    ops = [e for e in trace(final, **params) if not e[0].startswith("system.mutex")]
    assert ops == trace(lowered, **params)
    locked(final, trace(final, **params))


def test_overlapping_tiles_in_use_together_fail_with_both_source_lines():
    lines = inspect.getsource(overlapping_kernel.fn).splitlines()
    first = overlapping_kernel.tree.lineno + next(
        i for i, line in enumerate(lines) if "addr=0x0" in line) - 1
    with pytest.raises(InvalidTile) as err:
        compiled(overlapping_kernel)
    assert f"(line {first})" in err.value.message and f"(line {first + 1})" in err.value.message
    assert err.value.span.file == __file__ and err.value.span.line == first + 3


def test_a_tile_beyond_the_buffer_fails_at_its_line():
    with pytest.raises(InvalidTile) as err:
        compiled(oversized_kernel)
    assert err.value.span.file == __file__
    assert "make_tile(VEC, addr=0x3E000)" in err.value.span.source_line()
    assert "253952 bytes" in str(err.value)
