"""`pypto_pro.profile()`: collect the results and Traces of every launch in a block of code,
and `observe_launches()`: be told when each launch starts and ends.

    with pypto_pro.profile() as prof:
        add_kernel[None, 8](x, y, z)
    prof.trace          # the Trace of the last launch (prof.traces: all of them)
    prof.launches[0]    # (name, compiled, block_dim, args, result) of each launch

`profile(on_launch=f, on_launch_end=h, on_pass=g)` also reports progress: `f(name, block_dim)`
before each launch runs, `h(name)` after it returned, `g(kernel, target, pass_name, index,
total)` before each compiler pass (tools show it).

Profilers and observers nest; each sees the launches made while it is active (per thread /
task). The launch path calls `launch_started(name, request)` before handing the request to the
backend and `record(name, result, request)` after it returned; a launch that raises (or is
interrupted) is never recorded.
"""
from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import Any, Callable, NamedTuple, Protocol

_active: contextvars.ContextVar[tuple[Profile, ...]] = contextvars.ContextVar(
    "pypto_profilers", default=())
_observers: contextvars.ContextVar[tuple[LaunchObserver, ...]] = contextvars.ContextVar(
    "pypto_launch_observers", default=())


class LaunchObserver(Protocol):
    """What `observe_launches` calls: before the backend runs a request, and after it returned
    its `LaunchResult`."""

    def launch_started(self, name: str, request: Any) -> None: ...

    def launch_finished(self, name: str, request: Any, result: Any) -> None: ...


class ProfiledLaunch(NamedTuple):
    """One launch a profiler saw: the kernel's name, what ran (`pypto_pro.Compiled`), the
    block dim, the arguments as passed to the backend and the `LaunchResult` (backend, wall
    seconds, Trace, printf text per block, sanitizer report)."""

    name: str
    compiled: Any
    block_dim: int
    args: tuple
    result: Any


class Profile:
    """The launches recorded while the profiler was active, in launch order."""

    def __init__(self, on_launch: Callable[[str, int], None] | None = None,
                 on_launch_end: Callable[[str], None] | None = None) -> None:
        self.results: list[Any] = []  # LaunchResult
        self.kernels: list[str] = []
        self.requests: list[Any] = []  # LaunchRequest (None if not given)
        self.on_launch = on_launch
        self.on_launch_end = on_launch_end

    @property
    def launches(self) -> list[ProfiledLaunch]:
        from .compiled import Compiled

        return [ProfiledLaunch(name, Compiled.of(req.compiled), req.block_dim, req.args, res)
                for name, req, res in zip(self.kernels, self.requests, self.results)
                if req is not None]

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
def profile(on_launch: Callable[[str, int], None] | None = None,
            on_pass: Callable[[str, str, str, int, int], None] | None = None,
            on_launch_end: Callable[[str], None] | None = None) -> Iterator[Profile]:
    """Record every launch inside the `with` block (see the module docstring)."""
    prof = Profile(on_launch, on_launch_end)
    token = _active.set(_active.get() + (prof,))
    try:
        with contextlib.ExitStack() as stack:
            if on_pass is not None:
                from ..compiler import observe_compile

                stack.enter_context(observe_compile(on_pass))
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
    for prof in _active.get():
        if prof.on_launch is not None:
            prof.on_launch(kernel_name, request.block_dim)
    for observer in _observers.get():
        observer.launch_started(kernel_name, request)


def record(kernel_name: str, result: Any, request: Any = None) -> None:
    """Called by the launch path after every launch that returned."""
    for prof in _active.get():
        prof.results.append(result)
        prof.kernels.append(kernel_name)
        prof.requests.append(request)
        if prof.on_launch_end is not None:
            prof.on_launch_end(kernel_name)
    for observer in _observers.get():
        observer.launch_finished(kernel_name, request, result)
