"""Every tutorial notebook runs top to bottom headlessly (nbclient) with its small CI shapes,
and what its prose claims is true of its output.

The `ci_notebook` fixture (conftest) injects the notebook's `metadata.pypto.ci_parameters`
after its cell tagged `parameters`, so CI runs small shapes and users the full ones. The claims
the text makes (which tabs a cell shows, which pipe is busiest, what overlaps, what the CCE tab
holds, ...) are asserted by cells right after the ones they describe, so any false claim fails
the test. A cell tagged `raises-exception` names the exact error class it must raise in
`metadata.pypto.raises`. The saved notebooks must carry no outputs (they open cleanly anywhere).
"""
from __future__ import annotations

import re
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
        elif expected:  # a cell that shows a diagnostic must show exactly that one
            assert raised(cell) == cell.metadata["pypto"]["raises"], cell.source[:80]
    print(f"{path.name}: {time.perf_counter() - t0:.1f} s")


def raised(cell) -> str | None:
    """The error class a cell raised: the DSL error a `%%pypto` cell failed with (its
    diagnostic's headline, "InvalidTile while compiling ..."), else the Python exception."""
    errors = [o for o in cell.outputs if o.output_type == "error"]
    if not errors:
        return None
    head = re.sub(r"\x1b\[[0-9;]*m", "", errors[0].traceback[0]) if errors[0].traceback else ""
    match = re.match(r"(\w+) while \w+ the %%pypto cell", head)
    return match.group(1) if match else errors[0].ename


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_expected_failure_names_its_error_class(path):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if "raises-exception" in cell.metadata.get("tags", []):
            assert cell.metadata.get("pypto", {}).get("raises"), cell.source[:80]
