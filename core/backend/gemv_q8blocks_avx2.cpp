#include "backend/gemv_q8blocks.h"

#include <cmath>
#include <cstring>
#include <type_traits>

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>
#define INFERSCOPE_Q8BLOCKS_AVX2 1
#endif

#include "backend/prefetch_weights.h"
#include "common/aligned_buffer.h"
#include "common/kernel_set.h"
#include "gguf/quant_blocks.h"

namespace inferscope::INFERSCOPE_KERNELS_NS {
namespace {

constexpr int64_t kBlock = 32;

// One row of x: the portable rule of the header, the oracle the AVX2 version equals bit for bit
// (one f32 multiply per element, round half to even as vcvtps2dq does under the default MXCSR).
[[maybe_unused]] void quantizeRowPortable(const float* x, int64_t k, int16_t* q, float* d, float* sum) {
    for (int64_t b = 0; b < k / kBlock; ++b) {
        const float* xb = x + b * kBlock;
        float amax = 0.0f;
        for (int j = 0; j < kBlock; ++j) amax = std::fmax(amax, std::fabs(xb[j]));
        const float db = amax / float(kActivationLevels), id = db != 0.0f ? 1.0f / db : 0.0f;
        int s = 0;
        for (int j = 0; j < kBlock; ++j) {
            q[b * kBlock + j] = int16_t(std::nearbyint(xb[j] * id));
            s += q[b * kBlock + j];
        }
        d[b] = db;
        sum[b] = db * float(s);
    }
}

#ifdef INFERSCOPE_Q8BLOCKS_AVX2

inline int hsumI32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(s);
}

inline float hmax(__m256 v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_max_ss(s, _mm_movehdup_ps(s)));
}

inline float hsum(__m256 s) {
    const __m128 q = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
    const __m128 d = _mm_add_ps(q, _mm_movehl_ps(q, q));
    return _mm_cvtss_f32(_mm_add_ss(d, _mm_movehdup_ps(d)));
}

// The same rule as quantizeRowPortable, 32 elements per step.
void quantizeRow(const float* x, int64_t k, int16_t* q, float* d, float* sum) {
    const __m256 signBit = _mm256_set1_ps(-0.0f);
    for (int64_t b = 0; b < k / kBlock; ++b) {
        const float* xb = x + b * kBlock;
        __m256 v[4];
        for (int j = 0; j < 4; ++j) v[j] = _mm256_loadu_ps(xb + 8 * j);
        const __m256 m01 = _mm256_max_ps(_mm256_andnot_ps(signBit, v[0]), _mm256_andnot_ps(signBit, v[1]));
        const __m256 m23 = _mm256_max_ps(_mm256_andnot_ps(signBit, v[2]), _mm256_andnot_ps(signBit, v[3]));
        const float db = hmax(_mm256_max_ps(m01, m23)) / float(kActivationLevels), id = db != 0.0f ? 1.0f / db : 0.0f;
        const __m256 idv = _mm256_set1_ps(id);
        __m256i i32[4];
        for (int j = 0; j < 4; ++j) i32[j] = _mm256_cvtps_epi32(_mm256_mul_ps(v[j], idv));
        // vpackssdw packs within 128-bit lanes (a0-3 b0-3 a4-7 b4-7); the permute restores the order.
        const __m256i lo = _mm256_permute4x64_epi64(_mm256_packs_epi32(i32[0], i32[1]), _MM_SHUFFLE(3, 1, 2, 0));
        const __m256i hi = _mm256_permute4x64_epi64(_mm256_packs_epi32(i32[2], i32[3]), _MM_SHUFFLE(3, 1, 2, 0));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + b * kBlock), lo);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + b * kBlock + 16), hi);
        d[b] = db;
        sum[b] = db * float(hsumI32(_mm256_add_epi32(_mm256_add_epi32(i32[0], i32[1]), _mm256_add_epi32(i32[2], i32[3]))));
    }
}

inline float halfAt(const uint8_t* p) { return _cvtsh_ss(uint16_t(p[0] | p[1] << 8)); }

// Bit j of `bits` as byte j: 0xFF where set, 0 where clear.
inline __m256i bitsToBytes(uint32_t bits) {
    const __m256i spread = _mm256_shuffle_epi8(
        _mm256_set1_epi32(int(bits)),
        _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
    const __m256i select = _mm256_set1_epi64x(int64_t(0x8040201008040201ull));
    return _mm256_cmpeq_epi8(_mm256_and_si256(spread, select), select);
}

// 16 bytes of nibbles as 32 bytes 0..15 in element order: low nibbles are elements 0..15, high
// nibbles 16..31 (ggml's layout of Q4_0, Q4_1, Q5_*, IQ4_NL).
inline __m256i nibbles(const uint8_t* p) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(v, 4), v), _mm256_set1_epi8(0x0F));
}

inline uint32_t u32At(const uint8_t* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24; }

// Each format as its 32 integer weights q (element order), w = d·(q + offset) or d·q + m. A
// constant offset (Q4_0's -8, Q5_0's -16) is not subtracted per weight but once per 8 blocks, as
// offset·d_w·Σx̂ beside the min term. Weights come as two registers of 16 int16 (elements 0..15,
// 16..31): Q8_0 widened straight from memory (vpmovsxbw with a memory operand), plain nibbles from
// one 128-bit load, the others from a register of 32 int8.
struct Q8_0 {
    static constexpr int64_t bytes = 34;
    static constexpr bool hasMin = false;
    static constexpr float offset = 0;
    static void weights16(const uint8_t* b, __m256i& lo, __m256i& hi) {
        lo = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 2)));
        hi = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 18)));
    }
};
inline void nibbles16(const uint8_t* p, __m256i& lo, __m256i& hi) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)), mask = _mm_set1_epi8(0x0F);
    lo = _mm256_cvtepu8_epi16(_mm_and_si128(v, mask));
    hi = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(v, 4), mask));
}
struct Q4_0 {
    static constexpr int64_t bytes = 18;
    static constexpr bool hasMin = false;
    static constexpr float offset = -8;
    static void weights16(const uint8_t* b, __m256i& lo, __m256i& hi) { nibbles16(b + 2, lo, hi); }
};
struct Q4_1 {
    static constexpr int64_t bytes = 20;
    static constexpr bool hasMin = true;
    static constexpr float offset = 0;
    static void weights16(const uint8_t* b, __m256i& lo, __m256i& hi) { nibbles16(b + 4, lo, hi); }
};
struct Q5_0 {  // nibble | bit4 << 4, then -16
    static constexpr int64_t bytes = 22;
    static constexpr bool hasMin = false;
    static constexpr float offset = -16;
    static __m256i weights(const uint8_t* b) {
        return _mm256_or_si256(nibbles(b + 6), _mm256_and_si256(bitsToBytes(u32At(b + 2)), _mm256_set1_epi8(0x10)));
    }
};
struct Q5_1 {  // nibble | bit4 << 4
    static constexpr int64_t bytes = 24;
    static constexpr bool hasMin = true;
    static constexpr float offset = 0;
    static __m256i weights(const uint8_t* b) {
        return _mm256_or_si256(nibbles(b + 8), _mm256_and_si256(bitsToBytes(u32At(b + 4)), _mm256_set1_epi8(0x10)));
    }
};
struct IQ4_NL {  // the code book looked up by nibble (vpshufb indexes within each 128-bit lane)
    static constexpr int64_t bytes = 18;
    static constexpr bool hasMin = false;
    static constexpr float offset = 0;
    static __m256i weights(const uint8_t* b) {
        const __m128i table = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4Values));
        return _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(table), nibbles(b + 2));
    }
};

template <class F>
inline void weights16(const uint8_t* b, __m256i& lo, __m256i& hi) {
    if constexpr (requires { F::weights16(b, lo, hi); }) {
        F::weights16(b, lo, hi);
    } else {
        const __m256i w = F::weights(b);
        lo = _mm256_cvtepi8_epi16(_mm256_castsi256_si128(w));
        hi = _mm256_cvtepi8_epi16(_mm256_extracti128_si256(w, 1));
    }
}

// Σ w[j]·x[j] over 32 pairs (w widened from int8, x int16) as 8 int32 lanes (|w|·|x| ≤ 128·32767:
// no lane can overflow).
inline __m256i dot32(__m256i wLo, __m256i wHi, const int16_t* x) {
    const __m256i lo = _mm256_madd_epi16(wLo, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x)));
    const __m256i hi = _mm256_madd_epi16(wHi, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 16)));
    return _mm256_add_epi32(lo, hi);
}

// The f16 at offset `at` of 8 consecutive blocks, as 8 floats (one vcvtph2ps for 8 scales).
template <class F>
inline __m256 halves8(const uint8_t* blk, int at) {
    auto h = [&](int j) {
        uint16_t v;
        std::memcpy(&v, blk + j * F::bytes + at, 2);
        return short(v);
    };
    return _mm256_cvtph_ps(_mm_setr_epi16(h(0), h(1), h(2), h(3), h(4), h(5), h(6), h(7)));
}

// One block b of a row on its own (the last nb % 8 of a row): its scaled sum into acc[i][0], its
// min or offset term into minAcc[i].
template <class F, int M>
inline void lastBlock(const uint8_t* blk, int64_t b, const ActivationBlocks32& xq, __m256 (*acc)[2], __m256* minAcc) {
    const int64_t nb = xq.k / kBlock;
    __m256i wLo, wHi;
    weights16<F>(blk, wLo, wHi);
    for (int i = 0; i < M; ++i) {
        const __m256 s = _mm256_cvtepi32_ps(dot32(wLo, wHi, xq.q + (i * nb + b) * kBlock));
        acc[i][0] = _mm256_fmadd_ps(s, _mm256_set1_ps(halfAt(blk) * xq.d[i * nb + b]), acc[i][0]);
        if constexpr (F::hasMin) minAcc[i] = _mm256_add_ps(minAcc[i], _mm256_setr_ps(halfAt(blk + 2) * xq.sum[i * nb + b], 0, 0, 0, 0, 0, 0, 0));
        if constexpr (F::offset != 0) minAcc[i] = _mm256_add_ps(minAcc[i], _mm256_setr_ps(halfAt(blk) * xq.sum[i * nb + b], 0, 0, 0, 0, 0, 0, 0));
    }
}

// minAcc as a term of y: Σ m_w·Σx̂ (min formats) or Σ d_w·Σx̂ times the offset (offset formats).
template <class F>
inline __m256 minTerm(__m256 minAcc) {
    return F::offset != 0 ? _mm256_mul_ps(minAcc, _mm256_set1_ps(F::offset)) : minAcc;
}

// The min and offset terms of 8 blocks starting at b: Σ m_w·sum_x (min formats) or Σ d_w·sum_x
// (offset formats, times the offset at the row's end).
template <class F, int M>
inline void minTerms8(const uint8_t* blk, __m256 dw, int64_t b, const ActivationBlocks32& xq, __m256* minAcc) {
    const int64_t nb = xq.k / kBlock;
    for (int i = 0; i < M; ++i) {
        if constexpr (F::hasMin) minAcc[i] = _mm256_fmadd_ps(halves8<F>(blk, 2), _mm256_loadu_ps(xq.sum + i * nb + b), minAcc[i]);
        if constexpr (F::offset != 0) minAcc[i] = _mm256_fmadd_ps(dw, _mm256_loadu_ps(xq.sum + i * nb + b), minAcc[i]);
    }
}

// y[i, n] = Σ_b d_w[b]·d_x[i][b]·Σ_j q_w·q_x (+ m_w[b]·sum_x[i][b]). Blocks go 8 at a time so that
// their scales are converted and multiplied as one vector (per block alone that scalar work was a
// third of the instructions); two accumulators per row of x so consecutive FMAs do not wait on
// each other.
template <class F, int M>
void rowsOf(const GemvTask& t, const ActivationBlocks32& xq, int64_t n0, int64_t n1) {
    const int64_t nb = t.k / kBlock, rowBytes = nb * F::bytes;
    const auto* base = static_cast<const uint8_t*>(t.w);
    for (int64_t n = n0; n < n1; ++n) {
        const uint8_t* row = base + n * rowBytes;
        __m256 acc[M][2], minAcc[M];
        for (int i = 0; i < M; ++i) acc[i][0] = acc[i][1] = minAcc[i] = _mm256_setzero_ps();
        auto block = [&](const uint8_t* blk, int64_t b, const float* scale /* [M], stride 8 */) {
            __m256i wLo, wHi;
            weights16<F>(blk, wLo, wHi);
            for (int i = 0; i < M; ++i) {
                const __m256 s = _mm256_cvtepi32_ps(dot32(wLo, wHi, xq.q + (i * nb + b) * kBlock));
                acc[i][b & 1] = _mm256_fmadd_ps(s, _mm256_broadcast_ss(scale + 8 * i), acc[i][b & 1]);
            }
        };
        int64_t b = 0;
        for (; b + 8 <= nb; b += 8) {
            const uint8_t* blk = row + b * F::bytes;
            prefetchWeightsAhead(blk, 8 * F::bytes);
            const __m256 dw = halves8<F>(blk, 0);
            alignas(32) float scale[M][8];
            for (int i = 0; i < M; ++i) _mm256_store_ps(scale[i], _mm256_mul_ps(dw, _mm256_loadu_ps(xq.d + i * nb + b)));
            minTerms8<F, M>(blk, dw, b, xq, minAcc);
            for (int j = 0; j < 8; ++j) block(blk + j * F::bytes, b + j, &scale[0][j]);
        }
        for (; b < nb; ++b) lastBlock<F, M>(row + b * F::bytes, b, xq, acc, minAcc);  // the last nb % 8 blocks
        for (int i = 0; i < M; ++i) t.y[i * t.n + n] = hsum(_mm256_add_ps(_mm256_add_ps(acc[i][0], acc[i][1]), minTerm<F>(minAcc[i])));
    }
}

// fn(std::integral_constant<int, m>) for the rows of x a call takes (1..kGemvMaxRows).
template <class Fn>
void withRows(int64_t m, Fn&& fn) {
    switch (m) {
        case 1: return fn(std::integral_constant<int, 1>{});
        case 2: return fn(std::integral_constant<int, 2>{});
        case 3: return fn(std::integral_constant<int, 3>{});
        default: return fn(std::integral_constant<int, 4>{});
    }
}

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VL__)
#define INFERSCOPE_Q8BLOCKS_VNNI 1
// AVX512-VNNI (Cascade Lake, Ice Lake, Sapphire Rapids and later; the kernel set itself asks for
// AVX-512 F/BW/DQ/VL only, so this part is compiled for VNNI and chosen at run time). The same
// integer sums as above, with half the vector work per block: x's 16-bit q split into two bytes,
// q = 256·hi + lo, so that Σ w·q = 256·Σ w·hi + Σ w·lo is two vpdpbusd (u8 × s8, four products
// summed per 32-bit lane) on two whole blocks (64 weights) per 512-bit register:
//   - unsigned weights (Q4_0, Q4_1, Q5_0, Q5_1: 0..31): w as u8 against hi, lo as u8 against w;
//   - signed weights (Q8_0, IQ4_NL): w + 128 (w ^ 0x80) as u8 against hi, which adds 128·Σhi per
//     lane, cancelled exactly by starting the sum at -128·Σhi (hiBias, computed with x).
// Each lane sums at most 4·255·128·257 in magnitude (< 2^25): int32, exact. The sums are the AVX2
// kernel's to the bit; only the order of the f32 accumulation differs.
#pragma GCC push_options
#pragma GCC target("avx512vnni")

// hi, lo and hiBias of `count` elements of q (count a multiple of 32).
void splitBytes(const int16_t* q, int64_t count, int8_t* hi, uint8_t* lo, int32_t* hiBias) {
    for (int64_t c = 0; c < count; c += 32) {
        const __m512i v = _mm512_loadu_si512(q + c);
        const __m256i h = _mm512_cvtepi16_epi8(_mm512_srai_epi16(v, 8));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(hi + c), h);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(lo + c), _mm512_cvtepi16_epi8(_mm512_and_si512(v, _mm512_set1_epi16(0xFF))));
        const __m256i sumHi = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(1), h);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(hiBias + c / 4), _mm256_mullo_epi32(sumHi, _mm256_set1_epi32(-128)));
    }
}

// 16 bytes of nibbles of two blocks as 64 bytes 0..15: a's elements 0..31, then b's.
inline __m512i nibblePair(const uint8_t* a, const uint8_t* b) {
    const __m256i va = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a)));
    const __m256i vb = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b)));
    const __m512i both = _mm512_inserti64x4(_mm512_castsi256_si512(va), vb, 1);  // a a b b
    return _mm512_and_si512(_mm512_srlv_epi64(both, _mm512_setr_epi64(0, 0, 4, 4, 0, 0, 4, 4)), _mm512_set1_epi8(0x0F));
}

// Bit 4 of the 5-bit formats: bit j of a's qh is element j, of b's element 32 + j.
inline __m512i withBit4(__m512i w, const uint8_t* qhA, const uint8_t* qhB) {
    const __mmask64 high = _cvtu64_mask64(uint64_t(u32At(qhA)) | uint64_t(u32At(qhB)) << 32);
    return _mm512_mask_add_epi8(w, high, w, _mm512_set1_epi8(0x10));
}

// The integer weights of two consecutive blocks as 64 bytes (element order), and whether they are
// signed (s8) or unsigned (u8 below 32).
template <class F> struct PairWeights;
template <> struct PairWeights<Q8_0> {
    static constexpr bool isSigned = true;
    static __m512i load(const uint8_t* a, const uint8_t* b) {
        return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + 2))),
                                  _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 2)), 1);
    }
};
template <> struct PairWeights<Q4_0> {
    static constexpr bool isSigned = false;
    static __m512i load(const uint8_t* a, const uint8_t* b) { return nibblePair(a + 2, b + 2); }
};
template <> struct PairWeights<Q4_1> {
    static constexpr bool isSigned = false;
    static __m512i load(const uint8_t* a, const uint8_t* b) { return nibblePair(a + 4, b + 4); }
};
template <> struct PairWeights<Q5_0> {
    static constexpr bool isSigned = false;
    static __m512i load(const uint8_t* a, const uint8_t* b) { return withBit4(nibblePair(a + 6, b + 6), a + 2, b + 2); }
};
template <> struct PairWeights<Q5_1> {
    static constexpr bool isSigned = false;
    static __m512i load(const uint8_t* a, const uint8_t* b) { return withBit4(nibblePair(a + 8, b + 8), a + 4, b + 4); }
};
template <> struct PairWeights<IQ4_NL> {
    static constexpr bool isSigned = true;
    static __m512i load(const uint8_t* a, const uint8_t* b) {
        const __m512i table = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4Values)));
        return _mm512_shuffle_epi8(table, nibblePair(a + 2, b + 2));
    }
};

// As rowsOf: 8 blocks per step (scales as one vector), here as 4 pairs, each pair's 16 lanes
// scaled by its two blocks' d_w·d_x (lanes 0-7 the first block, 8-15 the second).
template <class F, int M>
void rowsOfVnni(const GemvTask& t, const ActivationBlocks32& xq, int64_t n0, int64_t n1) {
    using W = PairWeights<F>;
    const int64_t nb = t.k / kBlock, rowBytes = nb * F::bytes;
    const auto* base = static_cast<const uint8_t*>(t.w);
    const __m512i pick[4] = {_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1),
                             _mm512_setr_epi32(2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3),
                             _mm512_setr_epi32(4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5),
                             _mm512_setr_epi32(6, 6, 6, 6, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7, 7, 7)};
    for (int64_t n = n0; n < n1; ++n) {
        const uint8_t* row = base + n * rowBytes;
        __m512 acc[M][2];
        __m256 last[M][2], minAcc[M];
        for (int i = 0; i < M; ++i) {
            acc[i][0] = acc[i][1] = _mm512_setzero_ps();
            last[i][0] = last[i][1] = minAcc[i] = _mm256_setzero_ps();
        }
        int64_t b = 0;
        for (; b + 8 <= nb; b += 8) {
            const uint8_t* blk = row + b * F::bytes;
            prefetchWeightsAhead(blk, 8 * F::bytes);
            const __m256 dw = halves8<F>(blk, 0);
            __m512 scale[M];
            for (int i = 0; i < M; ++i) scale[i] = _mm512_castps256_ps512(_mm256_mul_ps(dw, _mm256_loadu_ps(xq.d + i * nb + b)));
            minTerms8<F, M>(blk, dw, b, xq, minAcc);
            for (int p = 0; p < 4; ++p) {
                const uint8_t* a = blk + 2 * p * F::bytes;
                const __m512i w = W::load(a, a + F::bytes);
                const __m512i wHi = W::isSigned ? _mm512_xor_si512(w, _mm512_set1_epi8(char(0x80))) : w;
                for (int i = 0; i < M; ++i) {
                    const int64_t e = (i * nb + b + 2 * p) * kBlock;  // x's element of the pair's first weight
                    const __m512i start = W::isSigned ? _mm512_loadu_si512(xq.hiBias + e / 4) : _mm512_setzero_si512();
                    const __m512i h = _mm512_dpbusd_epi32(start, wHi, _mm512_loadu_si512(xq.hi + e));
                    const __m512i sum = _mm512_dpbusd_epi32(_mm512_slli_epi32(h, 8), _mm512_loadu_si512(xq.lo + e), w);
                    acc[i][p & 1] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_permutexvar_ps(pick[p], scale[i]), acc[i][p & 1]);
                }
            }
        }
        for (; b < nb; ++b) lastBlock<F, M>(row + b * F::bytes, b, xq, last, minAcc);
        for (int i = 0; i < M; ++i) {
            const __m512 a = _mm512_add_ps(acc[i][0], acc[i][1]);
            const __m256 halves = _mm256_add_ps(_mm512_castps512_ps256(a), _mm512_extractf32x8_ps(a, 1));
            t.y[i * t.n + n] = hsum(_mm256_add_ps(_mm256_add_ps(halves, last[i][0]), minTerm<F>(minAcc[i])));
        }
    }
}

#pragma GCC pop_options
#endif

#endif

}  // namespace

bool hasInt8BlockKernel(GgmlType type) {
#ifdef INFERSCOPE_Q8BLOCKS_AVX2
    switch (type) {
        case GgmlType::Q8_0:
        case GgmlType::Q4_0:
        case GgmlType::Q4_1:
        case GgmlType::Q5_0:
        case GgmlType::Q5_1:
        case GgmlType::IQ4_NL: return true;
        default: return false;
    }
#else
    (void)type;
    return false;
#endif
}

ActivationBlocks32 quantizeActivations32(const float* x, int64_t m, int64_t k) {
    thread_local AlignedBuffer<int16_t> q;
    thread_local AlignedBuffer<float> scales;  // [m][k/32] d, then [m][k/32] sum
    const int64_t nb = k / kBlock;
    if (q.size() < size_t(m * k)) q.allocate(size_t(m * k));
    if (scales.size() < size_t(2 * m * nb)) scales.allocate(size_t(2 * m * nb));
    float* d = scales.data();
    float* sum = d + m * nb;
    for (int64_t i = 0; i < m; ++i) {
#ifdef INFERSCOPE_Q8BLOCKS_AVX2
        quantizeRow(x + i * k, k, q.data() + i * k, d + i * nb, sum + i * nb);
#else
        quantizeRowPortable(x + i * k, k, q.data() + i * k, d + i * nb, sum + i * nb);
#endif
    }
    ActivationBlocks32 out{q.data(), d, sum, m, k};
#ifdef INFERSCOPE_Q8BLOCKS_VNNI
    if (cpuHasAvx512Vnni()) {
        thread_local AlignedBuffer<int8_t> hi;
        thread_local AlignedBuffer<uint8_t> lo;
        thread_local AlignedBuffer<int32_t> hiBias;
        if (hi.size() < size_t(m * k)) hi.allocate(size_t(m * k)), lo.allocate(size_t(m * k)), hiBias.allocate(size_t(m * k / 4));
        splitBytes(q.data(), m * k, hi.data(), lo.data(), hiBias.data());
        out.hi = hi.data(), out.lo = lo.data(), out.hiBias = hiBias.data();
    }
#endif
    return out;
}

void gemvInt8BlockRows(const GemvTask& t, const ActivationBlocks32& xq, int64_t n0, int64_t n1) {
#ifdef INFERSCOPE_Q8BLOCKS_AVX2
    // The format's kernel: the VNNI one where quantizeActivations32 split x for it.
    auto run = [&](auto format) {
        using F = decltype(format);
        withRows(xq.m, [&](auto m) {
#ifdef INFERSCOPE_Q8BLOCKS_VNNI
            if (xq.hi) return rowsOfVnni<F, m()>(t, xq, n0, n1);
#endif
            rowsOf<F, m()>(t, xq, n0, n1);
        });
    };
    switch (GgmlType(t.blockType)) {
        case GgmlType::Q8_0: return run(Q8_0{});
        case GgmlType::Q4_0: return run(Q4_0{});
        case GgmlType::Q4_1: return run(Q4_1{});
        case GgmlType::Q5_0: return run(Q5_0{});
        case GgmlType::Q5_1: return run(Q5_1{});
        case GgmlType::IQ4_NL: return run(IQ4_NL{});
        default: break;
    }
#endif
    (void)t, (void)xq, (void)n0, (void)n1;  // unreachable: callers ask hasInt8BlockKernel first
}

}  // namespace inferscope::INFERSCOPE_KERNELS_NS
