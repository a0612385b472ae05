// PyPTO Pro native backend: data movement (TLOAD, TSTORE, TMOV, TEXTRACT, TINSERT, fixpipe).
//
// Semantics follow `pypto_pro/sim/ops/movement.py` and `fixpipe.py`: loads and stores move the
// tile's valid window (layouts convert for free: tiles are addressed logically), element bits
// are reinterpreted when the dtypes differ but the sizes agree, float -> float moves of
// different widths (bias tables) round to nearest even. Paths out of L0C go through the
// fixpipe: optional scale (deq word: fp32 in bits 0-31) computed in float64, optional ReLU,
// one rounding into the destination type; Acc -> Vec split modes send halves of the
// accumulator to the two AIVs' UBs of the block.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <type_traits>

#include "global.hpp"
#include "tile.hpp"

namespace pto {
enum class AtomicType { AtomicNone, AtomicAdd };
enum class ReluPreMode { NoRelu, NormalRelu };
enum class AccToVecMode { SingleModeVec0, SingleModeVec1, DualModeSplitM, DualModeSplitN };
enum class STPhase { Unspecified, Partial, Final };
enum class AccPhase { Unspecified, Partial, Final };
}  // namespace pto

namespace pypto_native {

using pto::AccToVecMode;
using pto::AtomicType;
using pto::ReluPreMode;

//! the bits of `a` as a B (element sizes must match: a fault otherwise, as on the simulator)
template <typename A, typename B>
inline B reinterpret_elem(const A& a)
{
    if constexpr (sizeof(A) != sizeof(B)) {
        raise_fault(FaultKind::Trap, 0, "%s: element sizes differ (%zu vs %zu bytes)",
                    where().c_str(), sizeof(A), sizeof(B));
    } else {
        B b;
        std::memcpy(&b, &a, sizeof(A));
        return b;
    }
}

//! `src` element converted for a tile of type D by a plain move (reinterpret, or rounding
//! between float types of different widths)
template <typename D, typename S>
inline D move_elem(const S& s, int line)
{
    if constexpr (std::is_same_v<D, S>) {
        return s;
    } else if constexpr (Elem<D>::is_float && Elem<S>::is_float && sizeof(D) != sizeof(S)) {
        return store_from_float<D>(Elem<S>::load(s), RoundMode::CAST_RINT);
    } else if constexpr (sizeof(D) == sizeof(S)) {
        return reinterpret_elem<S, D>(s);
    } else {
        raise_fault(FaultKind::Trap, line, "%s: element sizes differ (%zu vs %zu bytes)",
                    where().c_str(), sizeof(S), sizeof(D));
    }
}

//! a block of `src` at (sr, sc) written into `dst` at (dr, dc), `rows` x `cols`
template <typename D, typename S>
inline void move_block(const View<D>& dst, const View<S>& src, int64_t sr, int64_t sc,
                       int64_t dr, int64_t dc, int64_t rows, int64_t cols, int line)
{
    if (dst.window_ok(dr, dc, rows, cols) && src.window_ok(sr, sc, rows, cols)) {
        for (int64_t r = 0; r < rows; ++r) {
            for (int64_t c = 0; c < cols; ++c) {
                *dst.at(dr + r, dc + c) = move_elem<D>(*src.at(sr + r, sc + c), line);
            }
        }
        return;
    }
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) {
            dst.set(dr + r, dc + c, move_elem<D>(src.get(sr + r, sc + c), line));
        }
    }
}

// ------------------------------------------------------------------ fixpipe

struct FixpipeScale {
    bool present = false;
    float scalar = 0.0f;
    const float* column = nullptr;  // per-channel scales (one per output column)
};

inline float deq_scale(uint64_t word)
{
    return f32_from_bits(static_cast<uint32_t>(word & 0xffffffffu));
}

template <typename Out, typename AccT>
inline void check_fixpipe(bool scaled, int line)
{
    constexpr bool acc_f32 = std::is_same_v<AccT, float>;
    constexpr bool acc_i32 = std::is_same_v<AccT, int32_t>;
    if constexpr (!acc_f32 && !acc_i32) {
        raise_fault(FaultKind::Trap, line, "%s: fixpipe accumulator must be FP32 or INT32",
                    where().c_str());
    } else {
        constexpr bool ok = acc_f32
            ? (std::is_same_v<Out, float> || std::is_same_v<Out, half> ||
               std::is_same_v<Out, bfloat16_t> || std::is_same_v<Out, int8_t> ||
               std::is_same_v<Out, float8_e4m3_t> || std::is_same_v<Out, float8_e5m2_t> ||
               std::is_same_v<Out, hifloat8_t>)
            : (std::is_same_v<Out, int32_t> || std::is_same_v<Out, half> ||
               std::is_same_v<Out, int8_t> || std::is_same_v<Out, float>);
        if (!ok) {
            raise_fault(FaultKind::Trap, line, "%s: fixpipe has no conversion from the %s "
                        "accumulator to this destination type", where().c_str(),
                        acc_f32 ? "FP32" : "INT32");
        }
        if (scaled && std::is_same_v<Out, bfloat16_t>) {
            raise_fault(FaultKind::Trap, line, "%s: fixpipe -> BF16 with a scale is not "
                        "supported", where().c_str());
        }
        if (!scaled && std::is_same_v<Out, int8_t>) {
            raise_fault(FaultKind::Trap, line, "%s: fixpipe -> INT8 needs a quant scale",
                        where().c_str());
        }
    }
}

template <typename T>
inline T relu_of(T v)
{
    if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(v)) return v;
    }
    return v < T(0) ? T(0) : v;
}

template <typename Out, typename AccT>
inline Out fixpipe_elem(AccT acc, const FixpipeScale& s, int64_t col, bool relu)
{
    const auto value = Elem<AccT>::load(acc);
    if (s.present) {
        const float scale = s.column ? s.column[col] : s.scalar;
        double v = static_cast<double>(value) * static_cast<double>(scale);
        if (relu) v = relu_of(v);
        return store_from_double<Out>(v);
    }
    if constexpr (std::is_same_v<AccT, int32_t>) {
        if constexpr (Elem<Out>::is_float) {
            double v = static_cast<double>(value);
            if (relu) v = relu_of(v);
            return store_from_double<Out>(v);
        } else {
            return encode<Out>(relu ? relu_of(value) : value);
        }
    } else {
        return encode<Out>(relu ? relu_of(value) : value);
    }
}

template <typename Out, typename AccT>
inline void fixpipe_block(const View<Out>& dst, const View<AccT>& acc, int64_t r0, int64_t c0,
                          int64_t rows, int64_t cols, int64_t dr, int64_t dc,
                          const FixpipeScale& s, bool relu, int line)
{
    check_fixpipe<Out, AccT>(s.present, line);
    if (dst.window_ok(dr, dc, rows, cols) && acc.window_ok(r0, c0, rows, cols)) {
        for (int64_t r = 0; r < rows; ++r) {
            for (int64_t c = 0; c < cols; ++c) {
                *dst.at(dr + r, dc + c) = fixpipe_elem<Out>(*acc.at(r0 + r, c0 + c), s, c, relu);
            }
        }
        return;
    }
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) {
            dst.set(dr + r, dc + c, fixpipe_elem<Out>(acc.get(r0 + r, c0 + c), s, c, relu));
        }
    }
}

//! per-channel scales of a [1, N] UINT64/INT64 Scaling tile: columns [c0, c0 + cols)
template <typename ScaleTile>
inline std::vector<float> channel_scales(const ScaleTile& t, int64_t c0, int64_t cols, int line)
{
    using S = typename ScaleTile::DType;
    std::vector<float> out(static_cast<size_t>(cols));
    if constexpr (sizeof(S) != 8) {
        raise_fault(FaultKind::Trap, line, "%s: a per-channel scale tile holds UINT64/INT64 deq "
                    "words", where().c_str());
    } else {
        View<S> v = view(t, line);
        for (int64_t c = 0; c < cols; ++c) {
            uint64_t w;
            S s = v.get(0, c0 + c);
            std::memcpy(&w, &s, 8);
            out[static_cast<size_t>(c)] = deq_scale(w);
        }
    }
    return out;
}

struct NoScaleTile {
    using DType = uint64_t;
};

struct SplitBlock {
    int64_t r0, c0, rows, cols;
};

inline int split_blocks(AccToVecMode mode, int64_t rows, int64_t cols, SplitBlock out[2])
{
    if (mode == AccToVecMode::DualModeSplitM) {
        const int64_t half_rows = rows / 2;
        out[0] = {0, 0, half_rows, cols};
        out[1] = {half_rows, 0, rows - half_rows, cols};
        return 2;
    }
    if (mode == AccToVecMode::DualModeSplitN) {
        const int64_t half_cols = cols / 2;
        out[0] = {0, 0, rows, half_cols};
        out[1] = {0, half_cols, rows, cols - half_cols};
        return 2;
    }
    out[0] = {0, 0, rows, cols};
    return 1;
}

template <AccToVecMode Mode, ReluPreMode Relu, typename Dst, typename Src, typename ScaleTile>
inline void acc_move(Dst& dst, Src& src, bool scaled, uint64_t deq, const ScaleTile* scale_tile,
                     int line)
{
    using D = typename Dst::DType;
    using S = typename Src::DType;
    View<S> acc = view(src, line);
    SplitBlock blocks[2];
    const int n = split_blocks(Mode, acc.vr, acc.vc, blocks);
    const bool vec_dst = Dst::Loc == TileType::Vec;
    if (n == 2 && !vec_dst) {
        raise_fault(FaultKind::Trap, line, "%s: a dual split mode writes two AIV UBs; the "
                    "destination is a %s tile", where().c_str(), space_name(Dst::Loc));
    }
    int targets[2] = {0, 1};
    if (n == 1) targets[0] = Mode == AccToVecMode::SingleModeVec1 ? 1 : 0;
    for (int i = 0; i < n; ++i) {
        const SplitBlock& b = blocks[i];
        View<D> out = view(dst, line, vec_dst ? targets[i] : -1);
        FixpipeScale fs;
        std::vector<float> cols;
        if constexpr (!std::is_same_v<ScaleTile, NoScaleTile>) {
            if (scale_tile != nullptr) {
                cols = channel_scales(*scale_tile, b.c0, b.cols, line);
                fs.present = true;
                fs.column = cols.data();
            }
        }
        if (scaled && !fs.present) {
            fs.present = true;
            fs.scalar = deq_scale(deq);
        }
        fixpipe_block(out, acc, b.r0, b.c0, b.rows, b.cols, 0, 0, fs,
                      Relu == ReluPreMode::NormalRelu, line);
    }
}


// ------------------------------------------------------------------ GM <-> tile

//! an MX scale load (a GlobalTensor of layout MX_*): tile element (r, c) sits at [d2, d3, phase]
//! of the [outer, inner, 2] box, K group k at k / 2 with phase k % 2 (see `TileShape2D`)
template <typename TileT, typename GT>
inline void load_mx_scales(TileT& tile, GT& gt, int line)
{
    using D = typename TileT::DType;
    using S = typename GT::DType;
    constexpr pto::Layout L = GT::layout;
    View<D> dst = view(tile, line);
    const int64_t s2 = gt.GetStride(2), s3 = gt.GetStride(3), s4 = gt.GetStride(4);
    auto at = [&](int64_t r, int64_t c) -> int64_t {
        if constexpr (L == pto::Layout::MX_A_ND) return r * s2 + (c / 2) * s3 + (c % 2) * s4;
        if constexpr (L == pto::Layout::MX_A_DN) return (c / 2) * s2 + r * s3 + (c % 2) * s4;
        if constexpr (L == pto::Layout::MX_B_ND) return (r / 2) * s2 + c * s3 + (r % 2) * s4;
        return c * s2 + (r / 2) * s3 + (r % 2) * s4;
    };
    int64_t last = 0;
    for (int64_t r = 0; r < dst.vr; ++r) {
        for (int64_t c = 0; c < dst.vc; ++c) last = std::max(last, at(r, c));
    }
    if (dst.vr > 0 && dst.vc > 0) {
        const uint64_t lo = reinterpret_cast<uint64_t>(gt.data());
        check_gm("TLOAD", lo, lo, lo + static_cast<uint64_t>(last + 1) * sizeof(S), line);
    }
    for (int64_t r = 0; r < dst.vr; ++r) {
        for (int64_t c = 0; c < dst.vc; ++c) {
            S s;
            std::memcpy(&s, gt.data() + at(r, c), sizeof(S));
            dst.set(r, c, move_elem<D>(s, line));
        }
    }
}

template <typename TileT, typename GT>
inline void load_tile(TileT& tile, GT& gt, int line)
{
    constexpr pto::Layout L = GT::layout;
    if constexpr (L == pto::Layout::MX_A_ND || L == pto::Layout::MX_A_DN || L == pto::Layout::MX_B_ND ||
                  L == pto::Layout::MX_B_DN) {
        load_mx_scales(tile, gt, line);
        return;
    }
    using D = typename TileT::DType;
    using S = typename GT::DType;
    View<D> dst = view(tile, line);
    const int64_t rows = dst.vr, cols = dst.vc;
    const int64_t rs = gm_row_stride(gt), cs = gm_col_stride(gt);
    uint64_t lo, hi;
    gm_window_bounds(gt.data(), rows, cols, rs, cs, lo, hi);
    if (rows > 0 && cols > 0) check_gm("TLOAD", reinterpret_cast<uint64_t>(gt.data()), lo, hi, line);
    if (dst.window_ok(0, 0, rows, cols)) {
        for (int64_t r = 0; r < rows; ++r) {
            const S* row = gt.data() + r * rs;
            if (dst.g.kind == LayoutKind::ND && cs == 1) {
                D* out = dst.row(r);
                for (int64_t c = 0; c < cols; ++c) out[c] = move_elem<D>(row[c], line);
            } else {
                for (int64_t c = 0; c < cols; ++c) *dst.at(r, c) = move_elem<D>(row[c * cs], line);
            }
        }
        return;
    }
    for (int64_t r = 0; r < rows; ++r) {
        const S* row = gt.data() + r * rs;
        for (int64_t c = 0; c < cols; ++c) {
            S s;
            std::memcpy(&s, row + c * cs, sizeof(S));
            dst.set(r, c, move_elem<D>(s, line));
        }
    }
}

template <typename GT>
inline void gm_put(GT& gt, int64_t r, int64_t c, const typename GT::DType& v, bool atomic)
{
    using S = typename GT::DType;
    S* p = gt.data() + r * gm_row_stride(gt) + c * gm_col_stride(gt);
    if (!atomic) {
        std::memcpy(p, &v, sizeof(S));
        return;
    }
    S old;
    std::memcpy(&old, p, sizeof(S));
    S sum;
    if constexpr (Elem<S>::is_float) {
        sum = store_from_float<S>(Elem<S>::load(old) + Elem<S>::load(v));
    } else {
        sum = Elem<S>::wrap(Elem<S>::load(old) + Elem<S>::load(v));
    }
    std::memcpy(p, &sum, sizeof(S));
}

template <AtomicType Atomic, ReluPreMode Relu, typename GT, typename TileT>
inline void store_tile(GT& gt, TileT& tile, bool scaled, uint64_t deq, const void* scale_tile_v,
                       int line)
{
    using S = typename TileT::DType;
    using G = typename GT::DType;
    View<S> src = view(tile, line);
    const int64_t rows = src.vr, cols = src.vc;
    uint64_t lo, hi;
    gm_window_bounds(gt.data(), rows, cols, gm_row_stride(gt), gm_col_stride(gt), lo, hi);
    if (rows > 0 && cols > 0) check_gm("TSTORE", reinterpret_cast<uint64_t>(gt.data()), lo, hi, line);
    const bool atomic = Atomic == AtomicType::AtomicAdd || ctx().atomic_add;
    std::unique_lock<std::mutex> guard(atomic_mutex(), std::defer_lock);
    if (atomic) guard.lock();
    if constexpr (TileT::Loc == TileType::Acc) {
        FixpipeScale fs;
        std::vector<float> cols_scale;
        if (scale_tile_v != nullptr) {
            cols_scale = *static_cast<const std::vector<float>*>(scale_tile_v);
            fs.present = true;
            fs.column = cols_scale.data();
        } else if (scaled) {
            fs.present = true;
            fs.scalar = deq_scale(deq);
        }
        check_fixpipe<G, S>(fs.present, line);
        for (int64_t r = 0; r < rows; ++r) {
            for (int64_t c = 0; c < cols; ++c) {
                gm_put(gt, r, c, fixpipe_elem<G>(src.get(r, c), fs, c,
                                                 Relu == ReluPreMode::NormalRelu), atomic);
            }
        }
    } else {
        if constexpr (sizeof(G) != sizeof(S)) {
            raise_fault(FaultKind::Trap, line, "%s: TSTORE element sizes differ (tile %zu, GM %zu "
                        "bytes)", where().c_str(), sizeof(S), sizeof(G));
        } else if (!atomic && src.window_ok(0, 0, rows, cols)) {
            const int64_t rs = gm_row_stride(gt), cs = gm_col_stride(gt);
            for (int64_t r = 0; r < rows; ++r) {
                G* out = gt.data() + r * rs;
                for (int64_t c = 0; c < cols; ++c) {
                    std::memcpy(out + c * cs, src.at(r, c), sizeof(G));
                }
            }
        } else {
            for (int64_t r = 0; r < rows; ++r) {
                for (int64_t c = 0; c < cols; ++c) {
                    gm_put(gt, r, c, reinterpret_elem<S, G>(src.get(r, c)), atomic);
                }
            }
        }
    }
}

}  // namespace pypto_native

namespace pto {

namespace detail {
// The GlobalTensor layout / tile layout pairs the a5 DMA moves (pto-isa's NPU static checks; its
// CPU mode leaves them out): ND with a row-major tile, DN with a column-major one, NZ with NZ.
template <typename T>
constexpr bool nd_tile = T::isRowMajor && T::SFractal == SLayout::NoneBox;
template <typename T>
constexpr bool dn_tile = !T::isRowMajor && T::SFractal == SLayout::NoneBox;
template <typename T>
constexpr bool nz_tile = !T::isRowMajor && T::SFractal == SLayout::RowMajor;
template <typename T>
constexpr bool zn_tile = T::isRowMajor && T::SFractal == SLayout::ColMajor;

template <typename TileData, typename GlobalData>
constexpr bool load_layouts()
{
    constexpr Layout g = GlobalData::layout;
    if constexpr (g != Layout::ND && g != Layout::DN && g != Layout::NZ) {
        return true;  // MX / scale layouts: their own rules
    } else if constexpr (TileData::Loc == TileType::Vec) {
        return (g == Layout::ND && nd_tile<TileData>) || (g == Layout::DN && dn_tile<TileData>) ||
               (g == Layout::NZ && nz_tile<TileData>);
    } else if constexpr (TileData::Loc == TileType::Mat) {
        if constexpr (TileData::Rows == 1 && TileData::isRowMajor &&
                      TileData::SFractal == SLayout::RowMajor) {
            return true;  // the MX scale-vector path
        }
        return nz_tile<TileData> || (g == Layout::ND && nd_tile<TileData>) ||
               (g == Layout::DN && (dn_tile<TileData> || zn_tile<TileData>));
    }
    return true;
}

template <typename TileData, typename GlobalData>
constexpr bool store_layouts()
{
    constexpr Layout g = GlobalData::layout;
    if constexpr (TileData::Loc == TileType::Acc) {
        return g != Layout::DN;
    } else if constexpr (TileData::Loc == TileType::Vec) {
        return (g == Layout::ND && nd_tile<TileData>) || (g == Layout::DN && dn_tile<TileData>) ||
               (g == Layout::NZ && nz_tile<TileData>) || TileData::Rows == 1 ||
               TileData::Cols == 1;
    }
    return true;
}
}  // namespace detail

// The data movement instructions as pto-isa declares them: template parameters (tile and global
// types first, then the options: STPhase, AtomicType, AccToVecMode, ReluPreMode) and overloads.

template <typename TileData, typename GlobalData>
inline void TLOAD(TileData& dst, GlobalData& src, pypto_native::Loc loc = pypto_native::Loc::here())
{
    static_assert(is_global_data_v<GlobalData>, "TLOAD: the source must be a GlobalTensor");
    static_assert(detail::load_layouts<TileData, GlobalData>(),
                  "TLOAD: Src and dst layout must be same (Vec: ND2ND, DN2DN, NZ2NZ; Mat: "
                  "ND2NZ, DN2NZ, NZ2NZ, ND2ND, DN2DN, DN2ZN)");
    pypto_native::record("TLOAD", loc);
    pypto_native::load_tile(dst, src, loc.line);
}

namespace detail {
template <AtomicType A, ReluPreMode R, typename TileData, typename GlobalData>
inline void store(GlobalData& dst, TileData& src, bool scaled, uint64_t deq, int line)
{
    static_assert(is_global_data_v<GlobalData>, "TSTORE: the destination must be a GlobalTensor");
    static_assert(store_layouts<TileData, GlobalData>(),
                  "TSTORE: Src and dst layout must be same, only support ND/DN/NZ or the special "
                  "case of one row/one column (an Acc tile: ND or NZ)");
    pypto_native::store_tile<A, R>(dst, src, scaled, deq, nullptr, line);
}
}  // namespace detail

template <typename TileData, typename GlobalData>
inline void TSTORE(GlobalData& dst, TileData& src, pypto_native::Loc loc = pypto_native::Loc::here())
{
    pypto_native::record("TSTORE", loc);
    detail::store<AtomicType::AtomicNone, ReluPreMode::NoRelu>(dst, src, false, 0, loc.line);
}

template <STPhase Phase, typename TileData, typename GlobalData>
inline void TSTORE(GlobalData& dst, TileData& src, pypto_native::Loc loc = pypto_native::Loc::here())
{
    pypto_native::record("TSTORE", loc);
    if constexpr (Phase != STPhase::Unspecified) {
        pypto_native::unit_flag(src.data(), false, Phase == STPhase::Final, "TSTORE", loc.line);
    }
    detail::store<AtomicType::AtomicNone, ReluPreMode::NoRelu>(dst, src, false, 0, loc.line);
}

template <typename TileData, typename GlobalData, AtomicType atomicType>
inline void TSTORE(GlobalData& dst, TileData& src, pypto_native::Loc loc = pypto_native::Loc::here())
{
    pypto_native::record("TSTORE", loc);
    detail::store<atomicType, ReluPreMode::NoRelu>(dst, src, false, 0, loc.line);
}

template <STPhase Phase, typename TileData, typename GlobalData, AtomicType atomicType>
inline void TSTORE(GlobalData& dst, TileData& src, pypto_native::Loc loc = pypto_native::Loc::here())
{
    pypto_native::record("TSTORE", loc);
    if constexpr (Phase != STPhase::Unspecified) {
        pypto_native::unit_flag(src.data(), false, Phase == STPhase::Final, "TSTORE", loc.line);
    }
    detail::store<atomicType, ReluPreMode::NoRelu>(dst, src, false, 0, loc.line);
}

template <typename TileData, typename GlobalData, AtomicType atomicType = AtomicType::AtomicNone,
          ReluPreMode reluPreMode>
inline void TSTORE(GlobalData& dst, TileData& src, pypto_native::Loc loc = pypto_native::Loc::here())
{
    pypto_native::record("TSTORE", loc);
    detail::store<atomicType, reluPreMode>(dst, src, false, 0, loc.line);
}

template <STPhase Phase, typename TileData, typename GlobalData,
          AtomicType atomicType = AtomicType::AtomicNone, ReluPreMode reluPreMode>
inline void TSTORE(GlobalData& dst, TileData& src, pypto_native::Loc loc = pypto_native::Loc::here())
{
    pypto_native::record("TSTORE", loc);
    if constexpr (Phase != STPhase::Unspecified) {
        pypto_native::unit_flag(src.data(), false, Phase == STPhase::Final, "TSTORE", loc.line);
    }
    detail::store<atomicType, reluPreMode>(dst, src, false, 0, loc.line);
}

template <typename TileData, typename GlobalData, AtomicType atomicType = AtomicType::AtomicNone,
          ReluPreMode reluPreMode = ReluPreMode::NoRelu>
inline void TSTORE(GlobalData& dst, TileData& src, uint64_t preQuantScalar,
                   pypto_native::Loc loc = pypto_native::Loc::here())
{
    pypto_native::record("TSTORE", loc);
    detail::store<atomicType, reluPreMode>(dst, src, true, preQuantScalar, loc.line);
}

template <STPhase Phase, typename TileData, typename GlobalData,
          AtomicType atomicType = AtomicType::AtomicNone, ReluPreMode reluPreMode = ReluPreMode::NoRelu>
inline void TSTORE(GlobalData& dst, TileData& src, uint64_t preQuantScalar,
                   pypto_native::Loc loc = pypto_native::Loc::here())
{
    pypto_native::record("TSTORE", loc);
    if constexpr (Phase != STPhase::Unspecified) {
        pypto_native::unit_flag(src.data(), false, Phase == STPhase::Final, "TSTORE", loc.line);
    }
    detail::store<atomicType, reluPreMode>(dst, src, true, preQuantScalar, loc.line);
}

template <typename TileData, typename GlobalData, typename FpTileData,
          AtomicType atomicType = AtomicType::AtomicNone, ReluPreMode reluPreMode = ReluPreMode::NoRelu>
inline void TSTORE_FP(GlobalData& dst, TileData& src, FpTileData& fp,
                      pypto_native::Loc loc = pypto_native::Loc::here())
{
    static_assert(is_global_data_v<GlobalData>, "TSTORE_FP: the destination must be a GlobalTensor");
    static_assert(detail::store_layouts<TileData, GlobalData>(),
                  "TSTORE_FP: an Acc tile stores to an ND or NZ GlobalTensor");
    pypto_native::record("TSTORE_FP", loc);
    auto cols = pypto_native::channel_scales(fp, 0, src.GetValidCol(), loc.line);
    pypto_native::store_tile<atomicType, reluPreMode>(dst, src, true, 0, &cols, loc.line);
}

namespace detail {
//! tile -> tile: an Acc source goes through the fixpipe (mode, relu, optional scale), any other
//! is a plain copy of the source's valid block (MTE1 / V / MTE3 paths)
template <AccToVecMode M, ReluPreMode R, typename Dst, typename Src>
inline void move(Dst& dst, Src& src, bool scaled, uint64_t deq, int line)
{
    if constexpr (Src::Loc == TileType::Acc) {
        pypto_native::acc_move<M, R>(dst, src, scaled, deq,
                                     static_cast<const pypto_native::NoScaleTile*>(nullptr), line);
    } else {
        auto s = pypto_native::view(src, line);
        auto d = pypto_native::view(dst, line);
        pypto_native::move_block(d, s, 0, 0, 0, 0, s.vr, s.vc, line);
    }
}

template <AccToVecMode M, ReluPreMode R, typename Dst, typename Src, typename Fp>
inline void move_fp(Dst& dst, Src& src, Fp& fp, int line)
{
    static_assert(Src::Loc == TileType::Acc, "TMOV_FP: the source must be an Acc tile");
    static_assert(Fp::Loc == TileType::Scaling, "TMOV_FP: the fp tile must be a Scaling tile");
    pypto_native::acc_move<M, R>(dst, src, true, 0, &fp, line);
}
}  // namespace detail

template <typename DstTileData, typename SrcTileData>
inline void TMOV(DstTileData& dst, SrcTileData& src, pypto_native::Loc loc = pypto_native::Loc::here())
{
    pypto_native::record("TMOV", loc);
    detail::move<AccToVecMode::SingleModeVec0, ReluPreMode::NoRelu>(dst, src, false, 0, loc.line);
}

template <typename DstTileData, typename SrcTileData, ReluPreMode reluMode>
inline void TMOV(DstTileData& dst, SrcTileData& src, pypto_native::Loc loc = pypto_native::Loc::here())
{
    pypto_native::record("TMOV", loc);
    detail::move<AccToVecMode::SingleModeVec0, reluMode>(dst, src, false, 0, loc.line);
}

template <STPhase Phase, typename DstTileData, typename SrcTileData>
inline void TMOV(DstTileData& dst, SrcTileData& src, pypto_native::Loc loc = pypto_native::Loc::here())
{
    pypto_native::record("TMOV", loc);
    detail::move<AccToVecMode::SingleModeVec0, ReluPreMode::NoRelu>(dst, src, false, 0, loc.line);
}

template <STPhase Phase, typename DstTileData, typename SrcTileData, ReluPreMode reluMode>
inline void TMOV(DstTileData& dst, SrcTileData& src, pypto_native::Loc loc = pypto_native::Loc::here())
{
    pypto_native::record("TMOV", loc);
    detail::move<AccToVecMode::SingleModeVec0, reluMode>(dst, src, false, 0, loc.line);
}

template <typename DstTileData, typename SrcTileData, AccToVecMode mode,
          ReluPreMode reluMode = ReluPreMode::NoRelu>
inline void TMOV(DstTileData& dst, SrcTileData& src, pypto_native::Loc loc = pypto_native::Loc::here())
{
    pypto_native::record("TMOV", loc);
    detail::move<mode, reluMode>(dst, src, false, 0, loc.line);
}

template <STPhase Phase, typename DstTileData, typename SrcTileData, AccToVecMode mode,
          ReluPreMode reluMode = ReluPreMode::NoRelu>
inline void TMOV(DstTileData& dst, SrcTileData& src, pypto_native::Loc loc = pypto_native::Loc::here())
{
    pypto_native::record("TMOV", loc);
    detail::move<mode, reluMode>(dst, src, false, 0, loc.line);
}

template <typename DstTileData, typename SrcTileData, typename FpTileData,
          ReluPreMode reluMode = ReluPreMode::NoRelu>
inline void TMOV_FP(DstTileData& dst, SrcTileData& src, FpTileData& fp,
                    pypto_native::Loc loc = pypto_native::Loc::here())
{
    pypto_native::record("TMOV_FP", loc);
    detail::move_fp<AccToVecMode::SingleModeVec0, reluMode>(dst, src, fp, loc.line);
}

template <STPhase Phase, typename DstTileData, typename SrcTileData, typename FpTileData,
          ReluPreMode reluMode = ReluPreMode::NoRelu>
inline void TMOV_FP(DstTileData& dst, SrcTileData& src, FpTileData& fp,
                    pypto_native::Loc loc = pypto_native::Loc::here())
{
    pypto_native::record("TMOV_FP", loc);
    detail::move_fp<AccToVecMode::SingleModeVec0, reluMode>(dst, src, fp, loc.line);
}

template <typename DstTileData, typename SrcTileData, typename FpTileData, AccToVecMode mode,
          ReluPreMode reluMode = ReluPreMode::NoRelu>
inline void TMOV(DstTileData& dst, SrcTileData& src, FpTileData& fp,
                 pypto_native::Loc loc = pypto_native::Loc::here())
{
    pypto_native::record("TMOV", loc);
    detail::move_fp<mode, reluMode>(dst, src, fp, loc.line);
}

template <typename DstTileData, typename SrcTileData, ReluPreMode reluMode = ReluPreMode::NoRelu>
inline void TMOV(DstTileData& dst, SrcTileData& src, uint64_t preQuantScalar,
                 pypto_native::Loc loc = pypto_native::Loc::here())
{
    pypto_native::record("TMOV", loc);
    detail::move<AccToVecMode::SingleModeVec0, reluMode>(dst, src, true, preQuantScalar, loc.line);
}

template <typename DstTileData, typename SrcTileData, AccToVecMode mode,
          ReluPreMode reluMode = ReluPreMode::NoRelu>
inline void TMOV(DstTileData& dst, SrcTileData& src, uint64_t preQuantScalar,
                 pypto_native::Loc loc = pypto_native::Loc::here())
{
    pypto_native::record("TMOV", loc);
    detail::move<mode, reluMode>(dst, src, true, preQuantScalar, loc.line);
}

//! a [dst valid] block of `src` from (indexRow, indexCol) into dst at (0, 0); an Acc source is
//! fixpiped whole, as the simulator's move does
template <typename DstTileData, typename SrcTileData, AccToVecMode mode = AccToVecMode::SingleModeVec0,
          ReluPreMode reluMode = ReluPreMode::NoRelu>
inline void extract_impl(DstTileData& dst, SrcTileData& src, uint16_t indexRow, uint16_t indexCol,
                         int line)
{
    if constexpr (SrcTileData::Loc == TileType::Acc) {
        pypto_native::acc_move<mode, reluMode>(
            dst, src, false, 0, static_cast<const pypto_native::NoScaleTile*>(nullptr), line);
    } else {
        auto s = pypto_native::view(src, line);
        auto d = pypto_native::view(dst, line);
        pypto_native::move_block(d, s, indexRow, indexCol, 0, 0, d.vr, d.vc, line);
    }
}

template <typename DstTileData, typename SrcTileData>
inline void TEXTRACT(DstTileData& dst, SrcTileData& src, uint16_t indexRow = 0,
                     uint16_t indexCol = 0, pypto_native::Loc loc = pypto_native::Loc::here())
{
    pypto_native::record("TEXTRACT", loc);
    extract_impl(dst, src, indexRow, indexCol, loc.line);
}

template <typename DstTileData, typename SrcTileData, AccToVecMode mode,
          ReluPreMode reluMode = ReluPreMode::NoRelu>
inline void TEXTRACT(DstTileData& dst, SrcTileData& src, uint16_t indexRow, uint16_t indexCol,
                     pypto_native::Loc loc = pypto_native::Loc::here())
{
    pypto_native::record("TEXTRACT", loc);
    extract_impl<DstTileData, SrcTileData, mode, reluMode>(dst, src, indexRow, indexCol, loc.line);
}

template <typename Dst, typename Src>
inline void insert_impl(Dst& dst, Src& src, uint16_t row, uint16_t col, bool scaled, uint64_t deq,
                        bool relu, int line)
{
    auto s = pypto_native::view(src, line);
    auto d = pypto_native::view(dst, line);
    if constexpr (Src::Loc == TileType::Acc) {
        pypto_native::FixpipeScale fs;
        fs.present = scaled;
        fs.scalar = pypto_native::deq_scale(deq);
        pypto_native::fixpipe_block(d, s, 0, 0, s.vr, s.vc, row, col, fs, relu, line);
    } else if constexpr (Src::BFractal == BLayout::ColMajor && Src::SFractal == SLayout::RowMajor &&
                         Dst::BFractal == BLayout::RowMajor &&
                         Dst::SFractal == SLayout::ColMajor) {
        // NZ into ZN: pto-isa writes the NZ blocks into the ZN tile read as NZ [Cols, Rows]
        // (the same bytes), so the destination holds the source transposed
        for (int64_t r = 0; r < s.vr; ++r) {
            for (int64_t c = 0; c < s.vc; ++c) {
                d.set(col + c, row + r,
                      pypto_native::move_elem<typename Dst::DType>(s.get(r, c), line));
            }
        }
    } else {
        pypto_native::move_block(d, s, 0, 0, row, col, s.vr, s.vc, line);
    }
}

template <typename DstTileData, typename SrcTileData>
inline void TINSERT(DstTileData& dst, SrcTileData& src, uint16_t indexRow, uint16_t indexCol,
                    pypto_native::Loc loc = pypto_native::Loc::here())
{
    pypto_native::record("TINSERT", loc);
    insert_impl(dst, src, indexRow, indexCol, false, 0, false, loc.line);
}

template <typename DstTileData, typename SrcTileData, ReluPreMode reluMode>
inline void TINSERT(DstTileData& dst, SrcTileData& src, uint16_t indexRow, uint16_t indexCol,
                    pypto_native::Loc loc = pypto_native::Loc::here())
{
    pypto_native::record("TINSERT", loc);
    insert_impl(dst, src, indexRow, indexCol, false, 0, reluMode == ReluPreMode::NormalRelu,
                loc.line);
}

template <typename DstTileData, typename SrcTileData, ReluPreMode reluMode = ReluPreMode::NoRelu>
inline void TINSERT(DstTileData& dst, SrcTileData& src, uint64_t preQuantScalar, uint16_t indexRow,
                    uint16_t indexCol, pypto_native::Loc loc = pypto_native::Loc::here())
{
    pypto_native::record("TINSERT", loc);
    insert_impl(dst, src, indexRow, indexCol, true, preQuantScalar,
                reluMode == ReluPreMode::NormalRelu, loc.line);
}

}  // namespace pto
