"""tile_group_lowering: make tile-group cursors explicit (spec §2.5).

Every `g = tile_group.make()` of depth N gets a scalar INDEX cursor `g_cursor = N-1` right after
it. `t = tile_group.next(g)` becomes `g_cursor = (g_cursor + 1) % N; t = tile_group.get(g,
g_cursor)`, `current(g)` becomes `get(g, g_cursor)` and `previous(g)` becomes `get(g, (g_cursor
+ N - 1) % N)`. Where the cursor's value is known at compile time (straight-line code, or loops
that do not advance the group) the index is a constant and the slot's type carries its address;
a depth-1 group always uses slot 0. After this pass the cursor is an ordinary mutable scalar
that convert_to_ssa turns into a loop-carried value.
"""
from __future__ import annotations

from ..errors import NotSupported, PassInner
from ..ir.mutator import Mutator
from ..ir.nodes import (
    AssignStmt, BinaryExpr, BinOp, Call, ConstInt, Expr, ForStmt, IfStmt, Program, SectionStmt,
    Stmt, Var, WhileStmt,
)
from ..ir.types import INDEX, TileGroupType
from .ir_query import (
    Names, body_exprs, map_functions, map_own_exprs, rebuild, replace_fields, stmts_of, with_body,
)
from .manager import PassContext

NAME = "tile_group_lowering"
ACCESSES = ("tile_group.next", "tile_group.current", "tile_group.previous")


def run(program: Program, ctx: PassContext) -> Program:
    out = map_functions(program, lambda f: with_body(f, _Lowering(f).body(f.body)))
    ctx.facts.add("tile_groups_lowered")
    return out


def _mod(e: Expr, add: int, n: int) -> Expr:
    return BinaryExpr(BinOp.FloorMod, BinaryExpr(BinOp.Add, e, ConstInt(add), INDEX),
                      ConstInt(n), INDEX)


class _Lowering:
    def __init__(self, fn) -> None:
        self.names = Names(fn)
        self.cursor: dict[Var, Var] = {}
        self.known: dict[Var, int | None] = {}  # group → cursor value when known

    # ------------------------------------------------------------ statements
    def body(self, body: Stmt | None) -> Stmt | None:
        if body is None:
            return None
        return rebuild(body, [x for s in stmts_of(body) for x in self.stmt(s)])

    def stmt(self, s: Stmt) -> list[Stmt]:
        if isinstance(s, AssignStmt) and isinstance(s.value, Call) and \
                s.value.op == "tile_group.make":
            return [s, self.make_cursor(s)]
        if isinstance(s, IfStmt):
            return self.if_stmt(s)
        if isinstance(s, ForStmt):
            pre, head = self.rewrite(s)
            self.forget_advanced(s.body)
            return pre + [replace_fields(head, body=self.body(s.body))]
        if isinstance(s, WhileStmt):
            self.forget_advanced(s.body)
            pre, head = self.rewrite(s)
            if pre:  # the parser binds next() to a statement, never inside a condition
                raise PassInner("tile_group.next inside a while condition", s.span,
                                pass_name=NAME)
            return [replace_fields(head, body=self.body(s.body))]
        if isinstance(s, SectionStmt):
            return [replace_fields(s, body=self.body(s.body))]
        pre, new = self.rewrite(s)
        return pre + [new]

    def make_cursor(self, s: AssignStmt) -> Stmt:
        g = s.var
        depth = g.type.depth
        self.cursor[g] = Var(self.names.fresh(f"{g.name}_cursor"), INDEX, s.span)
        self.known[g] = depth - 1
        return AssignStmt(self.cursor[g], ConstInt(depth - 1, span=s.span), s.span)

    def if_stmt(self, s: IfStmt) -> list[Stmt]:
        pre, head = self.rewrite(s)
        entry = dict(self.known)
        then = self.body(s.then_body)
        after_then, self.known = self.known, dict(entry)
        other = self.body(s.else_body)
        after_else = self.known
        self.known = {g: after_then.get(g) if after_then.get(g) == after_else.get(g) else None
                      for g in after_then.keys() | after_else.keys()}
        return pre + [replace_fields(head, then_body=then, else_body=other)]

    def forget_advanced(self, body: Stmt) -> None:
        """Cursors of groups advanced inside a loop are unknown throughout and after it."""
        for n in body_exprs(body):
            if isinstance(n, Call) and n.op == "tile_group.next" and n.args[0] in self.known:
                if n.args[0].type.depth > 1:
                    self.known[n.args[0]] = None

    # ------------------------------------------------------------ expressions
    def rewrite(self, s: Stmt) -> tuple[list[Stmt], Stmt]:
        pre: list[Stmt] = []
        new = map_own_exprs(s, lambda e: _Accesses(self, pre).visit(e))
        return pre, new

    def access(self, call: Call, pre: list[Stmt]) -> Expr:
        g = call.args[0]
        if not isinstance(g, Var) or g not in self.cursor:
            raise NotSupported("a tile group chosen at runtime cannot be advanced; call "
                               "next()/current()/previous() on the group variable itself",
                               call.span, module="PRO_IR", pass_name=NAME)
        gt: TileGroupType = g.type
        if call.op == "tile_group.next":
            self.advance(g, pre, call)
        k, cursor = self.known[g], self.cursor[g]
        back = call.op == "tile_group.previous"
        if k is not None:
            index: Expr = ConstInt((k - 1) % gt.depth if back else k, span=call.span)
        else:
            index = _mod(cursor, gt.depth - 1, gt.depth) if back else cursor
        slot = index.value if isinstance(index, ConstInt) else None
        return Call("tile_group.get", (g, index), (), gt.slot_type(slot), call.span)

    def advance(self, g: Var, pre: list[Stmt], call: Call) -> None:
        depth, k, cursor = g.type.depth, self.known[g], self.cursor[g]
        if k is None:
            pre.append(AssignStmt(cursor, _mod(cursor, 1, depth), call.span))
            return
        new = (k + 1) % depth
        if new != k:
            pre.append(AssignStmt(cursor, ConstInt(new, span=call.span), call.span))
        self.known[g] = new


class _Accesses(Mutator):
    """Replaces group accesses inside one expression, in evaluation order."""

    def __init__(self, lowering: _Lowering, pre: list[Stmt]) -> None:
        self.lowering = lowering
        self.pre = pre

    def visit_Call(self, node: Call) -> Expr:
        node = self.generic(node)
        return self.lowering.access(node, self.pre) if node.op in ACCESSES else node

