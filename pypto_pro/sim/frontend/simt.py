"""SIMT launches on the simulator: every thread of a launch runs at once, vectorised.

`compile_simt(fn, functions)` turns a SIMT function (`FunctionType.SIMT_VF`) and the SIMT
callees it calls (`functions`: the program's, by name) into closures over a `Lanes` state once:
a value is a Python scalar while all threads agree on it and a torch tensor with one element per
thread otherwise (`simt_values`); thread context queries are index tensors of the launch
geometry (x fastest). Control flow diverges under masks: both sides of a
data-dependent `if` run, each under its threads, and every assignment merges into the threads
that made it; a loop with a per-thread trip count iterates until its last thread is done;
`break` / `continue` / `return` retire threads from the enclosing construct. A `simt.call` runs
the callee's body for every active thread at once in a frame of its own (its slots; arguments
bound per thread; tiles and tensors shared): a thread that returns is masked off for the rest of
the body, and the call's value is what each thread returned. Callees are `inline` in the
generated C++, so a call costs only the instructions of the body. No Python loop ever runs per
thread (colliding atomics run per collision round, `simt_memory`).

A launch is one pipe-V instruction (`simt.launch`): `SimtLaunch.execute` runs the threads on
launch-local copies of the operands when the instruction starts and counts warp instructions by
class (a warp is busy for an instruction if any of its threads is); the cost model turns the
counts into cycles (`cost_model.simt_launch_cost`) and `SimtLaunch.commit`, called by the
op-library entry (`sim.ops.launches`), hands the writes to the engine so that they land when the
instruction ends.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch

from ...errors import NotSupported, SimulationError
from ...ir.dtype import DataType
from ...ir.mutator import walk
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
    ContinueStmt,
    EvalStmt,
    Expr,
    ForStmt,
    Function,
    FunctionType,
    IfStmt,
    ReturnStmt,
    Select,
    SeqStmts,
    Stmt,
    UnaryExpr,
    Var,
    WhileStmt,
    YieldStmt,
)
from ...ir.types import ScalarType, TensorType, TileType
from ..model.memory import GMRef, TileRef
from .simt_memory import ElementArray
from .simt_values import (
    TRANSCENDENTAL,
    binary,
    math_fn,
    merge,
    round_scalar,
    select,
    to_dtype,
    unary,
)

WARP_SIZE = 32  # `warpSize` of the native backend (pto/native/simt.hpp)
MAX_ITERATIONS = 10_000_000  # per loop of one launch: beyond it the kernel does not terminate
_CONTEXT_AXES = {"x": 0, "y": 1, "z": 2}
_DIVISIONS = (BinOp.FloorDiv, BinOp.FloorMod, BinOp.FloatDiv)

Exits = dict[str, torch.Tensor]  # "break" | "continue" | "return" → retired threads


class Lanes:
    """The state of one running launch: slots, the active-thread mask and the geometry."""

    def __init__(self, n_slots: int, threads: tuple[int, int, int]) -> None:
        x, y, z = threads
        self.threads, self.n = threads, x * y * z
        lin = torch.arange(self.n)
        self.linear = lin
        self.idx = (lin % x, (lin // x) % y, lin // (x * y))
        self.slots: list[Any] = [None] * n_slots
        self.mask: torch.Tensor | None = None  # None: every thread
        self.warps = -(-self.n // WARP_SIZE)
        self.counts: Counter[str] = Counter()  # class → warp instructions
        self.lane_ops = 0  # thread-level arithmetic operations (the launch's "flops")
        self._warps_of: torch.Tensor | None = None
        self._warps = 0

    def active_warps(self, mask: torch.Tensor | None) -> int:
        """Warps with at least one thread in `mask` (they issue the instruction)."""
        if mask is None:
            return self.warps
        if self._warps_of is not mask:  # statements of one block share their mask
            pad = self.warps * WARP_SIZE - self.n
            m = torch.nn.functional.pad(mask, (0, pad)) if pad else mask
            self._warps_of, self._warps = mask, int(m.view(-1, WARP_SIZE).any(1).sum())
        return self._warps


@dataclass
class SimtProfile:
    """What one launch did: warp instructions per class, thread count, bytes touched."""

    threads: int
    warp_ops: dict[str, int]
    lane_ops: int
    bytes: int


def _none(mask: torch.Tensor | None) -> bool:
    return mask is not None and not bool(mask.any())


def _and(mask: torch.Tensor | None, other: torch.Tensor) -> torch.Tensor:
    return other if mask is None else mask & other


def _without(mask: torch.Tensor | None, gone: torch.Tensor) -> torch.Tensor:
    return ~gone if mask is None else mask & ~gone


RETURN_SLOT = 0  # of a callee's frame: the value each thread returned


class _Compiler:
    """IR of one SIMT function → closures `expr(st) -> value`, `stmt(st) -> Exits | None`;
    `kernels` holds the callees compiled so far (by name; None while one is being compiled)."""

    def __init__(self, fn: Function, functions: Mapping[str, Function],
                 kernels: dict[str, SimtKernel | None]) -> None:
        self.fn, self.functions, self.kernels = fn, functions, kernels
        self.slot_of: dict[int, int] = {-1: RETURN_SLOT}
        self.yield_targets: list[list[tuple[int, DataType]]] = []
        self.loop_targets: list[list[tuple[int, DataType]]] = []
        uses = Counter(n.uid for n in walk(fn.body) if isinstance(n, Var))
        self.used = {uid for uid, k in uses.items() if k > 1}  # read somewhere, not just bound
        for p in fn.params:
            self.slot(p)

    def slot(self, var: Var) -> int:
        s = self.slot_of.get(var.uid)
        if s is None:
            s = self.slot_of[var.uid] = len(self.slot_of)
        return s

    # ------------------------------------------------------------ expressions
    def expr(self, e: Expr) -> Callable[[Lanes], Any]:
        if isinstance(e, Var):
            i = self.slot(e)
            return lambda st: st.slots[i]
        if isinstance(e, ConstFloat):
            v = round_scalar(e.value, e.dtype)
            return lambda st: v
        if isinstance(e, (ConstInt, ConstBool)):
            v = e.value
            return lambda st: v
        if isinstance(e, BinaryExpr):
            a, b, op, span = self.expr(e.lhs), self.expr(e.rhs), e.op, e.span
            dt = _dtype(e) if not (op.is_compare or op.is_logical) else None
            return lambda st: binary(op, a(st), b(st), dt, st.mask, span)
        if isinstance(e, UnaryExpr):
            a, op, dt = self.expr(e.operand), e.op, _dtype(e)
            return lambda st: unary(op, a(st), dt)
        if isinstance(e, Cast):
            a, dt = self.expr(e.operand), e.type.dtype
            return lambda st: to_dtype(a(st), dt)
        if isinstance(e, Select):
            c, a, b = self.expr(e.cond), self.expr(e.true_value), self.expr(e.false_value)
            dt = _dtype(e)
            return lambda st: select(c(st), a(st), b(st), dt)
        if isinstance(e, Call):
            return self.call(e)
        raise NotSupported(f"SIMT code on the simulator: expression {type(e).__name__}",
                           getattr(e, "span", None))

    def call(self, e: Call) -> Callable[[Lanes], Any]:
        op, span = e.op, e.span
        if op == "simt.thread_idx":
            axis = _CONTEXT_AXES[e.kwarg("axis", "x")]
            return lambda st: st.idx[axis]
        if op == "simt.block_dim":
            axis = _CONTEXT_AXES[e.kwarg("axis", "x")]
            return lambda st: st.threads[axis]
        if op == "simt.block_idx":  # one thread block per launch (as the native backend)
            return lambda st: 0
        if op == "simt.grid_dim":
            return lambda st: 1
        if op == "simt.linear_thread_idx":
            return lambda st: st.linear
        if op == "simt.warp_size":
            return lambda st: WARP_SIZE
        if op == "simt.math":
            args = [self.expr(a) for a in e.args]
            dts = [_dtype(a) or DataType.INDEX for a in e.args]
            fn, dt = e.kwarg("fn"), e.type.dtype
            return lambda st: math_fn(fn, [a(st) for a in args], dts, dt, span)
        if op == "block.getval":
            arr, off = self.expr(e.args[0]), self.expr(e.args[1])
            return lambda st: arr(st).load(off(st), st.mask, span)
        if op == "block.tile_valid_shape":
            arr, axis = self.expr(e.args[0]), self.expr(e.args[1])
            return lambda st: arr(st).ref.valid[axis(st)]
        if op == "simt.atomic":
            return self.atomic(e, want_old=True)
        if op == "simt.call":
            return self.simt_call(e)
        raise NotSupported(f"SIMT code on the simulator: '{op}'", span)

    def simt_call(self, e: Call) -> Callable[[Lanes], Any]:
        callee = self.callee(e.kwarg("callee"), e.span)
        args = [self.expr(a) for a in e.args]
        return lambda st: callee.call(st, [a(st) for a in args])

    def callee(self, name: str, span) -> SimtKernel:
        if name in self.kernels:
            kernel = self.kernels[name]
            if kernel is None:
                raise NotSupported(f"SIMT callee '{name}' is recursive", span,
                                   hint="SIMT threads have no call stack for recursion")
            return kernel
        fn = self.functions.get(name)
        if fn is None or fn.func_type is not FunctionType.SIMT_CALLEE:
            raise SimulationError(f"simt.call of '{name}', which is not a SIMT callee of the "
                                  f"program", span)
        self.kernels[name] = None
        kernel = self.kernels[name] = compile_simt(fn, self.functions, self.kernels)
        return kernel

    def atomic(self, e: Call, want_old: bool) -> Callable[[Lanes], Any]:
        arr, off = self.expr(e.args[0]), self.expr(e.args[1])
        values = [self.expr(a) for a in e.args[2:]]
        fn, span = e.kwarg("fn"), e.span

        def run(st: Lanes):
            return arr(st).atomic(fn, off(st), [v(st) for v in values], st.mask, want_old,
                                  st.n, span)

        return run

    # ------------------------------------------------------------ statements
    def stmt(self, s: Stmt) -> Callable[[Lanes], Exits | None]:
        method = getattr(self, f"s_{type(s).__name__}", None)
        if method is None:
            raise NotSupported(f"SIMT code on the simulator: statement {type(s).__name__}",
                               getattr(s, "span", None))
        return method(s)

    def s_SeqStmts(self, s: SeqStmts):
        parts = []
        for k, x in enumerate(s.stmts):
            nxt = s.stmts[k + 1] if k + 1 < len(s.stmts) else None
            if isinstance(x, YieldStmt) and isinstance(nxt, (BreakStmt, ContinueStmt)):
                parts.append(self.yield_stmt(x, self.loop_targets))  # the loop's write-back
            else:
                parts.append(self.stmt(x))

        def run(st: Lanes) -> Exits | None:
            outer = st.mask
            exits: Exits = {}
            try:
                for p in parts:
                    got = p(st)
                    if got:
                        for kind, lanes in got.items():
                            exits[kind] = exits[kind] | lanes if kind in exits else lanes
                            st.mask = _without(st.mask, lanes)
                        if _none(st.mask):
                            break
            finally:
                st.mask = outer
            return exits or None

        return run

    def s_AssignStmt(self, s: AssignStmt):
        i = self.slot(s.var)
        dt = s.var.type.dtype if isinstance(s.var.type, ScalarType) else None
        if isinstance(s.value, Call) and s.value.op == "simt.atomic":
            value = self.atomic(s.value, want_old=s.var.uid in self.used)
        else:
            value = self.expr(s.value)
        convert = dt is not None and isinstance(s.value.type, ScalarType) and \
            s.value.type != s.var.type
        counts = _classes(s.value)

        def run(st: Lanes) -> None:
            v = value(st)
            if convert:
                v = to_dtype(v, dt)
            st.slots[i] = merge(st.slots[i], v, st.mask, dt) if dt is not None else v
            _count(st, counts)

        return run

    def s_EvalStmt(self, s: EvalStmt):
        e = s.expr
        counts = _classes(e)
        if isinstance(e, Call) and e.op == "block.setval":
            arr, off, value = (self.expr(a) for a in e.args)
            span = e.span

            def store(st: Lanes) -> None:
                arr(st).store(off(st), value(st), st.mask, st.n, span)
                _count(st, counts)

            return store
        if isinstance(e, Call) and e.op == "simt.atomic":
            run_atomic = self.atomic(e, want_old=False)

            def atomic(st: Lanes) -> None:
                run_atomic(st)
                _count(st, counts)

            return atomic
        f = self.expr(e)

        def evaluate(st: Lanes) -> None:
            f(st)
            _count(st, counts)

        return evaluate

    def s_IfStmt(self, s: IfStmt):
        cond = self.expr(s.cond)
        carried = bool(s.return_vars)
        if carried:
            self.yield_targets.append([(self.slot(v), v.type.dtype) for v in s.return_vars])
        then = self.stmt(s.then_body)
        other = self.stmt(s.else_body) if s.else_body is not None else None
        if carried:
            self.yield_targets.pop()
        counts = _classes(s.cond)

        def run(st: Lanes) -> Exits | None:
            c = cond(st)
            _count(st, counts)
            if not isinstance(c, torch.Tensor):  # uniform: only the taken side runs
                branch = then if c else other
                return branch(st) if branch is not None else None
            outer = st.mask
            exits: Exits = {}
            for branch, lanes in ((then, c), (other, ~c)):
                st.mask = _and(outer, lanes)
                if branch is None or _none(st.mask):
                    continue
                for kind, gone in (branch(st) or {}).items():
                    exits[kind] = exits[kind] | gone if kind in exits else gone
            st.mask = outer
            return exits or None

        return run

    def s_YieldStmt(self, s: YieldStmt):
        return self.yield_stmt(s, self.yield_targets)

    def yield_stmt(self, s: YieldStmt, stack: list):
        if not stack:
            raise NotSupported("SIMT code on the simulator: yield outside a loop or if", s.span)
        targets = stack[-1]
        fs = [self.expr(v) for v in s.values]

        def run(st: Lanes) -> None:
            values = [f(st) for f in fs]  # parallel assignment
            for (slot, dt), v in zip(targets, values):
                st.slots[slot] = merge(st.slots[slot], v, st.mask, dt)

        return run

    def _loop(self, s, body: Stmt, step_fn: Callable[[Lanes, Any], tuple[Any, Any]],
              first: Callable[[Lanes], Any]):
        """A loop: `first(st)` gives the loop state, `step_fn(st, state)` → (still running
        (bool or per-thread), state for the body) before every iteration."""
        it = [(self.slot(v), v.type.dtype) for v in s.iter_args]
        init = [self.expr(v) for v in s.init_values]
        rv = [self.slot(v) for v in s.return_vars]
        self.yield_targets.append(it)
        self.loop_targets.append(it)
        try:
            run_body = self.stmt(body)
        finally:
            self.yield_targets.pop()
            self.loop_targets.pop()
        span = s.span

        def run(st: Lanes) -> Exits | None:
            outer = st.mask
            for (slot, dt), v in zip(it, [f(st) for f in init]):
                st.slots[slot] = merge(st.slots[slot], v, outer, dt)
            state = first(st)
            returned = None
            rounds = 0
            while True:
                going, state = step_fn(st, state)
                if isinstance(going, torch.Tensor):
                    st.mask = _and(st.mask, going)
                    if _none(st.mask):
                        break
                elif not going:
                    break
                rounds += 1
                if rounds > MAX_ITERATIONS:
                    raise SimulationError(f"a SIMT loop ran more than {MAX_ITERATIONS} "
                                          f"iterations: the kernel does not terminate", span)
                exits = run_body(st) or {}
                for kind in ("break", "return"):
                    if kind in exits:
                        st.mask = _without(st.mask, exits[kind])
                if "return" in exits:
                    returned = exits["return"] if returned is None else returned | exits[
                        "return"]
                if _none(st.mask):
                    break
            st.mask = outer
            for slot, (src, dt) in zip(rv, it):
                st.slots[slot] = merge(st.slots[slot], st.slots[src], outer, dt)
            return {"return": returned} if returned is not None else None

        return run

    def s_ForStmt(self, s: ForStmt):
        lv = self.slot(s.loop_var)
        start, stop, step = self.expr(s.start), self.expr(s.stop), self.expr(s.step)
        counts = _classes(s.stop) + Counter(alu=1)  # compare and increment per iteration
        span = s.span

        def first(st: Lanes):
            lo, hi, by = start(st), stop(st), step(st)
            if (not isinstance(by, torch.Tensor) and by == 0) or (
                    isinstance(by, torch.Tensor) and bool((by == 0).any())):
                raise SimulationError("pl.range step is zero in SIMT code", span)
            return [lo, hi, by, False]

        def step_fn(st: Lanes, state):
            i, hi, by, started = state
            if started:
                i = i + by
            _count(st, counts)
            if isinstance(by, torch.Tensor):
                going = torch.where(by > 0, i < hi, i > hi)
            else:
                going = (i < hi) if by > 0 else (i > hi)
            st.slots[lv] = i
            return going, [i, hi, by, True]

        return self._loop(s, s.body, step_fn, first)

    def s_WhileStmt(self, s: WhileStmt):
        cond = self.expr(s.cond)
        counts = _classes(s.cond)

        def step_fn(st: Lanes, state):
            _count(st, counts)
            return cond(st), state

        return self._loop(s, s.body, step_fn, lambda st: None)

    def s_BreakStmt(self, s: BreakStmt):
        return _retire("break")

    def s_ContinueStmt(self, s: ContinueStmt):
        return _retire("continue")

    def s_ReturnStmt(self, s: ReturnStmt):
        if s.value is None:
            return _retire("return")
        value, dt = self.expr(s.value), self.fn.return_type.dtype
        convert = s.value.type != self.fn.return_type
        counts = _classes(s.value)
        retire = _retire("return")

        def run(st: Lanes) -> Exits:
            v = value(st)
            st.slots[RETURN_SLOT] = merge(st.slots[RETURN_SLOT], to_dtype(v, dt) if convert
                                          else v, st.mask, dt)
            _count(st, counts)
            return retire(st)

        return run


def _retire(kind: str):
    def run(st: Lanes) -> Exits:
        return {kind: torch.ones(st.n, dtype=torch.bool) if st.mask is None else st.mask}

    return run


def _dtype(e: Expr) -> DataType | None:
    t = getattr(e, "type", None)
    return t.dtype if isinstance(t, ScalarType) else None


def _classes(e: Expr) -> Counter:
    """Warp instructions of one evaluation of `e`, by cost class."""
    out: Counter = Counter()
    for n in walk(e):
        if isinstance(n, BinaryExpr):
            out["div" if n.op in _DIVISIONS else "alu"] += 1
        elif isinstance(n, (UnaryExpr, Cast, Select)):
            out["alu"] += 1
        elif isinstance(n, Call) and n.op == "simt.math":
            out["transcendental" if n.kwarg("fn") in TRANSCENDENTAL else "alu"] += 1
        elif isinstance(n, Call) and n.op in ("block.getval", "block.setval", "simt.atomic"):
            space = "ub" if isinstance(n.args[0].type, TileType) else "gm"
            out["atomic" if n.op == "simt.atomic" else space] += 1
    return out


_ARITHMETIC = ("alu", "div", "transcendental")


def _count(st: Lanes, counts: Counter) -> None:
    if counts:
        warps = st.active_warps(st.mask)
        for k, v in counts.items():
            st.counts[k] += v * warps
        ops = sum(counts[k] for k in _ARITHMETIC)
        if ops:
            st.lane_ops += ops * (st.n if st.mask is None else int(st.mask.sum()))


@dataclass
class SimtKernel:
    """A compiled SIMT function: `run(args, threads)` executes one launch (an entry), `call`
    one call from running SIMT code (a callee)."""

    body: Callable[[Lanes], Exits | None]
    n_slots: int
    param_slots: list[int]
    containers: list[bool]  # per parameter: a tile or GM tensor (else a scalar)

    def call(self, st: Lanes, args: list) -> Any:
        """Run the body for the threads of `st.mask` in a fresh frame with `args` bound (tiles
        and tensors are the caller's `ElementArray`s); the value each thread returned."""
        caller = st.slots
        st.slots = [None] * self.n_slots
        try:
            for slot, value in zip(self.param_slots, args):
                st.slots[slot] = value
            self.body(st)
            return st.slots[RETURN_SLOT]
        finally:
            st.slots = caller

    def run(self, args: list, threads: tuple[int, int, int], span) -> tuple[Lanes, list]:
        st = Lanes(self.n_slots, threads)
        arrays: list[ElementArray | None] = []
        for slot, value, is_mem in zip(self.param_slots, args, self.containers):
            arr = ElementArray(value, span) if is_mem else None
            arrays.append(arr)
            st.slots[slot] = arr if is_mem else value
        self.body(st)
        return st, arrays


def compile_simt(fn: Function, functions: Mapping[str, Function] | None = None,
                 kernels: dict[str, SimtKernel | None] | None = None) -> SimtKernel:
    """`fn` compiled; `functions` (by name) has the SIMT callees it may call, `kernels` the
    callees already compiled (shared by the callees of one launch)."""
    c = _Compiler(fn, functions or {}, {} if kernels is None else kernels)
    body = c.stmt(fn.body)
    containers = [isinstance(p.type, (TileType, TensorType)) for p in fn.params]
    return SimtKernel(body, len(c.slot_of), [c.slot(p) for p in fn.params], containers)


class SimtLaunch:
    """One issued `simt.launch`: executed when its pipe-V instruction starts (`execute`, called
    by the cost model for the instruction's duration), its writes committed at its end."""

    def __init__(self, kernel: SimtKernel, threads: tuple[int, int, int], span) -> None:
        self.kernel, self.threads, self.span = kernel, threads, span
        self.profile: SimtProfile | None = None
        self._arrays: list[ElementArray | None] = []

    def execute(self, args: list) -> SimtProfile:
        if self.profile is None:
            st, self._arrays = self.kernel.run(args, self.threads, self.span)
            touched = sum(a.loaded_bytes for a in self._arrays if a is not None)
            self.profile = SimtProfile(st.n, dict(st.counts), st.lane_ops, touched)
        return self.profile

    def commit(self, args: list) -> None:
        self.execute(args)  # the cost model normally ran it already
        for arr, ref in zip(self._arrays, args):
            if arr is not None and isinstance(ref, (TileRef, GMRef)):
                arr.commit(ref)
