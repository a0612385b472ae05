"""The stream engine's record path (`stream.RecordingCore.issue`, `footprints.Footprints`):
rows go in as packed bytes and a GM window's footprint is worked out once per launch, which
must give the rows a fresh computation gives."""
from __future__ import annotations

import numpy as np
import torch

from pypto_pro.ir.dtype import DataType
from pypto_pro.ir.types import MemorySpace
from pypto_pro import soc as soc_mod
from pypto_pro.sim.model.cost_model import op_cost
from pypto_pro.sim.fast.footprints import FP_W, _WHOLE, Footprints, _window_row
from pypto_pro.sim.model.memory import GMRef, TileGeometry, TileRef, WindowLines


def _rows(fp: Footprints) -> list[tuple[int, ...]]:
    table = np.frombuffer(fp.table, dtype=np.int64)
    return [tuple(int(v) for v in table[k:k + FP_W]) for k in range(0, table.size, FP_W)]


def _tile() -> TileRef:
    return TileRef(None, TileGeometry(16, 64, DataType.FP16, MemorySpace.Vec, addr=0x400))


def test_window_rows_are_the_bytes_of_the_window() -> None:
    def row(*window: int, write: int = 1) -> tuple[int, ...]:
        found = np.frombuffer(_window_row(WindowLines(*window), write, 3), dtype=np.int64)
        return tuple(int(v) for v in found)

    # 16 rows of 64 fp16 elements of a [*, 256] tensor, from element 256 * 16 + 64
    assert row(4160, 256, 1, 16, 64, 16) == (1, 3, 8320, 16, 512, 128)
    assert row(4160, 256, 1, 1, 64, 16) == (1, 3, 8320, 1, 0, 128)  # one row: no stride
    assert row(10, 1, 256, 4, 8, 32, write=0) == (0, 3, 40, 8, 1024, 16)  # by columns
    assert row(3, 8, 1, 2, 3, 4) == (1, 3, 1, 1, 0, 6)  # 4-bit: elements 3 to 13, bytes 1-6
    assert row(0, -8, 1, 2, 3, 16) == (1, 3, *_WHOLE)  # a negative stride: the whole storage
    assert row(0, 8, 1, 0, 3, 16) == ()  # empty: no row


def test_a_reused_gm_window_gives_the_rows_of_a_fresh_one() -> None:
    soc = soc_mod.soc()
    gm = GMRef(torch.zeros(64, 256, dtype=torch.float16))
    tile = _tile()
    load = op_cost("block.load", [tile, gm, (16, 64)], {}, soc).gm
    store = op_cost("block.store", [gm, tile, (16, 64)], {}, soc).gm
    assert op_cost("block.load", [tile, gm, (16, 64)], {}, soc).gm is load  # shared
    reused = Footprints()
    for i, (op, args, gm_access) in enumerate([
            ("block.load", [tile, gm, (16, 64)], load),
            ("block.store", [gm, tile, (16, 64)], store),
            ("block.load", [tile, gm, (16, 64)], load),
            ("block.store", [gm, tile, (16, 64)], store)]):
        reused.add(i, op, args, {}, gm_access)
        fresh = Footprints()
        fresh.spaces = dict(reused.spaces)  # (the same space numbers)
        fresh.add(i, op, args, {}, gm_access)
        assert _rows(fresh) == _rows(reused)[-2:]
    window = (16 * 256 + 64) * 2, 16, 512, 128  # first byte, rows, stride, row bytes
    gm_space = reused.spaces[gm.storage]
    assert _rows(reused)[1] == (0, gm_space, *window)  # the load reads the window
    assert _rows(reused)[2] == (1, gm_space, *window)  # the store writes it (GM first)
    assert _rows(reused)[4:] == _rows(reused)[:4]


def test_a_gm_operand_other_than_the_window_is_its_whole_storage() -> None:
    soc = soc_mod.soc()
    gm, other = GMRef(torch.zeros(64, 256, dtype=torch.float16)), \
        GMRef(torch.zeros(64, 256, dtype=torch.float16))
    load = op_cost("block.load", [_tile(), gm, (0, 0)], {}, soc).gm
    fp = Footprints()
    fp.add(0, "block.load", [_tile(), other, (0, 0)], {}, load)  # (not this operand's window)
    assert _rows(fp)[1] == (0, fp.spaces[other.storage], *_WHOLE)
