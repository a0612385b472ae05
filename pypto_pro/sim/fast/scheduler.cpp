// The timed simulator's event engine, compiled (the "stream engine": stream.py records, this
// schedules, replay.py runs the values). It reproduces engine.py + launch.py exactly: the same
// heap of (time, sequence) events pushed by the same calls in the same order, in-order pipes
// with a queue depth, 1-bit flags with the pending-set rule, mutex FIFOs in issue order,
// cross-core counters, pipe barriers, sync_all, blocks started in waves, and the chip's HBM
// FIFO and L2 (memory_system.py; the L2 tag walk is l2_model.cpp, included below). Python
// names are kept where a function mirrors one, so the two can be read side by side.
//
// Input: per block core a stream of records (what its scalar unit did between waits) and a
// table of the instructions they issue. Output: the trace rows in the order Core._event
// appends them, the global order of op starts and finishes, the blocks' start order and
// slots, counters, and an error code. Any error (deadlock, sync misuse) only reports its code:
// the caller then runs the Python engine, which gives the exact message.
#include "l2_model.cpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <queue>
#include <unordered_map>
#include <utility>
#include <vector>

namespace {

// ---- codes shared with stream.py (keep in sync) ----
enum Pipe : int { MTE1 = 0, MTE2 = 1, MTE3 = 2, PM = 3, FIX = 4, PV = 5, PS = 6, NPIPES = 7 };
enum Kind : int { OP = 0, SET_FLAG = 1, WAIT_FLAG = 2, LOCK = 3, UNLOCK = 4, XSET = 5, XWAIT = 6,
                  SCALAR = 7 };
enum Rec : int { R_ISSUE = 0, R_SYNC = 1, R_BARRIER = 2, R_SYNC_ALL = 3, R_END = 4 };
enum RowKind : int { ROW_INSTR = 0, ROW_SYNC = 1, ROW_STALL = 2 };
enum Reason : int { RS_NONE = 0, RS_HBM = 1, RS_FLAG = 2, RS_MUTEX = 3, RS_CROSS = 4,
                    RS_QUEUE = 5, RS_BARRIER = 6, RS_SYNC_ALL = 7 };
enum Role : int { ROLE_NONE = 0, ROLE_SET = 1, ROLE_WAIT = 2 };
enum XMode : int { X_INTRA = 0, X_UNICAST = 1, X_INTER_SUBBLOCK = 2, X_INTER_BLOCK = 3 };
enum Err : int { OK = 0, E_DEADLOCK = 1, E_SET_TWICE = 2, E_UNLOCK = 3, E_PIPE = 4 };
// ids codes of rows: >= 0 a string of the caller's table; these are formatted by the caller
constexpr int64_t IDS_INSTR = -1;         // the instruction's own ids string
constexpr int64_t IDS_BLOCKED = -2;       // the instruction's "blocked" ids (flag / xcore)
constexpr int64_t IDS_MUTEX_BASE = -16;   // - 16 - holder pipe * 2 - same: a mutex stall
constexpr int64_t IDS_QUEUE_BASE = -64;   // - 64 - pipe: "<pipe> full"
constexpr int64_t IDS_BARRIER_BASE = -128;  // - 128 - (pipe + 1): "pipe_barrier(<pipe|ALL>)"
constexpr int64_t IDS_SYNC_ALL = -256;
constexpr int ROW_W = 10, INSTR_W = 10, REC_W = 4;

const int AIC_PIPES[] = {MTE1, MTE2, MTE3, PM, FIX};
const int AIV_PIPES[] = {MTE2, MTE3, PV};

// A row of the caller's instruction table (INSTR_W columns), plus what issue sets. Keys:
// a flag is (k0 src pipe, k1 dst pipe, k2 the key's number), a mutex k0 its number, a
// cross-core sync (k0 mode, k1 id); numbers are the caller's (one per distinct key).
struct Instr {
    int64_t kind = 0, pipe = 0, k0 = 0, k1 = 0, k2 = 0, cycles = 0;
    int64_t gm_n = -1, gm_off = 0, gm_write = 0, storage = 0;  // gm_n -1: no GM side
    int64_t issue_time = 0, seq = 0;
};

int64_t flag_key(const Instr& in) { return in.k2; }

struct Core;
struct PipeQ {
    Core* core = nullptr;
    int kind = 0;
    bool present = false, running = false, scheduled = false;
    std::deque<int64_t> queue;  // instruction indices
    int64_t busy_until = 0;
    bool blocked = false;
    int64_t b_since = 0, b_reason = 0, b_ids = 0;
};

struct MutexReq { int pipe; int64_t instr; };

enum WaitKind : int { W_NONE = 0, W_UNTIL, W_QUEUE, W_FLAG, W_IDLE, W_RELEASED };

struct Core {
    int64_t uid = 0, slot = 0, block = 0, sub = 0, kind = 0;  // kind 0 AIC, 1 AIV
    int64_t stream = 0;  // the stream's index (block * cores per block + position)
    int64_t block_idx = 0;
    PipeQ pipes[NPIPES];
    std::vector<int> order;  // the pipes it has, in engine.py's dict order
    std::vector<Core*> peers;
    int64_t time = 0;
    int64_t pc = 0, pc_end = 0, phase = 0;  // the "generator": a record and a step within it
    int wait = W_NONE;
    int64_t w_arg = 0;  // until: t; queue: pipe; flag: key; idle: barrier pipe (-1 ALL); ct
    bool has_info = false;
    int64_t i_since = 0, i_reason = 0, i_ids = 0, i_instr = -1;
    bool scalar_done = false, done = false;
    int64_t end_time = 0;
    std::unordered_map<int64_t, int64_t> flags;
    std::unordered_map<int64_t, std::deque<int64_t>> flags_pending;
    std::unordered_map<int64_t, int64_t> last_set_seq;  // absent or -1: None
    std::unordered_map<int64_t, std::deque<MutexReq>> mutex;
    std::unordered_map<int64_t, int64_t> xcount;
    int64_t next_seq = 0;
    struct BlockRun* block_run = nullptr;
};

struct BlockRun { int64_t slot; std::vector<Core*> cores; int remaining; };

struct Group {  // launch.py _SyncAllGroup
    int64_t members = 0, rounds = 0;
    std::unordered_map<int64_t, int64_t> arrived;
    std::vector<Core*> cores;  // insertion order of first arrival
};

struct Event {
    int64_t t, seq;
    int type;  // 0 resume, 1 step, 2 finish, 3 start next
    void* who;
    int64_t arg;
    bool operator>(const Event& o) const { return t != o.t ? t > o.t : seq > o.seq; }
};

struct Error { int code; };

struct Sched {
    // configuration
    int64_t kernel_type, block_dim, n_slots, depth, soft_extra, cpb;
    int64_t line, miss_extra;
    double hbm_rate;
    L2* l2;
    const int64_t* rec;
    const int64_t* stream_off;
    std::vector<Instr> instrs;
    const int64_t* lines;
    const int64_t* storage_bytes;
    const int64_t* stream_info;  // per stream: kind, subblock, block_idx
    int64_t group_members[3];
    // state
    int64_t now = 0, seq = 0, flows = 0, instructions = 0;
    std::priority_queue<Event, std::vector<Event>, std::greater<Event>> heap;
    std::deque<Core> cores;  // engine.cores, in creation order (uid)
    std::deque<BlockRun> blocks;
    std::vector<int64_t> pending;  // block indices not started
    size_t pending_at = 0;
    Group groups[3];
    double hbm_free = 0.0;
    std::unordered_map<int64_t, int64_t> base_line;
    int64_t next_line = 0;
    int64_t stats[5] = {0, 0, 0, 0, 0};  // read hits, read misses, write lines, writebacks, hbm
    // output
    std::vector<int64_t> rows, events, started;  // started: (block, slot) pairs

    void push(int64_t t, int type, void* who, int64_t arg = 0) {
        heap.push(Event{t, seq++, type, who, arg});
    }
    void row(const Core& c, int pipe, int rk, int64_t instr, int64_t s, int64_t e, int64_t ids,
             int64_t reason, int64_t flow, int64_t role) {
        const int64_t r[ROW_W] = {c.uid, pipe, rk, instr, s, e, ids, reason, flow, role};
        rows.insert(rows.end(), r, r + ROW_W);
    }

    // ------------------------------------------------------------ launch.py
    void start_next(int64_t slot, int64_t t) {
        if (pending_at >= pending.size()) return;
        const int64_t b = pending[pending_at++];
        started.push_back(b);
        started.push_back(slot);
        blocks.push_back(BlockRun{slot, {}, 0});
        BlockRun& br = blocks.back();
        for (int64_t k = 0; k < cpb; ++k) {
            cores.emplace_back();
            Core& c = cores.back();
            c.uid = static_cast<int64_t>(cores.size()) - 1;
            c.slot = slot;
            c.block = b;
            c.stream = b * cpb + k;
            const int64_t* info = stream_info + 3 * c.stream;
            c.kind = info[0];
            c.sub = info[1];
            c.block_idx = info[2];
            const int* ps = c.kind == 0 ? AIC_PIPES : AIV_PIPES;
            const int np = c.kind == 0 ? 5 : 3;
            for (int j = 0; j < np; ++j) {
                c.pipes[ps[j]].present = true;
                c.pipes[ps[j]].kind = ps[j];
                c.pipes[ps[j]].core = &c;
                c.order.push_back(ps[j]);
            }
            c.pc = stream_off[c.stream];
            c.pc_end = stream_off[c.stream + 1];
            c.block_run = &br;
            br.cores.push_back(&c);
        }
        if (kernel_type == 2) {
            Core* aic = br.cores[0];
            aic->peers = {br.cores[1], br.cores[2]};
            br.cores[1]->peers = {aic};
            br.cores[2]->peers = {aic};
        }
        br.remaining = static_cast<int>(br.cores.size());
        for (Core* c : br.cores) {  // Core.start
            c->time = t;
            push(t, 0, c);
        }
    }

    void on_done(Core& c) {
        BlockRun& br = *c.block_run;
        if (--br.remaining) return;
        int64_t end = 0;
        for (Core* x : br.cores) end = std::max(end, x->end_time);
        push(end, 3, nullptr, br.slot);  // the event's time is `end`: _start_next(slot, end)
    }

    // ------------------------------------------------------------ the scalar unit
    bool pred(Core& c) {
        switch (c.wait) {
            case W_UNTIL: return now >= c.w_arg;
            case W_QUEUE: return static_cast<int64_t>(c.pipes[c.w_arg].queue.size()) < depth;
            case W_FLAG: return c.flags.count(c.w_arg) > 0;
            case W_IDLE: return all_idle(c, c.w_arg);
            case W_RELEASED: {
                Group& g = groups[c.w_arg];
                auto it = g.arrived.find(c.uid);
                return g.rounds >= (it == g.arrived.end() ? 0 : it->second);
            }
        }
        return true;
    }

    bool all_idle(Core& c, int64_t pipe) {
        for (int p : c.order)
            if ((pipe < 0 || p == pipe) && (c.pipes[p].running || !c.pipes[p].queue.empty()))
                return false;
        return true;
    }

    void resume(Core& c) {
        while (true) {
            if (c.wait != W_NONE) {
                if (!pred(c)) return;
                end_scalar_wait(c);
            }
            if (c.time < now) c.time = now;
            const int y = gen_next(c);  // 0 stop, 1 until (w_arg = t), 2 wait (set)
            if (y == 0) {
                c.scalar_done = true;
                check_done(c);
                return;
            }
            if (y == 1) {
                if (c.w_arg > now) {
                    c.wait = W_UNTIL;
                    push(c.w_arg, 0, &c);
                    return;
                }
                c.wait = W_NONE;
                continue;
            }
        }
    }

    void wait_for(Core& c, int kind, int64_t arg, int64_t reason, int64_t ids, int64_t instr) {
        c.wait = kind;
        c.w_arg = arg;
        c.has_info = true;
        c.i_since = c.time;
        c.i_reason = reason;
        c.i_ids = ids;
        c.i_instr = instr;
    }

    void end_scalar_wait(Core& c) {
        if (c.has_info && now > c.i_since)
            row(c, PS, ROW_STALL, c.i_instr, c.i_since, now, c.i_ids, c.i_reason, -1, ROLE_NONE);
        c.wait = W_NONE;
        c.has_info = false;
    }

    // Runs the core's records from where it stopped until its program would yield: 0 when it
    // ends, 1 for ("until", t) with t in w_arg, 2 for a wait (set by wait_for).
    int gen_next(Core& c) {
        while (c.pc < c.pc_end) {
            const int64_t* r = rec + REC_W * c.pc;
            const int64_t type = r[0];
            if (c.phase == 0) c.time += r[1];
            if (type == R_END) {
                ++c.pc;
                return 0;
            }
            if (type == R_ISSUE) {
                const int64_t i = r[2];
                Instr& in = instrs[i];
                if (in.pipe == PS) {
                    const int y = scalar_sync(c, i);
                    if (y) return y;
                } else {
                    PipeQ& p = c.pipes[in.pipe];
                    if (c.phase == 0 && static_cast<int64_t>(p.queue.size()) >= depth) {
                        c.phase = 1;
                        wait_for(c, W_QUEUE, in.pipe, RS_QUEUE, IDS_QUEUE_BASE - in.pipe, i);
                        return 2;
                    }
                    enqueue(c, p, i);
                }
            } else if (type == R_SYNC) {
                if (c.phase == 0 && c.time > now) {
                    c.phase = 1;
                    c.w_arg = c.time;
                    return 1;
                }
            } else {  // R_BARRIER (r[2]: pipe or -1), R_SYNC_ALL (r[2]: core type, r[3]: soft)
                const int64_t bpipe = type == R_BARRIER ? r[2] : -1;
                if (c.phase == 0) {
                    c.phase = 1;
                    if (c.time > now) {
                        c.w_arg = c.time;
                        return 1;
                    }
                }
                if (c.phase == 1) {
                    c.phase = 2;
                    if (!all_idle(c, bpipe)) {
                        wait_for(c, W_IDLE, bpipe, RS_BARRIER, IDS_BARRIER_BASE - (bpipe + 1), -1);
                        return 2;
                    }
                }
                if (c.phase == 2) {
                    c.time = std::max(c.time, now) + 1;
                    if (type == R_SYNC_ALL) {
                        c.phase = 3;
                        arrive(c, r[2]);
                        wait_for(c, W_RELEASED, r[2], RS_SYNC_ALL, IDS_SYNC_ALL, -1);
                        return 2;
                    }
                } else if (c.phase == 3 && r[3]) {
                    c.time = std::max(c.time, now) + soft_extra;
                }
            }
            c.phase = 0;
            ++c.pc;
        }
        return 0;
    }

    int scalar_sync(Core& c, int64_t i) {  // Core._scalar_sync; 0 when done
        Instr& in = instrs[i];
        const int64_t key = flag_key(in);
        if (c.phase == 0) {
            c.phase = 1;
            if (c.time > now) {
                c.w_arg = c.time;
                return 1;
            }
        }
        if (in.kind == WAIT_FLAG) {
            if (c.phase == 1) {
                c.phase = 2;
                if (!c.flags.count(key)) {
                    wait_for(c, W_FLAG, key, RS_FLAG, IDS_BLOCKED, i);
                    return 2;
                }
            }
            const int64_t t = std::max(c.time, now);
            const int64_t flow = take_flag(c, key);
            row(c, PS, ROW_SYNC, i, t, t + 1, IDS_INSTR, RS_NONE, flow, ROLE_WAIT);
            c.time = t + 1;
        } else if (in.kind == SET_FLAG) {
            const int64_t t = std::max(c.time, now);
            const int64_t flow = set_flag(c, i, t);
            row(c, PS, ROW_SYNC, i, t, t + 1, IDS_INSTR, RS_NONE, flow, ROLE_SET);
            c.time = t + 1;
        } else if (in.kind == SCALAR) {  // Core.scalar_work: the scalar unit's own work
            const int64_t t = std::max(c.time, now);
            row(c, PS, ROW_INSTR, i, t, t + in.cycles, IDS_INSTR, RS_NONE, -1, ROLE_NONE);
            c.time = t + in.cycles;
        } else {
            throw Error{E_PIPE};
        }
        return 0;
    }

    void enqueue(Core& c, PipeQ& p, int64_t i) {
        Instr& in = instrs[i];
        in.issue_time = c.time;
        in.seq = c.next_seq++;
        c.time += 1;
        if (in.kind == LOCK) c.mutex[in.k0].push_back(MutexReq{static_cast<int>(in.pipe), i});
        p.queue.push_back(i);
        if (!p.scheduled && !p.running) kick(p);
    }

    void poke(Core& c) {
        if (c.wait != W_NONE && pred(c)) push(now, 0, &c);
        if (c.scalar_done && !c.done) check_done(c);
    }

    void arrive(Core& c, int64_t ct) {  // _SyncAllGroup.arrive
        Group& g = groups[ct];
        g.members = group_members[ct];
        if (!g.arrived.count(c.uid)) g.cores.push_back(&c);
        ++g.arrived[c.uid];
        if (static_cast<int64_t>(g.arrived.size()) == g.members) {
            int64_t least = INT64_MAX;
            for (auto& kv : g.arrived) least = std::min(least, kv.second);
            if (least > g.rounds) {
                ++g.rounds;
                for (Core* w : g.cores)
                    if (w != &c) poke(*w);
            }
        }
    }

    // ------------------------------------------------------------ pipes
    void kick(PipeQ& p) {
        if (!p.scheduled && !p.running && !p.queue.empty()) {
            p.scheduled = true;
            int64_t t = now;
            if (p.busy_until > t) t = p.busy_until;
            const int64_t it = instrs[p.queue.front()].issue_time;
            if (it > t) t = it;
            push(t, 1, &p);
        }
    }

    void step(PipeQ& p) {
        p.scheduled = false;
        while (!p.queue.empty() && !p.running) {
            const Instr& in = instrs[p.queue.front()];
            const int64_t t = p.busy_until, issued = in.issue_time;
            if (t > now || issued > now) {
                if (!p.scheduled) {
                    p.scheduled = true;
                    push(issued > t ? issued : t, 1, &p);
                }
                return;
            }
            if (!execute(p, p.queue.front())) return;
        }
        if (!p.running) poke(*p.core);
    }

    void finish(PipeQ& p, int64_t instr) {
        events.push_back(~instr);
        p.running = false;
        poke(*p.core);
        step(p);
    }

    bool execute(PipeQ& p, int64_t i) {
        Core& c = *p.core;
        Instr& in = instrs[i];
        if (in.kind == OP) {
            run_op(p, i);
            return true;
        }
        if (in.kind == UNLOCK) {
            p.queue.pop_front();
            unlock(c, p, in);
            row(c, p.kind, ROW_SYNC, i, now, now + 1, IDS_INSTR, RS_NONE, -1, ROLE_NONE);
            p.busy_until = now + 1;
            return true;
        }
        int64_t reason = 0, ids = 0;
        if (sync_blocked(c, p, in, reason, ids)) {
            if (!p.blocked) {
                p.blocked = true;
                p.b_since = now;
                p.b_reason = reason;
                p.b_ids = ids;
            }
            return false;
        }
        if (p.blocked) {
            row(c, p.kind, ROW_STALL, i, p.b_since, now, p.b_ids, p.b_reason, -1, ROLE_NONE);
            p.blocked = false;
        }
        p.queue.pop_front();
        complete_sync(c, p, i);
        p.busy_until = now + 1;
        return true;
    }

    void run_op(PipeQ& p, int64_t i) {
        Core& c = *p.core;
        const Instr& in = instrs[i];
        p.queue.pop_front();
        events.push_back(i);
        int64_t end = now + std::max<int64_t>(1, in.cycles);
        int64_t reason = RS_NONE;
        if (in.gm_n >= 0) {
            const int64_t gm_end = access(now, in, end);
            if (gm_end > end) {
                end = gm_end;
                reason = RS_HBM;
            }
        }
        ++instructions;
        p.running = true;
        p.busy_until = end;
        row(c, p.kind, ROW_INSTR, i, now, end, IDS_INSTR, reason, -1, ROLE_NONE);
        push(end, 2, &p, i);
    }

    bool sync_blocked(Core& c, PipeQ& p, const Instr& in, int64_t& reason, int64_t& ids) {
        if (in.kind == WAIT_FLAG) {
            if (c.flags.count(flag_key(in))) return false;
            reason = RS_FLAG;
            ids = IDS_BLOCKED;
            return true;
        }
        if (in.kind == LOCK) {
            auto& q = c.mutex[in.k0];
            if (q.empty() || &instrs[q.front().instr] == &in) return false;
            reason = RS_MUTEX;
            ids = IDS_MUTEX_BASE - q.front().pipe * 2 - (q.front().pipe == p.kind ? 1 : 0);
            return true;
        }
        if (in.kind == XWAIT) {
            std::vector<std::pair<Core*, int64_t>> slots;
            xwait_slots(c, in, slots);
            for (auto& s : slots) {
                auto it = s.first->xcount.find(s.second);
                if (it == s.first->xcount.end() || it->second <= 0) {
                    reason = RS_CROSS;
                    ids = IDS_BLOCKED;
                    return true;
                }
            }
        }
        return false;
    }

    void complete_sync(Core& c, PipeQ& p, int64_t i) {
        const Instr& in = instrs[i];
        int64_t flow = -1, role = ROLE_NONE;
        if (in.kind == SET_FLAG) {
            flow = set_flag(c, i, now);
            role = ROLE_SET;
        } else if (in.kind == WAIT_FLAG) {
            flow = take_flag(c, flag_key(in));
            role = ROLE_WAIT;
        } else if (in.kind == XSET) {
            std::vector<std::pair<Core*, int64_t>> slots;
            xset_slots(c, in, slots);
            for (auto& s : slots) {
                s.first->xcount[s.second] += 1;
                kick_blocked(*s.first);
            }
        } else if (in.kind == XWAIT) {
            std::vector<std::pair<Core*, int64_t>> slots;
            xwait_slots(c, in, slots);
            for (auto& s : slots) s.first->xcount[s.second] -= 1;
        }
        row(c, p.kind, ROW_SYNC, i, now, now + 1, IDS_INSTR, RS_NONE, flow, role);
    }

    int64_t set_flag(Core& c, int64_t i, int64_t) {
        const Instr& in = instrs[i];
        const int64_t key = flag_key(in);
        const int64_t flow = flows++;
        if (c.flags.count(key)) {
            if (!wait_issued_since(c, key, in)) throw Error{E_SET_TWICE};
            c.flags_pending[key].push_back(flow);
        } else {
            c.flags[key] = flow;
        }
        c.last_set_seq[key] = in.pipe != PS ? in.seq : -1;
        kick_blocked(c);
        return flow;
    }

    bool wait_issued_since(Core& c, int64_t key, const Instr& in) {
        const int64_t dst = in.k1;
        if (dst >= NPIPES || !c.pipes[dst].present) return false;
        auto it = c.last_set_seq.find(key);
        const int64_t after = it == c.last_set_seq.end() ? -1 : it->second;
        const int64_t before = in.pipe != PS ? in.seq : INT64_MAX;
        for (int64_t q : c.pipes[dst].queue) {
            const Instr& w = instrs[q];
            if (w.kind == WAIT_FLAG && flag_key(w) == key && (after < 0 || w.seq > after) &&
                w.seq < before)
                return true;
        }
        return false;
    }

    int64_t take_flag(Core& c, int64_t key) {
        auto it = c.flags.find(key);
        const int64_t flow = it->second;
        c.flags.erase(it);
        auto pit = c.flags_pending.find(key);
        if (pit != c.flags_pending.end() && !pit->second.empty()) {
            c.flags[key] = pit->second.front();
            pit->second.pop_front();
        }
        return flow;
    }

    void unlock(Core& c, PipeQ& p, const Instr& in) {
        auto it = c.mutex.find(in.k0);
        if (it == c.mutex.end() || it->second.empty() || it->second.front().pipe != p.kind)
            throw Error{E_UNLOCK};
        it->second.pop_front();
        kick_blocked(c);
    }

    void kick_blocked(Core& c) {
        for (int k : c.order) {
            PipeQ& p = c.pipes[k];
            if (!p.queue.empty() && !p.running && !p.scheduled) kick(p);
        }
        poke(c);
    }

    void check_done(Core& c) {
        if (c.done || !c.scalar_done) return;
        for (int k : c.order)
            if (c.pipes[k].running || !c.pipes[k].queue.empty()) return;
        c.done = true;
        int64_t end = std::max(now, c.time);
        for (int k : c.order) end = std::max(end, c.pipes[k].busy_until);
        c.end_time = end;
        on_done(c);
    }

    // ------------------------------------------------------------ cross-core (launch.py)
    static int64_t pair_slot(int64_t ident, int64_t setter) {
        return (int64_t{1} << 62) | (ident << 24) | setter;
    }

    void inter_members(Core& c, std::vector<Core*>& out) {
        for (Core& x : cores)
            if (x.kind == c.kind && !x.done) out.push_back(&x);
    }

    void xset_slots(Core& c, const Instr& in, std::vector<std::pair<Core*, int64_t>>& out) {
        const int64_t mode = in.k0, ident = in.k1;
        if (mode == X_INTRA || mode == X_UNICAST) {
            if (c.kind == 0) {
                if (mode == X_INTRA) {
                    out.push_back({c.peers[0], ident});
                    out.push_back({c.peers[1], ident});
                } else {
                    out.push_back({c.peers[ident / 16], ident % 16});
                }
            } else {
                out.push_back({c.peers[0], ident + 16 * c.sub});
            }
            return;
        }
        std::vector<Core*> members;
        int64_t me;
        if (mode == X_INTER_SUBBLOCK) {
            me = c.sub;
            members = c.peers[0]->peers;
        } else {
            me = c.block_idx;
            inter_members(c, members);
        }
        for (Core* m : members) out.push_back({m, pair_slot(ident, me)});
    }

    void xwait_slots(Core& c, const Instr& in, std::vector<std::pair<Core*, int64_t>>& out) {
        const int64_t mode = in.k0, ident = in.k1;
        if (mode == X_INTRA || mode == X_UNICAST) {
            if (c.kind == 0 && mode == X_INTRA) {
                out.push_back({&c, ident});
                out.push_back({&c, ident + 16});
            } else {
                out.push_back({&c, ident});
            }
            return;
        }
        const int64_t count = mode == X_INTER_SUBBLOCK ? 2 :
            block_dim * (kernel_type == 2 && c.kind == 1 ? 2 : 1);
        for (int64_t s = 0; s < count; ++s) out.push_back({&c, pair_slot(ident, s)});
    }

    // ------------------------------------------------------------ memory_system.py
    int64_t access(int64_t t, const Instr& in, int64_t onchip_end) {
        const int32_t n = static_cast<int32_t>(in.gm_n);
        if (n == 0) return onchip_end;
        const int64_t storage = in.storage;
        auto it = base_line.find(storage);
        int64_t base;
        if (it == base_line.end()) {
            base = base_line[storage] = next_line;
            const int64_t nbytes = std::max<int64_t>(storage_bytes[storage], 1);
            next_line += (nbytes + line - 1) / line;
        } else {
            base = it->second;
        }
        double out[2];
        const int32_t missed = pypto_l2_access(l2, lines + in.gm_off, n, base,
                                               static_cast<int32_t>(in.gm_write), out);
        const int64_t dirty = static_cast<int64_t>(out[0]);
        const double wait_for = out[1];
        stats[3] += dirty;
        const int64_t wb_bytes = dirty * line;
        if (in.gm_write) {
            stats[2] += n;
            if (wb_bytes) hbm(t, wb_bytes);
            return onchip_end;
        }
        stats[0] += n - missed;
        stats[1] += missed;
        double end = std::max(static_cast<double>(onchip_end), wait_for);
        if (missed) {
            const double hbm_end = hbm(t, wb_bytes + missed * line);
            end = std::max(end + miss_extra, hbm_end + miss_extra);
            pypto_l2_settle(l2, end);
        } else if (wb_bytes) {
            hbm(t, wb_bytes);
        }
        return static_cast<int64_t>(end + 0.999);
    }

    double hbm(int64_t t, int64_t nbytes) {
        stats[4] += nbytes;
        if (hbm_rate <= 0) return static_cast<double>(t);
        const double begin = std::max(static_cast<double>(t), hbm_free);
        hbm_free = begin + static_cast<double>(nbytes) / hbm_rate;
        return hbm_free;
    }

    // ------------------------------------------------------------ Engine.run
    int run() {
        try {
            for (int64_t b = 0; b < block_dim; ++b) pending.push_back(b);
            for (int64_t s = 0; s < std::min(n_slots, block_dim); ++s) start_next(s, 0);
            while (!heap.empty()) {
                const Event e = heap.top();
                heap.pop();
                if (e.t > now) now = e.t;
                switch (e.type) {
                    case 0: resume(*static_cast<Core*>(e.who)); break;
                    case 1: step(*static_cast<PipeQ*>(e.who)); break;
                    case 2: finish(*static_cast<PipeQ*>(e.who), e.arg); break;
                    default: start_next(e.arg, e.t); break;
                }
            }
        } catch (const Error& err) {
            return err.code;
        }
        if (pending_at < pending.size()) return E_DEADLOCK;
        for (Core& c : cores)
            if (!c.done) return E_DEADLOCK;
        return OK;
    }
};

// ---- the eager-replay check (footprints.py; keep FP_W in sync) ----
// A footprint: the bytes [first + i * stride, first + i * stride + len) for i < rows of one
// memory (on-chip buffer or GM storage), read or written by one op.
constexpr int FP_W = 6;  // write, space, first, rows, stride, len
struct Footprint { int64_t write, space, first, rows, stride, len; };

int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }
int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

// Does a row of `f` meet the byte range [a, b)?
bool rows_meet(const Footprint& f, int64_t a, int64_t b) {
    if (f.rows <= 1 || f.stride <= 0) return f.first < b && a < f.first + f.len;
    const int64_t lo = std::max<int64_t>(0, floor_div(a - f.len - f.first, f.stride) + 1);
    const int64_t hi = std::min<int64_t>(f.rows - 1, ceil_div(b - f.first, f.stride) - 1);
    return lo <= hi;
}

int64_t extent_end(const Footprint& f) {
    return f.first + (f.rows > 1 ? (f.rows - 1) * f.stride : 0) + f.len;
}

// Do two footprints share a byte? Exact for a range against rows and for rows of one stride;
// rows of different strides are tested row by row (conservatively "yes" past a limit).
bool overlaps(const Footprint& x, const Footprint& y) {
    if (x.space != y.space || x.len <= 0 || y.len <= 0) return false;
    if (extent_end(x) <= y.first || extent_end(y) <= x.first) return false;
    if (x.rows <= 1 || x.stride <= 0) return rows_meet(y, x.first, extent_end(x));
    if (y.rows <= 1 || y.stride <= 0) return rows_meet(x, y.first, extent_end(y));
    if (x.stride == y.stride) {  // rows i of x and j of y meet iff -x.len < d + (i - j) t < y.len
        const int64_t t = x.stride, d = x.first - y.first;
        const int64_t lo = std::max<int64_t>(-(y.rows - 1), floor_div(-x.len - d, t) + 1);
        const int64_t hi = std::min<int64_t>(x.rows - 1, ceil_div(y.len - d, t) - 1);
        return lo <= hi;
    }
    const Footprint& few = x.rows <= y.rows ? x : y;
    const Footprint& other = x.rows <= y.rows ? y : x;
    if (few.rows > (int64_t{1} << 16)) return true;
    for (int64_t i = 0; i < few.rows; ++i) {
        const int64_t a = few.first + i * few.stride;
        if (rows_meet(other, a, a + few.len)) return true;
    }
    return false;
}

// The first op start (in the schedule's event order) that touches memory an op still running
// writes: out = (running op, starting op), or (op, op) for an op with two writes whose
// footprints meet its others (the op library reads before it writes, but within one op only
// a single written operand is taken on trust). Returns 1 when there is one, else 0 (out -1s).
// index: per op (instruction, its first int in fps), in instruction order.
int64_t first_race(const int64_t* events, int64_t n_events, const int64_t* fps, int64_t n_fps,
                   const int64_t* index, int64_t n_ops, int64_t n_instrs, int64_t* out) {
    auto fp = [&](int64_t k) {
        const int64_t* r = fps + FP_W * k;
        return Footprint{r[0], r[1], r[2], r[3], r[4], r[5]};
    };
    std::vector<int64_t> fp_off(static_cast<size_t>(n_instrs), 0);  // per instruction, its
    std::vector<int64_t> fp_end(static_cast<size_t>(n_instrs), 0);  // footprint rows
    for (int64_t j = 0; j < n_ops; ++j) {
        const int64_t i = index[2 * j];
        fp_off[static_cast<size_t>(i)] = index[2 * j + 1] / FP_W;
        fp_end[static_cast<size_t>(i)] = (j + 1 < n_ops ? index[2 * j + 3] : n_fps) / FP_W;
    }
    int64_t n_spaces = 0;
    for (int64_t k = 0; k < n_fps / FP_W; ++k)
        n_spaces = std::max(n_spaces, fps[FP_W * k + 1] + 1);
    // per memory, the write footprints of the ops between their start and finish: (op, row)
    std::vector<std::vector<std::pair<int64_t, int64_t>>> writers(static_cast<size_t>(n_spaces));
    out[0] = out[1] = -1;
    for (int64_t n = 0; n < n_events; ++n) {
        const int64_t e = events[n];
        if (e < 0) {
            const int64_t i = ~e;
            for (int64_t k = fp_off[i]; k < fp_end[i]; ++k) {
                if (!fps[FP_W * k]) continue;
                auto& list = writers[static_cast<size_t>(fps[FP_W * k + 1])];
                for (auto& w : list)
                    if (w.first == i && w.second == k) {
                        w = list.back();
                        list.pop_back();
                        break;
                    }
            }
            continue;
        }
        const int64_t b0 = fp_off[e], b1 = fp_end[e];
        int writes = 0;
        for (int64_t k = b0; k < b1; ++k) writes += fps[FP_W * k] != 0;
        if (writes > 1) {
            for (int64_t k = b0; k < b1; ++k) {
                if (!fps[FP_W * k]) continue;
                const Footprint w = fp(k);
                for (int64_t j = b0; j < b1; ++j)
                    if (j != k && overlaps(w, fp(j))) {
                        out[0] = out[1] = e;
                        return 1;
                    }
            }
        }
        for (int64_t k = b0; k < b1; ++k) {
            const Footprint f = fp(k);
            for (const auto& w : writers[static_cast<size_t>(f.space)])
                if (overlaps(fp(w.second), f)) {
                    out[0] = w.first;
                    out[1] = e;
                    return 1;
                }
        }
        for (int64_t k = b0; k < b1; ++k)
            if (fps[FP_W * k]) writers[static_cast<size_t>(fps[FP_W * k + 1])].push_back({e, k});
    }
    return 0;
}

// Groups of ops no two of which share memory that one of them writes (lanes.py): ops touching
// one on-chip space (gm[space] == 0) are one group; GM footprints join two groups when a write
// of one meets a footprint of the other. comp[j]: op j's group (its smallest op).
void components(const int64_t* fps, int64_t n_fps, const int64_t* index, int64_t n_ops,
                const int64_t* gm, int64_t n_spaces, int64_t* comp) {
    std::vector<int64_t> parents(static_cast<size_t>(n_ops));
    auto parent = [&](int64_t j) -> int64_t& { return parents[static_cast<size_t>(j)]; };
    for (int64_t j = 0; j < n_ops; ++j) parent(j) = j;
    auto find = [&](int64_t j) {
        while (parent(j) != j) j = parent(j) = parent(parent(j));
        return j;
    };
    auto join = [&](int64_t a, int64_t b) {
        a = find(a);
        b = find(b);
        if (a != b) parent(std::max(a, b)) = std::min(a, b);
    };
    std::vector<int64_t> owner(static_cast<size_t>(n_spaces), -1);  // on-chip: its first op
    std::vector<std::vector<std::pair<int64_t, int64_t>>> rows(static_cast<size_t>(n_spaces));
    for (int64_t j = 0; j < n_ops; ++j) {
        const int64_t end = j + 1 < n_ops ? index[j + 1] : n_fps / FP_W;
        for (int64_t k = index[j]; k < end; ++k) {
            const auto s = static_cast<size_t>(fps[FP_W * k + 1]);
            if (gm[s]) {
                rows[s].push_back({j, k});
            } else if (owner[s] < 0) {
                owner[s] = j;
            } else {
                join(j, owner[s]);
            }
        }
    }
    auto fp = [&](int64_t k) {
        const int64_t* r = fps + FP_W * k;
        return Footprint{r[0], r[1], r[2], r[3], r[4], r[5]};
    };
    for (const auto& list : rows)
        for (const auto& w : list) {
            if (!fps[FP_W * w.second]) continue;
            const Footprint f = fp(w.second);
            for (const auto& r : list)
                if (find(r.first) != find(w.first) && overlaps(f, fp(r.second)))
                    join(r.first, w.first);
        }
    for (int64_t j = 0; j < n_ops; ++j) comp[j] = find(j);
}

}  // namespace

extern "C" {

// One timed launch. cfg: kernel type (0 aiv, 1 aic, 2 mix), block_dim, physical slots, pipe
// queue depth, SOFT sync_all extra cycles, cores per block, L2 line bytes, L2 miss extra
// cycles, sync_all members (MIX, AIV_ONLY, AIC_ONLY order of `ct` codes). stream_off: per
// stream (block * cores per block + position) its first record, plus the end. instrs:
// INSTR_W int64 per instruction. Returns a result handle (read with the calls below).
void* pypto_sched_run(const int64_t* cfg, double hbm_rate, void* l2, const int64_t* stream_off,
                      const int64_t* stream_info, const int64_t* records, const int64_t* instrs,
                      int64_t n_instrs, const int64_t* lines, const int64_t* storage_bytes) {
    Sched* s = new (std::nothrow) Sched();
    if (!s) return nullptr;
    s->kernel_type = cfg[0];
    s->block_dim = cfg[1];
    s->n_slots = cfg[2];
    s->depth = cfg[3];
    s->soft_extra = cfg[4];
    s->cpb = cfg[5];
    s->line = cfg[6];
    s->miss_extra = cfg[7];
    for (int k = 0; k < 3; ++k) s->group_members[k] = cfg[8 + k];
    s->hbm_rate = hbm_rate;
    s->l2 = static_cast<L2*>(l2);
    s->rec = records;
    s->stream_off = stream_off;
    s->stream_info = stream_info;
    s->lines = lines;
    s->storage_bytes = storage_bytes;
    s->instrs.resize(static_cast<size_t>(n_instrs));
    for (int64_t i = 0; i < n_instrs; ++i) {
        const int64_t* r = instrs + INSTR_W * i;
        Instr& in = s->instrs[static_cast<size_t>(i)];
        in.kind = r[0];
        in.pipe = r[1];
        in.k0 = r[2];
        in.k1 = r[3];
        in.k2 = r[4];
        in.cycles = r[5];
        in.gm_n = r[6];
        in.gm_off = r[7];
        in.gm_write = r[8];
        in.storage = r[9];
    }
    s->rows.reserve(static_cast<size_t>(n_instrs) * ROW_W);
    s->events.reserve(static_cast<size_t>(n_instrs) * 2);
    const int err = s->run();
    s->rows.push_back(err);  // (the error code rides after the rows: see pypto_sched_sizes)
    return s;
}

// sizes: rows, events, started pairs, error code, instructions, now, then the 5 L2 counters
void pypto_sched_sizes(void* h, int64_t* out) {
    Sched& s = *static_cast<Sched*>(h);
    out[0] = static_cast<int64_t>((s.rows.size() - 1) / ROW_W);
    out[1] = static_cast<int64_t>(s.events.size());
    out[2] = static_cast<int64_t>(s.started.size() / 2);
    out[3] = s.rows.back();
    out[4] = s.instructions;
    out[5] = s.now;
    for (int k = 0; k < 5; ++k) out[6 + k] = s.stats[k];
}

void pypto_sched_copy(void* h, int64_t* rows, int64_t* events, int64_t* started) {
    Sched& s = *static_cast<Sched*>(h);
    std::copy(s.rows.begin(), s.rows.end() - 1, rows);
    std::copy(s.events.begin(), s.events.end(), events);
    std::copy(s.started.begin(), s.started.end(), started);
}

void pypto_sched_free(void* h) { delete static_cast<Sched*>(h); }

// The eager-replay check over a schedule's events (see first_race): fps FP_W int64 per
// footprint (n_fps int64 in all), index 2 int64 per op; out[2].
int64_t pypto_sched_first_race(const int64_t* events, int64_t n_events, const int64_t* fps,
                               int64_t n_fps, const int64_t* index, int64_t n_ops,
                               int64_t n_instrs, int64_t* out) {
    return first_race(events, n_events, fps, n_fps, index, n_ops, n_instrs, out);
}

// One footprint test (for the tests of the overlap arithmetic): a and b FP_W int64 each.
int64_t pypto_sched_overlaps(const int64_t* a, const int64_t* b) {
    return overlaps(Footprint{a[0], a[1], a[2], a[3], a[4], a[5]},
                    Footprint{b[0], b[1], b[2], b[3], b[4], b[5]});
}

// The groups of ops that share no written memory (see components): index per op its first
// footprint row, gm per space 1 for GM storages; comp[n_ops].
void pypto_sched_components(const int64_t* fps, int64_t n_fps, const int64_t* index,
                            int64_t n_ops, const int64_t* gm, int64_t n_spaces, int64_t* comp) {
    components(fps, n_fps, index, n_ops, gm, n_spaces, comp);
}

}  // extern "C"
