// PyPTO Pro native backend: gather / scatter, sorting, histogram and quantisation (pipe V).
//
// As the simulator's `gather.py`, `sort.py` and `quant.py`: flat indices address a tile's full
// logical [rows, cols] in row-major order (out-of-range gathers read 0, scatters drop);
// sorted data are 8-byte (value, uint32 index) records, descending, ties keep the smaller
// index (sort32) or the earlier list (merges); histograms are cumulative byte counts per row;
// quant / dequant use per-row parameter tiles ([rows, 1], past the valid rows the last valid
// row repeats) or scalars, products in float32.
#pragma once

#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

#include "vector.hpp"

namespace pto {
enum class MaskPattern : uint8_t {
    P0101 = 1, P1010 = 2, P0001 = 3, P0010 = 4, P0100 = 5, P1000 = 6, P1111 = 7,
};
enum class GatherAxis : uint8_t { GATHER_ROW = 0, GATHER_COL = 1 };
enum class HistByte : uint8_t { BYTE_0 = 0, BYTE_1 = 1, BYTE_2 = 2, BYTE_3 = 3 };
enum class QuantType { MXFP8 = 0, MXFP4_E2M1 = 1, INT8_SYM = 2, INT8_ASYM = 3 };

//! how many elements of each list a multi-list TMRGSORT consumed (not filled here)
struct MrgSortExecutedNumList {
    uint16_t mrgSortList0;
    uint16_t mrgSortList1;
    uint16_t mrgSortList2;
    uint16_t mrgSortList3;
};
}  // namespace pto

namespace pypto_native {

enum class QuantMode { SYM, ASYM };

template <typename T>
inline std::vector<T> full_logical(const View<T>& v)
{
    std::vector<T> out(static_cast<size_t>(v.g.rows * v.g.cols));
    for (int64_t r = 0; r < v.g.rows; ++r) {
        for (int64_t c = 0; c < v.g.cols; ++c) out[r * v.g.cols + c] = v.get(r, c);
    }
    return out;
}

template <typename I>
inline void check_index_type(const char* op, int line)
{
    if constexpr (!(std::is_same_v<I, int16_t> || std::is_same_v<I, uint16_t> ||
                    std::is_same_v<I, int32_t> || std::is_same_v<I, uint32_t>)) {
        raise_fault(FaultKind::Trap, line, "%s: %s: index tile must be INT16/UINT16/INT32/UINT32",
                    where().c_str(), op);
    }
}

template <typename O, typename S, typename I>
inline void gather(O& out, S& src, I& idx, CmpMode mode, int64_t offset, int line)
{
    using T = typename O::DType;
    require_same<O, S>("TGATHER", line);
    check_index_type<typename I::DType>("TGATHER", line);
    if (mode != CmpMode::EQ) {
        raise_fault(FaultKind::Trap, line, "%s: TGATHER: compare-mode gather (cmp_mode != EQ) is "
                    "not modelled", where().c_str());
    }
    auto o = view(out, line);
    auto flat = full_logical(view(src, line));
    auto iv = view(idx, line);
    std::vector<T> res(static_cast<size_t>(o.vr * o.vc));
    for (int64_t r = 0; r < o.vr; ++r) {
        for (int64_t c = 0; c < o.vc; ++c) {
            const int64_t w = static_cast<int64_t>(iv.get(r, c)) + offset;
            res[r * o.vc + c] = (w >= 0 && w < static_cast<int64_t>(flat.size())) ? flat[w] : T{};
        }
    }
    for (int64_t r = 0; r < o.vr; ++r) {
        for (int64_t c = 0; c < o.vc; ++c) o.set(r, c, res[r * o.vc + c]);
    }
}

template <typename O, typename S, typename I>
inline void gatherb(O& out, S& src, I& offsets, int line)
{
    using T = typename O::DType;
    require_same<O, S>("TGATHERB", line);
    auto o = view(out, line);
    auto flat = full_logical(view(src, line));
    const auto* raw = reinterpret_cast<const uint8_t*>(flat.data());
    const int64_t nraw = static_cast<int64_t>(flat.size() * sizeof(T));
    const int64_t per_block = 32 / static_cast<int64_t>(sizeof(T));
    const int64_t blocks = (o.vc + per_block - 1) / per_block;
    auto ov = view(offsets, line);
    std::vector<uint8_t> bytes(static_cast<size_t>(blocks * 32));
    for (int64_t r = 0; r < o.vr; ++r) {
        for (int64_t b = 0; b < blocks; ++b) {
            const int64_t start = static_cast<int64_t>(ov.get(r, b));
            if (start < 0 || start + 32 > nraw) {
                raise_fault(FaultKind::Trap, line, "%s: TGATHERB: a byte offset falls outside the "
                            "%lld-byte source tile", where().c_str(), static_cast<long long>(nraw));
            }
            std::memcpy(&bytes[b * 32], raw + start, 32);
        }
        for (int64_t c = 0; c < o.vc; ++c) {
            T v;
            std::memcpy(&v, &bytes[c * sizeof(T)], sizeof(T));
            o.set(r, c, v);
        }
    }
}

template <typename O, typename S>
inline void gathermask(O& out, S& src, int64_t pattern, int line)
{
    using T = typename O::DType;
    using ST = typename S::DType;
    static const int64_t steps[8][2] = {{0, 0}, {2, 0}, {2, 1}, {4, 0}, {4, 1}, {4, 2}, {4, 3},
                                        {1, 0}};
    if constexpr (sizeof(T) != sizeof(ST)) {
        raise_fault(FaultKind::Trap, line, "%s: TGATHERMASK element sizes differ", where().c_str());
    } else {
        if (pattern < 1 || pattern > 7) {
            raise_fault(FaultKind::Trap, line, "%s: TGATHERMASK pattern_mode must be 1..7, got %lld",
                        where().c_str(), static_cast<long long>(pattern));
        }
        const int64_t step = steps[pattern][0], first = steps[pattern][1];
        auto o = view(out, line);
        auto s = view(src, line);
        std::vector<T> picked;
        int64_t n = 0;
        for (int64_t r = 0; r < s.vr; ++r) {
            n = 0;
            for (int64_t c = first; c < s.vc; c += step, ++n) {
                picked.push_back(reinterpret_elem<ST, T>(s.get(r, c)));
            }
        }
        for (int64_t r = 0; r < s.vr; ++r) {
            for (int64_t c = 0; c < n; ++c) o.set(r, c, picked[r * n + c]);
        }
    }
}

template <typename O, typename S, typename I>
inline void scatter(O& out, S& src, I& idx, int line)
{
    require_same<O, S>("TSCATTER", line);
    check_index_type<typename I::DType>("TSCATTER", line);
    auto o = view(out, line);
    auto s = view(src, line);
    auto iv = view(idx, line);
    auto flat = full_logical(o);
    for (int64_t r = 0; r < s.vr; ++r) {
        for (int64_t c = 0; c < s.vc; ++c) {
            const int64_t w = static_cast<int64_t>(iv.get(r, c));
            if (w >= 0 && w < static_cast<int64_t>(flat.size())) flat[w] = s.get(r, c);
        }
    }
    for (int64_t r = 0; r < o.g.rows; ++r) {
        for (int64_t c = 0; c < o.g.cols; ++c) o.set(r, c, flat[r * o.g.cols + c]);
    }
}

// ------------------------------------------------------------------ sort records

template <typename T>
struct Rec {
    T value;
    int64_t index;
    int list;
};

template <typename T>
inline void check_sortable(const char* op, int line)
{
    if constexpr (!(std::is_same_v<T, float> || std::is_same_v<T, half>)) {
        raise_fault(FaultKind::Trap, line, "%s: %s sorts FP16/FP32 only", where().c_str(), op);
    }
}

template <typename T>
inline void encode_record(uint8_t* out, const T& v, int64_t index)
{
    std::memset(out, 0, 8);
    std::memcpy(out, &v, sizeof(T));
    const uint32_t i = static_cast<uint32_t>(index);
    std::memcpy(out + 4, &i, 4);
}

template <typename T>
inline Rec<T> decode_record(const uint8_t* in)
{
    Rec<T> r{};
    std::memcpy(&r.value, in, sizeof(T));
    uint32_t i;
    std::memcpy(&i, in + 4, 4);
    r.index = i;
    return r;
}

//! stable descending sort by value (as float)
template <typename T>
inline void sort_desc(std::vector<Rec<T>>& v, size_t from, size_t to)
{
    std::stable_sort(v.begin() + static_cast<ptrdiff_t>(from), v.begin() + static_cast<ptrdiff_t>(to),
                     [](const Rec<T>& a, const Rec<T>& b) {
                         return static_cast<float>(a.value) > static_cast<float>(b.value);
                     });
}

//! the bytes of a tile's window [rows, cols] (row-major)
template <typename T>
inline std::vector<uint8_t> window_bytes(const View<T>& v, int64_t rows, int64_t cols)
{
    std::vector<uint8_t> out(static_cast<size_t>(rows * cols) * sizeof(T));
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) {
            T x = v.get(r, c);
            std::memcpy(&out[(r * cols + c) * sizeof(T)], &x, sizeof(T));
        }
    }
    return out;
}

template <typename T>
inline void write_bytes(const View<T>& v, const std::vector<uint8_t>& bytes, int64_t rows)
{
    const int64_t cols = static_cast<int64_t>(bytes.size() / sizeof(T)) / std::max<int64_t>(rows, 1);
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) {
            T x;
            std::memcpy(&x, &bytes[(r * cols + c) * sizeof(T)], sizeof(T));
            v.set(r, c, x);
        }
    }
}

template <typename D, typename S, typename I>
inline void sort32(D& dst, S& src, I& idx, int line)
{
    using T = typename S::DType;
    require_same<D, S>("TSORT32", line);
    check_sortable<T>("TSORT32", line);
    auto s = view(src, line);
    auto iv = view(idx, line);
    const int64_t rows = s.vr, cols = s.vc;
    std::vector<uint8_t> out(static_cast<size_t>(rows * cols * 8));
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t g0 = 0; g0 < cols; g0 += 32) {
            std::vector<Rec<T>> group;
            for (int64_t c = g0; c < std::min(cols, g0 + 32); ++c) {
                const int64_t ir = iv.vr == 1 ? 0 : r;
                const int64_t index = static_cast<int64_t>(
                    static_cast<uint32_t>(reinterpret_elem<typename I::DType, uint32_t>(iv.get(ir, c))));
                group.push_back({s.get(r, c), index, 0});
            }
            std::stable_sort(group.begin(), group.end(),
                             [](const Rec<T>& a, const Rec<T>& b) { return a.index < b.index; });
            sort_desc(group, 0, group.size());
            for (size_t k = 0; k < group.size(); ++k) {
                encode_record(&out[static_cast<size_t>((r * cols + g0 + static_cast<int64_t>(k)) * 8)],
                              group[k].value, group[k].index);
            }
        }
    }
    write_bytes(view(dst, line), out, rows);
}

template <typename D, typename S>
inline void mrgsort(D& dst, S& src, int64_t block_len, int line)
{
    using T = typename S::DType;
    require_same<D, S>("TMRGSORT", line);
    check_sortable<T>("TMRGSORT", line);
    auto s = view(src, line);
    const int64_t cols = s.vc;
    if (block_len <= 0 || cols % (4 * block_len)) {
        raise_fault(FaultKind::Trap, line, "%s: TMRGSORT: valid cols %lld must be a multiple of 4 "
                    "* block_len (%lld)", where().c_str(), static_cast<long long>(cols),
                    static_cast<long long>(block_len));
    }
    auto bytes = window_bytes(s, s.vr, cols);
    const int64_t per_row = cols * static_cast<int64_t>(sizeof(T)) / 8;
    const int64_t merged = 4 * block_len * static_cast<int64_t>(sizeof(T)) / 8;
    for (int64_t r = 0; r < s.vr; ++r) {
        std::vector<Rec<T>> recs;
        for (int64_t k = 0; k < per_row; ++k) recs.push_back(decode_record<T>(&bytes[(r * per_row + k) * 8]));
        for (int64_t k = 0; k < per_row; k += merged) sort_desc(recs, k, std::min(per_row, k + merged));
        for (int64_t k = 0; k < per_row; ++k) {
            encode_record(&bytes[(r * per_row + k) * 8], recs[k].value, recs[k].index);
        }
    }
    write_bytes(view(dst, line), bytes, s.vr);
}

template <typename D, typename Tmp, typename... L>
inline void mrgsort_lists(D& dst, Tmp& tmp, bool exhausted, int line, L&... lists)
{
    using T = typename D::DType;
    check_sortable<T>("TMRGSORT", line);
    std::vector<Rec<T>> all;
    int list = 0;
    auto add = [&](auto& tile) {
        auto v = view(tile, line);
        auto bytes = window_bytes(v, 1, v.vc);
        const int64_t n = v.vc * static_cast<int64_t>(sizeof(T)) / 8;
        for (int64_t k = 0; k < n; ++k) {
            Rec<T> rec = decode_record<T>(&bytes[k * 8]);
            rec.list = list;
            all.push_back(rec);
        }
        ++list;
    };
    (add(lists), ...);
    sort_desc(all, 0, all.size());
    size_t count = all.size();
    if (exhausted) {
        for (int n = 0; n < list; ++n) {
            size_t last = 0;
            bool any = false;
            for (size_t k = 0; k < all.size(); ++k) {
                if (all[k].list == n) {
                    last = k;
                    any = true;
                }
            }
            if (any) count = std::min(count, last + 1);
        }
    }
    // vmrgsort4 writes the whole merge from tmp's address (past tmp's own columns when it is
    // shorter: pto-isa sizes tmp only against the UB), then dst's valid columns are copied
    auto tv = view(tmp, line);
    auto dv = view(dst, line);
    const size_t dst_bytes = static_cast<size_t>(dv.vc) * sizeof(T);
    const size_t run = std::max(count * 8, dst_bytes);
    if (tv.addr + run > static_cast<uint64_t>(tv.size)) {
        raise_fault(FaultKind::Trap, line, "%s: TMRGSORT: the merge writes %zu bytes from UB "
                    "%#llx, past the buffer (%lld bytes)", where().c_str(), run,
                    static_cast<unsigned long long>(tv.addr), static_cast<long long>(tv.size));
    }
    uint8_t* out = tv.base + tv.addr;
    for (size_t k = 0; k < count; ++k) encode_record(&out[k * 8], all[k].value, all[k].index);
    std::vector<uint8_t> dbytes(out, out + dst_bytes);
    write_bytes(dv, dbytes, 1);
}

template <typename D, typename S, typename I>
inline void histogram(D& dst, S& src, I& idx, bool is_msb, int line)
{
    using ST = typename S::DType;
    constexpr bool u16 = std::is_same_v<ST, uint16_t>;
    if constexpr (!(u16 || std::is_same_v<ST, uint32_t>) ||
                  !std::is_same_v<typename D::DType, uint32_t> ||
                  !std::is_same_v<typename I::DType, uint8_t>) {
        raise_fault(FaultKind::Trap, line, "%s: THISTOGRAM needs UINT16/UINT32 src, UINT32 dst, "
                    "UINT8 idx", where().c_str());
    } else {
        auto s = view(src, line);
        auto iv = view(idx, line);
        auto d = view(dst, line);
        const int top = u16 ? 1 : 3;
        for (int64_t r = 0; r < s.vr; ++r) {
            int64_t counts[256] = {};
            for (int64_t c = 0; c < s.vc; ++c) {
                const uint64_t x = static_cast<uint64_t>(s.get(r, c));
                int byte;
                bool keep = true;
                if (is_msb) {
                    byte = static_cast<int>((x >> (8 * top)) & 0xff);
                } else {
                    byte = static_cast<int>(x & 0xff);
                    if (u16) {
                        keep = ((x >> 8) & 0xff) == iv.get(r, 0);
                    } else {
                        for (int row = 0, b = 3; b > 0; --b, ++row) {
                            keep = keep && ((x >> (8 * b)) & 0xff) == iv.get(row, 0);
                        }
                    }
                }
                if (keep) counts[byte] += 1;
            }
            int64_t acc = 0;
            for (int b = 0; b < 256; ++b) {
                acc += counts[b];
                d.set(r, b, static_cast<uint32_t>(acc));
            }
        }
    }
}

// ------------------------------------------------------------------ quantisation

//! a per-row parameter: tile column [rows, 1] (rows past the valid ones reuse the last) or scalar
template <typename P>
inline std::vector<float> row_parameter(P& param, int64_t rows, int line)
{
    std::vector<float> out(static_cast<size_t>(rows));
    if constexpr (is_tile_v<P>) {
        using PT = typename std::decay_t<P>::DType;
        auto v = view(param, line);
        for (int64_t r = 0; r < rows; ++r) {
            out[r] = static_cast<float>(Elem<PT>::load(v.get(std::min(r, v.vr - 1), 0)));
        }
    } else {
        std::fill(out.begin(), out.end(), static_cast<float>(param));
    }
    return out;
}

struct NoOffset {};

template <typename O, typename S, typename Sc, typename Off>
inline void quant(O& out, S& src, Sc& scale, Off* offset, QuantMode mode, int line)
{
    using D = typename O::DType;
    if constexpr (!std::is_same_v<typename S::DType, float>) {
        raise_fault(FaultKind::Trap, line, "%s: TQUANT needs an FP32 source", where().c_str());
    } else {
        auto o = view(out, line);
        auto a = read_block(view(src, line), 0, 0, o.vr, o.vc);
        auto sc = row_parameter(scale, o.vr, line);
        std::vector<float> off(static_cast<size_t>(o.vr), 0.0f);
        if (mode == QuantMode::SYM) {
            if (!std::is_same_v<D, int8_t>) {
                raise_fault(FaultKind::Trap, line, "%s: SYM quantisation writes INT8", where().c_str());
            }
        } else {
            if (!std::is_same_v<D, uint8_t>) {
                raise_fault(FaultKind::Trap, line, "%s: ASYM quantisation writes UINT8", where().c_str());
            }
            if constexpr (std::is_same_v<Off, NoOffset>) {
                raise_fault(FaultKind::Trap, line, "%s: ASYM quantisation needs an offset",
                            where().c_str());
            } else {
                off = row_parameter(*offset, o.vr, line);
            }
        }
        for (int64_t r = 0; r < o.vr; ++r) {
            for (int64_t c = 0; c < o.vc; ++c) {
                float v = a[r * o.vc + c] * sc[r];
                if (mode == QuantMode::ASYM) v = v + off[r];
                o.set(r, c, store_from_float<D>(v));
            }
        }
    }
}

template <typename O, typename S, typename Sc, typename Off>
inline void dequant(O& out, S& src, Sc& scale, Off* offset, int line)
{
    using D = typename O::DType;
    auto o = view(out, line);
    auto a = read_block(view(src, line), 0, 0, o.vr, o.vc);
    auto sc = row_parameter(scale, o.vr, line);
    std::vector<float> off(static_cast<size_t>(o.vr), 0.0f);
    if constexpr (!std::is_same_v<Off, NoOffset>) off = row_parameter(*offset, o.vr, line);
    for (int64_t r = 0; r < o.vr; ++r) {
        for (int64_t c = 0; c < o.vc; ++c) {
            const float shifted = static_cast<float>(a[r * o.vc + c]) - off[r];
            o.set(r, c, store_from_float<D>(shifted * sc[r]));
        }
    }
}

}  // namespace pypto_native

namespace pto {

// Declared as pto-isa declares them (template parameters, operand order, scratch tiles).

template <typename TileDataD, typename TileDataS0, typename TileDataS1, typename TileDataTmp>
inline void TGATHER(TileDataD& dst, TileDataS0& src0, TileDataS1& src1, TileDataTmp&, PYPTO_LOC)
{
    pypto_native::record("TGATHER", loc);
    pypto_native::gather(dst, src0, src1, CmpMode::EQ, 0, loc.line);
}

//! the columns of each source row that `maskPattern` selects
template <typename DstTileData, typename SrcTileData, MaskPattern maskPattern = MaskPattern::P1111,
          auto gatherType = GatherAxis::GATHER_ROW>
inline void TGATHER(DstTileData& dst, SrcTileData& src, PYPTO_LOC)
{
    static_assert(gatherType == GatherAxis::GATHER_ROW,
                  "TGATHER: the native backend implements row-wise mask gathers");
    pypto_native::record("TGATHER", loc);
    pypto_native::gathermask(dst, src, static_cast<int64_t>(maskPattern), loc.line);
}

template <typename TileDataDst, typename TileDataSrc, typename TileDataOffset>
inline void TGATHERB(TileDataDst& dst, TileDataSrc& src, TileDataOffset& offset, PYPTO_LOC)
{
    pypto_native::record("TGATHERB", loc);
    pypto_native::gatherb(dst, src, offset, loc.line);
}

template <typename TileDataD, typename TileDataS, typename TileDataI>
inline void TSCATTER(TileDataD& dst, TileDataS& src, TileDataI& indexes, PYPTO_LOC)
{
    pypto_native::record("TSCATTER", loc);
    pypto_native::scatter(dst, src, indexes, loc.line);
}

template <typename DstTileData, typename SrcTileData, typename IdxTileData>
inline void TSORT32(DstTileData& dst, SrcTileData& src, IdxTileData& idx, PYPTO_LOC)
{
    pypto_native::record("TSORT32", loc);
    pypto_native::sort32(dst, src, idx, loc.line);
}

template <typename DstTileData, typename SrcTileData, typename IdxTileData, typename TmpTileData>
inline void TSORT32(DstTileData& dst, SrcTileData& src, IdxTileData& idx, TmpTileData&, PYPTO_LOC)
{
    pypto_native::record("TSORT32", loc);
    pypto_native::sort32(dst, src, idx, loc.line);
}

template <typename DstTileData, typename SrcTileData>
inline void TMRGSORT(DstTileData& dst, SrcTileData& src, uint32_t blockLen, PYPTO_LOC)
{
    pypto_native::record("TMRGSORT", loc);
    pypto_native::mrgsort(dst, src, blockLen, loc.line);
}

template <typename DstTileData, typename TmpTileData, typename Src0TileData, typename Src1TileData,
          bool exhausted>
inline void TMRGSORT(DstTileData& dst, MrgSortExecutedNumList&, TmpTileData& tmp,
                     Src0TileData& src0, Src1TileData& src1, PYPTO_LOC)
{
    pypto_native::record("TMRGSORT", loc);
    pypto_native::mrgsort_lists(dst, tmp, exhausted, loc.line, src0, src1);
}

template <typename DstTileData, typename TmpTileData, typename Src0TileData, typename Src1TileData,
          typename Src2TileData, bool exhausted>
inline void TMRGSORT(DstTileData& dst, MrgSortExecutedNumList&, TmpTileData& tmp,
                     Src0TileData& src0, Src1TileData& src1, Src2TileData& src2, PYPTO_LOC)
{
    pypto_native::record("TMRGSORT", loc);
    pypto_native::mrgsort_lists(dst, tmp, exhausted, loc.line, src0, src1, src2);
}

template <typename DstTileData, typename TmpTileData, typename Src0TileData, typename Src1TileData,
          typename Src2TileData, typename Src3TileData, bool exhausted>
inline void TMRGSORT(DstTileData& dst, MrgSortExecutedNumList&, TmpTileData& tmp,
                     Src0TileData& src0, Src1TileData& src1, Src2TileData& src2,
                     Src3TileData& src3, PYPTO_LOC)
{
    pypto_native::record("TMRGSORT", loc);
    pypto_native::mrgsort_lists(dst, tmp, exhausted, loc.line, src0, src1, src2, src3);
}

//! cumulative counts of byte `byte` of the source elements (byte 0: of the elements whose
//! higher bytes match the row's index, the simulator's rule)
template <HistByte byte, typename TileDataDst, typename TileDataSrc, typename TileDataIdx>
inline void THISTOGRAM(TileDataDst& dst, TileDataSrc& src, TileDataIdx& idx, PYPTO_LOC)
{
    static_assert(byte != HistByte::BYTE_2, "THISTOGRAM: the native backend counts byte 0 or "
                                            "the most significant byte");
    pypto_native::record("THISTOGRAM", loc);
    pypto_native::histogram(dst, src, idx, byte != HistByte::BYTE_0, loc.line);
}

//! INT8 quantisation with a per-row scale (and, asymmetric, a per-row offset)
template <auto quant_type, typename TileDataOut, typename TileDataSrc, typename TileDataPara>
inline void TQUANT(TileDataOut& dst, TileDataSrc& src, TileDataPara& scale,
                   TileDataPara* offset = nullptr, PYPTO_LOC)
{
    static_assert(quant_type == QuantType::INT8_SYM || quant_type == QuantType::INT8_ASYM,
                  "TQUANT: the native backend implements the INT8 modes");
    pypto_native::record("TQUANT", loc);
    if (quant_type == QuantType::INT8_ASYM && offset != nullptr) {
        pypto_native::quant(dst, src, scale, offset, pypto_native::QuantMode::ASYM, loc.line);
    } else {
        pypto_native::quant(dst, src, scale, static_cast<pypto_native::NoOffset*>(nullptr),
                            pypto_native::QuantMode::SYM, loc.line);
    }
}

template <typename TileDataDst, typename TileDataSrc, typename TileDataPara>
inline void TDEQUANT(TileDataDst& dst, TileDataSrc& src, TileDataPara& scale,
                     TileDataPara& offset, PYPTO_LOC)
{
    pypto_native::record("TDEQUANT", loc);
    pypto_native::dequant(dst, src, scale, &offset, loc.line);
}

}  // namespace pto
