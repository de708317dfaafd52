// Compiled once per kernel set (common/kernel_set.h): the AVX-512 kernels below in the avx512
// set, the AVX2 ones in the avx2 set, the portable loop in the portable set.
#include "backend/gemv.h"

#include "backend/gemv_blocks.h"
#include "backend/gemv_kquants.h"
#include "backend/gemv_q8blocks.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <type_traits>
#include <vector>

#include "backend/hsum_avx512.h"
#include "common/aligned_buffer.h"
#include "gguf/ggml_types.h"
#include "gguf/quant_blocks.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VL__)
#include <immintrin.h>
#define INFERSCOPE_GEMV_AVX512 1
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>
#define INFERSCOPE_GEMV_AVX2 1
#include "backend/gemv_plain_avx2.h"
#endif

namespace inferscope::INFERSCOPE_KERNELS_NS {
namespace {


// Bytes of one stored row of a task (what the work split and the parallel threshold count).
int64_t rowBytesOf(const GemvTask& t) {
    if (t.type != WeightFormat::Blocks) return t.k * elementBytes(t.type);
    const auto info = *ggmlTypeInfo(t.blockType);
    return t.k / info.blockSize * info.typeSize;
}

// More than 4 rows of x (up to kGemvPlainMaxRows, F32/BF16/F16): 16 weight rows at a time are
// multiplied by x's first 4 rows, then, from the cache, by the others, so the weights come from
// memory once. Each row's sums are those of the 4-row (and 1-row) kernel: the same bits.
template <class Rows>
void rowsPastFour(const GemvTask& t, const float* x, int64_t m, int64_t n0, int64_t n1, const float* xs, Rows upToFour) {
    GemvTask rest = t;
    rest.y = t.y + 4 * t.n;
    const int64_t k = t.k;
    for (int64_t n = n0; n < n1; n += 16) {
        const int64_t end = std::min(n + 16, n1);
        upToFour(t, x, 4, n, end, xs);
        upToFour(rest, x + 4 * k, m - 4, n, end, xs ? xs + 4 * k : nullptr);
    }
}

#ifdef INFERSCOPE_GEMV_AVX512

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

// Rows [n0, n1) of one task: 4 weight rows at a time, each loaded once for all M rows of x.
// F32 and F16 take 16 columns per step; BF16 takes 32 with one load and no conversion
// instruction: in a 32-bit lane holding bf16 elements (2i, 2i+1), `lane << 16` is element 2i as
// f32 and `lane & 0xFFFF0000` is element 2i+1, multiplied by x's even and odd elements
// (deinterleaved once per call into xs). Fewer instructions per byte keep more loads in flight:
// 29.6 GB/s against 24.5 for the convert-then-FMA loop (5632x2048 bf16, 2 threads, probe 32).
template <WeightFormat T, int M>
void rowsKernel(const GemvTask& t, const float* x, int64_t n0, int64_t n1, const float* xs) {
    const int64_t k = t.k;
    // F16 takes 32 columns a step into two sets of accumulators (the even and the odd 16 columns,
    // added at the end): two loads of a row in flight per step. TinyLlama F16 decode, 12 interleaved
    // rounds against one set of 16: 1.06-1.09x (11 rounds of 12 faster; bench/README.md).
    constexpr bool kTwo = T == WeightFormat::F16;
    const int64_t step = T == WeightFormat::BF16 || kTwo ? 32 : 16;
    const int64_t kMain = k / step * step, kFull = k & ~int64_t(15);
    const __mmask16 tail = __mmask16((1u << (k - kFull)) - 1);
    const char* base = static_cast<const char*>(t.w);
    const int64_t rowBytes = k * elementBytes(T);
    auto blockOf = [&](int64_t n, auto rowsC) {
        constexpr int R = decltype(rowsC)::value;
        __m512 acc[R][M], acc2[R][M];
        for (int r = 0; r < R; ++r)
            for (int i = 0; i < M; ++i) acc[r][i] = acc2[r][i] = _mm512_setzero_ps();
        const char* w[R];
        for (int r = 0; r < R; ++r) w[r] = base + (n + r) * rowBytes;
        // Prefetch distance: kGemvPrefetchBytes along the row, or the next block of rows (gemv.h).
        const int64_t ahead = rowBytes < kGemvShortRowBytes ? R * rowBytes : kGemvPrefetchBytes;
        for (int64_t c = 0; c < kMain; c += step) {
            for (int r = 0; r < R; ++r) _mm_prefetch(w[r] + c * elementBytes(T) + ahead, _MM_HINT_T0);
            if constexpr (T == WeightFormat::BF16) {
                __m512 xe[M], xo[M];
                for (int i = 0; i < M; ++i) {
                    xe[i] = _mm512_loadu_ps(xs + i * k + c);
                    xo[i] = _mm512_loadu_ps(xs + i * k + c + 16);
                }
                for (int r = 0; r < R; ++r) {
                    const __m512i h = _mm512_loadu_si512(w[r] + c * 2);
                    const __m512 even = _mm512_castsi512_ps(_mm512_slli_epi32(h, 16));
                    const __m512 odd = _mm512_castsi512_ps(_mm512_and_si512(h, _mm512_set1_epi32(int(0xFFFF0000u))));
                    for (int i = 0; i < M; ++i) acc[r][i] = _mm512_fmadd_ps(odd, xo[i], _mm512_fmadd_ps(even, xe[i], acc[r][i]));
                }
            } else if constexpr (kTwo) {
                __m512 xv[M], xw[M];
                for (int i = 0; i < M; ++i) {
                    xv[i] = _mm512_loadu_ps(x + i * k + c);
                    xw[i] = _mm512_loadu_ps(x + i * k + c + 16);
                }
                for (int r = 0; r < R; ++r) {
                    const __m512 wv = load16<T>(w[r], c, __mmask16(0xFFFF)), ww = load16<T>(w[r], c + 16, __mmask16(0xFFFF));
                    for (int i = 0; i < M; ++i) {
                        acc[r][i] = _mm512_fmadd_ps(wv, xv[i], acc[r][i]);
                        acc2[r][i] = _mm512_fmadd_ps(ww, xw[i], acc2[r][i]);
                    }
                }
            } else {
                __m512 xv[M];
                for (int i = 0; i < M; ++i) xv[i] = _mm512_loadu_ps(x + i * k + c);
                for (int r = 0; r < R; ++r) {
                    const __m512 wv = load16<T>(w[r], c, __mmask16(0xFFFF));
                    for (int i = 0; i < M; ++i) acc[r][i] = _mm512_fmadd_ps(wv, xv[i], acc[r][i]);
                }
            }
        }
        if constexpr (kTwo)
            for (int r = 0; r < R; ++r)
                for (int i = 0; i < M; ++i) acc[r][i] = _mm512_add_ps(acc[r][i], acc2[r][i]);
        for (int64_t c = kMain; c < k; c += 16) {  // the last columns, 16 (masked) at a time
            const __mmask16 mask = c < kFull ? __mmask16(0xFFFF) : tail;
            __m512 xv[M];
            for (int i = 0; i < M; ++i) xv[i] = _mm512_maskz_loadu_ps(mask, x + i * k + c);
            for (int r = 0; r < R; ++r) {
                const __m512 wv = load16<T>(w[r], c, mask);
                for (int i = 0; i < M; ++i) acc[r][i] = _mm512_fmadd_ps(wv, xv[i], acc[r][i]);
            }
        }
        for (int i = 0; i < M; ++i)
            for (int r = 0; r < R; ++r) t.y[i * t.n + n + r] = hsum(acc[r][i]);
    };
    // 4 weight rows a block for one or two rows of x, 2 for three or four: GCC kept 4 x 4
    // accumulators in memory, storing all 16 at every step (F16 M=4 ran at 20% of the FMA peak,
    // a 4-sequence decode step of TinyLlama F16 taking 1.9x one of one sequence).
    constexpr int kRowsPerBlock = M >= 3 ? 2 : 4;
    int64_t n = n0;
    for (; n + kRowsPerBlock <= n1; n += kRowsPerBlock) blockOf(n, std::integral_constant<int, kRowsPerBlock>{});
    for (; n < n1; ++n) blockOf(n, std::integral_constant<int, 1>{});
}

// x's rows with each 32-column block split into its 16 even then 16 odd elements (BF16 kernel).
void deinterleave(const float* x, int64_t m, int64_t k, float* xs) {
    const int64_t kMain = k / 32 * 32;
    for (int64_t i = 0; i < m; ++i)
        for (int64_t c = 0; c < kMain; c += 32)
            for (int j = 0; j < 16; ++j) {
                xs[i * k + c + j] = x[i * k + c + 2 * j];
                xs[i * k + c + 16 + j] = x[i * k + c + 2 * j + 1];
            }
}

#elif defined(INFERSCOPE_GEMV_AVX2)
// rowsKernel and deinterleave: gemv_plain_avx2.h, included above.

#else
// The portable set: one row at a time.
void deinterleave(const float*, int64_t, int64_t, float*) {}
void rows(const GemvTask& t, const float* x, int64_t m, int64_t n0, int64_t n1, const float*) {
    if (t.type == WeightFormat::Blocks) {
        gemvBlockRows(t, x, m, n0, n1);
        return;
    }
    const GgmlType type = t.type == WeightFormat::F32 ? GgmlType::F32 : t.type == WeightFormat::BF16 ? GgmlType::BF16 : GgmlType::F16;
    std::vector<float> row(size_t(t.k));
    const char* base = static_cast<const char*>(t.w);
    for (int64_t n = n0; n < n1; ++n) {
        INFERSCOPE_KERNELS_NS::dequantizeRow(type, base + n * t.k * elementBytes(t.type), row.data(), size_t(t.k));
        for (int64_t i = 0; i < m; ++i) {
            float acc = 0.0f;
            for (int64_t c = 0; c < t.k; ++c) acc += row[size_t(c)] * x[i * t.k + c];
            t.y[i * t.n + n] = acc;
        }
    }
}
#endif

#if defined(INFERSCOPE_GEMV_AVX512) || defined(INFERSCOPE_GEMV_AVX2)
// The vector sets: the kernel of this set for the format and the row count.
template <int M>
void rowsOf(const GemvTask& t, const float* x, int64_t n0, int64_t n1, const float* xs) {
    switch (t.type) {
        case WeightFormat::F32: rowsKernel<WeightFormat::F32, M>(t, x, n0, n1, xs); break;
        case WeightFormat::BF16: rowsKernel<WeightFormat::BF16, M>(t, x, n0, n1, xs); break;
        case WeightFormat::F16: rowsKernel<WeightFormat::F16, M>(t, x, n0, n1, xs); break;
        case WeightFormat::S8: break;      // int8 runs through oneDNN
        case WeightFormat::Blocks: break;  // gemvBlockRows
    }
}

void rows(const GemvTask& t, const float* x, int64_t m, int64_t n0, int64_t n1, const float* xs) {
    if (t.type == WeightFormat::Blocks) {
        gemvBlockRows(t, x, m, n0, n1);
        return;
    }
    switch (m) {
        case 1: rowsOf<1>(t, x, n0, n1, xs); break;
        case 2: rowsOf<2>(t, x, n0, n1, xs); break;
        case 3: rowsOf<3>(t, x, n0, n1, xs); break;
        case 4: rowsOf<4>(t, x, n0, n1, xs); break;
        default: rowsPastFour(t, x, m, n0, n1, xs, rows); break;
    }
}
#endif

}  // namespace

void gemv(std::span<const GemvTask> tasks, const float* x, int64_t m, int nThreads) {
    // Work is split by weight rows across all tasks together (the global row space).
    int64_t totalRows = 0, totalBytes = 0;
    for (const auto& t : tasks) {
        totalRows += t.n;
        totalBytes += t.n * rowBytesOf(t);
    }
    // The BF16 kernel's copy of x, deinterleaved (grown once per thread, then reused).
    thread_local AlignedBuffer<float> xsBuffer;
    const float* xs = nullptr;
    for (const auto& t : tasks) {
        if (t.type != WeightFormat::BF16 || xs) continue;
        if (xsBuffer.size() < size_t(m * t.k)) xsBuffer.allocate(size_t(m * t.k));
        deinterleave(x, m, t.k, xsBuffer.data());
        xs = xsBuffer.data();
    }
    // Quantized tasks multiply x rounded once here and read by every thread (every task of a call
    // has the same k): the K-quants to 8 bits per 32 (gemv_kquants.h), the 32-element block formats
    // to 16-bit blocks of 32 (gemv_q8blocks.h).
    auto kquantBlocks = [](const GemvTask& t) { return t.type == WeightFormat::Blocks && kquantKernelFor(t.blockType); };
    thread_local AlignedBuffer<XBlock256> xqBuffer;
    const XBlock256* xq = nullptr;
    if (std::any_of(tasks.begin(), tasks.end(), kquantBlocks)) {
        const int64_t k = tasks[0].k;
        if (xqBuffer.size() < size_t(m * k / 256)) xqBuffer.allocate(size_t(m * k / 256));
        quantizeX256(x, m, k, xqBuffer.data());
        xq = xqBuffer.data();
    }
    auto int8Blocks = [](const GemvTask& t) { return t.type == WeightFormat::Blocks && hasInt8BlockKernel(GgmlType(t.blockType)); };
    ActivationBlocks32 xq32;
    if (std::any_of(tasks.begin(), tasks.end(), int8Blocks)) xq32 = quantizeActivations32(x, m, tasks[0].k);
    const int threads = totalBytes < kGemvParallelBytes ? 1 : std::max(1, nThreads);
    // Rows of [begin, end) in the global row space, task by task.
    auto runRows = [&](int64_t begin, int64_t end) {
        int64_t offset = 0;
        for (const auto& t : tasks) {
            const int64_t lo = std::max(begin - offset, int64_t(0)), hi = std::min(end - offset, t.n);
            if (lo < hi && kquantBlocks(t))
                gemvKQuantRows(t, xq, m, lo, hi);
            else if (lo < hi && int8Blocks(t))
                gemvInt8BlockRows(t, xq32, lo, hi);
            else if (lo < hi)
                rows(t, x, m, lo, hi, xs);
            offset += t.n;
        }
    };
    if (threads == 1) {
        runRows(0, totalRows);
        return;
    }
    // Threads take chunks of weights from a shared counter: a thread that loses its core for a
    // while (the GUI, another process) leaves its share to the others instead of making every
    // thread wait for it at the region's end. A chunk is a quarter of a thread's share, between
    // 64 KiB and 1 MiB: each chunk restarts the weight streams (the hardware prefetchers and the
    // kernels' prefetch distance, 8 KiB ahead for the blocks), and 64 KiB chunks for every matrix
    // left TinyLlama decode 15-20% slower in Q4_K_M and Q4_0 and ~9% in F16 (AVX-512 host, bench
    // tg32, interleaved runs; bench/README.md).
    const int64_t rowBytes = totalBytes / std::max<int64_t>(totalRows, 1);
    const int64_t chunkBytes = std::clamp<int64_t>(totalBytes / (4 * int64_t(threads)), kGemvMinChunkBytes, kGemvMaxChunkBytes);
    const int64_t chunk = std::max<int64_t>(4, (chunkBytes / std::max<int64_t>(rowBytes, 1)) / 4 * 4);
    std::atomic<int64_t> next{0};
#pragma omp parallel num_threads(threads)
    for (int64_t begin = next.fetch_add(chunk, std::memory_order_relaxed); begin < totalRows;
         begin = next.fetch_add(chunk, std::memory_order_relaxed))
        runRows(begin, std::min(begin + chunk, totalRows));
}

}  // namespace inferscope::INFERSCOPE_KERNELS_NS
