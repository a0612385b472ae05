"""A cell run's facts as records: its kernels, its launches, the output `--ref` checks.

Owns `kernel_records` (one `KernelRecord` per compiled variant of the cell's kernels and of the
kernels its launches ran), `launch_records` (one `LaunchRecord` per `pypto_pro.ProfiledLaunch`,
arguments summarised), `output_tensor` (the launch's `pl.Output` tensor, else its last tensor)
and `generate_code` (each variant's generated C++, `Compiled.artifacts`; a codegen failure is
shown in the CCE view, not raised). Reads only the public `pypto_pro` API.
"""
from __future__ import annotations

from typing import Any

from .progress import Progress
from .records import ArgInfo, KernelRecord, LaunchRecord, SourceInfo


def _arg_info(param: Any, value: Any) -> ArgInfo:
    import torch

    if isinstance(value, torch.Tensor):
        dtype = str(value.dtype).replace("torch.", "")
        return ArgInfo(param.name, param.kind, tuple(value.shape), dtype)
    if value is None:
        return ArgInfo(param.name, "none", value="None")
    return ArgInfo(param.name, param.kind, value=repr(value)[:60])


def output_tensor(launch: Any) -> tuple[str, Any] | None:
    """(name, tensor) of a launch's output: the `pl.Output` parameter, else the last tensor."""
    import torch

    pairs = [(p, v) for p, v in zip(launch.compiled.parameters, launch.args)
             if isinstance(v, torch.Tensor)]
    marked = [pv for pv in pairs if pv[0].output]
    chosen = (marked or pairs)[-1:]
    return (chosen[0][0].name, chosen[0][1]) if chosen else None


def launch_records(launches: list[Any]) -> list[LaunchRecord]:
    """The cell's launches in order, with their arguments."""
    out = []
    for launch in launches:
        result = launch.result
        args = tuple(_arg_info(p, v) for p, v in zip(launch.compiled.parameters, launch.args))
        out.append(LaunchRecord(launch.compiled.name, launch.block_dim, result.backend,
                                result.wall_seconds, args, result.trace, dict(result.printed),
                                compiled=launch.compiled,
                                sanitizer=getattr(result, "sanitizer", None)))
    return out


def kernel_records(kernels: list[Any], launches: list[Any], cached: set[int]
                   ) -> list[KernelRecord]:
    """One record per compiled variant of `kernels` and of what `launches` ran; `cached`: ids
    of the compiler's kernels served from the compile cache."""
    records, seen = [], set()
    for compiled in [v for k in kernels for v in k.variants] + [r.compiled for r in launches]:
        if id(compiled.kernel) not in seen:
            seen.add(id(compiled.kernel))
            records.append(KernelRecord(compiled.name, compiled, compiled.compile_seconds,
                                        id(compiled.kernel) in cached))
    return records


def generate_code(records: list[KernelRecord], source: SourceInfo, progress: Progress) -> bool:
    """Generate every record's C++; False when code generation is unavailable here."""
    for rec in records:
        with progress.stage(f"codegen {rec.name}"):
            try:
                rec.artifacts = rec.compiled.artifacts
            except ImportError:
                return False
            except Exception as e:  # noqa: BLE001  (shown in the CCE view, not fatal)
                rec.codegen_error = source.relabel(f"{type(e).__name__}: {e}")
    return True
