"""The C++ surface generated code relies on: every type, instruction and intrinsic it names.

This is the contract with whatever implements it: the pto-isa headers and CANN on the NPU,
our own CPU headers (`pypto_pro/include`, the native backend) on the host. `SURFACE` groups
the names by layer; `all_identifiers()` is their union (plus the VF / tile instruction names
taken from the op tables), which the name allocator reserves and a test checks emitted code
against. The signatures are the ones the emitters write: see `ops`, `movement`, `sync`, `vf`,
`simt`, `tiling_header` and `launcher`.
"""
from __future__ import annotations

import functools

SURFACE: dict[str, tuple[str, ...]] = {
    # pto-isa types and tile-level instructions beyond the op table
    "pto_types": ("Tile", "TileType", "BLayout", "SLayout", "PadValue", "CompactMode",
                  "GlobalTensor", "Shape", "Stride", "Layout", "GlobalTensorDim", "DIM_3",
                  "DIM_4", "MrgSortExecutedNumList"),
    # member functions (called as `x.f(...)`; never clash with variable names)
    "pto_members": ("GetValidRow", "GetValidCol", "SetValidShape", "SetValidRow", "SetValidCol",
                    "SetShape", "SetStride", "data"),
    "pto_instructions": ("TASSIGN", "TLOAD", "TSTORE", "TSTORE_FP", "TMOV", "TMOV_FP",
                         "TEXTRACT", "TINSERT", "TRESHAPE", "TMRGSORT", "TPRINT", "SYNCALL",
                         "TRELU", "TCVT", "TCI", "THISTOGRAM", "TGATHER", "TQUANT", "TMATMUL_MX",
                         "TTRANS", *(f"T{a}{b}" for a in ("ROW", "COL")
                                     for b in ("SUM", "MAX", "MIN", "PROD"))),
    "pto_enums": ("CmpMode", "RoundMode", "AccPhase", "STPhase", "AtomicType", "ReluPreMode",
                  "AccToVecMode", "SyncCoreType", "SyncAllMode", "MaskPattern", "HistByte",
                  "QuantType"),
    # raw CCE intrinsics and constants
    "cce_sync": ("set_flag", "wait_flag", "pipe_barrier", "get_buf", "rls_buf",
                 "set_intra_block", "wait_intra_block", "ffts_cross_core_sync", "wait_flag_dev",
                 "getFFTSMsg", "set_ffts_base_addr", "event_t",
                 *(f"EVENT_ID{i}" for i in range(16)),
                 *(f"PIPE_{p}" for p in ("S", "V", "M", "MTE1", "MTE2", "MTE3", "FIX", "ALL"))),
    "cce_system": ("get_block_idx", "get_block_num", "get_subblockid", "get_subblockdim",
                   "get_ar", "set_atomic_f32", "set_atomic_f16", "set_atomic_bf16",
                   "set_atomic_s32", "set_atomic_s16", "set_atomic_s8", "set_atomic_add",
                   "set_atomic_none", "dcci", "set_mask_count", "set_mask_norm",
                   "set_vector_mask", "set_mm_layout_transform", "set_ctrl_spr",
                   "reset_ctrl_spr", "set_saturation_flag", "get_ctrl_spr",
                   "get_saturation_flag", "trap", "copy_data_align64",
                   "copy_gm_to_ubuf_align_v2", "get_imm",
                   "SINGLE_CACHE_LINE", "ENTIRE_DATA_CACHE", "CACHELINE_OUT", "CACHELINE_UB",
                   "CACHELINE_ALL", "CACHELINE_ATOMIC", "AUTO"),
    "cce_qualifiers": ("__aicore__", "__global__", "AICORE", "__gm__", "__ubuf__", "__ssbuf__",
                       "__VEC_SCOPE__", "__simt_vf__", "__simt_callee__", "__launch_bounds__"),
    "cce_namespaces": ("cce", "printf", "async_invoke", "dim3"),
    # Reg API (VF) types and constants
    "vf_types": ("RegTensor", "MaskReg"),  # + every VF constant (`vf.vf_constants`)
    # SIMT thread context and math
    "simt": ("threadIdx", "blockDim", "blockIdx", "gridDim", "warpSize", "atomicAdd",
             "atomicSub", "atomicExch", "atomicMax", "atomicMin", "atomicInc", "atomicDec",
             "atomicCAS", "atomicAnd", "atomicOr", "atomicXor"),
    # host side (call_kernel.cpp)
    "host": ("rtGetC2cCtrlAddr",),
}


MEMBER_GROUPS = ("pto_members",)


@functools.lru_cache(maxsize=1)
def all_identifiers(members: bool = True) -> frozenset[str]:
    """Every name in `SURFACE` (without member functions when `members` is False), the tile
    instructions of `ops` and the VF intrinsics."""
    from .ops import TILE_OPS
    from .vf import VF_INTRINSICS, vf_constants

    names = {n for g, group in SURFACE.items() if members or g not in MEMBER_GROUPS
             for n in group}
    names |= {spec.name for spec in TILE_OPS.values()}
    for spec in VF_INTRINSICS.values():
        names |= {spec.name.format(bits=b, T="float") for b in (8, 16, 32, 64)}
    return frozenset(names | vf_constants())
