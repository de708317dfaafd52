#include "backend/gemv.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>

namespace inferscope {
namespace {

// 16 weights from row w at column c as f32 (masked: columns past the row's end read as 0).
template <WeightFormat T>
inline __m512 load16(const void* w, int64_t c, __mmask16 mask) {
    if constexpr (T == WeightFormat::F32) {
        return _mm512_maskz_loadu_ps(mask, static_cast<const float*>(w) + c);
    } else if constexpr (T == WeightFormat::BF16) {
        const __m256i h = _mm256_maskz_loadu_epi16(mask, static_cast<const uint16_t*>(w) + c);
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    } else {
        return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask, static_cast<const uint16_t*>(w) + c));
    }
}

// Sum of the 16 lanes (GCC 12 warns spuriously inside hsum).
inline float hsum(__m512 v) {
    const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
    const __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    const __m128 d = _mm_add_ps(q, _mm_movehl_ps(q, q));
    return _mm_cvtss_f32(_mm_add_ss(d, _mm_movehdup_ps(d)));
}

constexpr int64_t elementBytes(WeightFormat t) { return t == WeightFormat::F32 ? 4 : 2; }

// Rows [n0, n1) of one task: 4 weight rows at a time, each loaded once for all M rows of x.
template <WeightFormat T, int M>
void rowsKernel(const GemvTask& t, int64_t n0, int64_t n1) {
    const int64_t k = t.k, kFull = k & ~int64_t(15);
    const __mmask16 tail = __mmask16((1u << (k - kFull)) - 1);
    const char* base = static_cast<const char*>(t.w);
    const int64_t rowBytes = k * elementBytes(T);
    int64_t n = n0;
    for (; n + 4 <= n1; n += 4) {
        __m512 acc[4][M];
        for (int r = 0; r < 4; ++r)
            for (int i = 0; i < M; ++i) acc[r][i] = _mm512_setzero_ps();
        const void* w[4] = {base + n * rowBytes, base + (n + 1) * rowBytes, base + (n + 2) * rowBytes, base + (n + 3) * rowBytes};
        for (int64_t c = 0; c < k; c += 16) {
            const __mmask16 mask = c < kFull ? __mmask16(0xFFFF) : tail;
            __m512 xv[M];
            for (int i = 0; i < M; ++i) xv[i] = _mm512_maskz_loadu_ps(mask, t.x + i * k + c);
            for (int r = 0; r < 4; ++r) {
                const __m512 wv = load16<T>(w[r], c, mask);
                for (int i = 0; i < M; ++i) acc[r][i] = _mm512_fmadd_ps(wv, xv[i], acc[r][i]);
            }
        }
        for (int i = 0; i < M; ++i)
            for (int r = 0; r < 4; ++r) t.y[i * t.n + n + r] = hsum(acc[r][i]);
    }
    for (; n < n1; ++n) {
        __m512 acc[M];
        for (int i = 0; i < M; ++i) acc[i] = _mm512_setzero_ps();
        const void* w = base + n * rowBytes;
        for (int64_t c = 0; c < k; c += 16) {
            const __mmask16 mask = c < kFull ? __mmask16(0xFFFF) : tail;
            const __m512 wv = load16<T>(w, c, mask);
            for (int i = 0; i < M; ++i) acc[i] = _mm512_fmadd_ps(wv, _mm512_maskz_loadu_ps(mask, t.x + i * k + c), acc[i]);
        }
        for (int i = 0; i < M; ++i) t.y[i * t.n + n] = hsum(acc[i]);
    }
}

template <int M>
void rows(const GemvTask& t, int64_t n0, int64_t n1) {
    switch (t.type) {
        case WeightFormat::F32: rowsKernel<WeightFormat::F32, M>(t, n0, n1); break;
        case WeightFormat::BF16: rowsKernel<WeightFormat::BF16, M>(t, n0, n1); break;
        case WeightFormat::F16: rowsKernel<WeightFormat::F16, M>(t, n0, n1); break;
        case WeightFormat::S8: break;  // int8 runs through oneDNN
    }
}

void rows(const GemvTask& t, int64_t m, int64_t n0, int64_t n1) {
    switch (m) {
        case 1: rows<1>(t, n0, n1); break;
        case 2: rows<2>(t, n0, n1); break;
        case 3: rows<3>(t, n0, n1); break;
        default: rows<4>(t, n0, n1); break;
    }
}

// Below this many weight bytes one thread finishes before a fork/join would pay off.
constexpr int64_t kParallelBytes = 256 * 1024;

}  // namespace

void gemv(std::span<const GemvTask> tasks, int64_t m, int nThreads) {
    // Work is split by weight rows across all tasks together: thread t takes the global row range
    // [t·R/T, (t+1)·R/T), rounded to multiples of 4 rows (one cache-friendly stream per row).
    int64_t totalRows = 0, totalBytes = 0;
    for (const auto& t : tasks) {
        totalRows += t.n;
        totalBytes += t.n * t.k * elementBytes(t.type);
    }
    const int threads = totalBytes < kParallelBytes ? 1 : std::max(1, nThreads);
    auto work = [&](int thread, int count) {
        const int64_t begin = totalRows * thread / count / 4 * 4;
        const int64_t end = thread + 1 == count ? totalRows : totalRows * (thread + 1) / count / 4 * 4;
        int64_t offset = 0;
        for (const auto& t : tasks) {
            const int64_t lo = std::max(begin - offset, int64_t(0)), hi = std::min(end - offset, t.n);
            if (lo < hi) rows(t, m, lo, hi);
            offset += t.n;
        }
    };
    if (threads == 1) {
        work(0, 1);
        return;
    }
#pragma omp parallel num_threads(threads)
    work(omp_get_thread_num(), omp_get_num_threads());
}

}  // namespace inferscope
