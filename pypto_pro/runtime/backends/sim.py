"""The `sim` backend: runs a compiled kernel on the Ascend 950 simulator with CPU tensors.

Results are written straight into the argument tensors (as the NPU path would); the launch
returns a `Trace` of every instruction and stall, and the text each block printed.
"""
from __future__ import annotations

import dataclasses
import time
from typing import Any

import torch

from ...errors import InvalidArgument
from ...ir.types import PtrType, StructType, TensorType
from ...sim.launch import Launch
from ...sim.memory import GMRef
from ...sim.program import CompiledProgram, compile_function
from ...sim.soc import soc as make_soc
from ...trace.schema import EventLog, TraceMeta
from . import LaunchRequest, LaunchResult, register_backend


class SimBackend:
    name = "sim"

    def __init__(self, soc_name: str | None = None, functional_only: bool = False) -> None:
        self.soc = make_soc(soc_name) if soc_name else make_soc()
        self.functional_only = functional_only

    def launch(self, request: LaunchRequest) -> LaunchResult:
        compiled = request.compiled
        programs = _programs(compiled)
        params = {t: _param_values(p.function, request) for t, p in programs.items()}
        log = None if self.functional_only else EventLog()
        t0 = time.perf_counter()
        run = Launch(programs, compiled.kernel_type, request.block_dim, params, self.soc, log,
                     self.functional_only)
        blocks = run.run()
        wall = time.perf_counter() - t0
        printed = {}
        for b in blocks:
            text = "".join(line + "\n" for c in b.cores for line in c.printed)
            if text:
                printed[b.index] = text
        trace = None
        if log is not None:
            from ...trace.trace import Trace

            meta = TraceMeta(compiled.name, self.name, self.soc.name, self.soc.clock_mhz,
                             request.block_dim, compiled.kernel_type,
                             hbm_bytes_per_cycle=self.soc.hbm_bytes_per_s / self.soc.clock_hz,
                             extra=(("instructions", run.engine.instructions),
                                    ("wall_seconds", wall)))
            trace = Trace(log, meta)
        return LaunchResult(self.name, wall, trace, printed)


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


def _param_values(fn: Any, request: LaunchRequest) -> list[Any]:
    args = list(request.args)
    dyn = list(request.dyn_dims)
    values = []
    for i, p in enumerate(fn.params):
        if i < len(args):
            values.append(_param_value(p, args[i]))
        else:
            values.append(int(dyn[i - len(args)]))
    return values


def _param_value(p: Any, value: Any) -> Any:
    t = p.type
    if isinstance(t, TensorType):
        if value is None:
            return None
        _check_device(p.name, value)
        shape = tuple(int(s) for s in value.shape)
        return GMRef(value, shape, tuple(value.stride()), t.dtype)
    if isinstance(t, PtrType):
        if value is None:
            return None
        _check_device(p.name, value)
        return value, 0
    if isinstance(t, StructType):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    return value


def _check_device(name: str, value: torch.Tensor) -> None:
    if value.device.type != "cpu":
        raise InvalidArgument(f"'{name}': the simulator runs on CPU tensors, got a tensor on "
                              f"{value.device}", hint="pass tensor.cpu() or pick another backend")


register_backend("sim", SimBackend)
