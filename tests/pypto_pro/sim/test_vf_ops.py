"""Reg API register ops (spec §2.13) against torch, one test per op group and dtype: masks,
arithmetic (register / scalar / unary / fused), logic and shifts, compare + select, reductions,
broadcasts, conversions (astype round / saturate modes, FP8), rearrangements, squeeze and
histograms. The ops are called directly on register values (`pypto_pro.sim.frontend.vf`); the
UB side is in test_vf_memory.py and whole sections in test_vf_section.py."""
from __future__ import annotations

import pytest
import torch

from pypto_pro.ir import attrs
from pypto_pro.ir.dtype import DataType as DT
from pypto_pro.sim.model.memory import storage_dtype
from pypto_pro.sim.frontend.vf.args import ALL
from pypto_pro.sim.frontend.vf.regs import Reg, lane_count, mask_of_lanes
from pypto_pro.sim.frontend.vf.section import OPS, VFState

FLOATS = [DT.FP32, DT.FP16, DT.BF16]
INTS = [DT.INT8, DT.INT16, DT.INT32, DT.UINT8, DT.UINT16, DT.UINT32]


def call(name: str, *args, dtype=None, old=None, st=None, **kw):
    return OPS[name][0](st or VFState([], torch.zeros(0, dtype=torch.uint8), 0), list(args), kw,
                        old, dtype)


def rand_reg(dtype: DT, seed: int = 0, low: int | None = None) -> Reg:
    g = torch.Generator().manual_seed(seed)
    n = lane_count(dtype)
    if dtype.is_float:
        return Reg((torch.randn(n, generator=g) * 4).to(storage_dtype(dtype)), dtype)
    info = torch.iinfo(storage_dtype(dtype))
    lo = info.min if low is None else low
    return Reg(torch.randint(lo, info.max, (n,), generator=g).to(storage_dtype(dtype)), dtype)


def half_mask(dtype: DT):
    """Every other lane active."""
    return mask_of_lanes(torch.arange(lane_count(dtype)) % 2 == 0, dtype)


def ref_float(fn, dtype, *regs):
    return fn(*(r.data.float() for r in regs)).to(storage_dtype(dtype))


def wrap(values: torch.Tensor, dtype: DT) -> torch.Tensor:
    bits = dtype.bits
    lo = -(1 << (bits - 1)) if dtype.kind == "int" else 0
    return ((values - lo) % (1 << bits) + lo).to(storage_dtype(dtype))


def ref_int(fn, dtype, *regs):
    return wrap(fn(*(r.data.to(torch.int64) for r in regs)), dtype)


# ---------------------------------------------------------------- masks


@pytest.mark.parametrize("dtype", [DT.FP32, DT.FP16, DT.INT8])
def test_masks(dtype):
    lanes = lane_count(dtype)
    m = call("create_mask", attrs.MaskPattern.ALL, dtype=dtype)
    assert m.lanes(dtype).all() and m.bits.all()
    assert not call("create_mask", attrs.MaskPattern.ALLF, dtype=dtype).bits.any()
    assert call("create_mask", attrs.MaskPattern.VL8, dtype=dtype).lanes(dtype).sum() == 8
    assert call("create_mask", attrs.MaskPattern.H, dtype=dtype).lanes(dtype).sum() == lanes // 2
    m3 = call("create_mask", attrs.MaskPattern.M3, dtype=dtype).lanes(dtype)
    assert torch.equal(m3, torch.arange(lanes) % 3 == 0)
    first = call("update_mask", 5, dtype=dtype)
    assert torch.equal(first.lanes(dtype), torch.arange(lanes) < 5)
    assert call("update_mask", -3, dtype=dtype).bits.all()  # read as a uint32, as plt does
    assert call("update_mask", 10_000, dtype=dtype).bits.all()
    # one predicate serves every width: 5 FP32 lanes = 20 bytes = 10 FP16 lanes
    if dtype is DT.FP32:
        assert first.lanes(DT.FP16).sum() == 10
    assert call("get_mask_spr", attrs.MaskWidth.B16,
                st=VFState([], torch.zeros(0, dtype=torch.uint8), 0)).bits.all()


@pytest.mark.parametrize("dtype", [DT.INT16, DT.UINT32])
def test_mask_from_register_bits(dtype):
    """movvp: lane i where bit `offset` of lane i is set."""
    lanes = lane_count(dtype)
    r = Reg(torch.zeros(lanes, dtype=storage_dtype(dtype)), dtype)
    r.data[3], r.data[5] = 1, 4
    assert torch.equal(call("mask_gen_with_reg_tensor", r).lanes(dtype), torch.arange(lanes) == 3)
    assert torch.equal(call("mask_gen_with_reg_tensor", r, offset=2).lanes(dtype),
                       torch.arange(lanes) == 5)


def test_mask_spr_follows_set_vec_mask():
    st = VFState([], torch.zeros(0, dtype=torch.uint8), 0, (0b1, 0xFFFFFFFF))
    b32 = call("get_mask_spr", attrs.MaskWidth.B32, st=st).lanes(DT.FP32)
    assert torch.equal(b32, torch.arange(64) < 32)
    b16 = call("get_mask_spr", attrs.MaskWidth.B16, st=st).lanes(DT.FP16)
    assert torch.equal(b16, (torch.arange(128) < 32) | (torch.arange(128) == 64))


# ---------------------------------------------------------------- arithmetic


BINARY_REFS = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "max": torch.maximum,
    "min": torch.minimum, "abs_sub": lambda x, y: (x - y).abs(),
    "prelu": lambda x, y: torch.where(x < 0, x * y, x),
}


@pytest.mark.parametrize("dtype", FLOATS + INTS)
@pytest.mark.parametrize("name", sorted(BINARY_REFS) + ["div"])
def test_binary(dtype, name):
    x, y = rand_reg(dtype, 1), rand_reg(dtype, 2)
    if name == "div" and not dtype.is_float:
        y.data[::3] = 0  # integer division by zero gives 0
    got = call(name, x, y, ALL)
    if dtype.is_float:
        fn = torch.div if name == "div" else BINARY_REFS[name]
        torch.testing.assert_close(got.data, ref_float(fn, dtype, x, y), rtol=0, atol=0)
    else:
        def idiv(a, b):
            return torch.where(b == 0, 0, torch.div(a, torch.where(b == 0, 1, b),
                                                    rounding_mode="trunc"))
        fn = idiv if name == "div" else BINARY_REFS[name]
        assert torch.equal(got.data, ref_int(fn, dtype, x, y))


@pytest.mark.parametrize("dtype", [DT.FP32, DT.FP16, DT.INT32])
def test_predication_zeroing_and_merging(dtype):
    x, y, old = rand_reg(dtype, 1), rand_reg(dtype, 2), rand_reg(dtype, 3)
    m = half_mask(dtype)
    on = m.lanes(dtype)
    full = call("add", x, y, ALL).data
    zero = call("add", x, y, m)
    assert torch.equal(zero.data[on], full[on]) and not zero.data[~on].any()
    merged = call("add", x, y, m, old=old, mode=attrs.MergeMode.MERGING)
    assert torch.equal(merged.data[on], full[on])
    assert torch.equal(merged.data[~on], old.data[~on])


@pytest.mark.parametrize("dtype", FLOATS + [DT.INT16, DT.INT32])
def test_scalar_forms(dtype):
    x = rand_reg(dtype, 4)
    s = 3 if not dtype.is_float else 1.7
    refs = {"adds": lambda a: a + s, "subs": lambda a: a - s, "muls": lambda a: a * s,
            "maxs": lambda a: torch.clamp(a, min=s), "mins": lambda a: torch.clamp(a, max=s)}
    for name, fn in refs.items():
        got = call(name, x, s, ALL)
        if dtype.is_float:
            sq = torch.tensor([s]).to(storage_dtype(dtype)).float()  # scalar rounded first
            ref = {"adds": x.data.float() + sq, "subs": x.data.float() - sq,
                   "muls": x.data.float() * sq, "maxs": torch.maximum(x.data.float(), sq),
                   "mins": torch.minimum(x.data.float(), sq)}[name].to(storage_dtype(dtype))
            assert torch.equal(got.data, ref), name
        else:
            assert torch.equal(got.data, ref_int(fn, dtype, x)), name
    if dtype.is_float:
        got = call("leaky_relu", x, 0.5, ALL)
        assert torch.equal(got.data, ref_float(lambda a: torch.where(a < 0, a * 0.5, a), dtype,
                                               x))


@pytest.mark.parametrize("dtype", FLOATS)
def test_unary_float(dtype):
    x = rand_reg(dtype, 5)
    pos = Reg(x.data.float().abs().add(0.1).to(storage_dtype(dtype)), dtype)
    cases = {"abs": (x, torch.abs), "neg": (x, torch.neg), "relu": (x, torch.relu),
             "exp": (x, torch.exp), "sqrt": (pos, torch.sqrt), "ln": (pos, torch.log),
             "log": (pos, torch.log), "truncate": (x, torch.trunc),
             "log2": (pos, lambda v: torch.log(v) / torch.tensor([0.6931471805599453])),
             "log10": (pos, lambda v: torch.log(v) / torch.tensor([2.302585092994046]))}
    for name, (src, fn) in cases.items():
        got = call(name, src, ALL)
        assert torch.equal(got.data, ref_float(fn, dtype, src)), name
    y = rand_reg(dtype, 6)
    assert torch.equal(call("exp_sub", x, y, ALL).data,
                       ref_float(lambda a, b: torch.exp(a - b), dtype, x, y))


@pytest.mark.parametrize("dtype", FLOATS + [DT.INT32])
def test_fused_accumulate_into_destination(dtype):
    x, y, old = rand_reg(dtype, 1), rand_reg(dtype, 2), rand_reg(dtype, 3)
    conv = (lambda *r: ref_float(*r)) if dtype.is_float else (lambda *r: ref_int(*r))
    # one rounding of a·b + c (the docs: fused), through float64 (a double rounding would
    # need a float64 tie, which these values do not hit)
    fma = (lambda a, b, c: (a.double() * b.double() + c.double()).float()) if dtype.is_float \
        else (lambda a, b, c: a * b + c)
    assert torch.equal(call("mul_add_dst", x, y, ALL, old=old).data,
                       conv(fma, dtype, x, y, old))
    assert torch.equal(call("mul_dst_add", x, y, ALL, old=old).data,
                       conv(lambda a, b, c: fma(a, c, b), dtype, x, y, old))
    alpha = 2 if not dtype.is_float else 0.5
    assert torch.equal(call("axpy", x, alpha, ALL, old=old).data,
                       conv(lambda a, c: alpha * a + c, dtype, x, old))
    # a register never written accumulates onto zero
    assert torch.equal(call("mul_add_dst", x, y, ALL).data, conv(torch.mul, dtype, x, y))


@pytest.mark.parametrize("dtype", INTS)
def test_logic_and_shifts(dtype):
    x, y = rand_reg(dtype, 7), rand_reg(dtype, 8)
    for name, fn in {"and_": torch.bitwise_and, "or_": torch.bitwise_or,
                     "xor": torch.bitwise_xor}.items():
        assert torch.equal(call(name, x, y, ALL).data, ref_int(fn, dtype, x, y)), name
    assert torch.equal(call("not_", x, ALL).data, ref_int(torch.bitwise_not, dtype, x))
    assert torch.equal(call("shift_left", x, 3, ALL).data, ref_int(lambda a: a << 3, dtype, x))
    assert torch.equal(call("shift_right", x, 2, ALL).data, ref_int(lambda a: a >> 2, dtype, x))
    amounts = Reg((torch.arange(lane_count(dtype)) % 5).to(storage_dtype(dtype)), dtype)
    per_lane = amounts.data.to(torch.int64)
    assert torch.equal(call("shift_left", x, amounts, ALL).data,
                       ref_int(lambda a: a << per_lane, dtype, x))


@pytest.mark.parametrize("dtype", [DT.FP32, DT.FP16])
def test_logic_on_float_registers_works_on_the_bits(dtype):
    x, y = rand_reg(dtype, 7), rand_reg(dtype, 8)
    width = {DT.FP32: torch.int32, DT.FP16: torch.int16}[dtype]
    got = call("xor", x, y, ALL)
    assert got.dtype is dtype
    assert torch.equal(got.data.view(width), x.data.view(width) ^ y.data.view(width))
    assert torch.equal(call("not_", x, ALL).data.view(width), ~x.data.view(width))


@pytest.mark.parametrize("dtype", [DT.INT32, DT.UINT32])
def test_wide_multiply_and_carries(dtype):
    x, y = rand_reg(dtype, 7), rand_reg(dtype, 8)
    bits32 = 1 << 32
    ux, uy = x.data.to(torch.int64) % bits32, y.data.to(torch.int64) % bits32
    lo, hi = call("mull", x, y, ALL)
    full = x.data.to(torch.int64) * y.data.to(torch.int64)
    assert torch.equal(lo.data, wrap(full, dtype))
    if dtype is DT.INT32:
        assert torch.equal(hi.data, wrap(full >> 32, dtype))
    carry = half_mask(dtype)
    c = carry.lanes(dtype).to(torch.int64)
    flag, total = call("addc", x, y, carry, ALL)
    assert torch.equal(total.data, wrap(ux + uy + c, dtype))
    assert torch.equal(flag.lanes(dtype), ux + uy + c >= bits32)
    # subtract through the complement adder: the carry in set gives a - b, the flag is the
    # borrow (nothing carried out)
    flag, diff = call("subc", x, y, carry, ALL)
    assert torch.equal(diff.data, wrap(ux - uy - (1 - c), dtype))
    assert torch.equal(flag.lanes(dtype), ux + (bits32 - 1 - uy) + c < bits32)


def test_mull_uint32_high_word():
    x = Reg(torch.tensor([0xFFFFFFFF, 0x80000000, 12345] + [1] * 61,
                         dtype=torch.int64).to(torch.uint32), DT.UINT32)
    y = Reg(torch.tensor([0xFFFFFFFF, 4, 67890] + [1] * 61, dtype=torch.int64).to(torch.uint32),
            DT.UINT32)
    got = call("mull", x, y, ALL)[1].data.to(torch.int64)[:3].tolist()
    assert got == [(0xFFFFFFFF * 0xFFFFFFFF) >> 32, 2, (12345 * 67890) >> 32]


@pytest.mark.parametrize("dtype", FLOATS + [DT.INT16])
def test_compare_and_select(dtype):
    x, y = rand_reg(dtype, 9), rand_reg(dtype, 10)
    y.data[:4] = x.data[:4]
    m = half_mask(dtype)
    on = m.lanes(dtype)
    for name, fn in {"eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "gt": torch.gt,
                     "le": torch.le, "ge": torch.ge}.items():
        got = call(name, x, y, m).lanes(dtype)
        assert torch.equal(got, fn(x.data, y.data) & on), name
    sel = call("select", x, y, call("gt", x, y, ALL))
    assert torch.equal(sel.data, torch.where(x.data > y.data, x.data, y.data))


def _tree_sum(v: torch.Tensor) -> torch.Tensor:
    while v.shape[-1] > 1:
        h = v.shape[-1] // 2
        v = v[..., :h] + v[..., h:]
    return v[..., 0]


@pytest.mark.parametrize("dtype", FLOATS + [DT.INT32, DT.INT8])
def test_reductions(dtype):
    x = rand_reg(dtype, 11)
    m = half_mask(dtype)
    on = m.lanes(dtype)
    vals = x.data.float() if dtype.is_float else x.data.to(torch.int64)
    s = call("reduce_sum", x, m)
    expected = _tree_sum(torch.where(on, vals, torch.zeros_like(vals)))
    conv = (lambda t: t.to(storage_dtype(dtype))) if dtype.is_float else \
        (lambda t: wrap(t, dtype))
    assert torch.equal(s.data[:1].reshape(()), conv(expected).reshape(()))
    assert not s.data[1:].any()
    assert s.data[0] == s.data[0]  # not NaN
    mx = call("reduce_max", x, m)
    assert mx.data[0] == x.data[on].max() and not mx.data[2:].any()
    first = int((on & (x.data == x.data[on].max())).nonzero()[0])  # vcmax's index in lane 1
    width = {1: torch.uint8, 2: torch.int16, 4: torch.int32}[x.data.element_size()]
    assert int(mx.data.view(width)[1]) == first
    mn = call("reduce_min", x, m)
    assert mn.data[0] == x.data[on].min()
    assert call("reduce_max", x, call("create_mask", attrs.MaskPattern.ALLF, dtype=dtype)
                ).data[0] == 0  # no active lane: zero
    blocks = call("reduce_sum", x, ALL, True)
    assert torch.equal(blocks.data[:8], conv(_tree_sum(vals.reshape(8, -1))).reshape(8))
    old = rand_reg(dtype, 12)
    merged = call("reduce_max", x, ALL, old=old, mode=attrs.MergeMode.MERGING)
    assert torch.equal(merged.data[2:], old.data[2:])
    pairs = call("pair_reduce_sum", x, ALL)
    half = lane_count(dtype) // 2
    assert torch.equal(pairs.data[:half], conv(vals[0::2] + vals[1::2]).reshape(half))


@pytest.mark.parametrize("dtype", FLOATS + [DT.INT32, DT.UINT8])
def test_broadcasts(dtype):
    n = lane_count(dtype)
    v = 3 if not dtype.is_float else 2.5
    assert torch.equal(call("full", v, ALL, dtype=dtype).data,
                       torch.full((n,), v).to(storage_dtype(dtype)))
    src = rand_reg(dtype, 13)
    assert (call("full", src, ALL).data == src.data[0]).all()
    last = call("full", src, ALL, pos=attrs.DuplicatePos.HIGHEST)
    assert (last.data == src.data[-1]).all()
    ramp = call("arange", 5, dtype=dtype)
    assert torch.equal(ramp.data, (5 + torch.arange(n)).to(storage_dtype(dtype)))
    down = call("arange", 100, dtype=dtype, index_order=attrs.IndexOrder.DECREASE_ORDER)
    assert torch.equal(down.data, (100 + torch.arange(n).flip(0)).to(storage_dtype(dtype)))
    if dtype.bits < 64:  # vci DEC_ORDER counts down to start (the docs' 126, ..., 63)
        assert int(down.data[-1]) == 100
    moved = call("move", src, half_mask(dtype), old=ramp)
    on = half_mask(dtype).lanes(dtype)
    assert torch.equal(moved.data[on], src.data[on]) and torch.equal(moved.data[~on],
                                                                     ramp.data[~on])


# ---------------------------------------------------------------- conversions


@pytest.mark.parametrize("mode,fn", [
    (attrs.VFRoundMode.CAST_RINT, torch.round), (attrs.VFRoundMode.CAST_FLOOR, torch.floor),
    (attrs.VFRoundMode.CAST_CEIL, torch.ceil), (attrs.VFRoundMode.CAST_TRUNC, torch.trunc)])
def test_astype_float_to_int_round_modes(mode, fn):
    x = Reg(torch.linspace(-4.5, 4.5, 64), DT.FP32)
    got = call("astype", x, ALL, dtype=DT.INT32, round_mode=mode)
    assert torch.equal(got.data, fn(x.data).to(torch.int32))
    big = Reg(torch.full((64,), 3e9), DT.FP32)
    # saturate OFF (the default) keeps the low 32 bits; ON clamps (the docs' table 6)
    assert (call("astype", big, ALL, dtype=DT.INT32).data == 3_000_000_000 - 2**32).all()
    assert (call("astype", big, ALL, dtype=DT.INT32, saturate=attrs.SaturateMode.ON).data
            == 2**31 - 1).all()


def test_astype_widening_narrowing_layouts():
    """The narrower type's lanes interleave: layout k is lane r·i + k (r the width ratio)."""
    h = Reg(torch.arange(128, dtype=torch.float16), DT.FP16)
    even = call("astype", h, ALL, dtype=DT.FP32)
    odd = call("astype", h, ALL, DT.FP32, attrs.CastLayout.ONE, dtype=DT.FP32)
    assert torch.equal(even.data, torch.arange(0.0, 128, 2))
    assert torch.equal(odd.data, torch.arange(1.0, 128, 2))
    f = Reg(torch.arange(64, dtype=torch.float32) + 0.25, DT.FP32)
    upper = call("astype", f, ALL, DT.FP16, attrs.CastLayout.ONE, dtype=DT.FP16, old=h)
    assert torch.equal(upper.data[1::2], f.data.half()) and not upper.data[0::2].any()
    e8 = Reg(torch.arange(256, dtype=torch.float32).to(torch.float8_e4m3fn), DT.FP8E4M3FN)
    third = call("astype", e8, ALL, layout=attrs.CastLayout.TWO, dtype=DT.FP32)
    assert torch.equal(third.data, e8.data[2::4].float())
    sparse = mask_of_lanes(torch.arange(128) % 4 == 0, DT.FP16)  # predicate on source lanes
    assert torch.equal(call("astype", h, sparse, dtype=DT.FP32).data,
                       torch.where(torch.arange(64) % 2 == 0, torch.arange(0.0, 128, 2), 0))


def test_astype_fp8_and_saturation():
    x = Reg(torch.tensor([1.0, 1000.0, -1000.0, 0.3] * 16), DT.FP32)
    e4 = call("astype", x, ALL, dtype=DT.FP8E4M3FN)
    assert e4.data.dtype == torch.float8_e4m3fn
    assert torch.equal(e4.data[0::4][:4].float(), torch.tensor([1.0, 448.0, -448.0, 0.3]).to(
        torch.float8_e4m3fn).float())
    h = call("astype", x, ALL, dtype=DT.FP16)
    assert torch.isfinite(h.data.float()).all()
    over = Reg(torch.full((64,), 1e6), DT.FP32)  # narrowing: destination lanes 0, 2, 4, ...
    assert torch.isinf(call("astype", over, ALL, dtype=DT.FP16).data[0::2].float()).all()
    sat = call("astype", over, ALL, saturate=attrs.SaturateMode.ON, dtype=DT.FP16)
    assert (sat.data[0::2].float() == 65504.0).all()
    i = Reg(torch.tensor([300, -300, 5, 127] * 16, dtype=torch.int32), DT.INT32)
    wrapped = call("astype", i, ALL, dtype=DT.INT8)
    assert wrapped.data[0::4][:4].tolist() == [44, -44, 5, 127]
    clamped = call("astype", i, ALL, saturate=attrs.SaturateMode.ON, dtype=DT.INT8)
    assert clamped.data[0::4][:4].tolist() == [127, -128, 5, 127]


def test_bitcast_pack_unpack_interleave():
    x = Reg(torch.arange(64, dtype=torch.int32) * 70000, DT.INT32)
    assert torch.equal(call("bit_cast", x, dtype=DT.UINT8).data,
                       x.data.view(torch.uint8))
    packed = call("pack", x, dtype=DT.INT16)
    assert torch.equal(packed.data[:64], x.data.to(torch.int16)) and not packed.data[64:].any()
    upper = call("pack", x, DT.INT16, attrs.PackPart.UPPER, dtype=DT.INT16)
    assert torch.equal(upper.data[64:], x.data.to(torch.int16))
    s = Reg(torch.arange(-64, 64, dtype=torch.int16), DT.INT16)
    assert torch.equal(call("unpack", s, dtype=DT.INT32).data, torch.arange(-64, 0,
                                                                             dtype=torch.int32))
    a = Reg(torch.arange(64, dtype=torch.float32), DT.FP32)
    b = Reg(-torch.arange(64, dtype=torch.float32), DT.FP32)
    lo, hi = call("interleave", a, b)
    assert lo.data[:4].tolist() == [0, 0, 1, -1] and hi.data[:2].tolist() == [32, -32]
    even, odd = call("de_interleave", lo, hi)
    assert torch.equal(even.data, a.data) and torch.equal(odd.data, b.data)


def test_squeeze_unsqueeze_and_spr():
    st = VFState([], torch.zeros(0, dtype=torch.uint8), 0)
    x = Reg(torch.arange(64, dtype=torch.float32), DT.FP32)
    m = mask_of_lanes(torch.arange(64) % 3 == 0, DT.FP32)
    sq = call("squeeze", x, m, st=st)  # STORE_REG: the AR holds the bytes kept
    assert st.spr == 22 * 4 and torch.equal(sq.data[:22], torch.arange(0, 64, 3.0))
    assert not sq.data[22:].any()
    counts = call("unsqueeze", m, dtype=DT.INT32)  # lane i: active lanes before it
    assert torch.equal(counts.data, (torch.arange(64) + 2).div(3, rounding_mode="floor").int())
    call("squeeze", x, ALL, attrs.SqueezeMode.NO_STORE_REG, st=st)
    assert st.spr == 22 * 4
    call("clear_spr", st=st)
    assert st.spr == 0


def test_muls_cast_and_histograms():
    x = Reg(torch.linspace(-2, 2, 64), DT.FP32)
    x = Reg(torch.tensor([0.5, 1.5, -2.5, 2.5] * 16), DT.FP32)
    got = call("muls_cast", x, 1.0, ALL, dtype=DT.FP16)  # CAST_ROUND: halves away from zero
    assert got.data[0::2][:4].tolist() == [0.5, 1.5, -2.5, 2.5] and not got.data[1::2].any()
    odd = call("muls_cast", x, 3.0, ALL, layout=attrs.CastLayout.ONE, dtype=DT.FP16)
    assert torch.equal(odd.data[1::2], (x.data * 3.0).half())
    codes = Reg(torch.tensor(list(range(200)) + [7] * 56, dtype=torch.uint8), DT.UINT8)
    freq = call("histograms", codes, ALL, hist_type=attrs.HistType.FREQUENCY, dtype=DT.UINT16)
    assert freq.data.to(torch.int64)[7] == 57 and freq.data.to(torch.int64)[100] == 1
    assert int(freq.data.to(torch.int64).sum()) == 128 + 56
    upper = call("histograms", codes, ALL, attrs.BinType.BIN1, attrs.HistType.FREQUENCY,
                 dtype=DT.UINT16)
    assert int(upper.data.to(torch.int64).sum()) == 200 - 128
    cumulative = call("histograms", codes, ALL, dtype=DT.UINT16)  # ACCUMULATE by default
    assert torch.equal(cumulative.data.to(torch.int64), torch.cumsum(
        freq.data.to(torch.int64), 0))
    again = call("histograms", codes, ALL, attrs.BinType.BIN0, attrs.HistType.FREQUENCY,
                 dtype=DT.UINT16, old=freq)  # counts add to the destination's
    assert int(again.data.to(torch.int64)[7]) == 114


def test_astype_fp4_packs_two_lanes_per_byte():
    """BF16 ↔ FP4 converts in pairs: BF16 lanes 2j, 2j+1 ↔ FP4 byte 4j + layout."""
    x = Reg(torch.tensor([1.0, -1.5, 3.2, 0.24] * 32).to(torch.bfloat16), DT.BF16)
    f4 = call("astype", x, ALL, dtype=DT.FP4E2M1)
    assert f4.data.numel() == 256 and lane_count(DT.FP4E2M1) == 512
    assert f4.data[0:8:4].tolist() == [0x2 | (0xB << 4), 0x5]  # (1, -1.5), (3, 0)
    assert not f4.data.reshape(-1, 4)[:, 1:].any()
    back = call("astype", f4, ALL, dtype=DT.BF16)
    assert back.data[:4].float().tolist() == [1.0, -1.5, 3.0, 0.0]
    two = call("astype", x, ALL, layout=attrs.CastLayout.TWO, dtype=DT.FP4E2M1)
    assert torch.equal(two.data[2::4], f4.data[0::4])
    odd_off = mask_of_lanes(torch.arange(128) % 2 == 0, DT.BF16)  # the even lane rules a pair
    assert torch.equal(call("astype", x, odd_off, dtype=DT.FP4E2M1).data, f4.data)
