"""A sweep of control flow and synchronization written the way the PyPTO Pro API docs and
tutorials write them (issue 21, control flow and bufferid): `pl.range` in each documented form
(stop / start, stop / start, stop, step; negative steps, runtime and expression bounds, the
strided multi-core split), Python `if` / `elif` / `else`, `while`, `break`, `continue` on runtime
scalars, early returns and tuple returns of inlined helpers; `make_tile_group` at depth 1 to 4
with `next()` / `current()` / `previous()` / `g[i]`, address lists, several mutex ids a slot,
groups chosen at run time, `getval` / `setval` under auto_mutex; the barriers, manual
`mutex_lock` / `mutex_unlock` (static and runtime ids), `sync_src` / `sync_dst`, `sync_all`,
`set_cross_core` / `wait_cross_core` (pipe S too) and Cube+Vector kernels handing buffers across
cores. Each kernel runs on the simulator against torch, over several block counts; the first
case of each test also natively (bit for bit). What the real frontend refuses is refused with
its class at the kernel line; a wait nobody answers is a typed SimulationError, never a hang."""
from __future__ import annotations

import pytest
import torch
from dual_backend import first_case_natively
from kernel_source import assert_refused, line_of

import pypto_pro.language as pl
from pypto_pro.errors import DeadlockError, NotSupported, ParserTypeError, SimulationError
from pypto_pro.runtime.backends import use_backend
from pypto_pro.sanitizer import sanitize

MS = pl.MemorySpace
F32 = pl.DT_FP32
R = 8  # rows of one block
VT = pl.TileType(shape=[R, 32], dtype=F32, target_memory=MS.Vec)
NB = 8  # blocks of the [NB * R, 32] test tensors


def _x(seed: int = 0, blocks: int = NB) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return (torch.randint(-64, 64, (blocks * R, 32), generator=g).float() / 8)


def _blocks(x: torch.Tensor, visit: dict[int, float]) -> torch.Tensor:
    """The expected output: block b of x times visit[b], zero where not visited."""
    want = torch.zeros_like(x)
    for b, scale in visit.items():
        want[b * R:(b + 1) * R] = x[b * R:(b + 1) * R] * scale
    return want


def _run(kernel, blocks: int, x: torch.Tensor, *scalars, out_shape=None) -> torch.Tensor:
    def run():
        out = torch.zeros(out_shape or x.shape, dtype=x.dtype)
        kernel[None, blocks](x.clone(), out, *scalars)
        return out
    return first_case_natively(run)


# ---------------------------------------------------------------- pl.range forms


def _scaled(g, x, out, b, scale):
    t = g.next()
    pl.load(t, x, [b * R, 0])
    pl.mul(t, t, scale)
    pl.store(out, t, [b * R, 0])


@pl.jit(auto_mutex=True)
def range_stop(x: pl.Tensor[[NB * R, 32], F32], out: pl.Tensor[[NB * R, 32], F32]):
    g = pl.make_tile_group(type=VT, addrs=0, mutex_ids=[0, 1])
    with pl.section_vector():
        for b in pl.range(5):
            _scaled(g, x, out, b, 2.0)


@pl.jit(auto_mutex=True)
def range_start_stop(x: pl.Tensor[[NB * R, 32], F32], out: pl.Tensor[[NB * R, 32], F32]):
    g = pl.make_tile_group(type=VT, addrs=0, mutex_ids=[0, 1])
    with pl.section_vector():
        for b in pl.range(2, 7):
            _scaled(g, x, out, b, 2.0)


@pl.jit(auto_mutex=True)
def range_step(x: pl.Tensor[[NB * R, 32], F32], out: pl.Tensor[[NB * R, 32], F32]):
    g = pl.make_tile_group(type=VT, addrs=0, mutex_ids=[0, 1, 2])
    with pl.section_vector():
        for b in pl.range(1, NB, 3):
            _scaled(g, x, out, b, 2.0)


@pl.jit(auto_mutex=True)
def range_negative_step(x: pl.Tensor[[NB * R, 32], F32], out: pl.Tensor[[NB * R, 32], F32]):
    g = pl.make_tile_group(type=VT, addrs=0, mutex_ids=[0, 1])
    with pl.section_vector():
        for b in pl.range(NB - 1, 0, -2):  # 7, 5, 3, 1
            _scaled(g, x, out, b, 2.0)


@pl.jit(auto_mutex=True)
def range_runtime(x: pl.Tensor[[NB * R, 32], F32], out: pl.Tensor[[NB * R, 32], F32],
                  start: pl.DT_INT32, stop: pl.DT_INT32, step: pl.DT_INT32):
    g = pl.make_tile_group(type=VT, addrs=0, mutex_ids=[0, 1])
    with pl.section_vector():
        for b in pl.range(start, stop, step):
            _scaled(g, x, out, b, 2.0)


@pl.jit(auto_mutex=True)
def range_shape_expr(x: pl.Tensor[[pl.DYNAMIC, 32], F32], out: pl.Tensor[[pl.DYNAMIC, 32], F32]):
    g = pl.make_tile_group(type=VT, addrs=0, mutex_ids=[0, 1])
    m = x.shape[0]
    with pl.section_vector():
        for b in pl.range(m // R - 1, -1, -1):  # every block, last first
            _scaled(g, x, out, b, 2.0)


@pl.jit(auto_mutex=True)
def range_strided_cores(x: pl.Tensor[[pl.DYNAMIC, 32], F32],
                        out: pl.Tensor[[pl.DYNAMIC, 32], F32]):
    """multi_core_partitioning_and_Tiling.md: for idx in pl.range(core_id, total, num_cores)."""
    a_db = pl.make_tile_group(type=VT, addrs=0x0000, mutex_ids=[0, 1])
    c_db = pl.make_tile_group(type=VT, addrs=0x4000, mutex_ids=[30, 31])
    num_cores = pl.get_block_num()
    core_id = pl.get_block_idx()
    total = x.shape[0] // R
    with pl.section_vector():
        for idx in pl.range(core_id, total, num_cores):
            ta = a_db.next()
            tc = c_db.next()
            pl.load_tile(ta, x, [idx, 0])
            pl.add(tc, ta, ta)
            pl.store_tile(out, tc, [idx, 0])


@pl.jit(auto_mutex=True)
def range_nested_flat(x: pl.Tensor[[pl.DYNAMIC, 64], F32],
                      out: pl.Tensor[[pl.DYNAMIC, 64], F32]):
    """The docs' double pl.range over [M, N] with the rows split over cores."""
    a_db = pl.make_tile_group(type=VT, addrs=0x0000, mutex_ids=[0, 1])
    b_db = pl.make_tile_group(type=VT, addrs=0x4000, mutex_ids=[2, 3])
    c_db = pl.make_tile_group(type=VT, addrs=0x8000, mutex_ids=[30, 31])
    num_cores = pl.get_block_num()
    core_id = pl.get_block_idx()
    with pl.section_vector():
        for i in pl.range(core_id, x.shape[0] // R, num_cores):
            for j in pl.range(0, 64 // 32, 1):
                tile_a = a_db.next()
                tile_b = b_db.next()
                tile_c = c_db.next()
                pl.load_tile(tile_a, x, [i, j])
                pl.load_tile(tile_b, x, [i, j])
                pl.add(tile_c, tile_a, tile_b)
                pl.mul(tile_c, tile_c, 1.0 + j)
                pl.store_tile(out, tile_c, [i, j])


@pytest.mark.parametrize("kernel,visit", [
    (range_stop, range(5)), (range_start_stop, range(2, 7)), (range_step, range(1, NB, 3)),
    (range_negative_step, range(NB - 1, 0, -2))], ids=["stop", "start_stop", "step", "neg_step"])
def test_range_constant_forms(kernel, visit):
    x = _x(1)
    assert torch.equal(_run(kernel, 1, x), _blocks(x, dict.fromkeys(visit, 2.0)))


@pytest.mark.parametrize("start,stop,step", [(0, 8, 1), (3, 8, 2), (7, -1, -1), (6, 1, -3),
                                             (5, 5, 1), (6, 2, 1), (0, 3, 5), (2, 3, -1)])
def test_range_runtime_bounds(start, stop, step):
    x = _x(2)
    want = _blocks(x, dict.fromkeys(range(start, stop, step), 2.0))
    assert torch.equal(_run(range_runtime, 1, x, start, stop, step), want)


@pytest.mark.parametrize("blocks", [1, 3])
@pytest.mark.parametrize("nb", [1, 6])
def test_range_bounds_from_the_shape(nb, blocks):
    x = _x(3, nb)
    # every core walks every block: the result does not depend on the core count
    assert torch.equal(_run(range_shape_expr, blocks, x), x * 2)


@pytest.mark.parametrize("blocks", [1, 2, 3, 5, 8])
def test_range_strided_over_cores(blocks):
    x = _x(4, 7)
    assert torch.equal(_run(range_strided_cores, blocks, x), x * 2)


@pytest.mark.parametrize("blocks", [1, 2, 4])
def test_nested_range_over_rows_and_columns(blocks):
    g = torch.Generator().manual_seed(5)
    x = torch.randint(-64, 64, (5 * R, 64), generator=g).float() / 8
    want = torch.cat([x[:, :32] * 2, x[:, 32:] * 4], dim=1)
    assert torch.equal(_run(range_nested_flat, blocks, x), want)


# ---------------------------------------------------------------- Python control flow


@pl.jit(auto_mutex=True)
def branches(x: pl.Tensor[[NB * R, 32], F32], out: pl.Tensor[[NB * R, 32], F32],
             sel: pl.Tensor[[NB], pl.DT_INT32], lo: pl.DT_INT32, hi: pl.DT_INT32):
    """if / elif / else on a scalar read from GM, on the loop variable and on scalar args."""
    g = pl.make_tile_group(type=VT, addrs=0, mutex_ids=[0, 1])
    with pl.section_vector():
        for b in pl.range(NB):
            t = g.next()
            pl.load(t, x, [b * R, 0])
            s = sel[b]
            if s == 0:
                pl.mul(t, t, 2.0)
            elif s == 1 and b >= lo:
                pl.mul(t, t, 3.0)
            elif s > 1 or b > hi:
                pl.adds(t, t, 1.0)
            else:
                pl.mul(t, t, -1.0)
            if not (b < lo):
                pl.adds(t, t, 0.5)
            pl.store(out, t, [b * R, 0])


def _branches_ref(x, sel, lo, hi):
    visit = {}
    for b, s in enumerate(sel):
        blk = x[b * R:(b + 1) * R]
        if s == 0:
            v = blk * 2
        elif s == 1 and b >= lo:
            v = blk * 3
        elif s > 1 or b > hi:
            v = blk + 1
        else:
            v = -blk
        visit[b] = v + 0.5 if b >= lo else v
    want = torch.zeros_like(x)
    for b, v in visit.items():
        want[b * R:(b + 1) * R] = v
    return want


@pytest.mark.parametrize("sel,lo,hi", [([0, 1, 2, 1, 0, 3, 1, 1], 2, 5),
                                       ([1, 1, 1, 1, 1, 1, 1, 1], 4, 100),
                                       ([5, 0, -1, 1, 1, 0, 2, -3], 0, 3)])
def test_if_elif_else_on_runtime_scalars(sel, lo, hi):
    x = _x(6)
    s = torch.tensor(sel, dtype=torch.int32)
    assert torch.equal(_run(branches, 1, x, s, lo, hi), _branches_ref(x, sel, lo, hi))


@pl.jit(auto_mutex=True)
def while_break_continue(x: pl.Tensor[[NB * R, 32], F32], out: pl.Tensor[[NB * R, 32], F32],
                         skip: pl.Tensor[[NB], pl.DT_INT32], stop_at: pl.DT_INT32):
    """A while over a runtime count with continue on flagged blocks and break at a bound,
    then a pl.range with the same exits."""
    g = pl.make_tile_group(type=VT, addrs=0, mutex_ids=[0, 1])
    h = pl.make_tile_group(type=VT, addrs=0x2000, mutex_ids=[2])
    with pl.section_vector():
        b = 0
        while b < NB:
            cur = b
            b = b + 1
            if skip[cur] != 0:
                continue
            if cur == stop_at:
                break
            t = g.next()
            pl.load(t, x, [cur * R, 0])
            pl.mul(t, t, 2.0)
            pl.store(out, t, [cur * R, 0])
        for i in pl.range(NB):
            if skip[i] == 0:
                continue
            if i > stop_at:
                break
            t = h.current()
            pl.load(t, x, [i * R, 0])
            pl.mul(t, t, -3.0)
            pl.store(out, t, [i * R, 0])


@pytest.mark.parametrize("skip,stop_at", [([0, 1, 0, 0, 1, 0, 0, 0], 5),
                                          ([0] * NB, 100), ([1] * NB, 0),
                                          ([0, 0, 1, 1, 0, 1, 0, 1], 6)])
def test_while_break_continue(skip, stop_at):
    x = _x(7)
    visit = {}
    for b in range(NB):
        if skip[b]:
            continue
        if b == stop_at:
            break
        visit[b] = 2.0
    for i in range(NB):
        if not skip[i]:
            continue
        if i > stop_at:
            break
        visit[i] = -3.0
    got = _run(while_break_continue, 1, x, torch.tensor(skip, dtype=torch.int32), stop_at)
    assert torch.equal(got, _blocks(x, visit))


def _first_flagged(flags, start, n):
    """An early return inside a loop of an inlined helper."""
    for i in pl.range(start, n):
        if flags[i] != 0:
            return i
    return -1


def _load_and_scale(g, x, b, flags):
    """A helper returning a (tile, scalar) tuple, the scalar chosen by a branch."""
    t = g.next()
    pl.load(t, x, [b * R, 0])
    if flags[b] > 1:
        return t, 4.0
    return t, 0.5


def _count_and_last(flags, n):
    cnt = 0
    last = -1
    for i in pl.range(n):
        if flags[i] != 0:
            cnt = cnt + 1
            last = i
    return cnt, last


@pl.jit(auto_mutex=True)
def helpers(x: pl.Tensor[[NB * R, 32], F32], out: pl.Tensor[[NB * R, 32], F32],
            flags: pl.Tensor[[NB], pl.DT_INT32], info: pl.Tensor[[4], pl.DT_INT32]):
    g = pl.make_tile_group(type=VT, addrs=0, mutex_ids=[0, 1, 2])
    with pl.section_vector():
        b = _first_flagged(flags, 0, NB)
        pl.setval(info, 0, b)
        while b >= 0:
            t, s = _load_and_scale(g, x, b, flags)
            pl.mul(t, t, s)
            pl.store(out, t, [b * R, 0])
            b = _first_flagged(flags, b + 1, NB)
        cnt, last = _count_and_last(flags, NB)
        pl.setval(info, 1, cnt)
        pl.setval(info, 2, last)
        pl.setval(info, 3, _first_flagged(flags, last + 1, NB))


@pytest.mark.parametrize("flags", [[0, 2, 0, 1, 3, 0, 0, 1], [0] * NB, [1, 1, 2, 2, 1, 1, 2, 2]])
def test_helpers_with_early_returns_and_tuples(flags):
    x = _x(8)
    f = torch.tensor(flags, dtype=torch.int32)

    def run():
        out = torch.zeros_like(x)
        info = torch.zeros(4, dtype=torch.int32)
        helpers(x, out, f, info)
        return torch.cat([out.flatten(), info.float()])

    got = first_case_natively(run)
    on = [i for i, v in enumerate(flags) if v]
    want = _blocks(x, {i: 4.0 if flags[i] > 1 else 0.5 for i in on})
    info = [on[0] if on else -1, len(on), on[-1] if on else -1, -1]
    assert torch.equal(got, torch.cat([want.flatten(), torch.tensor(info).float()]))


@pl.jit()
def scalar_arith(vals: pl.Tensor[[2], pl.DT_INT32], out: pl.Tensor[[8], pl.DT_INT32],
                 a: pl.DT_INT32, b: pl.DT_INT32):
    """Runtime integer // and % as the real generated C++ computes them (truncating)."""
    with pl.section_vector():
        x = vals[0]
        y = vals[1]
        pl.setval(out, 0, a // b)
        pl.setval(out, 1, a % b)
        pl.setval(out, 2, x // y)
        pl.setval(out, 3, x % y)
        pl.setval(out, 4, -a // 4)
        pl.setval(out, 5, a % 3)
        acc = 0
        i = a
        while i != 0:
            acc = acc + i % 10
            i = i // 10
        pl.setval(out, 6, acc)
        pl.setval(out, 7, b if a > b else a)


def _trunc_div(a, b):
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


@pytest.mark.parametrize("a,b,x,y", [(17, 5, 9, 4), (-17, 5, -9, 4), (17, -5, 9, -4),
                                     (-17, -5, -9, -4)])
def test_runtime_integer_division_truncates(a, b, x, y):
    def run():
        out = torch.zeros(8, dtype=torch.int32)
        scalar_arith(torch.tensor([x, y], dtype=torch.int32), out, a, b)
        return out

    got = first_case_natively(run)
    digits, i = 0, a
    while i != 0:
        digits += i - _trunc_div(i, 10) * 10
        i = _trunc_div(i, 10)
    want = [_trunc_div(a, b), a - _trunc_div(a, b) * b, _trunc_div(x, y),
            x - _trunc_div(x, y) * y, _trunc_div(-a, 4), a - _trunc_div(a, 3) * 3, digits,
            b if a > b else a]
    assert got.tolist() == want


# ---------------------------------------------------------------- barriers, flags, mutexes


@pl.jit()
def bar_all_kernel(x: pl.Tensor[[128, 64], pl.DT_FP16], out: pl.Tensor[[128, 64], pl.DT_FP16]):
    """barrier.md: bar_all at the loop top, sync_src / sync_dst between the pipes."""
    tt = pl.TileType(shape=[64, 64], dtype=pl.DT_FP16, target_memory=pl.MemorySpace.Vec)
    tile_x = pl.make_tile(tt, addr=0x0000, size=8192)
    tile_out = pl.make_tile(tt, addr=0x2000, size=8192)
    with pl.section_vector():
        for i in pl.range(0, 128, 64):
            pl.system.bar_all()
            pl.load(tile_x, x, [i, 0])
            pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
            pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
            pl.add(tile_out, tile_x, tile_x)
            pl.system.sync_src(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=1)
            pl.system.sync_dst(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=1)
            pl.store(out, tile_out, [i, 0])


@pytest.mark.parametrize("blocks", [1, 2])
def test_bar_all_kernel(blocks):
    g = torch.Generator().manual_seed(9)
    x = (torch.randint(-64, 64, (128, 64), generator=g).float() / 8).half()

    def run():
        out = torch.zeros_like(x)
        bar_all_kernel[None, blocks](x, out)
        return out

    assert torch.equal(first_case_natively(run), x + x)


TILE = 64


@pl.jit(auto_mutex=True)
def bar_m_kernel(a: pl.Tensor[[TILE, TILE], pl.DT_FP16], b: pl.Tensor[[TILE, TILE], pl.DT_FP16],
                 out: pl.Tensor[[TILE, TILE], pl.DT_FP32]):
    """barrier.md: a second matmul after bar_m overwrites the accumulator, out = a @ b."""
    a_l1 = pl.make_tile_group(
        type=pl.TileType(shape=[TILE, TILE], dtype=pl.DT_FP16, target_memory=pl.MemorySpace.Mat),
        addrs=0x0000, mutex_ids=[0])
    b_l1 = pl.make_tile_group(
        type=pl.TileType(shape=[TILE, TILE], dtype=pl.DT_FP16, target_memory=pl.MemorySpace.Mat),
        addrs=0x2000, mutex_ids=[1])
    a_l0a = pl.make_tile_group(
        type=pl.TileType(shape=[TILE, TILE], dtype=pl.DT_FP16, target_memory=pl.MemorySpace.Left),
        addrs=0x0000, mutex_ids=[2])
    b_l0b = pl.make_tile_group(
        type=pl.TileType(shape=[TILE, TILE], dtype=pl.DT_FP16,
                         target_memory=pl.MemorySpace.Right),
        addrs=0x0000, mutex_ids=[3])
    c_l0c = pl.make_tile_group(
        type=pl.TileType(shape=[TILE, TILE], dtype=pl.DT_FP32, target_memory=pl.MemorySpace.Acc),
        addrs=0x0000, mutex_ids=[4])
    with pl.section_cube():
        cur_a = a_l1.current()
        cur_b = b_l1.current()
        al = a_l0a.current()
        br = b_l0b.current()
        ac = c_l0c.current()
        pl.load(cur_a, a, [0, 0])
        pl.load(cur_b, b, [0, 0])
        pl.move(al, cur_a)
        pl.move(br, cur_b)
        pl.matmul(ac, al, br)
        pl.system.bar_m()
        pl.matmul(ac, al, br)
        pl.store(out, ac, [0, 0])


def _half(shape, seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randint(-8, 8, shape, generator=g).float() / 4).half()


@pytest.mark.parametrize("blocks", [1, 3])
def test_bar_m_kernel(blocks):
    a, b = _half((TILE, TILE), 10), _half((TILE, TILE), 11)

    def run():
        out = torch.zeros(TILE, TILE)
        bar_m_kernel[None, blocks](a, b, out)
        return out

    assert torch.equal(first_case_natively(run), a.float() @ b.float())


@pl.jit(auto_mutex=False)
def mutex_kernel(a: pl.Tensor[[64, 64], F32], b: pl.Tensor[[64, 64], F32],
                 out: pl.Tensor[[64, 64], F32]):
    """mutex_lock_mutex_unlock.md as written."""
    tt = pl.TileType(shape=[64, 64], dtype=pl.DT_FP32, target_memory=pl.MemorySpace.Vec)
    tile_a = pl.make_tile_group(type=tt, addrs=0x0000, mutex_ids=[0])
    tile_b = pl.make_tile_group(type=tt, addrs=0x4000, mutex_ids=[1])
    tile_out = pl.make_tile_group(type=tt, addrs=0x8000, mutex_ids=[2])
    with pl.section_vector():
        cur_a = tile_a.current()
        cur_b = tile_b.current()
        cur_out = tile_out.current()
        pl.system.mutex_lock(pipe=pl.PipeType.MTE2, mutex_id=0)
        pl.load(cur_a, a, [0, 0])
        pl.system.mutex_unlock(pipe=pl.PipeType.MTE2, mutex_id=0)
        pl.system.mutex_lock(pipe=pl.PipeType.MTE2, mutex_id=1)
        pl.load(cur_b, b, [0, 0])
        pl.system.mutex_unlock(pipe=pl.PipeType.MTE2, mutex_id=1)
        pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
        pl.add(cur_out, cur_a, cur_b)
        pl.system.sync_src(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=1)
        pl.system.sync_dst(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=1)
        pl.system.mutex_lock(pipe=pl.PipeType.MTE3, mutex_id=2)
        pl.store(out, cur_out, [0, 0])
        pl.system.mutex_unlock(pipe=pl.PipeType.MTE3, mutex_id=2)


@pl.jit(auto_mutex=False)
def dynamic_mutex_kernel(x: pl.Tensor[[NB * R, 32], F32], out: pl.Tensor[[NB * R, 32], F32]):
    """Runtime mutex ids: i % 2 over the default candidates [0, 1], (i % 3) + 4 over an explicit
    candidate list, each lock paired with its unlock on the same pipe."""
    ring = pl.make_tile_group(type=VT, addrs=0, depth=3)
    with pl.section_vector():
        for i in pl.range(NB):
            t = ring.next()
            pl.system.mutex_lock(pipe=pl.PipeType.MTE2, mutex_id=i % 2)
            pl.system.mutex_lock(pipe=pl.PipeType.MTE2, mutex_id=(i % 3) + 4,
                                 mutex_ids=[4, 5, 6])
            pl.load(t, x, [i * R, 0])
            pl.system.mutex_unlock(pipe=pl.PipeType.MTE2, mutex_id=(i % 3) + 4,
                                   mutex_ids=(4, 5, 6))
            pl.system.mutex_unlock(pipe=pl.PipeType.MTE2, mutex_id=i % 2, max_mutex_id=2)
            pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=i % 2)
            pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=i % 2)
            pl.muls(t, t, 2.0)
            pl.system.sync_src(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=3)
            pl.system.sync_dst(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=3)
            pl.store(out, t, [i * R, 0])
            pl.system.sync_src(set_pipe=pl.PipeType.MTE3, wait_pipe=pl.PipeType.MTE2, event_id=7)
            pl.system.sync_dst(set_pipe=pl.PipeType.MTE3, wait_pipe=pl.PipeType.MTE2, event_id=7)


@pl.jit()
def sync_src_dst_kernel(a: pl.Tensor[[64, 64], F32], b: pl.Tensor[[64, 64], F32],
                        out: pl.Tensor[[64, 64], F32]):
    """sync_src_sync_dst.md as written."""
    tt = pl.TileType(shape=[64, 64], dtype=pl.DT_FP32, target_memory=pl.MemorySpace.Vec)
    tile_a = pl.make_tile(tt, addr=0x0000, size=16384)
    tile_b = pl.make_tile(tt, addr=0x4000, size=16384)
    tile_out = pl.make_tile(tt, addr=0x8000, size=16384)
    with pl.section_vector():
        pl.load(tile_a, a, [0, 0])
        pl.load(tile_b, b, [0, 0])
        pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
        pl.add(tile_out, tile_a, tile_b)
        pl.system.sync_src(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=1)
        pl.system.sync_dst(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=1)
        pl.store(out, tile_out, [0, 0])


@pl.jit()
def sync_all_kernel(a: pl.Tensor[[64, 64], F32], b: pl.Tensor[[64, 64], F32],
                    out: pl.Tensor[[64, 64], F32]):
    """sync_all.md as written (AIV_ONLY in a vector-only kernel)."""
    tt = pl.TileType(shape=[64, 64], dtype=pl.DT_FP32, target_memory=pl.MemorySpace.Vec)
    tile_a = pl.make_tile(tt, addr=0x0000, size=16384)
    tile_b = pl.make_tile(tt, addr=0x4000, size=16384)
    tile_out = pl.make_tile(tt, addr=0x8000, size=16384)
    with pl.section_vector():
        pl.load(tile_a, a, [0, 0])
        pl.load(tile_b, b, [0, 0])
        pl.system.sync_all(core_type=pl.SyncCoreType.AIV_ONLY)
        pl.add(tile_out, tile_a, tile_b)
        pl.system.sync_all(core_type=pl.SyncCoreType.AIV_ONLY)
        pl.store(out, tile_out, [0, 0])


@pytest.mark.parametrize("blocks", [1, 2, 4])
@pytest.mark.parametrize("kernel", [mutex_kernel, sync_src_dst_kernel, sync_all_kernel],
                         ids=["mutex", "sync_src_dst", "sync_all"])
def test_manual_sync_doc_kernels(kernel, blocks):
    a, b = _x(12, 8).reshape(64, 32).repeat(1, 2), _x(13, 8).reshape(64, 32).repeat(1, 2)

    def run():
        out = torch.zeros(64, 64)
        kernel[None, blocks](a, b, out)
        return out

    assert torch.equal(first_case_natively(run), a + b)


@pytest.mark.parametrize("blocks", [1, 2])
def test_runtime_mutex_ids_and_event_ids(blocks):
    x = _x(14)
    assert torch.equal(_run(dynamic_mutex_kernel, blocks, x), x * 2)


# ---------------------------------------------------------------- cross-core hand-offs


@pl.jit()
def cross_core_kernel(x: pl.Tensor[[64, 64], F32], y: pl.Tensor[[64, 64], F32],
                      rhs: pl.Tensor[[64, 64], F32], out: pl.Tensor[[64, 64], F32]):
    """set_cross_core_wait_cross_core.md: out = (x + y) @ rhs, the sum inserted into L1 by the
    two vector cores, the cube waiting on MTE1."""
    v1_mat = pl.make_tile(
        pl.TileType(shape=[64, 64], dtype=pl.DT_FP32, target_memory=pl.MemorySpace.Mat,
                    layout=pl.NZ),
        addr=0x10000, size=16384)
    with pl.section_vector():
        sub_index = pl.get_subblock_idx()
        off = sub_index * 32
        tile_x = pl.make_tile(pl.TileType(shape=[32, 64], dtype=pl.DT_FP32,
                                          target_memory=pl.MemorySpace.Vec),
                              addr=0x0000, size=8192)
        tile_y = pl.make_tile(pl.TileType(shape=[32, 64], dtype=pl.DT_FP32,
                                          target_memory=pl.MemorySpace.Vec),
                              addr=0x2000, size=8192)
        tile_sum = pl.make_tile(pl.TileType(shape=[32, 64], dtype=pl.DT_FP32,
                                            target_memory=pl.MemorySpace.Vec),
                                addr=0x4000, size=8192)
        tile_nz = pl.make_tile(
            pl.TileType(shape=[32, 64], dtype=pl.DT_FP32, target_memory=pl.MemorySpace.Vec,
                        layout=pl.NZ),
            addr=0x6000, size=8448)
        pl.load(tile_x, x, [off, 0])
        pl.load(tile_y, y, [off, 0])
        pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
        pl.add(tile_sum, tile_x, tile_y)
        pl.move(tile_nz, tile_sum)
        pl.system.sync_src(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=2)
        pl.system.sync_dst(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=2)
        pl.insert(v1_mat, tile_nz, [off, 0])
        pl.system.set_cross_core(pipe=pl.PipeType.MTE3, event_id=2)
    with pl.section_cube():
        rhs_mat = pl.make_tile(
            pl.TileType(shape=[64, 64], dtype=pl.DT_FP32, target_memory=pl.MemorySpace.Mat,
                        layout=pl.NZ),
            addr=0x0000, size=16384)
        v1_left = pl.make_tile(
            pl.TileType(shape=[64, 64], dtype=pl.DT_FP32, target_memory=pl.MemorySpace.Left,
                        layout=pl.NZ),
            addr=0x0000, size=16384)
        rhs_right = pl.make_tile(
            pl.TileType(shape=[64, 64], dtype=pl.DT_FP32, target_memory=pl.MemorySpace.Right,
                        layout=pl.ZN),
            addr=0x0000, size=16384)
        c_l0c = pl.make_tile(
            pl.TileType(shape=[64, 64], dtype=pl.DT_FP32, target_memory=pl.MemorySpace.Acc,
                        layout=pl.NZ, fractal=1024),
            addr=0x0000, size=16384)
        pl.load(rhs_mat, rhs, [0, 0])
        pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE1, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE1, event_id=0)
        pl.move(rhs_right, rhs_mat)
        pl.system.wait_cross_core(pipe=pl.PipeType.MTE1, event_id=2,
                                  sync_mode=pl.CrossCoreSyncMode.INTRA_BLOCK)
        pl.move(v1_left, v1_mat)
        pl.system.sync_src(set_pipe=pl.PipeType.MTE1, wait_pipe=pl.PipeType.M, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.MTE1, wait_pipe=pl.PipeType.M, event_id=0)
        pl.matmul(c_l0c, v1_left, rhs_right)
        pl.system.sync_src(set_pipe=pl.PipeType.M, wait_pipe=pl.PipeType.FIX, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.M, wait_pipe=pl.PipeType.FIX, event_id=0)
        pl.store(out, c_l0c, [0, 0])


def _small(shape, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(-8, 8, shape, generator=g).float() / 4


@pytest.mark.parametrize("blocks", [1, 2])
def test_cross_core_doc_kernel(blocks):
    x, y, rhs = _small((64, 64), 15), _small((64, 64), 16), _small((64, 64), 17)

    def run():
        out = torch.zeros(64, 64)
        cross_core_kernel[None, blocks](x, y, rhs, out)
        return out

    got = first_case_natively(run)
    torch.testing.assert_close(got, ((x + y).double() @ rhs.double()).float())


def cube_then_vector(pipe_set, pipe_wait, rounds: int):
    """section_vector_section_cube.md "Cube与Vector串联": the cube stores a @ b to a GM
    workspace and signals; each vector core waits, loads its half, applies relu and stores.
    `rounds` passes over the workspace, the vector side answering on a backward event."""
    @pl.jit(auto_mutex=True)
    def k(a: pl.Tensor[[32, 32], pl.DT_FP16], b: pl.Tensor[[32, 32], pl.DT_FP16],
          ws: pl.Tensor[[32, 32], F32], out: pl.Tensor[[rounds * 32, 32], F32]):
        a_l1 = pl.make_tile_group(type=pl.TileType(shape=[32, 32], dtype=pl.DT_FP16,
                                                   target_memory=MS.Mat), addrs=0, mutex_ids=[0])
        b_l1 = pl.make_tile_group(type=pl.TileType(shape=[32, 32], dtype=pl.DT_FP16,
                                                   target_memory=MS.Mat), addrs=0x4000,
                                  mutex_ids=[1])
        al0 = pl.make_tile_group(type=pl.TileType(shape=[32, 32], dtype=pl.DT_FP16,
                                                  target_memory=MS.Left), addrs=0, mutex_ids=[2])
        bl0 = pl.make_tile_group(type=pl.TileType(shape=[32, 32], dtype=pl.DT_FP16,
                                                  target_memory=MS.Right), addrs=0,
                                 mutex_ids=[3])
        acc = pl.make_tile_group(type=pl.TileType(shape=[32, 32], dtype=F32,
                                                  target_memory=MS.Acc), addrs=0, mutex_ids=[4])
        vt = pl.make_tile_group(type=pl.TileType(shape=[16, 32], dtype=F32, target_memory=MS.Vec),
                                addrs=0, mutex_ids=[5, 6])
        with pl.section_cube():
            cur_a = a_l1.current()
            cur_b = b_l1.current()
            al = al0.current()
            br = bl0.current()
            ac = acc.current()
            pl.load(cur_a, a, [0, 0])
            pl.load(cur_b, b, [0, 0])
            pl.move(al, cur_a)
            pl.move(br, cur_b)
            for r in pl.range(rounds):
                pl.matmul(ac, al, br)
                if r > 0:
                    pl.system.wait_cross_core(pipe=pl.PipeType.FIX, event_id=1)
                pl.store(ws, ac, [0, 0])
                pl.system.set_cross_core(pipe=pipe_set, event_id=0)
        with pl.section_vector():
            sub = pl.get_subblock_idx()
            for r in pl.range(rounds):
                tile = vt.next()
                pl.system.wait_cross_core(pipe=pipe_wait, event_id=0)
                pl.load(tile, ws, [sub * 16, 0])
                if r < rounds - 1:
                    pl.system.set_cross_core(pipe=pl.PipeType.MTE2, event_id=1)
                pl.relu(tile, tile)
                pl.muls(tile, tile, 1.0 + r)
                pl.store(out, tile, [r * 32 + sub * 16, 0])
    return k


@pytest.mark.parametrize("pipe_set,pipe_wait,rounds", [
    (pl.PipeType.FIX, pl.PipeType.MTE2, 1), (pl.PipeType.FIX, pl.PipeType.S, 2),
    (pl.PipeType.FIX, pl.PipeType.MTE2, 3), (pl.PipeType.FIX, pl.PipeType.S, 3)],
    ids=["fix_mte2", "fix_s", "fix_mte2_3", "fix_s_3"])
@pytest.mark.parametrize("blocks", [1, 2])
def test_cube_then_vector_through_gm(pipe_set, pipe_wait, rounds, blocks):
    a, b = _half((32, 32), 18), _half((32, 32), 19)
    k = cube_then_vector(pipe_set, pipe_wait, rounds)

    def run():
        out = torch.zeros(rounds * 32, 32)
        k[None, blocks](a, b, torch.zeros(32, 32), out)
        return out

    c = torch.relu(a.float() @ b.float())
    assert torch.equal(first_case_natively(run), torch.cat([c * (1 + r) for r in range(rounds)]))


def test_a_wait_on_the_wrong_pipe_races_and_the_sanitizer_names_it():
    """A wait on pipe V orders only the V pipe: the MTE2 load of the workspace may run before
    the cube's store lands (real hardware races the same way); the sanitizer reports it."""
    k = cube_then_vector(pl.PipeType.FIX, pl.PipeType.V, 1)
    a, b = _half((32, 32), 18), _half((32, 32), 19)
    with use_backend("sim"), sanitize():
        k[None, 1](a, b, torch.zeros(32, 32), torch.zeros(32, 32))
    kinds = {f.kind for f in k.last_result.sanitizer}
    assert kinds & {"GM_RACE_WAR", "GM_RACE_RAW"}, kinds


# ---------------------------------------------------------------- tile groups


def ring_kernel(depth: int, ids, addrs, manual: bool):
    """A depth-`depth` ring walked by next(): out block i = x_i + the previous() slot's
    block, then the sum of every slot by g[k] (a runtime k) into the extra last block; the
    slots are zeroed by g[k] first.
    `manual`: mutex_ids=None with depth=, the pipes ordered by bar_all."""
    @pl.jit(auto_mutex=True)
    def k(x: pl.Tensor[[NB * R, 32], F32], out: pl.Tensor[[(NB + 1) * R, 32], F32],
          n: pl.DT_INT32):
        if manual:
            g = pl.make_tile_group(type=VT, addrs=addrs, mutex_ids=None, depth=depth)
        else:
            g = pl.make_tile_group(type=VT, addrs=addrs, mutex_ids=ids)
        o = pl.make_tile_group(type=VT, addrs=0x10000, mutex_ids=[20, 21])
        s = pl.make_tile_group(type=VT, addrs=0x18000, mutex_ids=[22])
        with pl.section_vector():
            for kk in pl.range(depth):  # UB starts undefined, as on the device
                pl.expands(g[kk], 0.0)
            for i in pl.range(n):
                t = g.next()
                if manual:
                    pl.system.bar_all()
                pl.load(t, x, [i * R, 0])
                if manual:
                    pl.system.bar_all()
                d = o.next()
                pl.add(d, t, g.previous())
                pl.store(out, d, [i * R, 0])
            acc = s.current()
            pl.expands(acc, 0.0)
            for kk in pl.range(depth):
                pl.add(acc, acc, g[kk])
            if manual:
                pl.system.bar_all()
            pl.store(out, acc, [NB * R, 0])
    return k


def _ring_ref(x: torch.Tensor, depth: int, n: int) -> torch.Tensor:
    """The slot model: next() gives slot (cursor + 1) % depth starting from slot 0;
    previous() is the slot before it (the same slot at depth 1); zero-initialized UB."""
    slots = [torch.zeros(R, 32) for _ in range(depth)]
    out = torch.zeros((NB + 1) * R, 32)
    cur = depth - 1
    for i in range(n):
        cur = (cur + 1) % depth
        slots[cur] = x[i * R:(i + 1) * R].clone()
        out[i * R:(i + 1) * R] = slots[cur] + slots[(cur - 1) % depth]
    out[NB * R:] = sum(slots)
    return out


RINGS = {
    "d1": (1, [0], 0x0, False), "d2": (2, [0, 1], 0x0, False),
    "d3_tuple": (3, (4, 5, 6), 0x0, False), "d4": (4, [0, 1, 2, 3], 0x0, False),
    "d2_list_addrs": (2, [0, 1], [0x0, 0x8000], False),
    "d2_two_ids": (2, [[0, 1], [2, 3]], 0x0, False),
    "d3_three_ids_shared": (3, [[0, 1, 2], [3, 1, 2], [4, 5, 6]], [0x0, 0x4000, 0x2000], False),
    "d4_list_two_ids": (4, [[7, 8], [9, 10], [7, 11], [12, 13]],
                        [0x6000, 0x2000, 0x0, 0x4000], False),
    "d2_manual": (2, None, 0x0, True), "d3_manual_list": (3, None, [0x0, 0x3000, 0x1000], True),
}


@pytest.mark.parametrize("n", [NB, 3, 1])
@pytest.mark.parametrize("ring", list(RINGS))
def test_ring_depths_and_ids(ring, n):
    depth, ids, addrs, manual = RINGS[ring]
    k = ring_kernel(depth, ids, addrs, manual)
    x = _x(20)
    got = _run(k, 2 if n == 1 else 1, x, n, out_shape=((NB + 1) * R, 32))
    assert torch.equal(got, _ring_ref(x, depth, n))


@pl.jit(auto_mutex=True)
def getval_setval_ring(x: pl.Tensor[[NB * R, 32], F32], out: pl.Tensor[[NB * R, 32], F32],
                       info: pl.Tensor[[NB], F32], n: pl.DT_INT32):
    """getval.md / setval.md under auto_mutex on a ring: read an element of the loaded slot
    (MTE2 → S), branch on it, write elements back (S → V / MTE3), a value read by the
    linear-offset API, a value written into a group slot picked by subscript."""
    g = pl.make_tile_group(type=VT, addrs=0, mutex_ids=[[0, 1], [2, 3]])
    o = pl.make_tile_group(type=VT, addrs=0x4000, mutex_ids=[4, 5, 6])
    with pl.section_vector():
        for i in pl.range(n):
            t = g.next()
            pl.load(t, x, [i * R, 0])
            v = t[0, 0]
            w = pl.getval(t, 33)
            if v > 0.0:
                t[0, 1] = v + w
            else:
                pl.setval(t, 2, w * 2.0)
            pl.setval(info, i, t[1, 1])
            d = o.next()
            pl.muls(d, t, 2.0)
            d[R - 1, 31] = v
            pl.store(out, d, [i * R, 0])


@pytest.mark.parametrize("n", [NB, 2])
def test_getval_setval_under_auto_mutex(n):
    x = _x(21)

    def run():
        out = torch.zeros_like(x)
        info = torch.zeros(NB)
        getval_setval_ring(x, out, info, n)
        return torch.cat([out.flatten(), info])

    got = first_case_natively(run)
    want, info = torch.zeros_like(x), torch.zeros(NB)
    for i in range(n):
        blk = x[i * R:(i + 1) * R].clone()
        v, w = blk[0, 0].item(), blk[1, 1].item()
        if v > 0:
            blk[0, 1] = v + w
        else:
            blk[0, 2] = w * 2
        info[i] = blk[1, 1]
        blk = blk * 2
        blk[R - 1, 31] = v
        want[i * R:(i + 1) * R] = blk
    assert torch.equal(got, torch.cat([want.flatten(), info]))


# ---------------------------------------------------------------- groups chosen at run time


def _pick(flag, ga, gb):
    """A helper returning one of two groups, chosen by a runtime flag."""
    if flag != 0:
        return ga
    return gb


@pl.jit(auto_mutex=True)
def chosen_groups(x: pl.Tensor[[NB * R, 32], F32], out: pl.Tensor[[(NB + 3) * R, 32], F32],
                  flags: pl.Tensor[[NB], pl.DT_INT32]):
    ga = pl.make_tile_group(type=VT, addrs=0x0000, mutex_ids=[[0, 9], [1, 10]])
    gb = pl.make_tile_group(type=VT, addrs=0x2000, mutex_ids=[[2, 3], [4, 5]])
    gc = pl.make_tile_group(type=VT, addrs=0x4000, mutex_ids=[(6, 11), (7, 12), (8, 13)])
    rings = (ga, gb, gc)
    with pl.section_vector():
        for k in pl.range(2):
            pl.expands(ga[k], 0.0)
            pl.expands(gb[k], 0.0)
        for k in pl.range(3):
            pl.expands(gc[k], 0.0)
        for i in pl.range(NB):
            f = flags[i]
            if f == 2:
                g = gc
            else:
                g = _pick(f, ga, gb)
            t = g.next()
            pl.load(t, x, [i * R, 0])
            pl.add(t, t, rings[f].previous())
            pl.store(out, t, [i * R, 0])
        pl.store(out, ga.current(), [NB * R, 0])
        pl.store(out, gb.current(), [(NB + 1) * R, 0])
        pl.store(out, rings[flags[0]].current(), [(NB + 2) * R, 0])


def _chosen_ref(x, flags):
    depth = {0: 2, 1: 2, 2: 3}
    g_of = {0: 1, 1: 0, 2: 2}  # flag -> group: 0 → gb, nonzero → ga, 2 → gc
    slots = {g: [torch.zeros(R, 32) for _ in range(depth[g])] for g in range(3)}
    cur = {g: depth[g] - 1 for g in range(3)}
    out = torch.zeros((NB + 3) * R, 32)
    for i, f in enumerate(flags):
        g = g_of[f]
        cur[g] = (cur[g] + 1) % depth[g]
        # rings[f] indexes (ga, gb, gc) by the flag itself
        prev = slots[f][(cur[f] - 1) % depth[f]]
        slots[g][cur[g]] = x[i * R:(i + 1) * R] + prev
        out[i * R:(i + 1) * R] = slots[g][cur[g]]
    out[NB * R:(NB + 1) * R] = slots[0][cur[0]]
    out[(NB + 1) * R:(NB + 2) * R] = slots[1][cur[1]]
    out[(NB + 2) * R:] = slots[flags[0]][cur[flags[0]]]
    return out


@pytest.mark.parametrize("flags", [[1, 0, 2, 2, 0, 1, 1, 0], [0] * NB, [2, 1, 2, 0, 2, 1, 0, 2]])
def test_groups_chosen_at_run_time(flags):
    x = _x(22)
    got = _run(chosen_groups, 1, x, torch.tensor(flags, dtype=torch.int32),
               out_shape=((NB + 3) * R, 32))
    assert torch.equal(got, _chosen_ref(x, flags))


MIXED_COUNTS = """
    ga = pl.make_tile_group(type=VT, addrs=0x0000, mutex_ids=[0, 1])
    gb = pl.make_tile_group(type=VT, addrs=0x2000, mutex_ids=[[2, 3], [4, 5]])
    with pl.section_vector():
        {pick}
        pl.load(t, x, [0, 0])
        pl.store(x, t, [0, 0])
"""


@pytest.mark.parametrize("pick,error,fragment", [
    ("t = ga.next() if n > 0 else gb.next()", ParserTypeError,
     "cannot merge tile mutex metadata with different ID counts: 1 and 2"),
    ("t = (ga, gb)[n].next()", ParserTypeError,
     "cannot merge tile mutex metadata with different ID counts"),
    # the real parser: ParserTypeError "Ternary selecting a tile must have both branches carry
    # a mutex id"; ours lowers the ternary to an if-merge and refuses it there
    ("t = ga.next() if n > 0 else plain", NotSupported,
     "holds both mutex-guarded group tiles and plain tiles"),
], ids=["ternary", "tuple_index", "ternary_plain"])
def test_groups_with_different_id_counts_cannot_share_a_variable(tmp_path, pick, error,
                                                                  fragment):
    """_expression_parser.py / _scope_manager.py of the real parser: a ParserTypeError."""
    body = MIXED_COUNTS.format(pick=pick)
    if "plain" in pick:
        body = body.replace("    with", "    plain = pl.make_tile(VT, addr=0x8000, size=1024)\n"
                                       "    with", 1)
    assert_refused(error, fragment, tmp_path, "mixed_ids",
                   "x: pl.Tensor[[8, 32], pl.DT_FP32], n: pl.DT_INT32", body,
                   prelude="VT = pl.TileType(shape=[8, 32], dtype=pl.DT_FP32, "
                           "target_memory=pl.MemorySpace.Vec)", jit="pl.jit(auto_mutex=True)")


# ---------------------------------------------------------------- refused as the real parser


GROUP = """
    g = pl.make_tile_group({args})
    with pl.section_vector():
        t = g.{use}
        pl.load(t, x, [0, 0])
        pl.store(x, t, [0, 0])
"""


@pytest.mark.parametrize("args,use,fragment", [
    ("type=VT, addrs=0, mutex_ids=[0, 32]", "next()", "mutex_ids must be ints in [0,31], got 32"),
    ("type=VT, addrs=0, mutex_ids=[-1]", "current()", "mutex_ids must be ints in [0,31], got -1"),
    ("type=VT, addrs=0, mutex_ids=[[1, 1], [2, 3]]", "next()",
     "mutex IDs for one tile must not contain duplicates: (1, 1)"),
    ("type=VT, addrs=0, mutex_ids=[[1, 2], [3]]", "next()",
     "all tiles in a tile group must have the same mutex ID count: 2 and 1"),
    ("type=VT, addrs=0, mutex_ids=[[], [3]]", "next()",
     "mutex ID sequence for a tile must not be empty"),
    ("type=VT, addrs=0, mutex_ids=None", "next()",
     "depth is required when mutex_ids is None or empty"),
    ("type=VT, addrs=0, mutex_ids=[]", "next()",
     "depth is required when mutex_ids is None or empty"),
    ("type=VT, addrs=0, mutex_ids=[0, 1], depth=3", "next()",
     "mutex_ids length 2 must equal depth 3"),
    ("type=VT, addrs=0, depth=0", "next()",
     "depth must be a positive compile-time integer, got 0"),
    ("type=VT, addrs=[0, 0x1000, 0x2000], mutex_ids=[0, 1]", "next()",
     "addrs length 3 must equal depth/len(mutex_ids) 2"),
    ("type=VT, addrs=0, mutex_ids=5", "next()", "mutex_ids must be a list, tuple, or None"),
    ("type=[8, 32], addrs=0, mutex_ids=[0]", "current()", "'type' must be a pl.TileType"),
    ("type=VT, mutex_ids=[0]", "current()", "missing required keyword 'addrs'"),
    ("type=VT, addrs=0, mutex_ids=[0, 1]", "__getitem__(2)", ""),
])
def test_make_tile_group_refusals(tmp_path, args, use, fragment):
    """_buffer_parser.py of the real parser: each a ParserTypeError at the call."""
    body = GROUP.format(args=args, use=use)
    if use.startswith("__getitem__"):
        body = body.replace("g.__getitem__(2)", "g[2]")
        fragment = "tile group index 2 is out of range for a 2-tile group"
    assert_refused(ParserTypeError, fragment, tmp_path, "group",
                   "x: pl.Tensor[[8, 32], pl.DT_FP32]", body, prelude=VT_PRELUDE,
                   jit="pl.jit(auto_mutex=True)")


VT_PRELUDE = ("VT = pl.TileType(shape=[8, 32], dtype=pl.DT_FP32, "
              "target_memory=pl.MemorySpace.Vec)")

LOOP = """
    with pl.section_vector():
        {loop}
            pl.setval(x, i, 1)
"""


@pytest.mark.parametrize("loop,error,fragment", [
    ("for i in pl.range(0, n, step=1):", "ParserSyntaxError",
     "pl.range() does not support keyword arguments"),
    ("for i in pl.range(0, n, 1, unroll=2):", "ParserSyntaxError",
     "pl.range() does not support keyword arguments"),
    ("for i in pl.range():", "ParserSyntaxError", "pl.range() requires at least 1 argument"),
    ("for i in range(n):", "ParserSyntaxError", "For loop must use pl.range()"),
    ("for i, j in pl.range(n):", "ParserSyntaxError", "For loop target must be a simple name"),
    ("for i in pl.range(0, n, 1, 2):", "ParserSyntaxError", "pl.range() takes at most 3"),
    ("for i in pl.range(0, n, 0):", "InvalidOperationError", "pl.range step must not be zero"),
])
def test_range_refusals(tmp_path, loop, error, fragment):
    """_control_flow_parser.py of the real parser."""
    from pypto_pro import errors
    assert_refused(getattr(errors, error), fragment, tmp_path, "loop",
                   "x: pl.Tensor[[8], pl.DT_INT32], n: pl.DT_INT32", LOOP.format(loop=loop))


# ---------------------------------------------------------------- hangs: typed, at the line


@pl.jit()
def wait_without_set(a: pl.Tensor[[64, 64], F32], out: pl.Tensor[[64, 64], F32]):
    tt = pl.TileType(shape=[64, 64], dtype=pl.DT_FP32, target_memory=pl.MemorySpace.Vec)
    tile_a = pl.make_tile(tt, addr=0x0000, size=16384)
    with pl.section_vector():
        pl.load(tile_a, a, [0, 0])
        pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=3)
        pl.relu(tile_a, tile_a)
        pl.store(out, tile_a, [0, 0])


@pl.jit()
def cross_wait_without_set(a: pl.Tensor[[64, 64], F32], out: pl.Tensor[[64, 64], F32]):
    tt = pl.TileType(shape=[64, 64], dtype=pl.DT_FP32, target_memory=pl.MemorySpace.Vec)
    tile_a = pl.make_tile(tt, addr=0x0000, size=16384)
    with pl.section_cube():
        pl.system.bar_all()
    with pl.section_vector():
        pl.system.wait_cross_core(pipe=pl.PipeType.MTE2, event_id=5)
        pl.load(tile_a, a, [0, 0])
        pl.store(out, tile_a, [0, 0])


@pl.jit()
def uneven_sync_all(a: pl.Tensor[[64, 64], F32], out: pl.Tensor[[64, 64], F32]):
    tt = pl.TileType(shape=[64, 64], dtype=pl.DT_FP32, target_memory=pl.MemorySpace.Vec)
    tile_a = pl.make_tile(tt, addr=0x0000, size=16384)
    with pl.section_vector():
        pl.load(tile_a, a, [0, 0])
        if pl.get_block_idx() > 0:
            pl.system.sync_all(core_type=pl.SyncCoreType.AIV_ONLY)
        pl.system.sync_all(core_type=pl.SyncCoreType.AIV_ONLY)  # block 0 never comes back
        pl.store(out, tile_a, [0, 0])


@pytest.mark.parametrize("kernel,text", [
    (wait_without_set, "pl.system.sync_dst("),
    (cross_wait_without_set, "pl.system.wait_cross_core("),
    (uneven_sync_all, "never comes back")], ids=["sync_dst", "wait_cross_core", "sync_all"])
@pytest.mark.parametrize("blocks", [1, 2])
def test_a_wait_nobody_answers_is_a_typed_error_at_its_line(kernel, text, blocks):
    if kernel is uneven_sync_all and blocks == 1:
        blocks = 3
    with use_backend("sim"), pytest.raises((SimulationError, DeadlockError)) as info:
        kernel[None, blocks](torch.zeros(64, 64), torch.zeros(64, 64))
    assert info.value.span is not None and info.value.span.line == line_of(kernel, text)


# ---------------------------------------------------------------- Cube+Vector ping-pong


def _tg(shape, dtype, space, addrs, ids):
    return pl.make_tile_group(type=pl.TileType(shape=shape, dtype=dtype, target_memory=space),
                              addrs=addrs, mutex_ids=ids)


def mixed_pipeline(depth: int):
    """Cube computes C_i = A_i @ B for row blocks i < n (L1 / L0 / Acc rings of `depth`), moves
    each into a UB ring of the vector cores (DualModeSplitM: 16 rows each) and signals event
    i % depth; the vector side waits (a runtime event id), scales by i + 1, stores, and hands
    the slot back on event depth + i % depth, which the cube awaits before reusing it."""
    l1_ids, l0_ids = list(range(depth)), list(range(9, 9 + depth))
    acc_ids, ub_ids = list(range(14, 14 + depth)), list(range(18, 18 + depth))

    @pl.jit(auto_mutex=True)
    def k(a: pl.Tensor[[pl.DYNAMIC, 32], pl.DT_FP16], b: pl.Tensor[[32, 32], pl.DT_FP16],
          out: pl.Tensor[[pl.DYNAMIC, 32], F32]):
        n = a.shape[0] // 32
        a_l1 = _tg([32, 32], pl.DT_FP16, MS.Mat, 0, l1_ids)
        b_l1 = _tg([32, 32], pl.DT_FP16, MS.Mat, 0x10000, [8])
        al = _tg([32, 32], pl.DT_FP16, MS.Left, 0, l0_ids)
        br = _tg([32, 32], pl.DT_FP16, MS.Right, 0, [13])
        acc = _tg([32, 32], F32, MS.Acc, 0, acc_ids)
        vec = _tg([16, 32], F32, MS.Vec, 0, ub_ids)
        with pl.section_cube():
            rb = b_l1.current()
            r0 = br.current()
            pl.load(rb, b, [0, 0])
            pl.move(r0, rb)
            for i in pl.range(n):
                x = a_l1.next()
                l0 = al.next()
                c = acc.next()
                pl.load(x, a, [i * 32, 0])
                pl.move(l0, x)
                pl.matmul(c, l0, r0)
                if i >= depth:
                    pl.system.wait_cross_core(pipe=pl.PipeType.FIX, event_id=depth + i % depth)
                pl.move(vec.next(), c, acc_to_vec_mode=pl.AccToVecMode.DualModeSplitM)
                pl.system.set_cross_core(pipe=pl.PipeType.FIX, event_id=i % depth)
            for i in pl.range(n - depth, n):  # drain the hand-backs not awaited yet
                if i >= 0:
                    pl.system.wait_cross_core(pipe=pl.PipeType.FIX, event_id=depth + i % depth)
        with pl.section_vector():
            sub = pl.get_subblock_idx()
            for i in pl.range(n):
                pl.system.wait_cross_core(pipe=pl.PipeType.V, event_id=i % depth)
                t = vec.next()
                pl.muls(t, t, 1.0 + i)
                pl.store(out, t, [i * 32 + sub * 16, 0])
                pl.system.set_cross_core(pipe=pl.PipeType.MTE3, event_id=depth + i % depth)
    return k


@pytest.mark.parametrize("depth", [1, 2, 3])
@pytest.mark.parametrize("n,blocks", [(5, 1), (2, 2), (1, 1)])
def test_cube_vector_ping_pong_rings(depth, n, blocks):
    a, b = _half((n * 32, 32), 30 + n), _half((32, 32), 31)
    k = mixed_pipeline(depth)

    def run():
        out = torch.zeros(n * 32, 32)
        k[None, blocks](a, b, out)
        return out

    want = a.float() @ b.float()
    want = want * torch.arange(1, n + 1).repeat_interleave(32)[:, None].float()
    assert torch.equal(first_case_natively(run), want)


# ---------------------------------------------------------------- stages: the preload pipeline


MAT16 = pl.TileType([32, 32], pl.DT_FP16, MS.Mat)
UB16 = pl.TileType([16, 32], F32, MS.Vec)


@pl.pipeline.stage
def _cube_stage(a, b, qk, i):
    a_l1 = pl.make_tile_group(type=MAT16, addrs=0, mutex_ids=[0, 1])
    b_l1 = pl.make_tile_group(type=MAT16, addrs=0x8000, mutex_ids=[2])
    al = pl.make_tile_group(type=pl.TileType([32, 32], pl.DT_FP16, MS.Left), addrs=0,
                            mutex_ids=[3, 4])
    br = pl.make_tile_group(type=pl.TileType([32, 32], pl.DT_FP16, MS.Right), addrs=0,
                            mutex_ids=[5])
    acc = pl.make_tile_group(type=pl.TileType([32, 32], F32, MS.Acc), addrs=0, mutex_ids=[6, 7])
    x = a_l1.next()
    y = b_l1.current()
    l0 = al.next()
    r0 = br.current()
    c = acc.next()
    pl.load(x, a, [i * 32, 0])
    pl.load(y, b, [0, 0])
    pl.move(l0, x)
    pl.move(r0, y)
    pl.matmul(c, l0, r0)
    pl.move(qk.next(), c, acc_to_vec_mode=pl.AccToVecMode.DualModeSplitM)


@pl.pipeline.stage
def _vector_stage(qk, out, i):
    sub = pl.get_subblock_idx()
    t = qk.next()
    pl.relu(t, t)
    pl.store(out, t, [i * 32 + sub * 16, 0])


def fused_stages(preload: int, depth: int, split_by_aiv: bool = False):
    """programming_paradigm_overview.md: a cube stage and a vector stage called in one loop,
    `pipeline=PipelineConfig(preload=...)` inserting the cross-core sync of a UB ring declared
    with fwd_ids / bwd_ids. The loop splits blocks by `get_block_idx() // get_subblock_num()`
    (the same on AIC and AIV); `split_by_aiv` uses the bare get_block_idx(), which on the AIV
    side is the AIV's index: the second AIV runs no stage the cube waits for."""
    fwd, bwd, mids = list(range(depth)), list(range(depth, 2 * depth)), \
        list(range(10, 10 + depth))

    @pl.jit(auto_mutex=True, pipeline=pl.pipeline.PipelineConfig(preload=preload))
    def fused(a: pl.Tensor[[pl.DYNAMIC, 32], pl.DT_FP16], b: pl.Tensor[[32, 32], pl.DT_FP16],
              out: pl.Tensor[[pl.DYNAMIC, 32], F32]):
        qk = pl.make_tile_group(type=UB16, addrs=0x20000, mutex_ids=mids, fwd_ids=fwd,
                                bwd_ids=bwd)
        n = a.shape[0] // 32
        core = pl.get_block_idx() if split_by_aiv else pl.get_block_idx() // pl.get_subblock_num()
        for i in pl.range(core, n, pl.get_block_num()):
            with pl.section_cube():
                _cube_stage(a, b, qk, i)
            with pl.section_vector():
                _vector_stage(qk, out, i)
    return fused


@pytest.mark.parametrize("n,blocks", [(5, 1), (6, 2), (3, 4)])
@pytest.mark.parametrize("preload,depth", [(1, 2), (2, 3), (1, 1), (3, 2)])
def test_fused_stages_with_the_preload_pipeline(preload, depth, n, blocks):
    a, b = _half((n * 32, 32), 40 + n), _half((32, 32), 41)
    k = fused_stages(preload, depth)

    def run():
        out = torch.zeros(n * 32, 32)
        k[None, blocks](a, b, out)
        return out

    assert torch.equal(first_case_natively(run), torch.relu(a.float() @ b.float()))


def test_a_stage_loop_split_by_the_aiv_index_hangs_at_the_loop():
    k = fused_stages(1, 2, split_by_aiv=True)
    with use_backend("sim"), pytest.raises(DeadlockError, match="wait_intra_block") as info:
        k[None, 1](_half((32, 32), 1), _half((32, 32), 2), torch.zeros(32, 32))
    assert info.value.span.line == line_of(k, "for i in pl.range(core, n")


# ---------------------------------------------------------------- pipe S, subblocks, soft sync_all


@pl.jit()
def scalar_pipe_flags(x: pl.Tensor[[32, 32], F32], info: pl.Tensor[[4], F32],
                      out: pl.Tensor[[32, 32], F32]):
    """sync_src / sync_dst with PipeType.S: V → S before reading a tile element, S → MTE3
    before storing the tile it wrote, and the backward MTE3 → V / V → MTE2 pairs of a loop."""
    t = pl.make_tile(VT, addr=0, size=1024)
    u = pl.make_tile(VT, addr=0x1000, size=1024)
    with pl.section_vector():
        for i in pl.range(4):
            pl.load(t, x, [i * 8, 0])
            pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
            pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
            pl.muls(u, t, 2.0)
            pl.system.sync_src(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.S, event_id=1)
            pl.system.sync_dst(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.S, event_id=1)
            v = u[0, 0]
            pl.setval(info, i, v)
            u[0, 1] = v + 1.0
            pl.system.sync_src(set_pipe=pl.PipeType.S, wait_pipe=pl.PipeType.MTE3, event_id=2)
            pl.system.sync_dst(set_pipe=pl.PipeType.S, wait_pipe=pl.PipeType.MTE3, event_id=2)
            pl.store(out, u, [i * 8, 0])
            pl.system.sync_src(set_pipe=pl.PipeType.MTE3, wait_pipe=pl.PipeType.V, event_id=3)
            pl.system.sync_dst(set_pipe=pl.PipeType.MTE3, wait_pipe=pl.PipeType.V, event_id=3)
            pl.system.sync_src(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE2, event_id=4)
            pl.system.sync_dst(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE2, event_id=4)


def test_sync_src_dst_on_the_scalar_pipe():
    x = _x(50, 4)

    def run():
        info, out = torch.zeros(4), torch.zeros(32, 32)
        scalar_pipe_flags(x, info, out)
        return torch.cat([out.flatten(), info])

    w = x * 2
    info = torch.stack([w[i * 8, 0] for i in range(4)])
    for i in range(4):
        w[i * 8, 1] = w[i * 8, 0] + 1
    assert torch.equal(first_case_natively(run), torch.cat([w.flatten(), info]))


@pl.jit()
def cube_scalar_to_vector(ws: pl.Tensor[[8], pl.DT_INT32], out: pl.Tensor[[16, 32], F32]):
    """set_cross_core on pipe S: the cube's scalar unit writes GM, each AIV waits on S and
    reads its element."""
    t = pl.make_tile(VT, addr=0, size=1024)
    with pl.section_cube():
        for i in pl.range(8):
            pl.setval(ws, i, i * 3)
        pl.system.set_cross_core(pipe=pl.PipeType.S, event_id=4)
    with pl.section_vector():
        sub = pl.get_subblock_idx()
        pl.system.wait_cross_core(pipe=pl.PipeType.S, event_id=4)
        v = ws[sub + 5]
        pl.expands(t, 1.0)
        pl.muls(t, t, v)
        pl.system.sync_src(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.store(out, t, [sub * 8, 0])


@pl.jit()
def aiv_swap(x: pl.Tensor[[16, 32], F32], ws: pl.Tensor[[16, 32], F32],
             out: pl.Tensor[[16, 32], F32]):
    """INTER_SUBBLOCK: the two AIVs of a block exchange halves through GM."""
    t = pl.make_tile(VT, addr=0, size=1024)
    with pl.section_cube():
        pl.system.bar_all()
    with pl.section_vector():
        sub = pl.get_subblock_idx()
        pl.load(t, x, [sub * 8, 0])
        pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.store(ws, t, [sub * 8, 0])
        pl.system.set_cross_core(pipe=pl.PipeType.MTE3, event_id=1,
                                 sync_mode=pl.CrossCoreSyncMode.INTER_SUBBLOCK)
        pl.system.wait_cross_core(pipe=pl.PipeType.MTE2, event_id=1,
                                  sync_mode=pl.CrossCoreSyncMode.INTER_SUBBLOCK)
        pl.load(t, ws, [(1 - sub) * 8, 0])
        pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.store(out, t, [sub * 8, 0])


@pl.jit()
def soft_ring(x: pl.Tensor[[pl.DYNAMIC, 32], F32], ws: pl.Tensor[[pl.DYNAMIC, 32], F32],
              sync_gm: pl.Tensor[[1024], pl.DT_INT32], out: pl.Tensor[[pl.DYNAMIC, 32], F32]):
    """sync_all.md soft mode: every AIV publishes its block, SOFT sync_all, then reads its
    neighbour's."""
    t = pl.make_tile(VT, addr=0, size=1024)
    ub = pl.make_tile(pl.TileType(shape=[8, 8], dtype=pl.DT_INT32, target_memory=MS.Vec),
                      addr=0x2000, size=256)
    with pl.section_vector():
        n = pl.get_block_num()
        me = pl.get_block_idx()
        pl.load(t, x, [me * 8, 0])
        pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.store(ws, t, [me * 8, 0])
        pl.system.sync_all([sync_gm, ub], mode=pl.SyncAllMode.SOFT,
                           core_type=pl.SyncCoreType.AIV_ONLY)
        pl.load(t, ws, [((me + 1) % n) * 8, 0])
        pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.store(out, t, [me * 8, 0])


def test_cross_core_on_pipe_s():
    def run():
        out = torch.zeros(16, 32)
        cube_scalar_to_vector(torch.zeros(8, dtype=torch.int32), out)
        return out

    want = torch.cat([torch.full((8, 32), 15.0), torch.full((8, 32), 18.0)])
    assert torch.equal(first_case_natively(run), want)


@pytest.mark.parametrize("blocks", [1, 3])
def test_inter_subblock_swap(blocks):
    x = _x(51, 2)

    def run():
        out = torch.zeros(16, 32)
        aiv_swap[None, blocks](x, torch.zeros(16, 32), out)
        return out

    assert torch.equal(first_case_natively(run), torch.cat([x[8:], x[:8]]))


@pytest.mark.parametrize("blocks", [1, 2, 5])
def test_soft_sync_all_ring(blocks):
    x = _x(52, blocks)

    def run():
        out = torch.zeros_like(x)
        soft_ring[None, blocks](x, torch.zeros_like(x), torch.zeros(1024, dtype=torch.int32),
                                out)
        return out

    assert torch.equal(first_case_natively(run), torch.roll(x, -8, 0))


@pl.jit()
def inter_block_ring(x: pl.Tensor[[pl.DYNAMIC, 32], F32], ws: pl.Tensor[[pl.DYNAMIC, 32], F32],
                     out: pl.Tensor[[pl.DYNAMIC, 32], F32]):
    """INTER_BLOCK (mode 0) as a barrier of every AIV: publish, set + wait, read the
    neighbour's block. Twice, on two event ids. FFTS sync builds only in a mix kernel (the
    real jit: "Contains ffts cross sync but cube code is missing"), hence the cube section."""
    t = pl.make_tile(VT, addr=0, size=1024)
    with pl.section_cube():
        pl.system.bar_all()
    with pl.section_vector():
        n = pl.get_block_num() * pl.get_subblock_num()
        me = pl.get_block_idx()
        pl.load(t, x, [me * 8, 0])
        for r in pl.range(2):
            pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE3, event_id=0)
            pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE3, event_id=0)
            pl.store(ws, t, [(r * n + me) * 8, 0])
            pl.system.set_cross_core(pipe=pl.PipeType.MTE3, event_id=6 + r,
                                     sync_mode=pl.CrossCoreSyncMode.INTER_BLOCK)
            pl.system.wait_cross_core(pipe=pl.PipeType.MTE2, event_id=6 + r,
                                      sync_mode=pl.CrossCoreSyncMode.INTER_BLOCK)
            pl.load(t, ws, [(r * n + (me + 1) % n) * 8, 0])
        pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.store(out, t, [me * 8, 0])


@pytest.mark.parametrize("blocks", [1, 2, 3])
def test_inter_block_barrier_ring(blocks):
    x = _x(53, 2 * blocks)

    def run():
        out = torch.zeros_like(x)
        inter_block_ring[None, blocks](x, torch.zeros(4 * blocks * 8, 32), out)
        return out

    assert torch.equal(first_case_natively(run), torch.roll(x, -16, 0))


def test_ffts_sync_in_a_vector_only_kernel_is_refused_as_the_real_jit(tmp_path):
    from pypto_pro.errors import InvalidOperation
    body = """
    with pl.section_vector():
        pl.system.set_cross_core(pipe=pl.PipeType.MTE3, event_id=1,
                                 sync_mode=pl.CrossCoreSyncMode.INTER_BLOCK)
        pl.system.wait_cross_core(pipe=pl.PipeType.MTE2, event_id=1,
                                  sync_mode=pl.CrossCoreSyncMode.INTER_BLOCK)
        pl.setval(x, 0, 1)
"""
    assert_refused(InvalidOperation, "Contains ffts cross sync but cube code is missing",
                   tmp_path, "ffts", "x: pl.Tensor[[8], pl.DT_INT32]", body)


def vector_to_cube_ring(depth: int):
    """set_cross_core_wait_cross_core.md's (x + y) @ rhs, pipelined over row blocks: each AIV
    inserts its half of x_i + y_i into an L1 ring slot (NZ) and signals event i % depth; the
    cube waits on MTE1, moves the slot to L0A, hands it back on event 8 + i % depth (which the
    AIVs await before refilling it, and drain at the end) and multiplies."""
    mids = list(range(20, 20 + depth))
    mat_nz = pl.TileType(shape=[32, 32], dtype=F32, target_memory=MS.Mat, layout=pl.NZ)

    @pl.jit(auto_mutex=True)
    def vc(x: pl.Tensor[[pl.DYNAMIC, 32], F32], y: pl.Tensor[[pl.DYNAMIC, 32], F32],
           rhs: pl.Tensor[[32, 32], F32], out: pl.Tensor[[pl.DYNAMIC, 32], F32]):
        n = x.shape[0] // 32
        p_mat = pl.make_tile_group(type=mat_nz, addrs=0x10000, mutex_ids=mids)
        with pl.section_vector():
            sub = pl.get_subblock_idx()
            tx = _tg([16, 32], F32, MS.Vec, 0, [0, 1])
            ty = _tg([16, 32], F32, MS.Vec, 0x2000, [2, 3])
            ts = _tg([16, 32], F32, MS.Vec, 0x4000, [4])
            tnz = pl.make_tile_group(type=pl.TileType(shape=[16, 32], dtype=F32,
                                                      target_memory=MS.Vec, layout=pl.NZ),
                                     addrs=0x6000, mutex_ids=[5])
            for i in pl.range(n):
                a = tx.next()
                b = ty.next()
                s = ts.current()
                z = tnz.current()
                pl.load(a, x, [i * 32 + sub * 16, 0])
                pl.load(b, y, [i * 32 + sub * 16, 0])
                pl.add(s, a, b)
                pl.move(z, s)
                if i >= depth:
                    pl.system.wait_cross_core(pipe=pl.PipeType.MTE3, event_id=8 + i % depth)
                pl.insert(p_mat.next(), z, [sub * 16, 0])
                pl.system.set_cross_core(pipe=pl.PipeType.MTE3, event_id=i % depth)
            for i in pl.range(n - depth, n):
                if i >= 0:
                    pl.system.wait_cross_core(pipe=pl.PipeType.MTE3, event_id=8 + i % depth)
        with pl.section_cube():
            rm = pl.make_tile_group(type=mat_nz, addrs=0, mutex_ids=[6])
            lf = pl.make_tile_group(type=pl.TileType(shape=[32, 32], dtype=F32,
                                                     target_memory=MS.Left, layout=pl.NZ),
                                    addrs=0, mutex_ids=[7, 8])
            rr = pl.make_tile_group(type=pl.TileType(shape=[32, 32], dtype=F32,
                                                     target_memory=MS.Right, layout=pl.ZN),
                                    addrs=0, mutex_ids=[9])
            ac = pl.make_tile_group(type=pl.TileType(shape=[32, 32], dtype=F32,
                                                     target_memory=MS.Acc, layout=pl.NZ,
                                                     fractal=1024),
                                    addrs=0, mutex_ids=[10, 11])
            r = rm.current()
            rt = rr.current()
            pl.load(r, rhs, [0, 0])
            pl.move(rt, r)
            for i in pl.range(n):
                pl.system.wait_cross_core(pipe=pl.PipeType.MTE1, event_id=i % depth)
                lt = lf.next()
                pl.move(lt, p_mat.next())
                pl.system.set_cross_core(pipe=pl.PipeType.MTE1, event_id=8 + i % depth)
                c = ac.next()
                pl.matmul(c, lt, rt)
                pl.store(out, c, [i * 32, 0])
    return vc


@pytest.mark.parametrize("depth", [1, 2, 3])
@pytest.mark.parametrize("n,blocks", [(4, 1), (5, 2), (1, 2)])
def test_vector_to_cube_ring_through_l1(depth, n, blocks):
    x, y, r = _small((n * 32, 32), 60 + n), _small((n * 32, 32), 61), _small((32, 32), 62)
    k = vector_to_cube_ring(depth)

    def run():
        out = torch.zeros(n * 32, 32)
        k[None, blocks](x, y, r, out)
        return out

    assert torch.equal(first_case_natively(run), ((x + y).double() @ r.double()).float())


# ---------------------------------------------------------------- scalar control flow


@pl.jit()
def scalar_flow(out: pl.Tensor[[16], pl.DT_INT32], n: pl.DT_INT32):
    """Nested loops with continue / break, while True with break, a compound while condition,
    an if / elif / else chain on % of the loop variable, a ternary and a negative-step range
    over a runtime start: all on the scalar unit."""
    with pl.section_vector():
        c = 0
        for i in pl.range(n):
            pl.setval(out, c, i * 2)
            c = c + 1
        acc = 0
        for i in pl.range(3):
            for j in pl.range(i, 4):
                if j == 2:
                    continue
                if i + j > 4:
                    break
                acc = acc + i * 10 + j
        pl.setval(out, 8, acc)
        k = 0
        while True:
            k = k + 3
            if k > 10:
                break
        pl.setval(out, 9, k)
        m = n
        while m > 0 and m % 5 != 0:
            m = m - 1
        pl.setval(out, 10, m)
        s = 0
        for i in pl.range(n):
            if i % 2 == 0:
                s = s + i
            elif i % 3 == 0:
                s = s - i
            else:
                s = s * 2
        pl.setval(out, 11, s)
        t = 100
        for i in pl.range(n, 0, -1):
            t = t - i if t > 50 else t + i
        pl.setval(out, 12, t)


def _scalar_flow_ref(n: int) -> list[int]:
    o = [0] * 16
    for i in range(n):
        o[i] = i * 2
    acc = 0
    for i in range(3):
        for j in range(i, 4):
            if j == 2:
                continue
            if i + j > 4:
                break
            acc += i * 10 + j
    k = 0
    while True:
        k += 3
        if k > 10:
            break
    m = n
    while m > 0 and m % 5 != 0:
        m -= 1
    s = 0
    for i in range(n):
        if i % 2 == 0:
            s += i
        elif i % 3 == 0:
            s -= i
        else:
            s *= 2
    t = 100
    for i in range(n, 0, -1):
        t = t - i if t > 50 else t + i
    o[8:13] = [acc, k, m, s, t]
    return o


@pytest.mark.parametrize("n", [0, 3, 7, 8])
def test_scalar_control_flow(n):
    def run():
        out = torch.zeros(16, dtype=torch.int32)
        scalar_flow(out, n)
        return out

    assert first_case_natively(run).tolist() == _scalar_flow_ref(n)


@pl.jit(auto_mutex=True)
def manual_and_auto(x: pl.Tensor[[32, 32], F32], out: pl.Tensor[[32, 32], F32]):
    """Tile_vector_computation.md: make_tile with hand-written flags and a make_tile_group
    under auto_mutex in one kernel."""
    g = pl.make_tile_group(type=VT, addrs=0, mutex_ids=[0, 1])
    plain = pl.make_tile(VT, addr=0x4000, size=1024)
    with pl.section_vector():
        for i in pl.range(4):
            t = g.next()
            pl.load(t, x, [i * 8, 0])
            pl.muls(plain, t, 4.0)
            pl.system.sync_src(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=1)
            pl.system.sync_dst(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=1)
            pl.store(out, plain, [i * 8, 0])
            pl.system.sync_src(set_pipe=pl.PipeType.MTE3, wait_pipe=pl.PipeType.V, event_id=2)
            pl.system.sync_dst(set_pipe=pl.PipeType.MTE3, wait_pipe=pl.PipeType.V, event_id=2)


def test_manual_flags_and_auto_mutex_in_one_kernel():
    x = _x(70, 4)
    assert torch.equal(_run(manual_and_auto, 1, x), x * 4)


@pl.jit()
def unsynchronised(a: pl.Tensor[[64, 64], F32], out: pl.Tensor[[64, 64], F32]):
    tt = pl.TileType(shape=[64, 64], dtype=pl.DT_FP32, target_memory=pl.MemorySpace.Vec)
    tile_a = pl.make_tile(tt, addr=0x0000, size=16384)
    with pl.section_vector():
        pl.load(tile_a, a, [0, 0])
        pl.relu(tile_a, tile_a)
        pl.store(out, tile_a, [0, 0])


def test_make_tile_without_flags_races_and_the_sanitizer_names_it():
    """Tile_vector_computation.md: the framework inserts no sync for make_tile tiles; without
    sync_src / sync_dst the add reads UB the load has not filled."""
    with use_backend("sim"), sanitize():
        unsynchronised(torch.randn(64, 64), torch.zeros(64, 64))
    kinds = {f.kind for f in unsynchronised.last_result.sanitizer}
    assert any("RACE" in k for k in kinds), kinds


@pl.jit(auto_mutex=True)
def shared_ids(x: pl.Tensor[[32, 32], F32], out: pl.Tensor[[32, 32], F32]):
    """make_tile_group.md: ids may repeat across tiles: three groups over ids 0 / 1 (one with
    a second id 5 on both slots), one op reading two tiles that hold the same id."""
    ga = pl.make_tile_group(type=VT, addrs=0, mutex_ids=[0, 1])
    gb = pl.make_tile_group(type=VT, addrs=0x2000, mutex_ids=[1, 0])
    gc = pl.make_tile_group(type=VT, addrs=0x4000, mutex_ids=[[0, 5], [1, 5]])
    with pl.section_vector():
        for i in pl.range(4):
            a = ga.next()
            b = gb.next()
            c = gc.next()
            pl.load(a, x, [i * 8, 0])
            pl.load(b, x, [((i + 1) % 4) * 8, 0])
            pl.add(c, a, b)
            pl.store(out, c, [i * 8, 0])


@pl.jit(auto_mutex=True)
def element_access_by_slot(x: pl.Tensor[[32, 32], F32], out: pl.Tensor[[32, 32], F32]):
    """g[k][i, j] reads and writes and pl.getval(g[k], off) on slots picked by a runtime k."""
    g = pl.make_tile_group(type=VT, addrs=0, mutex_ids=[0, 1, 2])
    with pl.section_vector():
        for k in pl.range(3):
            pl.load(g[k], x, [k * 8, 0])
        for k in pl.range(3):
            g[k][0, 1] = g[(k + 1) % 3][0, 0] + pl.getval(g[k], 2)
        for k in pl.range(3):
            pl.store(out, g[k], [k * 8, 0])


def test_ids_shared_across_groups():
    x = _x(71, 4)
    assert torch.equal(_run(shared_ids, 1, x), x + torch.roll(x, -8, 0))


def test_element_access_on_subscripted_slots():
    x = _x(72, 4)
    want = x.clone()
    want[24:] = 0
    for k in range(3):
        want[k * 8, 1] = x[((k + 1) % 3) * 8, 0] + x[k * 8, 2]
    assert torch.equal(_run(element_access_by_slot, 1, x), want)
