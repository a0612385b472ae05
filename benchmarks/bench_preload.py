"""The automatic preload pipeline on flash attention (spec §2.12.6, walkthrough 6): simulated
time of `PipelineConfig(preload=2)` against `sync_only=True` (same kernel, same syncs, serial
stage order), plus correctness against torch and run-to-run determinism.

Per size (Sq = Skv, head dim 128, FP16, `block_dim = min(32, Sq/128)`) and per variant:
* sim: simulated µs of the launch (timing on, values on), wall seconds of the simulation,
  max |out − softmax(Q·Kᵀ/√d)·V| against torch;
* native (with `--native`): 5 launches on the native backend, whether their outputs are
  bit-identical, the max error, and the wall seconds of the 5 launches (the first one includes
  the cached g++ build when it is cold).

The issue's target: preload measurably faster than sync_only on the simulator. Machine load
(`os.getloadavg`) is printed with the table: wall times on the shared 2-core machine inflate
with it; simulated µs do not depend on it.

Run: `.venv/bin/python benchmarks/bench_preload.py [--sizes 512 2048] [--native]`.
"""
from __future__ import annotations

import argparse
import os
import time

import torch

from pypto_pro.examples import flash_attention_preload as fa
from pypto_pro.runtime.backends import use_backend

VARIANTS = (("preload=2", fa.flash_attention_preload_kernel),
            ("sync_only", fa.flash_attention_sync_only_kernel))
TOLERANCE = f"rtol = atol = {fa.RTOL:g}"


def _error(out: torch.Tensor, args) -> float:
    return (out.float() - fa.reference(*args).float()).abs().max().item()


def sim_row(size: int, kernel) -> dict:
    args = fa.make_inputs(sq=size, skv=size, seed=0)
    with use_backend("sim"):
        t0 = time.perf_counter()
        out = fa.run(*args, kernel=kernel)
        wall = time.perf_counter() - t0
    return {"us": kernel.last_result.trace.duration_us, "wall": wall, "err": _error(out, args)}


def native_row(size: int, kernel, repeats: int = 5) -> dict:
    outs = []
    t0 = time.perf_counter()
    with use_backend("native"):
        for _ in range(repeats):
            args = fa.make_inputs(sq=size, skv=size, seed=0)
            outs.append(fa.run(*args, kernel=kernel).clone())
    wall = time.perf_counter() - t0
    same = all(torch.equal(outs[0], o) for o in outs[1:])
    return {"identical": same, "err": _error(outs[0], args), "wall": wall}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[512, 2048])
    parser.add_argument("--native", action="store_true", help="also run on the native backend")
    opts = parser.parse_args()
    print(f"load before: {os.getloadavg()[0]:.2f} (1-min avg); tolerance {TOLERANCE}\n")
    print("| Sq=Skv | variant | sim µs | speed-up | sim wall s | max err | native 5× identical "
          "| native max err | native wall s (5 runs) |")
    print("|---:|---|---:|---:|---:|---:|---|---:|---:|")
    for size in opts.sizes:
        rows = {name: sim_row(size, k) for name, k in VARIANTS}
        base = rows["sync_only"]["us"]
        for name, kernel in VARIANTS:
            r = rows[name]
            nat = native_row(size, kernel) if opts.native else None
            native = (f"{'yes' if nat['identical'] else 'NO'} | {nat['err']:.2e} | "
                      f"{nat['wall']:.1f}") if nat else "– | – | –"
            print(f"| {size} | {name} | {r['us']:.1f} | {base / r['us']:.2f}× | "
                  f"{r['wall']:.1f} | {r['err']:.2e} | {native} |", flush=True)
    print(f"\nload after: {os.getloadavg()[0]:.2f} (1-min avg)")


if __name__ == "__main__":
    main()
