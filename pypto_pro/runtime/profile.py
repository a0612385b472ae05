"""`pypto_pro.profile()`: collect the results and Traces of every launch in a block of code.

    with pypto_pro.profile() as prof:
        add_kernel[None, 8](x, y, z)
    prof.trace          # the Trace of the last launch (prof.traces: all of them)

Profilers nest; each sees the launches made while it is active (per thread / task).
"""
from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

_active: contextvars.ContextVar[tuple[Profile, ...]] = contextvars.ContextVar(
    "pypto_profilers", default=())


@dataclass
class Profile:
    """The launches recorded while the profiler was active, in launch order."""

    results: list[Any] = field(default_factory=list)  # LaunchResult
    kernels: list[str] = field(default_factory=list)

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


def record(kernel_name: str, result: Any) -> None:
    """Called by the launch path after every launch."""
    for prof in _active.get():
        prof.results.append(result)
        prof.kernels.append(kernel_name)
