#pragma once
// Decode's GEMV on the K-quant super-blocks (Q2_K..Q6_K, 256 weights each) as integer dot
// products. Decode is memory-bound only if the arithmetic keeps up with the memory: widening every
// 4-bit weight to f32 costs more instructions per byte than two cores can retire at full bandwidth.
// So x is rounded once per gemv() call to 8 bits (XBlock256: a scale per 32 elements), and each
// weight block's small unsigned integers (0..63) are multiplied with those bytes (AVX2 `maddubs`,
// exact int32 sums per sub-block); only each sub-block's sum is scaled in float. The mins of Q4_K/Q5_K/Q2_K
// and the offsets of Q6_K (-32) and Q3_K (-4) come out of x's precomputed sub-block sums.
// llama.cpp rounds x too (its Q8_K, a scale per 256), so the logits stay as close to the exact
// computation as llama.cpp's, or closer.
// The portable kernel set has no kernel here (kquantKernelFor is false) and decodes blocks to f32.

#include <cstddef>
#include <cstdint>

#include "backend/gemv.h"

namespace inferscope {

// 256 consecutive elements of one row of x, as 8 blocks of 32: x[c] ≈ d[c / 32]·q[c], |q| ≤ 127
// (d = max|x| / 127 of the 32, 0 for an all-zero block). llama.cpp's Q8_K has one scale per 256:
// a scale per 32 keeps an outlier from coarsening the step of 255 other elements, so the decode
// stays closer to the exact computation than llama.cpp's, for one more multiply-add per 32.
//
// A second byte, r, carries the rounding residue: x[c] ≈ d·(q[c] + r[c] / 254), |r| ≤ 127, 16 bits
// of x in all. Q6_K multiplies both bytes (one more maddubs per 32): it is the type llama-quantize
// gives the LM head of most K-quant files (Q2_K…Q5_K_M), where 8-bit x moved the logits enough to
// flip top-1 on 2 of 64 positions of a reference that the exact computation matched (Q2_K file,
// test_engine_quant). Q4_K and Q5_K read q alone.
struct alignas(32) XBlock256 {
    int8_t q[256];
    int8_t r[256];       // round((x·127/max|x| - q)·254)
    float d[8];
    int16_t sum16[16];   // Σ q over each 16 elements (Q6_K's sub-blocks)
    int16_t rsum16[16];  // Σ r over each 16 elements
    int16_t sum32[8];    // Σ q over each 32 elements (Q4_K's and Q5_K's sub-blocks)
};
// The kernels read d, sum16 and rsum16 with 32-byte aligned loads and sum32 with a 16-byte one; an
// offset off those boundaries is a fault on some CPUs and compilers (VMOVDQA), not a slowdown.
static_assert(offsetof(XBlock256, d) % 32 == 0 && offsetof(XBlock256, sum16) % 32 == 0);
static_assert(offsetof(XBlock256, rsum16) % 32 == 0 && offsetof(XBlock256, sum32) % 16 == 0);
inline constexpr float kXResidueSteps = 254.0f;  // r's steps per step of q

}  // namespace inferscope

// A kernel set's functions (common/kernel_set.h), declared in its sources only; elsewhere they are
// reached through backend/kernel_table.h.
#ifdef INFERSCOPE_KERNELS_NS
namespace inferscope::INFERSCOPE_KERNELS_NS {

// The kernels keep 4 independent accumulators per row of x up to kquantExactRows(type) rows, 2
// beyond, where the registers run out: Q4_K's 4 rows × 4 fit AVX-512's 32 vector registers
// (objdump: no spill), not AVX2's 16; Q5_K's and Q6_K's kernels hold more values and spill, so 2
// there. A row's sum is associated differently with 2 accumulators than with 4, so only calls of
// up to that many rows give each row the bits it gets alone (gemvExactRows, gemv.h).
#if defined(__AVX512F__)
inline constexpr int kQ4KExactRows = 4;
#else
inline constexpr int kQ4KExactRows = 2;
#endif
inline constexpr int kKQuantExactRows = 2;  // Q5_K, Q6_K
int kquantExactRows(uint32_t blockType);

// True when this kernel set computes blocks of `blockType` (a GgmlType id) with an integer kernel.
bool kquantKernelFor(uint32_t blockType);

// x [m][k] (k a multiple of 256) rounded to out [m][k / 256] (q = x·127 / max|x| rounded to nearest
// even, per 32; r the residue, rounded likewise).
void quantizeX256(const float* x, int64_t m, int64_t k, XBlock256* out);

// Rows [n0, n1) of a task of a type kquantKernelFor accepts: y[i, n] = x̂[i, :] · W[n, :] for
// i < m, with x̂ = xq [m][k / 256] (quantizeX256 of the call's x).
void gemvKQuantRows(const GemvTask& t, const XBlock256* xq, int64_t m, int64_t n0, int64_t n1);

}  // namespace inferscope::INFERSCOPE_KERNELS_NS
#endif
