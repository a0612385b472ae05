"""The memo: what a launch ran, kept for its next relaunch: a timed launch's recording and
schedule (the stream engine's), a functional-only launch's ops in the order it ran them.

Neither phase before the values depends on the data (`stream`): a program whose control flow
or costs read memory is not eligible, and the memory system gives each storage its device
address in the order the launch first touches it (`MemorySystem.reset`), so where the host put
a tensor does not matter either. The recorded streams, their schedule, the race verdict and the
trace rows are a pure function of the kernel's programs, the SoC, the block count and the
parameters: tensors by their geometry (`_value_key`: shape, strides, dtypes, offset in the
storage, storage size, and which parameters share a storage, a storage being its (address,
bytes): two can start at one address), everything else by value (floats by their bits, struct
arrays by their elements). Parameters whose GM storages share bytes without being one storage
(overlapping numpy slices, `untyped_storage()[0:n]` of a larger tensor) are not kept: an
address there would belong to two storages when the recording and its tape move. A
relaunch with equal ones replays the kept schedule (values, trace rows, L2 counters) and skips
recording and scheduling, which are most of a timed launch.

A relaunch with other tensors of the same geometry (a notebook cell that allocates its inputs
and outputs afresh) first rebinds the recording (`_rebind`): every GM view an instruction holds
is a view of one of the old launch's storages, and becomes the same view of the new tensor
sharing that storage's place in the key. An operand it cannot rebind records afresh. A tape the
recording has keeps its steps when they touch GM only through compiled copies, their addresses
and views moved to the new storages (`tape.moved`); otherwise it is made again.

One entry per kernel (on its first program). It holds the parameters it is bound to, so the
storages it names stay alive and unique, and no more: a rebinding hit swaps in the new ones and
no view of the old tensors is left. The recorded instructions hold tiles of the slot memories
they ran on, so a hit also needs the same memory objects in the same slots; the memory pool
hands them back in slot order to a relaunch that follows its previous launch
(`Launch.release`). Anything else records afresh and replaces the entry.

Functional-only launches. The functional executor's values (`reference.functional`) are a
function of the ops it runs, their operands and their order. None of those depends on the data
when the programs' control flow does not: no scalar access of memory (`resolve_scalar_target`),
nothing printed (a dump prints values), no compiled bodies (SIMT launches and VF sections run
programs of their own). A launch that did none of those keeps its ops in the order they ran
(`reference.functional.Ran`, an entry of kind `FUNCTIONAL`, keyed and rebound as above), and a
relaunch runs them again in that order (`replay_functional`) with no program, no sync and no
lockstep rounds. A batch ran as one torch computation that is bit-identical to its ops one by
one (`ops.batching`), so the replay runs them one by one, and from the third launch of the same
operands on as the prebuilt steps of a `tape`.
"""
from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from ...errors import SimulationError
from ..reference.engine import Block
from ..reference.functional import Ran
from . import tape
from ..model.memory import GMRef, TileRef

if TYPE_CHECKING:
    from .replay import TraceRows

_generation = 0  # `clear` bumps it: entries of earlier generations never hit
#: the kinds of entry a kernel keeps (attributes of its first program): the stream engine's
#: recording and schedule, the functional executor's ops in the order it ran them (`Ran`);
#: both rebind the same way (`Entry.rec.instrs`, `Entry.rec.tape`)
TIMED, FUNCTIONAL = "stream_memo", "functional_memo"
#: functional launches replayed from kept ops (tests look at it)
REPLAYS = 0

#: a GM storage: (address, bytes). Two storage objects may start at one address with other
#: sizes (`untyped_storage()[0:n]`, `torch.frombuffer`), so the address alone names none
Storage = tuple[int, int]
#: a tensor leaf of the parameters (a GM view, or a pointer's tensor) and the storage it was
#: bound to (`set_` swaps a tensor's storage under the same object)
_Leaf = tuple[Any, Storage]
_SCALAR_BASES = (int, float, bool, str, type(None))
_SCALARS = frozenset(_SCALAR_BASES)
#: a float's bits: the key of a float (0.0 == -0.0, yet `x / -0.0` and printf differ)
_BITS = struct.Struct("<d").pack
#: operand types that never hold GM (the common ones, checked first)
_PLAIN = _SCALARS | {TileRef}


class Unkeyable(Exception):
    """The parameters hold a value the memo cannot key by what it holds, or GM storages that
    overlap without being one (`aliased`): the launch is not kept, and no kept entry is
    replayed for it."""

    def __init__(self, what: str, aliased: bool = False) -> None:
        super().__init__(what)
        self.aliased = aliased


class Entry:
    """What a relaunch reuses: the recording, the schedule, the trace rows once made."""

    __slots__ = ("key", "generation", "memories", "params", "leaves", "rec", "sched", "rows",
                 "safe", "gm_sites")

    def __init__(self, key: tuple, leaves: list[_Leaf], launch: Any, rec: Any, sched: Any,
                 safe: bool) -> None:
        self.key, self.generation = key, _generation
        self.memories = _memories(launch)
        self.params, self.leaves = launch.params, leaves
        self.rec, self.sched, self.safe = rec, sched, safe
        self.rows: TraceRows | None = None  # (once a launch logged them)
        # (instruction, argument position or kwarg name) of every operand holding GM: found
        # on the first rebinding, the same for every later one (it swaps views for views)
        self.gm_sites: list[tuple[int, int | str]] | None = None


def _described(launch: Any) -> tuple[tuple, list[_Leaf]]:
    """(what a launch's recording and schedule depend on besides its programs: the key, the
    tensor leaves of its parameters in order)."""
    storages: dict[Storage, int] = {}
    leaves: list[_Leaf] = []
    params = tuple(tuple(_value_key(v, storages, leaves) for v in values)
                   for values in launch.params.values())
    if overlapping(storages):
        raise Unkeyable("GM storages that overlap without being one", aliased=True)
    return (launch.kernel_type, launch.block_dim, len(launch.slots), id(launch.soc),
            *params), leaves


def overlapping(storages: Any) -> bool:
    """Whether two of `storages` (distinct (address, bytes) pairs) share a byte: then an
    address may belong to either, and neither a kept recording nor its tape can say which
    new storage it moves to (nor can footprints, which number each storage apart)."""
    if len(storages) < 2:
        return False
    ordered = sorted(storages)
    return any(start + size > after for (start, size), (after, _) in zip(ordered, ordered[1:])
               if size)


def _value_key(value: Any, storages: dict[Storage, int], leaves: list[_Leaf]) -> Any:
    """A parameter's part of the key; its tensors go on `leaves`. A tensor's storage is named
    by the order in which the parameters first name it (`storages`: storage → that number), so
    two launches that share storages between the same parameters have equal keys."""
    kind = type(value)
    if kind is float:
        return kind, _BITS(value)
    if kind in _SCALARS:
        return kind, value  # (1, 1.0 and True are equal keys otherwise)
    if kind is GMRef:
        storage = value.storage
        leaves.append((value, storage))
        return (GMRef, value.shape, value.strides, value.dtype, value.base_offset,
                value.tensor.dtype, storage[1], storages.setdefault(storage, len(storages)))
    if isinstance(value, torch.Tensor):  # a pointer's
        untyped = value.untyped_storage()
        storage = (untyped.data_ptr(), untyped.nbytes())
        leaves.append((value, storage))
        return (torch.Tensor, tuple(value.shape), value.stride(), value.dtype,
                value.storage_offset(), storage[1], storages.setdefault(storage, len(storages)))
    if isinstance(value, tuple):  # a pointer (tensor, offset)
        return tuple(_value_key(v, storages, leaves) for v in value)
    if isinstance(value, dict):  # a struct's fields, by their values
        return tuple((k, _field_key(v)) for k, v in value.items())
    if isinstance(value, float):  # (a subclass: numpy's float64)
        return kind, _BITS(value)
    if isinstance(value, _SCALAR_BASES):  # (a subclass: an int enum member, ...)
        return kind, value
    raise Unkeyable(kind.__name__)


def _field_key(value: Any) -> Any:
    """A struct field's part of the key: its value, an array by its elements (a list or array
    changed in place is another key; an object's id would not be)."""
    kind = type(value)
    if kind is float:
        return kind, _BITS(value)
    if kind in _SCALARS:
        return kind, value
    if kind is list or kind is tuple:
        return kind, tuple([_field_key(v) for v in value])
    if isinstance(value, (np.ndarray, np.generic)):
        return kind, value.dtype.str, value.shape, value.tobytes()
    if isinstance(value, torch.Tensor):
        data = value.detach().cpu().contiguous().reshape(-1).view(torch.uint8)
        return kind, value.dtype, tuple(value.shape), data.numpy().tobytes()
    if isinstance(value, float):
        return kind, _BITS(value)
    if isinstance(value, _SCALAR_BASES):
        return kind, value
    raise Unkeyable(kind.__name__)


def _memories(launch: Any) -> tuple:
    return tuple(m for slot in launch.slots for m in slot.memories.values())


def _holder(launch: Any) -> Any:
    return next(iter(launch.programs.values()))


def lookup(launch: Any, kind: str = TIMED) -> Entry | None:
    """The entry of `kind` (`TIMED`, `FUNCTIONAL`) `launch` may replay, bound to its tensors,
    or None (then the kernel's entry is dropped: it keeps no tensor of an earlier launch
    alive)."""
    holder = _holder(launch)
    entry = getattr(holder, kind, None)
    if entry is None:
        return None
    now = _memories(launch)
    if entry.generation == _generation and len(now) == len(entry.memories) and \
            all(a is b for a, b in zip(now, entry.memories)):
        if _unchanged(entry, launch):
            return entry
        try:
            found, leaves = _described(launch)
        except Unkeyable:
            found = None
        if entry.key == found and (_same(entry.leaves, leaves) or
                                   _rebind(entry, launch.params, leaves)):
            return entry
    setattr(holder, kind, None)
    return None


def _unchanged(entry: Entry, launch: Any) -> bool:
    """The entry's own GM views and equal scalars (a relaunch with the same tensors, the
    backend's GM views kept): the key is the entry's without making it."""
    old, new = entry.params, launch.params
    return entry.key[:4] == (launch.kernel_type, launch.block_dim, len(launch.slots),
                             id(launch.soc)) and old.keys() == new.keys() and all(
        len(a) == len(b) and all(x is y if type(x) is GMRef else type(x) in _SCALARS and
                                 type(x) is type(y) and x == y and
                                 (type(x) is not float or _BITS(x) == _BITS(y))
                                 for x, y in zip(a, b))
        for a, b in zip(old.values(), new.values()))


def _same(old: list[_Leaf], new: list[_Leaf]) -> bool:
    return all(a is b and pa == pb for (a, pa), (b, pb) in zip(old, new))


def _rebind(entry: Entry, params: dict, leaves: list[_Leaf]) -> bool:
    """Point `entry`'s recording at the tensors of `leaves` (the same geometry as its own);
    False, with nothing changed, when an operand holds GM the parameters do not explain."""
    views: dict[int, GMRef] = {}  # id(an old parameter view) → the new one
    tensors: dict[int, torch.Tensor] = {}  # id(an old parameter tensor) → the new one
    storages: dict[Storage, torch.Tensor] = {}  # old storage → a new tensor on its successor
    for (old, storage), (new, _) in zip(entry.leaves, leaves):
        if type(old) is GMRef:
            views[id(old)] = new
            old, new = old.tensor, new.tensor
        tensors[id(old)] = new
        storages.setdefault(storage, new)
    made: dict[int, Any] = {}  # id(an old operand) → its rebound value (shared, as it was)

    def rebound(value: Any) -> Any:
        found = made.get(id(value))
        if found is not None:
            return found
        kind = type(value)
        if kind is GMRef:
            found = views.get(id(value))
            if found is None:  # a view the kernel made (`make_tensor`, `set_stride`)
                tensor = storages.get(value.storage)
                if tensor is None:
                    raise LookupError
                found = GMRef(tensors.get(id(value.tensor), tensor), value.shape, value.strides,
                              value.dtype, value.base_offset)
        elif kind is tuple:
            found = tuple([rebound(v) for v in value])
        elif isinstance(value, torch.Tensor):
            found = tensors.get(id(value))
            if found is None:
                raise LookupError  # (a tensor in a recorded operand: none is known to occur)
        elif _holds_gm(value):
            raise LookupError  # (an operand kind holding GM that rebinding does not know)
        else:
            return value
        made[id(value)] = found
        return found

    instrs = entry.rec.instrs
    if entry.gm_sites is None:
        entry.gm_sites = _gm_sites(instrs)
    try:
        values = [rebound(instrs[i].args[at] if type(at) is int else instrs[i].kwargs[at])
                  for i, at in entry.gm_sites]
    except LookupError:
        return False
    for (i, at), value in zip(entry.gm_sites, values):
        instr = instrs[i]
        if type(at) is int:
            if type(instr.args) is not list:
                instr.args = list(instr.args)
            instr.args[at] = value
        else:  # (static kwargs are shared between instructions: never written in place)
            instr.kwargs = {**instr.kwargs, at: value}
    entry.params, entry.leaves = params, leaves
    entry.rec.tape = tape.moved(getattr(entry.rec, "tape", None), storages)
    return True


def _gm_sites(instrs: list) -> list[tuple[int, int | str]]:
    """Where the recorded ops hold GM: views, tensors, tuples holding one."""
    sites: list[tuple[int, int | str]] = []
    for i, instr in enumerate(instrs):
        if instr.kind != "op":
            continue
        sites += [(i, k) for k, a in enumerate(instr.args) if _holds_gm(a)]
        sites += [(i, k) for k, a in instr.kwargs.items() if _holds_gm(a)]
    return sites


def _holds_gm(value: Any) -> bool:
    if type(value) in _PLAIN:
        return False
    if isinstance(value, (GMRef, torch.Tensor)):
        return True
    if isinstance(value, dict):
        value = value.values()
    elif not isinstance(value, (tuple, list)):
        return False
    return any([_holds_gm(v) for v in value])


def store(launch: Any, rec: Any, sched: Any, safe: bool, kind: str = TIMED,
          keep: bool = True) -> Entry:
    """Keep this launch's recording and schedule for its relaunch (replacing the kernel's last
    entry of `kind`) if `keep`; the entry, not kept when the parameters cannot be keyed
    (`Unkeyable`)."""
    try:
        key, leaves = _described(launch)
    except Unkeyable as why:  # (storages sharing bytes: footprints number them apart, so
        return Entry(None, [], launch, rec, sched, safe and not why.aliased)  # no eager replay)
    entry = Entry(key, leaves, launch, rec, sched, safe)
    if keep:
        setattr(_holder(launch), kind, entry)
    return entry


def clear() -> None:
    """Forget every kept recording (the next launch of every kernel records afresh)."""
    global _generation
    _generation += 1


# ---------------------------------------------------------------- functional-only launches


def replay_functional(launch: Any) -> list | None:
    """Run `launch` from its kernel's kept ops: its blocks, or None when there are none for it
    (the functional executor runs it, noting its ops: `launch.engine.ran`)."""
    entry = lookup(launch, FUNCTIONAL)
    if entry is None:
        return None
    global REPLAYS
    REPLAYS += 1
    ran = entry.rec
    launch.path += ["functional replay", tape.run(ran, None, list(range(len(ran.instrs))),
                                                  _run_op, _op_error)]
    launch.engine.instructions = ran.instructions
    return [Block(b) for b in ran.blocks]


def _run_op(ran: Ran, e: int, build: bool) -> tape.Step | None:
    instr = ran.instrs[e]
    try:
        return tape.step(instr.ir_op, instr.args, instr.kwargs, build)
    except SimulationError:
        raise
    except tape.OP_ERRORS as err:
        raise _op_error(ran, e, err) from err


def _op_error(ran: Ran, e: int, err: Exception) -> SimulationError:
    """The executor's error for op `e` failing with `err` (`functional._op_error`)."""
    instr = ran.instrs[e]
    return SimulationError(f"{instr.ir_op} on {ran.labels[e]}: {err}", instr.span)


def keep_functional(launch: Any) -> None:
    """Keep what a functional launch ran (`launch.engine.ran`, None when it cannot be replayed)
    for its relaunch."""
    ran = launch.engine.ran
    if ran is None:
        return
    ran.blocks = [b.index for b in launch.blocks]
    ran.instructions = launch.engine.instructions
    launch.engine.ran = None
    store(launch, ran, None, True, FUNCTIONAL)


__all__ = ["FUNCTIONAL", "REPLAYS", "TIMED", "Entry", "Unkeyable", "clear",
           "keep_functional", "lookup", "overlapping", "replay_functional", "store"]
