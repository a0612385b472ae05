"""A sweep of the tile-level vector ops as the PyPTO Pro API docs describe them (issue 21):
`docs/zh/pypto_pro/api/SIMD-API/operation/memory_vector_computation/` (element-wise, math,
fused, composite, comparison + selection, type conversion) written as a user of the real PyPTO
Pro writes them.

Each case is a small kernel generated from text (so diagnostics name real lines): Vec tiles
loaded from GM, a few ops of one page run on them, results stored back. The cases cover every
dtype a page lists, the tile-scalar forms, `dim=` modes, tails (a static valid shape smaller
than the tile: only the valid window is computed and stored), in-place forms (dst is a source)
and the special values pto-isa defines (inf, nan, -0.0, integer wrap-around). The reference is
torch, written from the docs and from pto-isa's a5 implementation of each instruction (float
ops on FP16 / BF16 computed in fp32 and rounded once, integers wrapping two's-complement, the
scalar of a tile-scalar op first converted to the tile dtype). The first case of each test also
runs natively, bit for bit (`first_case_natively`).

What the real toolchain refuses (pto-isa's static_asserts on an op's dtype) is refused here at
compile time with a typed NotSupported at the call's line.
"""
from __future__ import annotations

import hashlib
import importlib.util
import math
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from dual_backend import first_case_natively
from kernel_source import assert_refused

import pypto_pro.language as pl  # noqa: F401  (the generated kernels import it)
from pypto_pro.errors import NotSupported, OutOfRange

# name -> (pl dtype name, torch storage dtype, unsigned bit width or 0)
DT = {
    "int8": ("DT_INT8", torch.int8, 0), "uint8": ("DT_UINT8", torch.uint8, 0),
    "int16": ("DT_INT16", torch.int16, 0), "uint16": ("DT_UINT16", torch.int16, 16),
    "int32": ("DT_INT32", torch.int32, 0), "uint32": ("DT_UINT32", torch.int32, 32),
    "int64": ("DT_INT64", torch.int64, 0), "uint64": ("DT_UINT64", torch.uint64, 64),
    "fp16": ("DT_FP16", torch.float16, 0), "bf16": ("DT_BF16", torch.bfloat16, 0),
    "fp32": ("DT_FP32", torch.float32, 0),
}
FLOATS = ["fp16", "bf16", "fp32"]
INTS = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]
ROWS = 4


def cols_of(name: str) -> int:
    """Two 32-byte blocks a row."""
    return 64 // DT[name][1].itemsize


# ---------------------------------------------------------------- kernels from text


@dataclass(frozen=True)
class T:
    """One Vec tile of the kernel: `role` in (in: loaded, out: stored, io: both, tmp)."""
    name: str
    dtype: str
    role: str = "in"
    shape: tuple[int, int] | None = None  # default [ROWS, cols_of(dtype)]
    valid: tuple[int, int] | None = None
    extra: str = ""  # more TileType keywords, e.g. "layout=pl.DN"

    def dims(self) -> tuple[int, int]:
        return self.shape or (ROWS, cols_of(self.dtype))


# content-addressed kernel files at a fixed place: the same kernel keeps its path (and its
# spans) from run to run, so its native build is found in the build cache when warm
_DIR = Path(tempfile.gettempdir()) / "pypto_vector_sweep"
_KERNELS: dict[str, object] = {}


def kernel(tiles: list[T], body: str, scalars: str = "") -> object:
    """`@pl.jit(auto_mutex=True)` kernel: each in / io tile loaded from its GM tensor
    (`g_<name>`, the tile's shape), `body` (one op a line, tiles by name), each out / io tile
    stored back; `scalars` are extra parameters (`s: pl.Scalar[pl.DT_FP32]`)."""
    params, decl, loads, stores = [], [], [], []
    addr = 0
    for i, t in enumerate(tiles):
        r, c = t.dims()
        dt = f"pl.{DT[t.dtype][0]}"
        if t.role != "tmp":
            params.append(f"g_{t.name}: pl.Tensor[[{r}, {c}], {dt}]")
        kw = f", valid_shape={list(t.valid)}" if t.valid else ""
        kw += f", {t.extra}" if t.extra else ""
        decl.append(f"tt_{t.name} = pl.TileType(shape=[{r}, {c}], dtype={dt}, "
                    f"target_memory=pl.MemorySpace.Vec{kw})")
        decl.append(f"grp_{t.name} = pl.make_tile_group(type=tt_{t.name}, addrs={addr:#x}, "
                    f"mutex_ids=[{i}])")
        addr += -(-r * c * DT[t.dtype][1].itemsize // 256) * 256
        if t.role in ("in", "io"):
            loads.append(f"pl.load({t.name}, g_{t.name}, [0, 0])")
        if t.role in ("out", "io"):
            stores.append(f"pl.store(g_{t.name}, {t.name}, [0, 0])")
    current = [f"{t.name} = grp_{t.name}.current()" for t in tiles]
    inner = "\n".join("        " + line for line in
                      current + loads + [ln.strip() for ln in body.strip().splitlines()]
                      + stores)
    src = ("import pypto_pro.language as pl\n\n\n@pl.jit(auto_mutex=True)\n"
           f"def k({', '.join(params + ([scalars] if scalars else []))}):\n"
           + "\n".join("    " + d for d in decl) + "\n    with pl.section_vector():\n"
           + inner + "\n")
    key = hashlib.sha1(src.encode()).hexdigest()[:16]
    if key not in _KERNELS:
        path = _DIR / f"k_{key}.py"
        if not path.exists() or path.read_text() != src:
            _DIR.mkdir(exist_ok=True)
            part = _DIR / f".k_{key}.{os.getpid()}"
            part.write_text(src)
            part.replace(path)  # atomic: a parallel run never reads half a file
        spec = importlib.util.spec_from_file_location(f"k_{key}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _KERNELS[key] = module.k
    return _KERNELS[key]


def launch(tiles: list[T], body: str, inputs: dict[str, torch.Tensor],
           scalars: str = "", scalar_values: tuple = ()) -> dict[str, torch.Tensor]:
    """Run the kernel (simulator; the first case of a test natively too) on `inputs` (out tiles
    start as a fill pattern) and return every stored tensor by tile name."""
    k = kernel(tiles, body, scalars)
    gm = [t for t in tiles if t.role != "tmp"]

    def run() -> torch.Tensor:
        args = []
        for t in gm:
            if t.name in inputs:
                args.append(inputs[t.name].clone())
            else:
                args.append(fill(t))
        k(*args, *scalar_values)
        return torch.cat([a.contiguous().view(torch.uint8).flatten()
                          for a, t in zip(args, gm, strict=True) if t.role in ("out", "io")])

    raw = first_case_natively(run)
    out, at = {}, 0
    for t in gm:
        if t.role not in ("out", "io"):
            continue
        storage = DT[t.dtype][1]
        n = math.prod(t.dims()) * storage.itemsize
        out[t.name] = raw[at:at + n].view(storage).reshape(t.dims())
        at += n
    return out


def fill(t: T) -> torch.Tensor:
    """What an output's GM holds before the kernel (7s): untouched outside the valid window."""
    return torch.full(t.dims(), 7, dtype=torch.int64).to(DT[t.dtype][1])


# ---------------------------------------------------------------- values and references


def values(name: str, shape, seed: int, *, positive: bool = False, small: bool = False
           ) -> torch.Tensor:
    """Values of dtype `name` (storage dtype): floats exact in the dtype (k/8), ints over the
    type's range (`small`: |x| < 50, so products do not overflow into the test's way)."""
    g = torch.Generator().manual_seed(seed)
    _, storage, ubits = DT[name]
    if storage.is_floating_point:
        v = torch.randint(1 if positive else -64, 64, shape, generator=g).float() / 8
        return v.to(storage)
    if small:
        lo = 1 if positive else (0 if ubits or name == "uint8" else -50)
        return torch.randint(lo, 50, shape, generator=g).to(storage)
    bits = storage.itemsize * 8
    lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    if name == "uint8":
        lo, hi = 0, 255
    if positive:
        lo = 1
    if ubits == 64:  # non-negative: torch computes on uint64 as int64 bits
        lo = max(lo, 0)
    v = torch.randint(max(lo, -2 ** 62), min(hi, 2 ** 62), shape, generator=g, dtype=torch.int64)
    return v.view(storage) if ubits == 64 else v.to(storage)


def compute(name: str, x: torch.Tensor) -> torch.Tensor:
    """Storage values as compute values: floats in float32, ints in int64 (unsigned as such)."""
    ubits = DT[name][2]
    if x.dtype.is_floating_point:
        return x.float()
    v = x.view(torch.int64) if ubits == 64 else x.long()
    if ubits and ubits < 64:
        v = v & ((1 << ubits) - 1)
    return v


def stored(name: str, v: torch.Tensor) -> torch.Tensor:
    """Compute values rounded (floats, once, to nearest even) or wrapped (ints) to storage."""
    storage = DT[name][1]
    if storage.is_floating_point:
        return v.float().to(storage)
    return v.long().view(storage) if DT[name][2] == 64 else v.long().to(storage)


def in_valid(want: torch.Tensor, t: T, block: torch.Tensor) -> torch.Tensor:
    """`want` (the fill) with `block` written over the tile's valid window."""
    r, c = t.valid or t.dims()
    want = want.clone()
    want[:r, :c] = block[:r, :c]
    return want


def expect(got: torch.Tensor, want: torch.Tensor, what: str = "") -> None:
    """Bit for bit; float NaNs compare as NaNs (pto-isa does not fix a NaN's payload)."""
    if got.dtype.is_floating_point:
        nan = torch.isnan(want)
        assert torch.equal(torch.isnan(got), nan), f"{what}: NaN positions differ"
        g, w = got.clone(), want.clone()
        g[nan], w[nan] = 0, 0
        bits = {2: torch.int16, 4: torch.int32}[g.element_size()]
        bad = g.view(bits) != w.view(bits)
        assert not bad.any(), (f"{what}: {int(bad.sum())} of {g.numel()} differ, e.g. got "
                               f"{g[bad][:4].tolist()} want {w[bad][:4].tolist()}")
    else:
        if got.dtype is torch.uint64:
            got, want = got.view(torch.int64), want.view(torch.int64)
        bad = got != want
        assert not bad.any(), (f"{what}: {int(bad.sum())} of {got.numel()} differ, e.g. got "
                               f"{got[bad][:4].tolist()} want {want[bad][:4].tolist()}")


def nonzero(name: str, x: torch.Tensor) -> torch.Tensor:
    """`x` with zeros replaced by 1 (the docs: a divisor must not be 0)."""
    return torch.where(x == 0, torch.ones_like(x), x)


# ---------------------------------------------------------------- element-wise binary ops


def _shift_amounts(name: str, shape, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    bits = 8 * (1 if name in ("int8", "uint8") else DT[name][1].itemsize)
    v = torch.randint(0, bits, shape, generator=g)
    return v.view(torch.uint64) if DT[name][2] == 64 else v.to(DT[name][1])


def _trunc_div(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a / b if a.is_floating_point() else torch.div(a, b, rounding_mode="trunc")


#: op -> (the dtypes its page lists, reference on compute values, scalar of the tile-scalar form)
BINARY = {
    "add": (INTS + FLOATS, torch.add, 3),
    "sub": (INTS + FLOATS, torch.sub, 3),
    "mul": (["int16", "uint16", "int32", "uint32", "int64", "uint64"] + FLOATS, torch.mul, 3),
    "div": (["int16", "uint16", "int32", "uint32", "int64", "uint64", "fp16", "fp32"],
            _trunc_div, 3),
    "maximum": (INTS + FLOATS, torch.maximum, 3),
    "minimum": (INTS + FLOATS, torch.minimum, 3),
    "and_": (["int8", "uint8", "int16", "uint16", "int32", "uint32"], torch.bitwise_and, 0x5A),
    "shl": (INTS, torch.bitwise_left_shift, 2),
    "shr": (INTS, torch.bitwise_right_shift, 2),
}
_BINARY_CASES = [(op, dt) for op, (dts, _, _) in BINARY.items() for dt in dts]


def _binary_operands(op: str, dt: str, shape) -> tuple[torch.Tensor, torch.Tensor]:
    a = values(dt, shape, 1)
    if op in ("shl", "shr"):
        return a, _shift_amounts(dt, shape, 2)
    b = values(dt, shape, 2, positive=op == "div" and DT[dt][2] == 64)
    return a, nonzero(dt, b) if op == "div" and DT[dt][2] != 64 else b


def _scalar_text(dt: str, value: int) -> str:
    return f"{value + 0.25}" if dt in FLOATS else str(value)


@pytest.mark.parametrize("op,dt", _BINARY_CASES, ids=[f"{o}-{d}" for o, d in _BINARY_CASES])
def test_binary_tile_tile_scalar_inplace_and_tail(op, dt):
    """One launch: tile-tile, tile-scalar, in place (out is lhs) and a tail window."""
    dts, fn, scalar = BINARY[op]
    r, c = ROWS, cols_of(dt)
    tail = (3, c - 5)
    tiles = [T("a", dt), T("b", dt), T("o", dt, "out"), T("os", dt, "out"), T("x", dt, "io"),
             T("at", dt, valid=tail), T("bt", dt, valid=tail), T("ot", dt, "out", valid=tail)]
    s = _scalar_text(dt, scalar)
    body = f"""
        pl.{op}(o, a, b)
        pl.{op}(os, a, {s})
        pl.{op}(x, x, b)
        pl.{op}(ot, at, bt)
    """
    a, b = _binary_operands(op, dt, (r, c))
    got = launch(tiles, body, {"a": a, "b": b, "x": a, "at": a, "bt": b})
    ca, cb = compute(dt, a), compute(dt, b)
    sv = compute(dt, torch.tensor([float(s)]).to(DT[dt][1])) if dt in FLOATS else \
        torch.tensor(scalar)
    full = stored(dt, fn(ca, cb))
    expect(got["o"], full, "tile-tile")
    expect(got["os"], stored(dt, fn(ca, sv)), "tile-scalar")
    expect(got["x"], full, "in place")
    expect(got["ot"], in_valid(fill(tiles[-1]), tiles[-1], full), "tail")


# ---------------------------------------------------------------- special float values

SPECIAL = [0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1.5, -2.0, 65504.0]


def _specials(dt: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Every pair of SPECIAL values, as two [ROWS, cols] tiles (row-major pairs, then 1s)."""
    c = cols_of(dt)
    pairs = [(x, y) for x in SPECIAL for y in SPECIAL]
    a = torch.ones(ROWS * c)
    b = torch.ones(ROWS * c)
    for i, (x, y) in enumerate(pairs[:ROWS * c]):
        a[i], b[i] = x, y
    storage = DT[dt][1]
    return a.reshape(ROWS, c).to(storage), b.reshape(ROWS, c).to(storage)


@pytest.mark.parametrize("dt", FLOATS)
def test_ieee_specials_through_add_sub_mul_div(dt):
    """inf, nan, -0.0 and an fp16 overflow (65504 + 65504 = inf) give IEEE results: the
    hardware's vadd / vsub / vmul / vdiv are IEEE operations rounded to nearest even."""
    ops = ["add", "sub", "mul"] + (["div"] if dt != "bf16" else [])
    tiles = [T("a", dt), T("b", dt)] + [T(f"o_{op}", dt, "out") for op in ops]
    body = "\n".join(f"pl.{op}(o_{op}, a, b)" for op in ops)
    a, b = _specials(dt)
    got = launch(tiles, body, {"a": a, "b": b})
    ca, cb = compute(dt, a), compute(dt, b)
    for op in ops:
        fn = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div}[op]
        expect(got[f"o_{op}"], stored(dt, fn(ca, cb)), op)


# ---------------------------------------------------------------- element-wise unary ops

#: op -> (the dtypes its page lists, reference on compute values, input domain)
UNARY = {
    "abs": (["int8", "int16", "int32", "fp16", "fp32"], torch.abs, "any"),
    "neg": (["int16", "int32", "int64", "fp16", "bf16", "fp32"], torch.neg, "any"),
    "relu": (["int32", "fp16", "fp32"], torch.relu, "any"),
    "exp": (["fp16", "fp32"], torch.exp, "any"),
    "log": (["fp16", "fp32"], torch.log, "positive"),
    "sqrt": (["fp16", "fp32"], torch.sqrt, "positive"),
    "rsqrt": (["fp16", "fp32"], torch.rsqrt, "positive"),
    "recip": (["fp16", "fp32"], torch.reciprocal, "nonzero"),
}
_UNARY_CASES = [(op, dt) for op, (dts, _, _) in UNARY.items() for dt in dts]
#: the transcendental ops: the hardware's vexp / vln / vsqrt / vrec are not correctly rounded;
#: the simulator computes them in fp32 (torch) and rounds once, the reference likewise
TRANSCENDENTAL = {"exp", "log", "sqrt", "rsqrt", "recip"}


@pytest.mark.parametrize("op,dt", _UNARY_CASES, ids=[f"{o}-{d}" for o, d in _UNARY_CASES])
def test_unary_plain_inplace_and_tail(op, dt):
    dts, fn, domain = UNARY[op]
    c = cols_of(dt)
    tail = (2, c - 3)
    tiles = [T("a", dt), T("o", dt, "out"), T("x", dt, "io"), T("at", dt, valid=tail),
             T("ot", dt, "out", valid=tail)]
    body = f"""
        pl.{op}(o, a)
        pl.{op}(x, x)
        pl.{op}(ot, at)
    """
    a = values(dt, (ROWS, c), 3, positive=domain == "positive")
    if domain == "nonzero":
        a = nonzero(dt, a)
    if dt in INTS:  # the type's extremes: abs / neg of the minimum wrap to itself
        info = torch.iinfo(DT[dt][1])
        a[0, :4] = torch.tensor([info.min, info.max, 0, -1]).to(a.dtype)
    got = launch(tiles, body, {"a": a, "x": a, "at": a})
    full = stored(dt, fn(compute(dt, a)))
    expect(got["o"], full, op)
    expect(got["x"], full, "in place")
    expect(got["ot"], in_valid(fill(tiles[-1]), tiles[-1], full), "tail")


@pytest.mark.parametrize("dt", ["fp16", "fp32"])
def test_unary_specials(dt):
    """inf / nan / -0.0 / 0 through the unary ops, IEEE: exp(-inf) = 0, log(0) = -inf,
    sqrt(-0.0) = -0.0, recip(0) = inf, relu(nan) ... (nan is left out of relu, abs and neg:
    pto-isa does not define its sign)."""
    c = cols_of(dt)
    vals = torch.tensor([0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1.0, -1.0, 4.0])
    a = torch.ones(ROWS, c)
    a.view(-1)[:len(vals)] = vals
    a = a.to(DT[dt][1])
    ops = ["exp", "log", "sqrt", "rsqrt", "recip"]
    tiles = [T("a", dt)] + [T(f"o_{op}", dt, "out") for op in ops]
    got = launch(tiles, "\n".join(f"pl.{op}(o_{op}, a)" for op in ops), {"a": a})
    for op in ops:
        expect(got[f"o_{op}"], stored(dt, UNARY[op][1](compute(dt, a))), op)


# ---------------------------------------------------------------- comparison and selection

CMPS = {"eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt,
        "ge": torch.ge}
_CMP_CASES = [(dt, "values") for dt in INTS + FLOATS] + [(dt, "specials") for dt in FLOATS]


@pytest.mark.parametrize("dt,data", _CMP_CASES, ids=[f"{d}-{v}" for d, v in _CMP_CASES])
def test_compare_then_select(dt, data):
    """The six comparisons, tile-tile and tile-scalar, each feeding `select(out, mask, a, b,
    tmp)`: out = a where the comparison holds, else b (NaN compares false except `ne`); plus
    the tile-scalar select (`sels`) where its page lists the dtype."""
    c = cols_of(dt)
    mask = (ROWS, max(32, c))
    tiles = [T("a", dt), T("b", dt), T("m", "uint8", "tmp", shape=mask), T("tmp", dt, "tmp")]
    body = []
    for name in CMPS:
        tiles += [T(f"t_{name}", dt, "out"), T(f"s_{name}", dt, "out")]
        body += [f"pl.{name}(m, a, b)", f"pl.select(t_{name}, m, a, b, tmp)",
                 f"pl.{name}(m, a, {_scalar_text(dt, 1)})", f"pl.select(s_{name}, m, a, b, tmp)"]
    sels = dt != "bf16"
    if sels:
        tiles.append(T("sel_s", dt, "out"))
        body += ["pl.gt(m, a, b)", f"pl.select(sel_s, m, a, {_scalar_text(dt, 5)}, tmp)"]
    if data == "specials":
        a, b = _specials(dt)
    else:
        a, b = values(dt, (ROWS, c), 4, small=True), values(dt, (ROWS, c), 5, small=True)
        b[0, :3] = a[0, :3]  # some equal pairs
    got = launch(tiles, "\n".join(body), {"a": a, "b": b})
    ca, cb = compute(dt, a), compute(dt, b)
    s1 = compute(dt, torch.tensor([float(_scalar_text(dt, 1))]).to(DT[dt][1])) if dt in FLOATS \
        else torch.tensor(1)
    for name, fn in CMPS.items():
        expect(got[f"t_{name}"], torch.where(fn(ca, cb), a, b), f"{name} tile")
        expect(got[f"s_{name}"], torch.where(fn(ca, s1), a, b), f"{name} scalar")
    if sels:
        s5 = stored(dt, torch.full_like(ca, float(_scalar_text(dt, 5)) if dt in FLOATS else 5))
        expect(got["sel_s"], torch.where(ca > cb, a, s5), "sels")


# ---------------------------------------------------------------- reductions (dim=0 / dim=1)

_REDUCE = {"sum": torch.sum, "max": torch.amax, "min": torch.amin}
#: (op, dim) -> the source dtypes its page lists
_REDUCE_DTYPES = {
    ("sum", 0): ["int16", "int32", "int64", "fp16", "fp32"],
    ("sum", 1): ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "fp16", "bf16",
                 "fp32"],
    ("max", 0): ["int8", "uint8", "int16", "uint16", "int32", "uint32", "fp16", "fp32"],
    ("max", 1): INTS[:6] + ["int64", "fp16", "bf16", "fp32"],
}
_REDUCE_DTYPES[("min", 0)] = _REDUCE_DTYPES[("max", 0)]
_REDUCE_DTYPES[("min", 1)] = _REDUCE_DTYPES[("max", 1)]
_REDUCE_CASES = [(op, dim, dt) for (op, dim), dts in _REDUCE_DTYPES.items() for dt in dts]


@pytest.mark.parametrize("op,dim,dt", _REDUCE_CASES,
                         ids=[f"{o}-dim{d}-{t}" for o, d, t in _REDUCE_CASES])
def test_reductions_whole_and_tail(op, dim, dt):
    """`sum(out, src, tmp, dim=)` and `maximum` / `minimum(out, src, tmp, dim=)`: dim=0 one
    value per row into a [rows, 1] DN tile, dim=1 one per column into [1, cols]; a tail
    source reduces only its valid window. Integer sums wrap in the dtype; fp sums are checked
    to fp32 accumulation-order rounding."""
    c = cols_of(dt)
    # a [rows, 1] DN column spans whole 32-byte blocks
    r = max(ROWS, 32 // DT[dt][1].itemsize) if dim == 0 else ROWS
    call = {"sum": "sum", "max": "maximum", "min": "minimum"}[op]
    tail = (r - 1, c - 5)
    if dim == 0:
        shapes, extra = ((r, 1), (r, 1)), "layout=pl.DN"
        out_valid = (tail[0], 1)
    else:
        shapes, extra = ((1, c), (1, c)), ""
        out_valid = (1, tail[1])
    tiles = [T("a", dt, shape=(r, c)), T("tmp", dt, "tmp", shape=(r, c)),
             T("o", dt, "out", shape=shapes[0], extra=extra),
             T("at", dt, shape=(r, c), valid=tail),
             T("ot", dt, "out", shape=shapes[1], valid=out_valid, extra=extra)]
    body = f"""
        pl.{call}(o, a, tmp, dim={dim})
        pl.{call}(ot, at, tmp, dim={dim})
    """
    a = values(dt, (r, c), 6, small=op == "sum" and dt in FLOATS)
    got = launch(tiles, body, {"a": a, "at": a})
    axis = 1 if dim == 0 else 0
    ca = compute(dt, a)
    if dt in FLOATS:
        ca = ca.double()
    full = _REDUCE[op](ca, dim=axis, keepdim=True)
    part = _REDUCE[op](ca[:tail[0], :tail[1]], dim=axis, keepdim=True)
    want = stored(dt, full)
    want_t = fill(tiles[-1])
    want_t[:out_valid[0], :out_valid[1]] = stored(dt, part)
    expect(got["o"], want, "whole")
    expect(got["ot"], want_t, "tail")


# ---------------------------------------------------------------- what a5 does not take

#: (call, dtype) pairs the pages leave out and pto-isa's a5 static_asserts refuse
_REFUSED = [("pl.relu(o, a)", "int8", "TRELU: Invalid data type."),
            ("pl.relu(o, a)", "int16", "TRELU: Invalid data type."),
            ("pl.abs(o, a)", "int64", "TABS: Invalid data type."),
            ("pl.exp(o, a)", "bf16", "TUnaryOp: Invalid data type."),
            ("pl.log(o, a)", "int32", "TUnaryOp: Invalid data type."),
            ("pl.sqrt(o, a)", "bf16", "TUnaryOp: Invalid data type."),
            ("pl.rsqrt(o, a)", "bf16", "TRSQRT: Invalid data type."),
            ("pl.recip(o, a)", "int32", "TUnaryOp: Invalid data type."),
            ("pl.neg(o, a)", "int8", "TMULS: Invalid data type"),
            ("pl.mul(o, a, a)", "int8", "Fix: TMUL has invalid data type."),
            ("pl.mul(o, a, 3)", "uint8", "TMULS: Invalid data type"),
            ("pl.div(o, a, a)", "bf16", "Fix: TDIV has invalid data type."),
            ("pl.div(o, a, a)", "int8", "Fix: TDIV has invalid data type."),
            ("pl.div(o, a, 2.0)", "bf16", "TDIVS: Invalid data type"),
            ("pl.and_(o, a, a)", "int64", "Fix: TAND has invalid data type."),
            ("pl.shl(o, a, a)", "fp32", "Fix: TSHL has invalid data type."),
            ("pl.shr(o, a, 1.0)", "fp16", "TSHRS: Invalid data type"),
            ("pl.xor(o, a, a, t)", "int64", "Fix: TXOR has invalid data type."),
            ("pl.add_relu(o, a, a)", "int16", "TRELU: Invalid data type."),
            ("pl.fused_mul_add(o, a, a)", "int8", "Fix: TMUL has invalid data type."),
            ("pl.partmul(o, a, a)", "int64", "Fix: TPARTMUL Invalid data type."),
            ("pl.expand_max(o, a, t, dim=1)", "int64", "Fix: TCOLEXPANDOP Invalid data type."),
            ("pl.expand_div(o, a, t, dim=0)", "uint64", "Fix: TROWEXPANDDIV invalid data type."),
            ("pl.fill_index(o, 0)", "fp32", "Fix: TCI only supports uint16/32 or int16/32"),
            ("pl.fill_index(o, 0)", "int32", "Fix: TCI expect row is 1"),
            ("pl.transpose(o, a)", "int64", "Fix: TTRANS has unsupported data type."),
            ("pl.sort32(o, a, t)", "fp32", "Idx must be uint32_t."),
            ("pl.sort32(o, a, t)", "int32", "Dst and src must be float or half."),
            ("pl.gather(o, a, t, t)", "fp32", "Fix: TGATHER expect b16/b32")]


@pytest.mark.parametrize("call,dt,words", _REFUSED, ids=[f"{c.split('(')[0]}-{d}"
                                                        for c, d, _ in _REFUSED])
def test_dtypes_an_op_does_not_take_are_refused_at_its_line(tmp_path, call, dt, words):
    r, c = ROWS, cols_of(dt)
    dtype = f"pl.{DT[dt][0]}"
    body = f"""
        tt = pl.TileType(shape=[{r}, {c}], dtype={dtype}, target_memory=pl.MemorySpace.Vec)
        ga = pl.make_tile_group(type=tt, addrs=0x0, mutex_ids=[0])
        go = pl.make_tile_group(type=tt, addrs=0x1000, mutex_ids=[1])
        gt = pl.make_tile_group(type=tt, addrs=0x2000, mutex_ids=[2])
        with pl.section_vector():
            a = ga.current()
            o = go.current()
            t = gt.current()
            pl.load(a, x, [0, 0])
            {call}
            pl.store(y, o, [0, 0])
    """
    params = f"x: pl.Tensor[[{r}, {c}], {dtype}], y: pl.Tensor[[{r}, {c}], {dtype}]"
    assert_refused(NotSupported, words, tmp_path, "refused", params, body,
                   jit="pl.jit(auto_mutex=True)")


# ---------------------------------------------------------------- type conversion

MODES = {
    "CAST_RINT": lambda v: torch.round(v),  # ties to even
    "CAST_ROUND": lambda v: torch.trunc(v + torch.sign(v) * 0.5),  # ties away from zero
    "CAST_FLOOR": torch.floor, "CAST_CEIL": torch.ceil, "CAST_TRUNC": torch.trunc,
}
_CAST_CASES = [(src, dst) for src, dst in [("fp32", "int32"), ("fp16", "int32"),
                                           ("fp32", "int16"), ("fp16", "int16"),
                                           ("bf16", "int32")]]


@pytest.mark.parametrize("src,dst", _CAST_CASES, ids=[f"{s}-{d}" for s, d in _CAST_CASES])
def test_cast_float_to_int_every_rounding_mode_and_tail(src, dst):
    """`cast(out, src, mode=...)` float -> integer: each mode's rounding of ties (x.5) and of
    negative values; the default mode is CAST_ROUND (ties away from zero); a tail converts
    only its valid window."""
    c = max(cols_of(src), cols_of(dst))
    shape = (ROWS, c)
    tail = (2, c - 3)
    tiles = [T("a", src, shape=shape), T("d", dst, "out", shape=shape),
             T("at", src, shape=shape, valid=tail),
             T("dt", dst, "out", shape=shape, valid=tail)]
    body = ["pl.cast(d, a)", "pl.cast(dt, at, mode=pl.RoundMode.CAST_TRUNC)"]
    for mode in MODES:
        tiles.append(T(f"o_{mode}", dst, "out", shape=shape))
        body.append(f"pl.cast(o_{mode}, a, mode=pl.RoundMode.{mode})")
    g = torch.Generator().manual_seed(7)
    a = (torch.randint(-400, 400, shape, generator=g).float() / 4)  # quarters: ties included
    a.view(-1)[:6] = torch.tensor([0.5, 1.5, 2.5, -0.5, -1.5, -2.5])
    a = a.to(DT[src][1])
    got = launch(tiles, "\n".join(body), {"a": a, "at": a})
    ca = compute(src, a).double()
    for mode, fn in MODES.items():
        expect(got[f"o_{mode}"], stored(dst, fn(ca)), mode)
    expect(got["d"], stored(dst, MODES["CAST_ROUND"](ca)), "default mode")
    expect(got["dt"], in_valid(fill(tiles[3]), tiles[3], stored(dst, torch.trunc(ca))), "tail")


@pytest.mark.parametrize("src,dst", [("fp32", "fp16"), ("fp32", "bf16"), ("fp16", "fp32"),
                                     ("int32", "fp32"), ("int16", "fp16"), ("bf16", "fp32")])
def test_cast_between_floats_and_from_ints(src, dst):
    """Narrowing float casts round to nearest even under CAST_RINT / CAST_ROUND (the fp16
    overflow saturates to inf as IEEE), widening casts are exact; int -> float rounds."""
    c = max(cols_of(src), cols_of(dst))
    shape = (ROWS, c)
    tiles = [T("a", src, shape=shape), T("o", dst, "out", shape=shape)]
    g = torch.Generator().manual_seed(8)
    if src in FLOATS:
        a = torch.randn(shape, generator=g) * 300
        a.view(-1)[:5] = torch.tensor([float("inf"), float("-inf"), float("nan"), -0.0, 1e6])
        a = a.to(DT[src][1])
    else:
        a = values(src, shape, 8)
    got = launch(tiles, "pl.cast(o, a, mode=pl.RoundMode.CAST_RINT)", {"a": a})
    want = compute(src, a).double().to(DT[dst][1]) if src in INTS else \
        compute(src, a).to(DT[dst][1])
    expect(got["o"], want, f"{src}->{dst}")


# ---------------------------------------------------------------- broadcast (expand_*) ops

EXPAND = {"expand_sub": torch.sub, "expand_mul": torch.mul, "expand_div": _trunc_div,
          "expand_max": torch.maximum, "expand_min": torch.minimum}
_EXPAND_DTYPES = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "fp16", "bf16", "fp32"]
_EXPAND_CASES = [(dt, dim) for dt in _EXPAND_DTYPES for dim in (0, 1)]


@pytest.mark.parametrize("dt,dim", _EXPAND_CASES, ids=[f"{d}-dim{m}" for d, m in _EXPAND_CASES])
def test_expand_ops_both_dims_and_in_place(dt, dim):
    """`expand_<op>(out, src, scalar, dim=)`: dim=0 broadcasts a [rows, 1] DN tile along each
    row, dim=1 a [1, cols] tile down each column; `expand_sub` also in place (out is src)."""
    c = cols_of(dt)
    r = max(ROWS, 32 // DT[dt][1].itemsize) if dim == 0 else ROWS
    sshape, extra = ((r, 1), "layout=pl.DN") if dim == 0 else ((1, c), "")
    tiles = [T("a", dt, shape=(r, c)), T("s", dt, shape=sshape, extra=extra),
             T("x", dt, "io", shape=(r, c))]
    body = [f"pl.expand_sub(x, x, s, dim={dim})"]
    for op in EXPAND:
        tiles.append(T(f"o_{op}", dt, "out", shape=(r, c)))
        body.append(f"pl.{op}(o_{op}, a, s, dim={dim})")
    a = values(dt, (r, c), 9, small=True)
    s = nonzero(dt, values(dt, sshape, 10, small=True))
    got = launch(tiles, "\n".join(body), {"a": a, "s": s, "x": a})
    ca, cs = compute(dt, a), compute(dt, s)
    for op, fn in EXPAND.items():
        expect(got[f"o_{op}"], stored(dt, fn(ca, cs)), op)
    expect(got["x"], stored(dt, ca - cs), "in place")


# ---------------------------------------------------------------- fused and composite ops


def _rounded(dt: str, v: torch.Tensor) -> torch.Tensor:
    """One instruction's result: rounded / wrapped into `dt`, back as compute values."""
    return compute(dt, stored(dt, v))


@pytest.mark.parametrize("dt", ["fp16", "fp32", "int32"])
def test_fused_ops_are_their_instruction_sequences(dt):
    """The fused ops as the real code generator lowers them, each instruction rounding into
    the dtype and `lhs` overwritten (the pages say so): add_relu = TADD(lhs, lhs, rhs),
    TRELU(out, lhs); mul_add_dst = TMUL(lhs, lhs, rhs), TADD(out, lhs, out); fused_mul_add =
    TMUL(lhs, lhs, out), TADD(out, lhs, rhs); fused_mul_add_relu adds TRELU; addc = a + b + c;
    axpy: out = alpha * src + out."""
    c = cols_of(dt)
    ops = ["add_relu", "sub_relu", "mul_add_dst", "fused_mul_add", "fused_mul_add_relu"]
    tiles = [T("b", dt), T("c", dt)]
    body = []
    for op in ops:  # each op its own lhs (overwritten) and out (read by the mul-add ones)
        tiles += [T(f"l_{op}", dt, "io"), T(f"o_{op}", dt, "io")]
        body.append(f"pl.{op}(o_{op}, l_{op}, b)")
    tiles.append(T("o_addc", dt, "out"))
    body.append("pl.addc(o_addc, b, c, b)")
    if dt != "int32":
        tiles.append(T("o_axpy", dt, "io"))
        body.append("pl.axpy(o_axpy, b, 1.5)")
    lhs, out = values(dt, (ROWS, c), 11, small=True), values(dt, (ROWS, c), 12, small=True)
    b, cc = values(dt, (ROWS, c), 13, small=True), values(dt, (ROWS, c), 14, small=True)
    inputs = {"b": b, "c": cc, "o_axpy": out}
    for op in ops:
        inputs[f"l_{op}"], inputs[f"o_{op}"] = lhs, out
    got = launch(tiles, "\n".join(body), inputs)
    ls, os_, bs, cs = (compute(dt, x) for x in (lhs, out, b, cc))
    want = {}
    s = _rounded(dt, ls + bs)
    want["add_relu"] = (s, torch.relu(s))
    s = _rounded(dt, ls - bs)
    want["sub_relu"] = (s, torch.relu(s))
    p = _rounded(dt, ls * bs)
    want["mul_add_dst"] = (p, _rounded(dt, p + os_))
    p = _rounded(dt, ls * os_)
    want["fused_mul_add"] = (p, _rounded(dt, p + bs))
    s = _rounded(dt, p + bs)
    want["fused_mul_add_relu"] = (s, torch.relu(s))
    for op, (new_lhs, new_out) in want.items():
        expect(got[f"l_{op}"], stored(dt, new_lhs), f"{op} lhs")
        expect(got[f"o_{op}"], stored(dt, new_out), f"{op} out")
    expect(got["o_addc"], stored(dt, _rounded(dt, bs + cs) + bs), "addc")
    if dt != "int32":
        alpha = compute(dt, torch.tensor([1.5]).to(DT[dt][1]))
        expect(got["o_axpy"], stored(dt, _rounded(dt, alpha * bs) + os_) if dt == "fp32" else
               stored(dt, alpha * bs + os_), "axpy")


# ---------------------------------------------------------------- partial (tail) ops

PART = {"partadd": torch.add, "partmax": torch.maximum, "partmin": torch.minimum,
        "partmul": torch.mul}
_PART_CASES = [(op, dt) for op in PART for dt in ["int8", "uint16", "int32", "fp16", "bf16",
                                                  "fp32"] + (["int64"] if op != "partmul" else [])]


@pytest.mark.parametrize("op,dt", _PART_CASES, ids=[f"{o}-{d}" for o, d in _PART_CASES])
def test_part_ops_combine_where_both_are_valid_and_copy_elsewhere(op, dt):
    """`part<op>(out, src0, src1)`: where both sources are valid the op, where only one is,
    that one's value; the smaller source is src1 in one call and src0 in the other."""
    c = cols_of(dt)
    small = (2, c - 3)
    tiles = [T("a", dt), T("b", dt, valid=small), T("o1", dt, "out"), T("o2", dt, "out")]
    body = f"""
        pl.{op}(o1, a, b)
        pl.{op}(o2, b, a)
    """
    a, b = values(dt, (ROWS, c), 15, small=True), values(dt, (ROWS, c), 16, small=True)
    got = launch(tiles, body, {"a": a, "b": b})
    ca, cb = compute(dt, a), compute(dt, b)
    both = stored(dt, PART[op](ca, cb))
    want = a.clone()
    want[:small[0], :small[1]] = both[:small[0], :small[1]]
    expect(got["o1"], want, "src1 smaller")
    expect(got["o2"], want, "src0 smaller")


# ---------------------------------------------------------------- argmax / argmin

_ARG_CASES = [("argmax", 0, dt) for dt in ["fp16", "fp32"]] + \
    [("argmin", 0, dt) for dt in ["fp16", "fp32"]] + \
    [(op, 1, dt) for op in ("argmax", "argmin") for dt in ["int8", "uint8", "int16", "int32",
                                                          "fp16", "bf16", "fp32"]]


@pytest.mark.parametrize("op,dim,dt", _ARG_CASES, ids=[f"{o}-dim{m}-{d}" for o, m, d in _ARG_CASES])
def test_argmax_argmin_index_of_the_first_extreme(op, dim, dt):
    """dim=0: each row's column index of its extreme into [rows, 1] INT32; dim=1: each
    column's row index into [1, cols]; ties give the first index (pto-isa compares strictly)."""
    c = cols_of(dt)
    r = 8 if dim == 0 else ROWS
    oshape = (r, 1) if dim == 0 else (1, c)
    tiles = [T("a", dt, shape=(r, c)), T("tmp", dt, "tmp", shape=(r, c)),
             T("o", "int32", "out", shape=oshape)]
    a = values(dt, (r, c), 17, small=True)
    if dim == 0:
        a[0, :] = a[0, 0]  # a tied row
    else:
        a[:, 0] = a[0, 0]  # a tied column
    got = launch(tiles, f"pl.{op}(o, a, tmp, dim={dim})", {"a": a})
    ca = compute(dt, a)
    axis = 1 if dim == 0 else 0
    ext = (ca.amax if op == "argmax" else ca.amin)(dim=axis, keepdim=True)
    first = (ca == ext).int().argmax(dim=axis, keepdim=True)  # the first index holding it
    expect(got["o"], first.int(), op)


# ---------------------------------------------------------------- fills, xor, fused casts


@pytest.mark.parametrize("dt", ["int8", "uint16", "int32", "int64", "fp16", "bf16", "fp32"])
def test_expands_whole_and_tail(dt):
    """`expands(out, scalar)` fills the valid window with the scalar in the tile's dtype."""
    c = cols_of(dt)
    tail = (3, c - 2)
    tiles = [T("e", dt, "out"), T("et", dt, "out", valid=tail)]
    s = _scalar_text(dt, -3 if dt not in ("uint16",) else 3)
    got = launch(tiles, f"pl.expands(e, {s})\npl.expands(et, {s})", {})
    v = stored(dt, torch.full((ROWS, c), float(s) if dt in FLOATS else int(s)))
    expect(got["e"], v, "expands")
    expect(got["et"], in_valid(fill(tiles[1]), tiles[1], v), "expands tail")


@pytest.mark.parametrize("dt", ["int32", "int16", "uint16", "uint32"])
def test_fill_index_one_row(dt):
    """`fill_index(out, start)` on a [1, n] tile: start, start + 1, ... over the valid
    columns (its page lists INT32; TCI takes the 16-bit and unsigned ones too)."""
    c = 2 * cols_of(dt)
    tiles = [T("f", dt, "out", shape=(1, c)), T("ft", dt, "out", shape=(1, c), valid=(1, c - 5))]
    got = launch(tiles, "pl.fill_index(f, 5)\npl.fill_index(ft, 9)", {})
    expect(got["f"], stored(dt, torch.arange(5, 5 + c).reshape(1, c)), "fill_index")
    want = fill(tiles[1])
    want[0, :c - 5] = stored(dt, torch.arange(9, 9 + c - 5))
    expect(got["ft"], want, "tail")


@pytest.mark.parametrize("dt", ["int8", "uint8", "int16", "uint16", "int32", "uint32"])
def test_xor_with_its_tmp_tile(dt):
    c = cols_of(dt)
    tiles = [T("a", dt), T("b", dt), T("tmp", dt, "tmp"), T("o", dt, "out")]
    a, b = values(dt, (ROWS, c), 18), values(dt, (ROWS, c), 19)
    got = launch(tiles, "pl.xor(o, a, b, tmp)", {"a": a, "b": b})
    expect(got["o"], stored(dt, compute(dt, a) ^ compute(dt, b)), "xor")


@pytest.mark.parametrize("src,dst", [("fp32", "fp16"), ("fp32", "bf16"), ("fp16", "fp32"),
                                     ("fp32", "fp32"), ("fp16", "fp16")])
def test_fused_casts_through_lhs(src, dst):
    """add_relu_cast / sub_relu_cast: TADD / TSUB(lhs, lhs, rhs), TRELU(lhs, lhs),
    TCVT(out, lhs, mode); mul_cast: TMUL(lhs, lhs, rhs), TCVT(out, lhs, mode)."""
    c = max(cols_of(src), cols_of(dst))
    sh = (ROWS, c)
    ops = ["add_relu_cast", "sub_relu_cast", "mul_cast"]
    tiles = [T("b", src, shape=sh)]
    body = []
    for op in ops:
        tiles += [T(f"l_{op}", src, "io", shape=sh), T(f"o_{op}", dst, "out", shape=sh)]
        body.append(f"pl.{op}(o_{op}, l_{op}, b, target_type=pl.{DT[dst][0]}, "
                    f"mode=pl.RoundMode.CAST_RINT)")
    g = torch.Generator().manual_seed(20)
    lhs = (torch.randn(sh, generator=g) * 100).to(DT[src][1])
    b = (torch.randn(sh, generator=g) * 100).to(DT[src][1])
    inputs = {"b": b, **{f"l_{op}": lhs for op in ops}}
    got = launch(tiles, "\n".join(body), inputs)
    cl, cb = compute(src, lhs), compute(src, b)
    for op, fn, relu in (("add_relu_cast", torch.add, True), ("sub_relu_cast", torch.sub, True),
                         ("mul_cast", torch.mul, False)):
        mid = _rounded(src, fn(cl, cb))
        if relu:
            mid = torch.relu(mid)
        expect(got[f"l_{op}"], stored(src, mid), f"{op} lhs")
        expect(got[f"o_{op}"], stored(dst, mid), f"{op} out")


# ---------------------------------------------------------------- transpose, getval / setval


@pytest.mark.parametrize("dt", ["int8", "uint8", "int16", "int32", "uint32", "fp16", "bf16",
                                "fp32"])
def test_transpose(dt):
    """`transpose(out, src)`: out[j, i] = src[i, j]; both leading dims span whole 32-byte
    blocks (its page), so a [32 / size, 64 / size] source."""
    size = DT[dt][1].itemsize
    r, c = 32 // size, 64 // size
    tiles = [T("a", dt, shape=(r, c)), T("o", dt, "out", shape=(c, r))]
    a = values(dt, (r, c), 21)
    got = launch(tiles, "pl.transpose(o, a)", {"a": a})
    expect(got["o"], a.t().contiguous(), "transpose")


@pytest.mark.parametrize("dt", ["int8", "int16", "uint16", "int32", "int64", "fp16", "bf16",
                                "fp32"])
def test_getval_setval_by_index_and_offset(dt):
    """`x = t[i, j]` / `pl.getval(t, offset)` read one element (integers widen, floats as
    stored), `t[i, j] = v` / `pl.setval(t, offset, v)` write one, converted to the dtype;
    here a read element written elsewhere and a constant written by linear offset."""
    c = cols_of(dt)
    tiles = [T("x", dt, "io")]
    v = "-2.5" if dt in FLOATS else ("7" if dt == "uint16" else "-7")
    body = f"""
        e = x[1, 2]
        x[2, 3] = e
        f = pl.getval(x, {c + 3})
        pl.setval(x, 0, f)
        x[3, 0] = {v}
        pl.setval(x, {3 * c + 1}, {v})
    """
    a = values(dt, (ROWS, c), 22)
    got = launch(tiles, body, {"x": a})
    want = a.clone()
    want[2, 3] = a[1, 2]
    want[0, 0] = a[1, 3]
    want[3, 0] = want[3, 1] = stored(dt, torch.tensor([float(v)]))[0]
    expect(got["x"], want, "getval / setval")


# ---------------------------------------------------------------- gather / scatter

#: (data dtype, index dtype): the TSCATTER combinations of the scatter page; gather's page
#: takes 16 / 32-bit indices (32-bit for b64 data)
_INDEXED = [("fp32", "int32"), ("int32", "uint32"), ("int64", "int32"), ("fp16", "int16"),
            ("bf16", "uint16"), ("int8", "int16")]


@pytest.mark.parametrize("dt,it", _INDEXED, ids=[f"{d}-{i}" for d, i in _INDEXED])
def test_gather_and_scatter_by_flat_index(dt, it):
    """`gather(out, src, idx, tmp)`: out_flat[i] = src_flat[idx[i]]; `scatter(out, src, idx)`:
    out_flat[idx[i]] = src_flat[i]; a permutation (no write conflicts: undefined)."""
    c = max(cols_of(dt), cols_of(it))
    sh = (ROWS, c)
    tiles = [T("a", dt, shape=sh), T("i", it, shape=sh), T("tmp", it, "tmp", shape=sh),
             T("g", dt, "out", shape=sh), T("s", dt, "out", shape=sh)]
    body = """
        pl.gather(g, a, i, tmp)
        pl.scatter(s, a, i)
    """
    n = ROWS * c
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(23))
    a = values(dt, sh, 24)
    idx = perm.reshape(sh).to(DT[it][1])
    got = launch(tiles, body, {"a": a, "i": idx})
    flat = a.reshape(-1)
    expect(got["g"], flat[perm].reshape(sh), "gather")
    scattered = flat.clone()
    scattered[perm] = flat
    expect(got["s"], scattered.reshape(sh), "scatter")


# ---------------------------------------------------------------- runtime scalar operands


@pytest.mark.parametrize("dt,sdt", [("fp32", "DT_FP32"), ("fp16", "DT_FP32"),
                                    ("int32", "DT_INT32"), ("int16", "DT_INT32")])
def test_tile_scalar_forms_with_a_runtime_scalar(dt, sdt):
    """A kernel scalar parameter as the tile-scalar operand (the pages: int / float /
    Scalar): converted to the tile dtype as the instruction's scalar argument takes it (an
    fp32 scalar rounds to nearest even into fp16, an int32 one wraps into int16)."""
    c = cols_of(dt)
    ops = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "maximum": torch.maximum,
           "minimum": torch.minimum}
    tiles = [T("a", dt)] + [T(f"o_{op}", dt, "out") for op in ops]
    body = "\n".join(f"pl.{op}(o_{op}, a, s)" for op in ops)
    a = values(dt, (ROWS, c), 25, small=True)
    s = 1.0009765625 + 2 ** -12 if dt in FLOATS else 70000 + 3  # rounds / wraps in the tile dtype
    if dt == "fp32":
        s = 1.375
    if dt == "int32":
        s = -3
    got = launch(tiles, body, {"a": a}, scalars=f"s: pl.{sdt}", scalar_values=(s,))
    sv = compute(dt, torch.tensor([s]).to(DT[dt][1])) if dt in FLOATS else \
        compute(dt, torch.tensor([s]).to(DT[dt][1]))
    for op, fn in ops.items():
        expect(got[f"o_{op}"], stored(dt, fn(compute(dt, a), sv)), op)


# ---------------------------------------------------------------- vector mask


def test_vector_mask_calls_leave_tile_ops_whole():
    """The vector_mask page's calls (`set_vec_mask`, `set_mask_count`, `set_mask_norm`,
    `reset_mask`) set the legacy mask register; a5's tile ops build their own predicates from
    the valid shape (pto-isa's TBinOp: CreatePredicate per repeat), so an `add` after them
    still covers the whole valid window."""
    dt = "fp32"
    tiles = [T("a", dt), T("b", dt), T("o1", dt, "out"), T("o2", dt, "out"), T("o3", dt, "out")]
    body = """
        pl.set_vec_mask(0, 0xFFFFFFFF)
        pl.add(o1, a, b)
        pl.set_mask_count()
        pl.set_vec_mask(0, 5)
        pl.add(o2, a, b)
        pl.set_mask_norm()
        pl.reset_mask()
        pl.add(o3, a, b)
    """
    a, b = values(dt, (ROWS, 16), 26), values(dt, (ROWS, 16), 27)
    got = launch(tiles, body, {"a": a, "b": b})
    for name in ("o1", "o2", "o3"):
        expect(got[name], a + b, name)


# ---------------------------------------------------------------- sort32


def _sorted_records(vals: torch.Tensor, idx: torch.Tensor, n: int) -> torch.Tensor:
    """Each row's first `n` values in groups of 32, each group sorted descending (ties: the
    smaller index first), as 8-byte (value, zero pad, uint32 index) records (pto-isa
    TSORT32)."""
    rows = []
    for r in range(vals.shape[0]):
        out = []
        for g in range(0, n, 32):
            v, i = vals[r, g:min(g + 32, n)], idx[r, g:min(g + 32, n)]
            order = sorted(range(len(v)), key=lambda k: (-float(v[k]), int(i[k])))
            for k in order:
                value = v[k:k + 1].contiguous().view(torch.uint8)
                pad = torch.zeros(4 - value.numel(), dtype=torch.uint8)
                out.append(torch.cat([value, pad, i[k:k + 1].contiguous().view(torch.uint8)]))
        rows.append(torch.cat(out))
    return torch.stack(rows)


@pytest.mark.parametrize("dt", ["fp16", "fp32"])
def test_sort32_groups_of_32_descending_with_ties_and_a_tail(dt):
    """`sort32(dst, src, idx[, tmp])`: every 32 values of a row sorted descending with their
    uint32 indices (equal values keep index order); a valid width that is not a multiple of
    32 sorts its last, short group too (with `tmp`)."""
    per = 8 // DT[dt][1].itemsize  # output elements per record
    n, tail = 64, 40
    tiles = [T("a", dt, shape=(2, n)), T("i", "uint32", shape=(2, n)),
             T("d", dt, "out", shape=(2, n * per)),
             T("at", dt, shape=(2, n), valid=(2, tail)),
             T("it", "uint32", shape=(2, n), valid=(2, tail)),
             T("tmp", dt, "tmp", shape=(2, n * per)),
             T("dt", dt, "out", shape=(2, n * per), valid=(2, tail * per))]
    body = """
        pl.sort32(d, a, i)
        pl.sort32(dt, at, it, tmp)
    """
    g = torch.Generator().manual_seed(28)
    a = (torch.randint(-6, 6, (2, n), generator=g).float() / 2).to(DT[dt][1])  # many ties
    idx = (torch.arange(2 * n).reshape(2, n) * 3 + 100).to(torch.int32)
    got = launch(tiles, body, {"a": a, "i": idx, "at": a, "it": idx})
    whole = got["d"].contiguous().view(torch.uint8)
    expect(whole, _sorted_records(a, idx, n), "sort32")
    part = got["dt"].contiguous().view(torch.uint8)[:, :tail * 8]
    expect(part, _sorted_records(a, idx, tail), "tail")


# ---------------------------------------------------------------- gathermask

_PATTERNS = {1: (0, 2), 2: (1, 2), 3: (0, 4), 4: (1, 4), 5: (2, 4), 6: (3, 4), 7: (0, 1)}


@pytest.mark.parametrize("dt", ["int8", "fp16", "fp32", "int64"])
def test_gathermask_every_pattern(dt):
    """`gathermask(out, src, pattern_mode=k)`: 1 / 2 the even / odd columns, 3..6 one column
    of every 4, 7 all of them; `out` has the picked columns only."""
    c = 4 * cols_of(dt)
    tiles = [T("a", dt, shape=(ROWS, c))]
    body = []
    for k, (start, step) in _PATTERNS.items():
        tiles.append(T(f"o{k}", dt, "out", shape=(ROWS, c // step)))
        body.append(f"pl.gathermask(o{k}, a, pattern_mode={k})")
    a = values(dt, (ROWS, c), 29)
    got = launch(tiles, "\n".join(body), {"a": a})
    for k, (start, step) in _PATTERNS.items():
        expect(got[f"o{k}"], a[:, start::step].contiguous(), f"pattern {k}")


@pytest.mark.parametrize("call,error,words", [
    ("pl.gathermask(o, a, pattern_mode=8)", NotSupported, "pattern_mode must be 1-7, got 8"),
    ("pl.gathermask(o, a, pattern_mode=0)", NotSupported, "pattern_mode must be 1-7, got 0"),
    ("pl.maximum(o, a, t, dim=3)", OutOfRange, "dim must be None"),
    ("pl.minimum(o, a, t, dim=-1)", OutOfRange, "dim must be None"),
    ("pl.sum(o, a, t, dim=2)", OutOfRange, "dim must be 0"),
])
def test_out_of_range_modes_are_refused_at_their_line(tmp_path, call, error, words):
    """A gathermask pattern the real code generator has no MaskPattern for (its words), a
    reduction `dim` other than 0 / 1."""
    body = f"""
        tt = pl.TileType(shape=[4, 16], dtype=pl.DT_FP32, target_memory=pl.MemorySpace.Vec)
        ga = pl.make_tile_group(type=tt, addrs=0x0, mutex_ids=[0])
        go = pl.make_tile_group(type=tt, addrs=0x1000, mutex_ids=[1])
        gt = pl.make_tile_group(type=tt, addrs=0x2000, mutex_ids=[2])
        with pl.section_vector():
            a = ga.current()
            o = go.current()
            t = gt.current()
            pl.load(a, x, [0, 0])
            {call}
            pl.store(y, o, [0, 0])
    """
    params = "x: pl.Tensor[[4, 16], pl.DT_FP32], y: pl.Tensor[[4, 16], pl.DT_FP32]"
    assert_refused(error, words, tmp_path, "modes", params, body, jit="pl.jit(auto_mutex=True)")


def test_axpy_widening_fp16_source_into_fp32():
    """The axpy page: `src` FP16 with `out` FP32 is the widening form (pto-isa TAXPY: each
    half widened exactly, then out = alpha * src + out in fp32)."""
    tiles = [T("s", "fp16", shape=(ROWS, 16)), T("o", "fp32", "io", shape=(ROWS, 16))]
    s = values("fp16", (ROWS, 16), 30)
    o = values("fp32", (ROWS, 16), 31)
    got = launch(tiles, "pl.axpy(o, s, 1.5)", {"s": s, "o": o})
    expect(got["o"], 1.5 * s.float() + o, "axpy fp16 -> fp32")


@pytest.mark.parametrize("dt", ["fp16", "int32"])
def test_runtime_valid_shapes_bound_the_vector_ops(dt):
    """Tiles declared with valid_shape=[-1, -1] and sized at run time by `set_validshape`
    (the set_validshape page's tail pattern): each op computes only that window."""
    c = cols_of(dt)
    dyn = "valid_shape=[-1, -1]"
    tiles = [T("a", dt, extra=dyn), T("b", dt, extra=dyn), T("o", dt, "out", extra=dyn),
             T("e", dt, "out", extra=dyn)]
    body = """
        pl.set_validshape(a, [n, m])
        pl.set_validshape(b, [n, m])
        pl.set_validshape(o, [n, m])
        pl.set_validshape(e, [n, m])
        pl.load(a, g_a, [0, 0])
        pl.load(b, g_b, [0, 0])
        pl.mul(o, a, b)
        pl.abs(e, a)
    """
    # the loads of `launch` come before the body: load again after sizing the tiles
    a, b = values(dt, (ROWS, c), 32, small=True), values(dt, (ROWS, c), 33, small=True)
    n, m = 3, c - 7
    got = launch(tiles, body, {"a": a, "b": b}, scalars="n: pl.DT_INT32, m: pl.DT_INT32",
                 scalar_values=(n, m))
    want_o, want_e = fill(tiles[2]), fill(tiles[3])
    want_o[:n, :m] = stored(dt, compute(dt, a) * compute(dt, b))[:n, :m]
    want_e[:n, :m] = stored(dt, compute(dt, a).abs())[:n, :m]
    expect(got["o"], want_o, "mul")
    expect(got["e"], want_e, "abs")


@pytest.mark.parametrize("src,dst", [("int32", "int16"), ("int64", "int32"), ("int32", "int8"),
                                     ("int16", "int8")])
def test_cast_integer_narrowing(src, dst):
    """Integer narrowing as a5's TCVT(dst, src, mode) does it: INT32 -> INT16 and INT64 ->
    INT32 with saturation off by default (the low bits), the others saturating."""
    c = max(cols_of(src), cols_of(dst))
    sh = (ROWS, c)
    tiles = [T("a", src, shape=sh), T("o", dst, "out", shape=sh)]
    a = values(src, sh, 34)
    got = launch(tiles, "pl.cast(o, a)", {"a": a})
    ca = compute(src, a)
    if (src, dst) in (("int32", "int16"), ("int64", "int32")):
        want = stored(dst, ca)  # wraps
    else:
        info = torch.iinfo(DT[dst][1])
        want = stored(dst, ca.clamp(info.min, info.max))
    expect(got["o"], want, f"{src}->{dst}")
