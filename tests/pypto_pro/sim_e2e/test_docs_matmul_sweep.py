"""A sweep of Cube kernels written the way the PyPTO Pro API docs write them (matmul, matmul_acc,
matmul_mx, matmul_mx_acc, phase, set_mm_layout_transform, the fixpipe store / move paths, quant /
dequant): each documented dtype combination, bias, K chains, transposed (DN) operands, M/N/K
tails, L1→L0 moves with offsets, Acc→Vec and Acc→GM with relu / scale, and a mix kernel. Every
case runs on the simulator and is checked against torch, whose reference follows the values the
real toolchain computes (fp32 accumulation of exact products, one rounding to the output dtype
at the fixpipe); the first case of each test also runs natively and must be bit-identical (a
native build takes seconds the first time), PYPTOPRO_SWEEP_NATIVE=1 runs every case natively."""
from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch
from dual_backend import HAS_CXX, on_backend
from dual_backend import first_case_natively as sim_and_native
from kernel_source import assert_refused, line_of

import pypto_pro.language as pl
from pypto_pro.errors import NotSupported, ParserSyntaxError, SimulationError

MS = pl.MemorySpace
TORCH = {pl.DT_FP16: torch.float16, pl.DT_BF16: torch.bfloat16, pl.DT_FP32: torch.float32,
         pl.DT_INT8: torch.int8, pl.DT_INT32: torch.int32,
         pl.DT_FP8E4M3FN: torch.float8_e4m3fn, pl.DT_FP8E5M2: torch.float8_e5m2}


def _id(v) -> str:
    """A readable test-id part: an enum's or dtype's name, else the value."""
    return getattr(v, "name", None) or str(v)


def _tt(shape, dtype, space, **kw) -> pl.TileType:
    return pl.TileType(shape=shape, dtype=dtype, target_memory=space, **kw)


def _rand(shape, dtype, g: torch.Generator) -> torch.Tensor:
    """Small values exactly representable in `dtype` (so products are exact in fp32)."""
    if dtype == pl.DT_INT8:
        return torch.randint(-128, 128, shape, generator=g, dtype=torch.int8)
    if dtype == pl.DT_INT32:
        return torch.randint(-1000, 1000, shape, generator=g, dtype=torch.int32)
    return (torch.randn(shape, generator=g) / 2).to(TORCH[dtype])


def _ref_mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    if a.dtype == torch.int8:
        return a.long() @ b.long()
    return a.double() @ b.double()


def _check(got: torch.Tensor, want: torch.Tensor) -> None:
    """`got` (GM output) against the float64 / int64 reference `want`: integers exactly, fp32
    to accumulation-order rounding, fp16 / bf16 to one rounding of the fp32 result."""
    if not got.dtype.is_floating_point:
        assert torch.equal(got.long(), want.long())
        return
    tol = {torch.float32: (1e-5, 1e-4), torch.float16: (1e-3, 1e-3),
           torch.bfloat16: (8e-3, 8e-3)}[got.dtype]
    torch.testing.assert_close(got.double(), want.to(got.dtype).double(), rtol=tol[0],
                               atol=tol[1])


# ---------------------------------------------------------------- one matmul, every dtype pair


@dataclass(frozen=True)
class Cube:
    """One cube kernel: C[m, n] = A[m, k] @ B[k, n] (+ bias), K split into `k // tk` blocks."""
    din: object = pl.DT_FP16
    acc: object = pl.DT_FP32
    out: object = pl.DT_FP32
    m: int = 32
    n: int = 32
    k: int = 32
    tk: int = 32
    bias: object = None          # GM dtype of the [1, N] bias, None for no bias
    trans_a: bool = False        # A given as A^T [K, M] in GM, loaded with order=[1, 0]
    trans_b: bool = False        # B given as B^T [N, K] in GM
    phase: bool = True           # K chains: the docs' phase / set_mm_layout_transform protocol


def _cube_kernel(c: Cube):
    din, acc_t, out_t, m, n, k, tk = c.din, c.acc, c.out, c.m, c.n, c.k, c.tk
    a_shape = [k, m] if c.trans_a else [m, k]
    b_shape = [n, k] if c.trans_b else [k, n]
    a_mat = _tt([m, tk], din, MS.Mat, layout=pl.ZN if c.trans_a else pl.NZ)
    b_mat = _tt([tk, n], din, MS.Mat, layout=pl.ZN if c.trans_b else pl.NZ)
    a_ord = [1, 0] if c.trans_a else [0, 1]
    b_ord = [1, 0] if c.trans_b else [0, 1]
    bias_t = c.bias or acc_t
    blocks = k // tk
    has_bias, trans_a, trans_b, phase = c.bias is not None, c.trans_a, c.trans_b, c.phase
    bias_mat = _tt([1, n], bias_t, MS.Mat)
    left = _tt([m, tk], din, MS.Left, layout=pl.NZ)
    right = _tt([tk, n], din, MS.Right)
    bias_bt = _tt([1, n], acc_t, MS.Bias)
    acc_l0c = _tt([m, n], acc_t, MS.Acc, fractal=1024)

    @pl.jit(auto_mutex=True)
    def cube(a: pl.Tensor[a_shape, din], b: pl.Tensor[b_shape, din],
             bias: pl.Tensor[[1, n], bias_t], out: pl.Tensor[[m, n], out_t]):
        a_l1 = pl.make_tile_group(type=a_mat, addrs=0x00000, mutex_ids=[0, 1])
        b_l1 = pl.make_tile_group(type=b_mat, addrs=0x10000, mutex_ids=[2, 3])
        bias_l1 = pl.make_tile_group(type=bias_mat, addrs=0x20000,
                                     mutex_ids=[4])
        a_left = pl.make_tile_group(type=left,
                                    addrs=0x0000, mutex_ids=[5, 6])
        b_right = pl.make_tile_group(type=right, addrs=0x0000,
                                     mutex_ids=[7, 8])
        bias_l0 = pl.make_tile_group(type=bias_bt, addrs=0x0000,
                                     mutex_ids=[9])
        accs = pl.make_tile_group(type=acc_l0c,
                                  addrs=0x0000, mutex_ids=[10])
        with pl.section_cube():
            if blocks > 1 and phase:
                pl.system.set_mm_layout_transform(enabled=True)
            ac = accs.current()
            for kb in pl.range(0, blocks):
                cur_a = a_l1.next()
                cur_b = b_l1.next()
                al = a_left.next()
                br = b_right.next()
                if trans_a:
                    pl.load(cur_a, a, [kb * tk, 0], order=a_ord)
                else:
                    pl.load(cur_a, a, [0, kb * tk], order=a_ord)
                if trans_b:
                    pl.load(cur_b, b, [0, kb * tk], order=b_ord)
                else:
                    pl.load(cur_b, b, [kb * tk, 0], order=b_ord)
                pl.move(al, cur_a)
                pl.move(br, cur_b)
                if blocks == 1:
                    if not has_bias:
                        pl.matmul(ac, al, br)
                    else:
                        bl1 = bias_l1.current()
                        bl0 = bias_l0.current()
                        pl.load(bl1, bias, [0, 0])
                        pl.move(bl0, bl1)
                        pl.matmul(ac, al, br, bl0)
                elif not phase:
                    if kb == 0:
                        pl.matmul(ac, al, br)
                    else:
                        pl.matmul_acc(ac, ac, al, br)
                elif kb == 0:
                    if not has_bias:
                        pl.matmul(ac, al, br, phase=pl.AccPhase.Partial)
                    else:
                        bl1 = bias_l1.current()
                        bl0 = bias_l0.current()
                        pl.load(bl1, bias, [0, 0])
                        pl.move(bl0, bl1)
                        pl.matmul(ac, al, br, bl0, phase=pl.AccPhase.Partial)
                elif kb < blocks - 1:
                    pl.matmul_acc(ac, ac, al, br, phase=pl.AccPhase.Partial)
                else:
                    pl.matmul_acc(ac, ac, al, br, phase=pl.AccPhase.Final)
            if blocks > 1 and phase:
                pl.store(out, ac, [0, 0], phase=pl.STPhase.Final)
                pl.system.set_mm_layout_transform(enabled=False)
            else:
                pl.store(out, ac, [0, 0])

    return cube


def _run_cube(c: Cube, seed: int = 0) -> None:
    g = torch.Generator().manual_seed(seed)
    a = _rand((c.m, c.k), c.din, g)
    b = _rand((c.k, c.n), c.din, g)
    bias = _rand((1, c.n), c.bias or c.acc, g) if c.bias else torch.zeros(
        1, c.n, dtype=TORCH[c.acc])
    kernel = _cube_kernel(c)
    a_gm = a.t().contiguous() if c.trans_a else a
    b_gm = b.t().contiguous() if c.trans_b else b

    def run():
        out = torch.zeros(c.m, c.n, dtype=TORCH[c.out])
        kernel(a_gm, b_gm, bias, out)
        return out

    want = _ref_mm(a, b)
    if c.bias:
        want = want + (bias.long() if c.acc == pl.DT_INT32 else bias.double())
    _check(sim_and_native(run), want)


F16, BF16, F32, I8, I32 = pl.DT_FP16, pl.DT_BF16, pl.DT_FP32, pl.DT_INT8, pl.DT_INT32
E4, E5 = pl.DT_FP8E4M3FN, pl.DT_FP8E5M2

DTYPES = [  # (input, accumulator, GM output): the docs' pairs, and the fixpipe's conversions
    (F16, F32, F32), (F16, F32, F16), (F16, F32, BF16),
    (BF16, F32, F32), (BF16, F32, BF16), (BF16, F32, F16),
    (F32, F32, F32), (I8, I32, I32),
]


@pytest.mark.parametrize("din, acc, out", DTYPES, ids=_id)
def test_single_matmul(din, acc, out):
    k = 64 if din == I8 else 32
    _run_cube(Cube(din=din, acc=acc, out=out, k=k, tk=k))


@pytest.mark.parametrize("din, acc, out, bias", [
    (F16, F32, F32, F16), (F16, F32, F16, F16), (BF16, F32, F32, BF16), (F16, F32, F32, F32),
    (F32, F32, F32, F32), (I8, I32, I32, I32),
], ids=_id)
def test_matmul_with_bias(din, acc, out, bias):
    k = 64 if din == I8 else 32
    _run_cube(Cube(din=din, acc=acc, out=out, k=k, tk=k, bias=bias))


@pytest.mark.parametrize("din, acc, out, blocks, bias, phase", [
    (F16, F32, F32, 2, None, True), (F16, F32, F16, 3, None, True),
    (F16, F32, F32, 3, F16, True), (BF16, F32, BF16, 3, BF16, True),
    (F32, F32, F32, 2, None, True), (I8, I32, I32, 3, None, True),
    (F16, F32, F32, 3, None, False), (I8, I32, I32, 2, None, False),
], ids=_id)
def test_k_chain(din, acc, out, blocks, bias, phase):
    tk = 64 if din == I8 else 32
    _run_cube(Cube(din=din, acc=acc, out=out, k=tk * blocks, tk=tk, bias=bias, phase=phase))


@pytest.mark.parametrize("din, acc, trans_a, trans_b, blocks", [
    (F16, F32, True, False, 1), (F16, F32, False, True, 1), (F16, F32, True, True, 1),
    (BF16, F32, True, True, 2), (F32, F32, True, False, 1), (F32, F32, False, True, 1),
    (I8, I32, True, False, 1), (I8, I32, False, True, 1), (F16, F32, False, True, 3),
], ids=_id)
def test_transposed_operands(din, acc, trans_a, trans_b, blocks):
    tk = 64 if din == I8 else 32
    _run_cube(Cube(din=din, acc=acc, out=acc, k=tk * blocks, tk=tk, trans_a=trans_a,
                   trans_b=trans_b))


# ---------------------------------------------------------------- phase: the docs' hangs


def _phase_kernel(first, last, store):
    """One accumulator written by matmul(phase=first), matmul_acc(phase=last) and stored with
    phase=store: the docs' error cases (phase.md) hang the hardware."""
    mat, left, right = _tt([32, 32], F16, MS.Mat), _tt([32, 32], F16, MS.Left), \
        _tt([32, 32], F16, MS.Right)
    acc_l0c = _tt([32, 32], F32, MS.Acc, fractal=1024)

    @pl.jit(auto_mutex=True)
    def phased(a: pl.Tensor[[32, 32], F16], out: pl.Tensor[[32, 32], F32]):
        a_l1 = pl.make_tile_group(type=mat, addrs=0x0, mutex_ids=[0])
        al = pl.make_tile_group(type=left, addrs=0x0, mutex_ids=[1])
        br = pl.make_tile_group(type=right, addrs=0x0, mutex_ids=[2])
        accs = pl.make_tile_group(type=acc_l0c, addrs=0x0, mutex_ids=[3])
        with pl.section_cube():
            x, l0, r0, ac = a_l1.current(), al.current(), br.current(), accs.current()
            pl.load(x, a, [0, 0])
            pl.move(l0, x)
            pl.move(r0, x)
            pl.matmul(ac, l0, r0, phase=first)
            pl.matmul_acc(ac, ac, l0, r0, phase=last)
            pl.store(out, ac, [0, 0], phase=store)

    return phased


@pytest.mark.parametrize("first, last, store, fragment", [
    (pl.AccPhase.Partial, pl.AccPhase.Partial, pl.STPhase.Final, "only a matmul with "
                                                                  "pl.AccPhase.Final sets"),
    (pl.AccPhase.Final, pl.AccPhase.Final, pl.STPhase.Final, "no store with pl.STPhase.Final "
                                                              "has cleared it"),
], ids=["no_final_matmul", "final_twice"])
@pytest.mark.parametrize("backend", ["sim", "native"])
def test_phase_orders_that_hang_are_refused(first, last, store, fragment, backend):
    if backend == "native" and not HAS_CXX:
        pytest.skip("no C++ compiler")
    kernel = _phase_kernel(first, last, store)
    with pytest.raises(SimulationError, match=fragment) as info:
        on_backend(backend, lambda: kernel(torch.ones(32, 32, dtype=torch.float16),
                                           torch.zeros(32, 32)))
    assert info.value.span is not None and info.value.span.line == line_of(
        kernel, "pl.matmul_acc(" if last == first == pl.AccPhase.Final else "pl.store(")


def test_phase_chain_orders_the_store_after_the_final_matmul(check_trace, select):
    """The docs' two-block chain (Partial, Final, store Final): the store reads the finished
    accumulator (the simulator once let it read L0C before the matmuls wrote it); on the
    timeline the fixpipe's store starts after the last matmul ends, ordered by the unit flag's
    set (M) / wait (FIX) pair."""
    kernel = _phase_kernel(pl.AccPhase.Partial, pl.AccPhase.Final, pl.STPhase.Final)
    a = (torch.randn(32, 32, generator=torch.Generator().manual_seed(3)) / 2).half()

    def run():
        out = torch.zeros(32, 32)
        kernel(a, out)
        return out

    _check(sim_and_native(run), 2 * (a.double() @ a.double()))
    run()
    trace = kernel.last_trace
    check_trace(trace)
    cube = select(trace, kind="instr", pipe="M")
    store = select(trace, kind="instr", pipe="FIX")
    assert len(cube) == 2 and len(store) == 1
    assert store["start"].min() >= cube["end"].max()
    flags = select(trace, kind="sync")
    unit = flags[flags["sync_ids"].astype(str).str.contains("M->FIX #unit")]
    assert sorted(unit["flow_role"]) == ["set", "wait"] and set(unit["pipe"].astype(str)) == {
        "M", "FIX"}


# ---------------------------------------------------------------- MX: fp8 and fp4 with E8M0


FP4 = {pl.DT_FP4E2M1: (2, 1), pl.DT_FP4E1M2: (1, 2)}  # (exponent, mantissa) bits, bias 1


def _fp4_values(codes: torch.Tensor, dtype) -> torch.Tensor:
    """The float64 value of each 4-bit code (sign, exponent, mantissa; bias 1; no inf / NaN)."""
    e_bits, m_bits = FP4[dtype]
    c = codes.long()
    sign = torch.where(c & 8 != 0, -1.0, 1.0).double()
    e, m = (c >> m_bits) & ((1 << e_bits) - 1), (c & ((1 << m_bits) - 1)).double()
    frac = m / (1 << m_bits)
    return sign * torch.where(e == 0, frac, (1 + frac) * torch.exp2((e - 1).double()))


def _mx_operand(rows: int, cols: int, dtype, g: torch.Generator, pack_axis: int):
    """(the GM tensor, its float64 values) of an MX operand [rows, cols]: fp8 as itself; fp4
    as uint8 bytes packing two codes along the last axis (the first in the low nibble)."""
    if dtype in FP4:
        codes = torch.randint(0, 16, (rows, cols), generator=g, dtype=torch.uint8)
        packed = codes[:, 0::2] | (codes[:, 1::2] << 4)
        return packed.contiguous(), _fp4_values(codes, dtype)
    x = torch.randn(rows, cols, generator=g).to(TORCH[dtype])
    return x, x.double()


def _mx_kernel(lhs, rhs, k: int, tk: int):
    """The docs' MX kernel (matmul_mx.md / matmul_mx_acc.md), M = N = 64, K in `k // tk`
    blocks: the first matmul_mx, the others matmul_mx_acc; phase when K is split."""
    m = n = 64
    fp4 = lhs in FP4
    a_gm = [m, k // 2] if fp4 else [m, k]
    b_gm = [k, n // 2] if fp4 else [k, n]
    sk = tk // 32
    blocks = k // tk
    a_mat = _tt([m, tk], lhs, MS.Mat, layout=pl.NZ)
    b_mat = _tt([tk, n], rhs, MS.Mat, layout=pl.NZ)
    sa_mat = _tt([m, sk], pl.DT_FP8E8M0, MS.Mat, layout=pl.ZZ)
    sb_mat = _tt([sk, n], pl.DT_FP8E8M0, MS.Mat, layout=pl.NN)
    a_l0t = _tt([m, tk], lhs, MS.Left, layout=pl.NZ)
    b_l0t = _tt([tk, n], rhs, MS.Right, layout=pl.ZN)
    sa_l0t = _tt([m, sk], pl.DT_FP8E8M0, MS.ScaleLeft, layout=pl.ZZ)
    sb_l0t = _tt([sk, n], pl.DT_FP8E8M0, MS.ScaleRight, layout=pl.NN)
    acc_t = _tt([m, n], F32, MS.Acc, layout=pl.NZ, fractal=1024)

    @pl.jit(auto_mutex=True)
    def mx(a: pl.Tensor[a_gm, lhs], b: pl.Tensor[b_gm, rhs],
           scale_a: pl.Tensor[[m, k // 64, 2], pl.DT_FP8E8M0],
           scale_b: pl.Tensor[[k // 64, n, 2], pl.DT_FP8E8M0],
           out: pl.Tensor[[m, n], F32]):
        a_l1 = pl.make_tile_group(type=a_mat, addrs=0x00000, mutex_ids=[0])
        b_l1 = pl.make_tile_group(type=b_mat, addrs=0x10000, mutex_ids=[1])
        sa_l1 = pl.make_tile_group(type=sa_mat, addrs=0x20000, mutex_ids=[2])
        sb_l1 = pl.make_tile_group(type=sb_mat, addrs=0x21000, mutex_ids=[3])
        a_l0 = pl.make_tile_group(type=a_l0t, addrs=0x8000, mutex_ids=[4])
        b_l0 = pl.make_tile_group(type=b_l0t, addrs=0x4000, mutex_ids=[5])
        sa_l0 = pl.make_tile_group(type=sa_l0t, addrs=0x800, mutex_ids=[6])
        sb_l0 = pl.make_tile_group(type=sb_l0t, addrs=0x400, mutex_ids=[7])
        acc = pl.make_tile_group(type=acc_t, addrs=0x0000, mutex_ids=[8])
        with pl.section_cube():
            if fp4:
                pl.set_stride(a, [k, 1])
                pl.set_stride(b, [n, 1])
            ac = acc.current()
            for ki in pl.range(0, k, tk):
                al1, bl1 = a_l1.current(), b_l1.current()
                sal1, sbl1 = sa_l1.current(), sb_l1.current()
                al0, bl0 = a_l0.current(), b_l0.current()
                sal0, sbl0 = sa_l0.current(), sb_l0.current()
                pl.load(al1, a, [0, ki])
                pl.load(bl1, b, [ki, 0])
                pl.load(sal1, scale_a, [0, ki // 64, 0], order=[0, 1])
                pl.load(sbl1, scale_b, [ki // 64, 0, 0], order=[0, 1])
                pl.move(al0, al1)
                pl.move(bl0, bl1)
                pl.move(sal0, sal1)
                pl.move(sbl0, sbl1)
                if blocks == 1:
                    pl.matmul_mx(ac, al0, bl0, sal0, sbl0)
                elif ki == 0:
                    pl.matmul_mx(ac, al0, bl0, sal0, sbl0, phase=pl.AccPhase.Partial)
                elif ki + tk < k:
                    pl.matmul_mx_acc(ac, ac, al0, bl0, sal0, sbl0, phase=pl.AccPhase.Partial)
                else:
                    pl.matmul_mx_acc(ac, ac, al0, bl0, sal0, sbl0, phase=pl.AccPhase.Final)
            if blocks == 1:
                pl.store(out, ac, [0, 0])
            else:
                pl.store(out, ac, [0, 0], phase=pl.STPhase.Final)

    return mx


MX_PAIRS = [(pl.DT_FP8E4M3FN, pl.DT_FP8E4M3FN), (pl.DT_FP8E4M3FN, pl.DT_FP8E5M2),
            (pl.DT_FP8E5M2, pl.DT_FP8E4M3FN), (pl.DT_FP8E5M2, pl.DT_FP8E5M2),
            (pl.DT_FP4E2M1, pl.DT_FP4E2M1), (pl.DT_FP4E2M1, pl.DT_FP4E1M2),
            (pl.DT_FP4E1M2, pl.DT_FP4E2M1), (pl.DT_FP4E1M2, pl.DT_FP4E1M2)]


@pytest.mark.parametrize("lhs, rhs", MX_PAIRS, ids=_id)
@pytest.mark.parametrize("k, tk", [(64, 64), (192, 64)], ids=["one_block", "three_blocks"])
def test_mx_matmul(lhs, rhs, k, tk):
    m = n = 64
    g = torch.Generator().manual_seed(k + len(str(lhs)) * 7 + len(str(rhs)))
    a_gm, a = _mx_operand(m, k, lhs, g, 1)
    bt_gm, bt = _mx_operand(n, k, rhs, g, 1)  # B^T [N, K]: fp4 packs along K ...
    b = bt.t()
    if rhs in FP4:  # ... but B [K, N] in GM packs along N: repack the codes row-wise
        codes = torch.randint(0, 16, (k, n), generator=g, dtype=torch.uint8)
        b_gm = (codes[:, 0::2] | (codes[:, 1::2] << 4)).contiguous()
        b = _fp4_values(codes, rhs)
    else:
        b_gm = bt_gm.t().contiguous()
    groups = k // 32
    sa = torch.randint(122, 133, (m, groups), generator=g, dtype=torch.uint8)
    sb = torch.randint(122, 133, (groups, n), generator=g, dtype=torch.uint8)
    sa_gm = sa.view(m, groups // 2, 2)  # [M, K/64, 2]: group k at k // 2, phase k % 2
    sb_gm = sb.view(groups // 2, 2, n).permute(0, 2, 1).contiguous()  # [K/64, N, 2]
    kernel = _mx_kernel(lhs, rhs, k, tk)

    def run():
        out = torch.zeros(m, n)
        kernel(a_gm, b_gm, sa_gm, sb_gm, out)
        return out

    deq_a = a * torch.exp2(sa.double() - 127).repeat_interleave(32, dim=1)
    deq_b = b * torch.exp2(sb.double() - 127).repeat_interleave(32, dim=0)
    torch.testing.assert_close(sim_and_native(run).double(), deq_a @ deq_b, rtol=1e-5,
                               atol=1e-4)


# ---------------------------------------------------------------- M / N / K tails


def _tail_kernel(din, acc_t, tile: int):
    """C[:vm, :vn] = A[:vm, :vk] @ B[:vk, :vn] in one [tile]^3 block, every tile's valid shape
    set at run time before its load / move / matmul (tail_block_handling.md)."""
    kw = dict(valid_shape=[-1, -1])
    a_mat = _tt([tile, tile], din, MS.Mat, **kw)
    b_mat = _tt([tile, tile], din, MS.Mat, **kw)
    left = _tt([tile, tile], din, MS.Left, **kw)
    right = _tt([tile, tile], din, MS.Right, **kw)
    acc_l0c = _tt([tile, tile], acc_t, MS.Acc, **kw)

    @pl.jit(auto_mutex=True)
    def tail(a: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], din],
             b: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], din],
             out: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], acc_t]):
        vm, vk, vn = a.shape[0], a.shape[1], b.shape[1]
        a_l1 = pl.make_tile_group(type=a_mat, addrs=0x0000, mutex_ids=[0])
        b_l1 = pl.make_tile_group(type=b_mat, addrs=0x8000, mutex_ids=[1])
        al = pl.make_tile_group(type=left, addrs=0x0, mutex_ids=[2])
        br = pl.make_tile_group(type=right, addrs=0x0, mutex_ids=[3])
        accs = pl.make_tile_group(type=acc_l0c, addrs=0x0, mutex_ids=[4])
        with pl.section_cube():
            x, y, l0, r0, ac = a_l1.current(), b_l1.current(), al.current(), br.current(), \
                accs.current()
            pl.set_validshape(x, [vm, vk])
            pl.set_validshape(y, [vk, vn])
            pl.load(x, a, [0, 0])
            pl.load(y, b, [0, 0])
            pl.set_validshape(l0, [vm, vk])
            pl.set_validshape(r0, [vk, vn])
            pl.move(l0, x)
            pl.move(r0, y)
            pl.set_validshape(ac, [vm, vn])
            pl.matmul(ac, l0, r0)
            pl.store(out, ac, [0, 0])

    return tail


@pytest.mark.parametrize("din, acc, vm, vk, vn", [
    (F16, F32, 17, 32, 32), (F16, F32, 32, 32, 9), (F16, F32, 32, 20, 32),
    (F16, F32, 5, 23, 30), (BF16, F32, 1, 16, 1), (F32, F32, 13, 11, 7),
    (I8, I32, 31, 40, 19),
], ids=_id)
def test_tails(din, acc, vm, vk, vn):
    tile = 64 if din == I8 else 32
    g = torch.Generator().manual_seed(vm * 31 + vk * 7 + vn)
    a, b = _rand((vm, vk), din, g), _rand((vk, vn), din, g)
    kernel = _tail_kernel(din, acc, tile)

    def run():
        out = torch.zeros(vm, vn, dtype=TORCH[acc])
        kernel(a, b, out)
        return out

    _check(sim_and_native(run), _ref_mm(a, b))


# ---------------------------------------------------------------- L1 → L0 moves with offsets


def _offset_kernel(din, acc_t, tm: int, tk: int, n: int):
    """out[2·tm, n] = A[2·tm, 2·tk] @ B[2·tk, n]: A and B are loaded to L1 once, whole; each
    L0A block is extracted at [mi·tm, ki·tk] and each L0B block at [ki·tk, 0] (TEXTRACT), the
    K blocks chained with matmul_acc."""
    a_mat = _tt([2 * tm, 2 * tk], din, MS.Mat)
    b_mat = _tt([2 * tk, n], din, MS.Mat)
    left = _tt([tm, tk], din, MS.Left)
    right = _tt([tk, n], din, MS.Right)
    acc_l0c = _tt([tm, n], acc_t, MS.Acc)

    @pl.jit(auto_mutex=True)
    def extract(a: pl.Tensor[[2 * tm, 2 * tk], din], b: pl.Tensor[[2 * tk, n], din],
                out: pl.Tensor[[2 * tm, n], acc_t]):
        a_l1 = pl.make_tile_group(type=a_mat, addrs=0x0000, mutex_ids=[0])
        b_l1 = pl.make_tile_group(type=b_mat, addrs=0x10000, mutex_ids=[1])
        al = pl.make_tile_group(type=left, addrs=0x0, mutex_ids=[2, 3])
        br = pl.make_tile_group(type=right, addrs=0x0, mutex_ids=[4, 5])
        accs = pl.make_tile_group(type=acc_l0c, addrs=0x0, mutex_ids=[6])
        with pl.section_cube():
            x, y = a_l1.current(), b_l1.current()
            pl.load(x, a, [0, 0])
            pl.load(y, b, [0, 0])
            for mi in pl.range(0, 2):
                ac = accs.current()
                for ki in pl.range(0, 2):
                    l0 = al.next()
                    r0 = br.next()
                    pl.move(l0, x, offset=[mi * tm, ki * tk])
                    pl.move(r0, y, offset=[ki * tk, 0])
                    if ki == 0:
                        pl.matmul(ac, l0, r0)
                    else:
                        pl.matmul_acc(ac, ac, l0, r0)
                pl.store(out, ac, [mi * tm, 0])

    return extract


@pytest.mark.parametrize("din, acc, tm, tk, n", [
    (F16, F32, 16, 32, 32), (BF16, F32, 32, 16, 16), (F32, F32, 16, 16, 32),
    (I8, I32, 16, 32, 32),
], ids=_id)
def test_l1_to_l0_moves_with_offsets(din, acc, tm, tk, n):
    g = torch.Generator().manual_seed(tm + tk + n)
    a, b = _rand((2 * tm, 2 * tk), din, g), _rand((2 * tk, n), din, g)
    kernel = _offset_kernel(din, acc, tm, tk, n)

    def run():
        out = torch.zeros(2 * tm, n, dtype=TORCH[acc])
        kernel(a, b, out)
        return out

    _check(sim_and_native(run), _ref_mm(a, b))


# ---------------------------------------------------------------- Acc → GM: the fixpipe's options


def _store_kernel(din, acc_t, out_t, relu: bool, scale, atomic: bool):
    """One 32³ matmul stored from L0C with relu_pre_mode / scale / atomic (store.md)."""
    k = 64 if din == I8 else 32
    mat_a, mat_b = _tt([32, k], din, MS.Mat), _tt([k, 32], din, MS.Mat)
    left, right = _tt([32, k], din, MS.Left), _tt([k, 32], din, MS.Right)
    acc_l0c = _tt([32, 32], acc_t, MS.Acc)
    mode = pl.ReluPreMode.NormalRelu if relu else None
    how = pl.AtomicType.AtomicAdd if atomic else pl.AtomicType.AtomicNone

    @pl.jit(auto_mutex=True)
    def fix(a: pl.Tensor[[32, k], din], b: pl.Tensor[[k, 32], din],
            out: pl.Tensor[[32, 32], out_t]):
        a_l1 = pl.make_tile_group(type=mat_a, addrs=0x0, mutex_ids=[0])
        b_l1 = pl.make_tile_group(type=mat_b, addrs=0x8000, mutex_ids=[1])
        al = pl.make_tile_group(type=left, addrs=0x0, mutex_ids=[2])
        br = pl.make_tile_group(type=right, addrs=0x0, mutex_ids=[3])
        accs = pl.make_tile_group(type=acc_l0c, addrs=0x0, mutex_ids=[4])
        with pl.section_cube():
            x, y, l0, r0, ac = a_l1.current(), b_l1.current(), al.current(), br.current(), \
                accs.current()
            pl.load(x, a, [0, 0])
            pl.load(y, b, [0, 0])
            pl.move(l0, x)
            pl.move(r0, y)
            pl.matmul(ac, l0, r0)
            if scale is None:
                pl.store(out, ac, [0, 0], relu_pre_mode=mode, atomic=how)
            else:
                pl.store(out, ac, [0, 0], relu_pre_mode=mode, scale=scale, atomic=how)

    return fix


def _fixpipe_ref(acc: torch.Tensor, out_dtype, relu: bool, scale) -> torch.Tensor:
    """The fixpipe's conversion: scale, then ReLU, then one rounding (nearest even;
    saturating into integers)."""
    v = acc.double() * (1.0 if scale is None else scale)
    if relu:
        v = torch.relu(v)
    if out_dtype == I8:
        return torch.round(v).clamp(-128, 127)
    return v.to(TORCH[out_dtype]).double()


@pytest.mark.parametrize("din, acc, out, relu, scale, atomic", [
    (F16, F32, F32, True, None, False), (F16, F32, F16, True, None, False),
    (BF16, F32, BF16, True, None, False), (F16, F32, F16, False, 0.5, False),
    (F16, F32, F16, True, 0.25, False), (I8, I32, F16, False, 0.125, False),
    (I8, I32, I8, False, 1 / 64, False), (F16, F32, I8, False, 8.0, False),
    (I8, I32, I32, True, None, False), (F16, F32, F32, False, None, True),
], ids=_id)
def test_acc_to_gm_store_options(din, acc, out, relu, scale, atomic):
    k = 64 if din == I8 else 32
    g = torch.Generator().manual_seed(k + int(relu) * 3 + int(atomic))
    a, b = _rand((32, k), din, g), _rand((k, 32), din, g)
    kernel = _store_kernel(din, acc, out, relu, scale, atomic)
    init = torch.randn(32, 32, generator=g).to(TORCH[out]) if atomic else \
        torch.zeros(32, 32, dtype=TORCH[out])

    def run():
        o = init.clone()
        kernel(a, b, o)
        return o

    mm = _ref_mm(a, b)
    want = _fixpipe_ref(mm, out, relu, scale) + (init.double() if atomic else 0)
    got = sim_and_native(run)
    if out in (I8, I32):
        assert torch.equal(got.long(), want.long())
    else:
        _check(got, want)


# ---------------------------------------------------------------- Acc → Vec in a mix kernel


def _mix_kernel(mode, vec_t, relu: bool, scale):
    """C = A @ B (64 x 32 x 64, fp16 → fp32) moved from L0C to the AIVs' UB with
    `acc_to_vec_mode` (and relu / scale), announced by set_cross_core; each AIV doubles its
    share on pipe V and stores it (CV_fused_operator_quick_start.md)."""
    m, k, n = 64, 32, 64
    split_m = mode == pl.AccToVecMode.DualModeSplitM
    split_n = mode == pl.AccToVecMode.DualModeSplitN
    single = 0 if mode == pl.AccToVecMode.SingleModeVec0 else 1
    rows, cols = (m // 2 if split_m else m), (n // 2 if split_n else n)
    mat_a, mat_b = _tt([m, k], F16, MS.Mat), _tt([k, n], F16, MS.Mat)
    left, right = _tt([m, k], F16, MS.Left), _tt([k, n], F16, MS.Right)
    acc_l0c = _tt([m, n], F32, MS.Acc)
    ub = _tt([rows, cols], vec_t, MS.Vec)
    relu_mode = pl.ReluPreMode.NormalRelu if relu else None
    dual = split_m or split_n
    double = vec_t != I8  # (an int8 share is stored as moved)
    reader = pl.PipeType.V if double else pl.PipeType.MTE3  # the pipe that reads it first

    @pl.jit(auto_mutex=True)
    def mix(a: pl.Tensor[[m, k], F16], b: pl.Tensor[[k, n], F16],
            out: pl.Tensor[[m, n], vec_t]):
        a_l1 = pl.make_tile_group(type=mat_a, addrs=0x0, mutex_ids=[0])
        b_l1 = pl.make_tile_group(type=mat_b, addrs=0x8000, mutex_ids=[1])
        al = pl.make_tile_group(type=left, addrs=0x0, mutex_ids=[2])
        br = pl.make_tile_group(type=right, addrs=0x0, mutex_ids=[3])
        accs = pl.make_tile_group(type=acc_l0c, addrs=0x0, mutex_ids=[4])
        vec = pl.make_tile_group(type=ub, addrs=0x0, mutex_ids=[5])
        with pl.section_cube():
            x, y, l0, r0, ac = a_l1.current(), b_l1.current(), al.current(), br.current(), \
                accs.current()
            pl.load(x, a, [0, 0])
            pl.load(y, b, [0, 0])
            pl.move(l0, x)
            pl.move(r0, y)
            pl.matmul(ac, l0, r0)
            if scale is None:
                pl.move(vec.current(), ac, acc_to_vec_mode=mode, relu_pre_mode=relu_mode)
            else:
                pl.move(vec.current(), ac, acc_to_vec_mode=mode, relu_pre_mode=relu_mode,
                        scale=scale)
            pl.system.set_cross_core(pipe=pl.PipeType.FIX, event_id=0)
        with pl.section_vector():
            sub = pl.get_subblock_idx()
            pl.system.wait_cross_core(pipe=reader, event_id=0)
            t = vec.current()
            if dual or sub == single:
                if double:
                    pl.mul(t, t, 2.0)
                if split_m:
                    pl.store(out, t, [sub * rows, 0])
                elif split_n:
                    pl.store(out, t, [0, sub * cols])
                else:
                    pl.store(out, t, [0, 0])

    return mix


A2V = pl.AccToVecMode


@pytest.mark.parametrize("mode, vec, relu, scale", [
    (A2V.SingleModeVec0, F32, False, None), (A2V.SingleModeVec1, F32, False, None),
    (A2V.DualModeSplitM, F32, False, None), (A2V.DualModeSplitN, F32, False, None),
    (A2V.DualModeSplitM, F16, False, None), (A2V.DualModeSplitN, BF16, True, None),
    (A2V.DualModeSplitM, F32, True, None), (A2V.SingleModeVec0, F16, False, 0.5),
    (A2V.DualModeSplitN, F16, True, 2.0), (A2V.SingleModeVec0, I8, False, 8.0),
    (A2V.DualModeSplitM, I8, True, 4.0),
], ids=_id)
def test_acc_to_vec_in_a_mix_kernel(mode, vec, relu, scale):
    g = torch.Generator().manual_seed(int(mode) * 10 + int(relu))
    a, b = _rand((64, 32), F16, g), _rand((32, 64), F16, g)
    kernel = _mix_kernel(mode, vec, relu, scale)

    def run():
        out = torch.zeros(64, 64, dtype=TORCH[vec])
        kernel[None, 1](a, b, out)
        return out

    moved = _fixpipe_ref(_ref_mm(a, b), vec, relu, scale).to(TORCH[vec])
    if vec == I8:
        assert torch.equal(sim_and_native(run), moved)
    else:
        _check(sim_and_native(run), 2 * moved.double())


# ---------------------------------------------------------------- quant / dequant (quantization/)


def _quant_kernel(mode, out_t):
    src_t, col_t, out_tt = _tt([16, 64], F32, MS.Vec), _tt([16, 1], F32, MS.Vec), \
        _tt([16, 64], out_t, MS.Vec)
    asym = mode == pl.QuantMode.ASYM

    @pl.jit(auto_mutex=True)
    def quant_kernel(src: pl.Tensor[[16, 64], F32], scale: pl.Tensor[[16, 1], F32],
                     offset: pl.Tensor[[16, 1], F32], out: pl.Tensor[[16, 64], out_t]):
        tile_src = pl.make_tile_group(type=src_t, addrs=0x0000, mutex_ids=[0])
        tile_scale = pl.make_tile_group(type=col_t, addrs=0x8000, mutex_ids=[1])
        tile_offset = pl.make_tile_group(type=col_t, addrs=0x9000, mutex_ids=[2])
        tile_out = pl.make_tile_group(type=out_tt, addrs=0xA000, mutex_ids=[3])
        with pl.section_vector():
            s, sc, off, o = tile_src.current(), tile_scale.current(), tile_offset.current(), \
                tile_out.current()
            pl.load(s, src, [0, 0])
            pl.load(sc, scale, [0, 0])
            if asym:
                pl.load(off, offset, [0, 0])
                pl.quant(o, s, sc, mode=pl.QuantMode.ASYM, offset=off)
            else:
                pl.quant(o, s, sc, mode=pl.QuantMode.SYM)
            pl.store(out, o, [0, 0])

    return quant_kernel


@pytest.mark.parametrize("mode, out", [(pl.QuantMode.SYM, pl.DT_INT8),
                                       (pl.QuantMode.ASYM, pl.DT_UINT8)], ids=["sym", "asym"])
def test_quant(mode, out):
    g = torch.Generator().manual_seed(5)
    src = torch.randn(16, 64, generator=g) * 20
    src[0, :4] = torch.tensor([0.125, 0.375, -0.625, 2.5])  # ties after scaling by 4
    scale = torch.full((16, 1), 4.0)
    scale[1:] = torch.rand(15, 1, generator=g) * 8
    offset = torch.randint(-20, 120, (16, 1), generator=g).float()
    kernel = _quant_kernel(mode, out)

    def run():
        o = torch.zeros(16, 64, dtype=torch.int8 if out == pl.DT_INT8 else torch.uint8)
        kernel(src, scale, offset, o)
        return o

    # pto-isa's TQUANT: nearbyint(src * scale (+ offset)) in fp32, the zero point added
    # before the rounding (the docs' formula rounds first; ties tell them apart)
    v = src * scale
    want = torch.round(v).clamp(-128, 127) if mode == pl.QuantMode.SYM else \
        torch.round(v + offset).clamp(0, 255)
    assert torch.equal(sim_and_native(run).long(), want.long())


def _dequant_kernel(src_t):
    in_t, col_t, out_tt = _tt([16, 64], src_t, MS.Vec), _tt([16, 1], F32, MS.Vec), \
        _tt([16, 64], F32, MS.Vec)

    @pl.jit(auto_mutex=True)
    def dequant_kernel(src: pl.Tensor[[16, 64], src_t], scale: pl.Tensor[[16, 1], F32],
                       offset: pl.Tensor[[16, 1], F32], out: pl.Tensor[[16, 64], F32]):
        tile_src = pl.make_tile_group(type=in_t, addrs=0x0000, mutex_ids=[0])
        tile_scale = pl.make_tile_group(type=col_t, addrs=0x4000, mutex_ids=[1])
        tile_offset = pl.make_tile_group(type=col_t, addrs=0x5000, mutex_ids=[2])
        tile_out = pl.make_tile_group(type=out_tt, addrs=0x6000, mutex_ids=[3])
        with pl.section_vector():
            s, sc, off, o = tile_src.current(), tile_scale.current(), tile_offset.current(), \
                tile_out.current()
            pl.load(s, src, [0, 0])
            pl.load(sc, scale, [0, 0])
            pl.load(off, offset, [0, 0])
            pl.dequant(o, s, sc, off)
            pl.store(out, o, [0, 0])

    return dequant_kernel


@pytest.mark.parametrize("src_t", [pl.DT_INT8, pl.DT_INT16], ids=["int8", "int16"])
def test_dequant(src_t):
    g = torch.Generator().manual_seed(6)
    hi = 128 if src_t == pl.DT_INT8 else 30000
    src = torch.randint(-hi, hi, (16, 64), generator=g).to(TORCH.get(src_t, torch.int16))
    scale = torch.rand(16, 1, generator=g)
    offset = torch.randint(-10, 10, (16, 1), generator=g).float()
    kernel = _dequant_kernel(src_t)

    def run():
        o = torch.zeros(16, 64)
        kernel(src, scale, offset, o)
        return o

    want = (src.double() - offset.double()) * scale.double()
    torch.testing.assert_close(sim_and_native(run).double(), want, rtol=1e-6, atol=1e-4)


def test_asym_quant_without_offset_is_refused_as_the_real_builder():
    vec_f, vec_u = _tt([16, 64], F32, MS.Vec), _tt([16, 64], pl.DT_UINT8, MS.Vec)
    col = _tt([16, 1], F32, MS.Vec)

    @pl.jit
    def no_offset(out: pl.Tensor[[16, 64], pl.DT_UINT8]):
        with pl.section_vector():
            s = pl.make_tile(vec_f, addr=0x0)
            sc = pl.make_tile(col, addr=0x8000)
            o = pl.make_tile(vec_u, addr=0xA000)
            pl.quant(o, s, sc, mode=pl.QuantMode.ASYM)

    with pytest.raises(ParserSyntaxError, match="quant in 'asym' mode requires an offset "
                                                "argument") as info:
        no_offset.compile()
    assert info.value.span is not None


# ---------------------------------------------------------------- fp8 without MX scales


@pytest.mark.parametrize("lhs, rhs", [(E4, E4), (E4, E5), (E5, E4), (E5, E5)],
                         ids=_id)
def test_fp8_matmul_without_scales(lhs, rhs):
    """matmul_acc.md: FP8E4M3FN / FP8E5M2 in any pair → FP32 (a matmul, then a matmul_acc)."""
    mat_a, mat_b = _tt([32, 64], lhs, MS.Mat), _tt([64, 32], rhs, MS.Mat)
    left, right = _tt([32, 64], lhs, MS.Left), _tt([64, 32], rhs, MS.Right)
    acc_l0c = _tt([32, 32], F32, MS.Acc)

    @pl.jit(auto_mutex=True)
    def fp8(a: pl.Tensor[[32, 64], lhs], b: pl.Tensor[[64, 32], rhs],
            out: pl.Tensor[[32, 32], F32]):
        a_l1 = pl.make_tile_group(type=mat_a, addrs=0x0, mutex_ids=[0])
        b_l1 = pl.make_tile_group(type=mat_b, addrs=0x8000, mutex_ids=[1])
        al = pl.make_tile_group(type=left, addrs=0x0, mutex_ids=[2])
        br = pl.make_tile_group(type=right, addrs=0x0, mutex_ids=[3])
        accs = pl.make_tile_group(type=acc_l0c, addrs=0x0, mutex_ids=[4])
        with pl.section_cube():
            x, y, l0, r0, ac = a_l1.current(), b_l1.current(), al.current(), br.current(), \
                accs.current()
            pl.load(x, a, [0, 0])
            pl.load(y, b, [0, 0])
            pl.move(l0, x)
            pl.move(r0, y)
            pl.matmul(ac, l0, r0)
            pl.matmul_acc(ac, ac, l0, r0)
            pl.store(out, ac, [0, 0])

    g = torch.Generator().manual_seed(8)
    a = torch.randn(32, 64, generator=g).to(TORCH[lhs])
    b = torch.randn(64, 32, generator=g).to(TORCH[rhs])

    def run():
        out = torch.zeros(32, 32)
        fp8(a, b, out)
        return out

    _check(sim_and_native(run), 2 * (a.double() @ b.double()))


# ---------------------------------------------------------------- per-channel (Scaling tile) quant


def _channel_scale_kernel(din, acc_t, out_t, to_vec: bool):
    """A 32³ matmul written out through a per-channel deq tile: [1, 32] UINT64 words loaded to
    L1 and moved to Scaling (store.md / move.md `scale=Tile`); to GM by store, or to the AIV
    by a single-mode move."""
    k = 64 if din == I8 else 32
    mat_a, mat_b = _tt([32, k], din, MS.Mat), _tt([k, 32], din, MS.Mat)
    left, right = _tt([32, k], din, MS.Left), _tt([k, 32], din, MS.Right)
    acc_l0c = _tt([32, 32], acc_t, MS.Acc)
    deq_mat, deq_fb = _tt([1, 32], pl.DT_UINT64, MS.Mat), _tt([1, 32], pl.DT_UINT64, MS.Scaling)
    ub = _tt([32, 32], out_t, MS.Vec)

    @pl.jit(auto_mutex=True)
    def channel(a: pl.Tensor[[32, k], din], b: pl.Tensor[[k, 32], din],
                deq: pl.Tensor[[1, 32], pl.DT_UINT64], out: pl.Tensor[[32, 32], out_t]):
        a_l1 = pl.make_tile_group(type=mat_a, addrs=0x0, mutex_ids=[0])
        b_l1 = pl.make_tile_group(type=mat_b, addrs=0x8000, mutex_ids=[1])
        d_l1 = pl.make_tile_group(type=deq_mat, addrs=0x10000, mutex_ids=[2])
        d_fb = pl.make_tile_group(type=deq_fb, addrs=0x0, mutex_ids=[3])
        al = pl.make_tile_group(type=left, addrs=0x0, mutex_ids=[4])
        br = pl.make_tile_group(type=right, addrs=0x0, mutex_ids=[5])
        accs = pl.make_tile_group(type=acc_l0c, addrs=0x0, mutex_ids=[6])
        vec = pl.make_tile_group(type=ub, addrs=0x0, mutex_ids=[7])
        with pl.section_cube():
            x, y, l0, r0, ac = a_l1.current(), b_l1.current(), al.current(), br.current(), \
                accs.current()
            dl1, dfb = d_l1.current(), d_fb.current()
            pl.load(x, a, [0, 0])
            pl.load(y, b, [0, 0])
            pl.load(dl1, deq, [0, 0])
            pl.move(l0, x)
            pl.move(r0, y)
            pl.move(dfb, dl1)
            pl.matmul(ac, l0, r0)
            if to_vec:
                pl.move(vec.current(), ac, acc_to_vec_mode=pl.AccToVecMode.SingleModeVec0,
                        scale=dfb)
                pl.system.set_cross_core(pipe=pl.PipeType.FIX, event_id=0)
            else:
                pl.store(out, ac, [0, 0], scale=dfb)
        if to_vec:
            with pl.section_vector():
                pl.system.wait_cross_core(pipe=pl.PipeType.MTE3, event_id=0)
                if pl.get_subblock_idx() == 0:
                    pl.store(out, vec.current(), [0, 0])

    return channel


@pytest.mark.parametrize("din, acc, out, to_vec", [
    (I8, I32, F16, False), (F16, F32, F16, False), (I8, I32, I8, False), (I8, I32, F16, True),
], ids=_id)
def test_per_channel_scale(din, acc, out, to_vec):
    import struct

    k = 64 if din == I8 else 32
    g = torch.Generator().manual_seed(9 + int(to_vec))
    a, b = _rand((32, k), din, g), _rand((k, 32), din, g)
    scales = [2.0 ** -int(e) for e in torch.randint(3, 9, (32,), generator=g)]
    if out == I8:
        scales = [s / 64 for s in scales]
    words = [struct.unpack("<I", struct.pack("<f", s))[0] for s in scales]
    deq = torch.tensor([words], dtype=torch.int64).view(torch.uint64)  # the real runtime's check
    kernel = _channel_scale_kernel(din, acc, out, to_vec)

    def run():
        o = torch.zeros(32, 32, dtype=TORCH.get(out, torch.int8))
        kernel[None, 1](a, b, deq, o)
        return o

    mm = _ref_mm(a, b).double() * torch.tensor(scales, dtype=torch.float64)
    got = sim_and_native(run)
    if out == I8:
        assert torch.equal(got.long(), torch.round(mm).clamp(-128, 127).long())
    else:
        _check(got, mm)


# ---------------------------------------------------------------- order= on a 3-D tensor, blocks


def test_transposed_load_from_a_3d_tensor_on_several_blocks():
    """Each block b computes C[b] = A[b] @ B[b]^T with B given as [batch, N, K] and loaded
    transposed by `order=[2, 1]` into a ZN Mat tile (load.md: a reversed order transposes)."""
    bt, m, k, n = 4, 32, 32, 16
    mat_a, mat_b = _tt([m, k], F16, MS.Mat), _tt([k, n], F16, MS.Mat, layout=pl.ZN)
    left, right = _tt([m, k], F16, MS.Left), _tt([k, n], F16, MS.Right)
    acc_l0c = _tt([m, n], F32, MS.Acc)

    @pl.jit(auto_mutex=True)
    def batched(a: pl.Tensor[[bt, m, k], F16], b: pl.Tensor[[bt, n, k], F16],
                out: pl.Tensor[[bt, m, n], F32]):
        a_l1 = pl.make_tile_group(type=mat_a, addrs=0x0, mutex_ids=[0])
        b_l1 = pl.make_tile_group(type=mat_b, addrs=0x8000, mutex_ids=[1])
        al = pl.make_tile_group(type=left, addrs=0x0, mutex_ids=[2])
        br = pl.make_tile_group(type=right, addrs=0x0, mutex_ids=[3])
        accs = pl.make_tile_group(type=acc_l0c, addrs=0x0, mutex_ids=[4])
        with pl.section_cube():
            blk = pl.get_block_idx()
            x, y, l0, r0, ac = a_l1.current(), b_l1.current(), al.current(), br.current(), \
                accs.current()
            pl.load(x, a, [blk, 0, 0])
            pl.load(y, b, [blk, 0, 0], order=[2, 1])
            pl.move(l0, x)
            pl.move(r0, y)
            pl.matmul(ac, l0, r0)
            pl.store(out, ac, [blk, 0, 0])

    g = torch.Generator().manual_seed(10)
    a, b = _rand((bt, m, k), F16, g), _rand((bt, n, k), F16, g)

    def run():
        out = torch.zeros(bt, m, n)
        batched[None, bt](a, b, out)
        return out

    _check(sim_and_native(run), a.double() @ b.double().transpose(1, 2))


# ---------------------------------------------------------------- dynamic shapes over cores


def test_dynamic_shapes_over_cores_with_load_tile_and_store_tile():
    """Matmul_operator_quick_start.md at tile 32: DYNAMIC M / N, rows of tiles spread over the
    cores by get_block_idx / get_block_num, ring buffers advanced by next()."""
    t = 32

    @pl.jit(auto_mutex=True)
    def quick(a: pl.Tensor[[pl.DYNAMIC, t], F16], b: pl.Tensor[[t, pl.DYNAMIC], F16],
              out: pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], F32]):
        num_cores = pl.get_block_num()
        core_id = pl.get_block_idx()
        m = a.shape[0]
        n = b.shape[1]
        with pl.section_cube():
            a_mat = pl.make_tile_group(type=pl.TileType(shape=[t, t], dtype=F16,
                                                        target_memory=MS.Mat),
                                       addrs=0, mutex_ids=[0, 1, 10, 11])
            b_mat = pl.make_tile_group(type=pl.TileType(shape=[t, t], dtype=F16,
                                                        target_memory=MS.Mat),
                                       addrs=0x20000, mutex_ids=[2, 3, 12, 13])
            a_left = pl.make_tile_group(type=pl.TileType(shape=[t, t], dtype=F16,
                                                         target_memory=MS.Left),
                                        addrs=0, mutex_ids=[4, 5])
            b_right = pl.make_tile_group(type=pl.TileType(shape=[t, t], dtype=F16,
                                                          target_memory=MS.Right),
                                         addrs=0, mutex_ids=[6, 7])
            acc_db = pl.make_tile_group(type=pl.TileType(shape=[t, t], dtype=F32,
                                                         target_memory=MS.Acc),
                                        addrs=0, mutex_ids=[8, 9])
            for i in pl.range(core_id, m // t, num_cores):
                for j in pl.range(0, n // t, 1):
                    a_l1 = a_mat.next()
                    pl.load_tile(a_l1, a, [i, 0])
                    b_l1 = b_mat.next()
                    pl.load_tile(b_l1, b, [0, j])
                    cur_a = a_left.next()
                    pl.move(cur_a, a_l1)
                    cur_b = b_right.next()
                    pl.move(cur_b, b_l1)
                    acc = acc_db.next()
                    pl.matmul(acc, cur_a, cur_b)
                    pl.store_tile(out, acc, [i, j])

    g = torch.Generator().manual_seed(12)
    a, b = _rand((160, t), F16, g), _rand((t, 96), F16, g)

    def run():
        out = torch.zeros(160, 96)
        quick[None, 3](a, b, out)
        return out

    _check(sim_and_native(run), a.double() @ b.double())


# ---------------------------------------------------------------- two accumulators


def test_phase_chains_on_ping_pong_accumulators():
    """C[:, j] for two N blocks, each a two-block K chain with phases into the next of two
    accumulators, stored with STPhase.Final: each L0C buffer's unit flag hands over on its own
    (phase.md), the second chain's matmuls running while the first's store drains."""
    t, kb = 32, 2
    mat_a, mat_b = _tt([t, t], F16, MS.Mat), _tt([t, t], F16, MS.Mat)
    left, right = _tt([t, t], F16, MS.Left), _tt([t, t], F16, MS.Right)
    acc_l0c = _tt([t, t], F32, MS.Acc, fractal=1024)

    @pl.jit(auto_mutex=True)
    def ping_pong(a: pl.Tensor[[t, kb * t], F16], b: pl.Tensor[[kb * t, 2 * t], F16],
                  out: pl.Tensor[[t, 2 * t], F32]):
        a_l1 = pl.make_tile_group(type=mat_a, addrs=0x0, mutex_ids=[0, 1])
        b_l1 = pl.make_tile_group(type=mat_b, addrs=0x8000, mutex_ids=[2, 3])
        al = pl.make_tile_group(type=left, addrs=0x0, mutex_ids=[4, 5])
        br = pl.make_tile_group(type=right, addrs=0x0, mutex_ids=[6, 7])
        accs = pl.make_tile_group(type=acc_l0c, addrs=0x0, mutex_ids=[8, 9])
        with pl.section_cube():
            pl.system.set_mm_layout_transform(enabled=True)
            for j in pl.range(0, 2):
                ac = accs.next()
                for k in pl.range(0, kb):
                    x, y, l0, r0 = a_l1.next(), b_l1.next(), al.next(), br.next()
                    pl.load(x, a, [0, k * t])
                    pl.load(y, b, [k * t, j * t])
                    pl.move(l0, x)
                    pl.move(r0, y)
                    if k == 0:
                        pl.matmul(ac, l0, r0, phase=pl.AccPhase.Partial)
                    else:
                        pl.matmul_acc(ac, ac, l0, r0, phase=pl.AccPhase.Final)
                pl.store(out, ac, [0, j * t], phase=pl.STPhase.Final)
            pl.system.set_mm_layout_transform(enabled=False)

    g = torch.Generator().manual_seed(13)
    a, b = _rand((t, kb * t), F16, g), _rand((kb * t, 2 * t), F16, g)

    def run():
        out = torch.zeros(t, 2 * t)
        ping_pong(a, b, out)
        return out

    _check(sim_and_native(run), a.double() @ b.double())


def test_matmul_acc_into_another_accumulator():
    """matmul_acc.md: dst = acc + lhs @ rhs, here with dst and acc two different L0C tiles."""
    mat = _tt([32, 32], F16, MS.Mat)
    left, right = _tt([32, 32], F16, MS.Left), _tt([32, 32], F16, MS.Right)
    acc_l0c = _tt([32, 32], F32, MS.Acc)

    @pl.jit(auto_mutex=True)
    def two(a: pl.Tensor[[32, 32], F16], b: pl.Tensor[[32, 32], F16],
            out: pl.Tensor[[32, 32], F32], first: pl.Tensor[[32, 32], F32]):
        a_l1 = pl.make_tile_group(type=mat, addrs=0x0, mutex_ids=[0])
        b_l1 = pl.make_tile_group(type=mat, addrs=0x8000, mutex_ids=[1])
        al = pl.make_tile_group(type=left, addrs=0x0, mutex_ids=[2])
        br = pl.make_tile_group(type=right, addrs=0x0, mutex_ids=[3])
        acc0 = pl.make_tile_group(type=acc_l0c, addrs=0x0, mutex_ids=[4])
        acc1 = pl.make_tile_group(type=acc_l0c, addrs=0x10000, mutex_ids=[5])
        with pl.section_cube():
            x, y, l0, r0 = a_l1.current(), b_l1.current(), al.current(), br.current()
            c0, c1 = acc0.current(), acc1.current()
            pl.load(x, a, [0, 0])
            pl.load(y, b, [0, 0])
            pl.move(l0, x)
            pl.move(r0, y)
            pl.matmul(c0, l0, r0)
            pl.matmul_acc(c1, c0, l0, r0)
            pl.store(out, c1, [0, 0])
            pl.store(first, c0, [0, 0])

    g = torch.Generator().manual_seed(14)
    a, b = _rand((32, 32), F16, g), _rand((32, 32), F16, g)

    def run():
        out, first = torch.zeros(32, 32), torch.zeros(32, 32)
        two(a, b, out, first)
        return torch.stack((out, first))

    c = a.double() @ b.double()
    _check(sim_and_native(run), torch.stack((2 * c, c)))


# ---------------------------------------------------------------- what the real toolchain refuses

_CUBE_BODY = """M = pl.MemorySpace
with pl.section_cube():
    l = pl.make_tile(pl.TileType([32, 32], {din}, M.Left), addr=0)
    r = pl.make_tile(pl.TileType([32, 32], {din}, M.Right), addr=0)
    c = pl.make_tile(pl.TileType([32, 32], {acc}, M.Acc), addr=0)
    b = pl.make_tile(pl.TileType([1, 32], {bias}, {space}), addr=0)
    {call}
"""


@pytest.mark.parametrize("din, acc, bias, space, call, error, fragment", [
    ("pl.DT_FP16", "pl.DT_FP32", "pl.DT_FP16", "M.Bias", "pl.matmul(c, l, r, b)", NotSupported,
     "matmul of FP16 x FP16 into FP32 with a FP16 bias: No supported bias data type."),
    ("pl.DT_INT8", "pl.DT_FP32", "pl.DT_FP32", "M.Bias", "pl.matmul(c, l, r)", NotSupported,
     "matmul of INT8 x INT8 into FP32: No supported data type combination."),
    ("pl.DT_FP16", "pl.DT_FP16", "pl.DT_FP16", "M.Bias", "pl.matmul_acc(c, c, l, r)",
     NotSupported, "Acc Type support int32_t or float."),
    ("pl.DT_FP16", "pl.DT_INT32", "pl.DT_INT32", "M.Bias", "pl.matmul(c, l, r)", NotSupported,
     "Left Type and Right Type must be int8_t when Acc Type is int32_t."),
    ("pl.DT_FP16", "pl.DT_FP32", "pl.DT_FP32", "M.Mat", "pl.matmul(c, l, r, b)",
     ParserSyntaxError, "matmul_bias: bias_tile must be in L0B (Bias), got Mat"),
], ids=["bias_dtype", "int8_into_fp32", "fp16_acc", "fp16_into_int32", "bias_in_l1"])
def test_refused_cube_operands(tmp_path, din, acc, bias, space, call, error, fragment):
    """pto-isa's static checks of a5's TMATMUL / TMATMUL_BIAS (the real toolchain's compile
    error), and the real matmul_bias builder's space check, at the call's line."""
    body = _CUBE_BODY.format(din=din, acc=acc, bias=bias, space=space, call=call)
    assert_refused(error, fragment, tmp_path, "cube", "out: pl.Tensor[[32, 32], pl.DT_FP32]",
                   body)
