"""Fixtures for the native backend tests: skip without a host C++ compiler, one shared native
backend (and so one worker process and one kernel cache) for the whole session, and a
functional simulator to compare against."""
from __future__ import annotations

import shutil

import pytest

from pypto_pro.runtime import backends

if shutil.which("g++") is None:
    pytest.skip("the native backend needs g++", allow_module_level=True)


@pytest.fixture(scope="session")
def native_backend():
    """The registered "native" backend (built once; its worker is reused by every test)."""
    backend = backends.get_backend("native")
    yield backend
    backend.close()


@pytest.fixture
def sim_functional(monkeypatch):
    """A functional-only simulator registered as "sim-functional" for this test."""
    from pypto_pro.runtime.backends import sim

    monkeypatch.setattr(backends, "_factories", dict(backends._factories))
    monkeypatch.setattr(backends, "_instances", dict(backends._instances))
    backends.register_backend("sim-functional", lambda: sim.SimBackend(functional_only=True))
    return "sim-functional"
