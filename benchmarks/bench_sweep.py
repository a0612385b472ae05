"""Sweep throughput: a 48-point sweep of the add on 1 vs 2 local workers, and the per-point
overhead beyond the simulation itself.

    .venv/bin/python benchmarks/bench_sweep.py [--size 512] [--ray] [--dask]

Overhead per point = (point wall time - time inside the simulated launch), from the sweep's own
`wall_s` / `sim_wall_s` columns: building the kernel, compiling it, making inputs, the
reference, the summary. Speed-up = wall(1 worker) / wall(2 workers) in the same run. Prints a
markdown table and writes it to `benchmarks/results/sweep_latest.md`.
"""
from __future__ import annotations

import argparse
import functools
import os
import time
from pathlib import Path

from pypto_lab.sweep import sweep
from pypto_pro.examples import tunable as T

SPACE = {"tile_rows": [32, 64, 128], "tile_cols": [64, 128], "depth": [1, 2],
         "blocks": [1, 2, 4, 8]}  # 48 points


def run(size: int, executor, workers: int | None, label: str) -> dict:
    inputs = functools.partial(T.add_inputs, size, size)
    t0 = time.perf_counter()
    r = sweep(T.make_add, SPACE, inputs, T.add_reference, executor=executor, workers=workers,
              progress=False)
    wall = time.perf_counter() - t0
    t = r.table
    overhead = (t["wall_s"] - t["sim_wall_s"].fillna(0)).astype(float)
    return {"label": label, "points": len(t), "ok": int((t["status"] == "ok").sum()),
            "wall_s": wall, "per_point_s": wall / len(t),
            "sim_s_mean": float(t["sim_wall_s"].astype(float).mean()),
            "overhead_ms_median": 1e3 * float(overhead.median())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=512)
    ap.add_argument("--ray", action="store_true", help="also on a local Ray cluster")
    ap.add_argument("--dask", action="store_true", help="also on a local Dask cluster")
    args = ap.parse_args()
    rows = [run(args.size, None, 1, "local, 1 worker"), run(args.size, None, 2,
                                                           "local, 2 workers")]
    if args.dask:
        import distributed

        with distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                      dashboard_address=None) as c, distributed.Client(c) as cl:
            rows.append(run(args.size, cl, None, "dask LocalCluster, 2 workers"))
    if args.ray:
        import ray

        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        try:
            rows.append(run(args.size, ray, None, "ray local, 2 CPUs"))
        finally:
            ray.shutdown()
    base = rows[0]["wall_s"]
    load = os.getloadavg()[0]
    lines = [f"48-point sweep of the add ({args.size}x{args.size} FP16, tile shape x depth x "
             f"block dim), load average {load:.1f} at the end", "",
             "| executor | points (ok) | wall s | s / point | speed-up vs 1 worker | "
             "sim s / point | overhead ms / point (median) |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['label']} | {r['points']} ({r['ok']}) | {r['wall_s']:.1f} | "
                     f"{r['per_point_s']:.2f} | {base / r['wall_s']:.2f}x | "
                     f"{r['sim_s_mean']:.2f} | {r['overhead_ms_median']:.0f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    out = Path(__file__).parent / "results" / "sweep_latest.md"
    out.write_text(text)


if __name__ == "__main__":
    main()
