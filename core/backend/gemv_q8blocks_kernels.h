#pragma once
// What the integer kernels behind gemvInt8BlockRows (gemv_q8blocks.h) share: the six formats'
// integer weights, the dot product of a block with x's int16 values, the per-block scales and
// min/offset terms, and the dispatch on the rows of x. Used by gemv_q8blocks_avx2.cpp (x's
// rounding, the AVX2 kernel, the dispatch) and gemv_q8blocks_vnni.cpp (the AVX512-VNNI kernel).
// Internal to the backend; compiled once per kernel set (common/kernel_set.h), the kernels in the
// avx2 and avx512 sets only.

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "backend/gemv_q8blocks.h"
#include "gguf/quant_blocks.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>
#define INFERSCOPE_Q8BLOCKS_AVX2 1
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VL__)
#define INFERSCOPE_Q8BLOCKS_VNNI 1  // gemv_q8blocks_vnni.cpp
#endif
#endif

namespace inferscope::INFERSCOPE_KERNELS_NS {
namespace {

constexpr int64_t kBlock = 32;

#ifdef INFERSCOPE_Q8BLOCKS_AVX2

inline float hsum(__m256 s) {
    const __m128 q = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
    const __m128 d = _mm_add_ps(q, _mm_movehl_ps(q, q));
    return _mm_cvtss_f32(_mm_add_ss(d, _mm_movehdup_ps(d)));
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

// fn(the format's type) for a block type with an integer kernel; nothing for other types.
template <class Fn>
void withFormat(GgmlType type, Fn&& fn) {
    switch (type) {
        case GgmlType::Q8_0: return fn(Q8_0{});
        case GgmlType::Q4_0: return fn(Q4_0{});
        case GgmlType::Q4_1: return fn(Q4_1{});
        case GgmlType::Q5_0: return fn(Q5_0{});
        case GgmlType::Q5_1: return fn(Q5_1{});
        case GgmlType::IQ4_NL: return fn(IQ4_NL{});
        default: break;
    }
}

#endif

}  // namespace

#ifdef INFERSCOPE_Q8BLOCKS_VNNI
// The AVX512-VNNI kernel (gemv_q8blocks_vnni.cpp), chosen at run time where the CPU has VNNI.
// x's q as two bytes and their bias, for it (quantizeActivations32).
void splitBytes(const int16_t* q, int64_t count, int8_t* hi, uint8_t* lo, int32_t* hiBias);
// gemvInt8BlockRows on the bytes splitBytes made.
void gemvInt8BlockRowsVnni(const GemvTask& t, const ActivationBlocks32& xq, int64_t n0, int64_t n1);
#endif

}  // namespace inferscope::INFERSCOPE_KERNELS_NS
