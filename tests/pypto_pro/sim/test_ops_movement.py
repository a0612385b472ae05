"""load / store / move / insert / ub_copy / init_output / getval / setval."""
from __future__ import annotations

import pytest
import torch

from pypto_pro.ir.dtype import DataType as D
from pypto_pro.ir.types import MemorySpace as M
from pypto_pro.ir.types import TileLayout as L
from pypto_pro.sim.model.memory import CoreMemory, GMRef, SimMemoryError, TileGeometry, TileRef
from pypto_pro.sim.ops import IMPLS, SimOpError
from pypto_pro.soc import soc


def tile(mem, rows, cols, dtype, space=M.Vec, layout=L.ND, addr=0, valid=None, fractal=512):
    return TileRef(mem, TileGeometry(rows, cols, dtype, space, layout, fractal, addr),
                   *(valid or (rows, cols)))


def test_load_and_store_move_only_the_valid_window():
    mem = CoreMemory(soc(), "aiv")
    x = torch.arange(40 * 70, dtype=torch.float32).reshape(40, 70)
    t = tile(mem, 16, 32, D.FP32, valid=(9, 13))
    IMPLS["block.load"]([t, GMRef(x), (30, 50)], {})
    assert torch.equal(t.read(), x[30:39, 50:63])
    y = torch.zeros(40, 70)
    IMPLS["block.store"]([GMRef(y), t, [1, 2]], {})
    assert torch.equal(y[1:10, 2:15], x[30:39, 50:63])
    assert y.sum() == x[30:39, 50:63].sum()
    with pytest.raises(SimMemoryError):
        IMPLS["block.load"]([t, GMRef(x), (35, 0)], {})


def test_load_nd_to_nz_transposed_and_rank3():
    mem = CoreMemory(soc(), "aic")
    x = torch.randn(64, 48).half()
    nz = tile(mem, 64, 48, D.FP16, M.Mat, L.NZ)
    IMPLS["block.load"]([nz, GMRef(x), (0, 0)], {})
    assert torch.equal(nz.read(), x)
    raw = mem.buffers[M.Mat][:64 * 48 * 2].view(torch.float16)
    assert raw[16].item() == x[1, 0].item()  # NZ bytes, not ND
    zn = tile(mem, 48, 64, D.FP16, M.Mat, L.ZN, addr=8192)
    IMPLS["block.load"]([zn, GMRef(x), (0, 0)], {"is_transpose": True})
    assert torch.equal(zn.read(), x.t())
    cube = torch.arange(3 * 8 * 16, dtype=torch.float16).reshape(3, 8, 16)
    vec = tile(mem, 8, 16, D.FP16, M.Mat, addr=16384, valid=(4, 16))
    IMPLS["block.load"]([vec, GMRef(cube), (2, 4, 0)], {})
    assert torch.equal(vec.read(), cube[2, 4:8])


def test_store_atomic_add_and_element_size_check():
    mem = CoreMemory(soc(), "aiv")
    t = tile(mem, 2, 8, D.FP16)
    t.write(torch.full((2, 8), 0.25, dtype=torch.float16))
    out = torch.ones(2, 8, dtype=torch.float16)
    IMPLS["block.store"]([GMRef(out), t, (0, 0)], {"atomic": 1})
    IMPLS["block.store"]([GMRef(out), t, (0, 0)], {"atomic": "AtomicAdd"})
    assert out.eq(1.5).all()
    with pytest.raises(SimOpError, match="element sizes"):
        IMPLS["block.store"]([GMRef(torch.zeros(2, 8)), t, (0, 0)], {})


def acc_tile(values, dtype=D.FP32):
    mem = CoreMemory(soc(), "aic")
    rows, cols = values.shape
    acc = tile(mem, 32, 32, dtype, M.Acc, L.NZ, fractal=1024, valid=(rows, cols))
    acc.write(values)
    return mem, acc


def test_fixpipe_store_fp32_to_fp16_bf16_with_relu():
    values = torch.randn(20, 24) * 10
    _, acc = acc_tile(values)
    out16 = torch.zeros(20, 24, dtype=torch.float16)
    IMPLS["block.store"]([GMRef(out16), acc, (0, 0)], {})
    assert torch.equal(out16, values.half())
    out_bf = torch.zeros(20, 24, dtype=torch.bfloat16)
    IMPLS["block.store"]([GMRef(out_bf), acc, (0, 0)], {"relu_pre_mode": 1})
    assert torch.equal(out_bf, torch.relu(values).bfloat16())
    with pytest.raises(SimOpError, match="BF16 with a scale"):
        IMPLS["block.store"]([GMRef(out_bf), acc, (0, 0)], {"scale": 0.5})


def deq_word(scale: float, signed: bool = True) -> int:
    bits = torch.tensor([scale], dtype=torch.float32).view(torch.int32).item() & 0xFFFFFFFF
    return bits | ((1 << 46) if signed else 0)


def test_fixpipe_quant_dequant_and_per_channel_scale():
    values = torch.tensor([[1.0, -2.4, 300.0, 0.26]])
    _, acc = acc_tile(values)
    q = torch.zeros(1, 4, dtype=torch.int8)
    IMPLS["block.store"]([GMRef(q), acc, (0, 0), deq_word(2.0)], {})
    assert q.tolist() == [[2, -5, 127, 1]]
    IMPLS["block.store"]([GMRef(q), acc, (0, 0)], {"scale": 0.5})
    assert q.tolist() == [[0, -1, 127, 0]]  # 0.5 and -1.2 round half even / nearest
    ints = torch.tensor([[100, -7, 65536, 3]], dtype=torch.int32)
    _, iacc = acc_tile(ints, D.INT32)
    deq = torch.zeros(1, 4, dtype=torch.float16)
    IMPLS["block.store"]([GMRef(deq), iacc, (0, 0)], {"scale": 0.25})
    assert deq.float().tolist() == [[25.0, -1.75, 16384.0, 0.75]]
    mem, acc2 = acc_tile(values)
    channels = tile(mem, 1, 16, D.UINT64, M.Scaling, valid=(1, 4))
    channels.write(torch.tensor([[deq_word(s) for s in (1.0, 2.0, 0.1, 10.0)]],
                                dtype=torch.int64).view(torch.uint64))
    IMPLS["block.store_fp"]([GMRef(q), acc2, (0, 0), channels], {})
    assert q.tolist() == [[1, -5, 30, 3]]
    with pytest.raises(SimOpError, match="quant scale"):
        IMPLS["block.store"]([GMRef(q), acc, (0, 0)], {})


def test_fixpipe_atomic_store_from_acc():
    values = torch.ones(4, 16)
    _, acc = acc_tile(values)
    out = torch.full((8, 16), 2.0)
    IMPLS["block.store"]([GMRef(out), acc, (4, 0)], {"atomic": 1})
    assert out[4:].eq(3.0).all() and out[:4].eq(2.0).all()


@pytest.mark.parametrize("mode,split", [(2, "M"), (3, "N"), (0, None), (1, None)])
def test_move_acc_to_vec_split_modes(mode, split):
    values = torch.randn(16, 32)
    _, acc = acc_tile(values)
    aiv0, aiv1 = CoreMemory(soc(), "aiv"), CoreMemory(soc(), "aiv")
    if split is None:
        dst = tile(aiv0, 16, 32, D.FP16)
        IMPLS["block.move"]([(dst,), acc], {"acc_to_vec_mode": mode})
        assert torch.equal(dst.read(), values.half())
        return
    shape = (8, 32) if split == "M" else (16, 16)
    v0, v1 = tile(aiv0, *shape, D.FP32), tile(aiv1, *shape, D.FP32)
    IMPLS["block.move"]([(v0, v1), acc], {"acc_to_vec_mode": mode})
    halves = values.split(shape[0], 0) if split == "M" else values.split(16, 1)
    assert torch.equal(v0.read(), halves[0]) and torch.equal(v1.read(), halves[1])
    with pytest.raises(SimOpError, match="2 destination"):
        IMPLS["block.move"]([(v0,), acc], {"acc_to_vec_mode": mode})


def test_move_mat_paths_offset_and_bias_conversion():
    mem = CoreMemory(soc(), "aic")
    x = torch.randn(64, 64).half()
    mat = tile(mem, 64, 64, D.FP16, M.Mat, L.NZ)
    mat.write(x)
    left = tile(mem, 32, 32, D.FP16, M.Left, L.NZ)
    IMPLS["block.move"]([left, mat, (16, 32)], {})
    assert torch.equal(left.read(), x[16:48, 32:64])
    right = tile(mem, 64, 64, D.FP16, M.Right, L.ZN)
    IMPLS["block.move"]([right, mat], {})
    assert torch.equal(right.read(), x)
    row = tile(mem, 1, 64, D.FP16, M.Mat, addr=16384)
    row.write(x[:1])
    bias = tile(mem, 1, 64, D.FP32, M.Bias)
    IMPLS["block.move"]([bias, row], {})
    assert torch.equal(bias.read(), x[:1].float())


def test_vec_to_mat_insert_and_ub_copy():
    aiv, aic = CoreMemory(soc(), "aiv"), CoreMemory(soc(), "aic")
    src = tile(aiv, 16, 16, D.FP16, valid=(16, 16))
    x = torch.randn(16, 16).half()
    src.write(x)
    mat = tile(aic, 32, 32, D.FP16, M.Mat, L.NZ)
    mat.write(torch.zeros(32, 32, dtype=torch.float16))
    IMPLS["block.insert"]([mat, src, (16, 16)], {})
    assert torch.equal(mat.read()[16:, 16:], x) and mat.read()[:16].eq(0).all()
    copy = tile(aiv, 16, 16, D.FP16, addr=4096)
    IMPLS["block.ub_copy"]([copy, src], {})
    assert torch.equal(copy.read(), x)
    _, acc = acc_tile(torch.ones(16, 16))
    IMPLS["block.insert"]([mat, acc, (0, 0)], {})
    assert mat.read()[:16, :16].eq(1).all()


def test_getval_setval_and_init_output():
    mem = CoreMemory(soc(), "aiv")
    col = tile(mem, 8, 1, D.FP32, layout=L.DN)
    col.write(torch.arange(8.0).reshape(8, 1))
    assert IMPLS["block.getval"]([col, 5], {}) == 5.0
    IMPLS["block.setval"]([col, 2, 0.1], {})
    assert col.read()[2, 0].item() == pytest.approx(0.1) and isinstance(
        IMPLS["block.getval"]([col, 2], {}), float)
    ints = tile(mem, 2, 8, D.INT8, addr=256)
    IMPLS["block.setval"]([ints, 9, 300], {})
    assert IMPLS["block.getval"]([ints, 9], {}) == 300 - 256  # wraps to int8
    gm_data = torch.zeros(3, 4, dtype=torch.int32)
    gm = GMRef(gm_data)
    IMPLS["block.setval"]([gm, 6, 42], {})
    assert gm_data[1, 2].item() == 42 and IMPLS["block.getval"]([gm, 6], {}) == 42
    IMPLS["block.init_output"]([gm], {"offset": 2, "size": 5, "value": 7})
    assert gm_data.reshape(-1).tolist() == [0, 0, 7, 7, 7, 7, 7, 0, 0, 0, 0, 0]
