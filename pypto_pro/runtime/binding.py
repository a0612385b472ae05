"""Launch arguments → checked values, the `Specialization` and the DYNAMIC dims (spec §1.2, §1.4).

`bind` binds the call to the Python signature (keywords, defaults), checks every argument with
the spec's messages (`arg[i] 'name': dtype mismatch — expected ..., got ...`), and computes what
the launch fixes at compile time: STATIC and ellipsis dims, ellipsis ranks (plus the tiling key,
datatype and arch it is given). DYNAMIC dims never specialise; each (param, axis) is its own
trailing `__pypto_dyn_<param>_<axis>` value, in the order `dynamic_dims` defines (the compiler
uses the same helper). Tensors may live on the CPU (sim/native) or an NPU; other devices are
refused. Imports torch, the language types and the tiling helpers; nothing from backends.
"""
from __future__ import annotations

import ctypes
import inspect
import warnings
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from ..errors import InvalidArgument, InvalidShape, InvalidType, OutOfRange
from ..frozen import Frozen
from ..ir.dtype import DataType
from ..language.types import DYNAMIC, STATIC
from .kernel_def import KernelDef, ParamSpec, Specialization
from .tiling_data import to_bytes

SUPPORTED_DEVICES = ("cpu", "npu")
#: scalar dtypes with a ctypes mapping (FP32 → c_float, ints, BOOL, INDEX → c_int64)
_CTYPE_SCALARS = frozenset({
    DataType.FP32, DataType.BOOL, DataType.INDEX,
    DataType.INT8, DataType.INT16, DataType.INT32, DataType.INT64,
    DataType.UINT8, DataType.UINT16, DataType.UINT32, DataType.UINT64,
})
_INT32_MAX = (1 << 31) - 1


class BoundLaunch(Frozen):
    """A checked call: the full specialisation and the `LaunchRequest` argument parts."""

    __slots__ = ("spec", "args", "dyn_dims", "tiling_bytes")
    spec: Specialization
    args: tuple[Any, ...]
    dyn_dims: tuple[int, ...]
    tiling_bytes: bytes | None

    def __init__(self, spec: Specialization, args: tuple[Any, ...], dyn_dims: tuple[int, ...],
                 tiling_bytes: bytes | None) -> None:
        self._init(spec=spec, args=args, dyn_dims=dyn_dims, tiling_bytes=tiling_bytes)


def dynamic_dims(params: Sequence[ParamSpec],
                 spec: Specialization | None = None) -> list[tuple[int, int, str]]:
    """`(param_index, axis, name)` of every DYNAMIC axis: parameter order, then axis order.

    `spec` is accepted so callers can pass the launch's specialisation; DYNAMIC axes are fixed
    by the annotations alone, so it does not change the result.
    """
    return [(p.index, axis, f"__pypto_dyn_{p.name}_{axis}")
            for p in params if p.kind == "tensor"
            for axis, d in enumerate(p.spec.dims) if d is DYNAMIC]


def resolve_datatype(params: Sequence[ParamSpec],
                     given: Any) -> tuple[tuple[str, DataType], ...]:
    """Check a launch's datatype dict `{param_name: pl.DT_x}`; returns `((var, dtype), ...)`."""
    if not isinstance(given, Mapping):
        raise InvalidArgument(f"datatype must be a dict {{param_name: pl.DT_x}}, got "
                              f"{type(given).__name__}", module="PRO_RUNTIME")
    declared = {p.name: p.dtype_var for p in params if p.dtype_var}
    unknown = [k for k in given if k not in declared]
    missing = [k for k in declared if k not in given]
    if unknown or missing:
        raise InvalidArgument(f"datatype dict must name exactly {sorted(declared)}; unknown: "
                              f"{unknown}, missing: {missing}", module="PRO_RUNTIME")
    chosen: dict[str, DataType] = {}
    for pname, var in declared.items():
        dtype = given[pname]
        if not isinstance(dtype, DataType):
            raise InvalidType(f"datatype[{pname!r}] must be a pl.DT_* dtype, got {dtype!r}",
                              module="PRO_RUNTIME")
        if chosen.setdefault(var, dtype) is not dtype:
            raise InvalidArgument(f"datatype: parameters sharing {var!r} disagree "
                                  f"({chosen[var]!r} vs {dtype!r} for {pname!r})",
                                  module="PRO_RUNTIME")
    return tuple(sorted(chosen.items()))


def bind(kdef: KernelDef, args: Sequence[Any], kwargs: Mapping[str, Any],
         launch: Specialization) -> BoundLaunch:
    """Check one call of `kdef`; `launch` carries the arch, tiling key and datatype it fixes.

    A None tensor / ptr is a null pointer: its DYNAMIC dims pass 0 (a tensor with STATIC or
    ellipsis dims cannot be None: nothing would fix them).
    """
    values = _bind_signature(kdef, args, kwargs)
    dtypes = dict(launch.datatype)
    static: list[tuple[int, int, int]] = []
    ranks: list[tuple[int, int]] = []
    dyn: list[int] = []  # DYNAMIC dims in `dynamic_dims` order
    out: list[Any] = []
    tiling_bytes = None
    for p, value in zip(kdef.params, values):
        dtype = _param_dtype(p, dtypes)
        if p.kind == "tensor":
            _bind_tensor(p, value, dtype, static, ranks, dyn)
        elif p.kind == "ptr":
            _check_tensor_value(p, value, None)
        elif p.kind == "scalar":
            value = _scalar(p, value, dtype)
        else:
            _check_tiling(p, value)
            tiling_bytes = to_bytes(value)
        out.append(value)
    return BoundLaunch(_specialized(launch, tuple(static), tuple(ranks)), tuple(out), tuple(dyn),
                       tiling_bytes)


#: (launch specialisation, static dims, ranks) → the full one: a kernel launched again with the
#: same shapes gets the same object (cheaper than a new one, and found by identity in the
#: kernel's compile memo); bounded, for shape sweeps
_SPECIALIZED: dict[tuple, Specialization] = {}
_SPECIALIZED_MAX = 1024


def _specialized(launch: Specialization, static: tuple, ranks: tuple) -> Specialization:
    key = (launch, static, ranks)
    spec = _SPECIALIZED.get(key)
    if spec is None:
        if len(_SPECIALIZED) >= _SPECIALIZED_MAX:
            _SPECIALIZED.clear()
        spec = _SPECIALIZED[key] = Specialization(launch.arch, static, ranks, launch.tiling_key,
                                                  launch.datatype)
    return spec


def _param_dtype(p: ParamSpec, chosen: Mapping[str, DataType]) -> DataType | None:
    """The dtype a tensor / ptr / scalar argument must have at this launch (None: tiling)."""
    if p.dtype_var:
        return chosen[p.dtype_var]
    if p.kind == "scalar":
        return p.spec
    return p.spec.dtype if p.kind in ("tensor", "ptr") else None


def _bind_signature(kdef: KernelDef, args: Sequence[Any],
                    kwargs: Mapping[str, Any]) -> tuple[Any, ...]:
    signature, positional = _signature(kdef.fn)
    if positional and not kwargs and len(args) == len(signature.parameters):
        return tuple(args)  # what binding returns, without building a BoundArguments
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as e:
        raise InvalidType(f"kernel '{kdef.name}': wrong arguments — {e} (parameters: "
                          f"{[p.name for p in kdef.params]})", module="PRO_RUNTIME") from e
    bound.apply_defaults()
    return tuple(bound.arguments[p.name] for p in kdef.params)


#: kernel function → (its signature, every parameter passable by position): computing the
#: signature costs more than a small launch
_SIGNATURES: weakref.WeakKeyDictionary[Any, tuple[inspect.Signature, bool]] = \
    weakref.WeakKeyDictionary()


def _signature(fn: Any) -> tuple[inspect.Signature, bool]:
    found = _SIGNATURES.get(fn)
    if found is None:
        sig = inspect.signature(fn)
        found = _SIGNATURES[fn] = (sig, all(p.kind is p.POSITIONAL_OR_KEYWORD
                                            for p in sig.parameters.values()))
    return found


def _where(p: ParamSpec) -> str:
    return f"arg[{p.index}] '{p.name}'"


def _check_tensor_value(p: ParamSpec, value: Any, dtype: DataType | None) -> None:
    """Type, device and (when `dtype` is given and checked) dtype of a tensor / ptr argument."""
    if value is None:
        return
    if not isinstance(value, torch.Tensor):
        raise InvalidType(f"{_where(p)}: type mismatch — expected torch.Tensor (or None), got "
                          f"{type(value).__name__}", module="PRO_RUNTIME")
    if not value.is_cpu and value.device.type not in SUPPORTED_DEVICES:
        raise InvalidArgument(f"{_where(p)}: tensor on unsupported device "
                              f"'{value.device.type}'; expected one of {SUPPORTED_DEVICES}",
                              module="PRO_RUNTIME")
    want = None if dtype is None else _torch_dtype(dtype)
    if want is not None and value.dtype != want:
        raise InvalidType(f"{_where(p)}: dtype mismatch — expected {want} ({dtype!r}), got "
                          f"{value.dtype}", module="PRO_RUNTIME")


#: DataType → the torch dtype a tensor argument must have (`DataType.torch_dtype`, remembered:
#: a launch checks every tensor)
_TORCH_DTYPES: dict[DataType, Any] = {}


def _torch_dtype(dtype: DataType) -> Any:
    try:
        return _TORCH_DTYPES[dtype]
    except KeyError:
        return _TORCH_DTYPES.setdefault(dtype, dtype.torch_dtype)


def _warn_layout(p: ParamSpec, value: torch.Tensor) -> None:
    """A non-contiguous tensor argument reaches the kernel as the NPU gets it (its storage read
    row-major from `data_ptr()`), which is seldom what a transposed or sliced view means."""
    warnings.warn(f"{_where(p)}: a non-contiguous tensor (shape {tuple(value.shape)}, strides "
                  f"{value.stride()}) reaches the kernel as the NPU gets it: its storage read "
                  f"row-major from data_ptr(), not its logical elements; pass .contiguous() "
                  f"for those", UserWarning, stacklevel=2)


def _bind_tensor(p: ParamSpec, value: Any, dtype: DataType, static: list, ranks: list,
                 dyn: list) -> None:
    """Shape errors are `InvalidShape` (a ValueError), type and dtype errors `InvalidType`,
    as the real runtime's shape binding and argument checks raise them."""
    _check_tensor_value(p, value, dtype)
    dims = p.spec.dims
    if value is None:  # a null pointer passes 0 for its DYNAMIC dims
        if any(d is STATIC or d is Ellipsis for d in dims):
            raise InvalidShape(f"{_where(p)}: None cannot bind the STATIC / ellipsis dims of "
                               f"{p.spec.dims!r}; pass a tensor", module="PRO_RUNTIME")
        dyn.extend(0 for d in dims if d is DYNAMIC)
        return
    if not value.is_contiguous():
        _warn_layout(p, value)
    ellipsis = bool(dims) and dims[-1] is Ellipsis
    rank, explicit = value.dim(), len(dims) - ellipsis
    if rank < explicit or (rank != explicit and not ellipsis):
        want = f"rank >= {explicit}" if ellipsis else f"{explicit}"
        raise InvalidShape(f"{_where(p)}: rank mismatch — expected {want}, got {rank} "
                           f"(shape {tuple(value.shape)})", module="PRO_RUNTIME")
    for axis, size in enumerate(value.shape):
        if size <= 0:
            raise InvalidShape(f"{_where(p)}: axis {axis} must be positive, got {size} "
                               f"(shape {tuple(value.shape)})", module="PRO_RUNTIME")
        d = dims[axis] if axis < explicit else STATIC
        if d is DYNAMIC:
            if size > _INT32_MAX:
                raise OutOfRange(f"{_where(p)}: dynamic dim {axis} = {size} does not fit the "
                                 "int32 launch argument", module="PRO_RUNTIME")
            dyn.append(int(size))
        elif d is STATIC:
            static.append((p.index, axis, int(size)))
        elif size != d:
            raise InvalidShape(f"{_where(p)}: dim mismatch — axis {axis} expected {d}, got "
                               f"{size} (shape {tuple(value.shape)})", module="PRO_RUNTIME")
    if ellipsis:
        ranks.append((p.index, rank))


def _scalar(p: ParamSpec, value: Any, dtype: DataType) -> int | float | bool:
    """Check a scalar argument as the real runtime's `_validate_scalar_arg` does (a Python
    int / float / bool; a bool passes for BOOL and integer dtypes, an int only for integer
    dtypes, a float only for float dtypes) and return the value its ctypes conversion hands
    the kernel (ints wrap to the dtype's width, FP32 rounds to single precision)."""
    if dtype not in _CTYPE_SCALARS:
        raise InvalidType(f"{_where(p)}: No ctypes mapping for scalar dtype {dtype!r}; "
                          "FP16/BF16 scalars are not supported.", module="PRO_RUNTIME")
    if not isinstance(value, (int, float)):  # (bool is an int)
        raise InvalidType(f"{_where(p)}: dtype mismatch — expected Python scalar "
                          f"(int/float/bool) for {dtype!r}, got {type(value).__name__}",
                          module="PRO_RUNTIME")
    if isinstance(value, bool):
        if dtype is DataType.BOOL or dtype.is_int:
            return value if dtype is DataType.BOOL else int(value)
        what = "bool value passed for non-boolean/non-integer dtype"
    elif isinstance(value, int):
        if dtype.is_int:
            return _wrapped(int(value), dtype)
        what = "int value passed for non-integer dtype"
    else:
        if dtype.is_float:
            return ctypes.c_float(value).value
        what = "float value passed for non-float dtype"
    raise InvalidType(f"{_where(p)}: dtype mismatch — expected {_scalar_kind(dtype)} for "
                      f"{dtype!r}, got {type(value).__name__} {value!r} ({what})",
                      module="PRO_RUNTIME")


def _scalar_kind(dtype: DataType) -> str:
    if dtype is DataType.BOOL:
        return "a bool"
    return "a float" if dtype.is_float else "an int (or bool)"


def _wrapped(value: int, dtype: DataType) -> int:
    """An int scalar as the real runtime passes it (a ctypes integer of the dtype's width: no
    range check, the bits wrap; `3212836864` for an INT32 parameter is 0xBF800000, -1082130432)."""
    if dtype is DataType.INDEX:
        dtype = DataType.INT64
    bits = dtype.bits
    value &= (1 << bits) - 1
    return value - (1 << bits) if dtype.kind == "int" and value >> (bits - 1) else value


def _check_tiling(p: ParamSpec, value: Any) -> None:
    if not isinstance(value, p.spec):
        raise InvalidType(f"{_where(p)}: type mismatch — expected a {p.spec.__name__} "
                          f"instance, got {type(value).__name__}", module="PRO_RUNTIME")
