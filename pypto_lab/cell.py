"""Running one cell: execute the body, compile every kernel in place, launch, check, collect.

Owns `register_cell` (the cell text goes into IPython's compile cache / `linecache`, so Python
tracebacks, `inspect.getsource` and every DSL span point at cell lines) and `run_cell`, the one
function behind the magic, `pypto_lab.run_cell` and the CLI. The body runs in the caller's
namespace under `pypto_pro.profile()` and a recording backend that delegates to the chosen
backend (`--backend`, `--soc`, else the default) and keeps each launch's request; kernels of the
cell that were not launched are compiled for their default specialisation (all passes), then
code generation runs when `pypto_pro.codegen` is importable. Failures become `CellError`s. Uses
only the public `pypto_pro` runtime API (jit kernels, backends registry, profile).
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
from .errors import CellError
from .options import CellOptions, OptionError
from .progress import Progress
from .records import ArgInfo, CheckResult, KernelRecord, LaunchRecord, SourceInfo

RECORDER_BACKEND = "pypto_lab"


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


class LaunchRecorder:
    """A backend that runs every launch on `inner` and keeps (request, result) pairs."""

    name = RECORDER_BACKEND

    def __init__(self, inner: Any, progress: Progress) -> None:
        self.inner = inner
        self.progress = progress
        self.calls: list[tuple[Any, Any]] = []

    def launch(self, request: Any) -> Any:
        with self.progress.stage(f"simulate {request.compiled.name}[None, {request.block_dim}]"):
            result = self.inner.launch(request)
        self.calls.append((request, result))
        return result


def inner_backend(options: CellOptions) -> Any:
    """The backend launches really run on: `--soc` (a simulator on that SoC), `--backend`,
    else the default choice (`use_backend`, env `PYPTOPRO_BACKEND`, detection)."""
    from pypto_pro.runtime.backends import current_backend_name, get_backend

    if options.soc:
        if options.backend not in (None, "sim"):
            raise OptionError(f"--soc selects a simulator SoC; it cannot be combined with "
                              f"--backend {options.backend}")
        from pypto_pro.runtime.backends.sim import SimBackend

        try:
            return SimBackend(soc_name=options.soc)
        except ValueError as e:
            raise OptionError(f"--soc: {e}") from None
    name = options.backend or current_backend_name()
    if name == RECORDER_BACKEND:
        raise OptionError(f"--backend {name} is the workbench's own recorder")
    from pypto_pro.errors import PyptoError

    try:
        return get_backend(name)
    except PyptoError as e:  # unknown name, or a backend that cannot be imported here
        raise OptionError(f"--backend: {e.message}") from None


@contextlib.contextmanager
def _recording(recorder: LaunchRecorder) -> Iterator[None]:
    from pypto_pro.runtime.backends import register_backend, use_backend

    register_backend(RECORDER_BACKEND, lambda: recorder)
    with use_backend(RECORDER_BACKEND):
        yield


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
        self.recorder = LaunchRecorder(inner_backend(options), progress)

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
        launched = {id(r.compiled.kernel_def) for r, _ in self.recorder.calls}
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


def launch_records(recorder: LaunchRecorder, profile: Any) -> list[LaunchRecord]:
    """Launches in order: the recorded ones with their arguments, plus any the profiler saw
    that bypassed the recorder (a `use_backend(...)` block inside the cell)."""
    recorded = {id(result): request for request, result in recorder.calls}
    out = []
    for name, result in zip(profile.kernels, profile.results):
        request = recorded.get(id(result))
        if request is None:
            block_dim = result.trace.meta.block_dim if result.trace is not None else 0
            out.append(LaunchRecord(name, block_dim, result.backend, result.wall_seconds, (),
                                    result.trace, dict(result.printed)))
            continue
        params = request.compiled.kernel_def.params
        args = tuple(_arg_info(p, v) for p, v in zip(params, request.args))
        out.append(LaunchRecord(request.compiled.name, request.block_dim, result.backend,
                                result.wall_seconds, args, result.trace, dict(result.printed),
                                compiled=request.compiled))
    return out


def check_reference(options: CellOptions, namespace: dict, recorder: LaunchRecorder,
                    fail: Any) -> CheckResult | None:
    """Compare the output with `--ref` (rtol/atol default by dtype: 1e-3 half, 1e-5 float)."""
    import torch

    if not options.ref:
        return None
    try:
        expected = eval(options.ref, namespace)  # noqa: S307  (the user's own expression)
        if options.out:
            name, actual = options.out, eval(options.out, namespace)  # noqa: S307
        else:
            found = output_tensor(recorder.calls[-1][0]) if recorder.calls else None
            if found is None:
                raise OptionError("--ref: the cell made no launch with a tensor output; name "
                                  "the value to compare with --out")
            name, actual = found
    except OptionError:
        raise
    except Exception as e:  # noqa: BLE001
        raise fail(e, "check") from e
    return compare_tensors(name, actual, torch.as_tensor(expected), options.rtol, options.atol)


def compare_tensors(name: str, actual: Any, expected: Any, rtol: float | None,
                    atol: float | None) -> CheckResult:
    import torch

    half = actual.dtype in (torch.float16, torch.bfloat16)
    rtol = rtol if rtol is not None else (1e-3 if half else 1e-5)
    atol = atol if atol is not None else rtol
    if tuple(actual.shape) != tuple(expected.shape):
        return CheckResult(False, name, rtol, atol, message=f"shape {tuple(actual.shape)} != "
                                                            f"reference {tuple(expected.shape)}")
    a, e = actual.detach().double().cpu(), expected.detach().double().cpu()
    close = torch.isclose(a, e, rtol=rtol, atol=atol, equal_nan=True)
    err = (a - e).abs().nan_to_num(nan=float("inf"))
    max_err = float(err.max()) if err.numel() else 0.0
    bad = int((~close).sum())
    return CheckResult(bad == 0, name, rtol, atol, max_err, bad, int(close.numel()))


def kernel_records(run: CellRun, kernels: list[Any]) -> list[KernelRecord]:
    """One record per compiled variant of the cell's kernels (and of launched kernels)."""
    records, seen = [], set()
    compiled_of_launches = [r.compiled for r, _ in run.recorder.calls]
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
    """Execute a registered cell and return its `CellResult` (raises `CellError`)."""
    import pypto_pro

    from .workbench import CellResult

    progress = progress or Progress()
    cache = cache if cache is not None else CompileCache()
    t0 = time.perf_counter()
    if options.force:
        forget_compiles(namespace)
    run = CellRun(options, namespace, source, shell, progress, cache)
    with progress, _arch_env(options.arch), _recording(run.recorder), \
            pypto_pro.profile() as profile:
        run.execute(code)
        run.compile_in_place(run.cell_kernels())
        if options.launch:
            run.launch(options.launch)
        kernels = kernel_records(run, run.cell_kernels())
        codegen = generate_code(kernels, source, progress)
    launches = launch_records(run.recorder, profile)
    check = check_reference(options, namespace, run.recorder, run.fail)
    if check is not None and launches:
        launches[-1].check = check
    return CellResult(source=source, options=options, kernels=kernels, launches=launches,
                      notes=run.notes, stages=list(progress.stages), codegen_available=codegen,
                      seconds=time.perf_counter() - t0, check=check)
