"""The sanitizer's outputs and switches: the text report in the real tool's format, findings as
dataclasses and as a DataFrame whose two sites point at real Trace events (so the timeline can
mark both racing instructions), the three ways to switch it on, and no report when it is off."""
from __future__ import annotations

import re

import pytest
import torch

import pypto_pro.language as pl
from pypto_pro.errors import DeadlockError
from pypto_pro.runtime.backends import use_backend
from pypto_pro.sanitizer import ENV_SANITIZER, Finding, SanitizerReport, Site, sanitize

MTE2, V, MTE3 = pl.PipeType.MTE2, pl.PipeType.V, pl.PipeType.MTE3
T16 = pl.TileType([64, 128], pl.DT_FP16)


@pl.jit(arch="a5")
def racy_add(x: pl.Tensor[[64, 128], pl.DT_FP16], z: pl.Tensor[[64, 128], pl.DT_FP16]):
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        c = pl.make_tile(T16, addr=0x8000)
        pl.load(a, x, [0, 0])
        pl.add(c, a, a)
        pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=V, wait_pipe=MTE3, event_id=0)
        pl.store(z, c, [0, 0])


@pl.jit(arch="a5")
def hangs(x: pl.Tensor[[64, 128], pl.DT_FP16], z: pl.Tensor[[64, 128], pl.DT_FP16]):
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        pl.load(a, x, [0, 0])
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=7)
        pl.store(z, a, [0, 0])


def _xz():
    x = torch.randn(64, 128).half()
    return x, torch.zeros_like(x)


@pytest.fixture(autouse=True)
def on_sim():
    with use_backend("sim"):
        yield


def test_text_report_has_the_real_format(capsys):
    with sanitize():
        racy_add[None, 1](*_xz())
    out = capsys.readouterr().out
    report = racy_add.last_result.sanitizer
    n = len(report)
    assert n >= 1
    assert out.startswith("===== kernel 'racy_add' (sim) =====\n")
    assert f"PyPTO Sanitizer: {n} issue(s) detected\n" in out
    items = re.findall(r"^\[(\d+)/(\d+)\] ([A-Z_]+): .+ at (\S+):(\d+)$", out, re.MULTILINE)
    assert [(int(i), int(t)) for i, t, *_ in items] == [(i, n) for i in range(1, n + 1)]
    assert all(file.endswith("test_report.py") for *_, file, _ in items)
    assert out.count("\nHint: ") == n
    assert report.text() in out


def test_race_finding_names_both_instructions_on_the_timeline():
    with sanitize():
        racy_add[None, 1](*_xz())
    result = racy_add.last_result
    race = next(f for f in result.sanitizer if f.kind == "DATA_RACE_RAW")
    assert race.site.pipe == "V" and race.other.pipe == "MTE2"
    assert race.lines == (race.line, race.other.line) and race.other.line == race.line - 1
    ev = result.trace.events
    for site in (race.site, race.other):
        hit = ev[(ev["core"] == site.core_id) & (ev["pipe"] == site.pipe) &
                 (ev["start"] == site.cycle) & (ev["line"] == site.line) &
                 (ev["kind"] == "instr")]
        assert len(hit) == 1, site
    frame = result.sanitizer.to_frame()
    row = frame[frame["kind"] == "DATA_RACE_RAW"].iloc[0]
    assert (row["pipe"], row["other_pipe"], row["severity"]) == ("V", "MTE2", "ERROR")


def test_trace_carries_the_findings():
    racy_add[None, 1](*_xz())
    plain = racy_add.last_result.trace
    assert plain.sanitizer is None and plain.findings.empty
    with sanitize():
        racy_add[None, 1](*_xz())
    result = racy_add.last_result
    assert result.trace.sanitizer is result.sanitizer
    frame = result.trace.findings
    assert list(frame.columns) == [*result.sanitizer.to_frame().columns, "launch"]
    assert frame["kind"].tolist() == result.sanitizer.kinds()
    assert set(plain.findings.columns) == set(frame.columns)


def test_jit_option_env_var_and_context_manager_switch_it_on(monkeypatch, capsys):
    racy_add[None, 1](*_xz())
    assert racy_add.last_result.sanitizer is None  # off by default: no observer, no report
    assert "PyPTO Sanitizer" not in capsys.readouterr().out

    monkeypatch.setenv(ENV_SANITIZER, "1")
    racy_add[None, 1](*_xz())
    assert len(racy_add.last_result.sanitizer) >= 1
    with sanitize(False):  # the context manager wins over the env var
        racy_add[None, 1](*_xz())
    assert racy_add.last_result.sanitizer is None
    monkeypatch.delenv(ENV_SANITIZER)

    @pl.jit(arch="a5", sanitizer=True)
    def opted_in(x: pl.Tensor[[64, 128], pl.DT_FP16], z: pl.Tensor[[64, 128], pl.DT_FP16]):
        with pl.section_vector():
            a = pl.make_tile(T16, addr=0x0)
            pl.load(a, x, [0, 0])
            pl.store(z, a, [0, 0])

    opted_in[None, 1](*_xz())
    assert [f.kind for f in opted_in.last_result.sanitizer] == ["DATA_RACE_RAW"]


def test_a_hang_still_raises_and_carries_the_report():
    with sanitize(), pytest.raises(DeadlockError) as info:
        hangs[None, 1](*_xz())
    assert "UNPAIRED_WAIT_FLAG" in info.value.sanitizer.kinds()


def test_duplicates_at_one_location_collapse_into_a_hit_count():
    report = SanitizerReport("k")
    site = Site("k.py", 3, "block 0 AIV", 0, 0, "V", 10, "block.add")
    for _ in range(3):
        report.add(Finding("DATA_RACE_RAW", "m", site, Site("k.py", 2)))
    report.add(Finding("DATA_RACE_RAW", "m", site, Site("k.py", 1)))
    assert [f.count for f in report] == [3, 1]
    assert "(3 hits) at k.py:3" in report.text()
    assert report.findings[0].severity == "ERROR" and report.findings[0].hint


def test_every_kind_the_observer_reports_has_a_severity_and_a_hint():
    import inspect as _inspect

    from pypto_pro.sanitizer import KINDS, observer

    source = _inspect.getsource(observer)
    emitted = set(re.findall(r'"([A-Z][A-Z_]+[A-Z])"', source))
    emitted -= {"PRO_RUNTIME"}
    assert emitted <= set(KINDS), emitted - set(KINDS)
    assert all(sev in ("ERROR", "WARNING") and hint for sev, hint in KINDS.values())
