// PyPTO Pro native backend: the Reg API (VF) registers and intrinsics, bit-identical to the
// simulator (`pypto_pro/sim/vf/`, whose module docstrings define every op).
//
// A `RegTensor<T>` is one 256-byte vector register (VL = 256 / sizeof(T) lanes), a `MaskReg`
// one predicate bit per byte (a lane of T is active when the bit of its first byte is set).
// Arithmetic runs in float32 / int64 and rounds once into T, as the tile ops do; inactive lanes
// are zeroed (MODE_ZEROING) or keep the destination (MODE_MERGING). Reductions use the
// simulator's pairwise tree (lane i with lane i + n/2, halving). UB operands are `__ubuf__`
// pointers (`tile_ub + k`); an op's own offset counts elements of the register's type.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "vector.hpp"

// CCE constants of the Reg API (every member of the VF attribute enums, as the generator
// spells them: MaskPattern with PAT_, MergeMode with MODE_, the others bare)
constexpr int PAT_ALL = 0, PAT_ALLF = 1, PAT_VL1 = 2, PAT_VL2 = 3, PAT_VL3 = 4, PAT_VL4 = 5,
              PAT_VL8 = 6, PAT_VL16 = 7, PAT_VL32 = 8, PAT_VL64 = 9, PAT_VL128 = 10, PAT_M3 = 11,
              PAT_M4 = 12, PAT_H = 13, PAT_Q = 14;
constexpr int MODE_ZEROING = 0, MODE_MERGING = 1;
constexpr int SUM = 0, MAX = 1, MIN = 2;
constexpr int LOWEST = 0, HIGHEST = 1;
constexpr int ZERO = 0, ONE = 1, TWO = 2, THREE = 3;
constexpr int CAST_ROUND = 0, CAST_RINT = 1, CAST_FLOOR = 2, CAST_CEIL = 3, CAST_TRUNC = 4,
              CAST_ODD = 5, CAST_HYBRID = 6;
constexpr int OFF = 0, ON = 1;
constexpr int BIN0 = 0, BIN1 = 1;
constexpr int ACCUMULATE = 0, FREQUENCY = 1;
constexpr int STORE_REG = 0, NO_STORE_REG = 1;
constexpr int LOWER = 0, UPPER = 1;
constexpr int B32 = 0, B16 = 1;
constexpr int NORM = 0, BRC = 1, BRC_B8 = 2, BRC_B16 = 3, BRC_B32 = 4, US = 5, US_B8 = 6,
              US_B16 = 7, DS = 8, DS_B8 = 9, DS_B16 = 10, UNPK = 11, UNPK_B8 = 12, UNPK_B16 = 13,
              UNPK_B32 = 14, UNPK4 = 15, BLK = 16, E2B = 17, E2B_B16 = 18, E2B_B32 = 19,
              DINTLV_B8 = 20, DINTLV_B16 = 21, DINTLV_B32 = 22;
constexpr int NORM_B8 = 100, NORM_B16 = 101, NORM_B32 = 102, NORM_B64 = 103, FIRST_ELEMENT = 104,
              PACK = 105, PACK4 = 106, INTLV = 107, INTLV_B32 = 108;
constexpr int DATA_BLOCK_LOAD = 1, DATA_BLOCK_COPY = 2;
constexpr int VST_VLD = 0, VLD_VST = 1, VST_VST = 2, VST_LD = 3, VST_ST = 4, VLD_ST = 5,
              ST_VLD = 6, ST_VST = 7, LD_VST = 8, VV_ALL = 9, VS_ALL = 10, SV_ALL = 11;
constexpr int INCREASE_ORDER = 0, DECREASE_ORDER = 1;

constexpr int kVL = 256;

template <typename T>
struct RegTensor {
    static constexpr int lanes = kVL / static_cast<int>(sizeof(T));
    T v[lanes] = {};
};

struct MaskReg {
    uint8_t bits[kVL] = {};
    template <typename T>
    bool active(int lane) const { return bits[lane * sizeof(T)] != 0; }
};

namespace pypto_native {

inline MaskReg mask_pattern(int pattern, int elem)
{
    MaskReg m;
    const int lanes = kVL / elem;
    int n = lanes;
    switch (pattern) {
        case PAT_ALLF: n = 0; break;
        case PAT_VL1: n = 1; break;
        case PAT_VL2: n = 2; break;
        case PAT_VL3: n = 3; break;
        case PAT_VL4: n = 4; break;
        case PAT_VL8: n = 8; break;
        case PAT_VL16: n = 16; break;
        case PAT_VL32: n = 32; break;
        case PAT_VL64: n = 64; break;
        case PAT_VL128: n = 128; break;
        case PAT_H: n = lanes / 2; break;
        case PAT_Q: n = lanes / 4; break;
        default: break;
    }
    for (int i = 0; i < lanes; ++i) {
        bool on = i < n;
        if (pattern == PAT_M3) on = i % 3 == 0;
        if (pattern == PAT_M4) on = i % 4 == 0;
        if (on) std::memset(&m.bits[i * elem], 1, static_cast<size_t>(elem));
    }
    return m;
}

template <typename T, typename F>
inline void vf_map(RegTensor<T>& dst, const MaskReg& mask, int mode, F f)
{
    for (int i = 0; i < RegTensor<T>::lanes; ++i) {
        if (mask.template active<T>(i)) {
            dst.v[i] = f(i);
        } else if (mode == MODE_ZEROING) {
            dst.v[i] = T{};
        }
    }
}

template <typename T>
inline T vf_round(CT<T> x)
{
    return encode<T>(x);
}

}  // namespace pypto_native

inline MaskReg pset_b8(int pattern = PAT_ALL) { return pypto_native::mask_pattern(pattern, 1); }
inline MaskReg pset_b16(int pattern = PAT_ALL) { return pypto_native::mask_pattern(pattern, 2); }
inline MaskReg pset_b32(int pattern = PAT_ALL) { return pypto_native::mask_pattern(pattern, 4); }
inline MaskReg pset_b64(int pattern = PAT_ALL) { return pypto_native::mask_pattern(pattern, 8); }

inline MaskReg plt_n(int64_t count, int elem)
{
    MaskReg m;
    const int64_t n = std::max<int64_t>(0, std::min<int64_t>(count, kVL / elem));
    std::memset(m.bits, 1, static_cast<size_t>(n * elem));
    return m;
}
inline MaskReg plt_b8(int64_t count) { return plt_n(count, 1); }
inline MaskReg plt_b16(int64_t count) { return plt_n(count, 2); }
inline MaskReg plt_b32(int64_t count) { return plt_n(count, 4); }
inline MaskReg plt_b64(int64_t count) { return plt_n(count, 8); }

namespace pypto_native {

template <typename T>
inline const uint8_t* vf_ub(const T* p, int64_t offset_bytes)
{
    return ub_pointer(p) + offset_bytes;
}

[[noreturn]] inline void vf_unsupported(const char* op, const char* what, int value)
{
    raise_fault(FaultKind::Trap, 0, "%s: %s: %s %d is not supported (see the simulator's "
                "pypto_pro/sim/vf docs)", where().c_str(), op, what, value);
}

}  // namespace pypto_native

//! aligned load with a distribution (NORM, BRC*, US*, DS*, UNPK*, UNPK4, BLK, E2B*) or eight
//! 32-byte blocks `block_stride` blocks apart (DATA_BLOCK_LOAD)
template <typename T, typename P>
inline void vlds(RegTensor<T>& dst, P* src, int64_t offset = 0, int dist = NORM,
                 int copy_mode = NORM, int64_t block_stride = 1, int64_t = 0)
{
    using namespace pypto_native;
    constexpr int size = static_cast<int>(sizeof(T));
    constexpr int lanes = RegTensor<T>::lanes;
    const uint8_t* p = vf_ub(src, offset * size);
    uint8_t* out = reinterpret_cast<uint8_t*>(dst.v);
    if (copy_mode == DATA_BLOCK_LOAD) {
        if (dist != NORM) vf_unsupported("vlds", "DATA_BLOCK_LOAD with distribution", dist);
        for (int j = 0; j < 8; ++j) std::memcpy(out + 32 * j, p + j * block_stride * 32, 32);
        return;
    }
    uint8_t buf[kVL];
    switch (dist) {
        case NORM: std::memcpy(buf, p, kVL); break;
        case BRC: case BRC_B8: case BRC_B16: case BRC_B32:
            for (int i = 0; i < lanes; ++i) std::memcpy(buf + i * size, p, size);
            break;
        case US: case US_B8: case US_B16:
            for (int i = 0; i < lanes; ++i) std::memcpy(buf + i * size, p + (i / 2) * size, size);
            break;
        case DS: case DS_B8: case DS_B16:
            for (int i = 0; i < lanes; ++i) std::memcpy(buf + i * size, p + 2 * i * size, size);
            break;
        case UNPK: case UNPK_B8: case UNPK_B16: case UNPK_B32: case UNPK4: {
            const int part = dist == UNPK4 ? 4 : 2;
            if (size < part) vf_unsupported("vlds", "UNPK on lanes this narrow, distribution", dist);
            const int low = size / part;
            std::memset(buf, 0, kVL);
            for (int i = 0; i < lanes; ++i) std::memcpy(buf + i * size, p + i * low, low);
            break;
        }
        case BLK:
            for (int j = 0; j < 8; ++j) std::memcpy(buf + 32 * j, p, 32);
            break;
        case E2B: case E2B_B16: case E2B_B32:
            for (int i = 0; i < lanes; ++i) std::memcpy(buf + i * size, p + (i / (32 / size)) * size, size);
            break;
        default: vf_unsupported("vlds", "the two-register distribution", dist);
    }
    std::memcpy(out, buf, kVL);
}

//! store of the active lanes: NORM*, FIRST_ELEMENT, PACK (low half of each lane), PACK4
template <typename T, typename P>
inline void vsts(const RegTensor<T>& src, P* dst, int64_t offset = 0, int dist = NORM,
                 const MaskReg& mask = pset_b8(PAT_ALL))
{
    using namespace pypto_native;
    constexpr int size = static_cast<int>(sizeof(T));
    uint8_t* p = const_cast<uint8_t*>(vf_ub(dst, offset * size));
    const uint8_t* in = reinterpret_cast<const uint8_t*>(src.v);
    int width = size, lanes = RegTensor<T>::lanes;
    if (dist == FIRST_ELEMENT) {
        lanes = 1;
    } else if (dist == PACK || dist == PACK4) {
        const int part = dist == PACK ? 2 : 4;
        if (size < part) vf_unsupported("vsts", "PACK on lanes this narrow, distribution", dist);
        width = size / part;
    } else if (dist != NORM && (dist < NORM_B8 || dist > NORM_B64)) {
        vf_unsupported("vsts", "the two-register distribution", dist);
    }
    for (int i = 0; i < lanes; ++i) {
        if (mask.template active<T>(i)) std::memcpy(p + i * width, in + i * size, width);
    }
}

#define PYPTO_VF_BIN(NAME, EXPR)                                                            \
    template <typename T>                                                                   \
    inline void NAME(RegTensor<T>& dst, const RegTensor<T>& a, const RegTensor<T>& b,       \
                     const MaskReg& mask, int mode = MODE_ZEROING)                          \
    {                                                                                       \
        using namespace pypto_native;                                                       \
        vf_map(dst, mask, mode, [&](int i) {                                                \
            const CT<T> x = Elem<T>::load(a.v[i]), y = Elem<T>::load(b.v[i]);               \
            (void)x, (void)y;                                                               \
            return vf_round<T>(EXPR);                                                       \
        });                                                                                 \
    }
#define PYPTO_VF_BINS(NAME, EXPR)                                                           \
    template <typename T, typename S>                                                       \
    inline void NAME(RegTensor<T>& dst, const RegTensor<T>& a, S s, const MaskReg& mask,    \
                     int mode = MODE_ZEROING)                                               \
    {                                                                                       \
        using namespace pypto_native;                                                       \
        const CT<T> y = scalar_in<T>(s);                                                    \
        vf_map(dst, mask, mode, [&](int i) {                                                \
            const CT<T> x = Elem<T>::load(a.v[i]);                                          \
            return vf_round<T>(EXPR);                                                       \
        });                                                                                 \
    }
#define PYPTO_VF_UN(NAME, EXPR)                                                             \
    template <typename T>                                                                   \
    inline void NAME(RegTensor<T>& dst, const RegTensor<T>& a, const MaskReg& mask,         \
                     int mode = MODE_ZEROING)                                               \
    {                                                                                       \
        using namespace pypto_native;                                                       \
        vf_map(dst, mask, mode, [&](int i) {                                                \
            const CT<T> x = Elem<T>::load(a.v[i]);                                          \
            return vf_round<T>(EXPR);                                                       \
        });                                                                                 \
    }

namespace pypto_native {
template <typename C>
inline C vf_not(C x)
{
    if constexpr (std::is_integral_v<C>) {
        return ~x;
    } else {
        raise_fault(FaultKind::Trap, 0, "%s: vnot needs an integer register", where().c_str());
    }
}
template <typename C>
inline C vf_exp(C x)
{
    if constexpr (std::is_floating_point_v<C>) {
        float in = static_cast<float>(x), out = 0;
        vexp(&in, &out, 1);
        return out;
    } else {
        return x;
    }
}
template <typename C>
inline C vf_ln(C x)
{
    if constexpr (std::is_floating_point_v<C>) {
        float in = static_cast<float>(x), out = 0;
        vln(&in, &out, 1);
        return out;
    } else {
        return x;
    }
}
template <typename C>
inline C vf_sqrt(C x)
{
    if constexpr (std::is_floating_point_v<C>) {
        float in = static_cast<float>(x), out = 0;
        vsqrt(&in, &out, 1);
        return out;
    } else {
        return x;
    }
}
}  // namespace pypto_native

namespace pypto_native {
template <typename C>
inline C vf_trunc(C x)
{
    if constexpr (std::is_floating_point_v<C>) {
        return std::trunc(x);
    } else {
        return x;
    }
}
template <typename C>
inline C vf_int(C x, C y, int op)
{
    if constexpr (std::is_integral_v<C>) {
        switch (op) {
            case 0: return x & y;
            case 1: return x | y;
            case 2: return x ^ y;
            case 3: return (y >= 0 && y < 64) ? static_cast<C>(static_cast<uint64_t>(x) << y) : 0;
            default: return x >> std::min<C>(std::max<C>(y, 0), 63);
        }
    } else {
        raise_fault(FaultKind::Trap, 0, "%s: VF bitwise ops need integer registers",
                    where().c_str());
    }
}
}  // namespace pypto_native

PYPTO_VF_BIN(vadd, x + y)
PYPTO_VF_BIN(vand, vf_int(x, y, 0))
PYPTO_VF_BIN(vor, vf_int(x, y, 1))
PYPTO_VF_BIN(vxor, vf_int(x, y, 2))
PYPTO_VF_BIN(vsub, x - y)
PYPTO_VF_BIN(vmul, x * y)
PYPTO_VF_BIN(vdiv, op_div(x, y))
PYPTO_VF_BIN(vmax, op_max(x, y))
PYPTO_VF_BIN(vmin, op_min(x, y))
PYPTO_VF_BIN(vabsdif, (x > y ? x - y : y - x))
PYPTO_VF_BIN(vexpdif, vf_exp(x - y))
PYPTO_VF_BINS(vadds, x + y)
PYPTO_VF_BINS(vsubs, x - y)
PYPTO_VF_BINS(vmuls, x * y)
PYPTO_VF_BINS(vmaxs, op_max(x, y))
PYPTO_VF_BINS(vmins, op_min(x, y))
PYPTO_VF_BINS(vlrelu, (x < 0 ? x * y : x))
PYPTO_VF_BINS(vshl, vf_int(x, y, 3))
PYPTO_VF_BINS(vshr, vf_int(x, y, 4))
PYPTO_VF_BINS(vaxpy, y * x + Elem<T>::load(dst.v[i]))
PYPTO_VF_UN(vnot, vf_not(x))
PYPTO_VF_BIN(vprelu, (x < 0 ? x * y : x))
PYPTO_VF_BIN(vmula, x * y + Elem<T>::load(dst.v[i]))
PYPTO_VF_BIN(vmadd, x * Elem<T>::load(dst.v[i]) + y)
PYPTO_VF_UN(vabs, (x < 0 ? -x : x))
PYPTO_VF_UN(vlog2, vf_ln(x) / CT<T>(0.6931471805599453))
PYPTO_VF_UN(vlog10, vf_ln(x) / CT<T>(2.302585092994046))
PYPTO_VF_UN(vtrc, vf_trunc(x))
PYPTO_VF_UN(vneg, -x)
PYPTO_VF_UN(vrelu, op_relu(x))
PYPTO_VF_UN(vexp, vf_exp(x))
PYPTO_VF_UN(vln, vf_ln(x))
PYPTO_VF_UN(vsqrt, vf_sqrt(x))

template <typename T, typename S>
inline void vdup(RegTensor<T>& dst, S value, const MaskReg& mask, int mode = MODE_ZEROING,
                 int pos = 0)
{
    using namespace pypto_native;
    (void)pos;
    const T v = vf_round<T>(scalar_in<T>(value));
    vf_map(dst, mask, mode, [&](int) { return v; });
}

template <typename T>
inline void vdup(RegTensor<T>& dst, const RegTensor<T>& src, const MaskReg& mask,
                 int mode = MODE_ZEROING, int pos = 0)
{
    using namespace pypto_native;
    const T v = pos == 0 ? src.v[0] : src.v[RegTensor<T>::lanes - 1];
    vf_map(dst, mask, mode, [&](int) { return v; });
}

namespace pypto_native {

//! the simulator's pairwise tree over `n` values (v[i] op v[i + n/2], halving)
template <typename C, typename F>
inline C vf_tree(C* v, int n, F op)
{
    for (; n > 1; n /= 2) {
        for (int i = 0; i < n / 2; ++i) v[i] = op(v[i], v[i + n / 2]);
    }
    return v[0];
}

template <typename T, typename F>
inline void vf_reduce(RegTensor<T>& dst, const RegTensor<T>& src, const MaskReg& mask,
                      bool datablock, int mode, int kind, F op)
{
    using C = CT<T>;
    constexpr int lanes = RegTensor<T>::lanes;
    const int groups = datablock ? 8 : 1, n = lanes / groups;
    C filler = C(0);
    if (kind != SUM) {
        if constexpr (std::is_floating_point_v<C>) {
            filler = kind == MAX ? -INFINITY : INFINITY;
        } else {
            filler = kind == MAX ? std::numeric_limits<int64_t>::min()
                                 : std::numeric_limits<int64_t>::max();
        }
    }
    C out[8];
    for (int g = 0; g < groups; ++g) {
        C v[kVL];
        bool any = false;
        for (int i = 0; i < n; ++i) {
            const int lane = g * n + i;
            const bool on = mask.template active<T>(lane);
            any = any || on;
            v[i] = on ? Elem<T>::load(src.v[lane]) : filler;
        }
        out[g] = vf_tree(v, n, op);
        if (kind != SUM && !any) out[g] = C(0);
    }
    if (mode == MODE_ZEROING) dst = RegTensor<T>{};
    for (int g = 0; g < groups; ++g) dst.v[g] = vf_round<T>(out[g]);
}

}  // namespace pypto_native

#define PYPTO_VF_RED(NAME, KIND, STEP)                                                      \
    template <typename T>                                                                   \
    inline void NAME(RegTensor<T>& dst, const RegTensor<T>& src, const MaskReg& mask,       \
                     bool datablock = false, int mode = MODE_ZEROING)                       \
    {                                                                                       \
        using namespace pypto_native;                                                       \
        vf_reduce(dst, src, mask, datablock, mode, KIND,                                    \
                  [](CT<T> acc, CT<T> x) { return STEP; });                                 \
    }

PYPTO_VF_RED(vcadd, SUM, acc + x)
PYPTO_VF_RED(vcmax, MAX, op_max(acc, x))
PYPTO_VF_RED(vcmin, MIN, op_min(acc, x))

#define PYPTO_VF_CMP(NAME, MODE)                                                            \
    template <typename T>                                                                   \
    inline void NAME(MaskReg& dst, const RegTensor<T>& a, const RegTensor<T>& b,            \
                     const MaskReg& mask)                                                   \
    {                                                                                       \
        using namespace pypto_native;                                                       \
        dst = MaskReg{};                                                                    \
        for (int i = 0; i < RegTensor<T>::lanes; ++i) {                                     \
            if (mask.template active<T>(i) &&                                               \
                compare(MODE, Elem<T>::load(a.v[i]), Elem<T>::load(b.v[i]))) {              \
                std::memset(&dst.bits[i * sizeof(T)], 1, sizeof(T));                        \
            }                                                                               \
        }                                                                                   \
    }

PYPTO_VF_CMP(vcmp_eq, pto::CmpMode::EQ)
PYPTO_VF_CMP(vcmp_ne, pto::CmpMode::NE)
PYPTO_VF_CMP(vcmp_lt, pto::CmpMode::LT)
PYPTO_VF_CMP(vcmp_le, pto::CmpMode::LE)
PYPTO_VF_CMP(vcmp_gt, pto::CmpMode::GT)
PYPTO_VF_CMP(vcmp_ge, pto::CmpMode::GE)

template <typename T>
inline void vsel(RegTensor<T>& dst, const RegTensor<T>& t, const RegTensor<T>& f,
                 const MaskReg& mask)
{
    for (int i = 0; i < RegTensor<T>::lanes; ++i) dst.v[i] = mask.template active<T>(i) ? t.v[i] : f.v[i];
}

//! the simulator's VF round modes (VFRoundMode order; CAST_HYBRID rounds like RINT)
inline pto::RoundMode vf_round_mode(int mode)
{
    switch (mode) {
        case CAST_ROUND: return pto::RoundMode::CAST_ROUND;
        case CAST_FLOOR: return pto::RoundMode::CAST_FLOOR;
        case CAST_CEIL: return pto::RoundMode::CAST_CEIL;
        case CAST_TRUNC: return pto::RoundMode::CAST_TRUNC;
        case CAST_ODD: return pto::RoundMode::CAST_ODD;
        default: return pto::RoundMode::CAST_RINT;
    }
}

namespace pypto_native {

//! FP4 registers hold 512 lanes, two per byte (even lane in the low nibble); one mask bit per
//! byte governs both
template <typename T>
constexpr bool vf_fp4 = std::is_same_v<T, float4_e2m1x2_t> || std::is_same_v<T, float4_e1m2x2_t>;
template <typename T>
constexpr int vf_lanes = vf_fp4<T> ? 2 * kVL : kVL / static_cast<int>(sizeof(T));

template <typename T>
inline bool vf_active(const MaskReg& m, int lane)
{
    if constexpr (vf_fp4<T>) {
        return m.bits[lane / 2] != 0;
    } else {
        return m.template active<T>(lane);
    }
}

template <typename T>
inline CT<T> vf_get(const RegTensor<T>& r, int lane)
{
    if constexpr (vf_fp4<T>) {
        return Elem<T>::load(T(static_cast<uint8_t>((r.v[lane / 2].bits >> (4 * (lane % 2))) & 0xF)));
    } else {
        return Elem<T>::load(r.v[lane]);
    }
}

template <typename T>
inline void vf_set(RegTensor<T>& r, int lane, T value)
{
    if constexpr (vf_fp4<T>) {
        const int shift = 4 * (lane % 2);
        const uint8_t keep = static_cast<uint8_t>(r.v[lane / 2].bits & ~(0xF << shift));
        r.v[lane / 2] = T(static_cast<uint8_t>(keep | ((value.bits & 0xF) << shift)));
    } else {
        r.v[lane] = value;
    }
}

}  // namespace pypto_native

//! astype: n = min(lanes) lanes; `layout` k picks source lanes [k n, k n + n) of a widening
//! conversion or destination lanes [k n, k n + n) of a narrowing one; inactive lanes keep dst
template <typename D, typename S>
inline void vcvt(RegTensor<D>& dst, const RegTensor<S>& src, const MaskReg& mask, int layout = ZERO,
                 int round_mode = CAST_RINT, int saturate = OFF)
{
    using namespace pypto_native;
    constexpr int ns = vf_lanes<S>, nd = vf_lanes<D>;
    constexpr int n = ns < nd ? ns : nd;
    const int s0 = ns > nd ? layout * n : 0, d0 = nd > ns ? layout * n : 0;
    if ((s0 > d0 ? s0 : d0) + n > (ns > nd ? ns : nd)) {
        raise_fault(FaultKind::Trap, 0, "%s: vcvt layout %d is out of range", where().c_str(),
                    layout);
    }
    const pto::RoundMode round = vf_round_mode(round_mode);
    for (int i = 0; i < n; ++i) {
        if (!vf_active<S>(mask, s0 + i)) continue;
        const auto x = vf_get(src, s0 + i);
        D out;
        if constexpr (Elem<D>::is_float) {
            if (saturate == ON) {
                const double top = format_of(Elem<D>::dt).max_finite;
                out = encode<D>(std::min(std::max(static_cast<double>(x), -top), top), round);
            } else {
                out = encode<D>(x, round);
            }
        } else if constexpr (Elem<S>::is_float) {
            out = encode<D>(x, round);
        } else {
            out = saturate == ON ? Elem<D>::saturate_int(x) : Elem<D>::wrap(x);
        }
        vf_set(dst, d0 + i, out);
    }
}

inline void mem_bar(int = 0) {}

//! the index ramp: start, start + 1, ... (INCREASE_ORDER) or start, start - 1, ...
template <typename T, typename S>
inline void vci(RegTensor<T>& dst, S start, int order = INCREASE_ORDER)
{
    using namespace pypto_native;
    const CT<T> s = scalar_in<T>(start);
    for (int i = 0; i < RegTensor<T>::lanes; ++i) {
        const CT<T> step = static_cast<CT<T>>(i);
        dst.v[i] = vf_round<T>(order == INCREASE_ORDER ? s + step : s - step);
    }
}

//! pair reduction: lane i of the result is src[2i] + src[2i + 1] (active pairs)
template <typename T>
inline void vcpadd(RegTensor<T>& dst, const RegTensor<T>& src, const MaskReg& mask,
                   int mode = MODE_ZEROING)
{
    using namespace pypto_native;
    RegTensor<T> out = mode == MODE_ZEROING ? RegTensor<T>{} : dst;
    for (int i = 0; i < RegTensor<T>::lanes / 2; ++i) {
        if (!mask.template active<T>(2 * i)) continue;
        out.v[i] = vf_round<T>(Elem<T>::load(src.v[2 * i]) + Elem<T>::load(src.v[2 * i + 1]));
    }
    dst = out;
}

template <typename D, typename S>
inline void vbitcast(RegTensor<D>& dst, const RegTensor<S>& src)
{
    std::memcpy(dst.v, src.v, kVL);
}

template <typename T>
inline void vmov(RegTensor<T>& dst, const RegTensor<T>& src, const MaskReg& mask)
{
    for (int i = 0; i < RegTensor<T>::lanes; ++i) {
        if (mask.template active<T>(i)) dst.v[i] = src.v[i];
    }
}

inline void vmov(MaskReg& dst, const MaskReg& src) { dst = src; }

//! a predicate from a register: lane active where the register's lane is non-zero
template <typename T>
inline void movvp(MaskReg& dst, const RegTensor<T>& src)
{
    dst = MaskReg{};
    for (int i = 0; i < RegTensor<T>::lanes; ++i) {
        T zero{};
        if (std::memcmp(&src.v[i], &zero, sizeof(T)) != 0) std::memset(&dst.bits[i * sizeof(T)], 1, sizeof(T));
    }
}

//! the vector mask SPR (set_vector_mask) as a predicate of `elem`-byte lanes
inline MaskReg mask_from_spr(int elem)
{
    MaskReg m;
    const auto& spr = pypto_native::ctx().vector_mask;  // [0] high 64 lanes, [1] low 64 lanes
    for (int i = 0; i < kVL / elem && i < 128; ++i) {
        const uint64_t word = i < 64 ? spr[1] : spr[0];
        if ((word >> (i % 64)) & 1u) std::memset(&m.bits[i * elem], 1, static_cast<size_t>(elem));
    }
    return m;
}
inline MaskReg get_mask_spr_b8(int = 0) { return mask_from_spr(1); }
inline MaskReg get_mask_spr_b16(int = 0) { return mask_from_spr(2); }
inline MaskReg get_mask_spr_b32(int = 0) { return mask_from_spr(4); }
inline MaskReg get_mask_spr_b64(int = 0) { return mask_from_spr(8); }

inline void clear_spr(int = 0) { pypto_native::ctx().ar = 0; }

//! muls_cast: dst (another type) = src * scalar, rounded once (lanes past min(lanes) zeroed
//! in MODE_ZEROING)
template <typename D, typename S, typename X>
inline void vmulscvt(RegTensor<D>& dst, const RegTensor<S>& src, X scalar, const MaskReg& mask,
                     int mode = MODE_ZEROING)
{
    using namespace pypto_native;
    const CT<S> y = scalar_in<S>(scalar);
    const int n = std::min(RegTensor<D>::lanes, RegTensor<S>::lanes);
    if (mode == MODE_ZEROING) dst = RegTensor<D>{};
    for (int i = 0; i < n; ++i) {
        if (mask.template active<S>(i)) dst.v[i] = encode<D>(Elem<S>::load(src.v[i]) * y);
    }
}

template <typename T>
inline void vmov(RegTensor<T>& dst, const RegTensor<T>& src) { dst = src; }

// ------------------------------------------------------------------ unaligned loads / stores

//! vldas: the align register primed with the 32-byte block holding the address
template <typename T, typename P>
inline void vldas(RegTensor<T>& dst, P* src, int64_t offset = 0)
{
    const uint8_t* p = pypto_native::ub_pointer(src) + offset * static_cast<int64_t>(sizeof(T));
    const uint8_t* block = pypto_native::ub_pointer(nullptr) +
        ((p - pypto_native::ub_pointer(nullptr)) / 32) * 32;
    for (int j = 0; j < 8; ++j) std::memcpy(reinterpret_cast<uint8_t*>(dst.v) + 32 * j, block, 32);
}

//! vldus: VL bytes from any element address (the align register only primes the hardware)
template <typename T, typename P>
inline void vldus(RegTensor<T>& dst, const RegTensor<T>&, P* src, int64_t offset = 0)
{
    std::memcpy(dst.v, pypto_native::ub_pointer(src) + offset * static_cast<int64_t>(sizeof(T)),
                kVL);
}

//! the unaligned-store register (all zero)
template <typename T>
inline void vstus_init(RegTensor<T>& dst) { dst = RegTensor<T>{}; }

//! vstus: all VL bytes at any element address; vstas flushes (stores already landed here)
template <typename T, typename P>
inline void vstus(const RegTensor<T>& src, P* dst, const RegTensor<T>&, int64_t offset = 0)
{
    std::memcpy(pypto_native::ub_pointer(dst) + offset * static_cast<int64_t>(sizeof(T)), src.v,
                kVL);
}
template <typename T, typename P>
inline void vstas(const RegTensor<T>&, P*, int64_t = 0) {}

// ------------------------------------------------------------------ gather / scatter / ramps

//! lane i = src[index[i]] (element indices) on active lanes, zero elsewhere
template <typename T, typename P, typename I>
inline void vgatherb(RegTensor<T>& dst, P* src, const RegTensor<I>& index, const MaskReg& mask)
{
    const T* base = reinterpret_cast<const T*>(pypto_native::ub_pointer(src));
    RegTensor<T> out;
    const int n = std::min(RegTensor<T>::lanes, RegTensor<I>::lanes);
    for (int i = 0; i < n; ++i) {
        if (mask.template active<T>(i)) out.v[i] = base[static_cast<int64_t>(index.v[i])];
    }
    dst = out;
}

//! dst[index[i]] = src[i] on active lanes (later lanes win)
template <typename T, typename P, typename I>
inline void vscatter(const RegTensor<T>& src, P* dst, const RegTensor<I>& index,
                     const MaskReg& mask)
{
    T* base = reinterpret_cast<T*>(pypto_native::ub_pointer(dst));
    const int n = std::min(RegTensor<T>::lanes, RegTensor<I>::lanes);
    for (int i = 0; i < n; ++i) {
        if (mask.template active<T>(i)) base[static_cast<int64_t>(index.v[i])] = src.v[i];
    }
}

namespace pypto_native {
//! an address register: base + i * stride, in any register type of the width
struct VfRamp {
    int64_t base, stride;
    template <typename T>
    operator RegTensor<T>() const
    {
        RegTensor<T> r;
        for (int i = 0; i < RegTensor<T>::lanes; ++i) r.v[i] = encode<T>(base + stride * i);
        return r;
    }
};
}  // namespace pypto_native
inline pypto_native::VfRamp vag_b8(int64_t base, int64_t stride = 1) { return {base, stride}; }
inline pypto_native::VfRamp vag_b16(int64_t base, int64_t stride = 1) { return {base, stride}; }
inline pypto_native::VfRamp vag_b32(int64_t base, int64_t stride = 1) { return {base, stride}; }
inline pypto_native::VfRamp vag_b64(int64_t base, int64_t stride = 1) { return {base, stride}; }

// ------------------------------------------------------------------ wide multiply, carries

//! the high half of the double-width product (vmul gives the low half)
template <typename T>
inline void vmull(RegTensor<T>& dst, const RegTensor<T>& a, const RegTensor<T>& b,
                  const MaskReg& mask, int mode = MODE_ZEROING)
{
    using namespace pypto_native;
    static_assert(std::is_integral_v<T> && sizeof(T) <= 4, "vmull needs 8/16/32-bit integers");
    vf_map(dst, mask, mode, [&](int i) {
        const int64_t x = Elem<T>::load(a.v[i]), y = Elem<T>::load(b.v[i]);
        int64_t high;
        if constexpr (std::is_same_v<T, uint32_t>) {
            high = ((x >> 16) * y + (((x & 0xFFFF) * y) >> 16)) >> 16;
        } else {
            high = (x * y) >> (8 * sizeof(T));
        }
        return Elem<T>::wrap(high);
    });
}

//! a + b + carry / a - b - borrow, the carry (borrow) in being the mask's active lanes
template <typename T>
inline void vaddcs(RegTensor<T>& dst, const RegTensor<T>& a, const RegTensor<T>& b,
                   const MaskReg& carry, int = MODE_ZEROING)
{
    static_assert(std::is_integral_v<T>, "vaddcs needs integer registers");
    for (int i = 0; i < RegTensor<T>::lanes; ++i) {
        const int64_t c = carry.template active<T>(i) ? 1 : 0;
        dst.v[i] = pypto_native::Elem<T>::wrap(pypto_native::Elem<T>::load(a.v[i]) +
                                               pypto_native::Elem<T>::load(b.v[i]) + c);
    }
}
template <typename T>
inline void vsubcs(RegTensor<T>& dst, const RegTensor<T>& a, const RegTensor<T>& b,
                   const MaskReg& borrow, int = MODE_ZEROING)
{
    static_assert(std::is_integral_v<T>, "vsubcs needs integer registers");
    for (int i = 0; i < RegTensor<T>::lanes; ++i) {
        const int64_t c = borrow.template active<T>(i) ? 1 : 0;
        dst.v[i] = pypto_native::Elem<T>::wrap(pypto_native::Elem<T>::load(a.v[i]) -
                                               pypto_native::Elem<T>::load(b.v[i]) - c);
    }
}

// ------------------------------------------------------------------ rearrangement

//! pack: each lane wrapped to half width, into the lower / upper half of dst (other half 0)
template <typename D, typename S>
inline void vpack(RegTensor<D>& dst, const RegTensor<S>& src, int part = LOWER)
{
    static_assert(std::is_integral_v<D> && sizeof(D) * 2 == sizeof(S), "vpack halves integers");
    RegTensor<D> out;
    for (int i = 0; i < RegTensor<S>::lanes; ++i) {
        out.v[part * RegTensor<S>::lanes + i] =
            pypto_native::Elem<D>::wrap(pypto_native::Elem<S>::load(src.v[i]));
    }
    dst = out;
}

//! unpack: the lower / upper half of src widened (sign or zero extension)
template <typename D, typename S>
inline void vunpack(RegTensor<D>& dst, const RegTensor<S>& src, int part = LOWER)
{
    static_assert(std::is_integral_v<D> && sizeof(D) == sizeof(S) * 2, "vunpack doubles integers");
    for (int i = 0; i < RegTensor<D>::lanes; ++i) {
        dst.v[i] = pypto_native::Elem<D>::wrap(
            pypto_native::Elem<S>::load(src.v[part * RegTensor<D>::lanes + i]));
    }
}

//! a[i], b[i] alternating, from the lower (upper) halves
template <typename T>
inline void vintlv(RegTensor<T>& dst, const RegTensor<T>& a, const RegTensor<T>& b,
                   int part = LOWER)
{
    constexpr int half = RegTensor<T>::lanes / 2;
    RegTensor<T> out;
    for (int i = 0; i < half; ++i) {
        out.v[2 * i] = a.v[part * half + i];
        out.v[2 * i + 1] = b.v[part * half + i];
    }
    dst = out;
}

//! the even (odd) lanes of a‖b
template <typename T>
inline void vdintlv(RegTensor<T>& dst, const RegTensor<T>& a, const RegTensor<T>& b,
                    int part = LOWER)
{
    constexpr int n = RegTensor<T>::lanes;
    RegTensor<T> out;
    for (int i = 0; i < n; ++i) {
        const int k = 2 * i + part;
        out.v[i] = k < n ? a.v[k] : b.v[k - n];
    }
    dst = out;
}

//! squeeze: the active lanes packed to the front; their count to the AR (pl.get_spr)
template <typename T>
inline void vsqz(RegTensor<T>& dst, const RegTensor<T>& src, const MaskReg& mask,
                 int gather_mode = STORE_REG)
{
    RegTensor<T> out;
    int count = 0;
    for (int i = 0; i < RegTensor<T>::lanes; ++i) {
        if (mask.template active<T>(i)) out.v[count++] = src.v[i];
    }
    dst = out;
    if (gather_mode == STORE_REG) pypto_native::ctx().ar = count;
}

//! unsqueeze: consecutive lanes of src spread over the active lanes (others zero)
template <typename T>
inline void vusqz(RegTensor<T>& dst, const RegTensor<T>& src, const MaskReg& mask)
{
    RegTensor<T> out;
    int count = 0;
    for (int i = 0; i < RegTensor<T>::lanes; ++i) {
        if (mask.template active<T>(i)) out.v[i] = src.v[count++];
    }
    dst = out;
}

//! histogram of the active 8-bit lanes: bins [k n, k n + n) for BIN k; ACCUMULATE adds to dst
template <typename D, typename S>
inline void vhist(RegTensor<D>& dst, const RegTensor<S>& src, const MaskReg& mask,
                  int bin_type = BIN0, int hist_type = FREQUENCY)
{
    static_assert(sizeof(S) == 1 && std::is_integral_v<D>, "vhist counts 8-bit lanes");
    int64_t counts[256] = {};
    for (int i = 0; i < RegTensor<S>::lanes; ++i) {
        if (mask.template active<S>(i)) ++counts[static_cast<uint8_t>(src.v[i])];
    }
    constexpr int n = RegTensor<D>::lanes;
    for (int j = 0; j < n; ++j) {
        const int bin = bin_type * n + j;
        int64_t c = bin < 256 ? counts[bin] : 0;
        if (hist_type == ACCUMULATE) c += pypto_native::Elem<D>::load(dst.v[j]);
        dst.v[j] = pypto_native::Elem<D>::wrap(c);
    }
}
