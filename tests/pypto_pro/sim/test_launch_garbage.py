"""A finished launch leaves no reference cycles (issue 9): its cores, pipes, program frames,
callbacks and sanitizer state die by refcount when the result is replaced, instead of piling up
for a GC pass (which cost more than a small launch)."""
from __future__ import annotations

import contextlib
import gc
import io
from collections.abc import Iterator

import pytest
import torch

import pypto_pro.language as pl
from pypto_pro.errors import DeadlockError
from pypto_pro.examples import load
from pypto_pro.runtime.backends import register_backend, use_backend
from pypto_pro.runtime.backends.sim import SimBackend
from pypto_pro.sanitizer import sanitize

register_backend("sim-functional-garbage", lambda: SimBackend(functional_only=True))
_BACKENDS = {"timed": "sim", "functional": "sim-functional-garbage", "sanitized": "sim"}


@contextlib.contextmanager
def _cyclic_garbage() -> Iterator[list]:
    """The objects a cyclic collection would free, of what runs inside."""
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        found: list = []
        yield found
        gc.collect()
        found.extend(gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


@pytest.mark.parametrize("mode", sorted(_BACKENDS))
@pytest.mark.parametrize("example,kernel,shape", [
    ("vector_add", "add_kernel", {"m": 256, "n": 384}),  # AIV only
    ("matmul_softmax", "matmul_softmax_kernel", {"n": 64}),  # mix: 1 AIC + 2 AIV per block
])
def test_a_launch_leaves_no_cycles(mode: str, example: str, kernel: str, shape: dict) -> None:
    ex = load(example)
    k = getattr(ex, kernel)
    args = ex.make_inputs(**shape)
    with use_backend(_BACKENDS[mode]), sanitize(mode == "sanitized"), \
            contextlib.redirect_stdout(io.StringIO()):
        k[None, ex.block_dim(*args)](*args)  # compiles, warms the caches
        with _cyclic_garbage() as garbage:
            for _ in range(2):  # the second launch frees the first one's result
                k[None, ex.block_dim(*args)](*args)
    assert garbage == []


@pl.jit(arch="a5")
def waits_for_block_1(x: pl.Tensor[[128, 128], pl.DT_FP16]):
    with pl.section_cube():  # (a kernel with cross-core ids needs cube code)
        pl.system.bar_all()
    with pl.section_vector():
        t = pl.make_tile(pl.TileType([128, 128], pl.DT_FP16), addr=0x0)
        pl.load(t, x, [0, 0])
        if pl.get_block_idx() == 1:  # launched with one block: nobody sets it
            pl.system.set_cross_core(pipe=pl.PipeType.MTE2, event_id=2,
                                     sync_mode=pl.CrossCoreSyncMode.INTER_BLOCK)
        pl.system.wait_cross_core(pipe=pl.PipeType.MTE3, event_id=2,
                                  sync_mode=pl.CrossCoreSyncMode.INTER_BLOCK)


@pytest.mark.parametrize("mode", ["timed", "functional"])
def test_a_deadlocked_launch_leaves_no_cycles(mode: str) -> None:
    x = torch.zeros(128, 128).half()
    with use_backend(_BACKENDS[mode]):
        with pytest.raises(DeadlockError):
            waits_for_block_1[None, 1](x)
        with _cyclic_garbage() as garbage:
            for _ in range(2):
                try:
                    waits_for_block_1[None, 1](x)
                except DeadlockError:
                    pass
    assert garbage == []
