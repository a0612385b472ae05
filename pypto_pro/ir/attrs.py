"""Enums used as op attributes (spec §2.1 "Op-attribute enums" and "VF enums").

They are IR attribute values; `pypto_pro.language` re-exports them as `pl.<Name>`. Integer
values follow the real system where the spec gives them, else declaration order.
"""
from __future__ import annotations

import enum


class _Attr(enum.IntEnum):
    def __repr__(self) -> str:
        return f"pl.{type(self).__name__}.{self.name}"

    __str__ = __repr__


def _attr_enum(name: str, members: str, start: int = 0) -> type[_Attr]:
    return _Attr(name, [(m, i) for i, m in enumerate(members.split(), start)])  # type: ignore


ReluPreMode = _attr_enum("ReluPreMode", "NoRelu NormalRelu")
AtomicType = _attr_enum("AtomicType", "AtomicNone AtomicAdd")
STPhase = _attr_enum("STPhase", "Unspecified Partial Final")
AccPhase = _attr_enum("AccPhase", "Unspecified Partial Final")
AccToVecMode = _attr_enum("AccToVecMode",
                          "SingleModeVec0 SingleModeVec1 DualModeSplitM DualModeSplitN")
RoundMode = _attr_enum("RoundMode",
                       "CAST_NONE CAST_RINT CAST_ROUND CAST_FLOOR CAST_CEIL CAST_TRUNC CAST_ODD")
QuantMode = _attr_enum("QuantMode", "SYM ASYM")


class CrossCoreSyncMode(_Attr):
    INTER_BLOCK = 0
    INTER_SUBBLOCK = 1
    INTRA_BLOCK = 2
    UNICAST_BLOCK = 3


SyncCoreType = _attr_enum("SyncCoreType", "AIV_ONLY AIC_ONLY MIX")
SyncAllMode = _attr_enum("SyncAllMode", "HARD SOFT")
CacheLine = _attr_enum("CacheLine", "SINGLE_CACHE_LINE ENTIRE_DATA_CACHE")
DcciDst = _attr_enum("DcciDst", "AUTO CACHELINE_OUT CACHELINE_UB CACHELINE_ALL CACHELINE_ATOMIC")
FillPadMode = _attr_enum("FillPadMode", "NORMAL EXPAND INPLACE")
SaturationFlagMode = _attr_enum("SaturationFlagMode", "OFF ON")

# compare modes of `block.cmp` / `vf` compares
CompareMode = _attr_enum("CompareMode", "EQ NE LT GT LE GE")

# ---------------------------------------------------------------- VF (Reg API) enums

MaskPattern = _attr_enum(
    "MaskPattern", "ALL ALLF VL1 VL2 VL3 VL4 VL8 VL16 VL32 VL64 VL128 M3 M4 H Q")
MergeMode = _attr_enum("MergeMode", "ZEROING MERGING")
ReduceMode = _attr_enum("ReduceMode", "SUM MAX MIN")
DuplicatePos = _attr_enum("DuplicatePos", "LOWEST HIGHEST")
CastLayout = _attr_enum("CastLayout", "ZERO ONE TWO THREE")
VFRoundMode = _attr_enum(
    "VFRoundMode", "CAST_ROUND CAST_RINT CAST_FLOOR CAST_CEIL CAST_TRUNC CAST_ODD CAST_HYBRID")
SaturateMode = _attr_enum("SaturateMode", "OFF ON")
BinType = _attr_enum("BinType", "BIN0 BIN1")
HistType = _attr_enum("HistType", "ACCUMULATE FREQUENCY")
SqueezeMode = _attr_enum("SqueezeMode", "STORE_REG NO_STORE_REG")
PackPart = _attr_enum("PackPart", "LOWER UPPER")
MaskWidth = _attr_enum("MaskWidth", "B32 B16")
LoadDist = _attr_enum(
    "LoadDist", "NORM BRC BRC_B8 BRC_B16 BRC_B32 US US_B8 US_B16 DS DS_B8 DS_B16 UNPK UNPK_B8 "
    "UNPK_B16 UNPK_B32 UNPK4 BLK E2B E2B_B16 E2B_B32 DINTLV_B8 DINTLV_B16 DINTLV_B32")
StoreDist = _attr_enum(
    "StoreDist", "NORM NORM_B16 FIRST_ELEMENT PACK PACK4 INTLV INTLV_B32")
DataCopyMode = _attr_enum("DataCopyMode", "NORM DATA_BLOCK_LOAD DATA_BLOCK_COPY")
MemBarMode = _attr_enum(
    "MemBarMode", "VST_VLD VLD_VST VST_VST VST_LD VST_ST VLD_ST ST_VLD ST_VST LD_VST VV_ALL "
    "VS_ALL SV_ALL")
IndexOrder = _attr_enum("IndexOrder", "INCREASE_ORDER DECREASE_ORDER")

#: every attribute enum by name (the language re-exports these)
ALL = {e.__name__: e for e in (
    ReluPreMode, AtomicType, STPhase, AccPhase, AccToVecMode, RoundMode, QuantMode,
    CrossCoreSyncMode, SyncCoreType, SyncAllMode, CacheLine, DcciDst, FillPadMode,
    SaturationFlagMode, CompareMode, MaskPattern, MergeMode, ReduceMode, DuplicatePos,
    CastLayout, VFRoundMode, SaturateMode, BinType, HistType, SqueezeMode, PackPart, MaskWidth,
    LoadDist, StoreDist, DataCopyMode, MemBarMode, IndexOrder)}
