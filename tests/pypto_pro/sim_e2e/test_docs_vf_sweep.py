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
import itertools
import math
import textwrap
from pathlib import Path

import pytest
import torch
from dual_backend import first_case_natively

import pypto_pro.language as pl  # noqa: F401  (the kernels' own import)

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
