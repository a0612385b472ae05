"""IR → closures for a core's scalar unit (DESIGN §5 "Speed of the simulator").

`compile_function(fn)` turns a lowered IR function into a `CompiledProgram` once; running it for
a core is `program.run(core)`, a generator that walks the statements in order, evaluates scalar
code directly and hands tile / sync instructions to the core (`core.issue`). The generator
yields only when the scalar unit must wait (a full pipe queue, a barrier, a scalar read of
memory that must see all earlier writes, a wait on pipe S, sync_all).
Control flow returns `_BREAK` / `_CONTINUE` / `_RETURN` signals up the closure tree. A statement
closure returns what its caller's `yield from` runs: a generator when it may wait or signal, else
`NOTHING` (the empty tuple: no generator is made for a statement that never waits).
"""
from __future__ import annotations

import copy
import math
import operator
import struct
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from ...errors import NotSupported, SimulationError
from ...ir import ops as opreg
from ...ir.dtype import DataType
from ...ir.nodes import (
    AssignStmt,
    BinaryExpr,
    BinOp,
    BreakStmt,
    Call,
    Cast,
    ConstBool,
    ConstFloat,
    ConstInt,
    ConstStr,
    ContinueStmt,
    EnumConst,
    EvalStmt,
    Expr,
    ForStmt,
    Function,
    GetField,
    GetItem,
    IfStmt,
    MakeTuple,
    ReturnStmt,
    SectionStmt,
    Select,
    SeqStmts,
    SetField,
    Stmt,
    UnaryExpr,
    UnOp,
    Var,
    WhileStmt,
    YieldStmt,
)
from ...ir.scalar_semantics import RUNTIME_BINOPS
from ...ir.span import Span
from ...ir.types import ScalarType, SectionKind, TileType
from ..model.memory import TileGeometry

_BREAK, _CONTINUE, _RETURN = "break", "continue", "return"
NOTHING: tuple = ()  # what a statement that does not wait returns (`yield from` passes nothing)


# ---------------------------------------------------------------- runtime values


@dataclass(eq=False)
class RtTile:
    """A Tile object of the running kernel: placement plus its valid shape (a tuple that
    `set_validshape` replaces). `last_ref` and `last_pair` are `Launch.tile_ref`'s memos: (the
    memory, the valid tuple, the TileRef it made), and for a split move's pair (the memories,
    the valid tuple, the TileRefs)."""

    geom: TileGeometry
    valid: tuple[int, int]
    ttype: TileType
    last_ref: tuple | None = field(default=None, repr=False)
    last_pair: tuple | None = field(default=None, repr=False)


@dataclass(eq=False)
class RtGroup:
    slots: list[RtTile]
    mutex_ids: tuple[tuple[int, ...], ...]


@dataclass
class Frame:
    slots: list[Any]
    core: Any  # the engine's Core


def make_rt_tile(t: TileType, addr: int) -> RtTile:
    return RtTile(TileGeometry.from_tile_type(t, addr), initial_valid(t), t)


def initial_valid(t: TileType) -> tuple[int, int]:
    """A new tile's valid shape."""
    rows, cols = (v if v is not None else d for v, d in zip(t.valid_shape, t.shape))
    return rows, cols


# ---------------------------------------------------------------- scalar semantics



def convert_scalar(value: Any, dtype: DataType) -> Any:
    """`value` as the scalar unit holds it in `dtype`: integers wrap at their width, floats
    round to their precision (an FP32 scalar is a C++ `float`, not a Python double)."""
    if dtype is DataType.BOOL:
        return bool(value)
    if dtype.is_float:
        return round_float(float(value), dtype)
    v = int(value)
    bits = dtype.bits
    if dtype.kind == "uint":
        return v & ((1 << bits) - 1)
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >= 1 << (bits - 1) else v


def round_float(value: float, dtype: DataType) -> float:
    """`value` rounded to nearest-even in `dtype` (FP32, FP16, BF16; wider stays double)."""
    if dtype is DataType.FP32 or dtype is DataType.FP16:
        fmt = "f" if dtype is DataType.FP32 else "e"
        try:
            return struct.unpack(fmt, struct.pack(fmt, value))[0]
        except OverflowError:  # beyond the format's range: the hardware gives ±inf
            return math.copysign(math.inf, value)
    if dtype is DataType.BF16:
        return float(torch.tensor(value, dtype=torch.bfloat16))
    return value


_DIVISIONS = (BinOp.FloorDiv, BinOp.FloorMod, BinOp.FloatDiv)


def _wraps(dt: DataType | None) -> bool:
    """A binary result of type `dt` wraps at the type's width (`convert_scalar`)."""
    return dt is not None and dt.is_int and dt is not DataType.INDEX and dt.bits < 64


def _reader(s: int | Callable[[Frame], Any]) -> Callable[[Frame], Any]:
    """The closure of a `_Compiler.slot_or_expr` result."""
    if type(s) is int:
        return lambda fr: fr.slots[s]
    return s


def _binary_const(op: Callable[[Any, Any], Any], a: int | Callable[[Frame], Any], rhs: Any,
                  dt: DataType | None) -> Callable[[Frame], Any]:
    """`a op rhs` for a constant `rhs` (a nonzero divisor; no float rounding) and `a` a slot
    or a closure (`_Compiler.slot_or_expr`): the hot index arithmetic (`i * 128`,
    `(c + 1) % 2`), with fewer closure calls per evaluation."""
    if _wraps(dt):
        if type(a) is int:
            return lambda fr: convert_scalar(op(fr.slots[a], rhs), dt)
        return lambda fr: convert_scalar(op(a(fr), rhs), dt)
    if type(a) is int:
        return lambda fr: op(fr.slots[a], rhs)
    return lambda fr: op(a(fr), rhs)


# ---------------------------------------------------------------- the compiler


class _Compiler:
    def __init__(self, fn: Function, functions: dict[str, Function]) -> None:
        self.slot_of: dict[int, int] = {}
        self.functions = functions
        self.yield_targets: list[list[int]] = []  # slots a YieldStmt assigns (innermost last)
        self.loop_targets: list[list[int]] = []  # iter_arg slots of the enclosing loops
        for p in fn.params:
            self.slot(p)

    def slot(self, var: Var) -> int:
        s = self.slot_of.get(var.uid)
        if s is None:
            s = self.slot_of[var.uid] = len(self.slot_of)
        return s

    # ------------------------------------------------------------ expressions
    def expr(self, e: Expr) -> Callable[[Frame], Any]:
        if isinstance(e, Var):
            return _reader(self.slot(e))
        if isinstance(e, (ConstInt, ConstFloat, ConstBool, ConstStr, EnumConst)):
            v = e.value
            return lambda fr: v
        if isinstance(e, BinaryExpr):
            return self.binary(e)
        if isinstance(e, UnaryExpr):
            f = self.expr(e.operand)
            op = {UnOp.Neg: operator.neg, UnOp.Not: operator.not_, UnOp.BitNot: operator.invert,
                  UnOp.Abs: abs}[e.op]
            return lambda fr: op(f(fr))
        if isinstance(e, Cast):
            f, dt = self.expr(e.operand), e.type.dtype
            return lambda fr: convert_scalar(f(fr), dt)
        if isinstance(e, Select):
            c, a, b = self.expr(e.cond), self.expr(e.true_value), self.expr(e.false_value)
            return lambda fr: a(fr) if c(fr) else b(fr)
        if isinstance(e, MakeTuple):
            return self.make_tuple(e)
        if isinstance(e, GetItem):
            v, i = self.expr(e.value), self.expr(e.index)
            return lambda fr: _index(v(fr), i(fr))
        if isinstance(e, GetField):
            v, name = self.expr(e.value), e.name
            return lambda fr: v(fr)[name]
        if isinstance(e, Call):
            from .calls_scalar import compile_value_call

            return compile_value_call(self, e)
        raise NotSupported(f"simulator: expression {type(e).__name__}", getattr(e, "span", None))

    def slot_or_expr(self, e: Expr) -> int | Callable[[Frame], Any]:
        """A variable's slot (an int: the caller reads `fr.slots` itself), else the closure of
        `e`. For the hottest readers (tile operands, mutex ids): a call per read adds up."""
        return self.slot(e) if isinstance(e, Var) else self.expr(e)

    def make_tuple(self, e: MakeTuple) -> Callable[[Frame], Any]:
        """Shapes and offsets of every tile op: constant ones are built once, pairs without a
        generator (a generator per call was a visible share of a launch's own time)."""
        consts = (ConstInt, ConstFloat, ConstBool, ConstStr, EnumConst)
        if all(isinstance(x, consts) for x in e.elements):
            value = tuple(x.value for x in e.elements)
            return lambda fr: value
        if len(e.elements) == 2:
            s0, s1 = (self.slot_or_expr(x) for x in e.elements)
            if type(s0) is int and type(s1) is int:  # tile offsets: two variables
                return lambda fr: (fr.slots[s0], fr.slots[s1])
            f0, f1 = _reader(s0), _reader(s1)
            return lambda fr: (f0(fr), f1(fr))
        fs = [self.expr(x) for x in e.elements]
        return lambda fr: tuple([f(fr) for f in fs])

    def binary(self, e: BinaryExpr) -> Callable[[Frame], Any]:
        lhs = self.slot_or_expr(e.lhs)
        a, b = _reader(lhs), self.expr(e.rhs)
        if e.op is BinOp.And:
            return lambda fr: bool(a(fr)) and bool(b(fr))
        if e.op is BinOp.Or:
            return lambda fr: bool(a(fr)) or bool(b(fr))
        op = RUNTIME_BINOPS[e.op]
        dt = e.type.dtype if isinstance(e.type, ScalarType) else None
        rounded = dt if dt is not None and dt.is_float and dt.bits < 64 else None
        span = e.span
        if isinstance(e.rhs, (ConstInt, ConstFloat, ConstBool)) and rounded is None and not (
                e.rhs.value == 0 and e.op in _DIVISIONS):
            return _binary_const(op, lhs, e.rhs.value, dt)
        if e.op in _DIVISIONS and not (dt is not None and dt.is_float):  # (floats: ±inf/nan)
            def div(fr: Frame) -> Any:
                rhs = b(fr)
                if rhs == 0:
                    raise SimulationError("division by zero in scalar code", span,
                                          hint="guard the divisor; the NPU would give garbage")
                return op(a(fr), rhs) if rounded is None else round_float(op(a(fr), rhs),
                                                                           rounded)

            return div
        if _wraps(dt):
            return lambda fr: convert_scalar(op(a(fr), b(fr)), dt)
        if rounded is not None:
            return lambda fr: round_float(op(a(fr), b(fr)), rounded)
        return lambda fr: op(a(fr), b(fr))

    # ------------------------------------------------------------ statements
    def stmt(self, s: Stmt) -> Callable[[Frame], Any]:
        method = getattr(self, f"s_{type(s).__name__}", None)
        if method is None:
            raise NotSupported(f"simulator: statement {type(s).__name__}", getattr(s, "span",
                                                                                    None))
        return method(s)

    def s_SeqStmts(self, s: SeqStmts):
        parts = []
        for k, x in enumerate(s.stmts):
            nxt = s.stmts[k + 1] if k + 1 < len(s.stmts) else None
            if isinstance(x, YieldStmt) and isinstance(nxt, (BreakStmt, ContinueStmt)):
                parts.append(self.yield_stmt(x, self.loop_targets))  # the loop's write-back
            else:
                parts.append(self.stmt(x))

        def run(fr: Frame):
            for p in parts:
                step = p(fr)
                if step is NOTHING:  # most statements: no generator to step through
                    continue
                sig = yield from step
                if sig is not None:
                    return sig
            return None

        return run

    def s_AssignStmt(self, s: AssignStmt):
        i = self.slot(s.var)
        if isinstance(s.value, Call) and s.value.op in _SYNCED_READS:
            from .calls_scalar import compile_synced_read

            read = compile_synced_read(self, s.value)

            def run_read(fr: Frame):
                yield from fr.core.sync_scalar()
                fr.slots[i] = read(fr)
                return None

            return run_read
        f = self.expr(s.value)
        conv = s.var.type.dtype if isinstance(s.var.type, ScalarType) and \
            isinstance(s.value.type, ScalarType) and s.value.type != s.var.type else None

        if conv is None:
            def run(fr: Frame) -> tuple:
                fr.slots[i] = f(fr)
                fr.core.time += 1
                return NOTHING

            return run

        def run_converted(fr: Frame) -> tuple:
            fr.slots[i] = convert_scalar(f(fr), conv)
            fr.core.time += 1
            return NOTHING

        return run_converted

    def s_EvalStmt(self, s: EvalStmt):
        from .calls_issue import compile_effect

        return compile_effect(self, s.expr)

    def s_SetField(self, s: SetField):
        target, value = self.expr(s.target), self.expr(s.value)
        name = s.name
        index = self.expr(s.index) if s.index is not None else None

        def run(fr: Frame) -> tuple:
            obj = target(fr)
            if index is None:
                obj[name] = value(fr)
            else:
                (obj[name] if name is not None else obj)[index(fr)] = value(fr)
            return NOTHING

        return run

    def s_IfStmt(self, s: IfStmt):
        cond = self.expr(s.cond)
        carried = bool(s.return_vars)
        if carried:
            self.yield_targets.append([self.slot(v) for v in s.return_vars])
        then = self.stmt(s.then_body)
        other = self.stmt(s.else_body) if s.else_body is not None else None
        if carried:
            self.yield_targets.pop()

        def run(fr: Frame):
            fr.core.time += 1
            if cond(fr):
                return (yield from then(fr))
            if other is not None:
                return (yield from other(fr))
            return None

        return run

    def s_YieldStmt(self, s: YieldStmt):
        return self.yield_stmt(s, self.yield_targets)

    def yield_stmt(self, s: YieldStmt, stack: list[list[int]]):
        if not stack:
            raise NotSupported("simulator: yield outside a loop or if with results", s.span)
        targets = stack[-1]
        fs = [self.expr(v) for v in s.values]

        def run(fr: Frame) -> tuple:
            values = [f(fr) for f in fs]  # parallel assignment
            for slot, v in zip(targets, values):
                fr.slots[slot] = v
            return NOTHING

        return run

    def _loop(self, iter_args, init_values, return_vars, body: Stmt, span: Span,
              iterations: Callable[[Frame], Any]):
        """A loop runner: carried values in, one body run per value of `iterations(fr)`
        (an iterator the body may stop early with break / return), carried values out."""
        it = [self.slot(v) for v in iter_args]
        init = [self.expr(v) for v in init_values]
        rv = [self.slot(v) for v in return_vars]
        self.yield_targets.append(it)
        self.loop_targets.append(it)
        try:
            run_body = self.stmt(body)
        finally:
            self.yield_targets.pop()
            self.loop_targets.pop()

        def run(fr: Frame):
            slots = fr.slots
            for slot, v in zip(it, [f(fr) for f in init]):
                slots[slot] = v
            result = None
            for _ in iterations(fr):
                fr.core.time += 1
                fr.core.count_iteration(span)
                step = run_body(fr)
                if step is NOTHING:
                    continue
                sig = yield from step
                if sig == _BREAK:
                    break
                if sig == _RETURN:
                    result = _RETURN
                    break
            for slot, src in zip(rv, it):
                slots[slot] = slots[src]
            return result

        return run

    def s_ForStmt(self, s: ForStmt):
        lv = self.slot(s.loop_var)
        start, stop, step = self.expr(s.start), self.expr(s.stop), self.expr(s.step)
        span = s.span

        def iterations(fr: Frame):
            i, end, st = start(fr), stop(fr), step(fr)
            if st == 0:
                raise SimulationError("pl.range step is zero at runtime", span)
            while (i < end) if st > 0 else (i > end):
                fr.slots[lv] = i
                yield i
                i += st

        return self._loop(s.iter_args, s.init_values, s.return_vars, s.body, span, iterations)

    def s_WhileStmt(self, s: WhileStmt):
        cond = self.expr(s.cond)

        def iterations(fr: Frame):
            while cond(fr):
                yield None

        return self._loop(s.iter_args, s.init_values, s.return_vars, s.body, s.span, iterations)

    def s_BreakStmt(self, s: BreakStmt):
        return _signal(_BREAK)

    def s_ContinueStmt(self, s: ContinueStmt):
        return _signal(_CONTINUE)

    def s_ReturnStmt(self, s: ReturnStmt):
        return _signal(_RETURN)

    def s_SectionStmt(self, s: SectionStmt):
        if s.kind is SectionKind.VF:
            from .vf import compile_vf_section  # imports this module

            return compile_vf_section(self, s)
        return self.stmt(s.body)


def _signal(sig: str):
    def run(fr: Frame):
        return sig
        yield

    return run


def _index(container: Any, i: Any) -> Any:
    if isinstance(container, RtGroup):
        return container.slots[i]
    return container[i]


#: ops whose result is a scalar read of memory: the scalar unit first catches up with time
_SYNCED_READS = frozenset({"block.getval", "simt.atomic"})


@dataclass
class CompiledProgram:
    """A kernel function compiled for the scalar unit: run(core) is its generator."""

    function: Function
    run_body: Callable[[Frame], Any]
    n_slots: int
    param_slots: list[int]
    dyn_slots: list[int] = field(default_factory=list)

    def frame(self, core: Any, params: list[Any]) -> Frame:
        """A core's frame on `params`; a struct's fields are the core's own copy (each core
        copies the tiling data in: what a kernel writes into it stays on that core)."""
        slots: list[Any] = [None] * self.n_slots
        for slot, value in zip(self.param_slots, params):
            slots[slot] = _own_fields(value) if type(value) is dict else value
        return Frame(slots, core)


def _own_fields(fields: dict[str, Any]) -> dict[str, Any]:
    """A struct's fields with every array copied (lists, numpy arrays, tensors)."""
    return {name: value.clone() if isinstance(value, torch.Tensor) else copy.copy(value)
            for name, value in fields.items()}


def compile_function(fn: Function, functions: dict[str, Function] | None = None
                     ) -> CompiledProgram:
    c = _Compiler(fn, functions or {})
    body = c.stmt(fn.body)

    def run_body(fr: Frame):  # the scalar unit's generator, even when the body never waits
        return (yield from body(fr))

    param_slots = [c.slot(p) for p in fn.params]
    return CompiledProgram(fn, run_body, len(c.slot_of), param_slots)


def op_spec(call: Call) -> opreg.OpSpec:
    spec = opreg.get(call.op)
    if spec is None:
        raise NotSupported(f"simulator: unknown op {call.op}", call.span)
    return spec

