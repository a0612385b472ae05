"""The seeded-fault suite: small kernels with exactly one known bug each (the line marked
`# BUG`), run under the sanitizer; each must be reported with the right kind at that line.

Races are reported even when the simulated timing happened to read the right bytes; bugs the
hardware would hang on (a wait nobody sets, a double lock) still end in `DeadlockError`, and the
exception carries the report. Every kernel is written the way a user would slip: a forgotten
flag, a reused buffer, a tail past the tensor, a tile placed for a bigger UB.
"""
from __future__ import annotations

import inspect

import pytest
import torch

import pypto_pro.language as pl
from pypto_pro.errors import PyptoError
from pypto_pro.runtime import backends
from pypto_pro.runtime.backends import use_backend
from pypto_pro.runtime.backends.sim import SimBackend

MTE1, MTE2, MTE3 = pl.PipeType.MTE1, pl.PipeType.MTE2, pl.PipeType.MTE3
V, M, FIX, S = pl.PipeType.V, pl.PipeType.M, pl.PipeType.FIX, pl.PipeType.S
T16 = pl.TileType([64, 128], pl.DT_FP16)  # 16 KiB of UB
DYN = pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP16]
FIXED = pl.Tensor[[64, 128], pl.DT_FP16]
L1_T = pl.TileType([64, 128], pl.DT_FP16, pl.MemorySpace.Mat)
LEFT_T = pl.TileType([64, 128], pl.DT_FP16, pl.MemorySpace.Left)


# ---------------------------------------------------------------- memory bounds


@pl.jit(arch="a5", sanitizer=True)
def gm_oob_load(x: DYN, z: DYN):
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        pl.load(a, x, [32, 0])  # BUG: rows 32..96 of a 64-row tensor
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.store(z, a, [0, 0])


@pl.jit(arch="a5", sanitizer=True)
def gm_oob_store(x: DYN, z: DYN):
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        pl.load(a, x, [0, 0])
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.store(z, a, [0, 64])  # BUG: columns 64..192 of a 128-column tensor


@pl.jit(arch="a5", sanitizer=True)
def gm_oob_getval(x: DYN, z: DYN):
    with pl.section_vector():
        v = pl.getval(x, x.shape[0] * x.shape[1])  # BUG: one past the last element
        pl.setval(z, 0, v)


@pl.jit(arch="a5", sanitizer=True)
def gm_oob_setval(x: DYN, z: DYN):
    with pl.section_vector():
        pl.setval(z, z.shape[0] * z.shape[1] + 3, 1.0)  # BUG: past the end of z


@pl.jit(arch="a5", sanitizer=True)
def gm_view_past_source(x: DYN, z: DYN):
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        big = pl.make_tensor(x, [128, 128])
        pl.load(a, big, [0, 0])  # BUG: the view is twice the size of x
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.store(z, a, [0, 0])


@pl.jit(arch="a5", sanitizer=True)
def tile_validshape_too_big(x: DYN, z: DYN):
    with pl.section_vector():
        a = pl.make_tile(pl.TileType([64, 128], pl.DT_FP16, valid_shape=[-1, -1]), addr=0x0)
        pl.set_validshape(a, [x.shape[0] * 2, 128])  # BUG: 128 rows in a 64-row tile
        pl.load(a, x, [0, 0])
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.store(z, a, [0, 0])


@pl.jit(arch="a5", sanitizer=True)
def tile_getval_past_end(x: DYN, z: DYN):
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        pl.load(a, x, [0, 0])
        pl.system.bar_all()
        v = pl.getval(a, x.shape[1] * 64)  # BUG: element 8192 of a 64x128 tile
        pl.setval(z, 0, v)


@pl.jit(arch="a5", sanitizer=True)
def tile_setval_past_end(x: DYN, z: DYN):
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        pl.setval(a, x.shape[1] * 64 + 1, 2.0)  # BUG: past the tile
        pl.system.bar_all()


@pl.jit(arch="a5", sanitizer=True)
def ub_capacity_on_smaller_soc(x: FIXED, z: FIXED):
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x30000)  # fits the 950's 248 KiB UB, not 910B's 192 KiB
        pl.load(a, x, [0, 0])  # BUG: the tile ends past this SoC's UB
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.store(z, a, [0, 0])


@pl.jit(arch="a5", sanitizer=True)
def misaligned_slice(x: pl.Tensor[[64, 16], pl.DT_FP16], z: pl.Tensor[[64, 8], pl.DT_FP16]):
    with pl.section_vector():
        a = pl.make_tile(pl.TileType([64, 16], pl.DT_FP16), addr=0x0)
        pl.load(a, x, [0, 0])
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.store(z, a[0:64, 8:16], [0, 0])  # BUG: column 8 starts 16 bytes in: not 32-aligned


@pl.jit(arch="a5", sanitizer=True)
def overlapping_tiles(x: FIXED, y: FIXED, z: FIXED):
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        b = pl.make_tile(T16, addr=0x2000)  # half of it is a's second half
        c = pl.make_tile(T16, addr=0x8000)
        pl.load(a, x, [0, 0])
        if pl.get_block_idx() == 0:  # (a run-time branch: the compiler only warns)
            pl.load(b, y, [0, 0])
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=V, event_id=0)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=V, event_id=0)
        pl.add(c, a, a)  # BUG: a's second half now holds y
        pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=V, wait_pipe=MTE3, event_id=0)
        pl.store(z, c, [0, 0])


@pl.jit(arch="a5", sanitizer=True)
def uninitialised_read(x: FIXED, z: FIXED):
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        b = pl.make_tile(T16, addr=0x4000)
        c = pl.make_tile(T16, addr=0x8000)
        pl.load(a, x, [0, 0])
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=V, event_id=0)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=V, event_id=0)
        pl.add(c, a, b)  # BUG: b was never loaded
        pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=V, wait_pipe=MTE3, event_id=0)
        pl.store(z, c, [0, 0])


# ---------------------------------------------------------------- races


@pl.jit(arch="a5", sanitizer=True)
def race_load_then_add(x: FIXED, y: FIXED, z: FIXED):
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        c = pl.make_tile(T16, addr=0x8000)
        pl.load(a, x, [0, 0])
        pl.system.bar_v()  # orders nothing for MTE2: the wrong barrier
        pl.add(c, a, a)  # BUG: reads a with no MTE2 -> V sync
        pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=V, wait_pipe=MTE3, event_id=0)
        pl.store(z, c, [0, 0])


@pl.jit(arch="a5", sanitizer=True)
def race_add_then_store(x: FIXED, y: FIXED, z: FIXED):
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        c = pl.make_tile(T16, addr=0x8000)
        pl.load(a, x, [0, 0])
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=V, event_id=0)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=V, event_id=0)
        pl.add(c, a, a)
        pl.store(z, c, [0, 0])  # BUG: no V -> MTE3 sync before the store


@pl.jit(arch="a5", sanitizer=True)
def race_wrong_flag_pipes(x: FIXED, y: FIXED, z: FIXED):
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        c = pl.make_tile(T16, addr=0x8000)
        pl.load(a, x, [0, 0])
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=V, event_id=0)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=V, event_id=0)
        pl.abs(c, a)
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=MTE3, event_id=1)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=1)
        pl.store(z, c, [0, 0])  # BUG: synced to MTE2, but c is written by V


@pl.jit(arch="a5", sanitizer=True)
def race_buffer_reuse(x: pl.Tensor[[128, 128], pl.DT_FP16], z: pl.Tensor[[128, 128], pl.DT_FP16]):
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        c = pl.make_tile(T16, addr=0x8000)
        d = pl.make_tile(pl.TileType([128, 256], pl.DT_FP16), addr=0x10000)
        pl.load(a, x, [0, 0])
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=V, event_id=0)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=V, event_id=0)
        pl.abs(c, a)
        pl.load(d, x, [0, 0])  # an unrelated long load: the abs reads a meanwhile
        pl.load(a, x, [64, 0])  # BUG: overwrites a with no V -> MTE2 sync after the abs
        pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=V, wait_pipe=MTE3, event_id=0)
        pl.store(z, c, [0, 0])


@pl.jit(arch="a5", sanitizer=True)
def race_two_writers(x: pl.Tensor[[128, 128], pl.DT_FP16], z: pl.Tensor[[128, 128], pl.DT_FP16]):
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        c = pl.make_tile(T16, addr=0x8000)
        d = pl.make_tile(pl.TileType([128, 128], pl.DT_FP16), addr=0x10000)
        pl.load(a, x, [0, 0])
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=V, event_id=0)
        pl.load(d, x, [0, 0])
        pl.load(c, x, [64, 0])
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=V, event_id=0)
        pl.abs(c, a)  # BUG: the load of c above also writes c, in no fixed order
        pl.system.bar_all()
        pl.store(z, c, [0, 0])


@pl.jit(arch="a5", sanitizer=True)
def race_scalar_read(x: FIXED, z: FIXED):
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        pl.load(a, x, [0, 0])
        v = pl.getval(a, 5)  # BUG: the scalar unit reads before the load is synced
        pl.setval(z, 0, v)


@pl.jit(arch="a5", sanitizer=True)
def race_cube_l1(a: FIXED, z: FIXED):
    with pl.section_cube():
        l1 = pl.make_tile(L1_T, addr=0x0)
        left = pl.make_tile(LEFT_T, addr=0x0)
        pl.load(l1, a, [0, 0])
        pl.move(left, l1)  # BUG: no MTE2 -> MTE1 sync after the load into L1


@pl.jit(arch="a5", sanitizer=True)
def race_gm_blocks(x: FIXED, z: FIXED):
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        pl.load(a, x, [0, 0])
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.store(z, a, [0, 0])  # BUG: every block stores the same rows


@pl.jit(arch="a5", sanitizer=True)
def gm_handoff_without_sync_all(x: FIXED, ws: FIXED, z: FIXED):
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        if pl.get_block_idx() == 0:
            pl.load(a, x, [0, 0])
            pl.system.sync_src(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
            pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
            pl.store(ws, a, [0, 0])
        else:
            for _ in pl.range(3):  # busy long enough for block 0's store to start first
                pl.load(a, x, [0, 0])
            pl.load(a, ws, [0, 0])  # BUG: block 0's store to ws is not ordered before this
            pl.system.sync_src(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
            pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
            pl.store(z, a, [0, 0])


@pl.jit(arch="a5", sanitizer=True)
def sync_all_on_one_block(x: FIXED, z: FIXED):
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        pl.load(a, x, [0, 0])
        if pl.get_block_idx() == 0:
            pl.system.sync_all(core_type=pl.SyncCoreType.AIV_ONLY)  # BUG: block 1 never comes
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.store(z, a, [0, 0])


# ---------------------------------------------------------------- flags, mutexes, cross-core


@pl.jit(arch="a5", sanitizer=True)
def double_set(x: FIXED, z: FIXED):
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=1)
        pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=1)  # BUG: set twice
        pl.load(a, x, [0, 0])
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=V, wait_pipe=MTE3, event_id=1)
        pl.store(z, a, [0, 0])


@pl.jit(arch="a5", sanitizer=True)
def set_never_waited(x: FIXED, z: FIXED):
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        pl.load(a, x, [0, 0])
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=V, event_id=2)  # BUG: nobody waits
        pl.store(z, a, [0, 0])


@pl.jit(arch="a5", sanitizer=True)
def wait_never_set(x: FIXED, z: FIXED):
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        pl.load(a, x, [0, 0])
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=3)  # BUG: nobody sets it
        pl.store(z, a, [0, 0])


@pl.jit(arch="a5", sanitizer=True, auto_mutex=False)
def unlock_without_lock(x: FIXED, z: FIXED):
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        pl.load(a, x, [0, 0])
        pl.system.mutex_unlock(pipe=MTE2, mutex_id=3)  # BUG: MTE2 never locked id 3
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.store(z, a, [0, 0])


@pl.jit(arch="a5", sanitizer=True, auto_mutex=False)
def lock_never_unlocked(x: FIXED, z: FIXED):
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        pl.system.mutex_lock(pipe=MTE2, mutex_id=4)  # BUG: never unlocked
        pl.load(a, x, [0, 0])
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.store(z, a, [0, 0])


@pl.jit(arch="a5", sanitizer=True, auto_mutex=False)
def double_lock(x: FIXED, z: FIXED):
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        b = pl.make_tile(T16, addr=0x4000)
        pl.system.mutex_lock(pipe=MTE2, mutex_id=5)
        pl.load(a, x, [0, 0])
        pl.system.mutex_lock(pipe=MTE2, mutex_id=5)  # BUG: MTE2 already holds id 5
        pl.load(b, x, [0, 0])
        pl.system.mutex_unlock(pipe=MTE2, mutex_id=5)
        pl.system.mutex_unlock(pipe=MTE2, mutex_id=5)
        pl.system.bar_all()
        pl.store(z, a, [0, 0])


@pl.jit(arch="a5", sanitizer=True)
def cross_core_set_never_waited(a: FIXED, z: FIXED):
    with pl.section_cube():
        l1 = pl.make_tile(L1_T, addr=0x0)
        pl.load(l1, a, [0, 0])
        pl.system.set_cross_core(pipe=MTE2, event_id=2)  # BUG: the vector side never waits
    with pl.section_vector():
        t = pl.make_tile(T16, addr=0x0)
        pl.load(t, a, [0, 0])
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.store(z, t, [0, 0])


@pl.jit(arch="a5", sanitizer=True)
def cross_core_wait_never_set(a: FIXED, z: FIXED):
    with pl.section_cube():
        l1 = pl.make_tile(L1_T, addr=0x0)
        pl.load(l1, a, [0, 0])
    with pl.section_vector():
        t = pl.make_tile(T16, addr=0x0)
        pl.system.wait_cross_core(pipe=MTE2, event_id=5)  # BUG: the cube never sets id 5
        pl.load(t, a, [0, 0])
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.store(z, t, [0, 0])


@pl.jit(arch="a5", sanitizer=True)
def race_store_then_reload(a: FIXED, z: FIXED):
    with pl.section_vector():
        half = pl.TileType([32, 128], pl.DT_FP16)
        row0 = pl.get_subblock_idx() * 32
        t = pl.make_tile(half, addr=0x0)
        u = pl.make_tile(half, addr=0x2000)
        pl.load(u, a, [row0, 0])
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=V, event_id=1)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=V, event_id=1)  # orders the read below
        pl.move(t, u)
        pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=V, wait_pipe=MTE3, event_id=0)
        pl.store(z, t, [row0, 0])
        pl.load(t, a, [row0, 0])  # BUG: reuses t with no sync after the move and the store


def _fp16(*shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g).half()


def _xz(rows=64, cols=128):
    return lambda: (_fp16(rows, cols), torch.zeros(rows, cols, dtype=torch.float16))


def _xyz():
    return lambda: (_fp16(64, 128), _fp16(64, 128, seed=1), torch.zeros(64, 128).half())


#: (kernel, inputs, block_dim, expected kind, backend)
CASES = [
    (gm_oob_load, _xz(), 1, "GM_OUT_OF_BOUNDS", "sim"),
    (gm_oob_store, _xz(), 1, "GM_OUT_OF_BOUNDS", "sim"),
    (gm_oob_getval, _xz(), 1, "GM_OUT_OF_BOUNDS", "sim"),
    (gm_oob_setval, _xz(), 1, "GM_OUT_OF_BOUNDS", "sim"),
    (gm_view_past_source, _xz(), 1, "GM_OUT_OF_BOUNDS", "sim"),
    (tile_validshape_too_big, _xz(), 1, "TILE_OUT_OF_BOUNDS", "sim"),
    (tile_getval_past_end, _xz(), 1, "TILE_OUT_OF_BOUNDS", "sim"),
    (tile_setval_past_end, _xz(), 1, "TILE_OUT_OF_BOUNDS", "sim"),
    (ub_capacity_on_smaller_soc, _xz(), 1, "BUFFER_CAPACITY_EXCEEDED", "sim-910b1"),
    (misaligned_slice, lambda: (_fp16(64, 16), torch.zeros(64, 8).half()), 1,
     "MISALIGNED_ACCESS", "sim"),
    (overlapping_tiles, _xyz(), 1, "TILE_OVERLAP", "sim"),
    (uninitialised_read, _xz(), 1, "UNINITIALIZED_READ", "sim"),
    (race_load_then_add, _xyz(), 1, "DATA_RACE_RAW", "sim"),
    (race_add_then_store, _xyz(), 1, "DATA_RACE_RAW", "sim"),
    (race_wrong_flag_pipes, _xyz(), 1, "DATA_RACE_RAW", "sim"),
    (race_buffer_reuse, _xz(128, 128), 1, "DATA_RACE_WAR", "sim"),
    (race_two_writers, _xz(128, 128), 1, "DATA_RACE_WAW", "sim"),
    (race_scalar_read, _xz(), 1, "DATA_RACE_RAW", "sim"),
    (race_cube_l1, _xz(), 1, "DATA_RACE_RAW", "sim"),
    (race_gm_blocks, _xz(), 2, "GM_WRITE_CONFLICT", "sim"),
    (gm_handoff_without_sync_all, _xyz(), 2, "GM_RACE_RAW", "sim"),
    (sync_all_on_one_block, _xz(), 2, "DEADLOCK", "sim"),
    (race_store_then_reload, _xz(), 1, "DATA_RACE_WAW", "sim"),
    (double_set, _xz(), 1, "DOUBLE_SET_FLAG", "sim"),
    (set_never_waited, _xz(), 1, "UNPAIRED_SET_FLAG", "sim"),
    (wait_never_set, _xz(), 1, "UNPAIRED_WAIT_FLAG", "sim"),
    (unlock_without_lock, _xz(), 1, "MUTEX_UNLOCK_BEFORE_LOCK", "sim"),
    (lock_never_unlocked, _xz(), 1, "UNPAIRED_MUTEX_LOCK", "sim"),
    (double_lock, _xz(), 1, "MUTEX_DOUBLE_LOCK", "sim"),
    (cross_core_set_never_waited, _xz(), 1, "CROSS_CORE_UNPAIRED", "sim"),
    (cross_core_wait_never_set, _xz(), 1, "CROSS_CORE_WAIT_WITHOUT_SET", "sim"),
]


def bug_line(kernel) -> int:
    lines, first = inspect.getsourcelines(kernel.kernel_def.fn)
    hits = [first + i for i, text in enumerate(lines) if "# BUG" in text]
    assert len(hits) == 1, hits
    return hits[0]


@pytest.fixture(autouse=True)
def small_soc_backend(monkeypatch):
    """A 910B1 simulator (192 KiB UB) as "sim-910b1", not leaking into other tests."""
    monkeypatch.setattr(backends, "_factories", dict(backends._factories))
    monkeypatch.setattr(backends, "_instances", dict(backends._instances))
    backends.register_backend("sim-910b1", lambda: SimBackend(soc_name="910B1"))


def run_sanitized(kernel, inputs, block_dim, backend="sim"):
    """(report, error or None) of one sanitized launch."""
    with use_backend(backend):
        try:
            kernel[None, block_dim](*inputs)
        except PyptoError as err:
            return err.sanitizer, err
    return kernel.last_result.sanitizer, None


@pytest.mark.parametrize("kernel,inputs,block_dim,kind,backend", CASES,
                         ids=[c[0].kernel_def.name for c in CASES])
def test_seeded_fault_is_reported_with_kind_and_line(kernel, inputs, block_dim, kind, backend,
                                                     capsys):
    report, _ = run_sanitized(kernel, inputs(), block_dim, backend)
    line = bug_line(kernel)
    hits = [f for f in report if f.kind == kind]
    assert hits, report.text()
    assert any(f.line == line for f in hits), (line, report.text())
    assert f"{kind}: " in capsys.readouterr().out  # the report was printed


def test_the_suite_covers_many_kinds():
    assert len(CASES) >= 25
    assert len({c[3] for c in CASES}) >= 20


@pl.jit(arch="a5", sanitizer=True)
def synced_loop(x: pl.Tensor[[128, 128], pl.DT_FP16], z: pl.Tensor[[128, 128], pl.DT_FP16]):
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        c = pl.make_tile(T16, addr=0x8000)
        for i in pl.range(2):
            pl.load(a, x, [i * 64, 0])
            pl.system.sync_src(set_pipe=MTE2, wait_pipe=V, event_id=0)
            pl.system.sync_dst(set_pipe=MTE2, wait_pipe=V, event_id=0)
            pl.abs(c, a)
            pl.system.sync_src(set_pipe=V, wait_pipe=MTE2, event_id=1)  # a may be reloaded
            pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=0)
            pl.system.sync_dst(set_pipe=V, wait_pipe=MTE3, event_id=0)
            pl.store(z, c, [i * 64, 0])
            pl.system.sync_src(set_pipe=MTE3, wait_pipe=V, event_id=2)  # c may be rewritten
            pl.system.sync_dst(set_pipe=MTE3, wait_pipe=V, event_id=2)
            pl.system.sync_dst(set_pipe=V, wait_pipe=MTE2, event_id=1)


def test_flags_reused_around_a_loop_are_clean():
    x = _fp16(128, 128)
    z = torch.zeros_like(x)
    report, err = run_sanitized(synced_loop, (x, z), 1)
    assert err is None and len(report) == 0, report.text()
    assert torch.equal(z, x.abs())
