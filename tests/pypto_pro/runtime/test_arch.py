"""Arch resolution (spec §1.1): explicit → PYPTOPRO_JIT_ARCH → NPU → fallback "a5"."""
from __future__ import annotations

import pytest

from pypto_pro.runtime import arch


@pytest.fixture(autouse=True)
def _no_env(monkeypatch):
    monkeypatch.delenv("PYPTOPRO_JIT_ARCH", raising=False)


@pytest.mark.parametrize("spelling, expected", [
    ("a2", "a2"), ("a3", "a3"), ("a5", "a5"), ("A5", "a5"), ("3510", "a5"), ("DAV_3510", "a5"),
    ("dav-c310", "a5"), ("2201", "a3"), ("DAV_2201", "a3"), ("DAV_1001", "a3"),
    ("auto", None), (None, None),
])
def test_normalize_arch(spelling, expected):
    assert arch.normalize_arch(spelling) == expected


@pytest.mark.parametrize("bad", ["a9", "ascend950", 5])
def test_unknown_arch_is_a_value_error(bad):
    with pytest.raises(ValueError, match="Unsupported arch"):
        arch.normalize_arch(bad)


def test_resolution_order(monkeypatch):
    monkeypatch.setattr(arch, "detect_npu_arch", lambda: None)
    assert arch.resolve_arch() == "a5"  # our fallback (the real system falls back to a3)
    monkeypatch.setattr(arch, "detect_npu_arch", lambda: "a3")
    assert arch.resolve_arch() == "a3"
    assert arch.resolve_arch("auto") == "a3"
    monkeypatch.setenv("PYPTOPRO_JIT_ARCH", "DAV_3510")
    assert arch.resolve_arch() == "a5"
    assert arch.resolve_arch("a2") == "a2"
    monkeypatch.setenv("PYPTOPRO_JIT_ARCH", "bogus")
    with pytest.raises(ValueError, match="Unsupported arch 'bogus'"):
        arch.resolve_arch()


@pytest.mark.parametrize("device, expected", [
    ("Ascend950PR", "a5"), ("Ascend910B4", "a3"), ("Ascend310P", None), (None, None),
])
def test_npu_device_names_map_to_arch(monkeypatch, device, expected):
    monkeypatch.setattr(arch, "npu_device_name", lambda: device)
    assert arch.detect_npu_arch() == expected
