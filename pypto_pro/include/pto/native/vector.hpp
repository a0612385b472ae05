// PyPTO Pro native backend: vector tile instructions (pipe V).
//
// Element-wise binary / scalar / unary / fused / partial ops, fills, casts, compare + select,
// reductions, row / column broadcasts, transpose and fillpad. Semantics follow the
// simulator's op library (`pypto_pro/sim/ops/elementwise.py`, `convert.py`, `compare.py`,
// `reduce.py`, `expand.py`, `rearrange.py`): the domain is the destination's valid window,
// operands are read before anything is written, float math runs in float32 and is rounded
// once into the output type (RINT unless the op takes a RoundMode), integer math runs in
// int64 and wraps; scalars are first rounded into the tile's type.
#pragma once

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "movement.hpp"

namespace pto {
enum class CmpMode : uint8_t { EQ = 0, NE = 1, LT = 2, LE = 3, GT = 4, GE = 5 };
// the precision variants some instructions take as their first template argument
enum class PowAlgorithm : uint8_t { DEFAULT, HIGH_PRECISION };
enum class DivAlgorithm : uint8_t { DEFAULT, HIGH_PRECISION };
enum class SqrtAlgorithm : uint8_t { DEFAULT, HIGH_PRECISION };
enum class RsqrtAlgorithm : uint8_t { DEFAULT, HIGH_PRECISION };
enum class RecipAlgorithm : uint8_t { DEFAULT, HIGH_PRECISION };
enum class ExpAlgorithm : uint8_t { DEFAULT, HIGH_PRECISION };
enum class LogAlgorithm : uint8_t { DEFAULT, HIGH_PRECISION };
enum class RemAlgorithm : uint8_t { DEFAULT, HIGH_PRECISION };
enum class RemSAlgorithm : uint8_t { DEFAULT, HIGH_PRECISION };
enum class TFillPadMode : uint8_t { Normal, Expand, Inplace };
}  // namespace pto

namespace pypto_native {

using pto::CmpMode;

//! the binary op of a row / column expand instruction
enum class BinOp { ADD, SUB, MUL, DIV, MAX, MIN, EXPDIF };

template <typename T>
using CT = typename Elem<T>::compute;

template <typename X, typename = void>
struct is_tile : std::false_type {};
template <typename X>
struct is_tile<X, std::void_t<decltype(X::Loc), typename X::DType, decltype(X::Rows)>>
    : std::true_type {};
template <typename X>
constexpr bool is_tile_v = is_tile<std::decay_t<X>>::value;

template <typename A, typename B>
inline void require_same(const char* op, int line)
{
    if constexpr (!std::is_same_v<typename A::DType, typename B::DType>) {
        raise_fault(FaultKind::Trap, line, "%s: %s operand dtypes differ", where().c_str(), op);
    }
}

//! a block of a tile as compute values, row-major
template <typename T>
inline std::vector<CT<T>> read_block(const View<T>& v, int64_t r0, int64_t c0, int64_t rows,
                                     int64_t cols)
{
    std::vector<CT<T>> out(static_cast<size_t>(std::max<int64_t>(rows, 0) *
                                               std::max<int64_t>(cols, 0)));
    if (v.window_ok(r0, c0, rows, cols)) {
        if (v.g.kind == LayoutKind::ND) {
            for (int64_t r = 0; r < rows; ++r) {
                const T* p = v.row(r0 + r) + c0;
                CT<T>* o = out.data() + r * cols;
                for (int64_t c = 0; c < cols; ++c) o[c] = Elem<T>::load(p[c]);
            }
        } else {
            for (int64_t r = 0; r < rows; ++r) {
                for (int64_t c = 0; c < cols; ++c) out[r * cols + c] = Elem<T>::load(*v.at(r0 + r, c0 + c));
            }
        }
        return out;
    }
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) out[r * cols + c] = Elem<T>::load(v.get(r0 + r, c0 + c));
    }
    return out;
}

template <typename T, typename C>
inline void write_block(const View<T>& v, const std::vector<C>& data, int64_t rows, int64_t cols,
                        RoundMode mode = RoundMode::CAST_RINT, int64_t r0 = 0, int64_t c0 = 0)
{
    if (v.window_ok(r0, c0, rows, cols)) {
        if (v.g.kind == LayoutKind::ND) {
            for (int64_t r = 0; r < rows; ++r) {
                T* p = v.row(r0 + r) + c0;
                const C* d = data.data() + r * cols;
                for (int64_t c = 0; c < cols; ++c) p[c] = encode<T>(d[c], mode);
            }
        } else {
            for (int64_t r = 0; r < rows; ++r) {
                for (int64_t c = 0; c < cols; ++c) *v.at(r0 + r, c0 + c) = encode<T>(data[r * cols + c], mode);
            }
        }
        return;
    }
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) v.set(r0 + r, c0 + c, encode<T>(data[r * cols + c], mode));
    }
}

// ------------------------------------------------------------------ scalar functions

template <typename C>
inline C op_div(C a, C b)
{
    if constexpr (std::is_floating_point_v<C>) {
        return a / b;
    } else {
        return b == 0 ? 0 : a / b;
    }
}

template <typename C>
inline C op_rem(C a, C b)
{
    if constexpr (std::is_floating_point_v<C>) {
        return std::fmod(a, b);
    } else {
        return b == 0 ? 0 : a % b;
    }
}

template <typename C>
inline C op_max(C a, C b)
{
    if constexpr (std::is_floating_point_v<C>) {
        if (std::isnan(a) || std::isnan(b)) return NAN;
    }
    return a > b ? a : b;
}

template <typename C>
inline C op_min(C a, C b)
{
    if constexpr (std::is_floating_point_v<C>) {
        if (std::isnan(a) || std::isnan(b)) return NAN;
    }
    return a < b ? a : b;
}

template <typename C>
inline C op_relu(C a)
{
    return a < C(0) ? C(0) : a;
}

enum class Bin { Add, Sub, Mul, Div, Max, Min, And, Or, Xor, Shl, Shr, Rem, AddRelu, SubRelu };

template <Bin B, typename C>
inline C apply_bin(C a, C b)
{
    if constexpr (B == Bin::Add) return a + b;
    if constexpr (B == Bin::Sub) return a - b;
    if constexpr (B == Bin::Mul) return a * b;
    if constexpr (B == Bin::Div) return op_div(a, b);
    if constexpr (B == Bin::Max) return op_max(a, b);
    if constexpr (B == Bin::Min) return op_min(a, b);
    if constexpr (B == Bin::Rem) return op_rem(a, b);
    if constexpr (B == Bin::AddRelu) return op_relu(a + b);
    if constexpr (B == Bin::SubRelu) return op_relu(a - b);
    if constexpr (std::is_integral_v<C>) {
        if constexpr (B == Bin::And) return a & b;
        if constexpr (B == Bin::Or) return a | b;
        if constexpr (B == Bin::Xor) return a ^ b;
        if constexpr (B == Bin::Shl) {
            return (b >= 0 && b < 64) ? static_cast<C>(static_cast<uint64_t>(a) << b) : 0;
        }
        if constexpr (B == Bin::Shr) return a >> std::min<C>(std::max<C>(b, 0), 63);
    }
    return a;
}

template <Bin B>
constexpr bool int_only = B == Bin::And || B == Bin::Or || B == Bin::Xor || B == Bin::Shl ||
                          B == Bin::Shr;

template <Bin B, typename T>
inline void check_bin(const char* op, int line)
{
    if constexpr (int_only<B> && Elem<T>::is_float) {
        raise_fault(FaultKind::Trap, line, "%s: %s needs an integer tile", where().c_str(), op);
    }
}

template <Bin B, typename Out, typename L, typename R>
inline void binary(const char* op, Out& out, L& lhs, R& rhs, int line)
{
    using T = typename Out::DType;
    require_same<Out, L>(op, line);
    require_same<Out, R>(op, line);
    check_bin<B, T>(op, line);
    auto o = view(out, line);
    auto a = read_block(view(lhs, line), 0, 0, o.vr, o.vc);
    auto b = read_block(view(rhs, line), 0, 0, o.vr, o.vc);
    for (size_t i = 0; i < a.size(); ++i) a[i] = apply_bin<B>(a[i], b[i]);
    write_block(o, a, o.vr, o.vc);
}

template <Bin B, typename Out, typename Src, typename S>
inline void binary_scalar(const char* op, Out& out, Src& src, S scalar, int line)
{
    using T = typename Out::DType;
    require_same<Out, Src>(op, line);
    check_bin<B, T>(op, line);
    auto o = view(out, line);
    auto a = read_block(view(src, line), 0, 0, o.vr, o.vc);
    const CT<T> s = scalar_in<T>(scalar);
    for (auto& x : a) x = apply_bin<B>(x, s);
    write_block(o, a, o.vr, o.vc);
}

enum class Un { Neg, Abs, Exp, Log, Sqrt, Rsqrt, Recip, Relu, Not };

template <Un U, typename Out, typename Src>
inline void unary(const char* op, Out& out, Src& src, int line)
{
    using T = typename Out::DType;
    require_same<Out, Src>(op, line);
    constexpr bool float_only = U == Un::Exp || U == Un::Log || U == Un::Sqrt || U == Un::Rsqrt ||
                                U == Un::Recip;
    if constexpr (float_only && !Elem<T>::is_float) {
        raise_fault(FaultKind::Trap, line, "%s: %s needs a float tile", where().c_str(), op);
    } else if constexpr (U == Un::Not && Elem<T>::is_float) {
        raise_fault(FaultKind::Trap, line, "%s: %s needs an integer tile", where().c_str(), op);
    } else {
        auto o = view(out, line);
        auto a = read_block(view(src, line), 0, 0, o.vr, o.vc);
        if constexpr (U == Un::Exp) {
            vexp(a.data(), a.data(), static_cast<int64_t>(a.size()));
        } else if constexpr (U == Un::Log) {
            vln(a.data(), a.data(), static_cast<int64_t>(a.size()));
        } else if constexpr (U == Un::Sqrt) {
            vsqrt(a.data(), a.data(), static_cast<int64_t>(a.size()));
        } else {
            for (auto& x : a) {
                if constexpr (U == Un::Neg) x = -x;
                if constexpr (U == Un::Abs) {
                    if constexpr (std::is_floating_point_v<CT<T>>) {
                        x = std::fabs(x);
                    } else {
                        x = x < 0 ? -x : x;
                    }
                }
                if constexpr (U == Un::Relu) x = op_relu(x);
                if constexpr (std::is_floating_point_v<CT<T>>) {
                    if constexpr (U == Un::Rsqrt) x = 1.0f / std::sqrt(x);
                    if constexpr (U == Un::Recip) x = 1.0f / x;
                } else {
                    if constexpr (U == Un::Not) x = ~x;
                }
            }
        }
        write_block(o, a, o.vr, o.vc);
    }
}

// ------------------------------------------------------------------ fills

template <typename Out, typename S>
inline void expands(Out& out, S scalar, int line)
{
    using T = typename Out::DType;
    auto o = view(out, line);
    std::vector<CT<T>> a(static_cast<size_t>(o.vr * o.vc), scalar_in<T>(scalar));
    write_block(o, a, o.vr, o.vc);
}

template <typename Out, typename S>
inline void fill_index(Out& out, S start, int line)
{
    using T = typename Out::DType;
    auto o = view(out, line);
    const CT<T> s = scalar_in<T>(start);
    std::vector<CT<T>> a(static_cast<size_t>(o.vr * o.vc));
    for (size_t i = 0; i < a.size(); ++i) {
        if constexpr (std::is_floating_point_v<CT<T>>) {
            a[i] = s + static_cast<float>(static_cast<int64_t>(i));
        } else {
            a[i] = s + static_cast<int64_t>(i);
        }
    }
    write_block(o, a, o.vr, o.vc);
}

template <typename T>
inline T pad_value(PadValue pad, int line)
{
    if (pad == PadValue::Null) {
        raise_fault(FaultKind::Trap, line, "%s: fillpad: the output tile's pad is null",
                    where().c_str());
    }
    if (pad == PadValue::Zero) return encode<T>(CT<T>(0));
    if constexpr (Elem<T>::is_float) {
        return store_from_float<T>(pad == PadValue::Max ? INFINITY : -INFINITY);
    } else {
        return pad == PadValue::Max ? std::numeric_limits<T>::max() : std::numeric_limits<T>::min();
    }
}

template <typename Out, typename Src>
inline void fillpad(const char* op, Out& out, Src& src, bool same_shape, int line)
{
    using T = typename Out::DType;
    using S = typename Src::DType;
    if constexpr (sizeof(T) != sizeof(S)) {
        raise_fault(FaultKind::Trap, line, "%s: %s element sizes differ", where().c_str(), op);
    } else {
        auto o = view(out, line);
        auto s = view(src, line);
        if (same_shape && (Out::Rows != Src::Rows || Out::Cols != Src::Cols)) {
            raise_fault(FaultKind::Trap, line, "%s: %s: shapes differ (use mode=EXPAND)",
                        where().c_str(), op);
        }
        if (s.vr > Out::Rows || s.vc > Out::Cols) {
            raise_fault(FaultKind::Trap, line, "%s: %s: the source window exceeds the output tile",
                        where().c_str(), op);
        }
        const T pad = pad_value<T>(Out::PadVal, line);
        std::vector<T> full(static_cast<size_t>(Out::Rows * Out::Cols), pad);
        for (int64_t r = 0; r < s.vr; ++r) {
            for (int64_t c = 0; c < s.vc; ++c) full[r * Out::Cols + c] = reinterpret_elem<S, T>(s.get(r, c));
        }
        for (int64_t r = 0; r < Out::Rows; ++r) {
            for (int64_t c = 0; c < Out::Cols; ++c) o.set(r, c, full[r * Out::Cols + c]);
        }
    }
}

// ------------------------------------------------------------------ casts

template <typename Out, typename Src>
inline void cast(Out& out, Src& src, RoundMode mode, int line)
{
    using D = typename Out::DType;
    using S = typename Src::DType;
    auto o = view(out, line);
    auto a = read_block(view(src, line), 0, 0, o.vr, o.vc);
    for (int64_t r = 0; r < o.vr; ++r) {
        for (int64_t c = 0; c < o.vc; ++c) {
            const auto v = a[r * o.vc + c];
            D d;
            if constexpr (Elem<S>::is_float || Elem<D>::is_float) {
                if (mode == RoundMode::CAST_ODD && !Elem<D>::is_float) {
                    raise_fault(FaultKind::Trap, line, "%s: CAST_ODD needs a float target",
                                where().c_str());
                }
                d = encode<D>(v, mode);
            } else if constexpr ((std::is_same_v<S, int32_t> && std::is_same_v<D, int16_t>) ||
                                 (std::is_same_v<S, int64_t> && std::is_same_v<D, int32_t>)) {
                d = static_cast<D>(static_cast<int64_t>(v));  // a5 TCVT: saturation off, low bits
            } else {
                d = Elem<D>::saturate_int(v);
            }
            o.set(r, c, d);
        }
    }
}

// ------------------------------------------------------------------ ternary / fused

enum class Tern { AddC, SubC, MulAddDst, FusedMulAdd, FusedMulAddRelu };

template <Tern K, typename Out, typename A, typename B>
inline void ternary(const char* op, Out& out, A& ta, B& tb, int line)
{
    require_same<Out, A>(op, line);
    require_same<Out, B>(op, line);
    auto o = view(out, line);
    auto a = read_block(view(ta, line), 0, 0, o.vr, o.vc);
    auto b = read_block(view(tb, line), 0, 0, o.vr, o.vc);
    auto d = read_block(o, 0, 0, o.vr, o.vc);
    for (size_t i = 0; i < a.size(); ++i) {
        if constexpr (K == Tern::MulAddDst) d[i] = a[i] * b[i] + d[i];
        if constexpr (K == Tern::FusedMulAdd) d[i] = a[i] * d[i] + b[i];
        if constexpr (K == Tern::FusedMulAddRelu) d[i] = op_relu(d[i] * a[i] + b[i]);
    }
    write_block(o, d, o.vr, o.vc);
}

template <bool Sub, typename Out, typename A, typename B, typename C>
inline void addc(const char* op, Out& out, A& ta, B& tb, C& tc, int line)
{
    require_same<Out, A>(op, line);
    auto o = view(out, line);
    auto a = read_block(view(ta, line), 0, 0, o.vr, o.vc);
    auto c = read_block(view(tc, line), 0, 0, o.vr, o.vc);
    using T = typename Out::DType;
    if constexpr (is_tile_v<B>) {
        auto b = read_block(view(tb, line), 0, 0, o.vr, o.vc);
        for (size_t i = 0; i < a.size(); ++i) a[i] = (Sub ? a[i] - b[i] : a[i] + b[i]) + c[i];
    } else {
        const CT<T> s = scalar_in<T>(tb);
        for (size_t i = 0; i < a.size(); ++i) a[i] = (Sub ? a[i] - s : a[i] + s) + c[i];
    }
    write_block(o, a, o.vr, o.vc);
}

template <typename Out, typename Src, typename S>
inline void axpy(Out& out, Src& src, S alpha, int line)
{
    using T = typename Out::DType;
    // the widening form: a half source into a float accumulator (pto-isa TAXPY)
    if constexpr (!(std::is_same_v<T, float> && std::is_same_v<typename Src::DType, half>)) {
        require_same<Out, Src>("TAXPY", line);
    }
    auto o = view(out, line);
    auto a = read_block(view(src, line), 0, 0, o.vr, o.vc);
    auto d = read_block(o, 0, 0, o.vr, o.vc);
    const CT<T> s = scalar_in<T>(alpha);
    for (size_t i = 0; i < a.size(); ++i) d[i] = s * a[i] + d[i];
    write_block(o, d, o.vr, o.vc);
}

template <Bin B, typename Out, typename S0, typename S1>
inline void part(const char* op, Out& out, S0& src0, S1& src1, int line)
{
    using T = typename Out::DType;
    require_same<Out, S0>(op, line);
    require_same<Out, S1>(op, line);
    auto o = view(out, line);
    auto v0 = view(src0, line);
    auto v1 = view(src1, line);
    const bool ok = (v0.vr == o.vr && v0.vc == o.vc) || (v1.vr == o.vr && v1.vc == o.vc);
    if (!ok) {
        raise_fault(FaultKind::Trap, line, "%s: %s: one source's valid shape must equal the "
                    "output's", where().c_str(), op);
    }
    auto clipped = [&](const View<T>& v) {
        std::vector<CT<T>> block(static_cast<size_t>(o.vr * o.vc), CT<T>(0));
        const int64_t rows = std::min(v.vr, o.vr), cols = std::min(v.vc, o.vc);
        for (int64_t r = 0; r < rows; ++r) {
            for (int64_t c = 0; c < cols; ++c) block[r * o.vc + c] = Elem<T>::load(v.get(r, c));
        }
        return block;
    };
    auto a = clipped(v0);
    auto b = clipped(v1);
    std::vector<CT<T>> res(a.size());
    for (int64_t r = 0; r < o.vr; ++r) {
        for (int64_t c = 0; c < o.vc; ++c) {
            const size_t i = static_cast<size_t>(r * o.vc + c);
            const bool in0 = r < v0.vr && c < v0.vc, in1 = r < v1.vr && c < v1.vc;
            res[i] = (in0 && in1) ? apply_bin<B>(a[i], b[i]) : (in0 ? a[i] : b[i]);
        }
    }
    write_block(o, res, o.vr, o.vc);
}

// ------------------------------------------------------------------ compare / select

template <typename C>
inline bool compare(CmpMode m, C a, C b)
{
    switch (m) {
        case CmpMode::EQ: return a == b;
        case CmpMode::NE: return a != b;
        case CmpMode::LT: return a < b;
        case CmpMode::LE: return a <= b;
        case CmpMode::GT: return a > b;
        case CmpMode::GE: return a >= b;
    }
    return false;
}

//! byte j of a packed mask lives at logical element (j / cols, j % cols) of the mask tile
template <typename MaskT>
inline void check_mask(const View<MaskT>& m, int64_t nbytes, int line)
{
    if (sizeof(MaskT) != 1) {
        raise_fault(FaultKind::Trap, line, "%s: a compare mask tile must be UINT8", where().c_str());
    }
    if (nbytes > m.g.rows * m.g.cols) {
        raise_fault(FaultKind::Trap, line, "%s: mask tile holds %lld bytes, %lld needed",
                    where().c_str(), static_cast<long long>(m.g.rows * m.g.cols),
                    static_cast<long long>(nbytes));
    }
}

template <typename Mask, typename L, typename R>
inline void cmp(Mask& mask, L& lhs, R& rhs, CmpMode mode, int line)
{
    using T = typename L::DType;
    using MT = typename Mask::DType;
    auto m = view(mask, line);
    auto lv = view(lhs, line);
    auto a = read_block(lv, 0, 0, lv.vr, lv.vc);
    std::vector<CT<T>> b;
    if constexpr (is_tile_v<R>) {
        require_same<L, R>("TCMP", line);
        b = read_block(view(rhs, line), 0, 0, lv.vr, lv.vc);
    } else {
        b.assign(a.size(), scalar_in<T>(rhs));
    }
    const int64_t count = static_cast<int64_t>(a.size());
    const int64_t nbytes = (count + 7) / 8;
    check_mask(m, nbytes, line);
    for (int64_t j = 0; j < nbytes; ++j) {
        uint8_t byte = 0;
        for (int bit = 0; bit < 8; ++bit) {
            const int64_t i = j * 8 + bit;
            if (i < count && compare(mode, a[i], b[i])) byte |= static_cast<uint8_t>(1u << bit);
        }
        m.set(j / m.g.cols, j % m.g.cols, reinterpret_elem<uint8_t, MT>(byte));
    }
}

template <typename Out, typename Mask, typename L, typename R>
inline void sel(Out& out, Mask& mask, L& lhs, R& rhs, int line)
{
    using T = typename Out::DType;
    using MT = typename Mask::DType;
    require_same<Out, L>("TSEL", line);
    auto o = view(out, line);
    auto m = view(mask, line);
    auto a = read_block(view(lhs, line), 0, 0, o.vr, o.vc);
    std::vector<CT<T>> b;
    if constexpr (is_tile_v<R>) {
        require_same<Out, R>("TSEL", line);
        b = read_block(view(rhs, line), 0, 0, o.vr, o.vc);
    } else {
        b.assign(a.size(), scalar_in<T>(rhs));
    }
    const int64_t count = static_cast<int64_t>(a.size());
    check_mask(m, (count + 7) / 8, line);
    for (int64_t i = 0; i < count; ++i) {
        const int64_t j = i / 8;
        const uint8_t byte = reinterpret_elem<MT, uint8_t>(m.get(j / m.g.cols, j % m.g.cols));
        if (!((byte >> (i % 8)) & 1u)) a[i] = b[i];
    }
    write_block(o, a, o.vr, o.vc);
}

// ------------------------------------------------------------------ reductions

enum class Red { Sum, Max, Min, Prod, ArgMax, ArgMin };

//! the source window as float32 / int64, in torch's memory order (see View::column_major_dense)
template <typename T>
inline std::vector<CT<T>> window_values(const View<T>& v, bool& col_major)
{
    col_major = v.column_major_dense();
    std::vector<CT<T>> out(static_cast<size_t>(v.vr * v.vc));
    for (int64_t r = 0; r < v.vr; ++r) {
        for (int64_t c = 0; c < v.vc; ++c) {
            out[col_major ? c * v.vr + r : r * v.vc + c] = Elem<T>::load(v.get(r, c));
        }
    }
    return out;
}

template <typename C>
inline C reduce_seq(Red k, const C* x, int64_t n, int64_t stride)
{
    C acc = x[0];
    int64_t best = 0;
    for (int64_t i = 1; i < n; ++i) {
        const C v = x[i * stride];
        switch (k) {
            case Red::Max: acc = op_max(acc, v); break;
            case Red::Min: acc = op_min(acc, v); break;
            case Red::Prod: acc = acc * v; break;
            case Red::ArgMax:
                if (v > acc || (std::is_floating_point_v<C> && std::isnan(static_cast<double>(v)) &&
                                !std::isnan(static_cast<double>(acc)))) {
                    acc = v;
                    best = i;
                }
                break;
            case Red::ArgMin:
                if (v < acc || (std::is_floating_point_v<C> && std::isnan(static_cast<double>(v)) &&
                                !std::isnan(static_cast<double>(acc)))) {
                    acc = v;
                    best = i;
                }
                break;
            default: break;
        }
    }
    if (k == Red::ArgMax || k == Red::ArgMin) return static_cast<C>(best);
    return acc;
}

//! reduce along `axis` (1: rows -> [rows, 1], 0: columns -> [1, cols]) into `out`
template <Red K, int Axis, typename Out, typename Src>
inline void reduce(const char* op, Out& out, Src& src, int line)
{
    using S = typename Src::DType;
    using D = typename Out::DType;
    constexpr bool arg = K == Red::ArgMax || K == Red::ArgMin;
    if constexpr (arg && Elem<D>::is_float) {
        raise_fault(FaultKind::Trap, line, "%s: %s: index output must be an integer tile",
                    where().c_str(), op);
    } else if constexpr (!arg && !std::is_same_v<D, S>) {
        raise_fault(FaultKind::Trap, line, "%s: %s: output dtype differs from the source",
                    where().c_str(), op);
    } else {
        auto s = view(src, line);
        if (s.vr == 0 || s.vc == 0) return;
        auto o = view(out, line);
        bool col_major = false;
        auto x = window_values(s, col_major);
        const int64_t R = s.vr, C = s.vc;
        // element (r, c) of the window and the strides between rows / columns
        const int64_t rs = col_major ? 1 : C, cs = col_major ? R : 1;
        const int64_t n_out = Axis == 1 ? R : C;
        const int64_t n_in = Axis == 1 ? C : R;
        const int64_t in_stride = Axis == 1 ? cs : rs;
        const int64_t out_stride = Axis == 1 ? rs : cs;
        std::vector<CT<S>> res(static_cast<size_t>(n_out));
        if constexpr (K == Red::Sum && std::is_floating_point_v<CT<S>>) {
            std::vector<float> sums(static_cast<size_t>(n_out));
            // torch reduces a contiguous [a, b] buffer; which of sum_rows / sum_cols depends on
            // whether the reduced axis is the contiguous one
            const bool reduced_contiguous = in_stride == 1;
            if (reduced_contiguous) {
                sum_rows(x.data(), n_out, n_in, sums.data());
            } else {
                sum_cols(x.data(), n_in, n_out, sums.data());
            }
            for (int64_t i = 0; i < n_out; ++i) res[i] = sums[i];
        } else if constexpr (K == Red::Sum) {
            for (int64_t i = 0; i < n_out; ++i) {
                CT<S> acc = 0;
                for (int64_t j = 0; j < n_in; ++j) acc += x[i * out_stride + j * in_stride];
                res[i] = acc;
            }
        } else {
            for (int64_t i = 0; i < n_out; ++i) {
                res[i] = reduce_seq(K, x.data() + i * out_stride, n_in, in_stride);
            }
        }
        for (int64_t i = 0; i < n_out; ++i) {
            const int64_t r = Axis == 1 ? i : 0, c = Axis == 1 ? 0 : i;
            if constexpr (arg) {
                o.set(r, c, Elem<D>::wrap(static_cast<int64_t>(res[i])));
            } else {
                o.set(r, c, encode<D>(res[i]));
            }
        }
    }
}

// ------------------------------------------------------------------ broadcasts

template <int Axis, typename Out, typename Src, typename Sc>
inline void expand_bin(const char* op, BinOp kind, Out& out, Src& src, Sc& sc, int line)
{
    using T = typename Out::DType;
    using C = CT<T>;
    require_same<Out, Src>(op, line);
    require_same<Out, Sc>(op, line);
    auto o = view(out, line);
    auto a = read_block(view(src, line), 0, 0, o.vr, o.vc);
    auto sv = view(sc, line);
    auto b = Axis == 1 ? read_block(sv, 0, 0, o.vr, 1) : read_block(sv, 0, 0, 1, o.vc);
    if (kind == BinOp::EXPDIF && !Elem<T>::is_float) {  // TROWEXPANDDIV takes 8/16/32-bit ints
        raise_fault(FaultKind::Trap, line, "%s: %s needs a float tile", where().c_str(), op);
    }
    for (int64_t r = 0; r < o.vr; ++r) {
        for (int64_t c = 0; c < o.vc; ++c) {
            const size_t i = static_cast<size_t>(r * o.vc + c);
            const C y = b[Axis == 1 ? r : c];
            C& x = a[i];
            switch (kind) {
                case BinOp::ADD: x = x + y; break;
                case BinOp::SUB:
                case BinOp::EXPDIF: x = x - y; break;
                case BinOp::MUL: x = x * y; break;
                case BinOp::DIV: x = op_div(x, y); break;
                case BinOp::MAX: x = op_max(x, y); break;
                case BinOp::MIN: x = op_min(x, y); break;
            }
        }
    }
    if constexpr (std::is_floating_point_v<C>) {
        if (kind == BinOp::EXPDIF) vexp(a.data(), a.data(), static_cast<int64_t>(a.size()));
    }
    write_block(o, a, o.vr, o.vc);
}

template <int Axis, typename Out, typename Src>
inline void expand_plain(Out& out, Src& src, int line)
{
    using T = typename Out::DType;
    require_same<Out, Src>("expand", line);
    auto o = view(out, line);
    auto sv = view(src, line);
    auto b = Axis == 1 ? read_block(sv, 0, 0, o.vr, 1) : read_block(sv, 0, 0, 1, o.vc);
    std::vector<CT<T>> a(static_cast<size_t>(o.vr * o.vc));
    for (int64_t r = 0; r < o.vr; ++r) {
        for (int64_t c = 0; c < o.vc; ++c) a[r * o.vc + c] = b[Axis == 1 ? r : c];
    }
    write_block(o, a, o.vr, o.vc);
}

// ------------------------------------------------------------------ transpose

template <typename Out, typename Src>
inline void transpose(Out& out, Src& src, int line)
{
    require_same<Out, Src>("TTRANS", line);
    auto o = view(out, line);
    auto s = view(src, line);
    std::vector<typename Src::DType> a(static_cast<size_t>(s.vr * s.vc));
    for (int64_t r = 0; r < s.vr; ++r) {
        for (int64_t c = 0; c < s.vc; ++c) a[r * s.vc + c] = s.get(r, c);
    }
    for (int64_t r = 0; r < s.vr; ++r) {
        for (int64_t c = 0; c < s.vc; ++c) o.set(c, r, a[r * s.vc + c]);
    }
}

}  // namespace pypto_native

// ------------------------------------------------------------------ the instructions
//
// Declared as pto-isa declares them: template parameters in pto-isa's order (a precision
// variant first where pto-isa has one), scalars of the tile's element type, scratch tiles where
// pto-isa requires them (unused here), no default for a compare or rounding mode.

#define PYPTO_LOC ::pypto_native::Loc loc = ::pypto_native::Loc::here()
#define PYPTO_BIN(NAME, KIND)                                                               \
    template <typename TileDataDst, typename TileDataSrc0, typename TileDataSrc1>           \
    inline void NAME(TileDataDst& dst, TileDataSrc0& src0, TileDataSrc1& src1, PYPTO_LOC)   \
    {                                                                                       \
        ::pypto_native::record(#NAME, loc);                                                 \
        ::pypto_native::binary<::pypto_native::Bin::KIND>(#NAME, dst, src0, src1, loc.line); \
    }
#define PYPTO_BIN_P(NAME, KIND, ALG)                                                        \
    template <auto PrecisionType = ALG::DEFAULT, typename TileDataDst, typename TileDataSrc0, \
              typename TileDataSrc1>                                                        \
    inline void NAME(TileDataDst& dst, TileDataSrc0& src0, TileDataSrc1& src1, PYPTO_LOC)   \
    {                                                                                       \
        ::pypto_native::record(#NAME, loc);                                                 \
        ::pypto_native::binary<::pypto_native::Bin::KIND>(#NAME, dst, src0, src1, loc.line); \
    }
#define PYPTO_BIN_TMP(NAME, KIND, ...)                                                      \
    template <__VA_ARGS__ typename TileDataDst, typename TileDataSrc0, typename TileDataSrc1, \
              typename TileDataTmp>                                                         \
    inline void NAME(TileDataDst& dst, TileDataSrc0& src0, TileDataSrc1& src1, TileDataTmp&, \
                     PYPTO_LOC)                                                             \
    {                                                                                       \
        ::pypto_native::record(#NAME, loc);                                                 \
        ::pypto_native::binary<::pypto_native::Bin::KIND>(#NAME, dst, src0, src1, loc.line); \
    }
//! tile op scalar; the scalar has the element type of the tile named by SCALAR_OF
#define PYPTO_BINS(NAME, KIND, SCALAR_OF, ...)                                              \
    template <__VA_ARGS__ typename TileDataDst, typename TileDataSrc>                       \
    inline void NAME(TileDataDst& dst, TileDataSrc& src, typename SCALAR_OF::DType scalar,  \
                     PYPTO_LOC)                                                             \
    {                                                                                       \
        ::pypto_native::record(#NAME, loc);                                                 \
        ::pypto_native::binary_scalar<::pypto_native::Bin::KIND>(#NAME, dst, src, scalar,   \
                                                                 loc.line);                 \
    }
#define PYPTO_UN(NAME, KIND, ...)                                                           \
    template <__VA_ARGS__ typename TileDataDst, typename TileDataSrc>                       \
    inline void NAME(TileDataDst& dst, TileDataSrc& src, PYPTO_LOC)                         \
    {                                                                                       \
        ::pypto_native::record(#NAME, loc);                                                 \
        ::pypto_native::unary<::pypto_native::Un::KIND>(#NAME, dst, src, loc.line);         \
    }
//! (dst, src, tmp): the row reductions and the arg reductions
#define PYPTO_RED(NAME, KIND, AXIS)                                                         \
    template <typename TileDataOut, typename TileDataIn, typename TileDataTmp>              \
    inline void NAME(TileDataOut& dst, TileDataIn& src, TileDataTmp&, PYPTO_LOC)            \
    {                                                                                       \
        ::pypto_native::record(#NAME, loc);                                                 \
        ::pypto_native::reduce<::pypto_native::Red::KIND, AXIS>(#NAME, dst, src, loc.line); \
    }
//! (dst, src): the column reductions
#define PYPTO_COLRED(NAME, KIND)                                                            \
    template <typename TileDataOut, typename TileDataIn>                                    \
    inline void NAME(TileDataOut& dst, TileDataIn& src, PYPTO_LOC)                          \
    {                                                                                       \
        ::pypto_native::record(#NAME, loc);                                                 \
        ::pypto_native::reduce<::pypto_native::Red::KIND, 0>(#NAME, dst, src, loc.line);    \
    }
#define PYPTO_EXPAND(NAME, KIND, AXIS, ...)                                                 \
    template <__VA_ARGS__ typename TileDataDst, typename TileDataSrc0, typename TileDataSrc1> \
    inline void NAME(TileDataDst& dst, TileDataSrc0& src0, TileDataSrc1& src1, PYPTO_LOC)   \
    {                                                                                       \
        ::pypto_native::record(#NAME, loc);                                                 \
        ::pypto_native::expand_bin<AXIS>(#NAME, ::pypto_native::BinOp::KIND, dst, src0, src1, \
                                         loc.line);                                         \
    }
#define PYPTO_PART(NAME, KIND)                                                              \
    template <typename TileDataDst, typename TileDataSrc0, typename TileDataSrc1>           \
    inline void NAME(TileDataDst& dst, TileDataSrc0& src0, TileDataSrc1& src1, PYPTO_LOC)   \
    {                                                                                       \
        ::pypto_native::record(#NAME, loc);                                                 \
        ::pypto_native::part<::pypto_native::Bin::KIND>(#NAME, dst, src0, src1, loc.line);  \
    }

namespace pto {

PYPTO_BIN(TADD, Add)
PYPTO_BIN(TSUB, Sub)
PYPTO_BIN(TMUL, Mul)
PYPTO_BIN_P(TDIV, Div, DivAlgorithm)
PYPTO_BIN(TMAX, Max)
PYPTO_BIN(TMIN, Min)
PYPTO_BIN(TAND, And)
PYPTO_BIN(TOR, Or)
PYPTO_BIN(TSHL, Shl)
PYPTO_BIN(TSHR, Shr)
PYPTO_BIN(TSUBRELU, SubRelu)
PYPTO_BIN_TMP(TXOR, Xor)
PYPTO_BIN_TMP(TREM, Rem, auto PrecisionType = RemAlgorithm::DEFAULT,)
// TREM / TREMS without a scratch tile: not declared by pto-isa (it requires one), but the IR op
// carries none and the real code generator emits this spelling, so it is kept (the one
// knowing exception to mirroring pto-isa's declarations, see tools/check_real_isa.py)
PYPTO_BIN_P(TREM, Rem, RemAlgorithm)

PYPTO_BINS(TADDS, Add, TileDataSrc)
PYPTO_BINS(TSUBS, Sub, TileDataSrc)
PYPTO_BINS(TMULS, Mul, TileDataSrc)
PYPTO_BINS(TDIVS, Div, TileDataSrc, auto PrecisionType = DivAlgorithm::DEFAULT,)
PYPTO_BINS(TMAXS, Max, TileDataSrc)
PYPTO_BINS(TMINS, Min, TileDataSrc)
PYPTO_BINS(TANDS, And, TileDataDst)
PYPTO_BINS(TORS, Or, TileDataDst)
PYPTO_BINS(TSHLS, Shl, TileDataDst)
PYPTO_BINS(TSHRS, Shr, TileDataDst)

//! tile op scalar with a scratch tile (pto-isa requires one)
template <typename TileDataDst, typename TileDataSrc, typename TileDataTmp>
inline void TXORS(TileDataDst& dst, TileDataSrc& src, typename TileDataSrc::DType scalar,
                  TileDataTmp&, PYPTO_LOC)
{
    pypto_native::record("TXORS", loc);
    pypto_native::binary_scalar<pypto_native::Bin::Xor>("TXORS", dst, src, scalar, loc.line);
}

PYPTO_BINS(TREMS, Rem, TileDataSrc, auto PrecisionType = RemSAlgorithm::DEFAULT,)

template <auto PrecisionType = RemSAlgorithm::DEFAULT, typename TileDataDst, typename TileDataSrc,
          typename TileDataTmp>
inline void TREMS(TileDataDst& dst, TileDataSrc& src, typename TileDataSrc::DType scalar,
                  TileDataTmp&, PYPTO_LOC)
{
    pypto_native::record("TREMS", loc);
    pypto_native::binary_scalar<pypto_native::Bin::Rem>("TREMS", dst, src, scalar, loc.line);
}

PYPTO_UN(TNEG, Neg)
PYPTO_UN(TABS, Abs)
PYPTO_UN(TEXP, Exp, auto PrecisionType = ExpAlgorithm::DEFAULT,)
PYPTO_UN(TLOG, Log, auto PrecisionType = LogAlgorithm::DEFAULT,)
PYPTO_UN(TSQRT, Sqrt, auto PrecisionType = SqrtAlgorithm::DEFAULT,)
PYPTO_UN(TRSQRT, Rsqrt, auto PrecisionType = RsqrtAlgorithm::DEFAULT,)
PYPTO_UN(TRECIP, Recip, auto PrecisionType = RecipAlgorithm::DEFAULT,)
PYPTO_UN(TRELU, Relu)
PYPTO_UN(TNOT, Not)

PYPTO_PART(TPARTADD, Add)
PYPTO_PART(TPARTMAX, Max)
PYPTO_PART(TPARTMIN, Min)
PYPTO_PART(TPARTMUL, Mul)

PYPTO_RED(TROWSUM, Sum, 1)
PYPTO_RED(TROWMAX, Max, 1)
PYPTO_RED(TROWMIN, Min, 1)
PYPTO_RED(TROWPROD, Prod, 1)
PYPTO_RED(TROWARGMAX, ArgMax, 1)
PYPTO_RED(TROWARGMIN, ArgMin, 1)
PYPTO_RED(TCOLARGMAX, ArgMax, 0)
PYPTO_RED(TCOLARGMIN, ArgMin, 0)
PYPTO_COLRED(TCOLSUM, Sum)
PYPTO_COLRED(TCOLMAX, Max)
PYPTO_COLRED(TCOLMIN, Min)
PYPTO_COLRED(TCOLPROD, Prod)

//! the column sum with a scratch tile and pto-isa's choice of a binary-tree sum (the values
//! are the simulator's sequential sum either way)
template <typename TileDataOut, typename TileDataIn, typename TileDataTmp>
inline void TCOLSUM(TileDataOut& dst, TileDataIn& src, TileDataTmp&, bool isBinary, PYPTO_LOC)
{
    (void)isBinary;
    pypto_native::record("TCOLSUM", loc);
    pypto_native::reduce<pypto_native::Red::Sum, 0>("TCOLSUM", dst, src, loc.line);
}

PYPTO_EXPAND(TROWEXPANDADD, ADD, 1)
PYPTO_EXPAND(TROWEXPANDSUB, SUB, 1)
PYPTO_EXPAND(TROWEXPANDMUL, MUL, 1)
PYPTO_EXPAND(TROWEXPANDDIV, DIV, 1, auto PrecisionType = DivAlgorithm::DEFAULT,)
PYPTO_EXPAND(TROWEXPANDMAX, MAX, 1)
PYPTO_EXPAND(TROWEXPANDMIN, MIN, 1)
PYPTO_EXPAND(TROWEXPANDEXPDIF, EXPDIF, 1)
PYPTO_EXPAND(TCOLEXPANDADD, ADD, 0)
PYPTO_EXPAND(TCOLEXPANDSUB, SUB, 0)
PYPTO_EXPAND(TCOLEXPANDMUL, MUL, 0)
PYPTO_EXPAND(TCOLEXPANDDIV, DIV, 0, auto PrecisionType = DivAlgorithm::DEFAULT,)
PYPTO_EXPAND(TCOLEXPANDMAX, MAX, 0)
PYPTO_EXPAND(TCOLEXPANDMIN, MIN, 0)
PYPTO_EXPAND(TCOLEXPANDEXPDIF, EXPDIF, 0)

template <typename TileDataDst, typename TileDataSrc>
inline void TROWEXPAND(TileDataDst& dst, TileDataSrc& src, PYPTO_LOC)
{
    pypto_native::record("TROWEXPAND", loc);
    pypto_native::expand_plain<1>(dst, src, loc.line);
}

template <typename TileDataDst, typename TileDataSrc>
inline void TCOLEXPAND(TileDataDst& dst, TileDataSrc& src, PYPTO_LOC)
{
    pypto_native::record("TCOLEXPAND", loc);
    pypto_native::expand_plain<0>(dst, src, loc.line);
}

template <typename TileData>
inline void TEXPANDS(TileData& dst, typename TileData::DType scalar, PYPTO_LOC)
{
    pypto_native::record("TEXPANDS", loc);
    pypto_native::expands(dst, scalar, loc.line);
}

//! indices start, start + 1, ... (descending: start, start - 1, ...) in row-major order
template <typename TileData, typename T, int descending>
inline void TCI(TileData& dst, T start, PYPTO_LOC)
{
    static_assert(descending == 0, "TCI: the native backend implements ascending indices");
    static_assert(std::is_same_v<typename TileData::DType, T>,
                  "TCI: the start value must have the tile's element type");
    static_assert(TileData::Rows == 1, "TCI: a one-row tile");
    pypto_native::record("TCI", loc);
    pypto_native::fill_index(dst, start, loc.line);
}

//! Mat tiles: pad with the given value; Vec tiles: the TFillPadMode form
template <typename TileData, PadValue PadVal = PadValue::Zero,
          std::enable_if_t<(TileData::Loc == TileType::Mat), int> = 0>
inline void TFILLPAD(TileData& dst, TileData& src, PYPTO_LOC)
{
    pypto_native::record("TFILLPAD", loc);
    pypto_native::fillpad("TFILLPAD", dst, src, true, loc.line);
}

template <TFillPadMode mode = TFillPadMode::Normal, typename DstTileData, typename SrcTileData,
          std::enable_if_t<(DstTileData::Loc == TileType::Vec) && (SrcTileData::Loc == TileType::Vec),
                           int> = 0>
inline void TFILLPAD(DstTileData& dst, SrcTileData& src, PYPTO_LOC)
{
    pypto_native::record("TFILLPAD", loc);
    pypto_native::fillpad("TFILLPAD", dst, src, true, loc.line);
}

template <typename DstTileData, typename SrcTileData>
inline void TFILLPAD_EXPAND(DstTileData& dst, SrcTileData& src, PYPTO_LOC)
{
    pypto_native::record("TFILLPAD_EXPAND", loc);
    pypto_native::fillpad("TFILLPAD_EXPAND", dst, src, false, loc.line);
}

template <typename DstTileData, typename SrcTileData>
inline void TFILLPAD_INPLACE(DstTileData& dst, SrcTileData& src, PYPTO_LOC)
{
    pypto_native::record("TFILLPAD_INPLACE", loc);
    pypto_native::fillpad("TFILLPAD_INPLACE", dst, src, false, loc.line);
}

template <bool NeedSetCtrl = true, typename TileDataD, typename TileDataS>
inline void TCVT(TileDataD& dst, TileDataS& src, RoundMode mode, PYPTO_LOC)
{
    pypto_native::record("TCVT", loc);
    pypto_native::cast(dst, src, mode, loc.line);
}

template <typename TileData>
inline void TADDC(TileData& dst, TileData& src0, TileData& src1, TileData& src2, PYPTO_LOC)
{
    pypto_native::record("TADDC", loc);
    pypto_native::addc<false>("TADDC", dst, src0, src1, src2, loc.line);
}

template <typename TileData>
inline void TSUBC(TileData& dst, TileData& src0, TileData& src1, TileData& src2, PYPTO_LOC)
{
    pypto_native::record("TSUBC", loc);
    pypto_native::addc<true>("TSUBC", dst, src0, src1, src2, loc.line);
}

template <typename TileData>
inline void TADDSC(TileData& dst, TileData& src0, typename TileData::DType scalar, TileData& src1,
                   PYPTO_LOC)
{
    pypto_native::record("TADDSC", loc);
    pypto_native::addc<false>("TADDSC", dst, src0, scalar, src1, loc.line);
}

template <typename TileData>
inline void TSUBSC(TileData& dst, TileData& src0, typename TileData::DType scalar, TileData& src1,
                   PYPTO_LOC)
{
    pypto_native::record("TSUBSC", loc);
    pypto_native::addc<true>("TSUBSC", dst, src0, scalar, src1, loc.line);
}

template <typename TileDataDst, typename TileDataSrc0, typename TileDataSrc1>
inline void TMULADDDST(TileDataDst& dst, TileDataSrc0& src0, TileDataSrc1& src1, PYPTO_LOC)
{
    pypto_native::record("TMULADDDST", loc);
    pypto_native::ternary<pypto_native::Tern::MulAddDst>("TMULADDDST", dst, src0, src1, loc.line);
}

template <typename TileDataDst, typename TileDataSrc0, typename TileDataSrc1>
inline void TFUSEDMULADD(TileDataDst& dst, TileDataSrc0& src0, TileDataSrc1& src1, PYPTO_LOC)
{
    pypto_native::record("TFUSEDMULADD", loc);
    pypto_native::ternary<pypto_native::Tern::FusedMulAdd>("TFUSEDMULADD", dst, src0, src1,
                                                           loc.line);
}

template <typename TileDataDst, typename TileDataSrc0, typename TileDataSrc1>
inline void TFUSEDMULADDRELU(TileDataDst& dst, TileDataSrc0& src0, TileDataSrc1& src1, PYPTO_LOC)
{
    pypto_native::record("TFUSEDMULADDRELU", loc);
    pypto_native::ternary<pypto_native::Tern::FusedMulAddRelu>("TFUSEDMULADDRELU", dst, src0,
                                                               src1, loc.line);
}

template <typename TileDataDst, typename TileDataSrc>
inline void TAXPY(TileDataDst& dst, TileDataSrc& src0, typename TileDataSrc::DType scalar,
                  PYPTO_LOC)
{
    pypto_native::record("TAXPY", loc);
    pypto_native::axpy(dst, src0, scalar, loc.line);
}

template <typename TileDataDst, typename TileDataSrc0, typename TileDataSrc1>
inline void TCMP(TileDataDst& dst, TileDataSrc0& src0, TileDataSrc1& src1, CmpMode cmpMode,
                 PYPTO_LOC)
{
    pypto_native::record("TCMP", loc);
    pypto_native::cmp(dst, src0, src1, cmpMode, loc.line);
}

template <typename TileDataDst, typename TileDataSrc>
inline void TCMPS(TileDataDst& dst, TileDataSrc& src0, typename TileDataSrc::DType src1,
                  CmpMode mode, PYPTO_LOC)
{
    pypto_native::record("TCMPS", loc);
    pypto_native::cmp(dst, src0, src1, mode, loc.line);
}

template <typename TileData, typename MaskTile, typename TmpTile>
inline void TSEL(TileData& dst, MaskTile& selMask, TileData& src0, TileData& src1, TmpTile&,
                 PYPTO_LOC)
{
    pypto_native::record("TSEL", loc);
    pypto_native::sel(dst, selMask, src0, src1, loc.line);
}

template <typename TileDataDst, typename TileDataMask, typename TileDataSrc, typename TileDataTmp>
inline void TSELS(TileDataDst& dst, TileDataMask& mask, TileDataSrc& src, TileDataTmp&,
                  typename TileDataSrc::DType scalar, PYPTO_LOC)
{
    pypto_native::record("TSELS", loc);
    pypto_native::sel(dst, mask, src, scalar, loc.line);
}

template <typename TileDataDst, typename TileDataSrc, typename TileDataTmp>
inline void TTRANS(TileDataDst& dst, TileDataSrc& src, TileDataTmp&, PYPTO_LOC)
{
    pypto_native::record("TTRANS", loc);
    pypto_native::transpose(dst, src, loc.line);
}

}  // namespace pto
