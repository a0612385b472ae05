"""Simulator fidelity: simulated time against published measurements (spec
`ascend_950_model.md` §1.4 and §7). Issue targets: GEMMs within ±15 % of the published time,
the double-buffered add at ≥ 80 % of the HBM roofline.

Cases
* fp16 GEMM 6144³ on 910B1 parameters (`Ascend910B1`, 24 AIC) against pto-isa's A3 measurement
  of 1.506 ms [PTO-GEMM README], and the pipe busy ratios it reports (cube 86.7 %, TEXTRACT
  68.1 %, TLOAD 95.2 %, TSTORE 3.1 %).
* MXFP8 GEMM 6144³ on the 32-core 950PR (`Ascend950PR_9589`) against pto-isa's A5 measurement
  of 0.602 ms (cube 91.6 %, TEXTRACT 57.3 %, TLOAD 98.2 %, TSTORE 3.5 %) [PTO-MXFP8 README].
* double-buffered fp16 add 8192×4096 with 64 blocks on 950PR against the HBM roofline
  3·8192·4096·2 B / 1.6 TB/s = 125.8 µs (§7.1).

The GEMMs are DSL kernels written here in the style of pto-isa's hand-tuned ones: each AIC owns
a singleCoreM × singleCoreN block of C (910B1: 1536×1024 on a 4×6 grid; 950: 1536×768 on 4×8);
base tiles [baseM, baseN, baseK] = [128, 256, 64] (fp16) / [128, 256, 128] (fp8); L1 panels of
stepK = 4 base K blocks, double buffered (L1 384 KiB of 512); L0A/L0B double buffered; one L0C
tile on 910B1 (128 KiB L0C), two on 950 (256 KiB); the MX scales are loaded per 1024 K
(pto-isa's mxScalePara = 8) and moved to ScaleLeft/ScaleRight per base K block. All buffers are
tile groups with mutex ids, so auto_mutex orders MTE2 → MTE1 → M → FIX.

Timing at full size. The GEMMs run with `SimBackend(timing_only=True)`: the same engine, cost
model and Trace, but the op library is skipped (no values), which makes the full K = 6144 loop
affordable (~10× faster; the kernels' control flow does not read data). The script checks that
timing-only and the full simulation give the same simulated time on a reduced problem, and
checks the values of both GEMMs against torch on small shapes in functional-only mode
(`SimBackend(functional_only=True)`). `--k-fp16 K1 K2` / `--k-mx K1 K2` simulate reduced K
values instead and EXTRAPOLATE linearly in K to 6144 (t = a + b·K; pick K ≥ 1024 so that the
K loop, not the C stores, dominates each C tile); the table then says so.

The memory side is the simulator's chip model (`pypto_pro.sim.memory_system`): one L2 shared by
all cores (192 MiB on 910B1, 128 MiB on 950, 512 B lines, LRU, write-back), per-core transfers
at the INI L2-side rates, HBM only for misses and write-backs. "HBM ≥" in the bounds column is
the compulsory traffic (A, B, scales read once, C written once).

What-ifs (rows that are NOT the model, to show what a number is worth): `--what-if-no-l2`
(`l2_bytes = 0`: every access waits for HBM, in whole lines) and `--what-if-queue-depth N`
(the SoC's `pipe_queue_depth` set to N).

Run: `python benchmarks/bench_sim_fidelity.py [--what-if-no-l2] [--what-if-queue-depth 32]
[--no-write]`. Prints markdown
tables and (unless `--no-write`) updates its section of `benchmarks/results/sim_latest.md`.
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from dataclasses import dataclass, field

import torch

import pypto_pro.language as pl
from pypto_pro.runtime.backends import register_backend, use_backend
from pypto_pro.runtime.backends.sim import SimBackend
from pypto_pro.sim.soc import soc as make_soc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_sim_speed import update_results

FULL_K = 6144
PIPES = {"M": "cube (TMATMUL)", "MTE1": "TEXTRACT", "MTE2": "TLOAD", "FIX": "TSTORE"}


# ---------------------------------------------------------------- the DSL GEMM kernels


def make_gemm_fp16(scm: int, scn: int, bm: int = 128, bn: int = 256, bk: int = 64,
                   step: int = 4, acc_slots: int = 1):
    """C[M, N] fp32 = A[M, K] fp16 @ B[K, N] fp16; block b owns C[(b % mc)·scm.., (b // mc)·scn..]
    with mc = M // scm."""
    pk = bk * step
    a_l1_t = pl.TileType([bm, pk], pl.DT_FP16, pl.MemorySpace.Mat)
    b_l1_t = pl.TileType([pk, bn], pl.DT_FP16, pl.MemorySpace.Mat)
    a_l0_t = pl.TileType([bm, bk], pl.DT_FP16, pl.MemorySpace.Left)
    b_l0_t = pl.TileType([bk, bn], pl.DT_FP16, pl.MemorySpace.Right)
    c_l0_t = pl.TileType([bm, bn], pl.DT_FP32, pl.MemorySpace.Acc)
    a_b, b_b = bm * pk * 2, pk * bn * 2
    a_addrs, b_addrs = [0, a_b], [2 * a_b, 2 * a_b + b_b]
    l0a_addrs, l0b_addrs = [0, bm * bk * 2], [0, bk * bn * 2]
    acc_addrs = [i * bm * bn * 4 for i in range(acc_slots)]
    acc_ids = [8 + i for i in range(acc_slots)]
    n_tiles = scn // bn
    tiles = (scm // bm) * n_tiles

    @pl.jit(arch="a5", name="gemm_fp16")
    def gemm_fp16(a: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP16],
                  b: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP16],
                  c: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP32]):
        with pl.section_cube():
            a_l1 = pl.make_tile_group(type=a_l1_t, addrs=a_addrs, mutex_ids=[0, 1])
            b_l1 = pl.make_tile_group(type=b_l1_t, addrs=b_addrs, mutex_ids=[2, 3])
            left = pl.make_tile_group(type=a_l0_t, addrs=l0a_addrs, mutex_ids=[4, 5])
            right = pl.make_tile_group(type=b_l0_t, addrs=l0b_addrs, mutex_ids=[6, 7])
            acc = pl.make_tile_group(type=c_l0_t, addrs=acc_addrs, mutex_ids=acc_ids)
            m_cores = a.shape[0] // scm
            k_panels = a.shape[1] // pk
            blk = pl.get_block_idx()
            row0 = (blk % m_cores) * scm
            col0 = (blk // m_cores) * scn
            for t in pl.range(tiles):
                row = row0 + (t // n_tiles) * bm
                col = col0 + (t % n_tiles) * bn
                c0 = acc.next()
                for kp in pl.range(k_panels):
                    a1 = a_l1.next()
                    pl.load(a1, a, [row, kp * pk])
                    b1 = b_l1.next()
                    pl.load(b1, b, [kp * pk, col])
                    for kk in pl.range(step):
                        a0 = left.next()
                        pl.move(a0, a1, [0, kk * bk])  # TEXTRACT of one base K block
                        b0 = right.next()
                        pl.move(b0, b1, [kk * bk, 0])
                        if kp + kk == 0:
                            pl.matmul(c0, a0, b0)
                        else:
                            pl.matmul_acc(c0, c0, a0, b0)
                pl.store(c, c0, [row, col])

    return gemm_fp16


def make_gemm_mxfp8(scm: int, scn: int, bm: int = 128, bn: int = 256, bk: int = 128,
                    step: int = 4, scale_k: int = 1024, acc_slots: int = 2):
    """C[M, N] bf16 = (A·2^sa)[M, K] @ (B·2^sb)[K, N]: A, B fp8 e5m2, E8M0 scales sa [M, K/32],
    sb [K/32, N] (one per 32 K), FP32 accumulation in L0C, bf16 out through the fixpipe."""
    pk, sg = bk * step, scale_k // 32
    f8, e8 = pl.DT_FP8E5M2, pl.DT_FP8E8M0
    a_l1_t = pl.TileType([bm, pk], f8, pl.MemorySpace.Mat)
    b_l1_t = pl.TileType([pk, bn], f8, pl.MemorySpace.Mat)
    sa_l1_t = pl.TileType([bm, sg], e8, pl.MemorySpace.Mat)
    sb_l1_t = pl.TileType([sg, bn], e8, pl.MemorySpace.Mat)
    a_l0_t = pl.TileType([bm, bk], f8, pl.MemorySpace.Left)
    b_l0_t = pl.TileType([bk, bn], f8, pl.MemorySpace.Right)
    sa_l0_t = pl.TileType([bm, bk // 32], e8, pl.MemorySpace.ScaleLeft)
    sb_l0_t = pl.TileType([bk // 32, bn], e8, pl.MemorySpace.ScaleRight)
    c_l0_t = pl.TileType([bm, bn], pl.DT_FP32, pl.MemorySpace.Acc)
    a_b, b_b, sa_b, sb_b = bm * pk, pk * bn, bm * sg, sg * bn
    a_addrs = [0, a_b]
    b_addrs = [2 * a_b, 2 * a_b + b_b]
    sa_addrs = [2 * (a_b + b_b), 2 * (a_b + b_b) + sa_b]
    sb_addrs = [2 * (a_b + b_b + sa_b), 2 * (a_b + b_b + sa_b) + sb_b]
    l0a_addrs, l0b_addrs = [0, bm * bk], [0, bk * bn]
    sl_addrs, sr_addrs = [0, bm * bk // 32], [0, bk // 32 * bn]
    acc_addrs = [i * bm * bn * 4 for i in range(acc_slots)]
    acc_ids = [8 + i for i in range(acc_slots)]
    n_tiles = scn // bn
    tiles = (scm // bm) * n_tiles
    panels = scale_k // pk  # data panels per scale panel
    groups = bk // 32  # scale groups per base K block

    @pl.jit(arch="a5", name="gemm_mxfp8")
    def gemm_mxfp8(a: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP8E5M2],
                   b: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP8E5M2],
                   sa: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP8E8M0],
                   sb: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP8E8M0],
                   c: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_BF16]):
        with pl.section_cube():
            a_l1 = pl.make_tile_group(type=a_l1_t, addrs=a_addrs, mutex_ids=[0, 1])
            b_l1 = pl.make_tile_group(type=b_l1_t, addrs=b_addrs, mutex_ids=[2, 3])
            sa_l1 = pl.make_tile_group(type=sa_l1_t, addrs=sa_addrs, mutex_ids=[10, 11])
            sb_l1 = pl.make_tile_group(type=sb_l1_t, addrs=sb_addrs, mutex_ids=[12, 13])
            left = pl.make_tile_group(type=a_l0_t, addrs=l0a_addrs, mutex_ids=[4, 5])
            right = pl.make_tile_group(type=b_l0_t, addrs=l0b_addrs, mutex_ids=[6, 7])
            s_left = pl.make_tile_group(type=sa_l0_t, addrs=sl_addrs, mutex_ids=[14, 15])
            s_right = pl.make_tile_group(type=sb_l0_t, addrs=sr_addrs, mutex_ids=[16, 17])
            acc = pl.make_tile_group(type=c_l0_t, addrs=acc_addrs, mutex_ids=acc_ids)
            m_cores = a.shape[0] // scm
            k_scales = a.shape[1] // scale_k
            blk = pl.get_block_idx()
            row0 = (blk % m_cores) * scm
            col0 = (blk // m_cores) * scn
            for t in pl.range(tiles):
                row = row0 + (t // n_tiles) * bm
                col = col0 + (t % n_tiles) * bn
                c0 = acc.next()
                for ks in pl.range(k_scales):
                    sa1 = sa_l1.next()
                    pl.load(sa1, sa, [row, ks * sg])
                    sb1 = sb_l1.next()
                    pl.load(sb1, sb, [ks * sg, col])
                    for kp in pl.range(panels):
                        k0 = ks * scale_k + kp * pk
                        a1 = a_l1.next()
                        pl.load(a1, a, [row, k0])
                        b1 = b_l1.next()
                        pl.load(b1, b, [k0, col])
                        for kk in pl.range(step):
                            g = (kp * step + kk) * groups
                            a0 = left.next()
                            pl.move(a0, a1, [0, kk * bk])
                            b0 = right.next()
                            pl.move(b0, b1, [kk * bk, 0])
                            sa0 = s_left.next()
                            pl.move(sa0, sa1, [0, g])
                            sb0 = s_right.next()
                            pl.move(sb0, sb1, [g, 0])
                            if ks + kp + kk == 0:
                                pl.matmul_mx(c0, a0, b0, sa0, sb0)
                            else:
                                pl.matmul_mx_acc(c0, c0, a0, b0, sa0, sb0)
                pl.store(c, c0, [row, col])

    return gemm_mxfp8


def fp16_inputs(m: int, n: int, k: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    a = (torch.randn(m, k, generator=g) / 8).half()
    b = (torch.randn(k, n, generator=g) / 8).half()
    return a, b, torch.zeros(m, n)


def mx_inputs(m: int, n: int, k: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    a = (torch.randn(m, k, generator=g) / 4).to(torch.float8_e5m2)
    b = (torch.randn(k, n, generator=g) / 4).to(torch.float8_e5m2)
    e8 = torch.float8_e8m0fnu
    sa = torch.randint(124, 131, (m, k // 32), generator=g, dtype=torch.uint8).view(e8)
    sb = torch.randint(124, 131, (k // 32, n), generator=g, dtype=torch.uint8).view(e8)
    return a, b, sa, sb, torch.zeros(m, n, dtype=torch.bfloat16)


def mx_reference(a, b, sa, sb) -> torch.Tensor:
    fa = a.double() * torch.exp2(sa.view(torch.uint8).double() - 127).repeat_interleave(32, 1)
    fb = b.double() * torch.exp2(sb.view(torch.uint8).double() - 127).repeat_interleave(32, 0)
    return fa @ fb


# ---------------------------------------------------------------- measuring


@dataclass
class Point:
    k: int
    us: float
    busy_us: dict[str, float]  # mean busy µs per core, by pipe
    wall_s: float
    events: int


@dataclass
class Fit:
    points: list[Point] = field(default_factory=list)

    def at(self, k: int, value) -> float:
        """Least-squares line through (K, value(point)) evaluated at k (exact for 2 points)."""
        xs = [p.k for p in self.points]
        ys = [value(p) for p in self.points]
        if len(xs) == 1:
            return ys[0] * k / xs[0]
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
        return my + slope * (k - mx)


def simulate(kernel, inputs, blocks: int, backend: str) -> Point:
    with use_backend(backend):
        t0 = time.perf_counter()
        kernel[None, blocks](*inputs)
        wall = time.perf_counter() - t0
    trace = kernel.last_trace
    util = trace.pipe_utilization()
    busy = {str(r.pipe): r.busy_us / r.cores for r in util.itertuples()}
    return Point(inputs[0].shape[1], trace.duration_us, busy, wall, len(trace.events))


def run_gemm(kind: str, backend: str, k_values: list[int]) -> Fit:
    fit = Fit()
    _run_points(fit, kind, backend, k_values)
    return fit


def _run_points(fit: Fit, kind: str, backend: str, k_values: list[int]) -> None:
    for k in k_values:
        if kind == "fp16":
            kernel = make_gemm_fp16(1536, 1024)
            inputs, blocks = fp16_inputs(FULL_K, FULL_K, k), 24
        else:
            kernel = make_gemm_mxfp8(1536, 768)
            inputs, blocks = mx_inputs(FULL_K, FULL_K, k), 32
        fit.points.append(simulate(kernel, inputs, blocks, backend))
        p = fit.points[-1]
        print(f"  {kind} on {backend}: K={k}: {p.us:.1f} µs simulated in {p.wall_s:.1f} s wall "
              f"({p.events:,} events)", file=sys.stderr)


def check_timing_only() -> str:
    """timing_only gives the same simulated time as the full simulation (reduced problem)."""
    kernel = make_gemm_fp16(1536, 1024)
    inputs = fp16_inputs(3072, 2048, 512, seed=2)
    full = simulate(kernel, inputs, 4, "sim-910b1-full")
    fast = simulate(kernel, fp16_inputs(3072, 2048, 512, seed=2), 4, "sim-910b1")
    same = "identical" if full.us == fast.us and full.events == fast.events else "DIFFERENT"
    return (f"timing-only vs full simulation, fp16 GEMM 3072×2048×512 on 4 blocks (910B1): "
            f"{fast.us:.2f} µs vs {full.us:.2f} µs, {fast.events:,} vs {full.events:,} events "
            f"({same}); wall {fast.wall_s:.1f} s vs {full.wall_s:.1f} s")


def check_values() -> list[str]:
    """Small GEMMs in functional-only mode against torch (the kernels compute the right thing)."""
    out = [check_timing_only()]
    with use_backend("sim-values"):
        a, b, c = fp16_inputs(512, 1024, 512, seed=1)
        make_gemm_fp16(256, 512)[None, 4](a, b, c)
        err = (c - a.float() @ b.float()).abs().max().item()
        out.append(f"fp16 GEMM 512×1024×512 (4 blocks): max |error| vs torch fp32 = {err:.2e}")
        a, b, sa, sb, c = mx_inputs(256, 512, 2048, seed=1)
        make_gemm_mxfp8(128, 256)[None, 4](a, b, sa, sb, c)
        ref = mx_reference(a, b, sa, sb)
        err = (c.double() - ref).abs()
        ulps = (err / torch.exp2(torch.floor(torch.log2(ref.abs().clamp_min(1e-30))) - 7)).max()
        out.append(f"MXFP8 GEMM 256×512×2048 (4 blocks): max |error| vs float64 = "
                   f"{err.max().item():.2e} = {ulps.item():.2f} bf16 ulp of the exact value "
                   f"(≤ 1 expected: fp32 accumulation, one rounding to bf16)")
    return out


def run_add() -> tuple[float, float, float]:
    from pypto_pro.examples import load

    m = load("vector_add")
    x, y, z = m.make_inputs(8192, 4096, seed=0)
    with use_backend("sim"):
        t0 = time.perf_counter()
        m.add_kernel[None, 64](x, y, z)
        wall = time.perf_counter() - t0
    assert torch.equal(z, x + y)
    s = make_soc("Ascend950PR_9589")
    roof_us = 3 * 8192 * 4096 * 2 / s.hbm_bytes_per_s * 1e6
    return m.add_kernel.last_trace.duration_us, roof_us, wall


# ---------------------------------------------------------------- report


PUBLISHED = {
    "fp16": {"us": 1506.0, "soc": "Ascend910B1", "cores": 24,
             "ratios": {"M": 86.7, "MTE1": 68.1, "MTE2": 95.2, "FIX": 3.1},
             "source": "pto-isa kernels/manual/a2a3/gemm_performance README (A3, 24 cores)"},
    "mx": {"us": 602.0, "soc": "Ascend950PR_9589", "cores": 32,
           "ratios": {"M": 91.6, "MTE1": 57.3, "MTE2": 98.2, "FIX": 3.5},
           "source": "pto-isa kernels/manual/a5/matmul_mxfp8_performance README (A5, 4×8 cores)"},
}
LABEL = {"fp16": "fp16 GEMM 6144³", "mx": "MXFP8 GEMM 6144³"}
ABOVE_ROOF = " (above: part of the output is still dirty in the 128 MiB L2 when the add ends)"


def bounds(kind: str, soc_name: str) -> tuple[float, float, float]:
    """Model lower bounds in µs at K = 6144: cube (fractals per cycle, §7.2), chip HBM for the
    compulsory bytes (inputs read once, C written once), per-core GM→L1 (L2-side) rate."""
    s = make_soc(soc_name)
    f = s.clock_hz
    if kind == "fp16":
        scm, scn, bm, bn, esz, k0 = 1536, 1024, 128, 256, 2, 16
    else:
        scm, scn, bm, bn, esz, k0 = 1536, 768, 128, 256, 1, 32
    cube = (scm // 16) * (scn // 16) * (FULL_K // k0) / f * 1e6
    tiles = (scm // bm) * (scn // bn)
    per_core = tiles * (bm + bn) * FULL_K * esz * (1 + (1 / 32 if kind == "mx" else 0))
    in_bytes = 2 * FULL_K * FULL_K * esz * (1 + (1 / 32 if kind == "mx" else 0))
    out_bytes = FULL_K * FULL_K * (4 if kind == "fp16" else 2)
    hbm = (in_bytes + out_bytes) / s.hbm_bytes_per_s * 1e6
    mte2 = per_core / s.mte_rates["gm_to_l1"] / f * 1e6
    return cube, hbm, mte2


def gemm_rows(kind: str, fit: Fit, what_ifs: list[tuple[str, Fit]]
              ) -> tuple[list[str], list[str]]:
    pub = PUBLISHED[kind]
    sim = fit.at(FULL_K, lambda p: p.us)
    cube, hbm, mte2 = bounds(kind, pub["soc"])
    ks = ("full K = 6144" if [p.k for p in fit.points] == [FULL_K] else
          "K=" + "+".join(str(p.k) for p in fit.points) + " → 6144 extrapolated")
    err = (sim / pub["us"] - 1) * 100
    rows = [(f"| {LABEL[kind]} | {pub['soc']} | {pub['cores']} | {ks} | {sim:,.1f} | "
             f"{pub['us']:,.1f} | {err:+.1f}%{' ✓' if abs(err) <= 15 else ' ✗'} | "
             f"cube ≥ {cube:,.0f}, HBM ≥ {hbm:,.0f}, per-core MTE2 ≥ {mte2:,.0f} |")]
    for label, what_if in what_ifs:
        wi = what_if.at(FULL_K, lambda p: p.us)
        rows.append(f"| {LABEL[kind]}, what-if {label} (NOT the model) | {pub['soc']} | "
                    f"{pub['cores']} | {ks} | {wi:,.1f} | {pub['us']:,.1f} | "
                    f"{(wi / pub['us'] - 1) * 100:+.1f}% | |")
    ratio_rows = []
    for pipe, name in PIPES.items():
        cells = []
        for f in [fit] + [w for _, w in what_ifs]:
            total = f.at(FULL_K, lambda p: p.us)
            busy = f.at(FULL_K, lambda p, q=pipe: p.busy_us.get(q, 0.0))
            cells.append(f"{busy / total * 100:.1f}%")
        ratio_rows.append(f"| {LABEL[kind]} | {name} | {' | '.join(cells)} | "
                          f"{pub['ratios'][pipe]:.1f}% |")
    return rows, ratio_rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--k-fp16", type=int, nargs="+", default=[FULL_K],
                    help="K values simulated for the fp16 GEMM (multiples of 256; other than "
                         "6144: extrapolated linearly)")
    ap.add_argument("--k-mx", type=int, nargs="+", default=[FULL_K],
                    help="K values simulated for the MXFP8 GEMM (multiples of 1024; other than "
                         "6144: extrapolated linearly)")
    ap.add_argument("--what-if-no-l2", action="store_true",
                    help="also simulate the GEMMs without an L2 (l2_bytes = 0; not the model)")
    ap.add_argument("--what-if-queue-depth", type=int, default=None, metavar="N",
                    help="also simulate the GEMMs with pipe_queue_depth = N (not the model)")
    ap.add_argument("--skip-gemm", action="store_true", help="only the add")
    ap.add_argument("--no-write", action="store_true", help="do not update sim_latest.md")
    args = ap.parse_args()
    t_start = time.perf_counter()

    register_backend("sim-910b1", lambda: SimBackend(soc_name="Ascend910B1", timing_only=True))
    register_backend("sim-950pr", lambda: SimBackend(soc_name="Ascend950PR_9589",
                                                     timing_only=True))
    register_backend("sim-values", lambda: SimBackend(functional_only=True))
    register_backend("sim-910b1-full", lambda: SimBackend(soc_name="Ascend910B1"))
    what_ifs: dict[str, dict] = {}  # label -> SoC overrides (NOT the model)
    if args.what_if_no_l2:
        what_ifs["no L2"] = {"l2_bytes": 0}
    if args.what_if_queue_depth:
        what_ifs[f"queue depth {args.what_if_queue_depth}"] = {
            "pipe_queue_depth": args.what_if_queue_depth}
    for label, overrides in what_ifs.items():
        for backend, soc_name in (("sim-910b1", "Ascend910B1"), ("sim-950pr", "Ascend950PR_9589")):
            register_backend(f"{backend}-{label}", lambda n=soc_name, o=overrides: SimBackend(
                soc=make_soc(n, **o), timing_only=True))

    sim_us, roof_us, add_wall = run_add()
    print(f"  add: {sim_us:.1f} µs simulated in {add_wall:.1f} s", file=sys.stderr)
    lines = [("| case | SoC | cores | simulated K | simulated µs | published µs | error | "
              "model bounds µs (K = 6144) |"), "|---|---|---:|---|---:|---:|---:|---|"]
    ratio_lines = ["| case | pipe | simulated busy | " + "".join(
        f"what-if {v} | " for v in what_ifs) + "published busy |",
        "|---|---|---:|" + "---:|" * len(what_ifs) + "---:|"]
    notes = []
    if not args.skip_gemm:
        notes = check_values()
        for kind, backend, k_values in (("fp16", "sim-910b1", args.k_fp16),
                                        ("mx", "sim-950pr", args.k_mx)):
            fit = run_gemm(kind, backend, k_values)
            variants = [(label, run_gemm(kind, f"{backend}-{label}", k_values))
                        for label in what_ifs]
            rows, ratios = gemm_rows(kind, fit, variants)
            lines += rows
            ratio_lines += ratios
    pct = roof_us / sim_us * 100
    lines.append(f"| fp16 add 8192×4096, double buffered | Ascend950PR_9589 | 64 AIV | full | "
                 f"{sim_us:,.1f} | roofline {roof_us:,.1f} | {pct:.1f}% of roofline"
                 f"{' ✓' if pct >= 80 else ' ✗'} | HBM 1.6 TB/s, 3·8192·4096·2 B"
                 f"{ABOVE_ROOF if pct > 100 else ''} |")
    env = (f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}, torch "
           f"{torch.__version__}, Python {platform.python_version()}")
    text = "\n".join(lines)
    if len(ratio_lines) > 2:
        text += "\n\nPipe busy ratios at K = 6144 (mean busy per core / kernel time):\n\n" \
            + "\n".join(ratio_lines)
    if notes:
        text += "\n\nChecks:\n\n" + "\n".join(f"* {n}" for n in notes)
    text += (f"\n\nGEMMs simulated with `timing_only=True` (same timing as the full simulation, "
             f"no values). Whole run {time.perf_counter() - t_start:.0f} s wall ({env}).")
    print(text)
    if not args.no_write:
        update_results("bench_sim_fidelity", "## Simulator fidelity (`bench_sim_fidelity.py`)\n\n"
                       + text + "\n")


if __name__ == "__main__":
    main()
