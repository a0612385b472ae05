"""The Workbench in a real JupyterLab in a real browser (anchors R4): start JupyterLab on
loopback with its own root, settings, workspaces and runtime dirs, open the demo notebook with
Playwright driving Debian's chromium, run all cells from the Run menu, and check the DOM: the
Workbench tabs and rendered plotly figures. Saves tests/artifacts/workbench.png. The server is
always shut down (REST shutdown, then the process it started). Skipped only without chromium."""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "workbench_demo.ipynb"
ARTIFACTS = ROOT / "tests" / "artifacts"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
TABS = ["Source", "Passes", "CCE", "Run", "Blocks", "Timeline", "Roofline"]
TOKEN = "pypto-lab-browser-test"
#: user settings: no news toast over the screenshot; every cell in the DOM (no windowing)
SETTINGS = {"apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
            "notebook-extension/tracker": {"windowingMode": "none",
                                           "autoStartDefaultKernel": True}}
ALL_RAN = ("() => { const p = [...document.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt')];"
           " return p.length > 0 && p.every(e => /\\[\\d+\\]/.test(e.textContent)); }")

pytestmark = pytest.mark.browser


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str, timeout: float = 2.0) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 (loopback)
        return response.read()


def _wait_ready(base: str, proc: subprocess.Popen, deadline: float) -> None:
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"jupyter lab exited with {proc.returncode}")
        try:
            _get(f"{base}/api/status?token={TOKEN}")
            return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError("jupyter lab did not start within the deadline")


def _stop(base: str, proc: subprocess.Popen) -> None:
    """REST shutdown first (kernels stop cleanly), then the server process we started."""
    if proc.poll() is None:
        try:
            request = urllib.request.Request(f"{base}/api/shutdown?token={TOKEN}", method="POST")
            urllib.request.urlopen(request, timeout=5)  # noqa: S310 (loopback)
        except OSError:
            pass
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server serving a copy of the demo notebook: yields its base URL."""
    if shutil.which("chromium") is None:
        pytest.skip("Debian's chromium is not installed (./dev test installs it)")
    home = tmp_path_factory.mktemp("lab")
    root, settings = home / "root", home / "settings" / "@jupyterlab"
    for d in (root, home / "workspaces", home / "runtime", home / "ipython"):
        d.mkdir(parents=True, exist_ok=True)
    shutil.copy(NOTEBOOK, root / NOTEBOOK.name)
    for plugin, values in SETTINGS.items():
        path = settings / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    port = _free_port()
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
           "IPYTHONDIR": str(home / "ipython"), "PYPTOPRO_BACKEND": "sim"}
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1",
           f"--port={port}", "--port-retries=0", f"--IdentityProvider.token={TOKEN}",
           f"--ServerApp.root_dir={root}", f"--LabApp.workspaces_dir={home / 'workspaces'}",
           f"--LabApp.user_settings_dir={home / 'settings'}"]
    if hasattr(os, "getuid") and os.getuid() == 0:
        cmd.append("--allow-root")
    log = open(home / "server.log", "w")  # noqa: SIM115 (closed in the finalizer)
    proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(base, proc, time.monotonic() + 60)
        yield base
    finally:
        _stop(base, proc)
        log.close()


def _accept_kernel_dialog(page) -> None:
    """Some set-ups still ask which kernel to start: take the preselected one."""
    try:
        page.wait_for_selector(".jp-Dialog .jp-mod-accept", timeout=5_000).click()
    except Exception:  # noqa: BLE001  (no dialog: nothing to do)
        pass


def test_workbench_renders_in_jupyterlab(lab):
    from playwright.sync_api import sync_playwright

    started = time.monotonic()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"),
                                    args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(30_000)
            page.goto(f"{lab}/lab/tree/{NOTEBOOK.name}?token={TOKEN}")
            page.wait_for_selector(".jp-Notebook")
            _accept_kernel_dialog(page)
            page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']",
                                   timeout=60_000)
            page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
            page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
            code_cells = page.locator(".jp-CodeCell")
            page.wait_for_function(ALL_RAN, timeout=90_000)
            page.wait_for_selector(".js-plotly-plot", timeout=30_000)
            workbench = code_cells.nth(1).locator(".jp-OutputArea-executeResult").first
            tabs = workbench.locator(".lm-TabBar-tab")
            tabs.first.wait_for()
            labels = [t.strip() for t in tabs.all_inner_texts()]
            assert labels == TABS
            timeline = workbench.locator(".js-plotly-plot")
            timeline.first.wait_for()
            assert workbench.locator(".js-plotly-plot .scatterlayer, .gl-container").count() >= 1
            assert page.locator(".jp-OutputArea-output .jp-RenderedText[data-mime-type="
                                "'application/vnd.jupyter.stderr']").count() == 0
            assert page.locator("text=Traceback").count() == 0
            page.wait_for_timeout(1000)  # let WebGL finish drawing before the picture
            workbench.scroll_into_view_if_needed()
            workbench.screenshot(path=str(ARTIFACTS / "workbench.png"))
            assert page.locator(".js-plotly-plot").count() >= 3  # timeline, compare, trace
        except Exception:
            page.screenshot(path=str(ARTIFACTS / "workbench-failure.png"), full_page=True)
            raise
        finally:
            browser.close()
    assert time.monotonic() - started < 120
    assert (ARTIFACTS / "workbench.png").stat().st_size > 10_000
