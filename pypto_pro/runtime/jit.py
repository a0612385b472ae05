"""`pl.jit` and `pl.kernel` (spec §1.1, §1.3, §1.4): decoration, launch forms, compile memo.

Decoration checks the options, captures the kernel's environment (the caller's locals and the
function's closure snapshotted, its globals kept live), reads the parameters and the tiling-key
schema, and builds the `KernelDef` (AST with real file lines and columns). A launch binds and
checks the arguments (`binding.bind`), compiles once per `Specialization`
(`pypto_pro.compiler.compile_kernel`, imported lazily) and hands a `LaunchRequest` to the chosen
backend. A backend with `cached_launch` (native) can serve a kernel an earlier process built
from its disk cache: the request then carries a `CachedCompile` and nothing is compiled unless
something reads the IR.
"""
from __future__ import annotations

import ast
import builtins
import functools
import hashlib
import inspect
import json
import linecache
import numbers
import sys
import textwrap
import threading
import types
from collections import ChainMap
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from typing import Any, NamedTuple

from ..errors import InvalidArgument, InvalidShape, InvalidType
from ..ir.dtype import DataType
from ..language.pipeline import PipelineConfig
from ..language.types import STATIC
from .arch import normalize_arch, resolve_arch
from .backends import LaunchRequest, LaunchResult, current_backend_name, get_backend
from .binding import bind, resolve_datatype
from .kernel_def import JitOptions, KernelDef, ParamSpec, Specialization
from .profile import launch_started, record
from .signature import evaluate_annotations, is_kernel_function, params_from_function
from .tilingkey import TilingKeySchema, build_schema

__all__ = ["JitKernel", "KernelDef", "_TileJitKernel", "jit", "kernel"]


def jit(target: Callable | None = None, *, arch: str | None = None, auto_mutex: bool = True,
        name: str | None = None, pipeline: PipelineConfig | None = None,
        tiling_key: type | None = None, datatype: dict[str, str] | None = None,
        compile_timeout: int | None = None, sanitizer: bool = False, **kwargs: Any) -> Any:
    """`@pl.jit` / `@pl.jit(...)`: a launchable kernel, or a pass-through wrapper for a
    function without tile annotations (spec §1.1)."""
    options = _options("jit", kwargs, arch=arch, auto_mutex=auto_mutex, name=name,
                       pipeline=pipeline, tiling_key=tiling_key, datatype=datatype,
                       compile_timeout=compile_timeout, sanitizer=sanitizer)

    def decorate(fn: Callable) -> Any:
        if isinstance(fn, JitKernel):
            return fn  # the real decorator passes an already-jitted kernel through unchanged
        env = _capture_env(_check_function(fn, "jit"))
        evaluated = evaluate_annotations(fn, env)
        if not is_kernel_function(fn, env, evaluated):
            return _passthrough(fn)
        return JitKernel(*_kernel_def(fn, options, env, evaluated))

    return decorate if target is None else decorate(target)


def kernel(fn: Callable | None = None, *, arch: str | None = None, auto_mutex: bool = True,
           name: str | None = None, pipeline: PipelineConfig | None = None,
           tiling_key: type | None = None, datatype: dict[str, str] | None = None,
           compile_timeout: int | None = None, sanitizer: bool = False,
           **kwargs: Any) -> Any:
    """`@pl.kernel` / `@pl.kernel(...)`: the lazy `KernelDef` (parse and codegen, no launch)."""
    options = _options("kernel", kwargs, arch=arch, auto_mutex=auto_mutex, name=name,
                       pipeline=pipeline, tiling_key=tiling_key, datatype=datatype,
                       compile_timeout=compile_timeout, sanitizer=sanitizer)

    def decorate(f: Callable) -> KernelDef:
        env = _capture_env(_check_function(f, "kernel"))
        return _kernel_def(f, options, env)[0]

    return decorate if fn is None else decorate(fn)


# ---------------------------------------------------------------- options


def _fail_type(message: str) -> InvalidType:
    return InvalidType(message, module="PRO_RUNTIME")


#: type checks of the optional options (None always passes)
_OPTION_CHECKS: dict[str, Callable[[Any], bool]] = {
    "name": lambda v: isinstance(v, str) and v != "",
    "pipeline": lambda v: isinstance(v, PipelineConfig),
    "compile_timeout": lambda v: isinstance(v, int) and not isinstance(v, bool) and v > 0,
}


def _options(decorator: str, unknown: Mapping[str, Any], **given: Any) -> JitOptions:
    if unknown:
        raise _fail_type(f"{decorator}() got an unexpected keyword argument "
                         f"{next(iter(unknown))!r}")
    given["arch"] = normalize_arch(given["arch"])
    for key in ("auto_mutex", "sanitizer"):
        if not isinstance(given[key], bool):
            raise _fail_type(f"{decorator}(): {key} must be a bool, got {given[key]!r}")
    for key, ok in _OPTION_CHECKS.items():
        if given[key] is not None and not ok(given[key]):
            raise _fail_type(f"{decorator}(): invalid {key}={given[key]!r}")
    _check_datatype_schema(decorator, given["datatype"])
    if given["tiling_key"] is not None and not isinstance(given["tiling_key"], type):
        raise InvalidArgument(f"{decorator}(): tiling_key must be a class, got "
                              f"{type(given['tiling_key']).__name__}", module="PRO_RUNTIME")
    datatype = dict(given["datatype"]) if given["datatype"] else None
    return JitOptions(**{**given, "datatype": datatype})


def _check_datatype_schema(decorator: str, datatype: Any) -> None:
    """`datatype=` as the real decorator checks it: a non-empty dict from parameter names to
    identifier variable names (ValueError otherwise)."""
    if datatype is None:
        return
    if not isinstance(datatype, dict) or not datatype:
        raise InvalidArgument(f"{decorator}(): datatype must be a non-empty dict mapping param "
                              f"name to dtype variable name, got {datatype!r}",
                              module="PRO_RUNTIME")
    for pname, var in datatype.items():
        if not isinstance(pname, str) or not pname:
            raise InvalidArgument(f"{decorator}(): datatype param names must be non-empty "
                                  f"strings, got {pname!r}", module="PRO_RUNTIME")
        if not isinstance(var, str) or not var.isidentifier():
            raise InvalidArgument(f"{decorator}(): datatype variable for param '{pname}' must "
                                  f"be a valid Python identifier, got {var!r}",
                                  module="PRO_RUNTIME")


def _check_function(fn: Any, decorator: str) -> types.FunctionType:
    if not isinstance(fn, types.FunctionType):
        raise _fail_type(f"pl.{decorator} decorates a Python function, got {fn!r}")
    return fn


def _passthrough(fn: Callable) -> Callable:
    @functools.wraps(fn)
    def plain(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    return plain


# ---------------------------------------------------------------- environment and source


class _LateCells(Mapping):
    """Closure variables still unbound at decoration (e.g. a helper defined after the
    kernel in the same function), read when the kernel is parsed."""

    def __init__(self, cells: dict[str, types.CellType]) -> None:
        self._cells = cells

    def __getitem__(self, key: str) -> Any:
        try:
            return self._cells[key].cell_contents
        except ValueError:
            raise KeyError(key) from None

    def __iter__(self) -> Iterator[str]:
        return (k for k in self._cells if k in self)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _capture_env(fn: types.FunctionType) -> ChainMap:
    """ChainMap(snapshot of caller locals + closure values, late cells, live globals, builtins)."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals is globals():
        frame = frame.f_back
    snapshot: dict[str, Any] = {}
    if frame is not None and frame.f_locals is not frame.f_globals:
        snapshot.update(frame.f_locals)
    late: dict[str, types.CellType] = {}
    for var, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            snapshot[var] = cell.cell_contents
        except ValueError:
            late[var] = cell
    return ChainMap(snapshot, _LateCells(late), fn.__globals__, vars(builtins))


def _function_tree(fn: types.FunctionType) -> tuple[ast.FunctionDef, str, str]:
    """The function's AST with real file lines and columns, its file, its dedented source."""
    found = _definition_lines(fn)
    try:
        lines, start = found or inspect.getsourcelines(fn)
        node = _parse_definition(lines, start)
    except (OSError, TypeError) as e:
        raise InvalidArgument(f"cannot read the source of kernel '{fn.__qualname__}': {e}",
                              hint="define the kernel in a file or a notebook cell",
                              module="PRO_RUNTIME") from e
    except SyntaxError:
        if found is None:
            raise
        lines, start = inspect.getsourcelines(fn)  # an unusual layout: ask the tokenizer
        node = _parse_definition(lines, start)
    if not isinstance(node, ast.FunctionDef):
        raise _fail_type(f"'{fn.__qualname__}' is not defined with a `def` statement")
    file = inspect.getsourcefile(fn) or fn.__code__.co_filename
    return node, file, textwrap.dedent("".join(lines))


def _parse_definition(lines: list[str], start: int) -> ast.stmt:
    """The statement `lines` (starting at file line `start`) hold, with the file's lines and
    columns: blank lines in front put it at its line, and an indented def is parsed inside
    `if 1:` so its columns stay those of the file."""
    indented = lines[0][:1].isspace()
    pad = "\n" * (start - (2 if indented else 1))
    module = ast.parse(pad + ("if 1:\n" if indented else "") + "".join(lines))
    return module.body[0].body[0] if indented else module.body[0]


def _definition_lines(fn: types.FunctionType) -> tuple[list[str], int] | None:
    """(the source lines of `fn`, decorators included; its first line), found from the lines
    its bytecode covers: the last one of any instruction, then the deeper-indented lines after
    it (the rest of that statement, dead code, comments), less trailing blank lines.
    `inspect.getsourcelines` finds the same block by tokenizing, several times slower; None
    when the file's lines are unknown."""
    fn = inspect.unwrap(fn)
    code = fn.__code__
    linecache.checkcache(code.co_filename)  # the file as it is now, like inspect
    lines = linecache.getlines(code.co_filename, fn.__globals__)
    start = code.co_firstlineno
    if not lines or start > len(lines):
        return None
    head = lines[start - 1]
    indent = len(head) - len(head.lstrip())
    last = end = _last_line(code)
    while end < len(lines) and (not lines[end].strip()
                                or len(lines[end]) - len(lines[end].lstrip()) > indent):
        end += 1
    while end > last and not lines[end - 1].strip():
        end -= 1
    return lines[start - 1:end], start


def _last_line(code: types.CodeType) -> int:
    """The last source line an instruction of `code` or of its nested code objects starts on
    (the lines a multi-line statement continues on are deeper-indented: see above)."""
    last = code.co_firstlineno
    for _, _, line in code.co_lines():
        if line is not None and line > last:
            last = line
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            last = max(last, _last_line(const))
    return last


def _kernel_def(fn: types.FunctionType, options: JitOptions, env: ChainMap,
                evaluated: Mapping[str, Any] | None = None,
                ) -> tuple[KernelDef, TilingKeySchema | None]:
    params = params_from_function(fn, env, options, evaluated)
    schema = None
    if options.tiling_key is not None:
        schema = build_schema(options.tiling_key, _reserved_names(params, options, env))
    tree, file, source = _function_tree(fn)
    kdef = KernelDef(fn=fn, name=fn.__name__, tree=tree, file=file, env=env, params=params,
                     options=options, source=source)
    return kdef, schema


def _reserved_names(params: tuple[ParamSpec, ...], options: JitOptions,
                    env: ChainMap) -> dict[str, str]:
    """Names a tiling-key field must not take, as the real decorator checks them: kernel
    parameters, datatype variables and the data globals / captured names of the kernel (not
    functions, classes or dunder names: a field constant shadows those in the kernel)."""
    reserved = {n: "module-level variable" for m in env.maps[:-1] for n in m
                if not n.startswith("__") and not _is_code(m, n)}
    reserved.update({v: "datatype variable" for v in (options.datatype or {}).values()})
    reserved.update({p.name: "kernel parameter" for p in params})
    return reserved


def _is_code(scope: Mapping[str, Any], name: str) -> bool:
    try:
        value = scope[name]
    except KeyError:  # (a late cell still unbound)
        return False
    return callable(value) or isinstance(value, type)


# ---------------------------------------------------------------- the kernel object


class _LaunchPlan(NamedTuple):  # (a named tuple: a new process makes it faster than a dataclass)
    """What the brackets fixed: stream, block_dim, checked tiling key and datatype."""

    stream: Any
    block_dim: int
    tiling_key: tuple[tuple[str, Any], ...] = ()
    datatype: tuple[tuple[str, DataType], ...] = ()


class JitKernel:
    """A `@pl.jit` kernel (the real class is `_TileJitKernel`): launch forms and compile memo.

    `kernel(*args)` launches one block on the current stream; `kernel[bd]`,
    `kernel[stream, bd]`, `kernel[stream, bd, tk]`, `kernel[stream, bd, tk, dt]` return a
    launcher. `compiled_variants` maps each `Specialization` to its compiled kernel;
    `last_result` is the `LaunchResult` of the last launch.
    """

    def __init__(self, kernel_def: KernelDef, tiling_schema: TilingKeySchema | None) -> None:
        self.kernel_def = kernel_def
        self.options = kernel_def.options
        self.tiling_schema = tiling_schema
        self.compiled_variants: dict[Specialization, Any] = {}
        self.last_result: LaunchResult | None = None
        self._disk_hits: dict[tuple[int, Specialization], CachedCompile] = {}
        #: (arch, tiling key, datatype) → the launch's `Specialization` before binding
        self._launch_specs: dict[tuple, Specialization] = {}
        self._compile_lock = threading.Lock()
        functools.update_wrapper(self, kernel_def.fn)

    def __repr__(self) -> str:
        return f"<pl.jit kernel '{self.kernel_def.name}'>"

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        if self.tiling_schema is not None or self.options.datatype:
            raise InvalidArgument(
                f"kernel '{self.kernel_def.name}' declares tiling_key / datatype and cannot be "
                f"called directly; use bracket-launch syntax {self._expected_form()}(...)",
                module="PRO_RUNTIME")
        self._launch(_LaunchPlan(None, 1), args, kwargs)

    def __getitem__(self, key: Any) -> Callable[..., None]:
        plan = self._plan(key)

        def launch(*args: Any, **kwargs: Any) -> None:
            self._launch(plan, args, kwargs)

        return launch

    def compile(self, *args: Any, tiling_key: Any = None, datatype: Any = None,
                force: bool = False, **kwargs: Any) -> Any:
        """`kernel.compile(*args)`: the `Compiled` specialisation a launch with these arguments
        runs (passes, IR, generated code), without launching. Arguments are checked as a launch
        checks them; a kernel without STATIC dims compiles without any. `tiling_key` and
        `datatype` are what the launch brackets would carry. A kernel of the same source
        compiled before in this process is reused unless `force`.

        `kernel.compile(spec)` with a `Specialization` is the runtime's own form: the
        compiler's `CompiledKernel` for `spec`, memoised per kernel.
        """
        if len(args) == 1 and isinstance(args[0], Specialization) and not kwargs:
            return self._compile_spec(args[0])
        from .compiled import compile_for

        return compile_for(self, args, kwargs, tiling_key, datatype, force)

    @property
    def needs_arguments(self) -> bool:
        """True when the kernel's specialisation depends on launch arguments (STATIC dims or
        ellipsis ranks): `compile()` then needs them."""
        return any(d is STATIC or d is Ellipsis
                   for p in self.kernel_def.params if p.kind == "tensor"
                   for d in getattr(p.spec, "dims", ()))

    @property
    def variants(self) -> list[Any]:
        """Every specialisation compiled so far, as `Compiled` objects."""
        from .compiled import Compiled

        return [Compiled.of(c) for c in list(self.compiled_variants.values())]

    def forget(self) -> None:
        """Drop this kernel's compiled variants: the next launch or compile compiles again."""
        with self._compile_lock:
            self.compiled_variants.clear()
            self._disk_hits.clear()

    def _compile_spec(self, spec: Specialization) -> Any:
        """The compiled kernel for `spec`, compiling on first use (memoised per spec)."""
        with self._compile_lock:
            compiled = self.compiled_variants.get(spec)
            if compiled is None:
                from ..compiler import compile_kernel

                compiled = compile_kernel(self.kernel_def, spec)
                self.compiled_variants[spec] = compiled
            return compiled

    def _compiled_for(self, backend: Any, spec: Specialization) -> Any:
        """What a launch on `backend` hands over: the compiled kernel when this process has it,
        else what the backend's on-disk cache holds for `spec` (a `CachedCompile`; backends
        with a `cached_launch(kernel_def, spec)` method), else a fresh compile."""
        compiled = self.compiled_variants.get(spec)
        if compiled is not None:
            return compiled
        lookup = getattr(backend, "cached_launch", None)
        if lookup is None:
            return self._compile_spec(spec)
        memo = (id(backend), spec)
        hit = self._disk_hits.get(memo)
        if hit is None:
            attrs = lookup(self.kernel_def, spec)
            if attrs is None:
                return self._compile_spec(spec)
            hit = self._disk_hits[memo] = CachedCompile(self, spec, attrs)
        return hit

    def _expected_form(self) -> str:
        extra = (["tilingkey"] if self.tiling_schema is not None else []) + (
            ["datatype"] if self.options.datatype else [])
        return f"kernel[{', '.join(['stream', 'block_dim', *extra])}]"

    def _plan(self, key: Any) -> _LaunchPlan:
        """The brackets as the real runtime reads them: `[bd]`, `[stream, bd]`, then the tiling
        key and / or datatype dict; a third item is the datatype dict only for a kernel with a
        datatype schema and no tiling key. A None in a place the kernel has no schema for is
        allowed; a missing dict, or a dict the kernel has no schema for, is refused."""
        items = key if isinstance(key, tuple) else (None, key)
        has_tk, has_dt = self.tiling_schema is not None, bool(self.options.datatype)
        tk_key = dt_key = None
        if len(items) == 3:
            if has_dt and not has_tk:
                dt_key = items[2]
            else:
                tk_key = items[2]
        elif len(items) == 4:
            tk_key, dt_key = items[2], items[3]
        if (len(items) not in (2, 3, 4) or (tk_key is None) == has_tk
                or (dt_key is None) == has_dt):
            raise InvalidArgument(
                f"Expected {self._expected_form()} for kernel '{self.kernel_def.name}' "
                f"(tiling_key: {'yes' if has_tk else 'no'}, datatype: "
                f"{'yes' if has_dt else 'no'}), got {len(key) if isinstance(key, tuple) else 1} "
                "item(s) in the brackets",
                module="PRO_RUNTIME")
        stream, block_dim = items[0], items[1]
        tiling_key = self.tiling_schema.validate(tk_key) if has_tk else ()
        datatype = resolve_datatype(self.kernel_def.params, dt_key) if has_dt else ()
        return _LaunchPlan(stream, _check_block_dim(block_dim), tiling_key, datatype)

    def _bind(self, plan: _LaunchPlan, args: tuple, kwargs: dict) -> Any:
        arch = resolve_arch(self.options.arch)
        key = (arch, plan.tiling_key, plan.datatype)
        launch_spec = self._launch_specs.get(key)
        if launch_spec is None:
            launch_spec = self._launch_specs[key] = Specialization(
                arch=arch, tiling_key=plan.tiling_key, datatype=plan.datatype)
        return bind(self.kernel_def, args, kwargs, launch_spec)

    def _launch(self, plan: _LaunchPlan, args: tuple, kwargs: dict) -> None:
        bound = self._bind(plan, args, kwargs)
        backend = get_backend(current_backend_name())
        compiled = self._compiled_for(backend, bound.spec)
        request = LaunchRequest(compiled, plan.block_dim, plan.stream, bound.args,
                                bound.dyn_dims, bound.tiling_bytes)
        name = self.options.name or self.kernel_def.name
        launch_started(name, request)
        self.last_result = backend.launch(request)
        record(name, self.last_result, request)
        for block in sorted(self.last_result.printed):
            sys.stdout.write(self.last_result.printed[block])


    @property
    def last_trace(self) -> Any:
        """The Trace of the last launch (None before any launch or on a backend without one)."""
        return None if self.last_result is None else self.last_result.trace

    # ------------------------------------------------------------ the real runtime's surface
    @property
    def arch(self) -> str | None:
        return self.options.arch

    @property
    def tilingkey_schema(self) -> TilingKeySchema | None:
        return self.tiling_schema

    @property
    def datatype_schema(self) -> dict[str, str] | None:
        return self.options.datatype

    def _ensure_compiled(self, args: Any = None, concrete_key: Mapping[str, Any] | None = None,
                         dtype_key: Mapping[str, DataType] | None = None) -> Any:
        """The compiled kernel for a launch with `args` and these keys (compiling it once).
        As the real method, `_ensure_compiled(key_dict)` compiles a tiling key without
        arguments (a kernel whose STATIC / ellipsis dims need them refuses)."""
        if isinstance(args, Mapping) and concrete_key is None:
            args, concrete_key = None, args
        tiling_key = self.tiling_schema.validate(concrete_key) if self.tiling_schema else ()
        datatype = (resolve_datatype(self.kernel_def.params, dtype_key)
                    if self.options.datatype else ())
        plan = _LaunchPlan(None, 1, tiling_key, datatype)
        if args is not None:
            return self._compile_spec(self._bind(plan, tuple(args), {}).spec)
        if self.needs_arguments:
            raise InvalidShape(f"kernel '{self.kernel_def.name}' has STATIC / ellipsis dims: "
                               "compiling it needs launch arguments", module="PRO_RUNTIME")
        return self._compile_spec(Specialization(arch=resolve_arch(self.options.arch),
                                                 tiling_key=tiling_key, datatype=datatype))

    @property
    def _compiled_by_signature(self) -> MutableMapping:
        """`compiled_variants` keyed as the real runtime keys its memo: (static signature,
        datatype hash, packed tiling key)."""
        return _BySignature(self)


_TileJitKernel = JitKernel


class _BySignature(MutableMapping):
    """A live view of a kernel's `compiled_variants` under the real runtime's memo keys."""

    def __init__(self, kernel: JitKernel) -> None:
        self._kernel = kernel

    def _key(self, spec: Specialization) -> tuple:
        schema = self._kernel.tiling_schema
        packed = schema.pack(dict(spec.tiling_key)) if schema and spec.tiling_key else None
        dtypes = None
        if spec.datatype:
            text = json.dumps({k: str(v) for k, v in spec.datatype}, sort_keys=True)
            dtypes = hashlib.sha256(text.encode()).hexdigest()[:16]
        return spec.static_dims, dtypes, packed

    def _spec(self, key: tuple) -> Specialization:
        for spec in self._kernel.compiled_variants:
            if self._key(spec) == key:
                return spec
        raise KeyError(key)

    def __getitem__(self, key: tuple) -> Any:
        return self._kernel.compiled_variants[self._spec(key)]

    def __setitem__(self, key: tuple, value: Any) -> None:
        raise TypeError("compiled variants are added by compiling (_ensure_compiled)")

    def __delitem__(self, key: tuple) -> None:
        del self._kernel.compiled_variants[self._spec(key)]

    def __iter__(self) -> Iterator[tuple]:
        return iter([self._key(s) for s in self._kernel.compiled_variants])

    def __len__(self) -> int:
        return len(self._kernel.compiled_variants)


class CachedCompile:
    """A kernel a backend can launch from its on-disk cache without compiling it: the
    attributes the backend's launch reads (`cached_launch`), plus `kernel_def`, `spec` and
    `name`. Reading anything else (`programs`, `passes`, `ir()`, ...) compiles the kernel
    through `JitKernel.compile` (memoised) and answers from the real compiled kernel."""

    def __init__(self, kernel: JitKernel, spec: Specialization, attrs: Mapping[str, Any]):
        self._kernel = kernel
        self.kernel_def = kernel.kernel_def
        self.spec = spec
        self.__dict__.update(attrs)

    @property
    def name(self) -> str:
        return self.kernel_def.options.name or self.kernel_def.name

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__") or attr == "_kernel":
            raise AttributeError(attr)
        return getattr(self._kernel._compile_spec(self.spec), attr)


def _check_block_dim(block_dim: Any) -> int:
    if isinstance(block_dim, bool) or not isinstance(block_dim, numbers.Integral) or (
            block_dim <= 0):
        raise InvalidArgument(f"block_dim must be a positive integer (got {block_dim!r})",
                              module="PRO_RUNTIME")
    return int(block_dim)
