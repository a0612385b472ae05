"""The stream engine's memo: a launch's recording and schedule, kept for its next relaunch.

Neither phase before the values depends on the data (`stream`): a program whose control flow
or costs read memory is not eligible, and the memory system gives each storage its device
address in the order the launch first touches it (`MemorySystem.reset`), so where the host put
a tensor does not matter either. The recorded streams and their schedule are a pure function of
the kernel's programs, the SoC, the block count and the parameters — tensors by their `GMRef`
(one per tensor, shape, strides and storage: `backends.sim._gm_view`), everything else by value.
A relaunch with the same ones replays the kept schedule (values, trace rows, L2 counters) and
skips recording and scheduling, which are most of a timed launch.

One entry per kernel (on its first program), for the GM views the backend keeps anyway: the
memo holds no tensor alive that the backend's GM view cache does not. The recorded instructions
hold tiles of the slot memories they ran on, so a hit also needs the same memory objects in the
same slots; the memory pool hands them back in slot order to a relaunch that follows its
previous launch (`Launch.release`). Anything else records afresh and replaces the entry.
"""
from __future__ import annotations

from typing import Any

import torch

from .memory import GMRef

_generation = 0  # `clear` bumps it: entries of earlier generations never hit


class Entry:
    """What a relaunch reuses: the recording, the schedule, the trace rows once made."""

    __slots__ = ("key", "generation", "memories", "params", "rec", "sched", "rows", "safe")

    def __init__(self, key: tuple, launch: Any, rec: Any, sched: Any, safe: bool) -> None:
        self.key, self.generation = key, _generation
        self.memories = _memories(launch)
        self.params = launch.params  # (keeps the GM views of the key alive: ids stay unique)
        self.rec, self.sched, self.safe = rec, sched, safe
        self.rows: list[tuple] | None = None


def key(launch: Any) -> tuple:
    """What a launch's recording and schedule depend on besides its programs."""
    return (launch.kernel_type, launch.block_dim, len(launch.slots), id(launch.soc),
            *(tuple(_value_key(v) for v in values) for values in launch.params.values()))


def _value_key(value: Any) -> Any:
    if type(value) is GMRef:
        return id(value)
    if isinstance(value, torch.Tensor):  # (a pointer's: its storage may be swapped, `set_`)
        return id(value), value.data_ptr(), value.storage_offset(), value.untyped_storage().nbytes()
    if isinstance(value, tuple):  # a pointer (tensor, offset)
        return tuple(_value_key(v) for v in value)
    if isinstance(value, dict):  # a struct's fields
        return tuple((k, _value_key(v)) for k, v in value.items())
    if isinstance(value, (int, float, bool, str, type(None))):
        return type(value), value  # (1, 1.0 and True are equal keys otherwise)
    return id(value)  # (held by `Entry.params`)


def _memories(launch: Any) -> tuple:
    return tuple(m for slot in launch.slots for m in slot.memories.values())


def _holder(launch: Any) -> Any:
    return next(iter(launch.programs.values()))


def lookup(launch: Any) -> Entry | None:
    """The entry `launch` may replay, or None (then the kernel's entry is dropped: it keeps no
    tensor of an earlier launch alive)."""
    holder = _holder(launch)
    entry = getattr(holder, "stream_memo", None)
    if entry is None:
        return None
    now = _memories(launch)
    if entry.generation != _generation or entry.key != key(launch) or \
            len(now) != len(entry.memories) or any(a is not b for a, b in zip(now, entry.memories)):
        holder.stream_memo = None
        return None
    return entry


def store(launch: Any, rec: Any, sched: Any, safe: bool) -> Entry:
    """Keep this launch's recording and schedule for its relaunch (replacing the kernel's last)."""
    entry = Entry(key(launch), launch, rec, sched, safe)
    _holder(launch).stream_memo = entry
    return entry


def clear() -> None:
    """Forget every kept recording (the next launch of every kernel records afresh)."""
    global _generation
    _generation += 1


__all__ = ["Entry", "clear", "key", "lookup", "store"]
