#pragma once
// The sum of a 16-lane f32 vector, for the AVX-512 kernels of the decode GEMV and of attention
// (compiled in the avx512 kernel set only; common/kernel_set.h).
#if defined(__AVX512F__) && defined(__AVX512DQ__)
#include <immintrin.h>

namespace inferscope::INFERSCOPE_KERNELS_NS {

inline float hsum(__m512 v) {
    const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
    const __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    const __m128 d = _mm_add_ps(q, _mm_movehl_ps(q, q));
    return _mm_cvtss_f32(_mm_add_ss(d, _mm_movehdup_ps(d)));
}

}  // namespace inferscope::INFERSCOPE_KERNELS_NS
#endif
