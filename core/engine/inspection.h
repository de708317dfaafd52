#pragma once
// Inside one forward pass, for one position: the logit lens (what the model would predict if it
// stopped after each layer: the final RMSNorm and LM head applied to that layer's residual stream)
// and the attention weights every query head put on the cached positions. Plain values, filled
// from a ForwardProbe of the real pass (Engine::inspectPosition, or GenerateRequest::inspect
// during generation).

#include <cstdint>
#include <span>
#include <vector>

namespace inferscope {

// What to compute of a position.
struct InspectOptions {
    bool lens = true;         // the logit lens and residual norms
    bool attention = true;    // the attention weights
    int32_t lensTopK = 5;     // candidates per layer, [1, kMaxTopN]
};

struct LensCandidate {
    int32_t id = 0;
    float logit = 0;  // this layer's readout (the last layer: the model's logit)
    float p = 0;      // softmax over the whole vocabulary at T = 1, as the sampler's "raw" stage
};

struct LensLayer {
    std::vector<LensCandidate> top;  // highest logits, descending (ties: lower id first)
    float residualNorm = 0;          // ‖x‖₂ of the residual stream after the layer
    float entropyBits = 0;           // of this layer's distribution
};

struct LogitLens {
    std::vector<LensLayer> layers;   // [nLayer]; the last row is the model's final distribution
    int32_t firstTop1Layer = -1;     // the first layer whose top-1 is the final top-1
    int32_t settledLayer = -1;       // the first layer from which the top-1 stays the final one
};

// Softmax weights of one position's queries over keys 0 .. position, per layer and query head.
struct AttentionMap {
    int32_t nLayer = 0, nHead = 0, nHeadKv = 0;
    int32_t nKeys = 0;               // position + 1
    std::vector<int32_t> window;     // [nLayer]: 0 on a global layer, else the sliding window
    std::vector<float> weights;      // [nLayer][nHead][nKeys]; 0 outside a window

    std::span<const float> row(int32_t layer, int32_t head) const {
        return {weights.data() + (size_t(layer) * size_t(nHead) + size_t(head)) * size_t(nKeys), size_t(nKeys)};
    }
    // GQA: the KV head (the cached keys and values) query head `head` reads; heads sharing one
    // form a group of nHead / nHeadKv.
    int32_t kvHeadOf(int32_t head) const { return head / (nHead / nHeadKv); }
};

struct PositionInspection {
    int32_t position = 0;     // of the token run (its logits predict position + 1)
    int32_t token = 0;        // the token at that position (the pass's input)
    bool rerun = false;       // re-run over the cache (Engine::inspectPosition), not captured live
    LogitLens lens;           // empty unless asked
    AttentionMap attention;   // empty unless asked
    int64_t us = 0;           // what computing the lens rows (and the re-run) took
};

}  // namespace inferscope
