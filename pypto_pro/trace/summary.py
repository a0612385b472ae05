"""Per-launch, per-block, per-pipe and per-line summaries of a Trace's events table.

Owns the vectorised views behind `Trace`: launch spans, busy cycles as the union of intervals per
(core, pipe), the msprof-shaped `block_detail` / `mix_block_detail` (spec `ascend_950_model.md`
§4.1, §4.2), PipeUtilization-style totals, stall totals, waves and the terminal summary. Every
function takes the events DataFrame (schema columns) and the launch table; none loops over rows.
Imported only when a Trace is used, so pandas may be imported at the top. Must not import the
simulator or the exporters.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import PurePath

import numpy as np
import pandas as pd

from .events import PIPES, pipe_rank
from .schema import TraceMeta

#: one row per core instance of a block (a block on a core kind and subblock)
BLOCK_KEYS = ["launch", "block", "subblock", "core_kind", "core"]


def launch_table(events: pd.DataFrame, metas: Mapping[int, TraceMeta]) -> pd.DataFrame:
    """One row per launch: clock, instruction span (start, end, cycles, us) and the launch's
    offset on a wall timeline where launches run back to back (`offset_us`)."""
    table = pd.DataFrame(
        {"kernel": [metas[k].kernel for k in sorted(metas)],
         "kernel_type": [metas[k].kernel_type for k in sorted(metas)],
         "clock_mhz": [float(metas[k].clock_mhz) for k in sorted(metas)]},
        index=pd.Index(sorted(metas), name="launch"))
    instr = events[events["kind"] == "instr"]
    span = instr.groupby("launch")[["start", "end"]].agg({"start": "min", "end": "max"})
    table = table.join(span).fillna({"start": 0, "end": 0}).astype({"start": "int64",
                                                                   "end": "int64"})
    table["cycles"] = table["end"] - table["start"]
    table["us"] = table["cycles"] / table["clock_mhz"]
    last = events.groupby("launch")["end"].max().reindex(table.index, fill_value=0)
    table["offset_us"] = (last / table["clock_mhz"]).cumsum().shift(fill_value=0.0)
    return table


def interval_union(frame: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """Cycles covered by the union of the [start, end) intervals of each group of `keys`.

    A sweep in sorted order: an interval adds what lies beyond the furthest end reached so far
    in its group, so overlapping intervals are never counted twice.
    """
    keys = list(keys)
    if frame.empty:
        return frame[keys].iloc[:0].assign(busy=np.zeros(0, dtype=np.int64))
    ordered = frame.sort_values([*keys, "start"], kind="mergesort")
    first = np.zeros(len(ordered), dtype=bool)
    first[0] = True
    for key in keys:
        column = ordered[key]
        values = (column.cat.codes if isinstance(column.dtype, pd.CategoricalDtype)
                  else column).to_numpy()
        first[1:] |= values[1:] != values[:-1]
    gid = np.cumsum(first) - 1
    start, end = ordered["start"].to_numpy(), ordered["end"].to_numpy()
    # running maximum of `end` within each group: lift each group above all earlier ones
    origin, lift = int(start.min()), gid * (int(end.max()) - int(start.min()) + 1)
    reach = np.empty_like(end)
    reach[1:] = (np.maximum.accumulate(end - origin + lift) - lift + origin)[:-1]
    reach[first] = start[first]
    gain = np.clip(end - np.maximum(start, reach), 0, None)
    out = ordered.loc[first, keys].reset_index(drop=True)
    out["busy"] = np.bincount(gid, weights=gain).astype(np.int64)
    return out


def block_detail(events: pd.DataFrame, launches: pd.DataFrame) -> pd.DataFrame:
    """One row per core instance of a block: span in cycles and µs, per-pipe busy cycles and
    busy ratios (busy / the instance's duration)."""
    spans = _block_spans(events)
    spans = spans.rename(columns={"start": "start_cycle", "end": "end_cycle"})
    spans["duration_cycles"] = spans["end_cycle"] - spans["start_cycle"]
    clock = spans["launch"].map(launches["clock_mhz"]).to_numpy(dtype=float)
    for cycles, us in (("start_cycle", "start_us"), ("end_cycle", "end_us"),
                       ("duration_cycles", "duration_us")):
        spans[us] = spans[cycles].to_numpy() / clock
    busy = _busy_by_pipe(events, BLOCK_KEYS)
    pipes = list(busy.columns)
    out = spans.merge(busy, left_on=BLOCK_KEYS, right_index=True, how="left")
    out[pipes] = out[pipes].fillna(0).astype("int64")
    duration = out["duration_cycles"].to_numpy(dtype=float)
    ratios = np.divide(out[pipes].to_numpy(dtype=float), duration[:, None],
                       out=np.zeros((len(out), len(pipes))), where=duration[:, None] > 0)
    out = out.rename(columns={p: f"{p.lower()}_cycles" for p in pipes})
    ratio_frame = pd.DataFrame(ratios, columns=[f"{p.lower()}_ratio" for p in pipes],
                               index=out.index)
    return pd.concat([out, ratio_frame], axis=1).reset_index(drop=True)


def mix_block_detail(events: pd.DataFrame, launches: pd.DataFrame) -> pd.DataFrame:
    """One row per block of the mix launches: the block's span and the AIC, AIV0 and AIV1
    durations side by side (msprof `mix_block_detail` is [aic, aiv0, aiv1])."""
    mix = launches.index[launches["kernel_type"] == "mix"]
    if mix.empty:
        kinds = sorted(set(launches["kernel_type"]))
        raise ValueError(f"mix_block_detail needs a mix kernel; this trace's kernel_type is "
                         f"{kinds} (use block_detail())")
    detail = block_detail(events[events["launch"].isin(mix)], launches)
    unit = np.where(detail["core_kind"] == "AIC", "aic",
                    "aiv" + detail["subblock"].astype(str).to_numpy(dtype=object))
    wide = (detail.assign(unit=unit)
            .set_index(["launch", "block", "unit"])[["duration_cycles", "duration_us"]]
            .unstack("unit"))
    units = ["aic", "aiv0", "aiv1"]
    cycles = wide["duration_cycles"].reindex(columns=units).add_suffix("_cycles")
    us = wide["duration_us"].reindex(columns=units).add_suffix("_us")
    span = detail.groupby(["launch", "block"]).agg(start_cycle=("start_cycle", "min"),
                                                   end_cycle=("end_cycle", "max"))
    span["duration_cycles"] = span["end_cycle"] - span["start_cycle"]
    span["duration_us"] = span["duration_cycles"] / launches["clock_mhz"].reindex(
        span.index.get_level_values("launch")).to_numpy()
    return span.join(cycles).join(us).reset_index()


def pipe_utilization(events: pd.DataFrame, launches: pd.DataFrame) -> pd.DataFrame:
    """Per launch, core kind and pipe: busy cycles summed over cores, the ratio of the cores'
    capacity (cores x launch duration) and the busiest core's ratio. Busy is the union of the
    instruction intervals per (core, pipe), so it never exceeds the wall time."""
    per_core = interval_union(events[events["kind"] == "instr"],
                              ["launch", "core_kind", "core", "pipe"])
    util = (per_core.groupby(["launch", "core_kind", "pipe"], observed=True)
            .agg(busy_cycles=("busy", "sum"), max_busy=("busy", "max")).reset_index())
    cores = (events.groupby(["launch", "core_kind"], observed=True)["core"].nunique()
             .rename("cores").reset_index())
    util = util.merge(cores, on=["launch", "core_kind"], how="left")
    duration = util["launch"].map(launches["cycles"]).to_numpy(dtype=float)
    capacity = util["cores"].to_numpy(dtype=float) * duration
    util["busy_us"] = util["busy_cycles"] / util["launch"].map(launches["clock_mhz"])
    util["ratio"] = _safe_ratio(util["busy_cycles"].to_numpy(dtype=float), capacity)
    util["max_core_ratio"] = _safe_ratio(util["max_busy"].to_numpy(dtype=float), duration)
    columns = ["launch", "core_kind", "pipe", "cores", "busy_cycles", "busy_us", "ratio",
               "max_core_ratio"]
    return _sort_pipes(util[columns], ["launch", "core_kind"])


def overlap(events: pd.DataFrame, launches: pd.DataFrame, pipe_a: str, pipe_b: str,
            by: str = "core") -> pd.DataFrame:
    """Per launch and core (`by="block"`: per block, the pipes of any of its cores): the
    cycles (and µs) in which both pipes were busy at once, i.e. |busy A| + |busy B| -
    |busy A or B| of the instruction intervals."""
    keys = ["launch", "core_kind", "core"] if by == "core" else ["launch", "block"]
    instr = events[events["kind"] == "instr"]
    pipes = instr["pipe"].astype(str)
    busy = {}
    for name, rows in (("a", instr[pipes == pipe_a]), ("b", instr[pipes == pipe_b]),
                       ("ab", instr[pipes.isin([pipe_a, pipe_b])])):
        union = interval_union(rows, keys)
        if "core_kind" in keys:
            union = union.astype({"core_kind": str})
        busy[name] = union.set_index(keys)["busy"]
    both = pd.concat(busy, axis=1).fillna(0).astype("int64")
    out = (both["a"] + both["b"] - both["ab"]).rename("cycles").reset_index()
    out["us"] = out["cycles"] / out["launch"].map(launches["clock_mhz"]).astype(float)
    return out


def stalls(events: pd.DataFrame, launches: pd.DataFrame) -> pd.DataFrame:
    """Stall time by launch, core and reason: number of stall events and their summed cycles
    (pipe-cycles: stalls of two pipes of one core at once both count)."""
    rows = events[events["kind"] == "stall"]
    rows = rows.assign(cycles=rows["end"] - rows["start"])
    out = (rows.groupby(["launch", "core_kind", "core", "stall_reason"], observed=True)
           .agg(count=("cycles", "size"), cycles=("cycles", "sum")).reset_index())
    out["us"] = out["cycles"] / out["launch"].map(launches["clock_mhz"]).astype(float)
    return out


def waves(events: pd.DataFrame) -> pd.DataFrame:
    """Which wave each block ran in: a block's wave is how many blocks started before it on
    the same core (the maximum over the block's core instances)."""
    spans = _block_spans(events)
    order = spans.groupby(["launch", "core_kind", "core"], observed=True)["start"]
    spans["wave"] = order.rank(method="first").astype("int64") - 1
    out = spans.groupby(["launch", "block"]).agg(
        wave=("wave", "max"), start_cycle=("start", "min"), end_cycle=("end", "max"))
    out["duration_cycles"] = out["end_cycle"] - out["start_cycle"]
    return out.reset_index()


def for_line(events: pd.DataFrame, file: str, line: int) -> pd.DataFrame:
    """Events of one source line; `file` is a full path or, without a directory, a base name."""
    names = [str(c) for c in events["file"].cat.categories]
    bare = PurePath(file).name == file
    match = [n for n in names if n == file or (bare and PurePath(n).name == file)]
    mask = events["file"].isin(match) & (events["line"] == line)
    return events[mask].sort_values(["launch", "start"], kind="mergesort")


def source_lines(events: pd.DataFrame) -> pd.DataFrame:
    """Instruction count and summed instruction cycles per source line, busiest first."""
    instr = events[(events["kind"] == "instr") & (events["line"] > 0)]
    instr = instr.assign(cycles=instr["end"] - instr["start"])
    out = (instr.groupby(["file", "line"], observed=True)
           .agg(instructions=("cycles", "size"), cycles=("cycles", "sum")).reset_index())
    return out.sort_values("cycles", ascending=False, kind="mergesort").reset_index(drop=True)


def _block_spans(events: pd.DataFrame) -> pd.DataFrame:
    return (events.groupby(BLOCK_KEYS, observed=True, sort=True)
            .agg(start=("start", "min"), end=("end", "max")).reset_index())


def _busy_by_pipe(events: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Busy cycles per group of `keys`, one column per pipe (the `PIPES` order first)."""
    union = interval_union(events[events["kind"] == "instr"], [*keys, "pipe"])
    union["pipe"] = union["pipe"].astype(str)
    wide = union.set_index([*keys, "pipe"])["busy"].unstack("pipe", fill_value=0)
    rank = pipe_rank(list(wide.columns))
    return wide.reindex(columns=sorted({*PIPES, *wide.columns}, key=rank.__getitem__),
                        fill_value=0)


def _sort_pipes(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    rank = pipe_rank([str(p) for p in frame["pipe"].unique()])
    order = frame["pipe"].astype(str).map(rank)
    return (frame.assign(_rank=order).sort_values([*keys, "_rank"], kind="mergesort")
            .drop(columns="_rank").reset_index(drop=True))


def _safe_ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    return np.divide(num, den, out=np.zeros_like(num, dtype=float), where=den > 0)


class _Views:
    """The views `summary_text` reads, computed from the events table (a `Trace` has the
    same methods and computes each once)."""

    def __init__(self, events: pd.DataFrame, launches: pd.DataFrame) -> None:
        self.events, self.launches = events, launches

    def waves(self) -> pd.DataFrame:
        return waves(self.events)

    def pipe_utilization(self) -> pd.DataFrame:
        return pipe_utilization(self.events, self.launches)

    def stalls(self) -> pd.DataFrame:
        return stalls(self.events, self.launches)

    def source_lines(self) -> pd.DataFrame:
        return source_lines(self.events)


def summary_text(meta: TraceMeta, events: pd.DataFrame, launches: pd.DataFrame,
                 where: Callable[[str, int], str] | None = None,
                 views: _Views | None = None) -> str:
    """A few lines for a terminal: what ran, how long, pipe use, stalls and the hottest lines
    (named by `where(file, line)`; by default "<file name>:<line>"); `views` gives the
    events' views (by default computed here)."""
    views = views or _Views(events, launches)
    n_launch = len(launches)
    cycles, us = int(launches["cycles"].sum()), float(launches["us"].sum())
    kinds = events["kind"].astype(str).value_counts()
    head = (f"{meta.kernel} [{meta.kernel_type}, block_dim {meta.block_dim}] on {meta.soc} "
            f"via {meta.backend}")
    if n_launch > 1:
        kernels = list(dict.fromkeys(launches["kernel"]))
        head = (f"{n_launch} launches of {', '.join(kernels)} on {meta.soc} via "
                f"{meta.backend}")
    n_waves = int(views.waves()["wave"].max()) + 1 if len(events) else 0
    lines = [head,
             f"duration {cycles:,} cycles = {us:.3f} us @ {meta.clock_mhz:g} MHz, "
             f"{n_waves} wave(s), {len(events):,} events ("
             + ", ".join(f"{kinds.get(k, 0):,} {k}" for k in ("instr", "stall", "sync")) + ")"]
    lines += _utilization_lines(views.pipe_utilization(), launches)
    lines += _stall_line(views.stalls()) + _hot_line(views.source_lines(), where or _file_line)
    return "\n".join(lines)


def _utilization_lines(util: pd.DataFrame, launches: pd.DataFrame) -> list[str]:
    """Busy ratio per core kind and pipe over all launches (cores x duration as capacity)."""
    util["capacity"] = util["cores"] * util["launch"].map(launches["cycles"])
    total = (util.groupby(["core_kind", "pipe"], observed=True)
             .agg(busy_cycles=("busy_cycles", "sum"), capacity=("capacity", "sum"),
                  cores=("cores", "max")).reset_index())
    lines = []
    for kind, rows in _sort_pipes(total, ["core_kind"]).groupby("core_kind", observed=True):
        ratios = _safe_ratio(rows["busy_cycles"].to_numpy(float), rows["capacity"].to_numpy(float))
        lines.append(f"  {kind} x{int(rows['cores'].max())} busy: " + "  ".join(
            f"{p} {r:.0%}" for p, r in zip(rows["pipe"].astype(str), ratios)))
    return lines


def _stall_line(stall_rows: pd.DataFrame) -> list[str]:
    by_reason = stall_rows.groupby("stall_reason", observed=True)["cycles"].sum()
    by_reason = by_reason[by_reason > 0].sort_values(ascending=False)
    if by_reason.empty:
        return []
    return ["  stalls: " + ", ".join(f"{r or '?'} {c:,} cycles" for r, c in by_reason.items())]


def _file_line(file: str, line: int) -> str:
    return f"{PurePath(file).name}:{line}"


def _hot_line(lines: pd.DataFrame, where: Callable[[str, int], str]) -> list[str]:
    hot = lines.head(3)
    if hot.empty:
        return []
    return ["  hot lines: " + ", ".join(
        f"{where(str(f), int(ln))} ({c:,} cycles)"
        for f, ln, c in zip(hot["file"], hot["line"], hot["cycles"]))]
