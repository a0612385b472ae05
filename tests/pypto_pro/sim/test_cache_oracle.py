"""Every example launched with the relaunch caches on gives, byte for byte, what it gives with
them off (`SimBackend(cache=False)`, the oracle: `pypto_pro.sim.settings`): its outputs (every
byte of every tensor argument), the text it printed, every trace row and the trace's meta but
the wall time. Per example and mode (timed, functional-only), eight launches with the caches:
five on the same tensors (a kept recording replayed; the tape made, then played in two lanes at
once and one after the other) and three on new tensors of the same geometry (rebound, the tape
moved), each from the same inputs; two when no cache applies (VF sections, SIMT launches and
functional-only printing kernels run afresh). A timed printing kernel replays its printf rows
(pipe S) and text from its kept recording.
"""
from __future__ import annotations

import dataclasses

import pytest
import torch

import pypto_pro.language as pl
from pypto_pro.examples import SMALL_CASES, load
from pypto_pro.runtime.backends import register_backend, use_backend
from pypto_pro.runtime.backends.sim import SimBackend
from pypto_pro.sim.fast import lanes, replay, memo
from pypto_pro.sim import settings

MODES = {"timed": {}, "functional": {"functional_only": True}}


@pytest.fixture
def backends(monkeypatch, stream_engine):
    """Backends "cached-<mode>" and "oracle-<mode>" (caches off), and two lanes however few
    steps a lane gets (the examples are small)."""
    monkeypatch.setenv(settings.LANES, "2")
    monkeypatch.setattr(lanes, "_MIN_LANE", 1)
    for mode, options in MODES.items():
        register_backend(f"cached-{mode}", lambda o=options: SimBackend(cache=True, **o))
        register_backend(f"oracle-{mode}", lambda o=options: SimBackend(cache=False, **o))


def observed(kernel, block_dim: int, args: tuple, backend: str) -> dict:
    """Everything one launch gives: the bytes of every tensor argument's storage, the printed
    text, the trace rows and meta (but the wall time)."""
    with use_backend(backend):
        kernel[None, block_dim](*args)
    result = kernel.last_result
    seen = {"printed": result.printed,  # (every byte of every storage an argument views)
            "args": [_storage_bytes(a) if isinstance(a, torch.Tensor) else a for a in args]}
    trace = result.trace
    if trace is not None:
        meta = dataclasses.replace(trace.meta, extra=tuple(  # (the path differs, by design)
            (k, v) for k, v in trace.meta.extra if k not in ("wall_seconds", "path")))
        seen.update(rows=list(trace._log.rows), meta=meta)
    return seen


def _storage_bytes(tensor: torch.Tensor) -> bytes:
    whole = torch.empty(0, dtype=torch.uint8).set_(tensor.untyped_storage())
    return whole.numpy().tobytes()


def _copy(args: tuple) -> tuple:
    made: dict[int, torch.Tensor] = {}
    return tuple(made.setdefault(id(a), a.clone()) if isinstance(a, torch.Tensor) else a
                 for a in args)


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("name, kernel, shape", SMALL_CASES,
                         ids=[f"{k}-{'x'.join(map(str, s.values()))}" for _, k, s in SMALL_CASES])
def test_cached_launches_are_the_oracles(backends, mode, name, kernel, shape):
    ex = load(name)
    k = getattr(ex, kernel)
    inputs = ex.make_inputs(**shape, seed=0)
    block_dim = ex.block_dim(*inputs)
    oracle = observed(k, block_dim, _copy(inputs), f"oracle-{mode}")
    memo.clear()
    same, new = _copy(inputs), _copy(inputs)
    for launch in range(8):
        args = same if launch < 5 else new
        for a, b in zip(args, inputs):  # (every launch from the same inputs)
            if isinstance(a, torch.Tensor):
                a.copy_(b)
        replays = replay.PATHS.total(), memo.REPLAYS
        assert observed(k, block_dim, args, f"cached-{mode}") == oracle, launch
        if launch == 1 and replays == (replay.PATHS.total(), memo.REPLAYS):
            break  # (no cache applies: the Python engine or the executor ran it afresh)


def test_the_env_switch_turns_the_caches_off(monkeypatch, stream_engine):
    ex = load("vector_add")
    x, y, z = ex.make_inputs(256, 256, seed=0)
    monkeypatch.setenv(settings.CACHE, "off")
    memo.clear()
    before = dict(replay.PATHS)
    with use_backend("sim"):
        for _ in range(4):
            ex.add_kernel[None, 4](x, y, z)
    assert replay.PATHS["eager"] == before.get("eager", 0) + 4
    assert replay.PATHS["tape"] == before.get("tape", 0)  # (no tape, never a kept recording)
    assert torch.equal(z, x + y)
    monkeypatch.setenv(settings.CACHE, "sometimes")
    with use_backend("sim"), pytest.raises(Exception, match="PYPTOPRO_SIM_CACHE"):
        ex.add_kernel[None, 4](x, y, z)


def test_the_trace_says_which_path_ran(backends):
    ex = load("vector_add")
    x, y, z = ex.make_inputs(256, 256, seed=0)
    memo.clear()
    paths = []
    for backend in ["oracle-timed"] + ["cached-timed"] * 5:
        with use_backend(backend):
            ex.add_kernel[None, 4](x, y, z)
        paths.append(dict(ex.add_kernel.last_trace.meta.extra)["path"])
    kept = "stream engine, kept recording, eager"
    assert paths == ["stream engine, recorded, eager, ops", "stream engine, recorded, eager, ops",
                     f"{kept}, tape made", f"{kept}, tape in 2 lanes", f"{kept}, tape in 2 lanes",
                     f"{kept}, tape in 2 lanes"]
    with use_backend("cached-timed"), pytest.MonkeyPatch.context() as m:
        m.setenv(settings.ENGINE, "python")
        ex.add_kernel[None, 4](x, y, z)
    assert dict(ex.add_kernel.last_trace.meta.extra)["path"] == "reference engine"


_TILE = pl.TileType([64, 128], pl.DT_FP16)


@pl.jit(arch="a5")
def printing_adds(x: pl.Tensor[[pl.DYNAMIC, 128], pl.DT_FP16],
                  z: pl.Tensor[[pl.DYNAMIC, 128], pl.DT_FP16]):
    with pl.section_vector():
        xs = pl.make_tile_group(type=_TILE, addrs=0x0, mutex_ids=[0, 1])
        cid = pl.get_block_idx()
        for i in pl.range(cid, x.shape[0] // 64, pl.get_block_num()):
            a = xs.next()
            pl.load_tile(a, x, [i, 0])
            pl.printf("block %d tile %d\n", cid, i)
            pl.adds(a, a, 1.0)
            pl.store_tile(z, a, [i, 0])


def test_a_printing_kernel_replayed_is_the_oracle(backends):
    """printf rows (pipe S, charged by `cost_model.printf_cost`) come out of a kept recording,
    its tape and a rebinding exactly as a fresh launch with the caches off makes them."""
    x = torch.randn(512, 128, generator=torch.Generator().manual_seed(0)).half()
    oracle = observed(printing_adds, 3, (x, torch.zeros_like(x)), "oracle-timed")
    printf_rows = [r for r in oracle["rows"] if r[7] == "printf"]
    assert len(printf_rows) == 8 and {r[5] for r in printf_rows} == {"S"}
    assert oracle["printed"][1] == "block 1 tile 1\nblock 1 tile 4\nblock 1 tile 7\n"
    memo.clear()
    paths = []
    same, new = (x, torch.zeros_like(x)), (x.clone(), torch.zeros_like(x))
    for launch in range(6):
        args = same if launch < 4 else new
        args[1].zero_()
        assert observed(printing_adds, 3, args, "cached-timed") == oracle, launch
        paths.append(dict(printing_adds.last_trace.meta.extra)["path"])
    assert paths[0].startswith("stream engine, recorded")
    assert all(p.startswith("stream engine, kept recording") for p in paths[1:]), paths
