"""What a launch takes over from the last one on its SoC instead of allocating it: its slots'
on-chip memories and the chip's L2 and HBM arrays (`Pools`, one per sim backend).

Allocating a core's buffers (MiBs of fresh pages for an AIC) or the L2's tag arrays costs more
than a small launch; resetting them a fraction of it. A core memory comes back as a new core
has it (garbage, nothing initialised): every write to a buffer is a torch in-place op on it or
on a view of it, which bumps the version counter it shares with its views, so a buffer whose
counter did not move since it was last as new needs no reset (a 1-tile launch leaves most of
an AIC's buffers untouched). The memory system is reset by its own `reset`.
"""
from __future__ import annotations

import weakref
from typing import Any

import torch

from ..ir.types import MemorySpace
from .model.memory import CoreMemory
from .model.memory_system import MemorySystem


class Pools:
    """The idle memories of finished launches, per SoC."""

    def __init__(self) -> None:
        # (SoC name, core kind) → idle on-chip memories (a stack: a relaunch taking them in
        # slot order gets each slot's memory back, as the memo needs), and a never-used one
        # to reset them from
        self._idle: dict[tuple[str, str], list[CoreMemory]] = {}
        self._pristine: dict[tuple[str, str], _Pristine] = {}
        # memory → space → the version counters of its buffer and init mask when it was as new
        self._as_new: weakref.WeakKeyDictionary[CoreMemory, dict] = weakref.WeakKeyDictionary()
        self._systems: dict[str, tuple[Any, MemorySystem]] = {}  # SoC name → (SoC, its system)

    def core_memory(self, soc: Any, kind: str) -> CoreMemory:
        """A core's buffers as a new core has them."""
        key = (soc.name, kind)
        idle = self._idle.get(key)
        while idle:
            memory = idle.pop()
            if memory.soc is not soc:  # a SoC table with other overrides under the same name
                continue
            changed = False
            for space, (buf_version, mask_version) in self._as_new[memory].items():
                buf = memory.buffers[space]
                if buf._version != buf_version:
                    self._pristine_of(soc, key).restore(space, buf)
                    changed = True
                mask = memory.initialised[space]
                if mask._version != mask_version:  # (only sanitized launches mark it)
                    mask.zero_()
                    changed = True
            if changed:
                self._as_new[memory] = _versions(memory)
            return memory
        memory = CoreMemory(soc, kind)
        self._as_new[memory] = _versions(memory)
        return memory

    def give_back(self, memory: CoreMemory) -> None:
        """A finished launch's core memory, for the next `core_memory` of its SoC and kind."""
        self._idle.setdefault((memory.soc.name, memory.kind), []).append(memory)

    def memory_system(self, soc: Any) -> MemorySystem:
        """The L2 and HBM of a launch on `soc`: the last one's, reset, when there is one."""
        idle = self._systems.pop(soc.name, None)
        if idle is not None and idle[0] is soc:
            idle[1].reset()
            return idle[1]
        return MemorySystem(soc)

    def keep_memory_system(self, soc: Any, system: MemorySystem) -> None:
        self._systems[soc.name] = (soc, system)

    def last_memory_system(self, soc: Any) -> MemorySystem | None:
        """The memory system the last launch on `soc` left (its counters), if any."""
        found = self._systems.get(soc.name)
        return None if found is None else found[1]

    def _pristine_of(self, soc: Any, key: tuple[str, str]) -> _Pristine:
        pristine = self._pristine.get(key)
        if pristine is None or pristine.memory.soc is not soc:
            pristine = self._pristine[key] = _Pristine(soc, key[1])
        return pristine


class _Pristine:
    """A never-used core memory, and per space the 4-byte word its buffer repeats (None when
    it repeats none): filling a buffer with the word writes what copying the pristine buffer
    writes, in half the time (nothing to read)."""

    def __init__(self, soc: Any, kind: str) -> None:
        self.memory = CoreMemory(soc, kind)
        self.words = {space: _repeated_word(buf) for space, buf in self.memory.buffers.items()}

    def restore(self, space: MemorySpace, buf: torch.Tensor) -> None:
        word = self.words[space]
        if word is None:
            buf.copy_(self.memory.buffers[space])
        else:
            buf.view(torch.int32).fill_(word)


def _repeated_word(buf: torch.Tensor) -> int | None:
    if not buf.numel() or buf.numel() % 4:  # (a SoC without this buffer has 0 bytes of it)
        return None
    words = buf.view(torch.int32)
    word = int(words[0])
    return word if bool((words == word).all()) else None


def _versions(memory: CoreMemory) -> dict[MemorySpace, tuple[int, int]]:
    return {space: (buf._version, memory.initialised[space]._version)
            for space, buf in memory.buffers.items()}


__all__ = ["Pools"]
