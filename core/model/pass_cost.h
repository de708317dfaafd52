#pragma once
// PassCost: what one forward pass reads and computes, from the model's shape. These are the
// numerators of the roofline: the Timeline divides each decode step's time into them (GB/s,
// GFLOP/s of an answer) and `inferscope-cli bench` its pp/tg tests' times; both take them here.
//
// A pass runs m new tokens at positions reused .. reused + m - 1 (decode: m = 1 at position p):
//   weights read    every matrix and norm once, one embedding row per token
//                   (LlamaModel::weightBytesPerToken, a decode pass's figure)
//   KV read         decode: K and V of positions 0..p, its own included: (p + 1) × kvBytesPerToken
//   KV written      m × kvBytesPerToken
//   FLOPs           2 per multiply-add of every matrix for every token, but the LM head's only for
//                   the last token (only its logits are computed); attention 4 × headDim × nHead
//                   per layer and (query, key) pair (q·k and p·v, 2 each per element), the query
//                   at position p seeing the p + 1 keys 0..p.
// Sliding-window layers are counted as if global: the figures are the full causal pass's, an
// upper bound for Gemma 2/3 and Phi-3 past their window.

#include <cstdint>

#include "record/pass_cost_figures.h"

namespace inferscope {

struct LlamaHParams;

class PassCost {
public:
    PassCost() = default;  // a pass of nothing: every figure 0
    // kvBytesPerToken: KvCacheStats::bytesPerToken, K and V of one position in every layer.
    PassCost(const LlamaHParams& hp, uint64_t weightBytesPerToken, uint64_t matmulMacsPerToken, uint64_t kvBytesPerToken);
    explicit PassCost(const PassCostFigures& f)
        : weightBytesPerToken_(f.weightBytesPerToken), kvBytesPerToken_(f.kvBytesPerToken), macsPerToken_(f.macsPerToken),
          lmHeadMacs_(f.lmHeadMacs), attentionFlopsPerKey_(f.attentionFlopsPerKey) {}
    PassCostFigures figures() const {
        return {weightBytesPerToken_, kvBytesPerToken_, macsPerToken_, lmHeadMacs_, attentionFlopsPerKey_};
    }

    // ---- decode: one token at `position` (0-based) ---------------------------------------------
    double decodeWeightBytes() const { return weightBytesPerToken_; }
    double decodeKvBytesRead(int64_t position) const { return kvBytesPerToken_ * double(position + 1); }
    // What bounds decode's speed: the weights and the cache up to the position.
    double decodeBytes(int64_t position) const { return decodeWeightBytes() + decodeKvBytesRead(position); }
    double decodeFlops(int64_t position) const;
    // decodeBytes averaged over `count` passes at positions first .. first + count - 1.
    double meanDecodeBytes(int64_t first, int64_t count) const;

    // ---- prefill: `tokens` new tokens after `reused` cached positions ---------------------------
    double prefillFlops(int64_t tokens, int64_t reused) const;

    // Both phases: K and V of each new token stored in the cache.
    double kvBytesWritten(int64_t tokens) const { return kvBytesPerToken_ * double(tokens); }

private:
    double weightBytesPerToken_ = 0;
    double kvBytesPerToken_ = 0;
    double macsPerToken_ = 0;        // every matrix, the LM head included
    double lmHeadMacs_ = 0;          // nVocab × nEmbd
    double attentionFlopsPerKey_ = 0;  // 4 × headDim × nHead × nLayer
};

}  // namespace inferscope
