"""The backend registry, the choice of backend per launch, and the launch protocol.

Backends (DESIGN §1): `sim` (the Ascend 950 simulator), `native` (generated C++ built for the
host), `npu` (bisheng + torch_npu). Each lives in `pypto_pro.runtime.backends.<name>` and
registers itself on import with `register_backend(name, factory)`; the module is imported on
first use, so a missing one only fails when chosen (`RuntimeFailure`).

Protocol: a backend is any object with `name: str` and
`launch(request: LaunchRequest) -> LaunchResult`. The request holds the compiled kernel (what
`pypto_pro.compiler.compile_kernel` returned), `block_dim`, `stream` (None = the backend's
current stream), `args` (one entry per kernel parameter, in order: a `torch.Tensor`, None for a
null tensor/ptr, a Python int/float/bool for a scalar, the TilingData instance for the tiling
parameter), `dyn_dims` (the DYNAMIC dim values in first-occurrence order: parameter order, then
axis order, see `binding.dynamic_dims`) and `tiling_bytes` (the TilingData struct serialised with
native ctypes alignment, or None). `LaunchResult.printed` maps a block index to the text that
block printed; the jit layer echoes it to stdout, so backends must not print it themselves.

Choice (DESIGN §5): `use_backend(name)` for a block of code, else env `PYPTOPRO_BACKEND`
(`sim|native|npu`), else automatic: "npu" when torch_npu imports and an NPU is available, else
"sim". Must not import the compiler or any backend module at import time.
"""
from __future__ import annotations

import contextlib
import contextvars
import importlib
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from ...errors import InvalidArgument, RuntimeFailure
from ...frozen import Frozen
from ..arch import npu_available

ENV_BACKEND = "PYPTOPRO_BACKEND"
BUILTIN_BACKENDS: dict[str, str] = {
    "sim": "pypto_pro.runtime.backends.sim",
    "native": "pypto_pro.runtime.backends.native",
    "npu": "pypto_pro.runtime.backends.npu",
}


class LaunchRequest(Frozen):
    """Everything a backend needs to run one launch (see the module docstring)."""

    __slots__ = ("compiled", "block_dim", "stream", "args", "dyn_dims", "tiling_bytes")
    compiled: Any
    block_dim: int
    stream: Any
    args: tuple[Any, ...]
    dyn_dims: tuple[int, ...]
    tiling_bytes: bytes | None

    def __init__(self, compiled: Any, block_dim: int, stream: Any, args: tuple[Any, ...],
                 dyn_dims: tuple[int, ...] = (), tiling_bytes: bytes | None = None) -> None:
        self._init(compiled=compiled, block_dim=block_dim, stream=stream, args=args,
                   dyn_dims=dyn_dims, tiling_bytes=tiling_bytes)


class LaunchResult(Frozen):
    """What a launch produced: which backend ran it, how long it took on the host, its Trace
    (or None), the text printed per block, and the sanitizer's report (sanitized launches only)."""

    __slots__ = ("backend", "wall_seconds", "trace", "printed", "sanitizer")
    backend: str
    wall_seconds: float
    trace: Any
    printed: dict[int, str]
    sanitizer: Any  # pypto_pro.sanitizer.SanitizerReport of a sanitized launch

    def __init__(self, backend: str, wall_seconds: float, trace: Any = None,
                 printed: dict[int, str] | None = None, sanitizer: Any = None) -> None:
        self._init(backend=backend, wall_seconds=wall_seconds, trace=trace,
                   printed={} if printed is None else printed, sanitizer=sanitizer)


class Backend(Protocol):
    name: str

    def launch(self, request: LaunchRequest) -> LaunchResult: ...


_factories: dict[str, Callable[[], Backend]] = {}
_instances: dict[str, Backend] = {}
#: each built-in module's own factory, outside `_factories` (which tests swap for a copy): a
#: module first imported while a copy was in place (e.g. by a build thread) is still found
_builtin: dict[str, Callable[[], Backend]] = {}
_lock = threading.RLock()
_override: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "pypto_pro_backend", default=None)


def register_backend(name: str, factory: Callable[[], Backend]) -> None:
    """Register (or replace) the backend `name`; `factory()` builds it on first use."""
    if not isinstance(name, str) or not name:
        raise InvalidArgument(f"backend name must be a non-empty string, got {name!r}",
                              module="PRO_RUNTIME")
    with _lock:
        _factories[name] = factory
        _instances.pop(name, None)
        if getattr(factory, "__module__", None) == BUILTIN_BACKENDS.get(name):
            _builtin[name] = factory


def known_backends() -> tuple[str, ...]:
    """Built-in backend names, then any other registered ones."""
    extra = sorted(n for n in _factories if n not in BUILTIN_BACKENDS)
    return (*BUILTIN_BACKENDS, *extra)


def get_backend(name: str) -> Backend:
    """The backend instance registered as `name`, importing its module on first use."""
    with _lock:
        if name in _instances:
            return _instances[name]
        registered = name in _factories
    if not registered:
        # Outside the lock: the module registers itself under the lock, and another thread
        # (a simulator helper building in the background) may be importing it right now.
        _import_builtin(name)
    with _lock:
        if name not in _instances:
            _instances[name] = _factories[name]()
        return _instances[name]


def _import_builtin(name: str) -> None:
    module = BUILTIN_BACKENDS.get(name)
    if module is None:
        raise InvalidArgument(f"unknown backend {name!r}; known backends: "
                              f"{', '.join(known_backends())}", module="PRO_RUNTIME")
    try:
        imported = importlib.import_module(module)
    except ImportError as e:
        raise RuntimeFailure(f"backend {name!r} is not available: {module} cannot be imported "
                             f"({e})", module="PRO_RUNTIME") from e
    if name not in _factories and getattr(imported, "__name__", None) == module and \
            name in _builtin:
        _factories[name] = _builtin[name]
    if name not in _factories:
        raise RuntimeFailure(f"backend {name!r} is not available: {module} did not register it",
                             module="PRO_RUNTIME")


def current_backend_name() -> str:
    """The backend the next launch uses: `use_backend`, then env, then detection."""
    name = _override.get()
    if name is not None:
        return name
    env = os.environ.get(ENV_BACKEND, "").strip().lower()
    if env:
        if env not in BUILTIN_BACKENDS:
            raise InvalidArgument(
                f"{ENV_BACKEND}={os.environ[ENV_BACKEND]!r} is not a backend; allowed values: "
                f"{'|'.join(BUILTIN_BACKENDS)}", module="PRO_RUNTIME")
        return env
    return "npu" if npu_available() else "sim"


#: `mode=` of the simulator → its SimBackend options
SIM_MODES = {"timed": {}, "functional": {"functional_only": True},
             "timing": {"timing_only": True}}


@contextlib.contextmanager
def use_backend(name: str, *, soc: str | None = None, mode: str | None = None
                ) -> Iterator[str]:
    """Run the launches inside the `with` block on backend `name` (per thread / task).

    For the simulator, `soc` picks the SoC table ("950PR", "950DT", "910B1", ... any name of
    `pypto_pro.soc.list_socs()`) and `mode` what it computes: "timed" (values and a
    Trace, the default), "functional" (values only, no Trace) or "timing" (a Trace only, no
    values). The configured simulator is registered once as "sim@<soc>/<mode>" (without `soc`:
    "sim@default/<mode>", whose SoC follows env `PYPTOPRO_SIM_SOC`); the name is what the
    `with` block yields.
    """
    if soc is not None or mode is not None:
        name = _configured_sim(name, soc, mode)
    elif name not in BUILTIN_BACKENDS and name not in _factories:
        raise InvalidArgument(f"unknown backend {name!r}; known backends: "
                              f"{', '.join(known_backends())}", module="PRO_RUNTIME")
    token = _override.set(name)
    try:
        yield name
    finally:
        _override.reset(token)


def _configured_sim(name: str, soc: str | None, mode: str | None) -> str:
    """The registered name of a simulator with this SoC and mode (registered on first use;
    a bad SoC or mode fails here, before any launch)."""
    if name != "sim":
        raise InvalidArgument(f"soc= and mode= configure the simulator; backend {name!r} takes "
                              "neither", module="PRO_RUNTIME")
    mode = mode or "timed"
    if mode not in SIM_MODES:
        raise InvalidArgument(f"unknown simulator mode {mode!r}; modes: "
                              f"{', '.join(SIM_MODES)}", module="PRO_RUNTIME")
    from .sim import SimBackend

    try:
        backend = SimBackend(soc_name=soc, **SIM_MODES[mode])
    except ValueError as e:
        raise InvalidArgument(f"soc={soc!r}: {e}", module="PRO_RUNTIME") from None
    configured = f"sim@{backend.soc.name if soc else 'default'}/{mode}"
    with _lock:
        if configured not in _factories:
            _factories[configured] = lambda: backend
    return configured
