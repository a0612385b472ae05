"""Fixtures shared by the simulator tests."""
from __future__ import annotations

import shutil
from typing import Any

import pytest

from pypto_pro.runtime import backends
from pypto_pro.runtime.backends.native import compiler
from pypto_pro.runtime.backends.sim import SimBackend
from pypto_pro.sim import settings
from pypto_pro.sim.fast import scheduler_native, memo


@pytest.fixture
def functional_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    """Backend "functional" (the functional-only simulator) is registered for the test, and
    backends a test registers do not leak into other tests."""
    monkeypatch.setattr(backends, "_factories", dict(backends._factories))
    monkeypatch.setattr(backends, "_instances", dict(backends._instances))
    backends.register_backend("functional", lambda: SimBackend(functional_only=True))


@pytest.fixture
def stream_engine(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The stream engine's scheduler library, built (or found in the kernel cache) before the
    test runs; timed launches take the stream engine (`PYPTOPRO_SIM_ENGINE=native`) and no
    kept recording or functional run is left from another test (its tensors' geometry could
    match). Skipped without a C++ compiler: the Python engine runs every launch then."""
    if shutil.which(compiler()) is None:
        pytest.skip("the stream engine needs a C++ compiler")
    lib = scheduler_native.library(wait=True)
    monkeypatch.setenv(settings.ENGINE, "native")
    memo.clear()
    return lib
