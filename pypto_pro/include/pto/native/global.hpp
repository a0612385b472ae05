// PyPTO Pro native backend: `GlobalTensor` views of global memory and their bounds.
//
// Generated code re-points one GlobalTensor per tensor at every access: `SetShape<DIM_3,
// DIM_4>(rows, cols)`, `SetStride<DIM_3, DIM_4>(row_stride, col_stride)` (elements), then
// `TASSIGN(gt, ptr + offset)`. Before that, `PYPTO_GM_CHECK` checks the window against the
// tensor's full shape axis by axis. The launcher registers every GM buffer of the launch (base,
// bytes, parameter name); an access whose window leaves the buffer its base pointer lies in
// (a window, or a getval / setval element through `PYPTO_GM_ELEM`) is a fault naming the
// tensor, instead of silently reading a neighbour.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "context.hpp"

namespace pto {

enum class Layout { ND, DN, NZ, ZN, NN, ZZ };
enum Dim { DIM_0 = 0, DIM_1 = 1, DIM_2 = 2, DIM_3 = 3, DIM_4 = 4 };

template <int A, int B, int C, int D, int E> struct Shape {};
template <int A, int B, int C, int D, int E> struct Stride {};

template <typename T, typename ShapeT = Shape<1, 1, 1, -1, -1>,
          typename StrideT = Stride<1, 1, 1, -1, -1>, Layout Lay = Layout::ND>
struct GlobalTensor {
    using DType = T;
    static constexpr Layout layout = Lay;
    T* ptr = nullptr;
    int64_t shape[5] = {1, 1, 1, 1, 1};
    int64_t stride[5] = {0, 0, 0, 0, 1};
    bool stride_set = false;

    GlobalTensor() = default;
    explicit GlobalTensor(T* p) : ptr(p) {}

    template <Dim A, Dim B>
    void SetShape(int64_t a, int64_t b)
    {
        shape[A] = a;
        shape[B] = b;
    }
    template <Dim A, Dim B>
    void SetStride(int64_t a, int64_t b)
    {
        stride[A] = a;
        stride[B] = b;
        stride_set = true;
    }
    int64_t rows() const { return shape[DIM_3]; }
    int64_t cols() const { return shape[DIM_4]; }
    int64_t row_stride() const { return stride_set ? stride[DIM_3] : shape[DIM_4]; }
    int64_t col_stride() const { return stride_set ? stride[DIM_4] : 1; }
    T* data() const { return ptr; }
};

template <typename T, typename S, typename St, Layout L>
inline void TASSIGN(GlobalTensor<T, S, St, L>& gt, T* p,
                    pypto_native::Loc loc = pypto_native::Loc::here())
{
    pypto_native::record("TASSIGN", loc);
    gt.ptr = p;
}

}  // namespace pto

namespace pypto_native {

struct GmRegion {
    uint64_t lo, hi;
    std::string name;
};

inline std::vector<GmRegion>& gm_regions()
{
    static std::vector<GmRegion> r;
    return r;
}

//! the region holding [lo, hi) (nullptr: not inside one registered buffer)
inline const GmRegion* gm_region_of(uint64_t lo, uint64_t hi)
{
    for (const GmRegion& r : gm_regions()) {
        if (lo >= r.lo && hi <= r.hi) return &r;
    }
    return nullptr;
}

inline void check_gm(const char* op, uint64_t base, uint64_t lo, uint64_t hi, int line)
{
    if (gm_regions().empty()) return;  // no launcher bookkeeping: trust the pointers
    if (gm_region_of(lo, hi) != nullptr) return;
    const GmRegion* owner = nullptr;
    for (const GmRegion& r : gm_regions()) {
        if (base >= r.lo && base < r.hi) owner = &r;
    }
    if (owner != nullptr) {
        raise_fault(FaultKind::Trap, line, "%s: %s reads/writes GM bytes [%lld, %lld) of tensor "
                    "'%s', which has %lld bytes (out of bounds)", where().c_str(), op,
                    static_cast<long long>(lo - owner->lo), static_cast<long long>(hi - owner->lo),
                    owner->name.c_str(), static_cast<long long>(owner->hi - owner->lo));
    }
    raise_fault(FaultKind::Trap, line, "%s: %s accesses GM at %#llx, outside every tensor of the "
                "launch (bad address)", where().c_str(), op, static_cast<unsigned long long>(lo));
}

//! [lo, hi) bytes touched by a [rows, cols] window at `p` with element strides (rs, cs)
template <typename T>
inline void gm_window_bounds(const T* p, int64_t rows, int64_t cols, int64_t rs, int64_t cs,
                             uint64_t& lo, uint64_t& hi)
{
    const int64_t e = static_cast<int64_t>(sizeof(T));
    int64_t min_off = 0, max_off = 0;
    if (rows > 0 && cols > 0) {
        const int64_t r_end = (rows - 1) * rs, c_end = (cols - 1) * cs;
        min_off = std::min<int64_t>(0, r_end) + std::min<int64_t>(0, c_end);
        max_off = std::max<int64_t>(0, r_end) + std::max<int64_t>(0, c_end);
    }
    lo = reinterpret_cast<uint64_t>(p) + static_cast<uint64_t>(min_off * e);
    hi = reinterpret_cast<uint64_t>(p) + static_cast<uint64_t>((max_off + 1) * e);
}

//! getval / setval of GM element `k` of `p` (`PYPTO_GM_ELEM`): inside the buffer `p` points into
template <typename T>
inline T& gm_element(T* p, int64_t k, int line)
{
    const uint64_t at = reinterpret_cast<uint64_t>(p + k);
    check_gm("getval/setval", reinterpret_cast<uint64_t>(p), at, at + sizeof(T), line);
    return p[k];
}

//! `PYPTO_GM_CHECK(tensor, offset0, extent0, dim0, ...)` before a GM window access: the
//! simulator's per-axis rule, 0 <= offset and offset + extent <= dim on every axis (the buffer
//! check alone misses a window that wraps into the next row)
template <typename... A>
inline void check_gm_axes(const char* tensor, int line, A... triples)
{
    static_assert(sizeof...(A) % 3 == 0, "offset, extent, dim per axis");
    const int64_t v[] = {static_cast<int64_t>(triples)...};
    const int axes = static_cast<int>(sizeof...(A) / 3);
    for (int a = 0; a < axes; ++a) {
        const int64_t off = v[3 * a], ext = v[3 * a + 1], dim = v[3 * a + 2];
        if (off < 0 || off + ext > dim) {
            raise_fault(FaultKind::Trap, line, "%s: the GM window covers [%lld, %lld) of axis %d of "
                        "tensor '%s', whose size is %lld (out of bounds)", where().c_str(),
                        static_cast<long long>(off), static_cast<long long>(off + ext), a, tensor,
                        static_cast<long long>(dim));
        }
    }
}

//! GM atomic accumulate (set_atomic_add): one lock for the whole chip is enough on a CPU
inline std::mutex& atomic_mutex()
{
    static std::mutex m;
    return m;
}

}  // namespace pypto_native

//! bounds-checked forms of the element access and window hooks of kernel.cpp (see prelude.py)
#define PYPTO_GM_ELEM(ptr, k) \
    (::pypto_native::gm_element((ptr), static_cast<int64_t>(k), __LINE__))
#define PYPTO_GM_CHECK(tensor, ...) ::pypto_native::check_gm_axes(tensor, __LINE__, __VA_ARGS__)
