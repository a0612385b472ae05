// PyPTO Pro native backend: `Tile<...>` and the physical layouts of on-chip tiles.
//
// A tile is a typed view at a byte address of one on-chip buffer. Its element order follows
// `pypto_pro/sim/layout.py`: ND row-major, DN column-major, and the fractal layouts NZ / ZN /
// ZZ / NN (big letter = order of fractals, small letter = order inside a fractal, fractal =
// SFractalSize bytes: 16 rows x (elements/16) for a z inner order, (elements/16) x 16 for n),
// with `CompactMode` spacing the outer blocks. `View` is what the instructions use: base
// pointer, shape, valid window and the offset function, with a bounds check per access.
#pragma once

#include <cstdint>
#include <type_traits>

#include "context.hpp"
#include "numerics.hpp"

namespace pto {

enum class BLayout { RowMajor = 0, ColMajor = 1 };
enum class SLayout { NoneBox = 0, RowMajor = 1, ColMajor = 2 };
enum class PadValue { Null, Zero, Max, Min };
enum class CompactMode { Null, Normal, RowPlusOne };

namespace TileConfig {
constexpr int alignedSize = 32;
constexpr int fixedRowSize = 16;
constexpr int fixedColSize = 16;
constexpr int fixedMxRowSize = 16;
constexpr int fixedMxColSize = 2;
constexpr int fractalABSize = 512;
constexpr int fractalCSize = 1024;
constexpr int fractalMxSize = 32;
}  // namespace TileConfig

//! A tile: its template parameters, constructors, valid-shape accessors and the static checks
//! that reject bad forms are pto-isa's; the storage behind it (a byte address in this core's
//! buffer, the run-time valid extents) is ours.
template <TileType Loc_, typename Element_, const int Rows_, const int Cols_,
          const BLayout BFractal_ = BLayout::RowMajor, const int RowValid_ = Rows_,
          const int ColValid_ = Cols_, const SLayout SFractal_ = SLayout::NoneBox,
          const int SFractalSize_ = TileConfig::fractalABSize, auto PadVal_ = PadValue::Null,
          const CompactMode Compact_ = CompactMode::Null>
struct Tile {
    using DType = Element_;
    static constexpr TileType Loc = Loc_;
    static constexpr int Rows = Rows_;
    static constexpr int Cols = Cols_;
    static constexpr int RowStride = BFractal_ == BLayout::RowMajor ? Cols : 1;
    static constexpr int ColStride = BFractal_ == BLayout::RowMajor ? 1 : Rows;
    static constexpr int ValidRow = RowValid_;
    static constexpr int ValidCol = ColValid_;
    static constexpr BLayout BFractal = BFractal_;
    static constexpr SLayout SFractal = SFractal_;
    static constexpr int Numel = Rows * Cols;
    static constexpr bool isRowMajor = BFractal_ == BLayout::RowMajor;
    static constexpr int SFractalSize = SFractalSize_;
    static constexpr auto PadVal = PadVal_;
    static constexpr CompactMode Compact = Compact_;
    static constexpr bool isBoxedLayout = SFractal != SLayout::NoneBox;
    static constexpr bool isInnerRowMajor = SFractal == SLayout::RowMajor;

    static_assert(Rows > 0 && ValidRow <= Rows && Cols > 0 && ValidCol <= Cols,
                  "Invalid Tile Layout.");
    static_assert(SFractalSize_ == TileConfig::fractalABSize ||
                      SFractalSize_ == TileConfig::fractalCSize ||
                      SFractalSize_ == TileConfig::fractalMxSize,
                  "SFractalSize_ illegal");

    static constexpr int getInnerRow()
    {
        if constexpr (SFractalSize_ == TileConfig::fractalCSize) {
            return TileConfig::fixedRowSize;
        } else if constexpr (SFractalSize_ == TileConfig::fractalMxSize) {
            return isInnerRowMajor ? TileConfig::fixedMxRowSize : TileConfig::fixedMxColSize;
        } else {
            return isBoxedLayout ? (isInnerRowMajor ? TileConfig::fixedRowSize
                                                    : TileConfig::alignedSize /
                                                          static_cast<int>(sizeof(DType)))
                                 : 1;
        }
    }
    static constexpr int getInnerCol()
    {
        if constexpr (SFractalSize_ == TileConfig::fractalCSize) {
            return TileConfig::fixedColSize;
        } else if constexpr (SFractalSize_ == TileConfig::fractalMxSize) {
            return isInnerRowMajor ? TileConfig::fixedMxColSize : TileConfig::fixedMxRowSize;
        } else {
            return isBoxedLayout ? (isInnerRowMajor ? TileConfig::alignedSize /
                                                          static_cast<int>(sizeof(DType))
                                                    : TileConfig::fixedColSize)
                                 : 1;
        }
    }
    static constexpr int InnerRows = getInnerRow();
    static constexpr int InnerCols = getInnerCol();
    static_assert(InnerRows != 0 && InnerCols != 0, "rows or cols of fractal size is 0.");
    static_assert(Loc == TileType::Vec || SFractalSize_ == TileConfig::fractalMxSize ||
                      Rows_ == 1 || Rows % InnerRows == 0,
                  "Layout rows must be divisible by inner box rows");
    static_assert(Cols % InnerCols == 0, "Layout cols must be divisible by inner box cols");
    static_assert((BFractal_ == BLayout::RowMajor && SFractal_ == SLayout::NoneBox &&
                   Cols * sizeof(DType) % TileConfig::alignedSize == 0) ||
                      (BFractal_ == BLayout::ColMajor && SFractal_ == SLayout::NoneBox &&
                       Rows * sizeof(DType) % TileConfig::alignedSize == 0) ||
                      SFractal_ != SLayout::NoneBox,
                  "BFractal_ is RowMajor and SFractal_ is NoneBox: Rows must be 32 bytes align, "
                  "BFractal_ is ColMajor and SFractal_ is NoneBox: Cols must be 32 bytes align");

    uint64_t addr = 0;
    int64_t valid_row = RowValid_ < 0 ? Rows_ : RowValid_;
    int64_t valid_col = ColValid_ < 0 ? Cols_ : ColValid_;

    Tile() = default;
    //! both valid extents given at run time
    template <int RowMask = ValidRow, int ColMask = ValidCol>
    Tile(std::enable_if_t<RowMask == -1 && ColMask == -1, unsigned> vr,
         std::enable_if_t<RowMask == -1 && ColMask == -1, unsigned> vc)
        : valid_row(vr), valid_col(vc)
    {
    }
    //! only the valid rows given at run time
    template <int RowMask = ValidRow, int ColMask = ValidCol>
    Tile(std::enable_if_t<(RowMask == -1) && (ColMask > 0), unsigned> vr) : valid_row(vr)
    {
    }
    //! only the valid columns given at run time
    template <int RowMask = ValidRow, int ColMask = ValidCol, typename = void>
    Tile(std::enable_if_t<(RowMask > 0) && (ColMask == -1), unsigned> vc) : valid_col(vc)
    {
    }

    template <int RowMask = ValidRow>
    static constexpr std::enable_if_t<(RowMask > 0), unsigned> GetValidRow()
    {
        return RowMask;
    }
    template <int RowMask = ValidRow>
    std::enable_if_t<RowMask == -1, unsigned> GetValidRow() const
    {
        return static_cast<unsigned>(valid_row);
    }
    template <int ColMask = ValidCol>
    static constexpr std::enable_if_t<(ColMask > 0), unsigned> GetValidCol()
    {
        return ColMask;
    }
    template <int ColMask = ValidCol>
    std::enable_if_t<ColMask == -1, unsigned> GetValidCol() const
    {
        return static_cast<unsigned>(valid_col);
    }

    void SetValidRow(unsigned rows)
    {
        static_assert(ValidRow == -1, "Only Dynamic Valid Row Support Set Value.");
        check_valid(rows, static_cast<unsigned>(valid_col));
        valid_row = rows;
    }
    void SetValidCol(unsigned cols)
    {
        static_assert(ValidCol == -1, "Only Dynamic Valid Col Support Set Value.");
        check_valid(static_cast<unsigned>(valid_row), cols);
        valid_col = cols;
    }
    void SetValidShape(unsigned rows, unsigned cols)
    {
        static_assert(ValidCol == -1 && ValidRow == -1,
                      "Only Dynamic Valid Shape Support Set Value.");
        check_valid(rows, cols);
        valid_row = rows;
        valid_col = cols;
    }
    //! host pointer to the tile's first byte (in this core's view of its buffer)
    DType* data() const
    {
        int64_t size = 0;
        uint8_t* base = pypto_native::space_base(Loc_, size);
        if (base == nullptr) {
            pypto_native::raise_fault(pypto_native::FaultKind::Trap, 0,
                                      "%s: a %s tile has no buffer on this core",
                                      pypto_native::where().c_str(),
                                      pypto_native::space_name(Loc_));
        }
        return reinterpret_cast<DType*>(base + addr);
    }

private:
    static void check_valid(unsigned rows, unsigned cols)
    {
        if (rows > static_cast<unsigned>(Rows_) || cols > static_cast<unsigned>(Cols_)) {
            pypto_native::raise_fault(pypto_native::FaultKind::Trap, 0,
                                      "the valid shape [%u, %u] exceeds the tile's shape "
                                      "[%d, %d]", rows, cols, Rows_, Cols_);
        }
    }
};

template <typename T>
struct is_tile : std::false_type {};
template <TileType L, typename E, int R, int C, BLayout B, int VR, int VC, SLayout S, int F,
          auto P, CompactMode M>
struct is_tile<Tile<L, E, R, C, B, VR, VC, S, F, P, M>> : std::true_type {};
template <typename T>
inline constexpr bool is_tile_data_v = is_tile<std::remove_cv_t<T>>::value;

}  // namespace pto

namespace pypto_native {

using pto::BLayout;
using pto::CompactMode;
using pto::PadValue;
using pto::SLayout;

enum class LayoutKind { ND, DN, Fractal };

//! the runtime description of a tile's storage: everything the offset function needs
struct Geometry {
    TileType space;
    int64_t rows, cols;
    int64_t elem;  // bytes per element
    LayoutKind kind;
    bool big_col;     // fractals stacked down columns (N) vs along rows (Z)
    bool small_row;   // z order inside a fractal
    int64_t fr, fc;   // fractal rows / cols
    int64_t stride;   // outer stride (elements, rows or cols, see layout.py)
    PadValue pad;
};

//! a tile's storage description from its type parameters and its valid shape
inline Geometry make_geometry(TileType space, int64_t rows, int64_t cols, int64_t elem,
                              BLayout bl, SLayout sl, int64_t fractal_bytes, PadValue pad,
                              CompactMode compact, int64_t valid_row, int64_t valid_col)
{
    Geometry g{};
    g.space = space;
    g.rows = rows;
    g.cols = cols;
    g.elem = elem;
    g.pad = pad;
    const bool col = bl == BLayout::ColMajor;
    if (sl == SLayout::NoneBox) {
        // a one-column tile is always ColMajor in generated code: ND and DN agree there
        g.kind = col ? LayoutKind::DN : LayoutKind::ND;
        g.fr = g.fc = 1;
        g.stride = col ? rows : cols;
        if (compact == CompactMode::RowPlusOne) g.stride += 1;
        return g;
    }
    g.kind = LayoutKind::Fractal;
    g.big_col = col;
    g.small_row = sl == SLayout::RowMajor;
    const int64_t elems = fractal_bytes / elem;
    g.fr = g.small_row ? 16 : elems / 16;
    g.fc = g.small_row ? elems / 16 : 16;
    int64_t stride = col ? rows : cols;
    if (compact == CompactMode::Normal) {
        const int64_t valid = col ? valid_row : valid_col;
        const int64_t step = col ? g.fr : g.fc;
        stride = (valid + step - 1) / step * step;
    } else if (compact == CompactMode::RowPlusOne) {
        stride += 1;
    }
    g.stride = stride;
    return g;
}

template <typename TileT>
inline Geometry geometry(const TileT& t)
{
    return make_geometry(TileT::Loc, TileT::Rows, TileT::Cols,
                         static_cast<int64_t>(sizeof(typename TileT::DType)), TileT::BFractal,
                         TileT::SFractal, TileT::SFractalSize, TileT::PadVal, TileT::Compact,
                         t.valid_row, t.valid_col);
}

inline int64_t element_offset(const Geometry& g, int64_t r, int64_t c)
{
    switch (g.kind) {
        case LayoutKind::ND: return r * g.stride + c;
        case LayoutKind::DN: return c * g.stride + r;
        case LayoutKind::Fractal: break;
    }
    const int64_t gr = r / g.fr, ir = r % g.fr, gc = c / g.fc, ic = c % g.fc;
    const int64_t inner = g.small_row ? ir * g.fc + ic : ic * g.fr + ir;
    if (g.big_col) return gc * (g.stride * g.fc) + gr * (g.fr * g.fc) + inner;
    return gr * (g.fr * g.stride) + gc * (g.fr * g.fc) + inner;
}

//! A tile as the instructions see it: element access by logical (row, col), bounds-checked.
template <typename T>
struct View {
    Geometry g;
    uint8_t* base;  // buffer start
    int64_t size;   // buffer bytes
    uint64_t addr;
    int64_t vr, vc;
    int line;

    T* ptr(int64_t r, int64_t c) const
    {
        if (r < 0 || c < 0 || r >= g.rows || c >= g.cols) {
            raise_fault(FaultKind::Trap, line, "%s: element [%lld, %lld] is outside the %s tile "
                        "[%lld, %lld] at %#llx", where().c_str(), static_cast<long long>(r),
                        static_cast<long long>(c), space_name(g.space),
                        static_cast<long long>(g.rows), static_cast<long long>(g.cols),
                        static_cast<unsigned long long>(addr));
        }
        const int64_t off = static_cast<int64_t>(addr) + element_offset(g, r, c) * g.elem;
        if (off < 0 || off + g.elem > size) {
            raise_fault(FaultKind::Trap, line, "%s: tile access at %s byte %#llx is outside the "
                        "buffer (%lld bytes)", where().c_str(), space_name(g.space),
                        static_cast<unsigned long long>(off), static_cast<long long>(size));
        }
        return reinterpret_cast<T*>(base + off);
    }
    T get(int64_t r, int64_t c) const
    {
        T v;
        std::memcpy(&v, ptr(r, c), sizeof(T));
        return v;
    }
    void set(int64_t r, int64_t c, const T& v) const { std::memcpy(ptr(r, c), &v, sizeof(T)); }

    //! whether every element of the window [r0, r0 + rows) x [c0, c0 + cols) lies inside the
    //! tile and the buffer; then `at` may be used without per-element checks
    bool window_ok(int64_t r0, int64_t c0, int64_t rows, int64_t cols) const
    {
        if (rows <= 0 || cols <= 0) return true;
        if (r0 < 0 || c0 < 0 || r0 + rows > g.rows || c0 + cols > g.cols) return false;
        if (static_cast<int64_t>(addr) % g.elem != 0) return false;
        int64_t lo = element_offset(g, r0, c0), hi = element_offset(g, r0 + rows - 1, c0 + cols - 1);
        if (g.kind == LayoutKind::Fractal) {  // extremes sit at the corners of each fractal cell
            for (int64_t r = r0 - r0 % g.fr; r < r0 + rows; r += g.fr) {
                for (int64_t c = c0 - c0 % g.fc; c < c0 + cols; c += g.fc) {
                    const int64_t ra = std::max(r, r0), ca = std::max(c, c0);
                    const int64_t rb = std::min(r + g.fr, r0 + rows) - 1;
                    const int64_t cb = std::min(c + g.fc, c0 + cols) - 1;
                    lo = std::min(lo, element_offset(g, ra, ca));
                    hi = std::max(hi, element_offset(g, rb, cb));
                }
            }
        } else {
            lo = std::min(lo, std::min(element_offset(g, r0 + rows - 1, c0),
                                       element_offset(g, r0, c0 + cols - 1)));
            hi = std::max(hi, std::max(element_offset(g, r0 + rows - 1, c0),
                                       element_offset(g, r0, c0 + cols - 1)));
        }
        const int64_t first = static_cast<int64_t>(addr) + lo * g.elem;
        const int64_t end = static_cast<int64_t>(addr) + (hi + 1) * g.elem;
        return first >= 0 && end <= size;
    }
    //! unchecked element pointer (only after window_ok)
    T* at(int64_t r, int64_t c) const
    {
        return reinterpret_cast<T*>(base + addr) + element_offset(g, r, c);
    }
    //! unchecked row start of an ND tile (elements of a row are contiguous)
    T* row(int64_t r) const { return reinterpret_cast<T*>(base + addr) + r * g.stride; }
    //! the element at physical element offset `k` from the tile's address (getval / setval)
    T* linear(int64_t k) const
    {
        const int64_t off = static_cast<int64_t>(addr) + k * g.elem;
        if (k < 0 || k >= g.rows * g.cols || off + g.elem > size) {
            raise_fault(FaultKind::Trap, line, "%s: element access %lld past %s tile [%lld, "
                        "%lld] at %#llx", where().c_str(), static_cast<long long>(k),
                        space_name(g.space), static_cast<long long>(g.rows),
                        static_cast<long long>(g.cols), static_cast<unsigned long long>(addr));
        }
        return reinterpret_cast<T*>(base + off);
    }
    //! a dense DN window: torch keeps its column-major order through clone() / .to()
    bool column_major_dense() const { return g.kind == LayoutKind::DN && vr == g.rows; }
};

//! the view of `t` on this core (`vec_target`: which AIV's UB a cube-side Vec tile means)
template <typename TileT>
inline View<typename TileT::DType> view(const TileT& t, int line, int vec_target = -1)
{
    using T = typename TileT::DType;
    View<T> v{};
    v.g = geometry(t);
    v.base = space_base(TileT::Loc, v.size, vec_target);
    if (v.base == nullptr) {
        raise_fault(FaultKind::Trap, line, "%s: no %s buffer reachable from this core (a %s tile "
                    "on the %s needs a mix kernel)", where().c_str(), space_name(TileT::Loc),
                    space_name(TileT::Loc), ctx().kind == AIC ? "cube" : "vector core");
    }
    v.addr = t.addr;
    v.vr = t.valid_row;
    v.vc = t.valid_col;
    v.line = line;
    return v;
}

//! getval / setval of tile element `k` (`PYPTO_TILE_ELEM`: physical offset from the tile's
//! address), checked against the tile's shape and its buffer
template <typename TileT>
inline typename TileT::DType& tile_element(const TileT& t, int64_t k, int line)
{
    return *view(t, line).linear(k);
}

}  // namespace pypto_native

#define PYPTO_TILE_ELEM(tile, k) \
    (::pypto_native::tile_element((tile), static_cast<int64_t>(k), __LINE__))

namespace pto {

template <TileType L, typename T, int R, int C, BLayout B, int VR, int VC, SLayout S, int F,
          auto P, CompactMode M, typename AddrType,
          std::enable_if_t<std::is_integral_v<AddrType>, int> = 0>
inline void TASSIGN(Tile<L, T, R, C, B, VR, VC, S, F, P, M>& tile, AddrType address,
                    pypto_native::Loc loc = pypto_native::Loc::here())
{
    pypto_native::record("TASSIGN", loc);
    tile.addr = pypto_native::address_offset(L, static_cast<uint64_t>(address));
}

//! a new tile type over the bytes of `src` (same address, valid shape reset to the full one)
template <typename Dst, typename Src>
inline void TRESHAPE(Dst& dst, const Src& src, pypto_native::Loc loc = pypto_native::Loc::here())
{
    pypto_native::record("TRESHAPE", loc);
    dst.addr = src.addr;
}

}  // namespace pto
