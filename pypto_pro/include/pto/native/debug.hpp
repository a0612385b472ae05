// PyPTO Pro native backend: device printing (`cce::printf`, TPRINT) and `trap()`.
//
// Printed text goes to the calling core's buffer; the launcher joins each block's buffers in
// core order (AIC, AIV0, AIV1), as the simulator does, and returns them per block. TPRINT
// prints as PyPTO Pro's runtime header `pypto_tprint.h` does (its `__pypto_tprint`, the text
// `sim/dump_text.py` gives): a header line, then every element through `__pypto_print_val`.
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

//! `__pypto_print_val` of PyPTO Pro's runtime header: `%f ` for float, half and bfloat16,
//! `%d ` / `%u ` of an integer cast to 32 bits, the raw byte of an 8-bit float
template <typename T>
inline std::string print_val(const T& v)
{
    char buf[64];
    if constexpr (Elem<T>::is_float && sizeof(T) >= 2) {
        std::snprintf(buf, sizeof buf, "%f ", static_cast<double>(Elem<T>::load(v)));
    } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
        std::snprintf(buf, sizeof buf, "%d ", static_cast<int>(v));
    } else if constexpr (std::is_integral_v<T>) {
        std::snprintf(buf, sizeof buf, "%u ", static_cast<unsigned int>(v));
    } else if constexpr (sizeof(T) == 1) {
        uint8_t byte;
        std::memcpy(&byte, &v, 1);
        std::snprintf(buf, sizeof buf, "%u ", static_cast<unsigned int>(byte));
    } else {
        return "? ";
    }
    return buf;
}

//! `__pypto_dtype_name<T>()` of PyPTO Pro's runtime header
template <typename T>
inline const char* print_dtype_name()
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

}  // namespace pypto_native

namespace pto {

//! the name of a tile layout (pto-isa's `GetLayoutName`)
constexpr const char* GetLayoutName(BLayout bType, SLayout sType) noexcept
{
    switch (sType) {
        case SLayout::NoneBox: return bType == BLayout::RowMajor ? "ND" : "DN";
        case SLayout::RowMajor: return bType == BLayout::RowMajor ? "Zz" : "Nz";
        case SLayout::ColMajor: return bType == BLayout::RowMajor ? "Zn" : "Nn";
    }
    return "Unknown";
}

//! the storage offset of logical element (row, col) of a tile type (pto-isa's `GetTileOffset`)
template <typename TileT>
inline size_t GetTileOffset(int row, int col)
{
    static_assert(is_tile_data_v<TileT>, "tile_offset only accepts Tile types.");
    static_assert(!(TileT::isBoxedLayout && !TileT::isRowMajor && !TileT::isInnerRowMajor),
                  "Unsupported layout in Tile, fractal tiles should be Nz or Zn layout.");
    const pypto_native::Geometry g = pypto_native::make_geometry(
        TileT::Loc, TileT::Rows, TileT::Cols, static_cast<int64_t>(sizeof(typename TileT::DType)),
        TileT::BFractal, TileT::SFractal, TileT::SFractalSize, TileT::PadVal, TileT::Compact,
        TileT::Rows, TileT::Cols);
    return static_cast<size_t>(pypto_native::element_offset(g, row, col));
}

// TPRINT as PyPTO Pro's runtime header implements it (its `TPRINT(x)` is `__pypto_tprint(x)`).

//! a whole tile: a header, then every element of its storage in row-major (column-major for a
//! column-major tile) order, `| ` after the last valid column, `--------` after the last valid row
template <TileType L, typename T, int R, int C, BLayout B, int VR, int VC, SLayout S, int F,
          PadValue P, CompactMode M>
inline void TPRINT(Tile<L, T, R, C, B, VR, VC, S, F, P, M>& tile,
                   pypto_native::Loc loc = pypto_native::Loc::here())
{
    using namespace pypto_native;
    record("TPRINT", loc);
    auto v = view(tile, loc.line);
    if (static_cast<int64_t>(v.addr) + static_cast<int64_t>(sizeof(T)) * R * C > v.size) {
        raise_fault(FaultKind::Trap, loc.line, "%s: TPRINT of a tile at %#llx past the end of "
                    "its %s buffer", where().c_str(), static_cast<unsigned long long>(v.addr),
                    space_name(L));
    }
    const T* raw = tile.data();
    char head[256];
    std::snprintf(head, sizeof head, "=== [dump_tile] dtype: %s, shape=[%d,%d], valid=[%d,%d], "
                  "Layout: %s ===\n", print_dtype_name<T>(), R, C, static_cast<int>(v.vr),
                  static_cast<int>(v.vc), GetLayoutName(B, S));
    std::string out = head;
    for (int r = 0; r < R; ++r) {
        for (int c = 0; c < C; ++c) {
            out += print_val(raw[B == BLayout::RowMajor ? r * C + c : c * R + r]);
            if (c == v.vc - 1 && v.vc < C) out += "| ";
        }
        out += "\n";
        if (r == v.vr - 1 && v.vr < R) out += "--------\n";
    }
    ctx().printed += out;
}

//! a GM window: a header with its five extents, then each batch of rows
template <typename T, typename Sh, typename St, Layout Lay>
inline void TPRINT(GlobalTensor<T, Sh, St, Lay>& gt,
                   pypto_native::Loc loc = pypto_native::Loc::here())
{
    using namespace pypto_native;
    record("TPRINT", loc);
    int64_t n[5], s[5];
    for (int d = 0; d < 5; ++d) {
        n[d] = gt.GetShape(d);
        s[d] = gt.GetStride(d);
    }
    int64_t lo = 0, hi = 0;
    for (int d = 0; d < 5; ++d) {
        if (n[d] <= 0) return;
        (s[d] < 0 ? lo : hi) += (n[d] - 1) * s[d];
    }
    const uint64_t base = reinterpret_cast<uint64_t>(gt.data());
    check_gm("TPRINT", base, base + lo * static_cast<int64_t>(sizeof(T)),
             base + (hi + 1) * static_cast<int64_t>(sizeof(T)), loc.line);
    char head[256];
    std::snprintf(head, sizeof head, "=== [dump_tensor] dtype: %s, Layout: %s, "
                  "shape=[%d,%d,%d,%d,%d] ===\n", print_dtype_name<T>(),
                  Lay == Layout::DN ? "DN" : "ND", static_cast<int>(n[0]), static_cast<int>(n[1]),
                  static_cast<int>(n[2]), static_cast<int>(n[3]), static_cast<int>(n[4]));
    std::string out = head;
    for (int64_t i0 = 0; i0 < n[0]; ++i0) {
        for (int64_t i1 = 0; i1 < n[1]; ++i1) {
            for (int64_t i2 = 0; i2 < n[2]; ++i2) {
                std::snprintf(head, sizeof head, "  Batch [%d, %d, %d]:\n", static_cast<int>(i0),
                              static_cast<int>(i1), static_cast<int>(i2));
                out += head;
                for (int64_t r = 0; r < n[3]; ++r) {
                    for (int64_t c = 0; c < n[4]; ++c) {
                        T x;
                        std::memcpy(&x, gt.data() + i0 * s[0] + i1 * s[1] + i2 * s[2] + r * s[3] +
                                    c * s[4], sizeof(T));
                        out += print_val(x);
                    }
                    out += "\n";
                }
            }
        }
    }
    ctx().printed += out;
}

}  // namespace pto
