"""Switching the sanitizer on: `@pl.jit(sanitizer=True)`, `with sanitize():` around launches
(what the workbench uses), or env `PYPTOPRO_SANITIZER=1` for a whole process."""
from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Iterator
from typing import Any

ENV_SANITIZER = "PYPTOPRO_SANITIZER"
_override: contextvars.ContextVar[bool | None] = contextvars.ContextVar(
    "pypto_pro_sanitizer", default=None)


@contextlib.contextmanager
def sanitize(on: bool = True) -> Iterator[None]:
    """Sanitize (or, with `on=False`, do not sanitize) the launches inside the block, whatever
    the kernels' own `sanitizer=` option says."""
    token = _override.set(bool(on))
    try:
        yield
    finally:
        _override.reset(token)


def sanitizer_enabled(options: Any = None) -> bool:
    """Whether a launch of a kernel with jit `options` runs sanitized: `sanitize()` wins, then
    the kernel's `sanitizer=` option, then env PYPTOPRO_SANITIZER (1/true/yes/on)."""
    forced = _override.get()
    if forced is not None:
        return forced
    if options is not None and getattr(options, "sanitizer", False):
        return True
    return os.environ.get(ENV_SANITIZER, "").strip().lower() in ("1", "true", "yes", "on")
