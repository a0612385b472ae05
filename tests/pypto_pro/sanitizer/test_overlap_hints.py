"""Race hints name the overlapping buffers when two buffers sharing bytes are the cause.

The compiler rejects buffers that certainly overlap while in use; behind a run-time branch it
only warns, and the sanitizer then sees the races. Their hint must say which two buffers clash
(ranges and lines), not advise a sync that would only hide it; a race on one buffer keeps the
sync advice.
"""
from __future__ import annotations

import inspect

import torch

import pypto_pro.language as pl
from pypto_pro.trace.findings import KINDS

TT = pl.TileType([128, 128], pl.DT_FP16, pl.MemorySpace.Vec)
F16 = pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP16]


@pl.jit(arch="a5", sanitizer=True)
def add_with_shared_slot(x: F16, y: F16, z: F16):
    with pl.section_vector():
        xs = pl.make_tile_group(type=TT, addrs=0x00000, mutex_ids=[0, 1])
        ys = pl.make_tile_group(type=TT, addrs=0x08000, mutex_ids=[2, 3])  # = xs slot 1
        zs = pl.make_tile_group(type=TT, addrs=0x20000, mutex_ids=[30, 31])
        for j in pl.range(x.shape[1] // 128):
            if pl.get_block_idx() < pl.get_block_num():
                a, b, c = xs.next(), ys.next(), zs.next()
                pl.load_tile(a, x, [0, j])
                pl.load_tile(b, y, [0, j])
                pl.add(c, a, b)
                pl.store_tile(z, c, [0, j])


def line(text: str) -> int:
    lines, first = inspect.getsourcelines(add_with_shared_slot.kernel_def.fn)
    return first + next(i for i, t in enumerate(lines) if text in t)


def test_races_between_overlapping_groups_name_both_groups(capsys):
    x = torch.randn(128, 512).half()
    y, z = torch.randn_like(x), torch.empty_like(x)
    add_with_shared_slot[None, 1](x, y, z)
    compiled = next(iter(add_with_shared_slot.compiled_variants.values()))
    [warning] = compiled.warnings
    assert "group xs slot 1 [0x8000, 0x10000)" in warning.message
    report = add_with_shared_slot.last_result.sanitizer
    races = [f for f in report if f.kind.startswith("DATA_RACE")]
    assert races, report.text()
    xs, ys = line("xs = "), line("ys = ")
    for f in races:
        assert f"group xs slot 1 [0x8000, 0x10000) (line {xs})" in f.hint
        assert f"group ys slot 0 [0x8000, 0x10000) (line {ys})" in f.hint
        assert "share bytes [0x8000, 0x10000)" in f.hint and "a sync would only hide" in f.hint
    assert "give ys its own address range" in report.text() or \
        "give xs its own address range" in report.text()
    capsys.readouterr()


@pl.jit(arch="a5", sanitizer=True)
def missing_sync(x: F16, z: F16):
    with pl.section_vector():
        a = pl.make_tile(TT, addr=0x0)
        c = pl.make_tile(TT, addr=0x8000)
        pl.load(a, x, [0, 0])
        pl.abs(c, a)  # no MTE2 -> V sync
        pl.system.sync_src(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.store(z, c, [0, 0])


def test_a_race_on_one_buffer_keeps_the_sync_advice(capsys):
    x = torch.randn(128, 128).half()
    missing_sync[None, 1](x, torch.empty_like(x))
    [race] = [f for f in missing_sync.last_result.sanitizer if f.kind == "DATA_RACE_RAW"]
    assert race.hint == KINDS["DATA_RACE_RAW"][1]
    capsys.readouterr()
