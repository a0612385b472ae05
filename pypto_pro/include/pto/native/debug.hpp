// PyPTO Pro native backend: device printing (`cce::printf`, TPRINT) and `trap()`.
//
// Printed text goes to the calling core's buffer; the launcher joins each block's buffers in
// core order (AIC, AIV0, AIV1), as the simulator does, and returns them per block. TPRINT
// follows the format of `include/pypto_tprint.h` (spec §4.5): a header line, then every
// element, `|` after the last valid column and a dashed line after the last valid row.
#pragma once

#include <cinttypes>
#include <cstdio>
#include <string>
#include <type_traits>

#include "global.hpp"
#include "tile.hpp"

namespace cce {

template <typename... A>
inline void printf(const char* fmt, A... args)
{
    char small[512];
    const int n = std::snprintf(small, sizeof small, fmt, args...);
    if (n < 0) return;
    if (static_cast<size_t>(n) < sizeof small) {
        pypto_native::ctx().printed.append(small, static_cast<size_t>(n));
        return;
    }
    std::string big(static_cast<size_t>(n) + 1, '\0');
    std::snprintf(&big[0], big.size(), fmt, args...);
    big.resize(static_cast<size_t>(n));
    pypto_native::ctx().printed += big;
}

}  // namespace cce

inline void trap(pypto_native::Loc loc = pypto_native::Loc::here())
{
    pypto_native::record("trap", loc);
    pypto_native::raise_fault(pypto_native::FaultKind::Trap, loc.line, "pl.trap() executed on %s",
                              pypto_native::where().c_str());
}

namespace pypto_native {

template <typename T>
inline const char* dtype_name()
{
    if constexpr (std::is_same_v<T, float>) return "float32";
    if constexpr (std::is_same_v<T, half>) return "float16";
    if constexpr (std::is_same_v<T, bfloat16_t>) return "bfloat16";
    if constexpr (std::is_same_v<T, int8_t>) return "int8";
    if constexpr (std::is_same_v<T, int16_t>) return "int16";
    if constexpr (std::is_same_v<T, int32_t>) return "int32";
    if constexpr (std::is_same_v<T, int64_t>) return "int64";
    if constexpr (std::is_same_v<T, uint8_t>) return "uint8";
    if constexpr (std::is_same_v<T, uint16_t>) return "uint16";
    if constexpr (std::is_same_v<T, uint32_t>) return "uint32";
    if constexpr (std::is_same_v<T, uint64_t>) return "uint64";
    if constexpr (std::is_same_v<T, bool>) return "bool";
    return "raw8";
}

template <typename T>
inline std::string value_text(const T& v)
{
    char buf[64];
    if constexpr (Elem<T>::is_float) {
        std::snprintf(buf, sizeof buf, "%.6g", static_cast<double>(Elem<T>::load(v)));
    } else {
        std::snprintf(buf, sizeof buf, "%" PRId64, static_cast<int64_t>(Elem<T>::load(v)));
    }
    return buf;
}

inline const char* layout_text(const Geometry& g)
{
    if (g.kind == LayoutKind::ND) return "ND";
    if (g.kind == LayoutKind::DN) return "DN";
    if (g.big_col) return g.small_row ? "NZ" : "NN";
    return g.small_row ? "ZZ" : "ZN";
}

}  // namespace pypto_native

namespace pto {

template <TileType L, typename T, int R, int C, BLayout B, int VR, int VC, SLayout S, int F,
          PadValue P, CompactMode M>
inline void TPRINT(Tile<L, T, R, C, B, VR, VC, S, F, P, M>& tile,
                   pypto_native::Loc loc = pypto_native::Loc::here())
{
    using namespace pypto_native;
    record("TPRINT", loc);
    auto v = view(tile, loc.line);
    std::string out = std::string("Tile ") + space_name(L) + " dtype=" + dtype_name<T>() +
                      " shape=[" + std::to_string(R) + ", " + std::to_string(C) + "] valid=[" +
                      std::to_string(v.vr) + ", " + std::to_string(v.vc) + "] layout=" +
                      layout_text(v.g) + "\n";
    for (int64_t r = 0; r < R; ++r) {
        for (int64_t c = 0; c < C; ++c) {
            out += value_text(v.get(r, c));
            out += (c + 1 == v.vc && c + 1 < C) ? " | " : " ";
        }
        out += "\n";
        if (r + 1 == v.vr && r + 1 < R) out += std::string(static_cast<size_t>(C) * 4, '-') + "\n";
    }
    ctx().printed += out;
}

template <typename T, typename Sh, typename St, Layout Lay>
inline void TPRINT(GlobalTensor<T, Sh, St, Lay>& gt,
                   pypto_native::Loc loc = pypto_native::Loc::here())
{
    using namespace pypto_native;
    record("TPRINT", loc);
    const int64_t rows = gm_rows(gt), cols = gm_cols(gt);
    uint64_t lo, hi;
    gm_window_bounds(gt.data(), rows, cols, gm_row_stride(gt), gm_col_stride(gt), lo, hi);
    if (rows > 0 && cols > 0) check_gm("TPRINT", reinterpret_cast<uint64_t>(gt.data()), lo, hi, loc.line);
    std::string out = std::string("GlobalTensor dtype=") + dtype_name<T>() + " layout=ND shape=[1, 1, "
                      "1, " + std::to_string(rows) + ", " + std::to_string(cols) + "]\n";
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) {
            T x;
            std::memcpy(&x, gt.data() + r * gm_row_stride(gt) + c * gm_col_stride(gt), sizeof(T));
            out += value_text(x) + " ";
        }
        out += "\n";
    }
    ctx().printed += out;
}

//! a window of a tile: TPRINT(tile, r0, c0, rows, cols)
template <typename TileT>
inline void TPRINT(TileT& tile, int64_t r0, int64_t c0, int64_t rows, int64_t cols,
                   pypto_native::Loc loc = pypto_native::Loc::here())
{
    using namespace pypto_native;
    record("TPRINT", loc);
    auto v = view(tile, loc.line);
    std::string out = std::string("Tile ") + space_name(TileT::Loc) + " dtype=" +
                      dtype_name<typename TileT::DType>() + " window=[" + std::to_string(r0) + ":" +
                      std::to_string(r0 + rows) + ", " + std::to_string(c0) + ":" +
                      std::to_string(c0 + cols) + "]\n";
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) out += value_text(v.get(r0 + r, c0 + c)) + " ";
        out += "\n";
    }
    ctx().printed += out;
}

}  // namespace pto
