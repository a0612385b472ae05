"""Fixtures shared by the simulator tests."""
from __future__ import annotations

import pytest

from pypto_pro.runtime import backends
from pypto_pro.runtime.backends.sim import SimBackend


@pytest.fixture
def functional_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    """Backend "functional" (the functional-only simulator) is registered for the test, and
    backends a test registers do not leak into other tests."""
    monkeypatch.setattr(backends, "_factories", dict(backends._factories))
    monkeypatch.setattr(backends, "_instances", dict(backends._instances))
    backends.register_backend("functional", lambda: SimBackend(functional_only=True))
