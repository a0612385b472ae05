"""Issue 21, class 6: arguments the real runtime accepts, bound as it binds them.

The real `_validate_tensor_arg` checks a tensor's torch dtype only for the dtypes its
`_PL_DTYPE_TO_TORCH` names (FP16, BF16, FP32, INT8/16/32/64, UINT8, UINT64, BOOL, HF8 as uint8);
a DT_UINT16 / DT_UINT32 (or FP8, 4-bit) parameter takes any tensor, whose bytes the kernel reads
as its own dtype — torch has few unsigned ops, so real kernels pass int16 / int32 tensors. An
int scalar argument becomes a ctypes integer of the parameter's width: no range check, the bits
wrap (`3212836864` for a DT_INT32 holds the bits of -1.0f). Each kernel runs on every backend
and is checked against torch.
"""
from __future__ import annotations

import pytest
import torch

import pypto_pro.language as pl
from pypto_pro.errors import InvalidType

R, C = 16, 64
U32 = pl.TileType([R, C], pl.DT_UINT32)
U16 = pl.TileType([R, C], pl.DT_UINT16)


@pl.jit(arch="a5", auto_mutex=True)
def unsigned_kernel(x: pl.Tensor[[R, C], pl.DT_UINT32], shift: pl.Tensor[[R, C], pl.DT_UINT32],
                    y: pl.Tensor[[R, C], pl.DT_UINT16], z: pl.Tensor[[R, C], pl.DT_UINT16],
                    out32: pl.Tensor[[R, C], pl.DT_UINT32],
                    out16: pl.Tensor[[R, C], pl.DT_UINT16]):
    with pl.section_vector():
        a = pl.make_tile_group(type=U32, addrs=0x0000, mutex_ids=[0])
        s = pl.make_tile_group(type=U32, addrs=0x1000, mutex_ids=[1])
        b = pl.make_tile_group(type=U16, addrs=0x2000, mutex_ids=[2])
        c = pl.make_tile_group(type=U16, addrs=0x2800, mutex_ids=[3])
        ta, ts, tb, tc = a.current(), s.current(), b.current(), c.current()
        pl.load(ta, x, [0, 0])
        pl.load(ts, shift, [0, 0])
        pl.load(tb, y, [0, 0])
        pl.load(tc, z, [0, 0])
        pl.shr(ta, ta, ts)  # logical on UINT32: the sign bit of the int32 input shifts in 0s
        pl.maximum(tb, tb, tc)  # unsigned: int16 -1 is 0xFFFF, the largest
        pl.store(out32, ta, [0, 0])
        pl.store(out16, tb, [0, 0])


def test_signed_tensors_for_unsigned_parameters_are_read_bit_for_bit(everywhere):
    g = torch.Generator().manual_seed(6)
    x = torch.randint(-2**31, 2**31, (R, C), generator=g, dtype=torch.int64).to(torch.int32)
    shift = torch.randint(0, 32, (R, C), generator=g, dtype=torch.int32)
    y = torch.randint(-2**15, 2**15, (R, C), generator=g, dtype=torch.int32).to(torch.int16)
    z = torch.randint(-2**15, 2**15, (R, C), generator=g, dtype=torch.int32).to(torch.int16)

    def launch():
        out32 = torch.zeros(R, C, dtype=torch.int32)
        out16 = torch.zeros(R, C, dtype=torch.int16)
        unsigned_kernel(x, shift, y, z, out32, out16)
        return out32, out16

    ux = x.to(torch.int64) & 0xFFFFFFFF
    want32 = (ux >> shift.to(torch.int64)).to(torch.int32)  # wraps back to int32 bits
    want16 = torch.maximum(y.to(torch.int32) & 0xFFFF, z.to(torch.int32) & 0xFFFF)
    want16 = want16.to(torch.int16)
    for engine, (out32, out16) in everywhere(launch).items():
        assert torch.equal(out32, want32), engine
        assert torch.equal(out16, want16), engine


@pl.jit(arch="a5")
def scalar_bits_kernel(out: pl.Tensor[[4], pl.DT_INT32], bits: pl.DT_INT32,
                       small: pl.DT_UINT8, wide: pl.DT_UINT32):
    with pl.section_vector():
        pl.setval(out, 0, bits)
        pl.setval(out, 1, small)
        pl.setval(out, 2, wide)
        pl.setval(out, 3, bits >> 31)


def test_int_scalars_wrap_to_the_parameter_width(everywhere):
    def launch():
        out = torch.zeros(4, dtype=torch.int32)
        scalar_bits_kernel(out, 3212836864, -1, -2)  # 0xBF800000, 0xFF, 0xFFFFFFFE
        return out

    for engine, out in everywhere(launch).items():
        assert out[:1].view(torch.float32).item() == -1.0, engine
        assert out.tolist()[1:] == [255, -2, -1], engine  # UINT32 0xFFFFFFFE stored as INT32


@pl.jit(arch="a5")
def uint8_copy(x: pl.Tensor[[1, 32], pl.DT_UINT8], w: pl.Tensor[[1, 4], pl.DT_UINT64]):
    with pl.section_vector():
        pl.setval(x, 0, pl.getval(w, 0))


@pytest.mark.parametrize("arg, name", [(0, "x"), (1, "w")])
def test_checked_dtypes_still_refuse_the_other_signedness(arg, name):
    """UINT8 and UINT64 are in the real runtime's table: an int8 / int64 tensor is refused."""
    x = torch.zeros(1, 32, dtype=torch.uint8)
    w = torch.zeros(1, 4, dtype=torch.uint64)
    args = [x, w]
    args[arg] = args[arg].to(torch.int8 if arg == 0 else torch.int64)
    with pytest.raises(InvalidType, match=rf"arg\[{arg}\] '{name}': dtype mismatch"):
        uint8_copy(*args)
