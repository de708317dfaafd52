#pragma once
// AVX2 versions of the commonest block decoders (Q8_0, Q4_0, Q4_K, Q6_K), included by
// quant_blocks.cpp only. They compute the very same float32 operations as the scalar decoders
// (integer unpacking in vector registers, then one rounding per product as ggml does; no FMA:
// the file is built with -ffp-contract=off), so the goldens memcmp them too.
#if defined(__AVX2__)
#include <immintrin.h>

#include <cstdint>

namespace inferscope::INFERSCOPE_KERNELS_NS::avx2 {

// 8 int8 values at q (any alignment) as 8 floats.
inline __m256 floats8(const int8_t* q) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q))));
}

// y[0..32) = float(q[j]) * d, the int8 values in a register.
inline void scale32(__m256i q, float d, float* y) {
    alignas(32) int8_t tmp[32];
    _mm256_store_si256(reinterpret_cast<__m256i*>(tmp), q);
    const __m256 dv = _mm256_set1_ps(d);
    for (int g = 0; g < 4; ++g) _mm256_storeu_ps(y + 8 * g, _mm256_mul_ps(floats8(tmp + 8 * g), dv));
}

inline void q8_0(const uint8_t* b, float* y, float d) {  // d, qs[32]
    scale32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 2)), d, y);
}

inline void q4_0(const uint8_t* b, float* y, float d) {  // d, qs[16]: low nibbles 0..15, high 16..31
    const __m128i qs = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 2));
    const __m128i mask = _mm_set1_epi8(0x0F), eight = _mm_set1_epi8(8);
    const __m128i lo = _mm_sub_epi8(_mm_and_si128(qs, mask), eight);
    const __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(qs, 4), mask), eight);
    scale32(_mm256_set_m128i(hi, lo), d, y);
}

// (dl · q) - ml for 32 unsigned nibble values held as bytes.
inline void scaleMin32(__m256i q, float dl, float ml, float* y) {
    alignas(32) int8_t tmp[32];
    _mm256_store_si256(reinterpret_cast<__m256i*>(tmp), q);
    const __m256 dv = _mm256_set1_ps(dl), mv = _mm256_set1_ps(ml);
    for (int g = 0; g < 4; ++g) _mm256_storeu_ps(y + 8 * g, _mm256_sub_ps(_mm256_mul_ps(dv, floats8(tmp + 8 * g)), mv));
}

// One Q4_K group of 64: 32 bytes of qs, low nibbles with (d1, m1), high nibbles with (d2, m2).
inline void q4_KGroup(const uint8_t* q, float d1, float m1, float d2, float m2, float* y) {
    const __m256i qs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q));
    const __m256i mask = _mm256_set1_epi8(0x0F);
    scaleMin32(_mm256_and_si256(qs, mask), d1, m1, y);
    scaleMin32(_mm256_and_si256(_mm256_srli_epi16(qs, 4), mask), d2, m2, y + 32);
}

// One Q6_K half (128 elements): ql[64], qh[32], sc[8]; element l + 32k as in quant_blocks.cpp.
inline void q6_KHalf(const uint8_t* ql, const uint8_t* qh, const int8_t* sc, float d, float* y) {
    const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql));
    const __m256i lo32 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql + 32));
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qh));
    const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(3), k32 = _mm256_set1_epi8(32);
    // bits 2k..2k+1 of qh, shifted to bits 4..5 (16-bit shifts, then masked per byte)
    auto high = [&](int shift) {
        const __m256i v = shift >= 4 ? _mm256_srli_epi16(h, shift - 4) : _mm256_slli_epi16(h, 4 - shift);
        return _mm256_and_si256(v, _mm256_slli_epi16(m2, 4));
    };
    const __m256i q[4] = {
        _mm256_sub_epi8(_mm256_or_si256(_mm256_and_si256(lo, m4), high(0)), k32),
        _mm256_sub_epi8(_mm256_or_si256(_mm256_and_si256(lo32, m4), high(2)), k32),
        _mm256_sub_epi8(_mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(lo, 4), m4), high(4)), k32),
        _mm256_sub_epi8(_mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(lo32, 4), m4), high(6)), k32),
    };
    alignas(32) int8_t tmp[32];
    for (int k = 0; k < 4; ++k) {
        _mm256_store_si256(reinterpret_cast<__m256i*>(tmp), q[k]);
        for (int half16 = 0; half16 < 2; ++half16) {
            const __m256 dl = _mm256_set1_ps(d * float(sc[half16 + 2 * k]));
            for (int g = 0; g < 2; ++g) {
                const int l = 16 * half16 + 8 * g;
                _mm256_storeu_ps(y + 32 * k + l, _mm256_mul_ps(dl, floats8(tmp + l)));
            }
        }
    }
}

}  // namespace inferscope::INFERSCOPE_KERNELS_NS::avx2
#endif
