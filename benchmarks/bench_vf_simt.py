"""Simulator speed of the Reg API (VF) and SIMT parts (issue 6 targets on the 2-core dev
machine: a SIMT launch of 2048 threads over a [1, 2048] tile simulated in ≤ 20 ms; VF softmax
of 4096×1024 fp32 on 32 blocks in ≤ 30 s; VF: `vf_softmax_4096x1024`, the whole launch of the
`vf_softmax` example on the timing simulator, one run after a compile warm-up).

One function per case in `CASES`, each returning table rows (case, measurement, ms, target ms).
SIMT: `simt_launch_2048` times the `simt.launch` instruction itself as the engine runs it
(`SimtLaunch.execute` — all 2048 threads, vectorised — plus `commit`) on a [1, 2048] FP32 UB
tile (`simt_callee_2048`: the same with every thread calling a `__simt_callee__` that returns
early on half the threads), and, for context, the whole kernel (load, launch, store) on the
functional simulator and on the timing simulator (which adds the Trace). Medians of repeated
runs after a warm-up; the machine's load average is printed with the table because load
inflates every number.

Run: `.venv/bin/python benchmarks/bench_vf_simt.py`. Not a test: nothing here asserts a time.
"""
from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable

import torch

import pypto_pro.language as pl
from pypto_pro.ir.dtype import DataType
from pypto_pro.ir.types import MemorySpace
from pypto_pro.runtime.backends import register_backend, use_backend
from pypto_pro.runtime.backends.sim import SimBackend
from pypto_pro.runtime.kernel_def import Specialization
from pypto_pro.sim.model.memory import CoreMemory, TileGeometry, TileRef
from pypto_pro.sim.frontend.simt import SimtLaunch, compile_simt
from pypto_pro.soc import soc

Row = tuple[str, str, float, float | None]


def _median_ms(fn: Callable[[], object], repeats: int) -> float:
    fn()  # warm-up (compilation, caches)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


# ---------------------------------------------------------------- SIMT

SIMT_N = 2048


@pl.simt.function(max_threads=SIMT_N)
def _add_delta(data: pl.Tile[[1, SIMT_N], pl.DT_FP32], delta: pl.DT_FP32):
    tid = pl.simt.thread_idx().x
    data[0, tid] = data[0, tid] + delta


@pl.jit(arch="a5")
def _simt_add(src: pl.Tensor[[1, SIMT_N], pl.DT_FP32], dst: pl.Tensor[[1, SIMT_N], pl.DT_FP32],
              delta: pl.DT_FP32):
    with pl.section_vector():
        ring = pl.make_tile_group(type=pl.TileType([1, SIMT_N], pl.DT_FP32), addrs=0x0,
                                  mutex_ids=[0])
        data = ring.next()
        pl.load(data, src, [0, 0])
        pl.simt.launch(_add_delta, threads=SIMT_N, args=(data, delta))
        pl.store(dst, data, [0, 0])


@pl.simt.function
def _bump(v, delta):  # a `__simt_callee__` with a divergent early return
    if v < 0.0:
        return v - delta
    return v + delta


@pl.simt.function(max_threads=SIMT_N)
def _bump_all(data: pl.Tile[[1, SIMT_N], pl.DT_FP32], delta: pl.DT_FP32):
    tid = pl.simt.thread_idx().x
    data[0, tid] = _bump(data[0, tid], delta)


@pl.jit(arch="a5")
def _simt_bump(src: pl.Tensor[[1, SIMT_N], pl.DT_FP32], dst: pl.Tensor[[1, SIMT_N], pl.DT_FP32],
               delta: pl.DT_FP32):
    with pl.section_vector():
        ring = pl.make_tile_group(type=pl.TileType([1, SIMT_N], pl.DT_FP32), addrs=0x0,
                                  mutex_ids=[0])
        data = ring.next()
        pl.load(data, src, [0, 0])
        pl.simt.launch(_bump_all, threads=SIMT_N, args=(data, delta))
        pl.store(dst, data, [0, 0])


def _launch_rows(name: str, jit_kernel, entry: str,
                 reference: Callable[[torch.Tensor], torch.Tensor]) -> list[Row]:
    """The `simt.launch` instruction alone (2048 threads, delta 1.0) and the whole kernel on
    the functional and the timing simulator; `entry`: the SIMT function's name."""
    compiled = jit_kernel.compile(Specialization(arch="a5"))
    program = compiled.programs["vector"]
    fn = next(f for f in program.functions if f.name.startswith(entry))
    kernel = compile_simt(fn, {f.name: f for f in program.functions})
    tile = TileRef(CoreMemory(soc(), "aiv"), TileGeometry(1, SIMT_N, DataType.FP32,
                                                           MemorySpace.Vec))
    tile.write(torch.randn(1, SIMT_N))
    expected = tile.read()

    def one_launch() -> None:
        launch = SimtLaunch(kernel, (SIMT_N, 1, 1), None)
        launch.execute([tile, 1.0])
        launch.commit([tile, 1.0])

    repeats = 50
    rows: list[Row] = [(name, "simt.launch instruction", _median_ms(one_launch, repeats), 20.0)]
    for _ in range(repeats + 1):  # the warm-up and every timed launch
        expected = reference(expected)
    assert torch.equal(tile.read(), expected)
    x, y = torch.randn(1, SIMT_N), torch.zeros(1, SIMT_N)
    register_backend("bench-functional", lambda: SimBackend(functional_only=True))
    for backend, label in (("bench-functional", "whole kernel, functional sim"),
                           ("sim", "whole kernel, timing sim + Trace")):
        with use_backend(backend):
            rows.append((name, label, _median_ms(lambda: jit_kernel(x, y, 1.0), 20), None))
        assert torch.equal(y, reference(x))
    return rows


def simt_launch_2048() -> list[Row]:
    return _launch_rows("SIMT add, 2048 threads, [1, 2048] tile", _simt_add, "_add",
                        lambda t: t + 1.0)


def simt_callee_2048() -> list[Row]:
    return _launch_rows("SIMT callee (divergent return), 2048 threads", _simt_bump, "_bump_all",
                        lambda t: torch.where(t < 0.0, t - 1.0, t + 1.0))


# ---------------------------------------------------------------- VF (Reg API)


def vf_softmax_4096x1024() -> list[Row]:
    """The `vf_softmax` example (one VF section per 8-row tile) at 4096×1024 FP32 on 32 blocks,
    one timed launch on the timing simulator (a launch is ~10^6 register ops: no repeats)."""
    from pypto_pro.examples import vf_softmax as m

    args = m.make_inputs(4096, 1024, seed=0)
    warm = m.make_inputs(16, 1024, seed=0)
    with use_backend("sim"):
        m.vf_softmax_kernel[None, 2](*warm)  # compile outside the measurement
        t0, c0 = time.perf_counter(), time.process_time()
        m.vf_softmax_kernel[None, 32](*args)
        ms, cpu_ms = (time.perf_counter() - t0) * 1e3, (time.process_time() - c0) * 1e3
    torch.testing.assert_close(args[1], m.reference(*args), rtol=m.RTOL, atol=m.ATOL)
    name = "VF softmax 4096×1024 FP32, 32 blocks"
    return [(name, "whole kernel, timing sim + Trace (wall)", ms, 30_000.0),
            (name, "the same launch, CPU time of this process (less load-sensitive)", cpu_ms,
             None)]


CASES: list[Callable[[], list[Row]]] = [simt_launch_2048, simt_callee_2048,
                                         vf_softmax_4096x1024]


def main() -> None:
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} "
          f"({os.cpu_count()} cores), torch threads {torch.get_num_threads()}\n")
    print("| case | measurement | median ms | target ms |")
    print("|---|---|---:|---:|")
    for case in CASES:
        for name, what, ms, target in case():
            mark = "" if target is None else (" ✓" if ms <= target else " ✗")
            print(f"| {name} | {what} | {ms:.2f}{mark} | {'' if target is None else target} |")


if __name__ == "__main__":
    main()
