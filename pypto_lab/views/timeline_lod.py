"""Timeline arithmetic: lanes, op kinds, level of detail, mutex holds, sync arrows, findings.

Owns what `timeline` draws, computed with pandas/numpy over the Trace's events table and never
row by row: `lane_table` (one lane per launch, core instance and pipe, labelled "b3 AIV1 · MTE2"),
`categorize` (op kind from the IR op's family: GM load, GM store, on-chip move, cube, vector,
scalar, sync), `level_of_detail` (raw events while under the budget, else merge each lane's
same-kind events closer than a pixel, else bin each lane by pixel), `mutex_holds` (get_buf →
rls_buf intervals), `flag_arrows` (set → wait pairs by flow id), `xcore_arrows` (each
cross-core wait matched to the latest earlier set of its block and id) and `finding_marks` (the
instructions each sanitizer finding names). Hover text is built here.
"""
from __future__ import annotations

import functools
import html
import textwrap
from typing import Any

import numpy as np
import pandas as pd

from pypto_pro.trace import pipe_rank

from ..locations import cell_label

CATEGORY_COLORS = {
    "GM load": "#4C78A8", "GM store": "#72B7B2", "on-chip move": "#54A24B", "cube": "#E45756",
    "vector": "#F58518", "scalar": "#B279A2", "sync": "#8c6d58",
}
STALL_COLORS = {"mutex": "#9aa5b1", "flag": "#b392f0", "cross_core": "#ff8182",
                "queue": "#d0d7de", "hbm": "#79c0ff", "barrier": "#e3b341", "sync_all": "#e3b341"}
_FAMILY_CATEGORY = {"load": "GM load", "store": "GM store", "move": "on-chip move",
                    "vec_copy": "on-chip move", "cube": "cube", "scalar": "scalar",
                    "debug": "scalar", "meta": "scalar", "alloc": "scalar", "sync": "sync"}
#: merge events closer than this fraction of the time span (about one pixel)
PIXEL_FRACTION = 1 / 2000


@functools.cache
def _family(ir_op: str) -> str:
    from pypto_pro.trace import op_family

    family = op_family(ir_op)
    return _FAMILY_CATEGORY.get(family, "vector") if family else "scalar"


def categorize(frame: pd.DataFrame) -> np.ndarray:
    """Op kind of every event (an object array of CATEGORY_COLORS keys)."""
    ir_op = frame["ir_op"].astype("category")
    names = np.array([_family(str(c)) for c in ir_op.cat.categories] + ["scalar"], dtype=object)
    codes = ir_op.cat.codes.to_numpy()
    out = names[np.where(codes < 0, len(names) - 1, codes)]
    out[(frame["kind"] == "sync").to_numpy()] = "sync"
    return out


def lane_table(events: pd.DataFrame) -> pd.DataFrame:
    """One row per (launch, core instance, pipe) in display order: lane, key, unit, label."""
    cols = ["launch", "block", "core_kind", "subblock", "core", "pipe"]
    # (distinct rows first: a categorical's strings are distinct, so the same rows result)
    lanes = events[cols].drop_duplicates().astype({"core_kind": str, "pipe": str})
    mix = set(events.loc[events["subblock"] > 0, "launch"].unique())
    rank = pipe_rank(sorted(lanes["pipe"].unique()))
    lanes = lanes.assign(_r=lanes["pipe"].map(rank), _k=(lanes["core_kind"] != "AIC"))
    lanes = lanes.sort_values(["launch", "block", "_k", "subblock", "core", "_r"])
    several = lanes["launch"].nunique() > 1
    unit = ("b" + lanes["block"].astype(str) + " " + lanes["core_kind"]
            + np.where(lanes["launch"].isin(mix) & (lanes["core_kind"] == "AIV"),
                       lanes["subblock"].astype(str), ""))
    if several:
        unit = "L" + lanes["launch"].astype(str) + " " + unit
    lanes = lanes.assign(unit=unit, label=unit + " · " + lanes["pipe"],
                         key=lanes["launch"].astype(str) + "|" + lanes["core"].astype(str)
                         + "|" + lanes["pipe"], lane=np.arange(len(lanes)))
    return lanes.drop(columns=["_r", "_k"]).reset_index(drop=True)


def texts(values: pd.Series) -> list[str]:
    """Each value as `astype(str)` writes it, as a list (a categorical column: by category,
    not value by value)."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        names = np.array([str(c) for c in values.cat.categories] + ["nan"], dtype=object)
        return names[values.cat.codes.to_numpy()].tolist()  # (code -1, a missing value: last)
    return values.astype(str).tolist()


def _us(values: Any) -> list[str]:
    return [f"{v:,.3f}" for v in np.asarray(values, dtype=float).tolist()]


def source_labels(f: pd.DataFrame) -> list[str]:
    """Each event's source line as users know it: "Cell In[5], line 15" (`locations.where`)."""
    files = texts(f["file"])
    names = {}
    for name in dict.fromkeys(files):
        cell = cell_label(name)
        names[name] = f"{cell}, line " if cell else name.rsplit("/", 1)[-1] + ":"
    return [names[a] + str(b) for a, b in zip(files, f["line"].astype(int).tolist())]


def _raw_text(f: pd.DataFrame) -> list[str]:
    t0, t1 = f["t0"].to_numpy(dtype=float), f["t1"].to_numpy(dtype=float)
    return [f"<b>{op}</b> {ir}<br>{where} · {d:,.3f} µs · {n:,} B<br>@{a:,.3f}–{b:,.3f} µs"
            + (f"<br>{ids}" if ids else "")
            for op, ir, where, d, n, a, b, ids in zip(
                texts(f["op"]), texts(f["ir_op"]), source_labels(f), (t1 - t0).tolist(),
                f["bytes"].tolist(), t0.tolist(), t1.tolist(), texts(f["sync_ids"]))]


def _segments(f: pd.DataFrame, text: pd.Series) -> pd.DataFrame:
    reason = f["stall_reason"].astype(str) if "stall_reason" in f else ""
    return pd.DataFrame({"lane": f["lane"].to_numpy(), "cat": f["cat"].to_numpy(),
                         "t0": f["t0"].to_numpy(), "t1": f["t1"].to_numpy(),
                         "reason": np.asarray(reason), "line": f["line"].to_numpy(),
                         "text": np.array(text, dtype=object)})


def _grouped(f: pd.DataFrame, gid: np.ndarray) -> pd.DataFrame:
    g = pd.DataFrame({"gid": gid, "lane": f["lane"].to_numpy(), "cat": f["cat"].to_numpy(),
                      "t0": f["t0"].to_numpy(), "t1": f["t1"].to_numpy(),
                      "busy": (f["t1"] - f["t0"]).to_numpy(),
                      "op": f["op"].astype(str).to_numpy(), "line": f["line"].to_numpy(),
                      "where": np.array(source_labels(f), dtype=object),
                      "reason": f["stall_reason"].astype(str).to_numpy()})
    agg = g.groupby("gid", sort=False).agg(
        lane=("lane", "first"), cat=("cat", "first"), t0=("t0", "min"), t1=("t1", "max"),
        busy=("busy", "sum"), count=("busy", "size"), op=("op", "first"),
        line=("line", "first"), where=("where", "first"), reason=("reason", "first"))
    text = ("<b>" + agg["op"] + "</b> ×" + agg["count"].astype(str) + " merged<br>busy "
            + np.array(_us(agg["busy"]), dtype=object) + " of "
            + np.array(_us(agg["t1"] - agg["t0"]), dtype=object) + " µs · from " + agg["where"]
            + "<br>@" + np.array(_us(agg["t0"]), dtype=object) + "–"
            + np.array(_us(agg["t1"]), dtype=object) + " µs")
    return agg.assign(text=text)[["lane", "cat", "t0", "t1", "reason", "line", "text"]
                                 ].reset_index(drop=True)


def level_of_detail(frame: pd.DataFrame, budget: int, span: float
                    ) -> tuple[pd.DataFrame, str]:
    """(segments, "raw" | "merged" | "binned") with at most about `budget` segments.

    Beyond the budget every lane and op kind gets `budget / kinds` time slots; consecutive
    events of a slot merge unless an idle gap of more than a pixel separates them ("merged"),
    and if the gaps alone are too many, each slot becomes one segment ("binned").
    """
    if len(frame) <= budget:
        return _segments(frame, _raw_text(frame)), "raw"
    f = frame.sort_values(["lane", "cat", "t0"], kind="mergesort")
    key = f["lane"].to_numpy() * 64 + pd.factorize(f["cat"])[0]
    kinds = len(np.unique(key))
    width = max(span * kinds / max(budget, 1), 1e-12)
    t0 = f["t0"].to_numpy()
    slot = ((t0 - t0.min()) // width).astype(np.int64)
    reach = f.groupby(key, sort=False)["t1"].cummax().to_numpy()
    boundary = np.ones(len(f), dtype=bool)
    boundary[1:] = (key[1:] != key[:-1]) | (slot[1:] != slot[:-1])
    gap = np.zeros(len(f), dtype=bool)
    gap[1:] = t0[1:] - reach[:-1] > span * PIXEL_FRACTION
    gid = np.cumsum(boundary | gap)
    if gid[-1] <= 1.5 * budget:
        return _grouped(f, gid), "merged"
    return _grouped(f, np.cumsum(boundary)), "binned"


def mutex_holds(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per get_buf → rls_buf pair on a lane (held from the grant to the release)."""
    sync = frame[frame["op"].isin(["get_buf", "rls_buf"])]
    if sync.empty:
        return frame.iloc[:0].assign(cat=np.array([], dtype=object))
    s = sync.assign(ids=sync["sync_ids"].astype(str)).sort_values(
        ["lane", "ids", "start"], kind="mergesort")
    same = (s["lane"].to_numpy()[1:] == s["lane"].to_numpy()[:-1]) & (
        s["ids"].to_numpy()[1:] == s["ids"].to_numpy()[:-1])
    op = s["op"].astype(str).to_numpy()
    pair = np.flatnonzero(same & (op[:-1] == "get_buf") & (op[1:] == "rls_buf"))
    get, rls = s.iloc[pair], s.iloc[pair + 1]
    holds = get.assign(t0=get["t1"].to_numpy(), t1=rls["t0"].to_numpy(),
                       start=get["end"].to_numpy(), end=rls["start"].to_numpy(),
                       cat="mutex hold", op="mutex " + get["ids"] + " held")
    return holds.drop(columns=["ids"])


def flag_arrows(frame: pd.DataFrame) -> pd.DataFrame:
    """set_flag → wait_flag pairs sharing (launch, flow_id): from the set to the wait."""
    flows = frame[frame["flow_id"] >= 0]
    role = flows["flow_role"].astype(str)
    sets = flows[role == "set"].sort_values("start").drop_duplicates(["launch", "flow_id"])
    waits = flows[role == "wait"].sort_values("start").drop_duplicates(["launch", "flow_id"])
    pairs = sets.merge(waits, on=["launch", "flow_id"], suffixes=("_s", "_w"))
    text = ("<b>" + pairs["sync_ids_s"].astype(str) + "</b><br>set line "
            + pairs["line_s"].astype(str) + " → wait line " + pairs["line_w"].astype(str))
    return pd.DataFrame({"kind": "flag", "x0": pairs["t1_s"], "y0": pairs["lane_s"],
                         "x1": pairs["t0_w"], "y1": pairs["lane_w"], "text": text})


def xcore_arrows(frame: pd.DataFrame) -> pd.DataFrame:
    """Each cross-core wait from the latest set of the same block and id before it."""
    empty = pd.DataFrame(columns=["kind", "x0", "y0", "x1", "y1", "text"])
    ops = frame["op"].astype("category")
    names = [str(c) for c in ops.cat.categories]
    set_ops = [n for n in names if n.startswith(("set_intra", "set_cross"))]
    wait_ops = [n for n in names if n.startswith(("wait_intra", "wait_cross"))]
    if not set_ops or not wait_ops:
        return empty
    marked = frame[ops.isin(set_ops + wait_ops)]
    ids = marked["sync_ids"].astype(str).str.extract(r"(\d+)\D*$")[0]
    marked = marked.assign(xid=pd.to_numeric(ids, errors="coerce")).dropna(subset=["xid"])
    is_set = marked["op"].astype(str).isin(set_ops)
    sets, waits = marked[is_set], marked[~is_set]
    if sets.empty or waits.empty:
        return empty
    keys = ["launch", "block", "xid"]
    left = waits[[*keys, "t0", "lane", "line"]].sort_values("t0")
    right = sets[[*keys, "t0", "t1", "lane", "line"]].rename(columns={"t0": "set_t0"})
    pairs = pd.merge_asof(left, right.sort_values("set_t0"), left_on="t0", right_on="set_t0",
                          by=keys, suffixes=("_w", "_s"), direction="backward")
    pairs = pairs.dropna(subset=["t1"])
    text = ("<b>cross-core id " + pairs["xid"].astype(int).astype(str) + "</b><br>set line "
            + pairs["line_s"].astype(int).astype(str) + " → wait line "
            + pairs["line_w"].astype(str))
    return pd.DataFrame({"kind": "xcore", "x0": pairs["t1"], "y0": pairs["lane_s"],
                         "x1": pairs["t0"], "y1": pairs["lane_w"], "text": text})


_SITE_COLUMNS = {0: ["core", "pipe", "start", "line"],
                 1: ["other_core", "other_pipe", "other_start", "other_line"]}


def finding_marks(frame: pd.DataFrame, findings: pd.DataFrame | None) -> pd.DataFrame:
    """The events of sanitizer findings (`Trace.findings` rows) among `frame`'s: one row per
    finding and role (0: the instruction that showed it, 1: the other one of a race or pairing
    bug) with its lane, µs span and a hover text naming the kind and both lines. A site matches
    the instruction with its core, pipe, start cycle and line (and launch when given)."""
    cols = ["finding", "role", "lane", "t0", "t1", "text"]
    if findings is None or findings.empty or frame.empty:
        return pd.DataFrame(columns=cols)
    f = findings.reset_index(drop=True)
    text = pd.Series([_finding_text(i, len(f), row) for i, row in enumerate(f.itertuples())])
    keys = ["core", "pipe", "start", "line"]
    sites = []
    for role, names in _SITE_COLUMNS.items():
        site = f[names].set_axis(keys, axis=1).assign(finding=f.index, role=role, text=text)
        if "launch" in f:
            site = site.assign(launch=f["launch"])
        sites.append(site[site["start"] >= 0])
    sites = pd.concat(sites, ignore_index=True).astype({"pipe": str})
    on = keys + (["launch"] if "launch" in f else [])
    near = (frame["kind"] == "instr") & frame["start"].isin(sites["start"])  # few rows
    instr = frame.loc[near, [*on, "lane", "t0", "t1"]].astype({"pipe": str}).drop_duplicates(on)
    marks = sites.astype({k: instr[k].dtype for k in on if k != "pipe"}).merge(instr, on=on)
    return marks.sort_values(["finding", "role"])[cols].reset_index(drop=True)


def _finding_text(i: int, n: int, row: Any) -> str:
    where = f"{row.pipe} line {row.line}"
    if row.other_start >= 0 or row.other_line:
        where += f" ⟷ {row.other_pipe or '?'} line {row.other_line}"
    hits = f" ×{row.count}" if row.count > 1 else ""
    message = "<br>".join(html.escape(part) for part in textwrap.wrap(row.message, 80))
    head = f"<b>[{i + 1}/{n}] {html.escape(row.kind)}</b>{hits}"
    return f"{head}<br>{html.escape(where)}<br>{message}"
