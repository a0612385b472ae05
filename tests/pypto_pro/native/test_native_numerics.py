"""The CPU headers' number handling agrees bit for bit with what the simulator computes: half /
bfloat16 conversions (every half value, random floats, ties, overflow, subnormals), the
simulator's exact rounding to every float format and mode, torch's float32 summation order for
row and column sums, and the physical element order of every tile layout."""
from __future__ import annotations

import ctypes
import hashlib
import subprocess

import pytest
import torch

from pypto_pro.ir.dtype import DataType
from pypto_pro.ir.types import TileLayout
from pypto_pro.runtime.backends.native import INCLUDE_DIR
from pypto_pro.sim.model import layout as sim_layout
from pypto_pro.sim.ops.numerics import FORMATS, RoundMode, round_float

SOURCE = r"""
#include <pto/pto-inst.hpp>
using namespace pypto_native;
extern "C" {
void to_half(const float* in, uint16_t* out, long n)
{ for (long i = 0; i < n; ++i) out[i] = half(in[i]).bits; }
void from_half(const uint16_t* in, float* out, long n)
{ for (long i = 0; i < n; ++i) out[i] = half::from_bits(in[i]); }
void to_bf16(const float* in, uint16_t* out, long n)
{ for (long i = 0; i < n; ++i) out[i] = bfloat16_t(in[i]).bits; }
void round_to(const double* in, double* out, long n, int dt, int mode) {
    FloatFormat f = format_of(static_cast<DT>(dt));
    for (long i = 0; i < n; ++i) out[i] = round_float(in[i], f, static_cast<RoundMode>(mode));
}
void rows_sum(const float* x, long r, long c, float* out) { sum_rows(x, r, c, out); }
void cols_sum(const float* x, long r, long c, float* out) { sum_cols(x, r, c, out); }
void offsets(long rows, long cols, long elem, int col, int sl, long fractal, int compact,
             long vr, long vc, long* out) {
    Geometry g = make_geometry(TileType::Vec, rows, cols, elem,
                               col ? pto::BLayout::ColMajor : pto::BLayout::RowMajor,
                               static_cast<pto::SLayout>(sl), fractal, pto::PadValue::Null,
                               static_cast<pto::CompactMode>(compact), vr, vc);
    for (long r = 0; r < rows; ++r)
        for (long c = 0; c < cols; ++c) out[r * cols + c] = element_offset(g, r, c);
}
}
"""
#: pypto_native::DT codes
DT_CODES = {DataType.FP16: 9, DataType.BF16: 10, DataType.FP32: 11, DataType.FP8E4M3FN: 12,
            DataType.FP8E5M2: 13, DataType.HF8: 15}


@pytest.fixture(scope="module")
def lib(tmp_path_factory) -> ctypes.CDLL:
    digest = hashlib.sha256(SOURCE.encode()).hexdigest()[:12]
    root = tmp_path_factory.mktemp("native_numerics")
    src, so = root / "t.cpp", root / f"t_{digest}.so"
    src.write_text(SOURCE)
    subprocess.run(["g++", "-std=c++17", "-O2", "-fPIC", "-shared", "-pthread",
                    f"-I{INCLUDE_DIR}", str(src), "-o", str(so)], check=True)
    return ctypes.CDLL(str(so))


def _p(t: torch.Tensor) -> ctypes.c_void_p:
    return ctypes.c_void_p(t.data_ptr())


def test_every_half_value_converts_exactly(lib):
    bits = torch.arange(65536, dtype=torch.int32).to(torch.int16)
    out = torch.empty(65536, dtype=torch.float32)
    lib.from_half(_p(bits), _p(out), ctypes.c_long(65536))
    ref = bits.view(torch.float16).float()
    same = (out.view(torch.int32) == ref.view(torch.int32)) | (out.isnan() & ref.isnan())
    assert bool(same.all())


@pytest.mark.parametrize("name", ["half", "bf16"])
def test_float_to_16_bit_rounds_like_torch(lib, name):
    g = torch.Generator().manual_seed(0)
    x = torch.cat([torch.randn(200000, generator=g) * s for s in (1e-8, 1e-5, 1, 1e3, 7e4)])
    halfway = (torch.arange(1, 2048, dtype=torch.float32) + 0.5) * 2.0 ** -10  # fp16 ties
    x = torch.cat([x, halfway, -halfway, torch.tensor([65504.0, 65519.0, 65520.0, 1e9,
                                                       float("inf"), -float("inf"), 0.0,
                                                       -0.0, 5.9e-8, 2.98e-8, 1e-45])])
    out = torch.empty(x.numel(), dtype=torch.int16)
    if name == "half":
        lib.to_half(_p(x), _p(out), ctypes.c_long(x.numel()))
        ref = x.to(torch.float16).view(torch.int16)
    else:
        lib.to_bf16(_p(x), _p(out), ctypes.c_long(x.numel()))
        ref = x.to(torch.bfloat16).view(torch.int16)
    assert torch.equal(out, ref)


@pytest.mark.parametrize("dtype", list(DT_CODES))
@pytest.mark.parametrize("mode", [m for m in RoundMode])
def test_round_float_matches_the_simulator(lib, dtype, mode):
    g = torch.Generator().manual_seed(1)
    x = torch.cat([torch.randn(5000, generator=g, dtype=torch.float64) * s
                   for s in (1e-9, 1e-3, 1.0, 30.0, 1e5, 1e40)] +
                  [torch.tensor([0.0, -0.0], dtype=torch.float64)])
    out = torch.empty_like(x)
    lib.round_to(_p(x), _p(out), ctypes.c_long(x.numel()), DT_CODES[dtype], int(mode))
    ref = round_float(x, FORMATS[dtype], mode)
    assert torch.equal(out.view(torch.int64), ref.view(torch.int64))  # (bits: -0.0 != 0.0)


SHAPES = [(1, 1), (1, 7), (3, 8), (5, 9), (16, 1), (1, 300), (7, 31), (13, 64), (100, 300),
          (37, 512), (64, 130), (300, 7), (257, 33), (2, 5000), (4100, 3), (129, 257)]


@pytest.mark.parametrize("rows,cols", SHAPES)
def test_sums_follow_torchs_order(lib, rows, cols):
    g = torch.Generator().manual_seed(rows * 1000 + cols)
    x = (torch.randn(rows, cols, generator=g) * 3).contiguous()
    out_r = torch.empty(rows)
    out_c = torch.empty(cols)
    lib.rows_sum(_p(x), ctypes.c_long(rows), ctypes.c_long(cols), _p(out_r))
    lib.cols_sum(_p(x), ctypes.c_long(rows), ctypes.c_long(cols), _p(out_c))
    assert torch.equal(out_r, x.sum(1)), "row sums"
    assert torch.equal(out_c, x.sum(0)), "column sums"


LAYOUTS = [(TileLayout.ND, 0, 0), (TileLayout.DN, 1, 0), (TileLayout.NZ, 1, 1),
           (TileLayout.ZN, 0, 2), (TileLayout.NN, 1, 2), (TileLayout.ZZ, 0, 1)]


@pytest.mark.parametrize("layout,col,sl", LAYOUTS)
@pytest.mark.parametrize("dtype,fractal", [(DataType.FP16, 512), (DataType.FP32, 512),
                                           (DataType.FP32, 1024), (DataType.INT8, 512)])
@pytest.mark.parametrize("compact", [0, 1, 2])
def test_tile_layouts_match_the_simulator(lib, layout, col, sl, dtype, fractal, compact):
    rows, cols, valid = 64, 64, (40, 24)
    out = torch.empty(rows * cols, dtype=torch.int64)
    lib.offsets(ctypes.c_long(rows), ctypes.c_long(cols), ctypes.c_long(dtype.itemsize),
                col, sl, ctypes.c_long(fractal), compact, ctypes.c_long(valid[0]),
                ctypes.c_long(valid[1]), _p(out))
    fr = sim_layout.fractal_shape(layout, dtype.bits, fractal)
    stride = sim_layout.outer_stride(layout, (rows, cols), fr, compact, valid)
    ref = sim_layout.element_offsets((rows, cols), layout, fr, stride)
    assert torch.equal(out.reshape(rows, cols), ref)
