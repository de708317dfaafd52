#include "backend/gemv_blocks.h"

#include <algorithm>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "common/aligned_buffer.h"
#include "gguf/quant_blocks.h"

namespace inferscope::INFERSCOPE_KERNELS_NS {
namespace {

// Elements decoded per step: 4 KiB of f32, stays in L1 beside x's chunk; a multiple of every
// block size (32 and 256).
constexpr int64_t kChunk = 1024;

// n is a multiple of 32 (every block size is).
inline float dot(const float* a, const float* b, int64_t n) {
#if defined(__AVX2__) && defined(__FMA__)
    // Four independent accumulators: one chain would wait on the FMA latency at every step.
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int64_t i = 0; i < n; i += 32)
        for (int j = 0; j < 4; ++j)
            acc[j] = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8 * j), _mm256_loadu_ps(b + i + 8 * j), acc[j]);
    const __m256 s = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
    const __m128 q = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
    const __m128 d = _mm_add_ps(q, _mm_movehl_ps(q, q));
    return _mm_cvtss_f32(_mm_add_ss(d, _mm_movehdup_ps(d)));
#else
    float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
    for (int64_t i = 0; i < n; ++i) acc += a[i] * b[i];
    return acc;
#endif
}


}  // namespace

void gemvBlockRows(const GemvTask& t, const float* x, int64_t m, int64_t n0, int64_t n1) {
    thread_local AlignedBuffer<float> decoded;
    if (decoded.size() < size_t(kChunk)) decoded.allocate(size_t(kChunk));
    const GgmlType type = GgmlType(t.blockType);
    const auto info = *ggmlTypeInfo(t.blockType);
    const int64_t k = t.k;
    const int64_t rowBytes = k / info.blockSize * info.typeSize;
    const auto* base = static_cast<const uint8_t*>(t.w);
    for (int64_t n = n0; n < n1; ++n) {
        const uint8_t* row = base + n * rowBytes;
        float acc[kGemvMaxRows] = {};
        for (int64_t c = 0; c < k; c += kChunk) {
            const int64_t len = std::min(kChunk, k - c);  // whole blocks: k is
            INFERSCOPE_KERNELS_NS::dequantizeBlocks(type, row + c / info.blockSize * info.typeSize, decoded.data(), size_t(len / info.blockSize));
            for (int64_t i = 0; i < m; ++i) acc[i] += dot(decoded.data(), x + i * k + c, len);
        }
        for (int64_t i = 0; i < m; ++i) t.y[i * t.n + n] = acc[i];
    }
}

}  // namespace inferscope::INFERSCOPE_KERNELS_NS
