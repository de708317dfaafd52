#pragma once
// The avx2 kernel set's GEMV on plain weights (F32, BF16, F16): rowsKernel and deinterleave as
// gemv.cpp's dispatch calls them. Included by gemv.cpp only, when it is compiled for that set.

#include <immintrin.h>

#include <cstdint>

#include "backend/gemv.h"
#include "gguf/ggml_types.h"

namespace inferscope::INFERSCOPE_KERNELS_NS {
namespace {

// AVX2 + FMA + F16C (a CPU without AVX-512, e.g. AMD Zen 2/3): 8 columns per step, bf16 widened by
// a shift, f16 by vcvtph2ps; several weight rows share each load of x. The portable loop below
// (one row, a scalar sum the compiler may not reorder) reached ~200 M weights/s here: the LM head
// of a 152k-token vocabulary took 50 ms per token.

template <WeightFormat T>
inline __m256 load8(const char* row, int64_t c) {
    if constexpr (T == WeightFormat::F32) {
        return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + c);
    } else if constexpr (T == WeightFormat::BF16) {
        const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(reinterpret_cast<const uint16_t*>(row) + c));
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    } else {
        return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(reinterpret_cast<const uint16_t*>(row) + c)));
    }
}

template <WeightFormat T>
inline float load1(const char* row, int64_t c) {
    if constexpr (T == WeightFormat::F32) return reinterpret_cast<const float*>(row)[c];
    else if constexpr (T == WeightFormat::BF16) return bf16ToFp32(reinterpret_cast<const uint16_t*>(row)[c]);
    else return fp16ToFp32(reinterpret_cast<const uint16_t*>(row)[c]);
}

inline float hsum(__m256 v) {
    const __m128 q = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 d = _mm_add_ps(q, _mm_movehl_ps(q, q));
    return _mm_cvtss_f32(_mm_add_ss(d, _mm_movehdup_ps(d)));
}

// Rows [n0, n1) of one task, R weight rows per load of x. F32 takes 8 columns per step, F16 16
// (widened by vcvtph2ps, 8 at a time); BF16 takes 16 with one 256-bit load and no conversion: in a
// 32-bit lane holding bf16 elements (2i, 2i+1), `lane << 16` is element 2i as f32 and
// `lane & 0xFFFF0000` element 2i+1, multiplied by x's even and odd elements (xs: deinterleaved once
// per call). A 64-byte line of a row is 2 steps in every format.
template <WeightFormat T, int M>
void rowsKernel(const GemvTask& t, const float* x, int64_t n0, int64_t n1, const float* xs) {
    const int64_t k = t.k;
    // F16 takes 16 columns a step, 8 into each of two sets of accumulators (added at the end): two
    // independent FMA chains per row, as the AVX-512 kernel does (bench/README.md, issue 29).
    constexpr bool kTwo = T == WeightFormat::F16;
    constexpr int64_t step = T == WeightFormat::BF16 || kTwo ? 16 : 8;
    constexpr int64_t lineCols = 64 / elementBytes(T);  // columns per 64-byte line
    const int64_t kMain = k / lineCols * lineCols;
    const char* base = static_cast<const char*>(t.w);
    const int64_t rowBytes = k * elementBytes(T);
    auto blockOf = [&](int64_t n, auto rowsC) {
        constexpr int R = decltype(rowsC)::value;
        __m256 acc[R][M], acc2[R][M];
        for (int r = 0; r < R; ++r)
            for (int i = 0; i < M; ++i) acc[r][i] = acc2[r][i] = _mm256_setzero_ps();
        const char* w[R];
        for (int r = 0; r < R; ++r) w[r] = base + (n + r) * rowBytes;
        // Prefetch, once per 64-byte line of each row, as the AVX-512 kernel: kGemvPrefetchBytes along
        // the row, or for rows shorter than kGemvShortRowBytes the next block of rows (gemv.h).
        const int64_t ahead = rowBytes < kGemvShortRowBytes ? R * rowBytes : kGemvPrefetchBytes;
        for (int64_t c0 = 0; c0 < kMain; c0 += lineCols) {
            for (int r = 0; r < R; ++r) _mm_prefetch(w[r] + c0 * elementBytes(T) + ahead, _MM_HINT_T0);
            for (int64_t c = c0; c < c0 + lineCols; c += step) {
                if constexpr (T == WeightFormat::BF16) {
                    __m256 xe[M], xo[M];
                    for (int i = 0; i < M; ++i) {
                        xe[i] = _mm256_loadu_ps(xs + i * k + c);
                        xo[i] = _mm256_loadu_ps(xs + i * k + c + 8);
                    }
                    const __m256i high = _mm256_set1_epi32(int(0xFFFF0000u));
                    for (int r = 0; r < R; ++r) {
                        const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[r] + c * 2));
                        const __m256 even = _mm256_castsi256_ps(_mm256_slli_epi32(h, 16));
                        const __m256 odd = _mm256_castsi256_ps(_mm256_and_si256(h, high));
                        for (int i = 0; i < M; ++i) acc[r][i] = _mm256_fmadd_ps(odd, xo[i], _mm256_fmadd_ps(even, xe[i], acc[r][i]));
                    }
                } else if constexpr (kTwo) {  // this step's 8 columns into acc, the next 8 into acc2
                    __m256 xv[M];
                    for (int i = 0; i < M; ++i) xv[i] = _mm256_loadu_ps(x + i * k + c);
                    for (int r = 0; r < R; ++r) {
                        const __m256 wv = load8<T>(w[r], c);
                        for (int i = 0; i < M; ++i) acc[r][i] = _mm256_fmadd_ps(wv, xv[i], acc[r][i]);
                    }
                    for (int i = 0; i < M; ++i) xv[i] = _mm256_loadu_ps(x + i * k + c + 8);
                    for (int r = 0; r < R; ++r) {
                        const __m256 wv = load8<T>(w[r], c + 8);
                        for (int i = 0; i < M; ++i) acc2[r][i] = _mm256_fmadd_ps(wv, xv[i], acc2[r][i]);
                    }
                } else {
                    __m256 xv[M];
                    for (int i = 0; i < M; ++i) xv[i] = _mm256_loadu_ps(x + i * k + c);
                    for (int r = 0; r < R; ++r) {
                        const __m256 wv = load8<T>(w[r], c);
                        for (int i = 0; i < M; ++i) acc[r][i] = _mm256_fmadd_ps(wv, xv[i], acc[r][i]);
                    }
                }
            }
        }
        if constexpr (kTwo)
            for (int r = 0; r < R; ++r)
                for (int i = 0; i < M; ++i) acc[r][i] = _mm256_add_ps(acc[r][i], acc2[r][i]);
        for (int64_t c = kMain; c + 8 <= k; c += 8) {  // the last whole 8 columns of a line (x as given)
            __m256 xv[M];
            for (int i = 0; i < M; ++i) xv[i] = _mm256_loadu_ps(x + i * k + c);
            for (int r = 0; r < R; ++r) {
                const __m256 wv = load8<T>(w[r], c);
                for (int i = 0; i < M; ++i) acc[r][i] = _mm256_fmadd_ps(wv, xv[i], acc[r][i]);
            }
        }
        const int64_t kTail = kMain + (k - kMain) / 8 * 8;
        for (int i = 0; i < M; ++i)
            for (int r = 0; r < R; ++r) {
                float sum = hsum(acc[r][i]);
                for (int64_t c = kTail; c < k; ++c) sum += load1<T>(w[r], c) * x[i * k + c];  // the last k % 8 columns
                t.y[i * t.n + n + r] = sum;
            }
    };
    // 4 weight rows per x load for decode; fewer when x has several rows (16 ymm registers: F16's
    // two sets of R x M accumulators and M rows of x).
    constexpr int kRows = kTwo ? (M == 1 ? 4 : M == 2 ? 2 : 1) : M <= 2 ? 4 : 2;
    int64_t n = n0;
    for (; n + kRows <= n1; n += kRows) blockOf(n, std::integral_constant<int, kRows>{});
    for (; n < n1; ++n) blockOf(n, std::integral_constant<int, 1>{});
}

// x's rows with each 16-column block split into its 8 even then 8 odd elements (BF16 kernel);
// columns past the last whole 16 as they are.
void deinterleave(const float* x, int64_t m, int64_t k, float* xs) {
    const int64_t kMain = k / 16 * 16;
    for (int64_t i = 0; i < m; ++i) {
        for (int64_t c = 0; c < kMain; c += 16)
            for (int j = 0; j < 8; ++j) {
                xs[i * k + c + j] = x[i * k + c + 2 * j];
                xs[i * k + c + 8 + j] = x[i * k + c + 2 * j + 1];
            }
        for (int64_t c = kMain; c < k; ++c) xs[i * k + c] = x[i * k + c];
    }
}

}  // namespace
}  // namespace inferscope::INFERSCOPE_KERNELS_NS
