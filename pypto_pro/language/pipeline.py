"""`pl.pipeline`: configuration of the automatic cross-core preload pipeline (spec §2.12.6)."""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import InvalidArgument
from .markers import stage

__all__ = ["PipelineConfig", "stage", "transform_pipeline"]


@dataclass(frozen=True)
class PipelineConfig:
    """`preload`: how many times the first stage fires before steady state;
    `sync_only`: keep the serial order and only insert the cross-core sync."""

    preload: int = 2
    sync_only: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.preload, int) or isinstance(self.preload, bool) or self.preload < 0:
            raise InvalidArgument(f"PipelineConfig: preload must be an int >= 0, "
                                  f"got {self.preload!r}")


def transform_pipeline(kernel, config: PipelineConfig | None = None) -> str:
    """The kernel's source after the preload-pipeline transform (`pipeline_generated.py`);
    `config` defaults to the kernel's own `pipeline=` option, else `PipelineConfig()`."""
    from ..passes.preload_pipeline import transform_source

    return transform_source(kernel, config)
