"""SIMT launches on the simulator (spec §2.14): 1-D, 2-D and 3-D thread geometries, divergent
control flow and callees, multicore launches, the launch as a pipe-V instruction between SIMD
ops (flags, auto_mutex), cost and diagnostics. Each kernel in `CASES` is checked against a
per-thread Python reference here and against the native backend in
`tests/pypto_pro/native/test_native_simt.py`.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import torch

import pypto_pro.language as pl
from pypto_pro.errors import SimulationError
from pypto_pro.runtime import backends
from pypto_pro.runtime.backends import register_backend, use_backend
from pypto_pro.runtime.backends.sim import SimBackend

F32, I32 = pl.DT_FP32, pl.DT_INT32
MTE2, V, MTE3 = pl.PipeType.MTE2, pl.PipeType.V, pl.PipeType.MTE3


def _flag(src, dst, event):
    pl.system.sync_src(set_pipe=src, wait_pipe=dst, event_id=event)
    pl.system.sync_dst(set_pipe=src, wait_pipe=dst, event_id=event)


# ---------------------------------------------------------------- 2-D: a [4, 64] tile


@pl.simt.function(max_threads=256)
def grid_2d(t: pl.Tile[[4, 64], F32], scale: F32):
    c = pl.simt.thread_idx().x
    r = pl.simt.thread_idx().y
    if c < t.valid_shape[1]:
        t[r, c] = t[r, c] * scale + pl.simt.cast(r * pl.simt.block_dim().x + c, F32)


@pl.jit(arch="a5")
def launch_2d(x: pl.Tensor[[4, 64], F32], y: pl.Tensor[[4, 64], F32], scale: F32):
    with pl.section_vector():
        t = pl.make_tile(pl.TileType([4, 64], F32, valid_shape=[4, 48]), addr=0)
        pl.load(t, x, [0, 0])
        _flag(MTE2, V, 0)
        pl.simt.launch(grid_2d, threads=(64, 4), args=(t, scale))
        _flag(V, MTE3, 1)
        pl.store(y, t, [0, 0])


def _inputs_2d():
    return [torch.randn(4, 64), torch.zeros(4, 64), 0.5]


def _ref_2d(x, y, scale):
    out = torch.zeros(4, 64)
    for r in range(4):
        for c in range(48):
            out[r, c] = x[r, c] * scale + float(r * 64 + c)
    return out


# ---------------------------------------------------------------- 3-D: GM only


@pl.simt.function(max_threads=512)
def grid_3d(g: pl.Tensor[[2, 4, 8], I32], info: pl.Tensor[[4], I32]):
    x = pl.simt.thread_idx().x
    y = pl.simt.thread_idx().y
    z = pl.simt.thread_idx().z
    g[z, y, x] = pl.simt.linear_thread_idx() * 10 + z * 100 + y
    if pl.simt.linear_thread_idx() == 0:
        info[0] = pl.simt.warp_size()
        info[1] = pl.simt.block_dim().x * pl.simt.block_dim().y * pl.simt.block_dim().z
        info[2] = pl.simt.block_idx().x
        info[3] = pl.simt.grid_dim().x


@pl.jit(arch="a5")
def launch_3d(g: pl.Tensor[[2, 4, 8], I32], info: pl.Tensor[[4], I32]):
    with pl.section_vector():
        pl.simt.launch(grid_3d, threads=(8, 4, 2), args=(g, info))


def _inputs_3d():
    return [torch.zeros(2, 4, 8, dtype=torch.int32), torch.zeros(4, dtype=torch.int32)]


def _ref_3d(g, info):
    z, y, x = torch.meshgrid(torch.arange(2), torch.arange(4), torch.arange(8), indexing="ij")
    return (((z * 4 + y) * 8 + x) * 10 + z * 100 + y).to(torch.int32)


# ---------------------------------------------------------------- divergence, callees


@pl.simt.function
def root_plus_one(v):  # a callee with an early return: inlined into the entry
    if v < 0.0:
        return 0.0
    return pl.simt.sqrt(v + 1.0)


@pl.simt.function(max_threads=128)
def diverge(t: pl.Tile[[1, 128], F32], k: F32):
    tid = pl.simt.thread_idx().x
    acc = 0.0
    for i in pl.range(tid % 7):  # per-thread trip count
        if i == 4:
            break
        if i % 2 == 1:
            continue
        acc = acc + k * pl.simt.cast(i + 1, F32)
    n = 0
    while n * n < tid:
        n = n + 1
    if tid % 3 == 0:
        acc = acc * 2.0 + t[0, tid]
    elif tid % 3 == 1:
        acc = root_plus_one(acc)
    else:
        acc = pl.simt.max(acc, t[0, tid])
    t[0, tid] = acc + pl.simt.cast(n, F32)


@pl.jit(arch="a5")
def launch_diverge(x: pl.Tensor[[1, 128], F32], y: pl.Tensor[[1, 128], F32], k: F32):
    with pl.section_vector():
        t = pl.make_tile(pl.TileType([1, 128], F32), addr=0x100)
        pl.load(t, x, [0, 0])
        _flag(MTE2, V, 0)
        pl.simt.launch(diverge, threads=128, args=(t, k))
        _flag(V, MTE3, 1)
        pl.store(y, t, [0, 0])


def _inputs_diverge():
    return [torch.randn(1, 128), torch.zeros(1, 128), 0.75]


def _ref_diverge(x, y, k):
    f32 = torch.float32
    out = torch.zeros(1, 128)
    for tid in range(128):
        acc = torch.tensor(0.0)
        for i in range(tid % 7):
            if i == 4:
                break
            if i % 2 == 1:
                continue
            acc = acc + torch.tensor(k, dtype=f32) * (i + 1)
        n = 0
        while n * n < tid:
            n += 1
        v = x[0, tid]
        if tid % 3 == 0:
            acc = acc * 2.0 + v
        elif tid % 3 == 1:
            acc = torch.sqrt(acc + 1.0)
        else:
            acc = torch.maximum(acc, v)
        out[0, tid] = acc + n
    return out


# ---------------------------------------------------------------- multicore + GM atomics


@pl.simt.function(max_threads=256)
def count_positive(t: pl.Tile[[1, 256], F32], total: pl.Tensor[[1, 8], I32]):
    tid = pl.simt.thread_idx().x
    if t[0, tid] > 0.0:
        pl.simt.atomic_add(total[0, 0], 1)
        t[0, tid] = 1.0
    else:
        t[0, tid] = 0.0
    pl.simt.atomic_max(total[0, 1], tid)


@pl.jit(arch="a5")
def launch_multicore(x: pl.Tensor[[8, 256], F32], y: pl.Tensor[[8, 256], F32],
                     total: pl.Tensor[[1, 8], I32]):
    with pl.section_vector():
        ring = pl.make_tile_group(type=pl.TileType([1, 256], F32), addrs=[0x0, 0x400],
                                  mutex_ids=[0, 1])
        for row in pl.range(pl.get_block_idx(), 8, pl.get_block_num()):
            t = ring.next()
            pl.load(t, x, [row, 0])
            pl.simt.launch(count_positive, threads=256, args=(t, total))
            pl.store(y, t, [row, 0])


def _inputs_multicore():
    return [torch.randn(8, 256), torch.zeros(8, 256), torch.zeros(1, 8, dtype=torch.int32)]


def _ref_multicore(x, y, total):
    return (x > 0).float()


# ---------------------------------------------------------------- GM tensor, dynamic shape


@pl.simt.function(max_threads=64)
def row_plus_one(g: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], F32],
                 out: pl.Tensor[[1, pl.DYNAMIC], F32], row: I32):
    tid = pl.simt.thread_idx().x
    if tid < g.shape[1]:
        out[0, tid] = g[row, tid] + 1.0


@pl.jit(arch="a5")
def launch_dynamic_gm(g: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], F32],
                      out: pl.Tensor[[1, pl.DYNAMIC], F32], row: I32):
    with pl.section_vector():
        pl.simt.launch(row_plus_one, threads=64, args=(g, out, row))


def _inputs_dynamic_gm():
    return [torch.randn(3, 40), torch.zeros(1, 40), 2]


def _ref_dynamic_gm(g, out, row):
    return g[row:row + 1] + 1.0


@dataclass
class SimtCase:
    name: str
    kernel: Any
    block_dim: int
    make_inputs: Callable[[], list]
    reference: Callable[..., torch.Tensor]
    out: int  # index of the argument holding the result


CASES = [
    SimtCase("2d", launch_2d, 1, _inputs_2d, _ref_2d, 1),
    SimtCase("3d", launch_3d, 1, _inputs_3d, _ref_3d, 0),
    SimtCase("diverge", launch_diverge, 1, _inputs_diverge, _ref_diverge, 1),
    SimtCase("multicore", launch_multicore, 4, _inputs_multicore, _ref_multicore, 1),
    SimtCase("dynamic_gm", launch_dynamic_gm, 1, _inputs_dynamic_gm, _ref_dynamic_gm, 1),
]


def run_case(case: SimtCase, args: list) -> torch.Tensor:
    case.kernel[None, case.block_dim](*args)
    return args[case.out]


@pytest.fixture
def sim():
    with use_backend("sim"):
        yield


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_matches_reference(sim, case):
    args = case.make_inputs()
    out = run_case(case, args)
    torch.testing.assert_close(out, case.reference(*args), rtol=0, atol=0)


@pl.simt.function(max_threads=64)
def two_rows(g: pl.Tensor[[1024, 1024], F32], a: I32, b: I32):
    tid = pl.simt.thread_idx().x
    g[a, tid] = g[a, tid] + 1.0
    g[b, tid] = g[b, tid] * 2.0


@pl.jit(arch="a5")
def launch_two_rows(g: pl.Tensor[[1024, 1024], F32], a: I32, b: I32):
    with pl.section_vector():
        pl.simt.launch(two_rows, threads=64, args=(g, a, b))


def test_a_launch_copies_only_the_gm_window_it_touches(sim):
    g = torch.randn(1024, 1024)
    expected = g.clone()
    expected[500, :64] += 1.0
    expected[3, :64] *= 2.0
    launch_two_rows(g, 500, 3)  # the second row lies before the first: the window grows
    assert torch.equal(g, expected)
    ev = launch_two_rows.last_trace.events
    window = 500 * 1024 + 63 - 3 * 1024 + 1  # elements from g[3, 0] to g[500, 63]
    assert ev[ev["ir_op"] == "simt.launch"]["bytes"].tolist() == [window * 4]


def test_3d_context_queries(sim):
    g, info = _inputs_3d()
    launch_3d(g, info)
    assert info.tolist() == [32, 64, 0, 1]  # warp size, threads, one block per launch


def test_multicore_atomics_add_up_across_cores(sim):
    x, y, total = _inputs_multicore()
    launch_multicore[None, 4](x, y, total)
    assert int(total[0, 0]) == int((x > 0).sum())
    assert int(total[0, 1]) == 255
    trace = launch_multicore.last_trace
    launches = trace.events[trace.events["ir_op"] == "simt.launch"]
    assert sorted(launches["core"].unique().tolist()) == [0, 1, 2, 3]
    assert len(launches) == 8


# ---------------------------------------------------------------- SIMD → SIMT → SIMD


@pl.simt.function(max_threads=256)
def square_in_place(t: pl.Tile[[1, 256], F32]):
    tid = pl.simt.thread_idx().x
    t[0, tid] = t[0, tid] * t[0, tid]


@pl.jit(arch="a5")
def simd_simt_simd(x: pl.Tensor[[1, 256], F32], y: pl.Tensor[[1, 256], F32]):
    with pl.section_vector():
        a = pl.make_tile(pl.TileType([1, 256], F32), addr=0)
        b = pl.make_tile(pl.TileType([1, 256], F32), addr=0x400)
        pl.load(a, x, [0, 0])
        _flag(MTE2, V, 0)
        pl.adds(b, a, 1.0)  # SIMD
        pl.simt.launch(square_in_place, threads=256, args=(b,))  # SIMT, same pipe V
        pl.muls(b, b, 0.5)  # SIMD
        _flag(V, MTE3, 1)
        pl.store(y, b, [0, 0])


@pl.jit(arch="a5", auto_mutex=False)
def simt_without_load_flag(x: pl.Tensor[[1, 256], F32], y: pl.Tensor[[1, 256], F32]):
    with pl.section_vector():
        a = pl.make_tile(pl.TileType([1, 256], F32), addr=0)
        pl.load(a, x, [0, 0])
        pl.simt.launch(square_in_place, threads=256, args=(a,))  # races the load
        _flag(V, MTE3, 1)
        pl.store(y, a, [0, 0])


def test_simd_simt_simd_pipeline(sim):
    x, y = torch.randn(1, 256), torch.zeros(1, 256)
    simd_simt_simd(x, y)
    a = x + 1.0
    torch.testing.assert_close(y, (a * a) * 0.5, rtol=0, atol=0)
    ev = simd_simt_simd.last_trace.events
    v = ev[(ev["pipe"] == "V") & (ev["kind"] == "instr")].sort_values("start")
    assert v["ir_op"].tolist() == ["block.adds", "simt.launch", "block.muls"]
    load_end = ev[ev["ir_op"] == "block.load"]["end"].max()
    store_start = ev[ev["ir_op"] == "block.store"]["start"].min()
    assert v["start"].min() >= load_end and store_start >= v["end"].max()


def test_launch_reads_at_start_so_a_missing_flag_shows(sim):
    """Without the MTE2→V flag the launch starts while the load is in flight and squares
    whatever the UB held: the simulator reproduces the race instead of hiding it."""
    x, y = torch.full((1, 256), 3.0), torch.zeros(1, 256)
    simt_without_load_flag(x, y)
    assert not torch.equal(y, x * x)


# ---------------------------------------------------------------- auto_mutex


@pl.jit(arch="a5")
def auto_mutex_ring(x: pl.Tensor[[4, 256], F32], y: pl.Tensor[[4, 256], F32]):
    with pl.section_vector():
        ring = pl.make_tile_group(type=pl.TileType([1, 256], F32), addrs=[0x0, 0x400],
                                  mutex_ids=[3, 4])
        for row in pl.range(4):
            t = ring.next()
            pl.load(t, x, [row, 0])
            pl.simt.launch(square_in_place, threads=256, args=(t,))
            pl.store(y, t, [row, 0])


def test_auto_mutex_orders_loads_launches_and_stores(sim):
    x, y = torch.randn(4, 256), torch.zeros(4, 256)
    auto_mutex_ring(x, y)
    torch.testing.assert_close(y, x * x, rtol=0, atol=0)
    ev = auto_mutex_ring.last_trace.events
    v_sync = ev[(ev["pipe"] == "V") & (ev["kind"] == "sync")]["op"].tolist()
    assert v_sync.count("get_buf") == 4 and v_sync.count("rls_buf") == 4
    # double buffering: the second row's load overlaps the first row's launch or store
    loads = ev[ev["ir_op"] == "block.load"].sort_values("start")
    first_launch = ev[ev["ir_op"] == "simt.launch"].sort_values("start").iloc[0]
    assert loads.iloc[1]["start"] < first_launch["end"]


# ---------------------------------------------------------------- cost and diagnostics


@pl.simt.function(max_threads=2048)
def uniform_or_divergent(t: pl.Tile[[1, 2048], F32], split: I32):
    tid = pl.simt.thread_idx().x
    if tid % split == 0:
        t[0, tid] = pl.simt.exp(t[0, tid])
    else:
        t[0, tid] = t[0, tid] + 1.0


@pl.jit(arch="a5")
def cost_kernel(x: pl.Tensor[[1, 2048], F32], split: I32):
    with pl.section_vector():
        t = pl.make_tile(pl.TileType([1, 2048], F32), addr=0)
        pl.load(t, x, [0, 0])
        _flag(MTE2, V, 0)
        pl.simt.launch(uniform_or_divergent, threads=2048, args=(t, split))


def _launch_cycles(split: int) -> int:
    cost_kernel(torch.zeros(1, 2048), split)
    ev = cost_kernel.last_trace.events
    row = ev[ev["ir_op"] == "simt.launch"].iloc[0]
    assert row["pipe"] == "V" and row["kind"] == "instr"
    return int(row["end"] - row["start"])


def test_cost_counts_warp_instructions(sim):
    """55 start-up cycles, then per warp instruction the vector cost of its 32 lanes (half a
    256 B repeat): UB access 0.5, ALU 0.625, modulo / exp 1.0 cycles."""
    condition = 64 * (1.0 + 0.625)  # tid % split, == 0
    exp_side = 64 * (0.5 * 2 + 1.0)  # load, exp, store
    add_side = 64 * (0.5 * 2 + 0.625)  # load, add, store
    assert _launch_cycles(1) == 55 + condition + exp_side  # split 1: every thread takes exp
    # split 2: both sides in every warp (divergence): each warp pays for both
    assert _launch_cycles(2) == 55 + condition + exp_side + add_side


@pl.simt.function(max_threads=64)
def out_of_bounds(t: pl.Tile[[1, 32], F32]):
    tid = pl.simt.thread_idx().x
    t[0, tid] = 1.0


@pl.jit(arch="a5")
def oob_kernel(x: pl.Tensor[[1, 32], F32]):
    with pl.section_vector():
        t = pl.make_tile(pl.TileType([1, 32], F32), addr=0)
        pl.simt.launch(out_of_bounds, threads=64, args=(t,))
        _flag(V, MTE3, 0)
        pl.store(x, t, [0, 0])


def test_out_of_bounds_element_access_names_the_line(sim):
    with pytest.raises(SimulationError, match="out of bounds: offset 63 of a tile") as info:
        oob_kernel(torch.zeros(1, 32))
    span = info.value.span
    assert span.file.endswith("test_simt_launch.py")
    assert "t[0, tid] = 1.0" in Path(span.file).read_text().splitlines()[span.line - 1]


def test_functional_mode_runs_launches(monkeypatch):
    monkeypatch.setattr(backends, "_factories", dict(backends._factories))
    monkeypatch.setattr(backends, "_instances", dict(backends._instances))
    register_backend("simt-functional", lambda: SimBackend(functional_only=True))
    args = _inputs_diverge()
    with use_backend("simt-functional"):
        launch_diverge(*args)
    torch.testing.assert_close(args[1], _ref_diverge(*args), rtol=0, atol=0)


# ---------------------------------------------------------------- scalar math


@pl.simt.function(max_threads=64)
def all_math(t: pl.Tile[[1, 64], F32], out: pl.Tensor[[22, 64], F32]):
    i = pl.simt.thread_idx().x
    v = t[0, i]
    p = pl.simt.abs(v) + 0.5
    out[0, i] = pl.simt.abs(v)
    out[1, i] = pl.simt.min(v, 0.25)
    out[2, i] = pl.simt.max(v, 0.25)
    out[3, i] = pl.simt.sqrt(p)
    out[4, i] = pl.simt.rsqrt(p)
    out[5, i] = pl.simt.exp(v)
    out[6, i] = pl.simt.exp2(v)
    out[7, i] = pl.simt.log(p)
    out[8, i] = pl.simt.log2(p)
    out[9, i] = pl.simt.log1p(p)
    out[10, i] = pl.simt.sin(v)
    out[11, i] = pl.simt.cos(v)
    out[12, i] = pl.simt.tanh(v)
    out[13, i] = pl.simt.rint(v * 4.0)
    out[14, i] = pl.simt.round(v * 4.0)
    out[15, i] = pl.simt.floor(v * 4.0)
    out[16, i] = pl.simt.ceil(v * 4.0)
    out[17, i] = pl.simt.trunc(v * 4.0)
    out[18, i] = pl.simt.fma(v, 3.0, 1.0)
    out[19, i] = pl.simt.cast(pl.simt.cast(v * 10.0, I32), F32)
    out[20, i] = pl.simt.cast(pl.simt.isnan(p - p), F32)
    out[21, i] = pl.simt.cast(pl.simt.isinf(p), F32)


@pl.jit(arch="a5")
def math_kernel(x: pl.Tensor[[1, 64], F32], out: pl.Tensor[[22, 64], F32]):
    with pl.section_vector():
        t = pl.make_tile(pl.TileType([1, 64], F32), addr=0)
        pl.load(t, x, [0, 0])
        _flag(MTE2, V, 0)
        pl.simt.launch(all_math, threads=64, args=(t, out))


def test_scalar_math_functions(sim):
    x = torch.linspace(-3, 3, 64).reshape(1, 64)
    x[0, 0], x[0, 1] = 0.375, -0.625  # halfway cases for rint / round
    out = torch.zeros(22, 64)
    math_kernel(x, out)
    v = x[0]
    p = v.abs() + 0.5
    q = v * 4.0
    expected = torch.stack([
        v.abs(), torch.clamp(v, max=0.25), torch.clamp(v, min=0.25), p.sqrt(), 1 / p.sqrt(),
        v.exp(), torch.exp2(v), p.log(), p.log2(), p.log1p(), v.sin(), v.cos(), v.tanh(),
        torch.round(q), torch.sign(q) * torch.floor(q.abs() + 0.5), q.floor(), q.ceil(),
        q.trunc(), v * 3.0 + 1.0, (v * 10.0).trunc(), torch.zeros(64), torch.zeros(64)])
    torch.testing.assert_close(out, expected, rtol=1e-6, atol=1e-6)
    assert out[13, 0] == 2.0 and out[14, 0] == 2.0  # rint(1.5) = 2 (to even), round: away
    assert out[13, 1] == -2.0 and out[14, 1] == -3.0  # rint(-2.5) = -2, round(-2.5) = -3
