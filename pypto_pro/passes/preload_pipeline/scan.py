"""Step 2 of the preload transform (spec §2.12.6 `_cross_core_scanner`): per stage, per op,
which cross-core buffer it touches, with which role (R / W / RW) and on which pipe.

A probe parse of the unchanged kernel gives the facts the source alone cannot: each stage's
body is inlined into its section (nested helpers included), tile values are traced back to
the tile group they were taken from, and `pipe_assignment` names the pipe of every op from the
memory spaces of its operands. Declared tiles are traced too (and their accesses outside
the stage sections recorded): the sync graph orders those that reuse a cross-core buffer's
bytes. A cross-core buffer is a tile group declared outside the
sections; it is part of the pipeline when a stage on each core touches it.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ...errors import InvalidOperation
from ...ir import ops
from ...ir.mutator import walk
from ...ir.nodes import (
    AssignStmt,
    Call,
    Expr,
    ForStmt,
    IfStmt,
    Program,
    SectionStmt,
    Select,
    Var,
    WhileStmt,
)
from ...ir.span import Span
from ...ir.types import PipeType, TileGroupType, TileType
from ...language.parser import parse_target
from ...runtime.kernel_def import KernelDef, Specialization
from .. import pipe_assignment, tile_group_lowering
from ..manager import PassContext
from .analysis import StageCall, StageLoop

_VIEWS = ("block.subview", "block.reshape", "block.reinterpret")
_SLOTS = ("tile_group.get", "tile_group.next", "tile_group.current", "tile_group.previous")


@dataclass(frozen=True)
class Access:
    """One op touching a tile group or a declared tile."""

    buffer: str
    role: str  # "R" | "W" | "RW"
    pipe: PipeType
    op: str
    span: Span


@dataclass(frozen=True)
class Buffer:
    """A tile group both targets see, as declared."""

    name: str
    type: TileGroupType
    span: Span


@dataclass(frozen=True)
class Placement:
    """Bytes a declared tile (or one slot of a group) occupies on one core."""

    name: str
    target: str
    memory: str
    start: int
    end: int
    span: Span


@dataclass
class StageScan:
    stage: StageCall
    accesses: list[Access] = field(default_factory=list)
    advances: dict[str, int] = field(default_factory=dict)  # buffer → next() per call
    guarded: set[str] = field(default_factory=set)  # buffers advanced under control flow

    def touched(self) -> list[str]:
        return list(dict.fromkeys(a.buffer for a in self.accesses))

    def of(self, buffer: str) -> list[Access]:
        return [a for a in self.accesses if a.buffer == buffer]


@dataclass
class ScanResult:
    buffers: dict[str, Buffer]
    stages: list[StageScan]
    programs: dict[str, Program]  # target → the probe parse (the kernel before the transform)
    used_event_ids: set[int]  # literal ids of hand-written cross-core ops
    placements: list[Placement]  # every make_tile / tile-group slot, per target
    outside: dict[str, Span]  # tile (group) → an access of it outside the stage sections
    looped: set[str]  # groups declared inside a loop: their cursor restarts every trip


def scan(kdef: KernelDef, spec: Specialization, loop: StageLoop) -> ScanResult:
    scans = [StageScan(s) for s in loop.stages]
    programs: dict[str, Program] = {}
    buffers: dict[str, Buffer] = {}
    used: set[int] = set()
    placed: list[Placement] = []
    outside: dict[str, Span] = {}
    looped: set[str] = set()
    for target in ("cube", "vector"):
        parsed = parse_target(kdef, spec, target).program
        programs[target] = parsed
        ctx = PassContext.for_kernel(target, spec.arch, kdef.options)
        lowered = pipe_assignment.run(tile_group_lowering.run(parsed, ctx), ctx)
        for n in walk(parsed.kernel.body):
            if isinstance(n, AssignStmt) and isinstance(n.var.type, TileGroupType):
                buffers.setdefault(n.var.name, Buffer(n.var.name, n.var.type, n.span))
            if isinstance(n, AssignStmt):
                placed.extend(_placements(n, target))
            if isinstance(n, Call) and "cross_core" in n.op:
                eid = n.kwarg("event_id")
                if isinstance(getattr(eid, "value", None), int):
                    used.add(eid.value)
        looped |= {d.var.name for n in walk(parsed.kernel.body)
                   if isinstance(n, (ForStmt, WhileStmt)) for d in walk(n.body)
                   if isinstance(d, AssignStmt) and isinstance(d.var.type, TileGroupType)}
        raw = _sections(parsed, kdef.file)
        low = _sections(lowered, kdef.file)
        defs = _definitions(lowered)
        for s in scans:
            if s.stage.core != target:
                continue
            if s.stage.line not in low:
                raise InvalidOperation(f"stage '{s.stage.name}': its section was not found "
                                       f"in the {target} program", _span(kdef, s.stage))
            _count_advances(s, raw[s.stage.line])
            s.accesses = _accesses(walk(low[s.stage.line].body), defs)
        staged = {id(n) for s in scans if s.stage.line in low
                  for n in walk(low[s.stage.line].body)}
        rest = (n for n in walk(lowered.kernel.body) if id(n) not in staged)
        for a in _accesses(rest, defs):
            outside.setdefault(a.buffer, a.span)
    return ScanResult(buffers, scans, programs, used, placed, outside, looped)


def _placements(s: AssignStmt, target: str) -> list[Placement]:
    v, t = s.value, s.value.type
    if isinstance(v, Call) and v.op == "tile_group.make" and isinstance(t, TileGroupType):
        tile, addrs = t.tile, t.addrs
    elif isinstance(v, Call) and v.op == "block.make_tile" and isinstance(t, TileType):
        tile, addrs = t, t.addresses
    else:
        return []
    return [Placement(s.var.name, target, tile.memory.name, a, a + tile.nbytes, s.span)
            for a in addrs if a is not None]


def _span(kdef: KernelDef, stage: StageCall) -> Span:
    return Span(kdef.file, stage.line, stage.section.col_offset + 1)


def _sections(program: Program, file: str) -> dict[int, SectionStmt]:
    return {n.span.line: n for n in walk(program.kernel.body)
            if isinstance(n, SectionStmt) and n.span.file == file
            and n.kind.name.lower() in ("cube", "vector")}


def _definitions(program: Program) -> dict[Var, list[Expr]]:
    defs: dict[Var, list[Expr]] = {}
    for n in walk(program.kernel.body):
        if isinstance(n, AssignStmt):
            defs.setdefault(n.var, []).append(n.value)
    return defs


def _groups(e: Expr, defs: dict[Var, list[Expr]], seen: frozenset = frozenset()) -> set[str]:
    """The tile groups whose slots `e` may be, or the declared tiles it may be (following
    assignments, views and selects)."""
    if isinstance(e, Var):
        if isinstance(e.type, TileGroupType):
            return {e.name}
        if e in seen:
            return set()
        if any(isinstance(d, Call) and d.op == "block.make_tile" for d in defs.get(e, ())):
            return {e.name}
        return set().union(*(_groups(d, defs, seen | {e}) for d in defs.get(e, ())))
    if isinstance(e, Call):
        if e.op in _SLOTS and e.args:
            return _groups(e.args[0], defs, seen)
        if e.op in _VIEWS and e.args:
            return _groups(e.args[0], defs, seen)
        return set()
    if isinstance(e, Select):
        return _groups(e.true_value, defs, seen) | _groups(e.false_value, defs, seen)
    return set()


def _accesses(nodes: Iterable, defs: dict[Var, list[Expr]]) -> list[Access]:
    """The accesses of the ops among `nodes` to tile groups and declared tiles."""
    out: list[Access] = []
    for n in nodes:
        if not isinstance(n, Call):
            continue
        roles: dict[str, str] = {}
        if n.op.startswith("vf."):  # register code: conservatively read and written, pipe V
            pipe = PipeType.V
            for a in n.args:
                for g in _groups(a, defs):
                    roles[g] = "RW"
        elif pipe_assignment.needs_pipe(n):
            pipe = pipe_assignment.op_pipe(n)
            reads, writes = ops.get(n.op).roles(len(n.args))
            for i, a in enumerate(n.args):
                role = ("R" if i in reads else "") + ("W" if i in writes else "")
                for g in _groups(a, defs) if role else ():
                    roles[g] = "RW" if g in roles and roles[g] != role else role
        else:
            continue
        out.extend(Access(g, r, pipe, n.op, n.span) for g, r in roles.items())
    return out


def _count_advances(s: StageScan, section: SectionStmt) -> None:
    def nexts(node) -> list[str]:
        return [n.args[0].name for n in walk(node) if isinstance(n, Call)
                and n.op == "tile_group.next" and n.args and isinstance(n.args[0], Var)]

    for g in nexts(section.body):
        s.advances[g] = s.advances.get(g, 0) + 1
    for n in walk(section.body):
        if isinstance(n, (IfStmt, ForStmt, WhileStmt)):
            s.guarded.update(nexts(n))
