"""Simulator throughput: how fast the CPU simulates a launch with timing on (issue targets on the
2-core dev machine: fp16 add 8192×4096 with 64 blocks ≤ 10 s, flash attention 2048×2048×128
≤ 60 s, peak RSS ≤ 4 GiB).

Per case: wall seconds of the launch (the kernel is compiled first, outside the measurement),
simulated µs, instructions simulated (tile ops; sync instructions counted in the events), trace
events, throughput, peak RSS of the process (`resource.getrusage`, Linux KiB). `--threads`
also runs a smaller flash attention with torch's default intra-op thread count
(`SimBackend(torch_threads=None)`, the behaviour before the single-thread fix) for a
before/after row; `--profile` prints the cProfile top functions of each case.

Run: `python benchmarks/bench_sim_speed.py [--threads] [--profile] [--no-write]`. Prints a
markdown table and (unless `--no-write`) updates its section of
`benchmarks/results/sim_latest.md`. Not a test: nothing here asserts a time.
"""
from __future__ import annotations

import argparse
import cProfile
import io
import os
import platform
import pstats
import resource
import sys
import time
from pathlib import Path

import torch

from pypto_pro.examples import load
from pypto_pro.runtime.backends import register_backend, use_backend
from pypto_pro.runtime.backends.sim import SimBackend

RESULTS = Path(__file__).with_name("results") / "sim_latest.md"


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _add_case():
    m = load("vector_add")
    args = m.make_inputs(8192, 4096, seed=0)
    warm = [a[:128, :128].contiguous() for a in args]
    return "fp16 add 8192×4096, 64 blocks", m.add_kernel, 64, args, warm, \
        lambda: torch.equal(args[2], args[0] + args[1]), 10.0


def _fa_case(s: int, target: float | None):
    m = load("flash_attention")
    args = m.make_inputs(s, s, seed=0)
    warm = m.make_inputs(128, 128, seed=0)
    bd = m.block_dim(*args)

    def ok() -> bool:
        ref = m.reference(*args)
        return torch.allclose(args[3].float(), ref.float(), rtol=m.RTOL, atol=m.ATOL)

    return f"flash attention {s}×{s}×128, {bd} blocks", m.flash_attention_kernel, bd, args, \
        warm, ok, target


def measure(case, backend: str, profile: bool) -> dict:
    name, kernel, bd, args, warm, ok, target = case
    with use_backend(backend):
        kernel[None, 1](*warm)  # compile outside the measurement
        prof = cProfile.Profile() if profile else None
        if prof:
            prof.enable()
        t0 = time.perf_counter()
        kernel[None, bd](*args)
        wall = time.perf_counter() - t0
        if prof:
            prof.disable()
    trace = kernel.last_trace
    extra = dict(trace.meta.extra)
    row = dict(case=name, backend=backend, wall_s=wall, target_s=target, sim_us=trace.duration_us,
               instructions=int(extra["instructions"]), events=len(trace.events),
               correct=ok(), rss_mib=peak_rss_mib())
    if prof:
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(12)
        row["profile"] = out.getvalue()
    return row


def table(rows: list[dict]) -> str:
    lines = ["| case | torch threads | wall s | target s | simulated µs | instructions | "
             "instr/s | events | events/s | correct | peak RSS MiB |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|"]
    for r in rows:
        mark = "" if r["target_s"] is None else (" ✓" if r["wall_s"] <= r["target_s"] else " ✗")
        threads = "default" if r["backend"] == "sim-threads" else "1"
        lines.append(
            f"| {r['case']} | {threads} | {r['wall_s']:.2f}{mark} | {r['target_s'] or '-'} | "
            f"{r['sim_us']:.2f} | {r['instructions']:,} | "
            f"{r['instructions'] / r['wall_s']:,.0f} | {r['events']:,} | "
            f"{r['events'] / r['wall_s']:,.0f} | {'yes' if r['correct'] else 'NO'} | "
            f"{r['rss_mib']:.0f} |")
    return "\n".join(lines)


def update_results(section: str, text: str) -> None:
    """Replace this script's section of sim_latest.md (between its markers), keep the rest."""
    begin, end = f"<!-- begin {section} -->", f"<!-- end {section} -->"
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    old = RESULTS.read_text() if RESULTS.exists() else "# Simulator benchmarks (latest run)\n"
    block = f"{begin}\n{text.rstrip()}\n{end}"
    if begin in old and end in old:
        new = old[:old.index(begin)] + block + old[old.index(end) + len(end):]
    else:
        new = old.rstrip() + "\n\n" + block + "\n"
    RESULTS.write_text(new if new.endswith("\n") else new + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", action="store_true",
                    help="also run flash attention 1024² with torch's default thread count")
    ap.add_argument("--profile", action="store_true", help="print cProfile top functions")
    ap.add_argument("--no-write", action="store_true", help="do not update sim_latest.md")
    args = ap.parse_args()
    register_backend("sim-threads", lambda: SimBackend(torch_threads=None))

    cases = [(_add_case(), "sim"), (_fa_case(2048, 60.0), "sim")]
    if args.threads:
        cases += [(_fa_case(1024, None), "sim"), (_fa_case(1024, None), "sim-threads")]
    rows = []
    for case, backend in cases:
        rows.append(measure(case, backend, args.profile))
        print(f"  done: {rows[-1]['case']} ({backend}) {rows[-1]['wall_s']:.1f} s",
              file=sys.stderr)
        if args.profile:
            print(rows[-1]["profile"], file=sys.stderr)
    rss = peak_rss_mib()
    text = table(rows)
    env = (f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
           f"load average {os.getloadavg()[0]:.1f} at the end, torch {torch.__version__} "
           f"(default intra-op threads {torch.get_num_threads()}), Python "
           f"{platform.python_version()}")
    summary = (f"Peak RSS of the whole run: {rss:.0f} MiB (target ≤ 4096). Machine: {env}.")
    print(text)
    print()
    print(summary)
    if not args.no_write:
        update_results("bench_sim_speed", "## Simulator speed (`bench_sim_speed.py`)\n\n"
                       f"{text}\n\n{summary}\n")


if __name__ == "__main__":
    main()
