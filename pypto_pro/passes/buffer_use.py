"""Which on-chip buffers share bytes while both are in use: the facts behind verify_memory's
overlap check and the sanitizer's race hints.

A buffer *owner* is a `block.make_tile` tile or a `tile_group.make` group (all its slots). Every
tile operand of a data op is traced back to its owner through the Vars that alias it
(`tile_group.get`, views, plain copies, loop-carried values). Two owners *conflict* when their
byte ranges overlap and one is written while the other still holds data that is read later:

* a tile holds a value from a write to the last read before its next write (found by a forward
  "written" and a backward "read later" dataflow over the structured IR, loops to a fixpoint);
  a tile that lies wholly inside another tile is a view of it (how kernels alias on purpose);
* a group's slots rotate and stay in flight between pipes, so the whole group is in use from
  its first access to its last, and over every loop an access sits in that does not also make
  the group; two groups whose overlapping slots share a mutex id are ordered by it.

Two owners an in-place op names as its source and destination at one address
(`pl.fillpad(dst, src, mode=INPLACE)`, which the docs write with two groups made at the same
address) are one buffer by the op's own contract: they never conflict.

A conflict is *certain* when every access it rests on runs on every path (loops are taken to
run, as a kernel's tiling loops do), and *possible* when one of them sits under an `if` on a
run-time value. Owns no pass; imports only `pypto_pro.ir` and the pass helpers.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from ..ir import ops as opreg
from ..ir.nodes import (
    AssignStmt, Call, ConstInt, EvalStmt, ForStmt, Function, IfStmt, Program, SectionStmt, Stmt,
    Var, WhileStmt,
)
from ..ir.span import Span
from ..ir.types import MemorySpace, TileGroupType, TileType
from .ir_query import own_exprs, stmts_of, sub_exprs



@dataclass(frozen=True)
class Owner:
    """A buffer: a tile (one range) or a tile group (one range per slot)."""

    name: str
    kind: str  # "tile" | "group"
    space: MemorySpace
    ranges: tuple[tuple[int, int], ...]
    span: Span
    mutex_ids: tuple[tuple[int, ...], ...] = ()

    def label(self, slot: int | None = None) -> str:
        if self.kind == "tile":
            return f"tile {self.name}"
        return f"group {self.name}" + ("" if slot is None else f" slot {slot}")

    def where(self, slot: int | None = None) -> str:
        lo, hi = self.ranges[slot or 0]
        return f"{self.label(slot)} [{lo:#x}, {hi:#x}) (line {self.span.line})"


@dataclass(frozen=True)
class Access:
    """One data op reading or writing an owner (`slot` None: any slot of a group)."""

    owner: Owner
    slot: int | None
    write: bool
    pos: int
    span: Span
    conditional: bool


@dataclass(frozen=True)
class Conflict:
    """Two owners sharing bytes while in use: `a` slot `slot_a` and `b` slot `slot_b`; `at` is
    the write that lands while the other holds data (None for two groups in flight)."""

    a: Owner
    slot_a: int | None
    b: Owner
    slot_b: int | None
    certain: bool
    at: Access | None = None
    uses: tuple[int, int] = (0, 0)  # first and last source line where both are in use

    @property
    def shared(self) -> tuple[int, int]:
        (alo, ahi), (blo, bhi) = self.a.ranges[self.slot_a or 0], self.b.ranges[self.slot_b or 0]
        return max(alo, blo), min(ahi, bhi)


@dataclass
class _Walk:
    """The accesses of one function in program order, and its loops' position ranges."""

    owners: dict[int, Owner] = field(default_factory=dict)  # Var uid → owner
    slots: dict[int, int | None] = field(default_factory=dict)  # Var uid → slot
    accesses: list[Access] = field(default_factory=list)
    loops: list[tuple[int, int]] = field(default_factory=list)  # (start, end) positions
    made_at: dict[int, int] = field(default_factory=dict)  # id(owner) → its make's position
    pos: int = 0
    #: (id(owner), slot) pairs an in-place op declares one buffer (see the module doc)
    same: set[frozenset] = field(default_factory=set)


def conflicts(program: Program) -> list[Conflict]:
    """Every pair of owners that share bytes while in use, certain ones first."""
    found: list[Conflict] = []
    for fn in program.functions:
        found.extend(_function_conflicts(fn))
    return sorted(found, key=lambda c: not c.certain)


def line_owners(program: Program) -> dict[int, list[tuple[Owner, int | None]]]:
    """Source line → the owners (and slots) the data ops of that line access."""
    out: dict[int, list[tuple[Owner, int | None]]] = {}
    for fn in program.functions:
        walk = _Walk()
        _block(fn.body, walk, False)
        for a in walk.accesses:
            if a.span.line > 0 and (a.owner, a.slot) not in out.setdefault(a.span.line, []):
                out[a.span.line].append((a.owner, a.slot))
    return out


# ------------------------------------------------------------------ walking the IR


def _block(body: Stmt | None, w: _Walk, cond: bool) -> None:
    for s in stmts_of(body):
        _stmt(s, w, cond)


def _stmt(s: Stmt, w: _Walk, cond: bool) -> None:
    w.pos += 1
    if isinstance(s, AssignStmt):
        _define(s, w)
    if isinstance(s, (AssignStmt, EvalStmt)):
        for e in own_exprs(s):
            for call in (n for n in sub_exprs(e) if isinstance(n, Call)):
                _record(call, s.span, w, cond)
    if isinstance(s, IfStmt):
        _block(s.then_body, w, True)
        _block(s.else_body, w, True)
    elif isinstance(s, SectionStmt):
        _block(s.body, w, cond)
    elif isinstance(s, (ForStmt, WhileStmt)):
        for var, init in zip(s.iter_args, s.init_values):
            _alias(var, init, w)
        start = w.pos
        _block(s.body, w, cond)
        w.loops.append((start, w.pos))
        for var, init in zip(s.return_vars, s.init_values):
            _alias(var, init, w)


def _define(s: AssignStmt, w: _Walk) -> None:
    value, t = s.value, s.value.type
    if isinstance(value, Call) and value.op == "block.make_tile" and isinstance(t, TileType) \
            and t.addr is not None:
        size = value.kwarg("memref_size") or t.nbytes
        _own(s.var, Owner(s.var.name, "tile", t.memory, ((t.addr, t.addr + size),), s.span), w)
    elif isinstance(value, Call) and value.op == "tile_group.make" \
            and isinstance(t, TileGroupType):
        ranges = tuple((a, a + t.tile.nbytes) for a in t.addrs)
        _own(s.var, Owner(s.var.name, "group", t.tile.memory, ranges, s.span, t.mutex_ids), w)
    elif isinstance(value, Call) and _is_view(value.op) and value.args:
        slot = None
        if value.op == "tile_group.get" and isinstance(value.args[1], ConstInt):
            slot = value.args[1].value
        _alias(s.var, value.args[0], w, slot)
    elif isinstance(value, Var):
        _alias(s.var, value, w)


def _is_view(op: str) -> bool:
    """An op that gives another name to the buffer of its first operand (a group slot,
    `subview`, `reshape`, `reinterpret`): a tile-returning op of the registry's "meta" family."""
    spec = opreg.get(op)
    return spec is not None and spec.returns == "tile" and spec.family == "meta"


def _own(var: Var, owner: Owner, w: _Walk) -> None:
    w.owners[var.uid] = owner
    w.slots[var.uid] = None
    w.made_at[id(owner)] = w.pos


def _alias(var: Var, source: object, w: _Walk, slot: int | None = None) -> None:
    if isinstance(source, Var) and source.uid in w.owners:
        w.owners[var.uid] = w.owners[source.uid]
        w.slots[var.uid] = slot if slot is not None else w.slots[source.uid]


def _record(call: Call, span: Span, w: _Walk, cond: bool) -> None:
    spec = opreg.get(call.op)
    if spec is None or not spec.accesses_data:
        return
    reads, writes = spec.roles(len(call.args))
    opaque = not (spec.reads or spec.writes)  # a SIMT launch, a VF op: any tile it is given
    for i, arg in enumerate(call.args):
        if not (isinstance(arg, Var) and arg.uid in w.owners):
            continue
        owner, slot = w.owners[arg.uid], w.slots[arg.uid]
        if i in reads or opaque:
            w.accesses.append(Access(owner, slot, False, w.pos, span, cond))
        if i in writes or opaque:
            w.accesses.append(Access(owner, slot, True, w.pos, span, cond))
    if call.op in _IN_PLACE:
        dst, src = (call.args[k] for k in _IN_PLACE[call.op])
        if isinstance(dst, Var) and isinstance(src, Var) and dst.uid in w.owners \
                and src.uid in w.owners:
            w.same.add(frozenset(((id(w.owners[dst.uid]), w.slots[dst.uid]),
                                  (id(w.owners[src.uid]), w.slots[src.uid]))))


#: ops whose destination and source are one buffer by contract: op → (dst, src) positions
_IN_PLACE = {"block.fillpad_inplace": (0, 1)}


# ------------------------------------------------------------------ conflicts of one function


def _function_conflicts(fn: Function) -> Iterator[Conflict]:
    w = _Walk()
    _block(fn.body, w, False)
    owners = list({id(o): o for o in w.owners.values()}.values())
    if len(owners) < 2:
        return
    spans = {id(o): _in_use(o, w) for o in owners}
    values = _tile_values(w)
    for i, a in enumerate(owners):
        for b in owners[i + 1:]:
            if a.space is not b.space or a.space is MemorySpace.DDR:
                continue
            for sa, sb in _overlapping_slots(a, b):
                found = _pair(a, sa, b, sb, w, spans, values)
                if found is not None:
                    yield found


def _overlapping_slots(a: Owner, b: Owner) -> Iterator[tuple[int | None, int | None]]:
    for i, (alo, ahi) in enumerate(a.ranges):
        for j, (blo, bhi) in enumerate(b.ranges):
            if alo < bhi and blo < ahi:
                yield (i if a.kind == "group" else None), (j if b.kind == "group" else None)


def _pair(a: Owner, sa: int | None, b: Owner, sb: int | None, w: _Walk,
          spans: dict, values: dict) -> Conflict | None:
    if a.ranges[sa or 0] == b.ranges[sb or 0] and _declared_one(a, sa, b, sb, w):
        return None
    if a.kind == "tile" and b.kind == "tile":
        (alo, ahi), (blo, bhi) = a.ranges[0], b.ranges[0]
        if (alo <= blo and bhi <= ahi) or (blo <= alo and ahi <= bhi):
            return None  # a view of the other: aliasing on purpose
        return _clobber(a, sa, b, sb, w, values, spans)
    if a.kind == "group" and b.kind == "group":
        if a.mutex_ids and b.mutex_ids and set(a.mutex_ids[sa]) & set(b.mutex_ids[sb]):
            return None  # one mutex orders every access to the shared bytes
        (ma, ca), (mb, cb) = spans[id(a)], spans[id(b)]
        if ma is None or mb is None or ma[1] < mb[0] or mb[1] < ma[0]:
            return None
        certain = ca is not None and cb is not None and not (ca[1] < cb[0] or cb[1] < ca[0])
        lo, hi = max(ma[0], mb[0]), min(ma[1], mb[1])
        return Conflict(a, sa, b, sb, certain, None, _lines(w, lo, hi))
    return _clobber(a, sa, b, sb, w, values, spans)


def _declared_one(a: Owner, sa: int | None, b: Owner, sb: int | None, w: _Walk) -> bool:
    """An in-place op named these two (slots, or the groups as a whole) as one buffer."""
    return any(frozenset(((id(a), x), (id(b), y))) in w.same
               for x in {sa, None} for y in {sb, None})


def _clobber(a: Owner, sa: int | None, b: Owner, sb: int | None, w: _Walk, values: dict,
             spans: dict) -> Conflict | None:
    """A write to one owner while the other holds data (a group: while it is in flight)."""
    best: Conflict | None = None
    for x, sx, y in ((a, sa, b), (b, sb, a)):
        for acc in w.accesses:
            if acc.owner is not x or not acc.write or not _slot_hits(acc.slot, sx):
                continue
            held = _holds(y, acc.pos, spans, values)
            if held is None:
                continue
            certain = held and not acc.conditional
            if best is None or (certain and not best.certain):
                lo, hi = _use_range(y, acc.pos, spans, values)
                best = Conflict(a, sa, b, sb, certain, acc, _lines(w, lo, hi))
            if certain:
                return best
    return best


def _slot_hits(accessed: int | None, slot: int | None) -> bool:
    return accessed is None or slot is None or accessed == slot


def _holds(owner: Owner, pos: int, spans: dict, values: dict) -> bool | None:
    """Whether `owner` holds data at `pos` (True: on every path, False: on some; None: not)."""
    if owner.kind == "group":
        may, must = spans[id(owner)]
        if may is None or not may[0] <= pos <= may[1]:
            return None
        return must is not None and must[0] <= pos <= must[1]
    return values.get((id(owner), pos))


def _use_range(owner: Owner, pos: int, spans: dict, values: dict) -> tuple[int, int]:
    if owner.kind == "group":
        return spans[id(owner)][0]
    held = sorted(p for (o, p) in values if o == id(owner))
    return (held[0], held[-1]) if held else (pos, pos)


def _lines(w: _Walk, lo: int, hi: int) -> tuple[int, int]:
    lines = [a.span.line for a in w.accesses if lo <= a.pos <= hi and a.span.line > 0]
    return (min(lines), max(lines)) if lines else (0, 0)


def _in_use(owner: Owner, w: _Walk) -> tuple[tuple[int, int] | None, tuple[int, int] | None]:
    """A group's (may, must) position range in flight: its accesses' hull, widened to every
    loop an access sits in that does not also make the group."""
    if owner.kind != "group":
        return None, None
    made = w.made_at[id(owner)]

    def hull(accesses: list[Access]) -> tuple[int, int] | None:
        if not accesses:
            return None
        lo, hi = min(a.pos for a in accesses), max(a.pos for a in accesses)
        for start, end in w.loops:
            if not start <= made <= end and any(start <= a.pos <= end for a in accesses):
                lo, hi = min(lo, start), max(hi, end)
        return lo, hi

    mine = [a for a in w.accesses if a.owner is owner]
    return hull(mine), hull([a for a in mine if not a.conditional])


def _tile_values(w: _Walk) -> dict[tuple[int, int], bool]:
    """(tile owner id, position) → True/False where the tile holds a value that is read later
    (on every path / on some path), for the positions of writes to other owners."""
    tiles = {id(a.owner) for a in w.accesses if a.owner.kind == "tile"}
    if not tiles:
        return {}
    by_pos: dict[int, list[Access]] = {}
    for a in w.accesses:
        by_pos.setdefault(a.pos, []).append(a)
    written = _forward(w, by_pos, tiles)
    later = _backward(w, by_pos, tiles)
    out: dict[tuple[int, int], bool] = {}
    for pos in by_pos:
        before, after = written.get(pos, {}), later.get(pos, {})
        for t in tiles:
            if t in before and t in after:
                out[(t, pos)] = before[t] and after[t]
    return out


# Dataflow over positions. The walk flattened the IR; the loops' (start, end) ranges and the
# accesses' `conditional` flags are all the structure the two analyses need: a statement under
# an `if` may not run (its effect is "on some path"), a loop body runs again after its end.
# Two rounds reach the fixpoint: the second carries each loop's back edge once more.

def _forward(w: _Walk, by_pos: dict[int, list[Access]], tiles: set[int]
             ) -> dict[int, dict[int, bool]]:
    """Position → tiles written before it (True: on every path)."""
    end_of = dict(w.loops)  # loop start → its last position
    at_end: dict[int, dict[int, bool]] = {}
    out: dict[int, dict[int, bool]] = {}
    for _ in range(2):
        state: dict[int, bool] = {}
        for pos in range(1, w.pos + 1):
            if pos in end_of:  # a later iteration starts with what the last one wrote
                _merge(state, at_end.get(end_of[pos], {}))
            out[pos] = dict(state)
            for a in by_pos.get(pos, ()):
                if a.write and id(a.owner) in tiles:
                    _merge(state, {id(a.owner): not a.conditional})
            at_end[pos] = dict(state)
    return out


def _backward(w: _Walk, by_pos: dict[int, list[Access]], tiles: set[int]
              ) -> dict[int, dict[int, bool]]:
    """Position → tiles read after it before being written again (True: on every path)."""
    start_of = {end: start for start, end in w.loops}
    at_start: dict[int, dict[int, bool]] = {}
    out: dict[int, dict[int, bool]] = {}
    for _ in range(2):
        state: dict[int, bool] = {}
        for pos in range(w.pos, 0, -1):
            if pos in start_of:  # what the next iteration reads first
                _merge(state, at_start.get(start_of[pos], {}))
            out[pos] = dict(state)
            here = by_pos.get(pos, ())
            for a in here:  # an unconditional write that does not also read ends the value
                if a.write and not a.conditional and id(a.owner) in tiles and not any(
                        r.owner is a.owner and not r.write for r in here):
                    state.pop(id(a.owner), None)
            for a in here:
                if not a.write and id(a.owner) in tiles:
                    _merge(state, {id(a.owner): not a.conditional})
            at_start[pos] = dict(state)
    return out


def _merge(state: dict[int, bool], more: dict[int, bool]) -> None:
    for t, sure in more.items():
        state[t] = state.get(t, False) or sure
