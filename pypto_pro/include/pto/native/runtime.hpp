// PyPTO Pro native backend: the launch — core threads, block waves, blocking cross-core sync.
//
// call_kernel.cpp launches with `PYPTO_NATIVE_LAUNCH(K, blockDim, nullptr, stream)(args)` when
// the macro is defined (here; on the NPU it is `K<<<...>>>(args)`), which hands the entry
// and its arguments to the launch being assembled (one entry per target: the cube section and
// the vector section are compiled in two namespaces of one translation unit). `run()` then
// starts one host thread per core instance of a slot (AIV-only: 1 AIV; AIC-only: 1 AIC; mix:
// AIC + AIV0 + AIV1), min(block_dim, cores) slots, and each slot runs blocks in waves.
//
// Cross-core counters (`set/wait_intra_block`, FFTS flags, `sync_all`) really block, on one
// mutex + condition variable. A thread about to block first checks whether every unfinished
// core is blocked too: then the launch can never finish and it stops with a deadlock report
// naming each core and what it waits for (never a hang).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstring>
#include <condition_variable>
#include <functional>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "context.hpp"

namespace pypto_native {

constexpr int64_t kSsbufBytes = 4096;

struct BlockState {
    int index = 0;
    int64_t xcount[3][kCrossIds] = {};  // per core of the block: AIC, AIV0, AIV1
    // INTER_SUBBLOCK is a barrier of the block's two AIVs: the sets of each, and how many
    // barriers each has passed (a wait needs one more set from both)
    int64_t subblock_sets[2][kCrossIds] = {};
    int64_t subblock_passed[2][kCrossIds] = {};
    int64_t inter_passed[3][kCrossIds] = {};  // INTER_BLOCK barriers passed, per core (slot)
    alignas(8) uint8_t ssbuf[kSsbufBytes] = {};  // the SuperScalar buffer shared by the block's cores
};

struct Waiter {
    std::string core;
    std::string what;
    int line = 0;
    std::function<bool()> ready;
};

class Launch {
public:
    std::mutex mu;
    std::condition_variable cv;
    int active = 0;  // core instances currently running a block
    int pending_blocks = 0;
    std::map<int, Waiter> waiting;  // record index -> what it waits for
    // INTER_BLOCK is a barrier of every core of a kind: the sets of each core (setter index
    // = block, or block * 2 + subblock for a mix kernel's AIVs), per kind AIC / AIV and id
    std::vector<int64_t> inter_sets[2];
    std::map<int, std::pair<int64_t, int64_t>> sync_rounds;  // core type -> (arrivals, rounds)
    std::map<int, std::map<int, int64_t>> sync_arrived;  // core type -> record -> arrivals
    bool failed = false;
    Fault fault{FaultKind::Trap, "", 0};
    int block_dim = 1;
    std::string kernel_type = "aiv";

    //! record the first fault and make every other core stop
    void fail(const Fault& f)
    {
        std::lock_guard<std::mutex> g(mu);
        fail_locked(f);
    }

    void fail_locked(const Fault& f)
    {
        if (!failed) {
            failed = true;
            fault = f;
        }
        abort_flag().store(true);
        cv.notify_all();
    }

    //! block until `ready()` holds (called with `lk` held); a deadlock when nobody can move
    template <typename Ready>
    void wait(std::unique_lock<std::mutex>& lk, Ready ready, const std::string& what, int line)
    {
        if (failed) stop_for_abort();
        if (ready()) return;
        CoreCtx& c = ctx();
        waiting[c.record_index] = Waiter{where(), what, line, ready};
        check_deadlock();
        cv.wait(lk, [&] { return failed || ready(); });
        waiting.erase(c.record_index);
        if (failed) stop_for_abort();
    }

    //! every running core waits and no wait can be satisfied: report instead of hanging
    void check_deadlock()
    {
        if (failed || active == 0 || static_cast<int>(waiting.size()) < active) return;
        for (auto& kv : waiting) {
            if (kv.second.ready && kv.second.ready()) return;
        }
        std::string msg = "the launch can never finish: every running core waits";
        for (auto& kv : waiting) {
            msg += "\n  " + kv.second.core + ": " + kv.second.what;
            if (kv.second.line > 0) msg += " (kernel.cpp:" + std::to_string(kv.second.line) + ")";
        }
        if (pending_blocks > 0) {
            msg += "\n  " + std::to_string(pending_blocks) + " block(s) not started (no free core)";
        }
        fail_locked(Fault{FaultKind::Deadlock, msg,
                          waiting.empty() ? 0 : waiting.begin()->second.line});
    }

    void notify() { cv.notify_all(); }
};

inline Launch*& current_launch()
{
    static Launch* l = nullptr;
    return l;
}

// ------------------------------------------------------------------ the launcher API

//! shared-memory records the watcher reads after a crash (optional)
struct StatusArea {
    OpRecord* records = nullptr;
    int capacity = 0;
    volatile int32_t* crashed = nullptr;  // record index of the faulting thread, or -1
};

inline StatusArea& status_area()
{
    static StatusArea s;
    return s;
}

inline std::map<int, std::string>& printed_blocks()
{
    static std::map<int, std::string> p;
    return p;
}

inline Fault& last_fault()
{
    static Fault f{FaultKind::Trap, "", 0};
    return f;
}

inline bool& last_failed()
{
    static bool b = false;
    return b;
}

using Entry = std::function<void()>;

struct PendingLaunch {
    Entry cube;
    Entry vector;
    uint32_t block_dim = 0;
};

inline PendingLaunch& pending()
{
    static PendingLaunch p;
    return p;
}

//! `PYPTO_NATIVE_LAUNCH(K, bd, dyn, stream)(args...)`: remember the entry for this target
template <typename Fn>
struct Binder {
    Fn fn;
    int target;  // 0 cube, 1 vector
    uint32_t block_dim;
    template <typename... A>
    void operator()(A... args) const
    {
        Fn f = fn;
        Entry e = [f, args...]() { f(args...); };
        if (target == 0) {
            pending().cube = e;
        } else {
            pending().vector = e;
        }
        pending().block_dim = block_dim;
    }
};

template <typename Fn>
inline Binder<Fn> bind_launch(Fn fn, int target, uint32_t block_dim)
{
    return Binder<Fn>{fn, target, block_dim};
}

// ------------------------------------------------------------------ running a launch

//! Host threads kept across launches: `run(n, task)` runs task(0..n-1) concurrently (the tasks
//! block on each other, so each gets its own thread) and returns when all have finished.
class ThreadPool {
public:
    void run(int n, const std::function<void(int)>& task)
    {
        if (n == 1) {  // a single core instance runs on the calling thread
            task(0);
            return;
        }
        std::unique_lock<std::mutex> lk(mu_);
        while (static_cast<int>(threads_.size()) < n) {
            const int index = static_cast<int>(threads_.size());
            threads_.emplace_back([this, index] { loop(index); });
        }
        task_ = &task;
        count_ = n;
        done_ = 0;
        ++generation_;
        cv_.notify_all();
        done_cv_.wait(lk, [&] { return done_ == count_; });
        task_ = nullptr;
    }

    ~ThreadPool()
    {
        {
            std::lock_guard<std::mutex> g(mu_);
            stop_ = true;
            ++generation_;
        }
        cv_.notify_all();
        for (auto& t : threads_) t.join();
    }

private:
    std::mutex mu_;
    std::condition_variable cv_, done_cv_;
    std::vector<std::thread> threads_;
    const std::function<void(int)>* task_ = nullptr;
    int count_ = 0, done_ = 0;
    uint64_t generation_ = 0;
    bool stop_ = false;

    void loop(int index)
    {
        uint64_t seen = 0;
        while (true) {
            const std::function<void(int)>* task;
            {
                std::unique_lock<std::mutex> lk(mu_);
                cv_.wait(lk, [&] { return stop_ || (generation_ != seen && index < count_); });
                if (stop_) return;
                seen = generation_;
                task = task_;
            }
            (*task)(index);
            std::lock_guard<std::mutex> g(mu_);
            if (++done_ == count_) done_cv_.notify_all();
        }
    }
};

inline ThreadPool& pool()
{
    static ThreadPool p;
    return p;
}

struct SlotState {
    SlotMemory memory;
    int block = -1;
    int generation = 0;
    int remaining = 0;  // cores of the slot still running its block
};

inline void end_core_checks(CoreCtx& c)
{
    for (int id = 0; id < kMutexIds; ++id) {
        if (c.mutex_owner[id] >= 0) {
            raise_fault(FaultKind::Sync, c.mutex_line[id], "%s: get_buf(%s, %d) is never released "
                        "(unpaired lock at the end of the kernel)", where().c_str(),
                        pipe_name(c.mutex_owner[id]), id);
        }
    }
}

class Runner {
public:
    Runner(const std::string& kernel_type, uint32_t block_dim)
        : kind_(kernel_type), block_dim_(static_cast<int>(block_dim)),
          mix_(kernel_type == "mix"), per_slot_(kernel_type == "mix" ? 3 : 1) {}

    void run(const Entry& cube, const Entry& vector)
    {
        Launch launch;
        launch.block_dim = block_dim_;
        launch.kernel_type = kind_;
        current_launch() = &launch;
        abort_flag().store(false);
        printed_blocks().clear();
        last_failed() = false;
        const int cores = kind_ == "aiv" ? soc().aiv_cores : soc().aic_cores;
        const int n_slots = std::max(1, std::min(block_dim_, std::max(1, cores)));
        blocks_.assign(static_cast<size_t>(block_dim_), BlockState{});
        printed_.assign(static_cast<size_t>(block_dim_ * per_slot_), std::string());
        next_block_ = 0;
        launch.pending_blocks = block_dim_;
        slots_.clear();
        for (int s = 0; s < n_slots; ++s) {
            slots_.emplace_back(new SlotState());
            assign_next(launch, *slots_.back());
        }
        pool().run(n_slots * per_slot_, [&](int i) {
            const int s = i / per_slot_, k = i % per_slot_;
            const bool vec = kind_ == "aiv" || (mix_ && k > 0);
            core_loop(launch, s, k, vec ? vector : cube);
        });
        for (int b = 0; b < block_dim_; ++b) {
            std::string text;
            for (int k = 0; k < per_slot_; ++k) text += printed_[static_cast<size_t>(b * per_slot_ + k)];
            if (!text.empty()) printed_blocks()[b] = text;
        }
        last_failed() = launch.failed;
        last_fault() = launch.fault;
        current_launch() = nullptr;
        abort_flag().store(false);
    }

private:
    std::string kind_;
    int block_dim_;
    bool mix_;
    int per_slot_;
    std::vector<std::unique_ptr<SlotState>> slots_;
    std::vector<BlockState> blocks_;
    std::vector<std::string> printed_;
    int next_block_ = 0;

    //! under launch.mu: the slot's next block (-1: none left), counted active at once
    void assign_next(Launch& launch, SlotState& slot)
    {
        if (!launch.failed && next_block_ < block_dim_) {
            slot.block = next_block_++;
            launch.pending_blocks -= 1;
            launch.active += per_slot_;
        } else {
            slot.block = -1;
        }
        slot.remaining = per_slot_;
        ++slot.generation;
    }

    void core_loop(Launch& launch, int s, int k, const Entry& entry)
    {
        SlotState& slot = *slots_[static_cast<size_t>(s)];
        const int record = s * per_slot_ + k;
        int gen = 0;
        while (true) {
            int b;
            {
                std::unique_lock<std::mutex> lk(launch.mu);
                launch.cv.wait(lk, [&] { return slot.generation > gen; });
                gen = slot.generation;
                b = slot.block;
            }
            if (b < 0) break;
            run_block(launch, slot, record, k, b, entry);
            std::lock_guard<std::mutex> g(launch.mu);
            launch.active -= 1;
            if (--slot.remaining == 0) assign_next(launch, slot);
            launch.check_deadlock();
            launch.notify();
        }
    }

    void run_block(Launch& launch, SlotState& slot, int record, int k, int b, const Entry& entry)
    {
        CoreCtx c;
        c.kind = (kind_ == "aiv" || (mix_ && k > 0)) ? AIV : AIC;
        c.mix = mix_;
        c.block_idx = b;
        c.block_num = block_dim_;
        c.subblock_id = mix_ ? std::max(0, k - 1) : 0;
        c.subblock_dim = (mix_ && c.kind == AIV) ? 2 : 1;
        c.record_index = record;
        c.block = &blocks_[static_cast<size_t>(b)];
        c.block->index = b;
        SlotMemory& m = slot.memory;
        c.aic = &m.aic;
        c.aiv[0] = &m.aiv[0];
        c.aiv[1] = &m.aiv[1];
        c.own = c.kind == AIC ? &m.aic : &m.aiv[mix_ ? c.subblock_id : 0];
        {
            std::lock_guard<std::mutex> g(launch.mu);  // slot memories are shared in a block
            prepare(*c.own, c.kind == AIC);
            if (mix_) {
                prepare(m.aic, true);
                prepare(m.aiv[0], false);
                prepare(m.aiv[1], false);
            }
        }
        StatusArea& st = status_area();
        if (st.records != nullptr && record < st.capacity) {
            c.rec = &st.records[record];
            std::memset(c.rec, 0, sizeof(OpRecord));
            c.rec->block = b;
            c.rec->kind = c.kind;
            c.rec->subblock = c.subblock_id;
            c.rec->active = 1;
        }
        tl_core = &c;
        try {
            entry();
            end_core_checks(c);
        } catch (const Fault& f) {
            if (f.kind != FaultKind::Abort) launch.fail(f);
        } catch (const std::exception& e) {
            launch.fail(Fault{FaultKind::Trap, where() + ": " + e.what(),
                              c.rec ? c.rec->line : 0});
        }
        tl_core = nullptr;
        if (c.rec != nullptr) c.rec->active = 0;
        printed_[static_cast<size_t>(b * per_slot_ + k)] += c.printed;
    }
};

}  // namespace pypto_native

//! the host form of call_kernel.cpp's `<<<>>>` launch
#define PYPTO_NATIVE_LAUNCH(fn, block_dim, dyn, stream) \
    ::pypto_native::bind_launch(&fn, PYPTO_NATIVE_TARGET, (block_dim))
