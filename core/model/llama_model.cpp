#include "model/llama_model.h"

#include <omp.h>
#include <cassert>

#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "backend/gemv.h"
#include "backend/kernels.h"
#include "gguf/quant_blocks.h"

namespace inferscope {
namespace {

Error bad(std::string msg) { return Error{ErrorKind::BadFile, std::move(msg)}; }

// Finds a tensor and checks its shape (ne0, ne1; ne1 = 0 for a vector) and type.
Result<const GgufTensorInfo*> findChecked(const GgufFile& f, const std::string& name, uint64_t ne0, uint64_t ne1) {
    const GgufTensorInfo* t = f.findTensor(name);
    if (!t) return std::unexpected(bad(fmt::format("missing tensor {}", name)));
    const std::string expected = ne1 ? fmt::format("[{}, {}]", ne0, ne1) : fmt::format("[{}]", ne0);
    const bool ok = ne1 ? (t->nDims == 2 && t->ne[0] == ne0 && t->ne[1] == ne1) : (t->nDims == 1 && t->ne[0] == ne0);
    if (!ok) return std::unexpected(bad(fmt::format("tensor {} has shape {}, expected {}", name, t->shapeString(), expected)));
    if (!isSupportedWeightType(t->type()))
        return fail(ErrorKind::Unsupported, fmt::format("unsupported tensor type {} in {} (supported: F32, F16, BF16, Q4_0, Q4_1, Q5_0, "
                                                        "Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS)",
                                                        ggmlTypeName(t->typeId), name));
    return t;
}

}  // namespace

Result<ComputePrecision> parseComputePrecision(std::string_view text) {
    if (text == "auto") return ComputePrecision::Auto;
    if (text == "f32") return ComputePrecision::F32;
    if (text == "bf16") return ComputePrecision::BF16;
    if (text == "int8") return ComputePrecision::Int8;
    return fail(ErrorKind::InvalidArgument, fmt::format("compute precision must be auto, f32, bf16 or int8, got '{}'", text));
}

Result<std::unique_ptr<LlamaModel>> LlamaModel::load(GgufFile file, ComputeDevice& device, ComputePrecision precision,
                                                     const LoadProgress& progress) {
    std::unique_ptr<LlamaModel> model(new LlamaModel(std::move(file), device));
    auto hp = readLlamaHParams(model->file_);
    if (!hp) return std::unexpected(hp.error());
    model->hp_ = *hp;
    if (auto r = model->loadWeights(precision, progress); !r) {
        // A tensor that reads as zeros ("missing", wrong shape) may be the file truncated meanwhile.
        if (auto unchanged = model->file_.mapping().checkUnchanged(); !unchanged) return std::unexpected(unchanged.error());
        return std::unexpected(r.error());
    }
    return model;
}

Result<void> LlamaModel::loadWeights(ComputePrecision precision, const LoadProgress& progress) {
    const auto& hp = hp_;
    const uint64_t E = hp.nEmbd, Q = hp.qDim(), KV = hp.kvDim(), F = hp.nFf, V = hp.nVocab, D = hp.headDim;

    uint64_t totalBytes = 0, doneBytes = 0;
    for (const auto& t : file_.tensors()) totalBytes += t.nBytes;
    auto report = [&](const GgufTensorInfo* t, std::string_view stage) {
        doneBytes += t->nBytes;
        if (progress) progress(totalBytes ? float(double(doneBytes) / double(totalBytes)) : 1.0f, stage);
    };

    auto linear = [&](const std::string& name, uint64_t rows, uint64_t cols) -> Result<Linear> {
        auto t = findChecked(file_, name, cols, rows);
        if (!t) return std::unexpected(t.error());
        const GgmlType type = (*t)->type();
        ComputeType ct = ComputeType::F32;
        if (precision == ComputePrecision::BF16 || (precision == ComputePrecision::Auto && type == GgmlType::BF16))
            ct = ComputeType::BF16;
        if (precision == ComputePrecision::Int8) ct = ComputeType::Int8;
        if (precision == ComputePrecision::Auto && isQuantizedBlockType(type)) ct = ComputeType::Blocks;
        // Weights used in place are mapped in one call (not a fault per 64 KiB in the warm-up);
        // converted ones leave the resident set once converted, so peak RSS stays near the weights
        // as computed (Int8 from a BF16 file: 1.1 GB resident, not 1.1 + 2.2).
        const bool inPlace = (ct == ComputeType::F32 && (type == GgmlType::F32 || type == GgmlType::F16)) ||
                             (ct == ComputeType::BF16 && type == GgmlType::BF16) || ct == ComputeType::Blocks;
        if (inPlace && !device_.isGpu()) file_.populateTensor(**t);
        auto w = device_.makeLinear(type, file_.tensorData(**t), int64_t(rows), int64_t(cols), ct);
        if (!w) return std::unexpected(Error{w.error().kind, fmt::format("{}: {}", name, w.error().message)});
        if (!w->mapped() && *t != tokenEmbd_) file_.releaseTensor(**t);
        weightBytesPerToken_ += w->bytes();
        weightBytesResident_ += w->bytes();
        if (!w->mapped()) weightBytesConverted_ += w->bytes();
        matmulMacsPerToken_ += rows * cols;
        const std::string from(ggmlTypeName((*t)->typeId));
        const std::string to = ct == ComputeType::Int8                ? "INT8"
                               : ct == ComputeType::BF16              ? "BF16"
                               : w->format() == WeightFormat::Blocks  ? from
                               : w->format() == WeightFormat::F16     ? "F16"
                                                                      : "F32";
        precisionCounts_[from == to ? to : fmt::format("{} from {}", to, from)] += 1;
        report(*t, name);
        return std::move(*w);
    };
    // A vector (norm weights, biases) of n floats, used in place when stored as aligned F32.
    auto vector = [&](const std::string& name, uint64_t n = 0) -> Result<const float*> {
        if (n == 0) n = E;
        auto t = findChecked(file_, name, n, 0);
        if (!t) return std::unexpected(t.error());
        auto data = file_.tensorData(**t);
        weightBytesPerToken_ += n * 4;
        weightBytesResident_ += n * 4;
        report(*t, name);
        if ((*t)->type() == GgmlType::F32 && reinterpret_cast<uintptr_t>(data.data()) % alignof(float) == 0)
            return reinterpret_cast<const float*>(data.data());
        ownedNorms_.emplace_back(n);
        dequantizeRow((*t)->type(), data.data(), ownedNorms_.back().data(), n);
        return ownedNorms_.back().data();
    };

    auto embd = findChecked(file_, "token_embd.weight", E, V);
    if (!embd) return std::unexpected(embd.error());
    tokenEmbd_ = *embd;
    weightBytesPerToken_ += tokenEmbd_->nBytes / V;  // one row per token
    weightBytesResident_ += tokenEmbd_->nBytes;

    if (const GgufTensorInfo* rf = file_.findTensor("rope_freqs.weight")) {
        if (rf->nDims != 1 || rf->ne[0] != uint64_t(hp.nRot / 2) || rf->type() != GgmlType::F32)
            return std::unexpected(bad(fmt::format("tensor rope_freqs.weight has shape {} {}, expected [{}] F32",
                                                   rf->shapeString(), ggmlTypeName(rf->typeId), hp.nRot / 2)));
        ropeFreqFactors_.allocate(rf->ne[0]);
        dequantizeRow(GgmlType::F32, file_.tensorData(*rf).data(), ropeFreqFactors_.data(), rf->ne[0]);
    }
    for (const char* longRope : {"rope_factors_long.weight", "rope_factors_short.weight"})
        if (file_.findTensor(longRope))
            return fail(ErrorKind::Unsupported, fmt::format("tensor {}: LongRoPE scaling (Phi-3 128k) is not supported", longRope));

    // One RoPE table per distinct (base, scale); gemma3's local layers have their own.
    ropeTableSpecs_ = {{hp.ropeFreqBase, hp.ropeFreqScale}};
    const std::pair<double, double> slidingSpec{hp.ropeFreqBaseSliding, hp.ropeFreqScaleSliding};
    if (slidingSpec != ropeTableSpecs_[0]) ropeTableSpecs_.push_back(slidingSpec);

    try {
        // The LM head first: the largest matrix, so its conversion's transient memory (source
        // pages, the plain copy before packing) comes before the rest is resident, not on top of it.
        auto on = vector("output_norm.weight");
        if (!on) return std::unexpected(on.error());
        outputNorm_ = *on;
        // A missing output.weight means the LM head is tied to the token embedding.
        tiedOutput_ = file_.findTensor("output.weight") == nullptr;
        auto out = linear(tiedOutput_ ? "token_embd.weight" : "output.weight", V, E);
        if (!out) return std::unexpected(out.error());
        output_ = std::move(*out);
        if (tiedOutput_) weightBytesResident_ -= output_.mapped() ? output_.bytes() : 0;  // same bytes as the embedding

        const ArchOptions& arch = hp.arch;
        layers_.resize(size_t(hp.nLayer));
        for (int32_t l = 0; l < hp.nLayer; ++l) {
            LayerWeights& L = layers_[size_t(l)];
            const std::string p = fmt::format("blk.{}.", l);
            // Matrices and vectors this architecture has, in file order of a converted model.
            std::vector<std::tuple<Linear*, std::string, uint64_t, uint64_t>> matrices;
            std::vector<std::tuple<const float**, std::string, uint64_t>> vectors = {{&L.attnNorm, "attn_norm.weight", E}};
            if (arch.fusedQkv) matrices.emplace_back(&L.wqkv, "attn_qkv.weight", Q + 2 * KV, E);
            else matrices.insert(matrices.end(), {{&L.wq, "attn_q.weight", Q, E}, {&L.wk, "attn_k.weight", KV, E}, {&L.wv, "attn_v.weight", KV, E}});
            if (arch.qkvBias) vectors.insert(vectors.end(), {{&L.bq, "attn_q.bias", Q}, {&L.bk, "attn_k.bias", KV}, {&L.bv, "attn_v.bias", KV}});
            if (arch.qkNorm) vectors.insert(vectors.end(), {{&L.qNorm, "attn_q_norm.weight", D}, {&L.kNorm, "attn_k_norm.weight", D}});
            matrices.emplace_back(&L.wo, "attn_output.weight", E, Q);
            if (arch.postNorms) vectors.emplace_back(&L.postAttnNorm, "post_attention_norm.weight", E);
            vectors.emplace_back(&L.ffnNorm, "ffn_norm.weight", E);
            if (arch.fusedGateUp) matrices.emplace_back(&L.gateUp, "ffn_up.weight", 2 * F, E);
            else matrices.insert(matrices.end(), {{&L.gate, "ffn_gate.weight", F, E}, {&L.up, "ffn_up.weight", F, E}});
            matrices.emplace_back(&L.down, "ffn_down.weight", E, F);
            if (arch.postNorms) vectors.emplace_back(&L.postFfnNorm, "post_ffw_norm.weight", E);

            for (auto& [dst, name, n] : vectors) {
                auto v = vector(p + name, n);
                if (!v) return std::unexpected(v.error());
                *dst = *v;
            }
            for (auto& [dst, name, rows, cols] : matrices) {
                auto w = linear(p + name, rows, cols);
                if (!w) return std::unexpected(w.error());
                *dst = std::move(*w);
            }
            const bool sliding = hp.isSlidingLayer(l);
            L.ropeTable = sliding && ropeTableSpecs_.size() > 1 ? 1 : 0;
            L.attention = AttentionOptions{sliding ? hp.slidingWindow : 0, hp.attnSoftCap, hp.attentionScale};
        }
    } catch (const std::bad_alloc&) {
        return fail(ErrorKind::OutOfMemory, "out of memory while preparing the weights");
    }
    if (progress) progress(1.0f, "ready");
    return {};
}

std::string LlamaModel::precisionSummary() const {
    std::string s;
    for (const auto& [name, count] : precisionCounts_) s += fmt::format("{}{} ×{}", s.empty() ? "" : ", ", name, count);
    return s;
}

Result<std::unique_ptr<LlamaContext>> LlamaModel::createContext(int32_t nCtx, int32_t maxBatch, KvType kvType) const {
    if (nCtx < 1) return fail(ErrorKind::InvalidArgument, fmt::format("context length must be positive, got {}", nCtx));
    if (maxBatch < 1) return fail(ErrorKind::InvalidArgument, fmt::format("batch size must be positive, got {}", maxBatch));
    maxBatch = std::min(maxBatch, nCtx);
    int32_t nSliding = 0;
    std::vector<uint8_t> sliding(size_t(hp_.nLayer), 0);
    for (int32_t l = 0; l < hp_.nLayer; ++l) {
        sliding[size_t(l)] = hp_.isSlidingLayer(l) ? 1 : 0;
        nSliding += sliding[size_t(l)];
    }
    if (nSliding == 0) sliding.clear();
    auto cache = KvCache::create({hp_.nLayer, hp_.nHeadKv, hp_.headDim, nCtx, kvType, nSliding ? hp_.slidingWindow : 0, nSliding,
                                  std::move(sliding)});
    if (!cache) return std::unexpected(cache.error());
    auto ctx = std::make_unique<LlamaContext>();
    ctx->cache_ = std::move(*cache);
    ctx->maxBatch_ = maxBatch;
    const size_t M = size_t(maxBatch);
    try {
        for (const auto& [base, scale] : ropeTableSpecs_) {
            auto& table = ctx->ropeTables.emplace_back(size_t(nCtx) * size_t(hp_.nRot));
            makeRopeTable(table.data(), nCtx, hp_.nRot, base, scale, ropeFreqFactors_.size() ? ropeFreqFactors_.data() : nullptr);
        }
        if (hp_.arch.fusedQkv || hp_.arch.fusedGateUp)
            ctx->fused.allocate(M * std::max<size_t>(size_t(hp_.qDim() + 2 * hp_.kvDim()), 2 * size_t(hp_.nFf)));
        ctx->x.allocate(M * hp_.nEmbd);
        ctx->xn.allocate(M * hp_.nEmbd);
        ctx->tmp.allocate(M * hp_.nEmbd);
        ctx->q.allocate(M * hp_.qDim());
        ctx->att.allocate(M * hp_.qDim());
        ctx->k.allocate(M * hp_.kvDim());
        ctx->v.allocate(M * hp_.kvDim());
        ctx->gate.allocate(M * hp_.nFf);
        ctx->up.allocate(M * hp_.nFf);
        ctx->logits.allocate(size_t(hp_.nVocab));
    } catch (const std::bad_alloc&) {
        return fail(ErrorKind::OutOfMemory, fmt::format("out of memory allocating buffers for a batch of {}", maxBatch));
    }
    if (auto ok = fitThreads(*ctx); !ok) return std::unexpected(ok.error());
    return ctx;
}

size_t LlamaModel::scratchFloatsFor(const LlamaContext& ctx) const {
    // Attention indexes its scratch by omp_get_thread_num(): room for the device's count and for
    // the calling thread's OpenMP team, whichever is larger.
    const int threads = std::max(omp_get_max_threads(), device_.threads());
    return attentionScratchFloats(threads, hp_.nHead, hp_.nHeadKv, hp_.headDim, ctx.cache_.capacity());
}

Result<void> LlamaModel::fitThreads(LlamaContext& ctx) const {
    const size_t need = scratchFloatsFor(ctx);
    if (ctx.scores.size() >= need) return {};
    try {
        ctx.scores.allocate(need);
    } catch (const std::bad_alloc&) {
        return fail(ErrorKind::OutOfMemory, fmt::format("out of memory allocating attention scratch for {} threads", device_.threads()));
    }
    return {};
}

std::span<const float> LlamaModel::forward(LlamaContext& ctx, std::span<const int32_t> tokens, int32_t position0,
                                           CellOrigin origin, ForwardProbe* probe, float* everyRow) {
    const auto& hp = hp_;
    const int64_t m = int64_t(tokens.size());
    const int64_t E = hp.nEmbd;
    const bool storeKv = !probe || !probe->rerun;  // a re-run reads its own K/V from the cache
    if (probe) probe->prepare(hp, position0 + int32_t(m) - 1);

    // token embedding: x[r] = token_embd[tokens[r]]   [gemma: × √n_embd]
    embed(ctx, tokens);
    for (int32_t l = 0; l < hp.nLayer; ++l) {
        const LayerWeights& L = layers_[size_t(l)];
        // attention rmsnorm, then the Q, K, V projections (one fused pass over the three matrices,
        // or [phi3] one matrix whose output rows Q | K | V are split into q, k, v)
        rmsNorm(ctx.x.data(), L.attnNorm, m, E, hp.rmsEps, ctx.xn.data());
        multiply(ctx, L, Stage::Qkv, m);
        // [qwen2: biases] [qwen3, gemma3: q/k head norms], RoPE, the new K/V into the cache, and
        // causal attention over the cache [sliding window] [score soft-cap]
        attentionBlock(ctx, l, m, position0, storeKv, probe);
        // output projection, [gemma: post-attention norm], residual; ffn rmsnorm
        multiply(ctx, L, Stage::Output, m);
        afterAttention(ctx, L, m);
        // gated feed-forward: gate and up (fused; [phi3] one matrix gate | up), activation, down
        multiply(ctx, L, Stage::GateUp, m);
        gateActivation(ctx, m);
        multiply(ctx, L, Stage::Down, m);
        // [gemma: post-FFN norm], residual
        afterFfn(ctx, L, m);
        // [probe: the last token's residual stream after this layer]
        if (probe) std::memcpy(probe->residualSlot(l), ctx.x.data() + (m - 1) * E, size_t(E) * sizeof(float));
    }
    if (storeKv) ctx.cache_.commit(position0, int32_t(m), origin);

    // final rmsnorm and LM head, for the last position only (or, scoring, for every row)
    if (everyRow) {
        readOut(ctx.x.data(), m, ctx.xn.data(), everyRow);
        return {everyRow + (m - 1) * hp.nVocab, size_t(hp.nVocab)};
    }
    readOut(ctx.x.data() + (m - 1) * E, 1, ctx.xn.data(), ctx.logits.data());
    return {ctx.logits.data(), size_t(hp.nVocab)};
}

void LlamaModel::readOut(const float* x, int64_t rows, float* normed, float* logits) {
    rmsNorm(x, outputNorm_, rows, hp_.nEmbd, hp_.rmsEps, normed);
    device_.linear(output_, normed, rows, logits);
    // [gemma2: final logit soft-cap]
    if (hp_.finalSoftCap > 0.0f) softCapInPlace(logits, rows * hp_.nVocab, hp_.finalSoftCap);
}

}  // namespace inferscope

namespace inferscope {

void LlamaModel::warmUp(LlamaContext& ctx) {
    // One decode pass, then a batch that takes the prefill path (larger than the GEMV's rows).
    const int32_t batch = std::min({ctx.maxBatch(), ctx.cache().capacity(), int32_t(kGemvPlainMaxRows + 4)});
    std::vector<int32_t> tokens(size_t(batch), 0);
    forward(ctx, std::span(tokens).first(1), 0, CellOrigin::Prompt);
    if (batch > kGemvPlainMaxRows) forward(ctx, tokens, 0, CellOrigin::Prompt);
    ctx.cache().truncate(0);
    ctx.cache().resetCounters();
}

}  // namespace inferscope
