#pragma once
// The attention reference of the kernel suites, in double precision: one query head over one KV
// head of the cache layout, with the sliding window, score soft-cap and scale of AttentionOptions;
// and the cases both suites run through attention() (AttentionCase: shape, rows, window, cap, f16
// cache; AttentionInputs: its seeded q, k and v). test_arch_kernels checks attention()'s output
// against the reference, test_attention_weights the weights the kernel keeps for the logit lens.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "backend/kernels.h"
#include "backend_test_helpers.h"  // randomVector
#include "gguf/ggml_types.h"

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

// One call of attention(): m query rows from position position0 over a cache of nCtx rows.
struct AttentionCase {
    int headDim, nHead, nHeadKv;
    int64_t m;
    int32_t position0;
    int32_t window;
    float softCap;
    bool half;           // an f16 cache, else f32
    float scale = 0.0f;  // 0: 1/sqrt(headDim)

    AttentionOptions options() const { return AttentionOptions{window, softCap, scale}; }
    KvType kvType() const { return half ? KvType::F16 : KvType::F32; }
    int32_t lastPosition() const { return position0 + int32_t(m) - 1; }
    // The GoogleTest name: "hd64h4kv2m1p40w32cap0scale0f32".
    std::string name() const {
        return fmt::format("hd{}h{}kv{}m{}p{}w{}cap{}scale{}{}", headDim, nHead, nHeadKv, m, position0, window, int(softCap * 10),
                           int(scale * 100), half ? "f16" : "f32");
    }
};

// A case's seeded inputs: q [m][nHead][headDim] (σ 1.5), k (σ 1.5) and v (σ 1) as [nHeadKv][nCtx][headDim]
// from seeds seed, seed + 1, seed + 2. With an f16 cache, k16 and v16 are what the cache holds and
// k and v those rows widened again, so the reference sees what the kernel reads.
struct AttentionInputs {
    std::vector<float> q, k, v;
    std::vector<uint16_t> k16, v16;
    bool half = false;
    const void* kCache() const { return half ? static_cast<const void*>(k16.data()) : k.data(); }
    const void* vCache() const { return half ? static_cast<const void*>(v16.data()) : v.data(); }
};

inline AttentionInputs attentionInputs(const AttentionCase& c, int32_t nCtx, uint32_t seed) {
    using testing_backend::randomVector;
    AttentionInputs in;
    in.half = c.half;
    in.q = randomVector(size_t(c.m * c.nHead * c.headDim), seed, 1.5f);
    in.k = randomVector(size_t(c.nHeadKv) * nCtx * c.headDim, seed + 1, 1.5f);
    in.v = randomVector(in.k.size(), seed + 2, 1.0f);
    if (c.half) {
        in.k16.resize(in.k.size());
        in.v16.resize(in.v.size());
        fp32ToFp16Row(in.k.data(), in.k16.data(), in.k.size());
        fp32ToFp16Row(in.v.data(), in.v16.data(), in.v.size());
        dequantizeRow(GgmlType::F16, in.k16.data(), in.k.data(), in.k.size());
        dequantizeRow(GgmlType::F16, in.v16.data(), in.v.data(), in.v.size());
    }
    return in;
}

// The reference for query row r (position position0 + r), head h: query head h reads KV head
// h / (nHead / nHeadKv).
inline ReferenceHead referenceAttentionRow(const AttentionCase& c, const AttentionInputs& in, int32_t nCtx, int64_t r, int h) {
    const size_t base = size_t(h / (c.nHead / c.nHeadKv)) * size_t(nCtx) * size_t(c.headDim);
    return referenceAttentionHead(in.q.data() + (r * c.nHead + h) * c.headDim, in.k.data() + base, in.v.data() + base,
                                  c.position0 + int32_t(r), c.headDim, c.options());
}

}  // namespace inferscope::testing_reference
