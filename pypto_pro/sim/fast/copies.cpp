// Strided tile copies for the replay tape (copies_native.py): same-dtype byte copies and
// fp16/bf16 -> fp32 conversions between prebuilt views, described by int64 records.
//
// A call takes one int64 array: [count, record 0, record 1, ...], each record REC_W ints:
//   kind (0 bytes, 1 fp16 -> fp32, 2 bf16 -> fp32, 4 fp32 dst += src), dst address,
//   src address, run (bytes for kind 0, elements for 1, 2 and 4: contiguous in both at the
//   innermost level; -16: kind 0 moving 16x16 blocks of 2-byte elements transposed),
//   4 outer sizes (outermost first, padded with 1), 4 dst byte strides, 4 src byte strides,
//   and for run -16 the blocks' source and destination row strides (bytes).
// Kind 3 is a float32 product through the BLAS sgemm torch's matmul calls (set once by
// pypto_copies_set_sgemm): dst = src @ b for row-major dst [m, n] and src [m, k], outer sizes
// (m, n, k), b's address as the first dst stride, run 1 when b is stored as its transpose
// ([n, k] rows). Kind 4 adds nothing when either side holds a NaN (which NaN a sum keeps is
// torch's to say): the call then stops and gives that record's index, the caller adds with
// torch and calls again from the next record.
// `pypto_copies_record` makes a record from two tensors' geometry, checking every extent
// against both storages.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define PYPTO_X86 1
#endif

namespace {

constexpr int REC_W = 18;

struct Rec {
    int64_t kind, dst, src, run;
    int64_t n[4], ds[4], ss[4];
    int64_t src_row, dst_row;  // run -16 only
};

// fp16 bits -> fp32 bits as IEEE conversion gives them (x86 SSE/F16C): a signalling NaN
// comes out quiet with its payload kept, subnormals exact.
inline uint32_t half_bits_to_float(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1Fu;
    uint32_t mant = h & 0x3FFu;
    if (exp == 0x1F) return sign | 0x7F800000u | (mant << 13) | (mant ? 0x400000u : 0u);
    if (exp != 0) return sign | ((exp + 112) << 23) | (mant << 13);
    if (mant == 0) return sign;
    int e = 113;  // normalise the subnormal
    while (!(mant & 0x400u)) {
        mant <<= 1;
        --e;
    }
    return sign | (uint32_t(e) << 23) | ((mant & 0x3FFu) << 13);
}

// Runs `BODY` once per innermost run of record `r`, with `d` and `s` its dst and src bytes.
#define PYPTO_WALK(r, BODY)                                                                  \
    for (int64_t a = 0; a < (r).n[0]; ++a)                                                 \
        for (int64_t b = 0; b < (r).n[1]; ++b)                                             \
            for (int64_t c = 0; c < (r).n[2]; ++c) {                                       \
                char* d = reinterpret_cast<char*>((r).dst) + a * (r).ds[0] + b * (r).ds[1] + \
                          c * (r).ds[2];                                                   \
                const char* s = reinterpret_cast<const char*>((r).src) + a * (r).ss[0] +     \
                                b * (r).ss[1] + c * (r).ss[2];                             \
                for (int64_t i = 0; i < (r).n[3]; ++i, d += (r).ds[3], s += (r).ss[3]) {     \
                    BODY;                                                                  \
                }                                                                          \
            }

// RUN: the run's bytes when fixed (a fractal row: plain moves), 0 for `r.run`
template <int64_t RUN>
void copy_bytes(const Rec& r) {
    PYPTO_WALK(r, std::memcpy(d, s, RUN ? RUN : r.run))
}

// dst row j, element i = src row i, element j, for a 16x16 block of 2-byte elements.
#ifdef PYPTO_X86
// The 8x8 transpose of 2-byte elements of registers `r` (in place), within each 128-bit lane:
// row c of the result holds column c of the rows, per lane (SSE registers: one 8x8 block; AVX2
// registers: two side by side). P: the intrinsics' prefix (_mm, _mm256), V: the register type.
#define PYPTO_TRANSPOSE8(r, P, V)                                                            \
    do {                                                                                     \
        V a_[8], b_[8];                                                                      \
        for (int i = 0; i < 4; ++i) { /* columns 0-3, 4-7 of rows 2i, 2i+1 */                \
            a_[2 * i] = P##_unpacklo_epi16(r[2 * i], r[2 * i + 1]);                          \
            a_[2 * i + 1] = P##_unpackhi_epi16(r[2 * i], r[2 * i + 1]);                      \
        }                                                                                    \
        for (int h = 0; h < 2; ++h) /* rows 0-3 (h 0), 4-7 (h 1): column pairs */            \
            for (int c = 0; c < 2; ++c) {                                                    \
                b_[4 * h + 2 * c] = P##_unpacklo_epi32(a_[4 * h + c], a_[4 * h + 2 + c]);    \
                b_[4 * h + 2 * c + 1] = P##_unpackhi_epi32(a_[4 * h + c], a_[4 * h + 2 + c]); \
            }                                                                                \
        for (int c = 0; c < 4; ++c) { /* b_[c]: columns 2c, 2c+1 of rows 0-3; b_[4+c]: 4-7 */ \
            r[2 * c] = P##_unpacklo_epi64(b_[c], b_[4 + c]);                                 \
            r[2 * c + 1] = P##_unpackhi_epi64(b_[c], b_[4 + c]);                             \
        }                                                                                    \
    } while (0)

inline void transpose16_sse(char* d, const char* s, int64_t srow, int64_t drow) {
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j) {  // source rows 8i.., columns 8j.. -> destination 8j.., 8i..
            __m128i r[8];
            const char* from = s + 8 * i * srow + 16 * j;
            char* to = d + 8 * j * drow + 16 * i;
            for (int k = 0; k < 8; ++k)
                r[k] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + k * srow));
            PYPTO_TRANSPOSE8(r, _mm, __m128i);
            for (int k = 0; k < 8; ++k) _mm_storeu_si128(reinterpret_cast<__m128i*>(to + k * drow), r[k]);
        }
}

// Rows 0-7 transposed per lane give destination rows c (lane 0) and 8 + c (lane 1), elements
// 0-7; rows 8-15 give the same rows' elements 8-15: a 128-bit lane swap joins them.
__attribute__((target("avx2"), always_inline)) inline void transpose16_avx2(
    char* d, const char* s, int64_t srow, int64_t drow) {
    __m256i x[8], y[8];
    for (int k = 0; k < 8; ++k) {
        x[k] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + k * srow));
        y[k] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + (8 + k) * srow));
    }
    PYPTO_TRANSPOSE8(x, _mm256, __m256i);
    PYPTO_TRANSPOSE8(y, _mm256, __m256i);
    for (int c = 0; c < 8; ++c) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + c * drow),
                            _mm256_permute2x128_si256(x[c], y[c], 0x20));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + (8 + c) * drow),
                            _mm256_permute2x128_si256(x[c], y[c], 0x31));
    }
}
#endif

inline void transpose16(char* d, const char* s, int64_t srow, int64_t drow) {
#ifdef PYPTO_X86
    transpose16_sse(d, s, srow, drow);
#else
    for (int i = 0; i < 16; ++i)
        for (int j = 0; j < 16; ++j) std::memcpy(d + j * drow + 2 * i, s + i * srow + 2 * j, 2);
#endif
}

#ifdef PYPTO_X86
__attribute__((target("avx2"))) void transpose_blocks_avx2(const Rec& r) {
    PYPTO_WALK(r, transpose16_avx2(d, s, r.src_row, r.dst_row))
}
const bool HAS_AVX2 = __builtin_cpu_supports("avx2");
#endif

void transpose_blocks(const Rec& r) {
#ifdef PYPTO_X86
    if (HAS_AVX2) return transpose_blocks_avx2(r);
#endif
    PYPTO_WALK(r, transpose16(d, s, r.src_row, r.dst_row))
}

inline void half_run_scalar(char* d, const char* s, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, s + 2 * i, 2);
        const uint32_t bits = half_bits_to_float(h);
        std::memcpy(d + 4 * i, &bits, 4);
    }
}

void convert_half_scalar(const Rec& r) { PYPTO_WALK(r, half_run_scalar(d, s, r.run)) }

#ifdef PYPTO_X86
__attribute__((target("avx,f16c"))) inline void half_run_f16c(char* d, const char* s, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(reinterpret_cast<float*>(d + 4 * i),
                         _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 2 * i))));
    half_run_scalar(d + 4 * i, s + 2 * i, n - i);
}

// RUN: the run's elements when fixed, 0 for `r.run`
template <int64_t RUN>
__attribute__((target("avx,f16c"))) void convert_half_f16c(const Rec& r) {
    PYPTO_WALK(r, half_run_f16c(d, s, RUN ? RUN : r.run))
}
const bool HAS_F16C = __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx");
#endif

void convert_bf16(const Rec& r) {
    PYPTO_WALK(r, for (int64_t i = 0; i < r.run; ++i) {
        uint16_t h;
        std::memcpy(&h, s + 2 * i, 2);
        const uint32_t bits = uint32_t(h) << 16;
        std::memcpy(d + 4 * i, &bits, 4);
    })
}

// Fortran BLAS sgemm (LP64): column-major C = op(A) op(B)
using Sgemm = void (*)(const char*, const char*, const int*, const int*, const int*, const float*,
                       const float*, const int*, const float*, const int*, const float*, float*,
                       const int*);
Sgemm sgemm = nullptr;
// MKL's per-thread thread count (MKL_Set_Num_Threads_Local: the previous one back; 0 means
// the global count), when the library has one: a product runs on the calling thread alone.
using SetThreads = int (*)(int);
SetThreads set_threads_local = nullptr;

// Row-major dst[m, n] = src[m, k] @ b[k, n] is column-major dst^T = b^T src^T.
void product(const Rec& r) {
    const int m = int(r.n[0]), n = int(r.n[1]), k = int(r.n[2]);
    const bool transposed = r.run == 1;
    const int ldb = transposed ? k : n;
    const float one = 1.0f, zero = 0.0f;
    sgemm(transposed ? "T" : "N", "N", &n, &m, &k, &one, reinterpret_cast<const float*>(r.ds[0]),
          &ldb, reinterpret_cast<const float*>(r.src), &k, &zero, reinterpret_cast<float*>(r.dst), &n);
}

inline bool has_nan_scalar(const char* p, int64_t n) {
    bool nan = false;
    for (int64_t i = 0; i < n; ++i) {
        float x;
        std::memcpy(&x, p + 4 * i, 4);
        nan |= x != x;
    }
    return nan;
}

inline void add_run_scalar(char* d, const char* s, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        float x, y;
        std::memcpy(&x, s + 4 * i, 4);
        std::memcpy(&y, d + 4 * i, 4);
        y += x;
        std::memcpy(d + 4 * i, &y, 4);
    }
}

#ifdef PYPTO_X86
// `any` gains a set lane where one of the `n` floats at `p` is a NaN (a tail past the last 8:
// `tail` is set instead).
__attribute__((target("avx"), always_inline)) inline void nan_lanes(__m256& any, bool& tail,
                                                                   const char* p, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 x = _mm256_loadu_ps(reinterpret_cast<const float*>(p + 4 * i));
        any = _mm256_or_ps(any, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
    }
    if (i < n) tail |= has_nan_scalar(p + 4 * i, n - i);
}

__attribute__((target("avx"), always_inline)) inline void add_run(char* d, const char* s,
                                                                 int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        float* out = reinterpret_cast<float*>(d + 4 * i);
        _mm256_storeu_ps(out, _mm256_add_ps(_mm256_loadu_ps(reinterpret_cast<const float*>(s + 4 * i)),
                                            _mm256_loadu_ps(out)));
    }
    if (i < n) add_run_scalar(d + 4 * i, s + 4 * i, n - i);
}

// RUN: the run's elements when fixed (a fractal row: 16), 0 for `r.run`
template <int64_t RUN>
__attribute__((target("avx"))) bool add_f32_avx(const Rec& r) {
    const int64_t n = RUN ? RUN : r.run;
    __m256 any = _mm256_setzero_ps();
    bool tail = false;
    PYPTO_WALK(r, nan_lanes(any, tail, s, n); nan_lanes(any, tail, d, n))
    if (tail || _mm256_movemask_ps(any) != 0) return false;
    PYPTO_WALK(r, add_run(d, s, n))
    return true;
}
const bool HAS_AVX = __builtin_cpu_supports("avx");
#endif

// dst += src over the walk, unless a NaN is in either (then false, nothing added).
bool add_f32(const Rec& r) {
#ifdef PYPTO_X86
    if (HAS_AVX) return r.run == 16 ? add_f32_avx<16>(r) : add_f32_avx<0>(r);
#endif
    bool nan = false;
    PYPTO_WALK(r, nan |= has_nan_scalar(s, r.run) || has_nan_scalar(d, r.run))
    if (nan) return false;
    PYPTO_WALK(r, add_run_scalar(d, s, r.run))
    return true;
}

void run_record(const Rec& r) {
    if (r.kind == 0) {
        switch (r.run) {
            case -16: return transpose_blocks(r);
            case 2: return copy_bytes<2>(r);
            case 4: return copy_bytes<4>(r);
            case 32: return copy_bytes<32>(r);
            case 64: return copy_bytes<64>(r);
            default: return copy_bytes<0>(r);
        }
    }
    if (r.kind == 2) return convert_bf16(r);
#ifdef PYPTO_X86
    if (HAS_F16C) return r.run == 16 ? convert_half_f16c<16>(r) : convert_half_f16c<0>(r);
#endif
    convert_half_scalar(r);
}

struct Level {
    int64_t n, d, s;  // size, dst byte stride, src byte stride
};

// [first, end) bytes of the storage at `base` that the levels (stride `side`) touch from
// `ptr`, elements of `size` bytes; false when that leaves [0, nbytes).
bool span(const Level* lv, int count, int64_t Level::*side, int64_t ptr, int64_t base,
          int64_t nbytes, int64_t size, int64_t& first, int64_t& end) {
    first = ptr - base;
    int64_t last = first;
    for (int i = 0; i < count; ++i) {
        const int64_t reach = (lv[i].n - 1) * (lv[i].*side);
        (reach < 0 ? first : last) += reach;
    }
    end = last + size;
    return first >= 0 && end <= nbytes;
}

constexpr int MAX_DIMS = 16;

}  // namespace

extern "C" {

// Make the record of dst.copy_(src) into `out` (REC_W ints) from `in`: kind, ndim, then per
// tensor (dst, src) its data address, storage address, storage bytes and element bytes, then
// the shape and both tensors' element strides. Levels go in the order of the source's strides
// (reads in order), size-1 ones dropped, one merged into the next inner one where it continues
// it in both. 0 (no record) when two elements share a destination byte, an extent leaves its
// storage, the two share bytes, or more than 4 strided levels remain.
int64_t pypto_copies_record(const int64_t* in, int64_t* out) {
    const int64_t kind = in[0], ndim = in[1];
    const int64_t dptr = in[2], dbase = in[3], dbytes = in[4], dsz = in[5];
    const int64_t sptr = in[6], sbase = in[7], sbytes = in[8], ssz = in[9];
    if (ndim > MAX_DIMS) return 0;
    const int64_t* shape = in + 10;
    Level dims[MAX_DIMS];
    int count = 0;
    for (int64_t i = 0; i < ndim; ++i)
        if (shape[i] != 1) dims[count++] = {shape[i], shape[ndim + i] * dsz, shape[2 * ndim + i] * ssz};
    std::stable_sort(dims, dims + count, [](const Level& x, const Level& y) {
        const int64_t xs = std::llabs(x.s), ys = std::llabs(y.s);
        return xs != ys ? xs > ys : std::llabs(x.d) > std::llabs(y.d);
    });
    Level by_dst[MAX_DIMS];  // distinct writes: each dst stride clears the levels below it
    std::copy(dims, dims + count, by_dst);
    std::stable_sort(by_dst, by_dst + count,
                     [](const Level& x, const Level& y) { return std::llabs(x.d) < std::llabs(y.d); });
    int64_t reach = dsz;
    for (int i = 0; i < count; ++i) {
        if (std::llabs(by_dst[i].d) < reach) return 0;
        reach += (by_dst[i].n - 1) * std::llabs(by_dst[i].d);
    }
    Level lv[MAX_DIMS];
    int levels = 0;
    for (int i = 0; i < count; ++i) {
        if (levels) {
            Level& p = lv[levels - 1];
            if (p.d == dims[i].n * dims[i].d && p.s == dims[i].n * dims[i].s) {
                p = {p.n * dims[i].n, dims[i].d, dims[i].s};
                continue;
            }
        }
        lv[levels++] = dims[i];
    }
    if (!levels) lv[levels++] = {1, dsz, ssz};
    int64_t dfirst, dend, sfirst, send;
    if (!span(lv, levels, &Level::d, dptr, dbase, dbytes, dsz, dfirst, dend) ||
        !span(lv, levels, &Level::s, sptr, sbase, sbytes, ssz, sfirst, send))
        return 0;
    if (dbase == sbase && dfirst < send && sfirst < dend) return 0;
    int64_t run, src_row = 0, dst_row = 0;
    const Level inner = lv[levels - 1];
    if (inner.d == dsz && inner.s == ssz) {  // one contiguous run in both
        --levels;
        run = kind == 0 ? inner.n * dsz : inner.n;
    } else {
        run = kind == 0 ? dsz : 1;
        int a = -1, b = -1;  // 16 contiguous in the destination / in the source
        for (int i = 0; i < levels; ++i) {
            if (a < 0 && lv[i].n == 16 && lv[i].d == 2) a = i;
            if (b < 0 && lv[i].n == 16 && lv[i].s == 2) b = i;
        }
        if (kind == 0 && dsz == 2 && a >= 0 && b >= 0 && a != b) {
            src_row = lv[a].s;
            dst_row = lv[b].d;
            int kept = 0;
            for (int i = 0; i < levels; ++i)
                if (i != a && i != b) lv[kept++] = lv[i];
            levels = kept;
            run = -16;
        }
    }
    if (levels > 4) return 0;
    int64_t rec[REC_W] = {kind, dptr, sptr, run};
    for (int i = 0; i < 4; ++i) {
        const int j = i - (4 - levels);
        rec[4 + i] = j < 0 ? 1 : lv[j].n;
        rec[8 + i] = j < 0 ? 0 : lv[j].d;
        rec[12 + i] = j < 0 ? 0 : lv[j].s;
    }
    rec[16] = src_row;
    rec[17] = dst_row;
    std::memcpy(out, rec, sizeof rec);
    return 1;
}

// Run the records of `desc` ([count, records...]) in order from record `start`; the index of
// the first add that met a NaN and was left out (the records after it too: a caller adds it
// with torch and runs on from the next one), or -1 when all ran.
int64_t pypto_copies_run(const int64_t* desc, int64_t start) {
    const int64_t count = desc[0];
    int64_t stopped = -1;
    bool single = false;
    int threads = 0;
    for (int64_t k = start; k < count; ++k) {
        Rec r;
        std::memcpy(&r, desc + 1 + k * REC_W, sizeof r);
        if (r.kind == 3) {
            if (!single && set_threads_local) threads = set_threads_local(1);
            single = true;
            product(r);
        } else if (r.kind == 4) {
            if (!add_f32(r)) {
                stopped = k;
                break;
            }
        } else {
            run_record(r);
        }
    }
    if (single && set_threads_local) set_threads_local(threads);
    return stopped;
}

// The sgemm products call (the one torch's matmul calls: products are bit-identical to its),
// and MKL's MKL_Set_Num_Threads_Local (or null): two lanes' products each on its own thread
// (MKL threads of their own only contend with the other lane for this machine's cores).
void pypto_copies_set_sgemm(void* fn, void* threads) {
    sgemm = reinterpret_cast<Sgemm>(fn);
    set_threads_local = reinterpret_cast<SetThreads>(threads);
}

// The record width this library reads (checked by the loader).
int64_t pypto_copies_record_width() { return REC_W; }

// Whether fp16 conversions use the F16C instructions (1) or the scalar bit conversion (0).
int64_t pypto_copies_f16c() {
#ifdef PYPTO_X86
    return HAS_F16C ? 1 : 0;
#else
    return 0;
#endif
}

}  // extern "C"
