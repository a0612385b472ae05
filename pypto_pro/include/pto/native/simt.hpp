// PyPTO Pro native backend: SIMT functions (`cce::async_invoke`, thread context, atomics).
//
// A launch `cce::async_invoke<f>(cce::dim3{x, y, z}, args...)` runs f once per SIMT thread,
// x fastest, on the vector core's own host thread, with `threadIdx` / `blockDim` set per
// thread. The SIMT API has no barriers, so running the threads one after another computes
// what any interleaving without data races computes; the atomics are plain read-modify-writes.
#pragma once

#include <cmath>
#include <cstdint>

#include <mutex>

#include "context.hpp"
#include "global.hpp"

namespace cce {

struct dim3 {
    uint32_t x = 1, y = 1, z = 1;
};

}  // namespace cce

inline thread_local cce::dim3 threadIdx{0, 0, 0};
inline thread_local cce::dim3 blockDim{1, 1, 1};
inline thread_local cce::dim3 blockIdx{0, 0, 0};
inline thread_local cce::dim3 gridDim{1, 1, 1};
constexpr int warpSize = 32;

namespace cce {

template <auto F, typename... A>
inline void async_invoke(dim3 threads, A... args)
{
    pypto_native::record("async_invoke", pypto_native::Loc::here());
    const dim3 saved_idx = threadIdx, saved_dim = blockDim;
    blockDim = threads;
    for (uint32_t z = 0; z < threads.z; ++z) {
        for (uint32_t y = 0; y < threads.y; ++y) {
            for (uint32_t x = 0; x < threads.x; ++x) {
                threadIdx = dim3{x, y, z};
                F(args...);
            }
        }
    }
    threadIdx = saved_idx;
    blockDim = saved_dim;
}

}  // namespace cce

inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
using std::isinf;
using std::isnan;

template <typename T, typename V>
inline T atomicAdd(T* p, V v) { std::lock_guard<std::mutex> g(pypto_native::atomic_mutex()); T old = *p; *p = static_cast<T>(old + v); return old; }
template <typename T, typename V>
inline T atomicSub(T* p, V v) { std::lock_guard<std::mutex> g(pypto_native::atomic_mutex()); T old = *p; *p = static_cast<T>(old - v); return old; }
template <typename T, typename V>
inline T atomicExch(T* p, V v) { std::lock_guard<std::mutex> g(pypto_native::atomic_mutex()); T old = *p; *p = static_cast<T>(v); return old; }
template <typename T, typename V>
inline T atomicMax(T* p, V v) { std::lock_guard<std::mutex> g(pypto_native::atomic_mutex()); T old = *p; *p = old < static_cast<T>(v) ? static_cast<T>(v) : old; return old; }
template <typename T, typename V>
inline T atomicMin(T* p, V v) { std::lock_guard<std::mutex> g(pypto_native::atomic_mutex()); T old = *p; *p = static_cast<T>(v) < old ? static_cast<T>(v) : old; return old; }
template <typename T, typename V>
inline T atomicInc(T* p, V v) { std::lock_guard<std::mutex> g(pypto_native::atomic_mutex()); T old = *p; *p = old >= static_cast<T>(v) ? T(0) : static_cast<T>(old + 1); return old; }
template <typename T, typename V>
inline T atomicDec(T* p, V v) { std::lock_guard<std::mutex> g(pypto_native::atomic_mutex()); T old = *p; *p = (old == T(0) || old > static_cast<T>(v)) ? static_cast<T>(v) : static_cast<T>(old - 1); return old; }
template <typename T, typename C, typename V>
inline T atomicCAS(T* p, C cmp, V v) { std::lock_guard<std::mutex> g(pypto_native::atomic_mutex()); T old = *p; if (old == static_cast<T>(cmp)) *p = static_cast<T>(v); return old; }
template <typename T, typename V>
inline T atomicAnd(T* p, V v) { std::lock_guard<std::mutex> g(pypto_native::atomic_mutex()); T old = *p; *p = static_cast<T>(old & v); return old; }
template <typename T, typename V>
inline T atomicOr(T* p, V v) { std::lock_guard<std::mutex> g(pypto_native::atomic_mutex()); T old = *p; *p = static_cast<T>(old | v); return old; }
template <typename T, typename V>
inline T atomicXor(T* p, V v) { std::lock_guard<std::mutex> g(pypto_native::atomic_mutex()); T old = *p; *p = static_cast<T>(old ^ v); return old; }
