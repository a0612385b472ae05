"""Bad input at launch and at run time on the simulator: every case ends quickly in a typed
PyPTO error with its code (and, for faults inside the kernel, the kernel's source line); none
hangs, none escapes as a bare Python exception. Inputs the hardware handles (non-contiguous and
transposed views) are run, not rejected.
"""
from __future__ import annotations

import inspect
import time

import pytest
import torch

import pypto_pro.language as pl
from pypto_pro.errors import (
    DeadlockError,
    InvalidArgument,
    InvalidShape,
    InvalidType,
    KernelTrap,
    PyptoError,
    SimulationError,
)
from pypto_pro.runtime import backends
from pypto_pro.runtime.backends import ENV_BACKEND, current_backend_name, use_backend
from pypto_pro.runtime.backends.sim import SimBackend
from pypto_pro.sim import settings

MTE2, V, MTE3 = pl.PipeType.MTE2, pl.PipeType.V, pl.PipeType.MTE3
T16 = pl.TileType([64, 128], pl.DT_FP16)
DYN = pl.Tensor[[pl.DYNAMIC, pl.DYNAMIC], pl.DT_FP16]
FIXED = pl.Tensor[[64, 128], pl.DT_FP16]


@pl.jit(arch="a5")
def copy(x: DYN, z: DYN):
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        pl.load(a, x, [0, 0])
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.store(z, a, [0, 0])


@pl.jit(arch="a5")
def fixed_copy(x: FIXED, z: FIXED):
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        pl.load(a, x, [0, 0])
        pl.system.sync_src(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=0)
        pl.store(z, a, [0, 0])


@pl.jit(arch="a5")
def divide_by_zero(x: DYN, z: DYN):
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        rows = x.shape[0] // (x.shape[1] - 128)  # FAULT: divide_by_zero
        pl.load(a, x, [rows, 0])


@pl.jit(arch="a5")
def load_past_end(x: DYN, z: DYN):
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        pl.load(a, x, [x.shape[0] - 8, 0])  # FAULT: load_past_end
        pl.system.bar_all()


@pl.jit(arch="a5")
def store_past_end(x: DYN, z: DYN):
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        pl.load(a, x, [0, 0])
        pl.system.sync_src(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.system.sync_dst(set_pipe=pl.PipeType.MTE2, wait_pipe=pl.PipeType.MTE3, event_id=0)
        pl.store(z, a, [z.shape[0] - 8, 0])  # FAULT: store_past_end


@pl.jit(arch="a5")
def valid_shape_too_big(x: DYN, z: DYN):
    with pl.section_vector():
        a = pl.make_tile(pl.TileType([64, 128], pl.DT_FP16, valid_shape=[-1, -1]), addr=0x0)
        pl.set_validshape(a, [x.shape[0] + 1, 128])  # FAULT: valid_shape_too_big


@pl.jit(arch="a5")
def tile_getval_past_end(x: DYN, z: DYN):
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        v = pl.getval(a, x.shape[1] * 64)  # FAULT: tile_getval_past_end
        pl.setval(z, 0, v)


@pl.jit(arch="a5")
def wait_never_set(x: DYN, z: DYN):
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        pl.load(a, x, [0, 0])
        pl.system.sync_dst(set_pipe=MTE2, wait_pipe=MTE3, event_id=9)  # FAULT: wait_never_set
        pl.store(z, a, [0, 0])


@pl.jit(arch="a5")
def cross_core_never_set(x: FIXED, z: FIXED):
    with pl.section_cube():
        l1 = pl.make_tile(pl.TileType([64, 128], pl.DT_FP16, pl.MemorySpace.Mat), addr=0)
        pl.load(l1, x, [0, 0])
    with pl.section_vector():
        t = pl.make_tile(T16, addr=0x0)
        pl.system.wait_cross_core(pipe=MTE2, event_id=4)  # FAULT: cross_core_never_set
        pl.load(t, x, [0, 0])


@pl.jit(arch="a5")
def double_set(x: DYN, z: DYN):
    with pl.section_vector():
        pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=1)
        pl.system.sync_src(set_pipe=V, wait_pipe=MTE3, event_id=1)  # FAULT: double_set
        pl.system.sync_dst(set_pipe=V, wait_pipe=MTE3, event_id=1)


@pl.jit(arch="a5", auto_mutex=False)
def unlock_unlocked(x: DYN, z: DYN):
    with pl.section_vector():
        a = pl.make_tile(T16, addr=0x0)
        pl.load(a, x, [0, 0])
        pl.system.mutex_unlock(pipe=MTE2, mutex_id=2)  # FAULT: unlock_unlocked


@pl.jit(arch="a5")
def traps(x: DYN, z: DYN):
    with pl.section_vector():
        if x.shape[0] > 8:
            pl.trap()  # FAULT: traps


def _fault_line(kernel, tag: str) -> int:
    lines, first = inspect.getsourcelines(kernel.kernel_def.fn)
    hits = [first + i for i, text in enumerate(lines) if f"# FAULT: {tag}" in text]
    assert len(hits) == 1, (tag, hits)
    return hits[0]


def _xz(rows: int = 64, cols: int = 128) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(rows, cols).half(), torch.zeros(rows, cols).half()


@pytest.fixture(autouse=True)
def on_sim(monkeypatch):
    monkeypatch.delenv(settings.SOC, raising=False)
    monkeypatch.setattr(backends, "_factories", dict(backends._factories))
    monkeypatch.setattr(backends, "_instances", dict(backends._instances))
    with use_backend("sim"):
        yield


def _raises(error: type[PyptoError], code: str, fn, match: str | None = None) -> PyptoError:
    t0 = time.perf_counter()
    with pytest.raises(error, match=match) as info:
        fn()
    assert time.perf_counter() - t0 < 60, "a bad launch must fail fast, not hang"
    assert info.value.code_str == code
    return info.value


# ---------------------------------------------------------------- launch arguments

X, Z = _xz()
LAUNCH_CASES = [
    ("wrong dtype", InvalidType, "F00001", lambda: copy[None, 1](X.float(), Z), "dtype"),
    ("wrong rank", InvalidShape, "F0000B", lambda: copy[None, 1](X[0], Z), "rank"),
    ("missing argument", InvalidType, "F00001", lambda: copy[None, 1](X), "missing"),
    ("extra argument", InvalidType, "F00001", lambda: copy[None, 1](X, Z, Z), "too many"),
    ("scalar for a tensor", InvalidType, "F00001", lambda: copy[None, 1](3, Z), "type"),
    ("zero-size dim", InvalidShape, "F0000B", lambda: copy[None, 1](*_xz(0, 128)),
     "axis 0 must be positive"),
    ("fixed dim mismatch", InvalidShape, "F0000B",
     lambda: fixed_copy[None, 1](torch.zeros(64, 64).half(), Z), "dim mismatch"),
    ("wrong device", InvalidArgument, "F0000E", lambda: copy[None, 1](X.to("meta"), Z),
     "device"),
    ("block_dim 0", InvalidArgument, "F0000E", lambda: copy[None, 0](X, Z), "block_dim"),
    ("negative block_dim", InvalidArgument, "F0000E", lambda: copy[None, -3](X, Z),
     "block_dim"),
    ("bool block_dim", InvalidArgument, "F0000E", lambda: copy[None, True](X, Z), "block_dim"),
    ("float block_dim", InvalidArgument, "F0000E", lambda: copy[None, 2.0](X, Z), "block_dim"),
    ("huge block_dim", InvalidArgument, "F0000E", lambda: copy[None, 2 ** 31](X, Z),
     "launch limit"),
    ("bracket arity", InvalidArgument, "F0000E", lambda: copy[None, 1, 2](X, Z), "Expected"),
]


@pytest.mark.parametrize("name,error,code,launch,match", LAUNCH_CASES,
                         ids=[c[0] for c in LAUNCH_CASES])
def test_bad_launch_argument_is_a_typed_error(name, error, code, launch, match):
    _raises(error, code, launch, match)


def test_bad_backend_and_soc_settings_are_typed_errors(monkeypatch):
    monkeypatch.setenv(settings.SOC, "no-such-chip")
    _raises(InvalidArgument, "F0000E", lambda: copy[None, 1](*_xz()), settings.SOC)
    monkeypatch.delenv(settings.SOC)
    monkeypatch.setenv(ENV_BACKEND, "gpu")
    assert current_backend_name() == "sim"  # use_backend wins over the env
    token = backends._override.set(None)
    try:
        _raises(InvalidArgument, "F0000E", current_backend_name, ENV_BACKEND)
    finally:
        backends._override.reset(token)
    _raises(InvalidArgument, "F0000E", lambda: SimBackend(functional_only=True,
                                                          timing_only=True), "exclude")


def test_sanitizer_refuses_a_timing_only_simulator():
    from pypto_pro.sanitizer import sanitize

    backends.register_backend("sim-timing", lambda: SimBackend(timing_only=True))
    with use_backend("sim-timing"), sanitize():
        _raises(InvalidArgument, "F0000E", lambda: copy[None, 1](*_xz()), "timing_only")


# ---------------------------------------------------------------- faults inside the kernel

RUNTIME_CASES = [
    ("divide_by_zero", divide_by_zero, _xz, SimulationError, "F00003"),
    ("load_past_end", load_past_end, _xz, SimulationError, "F00003"),
    ("store_past_end", store_past_end, _xz, SimulationError, "F00003"),  # (its write deferred)
    ("valid_shape_too_big", valid_shape_too_big, _xz, SimulationError, "F00003"),
    ("tile_getval_past_end", tile_getval_past_end, _xz, SimulationError, "F00003"),
    ("wait_never_set", wait_never_set, _xz, DeadlockError, "F00003"),
    ("cross_core_never_set", cross_core_never_set, _xz, DeadlockError, "F00003"),
    ("double_set", double_set, _xz, SimulationError, "F00003"),
    ("unlock_unlocked", unlock_unlocked, _xz, SimulationError, "F00003"),
    ("traps", traps, _xz, KernelTrap, "F00003"),
]


@pytest.mark.parametrize("tag,kernel,inputs,error,code", RUNTIME_CASES,
                         ids=[c[0] for c in RUNTIME_CASES])
def test_runtime_fault_is_a_typed_error_at_the_kernel_line(tag, kernel, inputs, error, code):
    err = _raises(error, code, lambda: kernel[None, 2](*inputs()))
    line = _fault_line(kernel, tag)
    if isinstance(err, DeadlockError):
        assert f"(line {line})" in str(err) and err.stuck
    else:
        assert err.span is not None and err.span.line == line, str(err)
        assert f"--> {err.span.file}:{line}:" in str(err)


# ---------------------------------------------------------------- inputs that must just work


def test_non_contiguous_and_transposed_inputs_run_from_their_first_element():
    """The real runtime passes `data_ptr()`: the kernel reads row-major from there (see
    test_upstream_runtime_behaviour for the values on sim and native)."""
    wide = torch.randn(64, 256).half()
    z = torch.zeros(64, 128).half()
    copy[None, 1](wide[:, ::2], z)
    assert torch.equal(z.flatten(), wide.flatten()[:64 * 128])
    tall = torch.randn(128, 64).half()
    copy[None, 1](tall.t(), z)
    assert torch.equal(z, tall.reshape(64, 128))
