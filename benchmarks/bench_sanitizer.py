"""Sanitizer overhead: wall time of a sanitized simulator launch vs the same launch plain.

Prints one markdown row per example launch (median of `--repeat` runs after a warm-up that also
compiles): plain seconds, sanitized seconds, the ratio, instructions and findings (all zero: the
examples are correct). Run from the repo root: `.venv/bin/python benchmarks/bench_sanitizer.py`.
Record `uptime` with the numbers: the machine's load inflates both columns.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

from pypto_pro.examples import load
from pypto_pro.runtime.backends import use_backend
from pypto_pro.sanitizer import sanitize

CASES = [
    ("vector_add", "add_kernel", {"m": 1024, "n": 512}),
    ("softmax", "softmax_kernel", {"rows": 512, "cols": 300}),
    ("matmul", "matmul_kernel", {"m": 384, "n": 256}),
    ("matmul_softmax", "matmul_softmax_kernel", {"n": 256}),
    ("flash_attention", "flash_attention_kernel", {"sq": 256, "skv": 256}),
]


def _time(module: str, kernel: str, shape: dict, sanitized: bool, repeat: int) -> tuple:
    m = load(module)
    k = m.KERNELS[kernel]
    walls = []
    for _ in range(repeat + 1):  # the first run compiles
        args = m.make_inputs(**shape)
        with use_backend("sim"), sanitize(sanitized):
            t0 = time.perf_counter()
            m.run(*args, kernel=k)
            walls.append(time.perf_counter() - t0)
    report = k.last_result.sanitizer
    instructions = dict(k.last_trace.meta.extra).get("instructions", 0)
    return statistics.median(walls[1:]), instructions, (len(report) if report else 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    ns = parser.parse_args()
    print(f"load average: {os.getloadavg()[0]:.2f}\n")
    print("| launch | plain s | sanitized s | ratio | instructions | findings |")
    print("|---|---:|---:|---:|---:|---:|")
    for module, kernel, shape in CASES:
        plain, n, _ = _time(module, kernel, shape, False, ns.repeat)
        san, _, findings = _time(module, kernel, shape, True, ns.repeat)
        dims = ", ".join(f"{k}={v}" for k, v in shape.items())
        print(f"| {kernel}({dims}) | {plain:.3f} | {san:.3f} | {san / plain:.1f}× | {n:,} | "
              f"{findings} |")


if __name__ == "__main__":
    main()
