"""msprof op simulator `trace.json` (spec §4.1): the header MindStudio Insight checks, unit and
lane names, mnemonics, µs times, args and the atomic write."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from pypto_pro.trace import EventLog, Trace, to_msprof_json
from pypto_pro.trace.export.msprof import LANES


def test_header_is_what_insight_imports(two_block: Trace, tmp_path: Path) -> None:
    target = tmp_path / "trace.json"
    doc = to_msprof_json(two_block, target)
    assert list(doc) == ["profilingType", "displayTimeUnit", "schemaVersion", "traceEvents"]
    assert (doc["profilingType"], doc["displayTimeUnit"], doc["schemaVersion"]) == (
        "op", "ns", 1)
    text = target.read_text()
    first_array = text.index("[")
    assert text.index('"profilingType"') < first_array and text.index('"op"') < first_array
    assert json.loads(text) == doc
    assert os.listdir(tmp_path) == ["trace.json"]


def test_units_lanes_and_mnemonics(two_block: Trace, mix: Trace) -> None:
    events = to_msprof_json(two_block)["traceEvents"]
    assert len(events) == 16 and {e["ph"] for e in events} == {"X"}
    assert {e["pid"] for e in events} == {"core0.veccore0", "core0.veccore1"}
    assert {e["tid"] for e in events} == {"MTE2", "MTE2 #2", "VECTOR", "MTE3"}
    assert {e["name"] for e in events} == {"TLOAD", "SET_FLAG", "WAIT_FLAG", "TADD", "TSTORE",
                                           "STALL_FLAG"}
    mix_events = to_msprof_json(mix)["traceEvents"]
    assert {e["pid"] for e in mix_events} == {
        "core0.cubecore0", "core0.veccore0", "core0.veccore1",
        "core1.cubecore0", "core1.veccore0", "core1.veccore1"}
    assert {e["tid"] for e in mix_events} == {"CUBE", "FIXP", "VECTOR"}
    assert set(LANES.values()) == {"SCALAR", "MTE1", "CUBE", "FIXP", "MTE2", "VECTOR", "MTE3"}


def test_units_when_core_ids_are_shared_by_both_kinds(make_meta) -> None:
    """A backend numbering instances in one sequence (AIC 0, AIV 1, AIV 2, AIC 3, ...)."""
    log = EventLog()
    for core, kind, block, sub in ((0, "AIC", 0, 0), (1, "AIV", 0, 0), (2, "AIV", 0, 1),
                                   (3, "AIC", 1, 0), (4, "AIV", 1, 0), (5, "AIV", 1, 1)):
        log.add(core=core, core_kind=kind, block=block, subblock=sub, pipe="S", kind="instr",
                op=f"unit{core}", start=core, end=core + 1)
    events = to_msprof_json(Trace(log, make_meta("mix")))["traceEvents"]
    assert {e["name"]: e["pid"] for e in events} == {
        "UNIT0": "core0.cubecore0", "UNIT1": "core0.veccore0", "UNIT2": "core0.veccore1",
        "UNIT3": "core1.cubecore0", "UNIT4": "core1.veccore0", "UNIT5": "core1.veccore1"}
    assert {e["tid"] for e in events} == {"SCALAR"}


def test_times_in_microseconds_and_args(two_block: Trace) -> None:
    events = to_msprof_json(two_block)["traceEvents"]
    assert [e["ts"] for e in events] == sorted(e["ts"] for e in events)
    add = next(e for e in events if e["name"] == "TADD" and e["pid"] == "core0.veccore1")
    assert (add["ts"], add["dur"]) == (pytest.approx(0.172), pytest.approx(0.1))
    assert isinstance(add["ts"], float) and add["cname"] == "rail_animation"
    assert add["args"]["code"] == "/src/kern.py:11"
    assert add["args"]["detail"] == "ir_op=block.add,bytes=8192,flops=2048"
    assert re.fullmatch(r"0x[0-9a-f]{8}", add["args"]["pc_addr"])
    stall = next(e for e in events if e["name"] == "STALL_FLAG")
    assert stall["cname"] == "terrible"
    assert stall["args"]["detail"].endswith(",sync=flag MTE2->V #0")
    # one synthetic address per (file, line, instruction): both TADDs share it
    adds = {e["args"]["pc_addr"] for e in events if e["name"] == "TADD"}
    loads = {e["args"]["pc_addr"] for e in events if e["name"] == "TLOAD"}
    assert len(adds) == 1 and len(loads) == 1 and adds != loads


def test_launches_follow_each_other_without_extra_lanes(two_block: Trace) -> None:
    events = to_msprof_json(Trace.concat([two_block, two_block]))["traceEvents"]
    assert len(events) == 32
    assert {e["tid"] for e in events} == {"MTE2", "MTE2 #2", "VECTOR", "MTE3"}
    stores = sorted(e["ts"] for e in events if e["name"] == "TSTORE")
    assert stores == pytest.approx([0.26, 0.28, 0.64, 0.66])  # launch 1 starts at 0.38 us
