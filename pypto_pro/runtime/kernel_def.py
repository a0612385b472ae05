"""What the runtime hands the compiler: the kernel's source, its parameters, its specialisation.

`KernelDef` is built once at decoration (`pl.kernel` returns one; `pl.jit` wraps one).
`Specialization` is everything a launch fixes at compile time (spec §1.4): static dims, the
tiling key, the datatype mapping, the arch. The compiler (`pypto_pro.compiler`) reads both.
"""
from __future__ import annotations

import ast
from collections import ChainMap
from typing import Any, Callable

from ..frozen import Frozen
from ..ir.dtype import DataType


class ParamSpec(Frozen):
    """One kernel parameter. `kind`: "tensor" | "ptr" | "scalar" | "tiling".

    `spec` is a `TensorSpec` (tensor), `PtrSpec` (ptr), a `DataType` (scalar) or the TilingData
    dataclass (tiling). `dtype_var` names the `datatype=` variable that replaces the dtype.
    """

    __slots__ = ("index", "name", "kind", "spec", "dtype_var", "direction")
    index: int
    name: str
    kind: str
    spec: Any
    dtype_var: str | None
    direction: str | None  # "input" / "output" from pl.Input / pl.Output

    def __init__(self, index: int, name: str, kind: str, spec: Any,
                 dtype_var: str | None = None, direction: str | None = None) -> None:
        self._init(index=index, name=name, kind=kind, spec=spec, dtype_var=dtype_var,
                   direction=direction)


class JitOptions(Frozen):
    """The options of `@pl.jit(...)` (spec §1.1), normalised."""

    __slots__ = ("arch", "auto_mutex", "name", "pipeline", "tiling_key", "datatype",
                 "compile_timeout", "sanitizer")
    arch: str | None
    auto_mutex: bool
    name: str | None
    pipeline: Any  # PipelineConfig | None
    tiling_key: Any  # the tiling-key class | None
    datatype: dict[str, str] | None
    compile_timeout: int | None
    sanitizer: bool

    def __init__(self, arch: str | None = None, auto_mutex: bool = True, name: str | None = None,
                 pipeline: Any = None, tiling_key: Any = None,
                 datatype: dict[str, str] | None = None, compile_timeout: int | None = None,
                 sanitizer: bool = False) -> None:
        self._init(arch=arch, auto_mutex=auto_mutex, name=name, pipeline=pipeline,
                   tiling_key=tiling_key, datatype=datatype, compile_timeout=compile_timeout,
                   sanitizer=sanitizer)

    def cache_fields(self) -> tuple:
        pipe = None if self.pipeline is None else (self.pipeline.preload, self.pipeline.sync_only)
        tk = None if self.tiling_key is None else self.tiling_key.__qualname__
        return (self.arch, self.auto_mutex, self.name, pipe, tk,
                tuple(sorted((self.datatype or {}).items())), self.sanitizer)


class KernelDef(Frozen):
    """A kernel function ready to parse: source, AST, where it lives, what it can see
    (unhashable: `env` is a live mapping)."""

    __slots__ = ("fn", "name", "tree", "file", "env", "params", "options", "source")
    fn: Callable
    name: str
    tree: ast.FunctionDef  # line numbers already shifted to the real file's lines
    file: str
    env: ChainMap  # captured caller locals, then the function's globals (live), then builtins
    params: tuple[ParamSpec, ...]
    options: JitOptions
    source: str  # dedented source of the function (for hashing and display)

    def __init__(self, fn: Callable, name: str, tree: ast.FunctionDef, file: str, env: ChainMap,
                 params: tuple[ParamSpec, ...], options: JitOptions | None = None,
                 source: str = "") -> None:
        self._init(fn=fn, name=name, tree=tree, file=file, env=env, params=params,
                   options=JitOptions() if options is None else options, source=source)


class Specialization(Frozen):
    """Compile-time facts of one launch.

    `static_dims`: ((param_index, axis, value), ...) for STATIC / ellipsis axes;
    `ranks`: ((param_index, rank), ...) for tensors whose rank comes from a trailing `...`;
    `tiling_key`: field name → value; `datatype`: dtype variable name → DataType.
    """

    __slots__ = ("arch", "static_dims", "ranks", "tiling_key", "datatype")
    arch: str
    static_dims: tuple[tuple[int, int, int], ...]
    ranks: tuple[tuple[int, int], ...]
    tiling_key: tuple[tuple[str, Any], ...]
    datatype: tuple[tuple[str, DataType], ...]

    def __init__(self, arch: str = "a5", static_dims: tuple[tuple[int, int, int], ...] = (),
                 ranks: tuple[tuple[int, int], ...] = (),
                 tiling_key: tuple[tuple[str, Any], ...] = (),
                 datatype: tuple[tuple[str, DataType], ...] = ()) -> None:
        self._init(arch=arch, static_dims=static_dims, ranks=ranks, tiling_key=tiling_key,
                   datatype=datatype)

    def static_dim(self, param: int, axis: int) -> int | None:
        for p, a, v in self.static_dims:
            if p == param and a == axis:
                return v
        return None

    def rank(self, param: int) -> int | None:
        return dict(self.ranks).get(param)

    def constants(self) -> dict[str, Any]:
        """Names the kernel body sees as compile-time constants (tiling-key fields, dtypes)."""
        return {**dict(self.tiling_key), **dict(self.datatype)}
