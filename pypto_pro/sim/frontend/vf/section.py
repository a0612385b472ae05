"""A VF section (`__VEC_SCOPE__`) as one instruction of pipe V.

At issue the scalar unit resolves the section's tiles (TileRefs, so the engine defers their
writes to the instruction's end) and snapshots its scalar slots, then queues one `vf.vec_scope`
instruction. When pipe V starts it, the body runs to completion on a working copy of the core's
UB: every `vf.*` op is one closure with one torch call per register op, loops and scalar code
reuse the scalar unit's compiler. Stores mark byte ranges of their tile; at the instruction's
end those ranges are written back through the (deferred) TileRefs, so MTE2 / MTE3 see the
results only after the section, as on hardware. The cost counts the executed ops by class
(`cost_model.vf_section_cost`, spec §3.4), so the body runs once when the engine first asks for
either the cost or the result (a timing-only launch still runs it, but writes nothing back).
`vf.vec_scope` is registered in `ir.ops`; its op-library entry (`sim.ops.launches`) calls
`VFLaunch.apply`.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import torch

from pypto_pro.errors import NotSupported, SimulationError
from pypto_pro.ir.dtype import DataType
from pypto_pro.ir.mutator import walk
from pypto_pro.ir.nodes import (
    AssignStmt,
    BinaryExpr,
    BinOp,
    Call,
    EvalStmt,
    Expr,
    SectionStmt,
    Stmt,
)
from pypto_pro.ir.span import Span
from pypto_pro.ir.types import (
    AddrRegType, MaskType, MemorySpace, PipeType, RegType, TileType, TupleType,
)

from ..calls_issue import Instr
from ...model.cost_model import VF_SECTION, vf_section_cost
from ...model.memory import TileRef, is_packed4, read_nibbles, storage_dtype
from ..program import Frame, _Compiler
from . import ops_arith, ops_convert, ops_mask, ops_memory, ops_unalign
from .args import UBAddr, VFOpError
from .regs import Reg, bits

#: every `vf.<name>` → (implementation, cost class)
OPS: dict[str, tuple[Callable, str]] = {**ops_arith.OPS, **ops_mask.OPS, **ops_memory.OPS,
                                        **ops_unalign.OPS, **ops_convert.OPS}
#: ops whose predicate result or predicate first operand selects another implementation
MASK_FORMS: dict[str, Callable] = {**ops_mask.MASK_FORMS, "load_align": ops_memory.load_mask}
MAX_ITERATIONS = 50_000_000


class VFState:
    """What the section's body sees as its core: the UB working copy, the SPR, op counts."""

    def __init__(self, tiles: list[TileRef], ub: torch.Tensor, spr: int,
                 vector_mask: tuple[int, int] = (2**64 - 1, 2**64 - 1)) -> None:
        self.tiles, self.ub, self.spr = tiles, ub, spr
        self.vector_mask = vector_mask  # the {MASK1, MASK0} SPR when the section was issued
        self.cursors: dict[tuple[int, int], int] = {}  # post-update pointers by UB operand
        self.dirty: dict[int, list[int]] = {}  # tile number → [first byte, end byte)
        self.views: dict[str, torch.Tensor] = {}  # typed views of `ub` by dtype value
        self.counts: Counter = Counter()
        self.time = 0
        self.iterations = 0

    def count_iteration(self, span: Span) -> None:
        self.iterations += 1
        if self.iterations > MAX_ITERATIONS:
            raise SimulationError(f"a vector function ran more than {MAX_ITERATIONS} loop "
                                  f"iterations", span)

    def tile_dtype(self, where: UBAddr) -> DataType:
        return self.tiles[where.tile].geometry.dtype

    def base(self, where: UBAddr) -> int:
        """UB byte address of `tile + k`."""
        g = self.tiles[where.tile].geometry
        return g.addr + where.offset * bits(g.dtype) // 8

    def cursor(self, where: UBAddr) -> int:
        """The operand's post-update pointer (the backend hoists one per tile operand)."""
        key = (where.tile, where.offset)
        got = self.cursors.get(key)
        if got is None:
            got = self.cursors[key] = self.base(where)
        return got

    def advance(self, where: UBAddr, nbytes: int) -> int:
        """The cursor's address, moved on by `nbytes` afterwards."""
        addr = self.cursor(where)
        self.cursors[(where.tile, where.offset)] = addr + nbytes
        return addr

    def read(self, start: int, nbytes: int, op: str) -> torch.Tensor:
        """A view of UB bytes [start, start + nbytes) (copy it before the next store)."""
        if start < 0 or start + nbytes > self.ub.numel():
            raise VFOpError(f"vf.{op} reads UB bytes [{start:#x}, {start + nbytes:#x}) outside "
                            f"the {self.ub.numel()}-byte UB")
        return self.ub[start:start + nbytes]

    def read_typed(self, start: int, count: int, dtype: DataType, op: str) -> torch.Tensor:
        """A view of `count` elements of `dtype` at an element-aligned byte `start`."""
        size = bits(dtype) // 8
        if start < 0 or start + count * size > self.ub.numel():
            self.read(start, count * size, op)  # raises the bounds error
        return self._typed(dtype)[start // size:start // size + count]

    def write_typed(self, tile: int, start: int, reg: Reg, op: str) -> None:
        """Store every lane of `reg` at an element-aligned byte `start`."""
        size = bits(reg.dtype) // 8
        end = start + reg.data.numel() * size
        self._check(tile, start, end, op)
        self._typed(reg.dtype)[start // size:end // size] = reg.data
        self._mark(tile, start, end)

    def _typed(self, dtype: DataType) -> torch.Tensor:
        got = self.views.get(dtype._value_)
        if got is None:
            got = self.views[dtype._value_] = self.ub.view(storage_dtype(dtype))
        return got

    def gather(self, starts: torch.Tensor, size: int, op: str) -> torch.Tensor:
        idx = starts[:, None] + torch.arange(size)
        if int(starts.min()) < 0 or int(idx.max()) >= self.ub.numel():
            raise VFOpError(f"vf.{op}: an index points outside UB")
        return self.ub[idx].reshape(-1)

    def write(self, tile: int, start: int, raw: torch.Tensor, active: torch.Tensor | None,
              op: str) -> None:
        """Store `raw` ([lanes, bytes]) at `start`: the `active` lanes (None: all of them)."""
        lanes, width = raw.shape
        if active is not None:
            on = torch.nonzero(active[:lanes]).flatten()
            if on.numel() == 0:
                return
            first, last = int(on[0]), int(on[-1]) + 1
            self._check(tile, start + first * width, start + last * width, op)
            seg = self.ub[start:start + lanes * width].view(lanes, width)
            seg[on] = raw[on]
            self._mark(tile, start + first * width, start + last * width)
            return
        end = start + lanes * width
        self._check(tile, start, end, op)
        self.ub[start:end] = raw.reshape(-1)
        self._mark(tile, start, end)

    def scatter(self, tile: int, starts: torch.Tensor, raw: torch.Tensor, op: str) -> None:
        if starts.numel() == 0:
            return
        width = raw.shape[1]
        lo, hi = int(starts.min()), int(starts.max()) + width
        self._check(tile, lo, hi, op)
        self.ub[(starts[:, None] + torch.arange(width)).reshape(-1)] = raw.reshape(-1)
        self._mark(tile, lo, hi)

    def _check(self, tile: int, start: int, end: int, op: str) -> None:
        t = self.tiles[tile]
        g = t.geometry
        size = g.rows * g.cols * g.dtype.bits // 8
        if start < g.addr or end > g.addr + size:
            raise VFOpError(f"vf.{op} writes UB bytes [{start:#x}, {end:#x}) outside its tile "
                            f"{t} (bytes [{g.addr:#x}, {g.addr + size:#x}))")

    def _mark(self, tile: int, start: int, end: int) -> None:
        got = self.dirty.get(tile)
        if got is None:
            self.dirty[tile] = [start, end]
        else:
            got[0], got[1] = min(got[0], start), max(got[1], end)


class VFLaunch:
    """One issued VF section: runs once (when its pipe-V instruction starts), then its stores
    are written back through the instruction's TileRefs."""

    def __init__(self, body: Callable, frame_slots: list, core: Any, span: Span) -> None:
        self.body, self.slots, self.core, self.span = body, frame_slots, core, span
        self.vector_mask = core.vector_mask  # the scalar unit may reset it before pipe V runs
        self.state: VFState | None = None

    def run(self, tiles: list[TileRef]) -> VFState:
        if self.state is None:
            ub = self.core.memory.buffer(MemorySpace.Vec).clone()
            state = VFState(list(tiles), ub, self.core.spr, self.vector_mask)
            gen = self.body(Frame(self.slots, state))
            for _ in gen:
                raise SimulationError("a vector function cannot wait on the scalar unit",
                                      self.span)
            self.core.spr = state.spr
            self.state = state
        return self.state

    def cost(self, tiles: list, soc: Any):
        return vf_section_cost(self.run(tiles).counts, soc)

    def apply(self, tiles: list) -> None:
        """Write the stored byte ranges back through `tiles` (the engine's deferred refs)."""
        state = self.run(tiles)
        for k, (start, end) in state.dirty.items():
            _write_back(tiles[k], state.ub, start, end)


def _write_back(tile: TileRef, ub: torch.Tensor, start: int, end: int) -> None:
    g = tile.geometry
    if is_packed4(g.dtype):
        first, stop = 2 * (start - g.addr), 2 * (end - g.addr)
        tile.write_linear(first, read_nibbles(ub, torch.arange(2 * g.addr + first,
                                                               2 * g.addr + stop)))
        return
    size = g.dtype.itemsize
    first, stop = (start - g.addr) // size, -(-(end - g.addr) // size)
    raw = ub[g.addr + first * size:g.addr + stop * size].clone()
    tile.write_linear(first, raw.view(storage_dtype(g.dtype)))


# ---------------------------------------------------------------- compiling the body


def _tile_of(e: Expr) -> Expr | None:
    """The tile of a UB operand: `tile` or `tile + k`."""
    if isinstance(e, BinaryExpr) and e.op is BinOp.Add and isinstance(
            getattr(e.lhs, "type", None), TileType):
        return e.lhs
    if isinstance(getattr(e, "type", None), TileType):
        return e
    return None


def section_tiles(body: Stmt) -> list[Expr]:
    """Tile operands of the section's vf ops, first use first (equal expressions once)."""
    seen: list[Expr] = []
    for node in walk(body):
        if isinstance(node, Call) and node.op.startswith("vf."):
            for a in node.args:
                t = _tile_of(a)
                if t is not None and t not in seen:
                    seen.append(t)
    return seen


class _VFCompiler(_Compiler):
    """The scalar unit's compiler with `vf.*` calls and tile operands of a section."""

    def __init__(self, parent: _Compiler, tiles: list[Expr]) -> None:
        self.__dict__.update(parent.__dict__)  # share the slot table and the loop stacks
        self.tiles = tiles

    def expr(self, e: Expr):
        if isinstance(e, Call) and e.op.startswith("vf."):
            return self.vf_call(e, None)
        t = _tile_of(e)
        if t is not None and t in self.tiles:
            k = self.tiles.index(t)
            if t is e:
                return lambda fr: UBAddr(k, 0)
            off = super().expr(e.rhs)
            return lambda fr: UBAddr(k, int(off(fr)))
        return super().expr(e)

    def s_AssignStmt(self, s: AssignStmt):
        if not (isinstance(s.value, Call) and s.value.op.startswith("vf.")):
            return super().s_AssignStmt(s)
        i = self.slot(s.var)
        call = self.vf_call(s.value, i)

        def run(fr: Frame):
            fr.slots[i] = call(fr)
            return None
            yield

        return run

    def s_EvalStmt(self, s: EvalStmt):
        if not (isinstance(s.expr, Call) and s.expr.op.startswith("vf.")):
            return super().s_EvalStmt(s)
        call = self.vf_call(s.expr, None)

        def run(fr: Frame):
            call(fr)
            return None
            yield

        return run

    def s_SectionStmt(self, s: SectionStmt):
        raise NotSupported("sections cannot be nested inside a vector function", s.span)

    def vf_call(self, e: Call, dst_slot: int | None):
        name = e.op.removeprefix("vf.")
        entry = OPS.get(name)
        if entry is None:
            raise NotSupported(f"the simulator has no Reg API op {e.op}", e.span)
        impl, cls = entry
        rtype = e.type
        first = getattr(e.args[0], "type", None) if e.args else None
        if name in MASK_FORMS and (isinstance(rtype, MaskType) or isinstance(first, MaskType)):
            impl = MASK_FORMS[name]
        args = [self.expr(a) for a in e.args]
        static = {k: v for k, v in e.kwargs if not isinstance(v, Expr) and k != "pipe"}
        dynamic = [(k, self.expr(v)) for k, v in e.kwargs if isinstance(v, Expr)]
        dtype = _result_dtype(rtype)
        span = e.span

        def call(fr: Frame):
            st = fr.core
            a = [f(fr) for f in args]
            kw = static if not dynamic else {**static, **{k: f(fr) for k, f in dynamic}}
            old = fr.slots[dst_slot] if dst_slot is not None else None
            st.counts[cls] += 1
            try:
                return impl(st, a, kw, old, dtype)
            except VFOpError as err:
                raise SimulationError(str(err), span) from None
            except (IndexError, ValueError, TypeError, RuntimeError) as err:
                raise SimulationError(f"{e.op}: {err}", span) from err

        return call


def _result_dtype(t) -> DataType | None:
    """The element type an op implementation is told: of the (first) result register."""
    if isinstance(t, TupleType):
        t = t.types[-1]
    return t.dtype if isinstance(t, (RegType, MaskType, AddrRegType)) else None


def compile_vf_section(parent: _Compiler, s: SectionStmt):
    """The scalar unit's closure for a VF section: issue one `vf.vec_scope` on pipe V."""
    tiles = section_tiles(s.body)
    compiler = _VFCompiler(parent, tiles)
    body = compiler.stmt(s.body)
    tile_fns = [parent.expr(t) for t in tiles]
    span = s.span

    def run(fr: Frame):
        core = fr.core
        refs = [core.operand(f(fr), span) for f in tile_fns]
        for r in refs:
            if not isinstance(r, TileRef) or r.space is not MemorySpace.Vec:
                raise SimulationError("vector functions work on Vec (UB) tiles only", span)
        launch = VFLaunch(body, list(fr.slots), core, span)
        yield from core.issue(Instr("op", PipeType.V, VF_SECTION, span, refs, {"launch": launch}))

    return run
