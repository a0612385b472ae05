"""SoC tables: core counts, clocks, buffers, alignments, rates and cost numbers of each Ascend SoC.

Owns the `SoC` record and its loader. The numbers live as data in `<name>.toml` beside this
module, one file per SoC, every value with the source key it comes from
(`shared/spec/ascend_950_model.md`). Any number can be overridden per call: `soc("950DT",
clock_mhz=1700)`. A neutral module: the passes, the simulator and the backends read it; it
imports only `pypto_pro.ir.types`.
"""
from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import tomllib

from pypto_pro.ir.types import MemorySpace

DEFAULT_SOC = "Ascend950PR_9589"
_TABLE_DIR = Path(__file__).parent
#: TOML sections that become mapping attributes (every other number sits in `[params]`).
_MAPPING_SECTIONS = (
    "buffers", "alignments", "mte_rates", "mte_startup", "cube_macs_per_cycle",
    "vector_cycles_per_repeat",
)


@dataclass(frozen=True)
class SoC:
    """One Ascend SoC as the simulator and cost model see it. Mappings are read-only."""

    name: str
    aliases: tuple[str, ...]
    arch: str
    aic_cores: int
    aiv_cores: int
    clock_mhz: float
    hbm_bytes_per_s: float
    l2_bytes: int  # chip L2 shared by all cores; 0 = none (see sim.model.memory_system)
    l2_line_bytes: int
    l2_ways: int
    l2_miss_extra_cycles: int
    pipe_queue_depth: int  # instructions a pipe queue holds before issue stalls
    cube_head_cycles: int
    cube_fractal_m: int
    cube_fractal_n: int
    cube_k0_bytes: int
    cube_fp32_cycles_per_fractal: int
    vector_repeat_bytes: int
    vector_startup_cycles: int
    scalar_issue_cycles: int
    scalar_access_cycles: int
    flag_cycles: int
    mutex_cycles: int
    cross_core_cycles: int
    buffers: Mapping[str, int]
    alignments: Mapping[str, int]
    mte_rates: Mapping[str, float]
    mte_startup: Mapping[str, int]
    cube_macs_per_cycle: Mapping[str, int]
    vector_cycles_per_repeat: Mapping[str, float]
    #: attribute (or "section.key") -> where the number comes from
    sources: Mapping[str, str]

    def buffer_size(self, space: MemorySpace | str) -> int:
        """Bytes of the on-chip buffer behind `space` (0 when the SoC has none)."""
        return self.buffers[_space_name(space)]

    def alignment(self, space: MemorySpace | str) -> int:
        """Required start-address alignment in bytes for tiles in `space`."""
        return self.alignments[_space_name(space)]

    @property
    def clock_hz(self) -> float:
        return self.clock_mhz * 1e6


def _space_name(space: MemorySpace | str) -> str:
    return space.value if isinstance(space, MemorySpace) else str(space)


def list_socs() -> list[str]:
    """Names of every SoC table shipped with the simulator."""
    return sorted(p.stem for p in _TABLE_DIR.glob("*.toml"))


@functools.cache
def _aliases() -> dict[str, str]:
    table = {}
    for name in list_socs():
        table[name] = name
        for alias in _raw_table(name).get("aliases", ()):
            table[alias] = name
    return table


@functools.cache
def _raw_table(name: str) -> dict[str, Any]:
    with open(_TABLE_DIR / f"{name}.toml", "rb") as fh:
        return tomllib.load(fh)


@functools.cache
def _base_soc(name: str) -> SoC:
    raw = _raw_table(name)
    values: dict[str, Any] = {"name": raw["name"], "aliases": tuple(raw.get("aliases", ()))}
    sources: dict[str, str] = {}
    for key, entry in raw["params"].items():
        values[key] = entry["value"]
        sources[key] = entry["source"]
    for section in _MAPPING_SECTIONS:
        values[section] = MappingProxyType({k: e["value"] for k, e in raw[section].items()})
        sources.update({f"{section}.{k}": e["source"] for k, e in raw[section].items()})
    values["sources"] = MappingProxyType(sources)
    expected = {f.name for f in dataclasses.fields(SoC)}
    if set(values) != expected:
        raise ValueError(f"SoC table {name}.toml does not match SoC fields: "
                         f"missing {sorted(expected - set(values))}, "
                         f"unknown {sorted(set(values) - expected)}")
    return SoC(**values)


def soc(name: str = DEFAULT_SOC, **overrides: Any) -> SoC:
    """The SoC table `name` (full name or alias such as "950PR", "950DT", "910B1").

    `overrides` replace any attribute; for a mapping attribute (e.g. `buffers`) the given dict is
    merged into the table's. Overridden numbers get the source "override".
    """
    canonical = _aliases().get(name)
    if canonical is None:
        raise ValueError(f"unknown SoC {name!r}; known: {', '.join(sorted(_aliases()))}")
    base = _base_soc(canonical)
    if not overrides:
        return base
    fields = {f.name for f in dataclasses.fields(SoC)} - {"name", "aliases", "sources"}
    sources = dict(base.sources)
    changes: dict[str, Any] = {}
    for key, value in overrides.items():
        if key not in fields:
            raise TypeError(f"soc() got an unknown override {key!r}; overridable: "
                            f"{', '.join(sorted(fields))}")
        if key in _MAPPING_SECTIONS:
            current = getattr(base, key)
            unknown = set(value) - set(current)
            if unknown:
                raise TypeError(f"soc() override {key!r} has unknown keys {sorted(unknown)}")
            changes[key] = MappingProxyType({**current, **value})
            sources.update({f"{key}.{k}": "override" for k in value})
        else:
            changes[key] = value
            sources[key] = "override"
    return dataclasses.replace(base, **changes, sources=MappingProxyType(sources))


__all__ = ["DEFAULT_SOC", "SoC", "list_socs", "soc"]


#: torch_npu's caching allocator: every device allocation is the request plus 32 bytes, rounded
#: up to whole 512-byte blocks (`NPUCachingAllocator`'s round_size), so a tensor is followed by
#: bytes of its own allocation that a kernel may address without faulting.
DEVICE_ALLOC_PAD_BYTES = 32
DEVICE_ALLOC_BLOCK_BYTES = 512


def device_allocation(nbytes: int) -> int:
    """Bytes the real NPU runtime reserves for a tensor storage of `nbytes` bytes (0 for none)."""
    if nbytes <= 0:
        return 0
    block = DEVICE_ALLOC_BLOCK_BYTES
    return -(-(nbytes + DEVICE_ALLOC_PAD_BYTES) // block) * block
