"""Cost model: formulas, monotonicity and the spec's worked numbers."""
from __future__ import annotations

import pytest
import torch

from pypto_pro.ir.dtype import DataType as D
from pypto_pro.ir.types import MemorySpace as M
from pypto_pro.ir.types import TileLayout as L
from pypto_pro.sim.model.cost_model import op_cost, printf_cost
from pypto_pro.sim.model.memory import CoreMemory, GMRef, TileGeometry, TileRef
from pypto_pro.soc import soc

PR, A2 = soc("950PR"), soc("910B1")


def tile(rows, cols, dtype, space=M.Vec, layout=L.ND, valid=None, fractal=512):
    kind = "aiv" if space is M.Vec else "aic"
    return TileRef(CoreMemory(PR, kind), TileGeometry(rows, cols, dtype, space, layout, fractal),
                   *(valid or (rows, cols)))


def test_cube_fractal_formula_matches_the_spec():
    for dtype, cycles in ((D.FP16, 518), (D.BF16, 518), (D.FP32, 6 + 2 * 8 * 16 * 8),
                          (D.INT8, 6 + 8 * 4 * 8)):
        lhs = tile(128, 128, dtype, M.Left, L.NZ)
        rhs = tile(128, 128, dtype, M.Right, L.ZN)
        acc = tile(128, 128, D.INT32 if dtype is D.INT8 else D.FP32, M.Acc, L.NZ, fractal=1024)
        cost = op_cost("block.matmul", [acc, lhs, rhs], {}, PR)
        assert cost.cycles == cycles
        assert cost.flops == 2 * 128 ** 3 and cost.gm_bytes == 0
        assert cost.path == f"cube:{dtype.value}"
    acc_cost = op_cost("block.matmul_acc", [acc, acc, lhs, rhs], {}, PR)
    assert acc_cost.cycles == 6 + 8 * 4 * 8
    tail = op_cost("block.matmul", [acc, tile(128, 128, D.FP16, M.Left, L.NZ, valid=(17, 128)),
                                     tile(128, 128, D.FP16, M.Right, L.ZN)], {}, PR)
    assert tail.cycles == 6 + 2 * 8 * 8  # ceil(17 / 16) = 2 fractal rows


def test_mte_transfers_are_startup_plus_bytes_over_rate():
    mat = tile(128, 128, D.FP16, M.Mat, L.NZ)
    left = tile(128, 128, D.FP16, M.Left, L.NZ)
    move = op_cost("block.move", [left, mat], {}, PR)
    assert (move.cycles, move.bytes, move.gm_bytes, move.path) == (50 + 128, 32768, 0, "l1_to_l0a")
    assert op_cost("block.move", [left, mat], {}, A2).cycles == 50 + 128  # 256 B/c [PTOARCH]
    gm = GMRef(torch.zeros(256, 256, dtype=torch.float16))
    load = op_cost("block.load", [mat, gm, (0, 0)], {}, PR)
    assert (load.path, load.gm_bytes) == ("gm_to_l1", 32768)
    assert load.cycles == 50 + -(-32768 // 100)  # L2 hit latency and rate; misses: MemorySystem
    assert load.gm is not None and not load.gm.write
    previous = 0
    for rows in (1, 8, 32, 128):  # monotonic in bytes
        cost = op_cost("block.load", [tile(128, 128, D.FP16, valid=(rows, 128)), gm, (0, 0)],
                       {}, PR)
        assert cost.cycles > previous and cost.path == "gm_to_ub"
        previous = cost.cycles


def test_store_paths_and_fixpipe():
    gm = GMRef(torch.zeros(128, 128, dtype=torch.float16))
    acc = tile(128, 128, D.FP32, M.Acc, L.NZ, fractal=1024)
    fix = op_cost("block.store", [gm, acc, (0, 0)], {}, PR)
    assert fix.path == "l0c_to_gm" and fix.gm_bytes == 32768  # FP16 in GM
    vec = op_cost("block.store", [gm, tile(128, 128, D.FP16), (0, 0)], {}, PR)
    assert vec.path == "ub_to_gm" and vec.cycles == 50 + -(-32768 // 42)  # INI ub_to_l2_rate
    assert fix.gm.write and vec.gm.write
    aiv = tile(64, 128, D.FP32)
    split = op_cost("block.move", [(aiv, aiv), acc], {"acc_to_vec_mode": 2}, PR)
    assert split.path == "l0c_to_ub" and split.bytes == 128 * 128 * 4


def test_init_output_counts_the_filled_bytes():
    gm = GMRef(torch.zeros(64, 64, dtype=torch.float32))
    full = op_cost("block.init_output", [gm], {}, PR)
    part = op_cost("block.init_output", [gm], {"offset": 8, "size": 1024}, PR)
    assert (full.gm_bytes, part.gm_bytes) == (16384, 4096) and part.cycles < full.cycles


def test_vector_costs_per_class_and_tails():
    a = tile(128, 128, D.FP16)
    add = op_cost("block.add", [a, a, a], {}, PR)
    assert add.cycles == 55 + 160  # 128 repeats x 1.25 [PTOA5FIT]
    assert op_cost("block.add", [a, a, a], {}, A2).cycles == 30 + 256  # 2 cycles/repeat on A2
    assert op_cost("block.exp", [a, a], {}, PR).cycles == 55 + 256
    assert op_cost("block.adds", [a, a, 1.0], {}, PR).cycles == 55 + 128
    tail = tile(128, 128, D.FP16, valid=(128, 100))  # each 200 B row still takes one repeat
    assert op_cost("block.add", [tail, tail, tail], {}, PR).cycles == 55 + 160
    f32 = tile(128, 64, D.FP32)
    red = tile(128, 1, D.FP32, layout=L.DN)
    assert op_cost("block.row_sum", [red, f32, f32], {}, PR).cycles == 55 + 128 * 7
    cast = op_cost("block.cast", [tile(128, 128, D.FP32), a], {}, PR)
    assert cast.cycles == 55 + 256 * 2  # repeats counted on the wider (FP32) side
    assert add.path == "vector:binary" and add.flops == 128 * 128


def test_double_buffering_numbers_make_vector_add_memory_bound():
    a = tile(128, 128, D.FP16)
    gm = GMRef(torch.zeros(128, 128, dtype=torch.float16))
    load = op_cost("block.load", [a, gm, (0, 0)], {}, PR)
    add = op_cost("block.add", [a, a, a], {}, PR).cycles
    # with every AIV streaming, each gets 1/64 of the chip's HBM: the misses of two loads and
    # one store take far longer than the add (spec §7 worked example)
    share = PR.hbm_bytes_per_s / PR.clock_hz / PR.aiv_cores
    assert 3 * load.gm_bytes / share > 5 * add


def test_scalar_and_sync_costs():
    gm = GMRef(torch.zeros(4, dtype=torch.int32))
    assert op_cost("block.getval", [gm, 0], {}, PR).gm_bytes == 4
    assert op_cost("block.setval", [tile(8, 8, D.FP32), 0, 1.0], {}, PR).cycles == 10
    assert op_cost("system.sync_src", [], {}, PR).cycles == 1
    assert op_cost("system.mutex_lock", [], {}, PR).path == "sync"
    assert op_cost("get_block_idx", [], {}, PR).cycles == 1
    with pytest.raises(ValueError, match="unknown op"):
        op_cost("block.frobnicate", [], {}, PR)


def test_memoised_load_and_store_costs_keep_their_own_gm_window():
    """A tile load/store has its on-chip cost memoised per tile; its GM window is per call."""
    from pypto_pro.sim.model.cost_model import _op_cost

    gm = GMRef(torch.zeros(256, 512, dtype=torch.float16))
    ub = tile(128, 128, D.FP16)
    for op, args in (("block.load", lambda o: [ub, gm, o]),
                     ("block.store", lambda o: [gm, ub, o])):
        costs = [op_cost(op, args(o), {}, PR) for o in ((0, 0), (128, 384), (0, 0))]
        for o, cost in zip(((0, 0), (128, 384), (0, 0)), costs):
            fresh = _op_cost(op, args(o), {}, PR)
            assert cost._replace(gm=None) == fresh._replace(gm=None)
            assert list(cost.gm.lines(512)) == list(fresh.gm.lines(512))
            assert (cost.gm.write, cost.gm.storage) == (fresh.gm.write, fresh.gm.storage)
        assert list(costs[0].gm.lines(512)) != list(costs[1].gm.lines(512))
    full = op_cost("block.load", [ub, gm, (0, 0)], {}, PR)
    short = op_cost("block.load", [tile(128, 128, D.FP16, valid=(7, 128)), gm, (0, 0)], {}, PR)
    assert short.cycles < full.cycles and short.gm.lines(512).size == 7


@pytest.mark.parametrize("fmt, nbytes, writes", [
    # the text alone: type, 2-byte length, 28 characters, NUL, END (cce::printf's record)
    ("Hello World from PyPTO Pro!\n", 1 + 2 + 28 + 1 + 1, 5),
    # per integer: type, 8-byte value, length, "block %d" / " of %d", NUL; then the "\n"
    ("block %d of %d\n", (1 + 8 + 2 + 8 + 1) + (1 + 8 + 2 + 6 + 1) + (1 + 2 + 1 + 1 + 1), 15),
    ("%f", 1 + 4 + 2 + 2 + 1 + 1, 6),  # a float is 4 bytes; no text left: the END byte alone
    ("%+08.3f|%x", (1 + 4 + 2 + 7 + 1) + (1 + 8 + 2 + 3 + 1) + 1, 11),
])
def test_printf_costs_the_bytes_of_its_log_record(fmt, nbytes, writes):
    cost = printf_cost(fmt, PR)
    assert (cost.bytes, cost.gm_bytes, cost.flops, cost.path) == (nbytes, nbytes, 0, "scalar")
    # every byte and each write's size-word read and rewrite: one scalar access (setval's 10)
    assert cost.cycles == PR.scalar_access_cycles * (nbytes + 2 * writes)
    assert printf_cost("Hello World from PyPTO Pro!\n", PR).cycles == 430
