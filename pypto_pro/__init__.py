"""PyPTO Pro: a Python DSL for Ascend 950 NPU kernels, with a simulator and CPU backends.

`import pypto_pro.language as pl` is the kernel author's surface.
"""
from __future__ import annotations

__version__ = "0.1.0"

from .runtime.backends import use_backend  # noqa: E402  (re-exported public API)
from .runtime.profile import Profile, profile  # noqa: E402

__all__ = ["__version__", "profile", "Profile", "use_backend"]
