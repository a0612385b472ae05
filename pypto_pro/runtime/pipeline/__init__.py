"""`pypto_pro.runtime.pipeline`: the automatic preload pipeline under the module path of the
real PyPTO Pro (the same objects as `pl.pipeline`)."""
from __future__ import annotations

from ...language.pipeline import PipelineConfig, stage, transform_pipeline

__all__ = ["PipelineConfig", "stage", "transform_pipeline"]
