"""Enums used as op attributes (spec §2.1 "Op-attribute enums" and "VF enums").

They are IR attribute values; `pypto_pro.language` re-exports them as `pl.<Name>`. Integer
values follow the real system where the spec gives them, else declaration order. Each enum is
created on first use (PEP 562 `__getattr__`): creating all 32 costs a new process several
milliseconds, and a kernel launched from the on-disk cache usually needs none of them.
"""
from __future__ import annotations

import enum
from typing import Any


class _Attr(enum.IntEnum):
    def __repr__(self) -> str:
        return f"pl.{type(self).__name__}.{self.name}"

    __str__ = __repr__


#: each enum's members, valued 0, 1, ... in this order; `ALL` keeps this order
_MEMBERS: dict[str, str] = {
    "ReluPreMode": "NoRelu NormalRelu",
    "AtomicType": "AtomicNone AtomicAdd",
    "STPhase": "Unspecified Partial Final",
    "AccPhase": "Unspecified Partial Final",
    "AccToVecMode": "SingleModeVec0 SingleModeVec1 DualModeSplitM DualModeSplitN",
    "RoundMode": "CAST_NONE CAST_RINT CAST_ROUND CAST_FLOOR CAST_CEIL CAST_TRUNC CAST_ODD",
    "QuantMode": "SYM ASYM",
    "CrossCoreSyncMode": "INTER_BLOCK INTER_SUBBLOCK INTRA_BLOCK UNICAST_BLOCK",
    "SyncCoreType": "AIV_ONLY AIC_ONLY MIX",
    "SyncAllMode": "HARD SOFT",
    "CacheLine": "SINGLE_CACHE_LINE ENTIRE_DATA_CACHE",
    "DcciDst": "AUTO CACHELINE_OUT CACHELINE_UB CACHELINE_ALL CACHELINE_ATOMIC",
    "FillPadMode": "NORMAL EXPAND INPLACE",
    "SaturationFlagMode": "OFF ON",
    # compare modes of `block.cmp` / `vf` compares
    "CompareMode": "EQ NE LT GT LE GE",
    # ------------------------------------------------------------ VF (Reg API) enums
    "MaskPattern": "ALL ALLF VL1 VL2 VL3 VL4 VL8 VL16 VL32 VL64 VL128 M3 M4 H Q",
    "MergeMode": "ZEROING MERGING",
    "ReduceMode": "SUM MAX MIN",
    "DuplicatePos": "LOWEST HIGHEST",
    "CastLayout": "ZERO ONE TWO THREE",
    "VFRoundMode": "CAST_ROUND CAST_RINT CAST_FLOOR CAST_CEIL CAST_TRUNC CAST_ODD CAST_HYBRID",
    "SaturateMode": "OFF ON",
    "BinType": "BIN0 BIN1",
    "HistType": "ACCUMULATE FREQUENCY",
    "SqueezeMode": "STORE_REG NO_STORE_REG",
    "PackPart": "LOWER UPPER",
    "MaskWidth": "B32 B16",
    "LoadDist": "NORM BRC BRC_B8 BRC_B16 BRC_B32 US US_B8 US_B16 DS DS_B8 DS_B16 UNPK UNPK_B8 "
                "UNPK_B16 UNPK_B32 UNPK4 BLK E2B E2B_B16 E2B_B32 DINTLV_B8 DINTLV_B16 DINTLV_B32",
    "StoreDist": "NORM NORM_B16 FIRST_ELEMENT PACK PACK4 INTLV INTLV_B32",
    "DataCopyMode": "NORM DATA_BLOCK_LOAD DATA_BLOCK_COPY",
    "MemBarMode": "VST_VLD VLD_VST VST_VST VST_LD VST_ST VLD_ST ST_VLD ST_VST LD_VST VV_ALL "
                  "VS_ALL SV_ALL",
    "IndexOrder": "INCREASE_ORDER DECREASE_ORDER",
}

#: the enum names (`pl.<Name>`), without building them
NAMES = tuple(_MEMBERS)


def __getattr__(name: str) -> Any:
    if name == "ALL":  # every attribute enum by name (the language re-exports these)
        value: Any = {n: _enum(n) for n in NAMES}
    elif name in _MEMBERS:
        value = _Attr(name, [(m, i) for i, m in enumerate(_MEMBERS[name].split())],
                      module=__name__, qualname=name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return globals().setdefault(name, value)  # one object per name, even across threads


def _enum(name: str) -> type[_Attr]:
    return globals().get(name) or __getattr__(name)


def __dir__() -> list[str]:
    return sorted({*globals(), *NAMES, "ALL"})
