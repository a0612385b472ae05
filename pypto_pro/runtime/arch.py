"""Target arch resolution (spec §1.1) and the probe for a usable Ascend NPU.

Order: the explicit `arch=` option → env `PYPTOPRO_JIT_ARCH` → the arch of the NPU in this
machine → fallback. Accepted spellings: `"a2"`, `"a3"`, `"a5"`, `"auto"` (= not given) and NPU
arch strings (`"3510"`, `"DAV_3510"`, `"dav-c310"` → a5; `"2201"`, `"DAV_2201"`, `"1001"` → a3).

Deviation from the real system: without an NPU the real PyPTO Pro falls back to "a3"; we fall
back to "a5", because the simulator models the Ascend 950 and Pro only supports a5 anyway.

The NPU probe imports `torch_npu` lazily and never lets a broken install break us (ImportError,
OSError and RuntimeError all mean "no NPU"). Imports nothing else from the package but errors.
"""
from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterator

from ..errors import InvalidArgument

ENV_ARCH = "PYPTOPRO_JIT_ARCH"
FALLBACK_ARCH = "a5"

_ALIASES: dict[str, str] = {
    "a2": "a2", "a3": "a3", "a5": "a5",
    "3510": "a5", "dav_3510": "a5", "dav-3510": "a5", "dav-c310": "a5",
    "2201": "a3", "dav_2201": "a3", "dav-2201": "a3", "dav-c220": "a3",
    "1001": "a3", "dav_1001": "a3",
}


def normalize_arch(value: str | None) -> str | None:
    """The canonical arch ("a2"/"a3"/"a5") for a spelling, or None for None/"auto"."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidArgument(f"Unsupported arch {value!r}: expected a string like 'a5'",
                              module="PRO_RUNTIME")
    key = value.strip().lower()
    if key in ("", "auto"):
        return None
    if key not in _ALIASES:
        raise InvalidArgument(
            f"Unsupported arch {value!r}; expected one of 'a2', 'a3', 'a5', 'auto' or an NPU "
            "arch such as '3510' / 'DAV_3510' / 'dav-c310'", module="PRO_RUNTIME")
    return _ALIASES[key]


def resolve_arch(explicit: str | None = None) -> str:
    """The arch a launch compiles for: explicit, then env, then the NPU, then "a5"."""
    for candidate in (explicit, os.environ.get(ENV_ARCH)):
        arch = normalize_arch(candidate)
        if arch is not None:
            return arch
    return detect_npu_arch() or FALLBACK_ARCH


def detect_npu_arch() -> str | None:
    """The arch of device 0 when a usable NPU is present, else None."""
    name = npu_device_name()
    if name is None:
        return None
    if "950" in name:
        return "a5"
    if "910" in name:
        return "a3"
    return None


@functools.lru_cache(maxsize=1)
def npu_available() -> bool:
    """True when `torch_npu` imports and `torch.npu.is_available()` (probed once; tests clear
    the cache with `npu_available.cache_clear()`)."""
    try:
        import torch_npu  # noqa: F401  (registers torch.npu)
    except (ImportError, OSError, RuntimeError):
        return False
    try:
        import torch

        return bool(torch.npu.is_available())
    except (AttributeError, OSError, RuntimeError):
        return False


def npu_device_name() -> str | None:
    """`torch.npu.get_device_name()` of the current device, or None without a usable NPU."""
    if not npu_available():
        return None
    try:
        import torch

        return str(torch.npu.get_device_name())
    except (AttributeError, OSError, RuntimeError):
        return None


@contextlib.contextmanager
def use_arch(arch: str) -> Iterator[str]:
    """Compile the kernels launched or compiled inside the `with` block for `arch` ("a2",
    "a3", "a5" or an NPU arch string) unless their `@pl.jit(arch=...)` says otherwise; sets
    env `PYPTOPRO_JIT_ARCH` for the block (a bad value fails here)."""
    canonical = normalize_arch(arch)
    if canonical is None:
        raise InvalidArgument(f"use_arch needs an arch such as 'a5', got {arch!r}",
                              module="PRO_RUNTIME")
    old = os.environ.get(ENV_ARCH)
    os.environ[ENV_ARCH] = canonical
    try:
        yield canonical
    finally:
        if old is None:
            os.environ.pop(ENV_ARCH, None)
        else:
            os.environ[ENV_ARCH] = old
