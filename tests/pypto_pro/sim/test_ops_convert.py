"""Casts: every rounding mode exactly and saturation (the fused *_cast ops: `test_ops_fused`)."""
from __future__ import annotations

import pytest
import torch

from pypto_pro.ir.dtype import DataType as D
from pypto_pro.ir.types import MemorySpace as M
from pypto_pro.ir.types import TileLayout as L
from pypto_pro.sim.model.memory import CoreMemory, TileGeometry, TileRef, storage_dtype
from pypto_pro.sim.ops import IMPLS, SimOpError
from pypto_pro.sim.ops.numerics import RoundMode as R
from pypto_pro.soc import soc


def cast(values, src, dst, mode, **kwargs):
    mem = CoreMemory(soc(), "aiv")
    n = values.numel()
    a = TileRef(mem, TileGeometry(1, 64, src, M.Vec, L.ND, addr=0), 1, n)
    out = TileRef(mem, TileGeometry(1, 64, dst, M.Vec, L.ND, addr=1024), 1, n)
    a.write(values.reshape(1, n).to(storage_dtype(src)))
    IMPLS["block.cast"]([out, a], {"mode": mode, **kwargs})
    return out.read().reshape(-1)


def test_fp32_to_int32_rounding_modes():
    x = torch.tensor([2.5, 3.5, -2.5, -2.4, 2.6, -0.5, 7.0])
    assert cast(x, D.FP32, D.INT32, R.CAST_RINT).tolist() == [2, 4, -2, -2, 3, 0, 7]
    assert cast(x, D.FP32, D.INT32, R.CAST_ROUND).tolist() == [3, 4, -3, -2, 3, -1, 7]
    assert cast(x, D.FP32, D.INT32, R.CAST_FLOOR).tolist() == [2, 3, -3, -3, 2, -1, 7]
    assert cast(x, D.FP32, D.INT32, R.CAST_CEIL).tolist() == [3, 4, -2, -2, 3, 0, 7]
    assert cast(x, D.FP32, D.INT32, R.CAST_TRUNC).tolist() == [2, 3, -2, -2, 2, 0, 7]
    assert cast(x, D.FP32, D.INT32, int(R.CAST_TRUNC)).tolist() == [2, 3, -2, -2, 2, 0, 7]


def test_float_to_int_saturates_and_nan_is_zero():
    x = torch.tensor([1e10, -1e10, float("nan"), 300.0, -300.0])
    assert cast(x, D.FP32, D.INT32, R.CAST_RINT).tolist()[:3] == [2**31 - 1, -2**31, 0]
    assert cast(x, D.FP32, D.INT8, R.CAST_RINT).tolist()[3:] == [127, -128]
    assert cast(torch.tensor([300, -300]), D.INT32, D.INT8, R.CAST_NONE).tolist() == [127, -128]


def test_int32_to_int16_and_int64_to_int32_keep_the_low_bits():
    """pto-isa's a5 TCVT(dst, src, mode) runs these two narrowings with saturation off."""
    assert cast(torch.tensor([70000, -70000]), D.INT32, D.INT16, R.CAST_NONE).tolist() == \
        [4464, -4464]
    assert cast(torch.tensor([2**32 + 5, -(2**31) - 1]), D.INT64, D.INT32,
                R.CAST_NONE).tolist() == [5, 2**31 - 1]


def test_fp32_to_fp16_trunc_rint_round_odd_differ():
    # 1 + 2**-11 is halfway between fp16 1.0 and 1 + 2**-10
    half_way = 1.0 + 2.0**-11
    above = 1.0 + 2.0**-11 + 2.0**-20
    x = torch.tensor([half_way, above, -above, 1.0 + 3 * 2.0**-11])
    rint = cast(x, D.FP32, D.FP16, R.CAST_RINT).float().tolist()
    assert rint == [1.0, 1 + 2**-10, -(1 + 2**-10), 1 + 2 * 2**-10]
    trunc = cast(x, D.FP32, D.FP16, R.CAST_TRUNC).float().tolist()
    assert trunc == [1.0, 1.0, -1.0, 1 + 2**-10]
    assert cast(x, D.FP32, D.FP16, R.CAST_ROUND).float().tolist()[0] == 1 + 2**-10
    assert cast(x, D.FP32, D.FP16, R.CAST_FLOOR).float().tolist()[2] == -(1 + 2**-10)
    assert cast(x, D.FP32, D.FP16, R.CAST_CEIL).float().tolist()[0] == 1 + 2**-10
    odd = cast(x, D.FP32, D.FP16, R.CAST_ODD).float().tolist()
    assert odd == [1 + 2**-10, 1 + 2**-10, -(1 + 2**-10), 1 + 2**-10]
    exact = torch.tensor([1.5, -0.25])
    assert cast(exact, D.FP32, D.FP16, R.CAST_ODD).float().tolist() == [1.5, -0.25]


def test_overflow_goes_to_inf_or_max_by_mode():
    big = torch.tensor([70000.0, -70000.0])
    assert cast(big, D.FP32, D.FP16, R.CAST_RINT).float().tolist() == [float("inf"),
                                                                       float("-inf")]
    assert cast(big, D.FP32, D.FP16, R.CAST_TRUNC).float().tolist() == [65504.0, -65504.0]
    assert cast(big, D.FP32, D.FP16, R.CAST_FLOOR).float().tolist() == [65504.0, float("-inf")]
    assert cast(torch.tensor([1000.0]), D.FP32, D.FP8E4M3FN, R.CAST_RINT).float().item() == 448


def test_cast_default_mode_is_round_and_matches_torch_for_bf16():
    x = torch.randn(64, generator=torch.Generator().manual_seed(0)) * 100
    assert torch.equal(cast(x, D.FP32, D.BF16, R.CAST_RINT), x.to(torch.bfloat16))
    assert torch.equal(cast(x, D.FP32, D.FP16, None), x.to(torch.float16))
    widened = cast(x.to(torch.float16), D.FP16, D.FP32, R.CAST_NONE)
    assert torch.equal(widened, x.to(torch.float16).float())
    ints = cast(torch.tensor([16777217, 3]), D.INT32, D.FP32, R.CAST_RINT)
    assert ints.tolist() == [16777216.0, 3.0]
    assert cast(torch.tensor([16777217]), D.INT32, D.FP32, R.CAST_CEIL).item() == 16777218.0


def test_cast_to_hif8_and_odd_to_int_rejected():
    codes = cast(torch.tensor([1.0, 1.125, 0.0]), D.FP32, D.HF8, R.CAST_ROUND)
    assert codes.tolist() == [0x08, 0x09, 0x00]
    with pytest.raises(SimOpError, match="CAST_ODD"):
        cast(torch.tensor([1.0]), D.FP32, D.INT32, R.CAST_ODD)
