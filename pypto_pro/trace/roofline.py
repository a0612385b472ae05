"""Roofline of a Trace: achieved HBM bytes/s and FLOP/s against the chip's peaks.

Owns `Roofline`, `soc_peaks` (the peaks of a SoC table) and `roofline(...)` (spec
`ascend_950_model.md` §7): HBM traffic is the bytes of
the instructions whose IR op is a GM load or store (`ir.ops` families "load"/"store"), FLOPs are
those of the relevant unit (the Cube when the kernel did any cube FLOPs, else the Vector unit),
intensity = FLOPs / HBM bytes, ridge = peak FLOP/s / peak bytes/s, and the roof is
min(peak FLOP/s, intensity x bandwidth). Imported only when a Trace is used (pandas at the top).
"""
from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd

from pypto_pro.ir.ops import REGISTRY

from .schema import TraceMeta

#: keys of the `soc_peaks` mapping
PEAK_KEYS = ("hbm_bytes_per_s", "cube_flops_per_s", "vector_flops_per_s")
#: pipe whose FLOPs each compute roof counts
_ROOF_PIPE = {"cube": "M", "vector": "V"}


@dataclass(frozen=True)
class Roofline:
    """Where a launch sits under the roofs (rates per second, intensity in FLOP/byte)."""

    seconds: float
    hbm_bytes: int
    flops: int  # FLOPs of the `unit` pipe
    unit: str  # "cube" | "vector": which compute roof applies
    intensity: float  # FLOP / HBM byte (inf when there is no HBM traffic)
    achieved_bytes_per_s: float
    achieved_flops_per_s: float
    peak_bytes_per_s: float
    peak_flops_per_s: float
    ridge: float  # FLOP / byte where the memory roof meets the compute roof
    attainable_flops_per_s: float  # min(peak FLOP/s, intensity x peak bytes/s)
    bound: str  # "memory" | "compute"
    memory_fraction: float  # achieved bytes/s / peak bytes/s
    compute_fraction: float  # achieved FLOP/s / peak FLOP/s
    fraction_of_roof: float  # of the relevant roof: memory_fraction or compute_fraction

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def roofline(events: pd.DataFrame, meta: TraceMeta, seconds: float,
             soc_peaks: Mapping[str, float]) -> Roofline:
    """The roofline point of `events` run in `seconds` against `soc_peaks` (see `PEAK_KEYS`;
    `hbm_bytes_per_s` defaults to `meta.hbm_bytes_per_cycle` x clock when that is set)."""
    instr = events[events["kind"] == "instr"]
    hbm_bytes = int(instr.loc[instr["ir_op"].isin(hbm_ir_ops()), "bytes"].sum())
    flops_by_pipe = instr.groupby(instr["pipe"].astype(str))["flops"].sum()
    unit = "cube" if flops_by_pipe.get("M", 0) > 0 else "vector"
    flops = int(flops_by_pipe.get(_ROOF_PIPE[unit], 0))
    bandwidth, peak_flops = _peaks(meta, soc_peaks, f"{unit}_flops_per_s")
    intensity = flops / hbm_bytes if hbm_bytes else math.inf
    ridge = peak_flops / bandwidth
    achieved_bytes = hbm_bytes / seconds if seconds > 0 else 0.0
    achieved_flops = flops / seconds if seconds > 0 else 0.0
    memory_fraction, compute_fraction = achieved_bytes / bandwidth, achieved_flops / peak_flops
    bound = "memory" if intensity < ridge else "compute"
    return Roofline(
        seconds=seconds, hbm_bytes=hbm_bytes, flops=flops, unit=unit, intensity=intensity,
        achieved_bytes_per_s=achieved_bytes, achieved_flops_per_s=achieved_flops,
        peak_bytes_per_s=bandwidth, peak_flops_per_s=peak_flops, ridge=ridge,
        attainable_flops_per_s=min(peak_flops, intensity * bandwidth), bound=bound,
        memory_fraction=memory_fraction, compute_fraction=compute_fraction,
        fraction_of_roof=memory_fraction if bound == "memory" else compute_fraction)


@functools.cache
def soc_peaks(soc_name: str) -> dict[str, float]:
    """HBM bytes/s and FP16 cube / vector FLOP/s of the simulator's SoC table `soc_name`:
    cube = AIC cores x 2 x MACs per cycle x clock, vector = AIV cores x FP16 lanes per cycle
    (one 256 B repeat per unary repeat cycle) x clock."""
    from pypto_pro.soc import soc

    s = soc(soc_name)
    lanes = s.vector_repeat_bytes / 2 / s.vector_cycles_per_repeat["unary"]
    return {"hbm_bytes_per_s": float(s.hbm_bytes_per_s),
            "cube_flops_per_s": s.aic_cores * 2 * s.cube_macs_per_cycle["FP16"] * s.clock_hz,
            "vector_flops_per_s": s.aiv_cores * lanes * s.clock_hz}


@functools.cache
def op_family(ir_op: str) -> str:
    """The op registry's family of an IR op ("load", "store", "move", "cube", "vector",
    "scalar", "sync", ...; "" for a name the registry does not know)."""
    spec = REGISTRY.get(ir_op)
    return spec.family if spec is not None else ""


@functools.cache
def hbm_ir_ops() -> frozenset[str]:
    """IR ops that move data between HBM (GM) and a core: the load and store families."""
    return frozenset(name for name, spec in REGISTRY.items() if spec.family in ("load", "store"))


def _peaks(meta: TraceMeta, soc_peaks: Mapping[str, float], flops_key: str
           ) -> tuple[float, float]:
    """(HBM bytes/s, FLOP/s of `flops_key`), checked."""
    unknown = sorted(set(soc_peaks) - set(PEAK_KEYS))
    if unknown:
        raise ValueError(f"unknown soc_peaks keys {unknown}; expected {list(PEAK_KEYS)}")
    bandwidth = soc_peaks.get("hbm_bytes_per_s", meta.hbm_bytes_per_cycle * meta.clock_mhz * 1e6)
    if flops_key not in soc_peaks:
        raise ValueError(f"soc_peaks needs {flops_key!r} for this kernel")
    peaks = (float(bandwidth), float(soc_peaks[flops_key]))
    if min(peaks) <= 0:
        raise ValueError(f"peaks must be positive (hbm_bytes_per_s given or meta."
                         f"hbm_bytes_per_cycle set), got {peaks}")
    return peaks
