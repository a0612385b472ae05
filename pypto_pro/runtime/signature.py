"""Kernel parameters from a Python signature (spec §1.2): annotation → `ParamSpec`.

Annotations are evaluated in the kernel's captured environment (they may be strings under
`from __future__ import annotations`). Kinds: `pl.Tensor[...]` (optionally inside
`pl.Input`/`pl.Output`) → "tensor", `pl.Ptr[...]` → "ptr", a `pl.DT_*` → "scalar", a
`@dataclass` TilingData class → "tiling" (only one, and last). The `datatype=` option marks
tensor/ptr/scalar parameters whose dtype a launch replaces. Also decides whether a function is a
kernel at all (`is_kernel_function`). Imports the language types, not the rest of the runtime.
"""
from __future__ import annotations

import builtins
import inspect
from collections import ChainMap
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import InvalidArgument, InvalidType, PyptoError
from ..ir.dtype import DataType
from ..language.types import DirectionSpec, PtrSpec, TensorSpec, TileSpec
from .kernel_def import JitOptions, ParamSpec
from .tiling_data import is_tiling_class, tiling_fields

#: annotation values that make a function a tile kernel (spec §1.1)
_KERNEL_MARKERS = (TensorSpec, PtrSpec, DirectionSpec, DataType)
_VARIADIC = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)


def default_env(fn: Callable) -> ChainMap:
    """The environment of a function without captured locals: its globals, then builtins."""
    return ChainMap(fn.__globals__, vars(builtins))


def evaluate_annotation(name: str, annotation: Any, env: Mapping[str, Any]) -> Any:
    """The value of a parameter annotation; strings are evaluated in `env`."""
    if annotation is inspect.Parameter.empty:
        raise InvalidType(f"kernel parameter '{name}' has no annotation; expected "
                          "pl.Tensor[...], pl.Ptr[...], a pl.DT_* dtype or a @dataclass",
                          module="PRO_RUNTIME")
    try:
        # A quoted annotation under `from __future__ import annotations` is a string twice.
        for _ in range(2):
            if isinstance(annotation, str):
                annotation = eval(annotation, {"__builtins__": builtins}, env)  # noqa: S307
        return annotation
    except PyptoError as e:
        raise type(e)(f"kernel parameter '{name}': {e.message}", hint=e.hint,
                      module="PRO_RUNTIME") from e
    except Exception as e:
        raise InvalidType(f"kernel parameter '{name}': cannot evaluate annotation "
                          f"{annotation!r}: {type(e).__name__}: {e}",
                          module="PRO_RUNTIME") from e


def evaluate_annotations(fn: Callable, env: Mapping[str, Any]) -> dict[str, Any]:
    """Each annotated parameter's annotation value, or the `PyptoError` evaluating it raised
    (decoration evaluates them once for `is_kernel_function` and `params_from_function`)."""
    out: dict[str, Any] = {}
    for p in inspect.signature(fn).parameters.values():
        if p.annotation is not inspect.Parameter.empty:
            try:
                out[p.name] = evaluate_annotation(p.name, p.annotation, env)
            except PyptoError as e:
                out[p.name] = e
    return out


def is_kernel_function(fn: Callable, env: Mapping[str, Any] | None = None,
                       evaluated: Mapping[str, Any] | None = None) -> bool:
    """True when some parameter is annotated pl.Tensor / pl.Ptr / pl.DT_* (or cannot be
    evaluated: the kernel path then reports the error); other functions are plain Python.
    `evaluated`: `evaluate_annotations(fn, env)` when the caller has it."""
    if evaluated is None:
        evaluated = evaluate_annotations(fn, default_env(fn) if env is None else env)
    return any(isinstance(v, (PyptoError, *_KERNEL_MARKERS)) for v in evaluated.values())


def params_from_function(fn: Callable, env: Mapping[str, Any], options: JitOptions,
                         evaluated: Mapping[str, Any] | None = None) -> tuple[ParamSpec, ...]:
    """The kernel's parameters, checked (spec §1.2), with `datatype=` variables attached.
    `evaluated`: `evaluate_annotations(fn, env)` when the caller has it."""
    params = []
    for index, p in enumerate(inspect.signature(fn).parameters.values()):
        if p.kind in _VARIADIC:
            raise InvalidType(f"kernel parameter '{p.name}': *args / **kwargs are not allowed "
                              "in a kernel signature", module="PRO_RUNTIME")
        if evaluated is None or p.name not in evaluated:
            value = evaluate_annotation(p.name, p.annotation, env)  # (none: raises)
        elif isinstance(value := evaluated[p.name], PyptoError):
            raise value
        params.append(_param(index, p.name, value))
    _check_tiling_position(params)
    return _attach_datatype(tuple(params), options.datatype)


def _param(index: int, name: str, value: Any) -> ParamSpec:
    if isinstance(value, DirectionSpec):
        return ParamSpec(index, name, "tensor", value.inner, direction=value.direction)
    if isinstance(value, TensorSpec):
        return ParamSpec(index, name, "tensor", value)
    if isinstance(value, PtrSpec):
        return ParamSpec(index, name, "ptr", value)
    if isinstance(value, DataType):
        return ParamSpec(index, name, "scalar", value)
    if is_tiling_class(value):
        tiling_fields(value)  # checks the field list now, not at the first launch
        return ParamSpec(index, name, "tiling", value)
    if isinstance(value, TileSpec):
        raise InvalidType(f"kernel parameter '{name}': pl.Tile annotations are for SIMT / "
                          "helper functions, not kernel parameters", module="PRO_RUNTIME")
    raise InvalidType(f"kernel parameter '{name}': unsupported annotation {value!r}; expected "
                      "pl.Tensor[...], pl.Ptr[...], a pl.DT_* dtype or a @dataclass TilingData",
                      module="PRO_RUNTIME")


def _check_tiling_position(params: list[ParamSpec]) -> None:
    tiling = [p for p in params if p.kind == "tiling"]
    if len(tiling) > 1:
        raise InvalidArgument(f"only one TilingData parameter is allowed, got "
                              f"{[p.name for p in tiling]}", module="PRO_RUNTIME")
    if tiling and tiling[0] is not params[-1]:
        raise InvalidArgument(f"TilingData parameter '{tiling[0].name}' must be the last "
                              "kernel parameter", module="PRO_RUNTIME")


def _attach_datatype(params: tuple[ParamSpec, ...],
                     datatype: Mapping[str, str] | None) -> tuple[ParamSpec, ...]:
    if not datatype:
        return params
    by_name = {p.name: p for p in params}
    for pname, var in datatype.items():
        p = by_name.get(pname)
        if p is None or p.kind == "tiling":
            raise InvalidArgument(
                f"datatype={dict(datatype)!r}: {pname!r} is not a tensor, ptr or scalar "
                f"parameter of the kernel (parameters: {list(by_name)})", module="PRO_RUNTIME")
        if not var.isidentifier() or var in by_name:
            raise InvalidArgument(f"datatype={dict(datatype)!r}: {var!r} must be an identifier "
                                  "that is not a parameter name", module="PRO_RUNTIME")
    return tuple(p.replace(dtype_var=datatype[p.name]) if p.name in datatype else p
                 for p in params)
