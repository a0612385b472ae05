"""The Workbench in a real JupyterLab and a real Notebook 7 in a real browser (anchors R4): start
the server on loopback with its own root, settings, workspaces and runtime dirs, open the demo
notebook with Playwright driving Debian's chromium, run all cells from the Run menu, and check
the DOM: the Workbench tabs and rendered plotly figures; in JupyterLab, a click on a timeline
event selects its source line. Saves tests/artifacts/workbench.png (and
workbench-notebook7.png). The servers are always shut down (REST shutdown, then the process
it started). Skipped only without chromium."""
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
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "workbench_demo.ipynb"
#: the tutorial the browser also runs top to bottom (issue: tutorials run in a real JupyterLab)
TUTORIAL = ROOT / "notebooks" / "05_tile_groups_auto_mutex.ipynb"
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

pytestmark = [pytest.mark.browser, pytest.mark.serial]


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


#: app → (module to run, its settings-dir option prefix, URL path of a notebook)
APPS = {"lab": ("jupyterlab", "LabApp", "lab/tree"),
        "notebook7": ("notebook", "JupyterNotebookApp", "notebooks")}


def _serve(tmp_path_factory, app: str, ci_notebook):
    """A server of `app` serving a copy of the demo notebook: yields the notebook's URL."""
    if shutil.which("chromium") is None:
        pytest.skip("Debian's chromium is not installed (./dev test installs it)")
    module, config, path = APPS[app]
    home = tmp_path_factory.mktemp(app)
    root, settings = home / "root", home / "settings" / "@jupyterlab"
    for d in (root, home / "workspaces", home / "runtime", home / "ipython"):
        d.mkdir(parents=True, exist_ok=True)
    shutil.copy(NOTEBOOK, root / NOTEBOOK.name)
    import nbformat

    nbformat.write(ci_notebook(nbformat.read(TUTORIAL, as_version=4)), root / TUTORIAL.name)
    for plugin, values in SETTINGS.items():
        target = settings / f"{plugin}.jupyterlab-settings"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(values))
    port = _free_port()
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
           "IPYTHONDIR": str(home / "ipython"), "PYPTOPRO_BACKEND": "sim"}
    cmd = [sys.executable, "-m", module, "--no-browser", "--ip=127.0.0.1",
           f"--port={port}", "--port-retries=0", f"--IdentityProvider.token={TOKEN}",
           f"--ServerApp.root_dir={root}"]
    # Notebook 7's front end reads its settings through JupyterLab's server extension (LabApp)
    for app_config in dict.fromkeys((config, "LabApp")):
        cmd += [f"--{app_config}.workspaces_dir={home / 'workspaces'}",
                f"--{app_config}.user_settings_dir={home / 'settings'}"]
    if hasattr(os, "getuid") and os.getuid() == 0:
        cmd.append("--allow-root")
    log = open(home / "server.log", "w")  # noqa: SIM115 (closed in the finalizer)
    proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(base, proc, time.monotonic() + 60)
        yield base, f"{base}/{path}/{NOTEBOOK.name}?token={TOKEN}"
    finally:
        _stop(base, proc)
        log.close()


@pytest.fixture(scope="module")
def lab(tmp_path_factory, ci_notebook):
    yield from _serve(tmp_path_factory, "lab", ci_notebook)


@pytest.fixture(scope="module")
def notebook7(tmp_path_factory, ci_notebook):
    yield from _serve(tmp_path_factory, "notebook7", ci_notebook)


def _accept_kernel_dialog(page) -> None:
    """Some set-ups still ask which kernel to start: take the preselected one."""
    try:
        page.wait_for_selector(".jp-Dialog .jp-mod-accept", timeout=5_000).click()
    except Exception:  # noqa: BLE001  (no dialog: nothing to do)
        pass


def _kernels_idle(base: str) -> bool:
    kernels = json.loads(_get(f"{base}/api/kernels?token={TOKEN}"))
    return bool(kernels) and all(k["execution_state"] == "idle" for k in kernels)


def _open(page, base: str, url: str) -> None:
    """Open a notebook and wait until its kernel is idle."""
    page.goto(url)
    page.wait_for_selector(".jp-Notebook")
    _accept_kernel_dialog(page)
    deadline = time.monotonic() + 60
    while not _kernels_idle(base):
        assert time.monotonic() < deadline, "the kernel did not start"
        page.wait_for_timeout(500)


def _run_all(page, base: str, url: str):
    """Open the notebook, wait for its kernel, run every cell; returns the Workbench output."""
    _open(page, base, url)
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
    page.wait_for_function(ALL_RAN, timeout=90_000)
    page.wait_for_selector(".js-plotly-plot", timeout=30_000)
    workbench = page.locator(".jp-CodeCell").nth(1).locator(".jp-OutputArea-output").filter(
        has=page.locator(".lm-TabBar-tab")).first
    tabs = workbench.locator(".lm-TabBar-tab")
    tabs.first.wait_for()
    assert [t.strip() for t in tabs.all_inner_texts()] == TABS
    workbench.locator(".js-plotly-plot").first.wait_for()
    assert workbench.locator(".js-plotly-plot .scatterlayer, .gl-container").count() >= 1
    assert page.locator(".jp-OutputArea-output .jp-RenderedText[data-mime-type="
                        "'application/vnd.jupyter.stderr']").count() == 0
    assert page.locator("text=Traceback").count() == 0
    # the static fallback output is hidden while the live Workbench is on the page
    fallback = page.locator("[class$='-fallback']").first
    assert fallback.count() == 1 and not fallback.is_visible()
    return workbench


def _click_selects_the_line(page, workbench, widest_event) -> None:
    plot = workbench.locator(".js-plotly-plot").first
    plot.scroll_into_view_if_needed()
    target = plot.evaluate(widest_event)
    assert target is not None and target["w"] >= 2, target
    page.mouse.move(target["x"], target["y"])
    page.wait_for_timeout(300)
    page.mouse.click(target["x"], target["y"])
    line = int(target["line"])
    picked = workbench.locator(".pypto-mono select").first  # the line picker
    page.wait_for_function("([el, line]) => el.selectedIndex > 0 && "
                           "el.options[el.selectedIndex].text.trim().startsWith(String(line))",
                           arg=[picked.element_handle(), line], timeout=15_000)
    workbench.locator(".legendtext", has_text="selected line").first.wait_for(timeout=15_000)


def _browse(url_of, check, screenshot: str) -> None:
    from playwright.sync_api import sync_playwright

    started = time.monotonic()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"),
                                    args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(30_000)
        try:
            workbench = _run_all(page, *url_of)
            check(page, workbench)
            page.wait_for_timeout(1000)  # let WebGL finish drawing before the picture
            workbench.scroll_into_view_if_needed()
            workbench.screenshot(path=str(ARTIFACTS / screenshot))
        except Exception:
            page.screenshot(path=str(ARTIFACTS / screenshot.replace(".png", "-failure.png")),
                            full_page=True)
            raise
        finally:
            browser.close()
    assert time.monotonic() - started < 150
    assert (ARTIFACTS / screenshot).stat().st_size > 10_000


def test_workbench_renders_in_jupyterlab_and_a_click_selects_the_line(lab, widest_event):
    def check(page, workbench):
        assert page.locator(".js-plotly-plot").count() >= 3  # timeline, compare, trace
        _click_selects_the_line(page, workbench, widest_event)

    _browse(lab, check, "workbench.png")


def test_workbench_renders_in_notebook7(notebook7):
    def check(page, workbench):
        assert "/notebooks/" in page.url and page.locator(".jp-LabShell").count() == 0
        assert page.locator(".js-plotly-plot").count() >= 3

    _browse(notebook7, check, "workbench-notebook7.png")


def test_tutorial_runs_in_jupyterlab(lab):
    """Tutorial 5 (CI shapes) top to bottom: every cell runs, its Workbench and figures render."""
    from playwright.sync_api import sync_playwright

    base, demo_url = lab
    # `reset`: a fresh workspace, so the demo notebook an earlier test opened is not restored
    # beside the tutorial (its unexecuted cells would keep ALL_RAN false)
    url = demo_url.replace(NOTEBOOK.name, TUTORIAL.name) + "&reset"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"),
                                    args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(30_000)
        try:
            page.goto(url)
            page.wait_for_selector(".jp-Notebook")
            _accept_kernel_dialog(page)
            page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
            page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
            page.wait_for_function(ALL_RAN, timeout=240_000)
            page.wait_for_selector(".js-plotly-plot", timeout=30_000)
            page.locator(".lm-TabBar-tab", has_text="Passes").first.wait_for()
            page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot').length"
                                   " >= 2")  # the comparison and the roofline
            assert page.locator("text=Traceback").count() == 0
            page.screenshot(path=str(ARTIFACTS / "tutorial05.png"), full_page=False)
        finally:
            browser.close()


#: the README's add, `YS` the address of its second group
ADD = """@pl.jit
def add_kernel(x: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP16],
               y: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP16],
               z: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP16]):
    with pl.section_vector():
        xs = pl.make_tile_group(type=tt, addrs=0x00000, mutex_ids=[0, 1])
        ys = pl.make_tile_group(type=tt, addrs=YS, mutex_ids=[2, 3])
        zs = pl.make_tile_group(type=tt, addrs=0x20000, mutex_ids=[30, 31])
        for i in pl.range(pl.get_block_idx(), x.shape[0] // 128, pl.get_block_num()):
            for j in pl.range(x.shape[1] // 128):
                a, b, c = xs.next(), ys.next(), zs.next()
                pl.load_tile(a, x, [i, j])
                pl.load_tile(b, y, [i, j])
                pl.add(c, a, b)
                pl.store_tile(z, c, [i, j])
"""
GOOD, SHARED = ADD.replace("YS", "0x10000"), ADD.replace("YS", "0x08000")
#: the checks notebook: every cell is run on its own (Shift+Enter), so the expected failures do
#: not stop the rest
CHECK_CELLS = [
    "%load_ext pypto_lab\nimport torch\nimport pypto_lab\nimport pypto_pro.language as pl\n"
    "from pypto_pro.examples import tunable\n"
    "tt = pl.TileType([128, 128], pl.DT_FP16, pl.MemorySpace.Vec)\n"
    "x = torch.randn(256, 256, dtype=torch.float16); y = torch.randn_like(x)\n"
    "z = torch.zeros_like(x)",
    # ys moved onto xs's second slot: a compile error naming both groups
    '%%pypto --launch "add_kernel(x, y, z)" --block-dim 2\n' + SHARED,
    # a wrong reference: the result is shown, then the cell fails with the first mismatches
    '%%pypto --launch "add_kernel(x, y, z)" --block-dim 2 --ref "x - y" --show run\n' + GOOD,
    '%%pypto --launch "add_kernel(x, y, z)" --block-dim 2 -o two\n' + GOOD,
    '%%pypto --launch "add_kernel(x, y, z)" --block-dim 1 -o one --show run\n' + GOOD,
    "pypto_lab.compare(one, two, labels=('one block', 'two blocks'))",
    "w = pypto_lab.sweep_widget(tunable.make_add, {'depth': [1, 2], 'blocks': [2]},\n"
    "                           lambda **p: tunable.add_inputs(256, 256),\n"
    "                           tunable.add_reference, executor='inline')\nw",
]

#: JS `(gd) => {x, y}`: the page position of the first marker of a plotly graph
HAS_MARKER = """(gd) => (gd._fullData || []).some(
  (d) => d.mode && d.mode.includes('markers') && d.x && d.x.length)"""
FIRST_MARKER = """(gd) => {
  const fl = gd._fullLayout, box = gd.getBoundingClientRect();
  const t = gd._fullData.find((d) => d.mode && d.mode.includes('markers') && d.x.length);
  const xa = fl[t.xaxis === 'x' ? 'xaxis' : 'xaxis' + t.xaxis.slice(1)];
  const ya = fl[t.yaxis === 'y' ? 'yaxis' : 'yaxis' + t.yaxis.slice(1)];
  const point = gd.calcdata[t.index][0];  // calc coordinates: a category is its index
  return {x: box.left + xa._offset + xa.c2p(point.x), y: box.top + ya._offset + ya.c2p(point.y)};
}"""


def _run_cell(page, index: int, timeout: int = 120_000) -> Any:
    """Select code cell `index`, run it (Shift+Enter) and wait for its execution count."""
    cell = page.locator(".jp-CodeCell").nth(index)
    cell.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")
    page.wait_for_function(
        "(el) => /\\[\\d+\\]/.test(el.querySelector('.jp-InputArea-prompt').textContent)",
        arg=cell.element_handle(), timeout=timeout)
    return cell


def test_errors_reference_compare_sweep_and_source_clicks_in_jupyterlab(lab):
    """The overlap error, a --ref FAIL with its heatmap, compare, a sweep drill-in and a click
    on a source line, each in a real JupyterLab."""
    import nbformat
    from playwright.sync_api import sync_playwright

    base, demo_url = lab
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CHECK_CELLS])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    name = "browser_checks.ipynb"
    body = json.dumps({"type": "notebook", "content": json.loads(nbformat.writes(nb))})
    request = urllib.request.Request(f"{base}/api/contents/{name}?token={TOKEN}",
                                     data=body.encode(), method="PUT")
    urllib.request.urlopen(request, timeout=10)  # noqa: S310 (loopback)
    url = demo_url.replace(NOTEBOOK.name, name) + "&reset"
    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"),
                                    args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(30_000)
        page.on("pageerror", lambda e: errors.append(str(e)))
        try:
            _open(page, base, url)
            _run_cell(page, 0)
            overlap = _run_cell(page, 1)
            text = overlap.locator(".jp-OutputArea-output").last.inner_text()
            assert "InvalidTile while compiling the %%pypto cell in pass verify_memory" in text
            assert "group xs slot 1 [0x8000, 0x10000)" in text
            assert "group ys slot 0 [0x8000, 0x10000)" in text and "addrs=0x10000" in text
            mismatch = _run_cell(page, 2)
            mismatch.locator("img.pypto-mismatch:visible").first.wait_for()  # (not the
            # hidden static copy the live Workbench stands in for)
            text = mismatch.locator(".jp-OutputArea").inner_text()
            assert "ReferenceMismatch" in text and "first mismatches (row-major):" in text
            two = _run_cell(page, 3)
            _run_cell(page, 4)
            compared = _run_cell(page, 5)
            compared.locator(".js-plotly-plot:visible").first.wait_for()
            assert "summed over all cores of the kind" in compared.inner_text()
            # a click on a source line selects it in the line picker
            two.locator(".lm-TabBar-tab", has_text="Source").first.click()
            line = two.locator("[data-pypto-line]:visible").filter(
                has_text="pl.add(c, a, b)").first
            number = int(line.get_attribute("data-pypto-line"))
            line.click()
            picker = two.locator(".pypto-mono select").first
            page.wait_for_function(
                "([el, n]) => el.selectedIndex > 0 && "
                "el.options[el.selectedIndex].text.trim().startsWith(String(n))",
                arg=[picker.element_handle(), number], timeout=15_000)
            # a sweep: run it, click its first marker, the point opens as a tabbed Workbench
            sweep = _run_cell(page, 6)
            sweep.locator("button", has_text="Run sweep").click()
            plot = sweep.locator(".js-plotly-plot").first
            plot.wait_for(timeout=120_000)
            plot.scroll_into_view_if_needed()
            # a FigureWidget may draw its plot before its traces arrive (seen under load)
            page.wait_for_function(HAS_MARKER, arg=plot.element_handle(), timeout=120_000)
            target = plot.evaluate(FIRST_MARKER)
            page.mouse.move(target["x"], target["y"])  # plotly clicks the hovered point
            page.wait_for_timeout(500)
            page.mouse.click(target["x"], target["y"])
            drilled = sweep.locator(".lm-TabBar-tab", has_text="Timeline")
            drilled.first.wait_for(timeout=120_000)
            assert sweep.locator("text=point 0:").count() >= 1
            page.screenshot(path=str(ARTIFACTS / "browser-checks.png"), full_page=False)
        except Exception:
            page.screenshot(path=str(ARTIFACTS / "browser-checks-failure.png"), full_page=True)
            raise
        finally:
            browser.close()
    assert not [e for e in errors if "anywidget" in e or "WebGL" in e], errors
