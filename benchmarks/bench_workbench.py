"""Workbench benchmark: `%%pypto` overhead on a real launch, and the timeline at 200 000 events.

1. `%%pypto` on the double-buffered vector add at 4096×4096 (64 blocks) in an in-process IPython
   shell: the magic's wall time against the simulation's own wall time (target: magic ≤
   simulation + 1.5 s), plus the time to format the result's display bundle (target ≤ 0.4 s;
   with the highlighted code not yet kept, as after an edit: its memo is cleared first) and to
   render its static HTML a second time (what a notebook shows beside the Workbench). Medians
   of `--repeat` fresh runs of the cell (a full garbage collection can land in any one).
2. A synthetic 200 000-event trace (8 AIV cores × 3 pipes, the op / stall / flag mix of the
   vector add, tiled in time): timeline figure build time, level of detail, the size of its
   plotly JSON (target ≤ 5 MB; it includes the per-lane hover layers that make every point of
   every segment hoverable and clickable) and the time Debian's chromium takes to draw it with
   plotly.js (`Plotly.newPlot` until the plot's promise resolves; target ≤ 2 s). Skipped
   without chromium. The machine's load average is printed with the numbers: timings on a
   loaded machine are inflated.

Run: `.venv/bin/python benchmarks/bench_workbench.py [--events N] [--no-browser]`.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]

ADD_CELL = '''%%pypto --launch "add_kernel(x, y, z)" --block-dim 64 --static
from pypto_pro.examples.vector_add import make_add_kernel
add_kernel = make_add_kernel(2)
'''


def bench_magic(size: int, repeat: int = 3) -> dict:
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    from pypto_lab.views.html import _highlighted

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "pypto_lab")
    shell.run_cell(f"from pypto_pro.examples import vector_add\n"
                   f"x, y, z = vector_add.make_inputs({size}, {size})")
    line, body = ADD_CELL.split("\n", 1)
    runs = []
    with capture_output():
        shell.run_cell_magic("pypto", line.split(" ", 1)[1] + " -o warm", body)  # warm-up
        for _ in range(repeat):
            t0 = time.perf_counter()
            result = shell.run_cell_magic("pypto", line.split(" ", 1)[1] + " --force", body)
            magic = time.perf_counter() - t0
            _highlighted.cache_clear()  # (as after an edit: no highlighted code kept)
            t1 = time.perf_counter()
            bundle = result._repr_mimebundle_()
            display = time.perf_counter() - t1
            t2 = time.perf_counter()
            result.fallback_bundle()
            again = time.perf_counter() - t2
            runs.append((magic, result.launches[-1].wall_seconds, display, again))
    launch = result.launches[-1]
    magic, sim, display, again = (statistics.median(r[k] for r in runs) for k in range(4))
    return {"magic_s": magic, "simulation_s": sim, "display_s": display, "again_s": again,
            "overhead_s": statistics.median(r[0] - r[1] for r in runs), "repeat": repeat,
            "events": len(launch.trace.events),
            "bundle_bytes": len(json.dumps(bundle, default=str))}


def synthetic_trace(n_events: int, cores: int = 8):
    """A vector-add-like trace: per core, repeated MTE2 load / V add / MTE3 store rounds with
    get_buf / rls_buf, mutex stalls and a set → wait flag pair, laid back to back in time."""
    from pypto_pro.trace import Trace, TraceMeta

    per_round = 10  # events per core per round
    rounds = max(1, n_events // (per_round * cores))
    r = np.arange(rounds, dtype=np.int64)
    rows = []
    for core in range(cores):
        base = r * 2200 + core * 7
        spec = [  # pipe, kind, op, ir_op, start offset, duration, bytes, reason, role
            ("MTE2", "sync", "get_buf", "system.mutex_lock_dyn", 0, 1, 0, "", ""),
            ("MTE2", "instr", "TLOAD", "block.load", 1, 1050, 32768, "", ""),
            ("MTE2", "instr", "TLOAD", "block.load", 1051, 1050, 32768, "", ""),
            ("MTE2", "sync", "rls_buf", "system.mutex_unlock_dyn", 2101, 1, 0, "", ""),
            ("MTE2", "sync", "set_flag", "system.sync_src", 2102, 1, 0, "", "set"),
            ("V", "stall", "wait flag", "system.sync_dst", 3, 2099, 0, "flag", ""),
            ("V", "sync", "wait_flag", "system.sync_dst", 2103, 1, 0, "", "wait"),
            ("V", "instr", "TADD", "block.add", 2104, 54, 98304, "", ""),
            ("MTE3", "stall", "wait mutex", "system.mutex_lock_dyn", 5, 2150, 0, "mutex", ""),
            ("MTE3", "instr", "TSTORE", "block.store", 2158, 870, 32768, "", ""),
        ]
        for pipe, kind, op, ir_op, off, dur, nbytes, reason, role in spec:
            flow = core * rounds + r if role else np.full(rounds, -1)
            rows.append(pd.DataFrame({
                "launch": 0, "core": core, "core_kind": "AIV", "block": core, "subblock": 0,
                "pipe": pipe, "kind": kind, "op": op, "ir_op": ir_op, "file": "add.py",
                "line": 20 + len(rows) % 10, "start": base + off, "end": base + off + dur,
                "bytes": nbytes, "flops": 16384 if op == "TADD" else 0,
                "sync_ids": "flag MTE2->V #0" if role else "", "stall_reason": reason,
                "flow_id": flow, "flow_role": role}))
    events = pd.concat(rows, ignore_index=True)
    meta = TraceMeta("synthetic_add", "sim", "Ascend950PR_9589", 1650.0, cores, "aiv")
    return Trace(events, meta)


def bench_timeline(n_events: int) -> tuple[dict, dict]:
    from pypto_lab.figures import figure_json
    from pypto_lab.views.timeline import timeline_data, timeline_figure

    trace = synthetic_trace(n_events)
    t0 = time.perf_counter()
    fig = timeline_figure(trace, cores=tuple(range(8)))
    build = time.perf_counter() - t0
    t1 = time.perf_counter()
    payload = figure_json(fig)
    text = json.dumps(payload)
    serialise = time.perf_counter() - t1
    data = timeline_data(trace, cores=tuple(range(8)))
    return ({"events": len(trace.events), "build_s": build, "serialise_s": serialise,
             "json_bytes": len(text), "segments": len(data.segments), "lod": data.lod},
            payload)


RENDER_PAGE = """<!doctype html><html><head><meta charset='utf-8'>
<script>{plotlyjs}</script></head><body><div id='plot' style='width:1200px'></div>
</body></html>"""

RENDER = """(fig) => new Promise(done => {
  Plotly.purge('plot');
  const t0 = performance.now();
  Plotly.newPlot('plot', fig.data, fig.layout).then(
    () => requestAnimationFrame(() => done(performance.now() - t0)));
})"""


def bench_browser(payload: dict, repeat: int = 3) -> dict | None:
    """Median / best time of `Plotly.newPlot` on the figure, plotly.js already loaded."""
    chromium = shutil.which("chromium")
    if chromium is None:
        return None
    from playwright.sync_api import sync_playwright
    from plotly.offline import get_plotlyjs

    with tempfile.TemporaryDirectory() as tmp:
        page_path = Path(tmp) / "timeline.html"
        page_path.write_text(RENDER_PAGE.format(plotlyjs=get_plotlyjs()))
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1300, "height": 900})
            page.goto(page_path.as_uri())
            times = [page.evaluate(RENDER, payload) / 1e3 for _ in range(repeat)]
            page.screenshot(path=str(Path(tempfile.gettempdir()) / "bench_timeline.png"))
            browser.close()
    return {"render_median_s": statistics.median(times), "render_best_s": min(times)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=3, help="fresh runs of the %%%%pypto cell")
    ap.add_argument("--no-browser", action="store_true")
    args = ap.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    magic = bench_magic(args.size, args.repeat)
    print(f"%%pypto vector add {args.size}x{args.size}, 64 blocks, {magic['events']:,} events "
          f"(medians of {magic['repeat']} runs):")
    print(f"  magic {magic['magic_s']:.2f} s = simulation {magic['simulation_s']:.2f} s + "
          f"{magic['overhead_s']:.2f} s (target <= +1.5 s); display bundle "
          f"{magic['display_s']:.2f} s (target <= 0.4 s), {magic['bundle_bytes'] / 1e6:.2f} MB; "
          f"static HTML again {magic['again_s']:.2f} s")
    stats, payload = bench_timeline(args.events)
    print(f"timeline of {stats['events']:,} events: built in {stats['build_s']:.2f} s, "
          f"serialised in {stats['serialise_s']:.2f} s, {stats['json_bytes'] / 1e6:.2f} MB "
          f"JSON (target <= 5 MB), {stats['segments']:,} {stats['lod']} segments")
    if not args.no_browser:
        browser = bench_browser(payload)
        if browser is None:
            print("browser render: skipped (no chromium)")
        else:
            print(f"browser render (chromium, Plotly.newPlot, 3 runs): median "
                  f"{browser['render_median_s']:.2f} s, best {browser['render_best_s']:.2f} s "
                  f"(target <= 2 s)")
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
