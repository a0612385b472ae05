// The simulator's L2 tag walk, compiled: the same model as memory_system.py's `PythonL2`
// (set-associative, LRU within a set, write-allocate, write-back), loaded with ctypes by
// l2_native.py. Plain extern "C" functions, no Python headers: one call per access.
//
// A set holds up to `ways` (line, state) entries in LRU order, oldest first. A state is -1.0
// (dirty) or the cycle the line's fetch is done.
#include <algorithm>
#include <cstdint>
#include <new>
#include <vector>

namespace {

struct Entry {
    int64_t line;
    double state;
};

struct L2 {
    int64_t sets, ways, mask;  // mask: sets - 1 when sets is a power of two, else 0
    std::vector<Entry> entry;  // sets * ways, a set's entries side by side (one cache walk)
    std::vector<int32_t> count;  // entries in use per set
    std::vector<int64_t> missed;  // (set, line) pairs of the last read's misses

    L2(int64_t s, int64_t w)
        : sets(s), ways(w), mask((s & (s - 1)) == 0 ? s - 1 : 0),
          entry(static_cast<size_t>(s * w)), count(static_cast<size_t>(s)) {}

    int64_t set_of(int64_t l) const {  // the hash of memory_system.py (lines are >= 0)
        const int64_t mixed = (l >> 13) ^ l ^ (l >> 26);
        return mask ? (mixed & mask) : (mixed % sets);
    }

    Entry* row(int64_t s) { return &entry[static_cast<size_t>(s * ways)]; }

    // The slot of `l` in set `s`, or -1 (newest first: a re-used line is usually recent).
    int64_t find(int64_t s, int64_t l) {
        const Entry* r = row(s);
        for (int64_t j = count[s] - 1; j >= 0; --j)
            if (r[j].line == l) return j;
        return -1;
    }

    // Drop slot `j` of set `s`, moving the newer entries down one (a set is a few entries:
    // a plain loop beats a memmove call).
    void remove(int64_t s, int64_t j) {
        Entry* r = row(s);
        const int64_t last = --count[s];
        for (; j < last; ++j) r[j] = r[j + 1];
    }

    void append(int64_t s, int64_t l, double st) { row(s)[count[s]++] = Entry{l, st}; }
};

}  // namespace

extern "C" {

void* pypto_l2_new(int64_t sets, int64_t ways) {
    if (sets < 1 || ways < 1) return nullptr;
    return new (std::nothrow) L2(sets, ways);
}

void pypto_l2_free(void* model) { delete static_cast<L2*>(model); }

void pypto_l2_reset(void* model) {
    L2& m = *static_cast<L2*>(model);
    std::fill(m.count.begin(), m.count.end(), 0);
    m.missed.clear();
}

// Look up and install the `n` lines `lines[i] + base` of one access, in order. A read
// remembers its misses (for `pypto_l2_settle`); a write installs its lines dirty. Returns the
// number of read misses; out[0] = dirty victims, out[1] = the latest ready cycle among hits
// on lines still being fetched (reads). (Python calls the two functions of every access
// without ctypes argtypes, whose conversions cost as much as the walk of a small access.)
int32_t pypto_l2_access(void* model, const int64_t* lines, int32_t n, int64_t base,
                        int32_t write, double* out) {
    L2& m = *static_cast<L2*>(model);
    m.missed.clear();
    int64_t dirty = 0;
    double wait_for = 0.0;
    for (int32_t i = 0; i < n; ++i) {
        const int64_t l = lines[i] + base;
        const int64_t s = m.set_of(l);
        const int64_t j = m.find(s, l);
        double st = write ? -1.0 : 0.0;  // a read miss is clean until settled
        if (j >= 0) {
            if (!write) {
                st = m.row(s)[j].state;
                if (st > wait_for) wait_for = st;
            }
            m.remove(s, j);
        } else {
            if (m.count[s] >= m.ways) {
                dirty += m.row(s)[0].state < 0.0;
                m.remove(s, 0);
            }
            if (!write) {
                m.missed.push_back(s);
                m.missed.push_back(l);
            }
        }
        m.append(s, l, st);  // now the most recently used
    }
    out[0] = static_cast<double>(dirty);
    out[1] = wait_for;
    return static_cast<int32_t>(m.missed.size() / 2);
}

// Copy the tags out (inspection and tests): the sets * ways lines and states, and the count
// of entries in use per set.
void pypto_l2_snapshot(void* model, int64_t* lines, double* states, int32_t* counts) {
    const L2& m = *static_cast<L2*>(model);
    for (size_t k = 0; k < m.entry.size(); ++k) {
        lines[k] = m.entry[k].line;
        states[k] = m.entry[k].state;
    }
    std::copy(m.count.begin(), m.count.end(), counts);
}

// Give the last read's missed lines that are still resident (not evicted again by a later
// line of the same access) their ready cycle `end`, in place (their LRU order stays).
void pypto_l2_settle(void* model, double end) {
    L2& m = *static_cast<L2*>(model);
    for (size_t k = 0; k < m.missed.size(); k += 2) {
        const int64_t j = m.find(m.missed[k], m.missed[k + 1]);
        if (j >= 0) m.row(m.missed[k])[j].state = end;
    }
}

}  // extern "C"
