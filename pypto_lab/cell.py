"""Running one cell: execute the body, compile every kernel in place, launch, check, collect.

Owns `register_cell` (the cell text goes into IPython's compile cache / `linecache`, so Python
tracebacks, `inspect.getsource` and every DSL span point at cell lines) and `run_cell`, the one
function behind the magic, `pypto_lab.run_cell` and the CLI. Uses only the public `pypto_pro`
API: the body runs in the caller's namespace under `pypto_pro.use_backend` (`--backend`,
`--soc`), `use_arch` (`--arch`), `sanitize` (`--sanitize`) and a `pypto_pro.profile` whose
callbacks drive the progress line (a stage per launch, the running compiler pass); kernels of
the cell that were not launched are compiled with `kernel.compile()` (all passes; the compile
cache serves a kernel redefined with the same source), and `cell_records` turns it all into
records. Failures become `CellError`s. An interrupt (KeyboardInterrupt) propagates after the
context managers undo their state: nothing is cached or bound from a run that did not finish.
"""
from __future__ import annotations

import ast
import contextlib
import hashlib
import linecache
import sys
import time
from collections.abc import Iterator
from typing import Any

import pypto_pro

from .cell_records import generate_code, kernel_records, launch_records, output_tensor
from .check import ReferenceMismatch, check_reference
from .errors import CellError
from .options import CellOptions, OptionError
from .progress import Progress
from .records import SourceInfo


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
    """What a cell run reports while it runs: a progress stage per launch, the running pass,
    and how many passes ran (a compile that ran none was served from the compile cache)."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.passes = 0

    def on_launch(self, name: str, block_dim: int) -> None:
        self.progress.begin(f"simulate {name}[None, {block_dim}]")

    def on_launch_end(self, name: str) -> None:
        self.progress.end()

    def on_pass(self, kernel: str, target: str, pass_name: str, index: int,
                total: int) -> None:
        self.passes += 1
        self.progress.detail(f"{target}: pass {index}/{total} {pass_name}")



def _option_error(flag: str, error: Exception) -> OptionError:
    return OptionError(f"{flag}: {getattr(error, 'message', error)}")


@contextlib.contextmanager
def _running(options: CellOptions, log: LaunchLog) -> Iterator[Any]:
    """The cell's launches on the chosen backend and arch (sanitized with `--sanitize`),
    recorded by a `pypto_pro.profile` that reports progress to `log`; yields the profile."""
    from pypto_pro.errors import PyptoError

    with contextlib.ExitStack() as stack:
        if options.soc and options.backend not in (None, "sim"):
            raise OptionError(f"--soc selects a simulator SoC; it cannot be combined with "
                              f"--backend {options.backend}")
        try:
            if options.soc:
                stack.enter_context(pypto_pro.use_backend("sim", soc=options.soc))
            elif options.backend:
                stack.enter_context(pypto_pro.use_backend(options.backend))
        except PyptoError as e:
            raise _option_error("--soc" if options.soc else "--backend", e) from None
        if options.arch:
            try:
                stack.enter_context(pypto_pro.use_arch(options.arch))
            except PyptoError as e:
                raise _option_error("--arch", e) from None
        if options.sanitize:
            stack.enter_context(pypto_pro.sanitize())
        yield stack.enter_context(pypto_pro.profile(log.on_launch, log.on_pass,
                                                    log.on_launch_end))


def _jit_kernels(namespace: dict) -> list[Any]:
    seen: dict[int, Any] = {}
    for value in list(namespace.values()):
        if isinstance(value, pypto_pro.JitKernel):
            seen.setdefault(id(value), value)
    return list(seen.values())


def _defined_in(kernel: Any, file: str) -> bool:
    code = getattr(getattr(kernel, "__wrapped__", None), "__code__", None)
    return code is not None and code.co_filename == file


class CellRun:
    """State of one `run_cell` call (kept small: each step is a method)."""

    def __init__(self, options: CellOptions, namespace: dict, source: SourceInfo,
                 shell: Any, progress: Progress) -> None:
        self.options = options
        self.namespace = namespace
        self.source = source
        self.shell = shell
        self.progress = progress
        self.notes: list[str] = []
        self.cached: set[int] = set()  # id() of the CompiledKernels served from the cache
        self.log = LaunchLog(progress)
        self.profile: Any = None  # the pypto_pro.Profile of the run

    def fail(self, error: BaseException, stage: str) -> CellError:
        return CellError(error, self.source, stage, self.options.traceback, self.shell)

    @property
    def launches(self) -> list[Any]:
        """The `pypto_pro.ProfiledLaunch`es of the cell so far."""
        return self.profile.launches if self.profile is not None else []

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
        kernels = _jit_kernels(self.namespace)
        mine = [k for k in kernels if _defined_in(k, self.source.file)]
        launched = {id(launch.compiled.kernel) for launch in self.launches}
        others = [k for k in kernels if k not in mine
                  and any(id(v.kernel) in launched for v in k.variants)]
        return mine + others

    def compile_in_place(self, kernels: list[Any]) -> None:
        for kernel in kernels:
            if kernel.variants:
                continue
            if kernel.needs_arguments or kernel.tiling_schema is not None or \
                    kernel.options.datatype:
                self.notes.append(f"{kernel.__name__}: specialised by its launch arguments "
                                  f"(STATIC dims, tiling key or datatype); launch it "
                                  f"(--launch) to compile")
                continue
            self.compile(kernel, (), {})

    def compile(self, kernel: Any, args: tuple, kwargs: dict) -> Any:
        """`kernel.compile(*args, **kwargs)` as a progress stage; notes a compile-cache hit."""
        ran = self.log.passes
        with self.progress.stage(f"compile {kernel.__name__}"):
            try:
                compiled = kernel.compile(*args, force=self.options.force, **kwargs)
            except Exception as e:  # noqa: BLE001
                raise self.fail(e, "compile") from e
        if self.log.passes == ran:
            self.cached.add(id(compiled.kernel))
        return compiled

    def launch(self, expr: str) -> None:
        """`--launch 'kernel(args)'` (block dim from `--block-dim`, default 1) or a full
        `kernel[None, n](args)` expression."""
        try:
            tree = ast.parse(expr.strip(), mode="eval")
        except SyntaxError as e:
            raise OptionError(f"--launch: not an expression: {expr!r} ({e.msg})") from None
        call = tree.body
        if not isinstance(call, ast.Call):
            raise OptionError(f"--launch takes a call such as 'add_kernel(x, y, z)', got {expr!r}")
        evaluate = self._evaluator()
        target = evaluate(call.func)
        if isinstance(target, pypto_pro.JitKernel):
            args: list = []
            for a in call.args:
                args.extend(evaluate(a.value) if isinstance(a, ast.Starred) else [evaluate(a)])
            kwargs: dict = {}
            for k in call.keywords:
                kwargs.update(evaluate(k.value) if k.arg is None else {k.arg: evaluate(k.value)})
            if target.tiling_schema is None and not target.options.datatype:
                self.compile(target, tuple(args), kwargs)  # through the compile cache
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


def run_cell(body: str, options: CellOptions, namespace: dict, source: SourceInfo,
             code: str, *, shell: Any = None, progress: Progress | None = None) -> Any:
    """Execute a registered cell and return its `CellResult` (raises `CellError`; a `--ref`
    FAIL raises one whose `result` is the finished `CellResult`, unless `keep_going`)."""
    from .workbench import CellResult

    progress = progress or Progress()
    t0 = time.perf_counter()
    if options.force:
        for kernel in _jit_kernels(namespace):
            kernel.forget()
    run = CellRun(options, namespace, source, shell, progress)
    with progress, _running(options, run.log) as prof:
        run.profile = prof
        run.execute(code)
        run.compile_in_place(run.cell_kernels())
        if options.launch:
            run.launch(options.launch)
        kernels = kernel_records(run.cell_kernels(), run.launches, run.cached)
        codegen = generate_code(kernels, source, progress)
    launches = launch_records(run.launches)
    output = output_tensor(run.launches[-1]) if run.launches else None
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
