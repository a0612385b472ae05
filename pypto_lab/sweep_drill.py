"""Drill-down: re-run one sweep point in this process as a workbench cell.

The point's kernel is rebuilt with its parameters and launched as the body of a `run_cell`, so
the result is an ordinary `CellResult`: passes, generated code, timeline, blocks, roofline, the
check against the sweep's reference (a wrong point shows its mismatches, it does not raise).
Displayed under a Jupyter kernel it is the full tabbed Workbench, like a `%%pypto` cell's.
"""
from __future__ import annotations

from typing import Any

from .sweep_point import Launch, PointSpec, point_args


def drill(spec: PointSpec, show: str = "all") -> Any:
    from . import run_cell

    launch = Launch.of(spec.make_kernel(**spec.params))
    args = point_args(spec)
    namespace: dict[str, Any] = {"__name__": "__pypto_sweep__", "_launch": launch.launcher(),
                                 "_args": args, launch.kernel.__name__: launch.kernel}
    ref = None
    if spec.reference is not None:
        import torch

        expected = spec.reference(*[a.clone() if isinstance(a, torch.Tensor) else a
                                    for a in args])
        namespace["_expected"] = expected[0] if isinstance(expected, tuple) else expected
        namespace["_out"] = args[spec.outputs[0]]
        ref = "_expected"
    params = ", ".join(f"{k}={v!r}" for k, v in spec.params.items())
    source = f"# sweep point {spec.index}: {params}\n_launch(*_args)\n"
    return run_cell(source, namespace, show=show, soc=spec.soc, ref=ref, keep_going=True,
                    interactive=True,
                    out="_out" if ref else None, rtol=spec.rtol, atol=spec.atol)
