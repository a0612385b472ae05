"""Simulator speed against Triton's CPU interpreter (issues 9, 25), side by side in one run.

Workloads, each written in our DSL and in Triton (`triton_kernels.py`) with the same tiling and
checked against torch before timing: vector add FP16 and FP32 4096² in [128, 128] tiles, row
softmax and layernorm FP32 [4096, 1024] in 16-row blocks, matmul FP16→FP32 1024³ and 2048³ with
128×128×128 blocks, fused matmul + row softmax [4096×512]·[512×1024] (ours a Cube+Vector mix
kernel). The DSL kernels are `pypto_pro.examples.vector_add.add_kernel` (FP16 add) and
`dsl_kernels.py` (the rest; the examples' softmax/layernorm stop at 512/256 columns and their
matmul has K = 128).

Columns, first-launch ones first (what a kernel author pays after editing a cell): `sim-cold`,
compile + first launch (the kernel decorated again from its source, as a re-run cell does, then
compiled and launched with timing); `sim-new` / `sim-func-new`, a new launch (the memos cleared
first, as a new shape or kernel pays; compile excluded). Then the relaunch (steady-state)
columns: our simulator with timing (`sim`, values + Trace), on new tensors each launch
(`sim-fresh`), functional-only (`SimBackend(functional_only=True)`), the native backend (g++;
its compile is excluded from the median and reported as the first launch of a small shape),
Triton's interpreter (`TRITON_INTERPRET=1`), torch CPU (default intra-op threads; the simulator
runs torch single-threaded). Per backend: a warm-up launch on a small shape (compiles), one
full-size launch (also warm-up), then the median of `--runs` timed launches (fewer for the
Triton matmul 2048³, stated in the table). Every launch, warm-up or timed, starts from a zeroed
output and is checked against torch afterwards (outside the timed region); a cell with one
launch off by more than the workload's tolerance is marked WRONG. The relaunch columns (`sim`,
`sim-func`, `sim-fresh`) are a kernel's steady state in a loop: `TAPE_WARMUP` more untimed
launches first, in which the replay makes its tape (`sim-fresh`: and moves it to the new
tensors) and times its two ways of running lanes (`sim.fast.tape`); the launch that makes the tape
is reported apart (`tape_s`). Ratios are taken between medians of the same run; the ratios
against Triton use the interpreter's median launch. Instructions/s = tile instructions of the
launch (from the simulator's Trace) / wall. Peak RSS per backend: the process high-water mark,
reset (`/proc/self/clear_refs`) before each backend, so it includes the inputs and everything
the process already holds.

Targets, each marked ✓ or ✗ in the tables: issue 25 (first launch) — new launch ≥ 20× Triton's
interpreter on every workload, compile + first launch ≥ 10×, the 1-tile new launch ≤ 0.5 ms;
issue 9 (relaunch) — relaunch ≥ 20×, functional-only ≤ 5× torch on the FP16 add and ≤ 2× on
the 2048³ matmul, the 1-tile relaunch ≤ 0.5 ms.

Also: per-launch wall of a 1-tile kernel (FP16 add 128×128, block dim 1) on each backend; the
simulator's wall vs problem size (add 1024² … 8192², 8 blocks) and vs block dim (1 … 64 on an
8192×512 add, 256 tiles) with least-squares per-tile / per-block costs; the fidelity rows of
`results/sim_latest.md` (written by `bench_sim_fidelity.py`, read only here).

Run: `./dev bench` (installs the `bench` extra, then runs this), or
`.venv/bin/python benchmarks/bench_triton.py [--runs 5] [--only add_fp16,...] [--skip-native]
[--no-write] [--profile add_fp16,...]`. ≈ 5 min on the quiet 2-core machine, ≈ 20 min under
load (then the results lead with a warning: `load_warning`). `--profile` only prints a
cProfile breakdown (own time per source file, top functions) of one full-size launch per
workload on the simulator, with and without timing;
`--replot` only redraws the chart from `results/latest.json`.
Prints markdown; unless `--no-write` writes `results/latest.md`, `results/latest.json`,
`results/latest.html` (plotly, embedded offline) and this harness's section of `README.md`.
Not a test: nothing here asserts a time.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dsl_kernels as dk
import torch
import triton_kernels as tk  # sets TRITON_INTERPRET=1 before it imports triton

import pypto_pro.language as pl
from pypto_pro.errors import PyptoError
from pypto_pro.examples import load
from pypto_pro.runtime.backends import register_backend, use_backend
from pypto_pro.runtime.backends.sim import SimBackend
from pypto_pro.runtime.kernel_def import JitOptions
from pypto_pro.sim.fast import memo, tape

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
SIM_LATEST = RESULTS / "sim_latest.md"
README = HERE / "README.md"
SECTION = "bench_triton"
BACKENDS = ("sim-cold", "sim-new", "sim-func-new", "sim", "sim-fresh", "sim-func", "native",
            "triton", "torch")
#: "sim-cold": the kernel decorated again (a re-run notebook cell), compiled and launched;
#: "sim-new" / "sim-func-new": the launch with the memos cleared first, as a new shape or
#: kernel runs; "sim": a relaunch (the stream engine replays its kept schedule,
#: `sim.fast.memo`); "sim-fresh": a relaunch on new tensors of the same geometry, made
#: (untimed) before each launch, as a notebook cell that allocates its tensors runs again (the
#: memo rebinds); "sim-func" relaunches replay the executor's ops (`sim.fast.memo`)
LABELS = {"sim-cold": "sim (timing), compile + first launch",
          "sim-new": "sim (timing), new launch", "sim-func-new": "sim functional-only, new launch",
          "sim": "sim (timing), relaunch", "sim-fresh": "sim (timing), relaunch on new tensors",
          "sim-func": "sim functional-only, relaunch", "native": "native",
          "triton": "Triton interpreter", "torch": "torch CPU"}
#: backend → the registered backend it launches on, after clearing the memos
CLEARED = {"sim-new": "sim", "sim-func-new": "sim-func"}
COLD = "sim-cold"  # decorated again before each launch, on the "sim" backend
SHORT = {"sim-cold": "compile+first", "sim-new": "new", "sim-func-new": "func new",
         "sim": "relaunch", "sim-fresh": "new tensors", "sim-func": "func", "native": "native",
         "triton": "Triton", "torch": "torch"}
TIMED = ("sim", "sim-fresh", "sim-new")  # the columns whose Trace the detail table reads
#: Triton's interpreter / ours, at least: first launch (issue 25), relaunch (issue 9)
FIRST_VS_TRITON = {"sim-cold": 10.0, "sim-new": 20.0}
RELAUNCH_VS_TRITON = {"sim": 20.0, "sim-fresh": 20.0}
TARGET_FUNC_VS_TORCH = {"add_fp16": 5.0, "matmul_2048": 2.0}  # functional-only ≤ k× torch
TARGET_LAUNCH_MS = 0.5  # 1-tile kernel: the new launch (issue 25) and the relaunches (issue 9)
LAUNCH_TARGETED = ("sim-new", "sim", "sim-fresh")
SLOW_S, SLOW_RUNS = 20.0, 3  # a cell whose full-size launch takes > 20 s gets 3 timed runs
#: untimed relaunches before a relaunch column's runs: the tape is left pending, made, then
#: played with its lanes at once and one after the other, twice each
#: (`sim.fast.tape.Tape.together`)
TAPE_WARMUP = 6


# ---------------------------------------------------------------- workloads


@dataclass
class Workload:
    """One problem: inputs (full size and a small warm-up shape), the output argument, the
    torch reference, our kernel with its block dim, and the Triton launcher."""

    key: str
    title: str
    tiles: int
    make: Callable[[int], tuple]  # scale (1: full, 0: warm-up shape) → kernel args
    out_index: int
    reference: Callable[[tuple], torch.Tensor]
    kernel: Any
    block_dim: int
    triton: Callable[[tuple], None]
    atol: float
    triton_runs: int | None = None  # fewer Triton runs for very slow cases

    def ours(self, args: tuple, kernel: Any = None) -> None:
        (kernel or self.kernel)[None, self.block_dim](*args)


def _add_fp16(m: int, n: int):
    ex = load("vector_add")
    return lambda scale: ex.make_inputs(m if scale else 256, n if scale else 256, seed=0)


def _add_fp32(m: int, n: int):
    def make(scale: int) -> tuple:
        mm, nn = (m, n) if scale else (256, 256)
        return (dk.rand((mm, nn), torch.float32, 0), dk.rand((mm, nn), torch.float32, 1),
                torch.zeros(mm, nn))
    return make


def _rows(m: int):
    def make(scale: int) -> tuple:
        rows = m if scale else 64
        return dk.rand((rows, dk.COLS), torch.float32, 0, 3.0), torch.zeros(rows, dk.COLS)
    return make


def _layernorm(m: int):
    def make(scale: int) -> tuple:
        x, y = _rows(m)(scale)
        return (x, dk.rand((1, dk.COLS), torch.float32, 2), dk.rand((1, dk.COLS), torch.float32, 3),
                y, 1e-5)
    return make


def _matmul(m: int, k: int, n: int):
    def make(scale: int) -> tuple:
        mm, kk, nn = (m, k, n) if scale else (256, 256, 256)
        return (dk.rand((mm, kk), torch.float16, 0, 0.25),
                dk.rand((kk, nn), torch.float16, 1, 0.25), torch.zeros(mm, nn))
    return make


def _fused(m: int, n: int):
    def make(scale: int) -> tuple:
        mm, nn = (m, n) if scale else (128, n)
        return (dk.rand((mm, dk.FK), torch.float16, 0, 0.25),
                dk.rand((dk.FK, nn), torch.float16, 1, 0.25), torch.zeros(mm, nn),
                torch.zeros(mm, nn))
    return make


def _mm_ref(a: tuple) -> torch.Tensor:
    return a[0].float() @ a[1].float()


def workloads() -> list[Workload]:
    ex_add = load("vector_add")
    ln = torch.nn.functional.layer_norm
    out = [Workload("add_fp16", "add fp16 4096², 128² tiles", 1024, _add_fp16(4096, 4096), 2,
                    lambda a: a[0] + a[1], ex_add.add_kernel, 32, lambda a: tk.add(*a), 0.0)]
    out += [
        Workload("add_fp32", "add fp32 4096², 128² tiles", 1024, _add_fp32(4096, 4096), 2,
                 lambda a: a[0] + a[1], dk.add_fp32_kernel, 32, lambda a: tk.add(*a), 0.0),
        Workload("softmax", "softmax fp32 4096×1024, 16-row blocks", 256, _rows(4096), 1,
                 lambda a: torch.softmax(a[0], -1), dk.softmax_1k_kernel, 32,
                 lambda a: tk.softmax(*a), 1e-5),
        Workload("layernorm", "layernorm fp32 4096×1024, 16-row blocks", 256, _layernorm(4096),
                 3, lambda a: ln(a[0], (a[0].shape[1],), a[1][0], a[2][0], a[4]),
                 dk.layernorm_1k_kernel, 32, lambda a: tk.layernorm(*a), 1e-4),
        Workload("matmul_1024", "matmul fp16→fp32 1024³, 128³ blocks", 64 * 8,
                 _matmul(1024, 1024, 1024), 2, _mm_ref, dk.matmul_k_kernel, 32,
                 lambda a: tk.matmul(*a), 1e-3),
        Workload("matmul_2048", "matmul fp16→fp32 2048³, 128³ blocks", 256 * 16,
                 _matmul(2048, 2048, 2048), 2, _mm_ref, dk.matmul_k_kernel, 32,
                 lambda a: tk.matmul(*a), 1e-3, triton_runs=2),
        Workload("matmul_softmax", "matmul+softmax [4096×512]·[512×1024], mix", 64,
                 _fused(4096, 1024), 3, lambda a: torch.softmax(_mm_ref(a), -1),
                 dk.matmul_softmax_kernel, 32, lambda a: tk.matmul_softmax(a[0], a[1], a[3]),
                 1e-5),
    ]
    return out


# ---------------------------------------------------------------- measuring


def peak_rss_mib() -> float:
    with open("/proc/self/status") as f:
        return int(re.search(r"VmHWM:\s+(\d+)", f.read()).group(1)) / 1024


def reset_peak_rss() -> None:
    """Linux: writing 5 to clear_refs resets the high-water mark to the current RSS."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def wall(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


@dataclass
class Cell:
    """One workload on one backend."""

    median_s: float | None = None
    runs: int = 0
    first_s: float | None = None  # the warm-up launch on the small shape (native: + compile)
    tape_s: float | None = None  # the relaunch that made its tape (`TAPE_WARMUP`)
    max_err: float | None = None  # over every launch of the cell (NaN counts as wrong)
    correct: bool | None = None  # every launch within the workload's tolerance
    checked: int = 0  # launches checked against torch (warm-ups and timed runs)
    wrong: int = 0  # ... of which off by more than the tolerance
    rss_mib: float | None = None
    instructions: int | None = None
    sim_us: float | None = None
    error: str = ""


def redecorate(kernel: Any) -> Any:
    """`kernel`'s function decorated again with the same options: a new kernel object that
    parses its source and compiles on its first launch, as re-running a notebook cell does."""
    options = kernel.options
    return pl.jit(**{name: getattr(options, name) for name in JitOptions.__slots__})(
        kernel.kernel_def.fn)


def _launcher(w: Workload, backend: str) -> Callable[[tuple], Any]:
    if backend == "triton":
        return w.triton
    if backend == "torch":
        return lambda a: a[w.out_index].copy_(w.reference(a))
    if backend == COLD:
        return _ours(lambda a: w.ours(a, redecorate(w.kernel)), "sim")
    return _ours(w.ours, backend)


def _ours(run: Callable[[tuple], None], backend: str) -> Callable[[tuple], None]:
    """`run` (our kernel's launch) on the simulator or native `backend`."""
    name = CLEARED.get(backend) or ("sim" if backend == "sim-fresh" else backend)

    def ours(a: tuple) -> None:
        if backend in CLEARED:
            memo.clear()
        with use_backend(name):
            run(a)
    return ours


def _fresh(args: tuple) -> tuple:
    """New tensors with the same geometry and values (a tensor passed twice stays shared)."""
    made: dict[int, torch.Tensor] = {}
    return tuple(made.setdefault(id(a), a.clone()) if isinstance(a, torch.Tensor) else a
                 for a in args)


class Checked:
    """Runs launches of one cell from a zeroed output and checks each against torch after it
    (untimed), keeping the largest error and the count of launches off by more than `atol`."""

    def __init__(self, cell: Cell, out_index: int, atol: float) -> None:
        self.cell, self.out_index, self.atol = cell, out_index, atol

    def run(self, launch: Callable[[tuple], Any], args: tuple, ref: torch.Tensor) -> float:
        """Wall seconds of `launch(args)`, its output checked against `ref`."""
        out = args[self.out_index]
        out.zero_()
        seconds = wall(lambda: launch(args))
        err = (out.float() - ref.float()).abs().max().item()
        cell = self.cell
        cell.checked += 1
        cell.wrong += not err <= self.atol  # (NaN is wrong)
        if cell.max_err is None or not err <= cell.max_err:
            cell.max_err = err
        cell.correct = cell.wrong == 0
        return seconds


def measure(w: Workload, backend: str, runs: int) -> Cell:
    cell = Cell()
    launch = _launcher(w, backend)
    check = Checked(cell, w.out_index, w.atol)
    reset_peak_rss()
    try:
        small = w.make(0)
        cell.first_s = check.run(launch, small, w.reference(small))
        args = w.make(1)
        ref = w.reference(args)
        warm_s = check.run(launch, args, ref)  # full-size warm-up
        if backend in TIMED:
            trace = w.kernel.last_trace
            cell.instructions = int(dict(trace.meta.extra)["instructions"])
            cell.sim_us = trace.duration_us
        n = w.triton_runs if backend == "triton" and w.triton_runs else runs
        if warm_s > SLOW_S:
            n = min(n, SLOW_RUNS)
        fresh = backend == "sim-fresh"
        if backend in ("sim", "sim-func", "sim-fresh"):
            for _ in range(TAPE_WARMUP):
                made = tape.MADE
                warm_s = check.run(launch, _fresh(args) if fresh else args, ref)
                if tape.MADE > made and not fresh:
                    cell.tape_s = warm_s  # (the launch that made the tape)
        times = [check.run(launch, _fresh(args) if fresh else args, ref) for _ in range(n)]
        cell.median_s, cell.runs = statistics.median(times), n
    except (PyptoError, RuntimeError, ValueError) as e:  # a failing backend gets a cell
        cell.error = f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
    cell.rss_mib = peak_rss_mib()
    return cell


def launch_overhead(backends: tuple[str, ...], n: int) -> dict[str, Cell]:
    """Median wall per launch of the 1-tile FP16 add (128×128, block dim 1), each launch
    checked against torch."""
    ex = load("vector_add")
    args = ex.make_inputs(128, 128, seed=0)
    ref = args[0] + args[1]
    out: dict[str, Cell] = {}
    for b in backends:
        if b == "triton":
            launch, reps = (lambda a: tk.add(*a)), max(5, n // 5)
        elif b == "torch":
            launch, reps = (lambda a: torch.add(a[0], a[1], out=a[2])), n * 4
        elif b == COLD:
            launch, reps = _ours(lambda a: redecorate(ex.add_kernel)[None, 1](*a), "sim"), n // 5
        else:
            launch, reps = _ours(lambda a: ex.add_kernel[None, 1](*a), b), n
        cell = out[b] = Cell()
        check = Checked(cell, 2, 0.0)
        times = [check.run(launch, _fresh(args) if b == "sim-fresh" else args, ref)
                 for _ in range(reps + 3)]
        cell.median_s, cell.runs = statistics.median(times[3:]), reps
    return out


def _short(path: str) -> str:
    """A profiled file relative to the repo or site-packages; "~" is cProfile's C builtins."""
    if path == "~":
        return "C builtins (torch, numpy, dict, ...)"
    return path.split("site-packages/")[-1].split(str(HERE.parent) + "/")[-1]


def profile(w: Workload, backend: str, top: int = 12) -> str:
    """cProfile of one full-size launch (after a warm-up): own time per source file, then the
    top functions, as markdown."""
    import cProfile
    import pstats

    launch = _launcher(w, backend)
    launch(w.make(0))
    args = w.make(1)
    prof = cProfile.Profile()
    t0 = time.perf_counter()
    prof.runcall(launch, args)
    total = time.perf_counter() - t0
    stats = pstats.Stats(prof).stats  # (file, line, name) -> (cc, nc, tottime, cumtime, callers)
    by_file: dict[str, float] = {}
    for (path, _, _), (_, _, tt, _, _) in stats.items():
        by_file[_short(path)] = by_file.get(_short(path), 0.0) + tt
    own = sum(by_file.values())
    lines = [f"#### {w.title} on {LABELS[backend]}: {total:.2f} s under cProfile", "",
             "| source file | own time s | share |", "|---|---:|---:|"]
    for key, tt in sorted(by_file.items(), key=lambda kv: -kv[1])[:top]:
        lines.append(f"| `{key}` | {tt:.2f} | {tt / own:.0%} |")
    lines += ["", "| function | calls | own s | cumulative s |", "|---|---:|---:|---:|"]
    ranked = sorted(stats.items(), key=lambda kv: -kv[1][2])[:top]
    for (path, line, name), (_, nc, tt, ct, _) in ranked:
        lines.append(f"| `{_short(path)}:{line}({name})` | {nc:,} | {tt:.3f} | {ct:.3f} |")
    return "\n".join(lines)


def _fit(xs: list[float], ys: list[float]) -> tuple[float, float, float]:
    """Least squares y = a + b·x; returns a, b, R²."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    a = my - b * mx
    ss = sum((y - my) ** 2 for y in ys)
    res = sum((y - a - b * x) ** 2 for x, y in zip(xs, ys))
    return a, b, 1 - res / ss if ss else 1.0


def scaling(sizes: tuple[int, ...], dims: tuple[int, ...]) -> dict:
    """Simulator (with timing) wall vs add size at 8 blocks, and vs block dim at 256 tiles."""
    ex = load("vector_add")
    ex.add_kernel[None, 1](*ex.make_inputs(128, 128))  # compile
    size_rows = []
    for s in sizes:
        args = ex.make_inputs(s, s, seed=0)
        t = wall(lambda a=args: ex.add_kernel[None, 8](*a))
        size_rows.append({"size": s, "tiles": (s // 128) ** 2, "wall_s": t,
                          "sim_us": ex.add_kernel.last_trace.duration_us})
        del args
    dim_rows = []
    args = ex.make_inputs(8192, 512, seed=0)
    for d in dims:
        t = wall(lambda d=d: ex.add_kernel[None, d](*args))
        dim_rows.append({"block_dim": d, "tiles": 256, "wall_s": t,
                         "sim_us": ex.add_kernel.last_trace.duration_us})
    a, b, r2 = _fit([r["tiles"] for r in size_rows], [r["wall_s"] for r in size_rows])
    a2, b2, r22 = _fit([r["block_dim"] for r in dim_rows], [r["wall_s"] for r in dim_rows])
    return {"sizes": size_rows, "dims": dim_rows,
            "size_fit": {"intercept_s": a, "per_tile_ms": b * 1e3, "r2": r2},
            "dim_fit": {"intercept_s": a2, "per_block_ms": b2 * 1e3, "r2": r22}}


def fidelity_rows() -> list[dict]:
    """The calibration and held-out rows of sim_latest.md (`bench_sim_fidelity.py`'s sections:
    the first table of each, whose first seven columns are case, role, SoC, cores, simulated
    µs, published µs and error)."""
    if not SIM_LATEST.exists():
        return []
    text = SIM_LATEST.read_text()
    rows = []
    for section in ("bench_sim_fidelity", "bench_sim_heldout"):
        begin = text.find(f"<!-- begin {section} -->")
        end = text.find(f"<!-- end {section} -->")
        if begin < 0 or end < 0:
            continue
        for line in text[begin:end].splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) >= 7 and cells[1] in ("calibration", "held-out", "roofline"):
                rows.append(dict(zip(("case", "role", "soc", "cores", "simulated_us",
                                      "published_us", "error"), cells)))
    return rows


# ---------------------------------------------------------------- reporting


def _ms(c: Cell | None) -> str:
    if c is None:
        return "—"
    if c.error:
        return "n/a ✗"
    mark = "" if c.correct else " (WRONG)"
    return f"{c.median_s * 1e3:,.1f}{mark}"


def _ratio(num: Cell | None, den: Cell | None) -> float | None:
    if not num or not den or num.median_s is None or den.median_s is None:
        return None
    return num.median_s / den.median_s


def _fmt_ratio(r: float | None, target: float | None = None, higher: bool = True) -> str:
    if r is None:
        return "—"
    text = f"{r:,.1f}×" if r >= 10 else f"{r:,.2f}×"
    if target is not None:
        ok = r >= target if higher else r <= target
        text += " ✓" if ok else " ✗"
    return text


def _range(ratios: list[float]) -> str:
    lo, hi = min(ratios), max(ratios)
    return _fmt_ratio(lo) if f"{lo:.1f}" == f"{hi:.1f}" else \
        f"{_fmt_ratio(lo)[:-1]}–{_fmt_ratio(hi)}"


def _vs_triton(ws: list[Workload], cells: dict, backend: str, target: float) -> str:
    """"a–b× (≥ t×: met on n of N; the mix m×)" for Triton's interpreter / `backend`."""
    got = {w.key: _ratio(cells[w.key].get("triton"), cells[w.key].get(backend)) for w in ws}
    ratios = [r for r in got.values() if r is not None]
    if not ratios:
        return "—"
    met = sum(r >= target for r in ratios)
    mix = got.get("matmul_softmax")
    return (f"{_range(ratios)} (≥ {target:.0f}×: met on {met} of {len(ratios)}"
            + (f"; the mix {_fmt_ratio(mix)}" if mix is not None else "") + ")")


def _launch_ms(overhead: dict, backend: str) -> str:
    c = overhead.get(backend)
    if c is None:
        return "—"
    mark = (" ✓" if c.median_s * 1e3 <= TARGET_LAUNCH_MS else " ✗") \
        if backend in LAUNCH_TARGETED else ""
    return f"{c.median_s * 1e3:.3f} ms{mark}{'' if c.correct else ' (WRONG)'}"


def headline(ws: list[Workload], cells: dict, overhead: dict) -> str:
    """The summary the section leads with: first launch, then relaunch, each against Triton's
    interpreter in this run, with its targets."""
    wrong = [(w.title, LABELS[b]) for w in ws for b, c in cells[w.key].items()
             if c.wrong or c.error]
    checked = sum(c.checked for w in ws for c in cells[w.key].values()) + \
        sum(c.checked for c in overhead.values())
    lines = [
        "**First launch** (edit and run: what a kernel author pays after changing a cell), "
        "against Triton's interpreter in the same run: compile + first launch "
        f"{_vs_triton(ws, cells, COLD, FIRST_VS_TRITON[COLD])}; new launch (compile excluded) "
        f"{_vs_triton(ws, cells, 'sim-new', FIRST_VS_TRITON['sim-new'])}; 1-tile kernel: "
        f"new launch {_launch_ms(overhead, 'sim-new')} (target ≤ {TARGET_LAUNCH_MS} ms), "
        f"compile + first launch {_launch_ms(overhead, COLD)}.",
        "",
        f"**Relaunch** (steady state, a kernel in a loop): "
        f"{_vs_triton(ws, cells, 'sim', RELAUNCH_VS_TRITON['sim'])}; on new tensors "
        f"{_vs_triton(ws, cells, 'sim-fresh', RELAUNCH_VS_TRITON['sim-fresh'])}; 1-tile "
        f"relaunch {_launch_ms(overhead, 'sim')}.",
        "",
        f"Outputs: {checked:,} launches checked against torch (every warm-up and timed "
        "launch), " + ("all within tolerance." if not wrong else
                       "WRONG: " + "; ".join(f"{t} on {b}" for t, b in wrong) + "."),
    ]
    return "\n".join(lines)


def _ratio_cells(c: dict, targets: dict[str, float]) -> str:
    return "".join(f" | {_ms(c.get(b))} | "
                   f"{_fmt_ratio(_ratio(c.get('triton'), c.get(b)), target)}"
                   for b, target in targets.items())


def tables(ws: list[Workload], cells: dict, overhead: dict, scale: dict | None,
           fidelity: list[dict]) -> str:
    first = ("| workload | tiles | Triton interpreter | "
             + " | ".join(f"{LABELS[b]} | Triton / it (≥ {t:.0f}×)"
                          for b, t in FIRST_VS_TRITON.items())
             + f" | {LABELS['sim-func-new']} | functional new launch / torch |")
    out = ["### First launch: wall time per launch, ms (median)", "", first,
           "|---|---:|---:|" + "---:|" * (2 * len(FIRST_VS_TRITON) + 2)]
    for w in ws:
        c = cells[w.key]
        func_target = TARGET_FUNC_VS_TORCH.get(w.key)
        out.append(
            f"| {w.title} | {w.tiles:,} | {_ms(c.get('triton'))}"
            + _ratio_cells(c, FIRST_VS_TRITON)
            + f" | {_ms(c.get('sim-func-new'))} | "
            f"{_fmt_ratio(_ratio(c.get('sim-func-new'), c.get('torch')), func_target, False)} |")
    relaunch = ("| workload | Triton interpreter | "
                + " | ".join(f"{LABELS[b]} | Triton / it (≥ {t:.0f}×)"
                             for b, t in RELAUNCH_VS_TRITON.items())
                + f" | {LABELS['sim-func']} | functional / torch | native | native / torch | "
                  "torch CPU |")
    out += ["", "### Relaunch (steady state): wall time per launch, ms (median)", "", relaunch,
            "|---|---:|" + "---:|" * (2 * len(RELAUNCH_VS_TRITON) + 5)]
    for w in ws:
        c = cells[w.key]
        func_target = TARGET_FUNC_VS_TORCH.get(w.key)
        out.append(
            f"| {w.title} | {_ms(c.get('triton'))}" + _ratio_cells(c, RELAUNCH_VS_TRITON)
            + f" | {_ms(c.get('sim-func'))} | "
            f"{_fmt_ratio(_ratio(c.get('sim-func'), c.get('torch')), func_target, False)}"
            f" | {_ms(c.get('native'))} | {_fmt_ratio(_ratio(c.get('native'), c.get('torch')))}"
            f" | {_ms(c.get('torch'))} |")
    out += ["", "### Simulator detail and memory", "",
            ("| workload | simulated µs | instructions | instr/s (relaunch) | "
             "instr/s (functional) | runs | launches checked | "
             "native first launch s (compile) | relaunch making the tape, ms sim / func | "
             "max err sim / func / native / Triton | peak RSS MiB "
             f"{' / '.join(SHORT[b] for b in BACKENDS)} |"),
            "|---|---:|---:|---:|---:|---:|---:|---:|---|---|---|"]
    for w in ws:
        c = cells[w.key]
        sim, func, nat, tri = (c.get(b) for b in ("sim", "sim-func", "native", "triton"))
        ins = sim.instructions if sim else None
        ips = f"{ins / sim.median_s:,.0f}" if ins and sim.median_s else "—"
        ipf = f"{ins / func.median_s:,.0f}" if ins and func and func.median_s else "—"
        errs = " / ".join("—" if x is None or x.max_err is None else f"{x.max_err:.1e}"
                          for x in (sim, func, nat, tri))
        rss = " / ".join("—" if c.get(b) is None else f"{c[b].rss_mib:,.0f}" for b in BACKENDS)
        runs = " / ".join(str(c[b].runs) for b in BACKENDS if c.get(b))
        checked = sum(x.checked for x in c.values())
        wrong = sum(x.wrong for x in c.values())
        taping = " / ".join("—" if x is None or x.tape_s is None else f"{x.tape_s * 1e3:,.0f}"
                            for x in (sim, func))
        out.append(f"| {w.title} | {sim.sim_us if sim and sim.sim_us else 0:,.1f} | "
                   f"{ins or 0:,} | {ips} | {ipf} | {runs} | "
                   f"{checked}{f' ({wrong} WRONG)' if wrong else ', all correct'} | "
                   f"{nat.first_s if nat and nat.first_s else 0:.1f} | {taping} | {errs} | "
                   f"{rss} |")
    errors = [(w.title, b, c.error) for w in ws for b, c in cells[w.key].items() if c.error]
    for title, b, e in errors:
        out.append(f"\n* {title} on {LABELS[b]} failed: `{e}`")
    if overhead:
        out += ["", "### Per-launch wall of a 1-tile kernel (fp16 add 128×128, block dim 1)", "",
                "| " + " | ".join(LABELS[b] for b in overhead) + " |",
                "|" + "---:|" * len(overhead),
                "| " + " | ".join(_launch_ms(overhead, b) for b in overhead) + " |"]
    if scale:
        sf, df = scale["size_fit"], scale["dim_fit"]
        out += ["", "### Simulator (timing) scaling: fp16 add, 8 blocks (new launches)", "",
                "| size | tiles | wall s | ms / tile | simulated µs |", "|---|---:|---:|---:|---:|"]
        out += [f"| {r['size']}² | {r['tiles']:,} | {r['wall_s']:.2f} | "
                f"{r['wall_s'] / r['tiles'] * 1e3:.2f} | {r['sim_us']:,.1f} |"
                for r in scale["sizes"]]
        out += ["", (f"Fit wall = a + b·tiles: b = {sf['per_tile_ms']:.3f} ms per tile, "
                     f"a = {sf['intercept_s'] * 1e3:.0f} ms, R² = {sf['r2']:.4f}."), "",
                "| block dim (8192×512, 256 tiles) | wall s | ms / tile | simulated µs |",
                "|---:|---:|---:|---:|"]
        out += [f"| {r['block_dim']} | {r['wall_s']:.2f} | "
                f"{r['wall_s'] / r['tiles'] * 1e3:.2f} | {r['sim_us']:,.1f} |"
                for r in scale["dims"]]
        out += ["", (f"Fit wall = a + c·blocks: c = {df['per_block_ms']:.2f} ms per block, "
                     f"a = {df['intercept_s']:.2f} s, R² = {df['r2']:.3f}.")]
    if fidelity:
        out += ["", "### Fidelity (from `results/sim_latest.md`, `bench_sim_fidelity.py`)", "",
                "| case | role | SoC | cores | simulated µs | published µs | error |",
                "|---|---|---|---:|---:|---:|---:|"]
        out += [f"| {r['case']} | {r['role']} | {r['soc']} | {r['cores']} | "
                f"{r['simulated_us']} | {r['published_us']} | {r['error']} |" for r in fidelity]
    return "\n".join(out)


def chart(ws: list[Workload], cells: dict, scale: dict | None, path: Path) -> None:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=2 if scale else 1, subplot_titles=(
        "speed ratios (log): > 1 means the first is slower", "simulator wall vs tiles"))
    names = [w.key for w in ws]
    top = max(FIRST_VS_TRITON.values())
    for label, num, den in (*((f"Triton / {LABELS[b]}", "triton", b)
                              for b in (*FIRST_VS_TRITON, *RELAUNCH_VS_TRITON)),
                            ("sim functional / torch", "sim-func", "torch"),
                            ("sim functional, new launch / torch", "sim-func-new", "torch"),
                            ("native / torch", "native", "torch")):
        ys = [_ratio(cells[w.key].get(num), cells[w.key].get(den)) for w in ws]
        top = max([top, *(y for y in ys if y)])
        fig.add_trace(go.Bar(name=label, x=names, y=ys), row=1, col=1)
    for b, target in FIRST_VS_TRITON.items():
        fig.add_trace(go.Scatter(name=f"{target:.0f}× target (Triton / {LABELS[b]})", x=names,
                                 y=[target] * len(names), mode="lines",
                                 line={"dash": "dot"}), row=1, col=1)
    # explicit log range (log10 units): plotly's autorange on log bar charts can run away
    fig.update_yaxes(type="log", range=[-1, math.log10(top * 2)], row=1, col=1)
    if scale:
        rows = scale["sizes"]
        fig.add_trace(go.Scatter(name="wall s vs tiles (8 blocks)", mode="lines+markers",
                                 x=[r["tiles"] for r in rows], y=[r["wall_s"] for r in rows]),
                      row=1, col=2)
        fig.update_xaxes(title_text="tiles", row=1, col=2)
        fig.update_yaxes(title_text="wall s", row=1, col=2)
    fig.update_layout(title="PyPTO Pro simulator vs Triton's interpreter (bench_triton.py)",
                      barmode="group", height=600, width=1400)
    fig.write_html(str(path), include_plotlyjs=True, full_html=True)


def replot(ws: list[Workload]) -> None:
    saved = json.loads((RESULTS / "latest.json").read_text())
    ws = [w for w in ws if w.key in saved["workloads"]]
    cells = {w.key: {b: Cell(**c) for b, c in saved["workloads"][w.key]["cells"].items()}
             for w in ws}
    chart(ws, cells, saved["scaling"], RESULTS / "latest.html")


def replace_section(path: Path, text: str) -> None:
    begin, end = f"<!-- begin {SECTION} -->", f"<!-- end {SECTION} -->"
    old = path.read_text()
    block = f"{begin}\n{text.rstrip()}\n{end}"
    if begin in old and end in old:
        new = old[:old.index(begin)] + block + old[old.index(end) + len(end):]
    else:
        new = old.rstrip() + "\n\n" + block + "\n"
    path.write_text(new)


def environment(load_start: float) -> str:
    return (f"{platform.machine()}, {os.cpu_count()} CPUs, load average {load_start:.1f} at the "
            f"start and {os.getloadavg()[0]:.1f} at the end, torch {torch.__version__} "
            f"(intra-op threads {torch.get_num_threads()}), triton {tk.triton.__version__}, "
            f"Python {platform.python_version()}")


def load_warning(load_start: float) -> str:
    """A warning to lead the results with when other work loaded the machine at the start (more
    than half its CPUs busy): Triton's interpreter (numpy, BLAS threads) slows far more under
    load than the simulator, so every ratio against it comes out too high."""
    cpus = os.cpu_count() or 1
    if load_start <= cpus / 2:
        return ""
    return (f"**Measured under load** (load average {load_start:.1f} at the start on {cpus} "
            f"CPUs): Triton's interpreter slows far more than the simulator under load, so the "
            f"ratios against it below are too high. Rerun on a quiet machine.\n\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="timed runs per cell (default 5)")
    ap.add_argument("--only", default="", help="comma-separated workload keys")
    ap.add_argument("--skip-native", action="store_true")
    ap.add_argument("--skip-scaling", action="store_true")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--replot", action="store_true",
                    help="only redraw results/latest.html from results/latest.json")
    ap.add_argument("--profile", default="", metavar="KEY[,KEY]",
                    help="only profile these workloads on sim and sim-func (cProfile) and exit")
    opts = ap.parse_args()
    load_start = os.getloadavg()[0]
    started = time.perf_counter()
    register_backend("sim-func", lambda: SimBackend(functional_only=True))
    backends = tuple(b for b in BACKENDS if not (opts.skip_native and b == "native"))
    ws = workloads()
    if opts.replot:
        replot(ws)
        return
    if opts.only or opts.profile:
        keep = set((opts.profile or opts.only).split(","))
        ws = [w for w in ws if w.key in keep]
    if opts.profile:
        for w in ws:
            for b in ("sim", "sim-func"):
                print(profile(w, b), end="\n\n", flush=True)
        return
    cells: dict[str, dict[str, Cell]] = {}
    for w in ws:
        cells[w.key] = {}
        for b in backends:
            cells[w.key][b] = c = measure(w, b, opts.runs)
            state = c.error or (f"{c.median_s * 1e3:,.1f} ms, err {c.max_err:.1e}, "
                                f"{c.checked} checked, {c.wrong} wrong")
            print(f"  {w.key:15s} {b:12s} {state}", file=sys.stderr, flush=True)
    overhead = launch_overhead(backends, 50)
    print("  1-tile launch ms " + ", ".join(f"{b} {c.median_s * 1e3:.3f}"
                                           for b, c in overhead.items()),
          file=sys.stderr, flush=True)
    scale = None if opts.skip_scaling else scaling((1024, 2048, 4096, 8192),
                                                  (1, 2, 4, 8, 16, 32, 64))
    text = (load_warning(load_start) + headline(ws, cells, overhead) + "\n\n"
            + tables(ws, cells, overhead, scale, fidelity_rows()))
    summary = (f"Whole run {time.perf_counter() - started:.0f} s on {environment(load_start)}. "
               f"Medians of {opts.runs} runs after a small-shape and a full-size warm-up; "
               f"{SLOW_RUNS} runs where the warm-up took > {SLOW_S:.0f} s and 2 for "
               f"Triton's matmul 2048³ (see the runs column, order "
               f"{' / '.join(SHORT[b] for b in BACKENDS)}). Every launch's output (warm-ups "
               f"and timed runs) checked against torch.")
    print(text)
    print()
    print(summary)
    if opts.no_write:
        return
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "latest.md").write_text(
        f"# Simulator vs Triton interpreter (`bench_triton.py`, latest run)\n\n{text}\n\n"
        f"{summary}\n")
    (RESULTS / "latest.json").write_text(json.dumps({
        "environment": environment(load_start), "runs": opts.runs,
        "workloads": {w.key: {"title": w.title, "tiles": w.tiles, "block_dim": w.block_dim,
                              "cells": {b: vars(c) for b, c in cells[w.key].items()}}
                      for w in ws},
        "launch_overhead": {b: vars(c) for b, c in overhead.items()}, "scaling": scale,
        "fidelity": fidelity_rows()},
        indent=1))
    chart(ws, cells, scale, RESULTS / "latest.html")
    replace_section(README, f"{text}\n\n{summary}\n")


if __name__ == "__main__":
    main()
