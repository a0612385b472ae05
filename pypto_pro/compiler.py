"""The compile driver: KernelDef + Specialization → CompiledKernel (spec §3.4 steps 5–7).

Parses the kernel once per target, decides the kernel type from the sections present (no
section at all = both targets, spec §2.10), checks cross-core consistency and runs the pass
pipeline per target, keeping every pass's record for the workbench. `observe_compile(callback)`
reports progress: `callback(kernel, target, pass_name, index, total)` before each pass.
"""
from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from .errors import InvalidOperation
from .ir.mutator import walk
from .ir.nodes import Call, Program
from .language.parser import parse_target
from .runtime.kernel_def import KernelDef, Specialization

TARGETS = ("cube", "vector")
#: callback(kernel, target, pass_name, index, total), called before each pass
CompileCallback = Callable[[str, str, str, int, int], None]
_observers: contextvars.ContextVar[tuple[CompileCallback, ...]] = contextvars.ContextVar(
    "pypto_compile_observers", default=())
_CROSS_CORE = ("system.set_cross_core", "system.wait_cross_core", "system.set_cross_core_dyn",
               "system.wait_cross_core_dyn")


@dataclass
class CompiledKernel:
    """One specialisation of a kernel, lowered for each of its targets."""

    kernel_def: KernelDef
    spec: Specialization
    programs: dict[str, Program]  # target → final IR
    kernel_type: str  # "aiv" (vector only) | "aic" (cube only) | "mix"
    passes: dict[str, list] = field(default_factory=dict)  # target → [PassRecord]
    parse_seconds: float = 0.0
    warnings: list = field(default_factory=list)
    pipeline_source: str | None = None  # the kernel after the preload pipeline transform

    @property
    def name(self) -> str:
        return self.kernel_def.options.name or self.kernel_def.name

    def ir(self, target: str | None = None) -> str:
        from .ir.printer import python_print

        targets = [target] if target else list(self.programs)
        return "\n".join(python_print(self.programs[t]) for t in targets)


@contextlib.contextmanager
def observe_compile(callback: CompileCallback) -> Iterator[CompileCallback]:
    """Call `callback` before every pass of every compile inside the `with` block."""
    token = _observers.set(_observers.get() + (callback,))
    try:
        yield callback
    finally:
        _observers.reset(token)


def _pass_progress(name: str, target: str) -> Callable[[str, int, int], None] | None:
    observers = _observers.get()
    if not observers:
        return None

    def on_pass(pass_name: str, index: int, total: int) -> None:
        for callback in observers:
            callback(name, target, pass_name, index, total)

    return on_pass


def _uses(program: Program, ops: tuple[str, ...]) -> bool:
    return any(isinstance(n, Call) and n.op in ops for n in walk(program))


def compile_kernel(kdef: KernelDef, spec: Specialization) -> CompiledKernel:
    t0 = time.perf_counter()
    staged = None
    if kdef.options.pipeline is not None:  # a source transform: it runs before parsing
        from .passes import preload_pipeline

        staged = preload_pipeline.apply(kdef, spec)
    source = staged.kernel_def if staged else kdef
    results = {t: parse_target(source, spec, t) for t in TARGETS}
    matched = set().union(*(r.matched_sections for r in results.values()))
    targets = [t for t in TARGETS if t in matched] or list(TARGETS)
    kernel_type = "mix" if len(targets) == 2 else ("aic" if targets == ["cube"] else "aiv")
    programs = {t: results[t].program for t in targets}
    if kernel_type != "mix" and any(_uses(p, _CROSS_CORE) for p in programs.values()):
        missing = "vector" if targets == ["cube"] else "cube"
        raise InvalidOperation(f"Contains ffts cross sync but {missing} code is missing.",
                               programs[targets[0]].span,
                               hint=f"add a pl.section_{missing}() that waits / sets the "
                                    f"matching ids")
    parse_seconds = time.perf_counter() - t0
    from .passes.manager import PassContext, PassManager
    from .passes.pipeline import default_passes

    records, warnings = {}, []
    for t in targets:
        ctx = PassContext.for_kernel(t, spec.arch, kdef.options)
        manager = PassManager(default_passes(kdef.options),
                              _pass_progress(kdef.options.name or kdef.name, t))
        programs[t], records[t] = manager.run(programs[t], ctx)
        if staged:
            records[t] = preload_pipeline.with_record(records[t], staged, t)
        warnings.extend(ctx.warnings)
    return CompiledKernel(kdef, spec, programs, kernel_type, records, parse_seconds, warnings,
                          staged.source if staged else None)
