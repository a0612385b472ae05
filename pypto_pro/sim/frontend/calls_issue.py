"""Effect statements of the scalar unit: tile ops and sync ops become pipe instructions.

Operands are resolved at issue time, as on hardware: a tile operand becomes a `TileRef` with the
tile's valid shape at that moment, in the memory of the core that owns the space (a Vec tile
named by the cube is its two AIVs' UBs; a Mat tile named by an AIV is its block's L1).
"""
from __future__ import annotations

from types import MappingProxyType
from typing import Any, Callable, Mapping, Sequence

from ...errors import KernelTrap, NotSupported, SimulationError
from ...ir import ops as opreg
from ...ir.nodes import Call, ConstInt, Expr, Var
from ...ir.span import Span
from ...ir.types import MemorySpace, PipeType, PtrType, TensorType, TileType
from . import dump_text
from ..model.cost_model import WINDOW_OPS, op_cost, printf_cost
from ..model.memory import GMRef
from .program import NOTHING, Frame, RtGroup, RtTile
from .simt import SimtLaunch, compile_simt
from .ssbuf import compile_ssbuf
from .unit_flag import UnitFlagSite


#: the keyword arguments of an instruction without any (sync instructions): one shared,
#: read-only mapping instead of a fresh dict per issued instruction
NO_KWARGS: Mapping[str, Any] = MappingProxyType({})


class OpSite:
    """A tile-op call site, named by every instruction it issues (`Instr.site`): the record
    phase keeps per site what does not depend on the operands (`stream.RecordingCore`).
    `window`: a tile load or store (its GM window moves with the offsets); `static_kwargs`:
    every issue passes the same kwargs mapping."""

    __slots__ = ("window", "static_kwargs")

    def __init__(self, window: bool, static_kwargs: bool) -> None:
        self.window, self.static_kwargs = window, static_kwargs


class Instr:
    """One instruction in a pipe queue. A plain slotted class with a hand-written __init__:
    one is made per issued tile op, and a dataclass's default factories allocate a list and a
    dict each time. A sync call site issues one shared instruction per id (`_SyncInstrs`): a
    core that keeps per-issue state on one (`issue_time`, `seq`, `req`) queues a `copy`. A tile
    op names its call site (`site`; None for the others)."""

    __slots__ = ("kind", "pipe", "ir_op", "span", "args", "kwargs", "key", "site", "issue_time",
                 "seq", "req")

    def __init__(self, kind: str, pipe: PipeType, ir_op: str, span: Span,
                 args: Sequence[Any] = (), kwargs: Mapping[str, Any] = NO_KWARGS,
                 key: Any = None, site: OpSite | None = None) -> None:
        # "op" | "set_flag" | "wait_flag" | "lock" | "unlock" | "xset" | "xwait" | "scalar" (the
        # scalar unit's own work, key (cycles, bytes): `Core.scalar_work`)
        self.kind = kind
        self.pipe = pipe
        self.ir_op = ir_op
        self.span = span
        self.args = args
        self.kwargs = kwargs
        self.key = key  # flag (src, dst, id) / mutex id / cross-core (mode, id)
        self.site = site
        self.issue_time = 0
        self.seq = 0  # issue order within the core (mutex FIFO order)
        self.req: Any = None  # a lock's place in its mutex's FIFO (set when it is queued)

    def __repr__(self) -> str:
        return f"Instr({self.kind}, {self.pipe.value}, {self.ir_op}, key={self.key!r})"

    def copy(self) -> Instr:
        """A fresh instruction like this one, without per-issue state."""
        return Instr(self.kind, self.pipe, self.ir_op, self.span, self.args, self.kwargs,
                     self.key, self.site)


def compile_effect(c, e: Expr) -> Callable:
    if not isinstance(e, Call):
        f = c.expr(e)

        def run_expr(fr: Frame) -> tuple:
            f(fr)
            return NOTHING

        return run_expr
    handler = _EFFECTS.get(e.op)
    if handler is not None:
        return handler(c, e)
    spec = opreg.get(e.op)
    if spec is not None and e.op.startswith("block.") and spec.accesses_data:
        return _tile_op(c, e, spec)
    if spec is not None and spec.family in ("sync",) and e.op.startswith("system."):
        return _noop(c, e)
    raise NotSupported(f"the simulator does not run '{e.op}' yet", e.span)


def _tile_op(c, e: Call, spec: opreg.OpSpec) -> Callable:
    args = [c.slot_or_expr(a) for a in e.args]  # most operands are tile variables
    kwargs = {k: v for k, v in e.kwargs if k != "pipe" and not isinstance(v, Expr)}
    dyn_kwargs = [(k, c.expr(v)) for k, v in e.kwargs if k != "pipe" and isinstance(v, Expr)]
    fixed_pipe = e.kwarg("pipe")
    spaces = [a.type.memory if isinstance(getattr(a, "type", None), TileType) else None
              for a in e.args]
    pipe = fixed_pipe if isinstance(fixed_pipe, PipeType) else spec.pipe_for(spaces)
    span, op = e.span, e.op
    split = op in ("block.move", "block.move_fp") and e.kwarg("acc_to_vec_mode") is not None
    mode = e.kwarg("acc_to_vec_mode")
    site = OpSite(op in WINDOW_OPS, not dyn_kwargs)
    gm = [i for i, a in enumerate(e.args) if isinstance(getattr(a, "type", None),
                                                        (TensorType, PtrType))]

    def run(fr: Frame):
        core, slots = fr.core, fr.slots
        memory = core.memory
        values = []  # (one loop: a comprehension and a second pass cost a visible share)
        for a in args:
            v = slots[a] if type(a) is int else a(fr)
            if type(v) is RtTile:
                if split and not values:  # the AIV tile(s) the mode names
                    v = core.launch.tile_ref(core, v, span, True, mode)
                else:  # `Launch.tile_ref`, its memo checked here: most hit it
                    memo = v.last_ref
                    v = memo[2] if memo is not None and memo[0] is memory and \
                        memo[1] is v.valid else core.launch.tile_ref(core, v, span, False, None)
            values.append(v)
        for i in gm:
            if values[i] is None:
                raise _null_access(op, span)
        if dyn_kwargs:  # the static ones are shared: nothing writes an instruction's kwargs
            kw = dict(kwargs)
            for k, f in dyn_kwargs:
                kw[k] = f(fr)
        else:
            kw = kwargs
        return core.issue(Instr("op", pipe, op, span, values, kw, None, site))

    phase = e.kwarg("phase")
    cube = spec.family == "cube"
    if phase is None or isinstance(phase, Expr) or int(phase) == 0 or not (
            cube or spaces[1] is MemorySpace.Acc and op in ("block.store", "block.store_fp")):
        return run
    unit = UnitFlagSite(op, span, cube, int(phase) == 2, Instr)
    acc_arg = args[0] if cube else args[1]

    def run_phased(fr: Frame):
        """`run` after the unit-flag handshake's flags (`unit_flag`)."""
        acc = fr.slots[acc_arg] if type(acc_arg) is int else acc_arg(fr)
        for sync in unit.before(fr.core, acc.geom.addr):
            step = fr.core.issue(sync)
            if step is not NOTHING:
                yield from step
        step = run(fr)
        if step is not NOTHING:
            yield from step
        return None

    return run_phased


def _null_access(op: str, span: Span) -> SimulationError:
    """A GM operand that is a null pointer: a tensor / pointer argument passed as None (the
    hardware faults on the access)."""
    return SimulationError(f"{op} accesses GM through a null pointer (a tensor / pointer "
                           f"argument passed as None)", span,
                           hint="guard the access with 'if p is not None:'")


def _noop(c, e: Call) -> Callable:
    def run(fr: Frame) -> tuple:
        fr.core.time += 1
        return NOTHING

    return run


#: the vector-mask SPR {MASK1, MASK0} after reset: every lane
ALL_LANES = (2**64 - 1, 2**64 - 1)


def _vector_mask(c, e: Call) -> Callable:
    """`pl.set_vec_mask(high, low)` / `pl.reset_mask()`: the SPR `vf.get_mask_spr` reads."""
    words = [c.expr(a) for a in e.args] if e.op == "system.set_vec_mask" else []

    def run(fr: Frame) -> tuple:
        core = fr.core
        core.time += 1
        core.vector_mask = tuple(int(w(fr)) % 2**64 for w in words) if words else ALL_LANES
        return NOTHING

    return run


def _set_validshape(c, e: Call) -> Callable:
    target, shape = c.expr(e.args[0]), c.expr(e.args[1])
    span = e.span

    def run(fr: Frame):
        t = target(fr)
        rows, cols = shape(fr)
        tiles = t.slots if isinstance(t, RtGroup) else [t]
        for tile in tiles:
            if not (0 <= rows <= tile.geom.rows and 0 <= cols <= tile.geom.cols):
                if fr.core.engine.observer is not None:  # sanitizer: report, clamp, go on
                    rows, cols = fr.core.engine.observer.bad_validshape(fr.core, tile, rows,
                                                                        cols, span)
                    tile.valid = (rows, cols)
                    continue
                raise SimulationError(f"set_validshape [{rows}, {cols}] exceeds the tile's "
                                      f"shape [{tile.geom.rows}, {tile.geom.cols}]", span)
            tile.valid = (rows, cols)
        fr.core.time += 1
        return NOTHING

    return run


def _setval(c, e: Call) -> Callable:
    target, off, value = (c.expr(a) for a in e.args)
    span = e.span

    def run(fr: Frame):
        core = fr.core
        yield from core.sync_scalar()
        ref = core.resolve_scalar_target(target(fr), span)
        import torch

        offset = off(fr)
        cost = op_cost(e.op, [ref, offset], NO_KWARGS, core.launch.soc)
        obs = core.engine.observer
        if obs is not None and not obs.scalar_access(core, ref, offset, True, span):
            core.scalar_work(e.op, span, cost.cycles, cost.bytes)
            return None  # the sanitizer reported the out-of-bounds write: skip it
        if isinstance(ref, GMRef) and core.engine.gm_views:  # loads still reading it first
            core.engine.protect_gm(ref.storage)
        try:
            ref.write_linear(offset, torch.tensor([value(fr)]))
        except (IndexError, ValueError) as err:
            raise SimulationError(f"setval out of bounds: {err}", span) from None
        core.scalar_work(e.op, span, cost.cycles, cost.bytes)
        return None

    return run


def _set_stride(c, e: Call) -> Callable:
    """The core's variable names a new view with the new strides: instructions issued before
    keep the view they were issued with (their addresses are computed at issue), and other
    cores keep theirs (each holds its own tensor descriptor)."""
    if not isinstance(e.args[0], Var):
        raise NotSupported("the simulator runs set_stride on a tensor variable only", e.span)
    slot, strides = c.slot(e.args[0]), c.expr(e.args[1])

    def run(fr: Frame) -> tuple:
        ref: GMRef = fr.slots[slot]
        fr.slots[slot] = GMRef(ref.tensor, ref.shape, tuple(strides(fr)), ref.dtype,
                               ref.base_offset)
        return NOTHING

    return run


# ---------------------------------------------------------------- sync


def _sync_id(c, e: Call, name: str) -> tuple[int | None, int | Callable[[Frame], Any] | None]:
    """(the id, None) when the op names a constant one (resolved once, here), else (None, its
    slot or expression: `_Compiler.slot_or_expr`) for the `_dyn` forms."""
    if e.op.endswith("_dyn"):
        return None, c.slot_or_expr(e.args[0])
    return int(e.kwarg(name)), None


#: ids a sync call site keeps instructions for (hardware ids are below 32)
_MAX_SHARED_IDS = 64


class _SyncInstrs(dict):
    """The instructions of one sync call site by id, each made on its id's first issue and
    shared by the later ones (a site names a few ids; an Instr per issue was a visible share
    of a launch's issue path)."""

    def __init__(self, kind: str, pipe: PipeType, op: str, span: Span,
                 key_of: Callable[[int], Any]) -> None:
        super().__init__()
        self.kind, self.pipe, self.op, self.span, self.key_of = kind, pipe, op, span, key_of

    def __missing__(self, i: int) -> Instr:
        instr = Instr(self.kind, self.pipe, self.op, self.span, key=self.key_of(i))
        if len(self) < _MAX_SHARED_IDS:  # (a kernel computing ids freely makes no garbage)
            self[i] = instr
        return instr


def _flag(c, e: Call) -> Callable:
    src, dst = e.kwarg("set_pipe"), e.kwarg("wait_pipe")
    const, ident = _sync_id(c, e, "event_id")
    kind, pipe = ("set_flag", src) if e.op.startswith("system.sync_src") else ("wait_flag", dst)
    return _issue_sync(_SyncInstrs(kind, pipe, e.op, e.span, lambda i: (src, dst, i)), const,
                       ident)


def _issue_sync(instrs: _SyncInstrs, const: int | None,
                ident: int | Callable[[Frame], Any] | None) -> Callable:
    """The closure issuing a sync op without guards: the shared instruction of its id."""
    if ident is None:
        instr = instrs[const]
        return lambda fr: fr.core.issue(instr)
    if type(ident) is int:
        return lambda fr: fr.core.issue(instrs[int(fr.slots[ident])])
    return lambda fr: fr.core.issue(instrs[int(ident(fr))])


def _barrier(pipe_name: str):
    def build(c, e: Call) -> Callable:
        span = e.span

        def run(fr: Frame):
            yield from fr.core.barrier(pipe_name, span)
            return None

        return run

    return build


def _mutex(c, e: Call) -> Callable:
    pipe: PipeType = e.kwarg("pipe")
    const, ident = _sync_id(c, e, "mutex_id")
    guards = [c.slot_or_expr(g) for g in (e.kwarg("guard") or ())]
    kind = "lock" if "lock" in e.op and "unlock" not in e.op else "unlock"
    instrs = _SyncInstrs(kind, pipe, e.op, e.span, lambda i: i)
    if not guards:
        slot_id = _slot_mutex_id(c, e.args[0]) if ident is not None else None
        if slot_id is not None:  # the auto-mutex form: the id of a TileGroup's slot
            g, cursor, k = slot_id
            return lambda fr: fr.core.issue(instrs[fr.slots[g].mutex_ids[fr.slots[cursor]][k]])
        return _issue_sync(instrs, const, ident)

    def run(fr: Frame):
        slots = fr.slots
        i = const if ident is None else int(slots[ident] if type(ident) is int else ident(fr))
        for g in guards:
            if int(slots[g] if type(g) is int else g(fr)) == i:
                return NOTHING  # the same id is already held by this op (codegen's dedup guard)
        return fr.core.issue(instrs[i])

    return run


def _slot_mutex_id(c, e: Expr) -> tuple[int, int, int] | None:
    """(group slot, cursor slot, k) when `e` is `tile_group.mutex_id(group, cursor, k=k)` of
    two variables (the ids a TileGroup's mutex_ids holds are ints), else None."""
    if isinstance(e, Call) and e.op == "tile_group.mutex_id" and \
            all(isinstance(a, Var) for a in e.args[:2]):
        return c.slot(e.args[0]), c.slot(e.args[1]), e.kwarg("k", 0)
    return None


def _cross_core(c, e: Call) -> Callable:
    pipe: PipeType = e.kwarg("pipe")
    const, ident = _sync_id(c, e, "event_id")
    mode = e.kwarg("sync_mode")
    kind = "xset" if "set_cross" in e.op else "xwait"
    return _issue_sync(_SyncInstrs(kind, pipe, e.op, e.span, lambda i: (mode, i)), const,
                       ident)


def _sync_all(c, e: Call) -> Callable:
    core_type = e.kwarg("core_type")
    soft = str(getattr(e.kwarg("mode"), "name", e.kwarg("mode"))) == "SOFT"
    span = e.span

    def run(fr: Frame):
        yield from fr.core.sync_all(core_type, span, soft)
        return None

    return run


# ---------------------------------------------------------------- debug


def _printf(c, e: Call) -> Callable:
    """Text for the block's output, and a pipe S instruction of the call site's cost
    (`cost_model.printf_cost`; worked out per SoC, shared by the site's issues)."""
    values = [c.expr(a) for a in e.args[1:]]
    span = e.span
    where = f"[{span.file.rsplit('/', 1)[-1]}:{span.line}] " if e.kwarg("loc", False) else ""
    fmt = e.args[0].value
    costed: list = [None, None]  # (SoC, its instruction)

    def run(fr: Frame):
        core = fr.core
        core.print(where + _c_format(fmt, [v(fr) for v in values]))
        soc = core.launch.soc
        if costed[0] is not soc:
            cost = printf_cost(where + fmt, soc)  # (the location is part of the format)
            costed[:] = soc, Instr("scalar", PipeType.S, e.op, span, key=(cost.cycles,
                                                                          cost.bytes))
        yield from core.issue(costed[1])
        return None

    return run


def _c_format(fmt: str, values: list) -> str:
    import re

    py = re.sub(r"%([-+ #0]*\d*(?:\.\d+)?)[lh]*([diuxXpfsc])",
                lambda m: "%" + m.group(1) + {"i": "d", "u": "d", "p": "x"}.get(m.group(2),
                                                                                 m.group(2)),
                fmt)
    try:
        return py % tuple(values)
    except (TypeError, ValueError):
        return fmt + " " + " ".join(map(str, values))


def _assert(c, e: Call) -> Callable:
    cond = c.expr(e.args[0])
    fmt = e.args[1].value if len(e.args) > 1 else None
    values = [c.expr(a) for a in e.args[2:]]
    span = e.span

    def run(fr: Frame):
        core = fr.core
        yield from core.sync_scalar()
        if not cond(fr):
            msg = _c_format(fmt, [v(fr) for v in values]) if fmt else ""
            core.print(f"pto_assert failed at {span.file.rsplit('/', 1)[-1]}:{span.line}"
                       + (f": {msg}" if msg else "") + "\n")
        return None

    return run


def _trap(c, e: Call) -> Callable:
    span = e.span

    def run(fr: Frame):
        yield from fr.core.sync_scalar()
        raise KernelTrap(f"pl.trap() executed on {fr.core.label}", span)

    return run


def _dump(c, e: Call) -> Callable:
    """`pl.dump_data`: after a barrier, the text the real device code prints (`dump_text`)."""
    target = c.expr(e.args[0])
    window = [c.expr(a) for a in e.args[1:3]]
    span = e.span
    op = e.op.split(".")[1]
    head = dump_text.headers(span.file, span.line, op, bool(e.kwarg("loc")), e.kwarg("flag"))

    def run(fr: Frame):
        core = fr.core
        yield from core.barrier("ALL", span)
        ref = core.resolve_scalar_target(target(fr), span)
        where = [w(fr) for w in window]
        if isinstance(ref, GMRef):
            offsets, shapes = where or ([0] * len(ref.shape), list(ref.shape))
            last = e.args[0].type.shape[-1]
            dn = len(ref.shape) == 2 and isinstance(last, ConstInt) and last.value == 1
            text = dump_text.tensor_text(ref, offsets, shapes, "DN" if dn else "ND")
        elif where:
            text = dump_text.tile_window_text(ref, *where)
        else:
            text = dump_text.tile_text(ref)
        core.print(head + text)
        return None

    return run


def _simt_launch(c, e: Call) -> Callable:
    """A pipe-V instruction running every thread of the SIMT function (`sim/simt.py`)."""
    callee = c.functions.get(e.kwarg("callee"))
    if callee is None:
        raise SimulationError(f"simt.launch of unknown function '{e.kwarg('callee')}'", e.span)
    kernel = compile_simt(callee, c.functions)
    args = [c.expr(a) for a in e.args]
    threads = tuple(int(n) for n in e.kwarg("threads", (1, 1, 1)))
    span = e.span

    def run(fr: Frame):
        core = fr.core
        resolved = [core.operand(a(fr), span) for a in args]
        launch = SimtLaunch(kernel, threads, span)
        yield from core.issue(Instr("op", PipeType.V, "simt.launch", span, resolved,
                                    {"launch": launch}))

    return run


_EFFECTS: dict[str, Callable] = {
    "block.set_validshape": _set_validshape,
    "block.setval": _setval,
    "block.set_stride": _set_stride,
    "block.ssbuf_store": compile_ssbuf, "block.ssbuf_load": compile_ssbuf,
    **{f"system.{n}": _flag for n in ("sync_src", "sync_dst", "sync_src_dyn", "sync_dst_dyn")},
    **{f"system.bar_{p}": _barrier(p.upper()) for p in ("all", "m", "fix", "mte1", "mte2",
                                                       "mte3", "v")},
    **{f"system.{n}": _mutex for n in ("mutex_lock", "mutex_unlock", "mutex_lock_dyn",
                                       "mutex_unlock_dyn")},
    **{f"system.{n}": _cross_core for n in ("set_cross_core", "wait_cross_core",
                                            "set_cross_core_dyn", "wait_cross_core_dyn")},
    "system.sync_all": _sync_all,
    "system.set_vec_mask": _vector_mask, "system.reset_mask": _vector_mask,
    "debug.printf": _printf, "debug.assert": _assert, "debug.trap": _trap,
    "debug.dump_tensor": _dump, "debug.dump_tile": _dump,
    "simt.launch": _simt_launch,
}
