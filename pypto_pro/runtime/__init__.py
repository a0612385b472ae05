"""The PyPTO Pro runtime: `kernel`, argument binding, specialisation, backend choice.

The decorator is `pl.jit` (module `pypto_pro.runtime.jit`); it is not re-exported here so the
name keeps meaning the module.

"""
from __future__ import annotations

from ..ir.types import MemorySpace
from . import pipeline
from .backends import (
    LaunchRequest, LaunchResult, current_backend_name, get_backend, register_backend, use_backend,
)
from .jit import JitKernel, KernelDef, kernel
from .kernel_def import Specialization
from .tilingkey import TilingKeyField

__all__ = [
    "JitKernel", "KernelDef", "LaunchRequest", "LaunchResult", "MemorySpace", "Specialization",
    "TilingKeyField", "current_backend_name", "get_backend", "kernel", "pipeline",
    "register_backend", "use_backend",
]
