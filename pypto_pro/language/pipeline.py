"""`pl.pipeline`: configuration of the automatic cross-core preload pipeline (spec §2.12.6)."""
from __future__ import annotations

from ..errors import InvalidArgument
from ..frozen import Frozen
from .markers import stage

__all__ = ["PipelineConfig", "stage", "transform_pipeline"]


class PipelineConfig(Frozen):
    """`preload`: how many times the first stage fires before steady state;
    `sync_only`: keep the serial order and only insert the cross-core sync."""

    __slots__ = ("preload", "sync_only")
    preload: int
    sync_only: bool

    def __init__(self, preload: int = 2, sync_only: bool = False) -> None:
        if not isinstance(preload, int) or isinstance(preload, bool) or preload < 0:
            raise InvalidArgument(f"PipelineConfig: preload must be an int >= 0, "
                                  f"got {preload!r}")
        self._init(preload=preload, sync_only=sync_only)


def transform_pipeline(kernel, config: PipelineConfig | None = None) -> str:
    """The kernel's source after the preload-pipeline transform (`pipeline_generated.py`);
    `config` defaults to the kernel's own `pipeline=` option, else `PipelineConfig()`."""
    from ..passes.preload_pipeline import transform_source

    return transform_source(kernel, config)
