// PyPTO Pro native backend: `GlobalTensor` views of global memory and their bounds.
//
// `pto::Shape` / `pto::Stride` / `pto::GlobalTensor` / `pto::GlobalTensorDim` are declared as
// pto-isa declares them (template parameters, constructors, the static checks that only DYNAMIC
// extents are set). Generated code re-points one GlobalTensor per tensor at every access:
// `SetShape<pto::GlobalTensorDim::DIM_3, pto::GlobalTensorDim::DIM_4>(rows, cols)` (and
// `SetStride<...>` where a function changes strides), then `TASSIGN(gt, ptr + offset)`. Before that, `PYPTO_GM_CHECK` checks the window against the
// tensor's full shape axis by axis. The launcher registers every GM buffer of the launch (base,
// bytes, parameter name); an access whose window leaves the buffer its base pointer lies in
// (a window, or a getval / setval element through `PYPTO_GM_ELEM`) is a fault naming the
// tensor, instead of silently reading a neighbour.
#pragma once

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "context.hpp"

namespace pto {

constexpr int DYNAMIC = -1;

//! the five axes of a GlobalTensor's shape and strides (pto-isa spells them so)
namespace GlobalTensorDim {
constexpr int DIM_0 = 0;
constexpr int DIM_1 = 1;
constexpr int DIM_2 = 2;
constexpr int DIM_3 = 3;
constexpr int DIM_4 = 4;
constexpr int TOTAL_DIM = 5;
}  // namespace GlobalTensorDim

enum class Layout {
    ND, DN, NZ, SCALE, MX_A_ND, MX_A_DN, MX_A_ZZ, MX_B_ND, MX_B_DN, MX_B_NN, HIF4_A_ZZ,
    HIF4_B_NN, NC1HWC0, GNC1HWC0, NCHW, GNCHW, NHWC, NDC1HWC0, NCDHW, FRACTAL_Z,
    FRACTAL_Z_S16S8, FRACTAL_Z_3D, MAX,
};

namespace detail {
//! how many of the five extents are DYNAMIC
template <int64_t... N>
constexpr int dynamic_count() { return ((N == DYNAMIC ? 1 : 0) + ...); }

//! `values` (one per DYNAMIC extent, in order) into the DYNAMIC slots of `out`; the n-value
//! constructors of Shape / Stride accept exactly as many values as there are DYNAMIC extents
template <int64_t... N, typename... V>
inline void fill_dynamic(int64_t (&out)[5], V... values)
{
    constexpr int64_t fixed[] = {N...};
    const int64_t vals[] = {static_cast<int64_t>(values)..., 0};
    int k = 0;
    for (int d = 0; d < 5; ++d) {
        if (fixed[d] == DYNAMIC) out[d] = vals[k++];
    }
}
}  // namespace detail

//! a GlobalTensor's extents: each DYNAMIC one is given at construction (all five, or exactly as
//! many values as there are DYNAMIC extents), the others are fixed
template <int64_t N1 = DYNAMIC, int64_t N2 = DYNAMIC, int64_t N3 = DYNAMIC, int64_t N4 = DYNAMIC,
          int64_t N5 = DYNAMIC>
struct Shape {
    static constexpr int64_t staticShape[5] = {N1, N2, N3, N4, N5};
    int64_t shape[5] = {N1, N2, N3, N4, N5};

    Shape()
    {
        for (int64_t& d : shape) d = d == DYNAMIC ? 1 : d;
    }
    Shape(int64_t n1, int64_t n2, int64_t n3, int64_t n4, int64_t n5) : Shape()
    {
        const int64_t v[] = {n1, n2, n3, n4, n5};
        for (int d = 0; d < 5; ++d) {
            if (staticShape[d] == DYNAMIC) shape[d] = v[d];
        }
    }
    template <typename... V, std::enable_if_t<(sizeof...(V) >= 1 && sizeof...(V) <= 4), int> = 0>
    Shape(V... values) : Shape()
    {
        static_assert(detail::dynamic_count<N1, N2, N3, N4, N5>() == sizeof...(V),
                      "an n-parameter constructor needs exactly n dynamic dimensions");
        detail::fill_dynamic<N1, N2, N3, N4, N5>(shape, values...);
    }
};

//! a GlobalTensor's strides (elements), constructed like `Shape`
template <int64_t SN1 = DYNAMIC, int64_t SN2 = DYNAMIC, int64_t SN3 = DYNAMIC,
          int64_t SN4 = DYNAMIC, int64_t SN5 = DYNAMIC>
struct Stride {
    static constexpr int64_t staticStride[5] = {SN1, SN2, SN3, SN4, SN5};
    int64_t stride[5] = {SN1, SN2, SN3, SN4, SN5};

    Stride()
    {
        for (int64_t& d : stride) d = d == DYNAMIC ? 1 : d;
    }
    Stride(int64_t n1, int64_t n2, int64_t n3, int64_t n4, int64_t n5) : Stride()
    {
        const int64_t v[] = {n1, n2, n3, n4, n5};
        for (int d = 0; d < 5; ++d) {
            if (staticStride[d] == DYNAMIC) stride[d] = v[d];
        }
    }
    template <typename... V, std::enable_if_t<(sizeof...(V) >= 1 && sizeof...(V) <= 4), int> = 0>
    Stride(V... values) : Stride()
    {
        static_assert(detail::dynamic_count<SN1, SN2, SN3, SN4, SN5>() == sizeof...(V),
                      "an n-parameter constructor needs exactly n dynamic dimensions");
        detail::fill_dynamic<SN1, SN2, SN3, SN4, SN5>(stride, values...);
    }
};

//! the shape of a GlobalTensor a tile of [rows, cols] reads, by layout (pto-isa's
//! `TileShape2D`; the MX scale layouts here: [outer, inner, 2], the last axis the phase of two
//! consecutive K groups: MX_A_* [M, K/2, 2] / [K/2, M, 2], MX_B_* [K/2, N, 2] / [N, K/2, 2])
template <typename T, int64_t rows = DYNAMIC, int64_t cols = DYNAMIC, Layout L = Layout::ND>
struct TileShape2D;

namespace detail {
constexpr int64_t mx_half(int64_t n) { return n == DYNAMIC ? DYNAMIC : n / 2; }
}  // namespace detail

template <typename T, int64_t R, int64_t C>
struct TileShape2D<T, R, C, Layout::MX_A_ND> : Shape<1, 1, R, detail::mx_half(C), 2> {
    TileShape2D(int64_t rows, int64_t cols)
        : Shape<1, 1, R, detail::mx_half(C), 2>(1, 1, rows, cols / 2, 2) {}
};
template <typename T, int64_t R, int64_t C>
struct TileShape2D<T, R, C, Layout::MX_A_DN> : Shape<1, 1, detail::mx_half(C), R, 2> {
    TileShape2D(int64_t rows, int64_t cols)
        : Shape<1, 1, detail::mx_half(C), R, 2>(1, 1, cols / 2, rows, 2) {}
};
template <typename T, int64_t R, int64_t C>
struct TileShape2D<T, R, C, Layout::MX_B_ND> : Shape<1, 1, detail::mx_half(R), C, 2> {
    TileShape2D(int64_t rows, int64_t cols)
        : Shape<1, 1, detail::mx_half(R), C, 2>(1, 1, rows / 2, cols, 2) {}
};
template <typename T, int64_t R, int64_t C>
struct TileShape2D<T, R, C, Layout::MX_B_DN> : Shape<1, 1, C, detail::mx_half(R), 2> {
    TileShape2D(int64_t rows, int64_t cols)
        : Shape<1, 1, C, detail::mx_half(R), 2>(1, 1, cols, rows / 2, 2) {}
};

//! A view of global memory: element type, shape, strides and layout as pto-isa declares them.
//! Generated code re-points it at every access (`SetShape<DIM_3, DIM_4>` of the window, then
//! `TASSIGN(gt, ptr + offset)`); only DYNAMIC extents / strides may be set.
template <typename Element_, typename Shape_, typename Stride_, Layout Layout_ = Layout::ND>
struct GlobalTensor {
    using Shape = Shape_;
    using Stride = Stride_;
    using RawDType = Element_;
    using DType = Element_;
    static constexpr Layout layout = Layout_;
    static constexpr const int64_t (&staticShape)[5] = Shape_::staticShape;
    static constexpr const int64_t (&staticStride)[5] = Stride_::staticStride;

    GlobalTensor() = default;
    GlobalTensor(DType* data, const Shape& shape = Shape(), const Stride& stride = Stride())
        : data_(data), shape_(shape), stride_(stride)
    {
    }

    DType* data() const { return data_; }
    int64_t GetShape(const int dim) const { return dim >= 0 && dim < 5 ? shape_.shape[dim] : -1; }
    int64_t GetStride(const int dim) const
    {
        return dim >= 0 && dim < 5 ? stride_.stride[dim] : -1;
    }

    template <int... Dims, typename... V>
    void SetShape(V... values)
    {
        static_assert(sizeof...(Dims) >= 1 && sizeof...(Dims) == sizeof...(V),
                      "one value per dimension");
        static_assert(((Dims >= GlobalTensorDim::DIM_0 && Dims < GlobalTensorDim::TOTAL_DIM) && ...),
                      "only support set dim(0-4)");
        static_assert(((dim_of<Dims>(staticShape) == DYNAMIC) && ...), "dim must be DYNAMIC");
        const int dims[] = {Dims...};
        const int64_t vals[] = {static_cast<int64_t>(values)...};
        for (size_t i = 0; i < sizeof...(Dims); ++i) shape_.shape[dims[i]] = vals[i];
    }
    template <int... Dims, typename... V>
    void SetStride(V... values)
    {
        static_assert(sizeof...(Dims) >= 1 && sizeof...(Dims) == sizeof...(V),
                      "one value per dimension");
        static_assert(((Dims >= GlobalTensorDim::DIM_0 && Dims < GlobalTensorDim::TOTAL_DIM) && ...),
                      "only support set dim(0-4)");
        static_assert(((dim_of<Dims>(staticStride) == DYNAMIC) && ...), "dim must be DYNAMIC");
        const int dims[] = {Dims...};
        const int64_t vals[] = {static_cast<int64_t>(values)...};
        for (size_t i = 0; i < sizeof...(Dims); ++i) stride_.stride[dims[i]] = vals[i];
    }
    void SetAddr(DType* data) { data_ = data; }

private:
    template <int D>
    static constexpr int64_t dim_of(const int64_t (&extents)[5])
    {
        return D >= 0 && D < 5 ? extents[D] : 0;
    }

    DType* data_ = nullptr;
    Shape shape_;
    Stride stride_;
};

template <typename T>
struct is_global : std::false_type {};
template <typename E, typename S, typename St, Layout L>
struct is_global<GlobalTensor<E, S, St, L>> : std::true_type {};
template <typename T>
inline constexpr bool is_global_data_v = is_global<std::remove_cv_t<T>>::value;

template <typename T, typename S, typename St, Layout L, typename P,
          std::enable_if_t<std::is_pointer_v<P>, int> = 0>
inline void TASSIGN(GlobalTensor<T, S, St, L>& gt, P p,
                    pypto_native::Loc loc = pypto_native::Loc::here())
{
    static_assert(std::is_same_v<std::remove_cv_t<std::remove_pointer_t<P>>, T>,
                  "GlobalTensor can only be assigned with pointer of same data type.");
    pypto_native::record("TASSIGN", loc);
    gt.SetAddr(p);
}

}  // namespace pto

namespace pypto_native {

//! the window a generated access set: [DIM_3, DIM_4] extents and strides (elements)
template <typename GT> inline int64_t gm_rows(const GT& gt) { return gt.GetShape(3); }
template <typename GT> inline int64_t gm_cols(const GT& gt) { return gt.GetShape(4); }
template <typename GT> inline int64_t gm_row_stride(const GT& gt) { return gt.GetStride(3); }
template <typename GT> inline int64_t gm_col_stride(const GT& gt) { return gt.GetStride(4); }

}  // namespace pypto_native

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

//! `PYPTO_GM_CHECK(tensor, offset0, extent0, dim0, stride0, ...)` before a GM window access:
//! the simulator's per-axis rule, 0 <= offset and offset + extent <= dim on every axis (the
//! buffer check alone misses a window that wraps into the next row), except for a window that
//! runs past the tensor's end: every element outside the shape after the tensor's last one.
//! Such a window reaches the bytes the NPU allocator reserves with the storage; the access's
//! own buffer check (the launcher registers them with the tensor) bounds it there.
template <typename... A>
inline void check_gm_axes(const char* tensor, int line, A... quads)
{
    static_assert(sizeof...(A) % 4 == 0, "offset, extent, dim, stride per axis");
    const int64_t v[] = {static_cast<int64_t>(quads)...};
    const int axes = static_cast<int>(sizeof...(A) / 4);
    int64_t first = 0, last = 0;  // the window's first element, the tensor's last one
    int bad = -1;
    bool past_end = true;
    for (int a = 0; a < axes; ++a) {
        const int64_t off = v[4 * a], ext = v[4 * a + 1], dim = v[4 * a + 2], st = v[4 * a + 3];
        first += off * st;
        last += (dim - 1) * st;
        if (off < 0 || off + ext > dim) {
            if (bad < 0) bad = a;
            past_end = past_end && off >= 0 && st >= 0 && dim > 0;
        }
    }
    if (bad < 0) return;
    for (int a = 0; a < axes && past_end; ++a) {
        const int64_t off = v[4 * a], ext = v[4 * a + 1], dim = v[4 * a + 2], st = v[4 * a + 3];
        if (ext > 0 && off + ext > dim) {  // its first element outside the shape on this axis
            past_end = first - off * st + std::max(off, dim) * st > last;
        }
    }
    if (past_end) return;
    const int64_t off = v[4 * bad], ext = v[4 * bad + 1], dim = v[4 * bad + 2];
    raise_fault(FaultKind::Trap, line, "%s: the GM window covers [%lld, %lld) of axis %d of "
                "tensor '%s', whose size is %lld (out of bounds)", where().c_str(),
                static_cast<long long>(off), static_cast<long long>(off + ext), bad, tensor,
                static_cast<long long>(dim));
}

//! GM atomic accumulate (set_atomic_add): one lock for the whole chip is enough on a CPU
inline std::mutex& atomic_mutex()
{
    static std::mutex m;
    return m;
}

//! the divisor of an integer `/` or `%` written as the constant 0 (`PYPTO_ZERO_DIVISOR`): the
//! simulator's run-time fault at that line, where the C++ compiler would turn the undefined
//! division into a trap at some other place
template <typename T>
[[noreturn]] inline T zero_divisor(int line)
{
    raise_fault(FaultKind::Sync, line, "division by zero in scalar code");
}

}  // namespace pypto_native

#define PYPTO_ZERO_DIVISOR(T) (::pypto_native::zero_divisor<T>(__LINE__))
//! bounds-checked forms of the element access and window hooks of kernel.cpp (see prelude.py)
#define PYPTO_GM_ELEM(ptr, k) \
    (::pypto_native::gm_element((ptr), static_cast<int64_t>(k), __LINE__))
#define PYPTO_GM_CHECK(tensor, ...) ::pypto_native::check_gm_axes(tensor, __LINE__, __VA_ARGS__)
