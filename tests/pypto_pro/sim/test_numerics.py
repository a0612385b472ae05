"""Number formats: exact rounding against torch, and the HiF8 / FP4 / INT4 / E8M0 codecs."""
from __future__ import annotations

import math

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pypto_pro.ir.dtype import DataType as D
from pypto_pro.sim.ops.numerics import (
    FORMATS,
    decode_e8m0,
    decode_fp4,
    decode_hif8,
    decode_int4,
    encode_fp4,
    encode_hif8,
    encode_int4,
    round_float,
)
from pypto_pro.sim.ops.numerics import RoundMode as R

finite_floats = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, width=32)


@settings(max_examples=200, deadline=None)
@given(st.lists(finite_floats, min_size=1, max_size=32))
def test_rint_matches_torch_for_fp16_bf16_fp8(values):
    x = torch.tensor(values, dtype=torch.float32)
    for dtype, torch_dtype in ((D.FP16, torch.float16), (D.BF16, torch.bfloat16),
                               (D.FP8E5M2, torch.float8_e5m2)):
        ours = round_float(x, FORMATS[dtype], R.CAST_RINT)
        assert torch.equal(ours, x.to(torch_dtype).to(torch.float64))
    in_range = x.clamp(-448, 448)
    ours = round_float(in_range, FORMATS[D.FP8E4M3FN], R.CAST_RINT)
    assert torch.equal(ours, in_range.to(torch.float8_e4m3fn).to(torch.float64))


@settings(max_examples=100, deadline=None)
@given(st.lists(finite_floats, min_size=1, max_size=16))
def test_directed_modes_bracket_the_value(values):
    x = torch.tensor(values, dtype=torch.float32).to(torch.float64)
    fmt = FORMATS[D.FP16]
    floor, ceil = round_float(x, fmt, R.CAST_FLOOR), round_float(x, fmt, R.CAST_CEIL)
    trunc = round_float(x, fmt, R.CAST_TRUNC)
    assert torch.all(floor <= x) and torch.all(ceil >= x)
    assert torch.all(trunc.abs() <= x.abs())
    odd = round_float(x, fmt, R.CAST_ODD)
    assert torch.all((odd == floor) | (odd == ceil))


def test_hif8_decoding_matches_the_format():
    codes = torch.tensor([0x00, 0x08, 0x09, 0x10, 0x18, 0x20, 0x6E, 0x6F, 0x80, 0x01, 0x07,
                          0x88, 0x40])
    values = decode_hif8(codes).tolist()
    assert values[:3] == [0.0, 1.0, 1.125]
    assert values[3] == 2.0 and values[4] == 0.5  # dot 001, exponent sign bit
    assert values[5] == 4.0  # dot 01: E = 2
    assert values[6] == 2.0**15 and math.isinf(values[7])
    assert math.isnan(values[8])
    assert values[9] == 2.0**-22 and values[10] == 2.0**-16  # denormals
    assert values[11] == -1.0 and values[12] == 16.0  # dot 10: E = 4


def test_hif8_round_trip_and_rounding():
    codes = torch.arange(256, dtype=torch.uint8)
    values = decode_hif8(codes)
    finite = ~torch.isnan(values)
    again = encode_hif8(values[finite])
    assert torch.equal(decode_hif8(again), values[finite])
    # 1.0625 is halfway between 1.0 and 1.125: ties away (default) vs ties to even
    assert decode_hif8(encode_hif8(torch.tensor([1.0625]))).item() == 1.125
    assert decode_hif8(encode_hif8(torch.tensor([1.0625]), R.CAST_RINT)).item() == 1.0
    assert math.isinf(decode_hif8(encode_hif8(torch.tensor([1e6]))).item())
    assert decode_hif8(encode_hif8(torch.tensor([2.0**-30]))).item() == 0.0


def test_fp4_int4_and_e8m0_codecs():
    e2m1 = decode_fp4(torch.arange(16, dtype=torch.uint8))
    assert e2m1[:8].tolist() == [0, 0.5, 1, 1.5, 2, 3, 4, 6]
    assert e2m1[8:].tolist() == [-0.0, -0.5, -1, -1.5, -2, -3, -4, -6]
    e1m2 = decode_fp4(torch.arange(8, dtype=torch.uint8), D.FP4E1M2)
    assert e1m2.tolist() == [0, 0.25, 0.5, 0.75, 1, 1.25, 1.5, 1.75]
    assert encode_fp4(torch.tensor([2.5, 2.6, -7.0, 0.2])).tolist() == [4, 5, 15, 0]
    assert decode_int4(encode_int4(torch.tensor([-8, -1, 0, 7]))).tolist() == [-8, -1, 0, 7]
    assert decode_e8m0(torch.tensor([127, 128, 0, 255], dtype=torch.uint8))[:3].tolist() == \
        [1.0, 2.0, 2.0**-127]
    assert math.isnan(decode_e8m0(torch.tensor([255], dtype=torch.uint8)).item())
