"""auto_mutex: bracket every data access to a mutex-guarded tile with lock/unlock (spec §2.12.4).

For each `block.*` op that accesses data (and `simt.launch` with its tile arguments) the pass
collects the tile operands that come from groups with `mutex_ids`, following the def-use chain:
`tile_group.get(g, idx)` gives `g.mutex_ids[idx]` (constants for a constant index, else
`tile_group.mutex_id(g, idx, k=K)`), assignments pass the ids on, a tile `Select` gives
`Select(cond, id_a, id_b)` and a VF operand `tile + k` has the ids of its tile. It de-duplicates
by slot, drops Acc tiles when a matmul/store carries a unit-flag `phase`, orders tiles whose
possible ids overlap together (union-find) and emits `mutex_lock` for every id before the op and
`mutex_unlock` after it, on the op's pipe (`pipe=`, from pipe_assignment). A VF section is
wrapped once on pipe V for the tiles it uses.
Plain `make_tile` tiles get nothing. When a tile variable's ids cannot be named at its use (the
variable holds different slots on different paths, or its index was re-assigned since), its
ids are kept in `<tile>_mutex` variables assigned next to every definition of the tile.
"""
from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field

from ..errors import NotSupported, ParserTypeError, PassInner
from ..ir import ops
from ..ir.nodes import (
    AssignStmt, BinaryExpr, BreakStmt, Call, ContinueStmt, EvalStmt, Expr, ForStmt, Function,
    FunctionType, IfStmt, Program, SectionStmt, Select, Stmt, Var, WhileStmt,
)
from ..ir.types import INDEX, MemorySpace, PipeType, TileType
from .ir_query import (
    Names, defined_vars, expr_vars, falls_through, is_vf, iter_stmts, map_functions, own_exprs,
    rebuild, replace_fields, stmts_of, sub_exprs, with_body,
)
from .liveness import Liveness
from .manager import PassContext
from .mutex_ops import mutex_stmt, possible_ids, slot_id
from .pipe_assignment import op_pipe

NAME = "auto_mutex"
VIEWS = ("block.subview", "block.reshape", "block.reinterpret")
UNLOWERED = ("tile_group.next", "tile_group.current", "tile_group.previous")
Env = dict[Var, "Slot | None"]


@dataclass(frozen=True)
class Slot:
    """The mutex ids of one buffer slot, as expressions valid where the slot was taken."""

    key: Hashable  # identifies the slot (de-duplication)
    ids: tuple[Expr, ...]
    deps: frozenset[Var]  # Vars the id expressions read
    memory: MemorySpace = field(compare=False)


def run(program: Program, ctx: PassContext) -> Program:
    if not ctx.auto_mutex:
        return program
    return map_functions(program, _lock_function)


def _lock_function(fn: Function) -> Function:
    if fn.func_type is not FunctionType.OPAQUE:
        return fn  # SIMT functions run inside a simt.launch, which is locked as a whole
    live = Liveness(fn.body)
    materialized: set[Var] = set()
    while True:
        walker = _Walker(fn, live, frozenset(materialized))
        body = walker.body(fn.body)
        if not walker.conflicts:
            return with_body(fn, body)
        materialized |= walker.conflicts


def _error(message: str, span, hint: str | None = None) -> NotSupported:
    return NotSupported(message, span, hint=hint, module="PRO_IR", pass_name=NAME)


def _id_count_error(first: int, second: int, span) -> ParserTypeError:
    """One variable holding tiles of groups with different ids a slot: the real parser's
    refusal when it merges the two tiles' mutex metadata (class and words)."""
    return ParserTypeError(f"cannot merge tile mutex metadata with different ID counts: "
                           f"{first} and {second}", span,
                           hint="choose between tile groups with the same number of mutex "
                                "ids per tile", pass_name=NAME)


def is_locked_op(call: Call) -> bool:
    """Ops auto_mutex brackets: data-accessing `block.*` ops and SIMT launches."""
    if call.op == "simt.launch":
        return True
    spec = ops.get(call.op)
    return call.op.startswith("block.") and spec is not None and spec.accesses_data


def _drops_acc(call: Call) -> bool:
    """A matmul / Acc store with a unit-flag phase: M and FIX hand over L0C themselves."""
    phase = call.kwarg("phase")
    spec = ops.get(call.op)
    kind = spec.family == "cube" or call.op in ("block.store", "block.store_fp")
    return kind and phase is not None and int(phase) != 0


def _ordered(slots: list[Slot]) -> list[Slot]:
    """Slots grouped by overlapping possible ids (union-find), groups in first-use order."""
    sets = [frozenset().union(*(possible_ids(i) for i in s.ids)) for s in slots]
    parent = list(range(len(slots)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(len(slots)):
        for j in range(i + 1, len(slots)):
            if sets[i] & sets[j]:
                parent[find(j)] = find(i)
    groups: dict[int, list[Slot]] = {}
    for i, s in enumerate(slots):
        groups.setdefault(find(i), []).append(s)
    return [s for g in groups.values() for s in g]


def _bracket(stmt: Stmt, slots: list[Slot], pipe: PipeType, span) -> list[Stmt]:
    if not slots:
        return [stmt]
    # an id two tiles share (groups may repeat ids) is locked once: a pipe never holds an id
    # twice, and every lock keeps exactly one unlock for redundant_mutex to pair
    ids = list(dict.fromkeys(i for s in _ordered(slots) for i in s.ids))
    return ([mutex_stmt(True, pipe, i, span) for i in ids] + [stmt]
            + [mutex_stmt(False, pipe, i, span) for i in ids])


@dataclass
class _Loop:
    breaks: list[Env] = field(default_factory=list)
    continues: list[Env] = field(default_factory=list)


class _Walker:
    """One rewrite of a function; `conflicts` lists tile Vars that need `_mutex` variables."""

    def __init__(self, fn: Function, live: Liveness, materialized: frozenset[Var]) -> None:
        self.live = live
        self.materialized = materialized
        self.names = Names(fn)
        self.env: Env = {}
        self.mid: dict[Var, tuple[Var, ...]] = {}
        self.loops: list[_Loop] = []
        self.conflicts: set[Var] = set()

    # ------------------------------------------------------------ mutex ids of tile values
    def slot_of(self, e: Expr) -> Slot | None:
        if isinstance(e, Var):
            if e in self.materialized:
                return self.mid_slot(e)
            return self.env.get(e)
        if isinstance(e, Call):
            if e.op == "tile_group.get":
                return self.group_slot(e)
            if e.op in VIEWS:
                return self.slot_of(e.args[0])
            if e.op in UNLOWERED:
                raise PassInner(f"{e.op} reached {NAME}: tile_group_lowering must run first",
                                e.span, pass_name=NAME)
        if isinstance(e, Select) and isinstance(e.type, TileType):
            return self.select_slot(e)
        if isinstance(e, BinaryExpr) and isinstance(e.type, TileType):
            return self.slot_of(e.lhs)  # a VF operand `tile + k`: an element offset into lhs
        return None

    def group_slot(self, call: Call) -> Slot | None:
        group, index = call.args
        gt = group.type
        if not gt.mutex_ids:
            return None
        ids = tuple(slot_id(group, index, k, call.span) for k in range(len(gt.mutex_ids[0])))
        return Slot(("slot", group, index), ids, frozenset(expr_vars(index)), gt.tile.memory)

    def select_slot(self, e: Select) -> Slot | None:
        a, b = self.slot_of(e.true_value), self.slot_of(e.false_value)
        if a == b:
            return a
        if a is None or b is None:
            raise ParserTypeError("Ternary selecting a tile must have both branches carry a "
                                  "mutex id; one branch has no tile mutex metadata", e.span,
                                  hint="Ensure both branches are tiles from a tile_group "
                                       "(auto_mutex), or neither is", pass_name=NAME)
        if len(a.ids) != len(b.ids):
            raise _id_count_error(len(a.ids), len(b.ids), e.span)
        ids = tuple(Select(e.cond, x, y, INDEX, e.span) for x, y in zip(a.ids, b.ids))
        return Slot(("select", e.cond, a.key, b.key), ids,
                    a.deps | b.deps | frozenset(expr_vars(e.cond)), a.memory)

    def mid_slot(self, tile: Var) -> Slot:
        if tile not in self.mid:
            raise PassInner(f"tile '{tile.name}' is used before any definition", tile.span,
                            pass_name=NAME)
        mids = self.mid[tile]
        return Slot(("var", tile), mids, frozenset(mids), tile.type.memory)

    def operand_slots(self, call: Call) -> list[Slot]:
        drop_acc = _drops_acc(call)
        found: dict[Hashable, Slot] = {}
        for a in call.args:
            if not isinstance(a.type, TileType):
                continue
            s = self.slot_of(a)
            if s is None or (drop_acc and s.memory is MemorySpace.Acc):
                continue
            found.setdefault(s.key, s)
        return list(found.values())

    # ------------------------------------------------------------ statements
    def body(self, body: Stmt | None) -> Stmt | None:
        if body is None:
            return None
        return rebuild(body, [x for s in stmts_of(body) for x in self.stmt(s)])

    def stmt(self, s: Stmt) -> list[Stmt]:
        if isinstance(s, AssignStmt):
            return self.assign(s)
        if isinstance(s, EvalStmt) and isinstance(s.expr, Call) and is_locked_op(s.expr):
            return _bracket(s, self.operand_slots(s.expr), op_pipe(s.expr), s.span)
        if isinstance(s, IfStmt):
            return [self.if_stmt(s)]
        if isinstance(s, (ForStmt, WhileStmt)):
            return [self.loop(s)]
        if is_vf(s):
            return self.vf_section(s)
        if isinstance(s, SectionStmt):
            return [replace_fields(s, body=self.body(s.body))]
        if isinstance(s, (BreakStmt, ContinueStmt)) and self.loops:
            exits = self.loops[-1].breaks if isinstance(s, BreakStmt) else \
                self.loops[-1].continues
            exits.append(dict(self.env))
        return [s]

    def assign(self, s: AssignStmt) -> list[Stmt]:
        out = [s]
        if isinstance(s.value, Call) and is_locked_op(s.value):
            out = _bracket(s, self.operand_slots(s.value), op_pipe(s.value), s.span)
        self.mark_stale(s)
        if not isinstance(s.var.type, TileType):
            return out
        slot = self.slot_of(s.value)
        self.env[s.var] = slot
        if s.var in self.materialized:
            out.extend(self.materialize(s, slot))
        return out

    def mark_stale(self, s: AssignStmt) -> None:
        """Tiles still used later whose ids read the Var this statement re-assigns."""
        live = self.live.after(s)
        for tile, slot in self.env.items():
            if slot is not None and s.var in slot.deps and tile in live and \
                    tile is not s.var and tile not in self.materialized:
                self.conflicts.add(tile)

    def materialize(self, s: AssignStmt, slot: Slot | None) -> list[Stmt]:
        tile = s.var
        if slot is None:
            raise _error(f"tile variable '{tile.name}' holds both mutex-guarded group tiles "
                         f"and plain tiles; auto_mutex cannot tell which ids to lock", s.span,
                         hint="use separate variables for group tiles and plain tiles")
        if tile not in self.mid:
            self.mid[tile] = tuple(Var(self.names.fresh(f"{tile.name}_mutex"), INDEX, s.span)
                                   for _ in slot.ids)
        mids = self.mid[tile]
        if len(mids) != len(slot.ids):
            raise _id_count_error(len(mids), len(slot.ids), s.span)
        return [AssignStmt(m, i, s.span) for m, i in zip(mids, slot.ids)]

    def merge(self, envs: list[Env], live: frozenset[Var]) -> Env:
        """The environment where `envs` join; differing live tiles become conflicts."""
        if not envs:
            return {}
        out: Env = {}
        for tile in set().union(*envs):
            values = [e.get(tile) for e in envs]
            if all(v == values[0] for v in values):
                out[tile] = values[0]
            elif tile in live and tile not in self.materialized:
                self.conflicts.add(tile)
        return out

    def if_stmt(self, s: IfStmt) -> Stmt:
        entry = dict(self.env)
        then = self.body(s.then_body)
        after_then, self.env = self.env, dict(entry)
        other = self.body(s.else_body)
        joins = [e for e, b in ((after_then, s.then_body), (self.env, s.else_body))
                 if falls_through(b)]
        self.env = self.merge(joins, self.live.after(s))
        return replace_fields(s, then_body=then, else_body=other)

    def loop(self, s: ForStmt | WhileStmt) -> Stmt:
        entry = dict(self.env)
        self.loops.append(_Loop())
        body = self.body(s.body)
        state = self.loops.pop()
        back = ([self.env] if falls_through(s.body) else []) + state.continues
        self.merge([entry, *back], self.live.loop_head(s))
        self.env = self.merge([entry, *back, *state.breaks], self.live.after(s))
        return replace_fields(s, body=body)

    def vf_section(self, s: SectionStmt) -> list[Stmt]:
        """A VF body cannot hold locks: lock its tiles once around the section, on pipe V."""
        outer, self.env = self.env, dict(self.env)
        inner_defs = defined_vars(s.body)
        found: dict[Hashable, Slot] = {}
        for st in iter_stmts(s.body):
            for e in own_exprs(st):
                for call in (n for n in sub_exprs(e) if isinstance(n, Call)):
                    for a in call.args:
                        slot = self.slot_of(a) if isinstance(a.type, TileType) else None
                        if slot is not None:
                            found.setdefault(slot.key, slot)
            if isinstance(st, AssignStmt) and isinstance(st.var.type, TileType):
                self.env[st.var] = self.slot_of(st.value)
        self.env = outer
        for slot in found.values():
            if slot.deps & inner_defs:
                raise _error("the mutex id of a tile chosen inside a vector function cannot "
                             "be locked around it", s.span,
                             hint="choose the tile slot before calling the vector function")
        return _bracket(s, list(found.values()), PipeType.V, s.span)
