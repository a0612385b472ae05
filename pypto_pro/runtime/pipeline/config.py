"""`PipelineConfig` under the real PyPTO Pro's module path."""
from __future__ import annotations

from ...language.pipeline import PipelineConfig

__all__ = ["PipelineConfig"]
