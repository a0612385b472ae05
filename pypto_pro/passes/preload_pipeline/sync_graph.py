"""Steps 3–4 of the preload transform (spec §2.12.6 `_sync_graph`, `_validate`).

Lanes: a cross-core buffer connects the stage that writes it first (producer) to the stage on
the other core that touches it next (consumer). Each lane gives two edges, on per-slot event ids:

* RAW (`fwd_ids`): the producer sets after its call, on the pipe of its last access; the
  consumer waits before its call, on the pipe of its first access;
* WAR (`bwd_ids`, or extra ids taken from the free ones when the group declares none): the
  consumer releases the slot, the producer waits before writing it again. Every slot starts
  free: the consumer pre-fires one permit per slot before the loop, the producer drains the
  unused ones after it.

Waits and sets bracket the stage call rather than the access itself, so control flow inside a
stage needs no analysis (spec: treated conservatively). It costs little: pipes run their queues
in order, so a set fires once its pipe has finished this stage's ops (not the whole stage), and
a wait only holds back the ops of its own pipe.

Regions: a tile (or group) on the same core and memory whose bytes overlap a cross-core
buffer's forms a region with it. Every stage touching the region is ordered after the previous
one in serial order (the last of iteration i before the first of iteration i+1): across cores
by extra edges on free event ids (one id, one permit for the wrap-around), on one core by
program order, which the skew must not swap. When every reuser is a group whose slots line up
with the buffer's (slot k over slot k only, advanced once per iteration like the buffer) the
ordering is per slot: the last toucher of iteration i goes before the first of iteration
i + depth (one id and one permit per slot), which lets a deeper skew through. Otherwise it is
per iteration: a tile that overlaps one slot is ordered against every slot (conservative, like
control flow).

Validation rejects what the rewrite cannot make correct (a buffer with no producer, more than
two stages on one lane, ambiguous slots or pipes, clashing ids, a reused region the skew
reorders on one core or that is also used outside the stages) and runs the schedule on
counting semaphores (one token count per event id, each core in program order) to find waits
that can never be satisfied — a cycle through the stages and buffers named in the error.
"""
from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

from ...errors import InvalidOperation, NotSupported, OutOfRange
from ...ir.span import Span
from ...ir.types import PipeType
from .analysis import StageLoop
from .scan import Buffer, ScanResult, StageScan

N_EVENT_IDS = 16


@dataclass(frozen=True)
class Edge:
    """Stage `src` sets, stage `dst` waits, on `ids[slot]` (one id per slot, or one shared)."""

    buffer: str
    kind: str  # "RAW" | "WAR"
    src: int
    src_pipe: PipeType
    dst: int
    dst_pipe: PipeType
    ids: tuple[int, ...]
    depth: int
    extra: bool = False  # ids allocated by the transform (the group declares none)

    def label(self) -> str:
        return f"{self.buffer} {'ready' if self.kind == 'RAW' else 'free'}"


@dataclass(frozen=True)
class SyncGraph:
    edges: tuple[Edge, ...]
    delays: tuple[int, ...]  # per stage: iterations it lags the first stage

    def waits(self, stage: int) -> list[Edge]:
        return [e for e in self.edges if e.dst == stage]

    def sets(self, stage: int) -> list[Edge]:
        return [e for e in self.edges if e.src == stage]

    @property
    def permits(self) -> list[Edge]:
        """Edges whose slots start free: pre-fired before the loop, drained after it."""
        return [e for e in self.edges if e.kind == "WAR"]


def stage_delays(n_stages: int, preload: int) -> tuple[int, ...]:
    """The last stage lags the first by `preload` iterations; stages between lag in proportion."""
    last = max(n_stages - 1, 1)
    return tuple(math.ceil(k * preload / last) for k in range(n_stages))


def build(scan: ScanResult, loop: StageLoop, file: str, preload: int,
          auto_mutex: bool) -> SyncGraph:
    def stage_span(s: StageScan) -> Span:
        return Span(file, s.stage.line, s.stage.section.col_offset + 1)

    taken = set(scan.used_event_ids)
    for b in scan.buffers.values():
        taken |= set(b.type.fwd_ids) | set(b.type.bwd_ids)
    free = [i for i in range(N_EVENT_IDS) if i not in taken]
    edges: list[Edge] = []
    owners: dict[int, str] = {}
    lanes: list[tuple[Buffer, StageScan, StageScan]] = []
    order = list(dict.fromkeys(b for s in scan.stages for b in s.touched()))
    for name in order:
        buf = scan.buffers.get(name)
        users = [s for s in scan.stages if name in s.touched()]
        if buf is None:
            continue
        if len({s.stage.core for s in users}) < 2:
            if buf.type.fwd_ids:
                raise InvalidOperation(
                    f"cross-core buffer '{name}' (fwd_ids={list(buf.type.fwd_ids)}) is only "
                    f"touched by {users[0].stage.core} stage(s) "
                    f"{', '.join(repr(s.stage.name) for s in users)}", buf.span,
                    hint="drop fwd_ids from a core-local group, or hand it to a stage on the "
                         "other core")
            continue
        _check_lane(buf, users, scan, stage_span, auto_mutex)
        prod, cons = users
        lanes.append((buf, prod, cons))
        fwd = _ids(buf, "fwd_ids", buf.type.fwd_ids)
        bwd, extra = _ids(buf, "bwd_ids", buf.type.bwd_ids), False
        if not bwd:
            if len(free) < buf.type.depth:
                raise OutOfRange(
                    f"cross-core buffer '{name}' declares no bwd_ids and only {len(free)} free "
                    f"cross-core event id(s) remain for its {buf.type.depth} slot release(s)",
                    buf.span, hint="declare bwd_ids=[...] on the group")
            bwd, free, extra = tuple(free[:buf.type.depth]), free[buf.type.depth:], True
        for i in fwd + bwd:
            if i in owners and owners[i] != name:
                raise InvalidOperation(
                    f"cross-core event id {i} is used by both '{owners[i]}' and '{name}'",
                    buf.span, hint="give every cross-core buffer its own fwd_ids / bwd_ids")
            owners[i] = name
        if set(fwd) & set(bwd):
            raise InvalidOperation(f"cross-core buffer '{name}': fwd_ids and bwd_ids overlap "
                                   f"({sorted(set(fwd) & set(bwd))})", buf.span)
        pa, ca = prod.of(name), cons.of(name)
        i_p, i_c = prod.stage.index, cons.stage.index
        edges.append(Edge(name, "RAW", i_p, pa[-1].pipe, i_c, ca[0].pipe, fwd, buf.type.depth))
        edges.append(Edge(name, "WAR", i_c, ca[-1].pipe, i_p, pa[0].pipe, bwd, buf.type.depth,
                          extra))
    delays = stage_delays(len(loop.stages), preload)
    for buf, prod, cons in lanes:  # after the lanes: their ids do not depend on reuse
        edges += _region_edges(buf, prod, cons, scan, delays, free)
    graph = SyncGraph(tuple(edges), delays)
    _check_deadlock(graph, loop, scan, stage_span)
    return graph


def _ids(buf: Buffer, what: str, ids: tuple[int, ...]) -> tuple[int, ...]:
    if ids and len(ids) not in (1, buf.type.depth):
        raise InvalidOperation(
            f"cross-core buffer '{buf.name}' has {buf.type.depth} slot(s) but {what} lists "
            f"{len(ids)} id(s)", buf.span,
            hint=f"give one id per slot ({buf.type.depth}) or a single shared id")
    return tuple(ids)


def _check_lane(buf: Buffer, users: list[StageScan], scan: ScanResult, stage_span,
                auto_mutex: bool) -> None:
    name = buf.name
    who = ", ".join(f"'{s.stage.name}' ({s.stage.core})" for s in users)
    if not buf.type.fwd_ids:
        raise InvalidOperation(
            f"buffer '{name}' is shared by stages {who} but declares no fwd_ids", buf.span,
            hint="declare the group outside the sections with fwd_ids=[one id per slot]")
    if len(users) != 2:
        raise InvalidOperation(
            f"cross-core buffer '{name}' is touched by {len(users)} stages ({who}); a "
            f"cross-core buffer connects one producer stage and one consumer stage",
            stage_span(users[2]), hint="use one cross-core buffer per hand-off")
    prod = users[0]
    if not any("W" in a.role for a in prod.of(name)):
        raise InvalidOperation(
            f"cross-core buffer '{name}' is read by stage '{prod.stage.name}' "
            f"({prod.stage.core}) before any stage writes it", stage_span(prod),
            hint="the first stage that touches a cross-core buffer must produce it")
    for s in users:
        if s.advances.get(name, 0) != 1 or name in s.guarded:
            raise InvalidOperation(
                f"stage '{s.stage.name}' must take exactly one slot of cross-core buffer "
                f"'{name}' with .next() per call, outside any if/loop (found "
                f"{s.advances.get(name, 0)}{', conditional' if name in s.guarded else ''})",
                stage_span(s), hint="the transform derives the slot (and its event id) from "
                                    "the iteration number")
        pipes = list(dict.fromkeys(a.pipe.name for a in s.of(name)))
        if len(pipes) > 1 and not (buf.type.mutex_ids and auto_mutex):
            raise InvalidOperation(
                f"stage '{s.stage.name}' touches cross-core buffer '{name}' on pipes "
                f"{' and '.join(pipes)}, which nothing orders on its core", stage_span(s),
                hint="give the group mutex_ids (auto_mutex orders the pipes) or split the stage")
    for target, program in scan.programs.items():
        total = sum(1 for n in _calls(program) if n.op == "tile_group.next"
                    and getattr(n.args[0], "name", None) == name)
        if total > 1:
            raise InvalidOperation(
                f"cross-core buffer '{name}' is advanced with .next() outside its stages on "
                f"the {target} core", buf.span,
                hint="only the producer and consumer stages may advance it")


def _reusers(buf: Buffer, scan: ScanResult) -> dict[str, str]:
    """Other tiles / groups sharing bytes with `buf` on one core → the first overlap, as text."""
    mine = [p for p in scan.placements if p.name == buf.name]
    out: dict[str, str] = {}
    for p in scan.placements:
        for m in mine:
            if p.name != buf.name and m.target == p.target and m.memory == p.memory \
                    and m.start < p.end and p.start < m.end:
                out.setdefault(p.name, f"[{max(m.start, p.start):#x}, "
                                       f"{min(m.end, p.end):#x}) of {p.memory}")
    return out


def _region_edges(buf: Buffer, prod: StageScan, cons: StageScan, scan: ScanResult,
                  graph_delays: tuple[int, ...], free: list[int]) -> list[Edge]:
    """Edges ordering every stage that touches the region (`buf` and the tiles reusing its
    bytes) against the next one in serial order on the other core; the first toucher of
    iteration i+1 waits for the last of iteration i. Same-core neighbours stay in program
    order (the skew must not swap them); their pipes are ordered by the core's own
    synchronisation (mutex ids the user gives the overlapping tiles). Ids are taken from
    `free` (in place)."""
    reusers = _reusers(buf, scan)
    span_of = {p.name: p.span for p in scan.placements}
    for other, where in reusers.items():
        if other in scan.outside:
            raise NotSupported(
                f"'{other}' reuses bytes {where} that cross-core buffer '{buf.name}' uses, "
                f"and is accessed outside the stage loop's stages, which the preload pipeline "
                f"cannot order against the other core", scan.outside[other],
                hint=f"use '{other}' only inside stages, or move it to addresses no "
                     f"cross-core buffer uses")
    users = [s for s in scan.stages if any(o in s.touched() for o in reusers)]
    if not users:
        return []
    names = [buf.name, *(o for o in reusers if any(o in s.touched() for s in users))]
    region = "/".join(names)
    touchers = sorted({s.stage.index: s for s in (prod, cons, *users)}.values(),
                      key=lambda s: s.stage.index)
    # slot-aligned reusers share bytes with one slot at a time: the wrap-around orders
    # iteration i against iteration i + depth (same slot), on one id per slot
    wrap = buf.type.depth if _slot_aligned(buf, names[1:], scan) else 1
    pairs = [(a, b, 0) for a, b in zip(touchers, touchers[1:])]
    pairs.append((touchers[-1], touchers[0], wrap))
    edges: list[Edge] = []
    for a, b, lag in pairs:
        if a is prod and b is cons and not lag:  # the buffer's own RAW edge
            continue
        sa, sb = a.stage, b.stage
        if sa.core == sb.core:
            da, db = graph_delays[sa.index], graph_delays[sb.index]
            # issue order of a call: (beat of iteration 0, delay guard, stage position)
            if (da, da, sa.index) >= (lag + db, db, sb.index):
                raise NotSupported(
                    f"region {region} (bytes {reusers[names[1]]} shared by "
                    f"'{names[1]}' and cross-core buffer '{buf.name}'): the pipeline runs "
                    f"stage '{sb.name}' of iteration i{f'+{lag}' if lag else ''} before stage "
                    f"'{sa.name}' of iteration i on the {sa.core} core, both touching those "
                    f"bytes", span_of.get(names[1], buf.span),
                    hint="lower preload (or sync_only=True), or give the reusing tile its "
                         "own addresses")
            continue
        n_ids = max(lag, 1)
        if len(free) < n_ids:
            raise OutOfRange(
                f"region {region}: no free cross-core event id left to order stage "
                f"'{sa.name}' ({sa.core}) before stage '{sb.name}' ({sb.core})",
                span_of.get(names[1], buf.span),
                hint="free event ids (fewer slots or shared ids), or give the reusing tile "
                     "its own addresses")
        ids = tuple(free[:n_ids])
        del free[:n_ids]
        pa = [x for x in a.accesses if x.buffer in names]
        pb = [x for x in b.accesses if x.buffer in names]
        edges.append(Edge(region, "WAR" if lag else "RAW", sa.index, pa[-1].pipe, sb.index,
                          pb[0].pipe, ids, n_ids, True))
    return edges


def _slot_aligned(buf: Buffer, reusers: list[str], scan: ScanResult) -> bool:
    """Whether every reuser is a tile group whose slot k shares bytes with slot k of `buf` only
    and whose slot follows the iteration as the buffer's does: declared outside every loop,
    advanced with one unguarded .next() per call by the one stage that touches it, and
    nowhere else (so slot = iteration mod depth, as for the buffer's cursor)."""
    depth = buf.type.depth
    if depth < 2:
        return False
    for name in reusers:
        stages = [s for s in scan.stages if name in s.touched()]
        if len(stages) != 1 or name not in scan.buffers or name in scan.looped:
            return False
        s = stages[0]
        if s.advances.get(name, 0) != 1 or name in s.guarded:
            return False
        slots = [p for p in scan.placements if p.name == name]
        target = slots[0].target if slots else None
        ring = [p for p in scan.placements if p.name == buf.name and p.target == target]
        if len(slots) != depth or len(ring) != depth or any(p.target != target for p in slots):
            return False
        for k, p in enumerate(slots):
            if any(j != k and p.memory == b.memory and p.start < b.end and b.start < p.end
                   for j, b in enumerate(ring)):
                return False
        nexts = sum(1 for n in _calls(scan.programs[target]) if n.op == "tile_group.next"
                    and getattr(n.args[0], "name", None) == name)
        if nexts != 1:
            return False
    return True


def _calls(program) -> Iterator:
    from ...ir.mutator import walk
    from ...ir.nodes import Call

    return (n for n in walk(program.kernel.body) if isinstance(n, Call))


# ---------------------------------------------------------------- schedule and deadlock check


def beats(graph: SyncGraph, n_iter: int) -> Iterator[tuple[int, int]]:
    """(stage, iteration) in issue order of the rewritten loop, both cores interleaved."""
    for b in range(n_iter + max(graph.delays)):
        for k, d in enumerate(graph.delays):
            if 0 <= b - d < n_iter:
                yield k, b - d


def _check_deadlock(graph: SyncGraph, loop: StageLoop, scan: ScanResult, stage_span) -> None:
    """Run every core's waits and sets in program order on counting event ids; a state where
    no core can move with waits left is an unsatisfiable cycle."""
    n_iter = 2 * (max(graph.delays) + max((e.depth for e in graph.edges), default=1)) + 2
    programs: dict[str, list[tuple[str, int, int, Edge]]] = {"cube": [], "vector": []}
    core = [s.core for s in loop.stages]
    for e in graph.permits:  # pre-fire on the releasing core
        programs[core[e.src]] += [("set", e.ids[j % len(e.ids)], e.src, e)
                                  for j in range(e.depth)]
    for k, it in beats(graph, n_iter):
        prog = programs[core[k]]
        prog += [("wait", e.ids[it % e.depth % len(e.ids)], k, e) for e in graph.waits(k)]
        prog += [("set", e.ids[it % e.depth % len(e.ids)], k, e) for e in graph.sets(k)]
    for e in graph.permits:  # drain on the waiting core
        programs[core[e.dst]] += [("wait", e.ids[j % len(e.ids)], e.dst, e)
                                  for j in range(e.depth)]
    tokens: dict[int, int] = {}
    pcs = {c: 0 for c in programs}
    moved = True
    while moved:
        moved = False
        for c, prog in programs.items():
            while pcs[c] < len(prog):
                kind, eid, _, _ = prog[pcs[c]]
                if kind == "wait":
                    if tokens.get(eid, 0) == 0:
                        break
                    tokens[eid] -= 1
                else:
                    tokens[eid] = tokens.get(eid, 0) + 1
                pcs[c] += 1
                moved = True
    blocked = [(c, programs[c][pcs[c]]) for c in programs if pcs[c] < len(programs[c])]
    if blocked:
        parts = []
        for c, (_, eid, k, e) in blocked:
            setter = loop.stages[e.src]
            parts.append(f"{c} stage '{loop.stages[k].name}' waits for '{e.label()}' (event id "
                         f"{eid}) from '{setter.name}' ({setter.core})")
        first = scan.stages[blocked[0][1][2]]
        raise InvalidOperation(
            "unsatisfiable pipeline: the rewritten loop deadlocks — " + "; ".join(parts),
            stage_span(first),
            hint="lower preload, or give the buffers on the cycle more slots (depth)")
    leftover = {i: n for i, n in tokens.items() if n}
    if leftover:  # an internal invariant: every set has its wait
        raise InvalidOperation(f"unbalanced cross-core events after the pipeline: {leftover}",
                               stage_span(scan.stages[0]))
