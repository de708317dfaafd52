#pragma once
// The AVX2 integer kernels behind gemvKQuantRows (gemv_kquants.h), one per block type; m = 1..4
// rows of x share each weight block's unpacking. Internal to the backend.
#if defined(__AVX2__)
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "backend/gemv_kquants.h"

namespace inferscope::INFERSCOPE_KERNELS_NS::kquants {

void q4_KRows(const GemvTask& t, const XBlock256* xq, int64_t m, int64_t n0, int64_t n1);  // gemv_kquants_avx2.cpp
void q5_KRows(const GemvTask& t, const XBlock256* xq, int64_t m, int64_t n0, int64_t n1);
void q6_KRows(const GemvTask& t, const XBlock256* xq, int64_t m, int64_t n0, int64_t n1);

inline float half(const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

inline float hsum(__m256 v) {
    const __m128 q = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 d = _mm_add_ps(q, _mm_movehl_ps(q, q));
    return _mm_cvtss_f32(_mm_add_ss(d, _mm_movehdup_ps(d)));
}

inline float hsum(__m128 q) {
    const __m128 d = _mm_add_ps(q, _mm_movehl_ps(q, q));
    return _mm_cvtss_f32(_mm_add_ss(d, _mm_movehdup_ps(d)));
}

// Calls kernel.template operator()<M>() for M = m (1..kGemvMaxRows): the rows of x become a
// compile-time count, so their accumulators live in registers.
template <class Kernel>
void forRows(int64_t m, Kernel&& kernel) {
    static_assert(kGemvMaxRows == 4);
    switch (m) {
        case 1: return kernel.template operator()<1>();
        case 2: return kernel.template operator()<2>();
        case 3: return kernel.template operator()<3>();
        default: return kernel.template operator()<4>();
    }
}

}  // namespace inferscope::INFERSCOPE_KERNELS_NS::kquants
#endif
