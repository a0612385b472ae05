"""The stream engine (DESIGN §5 "Speed of the simulator"): a timed launch in three phases.

1. Record (here): each block's compiled program runs to its end on a `RecordingCore`, whose
   `issue` never executes or waits: it appends the instruction, its operands resolved at issue
   as always and its cost (`op_cost`: cycles and GM lines, a pure function of the resolved
   operands), to the launch's instruction table, and a record to the core's stream. Records
   also mark everything that makes the scalar unit wait or sync (`sync_scalar`, pipe barriers,
   sync_all; a full queue or a wait on pipe S is the scheduler's business), each with the
   scalar cycles spent since the last record. A printf is an instruction of pipe S (kind
   "scalar", its cycles fixed per call site) that the scheduler times as `Core.scalar_work`
   does. An instruction's row, cost and footprint depend on its issue only through its
   operands: they are worked out per call site (`Sites`, kept across launches) and, for a
   tile op, per site and operands once per launch; a load or store looks up only its GM
   window per issue (`RecordingCore.issue`).
2. Schedule (`scheduler.cpp` via `scheduler_native`): the engine.py event loop over all the
   streams, compiled; gives the trace rows, the order of op starts and finishes, the blocks'
   slots, the L2 counters, or an error code.
3. Replay (`replay`): walks the starts and finishes, running each op on its operands at its
   start and landing its writes at its end, as `Core._run_op` / `Pipe.finish` do: same order,
   same values, races included. Recording also notes the memory each op reads and writes
   (`footprints`): when the schedule shows no op starting on memory a running op writes, the
   replay runs the ops eagerly, at their starts.

A launch goes this way when it is eligible (`Ineligible`: a sanitizer, scalar reads of memory,
setval, dump, SIMT launches and VF sections, whose cost needs the values; no L2) and the
library is loaded (`PYPTOPRO_SIM_ENGINE`). Anything else — an error while recording (GM is
untouched then) or a schedule that fails (deadlock, sync misuse) — runs the Python engine,
which stays the reference and gives the exact error.
"""
from __future__ import annotations

import struct
from array import array
from typing import Any

import numpy as np

from ...errors import SimulationError
from ...ir.attrs import CrossCoreSyncMode, SyncCoreType
from ...ir.span import Span
from ...ir.types import PipeType
from .. import settings
from . import replay, scheduler_native, memo
from ..frontend.calls_issue import ALL_LANES, Instr, OpSite
from ..model.cost_model import GM_OPS, VF_SECTION, op_cost, window_onchip_cost
from ..reference.engine import AIC_PIPES, AIV_PIPES, Core, _flag_ids, hw_op
from .footprints import Footprints, number, window_span
from ..model.l2_native import NativeL2
from ..model.memory import GMRef, GMWindow, TileRef
from ..model.memory_system import MemoryStats
from ..ops.movement import _gm_view
from ..frontend.program import NOTHING

# codes shared with scheduler.cpp (keep in sync)
R_ISSUE, R_SYNC, R_BARRIER, R_SYNC_ALL, R_END = range(5)
PIPES = (PipeType.MTE1, PipeType.MTE2, PipeType.MTE3, PipeType.M, PipeType.FIX, PipeType.V,
         PipeType.S, PipeType.ALL)
PIPE_CODE = {p: i for i, p in enumerate(PIPES)}
KIND_CODE = {"op": 0, "set_flag": 1, "wait_flag": 2, "lock": 3, "unlock": 4, "xset": 5,
             "xwait": 6, "scalar": 7}
XMODE_CODE = {CrossCoreSyncMode.INTRA_BLOCK: 0, CrossCoreSyncMode.UNICAST_BLOCK: 1,
              CrossCoreSyncMode.INTER_SUBBLOCK: 2, CrossCoreSyncMode.INTER_BLOCK: 3}
CORE_TYPES = tuple(SyncCoreType)
_KERNEL_CODE = {"aiv": 0, "aic": 1, "mix": 2}
#: ops whose cost needs their values (they run while costed): the Python engine runs them
VALUE_COSTED = frozenset({"simt.launch", VF_SECTION})
_MAX_XCORE_ID = 1 << 20  # scheduler.cpp packs (id, setter) in one int64
# a record and a table row as bytes (int64s, range-checked): appending them to an int64 array
# costs a third of extending it by a tuple
_RECORD = struct.Struct("4q").pack
_ROW = struct.Struct("10q").pack
_FP_ROW = struct.Struct("6q").pack  # a footprint row (footprints.FP_W)
_SYNC_BY_INSTR_MAX = 4096  # shared sync instructions remembered per core kind (`Sites`)


class Ineligible(Exception):
    """The program needs the Python engine whatever its operands (remembered on it)."""


class _Placeholder:
    """The on-chip memory of a core whose slot the schedule decides (a block of a later wave):
    `replay` rebinds its tiles to the slot's memory."""

    __slots__ = ("kind",)

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def ref(self, g: Any, rows: int, cols: int) -> TileRef:
        """A TileRef here (`CoreMemory.ref`), until `replay.rebind` moves it to its slot."""
        return TileRef(self, g, rows, cols)


class _NoObserver:
    """What a recording core's `engine` shows the program: no sanitizer."""

    observer = None


class Sites:
    """What the call sites of a kernel's programs give every instruction they issue, worked
    out on a site's first issue and kept on the kernel's program across launches: per core
    kind, a tile op's `OpSite` → (meta row, pipe code), (kind, id(span), id(key), id(pipe)) →
    (key, instruction table row as bytes, meta row) of a sync call site and key (the key is
    kept: its id names it), and a sync call site's shared `Instr` (`_SyncInstrs`) → (table
    row, meta row); the numbers of keys, the trace's strings, and the meta rows (`meta`)."""

    LIMIT = 100_000  # sites before starting over (dynamic sync ids: a new key each issue)

    def __init__(self) -> None:
        self.op_sites: dict[str, dict[OpSite, tuple[int, int]]] = {"AIC": {}, "AIV": {}}
        self.sync_sites: dict[str, dict[tuple, tuple]] = {"AIC": {}, "AIV": {}}
        self.sync_by_instr: dict[str, dict[Instr, tuple]] = {"AIC": {}, "AIV": {}}
        self.strings: dict[str, int] = {"": 0}
        self.keys: dict[Any, int] = {}
        self.meta_rows: list[tuple[str, str, str, int, int, int]] = []

    def string(self, text: str) -> int:
        return number(self.strings, text)

    def key(self, key: Any) -> int:
        return number(self.keys, key)

    def meta(self, instr: Instr, ids: str, blocked: str) -> int:
        """A new row of what trace rows show of an instruction: (hw op, ir op, file, line,
        ids string, ids string while blocked)."""
        span = instr.span
        self.meta_rows.append((hw_op(instr.ir_op, instr.kind), instr.ir_op,
                               span.file if span else "", span.line if span else 0,
                               self.string(ids), self.string(blocked)))
        return len(self.meta_rows) - 1


def _sites(launch: Any) -> Sites:
    """The `Sites` of the launch's kernel (kept on its first program)."""
    if not launch.cache:
        return Sites()
    program = next(iter(launch.programs.values()))
    sites = getattr(program, "stream_sites", None)
    if sites is None or len(sites.meta_rows) > Sites.LIMIT:
        sites = program.stream_sites = Sites()
    return sites


class Recording:
    """The streams of one launch: records, the instruction table and what rows need."""

    def __init__(self, launch: Any) -> None:
        self.launch = launch
        soc = launch.soc
        self.soc, self.line = soc, int(soc.l2_line_bytes)
        self.sites = _sites(launch)
        # int64 arrays (ints are checked as they go in): the streams' records, 4 per record
        # (scheduler.cpp REC_W), and the instruction table, 10 per instruction (INSTR_W)
        self.records = array("q")
        self.stream_off = [0]
        self.stream_info: list[tuple[int, int, int]] = []
        self.instrs: list[Instr] = []
        self.table = array("q")
        self.inst_meta: list[int] = []  # per instruction its row of `sites.meta_rows`
        self.op_costs: list[tuple[Any, Any]] = []  # per op (bytes, flops)
        self.inst_stream_start: list[int] = []  # the first instruction of each stream
        self.lines: list[np.ndarray] = []
        self.n_lines = 0
        self.storages: dict[tuple[int, int], int] = {}
        self.storage_bytes: list[int] = []
        self.members = [0] * len(CORE_TYPES)
        self.cores: list[list[RecordingCore]] = []  # per block
        self.placeholders: dict[int, tuple[int, str]] = {}  # id → (block, memory key)
        self.table_rows: np.ndarray | None = None  # `table` as [instructions, 10]
        self.footprints = Footprints()  # what each instruction reads and writes
        self.costs: dict | None = {}  # `op_cost`'s by_operands while recording
        # per core kind, the tile-op sites bound to operands while recording (`RecordingCore`)
        self.bound: dict[str, dict] | None = {"AIC": {}, "AIV": {}}

    def storage(self, storage: tuple[int, int]) -> int:
        """The number of GM storage (address, bytes) in this recording (`MemorySystem`'s
        device addresses go by first use of each)."""
        found = self.storages.get(storage)
        if found is None:
            found = self.storages[storage] = len(self.storage_bytes)
            self.storage_bytes.append(storage[1])
        return found


class RecordingCore:
    """A core for the record phase: what the program and the issue calls use of `Core`,
    with an `issue` that only records (see the module doc)."""

    count_iteration = Core.count_iteration
    operand = Core.operand
    print = Core.print

    def __init__(self, rec: Recording, kind: str, memory: Any, block: int, subblock: int,
                 geometry: dict[str, int], core_id: int) -> None:
        self.rec, self.kind, self.memory = rec, kind, memory
        self.launch = rec.launch
        self.engine = _NoObserver
        self.block, self.subblock, self.core_id = block, subblock, core_id
        self.label = rec.launch.core_label(kind, block, subblock)
        self.block_idx = geometry["block_idx"]
        self.block_num = geometry["block_num"]
        self.subblock_idx = geometry["subblock_idx"]
        self.subblock_num = geometry["subblock_num"]
        self.pipes = AIC_PIPES if kind == "AIC" else AIV_PIPES
        self.op_sites, self.sync_sites = rec.sites.op_sites[kind], rec.sites.sync_sites[kind]
        self.sync_by_instr = rec.sites.sync_by_instr[kind]
        self.bound = rec.bound[kind]
        # what `issue` appends to, bound once
        fp = rec.footprints
        self._instrs, self._meta, self._op_costs = rec.instrs, rec.inst_meta.append, \
            rec.op_costs.append
        self._row, self._record = rec.table.frombytes, rec.records.frombytes
        self._fp_table, self._fp_rows, self._fp_index = fp.table, fp.table.frombytes, \
            fp.index.append
        self.peers: list[RecordingCore] = []
        self.printed: list[str] = []
        self.unit_flags: dict[int, str] = {}  # L0C address → unit-flag handshake state
        self.time = self._mark = 0
        self.spr = 0
        self.vector_mask = ALL_LANES  # the {MASK1, MASK0} SPR (pl.set_vec_mask)
        self.iterations = 0
        self.max_iterations = 50_000_000

    def _since(self) -> int:
        """Scalar cycles since the last record."""
        dt = self.time - self._mark
        self._mark = self.time
        return dt

    def issue(self, instr: Instr) -> tuple:
        """Record `instr` (see the module doc). What an op's table row, cost and footprint need
        of its call site and operands is worked out once per launch and operands (`_bind`;
        a load or store: per tile and GM view, `_windowed`); a sync instruction's row once per
        shared instruction (`_shared_sync_site`)."""
        t = self.time
        dt = t - self._mark
        self._mark = t
        instrs = self._instrs
        i = len(instrs)
        instrs.append(instr)
        site = instr.site
        if site is None:
            found = self.sync_by_instr.get(instr)
            if found is None:
                found = self._shared_sync_site(instr)
            self._row(found[0])
            self._meta(found[1])
            if found[2] is not None:  # the scalar unit's own work: its row's (bytes, flops)
                self._op_costs(found[2])
        elif site.window:
            self._windowed(i, instr, site)
        else:
            try:
                bound = self.bound.get((site, *instr.args))
            except TypeError:  # (an unhashable operand: bound for this issue only)
                bound = None
            if bound is None:
                bound = self._bind(i, instr, site)
            if bound is not None:
                self._row(bound[0])
                self._meta(bound[1])
                self._op_costs(bound[2])
                self._fp_index(i)
                self._fp_index(len(self._fp_table))
                self._fp_rows(bound[3])
        self._record(_RECORD(R_ISSUE, dt, i, 0))
        return NOTHING

    def _bind(self, i: int, instr: Instr, site: OpSite) -> tuple | None:
        """(table row, meta row, (bytes, flops), footprint rows) of a tile op other than a load
        or store on its operands, kept for the launch (operands are not changed once issued)
        when its kwargs are its site's; None for an op with a GM side (`_general` records it)."""
        if instr.ir_op in GM_OPS:
            self._general(i, instr)
            return None
        rec, args, kwargs = self.rec, instr.args, instr.kwargs
        meta, pipe = self._op_site(instr)
        cost = op_cost(instr.ir_op, args, kwargs, rec.soc, rec.costs)
        bound = (_ROW(0, pipe, 0, 0, 0, cost.cycles, -1, 0, 0, 0), meta,
                 (cost.bytes, cost.flops), rec.footprints.rows(instr.ir_op, args, kwargs))
        if site.static_kwargs:
            try:
                self.bound[(site, *args)] = bound
            except TypeError:
                pass
        return bound

    def _windowed(self, i: int, instr: Instr, site: OpSite) -> None:
        """A tile load or store: what its tile and GM view give every window bound once per
        launch (`_bind_window`), its window's lines and footprint kept on the window."""
        args = instr.args
        try:  # (the key leaves the offsets out)
            bound = self.bound.get((site, args[0], args[1]) if len(args) == 3 else
                                   (site, args[0], args[1], *args[3:]))
        except (TypeError, IndexError):  # (the op reports its bad operands)
            bound = None
        if bound is None:
            bound = self._bind_window(instr, site)
            if bound is None:
                return self._general(i, instr)
        gm, rows, cols, transpose, axes, pipe, cycles, write, storage, meta, costs, head, \
            space, fp_write, tail = bound
        try:
            window = gm.window(args[2], rows, cols, transpose, axes)
        except (IndexError, ValueError, TypeError):  # (as `op_cost` takes it)
            return self._general(i, instr)
        rec = self.rec
        found = window.costs.get(_RECORDED)
        if found is None or found[0] != rec.line:
            found = _recorded_window(window, rec.line)
        n = found[2]
        self._row(_ROW(0, pipe, 0, 0, 0, cycles, n, rec.n_lines, write, storage))
        if n:
            rec.lines.append(found[1])
            rec.n_lines += n
        self._meta(meta)
        self._op_costs(costs)
        self._fp_index(i)
        self._fp_index(len(self._fp_table))
        span = found[3]  # (adding an empty bytes gives the other one: one copy at most)
        self._fp_rows(head + tail if span is None else head + _FP_ROW(fp_write, space, *span) +
                      tail)
        return None

    def _bind_window(self, instr: Instr, site: OpSite) -> tuple | None:
        """What a load or store's tile and GM view give each of its windows: (the view, rows,
        cols, transpose, axes, pipe code, cycles, write, storage, meta row, (bytes, flops), the
        footprint rows before the window's, its space and write flag, the rows after it),
        kept for the launch when its kwargs are its site's; None when the operands are not a
        tile and a GM view (`_general` records it, as the op reports them)."""
        args, kwargs, op = instr.args, instr.kwargs, instr.ir_op
        if len(args) < 3:
            return None
        load = op == "block.load"
        tile, gm = (args[0], args[1]) if load else (args[1], args[0])
        if type(tile) is not TileRef or type(gm) is not GMRef:
            return None
        rec = self.rec
        meta, pipe = self._op_site(instr)
        onchip = window_onchip_cost(op, args, kwargs, rec.soc)
        view = _gm_view(kwargs)
        storage = rec.storage(gm.storage)
        head, space, fp_write, tail = rec.footprints.window_parts(op, args, kwargs)
        bound = (gm, tile.valid_rows, tile.valid_cols, view["transpose"], view["axes"], pipe,
                 onchip.cycles, int(not load), storage, meta, (onchip.bytes, onchip.flops),
                 head, space, fp_write, tail)
        if site.static_kwargs:
            try:
                self.bound[(site, args[0], args[1], *args[3:])] = bound
            except TypeError:
                pass
        return bound

    def _general(self, i: int, instr: Instr) -> None:
        """An op recorded from its cost and footprint on these operands alone."""
        rec = self.rec
        meta, pipe = self._op_site(instr)
        cost = op_cost(instr.ir_op, instr.args, instr.kwargs, rec.soc, rec.costs)
        gm = cost.gm
        if gm is None:
            self._row(_ROW(0, pipe, 0, 0, 0, cost.cycles, -1, 0, 0, 0))
        else:
            lines = gm.lines(rec.line)
            n = lines.size
            self._row(_ROW(0, pipe, 0, 0, 0, cost.cycles, n, rec.n_lines, int(gm.write),
                           rec.storage(gm.storage)))
            if n:
                rec.lines.append(lines)
                rec.n_lines += n
        self._meta(meta)
        self._op_costs((cost.bytes, cost.flops))
        rec.footprints.add(i, instr.ir_op, instr.args, instr.kwargs, gm)

    def _shared_sync_site(self, instr: Instr) -> tuple:
        """(table row, meta row, (bytes, flops) or None) of a sync or scalar instruction,
        remembered by the instruction (a call site shares one per id) unless too many are."""
        if instr.kind == "op":
            self._op_site(instr)  # (raises: every op the stream engine runs names a site)
        key = instr.key
        found = self.sync_sites.get((instr.kind, id(instr.span), id(key), id(instr.pipe)))
        if found is None or found[0] is not key:
            found = self._sync_site(instr)
        found = found[1:]
        if len(self.sync_by_instr) < _SYNC_BY_INSTR_MAX:
            self.sync_by_instr[instr] = found
        return found

    def _op_site(self, instr: Instr) -> tuple[int, int]:
        """(meta row, pipe code) of an op's call site (checked on its first issue)."""
        found = self.op_sites.get(instr.site)
        if found is not None:
            return found
        pipe = instr.pipe
        if pipe not in self.pipes:
            raise SimulationError(f"{self.label} has no {pipe.value} pipe", instr.span)
        if instr.ir_op in VALUE_COSTED or instr.site is None:
            raise Ineligible(instr.ir_op)
        found = self.op_sites[instr.site] = (self.rec.sites.meta(instr, "", ""),
                                             PIPE_CODE[pipe])
        return found

    def _sync_site(self, instr: Instr) -> tuple:
        """(key, table row, meta row, (bytes, flops) or None) of a sync instruction's call site
        and key (the key is kept: its id names it), or of a scalar instruction (its key: cycles
        and bytes; `Core.scalar_work`)."""
        rec, kind, key, pipe = self.rec, instr.kind, instr.key, instr.pipe
        if pipe is not PipeType.S and pipe not in self.pipes:
            raise SimulationError(f"{self.label} has no {pipe.value} pipe", instr.span)
        blocked = ""
        if kind == "scalar":
            cycles, nbytes = key
            found = self.sync_sites[(kind, id(instr.span), id(key), id(pipe))] = (
                key, _ROW(KIND_CODE[kind], PIPE_CODE[pipe], 0, 0, 0, cycles, -1, 0, 0, 0),
                rec.sites.meta(instr, "", ""), (nbytes, 0))
            return found
        if kind in ("set_flag", "wait_flag"):
            row = (PIPE_CODE[key[0]], PIPE_CODE[key[1]], rec.sites.key(("flag", key)))
            ids = blocked = _flag_ids(key)
        elif pipe is PipeType.S:
            if kind in ("xset", "xwait", "lock", "unlock"):  # the Python engine runs them
                raise Ineligible(f"{instr.ir_op} on pipe S")
            raise SimulationError(f"{instr.ir_op} on pipe S is not supported", instr.span)
        elif kind in ("lock", "unlock"):
            row = (rec.sites.key(("mutex", key)), 0, 0)
            ids = str(key)
        else:
            mode, ident = key
            if not 0 <= ident < _MAX_XCORE_ID:
                raise Ineligible(f"cross-core id {ident}")
            if mode is not CrossCoreSyncMode.INTER_BLOCK:  # (raises what the engine would)
                slots = self.launch.xset_slots if kind == "xset" else self.launch.xwait_slots
                slots(self, key, instr.span)
            row = (XMODE_CODE[mode], ident, 0)
            ids = str(key)
            if kind == "xwait":
                blocked = f"xcore {key[1]} ({key[0].name if hasattr(key[0], 'name') else key[0]})"
        found = self.sync_sites[(kind, id(instr.span), id(key), id(pipe))] = (
            key, _ROW(KIND_CODE[kind], PIPE_CODE[pipe], *row, 0, -1, 0, 0, 0),
            rec.sites.meta(instr, ids, blocked), None)
        return found

    def sync_scalar(self) -> tuple:
        self.rec.records.frombytes(_RECORD(R_SYNC, self._since(), 0, 0))
        return NOTHING

    def barrier(self, pipe_name: str, span: Span) -> tuple:
        code = -1 if pipe_name == "ALL" else PIPE_CODE[PipeType(pipe_name)]
        self.rec.records.frombytes(_RECORD(R_BARRIER, self._since(), code, 0))
        return NOTHING

    def sync_all(self, core_type: Any, span: Span, soft: bool = False) -> tuple:
        group = self.launch.sync_all_group(self, core_type, span)  # (its errors, its size)
        ct = next(k for k, g in self.launch.sync_groups.items() if g is group)
        code = CORE_TYPES.index(ct)
        self.rec.members[code] = group.members
        self.rec.records.frombytes(_RECORD(R_SYNC_ALL, self._since(), code, int(soft)))
        return NOTHING

    def resolve_scalar_target(self, value: Any, span: Span) -> Any:
        raise Ineligible("a scalar access of memory")

    def ssbuf(self) -> bytearray:
        raise Ineligible("an SSBUF copy")

    def dispose(self) -> None:
        """The launch is over (`Core.dispose`): drop the links that make cycles (the recording,
        peers, the launch); the block keeps the core for what it printed."""
        self.rec = self.launch = self.op_sites = self.sync_sites = self.sync_by_instr = None
        self.bound = self._instrs = self._meta = self._op_costs = self._row = self._record = \
            self._fp_table = self._fp_rows = self._fp_index = None
        self.peers = []


def record(rec: Recording) -> None:
    """Phase 1: every block's streams, blocks in order (a block's cores AIC first)."""
    launch = rec.launch
    n_slots = len(launch.slots)
    for slot in launch.slots:  # (as `Core` sets it: only the sanitizer reads the init mask)
        for memory in slot.memories.values():
            memory.track_init = False
    for b in range(launch.block_dim):
        if b < n_slots:  # the first wave: block b starts on slot b
            slot = launch.slots[b]
            memories, ids = slot.memories, slot.core_ids
        else:
            memories = {k: _Placeholder(m.kind) for k, m in launch.slots[0].memories.items()}
            ids = launch.slots[0].core_ids
            for k, m in memories.items():
                rec.placeholders[id(m)] = (b, k)

        def make(kind: str, memory: Any, block: int, subblock: int, geometry: dict[str, int],
                 core_id: int) -> RecordingCore:
            return RecordingCore(rec, kind, memory, block, subblock, geometry, core_id)

        cores = launch.block_cores(b, memories, ids, make)
        rec.cores.append(cores)
        for core in cores:
            target = "cube" if core.kind == "AIC" else "vector"
            program = launch.programs[target]
            rec.inst_stream_start.append(len(rec.instrs))
            try:
                for _ in program.run_body(program.frame(core, launch.params[target])):
                    raise Ineligible("the program waited")  # (a recording core never waits)
            except Ineligible:
                program.stream_ineligible = True
                raise
            rec.records.frombytes(_RECORD(R_END, core.time - core._mark, 0, 0))
            rec.stream_off.append(len(rec.records) // 4)
            rec.stream_info.append((0 if core.kind == "AIC" else 1, core.subblock,
                                    core.block_idx))
    rec.costs = rec.bound = None  # (the kept recording holds no more than its instructions)


#: the key of a GM window's entry in its `costs` (`_recorded_window`)
_RECORDED = object()


def _recorded_window(window: GMWindow, line: int) -> tuple:
    """(line size, the lines, their number, the footprint span) of a GM window, kept on it
    across launches (a relaunch with unchanged arguments keeps the GM view and its windows)."""
    lines = window.lines(line)
    found = window.costs[_RECORDED] = (line, lines, lines.size, window_span(window.lines))
    return found


def _library(launch: Any) -> Any:
    """The scheduler when this launch may take the stream engine, else None."""
    eng = launch.engine
    if getattr(eng, "observer", True) is not None or eng.functional_only or \
            not launch.soc.l2_bytes or settings.helper(settings.L2) == "python":
        return None
    if any(getattr(p, "stream_ineligible", False) for p in launch.programs.values()):
        return None
    return scheduler_native.library()


def run(launch: Any) -> list | None:
    """Run `launch` on the stream engine; its blocks, or None when the Python engine must run
    it (then nothing has changed: no GM write, no trace row, an empty L2). A relaunch replays
    the kernel's kept recording and schedule (`memo`)."""
    lib = _library(launch)
    if lib is None or launch.block_dim < 1:
        return None
    entry = memo.lookup(launch) if launch.cache else None
    launch.path.append("stream engine")
    if entry is None:
        rec = Recording(launch)
        try:
            entry = _recorded(launch, lib, rec)
        finally:
            launch.sync_groups.clear()  # (recording made them; the Python engine starts afresh)
            for cores in rec.cores:
                for core in cores:
                    core.dispose()
        if entry is None:
            launch.path.clear()
            return None
        launch.path.append("recorded")
    else:
        launch.path.append("kept recording")
    return _replayed(launch, entry)


def _recorded(launch: Any, lib: Any, rec: Recording) -> memo.Entry | None:
    """Record and schedule `launch` and check its schedule for races; the kept entry, or None
    when the Python engine must run it."""
    try:
        record(rec)
    except Exception:  # noqa: BLE001 - the Python engine raises it again, with its context
        return None
    eng, soc = launch.engine, launch.soc
    memory = eng.memory
    if not isinstance(memory.l2, NativeL2) or memory.l2.lib is not lib:
        memory.l2 = NativeL2(lib, memory.sets, memory.ways)
    soft = 2 * soc.mte_startup["gm_to_ub"] + soc.scalar_access_cycles
    cfg = np.array([_KERNEL_CODE[launch.kernel_type], launch.block_dim, len(launch.slots),
                    soc.pipe_queue_depth, soft, len(rec.cores[0]), memory.line,
                    memory.miss_extra, *rec.members], dtype=np.int64)
    rec.table_rows = np.frombuffer(rec.table, dtype=np.int64).reshape(-1, 10)
    lines = np.concatenate(rec.lines).astype(np.int64, copy=False) if rec.lines else \
        np.zeros(1, dtype=np.int64)
    sched = scheduler_native.schedule(
        lib, cfg, memory.hbm_rate, memory.l2._handle, np.array(rec.stream_off, dtype=np.int64),
        np.array(rec.stream_info, dtype=np.int64), np.frombuffer(rec.records, dtype=np.int64),
        rec.table_rows, lines, np.array(rec.storage_bytes or [0], dtype=np.int64))
    if sched.error:  # the Python engine runs it again for the exact error
        memory.reset()
        return None
    fp = rec.footprints
    race = scheduler_native.first_race(lib, sched.events, np.frombuffer(fp.table, np.int64),
                                       np.frombuffer(fp.index, np.int64), len(rec.instrs))
    replay.rebind(rec, sched)
    rec.launch = rec.lines = rec.footprints = None  # (what the entry must not keep alive)
    return memo.store(launch, rec, sched, safe=race is None, keep=launch.cache)


def _replayed(launch: Any, entry: memo.Entry) -> list:
    """The values (unless timing only), counters, trace rows and blocks of a scheduled launch."""
    eng, rec, sched = launch.engine, entry.rec, entry.sched
    launch.path.append("no values" if eng.timing_only else
                       replay.run_values(rec, sched, eager=entry.safe, cache=launch.cache))
    eng.instructions = sched.instructions
    eng.memory.stats = MemoryStats(*sched.l2_stats)
    if eng.log is not None:  # (made when the trace is first read, kept for relaunches)
        if entry.rows is None:
            entry.rows = replay.TraceRows(rec, sched)
        eng.log.later(entry.rows.get)
    return replay.blocks(rec, sched)
