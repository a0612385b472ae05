"""PyPTO Pro notebook layer: the `%%pypto` cell magic, the Workbench, reports and comparisons.

`%load_ext pypto_lab` registers the magics (nothing else happens at load). The same features
are plain Python: `run_cell(source, namespace, ...)` returns a `CellResult` (rich display,
`.workbench()`, `.export(path)`), `compare(a, b)` puts two results side by side, and
`python -m pypto_lab report ...` writes a standalone HTML report. `sweep(make_kernel, space,
...)` measures a grid of configurations on the simulator (`autotune` picks per shape). Uses
only the public `pypto_pro` API.
"""
from __future__ import annotations

from typing import Any

from .options import CellOptions, parse_diff, parse_show
from .workbench import CellResult, Workbench

__all__ = ["Autotuned", "CellOptions", "CellResult", "Comparison", "Launch", "SweepResult",
           "Workbench", "autotune", "compare", "load_ipython_extension", "run_cell", "sweep",
           "sweep_widget", "unload_ipython_extension"]


def load_ipython_extension(ipython: Any) -> None:
    """`%load_ext pypto_lab`: register `%%pypto`, `%pypto_trace`, `%pypto_compare`,
    `%pypto_export`."""
    from .magics import PyptoMagics

    ipython.register_magics(PyptoMagics)


def unload_ipython_extension(ipython: Any) -> None:
    """`%unload_ext pypto_lab`: remove the magics again."""
    for kind, names in (("cell", ("pypto",)),
                        ("line", ("pypto_trace", "pypto_compare", "pypto_export"))):
        for name in names:
            ipython.magics_manager.magics[kind].pop(name, None)
    ipython.magics_manager.registry.pop("PyptoMagics", None)


def compare(a: Any, b: Any, labels: tuple[str, str] = ("A", "B")) -> Any:
    """Two results (CellResults, Traces or jit kernels) side by side: a `Comparison` with the
    final IR diff, per-pipe busy time and both timelines on a shared time axis."""
    from .comparison import compare as _compare

    return _compare(a, b, labels)


#: public names imported on first use: name -> module
_LAZY = {"Comparison": "comparison", "sweep": "sweep", "SweepResult": "sweep",
         "Launch": "sweep_point", "sweep_widget": "sweep_widget", "autotune": "autotune",
         "Autotuned": "autotune"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'pypto_lab' has no attribute {name!r}")


def run_cell(source: str, namespace: dict | None = None, **options: Any) -> CellResult:
    """Run `source` as a `%%pypto` cell outside IPython and return its `CellResult`.

    `options` are `CellOptions` fields; `show` and `diff` may be given as the magic's strings
    ("passes,timeline", "auto_mutex"). The namespace defaults to a fresh dict.
    """
    from .cell import register_cell
    from .cell import run_cell as _run

    if isinstance(options.get("show"), str):
        options["show"] = parse_show(options["show"])
    if isinstance(options.get("diff"), str):
        options["diff"] = parse_diff(options["diff"])
    options.setdefault("interactive", False)
    opts = CellOptions(**options)
    src, code = register_cell(source)
    ns = namespace if namespace is not None else {"__name__": "__pypto_cell__"}
    return _run(source, opts, ns, src, code)
