"""`pypto_pro.profile()`: collect the results and Traces of every launch in a block of code,
and `observe_launches()`: be told when each launch starts and ends (the workbench's hook).

    with pypto_pro.profile() as prof:
        add_kernel[None, 8](x, y, z)
    prof.trace          # the Trace of the last launch (prof.traces: all of them)

Profilers and observers nest; each sees the launches made while it is active (per thread /
task). The launch path calls `launch_started(name, request)` before handing the request to the
backend and `record(name, result, request)` after it returned; a launch that raises (or is
interrupted) is never recorded.
"""
from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import Any, Protocol

_active: contextvars.ContextVar[tuple[Profile, ...]] = contextvars.ContextVar(
    "pypto_profilers", default=())
_observers: contextvars.ContextVar[tuple[LaunchObserver, ...]] = contextvars.ContextVar(
    "pypto_launch_observers", default=())


class LaunchObserver(Protocol):
    """What `observe_launches` calls: before the backend runs a request, and after it returned
    its `LaunchResult`."""

    def launch_started(self, name: str, request: Any) -> None: ...

    def launch_finished(self, name: str, request: Any, result: Any) -> None: ...


class Profile:
    """The launches recorded while the profiler was active, in launch order."""

    def __init__(self) -> None:
        self.results: list[Any] = []  # LaunchResult
        self.kernels: list[str] = []
        self.requests: list[Any] = []  # LaunchRequest (None if not given)

    @property
    def traces(self) -> list[Any]:
        return [r.trace for r in self.results if r.trace is not None]

    @property
    def trace(self) -> Any:
        """The Trace of the last launch that produced one (None when none did)."""
        traces = self.traces
        return traces[-1] if traces else None

    def __repr__(self) -> str:
        return f"<pypto_pro.Profile: {len(self.results)} launch(es): {', '.join(self.kernels)}>"


@contextlib.contextmanager
def profile() -> Iterator[Profile]:
    prof = Profile()
    token = _active.set(_active.get() + (prof,))
    try:
        yield prof
    finally:
        _active.reset(token)


@contextlib.contextmanager
def observe_launches(observer: LaunchObserver) -> Iterator[LaunchObserver]:
    """Call `observer` for every launch made inside the `with` block."""
    token = _observers.set(_observers.get() + (observer,))
    try:
        yield observer
    finally:
        _observers.reset(token)


def launch_started(kernel_name: str, request: Any) -> None:
    """Called by the launch path right before the backend runs `request`."""
    for observer in _observers.get():
        observer.launch_started(kernel_name, request)


def record(kernel_name: str, result: Any, request: Any = None) -> None:
    """Called by the launch path after every launch that returned."""
    for prof in _active.get():
        prof.results.append(result)
        prof.kernels.append(kernel_name)
        prof.requests.append(request)
    for observer in _observers.get():
        observer.launch_finished(kernel_name, request, result)
