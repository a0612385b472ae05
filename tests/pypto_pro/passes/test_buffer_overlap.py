"""verify_memory's overlap check on real kernels: buffers that share bytes while both are in use.

A certain overlap is an `InvalidTile` naming both buffers, both byte ranges and both source lines
(the caret on the buffer to move, or on the write that clobbers); one that depends on a run-time
branch is a warning; reuse after the first buffer is dead, views and mutex-shared slots pass.
"""
from __future__ import annotations

import inspect

import pytest

import pypto_pro.language as pl
from pypto_pro.compiler import compile_kernel
from pypto_pro.errors import InvalidTile
from pypto_pro.runtime.kernel_def import Specialization

TT = pl.TileType([128, 128], pl.DT_FP16, pl.MemorySpace.Vec)
T64 = pl.TileType([64, 64], pl.DT_FP16, pl.MemorySpace.Vec)
DYN = pl.DYNAMIC
F16 = pl.Tensor[[DYN, DYN], pl.DT_FP16]
MTE2, V, MTE3 = pl.PipeType.MTE2, pl.PipeType.V, pl.PipeType.MTE3


def line_of(kernel, text: str) -> int:
    lines, start = inspect.getsourcelines(kernel.fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def compiled(kernel):
    return compile_kernel(kernel, Specialization(arch="a5"))


@pl.kernel(arch="a5")
def shared_slot(x: F16, y: F16, z: F16):
    with pl.section_vector():
        xs = pl.make_tile_group(type=TT, addrs=0x00000, mutex_ids=[0, 1])
        ys = pl.make_tile_group(type=TT, addrs=0x08000, mutex_ids=[2, 3])  # = xs slot 1
        zs = pl.make_tile_group(type=TT, addrs=0x20000, mutex_ids=[30, 31])
        for i in pl.range(pl.get_block_idx(), x.shape[0] // 128, pl.get_block_num()):
            for j in pl.range(x.shape[1] // 128):
                a, b, c = xs.next(), ys.next(), zs.next()
                pl.load_tile(a, x, [i, j])
                pl.load_tile(b, y, [i, j])
                pl.add(c, a, b)
                pl.store_tile(z, c, [i, j])


def test_two_groups_in_flight_on_shared_bytes_fail_naming_both():
    with pytest.raises(InvalidTile) as err:
        compiled(shared_slot)
    e = err.value
    xs, ys = line_of(shared_slot, "xs = "), line_of(shared_slot, "ys = ")
    assert f"group xs slot 1 [0x8000, 0x10000) (line {xs})" in e.message
    assert f"group ys slot 0 [0x8000, 0x10000) (line {ys})" in e.message
    assert "share bytes [0x8000, 0x10000) of Vec" in e.message
    assert e.span.line == ys and e.pass_name == "verify_memory"
    assert "addrs=0x10000" in e.hint
    assert f"{__file__}:{xs}" in e.note


@pl.kernel(arch="a5")
def groups_in_turn(x: F16, z: F16):
    with pl.section_vector():
        xs = pl.make_tile_group(type=TT, addrs=0x00000, mutex_ids=[0, 1])
        ys = pl.make_tile_group(type=TT, addrs=0x08000, mutex_ids=[2, 3])
        for j in pl.range(x.shape[1] // 128):
            a = xs.next()
            pl.load_tile(a, x, [0, j])
            pl.store_tile(z, a, [0, j])
        for j in pl.range(x.shape[1] // 128):
            b = ys.next()
            pl.load_tile(b, x, [1, j])
            pl.store_tile(z, b, [1, j])


@pl.kernel(arch="a5")
def shared_mutex(x: F16, z: F16):
    with pl.section_vector():
        xs = pl.make_tile_group(type=TT, addrs=0x00000, mutex_ids=[0, 1])
        ys = pl.make_tile_group(type=TT, addrs=0x08000, mutex_ids=[1, 2])  # slot 0 = xs slot 1
        for j in pl.range(x.shape[1] // 128):
            a, b = xs.next(), ys.next()
            pl.load_tile(a, x, [0, j])
            pl.load_tile(b, x, [1, j])
            pl.store_tile(z, a, [0, j])
            pl.store_tile(z, b, [1, j])


@pl.kernel(arch="a5")
def tile_reused_after_use(x: F16, z: F16):
    with pl.section_vector():
        a = pl.make_tile(T64, addr=0x0)
        b = pl.make_tile(T64, addr=0x1000)  # shares a's second half
        pl.load(a, x, [0, 0])
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.store(z, a, [0, 0])
        pl.system.sync_src(set_pipe=MTE3, wait_pipe=MTE2, event_id=0)
        pl.system.sync_dst(set_pipe=MTE3, wait_pipe=MTE2, event_id=0)
        pl.load(b, x, [64, 0])


@pl.kernel(arch="a5")
def tile_view(x: F16, z: F16):
    with pl.section_vector():
        a = pl.make_tile(T64, addr=0x0)
        half = pl.make_tile(pl.TileType([32, 64], pl.DT_FP16, pl.MemorySpace.Vec), addr=0x1000)
        pl.load(a, x, [0, 0])
        pl.load(half, x, [64, 0])  # writes a's second half through a view of it
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.store(z, a, [0, 0])


@pytest.mark.parametrize("kernel", [groups_in_turn, shared_mutex, tile_reused_after_use,
                                    tile_view], ids=lambda k: k.name)
def test_overlaps_that_are_never_in_use_together_pass(kernel):
    assert compiled(kernel).warnings == []


@pl.kernel(arch="a5")
def clobbered_tile(x: F16, y: F16, z: F16):
    with pl.section_vector():
        a = pl.make_tile(T64, addr=0x0)
        b = pl.make_tile(T64, addr=0x1000)
        pl.load(a, x, [0, 0])
        pl.load(b, y, [0, 0])  # clobbers a's second half
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.store(z, a, [0, 0])
        pl.store(z, b, [64, 0])


def test_a_write_into_a_tile_that_is_read_later_fails_at_the_write():
    with pytest.raises(InvalidTile) as err:
        compiled(clobbered_tile)
    e = err.value
    a, b = line_of(clobbered_tile, "a = "), line_of(clobbered_tile, "b = ")
    write = line_of(clobbered_tile, "clobbers")
    assert e.span.line == write
    assert f"tile a [0x0, 0x2000) (line {a})" in e.message
    assert f"tile b [0x1000, 0x3000) (line {b})" in e.message
    assert f"line {write} writes tile b while tile a still holds data that is read later" \
        in e.message
    assert "addr=0x2000" in e.hint


@pl.kernel(arch="a5")
def clobbered_on_one_branch(x: F16, y: F16, z: F16):
    with pl.section_vector():
        a = pl.make_tile(T64, addr=0x0)
        b = pl.make_tile(T64, addr=0x1000)
        pl.load(a, x, [0, 0])
        if pl.get_block_idx() == 0:
            pl.load(b, y, [0, 0])  # only block 0 clobbers a
            pl.system.sync_src(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
            pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
            pl.store(z, b, [64, 0])
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=MTE3, event_id=1)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=1)
        pl.store(z, a, [0, 0])


def test_an_overlap_behind_a_run_time_branch_is_a_warning():
    [w] = compiled(clobbered_on_one_branch).warnings
    assert w.span.line == line_of(clobbered_on_one_branch, "only block 0")
    assert "when the branch on a run-time value is taken" in w.message
    assert "tile a [0x0, 0x2000)" in w.message and "tile b [0x1000, 0x3000)" in w.message
    assert {s.line for s in w.related} == {line_of(clobbered_on_one_branch, "a = "),
                                           line_of(clobbered_on_one_branch, "b = ")}


@pl.kernel(arch="a5")
def accumulator_under_a_temporary(x: F16, z: F16):
    with pl.section_vector():
        acc = pl.make_tile(T64, addr=0x0)
        tmp = pl.make_tile(T64, addr=0x1800)
        pl.load(acc, x, [0, 0])
        for j in pl.range(1, x.shape[1] // 64):
            pl.load(tmp, x, [0, j])
            pl.system.sync_src(set_pipe=MTE2, wait_pipe=V, event_id=0)
            pl.system.sync_dst(set_pipe=MTE2, wait_pipe=V, event_id=0)
            pl.add(acc, acc, tmp)
        pl.store(z, acc, [0, 0])


def test_a_loop_carried_tile_is_in_use_across_the_whole_loop():
    with pytest.raises(InvalidTile) as err:
        compiled(accumulator_under_a_temporary)
    assert "tile acc [0x0, 0x2000)" in err.value.message
    assert "tile tmp [0x1800, 0x3800)" in err.value.message


@pl.kernel(arch="a5")
def scratch_inside_a_group(x: F16, z: F16):
    with pl.section_vector():
        xs = pl.make_tile_group(type=T64, addrs=0x0, mutex_ids=[0, 1])
        scratch = pl.make_tile(T64, addr=0x2000)  # is xs slot 1
        for j in pl.range(x.shape[1] // 64):
            a = xs.next()
            pl.load(a, x, [0, j * 64])
            pl.add(scratch, a, a)
            pl.store(z, scratch, [0, j * 64])


def test_a_tile_written_while_a_group_is_in_flight_fails():
    with pytest.raises(InvalidTile) as err:
        compiled(scratch_inside_a_group)
    assert "group xs slot 1 [0x2000, 0x4000)" in err.value.message
    assert "tile scratch [0x2000, 0x4000)" in err.value.message
    assert err.value.span.line == line_of(scratch_inside_a_group, "pl.add(scratch")
