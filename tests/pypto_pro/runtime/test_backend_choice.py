"""Backend registry and choice (DESIGN §5): context manager, env var, detection, lazy import."""
from __future__ import annotations

import sys
import threading

import pytest

from pypto_pro.errors import RuntimeFailure
from pypto_pro.runtime import backends, current_backend_name, use_backend
from pypto_pro.runtime.arch import npu_available


def test_default_without_npu_is_sim(clean_backends, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch_npu", None)  # import torch_npu → ImportError
    assert current_backend_name() == "sim"


def test_torch_npu_failing_with_oserror_does_not_break(clean_backends, monkeypatch, tmp_path):
    package = tmp_path / "torch_npu"
    package.mkdir()
    (package / "__init__.py").write_text("raise OSError('libascendcl.so: cannot open')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "torch_npu", raising=False)
    assert npu_available() is False
    assert current_backend_name() == "sim"


def test_torch_npu_failing_with_runtime_error_does_not_break(clean_backends, monkeypatch,
                                                             tmp_path):
    package = tmp_path / "torch_npu"
    package.mkdir()
    (package / "__init__.py").write_text("raise RuntimeError('CANN version mismatch')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "torch_npu", raising=False)
    assert current_backend_name() == "sim"


def test_npu_chosen_when_available(clean_backends, monkeypatch):
    monkeypatch.setattr(backends, "npu_available", lambda: True)
    assert current_backend_name() == "npu"


def test_env_var_overrides_detection(clean_backends, monkeypatch):
    monkeypatch.setattr(backends, "npu_available", lambda: True)
    monkeypatch.setenv("PYPTOPRO_BACKEND", "native")
    assert current_backend_name() == "native"
    monkeypatch.setenv("PYPTOPRO_BACKEND", " SIM ")
    assert current_backend_name() == "sim"


def test_invalid_env_value_names_the_allowed_ones(clean_backends, monkeypatch):
    monkeypatch.setenv("PYPTOPRO_BACKEND", "gpu")
    with pytest.raises(ValueError, match="PYPTOPRO_BACKEND='gpu'.*allowed values: sim\\|native\\|npu"):
        current_backend_name()


def test_context_manager_overrides_env_and_nests(clean_backends, monkeypatch):
    monkeypatch.setenv("PYPTOPRO_BACKEND", "sim")
    with use_backend("native"):
        assert current_backend_name() == "native"
        with use_backend("npu"):
            assert current_backend_name() == "npu"
        assert current_backend_name() == "native"
    assert current_backend_name() == "sim"


def test_context_manager_is_per_thread(clean_backends, monkeypatch):
    monkeypatch.setenv("PYPTOPRO_BACKEND", "sim")
    seen = []
    with use_backend("native"):
        worker = threading.Thread(target=lambda: seen.append(current_backend_name()))
        worker.start()
        worker.join()
        assert current_backend_name() == "native"
    assert seen == ["sim"]


def test_use_backend_rejects_unknown_names(clean_backends):
    with pytest.raises(ValueError, match="unknown backend 'cuda'"):
        with use_backend("cuda"):
            pass


def test_registered_factory_is_built_once(clean_backends):
    built = []

    class Fake:
        name = "fake2"

        def launch(self, request):
            raise AssertionError("not launched here")

    backends.register_backend("fake2", lambda: built.append(1) or Fake())
    first = backends.get_backend("fake2")
    assert backends.get_backend("fake2") is first and built == [1]
    assert "fake2" in backends.known_backends()


def test_builtin_backend_imported_lazily_and_registers(clean_backends, monkeypatch):
    class SimStub:
        name = "sim"

    module = type(sys)("pypto_pro.runtime.backends.sim")
    monkeypatch.delitem(backends._factories, "sim", raising=False)
    monkeypatch.delitem(backends._instances, "sim", raising=False)

    def fake_import(name):
        assert name == "pypto_pro.runtime.backends.sim"
        backends.register_backend("sim", SimStub)
        return module

    monkeypatch.setattr(backends.importlib, "import_module", fake_import)
    assert isinstance(backends.get_backend("sim"), SimStub)


def test_missing_backend_module_is_a_runtime_failure(clean_backends, monkeypatch):
    monkeypatch.delitem(backends._factories, "native", raising=False)
    monkeypatch.delitem(backends._instances, "native", raising=False)
    monkeypatch.setitem(sys.modules, "pypto_pro.runtime.backends.native", None)
    with pytest.raises(RuntimeFailure, match="backend 'native' is not available"):
        backends.get_backend("native")


def test_module_that_does_not_register_is_a_runtime_failure(clean_backends, monkeypatch):
    monkeypatch.delitem(backends._factories, "npu", raising=False)
    monkeypatch.delitem(backends._instances, "npu", raising=False)
    monkeypatch.setattr(backends.importlib, "import_module", lambda name: None)
    with pytest.raises(RuntimeError, match="backend 'npu' is not available.*did not register"):
        backends.get_backend("npu")


def test_builtin_module_imported_under_a_swapped_registry_is_still_found(monkeypatch):
    """A build thread may import a backend module while a test has swapped the registry for
    a copy: the registration went into the copy, yet the backend is found afterwards."""
    from pypto_pro.runtime.backends.sim import SimBackend

    monkeypatch.setattr(backends, "_factories", {})
    monkeypatch.setattr(backends, "_instances", {})
    assert isinstance(backends.get_backend("sim"), SimBackend)
