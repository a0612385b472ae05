"""Where sweep points run: the local process pool, or an executor the user already has.

`runner(executor, workers)` turns what the user passed into a `Runner` (submit a call, poll it,
stop everything):

* `None` — a local pool of `workers` processes (default: the CPU count). On Linux the workers
  are forked, so kernels and input builders defined in a notebook cell work as they are.
* `"inline"` — run each point in this process, one after the other (debugging, drill-down).
* any `concurrent.futures.Executor` (a ThreadPoolExecutor, a ProcessPoolExecutor, Dask's
  `client.get_executor()`, ...).
* a Dask `distributed.Client` — `client.submit`.
* Ray — the `ray` module itself or the string `"ray"` after `ray.init(...)` — one Ray task per
  point. Ray and Dask pickle functions by value only for `__main__`; elsewhere the user's
  `make_kernel` must be importable on the workers.

No scheduling of our own: the pool or the cluster decides where a point runs.
"""
from __future__ import annotations

import abc
import concurrent.futures as cf
import multiprocessing
import os
import sys
from typing import Any, Callable, Protocol


class Pending(Protocol):
    def done(self) -> bool: ...

    def result(self) -> Any: ...


class Runner(abc.ABC):
    """Submit calls and stop them; `kind` names the executor for tables and messages."""

    kind = "base"

    @abc.abstractmethod
    def submit(self, fn: Callable[[Any], Any], arg: Any) -> Pending:
        """Start `fn(arg)` somewhere; poll the returned handle."""

    @abc.abstractmethod
    def stop(self, cancel: bool) -> None:
        """Release the workers; with `cancel`, drop queued calls and end running ones."""


class _Done:
    """An already-computed result (the inline runner)."""

    def __init__(self, value: Any) -> None:
        self._value = value

    def done(self) -> bool:
        return True

    def result(self) -> Any:
        return self._value


class InlineRunner(Runner):
    kind = "inline"

    def submit(self, fn: Callable[[Any], Any], arg: Any) -> Pending:
        return _Done(fn(arg))

    def stop(self, cancel: bool) -> None:
        """Nothing runs in the background."""


class _AsyncResult:
    def __init__(self, res: Any) -> None:
        self._res = res

    def done(self) -> bool:
        return self._res.ready()

    def result(self) -> Any:
        return self._res.get()


def _init_worker() -> None:
    """Each worker runs one point at a time: one torch thread, so workers don't fight."""
    import torch

    torch.set_num_threads(1)


class LocalPool(Runner):
    """`workers` local processes (forked on Linux); `stop(cancel=True)` terminates them, which
    is safe for the kernel cache because every cache write is a temp file + rename."""

    kind = "local"

    def __init__(self, workers: int) -> None:
        method = "fork" if sys.platform.startswith("linux") else "spawn"
        self.workers = workers
        self._pool = multiprocessing.get_context(method).Pool(workers, _init_worker)

    def submit(self, fn: Callable[[Any], Any], arg: Any) -> Pending:
        return _AsyncResult(self._pool.apply_async(fn, (arg,)))

    def stop(self, cancel: bool) -> None:
        if cancel:
            self._pool.terminate()
        else:
            self._pool.close()
        self._pool.join()


class FuturesRunner(Runner):
    """A `concurrent.futures.Executor` or a Dask Client (both `submit` → future)."""

    def __init__(self, executor: Any, kind: str, submit_kwargs: dict | None = None) -> None:
        self.executor, self.kind = executor, kind
        self._kwargs = submit_kwargs or {}
        self._futures: list[Any] = []

    def submit(self, fn: Callable[[Any], Any], arg: Any) -> Pending:
        fut = self.executor.submit(fn, arg, **self._kwargs)
        self._futures.append(fut)
        return fut

    def stop(self, cancel: bool) -> None:
        if cancel:
            for fut in self._futures:
                fut.cancel()


class RayRunner(Runner):
    """One Ray task per point (Ray must be initialised by the caller)."""

    kind = "ray"

    def __init__(self, ray: Any) -> None:
        if not ray.is_initialized():
            raise RuntimeError("Ray is not initialised: call ray.init(...) before the sweep")
        self._ray = ray
        self._remote: dict[Any, Any] = {}
        self._refs: list[Any] = []

    def submit(self, fn: Callable[[Any], Any], arg: Any) -> Pending:
        remote = self._remote.get(fn)
        if remote is None:
            remote = self._remote[fn] = self._ray.remote(fn)
        ref = remote.remote(arg)
        self._refs.append(ref)
        return ref.future()

    def stop(self, cancel: bool) -> None:
        if cancel:
            for ref in self._refs:
                self._ray.cancel(ref, force=True)


def runner(executor: Any, workers: int | None) -> Runner:
    """The `Runner` for what the user passed as `executor` (see the module docstring)."""
    if executor is None:
        return LocalPool(max(1, workers or os.cpu_count() or 1))
    if executor == "inline":
        return InlineRunner()
    if executor == "ray" or getattr(executor, "__name__", None) == "ray":
        import ray

        return RayRunner(ray)
    if isinstance(executor, cf.Executor):
        return FuturesRunner(executor, type(executor).__name__)
    if type(executor).__module__.startswith("distributed") and hasattr(executor, "submit"):
        return FuturesRunner(executor, "dask", {"pure": False})
    raise TypeError(f"executor must be None, 'inline', 'ray', a concurrent.futures.Executor "
                    f"or a dask distributed.Client; got {executor!r}")
