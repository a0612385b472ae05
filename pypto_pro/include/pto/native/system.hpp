// PyPTO Pro native backend: system registers, atomics, masks, cache ops and raw DMA copies.
//
// `get_block_idx` & co. read the calling core's geometry (the cube of a mix block sees its
// block index, an AIV its block index and subblock id; generated code combines them). The
// raw copies are the few the generator emits around TilingData (`copy_gm_to_ubuf_align_*`,
// `copy_data_align64`): a `__ubuf__` pointer below the UB size is a UB address, as on the
// hardware, anything else a host pointer. Cache maintenance and mask / control registers keep
// their value where something reads it back and are otherwise no-ops on a CPU.
#pragma once

#include <cstdint>
#include <cstring>

#include "context.hpp"
#include "global.hpp"

inline int64_t get_block_idx() { return pypto_native::ctx().block_idx; }
inline int64_t get_block_num() { return pypto_native::ctx().block_num; }
inline int64_t get_subblockid() { return pypto_native::ctx().subblock_id; }
inline int64_t get_subblockdim() { return pypto_native::ctx().subblock_dim; }
inline int64_t get_ar() { return pypto_native::ctx().ar; }

inline void set_atomic_add() { pypto_native::ctx().atomic_add = true; }
inline void set_atomic_none() { pypto_native::ctx().atomic_add = false; }
inline void set_atomic_f32() {}
inline void set_atomic_f16() {}
inline void set_atomic_bf16() {}
inline void set_atomic_s32() {}
inline void set_atomic_s16() {}
inline void set_atomic_s8() {}

namespace pypto_native {

//! a `__ubuf__` pointer: a UB address (small value) or a host pointer into a UB
inline uint8_t* ub_pointer(const void* p)
{
    const uint64_t v = reinterpret_cast<uint64_t>(p);
    int64_t size = 0;
    uint8_t* base = space_base(TileType::Vec, size);
    if (base != nullptr && v < static_cast<uint64_t>(size)) return base + v;
    return reinterpret_cast<uint8_t*>(const_cast<void*>(p));
}

inline void gm_read_check(const void* p, int64_t bytes, const char* op, int line)
{
    const uint64_t lo = reinterpret_cast<uint64_t>(p);
    check_gm(op, lo, lo, lo + static_cast<uint64_t>(bytes), line);
}

}  // namespace pypto_native

inline void set_mask_count() { pypto_native::ctx().mask_count_mode = true; }
inline void set_mask_norm() { pypto_native::ctx().mask_count_mode = false; }
inline void set_vector_mask(uint64_t hi, uint64_t lo)
{
    pypto_native::ctx().vector_mask[0] = hi;
    pypto_native::ctx().vector_mask[1] = lo;
}
inline void set_mm_layout_transform(bool) {}
inline void set_ctrl_spr(int64_t id, int64_t value) { pypto_native::ctx().ctrl_spr[id] = value; }
inline void reset_ctrl_spr(int64_t id) { pypto_native::ctx().ctrl_spr.erase(id); }
inline int64_t get_ctrl_spr(int64_t id)
{
    auto& m = pypto_native::ctx().ctrl_spr;
    auto it = m.find(id);
    return it == m.end() ? 0 : it->second;
}
inline void set_saturation_flag(int64_t v) { pypto_native::ctx().saturation = v; }
inline int64_t get_saturation_flag() { return pypto_native::ctx().saturation; }
inline void dcci(const void*, int64_t, int64_t) {}

inline void copy_data_align64(void* dst, const void* src, int64_t bytes,
                              pypto_native::Loc loc = pypto_native::Loc::here())
{
    using namespace pypto_native;
    record("copy_data_align64", loc);
    const uint8_t* s = ub_pointer(src);
    if (s == src) gm_read_check(src, bytes, "copy_data_align64", loc.line);
    std::memcpy(dst, s, static_cast<size_t>(bytes));
}

//! an immediate operand (the tiling copy-in's UB address 0)
inline uint64_t get_imm(uint64_t value) { return value; }

//! a5 GM -> UB: n_burst bursts of len_burst bytes (strides in bytes between burst starts)
inline void copy_gm_to_ubuf_align_v2(void* ub, const void* gm, int64_t sid, int64_t n_burst,
                                     int64_t len_burst, int64_t left_pad, int64_t right_pad,
                                     int64_t const_pad, int64_t l2_cache, int64_t src_stride,
                                     int64_t dst_stride,
                                     pypto_native::Loc loc = pypto_native::Loc::here())
{
    using namespace pypto_native;
    (void)sid, (void)left_pad, (void)right_pad, (void)const_pad, (void)l2_cache;
    record("copy_gm_to_ubuf_align_v2", loc);
    uint8_t* d = ub_pointer(ub);
    const uint8_t* s = static_cast<const uint8_t*>(gm);
    const int64_t ss = src_stride ? src_stride : len_burst;
    const int64_t ds = dst_stride ? dst_stride : (len_burst + 31) / 32 * 32;
    for (int64_t b = 0; b < n_burst; ++b) {
        gm_read_check(s + b * ss, len_burst, "copy_gm_to_ubuf_align_v2", loc.line);
        std::memcpy(d + b * ds, s + b * ss, static_cast<size_t>(len_burst));
    }
}

//! the FFTS control address of a2/a3 launches (call_kernel.cpp); unused on the host
inline int rtGetC2cCtrlAddr(uint64_t* addr, uint32_t* len)
{
    *addr = 0;
    *len = 0;
    return 0;
}
