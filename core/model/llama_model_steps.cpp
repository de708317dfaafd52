// LlamaModel::forward's steps between its matrix multiplies (llama_model.h), on a context's first
// m rows. forward() runs them on a batch of one sequence's tokens; decodeBatch
// (llama_model_batch.cpp) runs them per sequence with m = 1 around its batched multiplies, so a
// sequence in a batch goes through the very calls, on the very buffers, of its one-token forward().
#include <cassert>
#include <cmath>
#include <cstring>
#include <initializer_list>

#include "backend/kernels.h"
#include "gguf/quant_blocks.h"
#include "model/llama_model.h"

namespace inferscope {
namespace {

// Copies columns [col0, col0 + n) of each row of src [m, srcCols] into dst [m, n]: a fused
// matrix's output split into its parts (an activation copy, not a weight copy).
struct ColumnRange {
    float* dst;
    int64_t col0, n;
};
void splitColumns(const float* src, int64_t m, int64_t srcCols, std::initializer_list<ColumnRange> parts) {
    for (int64_t r = 0; r < m; ++r)
        for (const ColumnRange& p : parts) std::memcpy(p.dst + r * p.n, src + r * srcCols + p.col0, size_t(p.n) * sizeof(float));
}

void addInPlace(float* x, const float* y, int64_t n) {
#pragma omp parallel for simd schedule(static) if (n > 65536)
    for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

}  // namespace

LlamaModel::StageIo LlamaModel::stageIo(LlamaContext& ctx, const LayerWeights* L, Stage stage) const {
    StageIo io;
    auto set = [&io](const float* x, std::initializer_list<std::pair<const Linear*, float*>> parts) {
        io.x = x;
        for (const auto& [w, y] : parts) {
            io.w[io.n] = w;
            io.y[io.n++] = y;
        }
    };
    const bool fusedQkv = hp_.arch.fusedQkv, fusedGateUp = hp_.arch.fusedGateUp;
    switch (stage) {
        case Stage::Qkv:  // [phi3: one matrix, output rows Q | K | V]
            if (fusedQkv) set(ctx.xn.data(), {{&L->wqkv, ctx.fused.data()}});
            else set(ctx.xn.data(), {{&L->wq, ctx.q.data()}, {&L->wk, ctx.k.data()}, {&L->wv, ctx.v.data()}});
            break;
        case Stage::Output: set(ctx.att.data(), {{&L->wo, ctx.tmp.data()}}); break;
        case Stage::GateUp:  // [phi3: one matrix, output rows gate | up]
            if (fusedGateUp) set(ctx.xn.data(), {{&L->gateUp, ctx.fused.data()}});
            else set(ctx.xn.data(), {{&L->gate, ctx.gate.data()}, {&L->up, ctx.up.data()}});
            break;
        case Stage::Down: set(ctx.gate.data(), {{&L->down, ctx.tmp.data()}}); break;
        case Stage::Head: set(ctx.xn.data(), {{&output_, ctx.logits.data()}}); break;  // one row: logits is [n_vocab]
    }
    return io;
}

void LlamaModel::multiply(LlamaContext& ctx, const LayerWeights& L, Stage stage, int64_t m) {
    const StageIo io = stageIo(ctx, &L, stage);
    device_.linearMany({io.w, size_t(io.n)}, io.x, m, {io.y, size_t(io.n)});
}

void LlamaModel::embed(LlamaContext& ctx, std::span<const int32_t> tokens) const {
    const int64_t m = int64_t(tokens.size()), E = hp_.nEmbd;
    // x[r] = token_embd[tokens[r]], decoded from the file's type
    const auto embdInfo = *ggmlTypeInfo(tokenEmbd_->typeId);
    const size_t rowBytes = size_t(E) / embdInfo.blockSize * embdInfo.typeSize;
    const uint8_t* embd = file_.tensorData(*tokenEmbd_).data();
    for (int64_t r = 0; r < m; ++r)
        dequantizeRow(tokenEmbd_->type(), embd + size_t(tokens[r]) * rowBytes, ctx.x.data() + r * E, size_t(E));
    // [gemma: embeddings × √n_embd]
    if (hp_.arch.embedScale) scaleInPlace(ctx.x.data(), m * E, std::sqrt(float(E)));
}

void LlamaModel::attentionBlock(LlamaContext& ctx, int32_t l, int64_t m, int32_t position0, bool storeKv, ForwardProbe* probe) const {
    const auto& hp = hp_;
    const LayerWeights& L = layers_[size_t(l)];
    const int64_t Q = hp.qDim(), KV = hp.kvDim();
    KvCache& cache = ctx.cache_;
    // [phi3: the fused projection's output rows Q | K | V split into q, k, v]
    if (hp.arch.fusedQkv)
        splitColumns(ctx.fused.data(), m, Q + 2 * KV, {{ctx.q.data(), 0, Q}, {ctx.k.data(), Q, KV}, {ctx.v.data(), Q + KV, KV}});
    // [qwen2: q, k, v biases]
    if (L.bq) {
        addBias(ctx.q.data(), L.bq, m, Q);
        addBias(ctx.k.data(), L.bk, m, KV);
        addBias(ctx.v.data(), L.bv, m, KV);
    }
    // [qwen3, gemma3: RMSNorm of each query and key head, before RoPE]
    if (L.qNorm) {
        rmsNorm(ctx.q.data(), L.qNorm, m * hp.nHead, hp.headDim, hp.rmsEps, ctx.q.data());
        rmsNorm(ctx.k.data(), L.kNorm, m * hp.nHeadKv, hp.headDim, hp.rmsEps, ctx.k.data());
    }
    // RoPE on queries and keys, by position (the layer's table: gemma3's local layers have their own)
    const auto rope = hp.arch.rope == RopeMode::Neox ? ropeNeoxInPlace : ropeInPlace;
    const float* ropeTable = ctx.ropeTables[size_t(L.ropeTable)].data();
    rope(ctx.q.data(), m, hp.nHead, hp.headDim, hp.nRot, position0, ropeTable);
    rope(ctx.k.data(), m, hp.nHeadKv, hp.headDim, hp.nRot, position0, ropeTable);
    // the new positions' K and V join the cache; attention reads all positions up to each query
    // (or the last `window` of them on sliding-window layers)
    if (storeKv) cache.store(l, position0, m, ctx.k.data(), ctx.v.data());
    assert(ctx.scores.size() >= scratchFloatsFor(ctx) && "thread count raised without fitThreads()");
    AttentionOptions attentionOptions = L.attention;
    if (probe && probe->keepAttention) {  // the last row's query and its softmax weights
        std::memcpy(probe->querySlot(l), ctx.q.data() + (m - 1) * Q, size_t(Q) * sizeof(float));
        attentionOptions.weightsOut = probe->attentionSlot(l);
    }
    attention(ctx.q.data(), cache.layerKeysData(l), cache.layerValuesData(l), cache.type(), m, position0, hp.nHead,
              hp.nHeadKv, hp.headDim, cache.capacity(), ctx.att.data(), ctx.scores.data(), attentionOptions);
}

void LlamaModel::afterAttention(LlamaContext& ctx, const LayerWeights& L, int64_t m) const {
    const int64_t E = hp_.nEmbd;
    // [gemma: post-attention norm] and residual
    if (L.postAttnNorm) rmsNorm(ctx.tmp.data(), L.postAttnNorm, m, E, hp_.rmsEps, ctx.tmp.data());
    addInPlace(ctx.x.data(), ctx.tmp.data(), m * E);
    // ffn rmsnorm
    rmsNorm(ctx.x.data(), L.ffnNorm, m, E, hp_.rmsEps, ctx.xn.data());
}

void LlamaModel::gateActivation(LlamaContext& ctx, int64_t m) const {
    const int64_t F = hp_.nFf;
    const auto ffnActivation = hp_.arch.ffnActivation == FfnActivation::GeluTanh ? geluTanhGate : swiGlu;
    if (hp_.arch.fusedGateUp) {  // [phi3: gate | up in one row of the fused output]
        for (int64_t r = 0; r < m; ++r)
            ffnActivation(ctx.fused.data() + r * 2 * F, ctx.fused.data() + r * 2 * F + F, F, ctx.gate.data() + r * F);
    } else {
        ffnActivation(ctx.gate.data(), ctx.up.data(), m * F, ctx.gate.data());
    }
}

void LlamaModel::afterFfn(LlamaContext& ctx, const LayerWeights& L, int64_t m) const {
    const int64_t E = hp_.nEmbd;
    // [gemma: post-FFN norm] and residual
    if (L.postFfnNorm) rmsNorm(ctx.tmp.data(), L.postFfnNorm, m, E, hp_.rmsEps, ctx.tmp.data());
    addInPlace(ctx.x.data(), ctx.tmp.data(), m * E);
}

}  // namespace inferscope
