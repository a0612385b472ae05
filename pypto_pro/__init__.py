"""PyPTO Pro: a Python DSL for Ascend 950 NPU kernels, with a simulator and CPU backends.

`import pypto_pro.language as pl` is the kernel author's surface.
"""
from __future__ import annotations

__version__ = "0.1.0"
