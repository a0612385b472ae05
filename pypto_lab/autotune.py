"""Autotuning: pick the best configuration per input shape from a sweep on the simulator.

    @pypto_lab.autotune(space={"depth": [1, 2], "blocks": [8, 16, 32]})
    def add(depth, blocks):
        return Launch(make_add_kernel(depth), block_dim=blocks)

    add(x, y, z)            # first call per key: sweeps on the simulator, then launches the
                            # winner on the current backend (sim, native or the NPU)
    add.explain(x, y, z)    # why the winner wins (bottleneck pipe vs the runner-up's)

Like Triton's `autotune(configs, key)`: the key defaults to the shapes and dtypes of the
tensor arguments (or `key(*args)`); the winner per key is kept in memory and on disk next to
the kernel cache (`<cache dir>/autotune/`, keyed by the tuner's source, its space, the SoC, the
key and the compiler version), so a new process does not tune again. A sweep made by hand can be
attached with `add.attach(result, *args)`.
"""
from __future__ import annotations

import functools
import hashlib
import inspect
import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from .sweep import SweepResult, sweep
from .sweep_point import Launch


def explain_rows(best: pd.Series, runner_up: pd.Series | None, params: list[str]) -> str:
    """A few lines on why `best` beats `runner_up`: times and their bottleneck pipes."""
    def cfg(r: pd.Series) -> str:
        return ", ".join(f"{p}={r[p]}" for p in params)

    def pipe(r: pd.Series) -> str:
        name = r.get("bottleneck", "")
        busy = r.get(f"busy_{name}", float("nan"))
        return f"{name} busy {busy:.0f}%" if name else "no pipe data"

    lines = [f"winner: {cfg(best)}: {best['sim_us']:.2f} µs, bottleneck {pipe(best)}, "
             f"{best.get('roofline', 0) * 100:.0f}% of its roofline"]
    if runner_up is None:
        lines.append("(the only valid configuration)")
        return "\n".join(lines)
    gain = runner_up["sim_us"] / best["sim_us"] if best["sim_us"] else float("nan")
    lines.append(f"runner-up: {cfg(runner_up)}: {runner_up['sim_us']:.2f} µs "
                 f"({gain:.2f}x slower), bottleneck {pipe(runner_up)}")
    stalls = sorted(c for c in best.index if c.startswith("stall_"))
    diffs = [(c[6:], runner_up.get(c, 0) - best.get(c, 0)) for c in stalls]
    diffs = [(k, v) for k, v in diffs if pd.notna(v) and v > 0]
    if diffs:
        reason, cycles = max(diffs, key=lambda kv: kv[1])
        lines.append(f"the runner-up stalls {int(cycles)} more cycles on '{reason}'")
    return "\n".join(lines)


def default_key(*args: Any) -> tuple:
    """Shapes and dtypes of the tensor arguments; other arguments by value."""
    import torch

    return tuple((tuple(a.shape), str(a.dtype)) if isinstance(a, torch.Tensor) else a
                 for a in args)


class Autotuned:
    """A tuner: `make_kernel` plus its space; call it with launch arguments."""

    def __init__(self, make_kernel: Callable[..., Any], space: Any,
                 key: Callable[..., Any] | None = None, reference: Callable | None = None,
                 soc: str | None = None, executor: Any = None, workers: int | None = None,
                 rtol: float = 1e-3, atol: float = 1e-3) -> None:
        self.make_kernel, self.space = make_kernel, space
        self.key = key or default_key
        self.reference, self.soc = reference, soc
        self.executor, self.workers = executor, workers
        self.rtol, self.atol = rtol, atol
        self.best_params: dict[Any, dict[str, Any]] = {}
        self.results: dict[Any, SweepResult] = {}
        self._explain: dict[Any, str] = {}
        functools.update_wrapper(self, make_kernel)

    def __call__(self, *args: Any) -> Any:
        params = self.tune(*args)
        return Launch.of(self.make_kernel(**params)).launcher()(*args)

    def tune(self, *args: Any) -> dict[str, Any]:
        """The winning parameters for these arguments' key (tuning on first use)."""
        k = self.key(*args)
        if k in self.best_params:
            return self.best_params[k]
        stored = self._load(k)
        if stored is None:
            result = sweep(self.make_kernel, self.space, args, self.reference, rtol=self.rtol,
                           atol=self.atol, soc=self.soc, executor=self.executor,
                           workers=self.workers)
            stored = self._store(k, result)
        self.best_params[k], self._explain[k] = stored["best"], stored["explain"]
        return stored["best"]

    def attach(self, result: SweepResult, *args: Any) -> dict[str, Any]:
        """Use a sweep made by hand for the key of `args`."""
        k = self.key(*args)
        stored = self._store(k, result)
        self.best_params[k], self._explain[k] = stored["best"], stored["explain"]
        return stored["best"]

    def explain(self, *args: Any) -> str:
        k = self.key(*args)
        if k not in self._explain:
            self.tune(*args)
        return self._explain[k]

    # -- the disk cache ------------------------------------------------------------------
    def _path(self, k: Any) -> Path:
        import pypto_pro

        try:
            source = inspect.getsource(self.make_kernel)
        except (OSError, TypeError):
            source = getattr(self.make_kernel, "__qualname__", repr(self.make_kernel))
        blob = json.dumps([source, _jsonable(self.space), repr(k), self.soc,
                           pypto_pro.compiler_version(), self.rtol, self.atol],
                          sort_keys=True)
        digest = hashlib.sha256(blob.encode()).hexdigest()[:24]
        name = getattr(self.make_kernel, "__name__", "kernel")
        return pypto_pro.cache_dir() / "autotune" / f"{name}-{digest}.json"

    def _load(self, k: Any) -> dict | None:
        path = self._path(k)
        try:
            data = json.loads(path.read_text())
            return {"best": dict(data["best"]), "explain": str(data["explain"])}
        except (OSError, ValueError, KeyError, TypeError):
            return None  # missing or damaged: tune again and rewrite it

    def _store(self, k: Any, result: SweepResult) -> dict:
        from pypto_pro.trace import write_text

        best = result.best()
        stored = {"best": {p: _plain(best[p]) for p in result.params},
                  "explain": result.explain(), "sim_us": float(best["sim_us"])}
        self.results[k] = result
        path = self._path(k)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text(path, json.dumps(stored, indent=1))
        return stored


def autotune(space: Mapping[str, Iterable[Any]] | Iterable[Mapping[str, Any]],
             key: Callable[..., Any] | None = None, **options: Any
             ) -> Callable[[Callable[..., Any]], Autotuned]:
    """Decorator form of `Autotuned` (options: reference, soc, executor, workers, rtol, atol)."""
    def wrap(make_kernel: Callable[..., Any]) -> Autotuned:
        return Autotuned(make_kernel, space, key, **options)

    return wrap


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value


def _jsonable(space: Any) -> Any:
    if isinstance(space, Mapping):
        return {k: [repr(v) for v in vals] for k, vals in space.items()}
    return [{k: repr(v) for k, v in p.items()} for p in space]
