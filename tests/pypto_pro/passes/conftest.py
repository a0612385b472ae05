"""Fixtures for the pass tests: `irb`, a small hand-builder of IR programs (with two reference
kernels), `trace`, a reference interpreter of the IR's control flow and scalars that records every
op it issues, and `locked`, which checks a trace against the mutex ids of a program's groups.

The interpreter follows the SSA semantics of `pypto_pro.ir.nodes` (iter_args from init_values,
yields in parallel, return_vars after the loop / if) and the `guard=` of runtime mutex ids. Two
programs that issue the same ops with the same tiles, offsets and mutex ids in the same order
behave the same; the scalar passes are checked that way.
"""
from __future__ import annotations

import operator

import pytest

from pypto_pro.ir.dtype import DataType
from pypto_pro.ir.nodes import (
    AssignStmt, BinaryExpr, BinOp, BreakStmt, Call, Cast, ConstBool, ConstFloat, ConstInt,
    ContinueStmt, EnumConst, EvalStmt, Expr, ForStmt, Function, IfStmt, MakeTuple, Program,
    ReturnStmt, SectionStmt, Select, SeqStmts, Stmt, UnaryExpr, UnOp, Var, WhileStmt,
    YieldStmt, seq,
)
from pypto_pro.ir.printer import python_print
from pypto_pro.ir.scalar_semantics import RUNTIME_BINOPS
from pypto_pro.ir.span import Span
from pypto_pro.ir.types import (
    BOOL, INDEX, MemorySpace, SectionKind, TensorType, TileGroupType, TileType, TupleType,
)
from pypto_pro.passes.ir_query import iter_stmts
from pypto_pro.passes.manager import PassContext

M = MemorySpace
_BIN = {
    **RUNTIME_BINOPS,
    BinOp.And: lambda a, b: a and b, BinOp.Or: lambda a, b: a or b,
}


class Build:
    """Hand-built IR: every statement gets a span on line `n` of "kernel.py" when asked."""

    INDEX = INDEX
    BOOL = BOOL

    def span(self, line: int) -> Span:
        return Span("kernel.py", line, 5)

    def var(self, name: str, ty=INDEX) -> Var:
        return Var(name, ty)

    def c(self, value) -> Expr:
        return ConstBool(value) if isinstance(value, bool) else ConstInt(value)

    def bin(self, op: BinOp, a, b) -> BinaryExpr:
        a, b = (x if isinstance(x, Expr) else self.c(x) for x in (a, b))
        rtype = BOOL if op.is_compare or op.is_logical else INDEX
        return BinaryExpr(op, a, b, rtype)

    def tile_type(self, space=M.Vec, shape=(64, 64), dtype=DataType.FP16, addr=None):
        return TileType(shape, dtype, space, addr=addr, valid_shape=shape)

    def tensor(self, name: str, dtype=DataType.FP16) -> Var:
        return Var(name, TensorType((ConstInt(1024), ConstInt(1024)), dtype))

    def group(self, name: str, addrs, ids=(), line: int = 0, **tile) -> tuple[Var, Stmt]:
        ids = tuple(tuple(i) if isinstance(i, (list, tuple)) else (i,) for i in ids)
        gt = TileGroupType(self.tile_type(**tile), tuple(addrs), ids)
        g = Var(name, gt, self.span(line))
        return g, AssignStmt(g, Call("tile_group.make", (), (), gt, self.span(line)),
                             self.span(line))

    def make_tile(self, name: str, addr: int, line: int = 0, size=None, **tile):
        t = self.tile_type(addr=addr, **tile)
        v = Var(name, t, self.span(line))
        shape = MakeTuple(tuple(ConstInt(d) for d in t.shape), TupleType((INDEX, INDEX)))
        kw = (("memref_addr", addr), ("memref_size", size or t.nbytes))
        return v, AssignStmt(v, Call("block.make_tile", (shape,), kw, t, self.span(line)),
                             self.span(line))

    def access(self, op: str, g: Var, name: str, line: int = 0) -> tuple[Var, Stmt]:
        """`name = tile_group.<op>(g)` (next / current / previous)."""
        gt: TileGroupType = g.type
        t = gt.slot_type(None) if gt.depth > 1 else gt.slot_type(0)
        v = Var(name, t, self.span(line))
        return v, AssignStmt(v, Call(f"tile_group.{op}", (g,), (), t, self.span(line)),
                             self.span(line))

    def get(self, g: Var, idx) -> Call:
        idx = idx if isinstance(idx, Expr) else ConstInt(idx)
        gt: TileGroupType = g.type
        slot = idx.value if isinstance(idx, ConstInt) else None
        return Call("tile_group.get", (g, idx), (), gt.slot_type(slot))

    def call(self, op: str, *args, ty=None, line: int = 0, **kw) -> Call:
        args = tuple(a if isinstance(a, Expr) else self.offsets(a) if isinstance(a, list)
                     else self.c(a) for a in args)
        extra = {"type": ty} if ty is not None else {}
        return Call(op, args, tuple(kw.items()), span=self.span(line), **extra)

    def offsets(self, items: list) -> MakeTuple:
        elems = tuple(x if isinstance(x, Expr) else ConstInt(x) for x in items)
        return MakeTuple(elems, TupleType(tuple(INDEX for _ in elems)))

    def ev(self, op: str, *args, line: int = 0, **kw) -> EvalStmt:
        return EvalStmt(self.call(op, *args, line=line, **kw), self.span(line))

    def assign(self, v: Var, e, line: int = 0) -> AssignStmt:
        return AssignStmt(v, e if isinstance(e, Expr) else self.c(e), self.span(line))

    def for_(self, v: Var, start, stop, body: list, step=1, line: int = 0) -> ForStmt:
        start, stop, step = (x if isinstance(x, Expr) else self.c(x) for x in (start, stop, step))
        return ForStmt(v, start, stop, step, seq(body), span=self.span(line))

    def while_(self, cond, body: list) -> WhileStmt:
        return WhileStmt(cond, seq(body))

    def if_(self, cond, then: list, other: list | None = None) -> IfStmt:
        return IfStmt(cond, seq(then), None if other is None else seq(other))

    def section(self, body: list, kind=SectionKind.Vector) -> SectionStmt:
        return SectionStmt(kind, seq(body))

    def program(self, body: list, params=(), target="vector", extra=()) -> Program:
        fn = Function("k", tuple(params), seq(body))
        return Program("k", (fn, *extra), target)

    def run(self, program: Program, *passes, ctx: PassContext | None = None) -> Program:
        ctx = ctx or PassContext(program.target)
        for p in passes:
            program = p.run(program, ctx)
        return program

    def text(self, program: Program) -> str:
        """The kernel body, concise, without the header lines and `make_tile` allocations."""
        lines = python_print(program.kernel, concise=True).splitlines()
        return "\n".join(line[4:] for line in lines[2:] if "@block.make_tile(" not in line) + "\n"

    # ------------------------------------------------------------ two reference kernels
    def double_buffered_add(self) -> Program:
        """Spec §6.2 (2): three 2-slot Vec groups, next() on each per iteration."""
        ga, mk_a = self.group("ga", (0x0, 0x8000), ids=[0, 1])
        gb, mk_b = self.group("gb", (0x10000, 0x18000), ids=[2, 3])
        gc, mk_c = self.group("gc", (0x20000, 0x28000), ids=[30, 31])
        x, y, z = (self.tensor(n) for n in "xyz")
        i, n = self.var("i"), self.var("n")
        a, next_a = self.access("next", ga, "a")
        b, next_b = self.access("next", gb, "b")
        c, next_c = self.access("next", gc, "c")
        off = self.bin(BinOp.Mul, i, 64)
        loop = self.for_(i, 0, n, [next_a, next_b, next_c,
                                   self.ev("block.load", a, x, [off, 0]),
                                   self.ev("block.load", b, y, [off, 0]),
                                   self.ev("block.add", c, a, b),
                                   self.ev("block.store", z, c, [off, 0])])
        return self.program([mk_a, mk_b, mk_c, self.section([loop])], params=(x, y, z, n))

    def matmul_chain(self) -> Program:
        """Spec §6.2 (4), cut down: L1 → L0A/L0B → L0C → GM through four groups."""
        a_l1, mk1 = self.group("a_l1", (0x0, 0x8000), ids=[0, 1], space=M.Mat)
        left, mk2 = self.group("left", (0x0, 0x8000), ids=[4, 5], space=M.Left)
        right, mk3 = self.group("right", (0x0, 0x8000), ids=[6, 7], space=M.Right)
        acc, mk4 = self.group("acc", (0x0, 0x10000), ids=[8, 9], space=M.Acc,
                              dtype=DataType.FP32)
        a, out = self.tensor("a"), self.tensor("out", DataType.FP32)
        i, n = self.var("i"), self.var("n")
        ta, n1 = self.access("next", a_l1, "ta")
        lt, n2 = self.access("next", left, "l")
        rt, n3 = self.access("current", right, "r")
        c, n4 = self.access("next", acc, "c")
        loop = self.for_(i, 0, n, [n1, self.ev("block.load", ta, a, [i, 0]),
                                   n2, self.ev("block.move", lt, ta),
                                   n3, self.ev("block.move", rt, ta),
                                   n4, self.ev("block.matmul", c, lt, rt),
                                   self.ev("block.store", out, c, [i, 0])])
        return self.program([mk1, mk2, mk3, mk4, self.section([loop], SectionKind.Cube)],
                            params=(a, out, n), target="cube")


@pytest.fixture
def irb() -> Build:
    return Build()


# ---------------------------------------------------------------- reference interpreter


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


class _Return(Exception):
    pass


class Interpreter:
    """Runs a kernel's control flow and scalars; `events` lists every op call it issued as
    (op, evaluated args, pipe) with tiles as ("tile", space, addr) and tensors by name, and every
    mutex statement that takes effect as (op, pipe, id)."""

    def __init__(self, params: dict[str, object], limit: int = 10_000) -> None:
        self.env: dict[Var, object] = {}
        self.params = params
        self.events: list[tuple] = []
        self.pending: tuple = ()
        self.steps = limit

    def run(self, fn: Function) -> list[tuple]:
        for p in fn.params:
            self.env[p] = self.params.get(p.name, ("tensor", p.name))
        try:
            self.block(fn.body)
        except _Return:
            pass
        return self.events

    def block(self, body: Stmt | None) -> None:
        for s in (body.stmts if isinstance(body, SeqStmts) else () if body is None else (body,)):
            self.stmt(s)

    def stmt(self, s: Stmt) -> None:
        self.steps -= 1
        assert self.steps > 0, "interpreter step limit"
        if isinstance(s, AssignStmt):
            self.env[s.var] = self.eval(s.value)
        elif isinstance(s, EvalStmt):
            self.eval(s.expr)
        elif isinstance(s, YieldStmt):
            self.pending = tuple(self.eval(v) for v in s.values)
        elif isinstance(s, IfStmt):
            self.if_stmt(s)
        elif isinstance(s, ForStmt):
            self.for_stmt(s)
        elif isinstance(s, WhileStmt):
            self.while_stmt(s)
        elif isinstance(s, SectionStmt):
            self.block(s.body)
        elif isinstance(s, BreakStmt):
            raise _Break
        elif isinstance(s, ContinueStmt):
            raise _Continue
        elif isinstance(s, ReturnStmt):
            raise _Return
        else:
            raise AssertionError(f"interpreter: {type(s).__name__}")

    def if_stmt(self, s: IfStmt) -> None:
        self.block(s.then_body if self.eval(s.cond) else s.else_body)
        if s.return_vars:
            self.env.update(zip(s.return_vars, self.pending))

    def iterate(self, s, body_once) -> None:
        """Runs iterations while `body_once()` returns True; handles yields and jumps."""
        self.env.update(zip(s.iter_args, (self.eval(v) for v in s.init_values)))
        while True:
            try:
                if not body_once():
                    break
            except _Continue:
                pass
            except _Break:
                self.env.update(zip(s.iter_args, self.pending))
                break
            self.env.update(zip(s.iter_args, self.pending))
        self.env.update(zip(s.return_vars, (self.env[a] for a in s.iter_args)))

    def for_stmt(self, s: ForStmt) -> None:
        it = iter(range(self.eval(s.start), self.eval(s.stop), self.eval(s.step)))

        def once() -> bool:
            i = next(it, None)
            if i is None:
                return False
            self.env[s.loop_var] = i
            self.block(s.body)
            return True

        self.iterate(s, once)

    def while_stmt(self, s: WhileStmt) -> None:
        def once() -> bool:
            if not self.eval(s.cond):
                return False
            self.block(s.body)
            return True

        self.iterate(s, once)

    # ------------------------------------------------------------ expressions
    def eval(self, e):
        if isinstance(e, (ConstInt, ConstFloat, ConstBool)):
            return e.value
        if isinstance(e, EnumConst):
            return e.value
        if isinstance(e, Var):
            return self.env[e]
        if isinstance(e, BinaryExpr):
            return _BIN[e.op](self.eval(e.lhs), self.eval(e.rhs))
        if isinstance(e, UnaryExpr):
            v = self.eval(e.operand)
            return {UnOp.Not: operator.not_, UnOp.Neg: operator.neg}[e.op](v)
        if isinstance(e, Cast):
            return self.eval(e.operand)
        if isinstance(e, Select):
            return self.eval(e.true_value if self.eval(e.cond) else e.false_value)
        if isinstance(e, MakeTuple):
            return tuple(self.eval(x) for x in e.elements)
        if isinstance(e, Call):
            return self.call(e)
        raise AssertionError(f"interpreter: {type(e).__name__}")

    def call(self, c: Call):
        if c.op == "tile_group.make":
            return ("group", c.type.addrs)
        if c.op == "tile_group.get":
            gt = c.args[0].type
            return ("tile", gt.tile.memory.value, gt.addrs[self.eval(c.args[1])])
        if c.op == "tile_group.mutex_id":
            return c.args[0].type.mutex_ids[self.eval(c.args[1])][c.kwarg("k", 0)]
        if c.op == "block.make_tile":
            return ("tile", c.type.memory.value, c.type.addr)
        if c.op in ("get_block_idx", "get_block_num"):
            return self.params[c.op]
        if c.op in ("system.mutex_lock_dyn", "system.mutex_unlock_dyn"):
            ident = self.eval(c.args[0])
            if ident in [self.eval(g) for g in c.kwarg("guard", ())]:
                return None
            self.events.append((c.op.removesuffix("_dyn"), c.kwarg("pipe"), ident))
            return None
        if c.op in ("system.mutex_lock", "system.mutex_unlock"):
            self.events.append((c.op, c.kwarg("pipe"), c.kwarg("mutex_id")))
            return None
        args = tuple(self.eval(a) for a in c.args)
        self.events.append((c.op, args, c.kwarg("pipe")))
        return ("value", c.op, args)


def group_ids(program: Program) -> dict[tuple, set[int]]:
    """Every group slot of a program, named as the interpreter names tiles → its mutex ids."""
    out = {}
    for s in iter_stmts(program.kernel.body):
        t = getattr(getattr(s, "var", None), "type", None)
        if isinstance(t, TileGroupType):
            for addr, ids in zip(t.addrs, t.mutex_ids):
                out[("tile", t.tile.memory.value, addr)] = set(ids)
    return out


def assert_always_locked(program: Program, events: list[tuple], elided=()) -> None:
    """Every op touching a guarded tile of `program` holds the tile's ids (except `elided`)
    on its own pipe; no pipe takes an id twice; everything is released at the end."""
    ids = group_ids(program)
    held: dict[object, list[int]] = {}
    for e in events:
        if e[0] == "system.mutex_lock":
            assert e[2] not in held.setdefault(e[1], []), f"{e[2]} locked twice on {e[1]}"
            held[e[1]].append(e[2])
        elif e[0] == "system.mutex_unlock":
            held[e[1]].remove(e[2])
        else:
            op, args, pipe = e
            for a in args:
                need = ids.get(a, set()) - set(elided)
                assert need <= set(held.get(pipe, ())), f"{op} {a} unlocked on {pipe}"
    assert not any(held.values()), f"left locked: {held}"


@pytest.fixture
def locked():
    """`locked(program, events, elided=())`: see `assert_always_locked`."""
    return assert_always_locked


@pytest.fixture
def trace():
    """`trace(program, **params)`: the ops a program issues, in order."""
    def run(program: Program, **params) -> list[tuple]:
        return Interpreter(params).run(program.kernel)

    return run

