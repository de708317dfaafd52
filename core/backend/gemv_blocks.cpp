#include "backend/gemv_blocks.h"

#include <algorithm>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "common/aligned_buffer.h"
#include "gguf/quant_blocks.h"

namespace inferscope {
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

#if defined(__AVX2__) && defined(__FMA__)
inline float hsum(__m256 s) {
    const __m128 q = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
    const __m128 d = _mm_add_ps(q, _mm_movehl_ps(q, q));
    return _mm_cvtss_f32(_mm_add_ss(d, _mm_movehdup_ps(d)));
}

// 8 bytes (the low or high half of a 128-bit lane chosen by `upper`) as 8 floats.
inline __m256 bytesToFloats(__m128i v, bool upper) {
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(upper ? _mm_srli_si128(v, 8) : v));
}

// Q4_K fused: per group of 64, the nibbles are unpacked in registers and turned into the exact
// weights d1·q - m1 (as the decoder computes them), then multiplied into the accumulators.
template <int M>
void q4_KRows(const GemvTask& t, const float* x, int64_t n0, int64_t n1) {
    const int64_t k = t.k, nb = k / 256, rowBytes = nb * 144;
    const auto* base = static_cast<const uint8_t*>(t.w);
    const __m256i mask = _mm256_set1_epi8(0x0F);
    for (int64_t n = n0; n < n1; ++n) {
        const uint8_t* b = base + n * rowBytes;
        __m256 acc[M][2];
        for (int i = 0; i < M; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
        for (int64_t blk = 0; blk < nb; ++blk, b += 144) {
            _mm_prefetch(reinterpret_cast<const char*>(b) + 576, _MM_HINT_T0);
            float dl[8], ml[8];
            quantScaleMinsK4(b, dl, ml);
            const uint8_t* q = b + 16;
            for (int g = 0; g < 4; ++g, q += 32) {
                const __m256i qs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q));
                const __m256i nib[2] = {_mm256_and_si256(qs, mask), _mm256_and_si256(_mm256_srli_epi16(qs, 4), mask)};
                for (int h = 0; h < 2; ++h) {  // low nibbles: sub-block 2g; high: 2g + 1
                    const __m256 d = _mm256_set1_ps(dl[2 * g + h]), mn = _mm256_set1_ps(ml[2 * g + h]);
                    const __m128i parts[2] = {_mm256_castsi256_si128(nib[h]), _mm256_extracti128_si256(nib[h], 1)};
                    const float* xb = x + blk * 256 + g * 64 + h * 32;
                    for (int j = 0; j < 4; ++j) {
                        const __m256 w = _mm256_sub_ps(_mm256_mul_ps(d, bytesToFloats(parts[j / 2], j % 2)), mn);
                        for (int i = 0; i < M; ++i) acc[i][j & 1] = _mm256_fmadd_ps(w, _mm256_loadu_ps(xb + i * k + 8 * j), acc[i][j & 1]);
                    }
                }
            }
        }
        for (int i = 0; i < M; ++i) t.y[i * t.n + n] = hsum(_mm256_add_ps(acc[i][0], acc[i][1]));
    }
}
#endif

}  // namespace

void gemvBlockRows(const GemvTask& t, const float* x, int64_t m, int64_t n0, int64_t n1) {
#if defined(__AVX2__) && defined(__FMA__)
    if (GgmlType(t.blockType) == GgmlType::Q4_K) {
        switch (m) {
            case 1: return q4_KRows<1>(t, x, n0, n1);
            case 2: return q4_KRows<2>(t, x, n0, n1);
            case 3: return q4_KRows<3>(t, x, n0, n1);
            default: return q4_KRows<4>(t, x, n0, n1);
        }
    }
#endif
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
            dequantizeBlocks(type, row + c / info.blockSize * info.typeSize, decoded.data(), size_t(len / info.blockSize));
            for (int64_t i = 0; i < m; ++i) acc[i] += dot(decoded.data(), x + i * k + c, len);
        }
        for (int64_t i = 0; i < m; ++i) t.y[i * t.n + n] = acc[i];
    }
}

}  // namespace inferscope
