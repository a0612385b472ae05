"""Running one cell: execute the body, compile every kernel in place, launch, check, collect.

Owns `register_cell` (the cell text goes into IPython's compile cache / `linecache`, so Python
tracebacks, `inspect.getsource` and every DSL span point at cell lines) and `run_cell`, the one
function behind the magic, `pypto_lab.run_cell` and the CLI. The body runs in the caller's
namespace on the chosen backend (`--backend`, `--soc`, else the default) with a `LaunchLog`
observing every launch (`pypto_pro.runtime.profile.observe_launches`: request and result, and a
progress stage while it runs) and every compile pass (`pypto_pro.compiler.observe_compile`);
kernels of the cell that were not launched are compiled for their default specialisation (all
passes), then code generation runs when `pypto_pro.codegen` is importable. Failures become
`CellError`s. An interrupt (KeyboardInterrupt) propagates after the context managers undo their
state: nothing is cached or bound from a run that did not finish.
"""
from __future__ import annotations

import ast
import contextlib
import hashlib
import linecache
import os
import sys
import time
from collections.abc import Iterator
from typing import Any

from .cache import CompileCache, cache_key
from .check import ReferenceMismatch, check_reference
from .errors import CellError
from .options import CellOptions, OptionError
from .progress import Progress
from .records import ArgInfo, KernelRecord, LaunchRecord, SourceInfo


def register_cell(body: str, magic_line: str | None = None, shell: Any = None
                  ) -> tuple[SourceInfo, str]:
    """Register a cell; returns its `SourceInfo` and the code to compile (line k = cell line k).

    With a `shell` the full cell (`%%pypto <magic_line>` + body) goes through IPython's caching
    compiler, so frames read "Cell In[n], line k"; without one the body is registered in
    `linecache` under a content-hash name.
    """
    if shell is not None and magic_line is not None:
        text = f"%%pypto {magic_line}".rstrip() + "\n" + body
        number = cell_number(shell)
        name = shell.compile.cache(text, number)
        # IPython syntax in the body (%time, !ls) is transformed; lines stay where they are
        return SourceInfo(name, f"Cell In[{number}]", text), "\n" + shell.transform_cell(body)
    digest = hashlib.sha1(body.encode()).hexdigest()[:12]
    name = f"<pypto-cell-{digest}>"
    linecache.cache[name] = (len(body), None, [ln + "\n" for ln in body.splitlines()], name)
    return SourceInfo(name, name, body), body


def cell_number(shell: Any) -> int:
    """The number IPython shows for the running cell ("In[n]"): the one its compiler gave
    the cell's code (found on the call stack); `execution_count` is already n + 1 then."""
    frame = sys._getframe(1)
    while frame is not None:
        label = shell.compile.format_code_name(frame.f_code.co_filename)
        if label and label[1].startswith("In["):
            return int(label[1][3:-1])
        frame = frame.f_back
    return int(getattr(shell, "execution_count", 0))


class LaunchLog:
    """Launch observer of a cell run: a progress stage per launch, and (request, result)
    pairs of the launches that finished, in order."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.calls: list[tuple[Any, Any]] = []

    def launch_started(self, name: str, request: Any) -> None:
        self.progress.begin(f"simulate {name}[None, {request.block_dim}]")

    def launch_finished(self, name: str, request: Any, result: Any) -> None:
        self.progress.end()
        self.calls.append((request, result))

    def compile_pass(self, kernel: str, target: str, pass_name: str, index: int,
                     total: int) -> None:
        self.progress.detail(f"{target}: pass {index}/{total} {pass_name}")


def backend_name(options: CellOptions) -> str | None:
    """The backend the cell's launches run on: `--soc` (a simulator on that SoC, registered
    as `sim@<soc>`), `--backend`, else None (the default choice: `use_backend`, env
    `PYPTOPRO_BACKEND`, detection). Checked here, so a bad value is a usage error."""
    from pypto_pro.errors import PyptoError
    from pypto_pro.runtime.backends import get_backend, register_backend

    if options.soc:
        if options.backend not in (None, "sim"):
            raise OptionError(f"--soc selects a simulator SoC; it cannot be combined with "
                              f"--backend {options.backend}")
        from pypto_pro.runtime.backends.sim import SimBackend

        try:
            backend = SimBackend(soc_name=options.soc)
        except ValueError as e:
            raise OptionError(f"--soc: {e}") from None
        name = f"sim@{backend.soc_name}"
        register_backend(name, lambda: backend)
        return name
    if options.backend is None:
        return None
    try:
        get_backend(options.backend)
    except PyptoError as e:  # unknown name, or a backend that cannot be imported here
        raise OptionError(f"--backend: {e.message}") from None
    return options.backend


@contextlib.contextmanager
def _observing(options: CellOptions, log: LaunchLog) -> Iterator[None]:
    """Launches on the chosen backend (sanitized with `--sanitize`), every launch and
    compile pass reported to `log`."""
    from pypto_pro.compiler import observe_compile
    from pypto_pro.runtime.backends import use_backend
    from pypto_pro.runtime.profile import observe_launches

    name = backend_name(options)
    with contextlib.ExitStack() as stack:
        if name is not None:
            stack.enter_context(use_backend(name))
        stack.enter_context(observe_launches(log))
        stack.enter_context(observe_compile(log.compile_pass))
        if options.sanitize:
            stack.enter_context(_sanitizing())
        yield


def _sanitizing() -> Any:
    try:
        from pypto_pro.sanitizer import sanitize
    except ImportError as e:
        raise OptionError(f"--sanitize: the sanitizer is not available here ({e})") from None
    return sanitize()


@contextlib.contextmanager
def _arch_env(arch: str | None) -> Iterator[None]:
    """`--arch` for launches in the body: the runtime reads env PYPTOPRO_JIT_ARCH."""
    from pypto_pro.runtime.arch import ENV_ARCH, normalize_arch

    if arch is None:
        yield
        return
    try:
        normalize_arch(arch)
    except ValueError as e:
        raise OptionError(f"--arch: {e}") from None
    old = os.environ.get(ENV_ARCH)
    os.environ[ENV_ARCH] = arch
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(ENV_ARCH, None)
        else:
            os.environ[ENV_ARCH] = old


def _jit_kernels(namespace: dict) -> list[Any]:
    from pypto_pro.runtime.jit import JitKernel

    seen: dict[int, Any] = {}
    for value in list(namespace.values()):
        if isinstance(value, JitKernel):
            seen.setdefault(id(value), value)
    return list(seen.values())


def _needs_launch(kernel: Any) -> bool:
    """True when the kernel's specialisation comes from launch arguments."""
    from pypto_pro.language.types import STATIC

    if kernel.tiling_schema is not None or kernel.options.datatype:
        return True
    for p in kernel.kernel_def.params:
        dims = getattr(p.spec, "dims", ()) if p.kind == "tensor" else ()
        if any(d is STATIC or d is Ellipsis for d in dims):
            return True
    return False


class CellRun:
    """State of one `run_cell` call (kept small: each step is a method)."""

    def __init__(self, options: CellOptions, namespace: dict, source: SourceInfo,
                 shell: Any, progress: Progress, cache: CompileCache) -> None:
        self.options = options
        self.namespace = namespace
        self.source = source
        self.shell = shell
        self.progress = progress
        self.cache = cache
        self.notes: list[str] = []
        self.cached: set[int] = set()
        self.log = LaunchLog(progress)

    def fail(self, error: BaseException, stage: str) -> CellError:
        return CellError(error, self.source, stage, self.options.traceback, self.shell)

    def execute(self, code: str) -> None:
        try:
            compiled = compile(code, self.source.file, "exec")
        except SyntaxError as e:
            raise self.fail(e, "cell") from e
        with self.progress.stage("run cell"):
            try:
                exec(compiled, self.namespace)  # noqa: S102  (the user's cell, as IPython would)
            except Exception as e:  # noqa: BLE001
                raise self.fail(e, "cell") from e

    def cell_kernels(self) -> list[Any]:
        """Kernels defined in this cell, plus kernels launched by it, in first-seen order."""
        mine = [k for k in _jit_kernels(self.namespace)
                if k.kernel_def.file == self.source.file]
        launched = {id(r.compiled.kernel_def) for r, _ in self.log.calls}
        others = [k for k in _jit_kernels(self.namespace)
                  if id(k.kernel_def) in launched and k not in mine]
        return mine + others

    def compile_in_place(self, kernels: list[Any]) -> None:
        from pypto_pro.runtime.arch import resolve_arch
        from pypto_pro.runtime.kernel_def import Specialization

        for kernel in kernels:
            if kernel.compiled_variants:
                continue
            if _needs_launch(kernel):
                self.notes.append(f"{kernel.kernel_def.name}: specialised by its launch "
                                  f"arguments (STATIC dims, tiling key or datatype); launch it "
                                  f"(--launch) to compile")
                continue
            self.compile(kernel, Specialization(arch=resolve_arch(kernel.options.arch)))

    def compile(self, kernel: Any, spec: Any) -> Any:
        key = cache_key(kernel, spec)
        hit = None if self.options.force else self.cache.get(key)
        if hit is not None and spec not in kernel.compiled_variants:
            kernel.compiled_variants[spec] = hit
            self.cached.add(id(hit))
            return hit
        with self.progress.stage(f"compile {kernel.kernel_def.name}"):
            try:
                compiled = kernel.compile(spec)
            except Exception as e:  # noqa: BLE001
                raise self.fail(e, "compile") from e
        self.cache.put(key, compiled)
        return compiled

    def launch(self, expr: str) -> None:
        """`--launch 'kernel(args)'` (block dim from `--block-dim`, default 1) or a full
        `kernel[None, n](args)` expression."""
        from pypto_pro.runtime.jit import JitKernel

        try:
            tree = ast.parse(expr.strip(), mode="eval")
        except SyntaxError as e:
            raise OptionError(f"--launch: not an expression: {expr!r} ({e.msg})") from None
        call = tree.body
        if not isinstance(call, ast.Call):
            raise OptionError(f"--launch takes a call such as 'add_kernel(x, y, z)', got {expr!r}")
        evaluate = self._evaluator()
        target = evaluate(call.func)
        if isinstance(target, JitKernel):
            args: list = []
            for a in call.args:
                args.extend(evaluate(a.value) if isinstance(a, ast.Starred) else [evaluate(a)])
            kwargs: dict = {}
            for k in call.keywords:
                kwargs.update(evaluate(k.value) if k.arg is None else {k.arg: evaluate(k.value)})
            self._precompile(target, args, kwargs)
            launcher = target[None, self.options.block_dim or 1]
            self._guarded(lambda: launcher(*args, **kwargs))
        else:
            self._guarded(lambda: evaluate(call))

    def _evaluator(self):
        def evaluate(node: ast.AST) -> Any:
            code = compile(ast.Expression(node), f"<--launch {self.source.label}>", "eval")
            try:
                return eval(code, self.namespace)  # noqa: S307  (the user's own expression)
            except Exception as e:  # noqa: BLE001
                raise self.fail(e, "launch") from e

        return evaluate

    def _guarded(self, fn: Any) -> None:
        try:
            fn()
        except CellError:
            raise
        except Exception as e:  # noqa: BLE001
            raise self.fail(e, "launch") from e

    def _precompile(self, kernel: Any, args: list, kwargs: dict) -> None:
        """Compile the `--launch` variant through the cache (plain kernels only)."""
        if kernel.tiling_schema is not None or kernel.options.datatype:
            return
        from pypto_pro.runtime.arch import resolve_arch
        from pypto_pro.runtime.binding import bind
        from pypto_pro.runtime.kernel_def import Specialization

        spec = Specialization(arch=resolve_arch(kernel.options.arch))
        try:
            bound = bind(kernel.kernel_def, tuple(args), kwargs, spec)
        except Exception as e:  # noqa: BLE001
            raise self.fail(e, "launch") from e
        self.compile(kernel, bound.spec)


def _arg_info(param: Any, value: Any) -> ArgInfo:
    import torch

    if isinstance(value, torch.Tensor):
        dtype = str(value.dtype).replace("torch.", "")
        return ArgInfo(param.name, param.kind, tuple(value.shape), dtype)
    if value is None:
        return ArgInfo(param.name, "none", value="None")
    return ArgInfo(param.name, param.kind, value=repr(value)[:60])


def output_tensor(request: Any) -> tuple[str, Any] | None:
    """(name, tensor) of a launch's output: the `pl.Output` parameter, else the last tensor."""
    import torch

    pairs = [(p, v) for p, v in zip(request.compiled.kernel_def.params, request.args)
             if isinstance(v, torch.Tensor)]
    marked = [pv for pv in pairs if pv[0].direction == "output"]
    chosen = (marked or pairs)[-1:]
    return (chosen[0][0].name, chosen[0][1]) if chosen else None


def launch_records(log: LaunchLog) -> list[LaunchRecord]:
    """The cell's launches in order, with their arguments."""
    out = []
    for request, result in log.calls:
        params = request.compiled.kernel_def.params
        args = tuple(_arg_info(p, v) for p, v in zip(params, request.args))
        out.append(LaunchRecord(request.compiled.name, request.block_dim, result.backend,
                                result.wall_seconds, args, result.trace, dict(result.printed),
                                compiled=request.compiled,
                                sanitizer=getattr(result, "sanitizer", None)))
    return out


def kernel_records(run: CellRun, kernels: list[Any]) -> list[KernelRecord]:
    """One record per compiled variant of the cell's kernels (and of launched kernels)."""
    records, seen = [], set()
    compiled_of_launches = [r.compiled for r, _ in run.log.calls]
    for kernel in kernels:
        for compiled in kernel.compiled_variants.values():
            seen.add(id(compiled))
            records.append(_record(kernel, compiled, run))
    for compiled in compiled_of_launches:
        if id(compiled) not in seen:
            seen.add(id(compiled))
            records.append(_record(None, compiled, run))
    return records


def _record(kernel: Any, compiled: Any, run: CellRun) -> KernelRecord:
    seconds = compiled.parse_seconds + sum(r.seconds for recs in compiled.passes.values()
                                           for r in recs)
    return KernelRecord(compiled.name, kernel, compiled, seconds, id(compiled) in run.cached)


def generate_code(records: list[KernelRecord], source: SourceInfo, progress: Progress) -> bool:
    """Run code generation on every record; False when `pypto_pro.codegen` is unavailable."""
    try:
        from pypto_pro.codegen import generate
    except ImportError:
        return False
    for rec in records:
        cached = getattr(rec.compiled, "_pypto_lab_artifacts", None)
        if cached is not None:
            rec.artifacts = cached
            continue
        with progress.stage(f"codegen {rec.name}"):
            try:
                rec.artifacts = generate(rec.compiled)
                rec.compiled._pypto_lab_artifacts = rec.artifacts
            except Exception as e:  # noqa: BLE001  (shown in the CCE view, not fatal)
                rec.codegen_error = source.relabel(f"{type(e).__name__}: {e}")
    return True


def forget_compiles(namespace: dict) -> None:
    """`--force`: drop the compiled variants of every kernel in the namespace."""
    for kernel in _jit_kernels(namespace):
        kernel.compiled_variants.clear()


def run_cell(body: str, options: CellOptions, namespace: dict, source: SourceInfo,
             code: str, *, shell: Any = None, progress: Progress | None = None,
             cache: CompileCache | None = None) -> Any:
    """Execute a registered cell and return its `CellResult` (raises `CellError`; a `--ref`
    FAIL raises one whose `result` is the finished `CellResult`, unless `keep_going`)."""
    from .workbench import CellResult

    progress = progress or Progress()
    cache = cache if cache is not None else CompileCache()
    t0 = time.perf_counter()
    if options.force:
        forget_compiles(namespace)
    run = CellRun(options, namespace, source, shell, progress, cache)
    with progress, _arch_env(options.arch), _observing(options, run.log):
        run.execute(code)
        run.compile_in_place(run.cell_kernels())
        if options.launch:
            run.launch(options.launch)
        kernels = kernel_records(run, run.cell_kernels())
        codegen = generate_code(kernels, source, progress)
    launches = launch_records(run.log)
    output = output_tensor(run.log.calls[-1][0]) if run.log.calls else None
    check = check_reference(options, namespace, output, run.fail)
    if check is not None and launches:
        launches[-1].check = check
    result = CellResult(source=source, options=options, kernels=kernels, launches=launches,
                        notes=run.notes, stages=list(progress.stages),
                        codegen_available=codegen, seconds=time.perf_counter() - t0,
                        check=check)
    if check is not None and not check.ok and not options.keep_going:
        error = run.fail(ReferenceMismatch(check), "check")
        error.result = result
        raise error
    return result
