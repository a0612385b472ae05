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
#define __ssbuf__
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
enum class Layout { ND, DN, NZ };
namespace GlobalTensorDim {
constexpr int DIM_0 = 0, DIM_1 = 1, DIM_2 = 2, DIM_3 = 3, DIM_4 = 4;
}
enum class CmpMode { EQ, NE, LT, GT, LE, GE };
enum class RoundMode { CAST_NONE, CAST_RINT, CAST_ROUND, CAST_FLOOR, CAST_CEIL, CAST_TRUNC, CAST_ODD };
enum class AccPhase { Unspecified, Partial, Final };
enum class STPhase { Unspecified, Partial, Final };
enum class AtomicType { AtomicNone, AtomicAdd };
enum class ReluPreMode { NoRelu, NormalRelu };
enum class AccToVecMode { SingleModeVec0, SingleModeVec1, DualModeSplitM, DualModeSplitN };
enum class SyncCoreType { AIVOnly, AICOnly, Mix };
enum class SyncAllMode { Hard, Soft };
enum class MaskPattern { P0101 = 1, P1010, P0001, P0010, P0100, P1000, P1111 };
enum class HistByte { BYTE_0, BYTE_1, BYTE_2, BYTE_3 };
enum class QuantType { MXFP8, MXFP4_E2M1, INT8_SYM, INT8_ASYM };
struct MrgSortExecutedNumList { uint16_t n[4]; };

template <TileType L, typename T, int R, int C, BLayout B = BLayout::RowMajor, int VR = R,
          int VC = C, SLayout S = SLayout::NoneBox, int F = 512, PadValue P = PadValue::Null,
          CompactMode M = CompactMode::Null>
struct Tile {
    using DType = T;
    Tile() {}
    template <typename... A> Tile(A...) {}
    T* data() { return nullptr; }
    unsigned GetValidRow() const { return R; }
    unsigned GetValidCol() const { return C; }
    void SetValidShape(unsigned, unsigned) {}
    void SetValidRow(unsigned) {}
    void SetValidCol(unsigned) {}
};
template <int64_t... N> struct Shape { template <typename... A> Shape(A...) {} };
template <int64_t... N> struct Stride { template <typename... A> Stride(A...) {} };
template <typename T, typename Sh, typename St, Layout Lay = Layout::ND>
struct GlobalTensor {
    using Shape = Sh;
    using Stride = St;
    GlobalTensor(T*, Sh = Sh(), St = St()) {}
    template <int... D, typename... A> void SetShape(A...) {}
    template <int... D, typename... A> void SetStride(A...) {}
};
}  // namespace pto

template <typename... A> inline void TASSIGN(A&&...) {}
template <typename... A> inline void TPRINT(A&&...) {}
#define PTO_CATCH_ALL(name) template <typename... T, typename... A> inline void name(A&&...) {}

// instructions with explicit template arguments: tile / global types first, then options
#define PTO_TEMPLATED(name)                                                                   \
    template <typename... X> inline void name(X&&...) {}                                      \
    template <typename A, typename B, typename... X> inline void name(X&&...) {}              \
    template <typename A, typename B, typename C, typename... X> inline void name(X&&...) {}  \
    template <typename A, typename B, auto O, typename... X> inline void name(X&&...) {}      \
    template <typename A, typename B, auto O, auto P, typename... X> inline void name(X&&...) {} \
    template <typename A, typename B, typename C, auto O, typename... X>                      \
    inline void name(X&&...) {}                                                               \
    template <typename A, typename B, typename C, auto O, auto P, typename... X>              \
    inline void name(X&&...) {}                                                               \
    template <auto Ph, typename A, typename B, typename... X> inline void name(X&&...) {}     \
    template <auto Ph, typename A, typename B, auto O, auto P, typename... X>                 \
    inline void name(X&&...) {}
PTO_TEMPLATED(TSTORE)
PTO_TEMPLATED(TSTORE_FP)
PTO_TEMPLATED(TMOV)
PTO_TEMPLATED(TMOV_FP)
PTO_TEMPLATED(TEXTRACT)
PTO_TEMPLATED(TINSERT)

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
