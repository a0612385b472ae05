"""`pl.dump_data` prints the same text on every backend, the text the real toolchain's device
code prints: the simulator (timed and functional) and the native backend agree byte for byte on
whole tiles (padding marks, FP16 / BF16 / integer / one-column tiles), tile windows clamped to
the valid shape (the code generator's print loops), GM tensor windows of rank 1 to 3, and the
flag / location lines; spot lines are checked against the real formats."""
from __future__ import annotations

import pytest
import torch

import pypto_pro
import pypto_pro.language as pl

T = pl.TileType([16, 32], pl.DT_FP32)
H = pl.TileType([8, 16], pl.DT_FP16)
B = pl.TileType([8, 16], pl.DT_BF16)
I8 = pl.TileType([8, 32], pl.DT_INT8)
COL = pl.TileType([16, 1], pl.DT_FP32)


@pl.jit(arch="a5")
def dumps(x: pl.Tensor[[16, 32], pl.DT_FP32], h: pl.Tensor[[8, 16], pl.DT_FP16],
          b: pl.Tensor[[8, 16], pl.DT_BF16], q: pl.Tensor[[8, 32], pl.DT_INT8],
          c: pl.Tensor[[16, 1], pl.DT_FP32], y: pl.Tensor[[3, 4, 5], pl.DT_INT32],
          v: pl.Tensor[[7], pl.DT_UINT16], n: pl.Scalar[pl.DT_INT32]):
    with pl.section_vector():
        t = pl.make_tile(T, addr=0)
        th = pl.make_tile(H, addr=0x800)
        tb = pl.make_tile(B, addr=0xA00)
        tq = pl.make_tile(I8, addr=0xC00)
        tc = pl.make_tile(COL, addr=0xE00)
        pl.load(t, x, [0, 0])
        pl.load(th, h, [0, 0])
        pl.load(tb, b, [0, 0])
        pl.load(tq, q, [0, 0])
        pl.load(tc, c, [0, 0])
        pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
        pl.set_validshape(t, [12, 30])
        pl.dump_data(t, offsets=[2, n], shapes=[3, 40], flag="window")
        pl.dump_data(t, offsets=[10, 0], shapes=[n, 2])
        pl.dump_data(t, loc=True)
        pl.dump_data(th)
        pl.dump_data(tb, offsets=[1, 1], shapes=[2, 3])
        pl.dump_data(tq)
        pl.dump_data(tc)
        pl.dump_data(x, offsets=[1, 2], shapes=[2, 3])
        pl.dump_data(c)
        pl.dump_data(y)
        pl.dump_data(y, offsets=[1, 1, n], shapes=[2, 2, 1])
        pl.dump_data(v)


def _args():
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(16, 32, generator=gen)
    x[0, 0], x[0, 1], x[2, 6] = float("nan"), float("inf"), -0.0
    h = torch.randn(8, 16, generator=gen).half()
    b = torch.randn(8, 16, generator=gen).bfloat16()
    q = torch.randint(-128, 128, (8, 32), generator=gen, dtype=torch.int8)
    c = torch.arange(16, dtype=torch.float32).reshape(16, 1) / 4
    y = torch.arange(60, dtype=torch.int32).reshape(3, 4, 5) - 30
    v = torch.tensor([0, 1, 2, 40000, 65535, 7, 8], dtype=torch.int32).to(torch.uint16)
    return x, h, b, q, c, y, v, 4


@pytest.fixture(scope="module")
def printed(native_backend):
    out = {}
    for backend in ("sim", "native"):
        with pypto_pro.use_backend(backend):
            dumps[None, 1](*_args())
        out[backend] = dumps.last_result.printed[0]
    return out


def test_every_backend_prints_the_same(printed, sim_functional):
    with pypto_pro.use_backend(sim_functional):
        dumps[None, 1](*_args())
    assert printed["sim"] == printed["native"]
    assert dumps.last_result.printed[0] == printed["sim"]


def test_the_real_formats(printed):
    lines = printed["sim"].splitlines()
    x, h, *_ = _args()
    at = lines.index("=== [flag] window ===")
    assert lines[at + 1] == "=== [TPRINT Tile Window] Data Type: float32, Layout: ND, " \
                            "TileType: Vec ==="
    assert lines[at + 2] == "  Source Shape: [16, 32], Window Offsets: [2, 4], Requested " \
                            "Shape: [3, 40], Valid Shape: [3, 26]"  # clamped to the valid cols
    assert lines[at + 3] == "".join("%f " % v for v in x[2, 4:30].tolist())
    assert "  Source Shape: [16, 32], Window Offsets: [10, 0], Requested Shape: [4, 2], Valid " \
           "Shape: [2, 2]" in lines  # clamped to the valid rows
    at = lines.index("=== [dump_tile] dtype: float32, shape=[16,32], valid=[12,30], Layout: ND ===")
    assert lines[at - 1] == "[test_dump_output.py:42] dump_tile"
    assert lines[at + 1].startswith("nan inf ") and lines[at + 1].split()[30] == "|"
    assert lines[at + 3].split()[6] == "-0.000000"
    assert lines[at + 13] == "--------"
    assert "=== [dump_tile] dtype: float16, shape=[8,16], valid=[8,16], Layout: ND ===" in lines
    assert "".join("%f " % v for v in h[0].float().tolist()) in lines
    assert "=== [TPRINT Tile Window] Data Type: unknown, Layout: ND, TileType: Vec ===" in lines
    assert "=== [dump_tile] dtype: int8, shape=[8,32], valid=[8,32], Layout: ND ===" in lines
    at = lines.index("=== [dump_tile] dtype: float32, shape=[16,1], valid=[16,1], Layout: DN ===")
    assert lines[at + 2] == "0.250000 "
    assert "=== [dump_tensor] dtype: float32, Layout: ND, shape=[1,1,1,2,3] ===" in lines
    assert "=== [dump_tensor] dtype: float32, Layout: DN, shape=[1,1,1,16,1] ===" in lines
    at = lines.index("=== [dump_tensor] dtype: int32, Layout: ND, shape=[1,1,2,2,1] ===")
    assert lines[at + 1:at + 7] == ["  Batch [0, 0, 0]:", "-1 ", "4 ", "  Batch [0, 0, 1]:",
                                    "19 ", "24 "]
    at = lines.index("=== [dump_tensor] dtype: uint16, Layout: ND, shape=[1,1,1,1,7] ===")
    assert lines[at + 2] == "0 1 2 40000 65535 7 8 "
