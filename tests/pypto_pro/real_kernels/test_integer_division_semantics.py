"""Issue 21, class 10: the values the real toolchain computes where Python's differ.

* `//` and `%` on run-time integers are the generated C++'s `/` and `%`: truncation toward zero,
  the remainder with the dividend's sign (the real codegen emits `(a / b)`, `(a % b)`); on
  compile-time constants they fold in Python as the real parser folds them (floor); an IR
  constant the constant-folding pass finds folds as C++ computes it; `//` on a run-time float
  is C++'s float `/`, and `%` on one is refused (C++ has no float `%`).
* `get_block_idx()` on the vector side is `block_idx * subblock_dim + subblock_id`: 2·b + s on
  the AIVs of a mix kernel, b on an AIV-only kernel.
* A dual-destination move out of L0C first rounds the Acc tile's valid shape up (rows to even
  for DualModeSplitM, columns to a multiple of 32 for DualModeSplitN) and each AIV receives half
  of the rounded window: M = 33 gives the AIVs 17 and 16 rows, N = 33 gives 32 and 1 columns
  (the docs' tail rules).

Every kernel runs on the stream engine, the Python engine, the functional simulator and
natively, and is checked against torch.
"""
from __future__ import annotations

import re

import pytest
import torch

import pypto_pro.language as pl
from pypto_pro.codegen import generate
from pypto_pro.compiler import compile_kernel
from pypto_pro.errors import InvalidShape, UnsupportedFeatureError
from pypto_pro.runtime.kernel_def import Specialization

SPEC = Specialization(arch="a5")


def _artifacts(kernel):
    compiled = compile_kernel(kernel.kernel_def, SPEC)
    return compiled, generate(compiled)


def _trunc(a, b) -> torch.Tensor:
    return torch.div(torch.as_tensor(a), b, rounding_mode="trunc")


# ---------------------------------------------------------------- scalar // and %


@pl.jit(arch="a5")
def divide_kernel(out: pl.Tensor[[12], pl.DT_INT64], n: pl.DT_INT32, m: pl.DT_INT32,
                  w: pl.DT_INT64):
    with pl.section_vector():
        pl.setval(out, 0, n // m)
        pl.setval(out, 1, n % m)
        pl.setval(out, 2, n // -4)
        pl.setval(out, 3, n % -4)
        pl.setval(out, 4, w // m)
        pl.setval(out, 5, w % 10)
        q = n
        q //= 3
        pl.setval(out, 6, q)
        pl.setval(out, 7, -7 // 2)  # compile-time constants fold in Python, as the real parser
        pl.setval(out, 8, -7 % 2)
        if n > 0:
            d = -9
        else:
            d = -9
        pl.setval(out, 9, d // 4)  # an IR constant the constant-folding pass folds
        pl.setval(out, 10, d % 4)
        pl.setval(out, 11, (n - m) // 2 * 2 + (n - m) % 2)


def _divide_reference(n: int, m: int, w: int) -> list[int]:
    t = torch.tensor
    return [int(_trunc(n, m)), int(torch.fmod(t(n), m)), int(_trunc(n, -4)),
            int(torch.fmod(t(n), -4)), int(_trunc(w, m)), int(torch.fmod(t(w), 10)),
            int(_trunc(n, 3)), -4, 1, int(_trunc(-9, 4)), int(torch.fmod(t(-9), 4)), n - m]


@pytest.mark.parametrize("n, m, w", [(-7, 2, -1_000_000_007), (7, -2, 1 << 40), (-9, -4, -5),
                                     (5, 3, 0)])
def test_runtime_division_truncates_on_every_backend(everywhere, n, m, w):
    def launch():
        out = torch.zeros(12, dtype=torch.int64)
        divide_kernel[None, 1](out, n, m, w)
        return out.tolist()

    want = _divide_reference(n, m, w)
    for engine, got in everywhere(launch).items():
        assert got == want, engine


def test_generated_cpp_divides_as_the_real_codegen():
    compiled, art = _artifacts(divide_kernel)
    text = art.kernel_cpp
    assert "pypto_floordiv" not in text and "pypto_floormod" not in text
    assert re.search(r"\bn / m\b", text) and re.search(r"\bn % m\b", text)
    assert re.search(r"static_cast<int64_t>\(n\) / -?4|n / -4", text)
    ir = {r.name: r for r in compiled.passes["vector"]}
    folded = ir["constant_folding"].ir_text
    assert "setval(out, 9, -2," in folded  # -9 // 4 folded as C++ computes it (floor: -3)
    assert "setval(out, 10, -1," in folded


@pl.jit(arch="a5")
def float_divide_kernel(out: pl.Tensor[[2], pl.DT_FP32], x: pl.DT_FP32, y: pl.DT_FP32):
    with pl.section_vector():
        pl.setval(out, 0, x // y)
        pl.setval(out, 1, x // 2)


def test_runtime_float_floordiv_is_a_float_division(everywhere):
    def launch():
        out = torch.zeros(2, dtype=torch.float32)
        float_divide_kernel[None, 1](out, 7.0, -2.0)
        return out.tolist()

    for engine, got in everywhere(launch).items():
        assert got == [-3.5, 3.5], engine


@pl.jit(arch="a5")
def float_modulo_kernel(out: pl.Tensor[[1], pl.DT_FP32], x: pl.DT_FP32):
    with pl.section_vector():
        pl.setval(out, 0, x % 2.0)


def test_runtime_float_modulo_is_refused_at_its_line():
    with pytest.raises(UnsupportedFeatureError, match="'%' on a run-time float") as info:
        compile_kernel(float_modulo_kernel.kernel_def, SPEC)
    assert "x % 2.0" in str(info.value)


# ---------------------------------------------------------------- SIMT lanes

N_THREADS = 32
LANES_T = pl.TileType([1, N_THREADS], pl.DT_INT32)


@pl.simt.function(max_threads=N_THREADS)
def lane_divide(q: pl.Tile[[1, N_THREADS], pl.DT_INT32], r: pl.Tile[[1, N_THREADS], pl.DT_INT32],
                k: pl.DT_INT32):
    tid = pl.simt.thread_idx().x
    v = tid - 16
    q[0, tid] = v // k + k // -2
    r[0, tid] = v % k


@pl.jit(arch="a5")
def simt_divide_kernel(q_out: pl.Tensor[[1, N_THREADS], pl.DT_INT32],
                       r_out: pl.Tensor[[1, N_THREADS], pl.DT_INT32], k: pl.DT_INT32):
    with pl.section_vector():
        q = pl.make_tile(LANES_T, addr=0x0)
        r = pl.make_tile(LANES_T, addr=0x100)
        pl.simt.launch(lane_divide, threads=N_THREADS, args=(q, r, k))
        pl.system.sync_src(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.store(q_out, q, [0, 0])
        pl.store(r_out, r, [0, 0])


def test_simt_lanes_divide_as_cpp(everywhere):
    k = 5

    def launch():
        q = torch.zeros(1, N_THREADS, dtype=torch.int32)
        r = torch.zeros(1, N_THREADS, dtype=torch.int32)
        simt_divide_kernel[None, 1](q, r, k)
        return q, r

    v = torch.arange(N_THREADS, dtype=torch.int32) - 16
    want_q = (_trunc(v, k) + _trunc(k, -2)).to(torch.int32).view(1, -1)
    want_r = torch.fmod(v, k).view(1, -1)
    for engine, (q, r) in everywhere(launch).items():
        assert torch.equal(q, want_q) and torch.equal(r, want_r), engine


# ---------------------------------------------------------------- get_block_idx


@pl.jit(arch="a5")
def block_index_kernel(out: pl.Tensor[[32], pl.DT_INT32]):
    core = pl.get_block_idx() // pl.get_subblock_num()  # the block on both sides (docs)
    with pl.section_cube():
        pl.setval(out, 24 + core, pl.get_block_idx() * 10 + pl.get_subblock_num())
    with pl.section_vector():
        v = pl.get_block_idx()
        pl.setval(out, v, core * 100 + pl.get_subblock_idx() * 10 + pl.get_subblock_num())
        pl.setval(out, 16 + v, v)


@pl.jit(arch="a5")
def vector_block_index_kernel(out: pl.Tensor[[8], pl.DT_INT32]):
    with pl.section_vector():
        b = pl.get_block_idx()
        pl.setval(out, b, b * 10 + pl.get_subblock_num())


def test_block_index_on_the_vector_side(everywhere):
    blocks = 4

    def launch():
        mix = torch.full((32,), -1, dtype=torch.int32)
        block_index_kernel[None, blocks](mix)
        aiv = torch.full((8,), -1, dtype=torch.int32)
        vector_block_index_kernel[None, blocks](aiv)
        return mix.tolist(), aiv.tolist()

    vec = [b * 100 + s * 10 + 2 for b in range(blocks) for s in (0, 1)]  # index 2b + s
    want_mix = vec + [-1] * 8 + list(range(8)) + [b * 10 + 1 for b in range(blocks)] + [-1] * 4
    want_aiv = [b * 10 + 1 for b in range(blocks)] + [-1] * 4
    for engine, (mix, aiv) in everywhere(launch).items():
        assert mix == want_mix and aiv == want_aiv, engine


@pytest.mark.parametrize("kernel", [block_index_kernel, vector_block_index_kernel])
def test_vector_block_index_is_spelled_as_the_real_codegen(kernel):
    _, art = _artifacts(kernel)
    vector = art.kernel_cpp.split("__DAV_VEC__", 1)[1]
    assert "get_block_idx() * get_subblockdim() + get_subblockid()" in vector


# ---------------------------------------------------------------- DualModeSplit tails

M_TILE, K_DIM, N_TILE = 64, 32, 64
A_L1 = pl.TileType([M_TILE, K_DIM], pl.DT_FP16, pl.MemorySpace.Mat)
B_L1 = pl.TileType([K_DIM, N_TILE], pl.DT_FP16, pl.MemorySpace.Mat)
A_L0 = pl.TileType([M_TILE, K_DIM], pl.DT_FP16, pl.MemorySpace.Left)
B_L0 = pl.TileType([K_DIM, N_TILE], pl.DT_FP16, pl.MemorySpace.Right)
C_L0 = pl.TileType([M_TILE, N_TILE], pl.DT_FP32, pl.MemorySpace.Acc)
ROWS_UB = pl.TileType([M_TILE // 2, N_TILE], pl.DT_FP32)  # SplitM: half the rows per AIV
COLS_UB = pl.TileType([M_TILE, N_TILE // 2], pl.DT_FP32)  # SplitN: half the columns per AIV


def _split_kernel(split_m: bool):
    """C = A·B with the Acc valid shape [valid_m, valid_n], sent to the AIVs by a dual move
    (SplitM or SplitN); each AIV sets its share as the docs compute it and stores it to `c`;
    the cube stores the Acc's valid shape after the move to `shape`."""
    mode = pl.AccToVecMode.DualModeSplitM if split_m else pl.AccToVecMode.DualModeSplitN
    half_t = ROWS_UB if split_m else COLS_UB

    @pl.jit(arch="a5", name="split_m_tail" if split_m else "split_n_tail")
    def split_tail(a: pl.Tensor[[M_TILE, K_DIM], pl.DT_FP16],
                   b: pl.Tensor[[K_DIM, N_TILE], pl.DT_FP16],
                   c: pl.Tensor[[M_TILE, N_TILE], pl.DT_FP32],
                   shape: pl.Tensor[[2], pl.DT_INT32], valid_m: pl.DT_INT32,
                   valid_n: pl.DT_INT32):
        vec = pl.make_tile_group(type=half_t, addrs=0x0, depth=1)
        with pl.section_cube():
            a1 = pl.make_tile(A_L1, addr=0x0)
            b1 = pl.make_tile(B_L1, addr=0x1000)
            a0 = pl.make_tile(A_L0, addr=0x0)
            b0 = pl.make_tile(B_L0, addr=0x0)
            acc = pl.make_tile(C_L0, addr=0x0)
            pl.load(a1, a, [0, 0])
            pl.load(b1, b, [0, 0])
            pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE1, event_id=0)
            pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE1, event_id=0)
            pl.move(a0, a1)
            pl.move(b0, b1)
            pl.system.sync_src(set_pipe=pl.PipeType.MTE1, wait_pipe=pl.PipeType.M, event_id=0)
            pl.system.sync_dst(set_pipe=pl.PipeType.MTE1, wait_pipe=pl.PipeType.M, event_id=0)
            pl.set_validshape(acc, [valid_m, valid_n])
            pl.matmul(acc, a0, b0)
            pl.system.sync_src(set_pipe=pl.PipeType.M, wait_pipe=pl.PipeType.FIX, event_id=0)
            pl.system.sync_dst(set_pipe=pl.PipeType.M, wait_pipe=pl.PipeType.FIX, event_id=0)
            pl.move(vec.current(), acc, acc_to_vec_mode=mode)
            pl.system.set_cross_core(pipe=pl.PipeType.FIX, event_id=0)
            pl.setval(shape, 0, acc.valid_shape[0])
            pl.setval(shape, 1, acc.valid_shape[1])
        with pl.section_vector():
            sub = pl.get_subblock_idx()
            t = vec.current()
            pl.system.wait_cross_core(pipe=pl.PipeType.MTE3, event_id=0)
            if split_m:
                v0 = (valid_m + 1) // 2 * 2 // 2  # the docs' Vec0 / Vec1 shares
                rows = v0 if sub == 0 else valid_m - v0
                if rows > 0:
                    pl.set_validshape(t, [rows, valid_n])
                    pl.store(c, t, [sub * v0, 0])
            else:
                v0 = (valid_n + 31) // 32 * 32 // 2
                if valid_n <= 16:
                    v0 = valid_n
                cols = v0 if sub == 0 else valid_n - v0
                if cols > 0:
                    pl.set_validshape(t, [valid_m, cols])
                    pl.store(c, t, [0, sub * v0])

    return split_tail


SPLIT_M, SPLIT_N = _split_kernel(True), _split_kernel(False)


@pytest.mark.parametrize("split_m, valid_m, valid_n", [
    (True, 33, 64), (True, 1, 64), (True, 64, 40),
    (False, 64, 33), (False, 20, 47), (False, 48, 16),
])
def test_dual_split_tails_follow_the_docs(everywhere, split_m, valid_m, valid_n):
    g = torch.Generator().manual_seed(valid_m * 100 + valid_n)
    a = (torch.randn(M_TILE, K_DIM, generator=g) / 4).to(torch.float16)
    b = (torch.randn(K_DIM, N_TILE, generator=g) / 4).to(torch.float16)

    def launch():
        c = torch.full((M_TILE, N_TILE), -7.0)
        shape = torch.zeros(2, dtype=torch.int32)
        (SPLIT_M if split_m else SPLIT_N)[None, 1](a, b, c, shape, valid_m, valid_n)
        return c, shape.tolist()

    want = torch.full((M_TILE, N_TILE), -7.0)
    want[:valid_m, :valid_n] = a[:valid_m].float() @ b[:, :valid_n].float()
    rounded = [-(-valid_m // 2) * 2, valid_n] if split_m else [valid_m, -(-valid_n // 32) * 32]
    for engine, (c, shape) in everywhere(launch).items():
        assert torch.allclose(c, want, rtol=1e-5, atol=1e-5), engine
        assert shape == rounded, engine


def test_dual_split_rounding_is_an_ir_step():
    compiled, art = _artifacts(SPLIT_M)
    parsed = compiled.passes["cube"][0].ir_text
    move = parsed.index("@block.move(ir.call @tile_group.current(vec), acc")
    assert re.search(r"block\.set_validshape\(acc, \[\(ir\.call @block\.tile_valid_shape\(acc, "
                     r"0\) \+ 1\) // 2 \* 2, ", parsed[:move])
    assert re.search(r"acc\.SetValidShape\(\(static_cast<int64_t>\(acc\.GetValidRow\(\)\) \+ 1\) "
                     r"/ 2 \* 2, ", art.kernel_cpp)


def test_dual_split_of_a_static_odd_valid_shape_is_refused():
    acc_t = pl.TileType([M_TILE, N_TILE], pl.DT_FP32, pl.MemorySpace.Acc, valid_shape=[33, N_TILE])

    @pl.jit(arch="a5")
    def static_tail(c: pl.Tensor[[M_TILE, N_TILE], pl.DT_FP32]):
        vec = pl.make_tile_group(type=ROWS_UB, addrs=0x0, depth=1)
        with pl.section_cube():
            acc = pl.make_tile(acc_t, addr=0x0)
            pl.move(vec.current(), acc, acc_to_vec_mode=pl.AccToVecMode.DualModeSplitM)
        with pl.section_vector():
            pl.store(c, vec.current(), [0, 0])

    with pytest.raises(InvalidShape, match="DualModeSplitM needs a valid row count that is a "
                                           "multiple of 2; .* has 33") as info:
        compile_kernel(static_tail.kernel_def, SPEC)
    assert "acc_to_vec_mode=pl.AccToVecMode.DualModeSplitM" in str(info.value)
