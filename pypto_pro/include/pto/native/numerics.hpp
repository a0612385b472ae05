// PyPTO Pro native backend: number formats, rounding, element traits and library math.
//
// Mirrors the simulator's numerics (`pypto_pro/sim/ops/numerics.py`) so results agree bit for
// bit: float element math runs in float32 (float64 where the simulator uses float64: fixpipe
// scales, INT32 dequant), integer math in int64 wrapped two's-complement, and every store
// rounds once into the element type with the op's `RoundMode` (`round_float` is the exact
// port of the simulator's per-element quantum rounding, including its saturation rules).
//
// Library math. `exp`, `log`, `sqrt` of float32 and the float32 matrix product are what the
// simulator gets from torch, i.e. from MKL (vmsExp / vmsLn / vmsSqrt in HA mode, sgemm). The
// launcher may hand us those entry points (`Bridge`); with them native equals the simulator
// bit for bit, without them portable C++ is used (correctly rounded via double; k-ordered
// fp32 accumulation). `cascade_sum` reproduces torch's float32 sum order (the multi-level
// cascade of aten SumKernel) so row/column sums agree too.
#pragma once

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <mutex>
#include <string>
#include <type_traits>

#include "dtypes.hpp"

namespace pto {
enum class RoundMode { CAST_NONE, CAST_RINT, CAST_ROUND, CAST_FLOOR, CAST_CEIL, CAST_TRUNC,
                       CAST_ODD };
}  // namespace pto

namespace pypto_native {

using pto::RoundMode;

enum class DT { BOOL, I8, I16, I32, I64, U8, U16, U32, U64, F16, BF16, F32, E4M3, E5M2, E8M0,
                HF8, FP4E2M1, FP4E1M2, HF4, I4, U4 };

// ------------------------------------------------------------------ float formats

struct FloatFormat {
    int emin;  // exponent of the smallest normal
    int emax;
    double max_finite;
    bool has_inf;
    int mant;  // significand bits after the point (-1: HiFloat8 tapered)
};

inline int hif8_mant_bits(int e)
{
    const int mag = e < 0 ? -e : e;
    const int bits = mag <= 3 ? 3 : (mag <= 7 ? 2 : 1);
    return e < -15 ? 0 : bits;
}

inline FloatFormat ieee_format(int mant, int emin, int emax, bool has_inf = true)
{
    return FloatFormat{emin, emax, (2.0 - std::ldexp(1.0, -mant)) * std::ldexp(1.0, emax),
                       has_inf, mant};
}

inline FloatFormat format_of(DT dt)
{
    switch (dt) {
        case DT::F32: return ieee_format(23, -126, 127);
        case DT::F16: return ieee_format(10, -14, 15);
        case DT::BF16: return ieee_format(7, -126, 127);
        case DT::E4M3: return FloatFormat{-6, 8, 448.0, false, 3};
        case DT::E5M2: return ieee_format(2, -14, 15);
        case DT::HF8: return FloatFormat{-22, 15, 32768.0, true, -1};
        case DT::FP4E2M1: return ieee_format(1, 0, 2, false);
        case DT::FP4E1M2: return FloatFormat{0, 0, 1.75, false, 2};
        default: return ieee_format(23, -126, 127);
    }
}

inline double round_magnitude(double s, RoundMode mode, bool negative)
{
    switch (mode) {
        case RoundMode::CAST_RINT:
        case RoundMode::CAST_NONE: return std::nearbyint(s);
        case RoundMode::CAST_ROUND: return std::floor(s + 0.5);
        case RoundMode::CAST_TRUNC: return std::floor(s);
        case RoundMode::CAST_FLOOR: return negative ? std::ceil(s) : std::floor(s);
        case RoundMode::CAST_CEIL: return negative ? std::floor(s) : std::ceil(s);
        case RoundMode::CAST_ODD: {
            const double low = std::floor(s);
            return (low != s && std::fmod(low, 2.0) == 0.0) ? low + 1 : low;
        }
    }
    return std::nearbyint(s);
}

inline bool overflow_to_inf(RoundMode mode, bool negative)
{
    switch (mode) {
        case RoundMode::CAST_RINT:
        case RoundMode::CAST_NONE:
        case RoundMode::CAST_ROUND: return true;
        case RoundMode::CAST_FLOOR: return negative;
        case RoundMode::CAST_CEIL: return !negative;
        default: return false;
    }
}

//! `x` rounded to the values of `fmt` (exact; the simulator's `round_float`); -0.0 stays -0.0.
inline double round_float(double x, const FloatFormat& fmt, RoundMode mode)
{
    if (std::isnan(x)) return x;
    const bool negative = std::signbit(x);
    const double mag = std::fabs(x);
    double rounded;
    if (std::isinf(mag)) {
        rounded = fmt.has_inf ? INFINITY : fmt.max_finite;
    } else {
        int e2 = 0;
        std::frexp(mag, &e2);
        const int e = std::min(std::max(e2 - 1, fmt.emin), fmt.emax);
        const int mant = fmt.mant >= 0 ? fmt.mant : hif8_mant_bits(e);
        const double quantum = std::ldexp(1.0, e - mant);
        rounded = round_magnitude(mag / quantum, mode, negative) * quantum;
        if (rounded > fmt.max_finite) {
            rounded = (overflow_to_inf(mode, negative) && fmt.has_inf) ? INFINITY : fmt.max_finite;
        }
    }
    return negative ? -rounded : rounded;
}

//! `x` rounded to an integral value (CAST_NONE = CAST_RINT; the simulator's round_to_integer).
inline double round_to_integer(double x, RoundMode mode)
{
    const bool negative = x < 0;
    const double r = round_magnitude(std::fabs(x), mode, negative);
    return negative ? -r : r;
}

// ------------------------------------------------------------------ small float codes

//! bits of an exactly representable IEEE-like value (1 sign bit, `ebits`, `mbits`)
inline uint8_t small_float_bits(double v, int ebits, int mbits, int bias, bool has_inf,
                                uint8_t nan_code)
{
    if (std::isnan(v)) return nan_code;
    const uint8_t sign = std::signbit(v) ? static_cast<uint8_t>(1u << (ebits + mbits)) : 0;
    const double a = std::fabs(v);
    const int emax_code = (1 << ebits) - 1;
    if (std::isinf(a)) {
        return has_inf ? static_cast<uint8_t>(sign | (emax_code << mbits)) : nan_code;
    }
    if (a == 0) return sign;
    int e2 = 0;
    std::frexp(a, &e2);
    const int e = e2 - 1;
    const int emin = 1 - bias;
    if (e < emin) {
        const int m = static_cast<int>(std::nearbyint(a / std::ldexp(1.0, emin - mbits)));
        return static_cast<uint8_t>(sign | m);
    }
    const int m = static_cast<int>(std::nearbyint((a / std::ldexp(1.0, e) - 1.0) *
                                                  std::ldexp(1.0, mbits)));
    return static_cast<uint8_t>(sign | ((e + bias) << mbits) | m);
}

inline double small_float_value(uint8_t code, int ebits, int mbits, int bias, bool has_inf,
                                bool e4m3fn)
{
    const bool neg = (code >> (ebits + mbits)) & 1u;
    const int e = (code >> mbits) & ((1 << ebits) - 1);
    const int m = code & ((1 << mbits) - 1);
    double v;
    if (e4m3fn && e == 15 && m == 7) return NAN;
    if (!e4m3fn && e == (1 << ebits) - 1 && has_inf) {
        v = m == 0 ? INFINITY : NAN;
    } else if (e == 0) {
        v = std::ldexp(static_cast<double>(m), 1 - bias - mbits);
    } else {
        v = std::ldexp(1.0 + std::ldexp(static_cast<double>(m), -mbits), e - bias);
    }
    return neg ? -v : v;
}

inline double hif8_value(uint8_t code)
{
    const double sign = (code & 0x80u) ? -1.0 : 1.0;
    if ((code & 0x78u) == 0) {
        if (code == 0x80u) return NAN;
        return (code & 0x07u) == 0 ? 0.0 : sign * std::ldexp(1.0, (code & 0x07) - 23);
    }
    if ((code & 0x78u) == 0x08u) return sign * (1 + (code & 0x07) / 8.0);
    if ((code & 0x70u) == 0x10u) {
        const int exp = (code & 0x08u) ? -1 : 1;
        return sign * (1 + (code & 0x07) / 8.0) * std::ldexp(1.0, exp);
    }
    if ((code & 0x7fu) == 0x6fu) return sign * INFINITY;
    const int exp_width = ((code & 0x60) >> 5) + 1;
    const int mant_width = 5 - exp_width;
    const int magnitude = (1 << (exp_width - 1)) + ((code & 0x0f) >> mant_width);
    const int exp = (code & 0x10u) ? -magnitude : magnitude;
    const double mant = (code & ((1 << mant_width) - 1)) / static_cast<double>(1 << mant_width);
    return sign * (1 + mant) * std::ldexp(1.0, exp);
}

inline double fp4_value(uint8_t code, int exp_bits)
{
    const int mant_bits = 3 - exp_bits;
    const double sign = (code & 0x8u) ? -1.0 : 1.0;
    const int exp = (code >> mant_bits) & ((1 << exp_bits) - 1);
    const double mant = (code & ((1 << mant_bits) - 1)) / static_cast<double>(1 << mant_bits);
    return sign * (exp == 0 ? mant : (1 + mant) * std::ldexp(1.0, exp - 1));
}

//! the code of a value already rounded to a table format (HiF8, FP4): nearest code magnitude
template <typename Decode>
inline uint8_t table_code(double v, int positive_codes, uint8_t sign_bit, Decode decode)
{
    const double mag = std::fabs(v);
    int best = 0;
    double best_val = -1;
    for (int c = 0; c < positive_codes; ++c) {
        const double cv = decode(static_cast<uint8_t>(c));
        if (std::isnan(cv) || std::isinf(cv)) continue;
        if (cv <= mag && cv > best_val) {
            best = c;
            best_val = cv;
        }
    }
    return static_cast<uint8_t>(v < 0 ? (best | sign_bit) : best);
}

// ------------------------------------------------------------------ element traits

template <typename T> struct Elem;

template <typename T, DT D>
struct IntElem {
    using compute = int64_t;
    static constexpr DT dt = D;
    static constexpr bool is_float = false;
    static int64_t load(T v) { return static_cast<int64_t>(v); }
    static T wrap(int64_t v) { return static_cast<T>(static_cast<std::make_unsigned_t<T>>(v)); }
    static T saturate_int(int64_t x)
    {
        const int64_t lo = static_cast<int64_t>(std::numeric_limits<T>::min());
        const int64_t hi = std::is_same_v<T, uint64_t> ? std::numeric_limits<int64_t>::max()
                                                       : static_cast<int64_t>(
                                                             std::numeric_limits<T>::max());
        return static_cast<T>(std::min(std::max(x, lo), hi));
    }
    static T saturate(double x)
    {
        if (std::isnan(x)) return 0;
        const double lo = static_cast<double>(std::numeric_limits<T>::min());
        const double hi = std::min(static_cast<double>(std::numeric_limits<T>::max()),
                                   9223372036854774784.0);
        x = std::min(std::max(x, lo), hi);
        if constexpr (std::is_same_v<T, uint64_t>) {
            return static_cast<T>(static_cast<int64_t>(x));
        }
        return static_cast<T>(static_cast<int64_t>(x));
    }
};

template <> struct Elem<int8_t> : IntElem<int8_t, DT::I8> {};
template <> struct Elem<int16_t> : IntElem<int16_t, DT::I16> {};
template <> struct Elem<int32_t> : IntElem<int32_t, DT::I32> {};
template <> struct Elem<int64_t> : IntElem<int64_t, DT::I64> {};
template <> struct Elem<uint8_t> : IntElem<uint8_t, DT::U8> {};
template <> struct Elem<uint16_t> : IntElem<uint16_t, DT::U16> {};
template <> struct Elem<uint32_t> : IntElem<uint32_t, DT::U32> {};
template <> struct Elem<uint64_t> : IntElem<uint64_t, DT::U64> {};
template <> struct Elem<bool> {
    using compute = int64_t;
    static constexpr DT dt = DT::BOOL;
    static constexpr bool is_float = false;
    static int64_t load(bool v) { return v ? 1 : 0; }
    static bool wrap(int64_t v) { return (v & 1) != 0; }
    static bool saturate(double x) { return !std::isnan(x) && x >= 1.0; }
    static bool saturate_int(int64_t x) { return x >= 1; }
};

//! the float formats torch can round to directly (fast path of float_to_stored)
template <typename T, DT D>
struct FloatElem {
    using compute = float;
    static constexpr DT dt = D;
    static constexpr bool is_float = true;
};

template <> struct Elem<float> : FloatElem<float, DT::F32> {
    static float load(float v) { return v; }
    static float from_exact(double v) { return static_cast<float>(v); }
    static float rne(float v) { return v; }
};
template <> struct Elem<half> : FloatElem<half, DT::F16> {
    static float load(half v) { return static_cast<float>(v); }
    static half from_exact(double v) { return half(static_cast<float>(v)); }
    static half rne(float v) { return half(v); }
};
template <> struct Elem<bfloat16_t> : FloatElem<bfloat16_t, DT::BF16> {
    static float load(bfloat16_t v) { return static_cast<float>(v); }
    static bfloat16_t from_exact(double v) { return bfloat16_t(static_cast<float>(v)); }
    static bfloat16_t rne(float v) { return bfloat16_t(v); }
};
template <> struct Elem<float8_e4m3_t> : FloatElem<float8_e4m3_t, DT::E4M3> {
    static float load(float8_e4m3_t v)
    {
        return static_cast<float>(small_float_value(v.bits, 4, 3, 7, false, true));
    }
    static float8_e4m3_t from_exact(double v)
    {
        return float8_e4m3_t(small_float_bits(v, 4, 3, 7, false, 0x7f));
    }
};
template <> struct Elem<float8_e5m2_t> : FloatElem<float8_e5m2_t, DT::E5M2> {
    static float load(float8_e5m2_t v)
    {
        return static_cast<float>(small_float_value(v.bits, 5, 2, 15, true, false));
    }
    static float8_e5m2_t from_exact(double v)
    {
        return float8_e5m2_t(small_float_bits(v, 5, 2, 15, true, 0x7e));
    }
};
template <> struct Elem<float8_e8m0_t> : FloatElem<float8_e8m0_t, DT::E8M0> {
    static float load(float8_e8m0_t v)
    {
        return v.bits == 255 ? NAN : static_cast<float>(std::ldexp(1.0, v.bits - 127));
    }
    static float8_e8m0_t from_exact(double v)
    {
        int e = 0;
        std::frexp(v, &e);
        return float8_e8m0_t(static_cast<uint8_t>(std::min(std::max(e - 1 + 127, 0), 254)));
    }
};
template <> struct Elem<hifloat8_t> : FloatElem<hifloat8_t, DT::HF8> {
    static float load(hifloat8_t v) { return static_cast<float>(hif8_value(v.bits)); }
    static hifloat8_t from_exact(double v)
    {
        if (std::isnan(v)) return hifloat8_t(0x80);
        if (std::isinf(v)) return hifloat8_t(v < 0 ? 0xef : 0x6f);
        return hifloat8_t(table_code(v, 0x80, 0x80, [](uint8_t c) { return hif8_value(c); }));
    }
};
template <> struct Elem<float4_e2m1x2_t> : FloatElem<float4_e2m1x2_t, DT::FP4E2M1> {
    static float load(float4_e2m1x2_t v) { return static_cast<float>(fp4_value(v.bits & 0xf, 2)); }
    static float4_e2m1x2_t from_exact(double v)
    {
        return float4_e2m1x2_t(table_code(v, 8, 8, [](uint8_t c) { return fp4_value(c, 2); }));
    }
};
template <> struct Elem<float4_e1m2x2_t> : FloatElem<float4_e1m2x2_t, DT::FP4E1M2> {
    static float load(float4_e1m2x2_t v) { return static_cast<float>(fp4_value(v.bits & 0xf, 1)); }
    static float4_e1m2x2_t from_exact(double v)
    {
        return float4_e1m2x2_t(table_code(v, 8, 8, [](uint8_t c) { return fp4_value(c, 1); }));
    }
};

template <typename T>
constexpr bool is_float_elem = Elem<T>::is_float;

template <typename T>
constexpr bool rne_fast_path = std::is_same_v<T, float> || std::is_same_v<T, half> ||
                               std::is_same_v<T, bfloat16_t>;

//! float32 compute value -> element (the simulator's float_to_stored for float32 input)
template <typename T>
inline T store_from_float(float x, RoundMode mode = RoundMode::CAST_RINT)
{
    if constexpr (!Elem<T>::is_float) {
        return Elem<T>::saturate(round_to_integer(static_cast<double>(x), mode));
    } else if constexpr (rne_fast_path<T>) {
        if (mode == RoundMode::CAST_RINT || mode == RoundMode::CAST_NONE) return Elem<T>::rne(x);
        return Elem<T>::from_exact(round_float(x, format_of(Elem<T>::dt), mode));
    } else {
        return Elem<T>::from_exact(round_float(x, format_of(Elem<T>::dt), mode));
    }
}

//! float64 compute value -> element (float_to_stored for float64 input: always round_float)
template <typename T>
inline T store_from_double(double x, RoundMode mode = RoundMode::CAST_RINT)
{
    if constexpr (!Elem<T>::is_float) {
        return Elem<T>::saturate(round_to_integer(x, mode));
    } else {
        return Elem<T>::from_exact(round_float(x, format_of(Elem<T>::dt), mode));
    }
}

//! int64 compute value -> element: integers wrap; into a float type it is float_to_stored
template <typename T>
inline T store_from_int(int64_t x, RoundMode mode = RoundMode::CAST_RINT)
{
    if constexpr (Elem<T>::is_float) {
        return store_from_double<T>(static_cast<double>(x), mode);
    } else {
        return Elem<T>::wrap(x);
    }
}

//! a compute value (float or int64) into an element with the op's rounding (`encode`)
template <typename T, typename C>
inline T encode(C v, RoundMode mode = RoundMode::CAST_RINT)
{
    if constexpr (std::is_same_v<C, double>) {
        return store_from_double<T>(v, mode);
    } else if constexpr (std::is_floating_point_v<C>) {
        return store_from_float<T>(v, mode);
    } else {
        return store_from_int<T>(v, mode);
    }
}

template <typename T>
inline typename Elem<T>::compute load(const T& v)
{
    return Elem<T>::load(v);
}

//! a scalar operand rounded (float) or wrapped (int) into the tile's dtype, as compute value
template <typename T, typename S>
inline typename Elem<T>::compute scalar_in(S s)
{
    if constexpr (Elem<T>::is_float) {
        float f;
        if constexpr (std::is_same_v<S, half> || std::is_same_v<S, bfloat16_t>) {
            f = static_cast<float>(s);
        } else {
            f = static_cast<float>(s);
        }
        return Elem<T>::load(store_from_float<T>(f));
    } else {
        return Elem<T>::load(Elem<T>::wrap(static_cast<int64_t>(s)));
    }
}

// ------------------------------------------------------------------ library math (bridge)

using VmlFn = void (*)(int64_t n, const float* a, float* r, int64_t mode);
using SgemmFn = void (*)(const char* ta, const char* tb, const int* m, const int* n,
                         const int* k, const float* alpha, const float* a, const int* lda,
                         const float* b, const int* ldb, const float* beta, float* c,
                         const int* ldc);

struct Bridge {
    VmlFn exp = nullptr;
    VmlFn ln = nullptr;
    VmlFn sqrt = nullptr;
    SgemmFn sgemm = nullptr;
};

//! the library holding MKL's entry points (torch's libtorch_cpu.so), set by the launcher
inline std::string& bridge_library()
{
    static std::string path;
    return path;
}

//! MKL's entry points, resolved on first use: loading torch's library costs a few hundred
//! milliseconds, which only kernels that use library math (exp, log, sqrt, matmul) pay
inline const Bridge& bridge()
{
    static Bridge b;
    static std::once_flag once;
    std::call_once(once, [] {
        if (bridge_library().empty()) return;
        void* lib = dlopen(bridge_library().c_str(), RTLD_LAZY | RTLD_GLOBAL);
        if (lib == nullptr) return;
        using SetThreads = int (*)(int);
        if (auto set = reinterpret_cast<SetThreads>(dlsym(lib, "mkl_serv_set_num_threads"))) {
            set(1);
        }
        b.exp = reinterpret_cast<VmlFn>(dlsym(lib, "vmsExp"));
        b.ln = reinterpret_cast<VmlFn>(dlsym(lib, "vmsLn"));
        b.sqrt = reinterpret_cast<VmlFn>(dlsym(lib, "vmsSqrt"));
        b.sgemm = reinterpret_cast<SgemmFn>(dlsym(lib, "sgemm_"));
    });
    return b;
}

constexpr int64_t kVmlMode = 0x2 | 0x140000 | 0x100;  // VML_HA | VML_FTZDAZ_OFF | ERRMODE_IGNORE

inline void vexp(const float* in, float* out, int64_t n)
{
    if (n <= 0) return;
    if (bridge().exp) {
        bridge().exp(n, in, out, kVmlMode);
        return;
    }
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(std::exp(static_cast<double>(in[i])));
}

inline void vln(const float* in, float* out, int64_t n)
{
    if (n <= 0) return;
    if (bridge().ln) {
        bridge().ln(n, in, out, kVmlMode);
        return;
    }
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(std::log(static_cast<double>(in[i])));
}

inline void vsqrt(const float* in, float* out, int64_t n)
{
    if (n <= 0) return;
    if (bridge().sqrt) {
        bridge().sqrt(n, in, out, kVmlMode);
        return;
    }
    for (int64_t i = 0; i < n; ++i) out[i] = std::sqrt(in[i]);
}

//! C[M, N] = A[M, K] @ B[K, N], float32, row-major contiguous (torch.mm's sgemm call)
inline void gemm_f32(int M, int N, int K, const float* A, const float* B, float* C)
{
    if (M <= 0 || N <= 0) return;
    if (K <= 0) {
        std::fill(C, C + static_cast<int64_t>(M) * N, 0.0f);
        return;
    }
    if (bridge().sgemm) {
        const char n = 'n';
        const float one = 1.0f, zero = 0.0f;
        bridge().sgemm(&n, &n, &N, &M, &K, &one, B, &N, A, &K, &zero, C, &N);
        return;
    }
    for (int i = 0; i < M; ++i) {
        for (int j = 0; j < N; ++j) {
            float acc = 0.0f;
            for (int k = 0; k < K; ++k) acc += A[static_cast<int64_t>(i) * K + k] *
                                               B[static_cast<int64_t>(k) * N + j];
            C[static_cast<int64_t>(i) * N + j] = acc;
        }
    }
}

// ------------------------------------------------------------------ torch's float32 sum order

inline int64_t ceil_log2(int64_t x)
{
    if (x <= 2) return 1;
    uint64_t v = static_cast<uint64_t>(x) - 1;
    int64_t last = 63 - __builtin_clzll(v);
    return last + 1;
}

//! The multi-level cascade over `size` rows of `nrows` independent lanes.
//! get(i, k) is element k of row i; acc[k] receives each lane's sum.
template <int NROWS, typename Get>
inline void multi_row_sum(int64_t size, Get get, float* out)
{
    constexpr int kLevels = 4;
    const int64_t level_power = std::max<int64_t>(4, ceil_log2(size) / kLevels);
    const int64_t level_step = int64_t(1) << level_power;
    const int64_t level_mask = level_step - 1;
    float acc[kLevels][NROWS];
    for (auto& row : acc) std::fill(row, row + NROWS, 0.0f);
    int64_t i = 0;
    for (; i + level_step <= size;) {
        for (int64_t j = 0; j < level_step; ++j, ++i) {
            for (int k = 0; k < NROWS; ++k) acc[0][k] += get(i, k);
        }
        for (int j = 1; j < kLevels; ++j) {
            for (int k = 0; k < NROWS; ++k) {
                acc[j][k] += acc[j - 1][k];
                acc[j - 1][k] = 0.0f;
            }
            const int64_t mask = level_mask << (j * level_power);
            if ((i & mask) != 0) break;
        }
    }
    for (; i < size; ++i) {
        for (int k = 0; k < NROWS; ++k) acc[0][k] += get(i, k);
    }
    for (int j = 1; j < kLevels; ++j) {
        for (int k = 0; k < NROWS; ++k) acc[0][k] += acc[j][k];
    }
    for (int k = 0; k < NROWS; ++k) out[k] = acc[0][k];
}

//! torch's row_sum: `size` items (each `W` lanes) in 4 interleaved partial sums.
template <int W, typename Get>
inline void ilp_row_sum(int64_t size, Get get, float* out)
{
    constexpr int64_t kIlp = 4;
    const int64_t size_ilp = size / kIlp;
    float partial[kIlp][W];
    // rows of the (-1, 4) view are groups of 4 consecutive items; lane = item within the group
    float lanes[kIlp * W];
    multi_row_sum<kIlp * W>(size_ilp, [&](int64_t i, int k) {
        return get(i * kIlp + k / W, k % W);
    }, lanes);
    for (int64_t g = 0; g < kIlp; ++g) {
        for (int w = 0; w < W; ++w) partial[g][w] = lanes[g * W + w];
    }
    for (int64_t i = size_ilp * kIlp; i < size; ++i) {
        for (int w = 0; w < W; ++w) partial[0][w] += get(i, w);
    }
    for (int64_t g = 1; g < kIlp; ++g) {
        for (int w = 0; w < W; ++w) partial[0][w] += partial[g][w];
    }
    for (int w = 0; w < W; ++w) out[w] = partial[0][w];
}

//! sum of x[0..n) (stride `stride`) in torch's contiguous inner-reduction order
inline float inner_sum(const float* x, int64_t n)
{
    constexpr int kVec = 8;  // AVX2 Vectorized<float>::size()
    if (n < kVec) {
        float r;
        ilp_row_sum<1>(n, [&](int64_t i, int) { return x[i]; }, &r);
        return r;
    }
    const int64_t vec_size = n / kVec;
    float vacc[kVec];
    ilp_row_sum<kVec>(vec_size, [&](int64_t i, int w) { return x[i * kVec + w]; }, vacc);
    float final_acc = 0.0f;
    for (int64_t k = vec_size * kVec; k < n; ++k) final_acc += x[k];
    for (int w = 0; w < kVec; ++w) final_acc += vacc[w];
    return final_acc;
}

//! torch's x.sum(dim=1) of a contiguous [rows, cols] float32 matrix
inline void sum_rows(const float* x, int64_t rows, int64_t cols, float* out)
{
    for (int64_t r = 0; r < rows; ++r) {
        out[r] = cols == 1 ? 0.0f + x[r] : inner_sum(x + r * cols, cols);
    }
}

//! torch's x.sum(dim=0) of a contiguous [rows, cols] float32 matrix
inline void sum_cols(const float* x, int64_t rows, int64_t cols, float* out)
{
    constexpr int kVec = 8;
    if (rows == 1) {
        for (int64_t c = 0; c < cols; ++c) out[c] = 0.0f + x[c];
        return;
    }
    if (cols == 1) {
        out[0] = inner_sum(x, rows);
        return;
    }
    auto at = [&](int64_t r, int64_t c) { return x[r * cols + c]; };
    int64_t j = 0;
    if (cols >= kVec) {
        for (; j + 4 * kVec <= cols; j += 4 * kVec) {
            multi_row_sum<4 * kVec>(rows, [&](int64_t i, int k) { return at(i, j + k); }, out + j);
        }
        for (; j + kVec <= cols; j += kVec) {
            ilp_row_sum<kVec>(rows, [&](int64_t i, int w) { return at(i, j + w); }, out + j);
        }
    } else {
        for (; j + 3 < cols; j += 4) {
            multi_row_sum<4>(rows, [&](int64_t i, int k) { return at(i, j + k); }, out + j);
        }
    }
    for (; j < cols; ++j) {
        ilp_row_sum<1>(rows, [&](int64_t i, int) { return at(i, j); }, out + j);
    }
}

}  // namespace pypto_native
