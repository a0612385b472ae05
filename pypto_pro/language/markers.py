"""Function markers: `@pl.vector_function`, `@pl.simt.function`, `@pl.pipeline.stage`, `@pl.inline`.

A marker returns the function itself with `__pypto_kind__` set; the parser reads it when the
function is called from a kernel (VF section, SIMT function, pipeline stage or plain helper).
"""
from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from ..errors import OutOfRange

KIND_ATTR = "__pypto_kind__"


def _mark(fn: Callable, kind: str, **attrs: Any) -> Callable:
    setattr(fn, KIND_ATTR, kind)
    for k, v in attrs.items():
        setattr(fn, f"__pypto_{k}__", v)
    return fn


def kind_of(fn: Any) -> str | None:
    return getattr(fn, KIND_ATTR, None)


def vector_function(fn: Callable) -> Callable:
    """Mark a Reg API (VF) body: inlined into a `__VEC_SCOPE__` section, runs on pipe V."""
    return _mark(fn, "vector_function")


def simt_function(fn: Callable | None = None, *, max_threads: int | None = None):
    """`@pl.simt.function(max_threads=N)`: a launchable SIMT entry; without it, a callee."""
    if max_threads is not None and not (isinstance(max_threads, int) and 1 <= max_threads <= 2048):
        raise OutOfRange(f"simt.function: max_threads must be in 1..2048, got {max_threads!r}")

    def wrap(f: Callable) -> Callable:
        return _mark(f, "simt_function", max_threads=max_threads)

    return wrap(fn) if fn is not None else wrap


def stage(fn: Callable) -> Callable:
    """`@pl.pipeline.stage`: a stage of an automatic preload pipeline (plain helper otherwise)."""
    return _mark(fn, "pipeline_stage")


def inline(fn: Callable) -> Callable:
    """Deprecated: plain helpers are inlined anyway."""
    warnings.warn("pl.inline is deprecated: helper functions are inlined automatically",
                  DeprecationWarning, stacklevel=2)
    return fn
