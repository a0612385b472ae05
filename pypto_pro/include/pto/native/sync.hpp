// PyPTO Pro native backend: CCE synchronisation (flags, buffer mutexes, cross-core, sync_all).
//
// Intra-core: the pipes of one core run in program order on its thread, so `set_flag` /
// `wait_flag` / `get_buf` / `rls_buf` only check pairing, exactly where the hardware would
// misbehave: a second set of a flag before its wait (the flag is one bit), a wait with no set
// before it, a second get_buf of an id on the pipe holding it (hangs the hardware), a get_buf
// while another pipe still holds the id (its release comes later in program order), a release
// without a lock, and (at the end of the kernel) a lock never released. Each report names the
// kernel.cpp line. Cross-core: counters per core that really block (runtime.hpp):
// `set_intra_block(pipe, id)` from the cube signals AIV(id / 16) at id % 16, from AIV s the
// cube at id + 16 s; a wait blocks until its counter is positive and decrements it. FFTS
// flags INTER_BLOCK / INTER_SUBBLOCK are barriers of every core of the kind / of the block's
// two AIVs (as the simulator models them); `SYNCALL` is a barrier.
#pragma once

#include <algorithm>
#include <cstring>
#include <mutex>
#include <string>

#include "runtime.hpp"

namespace pto {
enum class SyncAllMode : uint8_t { Hard = 0, Soft = 1 };
enum class SyncCoreType : uint8_t { AIVOnly = 0, AICOnly = 1, Mix = 2 };
}  // namespace pto

namespace pypto_native {

inline void check_pipe(int p, const char* op, int line)
{
    if (p < 0 || p >= kPipes) raise_fault(FaultKind::Sync, line, "%s: %s: bad pipe %d",
                                          where().c_str(), op, p);
}

inline void check_id(int64_t id, int64_t limit, const char* op, int line)
{
    if (id < 0 || id >= limit) {
        raise_fault(FaultKind::Sync, line, "%s: %s: id %lld is outside 0..%lld", where().c_str(),
                    op, static_cast<long long>(id), static_cast<long long>(limit - 1));
    }
}

inline Launch& launch_or_fault(const char* op, int line)
{
    Launch* l = current_launch();
    if (l == nullptr) raise_fault(FaultKind::Sync, line, "%s outside a launch", op);
    return *l;
}

inline void need_mix(const char* op, int line)
{
    if (!ctx().mix) {
        raise_fault(FaultKind::Sync, line, "%s: %s: intra-block cross-core sync needs a mix kernel "
                    "(both a section_cube and a section_vector)", where().c_str(), op);
    }
}

inline int own_slot() { return ctx().kind == AIC ? 0 : 1 + ctx().subblock_id; }

inline void counter_set(int64_t& counter)
{
    ++counter;
}

template <typename Ready, typename Take>
inline void counter_wait(const char* op, const std::string& what, int line, Ready ready, Take take)
{
    Launch& l = launch_or_fault(op, line);
    std::unique_lock<std::mutex> lk(l.mu);
    l.wait(lk, ready, what, line);
    take();
}

}  // namespace pypto_native

// ------------------------------------------------------------------ intra-core

inline void set_flag(pipe_t src, pipe_t dst, event_t id, pypto_native::Loc loc = pypto_native::Loc::here())
{
    using namespace pypto_native;
    record("set_flag", loc);
    check_pipe(src, "set_flag", loc.line);
    check_pipe(dst, "set_flag", loc.line);
    check_id(id, kEvents, "set_flag", loc.line);
    uint8_t& f = ctx().flags[src][dst][id];
    if (f) {
        raise_fault(FaultKind::Sync, loc.line, "%s: set_flag(%s, %s, EVENT_ID%d) set twice before its "
                    "wait_flag (the flag is one bit)", where().c_str(), pipe_name(src),
                    pipe_name(dst), static_cast<int>(id));
    }
    f = 1;
}

inline void wait_flag(pipe_t src, pipe_t dst, event_t id, pypto_native::Loc loc = pypto_native::Loc::here())
{
    using namespace pypto_native;
    record("wait_flag", loc);
    check_pipe(src, "wait_flag", loc.line);
    check_pipe(dst, "wait_flag", loc.line);
    check_id(id, kEvents, "wait_flag", loc.line);
    uint8_t& f = ctx().flags[src][dst][id];
    if (!f) {
        raise_fault(FaultKind::Sync, loc.line, "%s: wait_flag(%s, %s, EVENT_ID%d) has no set_flag "
                    "before it in program order (the waiting pipe would never resume)",
                    where().c_str(), pipe_name(src), pipe_name(dst), static_cast<int>(id));
    }
    f = 0;
}

inline void pipe_barrier(pipe_t p, pypto_native::Loc loc = pypto_native::Loc::here())
{
    pypto_native::record("pipe_barrier", loc);
    pypto_native::check_pipe(p, "pipe_barrier", loc.line);
}

inline void get_buf(pipe_t p, int64_t id, int64_t mode = 0,
                    pypto_native::Loc loc = pypto_native::Loc::here())
{
    using namespace pypto_native;
    (void)mode;
    record("get_buf", loc);
    check_pipe(p, "get_buf", loc.line);
    check_id(id, kMutexIds, "get_buf", loc.line);
    CoreCtx& c = ctx();
    const int owner = c.mutex_owner[id];
    if (owner == p) {
        raise_fault(FaultKind::Sync, loc.line, "%s: get_buf(%s, %lld) while %s already holds it "
                    "(kernel.cpp:%d): a second lock on the same pipe hangs the hardware",
                    where().c_str(), pipe_name(p), static_cast<long long>(id), pipe_name(p),
                    c.mutex_line[id]);
    }
    if (owner >= 0) {
        raise_fault(FaultKind::Sync, loc.line, "%s: get_buf(%s, %lld) while %s holds it since "
                    "kernel.cpp:%d: its rls_buf comes later in program order, so the native "
                    "backend cannot order the two pipes", where().c_str(), pipe_name(p),
                    static_cast<long long>(id), pipe_name(owner), c.mutex_line[id]);
    }
    c.mutex_owner[id] = p;
    c.mutex_line[id] = loc.line;
}

inline void rls_buf(pipe_t p, int64_t id, int64_t mode = 0,
                    pypto_native::Loc loc = pypto_native::Loc::here())
{
    using namespace pypto_native;
    (void)mode;
    record("rls_buf", loc);
    check_pipe(p, "rls_buf", loc.line);
    check_id(id, kMutexIds, "rls_buf", loc.line);
    CoreCtx& c = ctx();
    if (c.mutex_owner[id] != p) {
        raise_fault(FaultKind::Sync, loc.line, "%s: rls_buf(%s, %lld) without a matching get_buf "
                    "on that pipe (unpaired unlock)", where().c_str(), pipe_name(p),
                    static_cast<long long>(id));
    }
    c.mutex_owner[id] = -1;
}

// ------------------------------------------------------------------ cross-core (a5)

inline void set_intra_block(pipe_t p, int64_t id, pypto_native::Loc loc = pypto_native::Loc::here())
{
    using namespace pypto_native;
    record("set_intra_block", loc);
    check_pipe(p, "set_intra_block", loc.line);
    check_id(id, kCrossIds, "set_intra_block", loc.line);
    need_mix("set_intra_block", loc.line);
    Launch& l = launch_or_fault("set_intra_block", loc.line);
    CoreCtx& c = ctx();
    std::lock_guard<std::mutex> g(l.mu);
    if (c.kind == AIC) {
        counter_set(c.block->xcount[1 + id / 16][id % 16]);
    } else {
        if (id >= 16) {
            raise_fault(FaultKind::Sync, loc.line, "%s: set_intra_block id %lld: a vector core "
                        "signals ids 0..15", where().c_str(), static_cast<long long>(id));
        }
        counter_set(c.block->xcount[0][id + 16 * c.subblock_id]);
    }
    l.notify();
}

inline void wait_intra_block(pipe_t p, int64_t id, pypto_native::Loc loc = pypto_native::Loc::here())
{
    using namespace pypto_native;
    record("wait_intra_block", loc);
    check_pipe(p, "wait_intra_block", loc.line);
    check_id(id, kCrossIds, "wait_intra_block", loc.line);
    need_mix("wait_intra_block", loc.line);
    int64_t& counter = ctx().block->xcount[own_slot()][id];
    const std::string what = std::string("wait_intra_block(") + pipe_name(p) + ", " +
                             std::to_string(id) + ")";
    counter_wait("wait_intra_block", what, loc.line, [&] { return counter > 0; },
                 [&] { --counter; });
}

inline uint64_t getFFTSMsg(int64_t mode, int64_t id, int64_t base = 1)
{
    return static_cast<uint64_t>((base & 0xf) | ((mode & 3) << 4) | ((id & 0xf) << 8));
}

inline void set_ffts_base_addr(uint64_t) {}

namespace pypto_native {

//! INTER_BLOCK scope of the calling core: (setter count, this core's setter index)
inline std::pair<int, int> inter_scope(const Launch& l, const CoreCtx& c)
{
    if (c.kind == AIV && c.mix) return {l.block_dim * 2, c.block_idx * 2 + c.subblock_id};
    return {l.block_dim, c.block_idx};
}

inline std::vector<int64_t>& inter_sets(Launch& l, int kind, int setters)
{
    std::vector<int64_t>& sets = l.inter_sets[kind];
    if (sets.empty()) sets.assign(static_cast<size_t>(setters) * kCrossIds, 0);
    return sets;
}

}  // namespace pypto_native

//! FFTS signals. Modes 0 (INTER_BLOCK) and 1 (INTER_SUBBLOCK) are barriers: a wait after them
//! resumes once every core of the scope (all cores of the kind / the block's two AIVs) has set
//! the id one more time than the barriers this core passed; mode 2 is a2/a3's AIC <-> AIV.
inline void ffts_cross_core_sync(pipe_t p, uint64_t msg, pypto_native::Loc loc = pypto_native::Loc::here())
{
    using namespace pypto_native;
    record("ffts_cross_core_sync", loc);
    check_pipe(p, "ffts_cross_core_sync", loc.line);
    const int mode = static_cast<int>((msg >> 4) & 3);
    const int id = static_cast<int>((msg >> 8) & 0xf);
    Launch& l = launch_or_fault("ffts_cross_core_sync", loc.line);
    CoreCtx& c = ctx();
    std::lock_guard<std::mutex> g(l.mu);
    if (mode == 1 && c.kind == AIV && c.mix) {
        counter_set(c.block->subblock_sets[c.subblock_id][id]);
    } else if (mode == 2 && c.mix) {  // a2/a3 intra-block: AIC <-> both AIVs
        if (c.kind == AIC) {
            counter_set(c.block->xcount[1][id]);
            counter_set(c.block->xcount[2][id]);
        } else {
            counter_set(c.block->xcount[0][id + 16 * c.subblock_id]);
        }
    } else {
        const auto scope = inter_scope(l, c);
        counter_set(inter_sets(l, c.kind, scope.first)[scope.second * kCrossIds + id]);
    }
    l.notify();
}

//! The sync mode is not part of the wait: it takes whichever signal is complete, the
//! block-local ones first (AIV: the INTER_SUBBLOCK barrier or the a2/a3 intra-block counter;
//! AIC: the intra-block pair, one signal from each AIV), then the INTER_BLOCK barrier.
inline void wait_flag_dev_impl(int64_t id, int line)
{
    using namespace pypto_native;
    check_id(id, 16, "wait_flag_dev", line);
    Launch& l = launch_or_fault("wait_flag_dev", line);
    CoreCtx& c = ctx();
    int64_t* first = nullptr;   // AIC: the AIV0 half of the pair
    int64_t* second = nullptr;  // AIV: its intra-block counter; AIC: the AIV1 half
    if (c.mix && c.kind == AIV) {
        second = &c.block->xcount[own_slot()][id];
    } else if (c.mix) {
        first = &c.block->xcount[0][id];
        second = &c.block->xcount[0][id + 16];
    }
    const bool pair = c.mix && c.kind == AIC;
    const bool subblock = c.mix && c.kind == AIV;
    int64_t* sub_passed = subblock ? &c.block->subblock_passed[c.subblock_id][id] : nullptr;
    int64_t& inter_passed = c.block->inter_passed[own_slot()][id];
    const int setters = inter_scope(l, c).first;
    auto local_ready = [&] {
        if (second == nullptr) return false;
        return pair ? (*first > 0 && *second > 0) : *second > 0;
    };
    auto sub_ready = [&] {
        return subblock && std::min(c.block->subblock_sets[0][id], c.block->subblock_sets[1][id]) >
                               *sub_passed;
    };
    auto inter_ready = [&] {
        const std::vector<int64_t>& sets = inter_sets(l, c.kind, setters);
        for (int s = 0; s < setters; ++s) {
            if (sets[static_cast<size_t>(s) * kCrossIds + id] <= inter_passed) return false;
        }
        return true;
    };
    counter_wait("wait_flag_dev", "wait_flag_dev(" + std::to_string(id) + ")", line,
                 [&] { return sub_ready() || local_ready() || inter_ready(); },
                 [&] {
                     if (sub_ready()) {
                         ++*sub_passed;
                     } else if (local_ready()) {
                         if (pair) --*first;
                         --*second;
                     } else {
                         ++inter_passed;
                     }
                 });
}

inline void wait_flag_dev(pipe_t p, int64_t id, pypto_native::Loc loc = pypto_native::Loc::here())
{
    pypto_native::record("wait_flag_dev", loc);
    pypto_native::check_pipe(p, "wait_flag_dev", loc.line);
    wait_flag_dev_impl(id, loc.line);
}

inline void wait_flag_dev(int64_t id, pypto_native::Loc loc = pypto_native::Loc::here())
{
    pypto_native::record("wait_flag_dev", loc);
    wait_flag_dev_impl(id, loc.line);
}

namespace pypto_native {

//! `PYPTO_SSBUF(offset, bytes)`: the block's SuperScalar buffer at byte `offset` (AIC <-> AIV
//! scalars; ordering the accesses is the kernel's cross-core sync)
inline uint32_t* ssbuf_words(int64_t offset, int64_t bytes, int line)
{
    if (offset < 0 || offset % 4 != 0 || offset + bytes > kSsbufBytes) {
        raise_fault(FaultKind::Trap, line, "%s: a %lld-byte SuperScalar buffer access at %lld is "
                    "outside the %lld-byte buffer or not word aligned", where().c_str(),
                    static_cast<long long>(bytes), static_cast<long long>(offset),
                    static_cast<long long>(kSsbufBytes));
    }
    return reinterpret_cast<uint32_t*>(ctx().block->ssbuf + offset);
}

}  // namespace pypto_native

#define PYPTO_SSBUF(offset, bytes)                                                        \
    (::pypto_native::ssbuf_words(static_cast<int64_t>(offset), static_cast<int64_t>(bytes), \
                                 __LINE__))

namespace pto {

template <SyncCoreType CT>
inline void sync_all_impl(pypto_native::Loc loc)
{
    using namespace pypto_native;
    record("SYNCALL", loc);
    Launch& l = launch_or_fault("SYNCALL", loc.line);
    CoreCtx& c = ctx();
    const bool mix = l.kernel_type == "mix";
    int64_t members = l.block_dim;
    if (CT == SyncCoreType::Mix) members *= mix ? 3 : 1;
    if (CT == SyncCoreType::AIVOnly) members *= mix ? 2 : 1;
    if ((c.kind == AIC && CT == SyncCoreType::AIVOnly) ||
        (c.kind == AIV && CT == SyncCoreType::AICOnly)) {
        raise_fault(FaultKind::Sync, loc.line, "%s: sync_all(%s) executed by an %s", where().c_str(),
                    CT == SyncCoreType::AIVOnly ? "AIV_ONLY" : "AIC_ONLY",
                    c.kind == AIC ? "AIC" : "AIV");
    }
    const int key = c.block_idx * 3 + (c.kind == AIC ? 0 : 1 + c.subblock_id);
    std::unique_lock<std::mutex> lk(l.mu);
    auto& arrived = l.sync_arrived[static_cast<int>(CT)];
    auto& rounds = l.sync_rounds[static_cast<int>(CT)].second;
    const int64_t mine = ++arrived[key];
    if (static_cast<int64_t>(arrived.size()) == members) {
        int64_t least = mine;
        for (auto& kv : arrived) least = std::min(least, kv.second);
        if (least > rounds) rounds = least;
    }
    l.notify();
    l.wait(lk, [&] { return rounds >= mine; }, "sync_all", loc.line);
}

//! SYNCALL<core type>(): a barrier of every core of the type (pto-isa's hard form)
template <SyncCoreType CoreType = SyncCoreType::AIVOnly>
inline void SYNCALL(pypto_native::Loc loc = pypto_native::Loc::here())
{
    sync_all_impl<CoreType>(loc);
}

//! SYNCALL<mode, core type>(gm workspace, used cores): the soft form polls GM counters on
//! hardware; here every mode is the same barrier
template <SyncAllMode Mode, SyncCoreType CoreType = SyncCoreType::AIVOnly, typename GlobalData,
          std::enable_if_t<is_global_data_v<GlobalData>, int> = 0>
inline void SYNCALL(GlobalData& gmWorkspace, int32_t usedCores = 0,
                    pypto_native::Loc loc = pypto_native::Loc::here())
{
    (void)gmWorkspace, (void)usedCores;
    sync_all_impl<CoreType>(loc);
}

}  // namespace pto
