// Stand-in for PyPTO Pro's runtime header `pypto_tprint.h` (the real one ships with the PyPTO
// Pro package, not with pto-isa). Like the real one it makes `TPRINT(x)` its own
// `__pypto_tprint(x)` (a whole tile, or a GM window through a GlobalTensor) and declares the two
// helpers the code generator's tile-window dump loops call; everything prints the real header's
// text through pto-isa's CPU `cce::printf` stub.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

template <typename T>
inline const char* __pypto_dtype_name()
{
    if constexpr (std::is_same_v<T, float>) return "float32";
    if constexpr (std::is_same_v<T, half>) return "float16";
    if constexpr (std::is_same_v<T, int32_t>) return "int32";
    if constexpr (std::is_same_v<T, uint32_t>) return "uint32";
    if constexpr (std::is_same_v<T, int16_t>) return "int16";
    if constexpr (std::is_same_v<T, uint16_t>) return "uint16";
    if constexpr (std::is_same_v<T, int8_t>) return "int8";
    if constexpr (std::is_same_v<T, uint8_t>) return "uint8";
    return "unknown";
}

template <typename V>
inline void __pypto_print_val(V val)
{
    if constexpr (std::is_same_v<V, float> || std::is_same_v<V, half>) {
        cce::printf("%f ", static_cast<double>(static_cast<float>(val)));
    } else if constexpr (std::is_integral_v<V> && std::is_signed_v<V>) {
        cce::printf("%d ", static_cast<int>(val));
    } else if constexpr (std::is_integral_v<V>) {
        cce::printf("%u ", static_cast<unsigned int>(val));
    } else if constexpr (sizeof(V) == 2) {  // bfloat16: the upper half of a float
        uint16_t bits;
        std::memcpy(&bits, &val, 2);
        const uint32_t word = static_cast<uint32_t>(bits) << 16;
        float f;
        std::memcpy(&f, &word, 4);
        cce::printf("%f ", static_cast<double>(f));
    } else if constexpr (sizeof(V) == 1) {
        uint8_t byte;
        std::memcpy(&byte, &val, 1);
        cce::printf("%u ", static_cast<unsigned int>(byte));
    } else {
        cce::printf("? ");
    }
}

template <typename T>
inline void __pypto_tprint(T& src)
{
    if constexpr (pto::is_global<T>::value) {
        int64_t n[5], s[5];
        for (int d = 0; d < 5; ++d) {
            n[d] = src.GetShape(d);
            s[d] = src.GetStride(d);
        }
        cce::printf("=== [dump_tensor] dtype: %s, Layout: %s, shape=[%d,%d,%d,%d,%d] ===\n",
                    __pypto_dtype_name<typename T::RawDType>(),
                    T::layout == pto::Layout::DN ? "DN" : "ND", static_cast<int>(n[0]),
                    static_cast<int>(n[1]), static_cast<int>(n[2]), static_cast<int>(n[3]),
                    static_cast<int>(n[4]));
        for (int64_t i0 = 0; i0 < n[0]; ++i0)
            for (int64_t i1 = 0; i1 < n[1]; ++i1)
                for (int64_t i2 = 0; i2 < n[2]; ++i2) {
                    cce::printf("  Batch [%d, %d, %d]:\n", static_cast<int>(i0),
                                static_cast<int>(i1), static_cast<int>(i2));
                    for (int64_t r = 0; r < n[3]; ++r) {
                        for (int64_t c = 0; c < n[4]; ++c) {
                            __pypto_print_val(src.data()[i0 * s[0] + i1 * s[1] + i2 * s[2] +
                                                         r * s[3] + c * s[4]]);
                        }
                        cce::printf("\n");
                    }
                }
    } else {
        const int vr = static_cast<int>(src.GetValidRow());
        const int vc = static_cast<int>(src.GetValidCol());
        cce::printf("=== [dump_tile] dtype: %s, shape=[%d,%d], valid=[%d,%d], Layout: %s ===\n",
                    __pypto_dtype_name<typename T::DType>(), T::Rows, T::Cols, vr, vc,
                    pto::GetLayoutName(T::BFractal, T::SFractal));
        for (int r = 0; r < T::Rows; ++r) {
            for (int c = 0; c < T::Cols; ++c) {
                const int off = T::BFractal == pto::BLayout::RowMajor ? r * T::Cols + c
                                                                      : c * T::Rows + r;
                __pypto_print_val(src.data()[off]);
                if (c == vc - 1 && vc < T::Cols) cce::printf("| ");
            }
            cce::printf("\n");
            if (r == vr - 1 && vr < T::Rows) cce::printf("--------\n");
        }
    }
}
#define TPRINT(x) __pypto_tprint(x)
