"""The simulator's Reg API (`vf.*`, spec §2.13): register semantics and VF sections.

`regs` (RegTensor / MaskReg values), `args` (operand access), the op groups `ops_arith`,
`ops_memory`, `ops_convert`, and `section` (a `@pl.vector_function` section as one pipe-V
instruction working on the core's UB). `frontend.program` dispatches VF sections here.
"""
from __future__ import annotations

from .section import compile_vf_section

__all__ = ["compile_vf_section"]
