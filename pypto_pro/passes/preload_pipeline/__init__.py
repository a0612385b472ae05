"""preload_pipeline: the automatic cross-core preload pipeline (spec §2.12.6).

Like the real one this is a source → source transform that runs before parsing: a kernel
with `@pl.jit(pipeline=PipelineConfig(preload=N, sync_only=False))` is rewritten into the
kernel a user would write by hand (saved as `pipeline_generated.py` there; here the source is
`CompiledKernel.pipeline_source` and the pass record "preload_pipeline" holds its IR).

Steps, one module each: `analysis` (find the stage loop, which arguments travel per
iteration), `scan` (probe parse: per stage, per op, buffer / role / pipe), `sync_graph`
(RAW/WAR edges on fwd/bwd ids plus extra ids, extra edges for tiles reusing a cross-core
buffer's bytes, validation, deadlock check on the schedule) and
`rewrite` (the beat loop with the context ring, delayed stage calls, waits / sets, pre-fired
permits and drain). `sync_only=True` (or preload=0) keeps the serial order and only adds the
synchronisation.
"""
from __future__ import annotations

import copy
import dataclasses
import time
from collections import ChainMap
from dataclasses import dataclass
from typing import Any

from ...errors import InvalidArgument
from ...ir.nodes import Program
from ...language.pipeline import PipelineConfig
from ...runtime.kernel_def import KernelDef, Specialization
from ..manager import PassRecord, PassRecords
from .analysis import find_stage_loop
from .rewrite import generated_source, rewrite
from .scan import scan
from .sync_graph import SyncGraph, build

NAME = "preload_pipeline"
_ALIAS = "_pypto_pl"


@dataclass(frozen=True)
class Staged:
    """The result of the transform for one specialisation."""

    kernel_def: KernelDef  # the rewritten kernel (same file, same env + the `pl` alias)
    source: str  # the rewritten kernel function as Python source
    before: dict[str, Program]  # target → the probe parse of the original kernel
    graph: SyncGraph
    seconds: float


def apply(kdef: KernelDef, spec: Specialization,
          config: PipelineConfig | None = None) -> Staged:
    """Rewrite `kdef` for `config` (default: the kernel's own `pipeline=` option)."""
    config = config or kdef.options.pipeline
    if not isinstance(config, PipelineConfig):
        raise InvalidArgument(f"preload pipeline: expected a PipelineConfig, got {config!r}")
    t0 = time.perf_counter()
    tree = copy.deepcopy(kdef.tree)
    loop = find_stage_loop(tree, kdef.env, kdef.file)
    probe = scan(kdef, spec, loop)
    preload = 0 if config.sync_only else config.preload
    graph = build(probe, loop, kdef.file, preload, kdef.options.auto_mutex)
    pl, env = _language_alias(kdef.env)
    new = rewrite(tree, loop, graph, pl)
    mode = "sync_only" if config.sync_only else f"preload={config.preload}"
    source = (f"# pipeline_generated.py: '{kdef.options.name or kdef.name}' after the preload "
              f"pipeline transform ({mode}, stage delays {list(graph.delays)})\n"
              + generated_source(kdef.file, tree, loop, new))
    new = kdef.replace(tree=tree, env=env, source=source)
    return Staged(new, source, probe.programs, graph, time.perf_counter() - t0)


def with_record(records: PassRecords, staged: Staged, target: str) -> PassRecords:
    """`records` of the rewritten kernel with the original parse first and this pass second."""
    first = records[0]
    parsed = PassRecord("parse", staged.before[target])
    return PassRecords([parsed, dataclasses.replace(first, name=NAME, seconds=staged.seconds,
                                                    follows=parsed), *list(records)[1:]])


def transform_source(kernel: Any, config: PipelineConfig | None = None) -> str:
    """The source of `kernel` (a `@pl.jit` kernel or a KernelDef) after the transform."""
    from ...runtime.arch import resolve_arch

    kdef = getattr(kernel, "kernel_def", kernel)
    if not isinstance(kdef, KernelDef):
        raise InvalidArgument(f"transform_pipeline: expected a @pl.jit kernel, got {kernel!r}")
    spec = Specialization(arch=resolve_arch(kdef.options.arch))
    return apply(kdef, spec, config or kdef.options.pipeline or PipelineConfig()).source


def _language_alias(env: ChainMap) -> tuple[str, ChainMap]:
    """The name the generated statements use for `pypto_pro.language`."""
    from ... import language

    if env.get("pl") is language:
        return "pl", env
    return _ALIAS, ChainMap({_ALIAS: language}, *env.maps)


__all__ = ["NAME", "Staged", "apply", "transform_source", "with_record"]
