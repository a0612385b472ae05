// PyPTO Pro native backend: per-core state, on-chip memories, faults and the op record.
//
// Each core instance (AIC, AIV0, AIV1 of a block) runs on its own host thread with a
// thread-local `CoreCtx`: its geometry (block / subblock indices), the on-chip buffers of its
// physical slot (byte arrays: UB 248 KiB per AIV, L1, L0A/L0B, L0C, FB, BT, MX scales; sizes
// from the SoC table), the intra-core sync state (flags, mutex owners) and the cross-core
// counters. A tile is a typed view at a byte address in one of these arrays, so aliasing views
// behave as on hardware. A block's AIC can name its AIVs' UBs and an AIV its AIC's buffers.
//
// Faults. Every instruction records "op + kernel.cpp line" in the core's `OpRecord` (shared
// memory when the launcher provides it) before running; a bad access, a sync misuse or
// `trap()` throws `Fault`, which ends the launch with that report. A hard crash (SIGSEGV) is
// reported from the record by the process that watches the worker.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "config.hpp"

namespace pto {
enum class TileType { Vec, Mat, Left, Right, Acc, Bias, Scaling, ScaleLeft, ScaleRight };
}  // namespace pto

namespace pypto_native {

using pto::TileType;
constexpr int kSpaces = 9;

inline const char* space_name(TileType t)
{
    static const char* names[] = {"Vec", "Mat", "Left", "Right", "Acc", "Bias", "Scaling",
                                  "ScaleLeft", "ScaleRight"};
    return names[static_cast<int>(t)];
}

//! Fault kinds, in the order the Python side maps them to error classes.
enum class FaultKind : int { Trap = 1, Sync = 2, Deadlock = 3, Abort = 4 };

struct Fault {
    FaultKind kind;
    std::string message;
    int line;
};

//! What a core is doing now (read by the watcher after a crash). Plain data, shared memory.
struct OpRecord {
    char op[40];
    int32_t line;
    int32_t block;
    int32_t kind;  // 0 AIC, 1 AIV
    int32_t subblock;
    int32_t active;
    int32_t pad;
};

enum CoreKind : int { AIC = 0, AIV = 1 };

//! The on-chip buffers of one physical core.
struct CoreMemory {
    std::vector<uint8_t> buf[kSpaces];
    bool filled = false;
};

//! One physical placement: one AIV, one AIC, or (mix) one AIC with its two AIVs.
struct SlotMemory {
    CoreMemory aic;
    CoreMemory aiv[2];
};

struct BlockState;

struct CoreCtx {
    int kind = AIV;
    int block_idx = 0;  // the hardware block index (mix: the AI core's block)
    int block_num = 1;
    int subblock_id = 0;
    int subblock_dim = 1;
    bool mix = false;
    int record_index = 0;
    CoreMemory* own = nullptr;
    CoreMemory* aic = nullptr;     // the block's AIC memory (mix) or own (AIC)
    CoreMemory* aiv[2] = {nullptr, nullptr};
    BlockState* block = nullptr;
    OpRecord* rec = nullptr;
    uint8_t flags[kPipes][kPipes][kEvents] = {};
    int mutex_owner[kMutexIds];
    int mutex_line[kMutexIds];
    std::string printed;
    int64_t ar = 0;  // AR special register (bytes of the last squeeze)
    bool atomic_add = false;
    bool mask_count_mode = false;
    uint64_t vector_mask[2] = {~0ULL, ~0ULL};
    std::map<int64_t, int64_t> ctrl_spr;
    std::map<const void*, int> unit_flags;  // L0C tile → its unit-flag handshake state (cube.hpp)
    int64_t saturation = 0;

    CoreCtx() { std::fill(mutex_owner, mutex_owner + kMutexIds, -1); }

    const char* label_kind() const
    {
        if (kind == AIC) return "AIC";
        return mix ? (subblock_id == 0 ? "AIV0" : "AIV1") : "AIV";
    }
};

inline thread_local CoreCtx* tl_core = nullptr;

inline CoreCtx& ctx()
{
    static CoreCtx host_ctx;  // code run outside a launch (tests of the headers)
    return tl_core ? *tl_core : host_ctx;
}

//! set when the launch must stop (a fault elsewhere, a deadlock); checked at every op
inline std::atomic<bool>& abort_flag()
{
    static std::atomic<bool> f{false};
    return f;
}

[[noreturn]] inline void raise_fault(FaultKind kind, int line, const char* fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    throw Fault{kind, buf, line};
}

inline std::string where()
{
    const CoreCtx& c = ctx();
    char buf[64];
    std::snprintf(buf, sizeof buf, "block %d %s", c.block_idx, c.label_kind());
    return buf;
}

//! The unit-flag handshake a phased matmul (AccPhase) or Acc store (STPhase) turns on (docs:
//! phase.md), checked as the simulator checks it (sim/frontend/unit_flag.py): a phased matmul
//! waits for the accumulator's flag to be 0, a Final one sets it; a phased store waits for 1,
//! a Final one clears it. The orders that hang the hardware are faults here; the values need
//! nothing (ops run in program order).
enum UnitFlag : int { kUnitNone, kUnitPartial, kUnitWritten, kUnitReading, kUnitReleased };

inline void unit_flag(const void* acc, bool cube, bool final, const char* op, int line)
{
    int& state = ctx().unit_flags[acc];
    if (cube) {
        if (state == kUnitWritten || state == kUnitReading) {
            raise_fault(FaultKind::Sync, line, "%s: %s with a phase waits for the accumulator's "
                        "unit flag to be 0, but a matmul with pl.AccPhase.Final set it and no "
                        "store with pl.STPhase.Final has cleared it: the hardware waits for ever",
                        where().c_str(), op);
        }
        state = final ? kUnitWritten : kUnitPartial;
        return;
    }
    if (state != kUnitWritten && state != kUnitReading) {
        raise_fault(FaultKind::Sync, line, "%s: %s with a phase waits for the accumulator's unit "
                    "flag to be 1, which only a matmul with pl.AccPhase.Final sets, and none did "
                    "since the flag was last cleared: the hardware waits for ever",
                    where().c_str(), op);
    }
    state = final ? kUnitReleased : kUnitReading;
}

[[noreturn]] inline void stop_for_abort() { throw Fault{FaultKind::Abort, "", 0}; }

//! Called by every instruction before it runs.
inline void record(const char* op, const Loc& loc)
{
    CoreCtx& c = ctx();
    if (c.rec != nullptr) {
        std::strncpy(c.rec->op, op, sizeof c.rec->op - 1);
        c.rec->line = loc.line;
    }
    if (abort_flag().load(std::memory_order_relaxed)) stop_for_abort();
}

// ------------------------------------------------------------------ memory sizes

struct SocConfig {
    int64_t sizes[kSpaces] = {253952, 524288, 65536, 65536, 262144, 4096, 6144, 4096, 4096};
    int aic_cores = 32;
    int aiv_cores = 64;
};

inline SocConfig& soc()
{
    static SocConfig s;
    return s;
}

//! never-written on-chip memory reads as the simulator's garbage pattern (DE AD BE EF)
inline void fill_garbage(std::vector<uint8_t>& v, int64_t size)
{
    static const uint8_t pattern[4] = {0xDE, 0xAD, 0xBE, 0xEF};
    v.resize(static_cast<size_t>(size));
    uint32_t word;
    std::memcpy(&word, pattern, 4);
    const int64_t words = size / 4;
    for (int64_t i = 0; i < words; ++i) std::memcpy(v.data() + 4 * i, &word, 4);
    for (int64_t i = words * 4; i < size; ++i) v[i] = pattern[i & 3];
}

inline void prepare(CoreMemory& m, bool cube)
{
    if (m.filled) return;
    for (int s = 0; s < kSpaces; ++s) {
        const bool is_cube_space = s != static_cast<int>(TileType::Vec);
        if (is_cube_space == cube) fill_garbage(m.buf[s], soc().sizes[s]);
    }
    m.filled = true;
}

//! The memory holding `space` for the current core (`vec_target`: which AIV's UB the cube
//! means; -1 = AIV0).
inline CoreMemory* memory_for(TileType space, int vec_target = -1)
{
    CoreCtx& c = ctx();
    if (space == TileType::Vec) {
        if (c.kind == AIV) return c.own;
        if (!c.mix) return nullptr;
        return c.aiv[vec_target < 0 ? 0 : vec_target];
    }
    if (c.kind == AIC) return c.own;
    return c.mix ? c.aic : nullptr;
}

inline uint8_t* space_base(TileType space, int64_t& size, int vec_target = -1)
{
    CoreMemory* m = memory_for(space, vec_target);
    if (m == nullptr || m->buf[static_cast<int>(space)].empty()) {
        size = 0;
        return nullptr;
    }
    auto& b = m->buf[static_cast<int>(space)];
    size = static_cast<int64_t>(b.size());
    return b.data();
}

//! byte offset of an address given either as an offset or as a host pointer into a buffer
inline uint64_t address_offset(TileType space, uint64_t value)
{
    int64_t size = 0;
    uint8_t* base = space_base(space, size);
    if (base != nullptr) {
        const uint64_t b = reinterpret_cast<uint64_t>(base);
        if (value >= b && value < b + static_cast<uint64_t>(size) + 1) return value - b;
    }
    CoreCtx& c = ctx();
    CoreMemory* all[] = {c.own, c.aic, c.aiv[0], c.aiv[1]};
    for (CoreMemory* m : all) {
        if (m == nullptr) continue;
        const auto& v = m->buf[static_cast<int>(space)];
        const uint64_t b = reinterpret_cast<uint64_t>(v.data());
        if (!v.empty() && value >= b && value <= b + v.size()) return value - b;
    }
    return value;
}

}  // namespace pypto_native
