"""Helpers that return (issue 21, class 3): inlined Python helpers with early returns, returns
inside their loops (nested too), bare returns, and tuples of tiles and scalars unpacked by the
caller (`t, s = helper(...)`). Values against a Python / torch reference on the simulator and
the native backend.
"""
from __future__ import annotations

import pytest
import torch
from dual_backend import sim_and_native

import pypto_pro.language as pl
from pypto_pro.errors import UnsupportedFeatureError
from pypto_pro.runtime.kernel_def import Specialization

VT = pl.TileType(shape=[16, 32], dtype=pl.DT_FP32, target_memory=pl.MemorySpace.Vec)
X = [1, 3, 9, 4, 7, 2, 6, 8]


# ---------------------------------------------------------------- scalar helpers


def first_at_least(x, n, limit):
    i = 0
    while i < n:
        if x[i] >= limit:
            return i
        i = i + 1
    return n


def find_in_range(x, n, limit):
    for i in pl.range(n):
        v = x[i]
        if v >= limit:
            return i, v
    return n, 0


def clamp(v, lo, hi):
    if v < lo:
        return lo
    if v > hi:
        return hi
    return v


def first_pair_over(x, n, limit):
    """A return two loops deep: it leaves both loops."""
    for i in pl.range(n):
        for j in pl.range(i + 1, n):
            if x[i] + x[j] > limit:
                return i * 10 + j
    return -1


@pl.jit()
def search(x: pl.Tensor[[8], pl.DT_INT32], out: pl.Tensor[[7], pl.DT_INT32],
           limit: pl.DT_INT32):
    with pl.section_vector():
        pl.setval(out, 0, first_at_least(x, 8, limit))
        k, v = find_in_range(x, 8, limit)
        pl.setval(out, 1, k)
        pl.setval(out, 2, v)
        pl.setval(out, 3, clamp(limit, 2, 5))
        pl.setval(out, 4, clamp(x[0], 2, 5))
        pl.setval(out, 5, clamp(x[7], 2, 5))
        pl.setval(out, 6, first_pair_over(x, 8, limit + 5))


def _reference(limit: int) -> list[int]:
    first = next((i for i, v in enumerate(X) if v >= limit), 8)
    found = next(((i, v) for i, v in enumerate(X) if v >= limit), (8, 0))
    pair = next((i * 10 + j for i in range(8) for j in range(i + 1, 8)
                 if X[i] + X[j] > limit + 5), -1)
    return [first, *found, min(max(limit, 2), 5), min(max(X[0], 2), 5),
            min(max(X[7], 2), 5), pair]


@pytest.mark.parametrize("limit", [7, 2, 100])
def test_returns_in_loops_and_guard_clauses(limit):
    def run():
        out = torch.zeros(7, dtype=torch.int32)
        search(torch.tensor(X, dtype=torch.int32), out, limit)
        return out

    assert sim_and_native(run).tolist() == _reference(limit)


def test_guard_clauses_stay_structured():
    search.compiled_variants.clear()
    text = search.compile(Specialization(arch="a5")).passes["vector"][0].ir_text
    # clamp(limit, 2, 5): the rest of the helper moves into the else of each guard
    start = text.index("if limit < 2:")
    clamp_text = text[start:text.index("block.setval(out, 3", start)]
    assert "while" not in clamp_text and "break" not in clamp_text
    assert clamp_text.count("else:") == 2


# ---------------------------------------------------------------- tiles and scalars mixed


def load_scaled(g, x, row, n):
    """A tile of the group and a scale: 2.0 for the rows below n, else 0.5."""
    t = g.next()
    pl.load(t, x, [row, 0])
    if row < n:
        return t, 2.0
    return t, 0.5


def first_slot_at_or_after(g, flags, start):
    """The slot of the first raised flag from `start` on (a tile returned from a loop)."""
    for k in pl.range(start, 4):
        if flags[k] != 0:
            return g[k]
    return g[0]


def store_rows_below(y, t, row, n):
    if row >= n:
        return
    pl.store(y, t, [row, 0])


@pl.jit(auto_mutex=True)
def scaled_rows(x: pl.Tensor[[64, 32], pl.DT_FP32], y: pl.Tensor[[64, 32], pl.DT_FP32],
                n: pl.DT_INT32):
    g = pl.make_tile_group(type=VT, addrs=0, mutex_ids=[0, 1])
    with pl.section_vector():
        for i in pl.range(4):
            t, scale = load_scaled(g, x, i * 16, n)
            pl.mul(t, t, scale)
            pl.store(y, t, [i * 16, 0])


@pl.jit(auto_mutex=True)
def chosen_slots(x: pl.Tensor[[16, 32], pl.DT_FP32], flags: pl.Tensor[[4], pl.DT_INT32],
                 y: pl.Tensor[[64, 32], pl.DT_FP32], n: pl.DT_INT32):
    g = pl.make_tile_group(type=VT, addrs=0, mutex_ids=[0, 1, 2, 3])
    scales = (1.0, 2.0, 3.0, 4.0)
    with pl.section_vector():
        for k in pl.range(4):
            pl.load(g[k], x, [0, 0])
            pl.mul(g[k], g[k], scales[k])
        for i in pl.range(4):
            t = first_slot_at_or_after(g, flags, i)
            store_rows_below(y, t, i * 16, n)


def test_a_tile_and_a_scalar_returned_from_branches():
    x = torch.randn(64, 32)

    def run():
        y = torch.zeros(64, 32)
        scaled_rows(x, y, 32)
        return y

    assert torch.equal(sim_and_native(run), torch.cat([x[:32] * 2, x[32:] * 0.5]))


def test_a_tile_returned_from_a_loop_and_a_bare_return():
    x = torch.randn(16, 32)
    flags = torch.tensor([0, 1, 0, 1], dtype=torch.int32)

    def run():
        y = torch.zeros(64, 32)
        chosen_slots(x, flags, y, 48)
        return y

    # from i on, the first raised flag: i=0,1 -> slot 1; i=2,3 -> slot 3; rows >= 48 not stored
    expected = torch.cat([x * 2, x * 2, x * 4, torch.zeros(16, 32)])
    assert torch.equal(sim_and_native(run), expected)


# ---------------------------------------------------------------- refused


def returns_inside_a_section(x):
    with pl.section_vector():
        return x


@pl.jit()
def kernel_with_a_section_return(out: pl.Tensor[[1], pl.DT_INT32], n: pl.DT_INT32):
    v = returns_inside_a_section(n)
    with pl.section_vector():
        pl.setval(out, 0, v)


def test_a_return_inside_a_helper_section_is_refused_at_its_line():
    kernel_with_a_section_return.compiled_variants.clear()
    with pytest.raises(UnsupportedFeatureError) as info:
        kernel_with_a_section_return.compile(Specialization(arch="a5"))
    assert "return inside a 'with' section of an inlined helper" in info.value.message
    assert info.value.span.line == returns_inside_a_section.__code__.co_firstlineno + 2
