// PyPTO Pro native backend: CCE qualifiers, pipe / event constants and source locations.
//
// The generated kernel.cpp is written for bisheng; on the host these qualifiers mean nothing
// and expand to nothing. `Loc` captures the kernel.cpp line of an instruction call through a
// defaulted argument (GCC/Clang `__builtin_LINE`), so every fault names the line the code
// generator's line map ties to the user's source line.
#pragma once

#include <cstddef>
#include <cstdint>

#define __aicore__
#define __global__
#define AICORE
#define __gm__
#define __ubuf__
#define __cbuf__
#define __ca__
#define __cb__
#define __cc__
#define __fbuf__
#define __ssbuf__
#define __simt_vf__
#define __simt_callee__
#define __launch_bounds__(n)
#define __VEC_SCOPE__

enum pipe_t : int {
    PIPE_S = 0,
    PIPE_V = 1,
    PIPE_MTE1 = 2,
    PIPE_MTE2 = 3,
    PIPE_MTE3 = 4,
    PIPE_M = 5,
    PIPE_ALL = 6,
    PIPE_FIX = 7,
};

enum event_t : int {
    EVENT_ID0 = 0, EVENT_ID1, EVENT_ID2, EVENT_ID3, EVENT_ID4, EVENT_ID5, EVENT_ID6, EVENT_ID7,
    EVENT_ID8, EVENT_ID9, EVENT_ID10, EVENT_ID11, EVENT_ID12, EVENT_ID13, EVENT_ID14, EVENT_ID15,
};

// dcci operands (CCE spellings)
enum cache_line_t : int { SINGLE_CACHE_LINE = 0, ENTIRE_DATA_CACHE = 1 };
enum dcci_dst_t : int { AUTO = 0, CACHELINE_OUT = 1, CACHELINE_UB = 2, CACHELINE_ALL = 3,
                        CACHELINE_ATOMIC = 4 };

namespace pypto_native {

constexpr int kPipes = 8;
constexpr int kEvents = 16;
constexpr int kMutexIds = 32;
constexpr int kCrossIds = 32;

//! Where an instruction was called from (the kernel.cpp line).
struct Loc {
    int line;
    const char* file;
    static constexpr Loc here(int l = __builtin_LINE(), const char* f = __builtin_FILE())
    {
        return Loc{l, f};
    }
};

inline const char* pipe_name(int p)
{
    static const char* names[] = {"PIPE_S", "PIPE_V", "PIPE_MTE1", "PIPE_MTE2", "PIPE_MTE3",
                                  "PIPE_M", "PIPE_ALL", "PIPE_FIX"};
    return (p >= 0 && p < kPipes) ? names[p] : "PIPE_?";
}

}  // namespace pypto_native
