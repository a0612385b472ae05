"""What the Trace of the double-buffered vector add shows: per 128×128 tile two MTE2 loads of
32 KiB, one V add and one MTE3 store of 32 KiB on the core that owns the tile; labelled mutex
stalls (V waiting for the loads' slots, MTE3 waiting for the add's output slot); the source line
of `pl.add` maps to exactly the V add events; cost-model numbers on the instructions; and the
trace's metadata and instruction count.
"""
from __future__ import annotations

import inspect
import re

import pytest
import torch

from pypto_pro.examples import load
from pypto_pro.soc import soc

M, N, BLOCKS, TILE = 512, 384, 2, 128
TILE_BYTES = TILE * TILE * 2


def _line(module, text: str) -> int:
    lines = inspect.getsource(module).splitlines()
    hits = [i + 1 for i, line in enumerate(lines) if line.strip() == text]
    assert len(hits) == 1, (text, hits)
    return hits[0]


@pytest.fixture(scope="module")
def add_run():
    from pypto_pro.runtime.backends import use_backend

    m = load("vector_add")
    x, y, z = m.make_inputs(M, N, seed=4)
    with use_backend("sim"):
        m.add_kernel[None, BLOCKS](x, y, z)
    assert torch.equal(z, x + y)
    return m, m.add_kernel.last_trace


def test_each_tile_has_two_loads_an_add_and_a_store(add_run, select, check_trace):
    m, trace = add_run
    check_trace(trace)
    instr = select(trace, kind="instr")
    assert set(zip(instr["pipe"].astype(str), instr["op"].astype(str))) == {
        ("MTE2", "TLOAD"), ("V", "TADD"), ("MTE3", "TSTORE")}
    assert set(instr["core_kind"].astype(str)) == {"AIV"}
    row_tiles = M // TILE
    for block in range(BLOCKS):
        tiles = len(range(block, row_tiles, BLOCKS)) * (N // TILE)
        mine = instr[instr["block"] == block]
        assert mine["core"].nunique() == 1
        counts = mine.groupby("op", observed=True).size()
        assert counts.to_dict() == {"TLOAD": 2 * tiles, "TADD": tiles, "TSTORE": tiles}
    moves = instr[instr["op"].isin(["TLOAD", "TSTORE"])]
    assert (moves["bytes"] == TILE_BYTES).all()
    adds = instr[instr["op"] == "TADD"]
    assert (adds["flops"] == TILE * TILE).all()
    assert (adds["bytes"] == 3 * TILE_BYTES).all()  # two inputs read, one output written
    # cost model on the 950PR: TADD = start-up + 1.25 cycles per 256 B repeat (128 fp16)
    s = soc()
    expected = s.vector_startup_cycles + TILE * TILE // 128 * s.vector_cycles_per_repeat[
        "binary"]
    assert ((adds["end"] - adds["start"]) == int(expected)).all()
    # a load is at least start-up + bytes / the per-AIV GM->UB rate (more when HBM is shared)
    loads = instr[instr["op"] == "TLOAD"]
    floor = s.mte_startup["gm_to_ub"] + TILE_BYTES / s.mte_rates["gm_to_ub"]
    assert ((loads["end"] - loads["start"]) >= floor).all()
    assert trace.meta.extra and dict(trace.meta.extra)["instructions"] == len(instr)


def test_stalls_are_labelled(add_run, select):
    _, trace = add_run
    ev = trace.events
    # the scalar unit stalls only when a pipe queue is full (it runs far ahead of the pipes)
    scalar = ev[(ev["kind"] == "stall") & (ev["pipe"] == "S")]
    assert set(scalar["stall_reason"].astype(str)) <= {"queue"}
    assert all(re.fullmatch(r"(MTE2|MTE3|V) full", str(i)) for i in scalar["sync_ids"])
    assert (scalar["line"] > 0).all()
    stalls = ev[(ev["kind"] == "stall") & (ev["pipe"] != "S")]
    assert len(stalls) > 0
    assert set(stalls["stall_reason"].astype(str)) == {"mutex"}
    assert set(stalls["op"].astype(str)) == {"wait mutex"}
    pattern = re.compile(r"mutex (\d+) \(held by pipe (MTE2|V|MTE3)\)")
    held = {}
    for row in stalls.itertuples():
        found = pattern.fullmatch(str(row.sync_ids))
        assert found, row.sync_ids
        held.setdefault((str(row.pipe), found.group(2)), set()).add(int(found.group(1)))
    # V waits on the input slots (ids 0-3) still held by the loads; MTE3 waits on the output
    # slots (ids 30, 31) still held by the add
    assert held[("V", "MTE2")] <= {0, 1, 2, 3} and held[("V", "MTE2")]
    assert held[("MTE3", "V")] == {30, 31}
    assert held.get(("V", "MTE3"), {30}) <= {30, 31}  # an output slot not yet stored
    assert (stalls["end"] > stalls["start"]).all()
    # each stall ends when the lock is granted: a get_buf on that pipe starts at the stall's end
    grants = select(trace, kind="sync", op="get_buf")
    for row in stalls.itertuples():
        assert ((grants["core"] == row.core) & (grants["pipe"] == row.pipe)
                & (grants["start"] == row.end)).any()


def test_source_line_of_pl_add_maps_to_the_v_events(add_run):
    m, trace = add_run
    add_line = _line(m, "pl.add(c, a, b)")
    load_lines = {_line(m, "pl.load_tile(a, x, [i, j])"),
                  _line(m, "pl.load_tile(b, y, [i, j])")}
    store_line = _line(m, "pl.store_tile(z, c, [i, j])")

    at_add = trace.for_line("vector_add.py", add_line)
    instr = at_add[at_add["kind"] == "instr"]
    assert set(instr["pipe"].astype(str)) == {"V"}
    assert set(instr["op"].astype(str)) == {"TADD"}
    assert len(instr) == (M // TILE) * (N // TILE)
    # the auto_mutex lock/unlock around the add are on V and carry the add's line too; the
    # only other events of that line are scalar-unit stalls issuing into a full V queue
    on_v = at_add["pipe"] == "V"
    assert set(at_add.loc[on_v, "ir_op"].astype(str)) == {
        "block.add", "system.mutex_lock_dyn", "system.mutex_unlock_dyn"}
    others = at_add[~on_v]
    assert set(others["pipe"].astype(str)) <= {"S"}
    assert set(others["sync_ids"].astype(str)) <= {"V full"}

    ev = trace.events
    assert set(ev.loc[ev["op"] == "TLOAD", "line"]) == load_lines
    assert set(ev.loc[ev["op"] == "TSTORE", "line"]) == {store_line}
    hot = trace.source_lines()
    assert set(hot["line"]) == {add_line, store_line, *load_lines}
    assert hot.iloc[0]["line"] in {*load_lines, store_line}  # GM transfers dominate the add
