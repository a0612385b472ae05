"""The Run view: what ran where, how long it took, whether the output is right, what it printed.

Owns `launch_rows` (one row per launch: kernel, block dim, backend, SoC, argument shapes, wall
time, simulated µs and cycles, check verdict), `compile_rows` (one row per compiled kernel:
type, targets, passes, compile time, cached, codegen) and `run_html` (both tables, the
reference comparison with the first mismatches and a heatmap of where they are, and the printf
output of each block). Static HTML, no widgets.
"""
from __future__ import annotations

from typing import Any

import pandas as pd

from ..records import KernelRecord, LaunchRecord
from .html import chip, esc, fmt_seconds, fmt_us, table


def launch_rows(launches: list[LaunchRecord]) -> pd.DataFrame:
    rows = []
    for i, rec in enumerate(launches):
        meta = rec.trace.meta if rec.trace is not None else None
        timed = rec.trace is not None and len(rec.trace.events) > 0
        rows.append({
            "#": i, "kernel": rec.kernel, "block_dim": rec.block_dim, "backend": rec.backend,
            "soc": meta.soc if meta else "-",
            "args": ", ".join(f"{a.name}: {a.describe()}" for a in rec.args),
            "wall": fmt_seconds(rec.wall_seconds),
            "simulated": fmt_us(rec.sim_us) if timed or rec.trace is None
            else "no instruction to time",
            "cycles": f"{rec.cycles:,}" if timed else "-",
            "check": "-" if rec.check is None else ("PASS" if rec.check.ok else "FAIL"),
        })
    return pd.DataFrame(rows)


def compile_rows(kernels: list[KernelRecord], codegen_available: bool) -> pd.DataFrame:
    rows = []
    for k in kernels:
        codegen = ("unavailable" if not codegen_available else
                   "failed" if k.codegen_error else
                   f"{len(k.artifacts.kernel_cpp.splitlines())} lines" if k.artifacts else "-")
        rows.append({"kernel": k.name, "type": k.kernel_type, "arch": k.arch,
                     "targets": ", ".join(k.targets), "passes": k.pass_count,
                     "compile": "cached" if k.cached else fmt_seconds(k.compile_seconds),
                     "kernel.cpp": codegen})
    return pd.DataFrame(rows)


def printed_html(launch: LaunchRecord) -> str:
    if not launch.printed:
        return ""
    items = "".join(f"<tr><td class='num'>{block}</td><td><pre style='margin:0'>"
                    f"{esc(text.rstrip())}</pre></td></tr>"
                    for block, text in sorted(launch.printed.items()))
    return (f"<h4>printf output of {esc(launch.kernel)} (per block)</h4>"
            f"<table class='t'><thead><tr><th>block</th><th>output</th></tr></thead>"
            f"<tbody>{items}</tbody></table>")


def check_html(check: Any) -> str:
    if check is None:
        return ""
    from .mismatch import mismatch_html

    kind = "ok" if check.ok else "bad"
    return (f"<h4>Correctness</h4><p>{chip('PASS' if check.ok else 'FAIL', kind)} "
            f"{esc(check.output)} vs reference: {esc(check.detail())}</p>"
            + mismatch_html(check))


def run_html(kernels: list[KernelRecord], launches: list[LaunchRecord], codegen_available: bool,
             check: Any = None, notes: list[str] = ()) -> str:
    parts = ["<h3>Compiled</h3>"]
    parts.append(table(compile_rows(kernels, codegen_available), numeric=("passes",))
                 if kernels else "<p class='note'>no kernel compiled</p>")
    parts.append("<h3>Launches</h3>")
    if launches:
        parts.append(table(launch_rows(launches), numeric=("#", "block_dim", "cycles")))
    else:
        parts.append("<p class='note'>The cell made no launch. Launch in the cell body, or "
                     "pass <code>--launch 'kernel(args)' --block-dim N</code>.</p>")
    parts.append(check_html(check))
    for launch in launches:
        parts.append(printed_html(launch))
    if notes:
        parts.append("<ul class='note'>" + "".join(f"<li>{esc(n)}</li>" for n in notes)
                     + "</ul>")
    return "".join(parts)
