"""What the timed simulator memoises per GM window and tile type (issue 9) gives the values the
uncached arithmetic gives, checks bounds on every use, and sees in-place tensor changes."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from pypto_pro.examples import load
from pypto_pro.ir.dtype import DataType
from pypto_pro.ir.types import MemorySpace, TileType
from pypto_pro.sim.model.cost_model import op_cost
from pypto_pro.sim.model.memory import CoreMemory, GMRef, SimMemoryError, TileGeometry, TileRef
from pypto_pro.soc import soc

LINE = 512


def _reference_lines(gm: GMRef, offsets: list[int], rows: int, cols: int) -> np.ndarray:
    elems = gm._window_offsets(offsets, rows, cols, False, None).numpy()
    size = gm.dtype.bits // 8
    return np.unique(np.concatenate([elems * size // LINE, (elems * size + size - 1) // LINE]))


def test_tile_geometry_is_one_object_per_type_and_address() -> None:
    tile_type = TileType((64, 64), DataType.FP16, MemorySpace.Vec, addr=0)
    same = TileGeometry.from_tile_type(tile_type)
    assert TileGeometry.from_tile_type(tile_type, 0) is same
    moved = TileGeometry.from_tile_type(tile_type, 8192)
    assert moved is not same and moved.addr == 8192 and moved.rows == same.rows
    with pytest.raises(ValueError, match="explicit addr"):
        TileGeometry.from_tile_type(TileType((64, 64), DataType.FP16, MemorySpace.Vec))


def test_a_window_is_made_once_and_checked_on_every_use() -> None:
    tensor = torch.arange(300 * 700, dtype=torch.float32).reshape(300, 700)
    gm = GMRef(tensor)
    window = gm.window([5, 3], 40, 90)
    assert gm.window((5, 3), 40, 90) is window
    assert np.array_equal(gm.window_lines([5, 3], 40, 90, LINE),
                          _reference_lines(gm, [5, 3], 40, 90))
    assert gm.window_lines([5, 3], 40, 90, LINE) is window.lines(LINE)  # computed once
    assert torch.equal(gm.peek_window([5, 3], 40, 90), tensor[5:45, 3:93])
    tensor[5, 3] = -1.0  # a view of the storage: in-place changes show
    assert gm.read_window([5, 3], 40, 90)[0, 0] == -1.0
    for _ in range(2):  # a failed window is not remembered
        with pytest.raises(SimMemoryError):
            gm.window([290, 0], 40, 90)


def test_a_load_cost_names_its_window_and_leaves_bad_offsets_to_the_op() -> None:
    chip = soc("950PR")
    tile_type = TileType((32, 64), DataType.FP16, MemorySpace.Vec, addr=0)
    tile = TileRef(CoreMemory(chip, "aiv"), TileGeometry.from_tile_type(tile_type))
    gm = GMRef(torch.zeros(256, 256, dtype=torch.float16))
    cost = op_cost("block.load", [tile, gm, [32, 64]], {}, chip)
    again = op_cost("block.load", [tile, gm, [32, 64]], {}, chip)
    assert again is cost and cost.gm.storage == gm.storage and not cost.gm.write
    assert np.array_equal(cost.gm.lines(LINE), _reference_lines(gm, [32, 64], 32, 64))
    store = op_cost("block.store", [gm, tile, [32, 64]], {}, chip)
    assert store.gm.write and store.gm.lines is cost.gm.lines  # one window, both directions
    bad = op_cost("block.load", [tile, gm, [240, 0]], {}, chip)  # the op raises, with its span
    assert bad.cycles == cost.cycles
    with pytest.raises(SimMemoryError):
        bad.gm.lines(LINE)


def test_relaunches_reusing_gm_views_see_new_input_values() -> None:
    m = load("vector_add")
    x, y, z = m.make_inputs(256, 256, seed=3)
    m.add_kernel[None, 2](x, y, z)
    cycles = m.add_kernel.last_trace.duration_cycles
    x.mul_(2)
    m.add_kernel[None, 2](x, y, z)
    assert torch.equal(z, x + y)
    assert m.add_kernel.last_trace.duration_cycles == cycles
