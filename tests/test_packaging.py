"""Packaging checks: pyproject metadata and extras, the dev/CI scripts, and that `pypto_pro`
imports on a machine where `torch_npu` is absent or broken (every machine without CANN)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]


def _pyproject() -> dict:
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)


def _names(requirements: list[str]) -> set[str]:
    return {Requirement(r).name.lower().replace("_", "-") for r in requirements}


def test_import_pypto_pro_when_torch_npu_fails(tmp_path: Path) -> None:
    if not (ROOT / "pypto_pro" / "__init__.py").exists():
        pytest.skip("pypto_pro has no __init__.py yet")
    blocker = tmp_path / "torch_npu"
    blocker.mkdir()
    (blocker / "__init__.py").write_text(
        'raise ImportError("torch_npu blocked by test_packaging")\n'
    )
    script = (
        "import pypto_pro\n"
        "try:\n"
        "    import torch_npu\n"
        "except ImportError as e:\n"
        "    assert 'blocked by test_packaging' in str(e), e\n"
        "else:\n"
        "    raise AssertionError('torch_npu blocker was not used')\n"
        "print(pypto_pro.__name__, getattr(pypto_pro, '__version__', ''))\n"
    )
    env = dict(os.environ)
    env.pop("PYPTOPRO_BACKEND", None)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(tmp_path), str(ROOT), env.get("PYTHONPATH", "")) if p
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    name, _, version = done.stdout.strip().partition(" ")
    assert name == "pypto_pro"
    if version:
        assert version == _pyproject()["project"]["version"]


def test_project_metadata() -> None:
    project = _pyproject()["project"]
    assert project["name"] == "pypto-pro-workbench"
    assert project["requires-python"] == ">=3.10"
    assert {"torch", "numpy", "pygments"} <= _names(project["dependencies"])
    torch_req = next(Requirement(r) for r in project["dependencies"] if r.startswith("torch"))
    assert "2.4" in torch_req.specifier and "2.13.0" in torch_req.specifier
    assert "2.3" not in torch_req.specifier


def test_extras_contain_required_packages() -> None:
    extras = {k: _names(v) for k, v in _pyproject()["project"]["optional-dependencies"].items()}
    assert extras["lab"] == {"jupyterlab", "notebook", "ipywidgets", "anywidget", "plotly",
                             "pandas"}
    assert extras["cluster"] == {"ray", "dask"}
    assert extras["npu"] == {"torch-npu"}
    assert {
        "pytest",
        "pytest-xdist",
        "hypothesis",
        "nbclient",
        "nbformat",
        "ipykernel",
        "playwright",
        "ruff",
    } <= extras["dev"]
    assert extras["lab"] <= extras["dev"] and extras["cluster"] <= extras["dev"]
    assert extras["bench"] == {"triton"}


def test_torch_npu_is_pinned_to_the_dev_torch() -> None:
    (npu,) = _pyproject()["project"]["optional-dependencies"]["npu"]
    req = Requirement(npu)
    assert str(req.specifier) == "==2.13.0"
    assert "TORCH_PIN=torch==2.13.0" in (ROOT / "dev").read_text()


def test_package_data_and_pytest_config() -> None:
    tool = _pyproject()["tool"]
    assert tool["setuptools"]["packages"]["find"]["include"] == ["pypto_pro*", "pypto_lab*"]
    data = tool["setuptools"]["package-data"]["pypto_pro"]
    assert {"include/*.h", "include/**/*.h", "soc/*.toml"} <= set(data)
    pytest_cfg = tool["pytest"]["ini_options"]
    assert pytest_cfg["testpaths"] == ["tests"]
    assert {m.split(":")[0] for m in pytest_cfg["markers"]} == {"slow", "browser", "serial"}


@pytest.mark.parametrize("script", ["dev", ".ci/run"])
def test_scripts_are_executable_bash(script: str) -> None:
    path = ROOT / script
    assert os.access(path, os.X_OK), f"{script} is not executable"
    done = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_dev_rejects_unknown_command() -> None:
    done = subprocess.run(
        ["bash", str(ROOT / "dev"), "no-such-command"], capture_output=True, text=True
    )
    assert done.returncode == 2
    assert "./dev test" in done.stderr
