// Stand-ins for the CCE builtins bisheng provides that pto-isa's CPU-simulator mode lacks and
// generated kernels call: buffer mutexes, cross-core flags (a5 intra-block, FFTS), SPR / atomic
// helpers, the tiling copy-in, SIMT thread context. Force-included (after the real
// <pto/pto-inst.hpp>) by tools/check_real_isa.py; never part of the project's headers.
//
// On pto-isa's CPU simulator every core is a thread that runs its instructions in program order
// and to completion, so the buffer mutexes have nothing to order and are empty; cross-core
// flags really block across the core threads (the harness sets `pypto_check::is_cube` and the
// simulator's block / subblock context per thread).
#pragma once

#include <cstddef>
#include <cstdint>

#include <pto/pto-inst.hpp>

#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>

namespace pypto_check {

inline thread_local bool is_cube = false;

//! counters per (block, receiver slot, id); slot 0 the cube, 1 + s vector subblock s; the
//! kernel-wide FFTS counters use block -1
struct Flags {
    std::mutex mu;
    std::condition_variable cv;
    std::map<std::tuple<int, int, int>, long> count;
};

inline Flags& flags()
{
    static Flags f;
    return f;
}

inline void signal(int block, int slot, int id)
{
    {
        std::lock_guard<std::mutex> g(flags().mu);
        ++flags().count[{block, slot, id}];
    }
    flags().cv.notify_all();
}

inline void wait(int block, int slot, int id)
{
    std::unique_lock<std::mutex> lk(flags().mu);
    long& c = flags().count[{block, slot, id}];
    flags().cv.wait(lk, [&] { return c > 0; });
    --c;
}

inline int own_slot() { return is_cube ? 0 : 1 + static_cast<int>(get_subblockid()); }

}  // namespace pypto_check

// ---- buffer mutexes (hardware buffer ids between the pipes of one core)
inline void get_buf(pipe_t, int64_t, int64_t) {}
inline void rls_buf(pipe_t, int64_t, int64_t) {}

// ---- a5 intra-block cross-core flags: the cube's id k signals vector k / 16 at k % 16, a
// vector subblock s signals the cube at id + 16 s
inline void set_intra_block(pipe_t, int64_t id)
{
    const int block = static_cast<int>(get_block_idx());
    if (pypto_check::is_cube) {
        pypto_check::signal(block, 1 + static_cast<int>(id / 16), static_cast<int>(id % 16));
    } else {
        pypto_check::signal(block, 0, static_cast<int>(id + 16 * get_subblockid()));
    }
}

inline void wait_intra_block(pipe_t, int64_t id)
{
    pypto_check::wait(static_cast<int>(get_block_idx()), pypto_check::own_slot(),
                      static_cast<int>(id));
}

// ---- FFTS flags: message = base | mode << 4 | id << 8; mode 0 all cores of a kind, 1 the
// vector subblocks of a block, 2 the cube and vectors of a block
inline uint64_t getFFTSMsg(uint16_t mode, uint16_t id, uint16_t base = 0x1)
{
    return static_cast<uint64_t>((base & 0xf) | ((mode & 0x3) << 4) | ((id & 0xf) << 8));
}

inline void set_ffts_base_addr(uint64_t) {}

inline void ffts_cross_core_sync(pipe_t, uint64_t msg)
{
    const int mode = static_cast<int>((msg >> 4) & 3), id = static_cast<int>((msg >> 8) & 0xf);
    const int block = static_cast<int>(get_block_idx());
    if (mode == 0) {
        pypto_check::signal(-1, pypto_check::is_cube ? 0 : 1, id);
    } else if (mode == 1) {
        pypto_check::signal(block, 1 + static_cast<int>(get_subblockid() ^ 1), id);
    } else if (pypto_check::is_cube) {
        pypto_check::signal(block, 1, id);
        pypto_check::signal(block, 2, id);
    } else {
        pypto_check::signal(block, 0, id + 16 * static_cast<int>(get_subblockid()));
    }
}

inline void wait_flag_dev(int64_t id)
{
    const int block = static_cast<int>(get_block_idx());
    if (pypto_check::is_cube) {
        pypto_check::wait(block, 0, static_cast<int>(id));
        pypto_check::wait(block, 0, static_cast<int>(id) + 16);
    } else {
        pypto_check::wait(block, pypto_check::own_slot(), static_cast<int>(id));
    }
}

inline void wait_flag_dev(pipe_t, int64_t id) { wait_flag_dev(id); }

// ---- system registers, atomics, masks (compile-only: no example run depends on them)
inline int64_t get_ar() { return 0; }
inline void set_atomic_f32() {}
inline void set_atomic_f16() {}
inline void set_atomic_bf16() {}
inline void set_atomic_s32() {}
inline void set_atomic_s16() {}
inline void set_atomic_s8() {}
inline void set_atomic_add() {}
inline void set_atomic_none() {}
inline void set_mask_count() {}
inline void set_mm_layout_transform(uint64_t) {}
inline void set_ctrl_spr(int64_t, int64_t, int64_t) {}
inline void reset_ctrl_spr(int64_t, int64_t) {}
inline int64_t get_ctrl_spr(int64_t, int64_t) { return 0; }
inline void set_saturation_flag(int64_t) {}
inline int64_t get_saturation_flag() { return 0; }
inline void trap() { std::abort(); }

// ---- the TilingData copy-in (GM -> UB -> scalar memory on the vector core); a UB address is
// an offset into the core's own scratch UB here (the simulator's tile memory is out of reach)
inline uint64_t get_imm(uint64_t value) { return value; }

namespace pypto_check {
inline uint8_t* ub(const void* address)
{
    static thread_local uint8_t scratch[256 * 1024];
    const auto a = reinterpret_cast<uintptr_t>(address);
    return a < sizeof(scratch) ? scratch + a : static_cast<uint8_t*>(const_cast<void*>(address));
}
}  // namespace pypto_check

inline void copy_data_align64(uint8_t* dst, const uint8_t* src, uint64_t bytes)
{
    std::memcpy(dst, pypto_check::ub(src), bytes);
}

inline void copy_gm_to_ubuf_align_v2(uint8_t* dst, const uint8_t* src, uint8_t sid,
                                     uint32_t n_burst, uint32_t len_burst, uint8_t left_pad,
                                     uint8_t right_pad, bool data_select, uint8_t l2_cache,
                                     uint64_t src_gap, uint32_t dst_gap)
{
    (void)sid, (void)left_pad, (void)right_pad, (void)data_select, (void)l2_cache;
    (void)src_gap, (void)dst_gap;
    std::memcpy(pypto_check::ub(dst), src, static_cast<size_t>(n_burst) * len_burst);
}
