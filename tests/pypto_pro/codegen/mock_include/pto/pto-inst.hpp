// A syntax-only stand-in for the pto-isa / CCE headers: every type, enum and intrinsic the
// generated kernel.cpp names, with catch-all signatures. Used by the codegen tests to run
// `g++ -fsyntax-only` on generated code (it checks declarations, scopes and C++ syntax, not
// semantics). Not a CPU implementation.
#pragma once
#include <cstdint>
#include <type_traits>

#define __aicore__
#define __gm__
#define __ubuf__
#define __VEC_SCOPE__
#define __simt_vf__
#define __simt_callee__
#define __launch_bounds__(n)
#define AICORE

struct half { half() {} template <class T> half(T) {} template <class T> operator T() const { return T(); } };
struct bfloat16_t { bfloat16_t() {} template <class T> bfloat16_t(T) {} template <class T> operator T() const { return T(); } };
using float8_e4m3_t = uint8_t; using float8_e5m2_t = uint8_t; using float8_e8m0_t = uint8_t;
using float4_e2m1x2_t = uint8_t; using float4_e1m2x2_t = uint8_t; using hifloat4_t = uint8_t;
using hifloat8_t = uint8_t; using int4b_t = int8_t; using uint4b_t = uint8_t;

struct AnyValue { template <class T> operator T() const { return T(); } };

namespace pto {
enum class TileType { Vec, Mat, Left, Right, Acc, Bias, Scaling, ScaleLeft, ScaleRight };
enum class BLayout { RowMajor, ColMajor };
enum class SLayout { NoneBox, RowMajor, ColMajor };
enum class PadValue { Null, Zero, Max, Min };
enum class CompactMode { Null, Normal, RowPlusOne };
enum class Layout { ND, DN, NZ, ZN, NN, ZZ };
enum Dim { DIM_0, DIM_1, DIM_2, DIM_3, DIM_4 };
enum class CmpMode { EQ, NE, LT, GT, LE, GE };
enum class RoundMode { CAST_NONE, CAST_RINT, CAST_ROUND, CAST_FLOOR, CAST_CEIL, CAST_TRUNC, CAST_ODD };
enum class ReduceOp { SUM, MAX, MIN, PROD };
enum class AccPhase { Unspecified, Partial, Final };
enum class STPhase { Unspecified, Partial, Final };
enum class AtomicType { AtomicNone, AtomicAdd };
enum class ReluPreMode { NoRelu, NormalRelu };
enum class AccToVecMode { SingleModeVec0, SingleModeVec1, DualModeSplitM, DualModeSplitN };
enum class QuantMode { SYM, ASYM };
enum class SyncCoreType { AIV_ONLY, AIC_ONLY, MIX };
enum class SyncAllMode { HARD, SOFT };
enum class BinOp { ADD, SUB, MUL, DIV, MAX, MIN };

template <TileType L, typename T, int R, int C, BLayout B = BLayout::RowMajor, int VR = R,
          int VC = C, SLayout S = SLayout::NoneBox, int F = 512, PadValue P = PadValue::Null,
          CompactMode M = CompactMode::Null>
struct Tile {
    using DType = T;
    Tile() {}
    Tile(int64_t, int64_t) {}
    T* data() { return nullptr; }
    int64_t GetValidRow() const { return R; }
    int64_t GetValidCol() const { return C; }
    void SetValidShape(int64_t, int64_t) {}
};
template <int A, int B, int C, int D, int E> struct Shape {};
template <int A, int B, int C, int D, int E> struct Stride {};
template <typename T, typename Sh, typename St, Layout Lay = Layout::ND>
struct GlobalTensor {
    explicit GlobalTensor(T*) {}
    template <Dim A, Dim B> void SetShape(int64_t, int64_t) {}
    template <Dim A, Dim B> void SetStride(int64_t, int64_t) {}
};
}  // namespace pto

template <typename... A> inline void TASSIGN(A&&...) {}
template <typename... A> inline void TPRINT(A&&...) {}
#define PTO_CATCH_ALL(name) template <typename... T, typename... A> inline void name(A&&...) {}

// fixpipe stores mix type and value template arguments
template <typename TT, typename GT, pto::AtomicType A, pto::ReluPreMode R, typename... X>
inline void TSTORE(X&&...) {}
template <pto::STPhase P, typename TT, typename GT, pto::AtomicType A, pto::ReluPreMode R,
          typename... X>
inline void TSTORE(X&&...) {}
template <typename... X> inline void TSTORE(X&&...) {}
template <typename TT, typename GT, pto::AtomicType A, pto::ReluPreMode R, typename... X>
inline void TSTORE_FP(X&&...) {}
template <typename... X> inline void TSTORE_FP(X&&...) {}

template <typename T> struct RegTensor {};
struct MaskReg {};
using event_t = int;
struct PyptoDim3 { uint32_t x, y, z; };
extern PyptoDim3 threadIdx, blockDim, blockIdx, gridDim;
extern int warpSize;

namespace cce {
struct dim3 { uint32_t x, y, z; };
template <typename... A> inline void printf(A&&...) {}
template <auto F, typename... A> inline void async_invoke(dim3, A&&...) {}
}  // namespace cce
