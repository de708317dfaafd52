#include "model/llama_model.h"

#include <omp.h>

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

void addInPlace(float* x, const float* y, int64_t n) {
#pragma omp parallel for simd schedule(static) if (n > 65536)
    for (int64_t i = 0; i < n; ++i) x[i] += y[i];
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
    const uint64_t E = hp.nEmbd, Q = hp.qDim(), KV = hp.kvDim(), F = hp.nFf, V = hp.nVocab;

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
    auto norm = [&](const std::string& name) -> Result<const float*> {
        auto t = findChecked(file_, name, E, 0);
        if (!t) return std::unexpected(t.error());
        auto data = file_.tensorData(**t);
        weightBytesPerToken_ += E * 4;
        weightBytesResident_ += E * 4;
        report(*t, name);
        if ((*t)->type() == GgmlType::F32 && reinterpret_cast<uintptr_t>(data.data()) % alignof(float) == 0)
            return reinterpret_cast<const float*>(data.data());
        ownedNorms_.emplace_back(E);
        dequantizeRow((*t)->type(), data.data(), ownedNorms_.back().data(), E);
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

    try {
        // The LM head first: the largest matrix, so its conversion's transient memory (source
        // pages, the plain copy before packing) comes before the rest is resident, not on top of it.
        auto on = norm("output_norm.weight");
        if (!on) return std::unexpected(on.error());
        outputNorm_ = *on;
        // A missing output.weight means the LM head is tied to the token embedding.
        tiedOutput_ = file_.findTensor("output.weight") == nullptr;
        auto out = linear(tiedOutput_ ? "token_embd.weight" : "output.weight", V, E);
        if (!out) return std::unexpected(out.error());
        output_ = std::move(*out);
        if (tiedOutput_) weightBytesResident_ -= output_.mapped() ? output_.bytes() : 0;  // same bytes as the embedding

        layers_.resize(size_t(hp.nLayer));
        for (int32_t l = 0; l < hp.nLayer; ++l) {
            LayerWeights& L = layers_[size_t(l)];
            const std::string p = fmt::format("blk.{}.", l);
            auto an = norm(p + "attn_norm.weight");
            if (!an) return std::unexpected(an.error());
            L.attnNorm = *an;
            for (auto [dst, name, rows, cols] : {std::tuple{&L.wq, "attn_q.weight", Q, E}, std::tuple{&L.wk, "attn_k.weight", KV, E},
                                                 std::tuple{&L.wv, "attn_v.weight", KV, E}, std::tuple{&L.wo, "attn_output.weight", E, Q},
                                                 std::tuple{&L.gate, "ffn_gate.weight", F, E}, std::tuple{&L.up, "ffn_up.weight", F, E},
                                                 std::tuple{&L.down, "ffn_down.weight", E, F}}) {
                auto w = linear(p + name, rows, cols);
                if (!w) return std::unexpected(w.error());
                *dst = std::move(*w);
            }
            auto fn = norm(p + "ffn_norm.weight");
            if (!fn) return std::unexpected(fn.error());
            L.ffnNorm = *fn;
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
    auto cache = KvCache::create({hp_.nLayer, hp_.nHeadKv, hp_.headDim, nCtx, kvType});
    if (!cache) return std::unexpected(cache.error());
    auto ctx = std::make_unique<LlamaContext>();
    ctx->cache_ = std::move(*cache);
    ctx->maxBatch_ = maxBatch;
    const size_t M = size_t(maxBatch);
    try {
        ctx->ropeTable.allocate(size_t(nCtx) * size_t(hp_.nRot));
        makeRopeTable(ctx->ropeTable.data(), nCtx, hp_.nRot, hp_.ropeFreqBase, hp_.ropeFreqScale,
                      ropeFreqFactors_.size() ? ropeFreqFactors_.data() : nullptr);
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
        ctx->scores.allocate(attentionScratchFloats(std::max(omp_get_max_threads(), device_.threads()), hp_.nHead, hp_.nHeadKv,
                                                    hp_.headDim, nCtx));
    } catch (const std::bad_alloc&) {
        return fail(ErrorKind::OutOfMemory, fmt::format("out of memory allocating buffers for a batch of {}", maxBatch));
    }
    return ctx;
}

std::span<const float> LlamaModel::forward(LlamaContext& ctx, std::span<const int32_t> tokens, int32_t position0,
                                           CellOrigin origin) {
    const auto& hp = hp_;
    const int64_t m = int64_t(tokens.size());
    const int64_t E = hp.nEmbd;
    KvCache& cache = ctx.cache_;

    // token embedding: x[r] = token_embd[tokens[r]]
    const auto embdInfo = *ggmlTypeInfo(tokenEmbd_->typeId);
    const size_t rowBytes = size_t(E) / embdInfo.blockSize * embdInfo.typeSize;
    const uint8_t* embd = file_.tensorData(*tokenEmbd_).data();
    for (int64_t r = 0; r < m; ++r)
        dequantizeRow(tokenEmbd_->type(), embd + size_t(tokens[r]) * rowBytes, ctx.x.data() + r * E, size_t(E));

    for (int32_t l = 0; l < hp.nLayer; ++l) {
        const LayerWeights& L = layers_[size_t(l)];
        // attention rmsnorm, then the Q, K, V projections (one fused pass over the three matrices)
        rmsNorm(ctx.x.data(), L.attnNorm, m, E, hp.rmsEps, ctx.xn.data());
        const Linear* qkv[] = {&L.wq, &L.wk, &L.wv};
        float* qkvOut[] = {ctx.q.data(), ctx.k.data(), ctx.v.data()};
        device_.linearMany(qkv, ctx.xn.data(), m, qkvOut);
        // RoPE on queries and keys, by position
        ropeInPlace(ctx.q.data(), m, hp.nHead, hp.headDim, hp.nRot, position0, ctx.ropeTable.data());
        ropeInPlace(ctx.k.data(), m, hp.nHeadKv, hp.headDim, hp.nRot, position0, ctx.ropeTable.data());
        // the new positions' K and V join the cache; attention reads all positions up to each query
        cache.store(l, position0, m, ctx.k.data(), ctx.v.data());
        attention(ctx.q.data(), cache.layerKeysData(l), cache.layerValuesData(l), cache.type() == KvType::F16, m, position0,
                  hp.nHead, hp.nHeadKv, hp.headDim, cache.capacity(), ctx.att.data(), ctx.scores.data());
        // output projection and residual
        device_.linear(L.wo, ctx.att.data(), m, ctx.tmp.data());
        addInPlace(ctx.x.data(), ctx.tmp.data(), m * E);
        // ffn rmsnorm, SwiGLU feed-forward (gate and up fused), residual
        rmsNorm(ctx.x.data(), L.ffnNorm, m, E, hp.rmsEps, ctx.xn.data());
        const Linear* gateUp[] = {&L.gate, &L.up};
        float* gateUpOut[] = {ctx.gate.data(), ctx.up.data()};
        device_.linearMany(gateUp, ctx.xn.data(), m, gateUpOut);
        swiGlu(ctx.gate.data(), ctx.up.data(), m * hp.nFf, ctx.gate.data());
        device_.linear(L.down, ctx.gate.data(), m, ctx.tmp.data());
        addInPlace(ctx.x.data(), ctx.tmp.data(), m * E);
    }
    cache.commit(position0, int32_t(m), origin);

    // final rmsnorm and LM head, for the last position only
    const float* last = ctx.x.data() + (m - 1) * E;
    rmsNorm(last, outputNorm_, 1, E, hp.rmsEps, ctx.xn.data());
    device_.linear(output_, ctx.xn.data(), 1, ctx.logits.data());
    return {ctx.logits.data(), size_t(hp.nVocab)};
}

}  // namespace inferscope

namespace inferscope {

void LlamaModel::warmUp(LlamaContext& ctx) {
    // One decode pass, then a batch that takes the prefill path (larger than the GEMV's rows).
    const int32_t batch = std::min({ctx.maxBatch(), ctx.cache().capacity(), int32_t(kGemvMaxRows + 4)});
    std::vector<int32_t> tokens(size_t(batch), 0);
    forward(ctx, std::span(tokens).first(1), 0, CellOrigin::Prompt);
    if (batch > kGemvMaxRows) forward(ctx, tokens, 0, CellOrigin::Prompt);
    ctx.cache().truncate(0);
    ctx.cache().resetCounters();
}

}  // namespace inferscope
