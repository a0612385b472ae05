// PyPTO Pro native backend: the Reg API (VF) registers and intrinsics, bit-identical to the
// simulator (`pypto_pro/sim/vf/`, whose module docstrings define every op).
//
// A `RegTensor<T>` is one 256-byte vector register (VL = 256 / sizeof(T) lanes), a `MaskReg`
// one predicate bit per byte (a lane of T is active when the bit of its first byte is set), an
// `AddrReg` a byte offset, an `UnalignReg` the 32-byte buffer of unaligned access. Arithmetic
// runs in float32 / int64 and rounds once into T, as the tile ops do; inactive lanes are zeroed
// (MODE_ZEROING) or keep the destination (MODE_MERGING). Reductions use the simulator's
// pairwise tree (lane i with lane i + n/2, halving). UB operands are `__ubuf__` pointers
// (`tile_ub + k`) and an element offset of the tile's type; a post-update form takes the
// operand's cursor by reference and advances it. The signatures are the real backend's where it
// has one; `vag_bK` takes (index, stride) pairs (the hardware binds the strides to its loops),
// the DataBlock forms their block and repeat strides as two arguments.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "vector.hpp"

// CCE constants of the Reg API (every member of the VF attribute enums, as the generator
// spells them: MaskPattern with PAT_, MergeMode with MODE_, the others bare), and the
// explicit-granularity distributions the generator resolves the generic ones to
constexpr int PAT_ALL = 0, PAT_ALLF = 1, PAT_VL1 = 2, PAT_VL2 = 3, PAT_VL3 = 4, PAT_VL4 = 5,
              PAT_VL8 = 6, PAT_VL16 = 7, PAT_VL32 = 8, PAT_VL64 = 9, PAT_VL128 = 10, PAT_M3 = 11,
              PAT_M4 = 12, PAT_H = 13, PAT_Q = 14;
constexpr int MODE_ZEROING = 0, MODE_MERGING = 1;
constexpr int SUM = 0, MAX = 1, MIN = 2;
constexpr int LOWEST = 0, HIGHEST = 1;
constexpr int ZERO = 0, ONE = 1, TWO = 2, THREE = 3;
constexpr int CAST_ROUND = 0, CAST_RINT = 1, CAST_FLOOR = 2, CAST_CEIL = 3, CAST_TRUNC = 4,
              CAST_ODD = 5, CAST_HYBRID = 6;
constexpr int OFF = 0, ON = 1;
constexpr int BIN0 = 0, BIN1 = 1;
constexpr int ACCUMULATE = 0, FREQUENCY = 1;
constexpr int STORE_REG = 0, NO_STORE_REG = 1;
constexpr int LOWER = 0, UPPER = 1;
constexpr int B32 = 0, B16 = 1;
constexpr int NORM = 0, BRC = 1, BRC_B8 = 2, BRC_B16 = 3, BRC_B32 = 4, US = 5, US_B8 = 6,
              US_B16 = 7, DS = 8, DS_B8 = 9, DS_B16 = 10, UNPK = 11, UNPK_B8 = 12, UNPK_B16 = 13,
              UNPK_B32 = 14, UNPK4 = 15, BLK = 16, E2B = 17, E2B_B16 = 18, E2B_B32 = 19,
              DINTLV_B8 = 20, DINTLV_B16 = 21, DINTLV_B32 = 22, UNPK4_B8 = 23;
constexpr int NORM_B8 = 100, NORM_B16 = 101, NORM_B32 = 102, NORM_B64 = 103, FIRST_ELEMENT = 104,
              PACK = 105, PACK4 = 106, INTLV = 107, INTLV_B32 = 108, INTLV_B8 = 109,
              INTLV_B16 = 110, ONEPT_B8 = 111, ONEPT_B16 = 112, ONEPT_B32 = 113, PK_B16 = 114,
              PK_B32 = 115, PK_B64 = 116, PK4_B32 = 117, PK = 118;
constexpr int DATA_BLOCK_LOAD = 1, DATA_BLOCK_COPY = 2;
constexpr int VST_VLD = 0, VLD_VST = 1, VST_VST = 2, VST_LD = 3, VST_ST = 4, VLD_ST = 5,
              ST_VLD = 6, ST_VST = 7, LD_VST = 8, VV_ALL = 9, VS_ALL = 10, SV_ALL = 11;
constexpr int INCREASE_ORDER = 0, DECREASE_ORDER = 1;
constexpr int POST_UPDATE = 1 << 20;  // a post-update access (NORM: the address stays)

constexpr int kVL = 256;

template <typename T>
struct RegTensor {
    static constexpr int lanes = kVL / static_cast<int>(sizeof(T));
    T v[lanes] = {};
};

struct MaskReg {
    uint8_t bits[kVL] = {};
    template <typename T>
    bool active(int lane) const { return bits[lane * sizeof(T)] != 0; }
};

struct AddrReg {
    int64_t bytes = 0;
};

struct UnalignReg {
    uint8_t data[32] = {};
    int n = 0;                  // bytes held (a load's block: 32; a store's pending bytes)
    int64_t addr = 0;           // the UB address of data[0]
};

namespace pypto_native {

//! FP4 registers hold 512 lanes, two per byte (even lane in the low nibble); one mask bit per
//! byte governs both
template <typename T>
constexpr bool vf_fp4 = std::is_same_v<T, float4_e2m1x2_t> || std::is_same_v<T, float4_e1m2x2_t>;
template <typename T>
constexpr int vf_lanes = vf_fp4<T> ? 2 * kVL : kVL / static_cast<int>(sizeof(T));
template <typename T>
constexpr int vf_bits = vf_fp4<T> ? 4 : 8 * static_cast<int>(sizeof(T));

inline MaskReg mask_pattern(int pattern, int elem)
{
    MaskReg m;
    const int lanes = kVL / elem;
    int n = lanes;
    switch (pattern) {
        case PAT_ALLF: n = 0; break;
        case PAT_VL1: n = 1; break;
        case PAT_VL2: n = 2; break;
        case PAT_VL3: n = 3; break;
        case PAT_VL4: n = 4; break;
        case PAT_VL8: n = 8; break;
        case PAT_VL16: n = 16; break;
        case PAT_VL32: n = 32; break;
        case PAT_VL64: n = 64; break;
        case PAT_VL128: n = 128; break;
        case PAT_H: n = lanes / 2; break;
        case PAT_Q: n = lanes / 4; break;
        default: break;
    }
    for (int i = 0; i < lanes; ++i) {
        bool on = i < n;
        if (pattern == PAT_M3) on = i % 3 == 0;
        if (pattern == PAT_M4) on = i % 4 == 0;
        if (on) std::memset(&m.bits[i * elem], 1, static_cast<size_t>(elem));
    }
    return m;
}

//! lane i of `elem`-byte lanes on: every byte of the lane set
inline void vf_set_lane(MaskReg& m, int lane, int elem, bool on)
{
    std::memset(&m.bits[lane * elem], on ? 1 : 0, static_cast<size_t>(elem));
}

template <typename T, typename F>
inline void vf_map(RegTensor<T>& dst, const MaskReg& mask, int mode, F f)
{
    for (int i = 0; i < RegTensor<T>::lanes; ++i) {
        if (mask.template active<T>(i)) {
            dst.v[i] = f(i);
        } else if (mode == MODE_ZEROING) {
            dst.v[i] = T{};
        }
    }
}

template <typename T>
inline T vf_round(CT<T> x)
{
    return encode<T>(x);
}

[[noreturn]] inline void vf_unsupported(const char* op, const char* what, int value)
{
    raise_fault(FaultKind::Trap, 0, "%s: %s: %s %d is not supported (see the simulator's "
                "pypto_pro/sim/vf docs)", where().c_str(), op, what, value);
}

//! the UB bytes behind a `__ubuf__` pointer, and its offset in UB (for 32-byte alignment)
template <typename P>
inline uint8_t* vf_addr(P* p)
{
    return ub_pointer(p);
}
inline int64_t vf_offset(const uint8_t* p)
{
    int64_t size = 0;
    return p - space_base(TileType::Vec, size);
}
inline uint8_t* vf_at(int64_t offset)
{
    int64_t size = 0;
    return space_base(TileType::Vec, size) + offset;
}

//! bytes of `count` elements of the tile type P counted in T elements (C division, as the
//! backend's `offset * tile_bits / reg_bits`)
template <typename T, typename P>
inline int64_t vf_scaled(int64_t count)
{
    return count * vf_bits<P> / vf_bits<T> * vf_bits<T> / 8;
}

template <typename P>
inline void vf_advance(P*& p, int64_t bytes)
{
    p = reinterpret_cast<P*>(reinterpret_cast<uint8_t*>(p) + bytes);
}

inline bool vf_block_on(const MaskReg& m, int j)
{
    for (int k = 0; k < 32; ++k) {
        if (m.bits[32 * j + k]) return true;
    }
    return false;
}

//! predicate bits ↔ the bytes a predicate store writes (bit i of byte i / 8)
inline void vf_pack_bits(const uint8_t* bits, int n, uint8_t* out)
{
    std::memset(out, 0, static_cast<size_t>(n / 8));
    for (int i = 0; i < n; ++i) {
        if (bits[i]) out[i / 8] = static_cast<uint8_t>(out[i / 8] | (1u << (i % 8)));
    }
}
inline void vf_unpack_bits(const uint8_t* in, int n, uint8_t* bits)
{
    for (int i = 0; i < n; ++i) bits[i] = (in[i / 8] >> (i % 8)) & 1u;
}

}  // namespace pypto_native

// ------------------------------------------------------------------ predicates

inline MaskReg pset_b8(int pattern = PAT_ALL) { return pypto_native::mask_pattern(pattern, 1); }
inline MaskReg pset_b16(int pattern = PAT_ALL) { return pypto_native::mask_pattern(pattern, 2); }
inline MaskReg pset_b32(int pattern = PAT_ALL) { return pypto_native::mask_pattern(pattern, 4); }
inline MaskReg pset_b64(int pattern = PAT_ALL) { return pypto_native::mask_pattern(pattern, 8); }

//! plt: the first n lanes, n read as a uint32 (as the generated code converts it)
inline MaskReg plt_n(int64_t count, int elem)
{
    MaskReg m;
    const int64_t n = std::min<int64_t>(static_cast<uint32_t>(count), kVL / elem);
    std::memset(m.bits, 1, static_cast<size_t>(n * elem));
    return m;
}
inline MaskReg plt_b8(int64_t count) { return plt_n(count, 1); }
inline MaskReg plt_b16(int64_t count) { return plt_n(count, 2); }
inline MaskReg plt_b32(int64_t count) { return plt_n(count, 4); }
inline MaskReg plt_b64(int64_t count) { return plt_n(count, 8); }

//! movp: the vector-mask SPR {MASK1, MASK0} bit i to lane i (b32: MASK0; b16: MASK0, MASK1)
inline MaskReg mask_from_spr(int elem)
{
    MaskReg m;
    const auto& spr = pypto_native::ctx().vector_mask;  // [0] high 64 lanes, [1] low 64 lanes
    for (int i = 0; i < kVL / elem; ++i) {
        const uint64_t word = i < 64 ? spr[1] : spr[0];
        pypto_native::vf_set_lane(m, i, elem, (word >> (i % 64)) & 1u);
    }
    return m;
}
inline MaskReg movp_b16() { return mask_from_spr(2); }
inline MaskReg movp_b32() { return mask_from_spr(4); }

//! movvp: lane i active where bit `offset` of src[i] is set (b16 / b32 lanes)
template <typename T>
inline void movvp(MaskReg& dst, const RegTensor<T>& src, int offset = 0)
{
    static_assert(sizeof(T) == 2 || sizeof(T) == 4, "movvp reads b16 / b32 lanes");
    using U = std::conditional_t<sizeof(T) == 2, uint16_t, uint32_t>;
    MaskReg out;
    for (int i = 0; i < RegTensor<T>::lanes; ++i) {
        U bits;
        std::memcpy(&bits, &src.v[i], sizeof(U));
        pypto_native::vf_set_lane(out, i, sizeof(T), (bits >> offset) & 1u);
    }
    dst = out;
}

//! the predicate forms of the unified ops (one bit per byte)
inline void pand(MaskReg& d, const MaskReg& a, const MaskReg& b, const MaskReg& p)
{
    for (int i = 0; i < kVL; ++i) d.bits[i] = a.bits[i] && b.bits[i] && p.bits[i];
}
inline void por(MaskReg& d, const MaskReg& a, const MaskReg& b, const MaskReg& p)
{
    for (int i = 0; i < kVL; ++i) d.bits[i] = (a.bits[i] || b.bits[i]) && p.bits[i];
}
inline void pxor(MaskReg& d, const MaskReg& a, const MaskReg& b, const MaskReg& p)
{
    for (int i = 0; i < kVL; ++i) d.bits[i] = ((a.bits[i] != 0) != (b.bits[i] != 0)) && p.bits[i];
}
inline void pnot(MaskReg& d, const MaskReg& a, const MaskReg& p)
{
    for (int i = 0; i < kVL; ++i) d.bits[i] = !a.bits[i] && p.bits[i];
}
inline void psel(MaskReg& d, const MaskReg& a, const MaskReg& b, const MaskReg& sel)
{
    MaskReg out;
    for (int i = 0; i < kVL; ++i) out.bits[i] = sel.bits[i] ? a.bits[i] : b.bits[i];
    d = out;
}
inline void pmov(MaskReg& d, const MaskReg& a) { d = a; }
inline void pmov(MaskReg& d, const MaskReg& a, const MaskReg& p)
{
    for (int i = 0; i < kVL; ++i) d.bits[i] = a.bits[i] && p.bits[i];
}
//! ppack: the even bits into the lower / upper half (the other half zero)
inline void ppack(MaskReg& d, const MaskReg& a, int part = LOWER)
{
    MaskReg out;
    for (int j = 0; j < kVL / 2; ++j) out.bits[part * kVL / 2 + j] = a.bits[2 * j];
    d = out;
}
//! punpack: each bit of the lower / upper half twice
inline void punpack(MaskReg& d, const MaskReg& a, int part = LOWER)
{
    MaskReg out;
    for (int j = 0; j < kVL / 2; ++j) {
        out.bits[2 * j] = out.bits[2 * j + 1] = a.bits[part * kVL / 2 + j];
    }
    d = out;
}

namespace pypto_native {
//! interleave / de-interleave the `w`-bit lanes of two predicates
inline void p_interleave(MaskReg& d0, MaskReg& d1, const MaskReg& a, const MaskReg& b, int w,
                         bool de)
{
    uint8_t both[2 * kVL];
    const int n = kVL / w;
    for (int i = 0; i < n; ++i) {
        if (de) {
            const MaskReg& src = (2 * i < n) ? a : b;
            const MaskReg& src1 = (2 * i + 1 < n) ? a : b;
            std::memcpy(both + i * w, &src.bits[(2 * i % n) * w], static_cast<size_t>(w));
            std::memcpy(both + kVL + i * w, &src1.bits[((2 * i + 1) % n) * w],
                        static_cast<size_t>(w));
        } else {
            std::memcpy(both + 2 * i * w, &a.bits[i * w], static_cast<size_t>(w));
            std::memcpy(both + (2 * i + 1) * w, &b.bits[i * w], static_cast<size_t>(w));
        }
    }
    std::memcpy(d0.bits, both, kVL);
    std::memcpy(d1.bits, both + kVL, kVL);
}
}  // namespace pypto_native

#define PYPTO_VF_PINTLV(BITS)                                                                \
    inline void pintlv_b##BITS(MaskReg& d0, MaskReg& d1, const MaskReg& a, const MaskReg& b) \
    {                                                                                        \
        pypto_native::p_interleave(d0, d1, a, b, BITS / 8, false);                           \
    }                                                                                        \
    inline void pdintlv_b##BITS(MaskReg& d0, MaskReg& d1, const MaskReg& a, const MaskReg& b) \
    {                                                                                        \
        pypto_native::p_interleave(d0, d1, a, b, BITS / 8, true);                            \
    }
PYPTO_VF_PINTLV(8)
PYPTO_VF_PINTLV(16)
PYPTO_VF_PINTLV(32)

// ------------------------------------------------------------------ aligned loads

namespace pypto_native {

//! the 256 bytes a one-register distribution loads from `p`
inline void vf_distribute(uint8_t* out, const uint8_t* p, int dist)
{
    auto unpk = [&](int k, int zeros) {
        std::memset(out, 0, kVL);
        for (int i = 0; i < kVL / (k * (1 + zeros)); ++i) std::memcpy(out + i * k * (1 + zeros), p + i * k, k);
    };
    switch (dist) {
        case NORM: std::memcpy(out, p, kVL); return;
        case BLK: for (int j = 0; j < 8; ++j) std::memcpy(out + 32 * j, p, 32); return;
        case UNPK4_B8: unpk(1, 3); return;
        case UNPK_B8: unpk(1, 1); return;
        case UNPK_B16: unpk(2, 1); return;
        case UNPK_B32: unpk(4, 1); return;
        default: break;
    }
    const int k = (dist == BRC_B8 || dist == US_B8 || dist == DS_B8) ? 1 :
                  (dist == BRC_B32 || dist == E2B_B32) ? 4 : 2;
    switch (dist) {
        case BRC_B8: case BRC_B16: case BRC_B32:
            for (int i = 0; i < kVL / k; ++i) std::memcpy(out + i * k, p, k);
            return;
        case US_B8: case US_B16:
            for (int i = 0; i < kVL / k; ++i) std::memcpy(out + i * k, p + (i / 2) * k, k);
            return;
        case DS_B8: case DS_B16:
            for (int i = 0; i < kVL / k; ++i) std::memcpy(out + i * k, p + 2 * i * k, k);
            return;
        case E2B_B16: case E2B_B32:
            for (int i = 0; i < kVL / k; ++i) std::memcpy(out + i * k, p + (i / (32 / k)) * k, k);
            return;
        default: vf_unsupported("vlds", "the distribution", dist);
    }
}

template <typename T>
inline void vf_load(RegTensor<T>& dst, const uint8_t* p, int dist)
{
    uint8_t buf[kVL];
    vf_distribute(buf, p, dist);
    std::memcpy(dst.v, buf, kVL);
}

//! a predicate from UB: NORM 32 bytes, US 16 bytes (each bit twice), DS 64 (every other bit)
inline void vf_load_mask(MaskReg& dst, const uint8_t* p, int dist)
{
    uint8_t bits[2 * kVL];
    if (dist == US) {
        vf_unpack_bits(p, kVL / 2, bits);
        for (int i = 0; i < kVL; ++i) dst.bits[i] = bits[i / 2];
    } else if (dist == DS) {
        vf_unpack_bits(p, 2 * kVL, bits);
        for (int i = 0; i < kVL; ++i) dst.bits[i] = bits[2 * i];
    } else {
        vf_unpack_bits(p, kVL, dst.bits);
    }
}

}  // namespace pypto_native

template <typename T, typename P>
inline void vlds(RegTensor<T>& dst, P* src, int64_t offset, int dist)
{
    using namespace pypto_native;
    vf_load(dst, vf_addr(src) + vf_scaled<T, P>(offset), dist);
}
template <typename T, typename P>
inline void vlds(RegTensor<T>& dst, P*& cursor, int64_t offset, int dist, int)
{
    using namespace pypto_native;
    vf_load(dst, vf_addr(cursor), dist);
    vf_advance(cursor, vf_scaled<T, P>(offset));
}
//! DINTLV: the even and odd k-bit elements of 2 VL bytes
template <typename T, typename P>
inline void vlds(RegTensor<T>& even, RegTensor<T>& odd, P* src, int64_t offset, int dist)
{
    using namespace pypto_native;
    const uint8_t* p = vf_addr(src) + vf_scaled<T, P>(offset);
    const int k = dist == DINTLV_B8 ? 1 : dist == DINTLV_B16 ? 2 : 4;
    uint8_t* e = reinterpret_cast<uint8_t*>(even.v);
    uint8_t* o = reinterpret_cast<uint8_t*>(odd.v);
    for (int i = 0; i < kVL / k; ++i) {
        std::memcpy(e + i * k, p + 2 * i * k, k);
        std::memcpy(o + i * k, p + (2 * i + 1) * k, k);
    }
}
template <typename T, typename P>
inline void vld(RegTensor<T>& dst, P* src, const AddrReg& a, int dist)
{
    pypto_native::vf_load(dst, pypto_native::vf_addr(src) + a.bytes, dist);
}

namespace pypto_native {
template <typename T>
inline void vf_blocks(RegTensor<T>& dst, const uint8_t* p, int64_t block_stride, const MaskReg& m)
{
    uint8_t* out = reinterpret_cast<uint8_t*>(dst.v);
    for (int j = 0; j < 8; ++j) {
        if (vf_block_on(m, j)) {
            std::memcpy(out + 32 * j, p + j * block_stride * 32, 32);
        } else {
            std::memset(out + 32 * j, 0, 32);
        }
    }
}
}  // namespace pypto_native

//! vsldb: eight 32-byte blocks `block_stride` blocks apart where the predicate is set
template <typename T, typename P>
inline void vsldb(RegTensor<T>& dst, P* src, int64_t block_stride, int64_t, const MaskReg& m)
{
    pypto_native::vf_blocks(dst, pypto_native::vf_addr(src), block_stride, m);
}
template <typename T, typename P>
inline void vsldb(RegTensor<T>& dst, P*& cursor, int64_t block_stride, int64_t repeat_stride,
                  const MaskReg& m, int)
{
    pypto_native::vf_blocks(dst, pypto_native::vf_addr(cursor), block_stride, m);
    pypto_native::vf_advance(cursor, repeat_stride * 32);
}

//! plds / pld: a predicate from UB (an integer offset counts 32-bit words)
template <typename P>
inline void plds(MaskReg& dst, P* src, int64_t offset, int dist)
{
    pypto_native::vf_load_mask(dst, pypto_native::vf_addr(src) + 4 * offset, dist);
}
template <typename P>
inline void plds(MaskReg& dst, P*& cursor, int64_t offset, int dist, int)
{
    pypto_native::vf_load_mask(dst, pypto_native::vf_addr(cursor), dist);
    pypto_native::vf_advance(cursor, 4 * offset);
}
template <typename P>
inline void pld(MaskReg& dst, P* src, const AddrReg& a, int dist)
{
    pypto_native::vf_load_mask(dst, pypto_native::vf_addr(src) + a.bytes, dist);
}

// ------------------------------------------------------------------ aligned stores

namespace pypto_native {
//! the active `k`-byte lanes of `in` (keeping `keep` bytes each) to `p`
inline void vf_put(uint8_t* p, const uint8_t* in, int k, int keep, const MaskReg* m)
{
    for (int i = 0; i < kVL / k; ++i) {
        if (m == nullptr || m->bits[i * k]) std::memcpy(p + i * keep, in + i * k, keep);
    }
}

template <typename T>
inline void vf_store(const RegTensor<T>& src, uint8_t* p, int dist, const MaskReg& m)
{
    const uint8_t* in = reinterpret_cast<const uint8_t*>(src.v);
    switch (dist) {
        case NORM_B8: vf_put(p, in, 1, 1, &m); return;
        case NORM_B16: vf_put(p, in, 2, 2, &m); return;
        case NORM_B32: vf_put(p, in, 4, 4, &m); return;
        case NORM_B64: vf_put(p, in, 8, 8, &m); return;
        case ONEPT_B8: std::memcpy(p, in, 1); return;
        case ONEPT_B16: std::memcpy(p, in, 2); return;
        case ONEPT_B32: std::memcpy(p, in, 4); return;
        case PK_B16: vf_put(p, in, 2, 1, &m); return;
        case PK_B32: vf_put(p, in, 4, 2, &m); return;
        case PK_B64: vf_put(p, in, 8, 4, &m); return;
        case PK4_B32: vf_put(p, in, 4, 1, &m); return;
        default: vf_unsupported("vsts", "the distribution", dist);
    }
}
}  // namespace pypto_native

template <typename T, typename P>
inline void vsts(const RegTensor<T>& src, P* dst, int64_t offset, int dist, const MaskReg& m)
{
    using namespace pypto_native;
    vf_store(src, vf_addr(dst) + vf_scaled<T, P>(offset), dist, m);
}
template <typename T, typename P>
inline void vsts(const RegTensor<T>& src, P*& cursor, int64_t offset, int dist, const MaskReg& m,
                 int)
{
    using namespace pypto_native;
    vf_store(src, vf_addr(cursor), dist, m);
    vf_advance(cursor, vf_scaled<T, P>(offset));
}
//! INTLV: two registers' k-byte elements alternating (lane i of both where lane i is active)
template <typename T, typename P>
inline void vsts(const RegTensor<T>& a, const RegTensor<T>& b, P* dst, int64_t, int dist,
                 const MaskReg& m)
{
    uint8_t* p = pypto_native::vf_addr(dst);
    const int k = dist == INTLV_B8 ? 1 : dist == INTLV_B16 ? 2 : 4;
    const uint8_t* x = reinterpret_cast<const uint8_t*>(a.v);
    const uint8_t* y = reinterpret_cast<const uint8_t*>(b.v);
    for (int i = 0; i < kVL / k; ++i) {
        if (!m.bits[i * k]) continue;
        std::memcpy(p + 2 * i * k, x + i * k, k);
        std::memcpy(p + (2 * i + 1) * k, y + i * k, k);
    }
}
template <typename T, typename P>
inline void vst(const RegTensor<T>& src, P* dst, const AddrReg& a, int dist, const MaskReg& m)
{
    pypto_native::vf_store(src, pypto_native::vf_addr(dst) + a.bytes, dist, m);
}

namespace pypto_native {
template <typename T>
inline void vf_put_blocks(const RegTensor<T>& src, uint8_t* p, int64_t block_stride,
                          const MaskReg& m)
{
    const uint8_t* in = reinterpret_cast<const uint8_t*>(src.v);
    for (int j = 0; j < 8; ++j) {
        if (vf_block_on(m, j)) std::memcpy(p + j * block_stride * 32, in + 32 * j, 32);
    }
}
}  // namespace pypto_native

//! vsstb: block j at `j * block_stride` blocks where the predicate is set
template <typename T, typename P>
inline void vsstb(const RegTensor<T>& src, P* dst, int64_t block_stride, int64_t,
                  const MaskReg& m)
{
    pypto_native::vf_put_blocks(src, pypto_native::vf_addr(dst), block_stride, m);
}
template <typename T, typename P>
inline void vsstb(const RegTensor<T>& src, P*& cursor, int64_t block_stride,
                  int64_t repeat_stride, const MaskReg& m, int)
{
    pypto_native::vf_put_blocks(src, pypto_native::vf_addr(cursor), block_stride, m);
    pypto_native::vf_advance(cursor, repeat_stride * 32);
}

namespace pypto_native {
inline void vf_store_mask(const MaskReg& m, uint8_t* p, int dist)
{
    if (dist == PK) {
        uint8_t even[kVL / 2];
        for (int i = 0; i < kVL / 2; ++i) even[i] = m.bits[2 * i];
        vf_pack_bits(even, kVL / 2, p);
    } else {
        vf_pack_bits(m.bits, kVL, p);
    }
}
}  // namespace pypto_native

//! psts / pst: a predicate's bits (NORM 32 bytes, PK every other bit: 16)
template <typename P>
inline void psts(const MaskReg& m, P* dst, int64_t, int dist)
{
    pypto_native::vf_store_mask(m, pypto_native::vf_addr(dst), dist);
}
template <typename P>
inline void psts(const MaskReg& m, P*& cursor, int64_t offset, int dist, int)
{
    pypto_native::vf_store_mask(m, pypto_native::vf_addr(cursor), dist);
    pypto_native::vf_advance(cursor, 4 * offset);
}
template <typename P>
inline void pst(const MaskReg& m, P* dst, const AddrReg& a, int dist)
{
    pypto_native::vf_store_mask(m, pypto_native::vf_addr(dst) + a.bytes, dist);
}

// ------------------------------------------------------------------ unaligned loads / stores

namespace pypto_native {
inline void vf_prime(UnalignReg& u, const uint8_t* p)
{
    const int64_t off = vf_offset(p);
    u.addr = off - off % 32;
    std::memcpy(u.data, vf_at(u.addr), 32);
    u.n = 32;
}

//! VL bytes at `p`: the align register's bytes from p mod 32 on, then UB; keeps the block
//! holding p + VL
template <typename T>
inline void vf_read_through(RegTensor<T>& dst, UnalignReg& u, const uint8_t* p)
{
    const int k = static_cast<int>(vf_offset(p) % 32);
    uint8_t* out = reinterpret_cast<uint8_t*>(dst.v);
    if (u.n == 32) {
        std::memcpy(out, u.data + k, static_cast<size_t>(32 - k));
    } else {
        std::memcpy(out, p, static_cast<size_t>(32 - k));
    }
    std::memcpy(out + 32 - k, p + 32 - k, static_cast<size_t>(kVL - 32 + k));
    vf_prime(u, p + kVL);
}

template <typename T>
constexpr int64_t vf_elem_bytes = vf_bits<T> < 8 ? 1 : sizeof(T);

inline void vf_flush(UnalignReg& u)
{
    if (u.n) std::memcpy(vf_at(u.addr), u.data, static_cast<size_t>(u.n));
    u.n = 0;
}

//! stage `n` bytes for UB offset `at`: everything up to the last 32-byte boundary is written,
//! the rest stays in the register
inline void vf_append(UnalignReg& u, int64_t at, const uint8_t* raw, int64_t n)
{
    uint8_t buf[32 + kVL];
    int64_t start = at, len = 0;
    if (u.n && u.addr + u.n == at) {
        std::memcpy(buf, u.data, static_cast<size_t>(u.n));
        len = u.n;
        start = u.addr;
    } else {
        vf_flush(u);
    }
    std::memcpy(buf + len, raw, static_cast<size_t>(n));
    len += n;
    const int64_t end = start + len;
    const int64_t cut = std::max(start, end - end % 32) - start;
    if (cut) std::memcpy(vf_at(start), buf, static_cast<size_t>(cut));
    u.n = static_cast<int>(len - cut);
    u.addr = start + cut;
    std::memcpy(u.data, buf + cut, static_cast<size_t>(u.n));
}
}  // namespace pypto_native

template <typename P>
inline void vldas(UnalignReg& u, P* src)
{
    pypto_native::vf_prime(u, pypto_native::vf_addr(src));
}
template <typename T, typename P>
inline void vldus(RegTensor<T>& dst, UnalignReg& u, P* src)
{
    pypto_native::vf_read_through(dst, u, pypto_native::vf_addr(src));
}
template <typename T, typename P>
inline void vldus(RegTensor<T>& dst, UnalignReg& u, P*& cursor, int64_t stride, int)
{
    using namespace pypto_native;
    const uint8_t* p = vf_addr(cursor);
    vf_advance(cursor, stride * vf_elem_bytes<T>);
    vf_read_through(dst, u, p);
}

//! vstus: `count` elements at the cursor (POST_UPDATE: the cursor moves on by them)
template <typename T, typename P>
inline void vstus(UnalignReg& u, int64_t count, const RegTensor<T>& src, P*& cursor, int mode)
{
    using namespace pypto_native;
    const int64_t n = count * vf_elem_bytes<T>;
    if (n < 0 || n > kVL) {
        raise_fault(FaultKind::Trap, 0, "%s: vstus stores at most one register, not %lld bytes",
                    where().c_str(), static_cast<long long>(n));
    }
    vf_append(u, vf_offset(vf_addr(cursor)), reinterpret_cast<const uint8_t*>(src.v), n);
    if (mode == POST_UPDATE) vf_advance(cursor, n);
}
//! vstur: the AR special register's byte count (what a squeeze left there)
template <typename T, typename P>
inline void vstur(UnalignReg& u, const RegTensor<T>& src, P*& cursor, int)
{
    using namespace pypto_native;
    const int64_t n = ctx().ar;
    if (n < 0 || n > kVL) {
        raise_fault(FaultKind::Trap, 0, "%s: vstur stores at most one register, not %lld bytes",
                    where().c_str(), static_cast<long long>(n));
    }
    vf_append(u, vf_offset(vf_addr(cursor)), reinterpret_cast<const uint8_t*>(src.v), n);
    vf_advance(cursor, n);
}
//! pstu: a predicate's lane bits packed (one per b16 / b32 lane)
template <typename P>
inline void pstu_n(UnalignReg& u, const MaskReg& m, P*& cursor, int width)
{
    using namespace pypto_native;
    uint8_t lanes[kVL], packed[kVL / 8];
    const int n = kVL / width;
    for (int i = 0; i < n; ++i) lanes[i] = m.bits[i * width];
    vf_pack_bits(lanes, n, packed);
    vf_append(u, vf_offset(vf_addr(cursor)), packed, n / 8);
    vf_advance(cursor, n / 8);
}
template <typename P>
inline void pstu_b16(UnalignReg& u, const MaskReg& m, P*& cursor) { pstu_n(u, m, cursor, 2); }
template <typename P>
inline void pstu_b32(UnalignReg& u, const MaskReg& m, P*& cursor) { pstu_n(u, m, cursor, 4); }

//! vstas / vstar: write what the register still holds
template <typename P>
inline void vstas(UnalignReg& u, P*& cursor, int64_t stride, int mode)
{
    pypto_native::vf_flush(u);
    if (mode == POST_UPDATE) pypto_native::vf_advance(cursor, stride * static_cast<int64_t>(sizeof(P)));
}
template <typename P>
inline void vstar(UnalignReg& u, P*&)
{
    pypto_native::vf_flush(u);
}

// ------------------------------------------------------------------ gather / scatter / AddrReg

//! vgather2: one slot per index lane, as wide as the index (b8 data zero-extended)
template <typename T, typename P, typename I>
inline void vgather2(RegTensor<T>& dst, P* src, const RegTensor<I>& index, const MaskReg& m)
{
    const uint8_t* base = pypto_native::vf_addr(src);
    constexpr int size = static_cast<int>(sizeof(P));
    constexpr int slot = size > static_cast<int>(sizeof(I)) ? size : static_cast<int>(sizeof(I));
    uint8_t out[kVL] = {};
    for (int k = 0; k < kVL / slot; ++k) {
        if (m.bits[k * slot]) {
            std::memcpy(out + k * slot, base + static_cast<int64_t>(index.v[k]) * size, size);
        }
    }
    std::memcpy(dst.v, out, kVL);
}
//! vgatherb: 32-byte blocks at the byte offsets of index lanes 0..7
template <typename T, typename P, typename I>
inline void vgatherb(RegTensor<T>& dst, P* src, const RegTensor<I>& index, const MaskReg& m)
{
    const uint8_t* base = pypto_native::vf_addr(src);
    uint8_t out[kVL] = {};
    for (int j = 0; j < 8; ++j) {
        if (pypto_native::vf_block_on(m, j)) {
            std::memcpy(out + 32 * j, base + static_cast<int64_t>(index.v[j]), 32);
        }
    }
    std::memcpy(dst.v, out, kVL);
}
//! vselr: lane i = src[index[i] mod lanes]
template <typename T, typename I>
inline void vselr(RegTensor<T>& dst, const RegTensor<T>& src, const RegTensor<I>& index)
{
    static_assert(sizeof(T) == sizeof(I), "vselr needs an index as wide as the source");
    RegTensor<T> out;
    constexpr int n = RegTensor<T>::lanes;
    for (int i = 0; i < n; ++i) {
        const int64_t k = pypto_native::Elem<I>::load(index.v[i]);
        out.v[i] = src.v[((k % n) + n) % n];
    }
    dst = out;
}

//! vscatter: src[i] (b8: src[2i]) to dst[index[i]] on active lanes (later lanes win)
template <typename T, typename P, typename I>
inline void vscatter(const RegTensor<T>& src, P* dst, const RegTensor<I>& index,
                     const MaskReg& m)
{
    uint8_t* base = pypto_native::vf_addr(dst);
    constexpr int size = static_cast<int>(sizeof(T)), step = size == 1 ? 2 : 1;
    const uint8_t* in = reinterpret_cast<const uint8_t*>(src.v);
    const int n = std::min(RegTensor<I>::lanes, RegTensor<T>::lanes / step);
    for (int k = 0; k < n; ++k) {
        if (m.bits[k * size * step]) {
            std::memcpy(base + static_cast<int64_t>(index.v[k]) * size, in + k * step * size, size);
        }
    }
}

//! vag_bK(index0, stride0, ...): the byte offset Σ index · stride · K / 8
namespace pypto_native {
inline int64_t vf_dot() { return 0; }
template <typename I, typename S, typename... R>
inline int64_t vf_dot(I index, S stride, R... rest)
{
    return static_cast<int64_t>(index) * static_cast<int64_t>(stride) + vf_dot(rest...);
}
}  // namespace pypto_native
template <typename... A>
inline AddrReg vag_b8(A... pairs) { return {pypto_native::vf_dot(pairs...)}; }
template <typename... A>
inline AddrReg vag_b16(A... pairs) { return {2 * pypto_native::vf_dot(pairs...)}; }
template <typename... A>
inline AddrReg vag_b32(A... pairs) { return {4 * pypto_native::vf_dot(pairs...)}; }

#define PYPTO_VF_BIN(NAME, EXPR)                                                            \
    template <typename T>                                                                   \
    inline void NAME(RegTensor<T>& dst, const RegTensor<T>& a, const RegTensor<T>& b,       \
                     const MaskReg& mask, int mode = MODE_ZEROING)                          \
    {                                                                                       \
        using namespace pypto_native;                                                       \
        vf_map(dst, mask, mode, [&](int i) {                                                \
            const CT<T> x = Elem<T>::load(a.v[i]), y = Elem<T>::load(b.v[i]);               \
            (void)x, (void)y;                                                               \
            return vf_round<T>(EXPR);                                                       \
        });                                                                                 \
    }
#define PYPTO_VF_BINS(NAME, EXPR)                                                           \
    template <typename T, typename S>                                                       \
    inline void NAME(RegTensor<T>& dst, const RegTensor<T>& a, S s, const MaskReg& mask,    \
                     int mode = MODE_ZEROING)                                               \
    {                                                                                       \
        using namespace pypto_native;                                                       \
        const CT<T> y = scalar_in<T>(s);                                                    \
        vf_map(dst, mask, mode, [&](int i) {                                                \
            const CT<T> x = Elem<T>::load(a.v[i]);                                          \
            return vf_round<T>(EXPR);                                                       \
        });                                                                                 \
    }
#define PYPTO_VF_UN(NAME, EXPR)                                                             \
    template <typename T>                                                                   \
    inline void NAME(RegTensor<T>& dst, const RegTensor<T>& a, const MaskReg& mask,         \
                     int mode = MODE_ZEROING)                                               \
    {                                                                                       \
        using namespace pypto_native;                                                       \
        vf_map(dst, mask, mode, [&](int i) {                                                \
            const CT<T> x = Elem<T>::load(a.v[i]);                                          \
            return vf_round<T>(EXPR);                                                       \
        });                                                                                 \
    }

namespace pypto_native {
template <typename C>
inline C vf_exp(C x)
{
    if constexpr (std::is_floating_point_v<C>) {
        float in = static_cast<float>(x), out = 0;
        vexp(&in, &out, 1);
        return out;
    } else {
        return x;
    }
}
template <typename C>
inline C vf_ln(C x)
{
    if constexpr (std::is_floating_point_v<C>) {
        float in = static_cast<float>(x), out = 0;
        vln(&in, &out, 1);
        return out;
    } else {
        return x;
    }
}
template <typename C>
inline C vf_sqrt(C x)
{
    if constexpr (std::is_floating_point_v<C>) {
        float in = static_cast<float>(x), out = 0;
        vsqrt(&in, &out, 1);
        return out;
    } else {
        return x;
    }
}
}  // namespace pypto_native

namespace pypto_native {
template <typename C>
inline C vf_trunc(C x)
{
    if constexpr (std::is_floating_point_v<C>) {
        return std::trunc(x);
    } else {
        return x;
    }
}
template <typename C>
inline C vf_int(C x, C y, int op)
{
    if constexpr (std::is_integral_v<C>) {
        if (op == 3) return (y >= 0 && y < 64) ? static_cast<C>(static_cast<uint64_t>(x) << y) : 0;
        return x >> std::min<C>(std::max<C>(y, 0), 63);
    } else {
        raise_fault(FaultKind::Trap, 0, "%s: VF shifts need integer registers",
                    where().c_str());
    }
}
}  // namespace pypto_native

namespace pypto_native {
//! vmax / vmin: -0 below +0 (max(-0, +0) = +0, min = -0, the docs' max / min pages), NaN in →
//! the canonical NaN out (the simulator's ops_arith._extreme)
template <typename C>
inline C vf_extreme(C a, C b, bool pick_max)
{
    if constexpr (std::is_floating_point_v<C>) {
        if (a != a || b != b) return NAN;
        if (a == 0 && b == 0) {
            const bool neg = pick_max ? std::signbit(a) && std::signbit(b)
                                      : std::signbit(a) || std::signbit(b);
            return neg ? C(-0.0) : C(0.0);
        }
    }
    return (pick_max ? a > b : a < b) ? a : b;
}

//! |x|: a float's sign bit cleared (abs(-0) = +0, as the simulator's torch.abs gives)
template <typename C>
inline C vf_abs(C x)
{
    if constexpr (std::is_floating_point_v<C>) {
        return std::fabs(x);
    } else {
        return x < 0 ? -x : x;
    }
}

//! `v` (round-to-nearest) one step towards its exact value `v + rest` when inexact and even:
//! rounding to odd, so a later single rounding into a narrower type stays correct
template <typename F>
inline F vf_round_to_odd(F v, double rest)
{
    using I = std::conditional_t<sizeof(F) == 8, uint64_t, uint32_t>;
    I raw;
    std::memcpy(&raw, &v, sizeof(F));
    if (rest == 0 || !std::isfinite(v) || (raw & 1) != 0 || rest != rest) return v;
    return std::nextafter(v, rest > 0 ? F(INFINITY) : F(-INFINITY));
}

//! x * y + c rounded once into T (vmula / vmadd: the docs' fused multiply-add); integers wrap.
//! The product is exact in double, TwoSum gives the sum's error, and rounding to odd at double
//! (FP32 results) or float (16-bit results) leaves vf_round the only rounding; the simulator
//! computes the same (ops_arith.fused).
template <typename T>
inline CT<T> vf_fma(CT<T> x, CT<T> y, CT<T> c)
{
    if constexpr (std::is_integral_v<CT<T>>) {
        return x * y + c;
    } else {
        const double p = static_cast<double>(x) * static_cast<double>(y);
        const double cd = static_cast<double>(c);
        const double s = p + cd;
        const double bb = s - p;
        const double err = (p - (s - bb)) + (cd - bb);
        if constexpr (sizeof(T) == 4) {
            return static_cast<float>(vf_round_to_odd(s, err));
        } else {
            const float f = static_cast<float>(s);
            const double rest = s - static_cast<double>(f);
            return vf_round_to_odd(f, rest != 0 ? rest : err);
        }
    }
}
}  // namespace pypto_native

PYPTO_VF_BIN(vadd, x + y)
PYPTO_VF_BIN(vsub, x - y)
PYPTO_VF_BIN(vmul, x * y)
PYPTO_VF_BIN(vdiv, op_div(x, y))
PYPTO_VF_BIN(vmax, vf_extreme(x, y, true))
PYPTO_VF_BIN(vmin, vf_extreme(x, y, false))
PYPTO_VF_BIN(vabsdif, (x > y ? x - y : y - x))
PYPTO_VF_BINS(vadds, x + y)
PYPTO_VF_BINS(vsubs, x - y)
PYPTO_VF_BINS(vmuls, x * y)
PYPTO_VF_BINS(vmaxs, vf_extreme(x, y, true))
PYPTO_VF_BINS(vmins, vf_extreme(x, y, false))
PYPTO_VF_BINS(vlrelu, (x < 0 ? x * y : x))
PYPTO_VF_BINS(vshl, vf_int(x, y, 3))
PYPTO_VF_BINS(vshr, vf_int(x, y, 4))
PYPTO_VF_BINS(vaxpy, y * x + Elem<T>::load(dst.v[i]))
PYPTO_VF_BIN(vprelu, (x < 0 ? x * y : x))
PYPTO_VF_BIN(vmula, vf_fma<T>(x, y, Elem<T>::load(dst.v[i])))
PYPTO_VF_BIN(vmadd, vf_fma<T>(x, Elem<T>::load(dst.v[i]), y))
PYPTO_VF_UN(vabs, vf_abs(x))
PYPTO_VF_UN(vlog2, vf_ln(x) / CT<T>(0.6931471805599453))
PYPTO_VF_UN(vlog10, vf_ln(x) / CT<T>(2.302585092994046))
PYPTO_VF_UN(vtrc, vf_trunc(x))
PYPTO_VF_UN(vneg, -x)
PYPTO_VF_UN(vrelu, op_relu(x))
PYPTO_VF_UN(vexp, vf_exp(x))
PYPTO_VF_UN(vln, vf_ln(x))
PYPTO_VF_UN(vsqrt, vf_sqrt(x))

// ------------------------------------------------------------------ bitwise, shifts

namespace pypto_native {
//! the lanes' bits as the unsigned integer of their width (float registers included)
template <typename T>
using vf_uint = std::conditional_t<sizeof(T) == 1, uint8_t,
                std::conditional_t<sizeof(T) == 2, uint16_t, uint32_t>>;

template <typename T, typename F>
inline void vf_bitwise(RegTensor<T>& dst, const RegTensor<T>& a, const RegTensor<T>& b,
                       const MaskReg& m, F f)
{
    using U = vf_uint<T>;
    static_assert(sizeof(T) <= 4, "VF bitwise ops work on b8 / b16 / b32 lanes");
    for (int i = 0; i < RegTensor<T>::lanes; ++i) {
        U x, y, r = 0;
        std::memcpy(&x, &a.v[i], sizeof(U));
        std::memcpy(&y, &b.v[i], sizeof(U));
        if (m.template active<T>(i)) r = static_cast<U>(f(x, y));
        std::memcpy(&dst.v[i], &r, sizeof(U));
    }
}
}  // namespace pypto_native

template <typename T>
inline void vand(RegTensor<T>& d, const RegTensor<T>& a, const RegTensor<T>& b, const MaskReg& m,
                 int = MODE_ZEROING)
{
    pypto_native::vf_bitwise(d, a, b, m, [](auto x, auto y) { return x & y; });
}
template <typename T>
inline void vor(RegTensor<T>& d, const RegTensor<T>& a, const RegTensor<T>& b, const MaskReg& m,
                int = MODE_ZEROING)
{
    pypto_native::vf_bitwise(d, a, b, m, [](auto x, auto y) { return x | y; });
}
template <typename T>
inline void vxor(RegTensor<T>& d, const RegTensor<T>& a, const RegTensor<T>& b, const MaskReg& m,
                 int = MODE_ZEROING)
{
    pypto_native::vf_bitwise(d, a, b, m, [](auto x, auto y) { return x ^ y; });
}
template <typename T>
inline void vnot(RegTensor<T>& d, const RegTensor<T>& a, const MaskReg& m, int = MODE_ZEROING)
{
    pypto_native::vf_bitwise(d, a, a, m, [](auto x, auto) { return ~x; });
}

//! per-lane shift amounts (`vshl` / `vshr` with a register)
PYPTO_VF_BIN(vshl, vf_int(x, y, 3))
PYPTO_VF_BIN(vshr, vf_int(x, y, 4))

// ------------------------------------------------------------------ broadcasts

//! vdup / vbr: a scalar in every active lane (vbr: every lane)
template <typename T, typename S>
inline void vdup(RegTensor<T>& dst, S value, const MaskReg& mask, int mode = MODE_ZEROING)
{
    using namespace pypto_native;
    const T v = vf_round<T>(scalar_in<T>(value));
    vf_map(dst, mask, mode, [&](int) { return v; });
}
template <typename T, typename S>
inline void vbr(RegTensor<T>& dst, S value)
{
    vdup(dst, value, pset_b8(PAT_ALL), MODE_ZEROING);
}

//! vdup of a register: its lowest / highest lane in every active lane
template <typename T>
inline void vdup(RegTensor<T>& dst, const RegTensor<T>& src, const MaskReg& mask, int pos,
                 int mode)
{
    using namespace pypto_native;
    const T v = pos == LOWEST ? src.v[0] : src.v[RegTensor<T>::lanes - 1];
    vf_map(dst, mask, mode, [&](int) { return v; });
}

namespace pypto_native {

//! the simulator's pairwise tree over `n` values (v[i] op v[i + n/2], halving)
template <typename C, typename F>
inline C vf_tree(C* v, int n, F op)
{
    for (; n > 1; n /= 2) {
        for (int i = 0; i < n / 2; ++i) v[i] = op(v[i], v[i + n / 2]);
    }
    return v[0];
}

template <typename T, typename F>
inline void vf_reduce(RegTensor<T>& dst, const RegTensor<T>& src, const MaskReg& mask,
                      bool datablock, int mode, int kind, F op)
{
    using C = CT<T>;
    constexpr int lanes = RegTensor<T>::lanes;
    const int groups = datablock ? 8 : 1, n = lanes / groups;
    C filler = C(0);
    if (kind != SUM) {
        if constexpr (std::is_floating_point_v<C>) {
            filler = kind == MAX ? -INFINITY : INFINITY;
        } else {
            filler = kind == MAX ? std::numeric_limits<int64_t>::min()
                                 : std::numeric_limits<int64_t>::max();
        }
    }
    C out[8];
    C first[kVL];  // the lanes' values, for the index of a vcmax / vcmin
    for (int g = 0; g < groups; ++g) {
        C v[kVL];
        bool any = false;
        for (int i = 0; i < n; ++i) {
            const int lane = g * n + i;
            const bool on = mask.template active<T>(lane);
            any = any || on;
            v[i] = on ? Elem<T>::load(src.v[lane]) : filler;
            first[lane] = Elem<T>::load(src.v[lane]);
        }
        out[g] = vf_tree(v, n, op);
        if (kind != SUM && !any) out[g] = C(0);
    }
    if (mode == MODE_ZEROING) dst = RegTensor<T>{};
    for (int g = 0; g < groups; ++g) dst.v[g] = vf_round<T>(out[g]);
    if (kind == SUM || datablock) return;
    // vcmax / vcmin: the first active lane holding the result goes to lane 1, as an integer of
    // the lane width (pto-isa's TRowReduceIdx de-interleaves it out of the odd lanes)
    int64_t index = 0;
    for (int lane = 0; lane < lanes; ++lane) {
        const C x = first[lane];
        bool hit = x == out[0];
        if constexpr (std::is_floating_point_v<C>) hit = hit || (x != x && out[0] != out[0]);
        if (mask.template active<T>(lane) && hit) {
            index = lane;
            break;
        }
    }
    uint8_t* bytes = reinterpret_cast<uint8_t*>(&dst.v[1]);
    for (size_t b = 0; b < sizeof(T); ++b) bytes[b] = static_cast<uint8_t>(index >> (8 * b));
}

}  // namespace pypto_native

#define PYPTO_VF_RED(NAME, KIND, STEP)                                                      \
    template <typename T>                                                                   \
    inline void NAME(RegTensor<T>& dst, const RegTensor<T>& src, const MaskReg& mask,       \
                     bool datablock = false, int mode = MODE_ZEROING)                       \
    {                                                                                       \
        using namespace pypto_native;                                                       \
        vf_reduce(dst, src, mask, datablock, mode, KIND,                                    \
                  [](CT<T> acc, CT<T> x) { return STEP; });                                 \
    }

PYPTO_VF_RED(vcadd, SUM, acc + x)
PYPTO_VF_RED(vcmax, MAX, vf_extreme(acc, x, true))
PYPTO_VF_RED(vcmin, MIN, vf_extreme(acc, x, false))

#define PYPTO_VF_CMP(NAME, MODE)                                                            \
    template <typename T>                                                                   \
    inline void vcmp_##NAME(MaskReg& dst, const RegTensor<T>& a, const RegTensor<T>& b,     \
                            const MaskReg& mask)                                            \
    {                                                                                       \
        using namespace pypto_native;                                                       \
        MaskReg out;                                                                        \
        for (int i = 0; i < RegTensor<T>::lanes; ++i) {                                     \
            vf_set_lane(out, i, sizeof(T), mask.template active<T>(i) &&                    \
                        compare(MODE, Elem<T>::load(a.v[i]), Elem<T>::load(b.v[i])));       \
        }                                                                                   \
        dst = out;                                                                          \
    }                                                                                       \
    template <typename T, typename S>                                                       \
    inline void vcmps_##NAME(MaskReg& dst, const RegTensor<T>& a, S s, const MaskReg& mask) \
    {                                                                                       \
        using namespace pypto_native;                                                       \
        const CT<T> y = scalar_in<T>(s);                                                    \
        MaskReg out;                                                                        \
        for (int i = 0; i < RegTensor<T>::lanes; ++i) {                                     \
            vf_set_lane(out, i, sizeof(T), mask.template active<T>(i) &&                    \
                        compare(MODE, Elem<T>::load(a.v[i]), y));                           \
        }                                                                                   \
        dst = out;                                                                          \
    }

PYPTO_VF_CMP(eq, pto::CmpMode::EQ)
PYPTO_VF_CMP(ne, pto::CmpMode::NE)
PYPTO_VF_CMP(lt, pto::CmpMode::LT)
PYPTO_VF_CMP(le, pto::CmpMode::LE)
PYPTO_VF_CMP(gt, pto::CmpMode::GT)
PYPTO_VF_CMP(ge, pto::CmpMode::GE)

template <typename T>
inline void vsel(RegTensor<T>& dst, const RegTensor<T>& t, const RegTensor<T>& f,
                 const MaskReg& mask)
{
    RegTensor<T> out;
    for (int i = 0; i < RegTensor<T>::lanes; ++i) out.v[i] = mask.template active<T>(i) ? t.v[i] : f.v[i];
    dst = out;
}

//! the simulator's VF round modes (VFRoundMode order; CAST_HYBRID rounds like RINT)
inline pto::RoundMode vf_round_mode(int mode)
{
    switch (mode) {
        case CAST_ROUND: return pto::RoundMode::CAST_ROUND;
        case CAST_FLOOR: return pto::RoundMode::CAST_FLOOR;
        case CAST_CEIL: return pto::RoundMode::CAST_CEIL;
        case CAST_TRUNC: return pto::RoundMode::CAST_TRUNC;
        case CAST_ODD: return pto::RoundMode::CAST_ODD;
        default: return pto::RoundMode::CAST_RINT;
    }
}

namespace pypto_native {

template <typename T>
inline CT<T> vf_get(const RegTensor<T>& r, int lane)
{
    if constexpr (vf_fp4<T>) {
        return Elem<T>::load(T(static_cast<uint8_t>((r.v[lane / 2].bits >> (4 * (lane % 2))) & 0xF)));
    } else {
        return Elem<T>::load(r.v[lane]);
    }
}

template <typename T>
inline void vf_set(RegTensor<T>& r, int lane, T value)
{
    if constexpr (vf_fp4<T>) {
        const int shift = 4 * (lane % 2);
        const uint8_t keep = static_cast<uint8_t>(r.v[lane / 2].bits & ~(0xF << shift));
        r.v[lane / 2] = T(static_cast<uint8_t>(keep | ((value.bits & 0xF) << shift)));
    } else {
        r.v[lane] = value;
    }
}

template <typename T>
inline bool vf_active(const MaskReg& m, int lane)
{
    if constexpr (vf_fp4<T>) {
        return m.bits[lane / 2] != 0;
    } else {
        return m.template active<T>(lane);
    }
}

//! a conversion between widths: source lane `s` of destination lane `d` for step `i` of the
//! layout `part` (widening by r reads source lanes r·i + part, narrowing writes destination
//! lanes r·i + part; a 4-bit type converts in pairs)
template <typename D, typename S, typename F>
inline void vf_cast_lanes(int part, F f)
{
    constexpr bool pairs = vf_fp4<D> != vf_fp4<S> || (vf_fp4<D> && vf_fp4<S>);
    constexpr int unit = pairs ? 2 : 1;
    constexpr int ns = vf_lanes<S> / unit, nd = vf_lanes<D> / unit;
    constexpr int n = ns < nd ? ns : nd;
    constexpr int ratio = (ns > nd ? ns : nd) / n;
    if (ratio > 1 && part >= ratio) {
        raise_fault(FaultKind::Trap, 0, "%s: layout %d is out of range", where().c_str(), part);
    }
    for (int i = 0; i < n; ++i) {
        const int su = ns > nd ? i * ratio + part : i, du = nd > ns ? i * ratio + part : i;
        for (int k = 0; k < unit; ++k) f(su * unit + k, du * unit + k, su * unit);
    }
}

//! float → integer with saturate OFF (the docs' astype table 6): the rounded integer's low
//! bits, ±inf the type's extremes, NaN 0 (the simulator's _float_to_int_wrapping)
template <typename D>
inline D vf_float_to_int_wrapping(double x, pto::RoundMode round)
{
    const double r = round_to_integer(x, round);
    if (r != r) return D(0);
    if (std::isinf(r)) return r > 0 ? std::numeric_limits<D>::max() : std::numeric_limits<D>::lowest();
    if (std::fabs(r) < 9.2e18) return Elem<D>::wrap(static_cast<int64_t>(r));
    int e = 0;
    const double mant = std::frexp(std::fabs(r), &e);  // |r| = mant · 2^e, e > 63
    const uint64_t m = static_cast<uint64_t>(std::ldexp(mant, 53));
    uint64_t low = e - 53 >= 64 ? 0 : m << (e - 53);
    if (r < 0) low = ~low + 1;
    return Elem<D>::wrap(static_cast<int64_t>(low));
}

}  // namespace pypto_native

//! astype (see `vf_cast_lanes`); the other destination lanes are zero
template <typename D, typename S>
inline void vcvt(RegTensor<D>& dst, const RegTensor<S>& src, const MaskReg& mask, int layout = ZERO,
                 int round_mode = CAST_RINT, int saturate = OFF)
{
    using namespace pypto_native;
    const pto::RoundMode round = vf_round_mode(round_mode);
    RegTensor<D> out;
    vf_cast_lanes<D, S>(layout, [&](int s, int d, int even) {
        const bool narrow_pair = vf_fp4<D> && !vf_fp4<S>;
        if (!vf_active<S>(mask, narrow_pair ? even : s)) return;
        const auto x = vf_get(src, s);
        D value;
        if constexpr (Elem<D>::is_float) {
            if (saturate == ON) {
                const double top = format_of(Elem<D>::dt).max_finite;
                const double v = static_cast<double>(x);  // NaN → 0 (the docs' table 6)
                value = encode<D>(v != v ? 0.0 : std::min(std::max(v, -top), top), round);
            } else {
                value = encode<D>(x, round);
            }
        } else if constexpr (Elem<S>::is_float) {
            value = saturate == ON ? encode<D>(x, round)
                                   : vf_float_to_int_wrapping<D>(static_cast<double>(x), round);
        } else {
            // a wider target always saturates (INT16 → UINT32: negatives → 0, the docs)
            value = saturate == ON || sizeof(D) > sizeof(S) ? Elem<D>::saturate_int(x)
                                                            : Elem<D>::wrap(x);
        }
        vf_set(out, d, value);
    });
    dst = out;
}

//! exp_sub: e^(a - b) in float32, lanes placed by `layout` (FP16 sources, FP32 result)
template <typename D, typename S>
inline void vexpdif(RegTensor<D>& dst, const RegTensor<S>& a, const RegTensor<S>& b,
                    const MaskReg& mask, int layout = ZERO)
{
    using namespace pypto_native;
    RegTensor<D> out;
    vf_cast_lanes<D, S>(layout, [&](int s, int d, int) {
        if (mask.template active<S>(s)) out.v[d] = encode<D>(vf_exp(vf_get(a, s) - vf_get(b, s)));
    });
    dst = out;
}

//! muls_cast: src · scalar rounded half away from zero, lanes placed by `layout`
template <typename D, typename S, typename X>
inline void vmulscvt(RegTensor<D>& dst, const RegTensor<S>& src, X scalar, const MaskReg& mask,
                     int layout = ZERO)
{
    using namespace pypto_native;
    const CT<S> y = scalar_in<S>(scalar);
    RegTensor<D> out;
    vf_cast_lanes<D, S>(layout, [&](int s, int d, int) {
        if (mask.template active<S>(s)) {
            out.v[d] = encode<D>(Elem<S>::load(src.v[s]) * y, pto::RoundMode::CAST_ROUND);
        }
    });
    dst = out;
}

inline void mem_bar(int = 0) {}

inline void clear_spr(int = 0) { pypto_native::ctx().ar = 0; }

//! the index ramp: start, start + 1, ... (INCREASE_ORDER); DECREASE_ORDER counts down to
//! start (start + n - 1, ..., start), b64 lanes start, start - 1, ...
template <typename T, typename S>
inline void vci(RegTensor<T>& dst, S start, int order = INCREASE_ORDER)
{
    using namespace pypto_native;
    const CT<T> s = scalar_in<T>(start);
    constexpr int n = RegTensor<T>::lanes;
    for (int i = 0; i < n; ++i) {
        int64_t k = i;
        if (order == DECREASE_ORDER) k = sizeof(T) == 8 ? -i : n - 1 - i;
        dst.v[i] = vf_round<T>(s + static_cast<CT<T>>(k));
    }
}

//! pair reduction: lane i of the result is src[2i] + src[2i + 1] (active pairs)
template <typename T>
inline void vcpadd(RegTensor<T>& dst, const RegTensor<T>& src, const MaskReg& mask,
                   int mode = MODE_ZEROING)
{
    using namespace pypto_native;
    RegTensor<T> out = mode == MODE_ZEROING ? RegTensor<T>{} : dst;
    for (int i = 0; i < RegTensor<T>::lanes / 2; ++i) {
        if (!mask.template active<T>(2 * i)) continue;
        out.v[i] = vf_round<T>(Elem<T>::load(src.v[2 * i]) + Elem<T>::load(src.v[2 * i + 1]));
    }
    dst = out;
}

template <typename D, typename S>
inline void vbitcast(RegTensor<D>& dst, const RegTensor<S>& src)
{
    std::memcpy(dst.v, src.v, kVL);
}

//! move: the active lanes (the others keep dst, MODE_MERGING)
template <typename T>
inline void vmov(RegTensor<T>& dst, const RegTensor<T>& src, const MaskReg& mask)
{
    for (int i = 0; i < RegTensor<T>::lanes; ++i) {
        if (mask.template active<T>(i)) dst.v[i] = src.v[i];
    }
}
template <typename T>
inline void vmov(RegTensor<T>& dst, const RegTensor<T>& src) { dst = src; }

// ------------------------------------------------------------------ two-result ops

//! mull: the low and high halves of the 64-bit product of 32-bit lanes (inactive lanes zero)
template <typename T>
inline void vmull(RegTensor<T>& lo, RegTensor<T>& hi, const RegTensor<T>& a,
                  const RegTensor<T>& b, const MaskReg& mask, int = MODE_ZEROING)
{
    using namespace pypto_native;
    static_assert(std::is_same_v<T, int32_t> || std::is_same_v<T, uint32_t>,
                  "vmull multiplies INT32 / UINT32 lanes");
    RegTensor<T> l, h;
    for (int i = 0; i < RegTensor<T>::lanes; ++i) {
        if (!mask.template active<T>(i)) continue;
        const int64_t x = Elem<T>::load(a.v[i]), y = Elem<T>::load(b.v[i]);
        int64_t high;
        if constexpr (std::is_same_v<T, uint32_t>) {
            high = ((x >> 16) * y + (((x & 0xFFFF) * y) >> 16)) >> 16;
        } else {
            high = (x * y) >> 32;
        }
        l.v[i] = Elem<T>::wrap(static_cast<int64_t>(static_cast<uint64_t>(x) * static_cast<uint64_t>(y)));
        h.v[i] = Elem<T>::wrap(high);
    }
    lo = l;
    hi = h;
}

namespace pypto_native {
//! (flag out, sum) of 32-bit lanes: a + b + c (flag: a carry out of 32 bits), or a + ~b + c
//! (flag: no carry out, the borrow)
template <typename T>
inline void vf_carry(MaskReg& flag, RegTensor<T>& dst, const RegTensor<T>& a,
                     const RegTensor<T>& b, const MaskReg& cin, const MaskReg& mask, bool sub)
{
    static_assert(sizeof(T) == 4 && std::is_integral_v<T>, "carries work on 32-bit lanes");
    MaskReg f;
    RegTensor<T> out;
    for (int i = 0; i < RegTensor<T>::lanes; ++i) {
        if (!mask.template active<T>(i)) continue;
        const uint64_t x = static_cast<uint32_t>(a.v[i]), y = static_cast<uint32_t>(b.v[i]);
        const uint64_t total = x + (sub ? (~y & 0xFFFFFFFFu) : y) + (cin.template active<T>(i) ? 1 : 0);
        out.v[i] = static_cast<T>(static_cast<uint32_t>(total));
        vf_set_lane(f, i, 4, sub ? total < (1ull << 32) : total >= (1ull << 32));
    }
    flag = f;
    dst = out;
}
}  // namespace pypto_native

template <typename T>
inline void vaddcs(MaskReg& carry, RegTensor<T>& dst, const RegTensor<T>& a,
                   const RegTensor<T>& b, const MaskReg& cin, const MaskReg& mask,
                   int = MODE_ZEROING)
{
    pypto_native::vf_carry(carry, dst, a, b, cin, mask, false);
}
template <typename T>
inline void vsubcs(MaskReg& borrow, RegTensor<T>& dst, const RegTensor<T>& a,
                   const RegTensor<T>& b, const MaskReg& bin, const MaskReg& mask,
                   int = MODE_ZEROING)
{
    pypto_native::vf_carry(borrow, dst, a, b, bin, mask, true);
}

//! interleave: (a0 b0 a1 b1 … of the lower halves, … of the upper halves)
template <typename T>
inline void vintlv(RegTensor<T>& d0, RegTensor<T>& d1, const RegTensor<T>& a,
                   const RegTensor<T>& b)
{
    constexpr int n = RegTensor<T>::lanes;
    RegTensor<T> o0, o1;
    for (int k = 0; k < 2 * n; ++k) {
        const T v = (k % 2 ? b : a).v[k / 2];
        (k < n ? o0 : o1).v[k % n] = v;
    }
    d0 = o0;
    d1 = o1;
}
//! de-interleave: (even lanes of a‖b, odd lanes of a‖b)
template <typename T>
inline void vdintlv(RegTensor<T>& d0, RegTensor<T>& d1, const RegTensor<T>& a,
                    const RegTensor<T>& b)
{
    constexpr int n = RegTensor<T>::lanes;
    RegTensor<T> o0, o1;
    for (int i = 0; i < n; ++i) {
        o0.v[i] = (2 * i < n ? a : b).v[(2 * i) % n];
        o1.v[i] = (2 * i + 1 < n ? a : b).v[(2 * i + 1) % n];
    }
    d0 = o0;
    d1 = o1;
}

// ------------------------------------------------------------------ rearrangement

//! pack: each lane wrapped to half width, into the lower / upper half of dst (other half 0)
template <typename D, typename S>
inline void vpack(RegTensor<D>& dst, const RegTensor<S>& src, int part = LOWER)
{
    static_assert(std::is_integral_v<D> && sizeof(D) * 2 == sizeof(S), "vpack halves integers");
    RegTensor<D> out;
    for (int i = 0; i < RegTensor<S>::lanes; ++i) {
        out.v[part * RegTensor<S>::lanes + i] =
            pypto_native::Elem<D>::wrap(pypto_native::Elem<S>::load(src.v[i]));
    }
    dst = out;
}

//! unpack: the lower / upper half of src widened (sign or zero extension)
template <typename D, typename S>
inline void vunpack(RegTensor<D>& dst, const RegTensor<S>& src, int part = LOWER)
{
    static_assert(std::is_integral_v<D> && sizeof(D) == sizeof(S) * 2, "vunpack doubles integers");
    RegTensor<D> out;
    for (int i = 0; i < RegTensor<D>::lanes; ++i) {
        out.v[i] = pypto_native::Elem<D>::wrap(
            pypto_native::Elem<S>::load(src.v[part * RegTensor<D>::lanes + i]));
    }
    dst = out;
}

//! squeeze: the active lanes packed to the front; STORE_REG puts their bytes in the AR
template <typename T>
inline void vsqz(RegTensor<T>& dst, const RegTensor<T>& src, const MaskReg& mask,
                 int gather_mode = STORE_REG)
{
    RegTensor<T> out;
    int count = 0;
    for (int i = 0; i < RegTensor<T>::lanes; ++i) {
        if (mask.template active<T>(i)) out.v[count++] = src.v[i];
    }
    dst = out;
    if (gather_mode == STORE_REG) pypto_native::ctx().ar = count * static_cast<int64_t>(sizeof(T));
}

//! unsqueeze: lane i = the number of active lanes before it (an exclusive prefix count)
template <typename T>
inline void vusqz(RegTensor<T>& dst, const MaskReg& mask)
{
    static_assert(std::is_integral_v<T>, "vusqz counts into an integer register");
    int64_t count = 0;
    for (int i = 0; i < RegTensor<T>::lanes; ++i) {
        dst.v[i] = pypto_native::Elem<T>::wrap(count);
        count += mask.template active<T>(i) ? 1 : 0;
    }
}

//! histogram of the active 8-bit lanes into dst's counts: values [128 k, 128 k + 128) for
//! BIN k; FREQUENCY adds each value's count, ACCUMULATE the count of values up to each bin
template <typename D, typename S>
inline void vhist(RegTensor<D>& dst, const RegTensor<S>& src, const MaskReg& mask,
                  int bin_type = BIN0, int hist_type = ACCUMULATE)
{
    static_assert(sizeof(S) == 1 && std::is_integral_v<D>, "vhist counts 8-bit lanes");
    int64_t counts[256] = {};
    for (int i = 0; i < RegTensor<S>::lanes; ++i) {
        if (mask.template active<S>(i)) ++counts[static_cast<uint8_t>(src.v[i])];
    }
    constexpr int n = RegTensor<D>::lanes < 128 ? RegTensor<D>::lanes : 128;
    int64_t running = 0;
    for (int j = 0; j < n; ++j) {
        running = (hist_type == ACCUMULATE ? running : 0) + counts[bin_type * 128 + j];
        dst.v[j] = pypto_native::Elem<D>::wrap(running + pypto_native::Elem<D>::load(dst.v[j]));
    }
}
