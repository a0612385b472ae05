"""A sweep of the Reg API (`@pl.vector_function`) as its docs describe it (issue 21: the
flash-attention kernels do their softmax in VF), written as a user of the real PyPTO Pro writes
it from `docs/zh/pypto_pro/api/SIMD-API/operation/vf_computation/`.

Each case is one small kernel: two input tiles (x, y) loaded from GM, a vector function, one
output tile stored back, the VF body written out as the docs write it and compiled from a file of
its own (so diagnostics name real lines). Every op runs in every dtype its page lists, several ops
a launch, with full masks, tails (a mask shorter than the register: `update_mask(n)`), the
ZEROING and MERGING forms, scalar operands and the special values a page or pto-isa defines; the
references are torch, written from the docs' formulas and the register intrinsics' semantics
(one rounding into the register dtype, integers wrapping). The first case of each test also runs
natively and must be bit-identical to the simulator (`first_case_natively`; every case under
PYPTOPRO_SWEEP_NATIVE=1). What the real frontend refuses is refused here with its error class,
at the kernel line.
"""
from __future__ import annotations

import importlib.util
import textwrap
from fractions import Fraction
from pathlib import Path

import pytest
import torch
from dual_backend import first_case_natively
from kernel_source import compile_source

import pypto_pro.language as pl  # noqa: F401  (the kernels' own import)
from pypto_pro.errors import NotSupported, ParserSyntaxError, ParserTypeError

# every dtype the pages list: (register lanes, torch twin); unsigned types travel bit for bit as
# the signed torch type of their width
DT = {
    "DT_INT8": torch.int8, "DT_UINT8": torch.uint8, "DT_INT16": torch.int16,
    "DT_UINT16": torch.int16, "DT_INT32": torch.int32, "DT_UINT32": torch.int32,
    "DT_FP16": torch.float16, "DT_BF16": torch.bfloat16, "DT_FP32": torch.float32,
}
BITS = {"DT_INT8": 8, "DT_UINT8": 8, "DT_INT16": 16, "DT_UINT16": 16, "DT_INT32": 32,
        "DT_UINT32": 32, "DT_FP16": 16, "DT_BF16": 16, "DT_FP32": 32}
ARITH = list(DT)  # add / sub / max / min / adds / maxs / mins / compares
INTS = [d for d in DT if "INT" in d]
FLOATS = ["DT_FP16", "DT_FP32"]

KERNEL = '''import pypto_pro.language as pl
from pypto_pro.language import vf

V = pl.MemorySpace.Vec


@pl.vector_function
def body(x_t, y_t, o_t):
{body}


@pl.jit()
def k(x: pl.Tensor[[{rows}, {cols}], pl.{src}], y: pl.Tensor[[{rows}, {cols}], pl.{src}],
      out: pl.Tensor[[{rows}, {out_cols}], pl.{dst}]):
    xt = pl.make_tile(pl.TileType(shape=[{rows}, {cols}], dtype=pl.{src}, target_memory=V),
                      addr=0)
    yt = pl.make_tile(pl.TileType(shape=[{rows}, {cols}], dtype=pl.{src}, target_memory=V),
                      addr=0x10000)
    ot = pl.make_tile(pl.TileType(shape=[{rows}, {out_cols}], dtype=pl.{dst},
                                  target_memory=V), addr=0x20000)
    with pl.section_vector():
        pl.load(xt, x, [0, 0])
        pl.load(yt, y, [0, 0])
        pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
        body(xt, yt, ot)
        pl.system.sync_src(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.store(out, ot, [0, 0])
'''
_BUILT: dict[str, object] = {}


@pytest.fixture(scope="module")
def kdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("vf_sweep")


def kernel(kdir: Path, body: str, src: str, dst: str | None = None, cols: int | None = None,
           out_cols: int | None = None, rows: int = 1):
    """The module-level kernel around the VF `body` (x_t, y_t in, o_t out), built once."""
    dst = dst or src
    cols = cols or 2048 // BITS[src]
    text = KERNEL.format(body=textwrap.indent(textwrap.dedent(body).strip("\n"), "    "),
                         src=src, dst=dst, rows=rows, cols=cols, out_cols=out_cols or cols)
    if text not in _BUILT:
        name = f"vf_case_{len(_BUILT)}"
        path = kdir / f"{name}.py"
        path.write_text(text)
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _BUILT[text] = module.k
    return _BUILT[text]


def launch(k, x: torch.Tensor, y: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """`out` after `k[None, 1](x, y, out)`: the simulator's, natively too for a first case."""
    def run() -> torch.Tensor:
        o = out.clone()
        k[None, 1](x.clone(), y.clone(), o)
        return o
    return first_case_natively(run)


def lanes(dt: str) -> int:
    return 2048 // BITS[dt]


def rand(dt: str, n: int, seed: int, lo: int = -40, hi: int = 40) -> torch.Tensor:
    """n values of `dt` (floats exact multiples of 1/8; ints over the whole range)."""
    g = torch.Generator().manual_seed(seed)
    tdt = DT[dt]
    if tdt.is_floating_point:
        return (torch.randint(lo * 8, hi * 8, (1, n), generator=g).float() / 8).to(tdt)
    bits = BITS[dt]
    lo_i = 0 if dt.startswith("DT_U") else -(1 << (bits - 1))
    hi_i = (1 << bits) if dt.startswith("DT_U") else 1 << (bits - 1)
    return wrap(torch.randint(lo_i, hi_i, (1, n), generator=g, dtype=torch.int64), dt)


def value(t: torch.Tensor, dt: str) -> torch.Tensor:
    """What a lane holds: float64 for floats, int64 for ints (unsigned read as unsigned)."""
    if t.dtype.is_floating_point:
        return t.double()
    v = t.long()
    return v & ((1 << BITS[dt]) - 1) if dt.startswith("DT_U") else v


def wrap(v: torch.Tensor, dt: str) -> torch.Tensor:
    """int64 values into `dt`'s torch twin, keeping the low bits (the hardware wraps)."""
    bits = BITS[dt]
    low = v & ((1 << bits) - 1)
    if dt == "DT_UINT8":
        return low.to(torch.uint8)
    signed = torch.where(low >= 1 << (bits - 1), low - (1 << bits), low)
    return signed.to(DT[dt])


def rounded(v: torch.Tensor, dt: str) -> torch.Tensor:
    """A float32 computation's result rounded once into `dt` (what the register ops do)."""
    return v.float().to(DT[dt]) if DT[dt].is_floating_point else wrap(v.long(), dt)


def same(got: torch.Tensor, want: torch.Tensor, what: str = "") -> None:
    """Bit-equal, NaNs of any payload equal."""
    if got.dtype.is_floating_point:
        both_nan = torch.isnan(got) & torch.isnan(want)
        got = torch.where(both_nan, torch.zeros_like(got), got)
        want = torch.where(both_nan, torch.zeros_like(want), want)
        bits = {1: torch.uint8, 2: torch.int16, 4: torch.int32}[got.element_size()]
        got, want = got.view(bits), want.view(bits)
    bad = got != want
    assert not bad.any(), f"{what}: {int(bad.sum())} of {got.numel()} differ, first at " \
        f"{bad.nonzero()[:4].tolist()}: got {got[bad][:4].tolist()} want {want[bad][:4].tolist()}"


def slots(out: torch.Tensor, n: int) -> list[torch.Tensor]:
    """The output row cut into register-wide slots."""
    return list(out.reshape(-1).split(n))


# ---------------------------------------------------------------- two-register arithmetic

BINARY_REF = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b,
    "max": torch.maximum, "min": torch.minimum,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b if a.is_floating_point() else torch.div(a, b,
                                                                      rounding_mode="trunc"),
}
BINARY_DTYPES = {
    "add": ARITH, "sub": ARITH, "max": ARITH, "min": ARITH,
    "mul": [d for d in ARITH if BITS[d] > 8],
    "div": ["DT_INT16", "DT_UINT16", "DT_INT32", "DT_UINT32", "DT_FP16", "DT_FP32"],
}


@pytest.mark.parametrize("dt", ARITH)
def test_binary_ops_every_dtype_with_tail_and_merging(kdir, dt):
    """add / sub / max / min / mul / div as listed; a tail mask zeroing, then merging."""
    ops = [op for op in BINARY_REF if dt in BINARY_DTYPES[op]]
    n = lanes(dt)
    tail = n // 2 + 3
    lines = [f"every = vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=pl.{dt})",
             f"part = vf.update_mask({tail}, dtype=pl.{dt})",
             "a = vf.load_align(x_t, 0)", "b = vf.load_align(y_t, 0)"]
    for i, op in enumerate(ops):
        lines += [f"r = vf.{op}(a, b, every)", f"vf.store_align(o_t, r, every, {i * n})"]
    slot = len(ops)
    lines += ["r = vf.sub(a, b, part)", f"vf.store_align(o_t, r, every, {slot * n})",
              "a = vf.add(a, b, part, mode=pl.MergeMode.MERGING)",
              f"vf.store_align(o_t, a, every, {(slot + 1) * n})"]
    k = kernel(kdir, "\n".join(lines), dt, out_cols=(slot + 2) * n)
    x, y = rand(dt, n, 1), rand(dt, n, 2)
    if "div" in ops:  # no integer division by zero (a value the docs leave open)
        y = torch.where(value(y, dt) == 0, torch.ones_like(y), y)
    got = slots(launch(k, x, y, torch.zeros(1, (slot + 2) * n, dtype=DT[dt])), n)
    xv, yv = value(x, dt).flatten(), value(y, dt).flatten()
    if DT[dt].is_floating_point:
        xv, yv = xv.float(), yv.float()
    for i, op in enumerate(ops):
        same(got[i], rounded(BINARY_REF[op](xv, yv), dt), op)
    keep = torch.arange(n) < tail
    same(got[slot], torch.where(keep, rounded(xv - yv, dt), torch.zeros_like(got[0])), "tail")
    same(got[slot + 1], torch.where(keep, rounded(xv + yv, dt), x.flatten()), "merging")


SCALAR_DTYPES = {
    "adds": ARITH, "maxs": ARITH, "mins": ARITH,
    "muls": ["DT_INT16", "DT_UINT16", "DT_INT32", "DT_UINT32", "DT_FP16", "DT_FP32"],
}


@pytest.mark.parametrize("dt", ARITH)
def test_scalar_operand_ops(kdir, dt):
    """adds / maxs / mins / muls with a literal scalar (rounded into the register dtype)."""
    ops = [op for op in SCALAR_DTYPES if dt in SCALAR_DTYPES[op]]
    n = lanes(dt)
    s = 2.5 if DT[dt].is_floating_point else 3
    lines = [f"every = vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=pl.{dt})",
             "a = vf.load_align(x_t, 0)"]
    for i, op in enumerate(ops):
        lines += [f"r = vf.{op}(a, {s}, every)", f"vf.store_align(o_t, r, every, {i * n})"]
    k = kernel(kdir, "\n".join(lines), dt, out_cols=len(ops) * n)
    x = rand(dt, n, 3)
    got = slots(launch(k, x, x, torch.zeros(1, len(ops) * n, dtype=DT[dt])), n)
    xv = value(x, dt).flatten()
    xv = xv.float() if DT[dt].is_floating_point else xv
    sv = torch.tensor(s, dtype=xv.dtype)
    refs = {"adds": xv + sv, "maxs": torch.maximum(xv, sv), "mins": torch.minimum(xv, sv),
            "muls": xv * sv}
    for i, op in enumerate(ops):
        same(got[i], rounded(refs[op], dt), op)


# ---------------------------------------------------------------- one-register arithmetic


@pytest.mark.parametrize("dt", ["DT_INT8", "DT_INT16", "DT_INT32", "DT_FP16", "DT_FP32"])
def test_abs_neg_relu_wrap_at_the_type_minimum(kdir, dt):
    """abs / neg (and relu where listed): integer results out of range wrap (abs(-128) is -128
    for DT_INT8, the docs say); -0.0 and the extremes kept exact."""
    n = lanes(dt)
    ops = ["abs", "neg"] + (["relu"] if dt in ("DT_FP16", "DT_INT32", "DT_FP32") else [])
    lines = [f"every = vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=pl.{dt})",
             "a = vf.load_align(x_t, 0)"]
    for i, op in enumerate(ops):
        lines += [f"r = vf.{op}(a, every)", f"vf.store_align(o_t, r, every, {i * n})"]
    k = kernel(kdir, "\n".join(lines), dt, out_cols=len(ops) * n)
    x = rand(dt, n, 4)
    if DT[dt].is_floating_point:
        x[0, :3] = torch.tensor([-0.0, float("inf"), float("-inf")])
    else:
        x[0, :2] = torch.tensor([torch.iinfo(DT[dt]).min, torch.iinfo(DT[dt]).max])
    got = slots(launch(k, x, x, torch.zeros(1, len(ops) * n, dtype=DT[dt])), n)
    xv = value(x, dt).flatten()
    refs = {"abs": xv.abs(), "neg": -xv,
            "relu": torch.where(xv < 0, torch.zeros_like(xv), xv)}
    for i, op in enumerate(ops):
        same(got[i], rounded(refs[op], dt) if not x.is_floating_point() else
             refs[op].to(x.dtype), op)


MATH = {"exp": torch.exp, "ln": torch.log, "log": torch.log, "sqrt": torch.sqrt,
        "log2": torch.log2, "log10": torch.log10}


@pytest.mark.parametrize("dt", FLOATS)
def test_transcendentals_and_their_special_values(kdir, dt):
    """exp / ln / log / log2 / log10 / sqrt: close to torch, and exact where IEEE defines the
    result (ln 0 = -inf, sqrt of a negative = NaN, exp(-inf) = 0, exp(inf) = inf, ln 1 = 0)."""
    n = lanes(dt)
    lines = [f"every = vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=pl.{dt})",
             "a = vf.load_align(x_t, 0)"]
    for i, op in enumerate(MATH):
        lines += [f"r = vf.{op}(a, every)", f"vf.store_align(o_t, r, every, {i * n})"]
    k = kernel(kdir, "\n".join(lines), dt, out_cols=len(MATH) * n)
    x = (rand(dt, n, 5, 0, 8).float() + 0.125).to(DT[dt])
    specials = [0.0, -0.0, 1.0, -1.0, float("inf"), float("-inf"), float("nan")]
    x[0, :len(specials)] = torch.tensor(specials)
    got = slots(launch(k, x, x, torch.zeros(1, len(MATH) * n, dtype=DT[dt])), n)
    for i, (op, fn) in enumerate(MATH.items()):
        want = fn(x.float().flatten()).to(DT[dt])
        same(got[i][:len(specials)], want[:len(specials)], f"{op} special")
        torch.testing.assert_close(got[i].float(), want.float(), rtol=2e-3 if dt == "DT_FP16"
                                   else 2e-6, atol=1e-6, equal_nan=True, msg=op)


# ---------------------------------------------------------------- reductions

REDUCE_DTYPES = ["DT_INT16", "DT_UINT16", "DT_INT32", "DT_UINT32", "DT_FP16", "DT_FP32"]


@pytest.mark.parametrize("dt", REDUCE_DTYPES)
def test_reductions_value_index_and_tail(kdir, dt):
    """reduce_sum / reduce_max / reduce_min over all lanes and over a tail: the result in
    dst[0], the max / min's first lane in dst[1] (its bits as an integer of the lane width,
    as pto-isa's TRowReduceIdx reads it), every other lane zero; reduce_sum of FP16 accumulates
    in FP32 and rounds once."""
    n = lanes(dt)
    tail = n // 2 + 5
    lines = [f"every = vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=pl.{dt})",
             f"part = vf.update_mask({tail}, dtype=pl.{dt})",
             "a = vf.load_align(x_t, 0)"]
    cases = [(op, m) for m in ("every", "part") for op in ("reduce_sum", "reduce_max",
                                                           "reduce_min")]
    for i, (op, m) in enumerate(cases):
        lines += [f"r = vf.{op}(a, {m})", f"vf.store_align(o_t, r, every, {i * n})"]
    k = kernel(kdir, "\n".join(lines), dt, out_cols=len(cases) * n)
    x = rand(dt, n, 6, -8, 8) if DT[dt].is_floating_point else \
        rand(dt, n, 6) if BITS[dt] == 32 else wrap(rand("DT_INT32", n, 6).long() % 300, dt)
    x[0, 7] = x[0, 9] = x.max() if DT[dt].is_floating_point else x[0, 7]  # a repeated max
    got = slots(launch(k, x, x, torch.zeros(1, len(cases) * n, dtype=DT[dt])), n)
    xv = value(x, dt).flatten()
    for i, (op, m) in enumerate(cases):
        active = xv[:tail] if m == "part" else xv
        want = torch.zeros(n, dtype=xv.dtype)
        if op == "reduce_sum":
            want[0] = active.sum()  # FP32 / int64 accumulation, one rounding
        else:
            pick = active.max() if op == "reduce_max" else active.min()
            want[0] = pick
            index = int((active == pick).nonzero()[0])
        w = rounded(want, dt)
        if op != "reduce_sum":
            w = w.clone()
            w.view(torch.int16 if BITS[dt] == 16 else torch.int32)[1] = index
        if op == "reduce_sum" and DT[dt].is_floating_point:
            torch.testing.assert_close(got[i][0].float(), w[0].float(), rtol=1e-3, atol=1e-3)
            same(got[i][1:], w[1:], f"{op} {m}")
        else:
            same(got[i], w, f"{op} {m}")


# ---------------------------------------------------------------- composite (fused) ops


def round_exact(q: Fraction, dt: str) -> float:
    """The value of `dt` nearest the exact rational `q` (ties to even): an independent
    reference for the fused ops' single rounding."""
    tdt = DT[dt]
    near = torch.tensor(float(q)).to(tdt)
    bits = torch.int16 if tdt.itemsize == 2 else torch.int32
    code = int(near.view(bits))
    cands = [torch.tensor(c, dtype=bits).view(tdt) for c in (code - 1, code, code + 1)]
    cands = [c for c in cands if c.float().isfinite()]
    best = min(cands, key=lambda c: (abs(Fraction(float(c)) - q), int(c.view(bits)) & 1))
    return float(best)


@pytest.mark.parametrize("dt", ["DT_FP32", "DT_FP16", "DT_BF16"])
def test_fused_multiply_adds_round_once(kdir, dt):
    """mul_add_dst (dst = a·b + dst) and mul_dst_add (dst = dst·a + b) are one instruction
    each: the docs say the product is neither truncated nor rounded, so the result is the exact
    value rounded once; values with long mantissas make two roundings visible."""
    n = lanes(dt)
    body = f"""
        every = vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=pl.{dt})
        a = vf.load_align(x_t, 0)
        b = vf.load_align(y_t, 0)
        d = vf.load_align(x_t, {n})
        d = vf.mul_add_dst(a, b, every)
        vf.store_align(o_t, d, every, 0)
        e = vf.load_align(y_t, {n})
        e = vf.mul_dst_add(a, b, every)
        vf.store_align(o_t, e, every, {n})
    """
    k = kernel(kdir, body, dt, cols=2 * n, out_cols=2 * n)
    g = torch.Generator().manual_seed(7)
    x = (torch.randn(1, 2 * n, generator=g) * 3).to(DT[dt])
    y = (torch.randn(1, 2 * n, generator=g) * 3).to(DT[dt])
    got = slots(launch(k, x, y, torch.zeros(1, 2 * n, dtype=DT[dt])), n)
    fx, fy = [Fraction(float(v)) for v in x.flatten()], [Fraction(float(v)) for v in y.flatten()]
    add_dst = [round_exact(fx[i] * fy[i] + fx[n + i], dt) for i in range(n)]
    dst_add = [round_exact(fy[n + i] * fx[i] + fy[i], dt) for i in range(n)]
    same(got[0], torch.tensor(add_dst).to(DT[dt]), "mul_add_dst")
    same(got[1], torch.tensor(dst_add).to(DT[dt]), "mul_dst_add")


@pytest.mark.parametrize("dt", FLOATS)
def test_axpy_abs_sub_and_exp_sub(kdir, dt):
    """axpy (dst = s·src + dst), abs_sub |a - b|, exp_sub e^(a - b) (FP16 sources: the even or
    odd half, by layout, widened to FP32 before the subtraction, an FP32 result)."""
    n = lanes(dt)
    lines = [f"every = vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=pl.{dt})",
             "a = vf.load_align(x_t, 0)", "b = vf.load_align(y_t, 0)",
             "d = vf.load_align(y_t, 0)", "d = vf.axpy(a, 1.5, every)",
             "vf.store_align(o_t, d, every, 0)",
             "r = vf.abs_sub(a, b, every)", f"vf.store_align(o_t, r, every, {n})"]
    k = kernel(kdir, "\n".join(lines), dt, out_cols=2 * n)
    x, y = rand(dt, n, 8), rand(dt, n, 9)
    got = slots(launch(k, x, y, torch.zeros(1, 2 * n, dtype=DT[dt])), n)
    xf, yf = x.float().flatten(), y.float().flatten()
    same(got[0], (1.5 * xf + yf).to(DT[dt]), "axpy")
    same(got[1], (xf - yf).abs().to(DT[dt]), "abs_sub")

    f32 = [f"every = vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=pl.{dt})",
           "a = vf.load_align(x_t, 0)", "b = vf.load_align(y_t, 0)"]
    layouts = ["ZERO", "ONE"] if dt == "DT_FP16" else ["ZERO"]
    for i, layout in enumerate(layouts):
        f32 += [f"r = vf.exp_sub(a, b, every, layout=pl.CastLayout.{layout}, dtype=pl.DT_FP32)",
                f"vf.store_align(o_t, r, every, {i * 64})"]
    k = kernel(kdir, "\n".join(f32), dt, "DT_FP32", out_cols=64 * len(layouts))
    x, y = rand(dt, n, 10, -4, 4), rand(dt, n, 11, -4, 4)
    got = slots(launch(k, x, y, torch.zeros(1, 64 * len(layouts))), 64)
    diff = (x.float() - y.float()).flatten()
    for i, layout in enumerate(layouts):
        part = diff if dt == "DT_FP32" else diff[i::2]
        torch.testing.assert_close(got[i], torch.exp(part), rtol=2e-6, atol=0, msg=layout)


def test_muls_cast_rounds_the_fp32_product_into_fp16(kdir):
    """muls_cast: FP32 · scalar rounded to FP16 (CAST_ROUND), into the even (ZERO) or odd (ONE)
    halves of the FP16 register."""
    body = """
        every = vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=pl.DT_FP32)
        wide = vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=pl.DT_FP16)
        a = vf.load_align(x_t, 0)
        r = vf.muls_cast(a, 0.3, every, dtype=pl.DT_FP16)
        vf.store_align(o_t, r, wide, 0)
        r = vf.muls_cast(a, 0.3, every, dtype=pl.DT_FP16, layout=pl.CastLayout.ONE)
        vf.store_align(o_t, r, wide, 128)
    """
    k = kernel(kdir, body, "DT_FP32", "DT_FP16", cols=64, out_cols=256)
    x = torch.randn(1, 64, generator=torch.Generator().manual_seed(12)) * 100
    got = slots(launch(k, x, x, torch.zeros(1, 256, dtype=torch.float16)), 128)
    prod = (x.flatten() * torch.tensor(0.3, dtype=torch.float32)).half()
    same(got[0][0::2], prod, "ZERO")
    same(got[1][1::2], prod, "ONE")


# ---------------------------------------------------------------- logic and shifts

BITWISE = {"and_": torch.bitwise_and, "or_": torch.bitwise_or, "xor": torch.bitwise_xor}


@pytest.mark.parametrize("dt", ARITH)
def test_bitwise_ops_on_the_lanes_bits(kdir, dt):
    """and_ / or_ / xor on every listed dtype (floats by their bits), not_ where listed."""
    n = lanes(dt)
    ops = list(BITWISE) + (["not_"] if dt != "DT_BF16" else [])
    lines = [f"every = vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=pl.{dt})",
             "a = vf.load_align(x_t, 0)", "b = vf.load_align(y_t, 0)"]
    for i, op in enumerate(ops):
        call = f"vf.{op}(a, every)" if op == "not_" else f"vf.{op}(a, b, every)"
        lines += [f"r = {call}", f"vf.store_align(o_t, r, every, {i * n})"]
    k = kernel(kdir, "\n".join(lines), dt, out_cols=len(ops) * n)
    x, y = rand(dt, n, 13), rand(dt, n, 14)
    got = slots(launch(k, x, y, torch.zeros(1, len(ops) * n, dtype=DT[dt])), n)
    ib = {1: torch.uint8, 2: torch.int16, 4: torch.int32}[x.element_size()]
    xb, yb = x.flatten().view(ib), y.flatten().view(ib)
    for i, op in enumerate(ops):
        want = ~xb if op == "not_" else BITWISE[op](xb, yb)
        same(got[i].view(ib), want, op)


@pytest.mark.parametrize("dt", INTS)
def test_shifts_scalar_and_per_lane(kdir, dt):
    """shift_left / shift_right by a scalar and by a register of per-lane amounts: logical for
    unsigned types, arithmetic right shifts for signed ones, high bits dropped."""
    n = lanes(dt)
    body = f"""
        every = vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=pl.{dt})
        a = vf.load_align(x_t, 0)
        s = vf.load_align(y_t, 0)
        r = vf.shift_left(a, 3, every)
        vf.store_align(o_t, r, every, 0)
        r = vf.shift_right(a, 3, every)
        vf.store_align(o_t, r, every, {n})
        r = vf.shift_left(a, s, every)
        vf.store_align(o_t, r, every, {2 * n})
        r = vf.shift_right(a, s, every)
        vf.store_align(o_t, r, every, {3 * n})
    """
    k = kernel(kdir, body, dt, out_cols=4 * n)
    x = rand(dt, n, 15)
    amounts = wrap(torch.randint(0, BITS[dt], (1, n), generator=torch.Generator().manual_seed(16)),
                   dt)
    got = slots(launch(k, x, amounts, torch.zeros(1, 4 * n, dtype=DT[dt])), n)
    xv, sv = value(x, dt).flatten(), value(amounts, dt).flatten()
    same(got[0], wrap(xv << 3, dt), "shl scalar")
    same(got[1], wrap(xv >> 3, dt), "shr scalar")
    same(got[2], wrap(xv << sv, dt), "shl lanes")
    same(got[3], wrap(xv >> sv, dt), "shr lanes")


# ---------------------------------------------------------------- compare and select

COMPARE = {"eq": torch.eq, "ne": torch.ne, "gt": torch.gt, "ge": torch.ge, "lt": torch.lt,
           "le": torch.le}


@pytest.mark.parametrize("dt", ARITH)
def test_compares_select_register_and_scalar_operands(kdir, dt):
    """Each compare against a register and against a scalar, under a tail preg (lanes it does
    not select compare false), picked with select(a, b, mask); NaN compares unordered."""
    n = lanes(dt)
    tail = n - 5
    s = 0.5 if DT[dt].is_floating_point else 7
    lines = [f"every = vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=pl.{dt})",
             f"part = vf.update_mask({tail}, dtype=pl.{dt})",
             "a = vf.load_align(x_t, 0)", "b = vf.load_align(y_t, 0)"]
    cases = [(op, rhs) for op in COMPARE for rhs in ("b", str(s))]
    for i, (op, rhs) in enumerate(cases):
        lines += [f"m = vf.{op}(a, {rhs}, part)", "r = vf.select(a, b, m)",
                  f"vf.store_align(o_t, r, every, {i * n})"]
    k = kernel(kdir, "\n".join(lines), dt, out_cols=len(cases) * n)
    x, y = rand(dt, n, 17, -4, 4), rand(dt, n, 18, -4, 4)
    y[0, :n // 4] = x[0, :n // 4]  # equal lanes
    if DT[dt].is_floating_point:
        x[0, n // 4] = float("nan")
        x[0, n // 4 + 1] = s
    else:
        x[0, n // 4 + 1] = s
    got = slots(launch(k, x, y, torch.zeros(1, len(cases) * n, dtype=DT[dt])), n)
    xv, yv = value(x, dt).flatten(), value(y, dt).flatten()
    on = torch.arange(n) < tail
    for i, (op, rhs) in enumerate(cases):
        other = yv if rhs == "b" else torch.full_like(xv, float(s) if xv.is_floating_point()
                                                      else int(s))
        m = COMPARE[op](xv, other) & on
        same(got[i], torch.where(m, x.flatten(), y.flatten()), f"{op} {rhs}")


# ---------------------------------------------------------------- broadcasts, ramps, masks


@pytest.mark.parametrize("dt", ARITH)
def test_full_scalar_and_lane_broadcasts_and_arange(kdir, dt):
    """full(scalar, dtype=) rounded into the dtype, full(reg, preg, pos=LOWEST / HIGHEST),
    full under a tail preg zeroing and merging, arange ramps up and down."""
    n = lanes(dt)
    s = -2.75 if DT[dt].is_floating_point else -3
    body = f"""
        every = vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=pl.{dt})
        part = vf.update_mask({n // 2 + 1}, dtype=pl.{dt})
        a = vf.load_align(x_t, 0)
        r = vf.full({s}, every, dtype=pl.{dt})
        vf.store_align(o_t, r, every, 0)
        r = vf.full(a, every)
        vf.store_align(o_t, r, every, {n})
        r = vf.full(a, every, pos=pl.DuplicatePos.HIGHEST)
        vf.store_align(o_t, r, every, {2 * n})
        r = vf.full({s}, part, dtype=pl.{dt})
        vf.store_align(o_t, r, every, {3 * n})
        a = vf.full({s}, part, dtype=pl.{dt}, mode=pl.MergeMode.MERGING)
        vf.store_align(o_t, a, every, {4 * n})
        r = vf.arange(5, dtype=pl.{dt})
        vf.store_align(o_t, r, every, {5 * n})
        r = vf.arange(5, dtype=pl.{dt}, index_order=pl.IndexOrder.DECREASE_ORDER)
        vf.store_align(o_t, r, every, {6 * n})
    """
    k = kernel(kdir, body, dt, out_cols=7 * n)
    x = rand(dt, n, 19)
    got = slots(launch(k, x, x, torch.zeros(1, 7 * n, dtype=DT[dt])), n)
    flat = x.flatten()
    sv = rounded(torch.full((n,), s, dtype=torch.float64 if DT[dt].is_floating_point
                            else torch.int64), dt)
    on = torch.arange(n) < n // 2 + 1
    ramp = torch.arange(n) + 5
    same(got[0], sv, "full scalar")
    same(got[1], flat[:1].expand(n), "LOWEST")
    same(got[2], flat[-1:].expand(n), "HIGHEST")
    same(got[3], torch.where(on, sv, torch.zeros_like(sv)), "zeroing")
    same(got[4], torch.where(on, sv, flat), "merging")
    same(got[5], rounded(ramp, dt), "arange")
    same(got[6], rounded(ramp.flip(0), dt), "arange DEC")


# ---------------------------------------------------------------- loads and stores


@pytest.mark.parametrize("dt", ["DT_INT8", "DT_FP16", "DT_BF16", "DT_FP32", "DT_UINT32"])
def test_load_align_distributions(kdir, dt):
    """NORM at element and [row, col] offsets, BRC (one element everywhere), US (VL/2 of data,
    each element twice), DS (2·VL, every other element), UNPK (VL/2, each element zero-extended
    to twice its width), BLK (one 32-byte block to all eight), E2B (eight elements, each over a
    block; B16 / B32), DINTLV (even and odd elements into two registers)."""
    n = lanes(dt)
    b = BITS[dt]
    loads = [("NORM", f"vf.load_align(x_t, {n // 2})"),
             ("ROWCOL", f"vf.load_align(x_t, [1, {256 // b}])"),
             ("BRC", "vf.load_align(x_t, 5, dist=pl.LoadDist.BRC)"),
             ("DS", "vf.load_align(x_t, 0, dist=pl.LoadDist.DS)") if b != 32 else None,
             ("US", "vf.load_align(x_t, 0, dist=pl.LoadDist.US)") if b != 32 else None,
             ("UNPK", "vf.load_align(x_t, 0, dist=pl.LoadDist.UNPK)"),
             ("BLK", "vf.load_align(x_t, 0, dist=pl.LoadDist.BLK)"),
             ("E2B", "vf.load_align(x_t, 0, dist=pl.LoadDist.E2B)") if b != 8 else None]
    loads = [c for c in loads if c is not None]
    lines = [f"every = vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=pl.{dt})"]
    for i, (_, call) in enumerate(loads):
        lines += [f"r = {call}", f"vf.store_align(o_t, r, every, {i * n})"]
    lines += [f"ev, od = vf.load_align(x_t, 0, dist=pl.LoadDist.DINTLV_B{max(b, 8)})",
              f"vf.store_align(o_t, ev, every, {len(loads) * n})",
              f"vf.store_align(o_t, od, every, {(len(loads) + 1) * n})"]
    k = kernel(kdir, "\n".join(lines), dt, rows=3, out_cols=(len(loads) + 2) * n)
    x = rand(dt, 3 * n, 20).reshape(3, n)  # three register-wide rows: [row, col] offsets
    got = slots(launch(k, x, x, torch.zeros(3, (len(loads) + 2) * n, dtype=DT[dt]))[0], n)
    flat = x.flatten()
    ib = {8: torch.uint8, 16: torch.int16, 32: torch.int32}[b]
    zero = torch.zeros(n // 2, dtype=ib)
    want = {
        "NORM": flat[n // 2: n // 2 + n], "ROWCOL": flat[n + 256 // b:][:n],
        "BRC": flat[5].expand(n), "DS": flat[0:2 * n:2], "US": flat[:n // 2].repeat_interleave(2),
        "UNPK": torch.stack([flat[:n // 2].view(ib), zero], 1).reshape(-1).view(DT[dt]),
        "BLK": flat[:32 * 8 // b].repeat(8), "E2B": flat[:8].repeat_interleave(n // 8),
    }
    for i, (name, _) in enumerate(loads):
        same(got[i], want[name], name)
    same(got[len(loads)], flat[0:2 * n:2], "DINTLV even")
    same(got[len(loads) + 1], flat[1:2 * n:2], "DINTLV odd")


@pytest.mark.parametrize("dt", ["DT_INT8", "DT_FP16", "DT_FP32", "DT_INT32"])
def test_store_align_distributions_and_tails(kdir, dt):
    """NORM under a tail preg (the lanes it does not select keep what the tile held),
    FIRST_ELEMENT (one element, whatever the mask), PACK (the low half of every element,
    packed), INTLV (two registers interleaved)."""
    n = lanes(dt)
    b = BITS[dt]
    lines = [f"every = vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=pl.{dt})",
             f"part = vf.update_mask({n // 2 + 3}, dtype=pl.{dt})",
             f"first = vf.create_mask(pattern=pl.MaskPattern.VL1, dtype=pl.{dt})",
             "a = vf.load_align(x_t, 0)", "c = vf.load_align(y_t, 0)",
             "vf.store_align(o_t, c, every, 0)",
             f"vf.store_align(o_t, c, every, {n})",
             f"vf.store_align(o_t, c, every, {2 * n})",
             "vf.mem_bar(mode=pl.MemBarMode.VST_VST)",
             "vf.store_align(o_t, a, part, 0)",
             f"vf.store_align(o_t, a, first, {n}, dist=pl.StoreDist.FIRST_ELEMENT)"]
    if b != 8:
        lines += [f"vf.store_align(o_t, a, every, {2 * n}, dist=pl.StoreDist.PACK)"]
    lines += [f"vf.store_align(o_t + {3 * n}, a, c, every, dist=pl.StoreDist.INTLV)"]
    k = kernel(kdir, "\n".join(lines), dt, out_cols=5 * n)
    x, y = rand(dt, n, 21), rand(dt, n, 22)
    got = slots(launch(k, x, y, torch.zeros(1, 5 * n, dtype=DT[dt])), n)
    xf, yf = x.flatten(), y.flatten()
    on = torch.arange(n) < n // 2 + 3
    same(got[0], torch.where(on, xf, yf), "NORM tail")
    same(got[1], torch.cat([xf[:1], yf[1:]]), "FIRST_ELEMENT")
    if b != 8:
        ib = {16: torch.int16, 32: torch.int32}[b]
        half = {16: torch.uint8, 32: torch.int16}[b]
        low = xf.view(ib).view(half)[0::2]  # little-endian: the low half comes first
        same(got[2].view(half)[:n], low, "PACK low halves")
        same(got[2].view(half)[n:], yf.view(half)[n:], "PACK leaves the rest")
    same(torch.cat([got[3], got[4]]), torch.stack([xf, yf], 1).reshape(-1), "INTLV")


# ---------------------------------------------------------------- predicates


PATTERNS = {"ALL": lambda n: n, "ALLF": lambda n: 0, "VL1": lambda n: 1, "VL2": lambda n: 2,
            "VL3": lambda n: 3, "VL4": lambda n: 4, "VL8": lambda n: 8, "VL16": lambda n: 16,
            "VL32": lambda n: 32, "VL64": lambda n: 64, "VL128": lambda n: 128,
            "H": lambda n: n // 2, "Q": lambda n: n // 4}


@pytest.mark.parametrize("dt", ["DT_INT8", "DT_FP16", "DT_FP32"])
def test_create_mask_patterns_update_mask_and_mask_logic(kdir, dt):
    """Every MaskPattern (VLk beyond the register: every lane; M3 / M4 every third / fourth
    lane), update_mask(n) for n below, at and past the lane count, predicate and / or / not and
    select on predicates, each shown by x under it (or_(x, x, mask): zeroing)."""
    n = lanes(dt)
    masks = [f"vf.create_mask(pattern=pl.MaskPattern.{p}, dtype=pl.{dt})"
             for p in [*PATTERNS, "M3", "M4"]]
    masks += [f"vf.update_mask({c}, dtype=pl.{dt})" for c in (0, 7, n, n + 9)]
    lines = ["a = vf.load_align(x_t, 0)"]
    for i, m in enumerate(masks):
        lines += [f"m = {m}", "r = vf.or_(a, a, m)", f"vf.store_align(o_t, r, every, {i * n})"]
    lines = [f"every = vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=pl.{dt})"] + lines
    lines += [f"h = vf.create_mask(pattern=pl.MaskPattern.H, dtype=pl.{dt})",
              f"m3 = vf.create_mask(pattern=pl.MaskPattern.M3, dtype=pl.{dt})",
              "both = vf.and_(h, m3, every)", "either = vf.or_(h, m3, every)",
              "neither = vf.not_(either, every)"]
    base = len(masks)
    for j, name in enumerate(["both", "either", "neither"]):
        lines += [f"r = vf.or_(a, a, {name})", f"vf.store_align(o_t, r, every, {(base + j) * n})"]
    k = kernel(kdir, "\n".join(lines), dt, out_cols=(base + 3) * n)
    x = rand(dt, n, 23)
    x = torch.where(x == 0, torch.ones_like(x), x)
    got = slots(launch(k, x, x, torch.zeros(1, (base + 3) * n, dtype=DT[dt])), n)
    idx = torch.arange(n)
    ons = [idx < min(n, f(n)) for f in PATTERNS.values()]
    ons += [idx % 3 == 0, idx % 4 == 0]
    ons += [idx < min(n, c) for c in (0, 7, n, n + 9)]
    h, m3 = idx < n // 2, idx % 3 == 0
    ons += [h & m3, h | m3, ~(h | m3)]
    flat = x.flatten()
    for i, on in enumerate(ons):
        same(got[i], torch.where(on, flat, torch.zeros_like(flat)), f"mask {i}")


# ---------------------------------------------------------------- conversions

ROUNDS = ["CAST_RINT", "CAST_ROUND", "CAST_FLOOR", "CAST_CEIL", "CAST_TRUNC"]


def to_integer(v: torch.Tensor, mode: str) -> torch.Tensor:
    """float64 values rounded to integers by a VFRoundMode."""
    if mode == "CAST_RINT":
        return torch.round(v)
    if mode == "CAST_ROUND":
        return torch.sign(v) * torch.floor(v.abs() + 0.5)
    return {"CAST_FLOOR": torch.floor, "CAST_CEIL": torch.ceil, "CAST_TRUNC": torch.trunc}[mode](v)


def low_bits(v: torch.Tensor) -> torch.Tensor:
    """The low 64 bits of each integral float64 value (exact, however large)."""
    mant, exp = torch.frexp(v)
    m = (mant * 2.0 ** 53).to(torch.int64)
    shift = (exp - 53).to(torch.int64)
    up = torch.where(shift >= 64, torch.zeros_like(m), m << shift.clamp(0, 63))
    return torch.where(shift >= 0, up, m >> (-shift).clamp(0, 63))


def float_to_int(v: torch.Tensor, dt: str, mode: str, sat: bool) -> torch.Tensor:
    """The docs' table 6: saturate ON clamps; OFF keeps the low bits of the rounded integer;
    ±inf gives the type's extremes and NaN 0 either way."""
    r = to_integer(v.double(), mode)
    bits = BITS[dt]
    lo = 0 if dt.startswith("DT_U") else -(1 << (bits - 1))
    hi = lo + (1 << bits) - 1
    finite = torch.nan_to_num(r, nan=0.0, posinf=0.0, neginf=0.0)
    if sat:
        out = finite.clamp(lo, hi).to(torch.int64)
    else:
        out = low_bits(finite)
    out = torch.where(r == float("inf"), hi, torch.where(r == float("-inf"), lo, out))
    return wrap(out, dt)


CONVERSIONS = [  # (src, dst, layouts): narrowing places results at lanes r·i + layout
    ("DT_FP32", "DT_INT32", ["ZERO"]), ("DT_FP32", "DT_INT16", ["ZERO", "ONE"]),
    ("DT_FP16", "DT_INT8", ["ZERO", "ONE"]), ("DT_FP16", "DT_UINT8", ["ZERO"]),
    ("DT_FP16", "DT_INT16", ["ZERO"]), ("DT_FP16", "DT_INT32", ["ZERO", "ONE"]),
    ("DT_BF16", "DT_INT32", ["ONE"]),
]


@pytest.mark.parametrize("src,dst,layouts", CONVERSIONS,
                         ids=[f"{s[3:]}-{d[3:]}" for s, d, _ in CONVERSIONS])
def test_astype_float_to_int_round_modes_and_saturation(kdir, src, dst, layouts):
    """Every round mode, saturate OFF (the default: out-of-range values keep their low bits,
    e.g. half 257 → uint8 1) and ON (clamped), ±inf and NaN, each layout."""
    n_src, n_dst = lanes(src), lanes(dst)
    cases = [(m, s, lay) for m in ROUNDS for s in ("OFF", "ON") for lay in layouts]
    lines = [f"every = vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=pl.{src})",
             f"wide = vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=pl.{dst})",
             "a = vf.load_align(x_t, 0)"]
    for i, (m, s, lay) in enumerate(cases):
        lines += [f"r = vf.astype(a, every, dtype=pl.{dst}, round_mode=pl.VFRoundMode.{m}, "
                  f"saturate=pl.SaturateMode.{s}, layout=pl.CastLayout.{lay})",
                  f"vf.store_align(o_t, r, wide, {i * n_dst})"]
    k = kernel(kdir, "\n".join(lines), src, dst, cols=n_src, out_cols=len(cases) * n_dst)
    g = torch.Generator().manual_seed(24)
    top = {"DT_FP16": 60000.0, "DT_BF16": 3e9, "DT_FP32": 3e9}[src]
    x = (torch.rand(n_src, generator=g, dtype=torch.float64) * 2 - 1)
    x = x * torch.where(torch.arange(n_src) % 3 == 0, top, 300.0)
    x[:8] = torch.tensor([2.5, -2.5, 257.0, -129.5, float("inf"), float("-inf"), float("nan"),
                          0.5])
    x = x.to(DT[src]).reshape(1, -1)
    out = launch(k, x, x, torch.zeros(1, len(cases) * n_dst, dtype=DT[dst]))
    got = slots(out, n_dst)
    ratio = max(1, n_dst // n_src)
    shrink = max(1, n_src // n_dst)
    for i, (m, s, lay) in enumerate(cases):
        part = ["ZERO", "ONE"].index(lay)
        src_lanes = torch.arange(0, n_src) if shrink == 1 else torch.arange(part, n_src, shrink)
        conv = float_to_int(x.flatten()[src_lanes], dst, m, s == "ON")
        want = torch.zeros(n_dst, dtype=DT[dst])
        if ratio > 1:
            want[part::ratio] = conv
        else:
            want[:conv.numel()] = conv
        same(got[i], want, f"{m} {s} {lay}")


def round_float_to(v: torch.Tensor, dt: str, mode: str) -> torch.Tensor:
    """float64 values rounded into `dt` by a VFRoundMode (the two neighbours of each value
    in `dt`, picked as the mode says; IEEE overflow to inf for RINT / ROUND)."""
    tdt = DT[dt]
    ib = torch.int16 if tdt.itemsize == 2 else torch.int32
    near = v.to(tdt)
    exact = near.double() == v
    code = near.view(ib).long()
    # the neighbour on the other side of v, one code away
    other_code = torch.where(near.double() > v, code - torch.where(code >= 0, 1, -1),
                             code + torch.where(code >= 0, 1, -1))
    other = wrap(other_code, "DT_INT16" if tdt.itemsize == 2 else "DT_INT32").view(tdt)
    lower = torch.where(near.double() > v, other, near)
    upper = torch.where(near.double() > v, near, other)
    if mode == "CAST_RINT":
        pick = near
    elif mode == "CAST_FLOOR":
        pick = lower
    elif mode == "CAST_CEIL":
        pick = upper
    elif mode == "CAST_TRUNC":
        pick = torch.where(v > 0, lower, upper)
    elif mode == "CAST_ODD":
        pick = torch.where((lower.view(ib) & 1) == 1, lower, upper)
    else:  # CAST_ROUND: nearest, ties away from zero
        dl, du = v - lower.double(), upper.double() - v
        pick = torch.where(dl < du, lower, torch.where(du < dl, upper,
                                                       torch.where(v > 0, upper, lower)))
        pick = torch.where(near.isinf(), near, pick)  # overflow: ±inf, as for RINT
    return torch.where(exact, near, pick)


F2F = [("DT_FP32", "DT_FP16", ROUNDS + ["CAST_ODD"]), ("DT_FP32", "DT_BF16", ROUNDS),
       ("DT_BF16", "DT_FP16", ROUNDS), ("DT_FP16", "DT_BF16", ROUNDS)]


@pytest.mark.parametrize("src,dst,modes", F2F, ids=[f"{s[3:]}-{d[3:]}" for s, d, _ in F2F])
def test_astype_float_to_float_round_modes_and_saturation(kdir, src, dst, modes):
    """Narrowing float conversions in every listed round mode (layout ZERO / ONE where the
    widths differ); specials: saturate OFF keeps NaN and ±inf, ON turns NaN into 0 and clamps
    ±inf and overflow to the largest finite value (the docs' table 6)."""
    n_src, n_dst = lanes(src), lanes(dst)
    ratio = n_dst // n_src
    lays = ["ZERO", "ONE"] if ratio > 1 else ["ZERO"]
    cases = [(m, "OFF", lay) for m in modes for lay in lays] + [("CAST_RINT", "ON", "ZERO")]
    lines = [f"every = vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=pl.{src})",
             f"wide = vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=pl.{dst})",
             "a = vf.load_align(x_t, 0)"]
    for i, (m, s, lay) in enumerate(cases):
        layout = f", layout=pl.CastLayout.{lay}" if ratio > 1 else ""
        sat = f", saturate=pl.SaturateMode.{s}" if s == "ON" else ""
        lines += [f"r = vf.astype(a, every, dtype=pl.{dst}, round_mode=pl.VFRoundMode.{m}"
                  f"{layout}{sat})", f"vf.store_align(o_t, r, wide, {i * n_dst})"]
    k = kernel(kdir, "\n".join(lines), src, dst, out_cols=len(cases) * n_dst)
    g = torch.Generator().manual_seed(25)
    x = (torch.randn(1, n_src, generator=g) * 100).to(DT[src])
    big = 1e6 if dst == "DT_FP16" else 1.0
    x[0, :6] = torch.tensor([float("nan"), float("inf"), float("-inf"), big, -big, 0.0])
    got = slots(launch(k, x, x, torch.zeros(1, len(cases) * n_dst, dtype=DT[dst])), n_dst)
    v = x.double().flatten()
    top = torch.finfo(DT[dst]).max
    for i, (m, s, lay) in enumerate(cases):
        conv = round_float_to(v, dst, m)
        if s == "ON":
            conv = torch.nan_to_num(v, nan=0.0).clamp(-top, top)
            conv = round_float_to(conv, dst, m)
        else:
            conv = torch.where(v.isnan() | v.isinf(), v.to(DT[dst]), conv)
        want = torch.zeros(n_dst, dtype=DT[dst])
        want[["ZERO", "ONE"].index(lay)::ratio] = conv
        same(got[i], want, f"{m} {s} {lay}")


WIDEN = [("DT_FP16", "DT_FP32"), ("DT_BF16", "DT_FP32"), ("DT_INT16", "DT_FP32"),
         ("DT_INT8", "DT_FP16"), ("DT_UINT8", "DT_FP16"), ("DT_INT8", "DT_INT16"),
         ("DT_INT16", "DT_INT32"), ("DT_UINT16", "DT_UINT32"), ("DT_UINT8", "DT_UINT32"),
         ("DT_INT8", "DT_INT32"), ("DT_INT16", "DT_UINT32")]


@pytest.mark.parametrize("src,dst", WIDEN, ids=[f"{s[3:]}-{d[3:]}" for s, d in WIDEN])
def test_astype_widening_reads_the_layouts_lanes(kdir, src, dst):
    """Widening by r reads source lanes r·i + layout (ZERO / ONE, TWO / THREE for 4x) under a
    tail preg of source lanes; exact values; INT16 → UINT32 saturates negatives to 0 (the
    docs: narrow to wide unsigned only saturates)."""
    n_src, n_dst = lanes(src), lanes(dst)
    r = n_src // n_dst
    lays = ["ZERO", "ONE", "TWO", "THREE"][:r]
    tail = n_src - 2 * r - 1
    lines = [f"part = vf.update_mask({tail}, dtype=pl.{src})",
             f"wide = vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=pl.{dst})",
             "a = vf.load_align(x_t, 0)"]
    for i, lay in enumerate(lays):
        lines += [f"o = vf.astype(a, part, dtype=pl.{dst}, layout=pl.CastLayout.{lay})",
                  f"vf.store_align(o_t, o, wide, {i * n_dst})"]
    k = kernel(kdir, "\n".join(lines), src, dst, out_cols=len(lays) * n_dst)
    x = rand(src, n_src, 26, -300, 300)
    got = slots(launch(k, x, x, torch.zeros(1, len(lays) * n_dst, dtype=DT[dst])), n_dst)
    v = value(x, src).flatten()
    if dst == "DT_UINT32" and src == "DT_INT16":
        v = v.clamp(min=0)
    on = torch.arange(n_src) < tail
    for i, lay in enumerate(lays):
        picked = torch.where(on, v, torch.zeros_like(v))[i::r]
        want = picked.to(DT[dst]) if DT[dst].is_floating_point else wrap(picked.long(), dst)
        same(got[i], want, lay)


NARROW_INT = [("DT_INT32", "DT_INT16"), ("DT_INT32", "DT_UINT16"), ("DT_UINT32", "DT_UINT16"),
              ("DT_INT16", "DT_UINT8"), ("DT_UINT16", "DT_UINT8"), ("DT_INT32", "DT_UINT8"),
              ("DT_UINT32", "DT_INT16")]


@pytest.mark.parametrize("src,dst", NARROW_INT, ids=[f"{s[3:]}-{d[3:]}" for s, d in NARROW_INT])
def test_astype_integer_narrowing_wraps_or_saturates(kdir, src, dst):
    """Integer narrowing: saturate OFF keeps the low bits (int32 256 → uint8 0), ON clamps to
    the target range; results at lanes r·i + layout, the rest zero."""
    n_src, n_dst = lanes(src), lanes(dst)
    r = n_dst // n_src
    cases = [(s, lay) for s in ("OFF", "ON") for lay in ["ZERO", "ONE", "TWO", "THREE"][:r]]
    lines = [f"every = vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=pl.{src})",
             f"wide = vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=pl.{dst})",
             "a = vf.load_align(x_t, 0)"]
    for i, (s, lay) in enumerate(cases):
        lines += [f"o = vf.astype(a, every, dtype=pl.{dst}, layout=pl.CastLayout.{lay}, "
                  f"saturate=pl.SaturateMode.{s})", f"vf.store_align(o_t, o, wide, {i * n_dst})"]
    k = kernel(kdir, "\n".join(lines), src, dst, out_cols=len(cases) * n_dst)
    x = rand(src, n_src, 27)
    got = slots(launch(k, x, x, torch.zeros(1, len(cases) * n_dst, dtype=DT[dst])), n_dst)
    v = value(x, src).flatten()
    bits = BITS[dst]
    lo = 0 if dst.startswith("DT_U") else -(1 << (bits - 1))
    for i, (s, lay) in enumerate(cases):
        conv = wrap(v.clamp(lo, lo + (1 << bits) - 1) if s == "ON" else v, dst)
        want = torch.zeros(n_dst, dtype=DT[dst])
        want[["ZERO", "ONE", "TWO", "THREE"].index(lay)::r] = conv
        same(got[i], want, f"{s} {lay}")


# ---------------------------------------------------------------- VF functions as composed

SOFTMAX_ROWS, SOFTMAX_COLS = 8, 208  # 3 registers and a 16-lane tail a row; rows 32B-aligned
SOFTMAX = """
full = vf.create_mask(pl.MaskPattern.ALL, dtype=pl.DT_FP32)
for r in pl.range({rows}):
    base = r * {cols}
    mx = vf.full(-3.0e38, full, dtype=pl.DT_FP32)
    for j in pl.range({nreg}):
        m = vf.update_mask({cols} - j * 64, dtype=pl.DT_FP32)
        xv = vf.load_align(x_t, base + j * 64)
        mx = vf.max(mx, xv, m, mode=pl.MergeMode.MERGING)
    row_max = vf.reduce_max(mx, full)
    bmax = vf.full(row_max, full)
    acc = vf.full(0.0, full, dtype=pl.DT_FP32)
    for j in pl.range({nreg}):
        m = vf.update_mask({cols} - j * 64, dtype=pl.DT_FP32)
        xv = vf.load_align(x_t, base + j * 64)
{exp}
        acc = vf.add(acc, e, full)
        vf.store_align(y_t, e, m, base + j * 64)
    row_sum = vf.reduce_sum(acc, full)
    bsum = vf.full(row_sum, full)
    vf.mem_bar(pl.MemBarMode.VST_VLD)
{normalize}
"""
EXP_TWO_OPS = """\
        d = vf.sub(xv, bmax, m)
        e = vf.exp(d, m)"""
EXP_FUSED = """\
        e = vf.exp_sub(xv, bmax, m)"""
NORMALIZE_FP32 = """\
    for j in pl.range({nreg}):
        m = vf.update_mask({cols} - j * 64, dtype=pl.DT_FP32)
        e = vf.load_align(y_t, base + j * 64)
        p = vf.div(e, bsum, m)
        vf.store_align(o_t, p, m, base + j * 64)"""
NORMALIZE_FP16 = """\
    for j in pl.range(0, {nreg}, 2):
        m0 = vf.update_mask({cols} - j * 64, dtype=pl.DT_FP32)
        m1 = vf.update_mask({cols} - j * 64 - 64, dtype=pl.DT_FP32)
        h = vf.update_mask({cols} - j * 64, dtype=pl.DT_FP16)
        e0 = vf.load_align(y_t, base + j * 64)
        e1 = vf.load_align(y_t, base + j * 64 + 64)
        p0 = vf.div(e0, bsum, m0)
        p1 = vf.div(e1, bsum, m1)
        q0 = vf.astype(p0, full, dtype=pl.DT_FP16)
        q1 = vf.astype(p1, full, dtype=pl.DT_FP16)
        q, _ = vf.de_interleave(q0, q1)
        vf.store_align(o_t, q, h, base + j * 64)"""


@pytest.mark.parametrize("form", ["sub_exp_fp32", "exp_sub_fp16"])
def test_softmax_rows_in_a_vector_function(kdir, form):
    """The flash-attention softmax row by row inside one vector function: a loop over the
    tile's rows, each walked in registers with update_mask tails; max (MERGING) →
    reduce_max → full → sub + exp (or exp_sub) → sum → reduce_sum → full → div, the
    probabilities stored as FP32, or cast to FP16 (even lanes) and paired by de_interleave."""
    rows, cols = SOFTMAX_ROWS, SOFTMAX_COLS
    nreg = -(-cols // 64)
    fp16 = form.endswith("fp16")
    nreg_pairs = nreg + nreg % 2
    body = SOFTMAX.format(rows=rows, cols=cols, nreg=nreg,
                          exp=EXP_FUSED if fp16 else EXP_TWO_OPS,
                          normalize=(NORMALIZE_FP16 if fp16 else NORMALIZE_FP32).format(
                              nreg=nreg_pairs if fp16 else nreg, cols=cols))
    k = kernel(kdir, body, "DT_FP32", "DT_FP16" if fp16 else "DT_FP32", cols=cols, rows=rows)
    x = torch.randn(rows, cols, generator=torch.Generator().manual_seed(30)) * 4
    out = launch(k, x, torch.zeros(rows, cols),
                 torch.zeros(rows, cols, dtype=torch.float16 if fp16 else torch.float32))
    want = torch.softmax(x, dim=-1)
    if fp16:
        torch.testing.assert_close(out.float(), want, rtol=1e-3, atol=1e-4)
    else:
        torch.testing.assert_close(out, want, rtol=2e-6, atol=1e-8)


# ---------------------------------------------------------------- special values, the rest


@pytest.mark.parametrize("dt", FLOATS)
def test_special_values_of_the_two_operand_ops(kdir, dt):
    """x / 0 = ±inf, 0 / 0 = NaN, inf - inf = NaN; max(-0, +0) = +0 and min(-0, +0) = -0 (the
    max / min pages); NaN in add and mul propagates; prelu / leaky_relu keep x ≥ 0 (and -0)."""
    n = lanes(dt)
    ops = ["div", "sub", "max", "min", "add", "mul", "prelu"]
    lines = [f"every = vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=pl.{dt})",
             "a = vf.load_align(x_t, 0)", "b = vf.load_align(y_t, 0)"]
    for i, op in enumerate(ops):
        lines += [f"r = vf.{op}(a, b, every)", f"vf.store_align(o_t, r, every, {i * n})"]
    lines += ["r = vf.leaky_relu(a, 0.25, every)", f"vf.store_align(o_t, r, every, {len(ops) * n})"]
    k = kernel(kdir, "\n".join(lines), dt, out_cols=(len(ops) + 1) * n)
    inf, nan = float("inf"), float("nan")
    pairs = [(1.0, 0.0), (-1.0, 0.0), (0.0, 0.0), (inf, inf), (-0.0, 0.0), (0.0, -0.0),
             (nan, 1.0), (1.0, nan), (-2.0, 3.0), (2.0, -3.0), (-0.0, -0.0)]
    x, y = rand(dt, n, 31), rand(dt, n, 32)
    x[0, :len(pairs)] = torch.tensor([p[0] for p in pairs])
    y[0, :len(pairs)] = torch.tensor([p[1] for p in pairs])
    got = slots(launch(k, x, y, torch.zeros(1, (len(ops) + 1) * n, dtype=DT[dt])), n)
    xf, yf = x.float().flatten(), y.float().flatten()

    def signed_max(a, b, pick_max):
        """IEEE max / min with -0 < +0 (NaN propagates)."""
        both_zero = (a == 0) & (b == 0)
        zeros = torch.where(torch.signbit(a) & torch.signbit(b), -0.0, 0.0) if pick_max else \
            torch.where(torch.signbit(a) | torch.signbit(b), -0.0, 0.0)
        plain = torch.maximum(a, b) if pick_max else torch.minimum(a, b)
        return torch.where(both_zero, zeros, plain)
    refs = {"div": xf / yf, "sub": xf - yf, "max": signed_max(xf, yf, True),
            "min": signed_max(xf, yf, False), "add": xf + yf, "mul": xf * yf,
            "prelu": torch.where(xf < 0, xf * yf, xf)}
    for i, op in enumerate(ops):
        same(got[i], refs[op].to(DT[dt]), op)
    same(got[len(ops)], torch.where(xf < 0, xf * 0.25, xf).to(DT[dt]), "leaky_relu")


@pytest.mark.parametrize("dt", ["DT_INT16", "DT_FP16", "DT_INT32", "DT_FP32"])
def test_datablock_and_pair_reductions_and_truncate(kdir, dt):
    """reduce_sum / reduce_max / reduce_min with datablock=True (one 32-byte block each, the
    eight results in the lowest lanes, as pto-isa's vcgmax users store them), pair_reduce_sum
    (lane i = src[2i] + src[2i+1], the upper half zero) and, for floats, truncate."""
    n = lanes(dt)
    ops = ["vf.reduce_sum(a, every, datablock=True)",
           "vf.reduce_max(a, every, datablock=True)",
           "vf.reduce_min(a, every, datablock=True)", "vf.pair_reduce_sum(a, every)"]
    if DT[dt].is_floating_point:
        ops.append("vf.truncate(a, every)")
    lines = [f"every = vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=pl.{dt})",
             "a = vf.load_align(x_t, 0)"]
    for i, call in enumerate(ops):
        lines += [f"r = {call}", f"vf.store_align(o_t, r, every, {i * n})"]
    k = kernel(kdir, "\n".join(lines), dt, out_cols=len(ops) * n)
    x = rand(dt, n, 33, -20, 20) if DT[dt].is_floating_point else \
        wrap(rand("DT_INT32", n, 33).long() % 1000 - 500, dt)
    got = slots(launch(k, x, x, torch.zeros(1, len(ops) * n, dtype=DT[dt])), n)
    v = value(x, dt).flatten()
    blocks = v.reshape(8, -1)
    for i, red in enumerate([blocks.sum(1), blocks.max(1).values, blocks.min(1).values]):
        want = torch.zeros(n, dtype=v.dtype)
        want[:8] = red
        same(got[i], rounded(want, dt), ["sum", "max", "min"][i])
    pairs = torch.zeros(n, dtype=v.dtype)
    pairs[:n // 2] = v[0::2] + v[1::2]
    same(got[3], rounded(pairs, dt), "pair_reduce_sum")
    if DT[dt].is_floating_point:
        same(got[4], torch.trunc(x.flatten()), "truncate")


@pytest.mark.parametrize("dt", ["DT_INT8", "DT_FP16", "DT_FP32", "DT_UINT32"])
def test_interleave_de_interleave_unsqueeze_squeeze(kdir, dt):
    """interleave (a0 b0 a1 b1 … of the lower halves, then of the upper halves), de_interleave
    (even lanes of a‖b, odd lanes), squeeze (active lanes packed to the front, the rest zero)
    and unsqueeze (lane i counts the active lanes before i, the docs' figure), on integers."""
    n = lanes(dt)
    lines = [f"every = vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=pl.{dt})",
             "a = vf.load_align(x_t, 0)", "b = vf.load_align(y_t, 0)",
             "lo, hi = vf.interleave(a, b)", "vf.store_align(o_t, lo, every, 0)",
             f"vf.store_align(o_t, hi, every, {n})", "ev, od = vf.de_interleave(a, b)",
             f"vf.store_align(o_t, ev, every, {2 * n})", f"vf.store_align(o_t, od, every, {3 * n})",
             "pos = vf.gt(a, b, every)", "s = vf.squeeze(a, pos)",
             f"vf.store_align(o_t, s, every, {4 * n})"]
    slots_n = 5
    if not DT[dt].is_floating_point:
        lines += [f"u = vf.unsqueeze(pos, dtype=pl.{dt})",
                  f"vf.store_align(o_t, u, every, {5 * n})"]
        slots_n = 6
    k = kernel(kdir, "\n".join(lines), dt, out_cols=slots_n * n)
    x, y = rand(dt, n, 34), rand(dt, n, 35)
    got = slots(launch(k, x, y, torch.zeros(1, slots_n * n, dtype=DT[dt])), n)
    xf, yf = x.flatten(), y.flatten()
    both = torch.stack([xf, yf], 1).reshape(-1)
    same(got[0], both[:n], "interleave lo")
    same(got[1], both[n:], "interleave hi")
    cat = torch.cat([xf, yf])
    same(got[2], cat[0::2], "de_interleave even")
    same(got[3], cat[1::2], "de_interleave odd")
    pos = value(x, dt) > value(y, dt)
    pos = pos.flatten()
    packed = torch.zeros_like(xf)
    packed[:int(pos.sum())] = xf[pos]
    same(got[4], packed, "squeeze")
    if slots_n == 6:
        before = torch.cumsum(pos.long(), 0) - pos.long()
        same(got[5], wrap(before, dt), "unsqueeze")


# ---------------------------------------------------------------- refusals

REFUSED_PRELUDE = """from pypto_pro.language import vf


@pl.vector_function
def body(x_t, o_t):
    every = vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=pl.DT_FP32)
    a = vf.load_align(x_t, 0)
    {line}
    vf.store_align(o_t, a, every)
"""
REFUSED_KERNEL = """
t = pl.TileType(shape=[1, 64], dtype=pl.DT_FP32, target_memory=pl.MemorySpace.Vec)
xt = pl.make_tile(t, addr=0)
ot = pl.make_tile(t, addr=0x400)
with pl.section_vector():
    pl.load(xt, x, [0, 0])
    body(xt, ot)
    pl.store(out, ot, [0, 0])
"""
REFUSED = [  # (the line, the error class, the real builder's words)
    ("r = vf.astype(a, every)", ParserTypeError,
     "vf.astype requires explicit dtype kwarg because dst type differs from src"),
    ("r = vf.mull(a, a, every)", ParserSyntaxError,
     "vf.mull produces 2 outputs, use tuple unpacking"),
    ("r = vf.sub(a, a, every, mode=pl.MergeMode.MERGING)", NotSupported,
     "vf.sub only supports ZEROING mode on current device"),
    ("r = vf.exp(a, every, pl.MergeMode.MERGING)", NotSupported,
     "vf.exp only supports ZEROING mode on current device"),
    ("r = vf.astype(a, every, dtype=pl.DT_FP16, mode=pl.MergeMode.MERGING)", NotSupported,
     "vf.astype only supports ZEROING mode on current device"),
    ("r = vf.reduce_max(a, every, merge_mode=pl.MergeMode.MERGING)", NotSupported,
     "vf.reduce_max only supports ZEROING mode on current device, but got MERGING"),
    ("r = vf.exp_sub(a, a, every, dtype=pl.DT_FP16)", ParserTypeError,
     "vf.exp_sub writes an FP32 register"),
    ("r = vf.xor(a, a, every, mode=pl.MergeMode.MERGING)", NotSupported,
     "vf.xor only supports ZEROING mode on current device"),
    ("b = vf.bit_cast(a, dtype=pl.DT_INT32)\n    r = vf.shift_right(b, 1, every, "
     "dtype=pl.DT_UINT32)", ParserTypeError,
     "vf.shift_right requires src and dst to have the same type, got dst=UINT32 src=INT32"),
    ("b = vf.bit_cast(a, dtype=pl.DT_INT8)\n    r = vf.reduce_sum(b, every)", ParserTypeError,
     "vf.reduce_sum src only supports b16/b32/b64 INT/UINT/FP16/FP32, got INT8"),
    ("b = vf.bit_cast(a, dtype=pl.DT_BF16)\n    r = vf.reduce_max(b, every)", ParserTypeError,
     "vf.reduce_max src only supports b16/b32/b64 INT/UINT/FP16/FP32, got BF16"),
    ("b = vf.bit_cast(a, dtype=pl.DT_UINT8)\n    r = vf.mul(b, b, every)", ParserTypeError,
     "vf.mul src only supports supported types, got UINT8"),
    ("vf.store_align(o_t, vf.add(a, a, every), every)", Exception,
     "the result of vf.add must be assigned to a variable"),
]


@pytest.mark.parametrize("line,error,words", REFUSED, ids=[r[0].split("(")[0].split("= ")[-1]
                                                           + str(i) for i, r in
                                                           enumerate(REFUSED)])
def test_refused_forms_raise_a_typed_error_at_the_call(tmp_path, line, error, words):
    """What the real builder refuses (its parser, or its backend's CHECK after parsing) is a
    typed error here at the call's line, in its words; MERGING is emitted for add / max / min /
    full / move / select only (the backend's VFZeroingOnly)."""
    with pytest.raises(error) as info:
        compile_source(tmp_path, "refused", "x: pl.Tensor[[1, 64], pl.DT_FP32], "
                       "out: pl.Tensor[[1, 64], pl.DT_FP32]", REFUSED_KERNEL,
                       prelude=REFUSED_PRELUDE.format(line=line))
    assert words in info.value.message
    source = (tmp_path / "refused.py").read_text().splitlines()
    assert info.value.span is not None
    assert line.split("\n")[-1].strip() in source[info.value.span.line - 1]


# ---------------------------------------------------------------- gather and scatter

GATHERS = [("DT_FP32", "DT_UINT32"), ("DT_FP16", "DT_UINT16"), ("DT_INT16", "DT_UINT16"),
           ("DT_INT32", "DT_UINT32")]


@pytest.mark.parametrize("dt,idx", GATHERS, ids=[g[0][3:] for g in GATHERS])
def test_gather_tile_and_register_forms_and_scatter(kdir, dt, idx):
    """gather(tile, index, preg): element index[i] of the tile into lane i (inactive lanes
    zero); gather(reg, index): lane index[i] mod the lane count; scatter(tile, src, index,
    preg): lane i to element index[i] (a permutation: unique indices, inactive lanes not
    written). The indices travel in y as bits, loaded with dtype=."""
    n = lanes(dt)
    tail = n - 7
    body = f"""
        every = vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=pl.{dt})
        part = vf.update_mask({tail}, dtype=pl.{dt})
        a = vf.load_align(x_t, 0)
        i = vf.load_align(y_t, 0, dtype=pl.{idx})
        g = vf.gather(x_t, i, part)
        vf.store_align(o_t, g, every, 0)
        h = vf.gather(a, i)
        vf.store_align(o_t, h, every, {n})
        vf.store_align(o_t, a, every, {2 * n})
        j = vf.load_align(y_t, {n}, dtype=pl.{idx})
        vf.mem_bar(mode=pl.MemBarMode.VST_VST)
        vf.scatter(o_t + {2 * n}, h, j, part)
    """
    k = kernel(kdir, body, dt, cols=2 * n, out_cols=3 * n)
    x = rand(dt, 2 * n, 36)
    g = torch.Generator().manual_seed(37)
    perm = torch.randperm(n, generator=g)
    index = perm.clone()
    index[:8] = index[:8] + n  # tile gathers read past the first register (the tile has 2n)
    ib = torch.int16 if BITS[dt] == 16 else torch.int32
    y = torch.zeros(1, 2 * n, dtype=ib)
    y[0, :n] = index.to(ib)
    y[0, n:] = perm.to(ib)  # the scatter's indices: a permutation of the register
    y = y.view(DT[dt])
    got = slots(launch(k, x, y, torch.zeros(1, 3 * n, dtype=DT[dt])), n)
    xf = x.flatten()
    on = torch.arange(n) < tail
    same(got[0], torch.where(on, xf[index], torch.zeros_like(xf[:n])), "gather tile")
    regs = xf[index % n]
    same(got[1], regs, "gather reg")
    expect = xf[:n].clone()
    expect[perm[on]] = regs[on]
    same(got[2], expect, "scatter")


# ---------------------------------------------------------------- cursors and unaligned copies


@pytest.mark.parametrize("dt", ["DT_INT8", "DT_FP16", "DT_FP32"])
def test_unaligned_copy_and_cursor_loops(kdir, dt):
    """The docs' loops: an unaligned copy (load_unalign_pre once, load_unalign / store_unalign
    with post_update each iteration, store_unalign_post once) from element 3 to element 5;
    a copy by AddrReg (create_addr_reg(i, n)); load_align / store_align with post_update
    cursors walking a tile by a stride."""
    n = lanes(dt)
    reps = 3
    body = f"""
        every = vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=pl.{dt})
        z = vf.full(0, every, dtype=pl.{dt})
        for i in pl.range(12):
            vf.store_align(o_t, z, every, i * {n})  # the output tile starts undefined
        vf.mem_bar(mode=pl.MemBarMode.VST_VST)
        ureg = vf.load_unalign_init()
        vf.load_unalign_pre(ureg, x_t + 3)
        sreg = vf.unalign_reg_for_store()
        for i in pl.range({reps}):
            r = vf.load_unalign(ureg, x_t + 3, {n}, post_update=True)
            vf.store_unalign(o_t + 5, r, sreg, {n}, post_update=True)
        vf.store_unalign_post(o_t + 5, sreg, 0, post_update=True)
        for i in pl.range({reps}):
            at = vf.create_addr_reg(i, {n}, dtype=pl.{dt})
            r = vf.load_align(x_t, at)
            vf.store_align(o_t + {4 * n}, r, every, at)
        for i in pl.range({reps}):
            r = vf.load_align(y_t, {n}, post_update=True)
            vf.store_align(o_t + {8 * n}, r, every, {n}, post_update=True)
    """
    k = kernel(kdir, body, dt, cols=4 * n, out_cols=12 * n)
    x, y = rand(dt, 4 * n, 38), rand(dt, 4 * n, 39)
    out = torch.zeros(1, 12 * n, dtype=DT[dt])
    got = launch(k, x, y, out).flatten()
    xf, yf = x.flatten(), y.flatten()
    want = torch.zeros(12 * n, dtype=DT[dt])
    want[5:5 + reps * n] = xf[3:3 + reps * n]
    want[4 * n:4 * n + reps * n] = xf[:reps * n]
    want[8 * n:8 * n + reps * n] = yf[:reps * n]
    same(got, want, "cursor loops")


def test_documented_keywords_that_change_nothing_run_on_both_backends(kdir):
    """The pages' optional keywords: `precision` on sqrt / exp / ln (the real backend ignores
    it for vexp / vln; vsqrt's high-precision mode is the correctly rounded root we compute),
    select's `mode` (vsel has none), `cmp_dtype` of the register's own width, full without a
    preg (every lane), move without a preg (a copy). One kernel: natively as well."""
    body = """
        every = vf.create_mask(pattern=pl.MaskPattern.ALL, dtype=pl.DT_FP32)
        a = vf.load_align(x_t, 0)
        r = vf.sqrt(a, every, precision=True)
        vf.store_align(o_t, r, every, 0)
        r = vf.exp(a, every, precision="HIGH")
        vf.store_align(o_t, r, every, 64)
        r = vf.ln(a, every, precision="HIGH")
        vf.store_align(o_t, r, every, 128)
        m = vf.lt(a, 2.0, every, cmp_dtype=pl.DT_FP32)
        r = vf.select(a, a, m, mode=pl.MergeMode.ZEROING)
        vf.store_align(o_t, r, every, 192)
        r = vf.full(1.5, dtype=pl.DT_FP32)
        vf.store_align(o_t, r, every, 256)
        r = vf.move(a)
        vf.store_align(o_t, r, every, 320)
    """
    k = kernel(kdir, body, "DT_FP32", out_cols=384)
    x = torch.rand(1, 64, generator=torch.Generator().manual_seed(40)) * 4 + 0.01
    got = slots(launch(k, x, x, torch.zeros(1, 384)), 64)
    xf = x.flatten()
    same(got[0], torch.sqrt(xf), "sqrt precision")
    torch.testing.assert_close(got[1], torch.exp(xf), rtol=2e-6, atol=0)
    torch.testing.assert_close(got[2], torch.log(xf), rtol=2e-6, atol=1e-7)
    same(got[3], xf, "select")
    same(got[4], torch.full((64,), 1.5), "full without preg")
    same(got[5], xf, "move without preg")
