"""The demo notebook executes headlessly with nbclient (anchors R2): every cell runs, the
`%%pypto` cells produce the Workbench plus a static fallback, and it stays small and fast."""
from __future__ import annotations

import json
import time
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "workbench_demo.ipynb"
WIDGET = "application/vnd.jupyter.widget-view+json"


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    work = tmp_path_factory.mktemp("nb")
    t0 = time.perf_counter()
    NotebookClient(nb, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(work)}}).execute()
    return nb, time.perf_counter() - t0


def _outputs(nb, index):
    return nb.cells[index].outputs


def test_runs_without_errors_in_under_a_minute(executed):
    nb, seconds = executed
    assert seconds < 60, seconds
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert all(o.output_type != "error" for o in cell.outputs), cell.source[:60]


def test_pypto_cells_show_the_workbench_with_a_static_fallback(executed):
    nb, _ = executed
    code = [c for c in nb.cells if c.cell_type == "code"]
    first = [o for o in code[1].outputs if o.output_type == "execute_result"][0]
    assert {WIDGET, "text/html", "text/plain"} <= set(first.data)
    assert "<script" not in first.data["text/html"]
    assert any("block 0 done" in o.get("text", "") for o in code[1].outputs)
    static = [o for o in code[2].outputs if o.output_type == "execute_result"][0]
    assert WIDGET not in static.data and "Diff: what auto_mutex changed" in static.data[
        "text/html"]
    trace = [o for o in code[4].outputs if o.output_type == "execute_result"][0]
    assert "application/vnd.plotly.v1+json" in trace.data


def test_outputs_and_widget_state_stay_small(executed):
    nb, _ = executed
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            assert len(json.dumps(output)) < 1_000_000
    state = nb.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json")
    assert state and len(json.dumps(state)) < 5_000_000
