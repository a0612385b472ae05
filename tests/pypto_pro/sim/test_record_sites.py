"""The record phase works out per call site what does not depend on an issue's operands
(`stream.RecordingCore`: a tile op's site bound to its operands once per launch, a load or
store's to its tile and GM view, its window's lines and footprint kept on the GM window; a sync
instruction's row kept by the instruction): the tables it gives the scheduler and the race
check must be, byte for byte, those of the general path, which works each issue out alone.
Skipped without a C++ compiler (the stream engine is not built then)."""
from __future__ import annotations


import numpy as np
import pytest
import torch

import pypto_pro.language as pl
from pypto_pro.errors import PyptoError
from pypto_pro.examples import load
from pypto_pro.ir.dtype import DataType
from pypto_pro.ir.types import MemorySpace
from pypto_pro.runtime.backends import use_backend
from pypto_pro.sim.fast import stream, memo
from pypto_pro import soc as soc_mod
from pypto_pro.sim.model.cost_model import op_cost
from pypto_pro.sim.fast.footprints import Footprints, _window_row
from pypto_pro.sim.model.memory import GMRef, TileGeometry, TileRef
from pypto_pro.sim import settings

T = pl.TileType([16, 64], pl.DT_FP32)
WIDE = pl.TileType([32, 64], pl.DT_FP32)


pytestmark = pytest.mark.usefixtures("stream_engine")  # (conftest)


@pl.jit(arch="a5")
def reshaped_rows(x: pl.Tensor[[128, 64], pl.DT_FP32], z: pl.Tensor[[128, 64], pl.DT_FP32],
                  w: pl.Tensor[[64, 64], pl.DT_FP32]):
    """One load site on a tile whose valid shape changes (a new operand for the same site),
    an add, a store, and an insert (a block of a tile: its offsets in the footprint)."""
    with pl.section_vector():
        a = pl.make_tile(T, addr=0x0)
        b = pl.make_tile(T, addr=0x2000)
        c = pl.make_tile(WIDE, addr=0x4000)
        base = pl.get_block_idx() * 64
        for i in pl.range(4):
            pl.set_validshape(a, [8 + 8 * (i % 2), 64])
            pl.load(a, x, [base + i * 16, 0])
            pl.add(b, a, a)
            pl.store(z, b, [base + i * 16, 0])
            pl.insert(c, b, [16 * (i % 2), 0])
        pl.store(w, c, [pl.get_block_idx() * 32, 0])


def _reshaped_args() -> tuple:
    return torch.randn(128, 64), torch.zeros(128, 64), torch.zeros(64, 64)


def _example(name: str, kernel: str, shape: dict, block_dim: int | None):
    ex = load(name)
    bd = block_dim or ex.block_dim(*ex.make_inputs(**shape, seed=0))
    return getattr(ex, kernel), bd, lambda: ex.make_inputs(**shape, seed=0)


CASES = {
    "vector_add, a second wave": lambda: _example("vector_add", "add_kernel",
                                                  {"m": 512, "n": 512}, 70),
    "matmul_softmax, mix": lambda: _example("matmul_softmax", "matmul_softmax_kernel",
                                            {"n": 256}, None),
    "softmax": lambda: _example("softmax", "softmax_kernel", {"rows": 100, "cols": 300}, None),
    "valid shapes and inserts": lambda: (reshaped_rows, 2, _reshaped_args),
}


def _recorded(monkeypatch: pytest.MonkeyPatch, kernel, block_dim: int, args: tuple) -> dict:
    """What a new launch's record phase gave the scheduler and the race check, as bytes."""
    seen: dict = {}
    record = stream.record

    def kept(rec: stream.Recording) -> None:
        record(rec)
        fp = rec.footprints
        lines = np.concatenate(rec.lines) if rec.lines else np.zeros(0, dtype=np.int64)
        seen.update(table=rec.table.tobytes(), records=rec.records.tobytes(),
                    meta=list(rec.inst_meta), costs=list(rec.op_costs),
                    lines=lines.astype(np.int64).tobytes(), storages=list(rec.storage_bytes),
                    footprints=fp.table.tobytes(), index=fp.index.tobytes(),
                    instructions=len(rec.instrs), bound=rec.bound)

    with monkeypatch.context() as m, use_backend("sim"):
        m.setattr(stream, "record", kept)
        memo.clear()
        kernel[None, block_dim](*args)
    assert seen, "the launch did not take the stream engine"
    return seen


@pytest.mark.parametrize("case", list(CASES))
def test_bound_sites_record_what_each_issue_alone_gives(monkeypatch, case) -> None:
    kernel, block_dim, make_args = CASES[case]()
    with use_backend("sim"):
        kernel[None, block_dim](*make_args())  # (compiled, its sites worked out)
    bound = _recorded(monkeypatch, kernel, block_dim, make_args())
    assert bound.pop("bound") is None  # (the bindings go with the record phase)
    with monkeypatch.context() as m:  # every op through the general path
        m.setattr(stream.RecordingCore, "_bind",
                  lambda self, i, instr, site: self._general(i, instr))
        m.setattr(stream.RecordingCore, "_windowed",
                  lambda self, i, instr, site: self._general(i, instr))
        alone = _recorded(monkeypatch, kernel, block_dim, make_args())
    alone.pop("bound")
    assert bound["instructions"] > 0 and bound["footprints"]
    assert bound == alone


def test_a_gm_windows_lines_and_footprint_are_kept_across_launches(monkeypatch) -> None:
    ex = load("vector_add")
    args = ex.make_inputs(256, 256, seed=0)
    made: list[int] = []
    worked_out = stream._recorded_window
    monkeypatch.setattr(stream, "_recorded_window",
                        lambda window, line: made.append(1) or worked_out(window, line))
    first = _recorded(monkeypatch, ex.add_kernel, 4, args)
    n_windows = len(made)
    assert n_windows == 3 * 4  # each of x, y, z's four 128x128 windows once
    again = _recorded(monkeypatch, ex.add_kernel, 4, args)  # memo cleared: recorded again
    assert len(made) == n_windows and again == first
    assert torch.equal(args[2], args[0] + args[1])


def test_a_windows_footprint_parts_are_what_add_gives() -> None:
    """A load, and a fixpipe store with a scale tile after its offsets: the rows before the GM
    window's, its row, the rows after it make the op's footprint, spaces numbered alike."""
    gm = GMRef(torch.zeros(64, 256, dtype=torch.float32))
    vec = TileRef(None, TileGeometry(16, 64, DataType.FP32, MemorySpace.Vec, addr=0x400))
    acc = TileRef(None, TileGeometry(16, 64, DataType.FP32, MemorySpace.Acc, addr=0x0))
    scale = TileRef(None, TileGeometry(1, 16, DataType.UINT64, MemorySpace.Scaling, addr=0x0))
    for op, args in [("block.load", [vec, gm, (16, 64)]),
                     ("block.store_fp", [gm, acc, (16, 64), scale])]:
        window = op_cost(op, args, {}, soc_mod.soc()).gm
        whole, parts = Footprints(), Footprints()
        whole.add(0, op, args, {}, window)
        head, space, write, tail = parts.window_parts(op, args, {})
        assert not parts.table and parts.spaces == whole.spaces
        assert head + _window_row(window.lines, write, space) + tail == whole.table.tobytes()
        assert len(head + tail) == (8 * 6 if op == "block.load" else 2 * 8 * 6)


@pl.jit(arch="a5")
def runs_off_the_end(x: pl.Tensor[[64, 64], pl.DT_FP32], z: pl.Tensor[[64, 64], pl.DT_FP32]):
    """The fifth load of one site leaves the tensor: a bound site's window fails."""
    with pl.section_vector():
        a = pl.make_tile(T, addr=0x0)
        for i in pl.range(5):
            pl.load(a, x, [i * 16, 0])
            pl.store(z, a, [0, 0])


def _error(monkeypatch: pytest.MonkeyPatch, mode: str) -> PyptoError:
    with monkeypatch.context() as m, use_backend("sim"):
        m.setenv(settings.ENGINE, mode)
        with pytest.raises(PyptoError) as err:
            runs_off_the_end[None, 1](torch.randn(64, 64), torch.zeros(64, 64))
    return err.value


def test_a_window_off_the_tensor_at_a_bound_site_gives_the_python_engines_error(
        monkeypatch) -> None:
    python, native = _error(monkeypatch, "python"), _error(monkeypatch, "native")
    assert type(native) is type(python) and str(native) == str(python)
    assert native.span == python.span and native.span.line > 0
