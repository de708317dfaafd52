#include "model/pass_cost.h"

#include "model/llama_hparams.h"

namespace inferscope {

PassCost::PassCost(const LlamaHParams& hp, uint64_t weightBytesPerToken, uint64_t matmulMacsPerToken,
                   uint64_t kvBytesPerToken)
    : weightBytesPerToken_(double(weightBytesPerToken)),
      kvBytesPerToken_(double(kvBytesPerToken)),
      macsPerToken_(double(matmulMacsPerToken)),
      lmHeadMacs_(double(hp.nVocab) * double(hp.nEmbd)),
      attentionFlopsPerKey_(4.0 * double(hp.headDim) * double(hp.nHead) * double(hp.nLayer)) {}

double PassCost::decodeFlops(int64_t position) const {
    return 2.0 * macsPerToken_ + attentionFlopsPerKey_ * double(position + 1);
}

// Σ over p = first .. first + count - 1 of (p + 1) keys = count × first + count (count + 1) / 2.
double PassCost::meanDecodeBytes(int64_t first, int64_t count) const {
    if (count <= 0) return 0;
    const double keys = double(count) * double(first) + double(count) * double(count + 1) / 2;
    return decodeWeightBytes() + kvBytesPerToken_ * keys / double(count);
}

// The new token i (0-based) sits at position reused + i and attends to reused + i + 1 keys:
// Σ = tokens × reused + tokens (tokens + 1) / 2 pairs.
double PassCost::prefillFlops(int64_t tokens, int64_t reused) const {
    if (tokens <= 0) return 0;
    const double t = double(tokens);
    const double keys = t * double(reused) + t * (t + 1) / 2;
    return 2.0 * (macsPerToken_ - lmHeadMacs_) * t + 2.0 * lmHeadMacs_ + attentionFlopsPerKey_ * keys;
}

}  // namespace inferscope
