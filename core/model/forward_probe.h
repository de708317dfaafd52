#pragma once
// What LlamaModel::forward keeps of one position when asked (the logit lens and attention views):
// the residual stream after every layer and the softmax weights every query head put on the cached
// positions, both of the pass's last token (the one whose logits it returns). Captured from the real
// pass's own buffers, so the final layer's residual is exactly the one the LM head read.
//
// Two uses: during a real step (the engine passes a probe to the forward whose logits the sampler
// will see), or re-running a position already in the cache (`rerun`: its K and V are read from the
// cache, nothing is written into it, its counters are not touched).

#include <cstdint>
#include <span>
#include <vector>

#include "model/llama_hparams.h"

namespace inferscope {

struct ForwardProbe {
    // Asked for.
    bool keepAttention = false;  // the attention weights too (the residuals are always kept)
    bool rerun = false;          // the position is cached: read K/V from the cache, write nothing

    // Kept by the forward pass: the last token's position and
    int32_t position = -1;
    int32_t nLayer = 0, nEmbd = 0, nHead = 0, qDim = 0;
    std::vector<float> residuals;  // [nLayer][nEmbd]: x after layer l (attention and FFN added)
    std::vector<float> attention;  // [nLayer][nHead][position + 1]: weights of keys 0 .. position
    std::vector<float> queries;    // [nLayer][nHead][headDim]: the queries that made them (RoPE applied)

    // Sizes the buffers for a pass whose last token sits at `lastPosition`.
    void prepare(const LlamaHParams& hp, int32_t lastPosition) {
        position = lastPosition;
        nLayer = hp.nLayer;
        nEmbd = hp.nEmbd;
        nHead = hp.nHead;
        qDim = hp.qDim();
        residuals.resize(size_t(nLayer) * size_t(nEmbd));
        attention.resize(keepAttention ? size_t(nLayer) * size_t(nHead) * size_t(position + 1) : 0);
        queries.resize(keepAttention ? size_t(nLayer) * size_t(qDim) : 0);
    }
    // Where forward() writes layer `layer`'s rows.
    float* residualSlot(int32_t layer) { return residuals.data() + size_t(layer) * size_t(nEmbd); }
    std::span<const float> residualOf(int32_t layer) const { return {residuals.data() + size_t(layer) * size_t(nEmbd), size_t(nEmbd)}; }
    float* querySlot(int32_t layer) { return queries.data() + size_t(layer) * size_t(qDim); }
    float* attentionSlot(int32_t layer) {
        return keepAttention ? attention.data() + size_t(layer) * size_t(nHead) * size_t(position + 1) : nullptr;
    }
};

}  // namespace inferscope
