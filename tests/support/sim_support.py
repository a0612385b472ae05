"""Helpers shared by several simulator test modules (on pytest's `pythonpath`, see
pyproject.toml; the test modules themselves are not importable under importlib mode)."""
from __future__ import annotations

import pypto_pro.language as pl
from pypto_pro.sim.model.memory import TileRef

T16 = pl.TileType([64, 128], pl.DT_FP16)


class Deferred(TileRef):
    """A tile whose writes queue until `land` (like the timed engine's per-instruction copies)."""

    writes_now = False

    def __init__(self, target: TileRef, queue: list):
        super().__init__(target.memory, target.geometry, target.valid_rows, target.valid_cols)
        self._target, self._queue = target, queue

    def write(self, value, offset=None):
        self._queue.append((self._target.write, value, offset))


def land(queue: list) -> None:
    """The queued writes of `Deferred` tiles land, in order."""
    for write, value, offset in queue:
        write(value, offset)
    queue.clear()


@pl.jit(arch="a5")
def barrier_missing_a_core(x: pl.Tensor[[128, 128], pl.DT_FP16]):
    """An INTER_BLOCK barrier that only block 0 sets: not every core reaches it (a deadlock)."""
    with pl.section_cube():
        pl.system.bar_all()
    with pl.section_vector():
        t = pl.make_tile(T16, addr=0x0)
        pl.load(t, x, [0, 0])
        if pl.get_block_idx() == 0:
            pl.system.set_cross_core(pipe=pl.PipeType.MTE2, event_id=3,
                                     sync_mode=pl.CrossCoreSyncMode.INTER_BLOCK)
        pl.system.wait_cross_core(pipe=pl.PipeType.MTE3, event_id=3,
                                  sync_mode=pl.CrossCoreSyncMode.INTER_BLOCK)


@pl.jit(arch="a5")
def printing_copy(x: pl.Tensor[[64, 128], pl.DT_FP16], z: pl.Tensor[[64, 128], pl.DT_FP16],
                  k: pl.DT_INT32):
    """z = x, then printf of the scalar k (printed text that depends on a parameter)."""
    with pl.section_vector():
        t = pl.make_tile(T16, addr=0x0)
        pl.load(t, x, [0, 0])
        pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.store(z, t, [0, 0])
        pl.printf("k=%d\n", k)


ROWS_T = pl.TileType([8, 64], pl.DT_FP32)
OFF_T = pl.TileType([8, 8], pl.DT_INT32)


@pl.jit(arch="a5")
def gather_rows(x: pl.Tensor[[pl.DYNAMIC, 64], pl.DT_FP32],
                offsets: pl.Tensor[[pl.DYNAMIC, 8], pl.DT_INT32],
                out: pl.Tensor[[pl.DYNAMIC, 64], pl.DT_FP32]):
    """Each block gathers its 8 rows' 32-byte blocks at the byte offsets of its 8 rows (an
    offset past the tile is an op error: a check on values)."""
    V, MTE2, MTE3 = pl.PipeType.V, pl.PipeType.MTE2, pl.PipeType.MTE3
    with pl.section_vector():
        row = pl.get_block_idx() * 8
        src = pl.make_tile(ROWS_T, addr=0x0)
        off = pl.make_tile(OFF_T, addr=0x1000)
        dst = pl.make_tile(ROWS_T, addr=0x2000)
        pl.load(src, x, [row, 0])
        pl.load(off, offsets, [row, 0])
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=V, event_id=0)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=V, event_id=0)
        pl.gatherb(dst, src, off)
        pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=V, wait_pipe=MTE3, event_id=0)
        pl.store(out, dst, [row, 0])
