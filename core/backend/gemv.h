#pragma once
// Decode's matrix-vector products, hand-written: y[r, n] = x[r, :] · W[n, :] for a few rows r of
// x (decode has one) and weights stored row-major [N][K] as GGUF has them (f32, bf16 or f16,
// widened to f32 in registers; f32 accumulation). Decode is memory-bound: what matters is reading
// every weight byte once, at full bandwidth, from both cores. Several matrices that read the same x
// (Q, K and V; gate and up) run in one parallel region, split by bytes, so a fused projection needs
// no copy of the weights and pays one OpenMP fork/join.

#include <cstdint>
#include <span>

#include "backend/linear.h"

namespace inferscope {

inline constexpr int kGemvMaxRows = 4;  // rows of x one call takes, any format
// Rows of x one call takes when every task is F32, BF16 or F16: a decode step of up to 8 sequences
// reads those weights once (8 rows in two calls of 4 read them twice).
inline constexpr int kGemvPlainMaxRows = 8;

// Bytes of one element of a plain format's row (F32 4, BF16 and F16 2).
constexpr int64_t elementBytes(WeightFormat t) { return t == WeightFormat::F32 ? 4 : 2; }
// F32, BF16 and F16: the weights stored as plain numbers (neither blocks nor oneDNN's int8).
constexpr bool isPlainFormat(WeightFormat f) { return f == WeightFormat::F32 || f == WeightFormat::BF16 || f == WeightFormat::F16; }
// Rows of x one gemv call takes for weights of this format (0: the format has no GEMV, oneDNN's S8).
constexpr int gemvMaxRows(WeightFormat f) {
    return isPlainFormat(f) ? kGemvPlainMaxRows : f == WeightFormat::Blocks ? kGemvMaxRows : 0;
}

struct GemvTask {
    const void* w = nullptr;  // [n][k] of `type`
    WeightFormat type = WeightFormat::F32;  // F32, BF16, F16 or Blocks
    int64_t n = 0, k = 0;     // every task of a call has the same k
    float* y = nullptr;        // [m][n]
    uint32_t blockType = 0;   // Blocks: the GgmlType id of the stored blocks
};

// Runs every task on the same x [m][k] (m = 1..kGemvMaxRows; up to kGemvPlainMaxRows when no task
// is Blocks), on up to nThreads OpenMP threads
// (one when the whole job is too small to pay for the fork). No allocation after a thread's first
// call.
// Runs in the active kernel set (common/kernel_set.h).
void gemv(std::span<const GemvTask> tasks, const float* x, int64_t m, int nThreads);

// Row exactness, what batched decode (LlamaModel::decodeBatch) and speculative verification rely
// on: the kernels compute every row of x on its own (no sum mixes rows; per-row rounding of x for
// the block formats; the thread split is by weight rows), so with up to gemvExactRows(t) rows in a
// call each row's y is bit for bit what a call with that row alone gives, whatever the other rows
// hold. That is kGemvPlainMaxRows for F32/BF16/F16, kGemvMaxRows for the block formats, except where a kernel's summation order changes
// with the row count: the K-quant integer kernels (Q4_K, Q5_K, Q6_K) keep 4 accumulators per row
// for 1-2 rows and 2 for 3-4 (the registers), so 2 there, except Q4_K's in the avx512 set, which
// keeps 4 for up to 4 rows (kquantExactRows, gemv_kquants.h). Asked of the active kernel set.
int gemvExactRows(const GemvTask& t);

// Above this many weight bytes a call runs on nThreads threads; below, one thread finishes before
// a fork/join would pay off.
inline constexpr int64_t kGemvParallelBytes = 256 * 1024;
// The bytes of weights a thread takes at a time when several share a call (gemv.cpp).
inline constexpr int64_t kGemvMinChunkBytes = 64 * 1024, kGemvMaxChunkBytes = 1024 * 1024;

// The plain kernels' (F32, BF16, F16; avx512 and avx2 sets) software prefetch distance along each
// weight row (measured best of 0/512/1024/-/8192 on TinyLlama-shape rows of 4–11 KiB) — except for
// rows shorter than kGemvShortRowBytes, where 1 KiB ahead is most of a row and the first lines of
// each next block of rows would be fetched on demand: there the same column R rows down (the next
// block) is prefetched. On the 110M shape (768-wide rows, AVX-512) that took decode from 94 to 114
// tok/s in F16 and from 111 to 134 in BF16.
inline constexpr int kGemvPrefetchBytes = 1024;
inline constexpr int64_t kGemvShortRowBytes = 4096;

}  // namespace inferscope

#ifdef INFERSCOPE_KERNELS_NS
namespace inferscope::INFERSCOPE_KERNELS_NS {
void gemv(std::span<const GemvTask> tasks, const float* x, int64_t m, int nThreads);  // a kernel set's own
}
#endif
