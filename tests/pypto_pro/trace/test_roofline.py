"""Roofline numbers for a memory-bound vector kernel and a compute-bound cube kernel (spec §7)."""
from __future__ import annotations

import math

import pytest

from pypto_pro.trace import EventLog, Trace

PEAKS = {"hbm_bytes_per_s": 1e10, "cube_flops_per_s": 1e12, "vector_flops_per_s": 1e10}


def _vector_kernel(make_meta, **meta_fields) -> Trace:
    """1000 cycles at 1000 MHz = 1 us; 2000 HBM bytes, 500 vector FLOPs, one UB copy."""
    log = EventLog()
    log.add(core_kind="AIV", pipe="MTE2", kind="instr", ir_op="block.load", start=0, end=100,
            bytes=1000)
    log.add(core_kind="AIV", pipe="V", kind="instr", ir_op="block.add", start=100, end=200,
            bytes=3000, flops=500)
    log.add(core_kind="AIV", pipe="V", kind="instr", ir_op="block.ub_copy", start=200, end=210,
            bytes=777)  # on-chip: not HBM traffic
    log.add(core_kind="AIV", pipe="MTE3", kind="instr", ir_op="block.store", start=200,
            end=1000, bytes=1000)
    return Trace(log, make_meta(block_dim=1, **meta_fields))


def test_memory_bound_vector_kernel(make_meta) -> None:
    point = _vector_kernel(make_meta).roofline(PEAKS)
    assert point.seconds == pytest.approx(1e-6)
    assert (point.hbm_bytes, point.flops, point.unit) == (2000, 500, "vector")
    assert point.achieved_bytes_per_s == pytest.approx(2e9)
    assert point.achieved_flops_per_s == pytest.approx(5e8)
    assert point.intensity == pytest.approx(0.25)
    assert point.ridge == pytest.approx(1.0)
    assert point.bound == "memory"
    assert point.attainable_flops_per_s == pytest.approx(2.5e9)
    assert point.memory_fraction == pytest.approx(0.2)
    assert point.compute_fraction == pytest.approx(0.05)
    # under the memory roof, achieved / attainable FLOP/s equals achieved / peak bytes/s
    assert point.fraction_of_roof == pytest.approx(5e8 / 2.5e9)
    assert point.as_dict()["bound"] == "memory"


def test_compute_bound_cube_kernel(make_meta) -> None:
    log = EventLog()
    log.add(core_kind="AIC", pipe="MTE2", kind="instr", ir_op="block.load", start=0, end=100,
            bytes=1000)
    log.add(core_kind="AIC", pipe="M", kind="instr", ir_op="block.matmul", start=100,
            end=1000, flops=500_000)
    log.add(core_kind="AIV", pipe="V", kind="instr", ir_op="block.add", start=0, end=10,
            flops=99)  # vector FLOPs do not count against the cube roof
    point = Trace(log, make_meta("mix", block_dim=1)).roofline(PEAKS)
    assert (point.unit, point.flops, point.bound) == ("cube", 500_000, "compute")
    assert point.intensity == pytest.approx(500.0)
    assert point.ridge == pytest.approx(100.0)
    assert point.achieved_flops_per_s == pytest.approx(5e11)
    assert point.attainable_flops_per_s == pytest.approx(1e12)
    assert point.fraction_of_roof == pytest.approx(0.5) == point.compute_fraction


def test_bandwidth_defaults_to_the_meta_rate(make_meta) -> None:
    trace = _vector_kernel(make_meta, hbm_bytes_per_cycle=10.0)  # 10 B/cycle x 1 GHz
    point = trace.roofline({"vector_flops_per_s": 1e10})
    assert point.peak_bytes_per_s == pytest.approx(1e10)
    assert point.memory_fraction == pytest.approx(0.2)


def test_no_hbm_traffic_is_compute_bound(make_meta) -> None:
    log = EventLog()
    log.add(core_kind="AIV", pipe="V", kind="instr", ir_op="block.add", start=0, end=10,
            flops=10)
    point = Trace(log, make_meta(block_dim=1)).roofline(PEAKS)
    assert math.isinf(point.intensity) and point.bound == "compute"


@pytest.mark.parametrize("peaks, message", [
    ({"vector_flops_per_s": 1e10}, "must be positive"),
    ({"hbm_bytes_per_s": 1e10}, "needs 'vector_flops_per_s'"),
    ({**PEAKS, "l2_bytes_per_s": 1.0}, "unknown soc_peaks keys"),
])
def test_bad_peaks_are_explained(make_meta, peaks: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _vector_kernel(make_meta).roofline(peaks)
