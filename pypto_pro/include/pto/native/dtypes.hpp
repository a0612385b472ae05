// PyPTO Pro native backend: the element types of generated code and their bit conversions.
//
// `half` and `bfloat16_t` are 16-bit storage structs converting to and from float with
// round-to-nearest-even (NaN stays NaN, overflow goes to inf), exactly as torch's `.to()`
// does; arithmetic happens in float through the implicit conversion. FP8 / HiFloat8 / 4-bit
// types are one-byte storage wrappers whose values are decoded by `numerics.hpp`.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace pypto_native {

inline uint32_t f32_bits(float f)
{
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

inline float f32_from_bits(uint32_t u)
{
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

//! float -> IEEE binary16 bits, round to nearest even.
inline uint16_t half_bits_from_float(float f)
{
    const uint32_t x = f32_bits(f);
    const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
    const uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) {  // inf / nan
        if (ax == 0x7f800000u) return sign | 0x7c00u;
        return static_cast<uint16_t>(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
    }
    if (ax >= 0x477ff000u) return sign | 0x7c00u;  // rounds to >= 65536: inf
    if (ax < 0x38800000u) {  // below 2^-14: subnormal (or zero) result
        const int e = static_cast<int>(ax >> 23);
        if (e < 102) return sign;
        const uint32_t mant = (ax & 0x7fffffu) | 0x800000u;
        const int shift = 126 - e;
        uint32_t q = mant >> shift;
        const uint32_t rem = mant & ((1u << shift) - 1u);
        const uint32_t halfway = 1u << (shift - 1);
        if (rem > halfway || (rem == halfway && (q & 1u))) ++q;
        return static_cast<uint16_t>(sign | q);
    }
    uint32_t h = (ax >> 13) - (112u << 10);
    const uint32_t rem = ax & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
    return static_cast<uint16_t>(sign | h);
}

inline float half_bits_to_float_slow(uint16_t h)
{
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    const uint32_t mant = h & 0x3ffu;
    if (exp == 0x1fu) return f32_from_bits(sign | 0x7f800000u | (mant << 13));
    if (exp == 0) {
        if (mant == 0) return f32_from_bits(sign);
        const float v = static_cast<float>(mant) * 5.9604644775390625e-08f;  // 2^-24
        return (h & 0x8000u) ? -v : v;
    }
    return f32_from_bits(sign | ((exp + 112u) << 23) | (mant << 13));
}

//! every half value as float (256 KiB, built on first use): the hot conversion of tile ops
inline const float* half_table()
{
    static const float* table = [] {
        static float t[65536];
        for (uint32_t i = 0; i < 65536; ++i) t[i] = half_bits_to_float_slow(static_cast<uint16_t>(i));
        return t;
    }();
    return table;
}

inline float half_bits_to_float(uint16_t h) { return half_table()[h]; }

//! float -> bfloat16 bits, round to nearest even (torch's c10 rounding; NaN -> 0x7FC0).
inline uint16_t bf16_bits_from_float(float f)
{
    if (std::isnan(f)) return 0x7fc0u;
    const uint32_t u = f32_bits(f);
    const uint32_t bias = ((u >> 16) & 1u) + 0x7fffu;
    return static_cast<uint16_t>((u + bias) >> 16);
}

inline float bf16_bits_to_float(uint16_t b) { return f32_from_bits(static_cast<uint32_t>(b) << 16); }

struct half {
    uint16_t bits = 0;
    half() = default;
    template <typename T, typename = std::enable_if_t<std::is_arithmetic_v<T>>>
    half(T v) : bits(half_bits_from_float(static_cast<float>(v))) {}
    static half from_bits(uint16_t b)
    {
        half h;
        h.bits = b;
        return h;
    }
    operator float() const { return half_bits_to_float(bits); }
    half& operator+=(float v) { return *this = half(float(*this) + v); }
    half& operator-=(float v) { return *this = half(float(*this) - v); }
    half& operator*=(float v) { return *this = half(float(*this) * v); }
    half& operator/=(float v) { return *this = half(float(*this) / v); }
    half operator-() const { return from_bits(static_cast<uint16_t>(bits ^ 0x8000u)); }
};

struct bfloat16_t {
    uint16_t bits = 0;
    bfloat16_t() = default;
    template <typename T, typename = std::enable_if_t<std::is_arithmetic_v<T>>>
    bfloat16_t(T v) : bits(bf16_bits_from_float(static_cast<float>(v))) {}
    static bfloat16_t from_bits(uint16_t b)
    {
        bfloat16_t h;
        h.bits = b;
        return h;
    }
    operator float() const { return bf16_bits_to_float(bits); }
    bfloat16_t& operator+=(float v) { return *this = bfloat16_t(float(*this) + v); }
    bfloat16_t& operator-=(float v) { return *this = bfloat16_t(float(*this) - v); }
    bfloat16_t& operator*=(float v) { return *this = bfloat16_t(float(*this) * v); }
    bfloat16_t& operator/=(float v) { return *this = bfloat16_t(float(*this) / v); }
    bfloat16_t operator-() const { return from_bits(static_cast<uint16_t>(bits ^ 0x8000u)); }
};

//! One-byte storage of a format without a C++ arithmetic type (values via numerics.hpp).
template <int Tag>
struct byte_code {
    uint8_t bits = 0;
    byte_code() = default;
    explicit byte_code(uint8_t b) : bits(b) {}
};

using float8_e4m3_t = byte_code<1>;
using float8_e5m2_t = byte_code<2>;
using float8_e8m0_t = byte_code<3>;
using hifloat8_t = byte_code<4>;
using float4_e2m1x2_t = byte_code<5>;
using float4_e1m2x2_t = byte_code<6>;
using hifloat4_t = byte_code<7>;
using int4b_t = byte_code<8>;
using uint4b_t = byte_code<9>;

}  // namespace pypto_native

using pypto_native::bfloat16_t;
using pypto_native::float4_e1m2x2_t;
using pypto_native::float4_e2m1x2_t;
using pypto_native::float8_e4m3_t;
using pypto_native::float8_e5m2_t;
using pypto_native::float8_e8m0_t;
using pypto_native::half;
using pypto_native::hifloat4_t;
using pypto_native::hifloat8_t;
using pypto_native::int4b_t;
using pypto_native::uint4b_t;
