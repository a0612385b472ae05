"""Add, SIMT (spec §6.2 walkthrough 3).

Teaches: a launchable SIMT function (`@pl.simt.function(max_threads=256)`) whose threads each
update one element of a UB tile (`thread_idx().x`, `tile[r, c]` element access), started from
the vector section with `pl.simt.launch(fn, threads=256, args=(tile, delta))`; and manual
intra-core flags around it, because a plain `pl.make_tile` gets no automatic sync: MTE2→V
(event 0) between the GM load and the launch, V→MTE3 (event 1) between the launch and the store.

`simt_add_auto_kernel` is the same kernel with a one-slot tile group and auto_mutex instead of
the flags (`simt.launch` counts as a V op for auto_mutex).
"""
from __future__ import annotations

import torch

import pypto_pro.language as pl

TARGETS = ("vector",)
KERNEL_TYPE = "aiv"
RTOL, ATOL = 0.0, 0.0

N = 256
DATA_T = pl.TileType([1, N], pl.DT_FP32)  # 1 KiB of UB


@pl.simt.function(max_threads=N)
def add_delta(data: pl.Tile[[1, N], pl.DT_FP32], delta: pl.DT_FP32):
    tid = pl.simt.thread_idx().x
    data[0, tid] = data[0, tid] + delta


@pl.jit(arch="a5")
def simt_add_kernel(src: pl.Tensor[[1, N], pl.DT_FP32], dst: pl.Tensor[[1, N], pl.DT_FP32],
                    delta: pl.DT_FP32):
    with pl.section_vector():
        data = pl.make_tile(DATA_T, addr=0x0)
        pl.load(data, src, [0, 0])
        pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.V, event_id=0)
        pl.simt.launch(add_delta, threads=N, args=(data, delta))
        pl.system.sync_src(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=1)
        pl.system.sync_dst(set_pipe=pl.PipeType.V, wait_pipe=pl.PipeType.MTE3, event_id=1)
        pl.store(dst, data, [0, 0])


@pl.jit(arch="a5")
def simt_add_auto_kernel(src: pl.Tensor[[1, N], pl.DT_FP32],
                         dst: pl.Tensor[[1, N], pl.DT_FP32], delta: pl.DT_FP32):
    with pl.section_vector():
        ring = pl.make_tile_group(type=DATA_T, addrs=0x0, mutex_ids=[0])
        data = ring.next()
        pl.load(data, src, [0, 0])
        pl.simt.launch(add_delta, threads=N, args=(data, delta))
        pl.store(dst, data, [0, 0])


KERNELS = {"simt_add_kernel": simt_add_kernel, "simt_add_auto_kernel": simt_add_auto_kernel}


def make_inputs(delta: float = 2.5, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    src = torch.randn(1, N, generator=g, dtype=torch.float32)
    return src, torch.zeros(1, N, dtype=torch.float32), float(delta)


def reference(src: torch.Tensor, dst: torch.Tensor, delta: float) -> torch.Tensor:
    return src + torch.tensor(delta, dtype=torch.float32)


def block_dim(*args) -> int:
    return 1


def run(*args, kernel=simt_add_kernel) -> torch.Tensor:
    kernel(*args)
    return args[1]
