#pragma once
// The attention reference of the kernel suites, in double precision: one query head over one KV
// head of the cache layout, with the sliding window, score soft-cap and scale of AttentionOptions.
// test_arch_kernels checks attention()'s output against it, test_attention_weights the weights
// the kernel keeps for the logit lens.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "backend/kernels.h"

namespace inferscope::testing_reference {

struct ReferenceHead {
    std::vector<double> weights;  // [p + 1] softmax weights; 0 outside the window
    std::vector<double> out;      // [headDim] Σ_j weights[j] · v_j
};

// qh [headDim]: the query at position p. k, v: one KV head's rows [nCtx][headDim], as f32 (an f16
// cache's rows widened first, so the reference sees what the cache holds).
// Key j is visible from the query at position p iff 0 <= p - j < window (llama.cpp's SWA mask);
// scores are q·k · scale (1/√headDim unless given), then cap · tanh(score / cap) before the softmax.
inline ReferenceHead referenceAttentionHead(const float* qh, const float* k, const float* v, int32_t p, int headDim,
                                            const AttentionOptions& options) {
    ReferenceHead r;
    r.weights.assign(size_t(p) + 1, 0.0);
    std::vector<double> s(size_t(p) + 1, -INFINITY);
    double mx = -1e300, sum = 0;
    for (int32_t j = 0; j <= p; ++j) {
        if (options.window > 0 && p - j >= options.window) continue;  // outside the window: weight 0
        double d = 0;
        for (int i = 0; i < headDim; ++i) d += double(qh[i]) * k[size_t(j) * headDim + i];
        d = options.scale > 0 ? d * options.scale : d / std::sqrt(double(headDim));
        if (options.softCap > 0) d = options.softCap * std::tanh(d / options.softCap);
        s[size_t(j)] = d;
        mx = std::max(mx, d);
    }
    for (auto& x : s) sum += (x = std::exp(x - mx));
    for (int32_t j = 0; j <= p; ++j) r.weights[size_t(j)] = s[size_t(j)] / sum;
    r.out.assign(size_t(headDim), 0.0);
    for (int i = 0; i < headDim; ++i)
        for (int32_t j = 0; j <= p; ++j) r.out[size_t(i)] += r.weights[size_t(j)] * v[size_t(j) * headDim + i];
    return r;
}

}  // namespace inferscope::testing_reference
