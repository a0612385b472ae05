// PyPTO Pro native backend: the Reg API (VF) registers and the common vector intrinsics.
//
// A `RegTensor<T>` is one 256-byte vector register (VL = 256 / sizeof(T) lanes), a `MaskReg`
// one predicate bit per byte (a lane of T is active when the bit of its first byte is set).
// Covered: masks (pset / plt), aligned loads and stores (NORM distributions, offsets in
// elements), element-wise arithmetic (register / scalar forms), unary math, exp(a - b),
// duplicate, compare + select, whole-register reductions (vcadd / vcmax / vcmin) and
// conversion (vcvt) with the given RoundMode. Arithmetic runs in float32 / int64 and rounds
// once into T, as the tile ops do; inactive lanes are zeroed (MODE_ZEROING) or kept
// (MODE_MERGING).
#pragma once

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

//! aligned load: VL elements from `src + offset` (NORM) or one element broadcast (BRC)
template <typename T, typename P>
inline void vlds(RegTensor<T>& dst, P* src, int64_t offset = 0, int dist = NORM, int64_t = 0,
                 int64_t = 0)
{
    const T* p = reinterpret_cast<const T*>(pypto_native::ub_pointer(src)) + offset;
    const bool broadcast = dist == BRC || dist == BRC_B8 || dist == BRC_B16 || dist == BRC_B32;
    if (dist != NORM && !broadcast) {
        pypto_native::raise_fault(pypto_native::FaultKind::Trap, 0, "%s: vlds distribution %d is "
                                  "not modelled by the native backend (NORM and BRC are)",
                                  pypto_native::where().c_str(), dist);
    }
    for (int i = 0; i < RegTensor<T>::lanes; ++i) dst.v[i] = broadcast ? p[0] : p[i];
}

//! aligned store of the active lanes to `dst + offset`
template <typename T, typename P>
inline void vsts(const RegTensor<T>& src, P* dst, int64_t offset = 0, int dist = NORM,
                 const MaskReg& mask = pset_b8(PAT_ALL))
{
    T* p = reinterpret_cast<T*>(pypto_native::ub_pointer(dst)) + offset;
    if (dist == FIRST_ELEMENT) {
        if (mask.template active<T>(0)) p[0] = src.v[0];
        return;
    }
    if (dist != NORM && (dist < NORM_B8 || dist > NORM_B64)) {
        pypto_native::raise_fault(pypto_native::FaultKind::Trap, 0, "%s: vsts distribution %d is "
                                  "not modelled by the native backend (NORM_B* and FIRST_ELEMENT "
                                  "are)", pypto_native::where().c_str(), dist);
    }
    for (int i = 0; i < RegTensor<T>::lanes; ++i) {
        if (mask.template active<T>(i)) p[i] = src.v[i];
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
[[noreturn]] inline void vf_not_modelled(const char* name)
{
    raise_fault(FaultKind::Trap, 0, "%s: the VF intrinsic %s is not modelled by the native backend",
                where().c_str(), name);
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

#define PYPTO_VF_RED(NAME, INIT, STEP)                                                      \
    template <typename T>                                                                   \
    inline void NAME(RegTensor<T>& dst, const RegTensor<T>& src, const MaskReg& mask,       \
                     bool datablock = false, int mode = MODE_ZEROING)                       \
    {                                                                                       \
        using namespace pypto_native;                                                       \
        (void)datablock;                                                                    \
        bool any = false;                                                                   \
        CT<T> acc = INIT;                                                                   \
        for (int i = 0; i < RegTensor<T>::lanes; ++i) {                                     \
            if (!mask.template active<T>(i)) continue;                                      \
            const CT<T> x = Elem<T>::load(src.v[i]);                                        \
            acc = any ? (STEP) : x;                                                         \
            any = true;                                                                     \
        }                                                                                   \
        if (mode == MODE_ZEROING) dst = RegTensor<T>{};                                     \
        dst.v[0] = vf_round<T>(acc);                                                        \
    }

PYPTO_VF_RED(vcadd, CT<T>(0), acc + x)
PYPTO_VF_RED(vcmax, CT<T>(0), op_max(acc, x))
PYPTO_VF_RED(vcmin, CT<T>(0), op_min(acc, x))

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

//! conversion lane by lane (lane i of the source to lane i of the destination, while both
//! registers have one); `layout` selects nothing more on the host
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

template <typename D, typename S>
inline void vcvt(RegTensor<D>& dst, const RegTensor<S>& src, const MaskReg& mask, int layout = ZERO,
                 int round_mode = CAST_RINT, int saturate = OFF)
{
    using namespace pypto_native;
    (void)layout, (void)saturate;
    const pto::RoundMode round = vf_round_mode(round_mode);
    const int n = std::min(RegTensor<D>::lanes, RegTensor<S>::lanes);
    for (int i = 0; i < n; ++i) {
        if (!mask.template active<S>(i)) continue;
        const auto x = Elem<S>::load(src.v[i]);
        if constexpr (Elem<S>::is_float || Elem<D>::is_float) {
            dst.v[i] = encode<D>(x, round);
        } else {
            dst.v[i] = Elem<D>::saturate_int(x);
        }
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

//! muls_cast: dst (another type) = src * scalar, rounded once
template <typename D, typename S, typename X>
inline void vmulscvt(RegTensor<D>& dst, const RegTensor<S>& src, X scalar, const MaskReg& mask,
                     int mode = MODE_ZEROING)
{
    using namespace pypto_native;
    const CT<S> y = scalar_in<S>(scalar);
    const int n = std::min(RegTensor<D>::lanes, RegTensor<S>::lanes);
    for (int i = 0; i < n; ++i) {
        if (mask.template active<S>(i)) {
            dst.v[i] = encode<D>(Elem<S>::load(src.v[i]) * y);
        } else if (mode == MODE_ZEROING) {
            dst.v[i] = D{};
        }
    }
}

// Reg API operations whose register semantics the native backend does not model yet: they
// compile, and fault with their name if a kernel reaches them.
#define PYPTO_VF_NOT_MODELLED(NAME) \
    template <typename... A> inline void NAME(A&&...) { pypto_native::vf_not_modelled(#NAME); }
#define PYPTO_VF_NOT_MODELLED_RET(NAME) \
    template <typename... A> inline int64_t NAME(A&&...) { pypto_native::vf_not_modelled(#NAME); }
PYPTO_VF_NOT_MODELLED(vldas)
PYPTO_VF_NOT_MODELLED(vldus)
PYPTO_VF_NOT_MODELLED(vstus_init)
PYPTO_VF_NOT_MODELLED(vstus)
PYPTO_VF_NOT_MODELLED(vstas)
PYPTO_VF_NOT_MODELLED(vgatherb)
PYPTO_VF_NOT_MODELLED(vscatter)
PYPTO_VF_NOT_MODELLED(vmull)
PYPTO_VF_NOT_MODELLED(vaddcs)
PYPTO_VF_NOT_MODELLED(vsubcs)
PYPTO_VF_NOT_MODELLED(vpack)
PYPTO_VF_NOT_MODELLED(vunpack)
PYPTO_VF_NOT_MODELLED(vintlv)
PYPTO_VF_NOT_MODELLED(vdintlv)
PYPTO_VF_NOT_MODELLED(vsqz)
PYPTO_VF_NOT_MODELLED(vusqz)
PYPTO_VF_NOT_MODELLED(vhist)
PYPTO_VF_NOT_MODELLED_RET(vag_b8)
PYPTO_VF_NOT_MODELLED_RET(vag_b16)
PYPTO_VF_NOT_MODELLED_RET(vag_b32)
PYPTO_VF_NOT_MODELLED_RET(vag_b64)
