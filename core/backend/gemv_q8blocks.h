#pragma once
// Decode's GEMV on the 32-element block formats (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL) with integer
// dot products: x is rounded once per gemv() call to 16-bit integers in blocks of 32
// (ActivationBlocks32), and each weight block is multiplied with it in int8 × int16 → int32 (AVX2:
// weights widened by vpmovsxbw, vpmaddwd), scaled per block by d_w·d_x into f32 accumulators. Decode
// is memory-bound: this reads every weight byte once per token with a handful of instructions per
// block, where widening the weights to f32 in registers took ~4× as many and was compute-bound on an
// AVX2-only CPU.
//
// Why 16-bit x, where llama.cpp rounds x to 8 bits (its Q8_0/Q8_1 activations): with 8 bits our
// logits were as far from the exact computation as llama.cpp's, sometimes further (0.0465 vs 0.0440
// mean |Δ| on stories260K-wide-Q8_0, test_engine_quant), because the rounding of x is the whole
// error. Without VNNI the 8-bit product costs the same instructions (vpsignb ×2 + vpmaddubsw +
// vpmaddwd vs vpmovsxbw ×2 + vpmaddwd ×2), so the 16-bit one keeps the speed and brings the
// error to ~1/256 of llama.cpp's.
//
// On a CPU with AVX512-VNNI the avx512 kernel set computes the same integer sums with half the
// vector work: q split into two bytes, q = 256·hi + lo, each pair of blocks two vpdpbusd on one
// 512-bit register (gemv_q8blocks_vnni.cpp; TinyLlama Q4_0 decode +10%).
//
// The rounding of x (the only approximation; the weights are used exactly as stored), per row i and
// block b of 32 elements:
//   amax = max |x[c]|, d = amax / 32767 (f32), q[c] = round-half-even(x[c] · (1/d)) (0 when d = 0)
//   sum  = d · Σ q[c]  (f32; Q4_1/Q5_1's min term m·Σx)
// so |x[c] - d·q[c]| <= d/2 (plus the f32 rounding of 1/d).

#include <cstdint>

#include "backend/gemv.h"
#include "gguf/ggml_types.h"

namespace inferscope {

inline constexpr int kActivationLevels = 32767;  // q in [-32767, 32767]

// x [m][k] rounded as above. Owned by the thread that made it; read-only while gemv's threads run.
struct ActivationBlocks32 {
    const int16_t* q = nullptr;  // [m][k]
    const float* d = nullptr;    // [m][k / 32]
    const float* sum = nullptr;  // [m][k / 32]
    int64_t m = 0, k = 0;
    // The same q as two bytes, q = 256·hi + lo (hi = q >> 8 in [-128, 127], lo in [0, 255]), and
    // per 4 elements -128·Σhi: the operands of the AVX512-VNNI kernel (u8 × s8 dot products), set
    // only by a kernel set that runs it (else null).
    const int8_t* hi = nullptr;     // [m][k]
    const uint8_t* lo = nullptr;    // [m][k]
    const int32_t* hiBias = nullptr;  // [m][k / 4]
};

}  // namespace inferscope

// A kernel set's functions (common/kernel_set.h), declared in its sources only; elsewhere they are
// reached through backend/kernel_table.h.
#ifdef INFERSCOPE_KERNELS_NS
namespace inferscope::INFERSCOPE_KERNELS_NS {

// True where this kernel set has an integer kernel for `type` (the six formats above; the avx2
// and avx512 sets).
bool hasInt8BlockKernel(GgmlType type);

// Rounds x [m][k] (k a multiple of 32) into the calling thread's buffer (grown once, then reused;
// valid until that thread's next call).
ActivationBlocks32 quantizeActivations32(const float* x, int64_t m, int64_t k);

// Rows [n0, n1) of a Blocks task whose type has an integer kernel: y[i, n] = x̂[i, :] · W[n, :].
void gemvInt8BlockRows(const GemvTask& t, const ActivationBlocks32& xq, int64_t n0, int64_t n1);

}  // namespace inferscope::INFERSCOPE_KERNELS_NS
#endif
