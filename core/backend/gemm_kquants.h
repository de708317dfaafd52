#pragma once
// Prefill on K-quant weights (Q4_K, Q5_K, Q6_K) in their blocks, with integer dot products:
// y[t, n] = x[t, :] · W[n, :] for m tokens. x is rounded per token and 256-element block to 13-bit
// integers (scale max|x| / 4095); each weight's unsigned 4-, 5- or 6-bit value times its sub-block's
// integer scale fits 16 bits, so both multiply as 16-bit lanes (AVX2 vpmaddwd) into int32 sums, and
// one float multiply per 256 elements applies d·d_x. What the unsigned values leave out (Q4_K/Q5_K's
// minimums, Q6_K's −32 offset) comes back through the activations' 16-element sums:
// Σ (d·sc·q − c)·x = d·Σ (sc·q)·x − Σ c·(Σ x).
//
// Why 13 bits and not llama.cpp's 8 (Q8_K, vpmaddubsw): with 8-bit x the rounding of x is the whole
// error, and its logits were as far from the exact computation as llama.cpp's, sometimes further
// (test_engine_quant's prefill check); 16-bit lanes take the same number of multiply instructions
// per weight as 8-bit ones followed by the scale's vpmaddwd, and 32 times less rounding.
//
// The weights are read as stored, where the f32 path widened 256-row tiles of them to floats for
// oneDNN.

#include <cstdint>
#include <vector>

#include "gguf/ggml_types.h"

namespace inferscope {

// x rounded to 13-bit integers per token and 256-block: for token t and block b, x ≈ d[t·nb + b] ·
// q[t·k + 256·b + i] with |q| ≤ 4095, and sums[t·k/16 + g] = d · Σ q over the g-th 16 values of the
// token's row.
struct IntRows {
    static constexpr int kMax = 4095;
    int64_t m = 0, k = 0;
    std::vector<int16_t> q;
    std::vector<float> d;
    std::vector<float> sums;
};

// Rounds x [m][k] (k a multiple of 256) into `out`, reusing its storage, on up to nThreads threads.
void roundRows(const float* x, int64_t m, int64_t k, IntRows& out, int nThreads = 1);

// True when this build has the kernel for `type` (Q4_K, Q5_K or Q6_K with AVX2); otherwise the
// caller widens the weights instead.
bool haveGemmKQuant(GgmlType type);

// y [m][ldy] (columns [0, n)) = x · Wᵀ for W [n][k] rows of `type` (k a multiple of 256), on up to
// nThreads OpenMP threads.
void gemmKQuant(GgmlType type, const void* w, int64_t n, int64_t k, const IntRows& x, float* y, int64_t ldy, int nThreads);

}  // namespace inferscope
