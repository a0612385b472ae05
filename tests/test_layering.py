"""The import rules between the packages (DESIGN §5, STYLE §5.1): the passes never import the
simulator (the SoC tables are a neutral module, `pypto_pro.soc`), a Trace never imports the
simulator or the sanitizer (findings live in `pypto_pro.trace.findings`), and the simulator
never imports a private name of the native backend (the shared toolchain is
`pypto_pro.toolchain`)."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import pypto_pro

PACKAGE = Path(pypto_pro.__file__).resolve().parent
ROOT = PACKAGE.parent


def _modules_loaded_by(code: str) -> set[str]:
    """The `pypto_pro` modules a new process has loaded after running `code`."""
    done = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys\n"
         "print('\\n'.join(m for m in sys.modules if m.startswith('pypto_pro')))"],
        capture_output=True, text=True, check=True, cwd=ROOT)
    return set(done.stdout.split())


@pytest.mark.parametrize("code, forbidden", [
    ("from pypto_pro.passes.manager import soc_facts\nsoc_facts('Ascend950PR_9589')",
     ("pypto_pro.sim",)),
    ("from pypto_pro.trace.trace import Trace\nfrom pypto_pro.trace.schema import EventLog, "
     "TraceMeta\nTrace(EventLog(), TraceMeta('k', 'sim', 's', 1.0, 1, 'aiv')).findings",
     ("pypto_pro.sim", "pypto_pro.sanitizer")),
], ids=["passes", "trace"])
def test_a_layer_loads_nothing_above_it(code, forbidden):
    loaded = _modules_loaded_by(code)
    assert not [m for m in loaded if m.startswith(forbidden)]


def test_the_simulator_imports_no_private_name_of_the_native_backend():
    found = []
    for path in (PACKAGE / "sim").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").endswith(
                    "backends.native"):
                found += [(path.name, a.name) for a in node.names if a.name.startswith("_")]
    assert not found


#: the simulator's layers (sim/__init__.py): a module imports only its own layer and those
#: before it; what is not listed (step, settings, native_build, the SoC alias) is the bottom
LAYERS = {"model": 0, "ops": 0, "frontend": 1, "reference": 2, "fast": 3, "launch": 4,
          "pools": 4}


def _sim_imports(path: Path) -> list[str]:
    """The `pypto_pro.sim` modules a module of the simulator imports (relative ones
    resolved), lazily inside functions too."""
    package = list(path.relative_to(ROOT).with_suffix("").parts[:-1])
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = package[:len(package) - node.level + 1]
            parts = base + (node.module.split(".") if node.module else [])
        else:
            parts = (node.module or "").split(".")
        names = [a.name for a in node.names]
        for name in names if not node.module else [None]:
            full = parts + ([name] if name else [])
            if full[:2] == ["pypto_pro", "sim"] and len(full) > 2:
                found.append(".".join(full))
    return found


def _layer(module: str) -> int:
    return LAYERS.get(module.split(".")[2], 0)


def test_each_simulator_layer_imports_only_the_layers_below_it():
    wrong = []
    for path in (PACKAGE / "sim").rglob("*.py"):
        rel = path.relative_to(PACKAGE / "sim")
        own = LAYERS.get(rel.parts[0].removesuffix(".py"), 0)
        wrong += [(str(rel), m) for m in _sim_imports(path) if _layer(m) > own]
    assert not wrong


def test_the_memory_model_imports_no_compiled_code():
    imported = _sim_imports(PACKAGE / "sim" / "model" / "memory.py")
    assert not [m for m in imported if m.rsplit(".", 1)[-1] in (
        "copies_native", "l2_native", "scheduler_native", "native_build")], imported
