"""`pypto_lab.sweep`: measure a kernel over a grid of configurations on the simulator.

    def make_add(tile, depth, blocks):
        return Launch(build_add(tile, depth), block_dim=blocks)

    result = pypto_lab.sweep(make_add, {"tile": [64, 128], "depth": [1, 2], "blocks": [8, 32]},
                             inputs=lambda **p: make_inputs(2048, 2048), reference=torch.add)
    result.table          # one row per point: params, status, sim_us, busy_<pipe>, stall_<why>,
                          # hbm_bytes, roofline, footprint_bytes, bytes_<space>, error ...
    result.best()         # the fastest point that ran and matched
    result.figure()       # simulated time over the grid; result.pareto(): time vs footprint
    result.workbench(3)   # the full workbench (timeline, passes, CCE) of point 3

Every point is compiled, run on the simulator with timing, checked against the reference and
summarised (`sweep_point.run_point`). Points that fail (capacity exceeded, misaligned, wrong
result, ...) stay in the table with their error; they never stop the sweep. Points run in
parallel on a local process pool by default, or on any executor (`pypto_lab.executors`). An
interrupt (the kernel's stop button, Ctrl-C) stops the workers and returns what finished.
"""
from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from html import escape
from typing import Any

import pandas as pd

from .executors import runner
from .figures import PLOTLY_MIME, figure_json, under_kernel
from .progress import Progress
from .sweep_point import Launch, PointSpec, run_point

__all__ = ["Launch", "SweepResult", "expand_space", "sweep"]

#: leading columns of the table, in this order (the rest follow: busy %, stalls, bytes)
_FIRST = ("point", "status", "sim_us", "cycles", "bottleneck", "roofline", "footprint_bytes",
          "hbm_bytes", "block_dim", "max_abs_err", "error_kind", "error", "error_line", "wall_s",
          "sim_wall_s")


def expand_space(space: Mapping[str, Iterable[Any]] | Iterable[Mapping[str, Any]]
                 ) -> list[dict[str, Any]]:
    """A dict of parameter → values (their cartesian product, in order) or a list of dicts."""
    if isinstance(space, Mapping):
        names = list(space)
        values = []
        for name in names:
            v = space[name]
            if isinstance(v, (str, bytes)) or not isinstance(v, Iterable):
                raise TypeError(f"space[{name!r}] must be a list of values, got {v!r}")
            values.append(list(v))
        points = [dict(zip(names, combo)) for combo in itertools.product(*values)]
    else:
        points = [dict(p) for p in space]
        if not all(isinstance(p, dict) for p in points):
            raise TypeError("space must be a dict of parameter -> values or a list of dicts")
    if not points:
        raise ValueError("the sweep space is empty")
    return points


@dataclass
class SweepResult:
    """The table of a sweep plus how to rebuild any point (for drill-down)."""

    table: pd.DataFrame
    params: list[str]
    specs: list[PointSpec] = field(repr=False)
    executor: str = "local"
    seconds: float = 0.0
    interrupted: bool = False

    @property
    def ok(self) -> pd.DataFrame:
        """The points that ran and matched the reference."""
        return self.table[self.table["status"] == "ok"]

    def best(self, by: str = "sim_us") -> pd.Series:
        """The row of the best valid point (smallest `by`)."""
        ok = self.ok
        if ok.empty or by not in ok:
            raise LookupError(f"no valid point to rank by {by!r}: "
                              f"{self.table['status'].value_counts().to_dict()}")
        return ok.loc[ok[by].idxmin()]

    def explain(self) -> str:
        """Why the winner wins: its time and bottleneck pipe against the runner-up's."""
        from .autotune import explain_rows

        ok = self.ok.sort_values("sim_us")
        return explain_rows(ok.iloc[0], ok.iloc[1] if len(ok) > 1 else None, self.params)

    def figure(self, x: str | None = None, color: str | None = None, y: str = "sim_us") -> Any:
        """Simulated time over the grid: lines over `x` coloured by `color` (defaults: the
        first two parameters), or a heatmap when both are given with `kind='heatmap'`."""
        from .sweep_figures import grid_figure

        return grid_figure(self, x, color, y)

    def heatmap(self, x: str, y: str, value: str = "sim_us") -> Any:
        from .sweep_figures import heatmap_figure

        return heatmap_figure(self, x, y, value)

    def pareto(self) -> Any:
        """Simulated time against on-chip footprint, the Pareto front highlighted."""
        from .sweep_figures import pareto_figure

        return pareto_figure(self)

    def point(self, index: int) -> PointSpec:
        return self.specs[index]

    def workbench(self, index: int, show: str = "all") -> Any:
        """Re-run point `index` in this process: its `CellResult`, shown as the full tabbed
        Workbench (timeline, passes, CCE) under a Jupyter kernel."""
        from .sweep_drill import drill

        return drill(self.specs[index], show)

    def summary(self) -> str:
        counts = self.table["status"].value_counts().to_dict()
        head = (f"sweep: {len(self.table)} point(s) on {self.executor} in {self.seconds:.1f} s "
                f"({', '.join(f'{v} {k}' for k, v in counts.items())})"
                + (" — interrupted" if self.interrupted else ""))
        if self.ok.empty:
            return head
        best = self.best()
        params = ", ".join(f"{p}={best[p]}" for p in self.params)
        return f"{head}\nbest: {params}: {best['sim_us']:.2f} µs (bottleneck {best['bottleneck']})"

    def __repr__(self) -> str:
        return self.summary()

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict:
        bundle = {"text/plain": self.summary(), "text/html": self.html()}
        if not self.ok.empty and self.params:
            bundle[PLOTLY_MIME] = figure_json(self.figure())
        return bundle

    def html(self) -> str:
        """Script-free HTML: the summary and the main columns of the table, formatted."""
        from .views.html import table

        cols = [c for c in ("point", *self.params, "status", "sim_us", "bottleneck", "roofline",
                            "footprint_bytes", "error") if c in self.table]
        return f"<pre>{escape(self.summary())}</pre>" + table(
            self.table[cols], {"sim_us": ",.3f", "roofline": ".1%", "footprint_bytes": ","})


def sweep(make_kernel: Callable[..., Any],
          space: Mapping[str, Iterable[Any]] | Iterable[Mapping[str, Any]],
          inputs: Any, reference: Callable[..., Any] | None = None, *,
          outputs: tuple[int, ...] = (-1,), rtol: float = 1e-3, atol: float = 1e-3,
          soc: str | None = None, executor: Any = None, workers: int | None = None,
          progress: bool = True,
          on_point: Callable[[dict, int, int], None] | None = None) -> SweepResult:
    """Run `make_kernel(**params)` for every point of `space` on the simulator.

    `make_kernel` returns a `Launch` (or a jit kernel, or `(kernel, block_dim[, tiling_key[,
    datatype]])`); `inputs` is `inputs(**params) -> args` or a tuple of launch arguments
    (cloned per point); `reference(*args)` gives the expected value(s) of the argument(s) at
    `outputs` (default: the last), compared within `rtol`/`atol`. `soc` picks the simulated
    SoC; `executor`/`workers` where points run (see `pypto_lab.executors`); `on_point(row,
    done, total)` is called as each point finishes (progress bars, live tables).
    """
    points = expand_space(space)
    params = list(dict.fromkeys(k for p in points for k in p))
    specs = [PointSpec(i, p, make_kernel, inputs, reference, tuple(outputs), rtol, atol, soc)
             for i, p in enumerate(points)]
    run = runner(executor, workers)
    t0 = time.perf_counter()
    rows: dict[int, dict] = {}
    interrupted = False
    with Progress(live=progress and under_kernel()) as bar:
        bar.begin(f"sweep: {len(specs)} point(s) on {run.kind}")
        try:
            _collect(run, specs, rows, bar, on_point)
        except KeyboardInterrupt:
            interrupted = True
            run.stop(cancel=True)
        else:
            run.stop(cancel=False)
        finally:
            bar.end()
    for spec in specs:
        rows.setdefault(spec.index, {"point": spec.index, **spec.params, "status": "cancelled",
                                     "error": "interrupted before this point finished"})
    table = _table([rows[i] for i in range(len(specs))], params)
    return SweepResult(table, params, specs, run.kind, time.perf_counter() - t0, interrupted)


def _collect(run: Any, specs: list[PointSpec], rows: dict[int, dict], bar: Progress,
             on_point: Callable[[dict, int, int], None] | None) -> None:
    pending = {spec.index: run.submit(run_point, spec) for spec in specs}
    failed = 0
    while pending:
        finished = [i for i, p in pending.items() if p.done()]
        for i in finished:
            row = pending.pop(i).result()
            rows[i] = row
            failed += row["status"] != "ok"
            if on_point is not None:
                on_point(row, len(rows), len(specs))
        if finished:
            bar.detail(f"{len(rows)}/{len(specs)} done, {failed} invalid")
        elif pending:
            time.sleep(0.02)


def _table(rows: list[dict], params: list[str]) -> pd.DataFrame:
    table = pd.DataFrame(rows)
    first = [c for c in dict.fromkeys(("point", *params, *_FIRST)) if c in table]
    rest = sorted(c for c in table if c not in first and c != "traceback")
    tail = ["traceback"] if "traceback" in table else []
    return table[first + rest + tail].reset_index(drop=True).convert_dtypes()
