"""Fixtures for the tests that kernels written for the real PyPTO Pro compute here what the real
toolchain computes (issue 21): `everywhere(launch)` runs `launch()` (make fresh inputs, launch,
return the outputs) on every backend that computes values — the timed simulator's stream engine
and its Python reference engine, the functional simulator and the native build of the generated
C++ — and returns each one's result by engine name."""
from __future__ import annotations

import shutil
from collections.abc import Callable
from typing import Any

import pytest

from pypto_pro.runtime import backends
from pypto_pro.runtime.backends.sim import SimBackend
from pypto_pro.sim import settings
from pypto_pro.sim.fast import memo, scheduler_native

#: engine name → (backend, PYPTOPRO_SIM_ENGINE)
ENGINES = {"stream": ("sim", "native"), "python": ("sim", "python"),
           "functional": ("functional", None), "native": ("native", None)}


@pytest.fixture(scope="session")
def native_backend():
    """One native backend (one worker process, one kernel cache) for the whole session."""
    if shutil.which("g++") is None:
        pytest.skip("the native backend needs g++")
    backend = backends.get_backend("native")
    yield backend
    backend.close()


@pytest.fixture
def everywhere(native_backend, monkeypatch) -> Callable[[Callable[[], Any]], dict[str, Any]]:
    monkeypatch.setattr(backends, "_factories", dict(backends._factories))
    monkeypatch.setattr(backends, "_instances", dict(backends._instances))
    backends.register_backend("functional", lambda: SimBackend(functional_only=True))
    scheduler_native.library(wait=True)

    def run(launch: Callable[[], Any]) -> dict[str, Any]:
        results = {}
        for name, (backend, engine) in ENGINES.items():
            if engine is not None:
                monkeypatch.setenv(settings.ENGINE, engine)
            memo.clear()
            with backends.use_backend(backend):
                results[name] = launch()
        return results

    return run
