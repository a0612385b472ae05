"""One simulated launch: geometry, block waves, operand memories and cross-core wiring (spec §9).

AIV-only kernels run `block_dim` AIV instances, AIC-only `block_dim` AIC instances, mix kernels
`block_dim` blocks of 1 AIC + 2 AIV. Blocks beyond the physical cores run in waves: a block
starts on a slot when the previous block on it has finished. On-chip memory belongs to the
physical slot (a new block sees what the last one left).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable


from ..errors import SimulationError
from ..ir.attrs import AccToVecMode, CrossCoreSyncMode, SyncCoreType
from ..ir.span import Span
from ..ir.types import CUBE_SPACES, MemorySpace
from ..trace.schema import EventLog
from .reference.engine import Block, Core, Engine
from .reference.functional import FunctionalCore, FunctionalEngine, Ran
from .fast import memo, stream
from .model.memory import CoreMemory, TileRef
from .frontend.program import CompiledProgram, RtTile
from .pools import Pools
from .frontend.ssbuf import SSBUF_BYTES

_INTRA, _UNICAST = CrossCoreSyncMode.INTRA_BLOCK, CrossCoreSyncMode.UNICAST_BLOCK
#: kernel type → the cores of one slot
_SLOT_CORES = {"aiv": ("aiv",), "aic": ("aic",), "mix": ("aic", "aiv0", "aiv1")}


@dataclass
class _Slot:
    """A physical placement: one AIV, one AIC, or (mix) one AI core with its two AIVs."""

    memories: dict[str, CoreMemory]
    free_at: int = 0
    core_ids: dict[str, int] = field(default_factory=dict)  # kind → physical core id


class _SyncAllGroup:
    def __init__(self, members: int) -> None:
        self.members = members
        self.arrived: dict[int, int] = {}  # core id → arrivals
        self.cores: dict[int, Core] = {}
        self.rounds = 0

    def arrive(self, core: Core) -> None:
        self.arrived[core.uid] = self.arrived.get(core.uid, 0) + 1
        self.cores[core.uid] = core
        if len(self.arrived) == self.members and min(self.arrived.values()) > self.rounds:
            self.rounds += 1
            for waiting in self.cores.values():  # wake the cores that arrived earlier
                if waiting is not core:
                    waiting.poke()

    def released(self, core: Core) -> bool:
        return self.rounds >= self.arrived.get(core.uid, 0)


class Launch:
    def __init__(self, programs: dict[str, CompiledProgram], kernel_type: str, block_dim: int,
                 params: dict[str, list[Any]], soc: Any, log: EventLog | None,
                 functional_only: bool = False, timing_only: bool = False,
                 observer: Any = None, pools: Pools | None = None) -> None:
        self.programs, self.kernel_type, self.block_dim = programs, kernel_type, block_dim
        self.params = params  # target → parameter values in the program's param order
        self.soc = soc
        # the idle memories to take over, None when the caches are off (`settings`): then
        # nothing is kept for a relaunch either
        self.pools = pools
        self.cache = pools is not None
        #: which path ran it, in words (the dispatcher's record: `Trace.meta`'s "path")
        self.path: list[str] = []
        if functional_only and observer is None:  # values only: program order, no clock
            self.engine: Engine = FunctionalEngine(soc)
        else:
            self.engine = Engine(soc, log, functional_only, timing_only)
            self.engine.observer = observer  # the sanitizer watches the timed engine
        self.engine.pools = pools
        n_slots = soc.aiv_cores if kernel_type == "aiv" else soc.aic_cores
        self.slots = [self._new_slot(i) for i in range(min(n_slots, block_dim))]
        self.pending = list(range(block_dim))
        self.blocks: list[Block] = []
        self.sync_groups: dict[Any, _SyncAllGroup] = {}
        self.xglobal: dict[tuple, int] = {}
        self.ssbufs: dict[int, bytearray] = {}  # block → its SSBUF (`sim/ssbuf.py`)

    def ssbuf(self, block: int) -> bytearray:
        """The SSBUF the cores of `block` share."""
        buf = self.ssbufs.get(block)
        if buf is None:
            buf = self.ssbufs[block] = bytearray(SSBUF_BYTES)
        return buf

    def _new_slot(self, index: int) -> _Slot:
        """Slot `index` (a physical core, or AI core of a mix kernel). Its cores keep their ids
        (the Trace's `core` column) across waves: mix slot i is cores 3i (AIC), 3i+1, 3i+2."""
        kinds = _SLOT_CORES[self.kernel_type]
        memory = CoreMemory if self.pools is None else self.pools.core_memory
        return _Slot({k: memory(self.soc, "aic" if k == "aic" else "aiv") for k in kinds},
                     core_ids={k: index * len(kinds) + n for n, k in enumerate(kinds)})

    # ------------------------------------------------------------ running
    def run(self) -> list[Block]:
        """Run the launch on the first path that takes it, noting which in `path`:
        functional-only, the kept ops of its last launch (`memo.replay_functional`), else the
        functional executor; timed, the stream engine (`stream.run`: recorded or its kept
        recording replayed), else the reference engine (`PYPTOPRO_SIM_ENGINE=python`, the
        sanitizer, what the stream engine cannot record)."""
        eng = self.engine
        functional = isinstance(eng, FunctionalEngine)
        if functional:  # a relaunch replays the ops the last launch ran, when it can
            blocks = memo.replay_functional(self) if self.cache else None  # (no sanitizer)
            eng.ran = Ran() if blocks is None and self.cache else None
        else:  # timed: the compiled stream engine when it can
            blocks = stream.run(self)
        if blocks is not None:
            self.blocks = blocks
            return blocks
        self.path = ["functional executor" if functional else "reference engine"]
        if eng.observer is not None:
            self.path.append("sanitizer")
        for slot in self.slots:
            self._start_next(slot, 0)
        eng.run()
        if self.pending or any(not c.done for c in eng.cores):
            raise eng.deadlock()
        if functional:
            memo.keep_functional(self)
        return self.blocks

    def _start_next(self, slot: _Slot, t: int) -> None:
        if not self.pending:
            return
        b = self.pending.pop(0)
        block = Block(b, self.block_cores(b, slot.memories, slot.core_ids, self._core))
        self.blocks.append(block)
        remaining = {id(c) for c in block.cores}

        def done(core: Core) -> None:
            remaining.discard(id(core))
            if not remaining:
                end = max(c.end_time for c in block.cores)
                self.engine.at(end, lambda: self._start_next(slot, end))

        for core in block.cores:
            core.on_done = done
            target = "cube" if core.kind == "AIC" else "vector"
            program = self.programs[target]
            frame = program.frame(core, self.params[target])
            core.start(program.run_body(frame), t)

    def block_cores(self, b: int, memories: dict[str, Any], ids: dict[str, int],
                    make: Callable[..., Any]) -> list[Any]:
        """The cores of block `b` (AIC first, then the AIVs), made by `make(kind, memory,
        block, subblock, geometry, core_id)` from the slot's memories and core ids, with their
        peers wired (`stream` records with this too)."""
        bd = self.block_dim
        if self.kernel_type == "mix":
            aic = make("AIC", memories["aic"], b, 0, _geometry(b, bd, 0, 1), ids["aic"])
            aivs = [make("AIV", memories[f"aiv{s}"], b, s, _geometry(2 * b + s, bd, s, 2),
                         ids[f"aiv{s}"]) for s in (0, 1)]
            aic.peers, aivs[0].peers, aivs[1].peers = aivs, [aic], [aic]
            return [aic, *aivs]
        kind = "AIV" if self.kernel_type == "aiv" else "AIC"
        key = "aiv" if kind == "AIV" else "aic"
        return [make(kind, memories[key], b, 0, _geometry(b, bd, 0, 1), ids[key])]

    def core_label(self, kind: str, block: int, subblock: int) -> str:
        return f"block {block} {kind}" + (str(subblock) if self.kernel_type == "mix" and
                                          kind == "AIV" else "")

    def _core(self, kind: str, memory: CoreMemory, block: int, subblock: int,
              geometry: dict[str, int], core_id: int) -> Core:
        label = self.core_label(kind, block, subblock)
        cls = FunctionalCore if isinstance(self.engine, FunctionalEngine) else Core
        core = cls(self.engine, kind, memory, block, subblock, geometry, label, core_id)
        core.uid = len(self.engine.cores)  # this instance (core_id is the physical core)
        core.launch = self
        self.engine.cores.append(core)
        return core

    def release(self) -> None:
        """The launch is over: hand its memories (L2 and HBM, the slots' on-chip buffers) to
        the next launch on this SoC, and break the cycles through its cores (`Core.dispose`).
        The blocks keep their cores for what they printed. The pool is a stack and a launch
        takes its memories in slot order, so they go back in reverse: a relaunch gets each
        slot's memory back (`memo` relies on it)."""
        self.engine.release_memory()
        for core in self.engine.cores:
            core.dispose()
        self.engine.cores = []
        if self.pools is None:
            return
        for slot in reversed(self.slots):
            for memory in reversed(slot.memories.values()):
                self.pools.give_back(memory)

    # ------------------------------------------------------------ operands
    def tile_ref(self, core: Core, tile: RtTile, span: Span, pair: bool, mode: Any) -> Any:
        """The TileRef(s) of a tile operand, in the memory of the core owning its space. The
        tile keeps the last one it made (`RtTile.last_ref`): a TileRef is never changed once
        made (a replay rebinding or a deferred write copies it), so issues of a tile whose
        memory and valid shape are unchanged share one."""
        space = tile.geom.space
        valid = tile.valid
        rows, cols = valid
        if core.kind == "AIC" and space is MemorySpace.Vec:
            if not core.peers:
                raise SimulationError("a Vec tile used by the cube needs a mix kernel (the "
                                      "AIVs' UB)", span)
            if pair:
                return self._pair_refs(tile, [p.memory for p in
                                              self._acc_to_vec_targets(core, mode)])
            memory = core.peers[0].memory
        elif core.kind == "AIV" and space in CUBE_SPACES:
            if not core.peers:
                raise SimulationError(f"a {space.value} tile used by a vector core needs a mix "
                                      f"kernel (the AIC's buffers)", span)
            memory = core.peers[0].memory
        else:
            memory = core.memory
        memo = tile.last_ref
        if memo is not None and memo[0] is memory and memo[1] is valid:
            return memo[2]
        ref = memory.ref(tile.geom, rows, cols)
        tile.last_ref = (memory, valid, ref)
        return ref

    @staticmethod
    def _pair_refs(tile: RtTile, memories: list[Any]) -> tuple[TileRef, ...]:
        """The TileRefs of a split move's targets, kept on the tile like `last_ref`."""
        valid = tile.valid
        memo = tile.last_pair
        if memo is not None and memo[1] is valid and len(memo[0]) == len(memories) and \
                all(a is b for a, b in zip(memo[0], memories)):
            return memo[2]
        refs = tuple(m.ref(tile.geom, *valid) for m in memories)
        tile.last_pair = (memories, valid, refs)
        return refs

    @staticmethod
    def _acc_to_vec_targets(core: Core, mode: Any) -> list[Core]:
        m = AccToVecMode(int(mode)) if mode is not None else AccToVecMode.SingleModeVec0
        if m is AccToVecMode.SingleModeVec0:
            return [core.peers[0]]
        if m is AccToVecMode.SingleModeVec1:
            return [core.peers[1]]
        return list(core.peers)

    # ------------------------------------------------------------ cross-core sync
    def xset_slots(self, core: Core, key: tuple, span: Span) -> list[tuple[Core, int]]:
        mode, ident = key
        if mode in (_INTRA, _UNICAST):
            self._need_peers(core, span)
            if core.kind == "AIC":
                if mode is _INTRA:
                    return [(core.peers[0], ident), (core.peers[1], ident)]
                return [(core.peers[ident // 16], ident % 16)]
            return [(core.peers[0], ident + 16 * core.subblock)]
        me, _, members = self._inter_scope(core, mode, span)
        return [(m, (ident, me)) for m in members]

    def xwait_slots(self, core: Core, key: tuple, span: Span) -> list[tuple[Core, int]]:
        mode, ident = key
        if mode in (_INTRA, _UNICAST):
            self._need_peers(core, span)
            if core.kind == "AIC" and mode is _INTRA:
                return [(core, ident), (core, ident + 16)]
            return [(core, ident)]
        _, count, _ = self._inter_scope(core, mode, span)
        return [(core, (ident, setter)) for setter in range(count)]

    def _need_peers(self, core: Core, span: Span) -> None:
        if not core.peers:
            raise SimulationError("intra-block cross-core sync needs a mix kernel (both a "
                                  "section_cube and a section_vector)", span)

    def _inter_scope(self, core: Core, mode: Any, span: Span) -> tuple[int, int, list[Core]]:
        """INTER_* modes are barriers (spec §2.3, FFTS mode 0/1): a wait releases once every
        core of the scope has set. Each core keeps one counter per (id, setter): a set adds one
        to its own counter on every running member, a wait needs one from every setter and
        takes them. Returns (this core's index in the scope, scope size, running members).

        INTER_BLOCK: all cores of this kind in the launch; INTER_SUBBLOCK: the two AIVs of
        this AI core."""
        if mode is CrossCoreSyncMode.INTER_SUBBLOCK:
            if core.kind != "AIV" or not core.peers:
                raise SimulationError("INTER_SUBBLOCK cross-core sync is between the two AIVs of "
                                      "a mix kernel's AI core", span)
            aivs = core.peers[0].peers
            return core.subblock, 2, list(aivs)
        members = [c for c in self.engine.cores if c.kind == core.kind and not c.done]
        per_block = 2 if self.kernel_type == "mix" and core.kind == "AIV" else 1
        return core.block_idx, self.block_dim * per_block, members

    def sync_all_group(self, core: Core, core_type: Any, span: Span) -> _SyncAllGroup:
        ct = SyncCoreType(int(core_type)) if core_type is not None else SyncCoreType.MIX
        if ct is SyncCoreType.MIX and self.kernel_type != "mix":
            only = "AIV_ONLY" if self.kernel_type == "aiv" else "AIC_ONLY"
            raise SimulationError(f"sync_all(MIX) in an {self.kernel_type.upper()}-only kernel "
                                  f"waits for cores of the other kind, which this launch does "
                                  f"not have: on hardware it hangs", span,
                                  hint=f"use pl.system.sync_all(core_type=pl.SyncCoreType.{only})")
        if ct is SyncCoreType.MIX:
            members = self.block_dim * 3
        elif ct is SyncCoreType.AIV_ONLY:
            members = self.block_dim * (2 if self.kernel_type == "mix" else 1)
        else:
            members = self.block_dim
        if (core.kind == "AIC" and ct is SyncCoreType.AIV_ONLY) or (
                core.kind == "AIV" and ct is SyncCoreType.AIC_ONLY):
            raise SimulationError(f"sync_all({ct.name}) executed by an {core.kind}", span)
        return self.sync_groups.setdefault(ct, _SyncAllGroup(members))


def _geometry(block_idx: int, block_num: int, subblock_idx: int, subblock_num: int
              ) -> dict[str, int]:
    """What `get_block_idx()` & co. return on one core."""
    return {"block_idx": block_idx, "block_num": block_num, "subblock_idx": subblock_idx,
            "subblock_num": subblock_num}


__all__ = ["Launch"]
