"""Fixtures for the runtime tests: a fake compiler and a fake backend registered as "fake"."""
from __future__ import annotations

import sys
import types
from dataclasses import dataclass, field

import pytest

from pypto_pro.runtime import backends
from pypto_pro.runtime.arch import npu_available
from pypto_pro.runtime.backends import LaunchRequest, LaunchResult


@dataclass
class FakeCompiler:
    """Stands in for `pypto_pro.compiler.compile_kernel`: records (kernel name, spec)."""

    calls: list = field(default_factory=list)

    def compile_kernel(self, kdef, spec):
        self.calls.append((kdef.name, spec))
        return ("compiled", kdef.name, spec)


@dataclass
class FakeBackend:
    """Records every LaunchRequest; `printed` is returned as the per-block output."""

    name: str = "fake"
    requests: list = field(default_factory=list)
    printed: dict = field(default_factory=dict)

    def launch(self, request: LaunchRequest) -> LaunchResult:
        self.requests.append(request)
        return LaunchResult(self.name, 0.001, None, dict(self.printed))


@pytest.fixture
def fake_compiler(monkeypatch):
    compiler = FakeCompiler()
    module = types.ModuleType("pypto_pro.compiler")
    module.compile_kernel = compiler.compile_kernel
    monkeypatch.setitem(sys.modules, "pypto_pro.compiler", module)
    return compiler


@pytest.fixture
def clean_backends(monkeypatch):
    """Isolate the backend registry, the env override and the NPU probe cache."""
    monkeypatch.setattr(backends, "_factories", dict(backends._factories))
    monkeypatch.setattr(backends, "_instances", dict(backends._instances))
    monkeypatch.delenv("PYPTOPRO_BACKEND", raising=False)
    monkeypatch.delenv("PYPTOPRO_JIT_ARCH", raising=False)
    npu_available.cache_clear()
    yield
    npu_available.cache_clear()


@pytest.fixture
def fake_backend(clean_backends):
    backend = FakeBackend()
    backends.register_backend("fake", lambda: backend)
    with backends.use_backend("fake"):
        yield backend


@pytest.fixture
def launch_env(fake_compiler, fake_backend):
    """A fake compiler and the fake backend active: launches are recorded, nothing runs."""
    return types.SimpleNamespace(compiler=fake_compiler, backend=fake_backend)
