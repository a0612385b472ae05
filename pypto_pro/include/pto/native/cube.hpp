// PyPTO Pro native backend: cube instructions (pipe M): TMATMUL, _ACC, _BIAS, _MX, TGEMV*.
//
// As `pypto_pro/sim/ops/cube.py`: M = lhs valid rows, K = lhs valid cols, N = rhs valid cols;
// float operands are multiplied in float32 (the same sgemm call torch.mm makes, through the
// numerics bridge), integer and MX operands in float64 (exact), then rounded once into the
// accumulator and written at (0, 0). `AccPhase` (unit-flag handshake) only orders pipes on
// the hardware; in program order it changes nothing.
#pragma once

#include <cmath>
#include <type_traits>
#include <vector>

#include "movement.hpp"

namespace pypto_native {

template <typename T>
constexpr bool int_operand = std::is_same_v<T, int8_t> || std::is_same_v<T, int4b_t>;

template <typename L, typename R, typename D>
inline void check_mm(const char* op, int line)
{
    constexpr bool li = int_operand<L>, ri = int_operand<R>;
    if constexpr (li != ri) {
        raise_fault(FaultKind::Trap, line, "%s: %s mixes integer and float operands",
                    where().c_str(), op);
    } else if constexpr (li) {
        if constexpr (!std::is_same_v<D, int32_t>) {
            raise_fault(FaultKind::Trap, line, "%s: %s: INT8 operands accumulate into INT32",
                        where().c_str(), op);
        }
    } else {
        if constexpr (!std::is_same_v<D, float> && !std::is_same_v<D, half>) {
            raise_fault(FaultKind::Trap, line, "%s: %s: float operands accumulate into FP32/FP16",
                        where().c_str(), op);
        }
    }
}

//! lhs[M, K] @ rhs[K, N] over the valid windows; float32 (sgemm) or float64
template <typename LT, typename RT>
inline void product(const View<LT>& a, const View<RT>& b, int64_t& M, int64_t& N,
                    std::vector<float>& f32, std::vector<double>& f64, bool& wide, int line)
{
    M = a.vr;
    const int64_t K = a.vc;
    N = b.vc;
    if (b.vr < K) {
        raise_fault(FaultKind::Trap, line, "%s: lhs valid K %lld exceeds rhs valid rows %lld",
                    where().c_str(), static_cast<long long>(K), static_cast<long long>(b.vr));
    }
    wide = int_operand<LT>;
    if (wide) {
        f64.assign(static_cast<size_t>(M * N), 0.0);
        for (int64_t i = 0; i < M; ++i) {
            for (int64_t j = 0; j < N; ++j) {
                double acc = 0;
                for (int64_t k = 0; k < K; ++k) {
                    acc += static_cast<double>(Elem<LT>::load(a.get(i, k))) *
                           static_cast<double>(Elem<RT>::load(b.get(k, j)));
                }
                f64[i * N + j] = acc;
            }
        }
        return;
    }
    std::vector<float> A(static_cast<size_t>(M * K)), B(static_cast<size_t>(K * N));
    const bool fast = a.window_ok(0, 0, M, K) && b.window_ok(0, 0, K, N);
    for (int64_t i = 0; i < M; ++i) {
        for (int64_t k = 0; k < K; ++k) {
            A[i * K + k] = static_cast<float>(Elem<LT>::load(fast ? *a.at(i, k) : a.get(i, k)));
        }
    }
    for (int64_t k = 0; k < K; ++k) {
        for (int64_t j = 0; j < N; ++j) {
            B[k * N + j] = static_cast<float>(Elem<RT>::load(fast ? *b.at(k, j) : b.get(k, j)));
        }
    }
    f32.assign(static_cast<size_t>(M * N), 0.0f);
    gemm_f32(static_cast<int>(M), static_cast<int>(N), static_cast<int>(K), A.data(), B.data(),
             f32.data());
}

template <typename D>
inline D finish(double v)
{
    if constexpr (std::is_same_v<D, int32_t>) {
        return Elem<D>::wrap(static_cast<int64_t>(std::nearbyint(v)));
    } else {
        return encode<D>(v);
    }
}

//! dst = lhs @ rhs (+ acc) (+ bias row)
template <typename Dst, typename Lhs, typename Rhs, typename Acc, typename Bias>
inline void matmul(const char* op, Dst& dst, Lhs& lhs, Rhs& rhs, Acc* acc, Bias* bias, int line)
{
    using D = typename Dst::DType;
    using LT = typename Lhs::DType;
    using RT = typename Rhs::DType;
    check_mm<LT, RT, D>(op, line);
    auto o = view(dst, line);
    int64_t M = 0, N = 0;
    std::vector<float> f32;
    std::vector<double> f64;
    bool wide = false;
    product(view(lhs, line), view(rhs, line), M, N, f32, f64, wide, line);
    if (acc != nullptr) {
        auto av = view(*acc, line);
        for (int64_t i = 0; i < M; ++i) {
            for (int64_t j = 0; j < N; ++j) {
                const auto prev = Elem<typename Acc::DType>::load(av.get(i, j));
                if (wide) {
                    f64[i * N + j] += static_cast<double>(prev);
                } else {
                    f32[i * N + j] += static_cast<float>(prev);
                }
            }
        }
    }
    if (bias != nullptr) {
        auto bv = view(*bias, line);
        for (int64_t j = 0; j < N; ++j) {
            const auto b = Elem<typename Bias::DType>::load(bv.get(0, j));
            for (int64_t i = 0; i < M; ++i) {
                if (wide) {
                    f64[i * N + j] += static_cast<double>(b);
                } else {
                    f32[i * N + j] += static_cast<float>(b);
                }
            }
        }
    }
    for (int64_t i = 0; i < M; ++i) {
        for (int64_t j = 0; j < N; ++j) {
            if (wide) {
                o.set(i, j, finish<D>(f64[i * N + j]));
            } else if constexpr (std::is_same_v<D, int32_t>) {
                o.set(i, j, finish<D>(f32[i * N + j]));
            } else {
                o.set(i, j, encode<D>(f32[i * N + j]));
            }
        }
    }
}

constexpr int kMxBlock = 32;

template <typename Dst, typename Lhs, typename Rhs, typename Acc, typename SA, typename SB>
inline void matmul_mx(Dst& dst, Lhs& lhs, Rhs& rhs, Acc* acc, SA& sa, SB& sb, int line)
{
    using D = typename Dst::DType;
    auto a = view(lhs, line);
    auto b = view(rhs, line);
    auto va = view(sa, line);
    auto vb = view(sb, line);
    auto o = view(dst, line);
    const int64_t M = a.vr, K = a.vc, N = b.vc;
    auto scale = [](uint8_t code) { return code == 255 ? NAN : std::ldexp(1.0, code - 127); };
    for (int64_t i = 0; i < M; ++i) {
        for (int64_t j = 0; j < N; ++j) {
            double s = 0;
            for (int64_t k = 0; k < K; ++k) {
                const double x = Elem<typename Lhs::DType>::load(a.get(i, k)) *
                                 scale(reinterpret_elem<typename SA::DType, uint8_t>(
                                     va.get(i, k / kMxBlock)));
                const double y = Elem<typename Rhs::DType>::load(b.get(k, j)) *
                                 scale(reinterpret_elem<typename SB::DType, uint8_t>(
                                     vb.get(k / kMxBlock, j)));
                s += x * y;
            }
            if (acc != nullptr) {
                s += static_cast<double>(Elem<typename Acc::DType>::load(view(*acc, line).get(i, j)));
            }
            o.set(i, j, finish<D>(s));
        }
    }
}

}  // namespace pypto_native

#define PYPTO_MM_PAIR(NAME, BODY_ARGS, PARAMS, TPARAMS)                                     \
    template <TPARAMS>                                                                      \
    inline void NAME(PARAMS, ::pypto_native::Loc loc = ::pypto_native::Loc::here())        \
    {                                                                                       \
        ::pypto_native::record(#NAME, loc);                                                 \
        BODY_ARGS;                                                                          \
    }                                                                                       \
    template <AccPhase Phase, TPARAMS>                                                      \
    inline void NAME(PARAMS, ::pypto_native::Loc loc = ::pypto_native::Loc::here())        \
    {                                                                                       \
        ::pypto_native::record(#NAME, loc);                                                 \
        if constexpr (Phase != AccPhase::Unspecified) {                                     \
            ::pypto_native::unit_flag(c.data(), true, Phase == AccPhase::Final, #NAME,      \
                                      loc.line);                                            \
        }                                                                                   \
        BODY_ARGS;                                                                          \
    }

#define PYPTO_COMMA ,

// Declared as pto-isa declares them: result, inputs (an accumulating form takes the output and
// the input accumulator, of one tile type), the MX forms each operand followed by its scale
// tile; every form also with an AccPhase (unit-flag) first template argument.
namespace pto {

PYPTO_MM_PAIR(TMATMUL,
              ::pypto_native::matmul("TMATMUL", c, a, b, static_cast<TileRes*>(nullptr),
                                     static_cast<TileRes*>(nullptr), loc.line),
              TileRes& c PYPTO_COMMA TileLeft& a PYPTO_COMMA TileRight& b,
              typename TileRes PYPTO_COMMA typename TileLeft PYPTO_COMMA typename TileRight)
PYPTO_MM_PAIR(TGEMV,
              ::pypto_native::matmul("TGEMV", c, a, b, static_cast<TileRes*>(nullptr),
                                     static_cast<TileRes*>(nullptr), loc.line),
              TileRes& c PYPTO_COMMA TileLeft& a PYPTO_COMMA TileRight& b,
              typename TileRes PYPTO_COMMA typename TileLeft PYPTO_COMMA typename TileRight)
PYPTO_MM_PAIR(TMATMUL_ACC,
              ::pypto_native::matmul("TMATMUL_ACC", c, a, b, &cin,
                                     static_cast<TileRes*>(nullptr), loc.line),
              TileRes& c PYPTO_COMMA TileRes& cin PYPTO_COMMA TileLeft& a PYPTO_COMMA TileRight& b,
              typename TileRes PYPTO_COMMA typename TileLeft PYPTO_COMMA typename TileRight)
PYPTO_MM_PAIR(TGEMV_ACC,
              ::pypto_native::matmul("TGEMV_ACC", c, a, b, &cin, static_cast<TileRes*>(nullptr),
                                     loc.line),
              TileRes& c PYPTO_COMMA TileRes& cin PYPTO_COMMA TileLeft& a PYPTO_COMMA TileRight& b,
              typename TileRes PYPTO_COMMA typename TileLeft PYPTO_COMMA typename TileRight)
PYPTO_MM_PAIR(TMATMUL_BIAS,
              ::pypto_native::matmul("TMATMUL_BIAS", c, a, b, static_cast<TileRes*>(nullptr),
                                     &bias, loc.line),
              TileRes& c PYPTO_COMMA TileLeft& a PYPTO_COMMA TileRight& b PYPTO_COMMA
              TileBias& bias,
              typename TileRes PYPTO_COMMA typename TileLeft PYPTO_COMMA typename TileRight
              PYPTO_COMMA typename TileBias)
PYPTO_MM_PAIR(TGEMV_BIAS,
              ::pypto_native::matmul("TGEMV_BIAS", c, a, b, static_cast<TileRes*>(nullptr),
                                     &bias, loc.line),
              TileRes& c PYPTO_COMMA TileLeft& a PYPTO_COMMA TileRight& b PYPTO_COMMA
              TileBias& bias,
              typename TileRes PYPTO_COMMA typename TileLeft PYPTO_COMMA typename TileRight
              PYPTO_COMMA typename TileBias)
PYPTO_MM_PAIR(TMATMUL_MX,
              ::pypto_native::matmul_mx(c, a, b, static_cast<TileRes*>(nullptr), as, bs,
                                        loc.line),
              TileRes& c PYPTO_COMMA TileLeft& a PYPTO_COMMA TileLeftScale& as PYPTO_COMMA
              TileRight& b PYPTO_COMMA TileRightScale& bs,
              typename TileRes PYPTO_COMMA typename TileLeft PYPTO_COMMA
              typename TileLeftScale PYPTO_COMMA typename TileRight PYPTO_COMMA
              typename TileRightScale)
PYPTO_MM_PAIR(TMATMUL_MX,
              ::pypto_native::matmul_mx(c, a, b, &cin, as, bs, loc.line),
              TileRes& c PYPTO_COMMA TileRes& cin PYPTO_COMMA TileLeft& a PYPTO_COMMA
              TileLeftScale& as PYPTO_COMMA TileRight& b PYPTO_COMMA TileRightScale& bs,
              typename TileRes PYPTO_COMMA typename TileLeft PYPTO_COMMA
              typename TileLeftScale PYPTO_COMMA typename TileRight PYPTO_COMMA
              typename TileRightScale)

}  // namespace pto
