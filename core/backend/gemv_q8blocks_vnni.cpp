// The AVX512-VNNI kernel of the 32-element block formats (gemv_q8blocks.h), for Cascade Lake, Ice
// Lake, Sapphire Rapids and later. Compiled once per kernel set (common/kernel_set.h), it exists in
// the avx512 set only; that set asks for AVX-512 F/BW/DQ/VL only, so this part is compiled for
// VNNI and chosen at run time (quantizeActivations32 splits x for it where the CPU has VNNI).
//
// The same integer sums as the AVX2 kernel (gemv_q8blocks_avx2.cpp), with half the vector work per
// block: x's 16-bit q split into two bytes, q = 256·hi + lo, so that Σ w·q = 256·Σ w·hi + Σ w·lo
// is two vpdpbusd (u8 × s8, four products summed per 32-bit lane) on two whole blocks (64 weights)
// per 512-bit register:
//   - unsigned weights (Q4_0, Q4_1, Q5_0, Q5_1: 0..31): w as u8 against hi, lo as u8 against w;
//   - signed weights (Q8_0, IQ4_NL): w + 128 (w ^ 0x80) as u8 against hi, which adds 128·Σhi per
//     lane, cancelled exactly by starting the sum at -128·Σhi (hiBias, computed with x).
// Each lane sums at most 4·255·128·257 in magnitude (< 2^25): int32, exact. The sums are the AVX2
// kernel's to the bit; only the order of the f32 accumulation differs.
#include "backend/gemv_q8blocks_kernels.h"
#include "backend/prefetch_weights.h"

#ifdef INFERSCOPE_Q8BLOCKS_VNNI

namespace inferscope::INFERSCOPE_KERNELS_NS {

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

namespace {

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

}  // namespace

#pragma GCC pop_options

// gemvInt8BlockRows for x split into bytes: the format's kernel for the rows of x.
void gemvInt8BlockRowsVnni(const GemvTask& t, const ActivationBlocks32& xq, int64_t n0, int64_t n1) {
    withFormat(GgmlType(t.blockType), [&](auto format) {
        using F = decltype(format);
        withRows(xq.m, [&](auto m) { rowsOfVnni<F, m()>(t, xq, n0, n1); });
    });
}

}  // namespace inferscope::INFERSCOPE_KERNELS_NS

#endif
