"""A relaunch with the same tensors reuses the last launch's GM views (issue 9): only while the
tensor is the same object with the same shape, strides and storage, and always giving the
values a fresh view gives. Functional launches build their FunctionalEngine directly; a pooled
on-chip memory is reset where it was written, and only there; pandas waits for the Trace's
first read."""
from __future__ import annotations

import gc
import os
import subprocess
import sys
import weakref
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

import pypto_pro.language as pl
from pypto_pro.examples import load
from pypto_pro.ir.dtype import DataType
from pypto_pro.ir.types import MemorySpace
from pypto_pro.runtime.backends import LaunchRequest, register_backend, use_backend
from pypto_pro.runtime.backends import sim as sim_backend
from pypto_pro.runtime.binding import bind
from pypto_pro.runtime.kernel_def import JitOptions
from pypto_pro.sanitizer import sanitize
from pypto_pro.sim.pools import Pools
from pypto_pro.sim.reference.functional import FunctionalEngine
from pypto_pro.sim.launch import Launch
from pypto_pro.sim.model.memory import CoreMemory, TileGeometry, TileRef
from pypto_pro.soc import soc

ROOT = Path(__file__).resolve().parents[3]
register_backend("sim-func-gm-test", lambda: sim_backend.SimBackend(functional_only=True))


def _views(kernel) -> dict:
    (compiled,) = kernel.compiled_variants.values()
    return {i: gm for i, (gm, _) in sim_backend._gm_views(compiled)["vector"].items()}


def test_same_tensors_reuse_their_views_and_see_new_values() -> None:
    ex = load("vector_add")
    x, y, z = ex.make_inputs(128, 128, seed=0)
    with use_backend("sim"):
        ex.add_kernel[None, 1](x, y, z)
        first = _views(ex.add_kernel)
        x.mul_(3)  # in place: the reused view must read the new values
        ex.add_kernel[None, 1](x, y, z)
    assert all(first[i] is gm for i, gm in _views(ex.add_kernel).items())
    assert torch.equal(z, x + y)


def test_a_kernel_decorated_again_reuses_the_views_of_its_tensors() -> None:
    """An edited notebook cell makes a new kernel of the same name: launched on the same
    tensors, it finds their GM views (and the windows they memoise) and computes with them."""
    ex = load("vector_add")
    x, y, z = ex.make_inputs(128, 128, seed=0)
    with use_backend("sim"):
        ex.add_kernel[None, 1](x, y, z)
        first = _views(ex.add_kernel)
        again = _decorated_again(ex.add_kernel)
        y.add_(1)
        again[None, 1](x, y, z)
    assert all(first[i] is gm for i, gm in _views(again).items())
    assert torch.equal(z, x + y)


def _decorated_again(kernel):
    options = kernel.options
    return pl.jit(**{name: getattr(options, name) for name in JitOptions.__slots__})(
        kernel.kernel_def.fn)


def test_views_are_kept_for_the_most_recent_kernel_names_only(monkeypatch) -> None:
    monkeypatch.setattr(sim_backend, "_GM_VIEWS", type(sim_backend._GM_VIEWS)())
    ex = load("vector_add")
    args = ex.make_inputs(128, 128, seed=0)
    alive = weakref.ref(args[0])
    kernel = _decorated_again(ex.add_kernel)
    with use_backend("sim"):
        kernel[None, 1](*args)
    del kernel
    for i in range(sim_backend._GM_VIEWS_NAMES):
        sim_backend._gm_views(SimpleNamespace(name=f"other_{i}"))
    del args
    gc.collect()
    assert alive() is None
    assert len(sim_backend._GM_VIEWS) == sim_backend._GM_VIEWS_NAMES


def test_a_changed_storage_or_another_tensor_gets_a_new_view() -> None:
    ex = load("vector_add")
    x, y, z = ex.make_inputs(128, 128, seed=0)
    with use_backend("sim-func-gm-test"):
        ex.add_kernel[None, 1](x, y, z)
        old_z = _views(ex.add_kernel)[2]
        z.set_(torch.full((128, 128), 7.0, dtype=z.dtype))  # same object, new storage
        ex.add_kernel[None, 1](x, y, z)
        assert _views(ex.add_kernel)[2] is not old_z
        assert torch.equal(z, x + y)
        y2 = y.clone()
        alive = weakref.ref(y2)
        ex.add_kernel[None, 1](x, y2, z)
        assert _views(ex.add_kernel)[1].tensor is y2
        ex.add_kernel[None, 1](x, y, z)  # the kernel lets go of y2's view
    del y2
    gc.collect()
    assert alive() is None
    assert torch.equal(z, x + y)


@pytest.mark.filterwarnings("ignore:.*non-contiguous tensor")
def test_a_view_of_a_strided_tensor_is_not_taken_for_its_base() -> None:
    """A column slice of a wider tensor gets a GM view of its own (not the last launch's),
    written as the NPU writes it: row-major from its first element (`binding._warn_layout`)."""
    ex = load("vector_add")
    x, y, z = ex.make_inputs(128, 128, seed=0)
    big = torch.zeros(128, 256, dtype=z.dtype)
    with use_backend("sim"):
        ex.add_kernel[None, 1](x, y, z)
        ex.add_kernel[None, 1](x, y, big[:, :128])
    assert torch.equal(z, x + y)
    flat = big.flatten()
    assert torch.equal(flat[:128 * 128].view(128, 128), x + y)
    assert not flat[128 * 128:].any()


def test_functional_launches_build_the_functional_engine_once() -> None:
    ex = load("vector_add")
    x, y, z = ex.make_inputs(128, 128, seed=0)
    with use_backend("sim-func-gm-test"):
        ex.add_kernel[None, 1](x, y, z)  # compile
    (compiled,) = ex.add_kernel.compiled_variants.values()
    bound = bind(ex.add_kernel.kernel_def, (x, y, z), {}, compiled.spec)
    request = LaunchRequest(compiled, 1, None, bound.args, bound.dyn_dims)
    programs = sim_backend._programs(compiled)
    params = {t: sim_backend._param_values(p.function, request, {})
              for t, p in programs.items()}
    table = sim_backend.SimBackend().soc
    plain = Launch(programs, compiled.kernel_type, 1, params, table, None, functional_only=True)
    assert type(plain.engine) is FunctionalEngine
    watcher = object()
    watched = Launch(programs, compiled.kernel_type, 1, params, table, None,
                     functional_only=True, observer=watcher)
    assert type(watched.engine) is not FunctionalEngine and watched.engine.observer is watcher
    plain.release()
    watched.release()
    with use_backend("sim-func-gm-test"), sanitize():
        ex.add_kernel[None, 1](x, y, z)
    assert ex.add_kernel.last_result.sanitizer is not None
    assert torch.equal(z, x + y)


def test_a_reused_memory_is_reset_where_it_was_written_only() -> None:
    table = soc()
    fresh = CoreMemory(table, "aic")
    pools = Pools()
    mem = pools.core_memory(table, "aic")
    g = TileGeometry(16, 16, DataType.FP16, MemorySpace.Mat, addr=512)
    TileRef(mem, g, 16, 16).write(torch.ones(16, 16, dtype=torch.float16))
    mem.buffers[MemorySpace.Acc].view(torch.int32)[7] = 5  # through a view of the buffer
    assert not torch.equal(mem.buffers[MemorySpace.Mat], fresh.buffers[MemorySpace.Mat])
    untouched = mem.buffers[MemorySpace.Left]._version
    pools.give_back(mem)
    assert pools.core_memory(table, "aic") is mem
    assert mem.buffers[MemorySpace.Left]._version == untouched  # not copied again
    for space, buf in mem.buffers.items():
        assert torch.equal(buf, fresh.buffers[space]), space
        assert not mem.initialised[space].any(), space


def test_a_memory_hands_out_one_tile_ref_per_geometry_and_valid_shape() -> None:
    """What ops keep per TileRef (plans, views) serves every launch on a pooled memory; a ref
    whose memory, geometry or valid shape was changed is not handed out again."""
    mem = CoreMemory(soc(), "aiv")
    g = TileGeometry(16, 16, DataType.FP32, MemorySpace.Vec, addr=0)
    ref = mem.ref(g, 16, 16)
    assert mem.ref(g, 16, 16) is ref and mem.ref(g, 8, 16) is not ref
    ref.valid_rows = 4  # (what a test or a rebinding may do to a made ref)
    again = mem.ref(g, 16, 16)
    assert again is not ref and again.valid == (16, 16)


def test_a_new_recording_reuses_the_tile_refs_and_plans_of_the_last_launch() -> None:
    """A launch recorded afresh (an edited kernel, the memo cleared) on pooled memories issues
    the same TileRefs (the later waves' too, moved to their slots), so the product and copy
    plans kept on them are made once; the values are a fresh launch's."""
    from pypto_pro.sim.fast import memo

    ex = load("matmul")
    a, b, out = ex.make_inputs(512, 512, seed=0)  # more blocks than cores: two waves
    issued: list[list[TileRef]] = []
    with use_backend("sim"):
        for _ in range(2):
            memo.clear()
            out.zero_()
            ex.run(a, b, out)
            torch.testing.assert_close(out, ex.reference(a, b), rtol=1e-3, atol=1e-3)
            (compiled,) = ex.matmul_kernel.compiled_variants.values()
            program = next(iter(sim_backend._programs(compiled).values()))
            entry = getattr(program, memo.TIMED)
            issued.append([x for i in entry.rec.instrs if i.kind == "op" for x in i.args
                           if type(x) is TileRef])
    first, second = issued
    assert len(first) == len(second) and all(x is y for x, y in zip(first, second))


def test_a_launch_imports_no_pandas_until_its_trace_is_read() -> None:
    script = (
        "import sys\n"
        "from pypto_pro.examples import load\n"
        "ex = load('vector_add')\n"
        "ex.add_kernel[None, 1](*ex.make_inputs(128, 128, seed=0))\n"
        "print('pandas' in sys.modules)\n"
        "ex.add_kernel.last_trace.events\n"
        "print('pandas' in sys.modules)\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True"]


def test_scheduler_addresses_are_the_arrays_data():
    """The scheduler's calls take an array's data address the cheap way where the buffer is
    writable, and numpy's way for read-only or empty arrays: the same address either way."""
    import numpy as np

    from pypto_pro.sim.fast.scheduler_native import _at

    writable = np.arange(10, dtype=np.int64)
    read_only = np.frombuffer(bytes(80), dtype=np.int64)
    empty = np.zeros(0, dtype=np.int64)
    for a in (writable, read_only, empty, writable[2:]):
        assert _at(a) == a.ctypes.data
