"""mutex_dedup: never let a pipe hold one id twice, and drop mutexes only pipe V uses (spec §4.2).

Two outstanding `get_buf` of the same id on the same pipe hang the hardware. In each run of
consecutive locks (and of unlocks) on one pipe — one op's lock set — a constant id is kept once
and constants come first; a runtime id identical to an earlier one is dropped, and any other
runtime id gets `guard=[...]`: the earlier ids it could equal (possible values overlap), except
other ids of the same tile, which never collide. Code generation emits
`if (id != g0 && id != g1) get_buf(...)` and the simulator skips the lock when the id equals a
guard. An unlock takes the decision of its lock (same pipe and id, first come first served in
its statement list): redundant_mutex may have moved an id's unlock out of the run its lock
sat in, and a lock skipped must have its unlock skipped too. Ids are read through the SSA Vars
that name them. On a5, an id that every mutex statement
of the program uses only on pipe V is elided (V executes in order, so the mutex orders nothing).
"""
from __future__ import annotations

from collections import defaultdict, deque

from ..ir.nodes import (
    AssignStmt, Call, ConstInt, EvalStmt, Expr, Function, Program, Select, Stmt, Var,
)
from ..ir.types import PipeType
from .ir_query import (
    body_exprs, is_scalar, iter_stmts, map_blocks, map_functions, rebuild, replace_fields,
    stmts_of, with_body,
)
from .manager import PassContext
from .mutex_ops import (
    MUTEX_OPS, id_of, is_lock, mutex_call, pipe_of, possible_ids, same_tile, with_kwarg,
)

NAME = "mutex_dedup"


class _Ids:
    """Reads id expressions of one function through the scalar Vars that name them (an SSA
    Var bound to a constant, a `Select` of ids or a `tile_group.mutex_id`)."""

    def __init__(self, fn: Function) -> None:
        defs: dict[Var, list[Expr]] = defaultdict(list)
        for st in iter_stmts(fn.body):
            if isinstance(st, AssignStmt) and is_scalar(st.var):
                defs[st.var].append(st.value)
        self.defs = {v: d[0] for v, d in defs.items()
                     if len(d) == 1 and isinstance(d[0], (ConstInt, Select, Var, Call))}

    def expand(self, e: Expr) -> Expr:
        if isinstance(e, Var) and e in self.defs:
            return self.expand(self.defs[e])
        if isinstance(e, Select):
            return replace_fields(e, true_value=self.expand(e.true_value),
                                  false_value=self.expand(e.false_value))
        return e

    def possible(self, e: Expr) -> frozenset[int]:
        return possible_ids(self.expand(e))


def run(program: Program, ctx: PassContext) -> Program:
    ids = {f.name: _Ids(f) for f in program.functions}
    if ctx.arch == "a5":
        v_only = v_only_ids(program, ids)
        if v_only:
            program = map_functions(program, lambda f: with_body(
                f, _elide(f.body, v_only, ids[f.name])))
    return map_functions(program, lambda f: with_body(f, _dedup(f.body, ids[f.name])))


def v_only_ids(program: Program, ids: dict[str, _Ids]) -> frozenset[int]:
    """Mutex ids that every lock/unlock in the program takes on pipe V only."""
    pipes: dict[int, set[PipeType]] = defaultdict(set)
    for f in program.functions:
        for n in body_exprs(f.body):
            if isinstance(n, Call) and n.op in MUTEX_OPS:
                for i in ids[f.name].possible(id_of(n)):
                    pipes[i].add(pipe_of(n))
    return frozenset(i for i, p in pipes.items() if p == {PipeType.V})


def _elide(body: Stmt | None, v_only: frozenset[int], ids: _Ids) -> Stmt | None:
    if body is None:
        return None
    kept = []
    for s in stmts_of(body):
        call = mutex_call(s)
        if call is not None and ids.possible(id_of(call)) <= v_only:
            continue
        kept.append(map_blocks(s, lambda b: _elide(b, v_only, ids)))
    return rebuild(body, kept)


def _dedup(body: Stmt | None, ids: _Ids) -> Stmt | None:
    if body is None:
        return None
    out: list[Stmt] = []
    run: list[Stmt] = []
    locked: _Decisions = defaultdict(deque)
    for s in stmts_of(body):
        call = mutex_call(s)
        if call is not None and run and _same_run(mutex_call(run[0]), call):
            run.append(s)
            continue
        out.extend(_dedup_run(run, ids, locked))
        run = [s] if call is not None else []
        if call is None:
            out.append(map_blocks(s, lambda b: _dedup(b, ids)))
    out.extend(_dedup_run(run, ids, locked))
    return rebuild(body, out)


#: (pipe, id) → what became of each lock of that id not yet unlocked: its guard, or None when
#: the lock was dropped (the same id is already in its run)
_Decisions = dict[tuple, "deque[tuple[Expr, ...] | None]"]


def _same_run(a: Call, b: Call) -> bool:
    return is_lock(a) == is_lock(b) and pipe_of(a) == pipe_of(b)


def _dedup_run(run: list[Stmt], ids: _Ids, locked: _Decisions) -> list[Stmt]:
    if not run:
        return []
    lock, pipe = is_lock(mutex_call(run[0])), pipe_of(mutex_call(run[0]))
    consts: dict[int, Stmt] = {}
    dynamic: list[tuple[Stmt, Expr]] = []
    for s in run:
        i = ids.expand(id_of(mutex_call(s)))
        if isinstance(i, ConstInt):
            consts.setdefault(i.value, s)
        else:
            dynamic.append((s, i))
    out = list(consts.values())
    earlier: list[tuple[Expr, Expr]] = [(id_of(mutex_call(s)), ConstInt(v))
                                        for v, s in consts.items()]
    for s, i in dynamic:
        key = (pipe, id_of(mutex_call(s)))
        if not lock and locked.get(key):
            guard = locked[key].popleft()  # the unlock mirrors what its lock did
        elif any(i == seen for _, seen in earlier):
            guard = None
        else:
            guard = tuple(written for written, seen in earlier
                          if possible_ids(seen) & possible_ids(i) and not same_tile(seen, i))
        if lock:
            locked[key].append(guard)
        if guard is None:
            continue
        if guard:
            s = EvalStmt(with_kwarg(mutex_call(s), "guard", guard), s.span)
        out.append(s)
        earlier.append((id_of(mutex_call(s)), i))
    return out
