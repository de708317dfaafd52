#pragma once
// The forward pass's hand-written kernels (the non-matmul steps), as free functions on plain
// row-major f32 arrays, parallelised with OpenMP over independent rows/heads. Each is simple
// enough to be its own reference; the matmul's reference (the oracle for ComputeDevice::linear)
// is referenceLinear() below.

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "record/kv_type.h"

#include "common/exp_nonpositive.h"

namespace inferscope {

// out[m, n] = x[m, n] / sqrt(mean(x²) + eps) * w[n]      (RMSNorm; out may alias x)
void rmsNorm(const float* x, const float* w, int64_t m, int64_t n, float eps, float* out);

// Rotary position embedding, llama "normal" mode: in each head, element pairs (2i, 2i+1) with
// 2i < nRot are rotated by angle pos · freqBase^(-2i / nRot); elements past nRot are left alone.
// x is [m, nHeads, headDim]; row r has position positions0 + r.
// `table` holds cos/sin per (position, i): [nCtx][nRot / 2][2] (see makeRopeTable).
void ropeInPlace(float* x, int64_t m, int nHeads, int headDim, int nRot, int32_t position0, const float* table);
// The same in NEOX mode (Qwen, Gemma, Phi-3): in each head, elements (i, i + nRot/2) are rotated by
// the angle of pair i in the same table.
void ropeNeoxInPlace(float* x, int64_t m, int nHeads, int headDim, int nRot, int32_t position0, const float* table);
// Fills table[nCtx][nRot/2][2] with cos, sin of pos · freqScale · freqBase^(-2i/nRot) / factor[i]
// (computed in double). freqFactors [nRot/2] (Llama 3's rope_freqs) may be null: all 1.
void makeRopeTable(float* table, int32_t nCtx, int nRot, double freqBase, double freqScale, const float* freqFactors);

// out[i] = silu(gate[i]) · up[i], silu(x) = x / (1 + e^-x)      (SwiGLU; out may alias gate)
// e^x here and in attention's softmax is expNonPositive (inline, vectorised): never libm's exp,
// which runs ~30x slower after AVX-512 code on our -march=native builds.
void swiGlu(const float* gate, const float* up, int64_t count, float* out);

// out[i] = gelu(gate[i]) · up[i] with GELU's tanh approximation (Gemma's FFN; out may alias gate).
void geluTanhGate(const float* gate, const float* up, int64_t count, float* out);

// tanh(x) from expNonPositive, in double (libm's tanh has the same stalls as its exp here).
inline double tanhValue(double x) {
    const double e = expNonPositive(-2.0 * std::fabs(x));
    const double t = (1.0 - e) / (1.0 + e);
    return x < 0 ? -t : t;
}
// cap · tanh(x / cap): Gemma 2's soft-capping of attention scores and final logits.
inline float softCapValue(float x, float cap) { return float(double(cap) * tanhValue(double(x) / double(cap))); }
// x[i] = softCapValue(x[i], cap) over count elements.
void softCapInPlace(float* x, int64_t count, float cap);
// x[m, n] += bias[n] per row (Qwen 2's q/k/v biases).
void addBias(float* x, const float* bias, int64_t m, int64_t n);
// x[i] *= factor (Gemma's embedding × √n_embd).
void scaleInPlace(float* x, int64_t count, float factor);

// What a layer's attention changes beyond the plain causal softmax.
struct AttentionOptions {
    int32_t window = 0;    // > 0: query at position p sees keys p - window + 1 .. p only (sliding window)
    float softCap = 0.0f;  // > 0: scores → softCap · tanh(scores / softCap) before the softmax (Gemma 2)
    float scale = 0.0f;    // > 0: scores = q·k · scale instead of q·k / sqrt(headDim) (Gemma 27B)
    // Not null: the softmax weights of the last query row (position P = position0 + m - 1) are
    // kept here, [nHead][P + 1], key j of head h at [h·(P + 1) + j], 0 outside the window; copied
    // from the kernel's own scratch after it used them (the logit lens's attention view).
    float* weightsOut = nullptr;
};

// Causal grouped-query attention over the KV cache of one layer.
//   q     [m, nHead, headDim]   queries for positions position0 .. position0 + m - 1 (RoPE applied)
//   k, v  [nHeadKv, nCtx, row]   the layer's cache, rows of `kvType` (kv_type.h: f32, IEEE half, or
//                               ggml's Q8_0 / Q4_0 blocks, read block by block and widened in
//                               registers), filled up to position0 + m - 1
//   out   [m, nHead, headDim]   softmax(q·kᵀ / sqrt(headDim)) · v, query head h reading KV head
//                               h / (nHead / nHeadKv)
//   scratch  at least attentionScratchFloats(...) floats
// The query heads sharing a KV head are processed together, so each key and value row is read
// once per query position however many heads use it (what decode at long contexts is bound by).
void attention(const float* q, const void* k, const void* v, KvType kvType, int64_t m, int32_t position0, int nHead,
               int nHeadKv, int headDim, int32_t nCtx, float* out, float* scratch, const AttentionOptions& options = {});
inline void attention(const float* q, const float* k, const float* v, int64_t m, int32_t position0, int nHead,
                      int nHeadKv, int headDim, int32_t nCtx, float* out, float* scratch) {
    attention(q, k, v, KvType::F32, m, position0, nHead, nHeadKv, headDim, nCtx, out, scratch);
}
// Scratch the attention of a model needs: per thread, the scores of one KV head's query group.
inline size_t attentionScratchFloats(int nThreads, int nHead, int nHeadKv, int headDim, int32_t nCtx) {
    return size_t(nThreads) * (size_t(nHead / nHeadKv) * (size_t(nCtx) + 16) + size_t(headDim) * 2);
}

// y[m, n] = x[m, k] · W[n, k]ᵀ with double accumulation: the oracle for ComputeDevice::linear.
void referenceLinear(const float* w, int64_t n, int64_t k, const float* x, int64_t m, float* y);

}  // namespace inferscope

#ifdef INFERSCOPE_KERNELS_NS
namespace inferscope::INFERSCOPE_KERNELS_NS {
// A kernel set's own (attention_kernel.cpp); kernels.cpp puts it in the set's table.
void attention(const float* q, const void* k, const void* v, KvType kvType, int64_t m, int32_t position0, int nHead,
               int nHeadKv, int headDim, int32_t nCtx, float* out, float* scratch, const AttentionOptions& options);
}
#endif
