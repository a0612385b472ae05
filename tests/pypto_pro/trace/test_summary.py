"""The per-block, per-pipe, stall and wave views, checked against hand-computed numbers."""
from __future__ import annotations

import pytest

from pypto_pro.trace import EventLog, Trace


def test_block_detail_rows_spans_and_busy(two_block: Trace) -> None:
    detail = two_block.block_detail()
    assert detail[["block", "subblock", "core_kind", "core"]].astype(str).values.tolist() == [
        ["0", "0", "AIV", "0"], ["1", "0", "AIV", "1"]]
    assert detail["start_cycle"].tolist() == [0, 20]
    assert detail["end_cycle"].tolist() == [360, 380]  # stalls and syncs count in the span
    assert detail["duration_cycles"].tolist() == [360, 360]
    assert detail["start_us"].tolist() == pytest.approx([0.0, 0.02])
    assert detail["duration_us"].tolist() == pytest.approx([0.36, 0.36])
    # block 0's two loads overlap ([0,100) and [50,150)): union 150, not 200
    assert detail["mte2_cycles"].tolist() == [150, 150]
    assert detail["v_cycles"].tolist() == [100, 100]
    assert detail["mte3_cycles"].tolist() == [100, 100]
    assert detail["m_cycles"].tolist() == [0, 0]
    assert detail["mte2_ratio"].tolist() == pytest.approx([150 / 360] * 2)
    pipes = [c for c in detail.columns if c.endswith("_cycles") and c != "duration_cycles"]
    assert pipes == ["s_cycles", "mte2_cycles", "mte1_cycles", "m_cycles", "fix_cycles",
                     "v_cycles", "mte3_cycles"]


def test_busy_never_exceeds_wall_time_with_overlaps_on_one_pipe(make_meta) -> None:
    log = EventLog()
    for start, end in ((0, 100), (10, 90), (50, 150), (140, 160), (300, 310)):
        log.add(core_kind="AIV", pipe="MTE2", kind="instr", op="TLOAD", start=start, end=end)
    trace = Trace(log, make_meta(block_dim=1))
    util = trace.pipe_utilization()
    assert util["busy_cycles"].tolist() == [170]  # [0,160) + [300,310)
    assert trace.duration_cycles == 310
    assert util["ratio"].tolist() == pytest.approx([170 / 310])
    assert trace.block_detail()["mte2_ratio"].tolist() == pytest.approx([170 / 310])


def _pipelined(make_meta) -> Trace:
    """Double-buffered MTE2 / V / MTE3 on one core, overlapping in time."""
    log = EventLog()
    for pipe, spans in (("MTE2", [(0, 100), (100, 200)]), ("V", [(100, 150), (200, 250)]),
                        ("MTE3", [(150, 200), (250, 300)])):
        for start, end in spans:
            log.add(core_kind="AIV", pipe=pipe, kind="instr", start=start, end=end)
    return Trace(log, make_meta(block_dim=1))


def test_pipelined_pipes_are_counted_per_pipe(make_meta) -> None:
    """Each pipe's busy stays within the wall time even though their sum exceeds it."""
    trace = _pipelined(make_meta)
    util = trace.pipe_utilization()
    assert dict(zip(util["pipe"].astype(str), util["busy_cycles"])) == {
        "MTE2": 200, "V": 100, "MTE3": 100}
    assert trace.duration_cycles == 300 < util["busy_cycles"].sum()
    detail = trace.block_detail()
    assert detail[["mte2_ratio", "v_ratio", "mte3_ratio"]].values[0].tolist() == pytest.approx(
        [2 / 3, 1 / 3, 1 / 3])


def test_pipe_utilization_sums_cores_and_divides_by_their_capacity(two_block: Trace) -> None:
    util = two_block.pipe_utilization()
    assert util["pipe"].astype(str).tolist() == ["MTE2", "V", "MTE3"]  # display order
    assert util["cores"].tolist() == [2, 2, 2]
    assert util["busy_cycles"].tolist() == [300, 200, 200]
    assert util["busy_us"].tolist() == pytest.approx([0.3, 0.2, 0.2])
    assert util["ratio"].tolist() == pytest.approx([300 / 760, 200 / 760, 200 / 760])
    assert util["max_core_ratio"].tolist() == pytest.approx([150 / 380, 100 / 380, 100 / 380])


def test_mix_block_detail_puts_aic_and_both_aivs_side_by_side(mix: Trace) -> None:
    detail = mix.mix_block_detail()
    assert detail["block"].tolist() == [0, 1]
    assert detail["aic_cycles"].tolist() == [251, 251]  # M, FIX and the cross-core set
    assert detail["aiv0_cycles"].tolist() == [50, 50]
    assert detail["aiv1_cycles"].tolist() == [70, 70]
    assert detail["aiv1_us"].tolist() == pytest.approx([0.07, 0.07])
    assert detail["start_cycle"].tolist() == [0, 1000]
    assert detail["duration_cycles"].tolist() == [321, 321]
    util = mix.pipe_utilization()
    assert util[["core_kind", "pipe"]].astype(str).values.tolist() == [
        ["AIC", "M"], ["AIC", "FIX"], ["AIV", "V"]]
    assert util["cores"].tolist() == [2, 2, 4]


def test_mix_block_detail_refuses_other_kernels(two_block: Trace) -> None:
    with pytest.raises(ValueError, match=r"needs a mix kernel.*\['aiv'\].*block_detail"):
        two_block.mix_block_detail()


def test_mix_block_detail_leaves_missing_aivs_empty(make_meta) -> None:
    log = EventLog()
    log.add(block=0, core=0, core_kind="AIC", pipe="M", kind="instr", start=0, end=10)
    log.add(block=0, core=0, core_kind="AIV", pipe="V", kind="instr", start=10, end=14)
    detail = Trace(log, make_meta("mix", block_dim=1)).mix_block_detail()
    assert detail[["aic_cycles", "aiv0_cycles"]].values.tolist() == [[10, 4]]
    assert detail["aiv1_cycles"].isna().all()


def test_waves_of_four_blocks_on_two_cores(four_blocks: Trace) -> None:
    waves = four_blocks.waves()
    assert waves["block"].tolist() == [0, 1, 2, 3]
    assert waves["wave"].tolist() == [0, 0, 1, 1]
    assert waves["start_cycle"].tolist() == [0, 0, 100, 105]
    assert "2 wave(s)" in four_blocks.summary()


def test_stall_totals_by_core_and_reason(two_block: Trace, mix: Trace) -> None:
    stalls = two_block.stalls()
    assert stalls[["core", "stall_reason", "count", "cycles"]].astype(str).values.tolist() == [
        ["0", "flag", "2", "149"], ["1", "flag", "2", "149"]]
    assert stalls["us"].tolist() == pytest.approx([0.149, 0.149])
    assert mix.stalls().empty


def test_several_stall_reasons_are_kept_apart(make_meta) -> None:
    log = EventLog()
    for reason, start, end in (("mutex", 0, 5), ("flag", 5, 12), ("mutex", 20, 23)):
        log.add(core_kind="AIV", pipe="V", kind="stall", stall_reason=reason, start=start,
                end=end)
    log.add(core_kind="AIV", pipe="V", kind="instr", start=12, end=20)
    stalls = Trace(log, make_meta(block_dim=1)).stalls()
    assert dict(zip(stalls["stall_reason"].astype(str), stalls["cycles"])) == {
        "flag": 7, "mutex": 8}
    assert dict(zip(stalls["stall_reason"].astype(str), stalls["count"])) == {
        "flag": 1, "mutex": 2}


def test_overlap_counts_the_cycles_two_pipes_are_busy_at_once(make_meta) -> None:
    trace = _pipelined(make_meta)
    assert trace.overlap("MTE2", "V")["cycles"].tolist() == [50]    # [100, 150)
    assert trace.overlap("MTE2", "MTE3")["cycles"].tolist() == [50]  # [150, 200)
    assert trace.overlap("V", "MTE3")["cycles"].tolist() == [0]
    assert trace.overlap("MTE2", "V")["us"].tolist() == pytest.approx([0.05])


def test_overlap_by_block_joins_the_cores_of_a_block(mix: Trace) -> None:
    per_core = mix.overlap("M", "V")
    assert per_core["cycles"].sum() == 0  # M and V are on different cores
    per_block = mix.overlap("M", "V", by="block")
    assert per_block[["block", "cycles"]].values.tolist() == [[0, 0], [1, 0]]  # V after M
