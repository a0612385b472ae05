"""The simulator's per-launch set-up (issue 9): a pooled core memory is reset buffer by buffer
and mask by mask, by filling with the garbage word where the pristine buffer repeats one; the
SoC named by env is looked up once per value; a Trace reads the launch numbers of its EventLog
only when asked."""
from __future__ import annotations

import pytest
import torch

from pypto_pro.errors import InvalidArgument
from pypto_pro.ir.types import MemorySpace
from pypto_pro.runtime.backends.sim import SimBackend
from pypto_pro.sim import settings
from pypto_pro.sim import pools as pools_mod
from pypto_pro.sim.pools import Pools
from pypto_pro.sim.model.memory import CoreMemory
from pypto_pro.soc import SoC, soc
from pypto_pro.trace import EventLog, Trace, TraceMeta

META = TraceMeta(kernel="k", backend="sim", soc="Ascend950PR_9589", clock_mhz=1000.0,
                 block_dim=1, kernel_type="aiv")
UB = MemorySpace.Vec


POOLS = Pools()


def _pooled(kind: str, table: SoC | None = None) -> CoreMemory:
    """A memory from `POOLS`, handed back to it (the next `core_memory` returns it)."""
    table = table or soc()
    memory = POOLS.core_memory(table, kind)
    POOLS.give_back(memory)
    return memory


def test_a_marked_mask_is_cleared_without_refilling_its_buffer() -> None:
    memory = _pooled("aiv")
    memory.initialised[UB][100:200] = True
    version = memory.buffers[UB]._version
    assert POOLS.core_memory(soc(), "aiv") is memory
    assert not memory.initialised[UB].any()
    assert memory.buffers[UB]._version == version


def test_a_written_buffer_is_refilled_without_clearing_its_mask() -> None:
    memory = _pooled("aiv")
    memory.buffers[UB][7:13] = 1
    version = memory.initialised[UB]._version
    assert POOLS.core_memory(soc(), "aiv") is memory
    assert torch.equal(memory.buffers[UB], CoreMemory(soc(), "aiv").buffers[UB])
    assert memory.initialised[UB]._version == version


@pytest.mark.parametrize("kind", ["aiv", "aic"])
@pytest.mark.parametrize("name", ["950PR", "910B1"])  # 910B1: empty MX scale buffers
def test_every_buffer_is_refilled_as_new(kind: str, name: str) -> None:
    table = soc(name)
    memory = _pooled(kind, table)
    for buf in memory.buffers.values():
        buf.fill_(3)
    assert POOLS.core_memory(table, kind) is memory
    fresh = CoreMemory(table, kind)
    for space, buf in memory.buffers.items():
        assert torch.equal(buf, fresh.buffers[space]), space


def test_a_buffer_repeating_no_word_is_restored_by_copying() -> None:
    assert pools_mod._repeated_word(torch.tensor([1, 2, 3, 4, 1, 2, 3, 4],
                                                  dtype=torch.uint8)) == 0x04030201
    assert pools_mod._repeated_word(torch.arange(8, dtype=torch.uint8)) is None
    assert pools_mod._repeated_word(torch.zeros(6, dtype=torch.uint8)) is None
    assert pools_mod._repeated_word(torch.zeros(0, dtype=torch.uint8)) is None
    pristine = pools_mod._Pristine(soc(), "aiv")
    pristine.memory.buffers[UB][5] = 0  # no longer one repeated word
    pristine.words[UB] = pools_mod._repeated_word(pristine.memory.buffers[UB])
    assert pristine.words[UB] is None
    buf = torch.full_like(pristine.memory.buffers[UB], 9)
    pristine.restore(UB, buf)
    assert torch.equal(buf, pristine.memory.buffers[UB])


def test_the_env_soc_is_read_at_every_launch(monkeypatch: pytest.MonkeyPatch) -> None:
    backend = SimBackend()
    monkeypatch.setenv(settings.SOC, " 910B1 ")
    assert backend.soc is soc("910B1")
    monkeypatch.setenv(settings.SOC, "no-such-chip")
    for _ in range(2):  # a bad value is never remembered as a SoC
        with pytest.raises(InvalidArgument, match="no-such-chip"):
            _ = backend.soc
    monkeypatch.delenv(settings.SOC)
    assert backend.soc is soc()


def _log(*launches: int) -> EventLog:
    log = EventLog()
    for n in launches:
        log.add(launch=n, kind="instr", start=0, end=4)
    return log


def test_a_trace_reads_its_launch_numbers_from_the_log_or_the_frame() -> None:
    assert sorted(Trace(_log(0, 3), META).launch_metas) == [0, 3]
    built_first = Trace(_log(2), META)
    assert len(built_first.events) == 1  # the frame replaces the log
    assert built_first.launch_metas == {2: META}
    assert Trace(EventLog(), META).launch_metas == {0: META}


def test_given_launch_metas_must_cover_the_log() -> None:
    other = TraceMeta(kernel="j", backend="sim", soc="Ascend950PR_9589", clock_mhz=1000.0,
                      block_dim=1, kernel_type="aiv", launch=1)
    assert Trace(_log(0, 1), META, launch_metas={0: META, 1: other}).launch_metas[1] is other
    with pytest.raises(ValueError, match=r"no TraceMeta for launches \[1\]"):
        Trace(_log(0, 1), META, launch_metas={0: META})
