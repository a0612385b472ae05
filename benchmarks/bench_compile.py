"""Compile-time benchmark: parse + all passes, per kernel (issue targets: vector add ≤ 20 ms,
flash attention ≤ 150 ms, median on the 2-core dev machine).

Run: `python benchmarks/bench_compile.py [--repeat N]`. Prints a markdown table.
"""
from __future__ import annotations

import argparse
import importlib
import statistics
import time

from pypto_pro.compiler import compile_kernel
from pypto_pro.runtime.kernel_def import Specialization

#: (example module, attribute holding the jit kernel, target median in ms)
CASES = [
    ("vector_add", "add_kernel", 20.0),
    ("matmul", "matmul_kernel", None),
    ("softmax", "softmax_kernel", None),
    ("flash_attention", "flash_attention_kernel", 150.0),
]


def kernel_def(module: str, attr: str):
    mod = importlib.import_module(f"pypto_pro.examples.{module}")
    kernel = getattr(mod, attr)
    return getattr(kernel, "kernel_def", kernel)


def measure(kdef, repeat: int) -> tuple[float, dict[str, float]]:
    spec = Specialization(arch="a5")
    compile_kernel(kdef, spec)  # warm-up: imports, first-use caches
    times, per_pass = [], {}
    for _ in range(repeat):
        t0 = time.perf_counter()
        compiled = compile_kernel(kdef, spec)
        times.append(time.perf_counter() - t0)
    for records in compiled.passes.values():  # the last run's records, summed over targets
        for r in records:
            per_pass[r.name] = per_pass.get(r.name, 0.0) + r.seconds
    return statistics.median(times) * 1e3, per_pass


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=21)
    args = ap.parse_args()
    print("| kernel | parse + passes, median ms | target ms | slowest pass |")
    print("|---|---:|---:|---|")
    for module, attr, target in CASES:
        try:
            kdef = kernel_def(module, attr)
        except (ImportError, AttributeError) as e:
            print(f"| {module} | (not available: {e}) | | |")
            continue
        ms, per_pass = measure(kdef, args.repeat)
        slowest = max(per_pass.items(), key=lambda kv: kv[1]) if per_pass else ("-", 0.0)
        ok = "" if target is None else (" ✓" if ms <= target else " ✗")
        print(f"| {module} | {ms:.2f}{ok} | {target or '-'} | {slowest[0]} "
              f"({slowest[1] * 1e3:.2f} ms) |")


if __name__ == "__main__":
    main()
