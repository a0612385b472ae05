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
    assert call("update_mask", -3, dtype=dtype).bits.sum() == 0
    assert call("update_mask", 10_000, dtype=dtype).bits.all()
    # one predicate serves every width: 5 FP32 lanes = 20 bytes = 10 FP16 lanes
    if dtype is DT.FP32:
        assert first.lanes(DT.FP16).sum() == 10
    r = Reg(torch.zeros(lanes, dtype=storage_dtype(dtype)), dtype)
    r.data[3] = 1
    assert torch.equal(call("mask_gen_with_reg_tensor", r).lanes(dtype),
                       torch.arange(lanes) == 3)
    assert call("get_mask_spr", attrs.MaskWidth.B16).bits.all()


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
    assert torch.equal(call("mul_add_dst", x, y, ALL, old=old).data,
                       conv(lambda a, b, c: a * b + c, dtype, x, y, old))
    assert torch.equal(call("mul_dst_add", x, y, ALL, old=old).data,
                       conv(lambda a, b, c: a * c + b, dtype, x, y, old))
    alpha = 2 if not dtype.is_float else 0.5
    assert torch.equal(call("axpy", x, alpha, ALL, old=old).data,
                       conv(lambda a, c: alpha * a + c, dtype, x, old))
    # a register never written accumulates onto zero
    assert torch.equal(call("mul_add_dst", x, y, ALL).data, conv(torch.mul, dtype, x, y))


@pytest.mark.parametrize("dtype", INTS)
def test_logic_shift_and_wide_ops(dtype):
    x, y = rand_reg(dtype, 7), rand_reg(dtype, 8)
    for name, fn in {"and_": torch.bitwise_and, "or_": torch.bitwise_or,
                     "xor": torch.bitwise_xor}.items():
        assert torch.equal(call(name, x, y, ALL).data, ref_int(fn, dtype, x, y)), name
    assert torch.equal(call("not_", x, ALL).data, ref_int(torch.bitwise_not, dtype, x))
    assert torch.equal(call("shift_left", x, 3, ALL).data, ref_int(lambda a: a << 3, dtype, x))
    assert torch.equal(call("shift_right", x, 2, ALL).data, ref_int(lambda a: a >> 2, dtype, x))
    if dtype is not DT.UINT32:  # (the 64-bit unsigned product: test_mull_uint32_high_word)
        full = x.data.to(torch.int64) * y.data.to(torch.int64)
        assert torch.equal(call("mull", x, y, ALL).data, wrap(full >> dtype.bits, dtype))
    carry = half_mask(dtype)
    c = carry.lanes(dtype).to(torch.int64)
    assert torch.equal(call("addc", x, y, carry).data,
                       ref_int(lambda a, b: a + b + c, dtype, x, y))
    assert torch.equal(call("subc", x, y, carry).data,
                       ref_int(lambda a, b: a - b - c, dtype, x, y))


def test_mull_uint32_high_word():
    x = Reg(torch.tensor([0xFFFFFFFF, 0x80000000, 12345] + [1] * 61,
                         dtype=torch.int64).to(torch.uint32), DT.UINT32)
    y = Reg(torch.tensor([0xFFFFFFFF, 4, 67890] + [1] * 61, dtype=torch.int64).to(torch.uint32),
            DT.UINT32)
    got = call("mull", x, y, ALL).data.to(torch.int64)[:3].tolist()
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
    assert mx.data[0] == x.data[on].max() and not mx.data[1:].any()
    mn = call("reduce_min", x, m)
    assert mn.data[0] == x.data[on].min()
    assert call("reduce_max", x, call("create_mask", attrs.MaskPattern.ALLF, dtype=dtype)
                ).data[0] == 0  # no active lane: zero
    blocks = call("reduce_sum", x, ALL, True)
    assert torch.equal(blocks.data[:8], conv(_tree_sum(vals.reshape(8, -1))).reshape(8))
    old = rand_reg(dtype, 12)
    merged = call("reduce_max", x, ALL, old=old, mode=attrs.MergeMode.MERGING)
    assert torch.equal(merged.data[1:], old.data[1:])
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
    assert int(down.data[3]) == 97
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
    assert (call("astype", big, ALL, dtype=DT.INT32).data == 2**31 - 1).all()  # saturates


def test_astype_widening_narrowing_layouts():
    h = Reg(torch.arange(128, dtype=torch.float16), DT.FP16)
    lo = call("astype", h, ALL, dtype=DT.FP32)
    hi = call("astype", h, ALL, DT.FP32, attrs.CastLayout.ONE, dtype=DT.FP32)
    assert torch.equal(lo.data, torch.arange(64.0)) and torch.equal(hi.data,
                                                                    torch.arange(64.0) + 64)
    f = Reg(torch.arange(64, dtype=torch.float32) + 0.25, DT.FP32)
    upper = call("astype", f, ALL, DT.FP16, attrs.CastLayout.ONE, dtype=DT.FP16, old=h)
    assert torch.equal(upper.data[64:], f.data.half()) and torch.equal(upper.data[:64],
                                                                       h.data[:64])


def test_astype_fp8_and_saturation():
    x = Reg(torch.tensor([1.0, 1000.0, -1000.0, 0.3] * 16), DT.FP32)
    e4 = call("astype", x, ALL, dtype=DT.FP8E4M3FN)
    assert e4.data.dtype == torch.float8_e4m3fn
    assert torch.equal(e4.data[:4].float(), torch.tensor([1.0, 448.0, -448.0, 0.3]).to(
        torch.float8_e4m3fn).float())
    h = call("astype", x, ALL, dtype=DT.FP16)
    assert torch.isfinite(h.data.float()).all()
    over = Reg(torch.full((64,), 1e6), DT.FP32)  # narrowing: destination lanes 0..63
    assert torch.isinf(call("astype", over, ALL, dtype=DT.FP16).data[:64].float()).all()
    sat = call("astype", over, ALL, saturate=attrs.SaturateMode.ON, dtype=DT.FP16)
    assert (sat.data[:64].float() == 65504.0).all()
    i = Reg(torch.tensor([300, -300, 5, 127] * 16, dtype=torch.int32), DT.INT32)
    wrapped = call("astype", i, ALL, dtype=DT.INT8)
    assert wrapped.data[:4].tolist() == [44, -44, 5, 127]
    clamped = call("astype", i, ALL, saturate=attrs.SaturateMode.ON, dtype=DT.INT8)
    assert clamped.data[:4].tolist() == [127, -128, 5, 127]


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
    il = call("interleave", a, b)
    assert il.data[:4].tolist() == [0, 0, 1, -1]
    hi = call("interleave", a, b, attrs.PackPart.UPPER)
    assert hi.data[:2].tolist() == [32, -32]
    assert torch.equal(call("de_interleave", il, call("interleave", a, b,
                                                      attrs.PackPart.UPPER)).data, a.data)
    assert torch.equal(call("de_interleave", il, hi, attrs.PackPart.UPPER).data, b.data)


def test_squeeze_unsqueeze_and_spr():
    st = VFState([], torch.zeros(0, dtype=torch.uint8), 0)
    x = Reg(torch.arange(64, dtype=torch.float32), DT.FP32)
    m = mask_of_lanes(torch.arange(64) % 3 == 0, DT.FP32)
    sq = call("squeeze", x, m, st=st)
    assert st.spr == 22 and torch.equal(sq.data[:22], torch.arange(0, 64, 3.0))
    assert not sq.data[22:].any()
    back = call("unsqueeze", sq, m)
    assert torch.equal(back.data, torch.where(m.lanes(DT.FP32), x.data, 0))
    call("squeeze", x, ALL, attrs.SqueezeMode.NO_STORE_REG, st=st)
    assert st.spr == 22
    call("clear_spr", st=st)
    assert st.spr == 0


def test_muls_cast_and_histograms():
    x = Reg(torch.linspace(-2, 2, 64), DT.FP32)
    got = call("muls_cast", x, 3.0, ALL, dtype=DT.FP16)
    assert torch.equal(got.data[:64], (x.data * 3.0).half()) and not got.data[64:].any()
    codes = Reg(torch.tensor(list(range(200)) + [7] * 56, dtype=torch.uint8), DT.UINT8)
    hist = call("histograms", codes, ALL, dtype=DT.UINT16)
    assert hist.data.to(torch.int64)[7] == 57 and hist.data.to(torch.int64)[100] == 1
    assert int(hist.data.to(torch.int64).sum()) == 128 + 56
    upper = call("histograms", codes, ALL, attrs.BinType.BIN1, dtype=DT.UINT16)
    assert int(upper.data.to(torch.int64).sum()) == 200 - 128
    acc = call("histograms", codes, ALL, attrs.BinType.BIN0, attrs.HistType.ACCUMULATE,
               dtype=DT.UINT16, old=hist)
    assert int(acc.data.to(torch.int64)[7]) == 114


def test_astype_fp4_packs_two_lanes_per_byte():
    x = Reg(torch.tensor([1.0, -1.5, 3.2, 0.24] * 16), DT.FP32)
    f4 = call("astype", x, ALL, dtype=DT.FP4E2M1)
    assert f4.data.numel() == 256 and lane_count(DT.FP4E2M1) == 512
    assert f4.data[:2].tolist() == [0x2 | (0xB << 4), 0x5]  # (1, -1.5), (3, 0)
    back = call("astype", f4, ALL, dtype=DT.FP16)
    assert back.data[:4].tolist() == [1.0, -1.5, 3.0, 0.0]
    upper = call("astype", x, ALL, layout=attrs.CastLayout.ONE, dtype=DT.FP4E2M1, old=f4)
    assert torch.equal(upper.data[:32], f4.data[:32]) and torch.equal(upper.data[32:64],
                                                                      f4.data[:32])
