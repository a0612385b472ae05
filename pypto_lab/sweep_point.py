"""One point of a sweep: build the kernel, run it on the simulator, check it, summarise it.

Owns `Launch` (a kernel with how to launch it: block dim, tiling key, datatype), `PointSpec`
(everything a worker needs, picklable by reference: the user's `make_kernel` / `inputs` /
`reference` must be importable module-level functions when the executor is another process
that does not fork) and `run_point`, which never raises for a bad point: compile errors,
simulation errors and wrong results come back as a row with `status` and `error`, so a sweep
keeps going. Runs in worker processes, so it imports only what a point needs.
"""
from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

#: status of a point: ran and matched (or no reference), ran with a wrong result, failed
STATUSES = ("ok", "wrong", "error")


@dataclass(frozen=True)
class Launch:
    """A kernel plus its launch: `kernel[None, block_dim(, tiling_key)(, datatype)](*args)`."""

    kernel: Any
    block_dim: int = 1
    tiling_key: Any = None
    datatype: Any = None

    @classmethod
    def of(cls, made: Any) -> Launch:
        """What `make_kernel` returned: a Launch, a kernel, or (kernel, block_dim[, tk[, dt]])."""
        if isinstance(made, Launch):
            return made
        if isinstance(made, tuple):
            if not 1 <= len(made) <= 4:
                raise TypeError(f"make_kernel returned a tuple of {len(made)} items; expected "
                                "(kernel, block_dim[, tiling_key[, datatype]])")
            return cls(*made)
        return cls(made)

    def launcher(self) -> Callable[..., None]:
        key: tuple = (None, self.block_dim)
        if self.tiling_key is not None:
            key += (self.tiling_key,)
        if self.datatype is not None:
            key += (self.datatype,)
        return self.kernel[key]


@dataclass(frozen=True)
class PointSpec:
    """One point to run: parameters plus how to build, feed and check the kernel."""

    index: int
    params: Mapping[str, Any]
    make_kernel: Callable[..., Any]
    inputs: Any  # callable(**params) -> tuple of args, or a tuple of args (cloned per point)
    reference: Callable[..., Any] | None = None
    outputs: tuple[int, ...] = (-1,)
    rtol: float = 1e-3
    atol: float = 1e-3
    soc: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)


def point_args(spec: PointSpec) -> tuple:
    """Fresh launch arguments for a point (tensors cloned so points never share outputs)."""
    import torch

    raw = spec.inputs(**spec.params) if callable(spec.inputs) else spec.inputs
    args = raw if isinstance(raw, tuple) else (raw,)
    return tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args)


def run_point(spec: PointSpec) -> dict[str, Any]:
    """The row of one point (see `SweepResult.table` for the columns); never raises for a bad
    kernel, only for interrupts."""
    row: dict[str, Any] = {"point": spec.index, **spec.params, "status": "error", "error": "",
                           "error_kind": ""}
    t0 = time.perf_counter()
    try:
        _run(spec, row)
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as e:  # noqa: BLE001 — every failure is a result of the point
        span = getattr(e, "span", None)
        row.update(status="error", error_kind=type(e).__name__,
                   error=getattr(e, "message", None) or _first_line(e),
                   error_line=getattr(span, "line", 0) or 0)
        row["traceback"] = "".join(traceback.format_exception(e)[-3:])
    row["wall_s"] = time.perf_counter() - t0
    return row


def _run(spec: PointSpec, row: dict[str, Any]) -> None:
    import torch

    import pypto_pro

    launch = Launch.of(spec.make_kernel(**spec.params))
    args = point_args(spec)
    expected = None
    if spec.reference is not None:
        ref = spec.reference(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args])
        expected = ref if isinstance(ref, tuple) else (ref,)
    with pypto_pro.use_backend("sim", soc=spec.soc), pypto_pro.profile() as prof:
        t0 = time.perf_counter()
        launch.launcher()(*args)
        row["sim_wall_s"] = time.perf_counter() - t0
    row["block_dim"] = launch.block_dim
    compiled = prof.launches[-1].compiled if prof.launches else None
    row.update(footprint(compiled))
    if prof.trace is not None:
        row.update(trace_summary(prof.trace))
    row["status"] = "ok"
    if expected is not None:
        err = _max_error(args, spec.outputs, expected, spec.rtol, spec.atol)
        row["max_abs_err"] = err[0]
        if not err[1]:
            row.update(status="wrong", error_kind="WrongResult",
                       error=f"output differs from the reference (max |err| {err[0]:.3g}, "
                             f"rtol {spec.rtol}, atol {spec.atol})")


def _max_error(args: tuple, outputs: tuple[int, ...], expected: tuple, rtol: float,
               atol: float) -> tuple[float, bool]:
    import torch

    got = [args[i] for i in outputs]
    if len(got) != len(expected):
        raise ValueError(f"reference returned {len(expected)} value(s) for {len(got)} "
                         f"output(s) {list(outputs)}")
    worst, ok = 0.0, True
    for g, e in zip(got, expected):
        e = torch.as_tensor(e).to(g.dtype) if isinstance(g, torch.Tensor) else e
        diff = (g.double() - e.double()).abs()
        worst = max(worst, float(diff.max()) if diff.numel() else 0.0)
        ok = ok and bool(torch.allclose(g.double(), e.double(), rtol=rtol, atol=atol))
    return worst, ok


def trace_summary(trace: Any) -> dict[str, Any]:
    """Simulated time, busy % per pipe (of the busiest core kind), stall cycles by reason,
    HBM bytes, roofline fraction and the bottleneck pipe of one launch's Trace."""
    out: dict[str, Any] = {"sim_us": trace.duration_us, "cycles": trace.duration_cycles}
    util = trace.pipe_utilization()
    busiest: dict[str, float] = {}
    for rec in util.itertuples():
        pipe = str(rec.pipe)
        busiest[pipe] = max(busiest.get(pipe, 0.0), 100.0 * float(rec.ratio))
    out.update({f"busy_{p}": v for p, v in busiest.items()})
    out["bottleneck"] = max(busiest, key=busiest.get) if busiest else ""
    stalls = trace.stalls()
    for reason, cycles in stalls.groupby("stall_reason")["cycles"].sum().items():
        out[f"stall_{reason}"] = int(cycles)
    roof = trace.roofline()
    out.update(hbm_bytes=roof.hbm_bytes, roofline=roof.fraction_of_roof, bound=roof.bound)
    return out


def footprint(compiled: Any) -> dict[str, int]:
    """On-chip bytes the kernel places, per memory space and in total (`Compiled.footprint`:
    the union of its tile and group-slot placements per core kind)."""
    if compiled is None:
        return {}
    spaces = dict(compiled.footprint)
    total = spaces.pop("total")
    return {**{f"bytes_{s}": v for s, v in spaces.items()}, "footprint_bytes": total}


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__
