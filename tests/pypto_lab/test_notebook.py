"""The demo notebook executes headlessly with nbclient (anchors R2): every cell runs, the
`%%pypto` cells produce the Workbench plus a static fallback, and it stays small and fast.
Exported with nbconvert (widget state saved), the HTML shows the static view with no network."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
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


def test_runs_without_errors(executed):
    nb, _ = executed
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


def test_nbconvert_html_with_widget_state_shows_the_static_view_offline(executed, tmp_path):
    nb, _ = executed
    path = tmp_path / "demo.ipynb"
    nbformat.write(nb, path)
    proc = subprocess.run([sys.executable, "-m", "nbconvert", "--to", "html", str(path)],
                          capture_output=True, text=True, timeout=180, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    html = (tmp_path / "demo.html").read_text()
    assert "application/vnd.jupyter.widget-state+json" in html  # the widgets were saved
    fallbacks = re.findall(r"<div class=['\"](pypto-cell[\w-]*)-fallback['\"]>", html)
    assert fallbacks, "no static fallback in the exported page"
    for c in fallbacks:  # the widget view won the bundle: only the fallback is static here
        assert not re.search(f"class=['\"]{c}-static", html)
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("Debian's chromium is not installed: the page was not opened")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--headless", "--no-sandbox"])
        try:
            page = browser.new_page()
            page.route("**/*", lambda route: route.continue_()
                       if route.request.url.startswith("file:") else route.abort())
            page.goto((tmp_path / "demo.html").as_uri(), wait_until="load")
            shown = page.locator(f".{fallbacks[0]}-fallback")
            assert shown.is_visible()
            assert "add_kernel" in shown.inner_text() and "Source" in shown.inner_text()
        finally:
            browser.close()
