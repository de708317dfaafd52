#pragma once
// Prefill on Q4_K weights in their blocks, with integer dot products: y[t, n] = x[t, :] · W[n, :]
// for m tokens. x is rounded per token and 256-element block to 8 bits (scale max|x| / 127, as
// llama.cpp's Q8_K activations), the 4-bit weights are multiplied into it as bytes (AVX2
// vpmaddubsw), each 32-element sub-block's integer sum is scaled by its 6-bit scale in integers, and
// one float multiply per 256 elements applies d·d_x. The weights' minimums come out through the
// activation block sums: Σ (d·sc·q - dmin·m)·x = d·Σ sc·(q·x) - dmin·Σ m·(Σ x).
//
// This runs twice the multiply-adds per instruction of an f32 FMA and reads the 4.5-bit weights as
// stored, where the f32 path widened 256-row tiles of them to floats for oneDNN.

#include <cstdint>
#include <vector>

namespace inferscope {

// x rounded to 8 bits per token and 256-block: for token t and block b, x ≈ d[t·nb + b] · q[t·k +
// 256·b + i], with sums[(t·nb + b)·8 + s] = Σ of q over sub-block s (32 values).
struct Q8Rows {
    int64_t m = 0, k = 0;
    std::vector<int8_t> q;
    std::vector<float> d;
    std::vector<int16_t> sums;
};

// Rounds x [m][k] (k a multiple of 256) into `out`, reusing its storage.
void quantizeRowsQ8(const float* x, int64_t m, int64_t k, Q8Rows& out);

// True when this build has the kernel (AVX2); otherwise the caller widens the weights instead.
bool haveGemmQ4K();

// y [m][ldy] (columns [0, n)) = x · Wᵀ for W [n][k] Q4_K rows (k a multiple of 256), on up to
// nThreads OpenMP threads.
void gemmQ4K(const void* w, int64_t n, int64_t k, const Q8Rows& x, float* y, int64_t ldy, int nThreads);

}  // namespace inferscope
