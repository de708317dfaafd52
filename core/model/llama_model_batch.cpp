// LlamaModel::decodeBatch (llama_model.h): one decode step of several sequences, each on its own
// context, their matrix multiplies batched. Per layer:
//   per sequence:  xn = rmsnorm(x)                                   (its context's buffers, m = 1)
//   batched:       q, k, v = xn · Wq/Wk/Wvᵀ                          rows gathered, groups of exactRows
//   per sequence:  [biases] [q/k norms] RoPE at its position, K/V into its cache, attention over it
//   batched:       tmp = att · Woᵀ
//   per sequence:  [post-norm] x += tmp; xn = rmsnorm(x)
//   batched:       gate, up = xn · Wgate/Wupᵀ
//   per sequence:  gate = act(gate) ⊙ up
//   batched:       tmp = gate · Wdownᵀ
//   per sequence:  [post-norm] x += tmp
// then per sequence the final rmsnorm, batched the LM head, per sequence [the final soft-cap].
#include <algorithm>
#include <cassert>
#include <cstring>

#include "backend/gemv.h"
#include "backend/kernels.h"
#include "model/llama_model.h"

namespace inferscope {

void LlamaModel::multiplyBatch(std::span<const DecodeSequence> batch, const LayerWeights* L, Stage stage) {
    // The matrices and row sizes are the same for every context: read them off the first.
    const StageIo first = stageIo(*batch[0].ctx, L, stage);
    const std::span<const Linear* const> ws(first.w, size_t(first.n));
    const int64_t k = first.w[0]->cols();
    const int group = device_.exactRows(ws);
    for (size_t g0 = 0; g0 < batch.size(); g0 += size_t(group)) {
        const int64_t rows = std::min<int64_t>(group, int64_t(batch.size() - g0));
        // the group's input rows side by side: x [rows, k]
        for (int64_t r = 0; r < rows; ++r)
            std::memcpy(batchX_.data() + r * k, stageIo(*batch[g0 + size_t(r)].ctx, L, stage).x, size_t(k) * sizeof(float));
        // each matrix's outputs [rows, N_j], one after the other
        float* ys[3] = {};
        size_t offset = 0;
        for (int j = 0; j < first.n; ++j) {
            ys[j] = batchY_.data() + offset;
            offset += size_t(rows * first.w[j]->rows());
        }
        device_.linearMany(ws, batchX_.data(), rows, {ys, size_t(first.n)});
        // and each row back into its own context, where forward() would have written it
        for (int64_t r = 0; r < rows; ++r) {
            const StageIo io = stageIo(*batch[g0 + size_t(r)].ctx, L, stage);
            for (int j = 0; j < io.n; ++j) {
                const int64_t n = io.w[j]->rows();
                std::memcpy(io.y[j], ys[j] + r * n, size_t(n) * sizeof(float));
            }
        }
    }
}

int LlamaModel::exactDecodeRows() const {
    const Linear* head[] = {&output_};
    int rows = device_.exactRows(head);
    for (const LayerWeights& L : layers_) {
        const Linear* ws[] = {&L.wq, &L.wk, &L.wv, &L.wqkv, &L.wo, &L.gate, &L.up, &L.gateUp, &L.down};
        for (const Linear* w : ws)
            if (w->rows() > 0) rows = std::min(rows, device_.exactRows({&w, 1}));
    }
    return rows;
}

Result<void> LlamaModel::decodeBatch(std::span<const DecodeSequence> batch, std::span<std::span<const float>> logits) {
    const auto& hp = hp_;
    const int64_t E = hp.nEmbd;
    assert(!batch.empty() && logits.size() >= batch.size());
    for (size_t i = 0; i < batch.size(); ++i) {
        assert(batch[i].ctx && batch[i].position >= 0 && batch[i].position < batch[i].ctx->cache().capacity());
        for (size_t j = 0; j < i; ++j) assert(batch[j].ctx != batch[i].ctx && "one context per sequence");
    }
    // Staging for one group: inputs up to the widest K, outputs up to the widest sum of N.
    const size_t inFloats = size_t(kGemvPlainMaxRows) * size_t(std::max({hp.nEmbd, hp.qDim(), hp.nFf}));
    const size_t outFloats = size_t(kGemvPlainMaxRows) * size_t(std::max({hp.qDim() + 2 * hp.kvDim(), 2 * hp.nFf, hp.nEmbd, hp.nVocab}));
    try {
        if (batchX_.size() < inFloats) batchX_.allocate(inFloats);
        if (batchY_.size() < outFloats) batchY_.allocate(outFloats);
    } catch (const std::bad_alloc&) {
        return fail(ErrorKind::OutOfMemory, "out of memory allocating the rows of a batched decode step");
    }

    // token embedding, in each sequence's context
    for (const DecodeSequence& s : batch) embed(*s.ctx, {&s.token, 1});
    for (int32_t l = 0; l < hp.nLayer; ++l) {
        const LayerWeights& L = layers_[size_t(l)];
        // attention rmsnorm, then the Q, K, V projections of every row
        for (const DecodeSequence& s : batch) rmsNorm(s.ctx->x.data(), L.attnNorm, 1, E, hp.rmsEps, s.ctx->xn.data());
        multiplyBatch(batch, &L, Stage::Qkv);
        // per sequence: RoPE at its position, its K/V into its cache, attention over its cache
        for (const DecodeSequence& s : batch) attentionBlock(*s.ctx, l, 1, s.position, true, nullptr);
        // output projection, then per sequence [post-attention norm], residual, ffn rmsnorm
        multiplyBatch(batch, &L, Stage::Output);
        for (const DecodeSequence& s : batch) afterAttention(*s.ctx, L, 1);
        // gated feed-forward
        multiplyBatch(batch, &L, Stage::GateUp);
        for (const DecodeSequence& s : batch) gateActivation(*s.ctx, 1);
        multiplyBatch(batch, &L, Stage::Down);
        for (const DecodeSequence& s : batch) afterFfn(*s.ctx, L, 1);
    }
    for (const DecodeSequence& s : batch) s.ctx->cache_.commit(s.position, 1, s.origin);

    // final rmsnorm, the LM head on every row, [gemma2: final soft-cap]: readOut's steps
    for (const DecodeSequence& s : batch) rmsNorm(s.ctx->x.data(), outputNorm_, 1, E, hp.rmsEps, s.ctx->xn.data());
    multiplyBatch(batch, nullptr, Stage::Head);
    for (size_t i = 0; i < batch.size(); ++i) {
        float* out = batch[i].ctx->logits.data();
        if (hp.finalSoftCap > 0.0f) softCapInPlace(out, hp.nVocab, hp.finalSoftCap);
        logits[i] = {out, size_t(hp.nVocab)};
    }
    return {};
}

}  // namespace inferscope
