// x rounded to 8 bits for the K-quant kernels, and the dispatch to them (gemv_kquants.h).
#include "backend/gemv_kquants.h"

#include <cmath>

#include "backend/gemv_kquants_kernels.h"
#include "gguf/ggml_types.h"

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace inferscope::INFERSCOPE_KERNELS_NS {
namespace {

#if defined(__AVX2__)
inline float hmax(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
}

// The lane sums of a and b: {Σa, Σb}.
inline void hsum2(__m256i a, __m256i b, int& sa, int& sb) {
    const __m256i t = _mm256_hadd_epi32(_mm256_hadd_epi32(a, b), _mm256_setzero_si256());  // per lane: Σa, Σb, 0, 0
    const __m128i s = _mm_add_epi32(_mm256_castsi256_si128(t), _mm256_extracti128_si256(t, 1));
    sa = _mm_cvtsi128_si32(s);
    sb = _mm_extract_epi32(s, 1);
}
#endif

void quantizeBlock(const float* x, XBlock256& b) {
#if defined(__AVX2__)
    const __m256 absMask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
    // packs_epi32 then packs_epi16 interleave 4-byte groups of the four vectors per 128-bit lane;
    // this permutation puts them back in order.
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    int rsums[16];
    for (int j = 0; j < 8; ++j) {  // 32 elements: one scale, two sums of 16
        __m256 v[4];
        __m256 amaxv = _mm256_setzero_ps();
        for (int r = 0; r < 4; ++r) {
            v[r] = _mm256_loadu_ps(x + 32 * j + 8 * r);
            amaxv = _mm256_max_ps(amaxv, _mm256_and_ps(v[r], absMask));
        }
        const float amax = hmax(amaxv);
        const __m256 id = _mm256_set1_ps(amax > 0.0f ? 127.0f / amax : 0.0f);
        __m256i q[4], e[4];
        const __m256 steps = _mm256_set1_ps(kXResidueSteps);
        for (int r = 0; r < 4; ++r) {
            const __m256 scaled = _mm256_mul_ps(v[r], id);
            q[r] = _mm256_cvtps_epi32(scaled);
            e[r] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_sub_ps(scaled, _mm256_cvtepi32_ps(q[r])), steps));
        }
        const __m256i packed = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
        _mm256_store_si256(reinterpret_cast<__m256i*>(b.q + 32 * j), _mm256_permutevar8x32_epi32(packed, order));
        const __m256i packedR = _mm256_packs_epi16(_mm256_packs_epi32(e[0], e[1]), _mm256_packs_epi32(e[2], e[3]));
        _mm256_store_si256(reinterpret_cast<__m256i*>(b.r + 32 * j), _mm256_permutevar8x32_epi32(packedR, order));
        int s0, s1;
        hsum2(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3]), s0, s1);
        b.sum16[2 * j] = int16_t(s0);
        b.sum16[2 * j + 1] = int16_t(s1);
        b.sum32[j] = int16_t(s0 + s1);
        b.d[j] = amax / 127.0f;
        // (Stored from here, as sum16 is, GCC 12 at -O3 compiled quantizeX256 to a bare return.)
        hsum2(_mm256_add_epi32(e[0], e[1]), _mm256_add_epi32(e[2], e[3]), rsums[2 * j], rsums[2 * j + 1]);
    }
    for (int s = 0; s < 16; ++s) b.rsum16[s] = int16_t(rsums[s]);
#else
    for (int j = 0; j < 8; ++j) {
        const float* xj = x + 32 * j;
        float amax = 0.0f;
        for (int c = 0; c < 32; ++c) amax = std::fmax(amax, std::fabs(xj[c]));
        const float id = amax > 0.0f ? 127.0f / amax : 0.0f;
        for (int c = 0; c < 32; ++c) {
            const float scaled = xj[c] * id;
            b.q[32 * j + c] = int8_t(std::nearbyint(scaled));
            b.r[32 * j + c] = int8_t(std::nearbyint((scaled - float(b.q[32 * j + c])) * kXResidueSteps));
        }
        b.d[j] = amax / 127.0f;
    }
    for (int s = 0; s < 16; ++s) {
        int sum = 0, rsum = 0;
        for (int c = 0; c < 16; ++c) sum += b.q[16 * s + c], rsum += b.r[16 * s + c];
        b.sum16[s] = int16_t(sum);
        b.rsum16[s] = int16_t(rsum);
    }
    for (int s = 0; s < 8; ++s) b.sum32[s] = int16_t(b.sum16[2 * s] + b.sum16[2 * s + 1]);
#endif
}

}  // namespace

bool kquantKernelFor(uint32_t blockType) {
#if defined(__AVX2__)
    switch (GgmlType(blockType)) {
        case GgmlType::Q4_K:
        case GgmlType::Q5_K:
        case GgmlType::Q6_K: return true;
        default: return false;
    }
#else
    (void)blockType;
    return false;
#endif
}

int kquantExactRows(uint32_t blockType) { return GgmlType(blockType) == GgmlType::Q4_K ? kQ4KExactRows : kKQuantExactRows; }

void quantizeX256(const float* x, int64_t m, int64_t k, XBlock256* out) {
    for (int64_t i = 0; i < m; ++i)
        for (int64_t c = 0; c < k; c += 256) quantizeBlock(x + i * k + c, *out++);
}

void gemvKQuantRows(const GemvTask& t, const XBlock256* xq, int64_t m, int64_t n0, int64_t n1) {
#if defined(__AVX2__)
    switch (GgmlType(t.blockType)) {
        case GgmlType::Q4_K: return kquants::q4_KRows(t, xq, m, n0, n1);
        case GgmlType::Q5_K: return kquants::q5_KRows(t, xq, m, n0, n1);
        case GgmlType::Q6_K: return kquants::q6_KRows(t, xq, m, n0, n1);
        default: break;
    }
#endif
    (void)t, (void)xq, (void)m, (void)n0, (void)n1;
    __builtin_trap();  // callers check kquantKernelFor: a programmer error
}

}  // namespace inferscope::INFERSCOPE_KERNELS_NS
