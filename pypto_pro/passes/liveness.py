"""Backward liveness of Vars over a structured function body (mutable or SSA form).

`Liveness(body)` answers, for the statements of that very tree (looked up by identity): which
Vars are live right after a statement (`after`) and which are live at the head of a loop
(`loop_head`: read in a later iteration, or after the loop, before being redefined). A `break`
continues with what is live after its loop, a `continue` with the loop head, a `return` with
nothing. Used by auto_mutex (stale mutex ids) and convert_to_ssa (loop-carried Vars, if-merges).
"""
from __future__ import annotations

from ..ir.nodes import (
    AssignStmt, BreakStmt, ContinueStmt, ForStmt, IfStmt, ReturnStmt, SectionStmt, Stmt, Var,
    WhileStmt,
)
from .ir_query import expr_vars, own_exprs, stmts_of

Live = frozenset[Var]
_NOTHING: Live = frozenset()


class Liveness:
    def __init__(self, body: Stmt) -> None:
        self._tree = body  # the ids below refer to statements of this tree
        self._after: dict[int, Live] = {}
        self._head: dict[int, Live] = {}
        self._reads: dict[int, Live] = {}
        self.entry = self._block(body, _NOTHING, (_NOTHING, _NOTHING))

    def after(self, stmt: Stmt) -> Live:
        """Vars live right after `stmt`."""
        return self._after[id(stmt)]

    def loop_head(self, loop: Stmt) -> Live:
        """Vars live at the head of `loop` (every iteration starts and the loop exits there)."""
        return self._head[id(loop)]

    # ------------------------------------------------------------ transfer functions
    def _block(self, body: Stmt | None, live: Live, loop: tuple[Live, Live]) -> Live:
        for s in reversed(stmts_of(body)):
            self._after[id(s)] = live
            live = self._stmt(s, live, loop)
        return live

    def _stmt(self, s: Stmt, live: Live, loop: tuple[Live, Live]) -> Live:
        reads = self._reads.get(id(s))
        if reads is None:
            reads = self._reads[id(s)] = frozenset().union(*(expr_vars(e)
                                                             for e in own_exprs(s)))
        if isinstance(s, AssignStmt):
            return (live - {s.var}) | reads
        if isinstance(s, BreakStmt):
            return loop[0]
        if isinstance(s, ContinueStmt):
            return loop[1]
        if isinstance(s, ReturnStmt):
            return reads  # a callee's returned value
        if isinstance(s, IfStmt):
            out = live - set(s.return_vars)
            return (self._block(s.then_body, out, loop)
                    | self._block(s.else_body, out, loop) | reads)
        if isinstance(s, SectionStmt):
            return self._block(s.body, live, loop)
        if isinstance(s, (ForStmt, WhileStmt)):
            return self._loop(s, live)
        return live | reads

    def _loop(self, s: ForStmt | WhileStmt, live: Live) -> Live:
        exit_live = live - set(s.return_vars)
        if isinstance(s, ForStmt):
            local = {s.loop_var, *s.iter_args}
            before = (s.start, s.stop, s.step, *s.init_values)
            cond: Live = _NOTHING
        else:
            local = set(s.iter_args)
            before = s.init_values
            cond = frozenset(expr_vars(s.cond))
        head = exit_live | cond
        while True:
            body_in = self._block(s.body, head, (exit_live, head))
            new = exit_live | cond | body_in
            if new == head:
                break
            head = new
        self._head[id(s)] = head
        return (head - local) | frozenset().union(*(expr_vars(e) for e in before))
