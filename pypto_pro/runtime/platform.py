"""`get_platform_info()`: the SoC kernels run on (the real PyPTO Pro's
`pypto_pro.runtime.platform`), used to choose a block_dim: `core_num` bounds a cube or mix
kernel, `vector_core_num` a vector-only one. Without an NPU this is the simulated SoC
(`PYPTOPRO_SIM_SOC`, default Ascend 950PR: 32 AIC, 64 AIV), which the native backend runs
the same kernels for.
"""
from __future__ import annotations

from dataclasses import dataclass

#: compilation arch → the NPU arch string the real runtime reports
_SOC_VERSION = {"a5": "DAV_3510", "a3": "DAV_2201", "a2": "DAV_2201"}


@dataclass
class PlatformInfo:
    """NPU platform hardware information."""

    soc_version: str = ""
    core_num: int = 0
    cube_core_num: int = 0
    vector_core_num: int = 0

    @property
    def arch(self) -> str:
        """"a5" for DAV_3510 (950 series), "a3" for DAV_2201 / DAV_1001, "" if unknown."""
        if not self.soc_version:
            return ""
        return "a5" if self.soc_version == "DAV_3510" else "a3"


def get_platform_info(force_refresh: bool = False) -> PlatformInfo:
    """The platform of the simulated SoC (read anew each call: `PYPTOPRO_SIM_SOC` may change;
    `force_refresh` is accepted for the real signature)."""
    from .backends import get_backend

    soc = get_backend("sim").soc
    return PlatformInfo(_SOC_VERSION.get(soc.arch, ""), soc.aic_cores, soc.aic_cores,
                        soc.aiv_cores)


__all__ = ["PlatformInfo", "get_platform_info"]
