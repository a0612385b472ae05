"""The `sim` backend: runs a compiled kernel on the Ascend 950 simulator with CPU tensors.

Results are written straight into the argument tensors (as the NPU path would); the launch
returns a `Trace` of every instruction and stall, and the text each block printed.

Choosing the SoC and the mode. The registered "sim" backend is `SimBackend()`: it takes its
SoC from env `PYPTOPRO_SIM_SOC` (a name or alias from `pypto_pro.soc.list_socs()`, e.g.
"910B1", "950DT"; read at every launch) and falls back to the default 950PR. A configured
instance — `SimBackend(soc_name="910B1")`, `SimBackend(soc=pypto_pro.soc.soc("910B1",
clock_mhz=1800))` for a table with overrides (what-if studies), `SimBackend(functional_only=True)`
— is registered under a new name and selected with `use_backend` for a block of code:

    register_backend("sim-910b1", lambda: SimBackend(soc_name="Ascend910B1"))
    with use_backend("sim-910b1"):
        kernel[None, 24](a, b, c)

`functional_only=True` computes the values but records no timing (no Trace; HBM sharing off).
`cache=False` (or env `PYPTOPRO_SIM_CACHE=off` for the default `cache=None`) turns every
relaunch cache off: each launch runs as the first launch in a new process does, which is the
oracle the caches are tested against (`pypto_pro.sim.settings`).
`timing_only=True` is the opposite, for performance studies of large problems: the op library
is skipped, so the Trace is complete but no output is written and scalar reads of tile or GM
data (`getval`) see whatever the memory held — use it only for kernels whose control flow does
not depend on data values.
Tile ops run torch on small tensors, where intra-op threads only add synchronisation cost
(and, on a loaded machine, OpenMP spin-waits of milliseconds per op), so a launch runs torch
single-threaded (`torch_threads`, default 1; None keeps the process setting) and restores the
thread count afterwards. Python's cyclic garbage collector is paused during a launch for the
same reason (it only rescans live objects there) and resumed after it, with what the launch
made aged at once (`pypto_pro.gcpause`). A relaunch's tape runs
the blocks' independent work in two lanes, the second on one worker thread (`sim.fast.lanes`; env
`PYPTOPRO_SIM_LANES=1` keeps one lane on a shared machine).

Sanitized launches (`@pl.jit(sanitizer=True)`, `pypto_pro.sanitizer.sanitize()`, env
`PYPTOPRO_SANITIZER=1`) run with the sanitizer observing the engine; its report is returned in
`LaunchResult.sanitizer` and printed after the launch. A launch that fails anyway (deadlock,
double set_flag) carries the report in the exception's `sanitizer` attribute.
"""
from __future__ import annotations

import functools
import sys
import time
from collections import OrderedDict
from typing import Any

import torch

from ...errors import DeadlockError, InvalidArgument, PyptoError
from ...gcpause import paused_gc
from ...ir.types import PtrType, StructType, TensorType
from ...sim import settings
from ...sim.launch import Launch
from ...sim.pools import Pools
from ...sim.model.memory import GMRef
from ...sim.frontend.program import CompiledProgram, compile_function
from ...soc import SoC
from ...soc import soc as make_soc
from ...trace.schema import EventLog, TraceMeta
from ...trace.trace import Trace
from ..tiling_data import stored_fields
from . import LaunchRequest, LaunchResult, register_backend

#: the largest block_dim a launch accepts (the ACL kernel launch limit): the simulator keeps
#: state per block, so an absurd block_dim must fail fast instead of exhausting memory
MAX_BLOCK_DIM = 65535


class SimBackend:
    name = "sim"

    def __init__(self, soc_name: str | None = None, functional_only: bool = False,
                 torch_threads: int | None = 1, soc: SoC | None = None,
                 timing_only: bool = False, cache: bool | None = None) -> None:
        if soc is not None and soc_name is not None:
            raise InvalidArgument("SimBackend: pass soc_name or soc, not both",
                                  module="PRO_RUNTIME")
        if functional_only and timing_only:
            raise InvalidArgument("SimBackend: functional_only and timing_only exclude each other",
                                  module="PRO_RUNTIME")
        self.timing_only = timing_only
        self.cache = cache  # None: env PYPTOPRO_SIM_CACHE at each launch
        self.pools = Pools()  # the idle memories of this backend's finished launches
        self.soc_name = soc_name if soc is None else soc.name
        self.functional_only = functional_only
        self.torch_threads = torch_threads
        self._fixed_soc = soc if soc is not None else (make_soc(soc_name) if soc_name else None)

    @property
    def soc(self) -> SoC:
        """The SoC of the next launch: `soc` / `soc_name`, else env PYPTOPRO_SIM_SOC, else
        the default 950PR."""
        if self._fixed_soc is not None:
            return self._fixed_soc
        env = settings.soc_name()
        found = _ENV_SOCS.get(env)
        if found is None:
            name = env.strip()
            try:
                found = _ENV_SOCS[env] = make_soc(name) if name else make_soc()
            except ValueError as e:
                raise InvalidArgument(f"{settings.SOC}={name!r}: {e}",
                                      module="PRO_RUNTIME") from None
        return found

    def launch(self, request: LaunchRequest) -> LaunchResult:
        threads = torch.get_num_threads()
        single = self.torch_threads is not None and threads != self.torch_threads
        if single:
            torch.set_num_threads(self.torch_threads)
        # A launch allocates millions of short-lived acyclic objects (instructions, events,
        # closures) that only trigger collections; `Launch.release` breaks its cycles (cores
        # <-> pipes, launch callbacks), so its object graph dies by refcount, not in a GC pass.
        try:
            with paused_gc():
                return self._launch(request)
        finally:
            if single:
                torch.set_num_threads(threads)

    def _launch(self, request: LaunchRequest) -> LaunchResult:
        if request.block_dim > MAX_BLOCK_DIM:
            raise InvalidArgument(f"block_dim {request.block_dim} exceeds the launch limit "
                                  f"{MAX_BLOCK_DIM}", module="PRO_RUNTIME",
                                  hint="split the work into fewer, larger blocks")
        soc = self.soc
        cache = settings.cache() if self.cache is None else self.cache
        compiled = request.compiled
        programs = _programs(compiled)
        views = _gm_views(compiled)
        params = {t: _param_values(p.function, request, views.setdefault(t, {}) if cache else {})
                  for t, p in programs.items()}
        log = None if self.functional_only else EventLog()
        sanitizer = self._sanitizer(compiled)
        t0 = time.perf_counter()
        run = Launch(programs, compiled.kernel_type, request.block_dim, params, soc, log,
                     self.functional_only, self.timing_only, sanitizer,
                     self.pools if cache else None)
        try:
            blocks = run.run()
            report = sanitizer.finish(run) if sanitizer is not None else None
        except PyptoError as err:
            if sanitizer is not None:
                if isinstance(err, DeadlockError):
                    sanitizer.deadlocked(run.engine)
                err.sanitizer = sanitizer.close()  # no end-of-kernel checks: it never ended
                _print_report(err.sanitizer)
            raise
        finally:  # a failed or interrupted launch too: its memories back to the pool, no cycles
            run.release()
        if report is not None:
            _print_report(report)
        wall = time.perf_counter() - t0
        printed = {}
        for b in blocks:
            texts = [text for c in b.cores for text in c.printed]
            if texts:
                printed[b.index] = "".join(texts)
        trace = None
        if log is not None:
            meta = TraceMeta(compiled.name, self.name, soc.name, soc.clock_mhz,
                             request.block_dim, compiled.kernel_type,
                             hbm_bytes_per_cycle=soc.hbm_bytes_per_s / soc.clock_hz,
                             extra=(("instructions", run.engine.instructions),
                                    ("wall_seconds", wall), ("path", ", ".join(run.path))))
            trace = Trace(log, meta)
            trace.sanitizer = report
        return LaunchResult(self.name, wall, trace, printed, report)

    def _sanitizer(self, compiled: Any) -> Any:
        sanitizer = _sanitizer_module()
        options = getattr(getattr(compiled, "kernel_def", None), "options", None)
        if not sanitizer.sanitizer_enabled(options):
            return None
        if self.timing_only:
            raise InvalidArgument("the sanitizer needs the values: it cannot run on a "
                                  "timing_only simulator", module="PRO_RUNTIME")
        return sanitizer.Sanitizer(compiled.name, getattr(compiled, "programs", None))


#: env PYPTOPRO_SIM_SOC value → its SoC (the tables are immutable: `soc()` returns the same one)
_ENV_SOCS: dict[str, SoC] = {}


@functools.cache
def _sanitizer_module() -> Any:
    """`pypto_pro.sanitizer`, imported on the first launch (not with the backend: it is large);
    an import statement per launch costs a few µs."""
    from ... import sanitizer

    return sanitizer


def _print_report(report: Any) -> None:
    sys.stdout.write(f"===== kernel '{report.kernel}' (sim) =====\n{report.text()}")


def _programs(compiled: Any) -> dict[str, CompiledProgram]:
    """Closures are built once per compiled kernel and kept on it."""
    cached = getattr(compiled, "_sim_programs", None)
    if cached is None:
        cached = {}
        for target, program in compiled.programs.items():
            funcs = {f.name: f for f in program.functions}
            cached[target] = compile_function(program.kernel, funcs)
        compiled._sim_programs = cached
    return cached


#: parameter index → (the GMRef of the last launch's tensor, what it was made from)
_GMViews = dict[int, tuple[GMRef, tuple]]

#: kernel name → target → the GM views of its last launch, most recent name last. Kept by name,
#: not on the compiled kernel, so that a kernel decorated again (an edited notebook cell) and
#: launched on the same tensors finds their GMRefs with the GM windows, lines and plans they
#: memoise (half of a new 4096-tile launch's recording). A GMRef is checked against the tensor
#: before it is reused, so kernels sharing a name only share what is the same.
_GM_VIEWS: OrderedDict[str, dict[str, _GMViews]] = OrderedDict()
_GM_VIEWS_NAMES = 32  # (each keeps its last tensors alive)


def _gm_views(compiled: Any) -> dict[str, _GMViews]:
    """target → the GM views of the last launch of a kernel named as `compiled` (`_gm_view`)."""
    name = compiled.name
    views = _GM_VIEWS.get(name)
    if views is None:
        views = _GM_VIEWS[name] = {}
        if len(_GM_VIEWS) > _GM_VIEWS_NAMES:
            _GM_VIEWS.popitem(last=False)
    else:
        _GM_VIEWS.move_to_end(name)
    return views


def _param_values(fn: Any, request: LaunchRequest, views: _GMViews) -> list[Any]:
    args = list(request.args)
    dyn = list(request.dyn_dims)
    values = []
    for i, p in enumerate(fn.params):
        if i < len(args):
            values.append(_param_value(p, args[i], views, i, request.tiling_bytes))
        else:
            values.append(int(dyn[i - len(args)]))
    return values


def _param_value(p: Any, value: Any, views: _GMViews, index: int,
                 tiling: bytes | None) -> Any:
    t = p.type
    if isinstance(t, TensorType):
        if value is None:
            return None
        return _gm_view(p.name, value, t.dtype, views, index)
    if isinstance(t, PtrType):
        if value is None:
            return None
        _check_device(p.name, value)
        return value, 0
    if isinstance(t, StructType):
        return stored_fields(type(value), tiling)  # what the kernel reads from the bytes
    return value


def _gm_view(name: str, value: torch.Tensor, dtype: Any, views: _GMViews,
             index: int) -> GMRef:
    """The GMRef of tensor argument `value`. The kernel addresses it as the real runtime
    hands it over: a pointer to its first element (`data_ptr()`), read row-major in the
    parameter's shape whatever the tensor's strides (a transposed or column-sliced view reads
    the storage behind it, as on the NPU and the native backend). A relaunch with the same
    tensor, unchanged in shape, strides and storage, gets the last launch's GMRef back: the
    typed views and window plans it memoises cost more than a small launch's simulation. The
    GMRef keeps the tensor alive until a launch of a kernel of this name passes another one."""
    shape, strides, where = tuple(value.shape), value.stride(), _storage_key(value)
    last = views.get(index)
    if last is not None:
        gm, key = last
        if gm.tensor is value and key == (shape, strides, dtype, where):
            return gm
    _check_device(name, value)
    gm = GMRef(value, shape, None, dtype)  # (row-major strides: see above)
    views[index] = gm, (shape, strides, dtype, where)
    return gm


def _storage_key(value: torch.Tensor) -> tuple[int, int, int]:
    """Where the tensor's storage is and how large: `set_` / `resize_` change one of them."""
    return value.data_ptr(), value.storage_offset(), value.untyped_storage().nbytes()


def _check_device(name: str, value: torch.Tensor) -> None:
    if value.device.type != "cpu":
        raise InvalidArgument(f"'{name}': the simulator runs on CPU tensors, got a tensor on "
                              f"{value.device}", hint="pass tensor.cpu() or pick another backend")


register_backend("sim", SimBackend)
