"""Every tutorial notebook runs top to bottom headlessly (nbclient) with its small CI shapes.

The `ci_notebook` fixture (conftest) injects the notebook's `metadata.pypto.ci_parameters`
after its cell tagged `parameters`, so CI runs small shapes and users the full ones. A few cells
assert on numbers they show; any error fails the test. The saved notebooks must carry no
outputs (they open cleanly anywhere).
"""
from __future__ import annotations

import time
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def test_the_learning_path_is_complete():
    names = [p.name for p in NOTEBOOKS]
    assert len(names) == 10, names
    index = (NOTEBOOKS[0].parent / "README.md").read_text()
    assert all(n in index for n in names)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_stored_clean(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not cell.outputs and cell.execution_count is None, cell.source[:40]
    kinds = {c.metadata.get("tags", [None])[0] for c in nb.cells if c.cell_type == "code"}
    assert {"parameters", "solution"} <= kinds


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs(path, tmp_path, ci_notebook):
    nb = ci_notebook(nbformat.read(path, as_version=4))
    t0 = time.perf_counter()
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    for cell in nb.cells:
        expected = "raises-exception" in cell.metadata.get("tags", [])
        if cell.cell_type == "code" and not expected:
            errors = [o for o in cell.outputs if o.output_type == "error"]
            assert not errors, f"{cell.source[:80]}: {errors[0].get('evalue') if errors else ''}"
        elif expected:  # a cell that shows a diagnostic must really show it
            assert any(o.output_type == "error" for o in cell.outputs), cell.source[:80]
    print(f"{path.name}: {time.perf_counter() - t0:.1f} s")
