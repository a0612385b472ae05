"""The compile driver: KernelDef + Specialization → CompiledKernel (spec §3.4 steps 5–7).

Parses the kernel once per target, decides the kernel type from the sections present (no
section at all = both targets, spec §2.10), checks cross-core consistency and runs the pass
pipeline per target, keeping every pass's record for the workbench.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from .errors import InvalidOperation
from .ir.mutator import walk
from .ir.nodes import Call, Program
from .language.parser import parse_target
from .runtime.kernel_def import KernelDef, Specialization

TARGETS = ("cube", "vector")
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

    @property
    def name(self) -> str:
        return self.kernel_def.options.name or self.kernel_def.name

    def ir(self, target: str | None = None) -> str:
        from .ir.printer import python_print

        targets = [target] if target else list(self.programs)
        return "\n".join(python_print(self.programs[t]) for t in targets)


def _uses(program: Program, ops: tuple[str, ...]) -> bool:
    return any(isinstance(n, Call) and n.op in ops for n in walk(program))


def compile_kernel(kdef: KernelDef, spec: Specialization) -> CompiledKernel:
    t0 = time.perf_counter()
    results = {t: parse_target(kdef, spec, t) for t in TARGETS}
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
        programs[t], records[t] = PassManager(default_passes(kdef.options)).run(programs[t], ctx)
        warnings.extend(ctx.warnings)
    return CompiledKernel(kdef, spec, programs, kernel_type, records, parse_seconds, warnings)
