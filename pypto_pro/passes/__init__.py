"""IR passes: the pass manager, the pipeline spine (`pipeline.PASSES`) and one module per pass.

Every pass module has a `NAME` and `run(program, ctx) -> program`. Shared analyses live beside
them (`ir_query`, `liveness`, `mutex_ops`). Passes import `pypto_pro.ir`, `pypto_pro.errors` and
the SoC tables (`pypto_pro.soc`), never the simulator.
"""
from __future__ import annotations

from .manager import Diagnostic, PassContext, PassManager, PassRecord, PassRecords
from .pipeline import PASSES, default_passes

__all__ = ["Diagnostic", "PassContext", "PassManager", "PassRecord", "PassRecords", "PASSES",
           "default_passes"]
