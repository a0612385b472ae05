"""Exports (self-contained HTML report, Perfetto JSON), `compare`, the plain `run_cell` API and
the `python -m pypto_lab` CLI."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import pypto_lab

ROOT = Path(__file__).resolve().parents[2]


def test_report_is_self_contained(add_result, tmp_path):
    path = add_result.export(tmp_path / "report.html")
    html = path.read_text()
    assert html.startswith("<!doctype html>")
    assert not re.search(r"<script[^>]+src=", html) and "<link" not in html
    assert html.count("id='pypto-plotly-gz'") == 1  # the library is embedded once, packed
    page = re.sub(r"id='pypto-plotly-gz'>[^<]*</script>", "", html)
    assert "cdn" not in page.lower() and "http" not in page.lower()
    assert len(html) < 2_600_000  # plotly.js packed: ~2 MB, the rest a few hundred KB
    for heading in ("<h2>Timeline</h2>", "<h2>Blocks</h2>", "<h2>Roofline</h2>"):
        assert heading in html
    assert "data-halo='pypto-report-timeline'" in html
    lines = re.search(r"id='pypto-report-timeline-lines'>(.*?)</script>", html).group(1)
    assert json.loads(lines)  # per-line halo data for the linked timeline
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]  # no temp file left


def test_clicking_a_report_timeline_event_picks_its_source_line(add_result, tmp_path,
                                                                 widest_event):
    import shutil

    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("Debian's chromium is not installed")
    from playwright.sync_api import sync_playwright

    path = add_result.export(tmp_path / "report.html")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--headless", "--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1300, "height": 900})
            page.goto(path.as_uri())
            page.wait_for_function("() => document.body.dataset.plotted === '3'")
            plot = page.locator("#pypto-report-timeline")
            plot.scroll_into_view_if_needed()
            target = plot.evaluate(widest_event)
            assert target is not None and target["w"] >= 2, target
            page.mouse.move(target["x"], target["y"])
            page.mouse.click(target["x"], target["y"])
            checked = page.evaluate("() => { const r = document.querySelector("
                                    "'input[type=radio][data-halo]:checked'); "
                                    "return r ? Number(r.dataset.line) : null; }")
            assert checked == target["line"]
            halo = plot.evaluate("(gd) => gd.data[0].x.length")
            assert halo > 0  # the clicked line's events are haloed
        finally:
            browser.close()


def test_perfetto_and_msprof_exports(add_result, tmp_path):
    doc = json.loads(add_result.export(tmp_path / "t.json").read_text())
    assert {"traceEvents", "displayTimeUnit"} <= set(doc)
    names = {e["args"]["name"] for e in doc["traceEvents"] if e.get("name") == "thread_name"}
    assert {"MTE2", "V", "MTE3"} <= names
    assert add_result.export(tmp_path / "t.msprof.json").exists()
    with pytest.raises(ValueError, match="use .html"):
        add_result.export(tmp_path / "t.txt")


def test_compare_two_results(add_result, flash_result):
    cmp = pypto_lab.compare(add_result, flash_result, labels=("add", "fa"))
    text = cmp.summary()
    assert "add: add_kernel" in text and "fa: flash_attention_kernel" in text
    pipes = cmp.pipe_table()
    assert {"core_kind", "pipe", "add", "fa", "delta_us", "ratio"} <= set(pipes.columns)
    fig = cmp.figure()
    assert fig.layout.xaxis2.matches == "x" or fig.layout.xaxis.matches == "x2"
    assert fig.layout.yaxis.title.text == "<b>add</b>"
    assert fig.layout.yaxis2.title.text == "<b>fa</b>"
    bundle = cmp._repr_mimebundle_()
    assert "Final IR diff" in bundle["text/html"]
    assert "application/vnd.plotly.v1+json" in bundle
    assert "+++ fa: flash_attention_kernel" in cmp.ir_diff()


def test_run_cell_api_without_ipython():
    result = pypto_lab.run_cell(
        "import pypto_pro.language as pl\n"
        "@pl.jit\n"
        "def only_add(x: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP16],\n"
        "             y: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP16]):\n"
        "    with pl.section_vector():\n"
        "        t = pl.TileType([128, 128], pl.DT_FP16, pl.MemorySpace.Vec)\n"
        "        a = pl.make_tile(t, addr=0)\n"
        "        pl.load_tile(a, x, [0, 0])\n"
        "        pl.store_tile(y, a, [0, 0])\n", show="passes,run")
    assert result.options.show == ("passes", "run")
    assert result.kernels[0].name == "only_add" and result.launches == []
    assert set(result._repr_mimebundle_()) == {"text/plain", "text/html",
                                               "application/vnd.pypto.cell+json"}


def test_cli_report_for_an_example(tmp_path):
    out, trace = tmp_path / "va.html", tmp_path / "va.json"
    proc = subprocess.run(
        [sys.executable, "-m", "pypto_lab", "report", "--example", "vector_add", "-o", str(out),
         "--trace", str(trace), "--sanitize"], capture_output=True, text=True, cwd=ROOT,
        timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "check: PASS" in proc.stdout and out.exists() and trace.exists()
    html = out.read_text()
    assert "add_kernel" in html[:6_000_000]
    assert "<summary>Sanitizer" in html and "sanitizer: " in html  # the sanitized launch


def test_cli_help_and_errors():
    proc = subprocess.run([sys.executable, "-m", "pypto_lab", "report", "--help"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0 and "PATH.py::KERNEL" in proc.stdout and "--args" in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "pypto_lab", "report", "missing.py"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 2 and "no such file" in proc.stderr


def _help_examples() -> list[list[str]]:
    """The command lines of `python -m pypto_lab report --help`, as printed."""
    import shlex

    from pypto_lab.cli import USAGE_EXAMPLES

    text = USAGE_EXAMPLES.replace("\\\n", " ")
    return [shlex.split(line)[3:] for line in text.splitlines()
            if line.strip().startswith("python -m pypto_lab")]


def _readme_kernels(path: Path) -> None:
    """kernels.py as the help describes it: the README's add kernel plus make_inputs."""
    readme = (ROOT / "README.md").read_text()
    code = re.search(r"```python\n(.*?)\nx = torch.randn", readme, re.S).group(1)
    path.write_text(code + "\n\ndef make_inputs(rows, cols):\n"
                    "    x = torch.randn(rows, cols, dtype=torch.float16)\n"
                    "    return x, torch.randn_like(x), torch.empty_like(x)\n")


def test_cli_help_examples_work_as_printed(tmp_path, monkeypatch, capsys):
    from pypto_lab.cli import main

    examples = _help_examples()
    assert len(examples) == 3
    _readme_kernels(tmp_path / "kernels.py")
    monkeypatch.chdir(tmp_path)
    for argv in examples:
        assert argv[0] == "report"
        assert main(argv) == 0, (argv, capsys.readouterr().err)
    out = capsys.readouterr().out
    assert "check: PASS z vs reference" in out
    assert out.startswith("kernels.py: 1 kernel(s), 1 launch(es)")  # a file, not a %%pypto cell
    for name in ("report.html", "add.html", "add.json", "compile_only.html"):
        assert (tmp_path / name).stat().st_size > 1000, name


def test_cli_ref_fail_writes_the_report_and_exits_1(tmp_path, monkeypatch, capsys):
    from pypto_lab.cli import main

    _readme_kernels(tmp_path / "kernels.py")
    monkeypatch.chdir(tmp_path)
    code = main(["report", "kernels.py::add_kernel", "--args", "make_inputs(256, 256)",
                 "--block-dim", "2", "--ref", "x - y", "-o", "bad.html"])
    err = capsys.readouterr().err
    assert code == 1 and (tmp_path / "bad.html").exists()
    assert "FAIL z vs reference" in err and "first mismatches (row-major):" in err
    assert "First mismatches of z" in (tmp_path / "bad.html").read_text()


def test_compare_a_renamed_copy_shows_no_ir_difference_and_labels_sums(add_result, add_body):
    renamed = pypto_lab.run_cell(
        "import torch\nimport pypto_pro.language as pl\nTILE = 128\n"
        "tt = pl.TileType([TILE, TILE], pl.DT_FP16, pl.MemorySpace.Vec)\n"
        + add_body.replace("def add_kernel(", "def add_kernel_v2(")
        + "x = torch.randn(256, 256).half(); y = torch.randn_like(x); z = torch.empty_like(x)\n"
          "add_kernel_v2[None, 2](x, y, z)\n")
    cmp = pypto_lab.compare(add_result, renamed, labels=("v1", "v2"))
    assert cmp.ir_diff() == ""  # only the name differs: no noise
    assert "final IR: +0 / -0 lines" in cmp.summary()
    pipes = cmp.pipe_table()
    assert {"v1", "v2", "v1 per core", "v2 per core"} <= set(pipes.columns)
    assert "summed over all cores of the kind" in cmp.to_html()
