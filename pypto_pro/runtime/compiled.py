"""`kernel.compile(*args) -> Compiled`: one compiled specialisation of a kernel, as users see it.

`Compiled` wraps the compiler's `CompiledKernel` and answers what a kernel author asks of it:
`passes` (target → the IR after every pass, with timings and warnings), `ir` (the final IR),
`ir_after(pass)`, `cce` (the generated files, code generation run on first use), `warnings`,
`parameters`, `footprint` (on-chip bytes per memory space) and where the kernel's source lives.
Tools (the notebook layer, the CLI, sweeps) read only this.

`compile_for` is the public compile path: it binds the arguments as a launch would, and keeps
compiled kernels in a process-wide memo keyed by the on-disk kernel cache's own key
(`runtime.cache.cache_key`: the sources, helpers and constants the kernel reads, its options,
the specialisation and the compiler version) plus the kernel's file and line, so the spans of a
memoised compile point where the user looks. A kernel redefined with the same source (a notebook
cell run again) is not compiled again; `force=True` compiles anew.
"""
from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, NamedTuple

from ..errors import InvalidArgument

#: compiled kernels kept by the memo (least recently used dropped first)
MEMO_SIZE = 128
_memo: OrderedDict[str, Any] = OrderedDict()
_memo_lock = threading.Lock()


class Parameter(NamedTuple):
    """One kernel parameter: its name, kind ("tensor", "ptr", "scalar", "tiling") and whether
    it is marked `pl.Output`."""

    name: str
    kind: str
    output: bool


class Compiled:
    """One compiled specialisation of a kernel (see the module docstring)."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel  # the compiler's CompiledKernel (what backends launch)
        self._artifacts: Any = None

    @classmethod
    def of(cls, kernel: Any) -> Compiled:
        """The one `Compiled` of a `CompiledKernel` (generated code is made once)."""
        found = kernel.__dict__.get("_public")
        if found is None:
            found = kernel.__dict__["_public"] = cls(kernel)
        return found

    def __repr__(self) -> str:
        return (f"<Compiled {self.name} [{self.kernel_type}, {self.arch}] "
                f"{'+'.join(self.targets)}: {self.pass_count} passes>")

    # -- identity -------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.kernel.name

    @property
    def kernel_type(self) -> str:
        """"aiv" (vector only), "aic" (cube only) or "mix"."""
        return self.kernel.kernel_type

    @property
    def arch(self) -> str:
        return self.kernel.spec.arch

    @property
    def targets(self) -> list[str]:
        """The compiled targets, "cube" and / or "vector"."""
        return list(self.kernel.programs)

    @property
    def parameters(self) -> tuple[Parameter, ...]:
        return tuple(Parameter(p.name, p.kind, p.direction == "output")
                     for p in self.kernel.kernel_def.params)

    # -- the compile ----------------------------------------------------------------------
    @property
    def passes(self) -> dict[str, Any]:
        """Target → its `PassRecords`: record 0 is the IR as parsed, then one per pass (name,
        IR text, seconds, changed, warnings)."""
        return self.kernel.passes

    @property
    def pass_count(self) -> int:
        return sum(len(records) - 1 for records in self.passes.values())

    @property
    def compile_seconds(self) -> float:
        return self.kernel.parse_seconds + sum(r.seconds for recs in self.passes.values()
                                               for r in recs)

    @property
    def ir(self) -> str:
        """The final IR of every target."""
        return self.kernel.ir()

    def ir_after(self, name: str | int = -1, target: str | None = None,
                 concise: bool = False) -> str:
        """The IR of `target` (default: the first) after pass `name` (or at index `name`)."""
        records = self.passes[target or self.targets[0]]
        record = records[name] if isinstance(name, int) else records.get(name)
        return record.lines(concise)[0] if concise else record.ir_text

    @property
    def pipeline_source(self) -> str | None:
        """The kernel's source after the preload pipeline transform (`@pl.jit(pipeline=...)`;
        the real system's `pipeline_generated.py`), None without one."""
        return self.kernel.pipeline_source

    @property
    def warnings(self) -> list[Any]:
        """The compiler's warnings (message, source span, related spans, pass)."""
        return list(self.kernel.warnings)

    @property
    def footprint(self) -> dict[str, int]:
        """On-chip bytes the kernel places per memory space (tiles and group slots, overlaps
        counted once), and their sum under "total"."""
        from ..passes.verify_memory import allocations

        spaces: dict[str, list[tuple[int, int]]] = {}
        for program in self.kernel.programs.values():
            for a in allocations(program):
                if a.space.name != "DDR":
                    spaces.setdefault(a.space.name, []).append((a.start, a.end))
        out = {space: _union(ranges) for space, ranges in spaces.items()}
        out["total"] = sum(out.values())
        return out

    # -- generated code -------------------------------------------------------------------
    @property
    def artifacts(self) -> Any:
        """The generated sources with their line maps (`pypto_pro.codegen.Artifacts`), made on
        first use; raises what code generation raised."""
        if self._artifacts is None:
            from ..codegen import generate

            self._artifacts = generate(self.kernel)
        return self._artifacts

    @property
    def cce(self) -> dict[str, str]:
        """File name → text: kernel.cpp, the tiling headers, call_kernel.cpp."""
        return self.artifacts.files()

    # -- source ---------------------------------------------------------------------------
    @property
    def file(self) -> str:
        """Where the kernel is defined (a notebook cell's linecache name, or a path)."""
        return self.kernel.kernel_def.file

    @property
    def lines(self) -> tuple[int, int]:
        """First (decorators included) and last source line of the kernel function."""
        tree = self.kernel.kernel_def.tree
        first = min([tree.lineno, *(d.lineno for d in tree.decorator_list)])
        return first, tree.end_lineno or tree.lineno


def _union(ranges: list[tuple[int, int]]) -> int:
    total, end = 0, -1
    for lo, hi in sorted(ranges):
        if hi > end:
            total += hi - max(lo, end)
            end = hi
    return total


def compile_for(jit_kernel: Any, args: tuple, kwargs: Mapping[str, Any], tiling_key: Any,
                datatype: Any, force: bool) -> Compiled:
    """`jit_kernel.compile(*args, ...)` (see `JitKernel.compile`)."""
    from .arch import resolve_arch
    from .binding import bind
    from .kernel_def import Specialization

    kdef = jit_kernel.kernel_def
    items: tuple = (None, 1)
    if jit_kernel.tiling_schema is not None:
        items += (tiling_key,)
    if jit_kernel.options.datatype:
        items += (datatype,)
    plan = jit_kernel._plan(items)
    spec = Specialization(arch=resolve_arch(jit_kernel.options.arch),
                          tiling_key=plan.tiling_key, datatype=plan.datatype)
    if args or kwargs:
        spec = bind(kdef, args, kwargs, spec).spec
    elif jit_kernel.needs_arguments:
        raise InvalidArgument(
            f"kernel '{kdef.name}' is specialised by its launch arguments (STATIC dims, ellipsis "
            f"ranks): compile it with them, e.g. {kdef.name}.compile(x, y)",
            module="PRO_RUNTIME")
    return Compiled.of(memoised(jit_kernel, spec, force))


def memoised(jit_kernel: Any, spec: Any, force: bool = False) -> Any:
    """The `CompiledKernel` of `jit_kernel` for `spec`: its own variant, else the process memo,
    else a compile (stored in both)."""
    if not force:
        found = jit_kernel.compiled_variants.get(spec)
        if found is not None:
            return found
    key = memo_key(jit_kernel.kernel_def, spec)
    with _memo_lock:
        hit = None if force else _memo.get(key)
        if hit is not None:
            _memo.move_to_end(key)
    if hit is None:
        if force:
            jit_kernel.compiled_variants.pop(spec, None)
        hit = jit_kernel._compile_spec(spec)
        with _memo_lock:
            _memo[key] = hit
            while len(_memo) > MEMO_SIZE:
                _memo.popitem(last=False)
    jit_kernel.compiled_variants[spec] = hit
    return hit


def memo_key(kdef: Any, spec: Any) -> str:
    """The kernel cache's key of (kdef, spec), plus where the kernel is defined."""
    from .cache import cache_key

    where = f"{kdef.file}:{getattr(kdef.tree, 'lineno', 0)}"
    return hashlib.sha256(f"{cache_key(kdef, spec, 'ir')}\0{where}".encode()).hexdigest()


def clear_memo() -> None:
    """Forget every memoised compile (the next `kernel.compile` compiles)."""
    with _memo_lock:
        _memo.clear()
