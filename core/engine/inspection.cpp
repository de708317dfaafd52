// From a ForwardProbe of a real pass to a PositionInspection: each layer's residual read out by the
// model's own head (LlamaModel::readOut) and ranked by the sampler's own raw softmax, so the last
// row is the Probabilities panel's "raw" column bit for bit; the attention weights as kept.
#include "engine/inspection_readout.h"

#include <chrono>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "sampler/sampler_chain.h"

namespace inferscope {
namespace {

// A chain that only ranks: greedy, no penalty or cut, so its record's `top` are the highest raw
// logits with their T = 1 softmax over the whole vocabulary (the same code the real step ran).
Result<SamplerChain> rankingChain(int32_t topK) {
    SamplerParams params;
    params.temperature = 0.0f;
    params.topK = 0;
    params.topP = 1.0f;
    params.minP = 0.0f;
    params.repeatPenalty = 1.0f;
    params.repeatLastN = 0;
    params.topN = topK;
    return SamplerChain::create(params);
}

float l2Norm(std::span<const float> x) {
    double s = 0;
    for (float v : x) s += double(v) * double(v);
    return float(std::sqrt(s));
}

Result<LogitLens> readLens(LlamaModel& model, const ForwardProbe& probe, int32_t topK) {
    const LlamaHParams& hp = model.hparams();
    const size_t L = size_t(hp.nLayer), E = size_t(hp.nEmbd), V = size_t(hp.nVocab);
    auto chain = rankingChain(topK);
    if (!chain) return std::unexpected(chain.error());
    std::vector<float> normed(L * E), logits(L * V);
    // Layers 0 .. L-2 in one pass over the LM head (its batch path); the last layer alone, through
    // the very call forward() ended with (one row), so it reproduces the step's logits exactly.
    if (L > 1) model.readOut(probe.residuals.data(), int64_t(L - 1), normed.data(), logits.data());
    model.readOut(probe.residuals.data() + (L - 1) * E, 1, normed.data() + (L - 1) * E, logits.data() + (L - 1) * V);

    LogitLens lens;
    lens.layers.resize(L);
    for (size_t l = 0; l < L; ++l) {
        auto record = chain->sample(std::span(logits).subspan(l * V, V), {});
        if (!record)
            return fail(ErrorKind::Device, fmt::format("layer {}'s readout has invalid logits: {}", l, record.error().message));
        LensLayer& row = lens.layers[l];
        for (const CandidateRecord& c : record->top)
            row.top.push_back({c.id, c.logit, c.p[size_t(SamplerStage::Raw)]});
        row.entropyBits = record->entropyBits;
        row.residualNorm = l2Norm(probe.residualOf(int32_t(l)));
    }
    const int32_t finalTop1 = lens.layers.back().top.front().id;
    for (int32_t l = int32_t(L) - 1; l >= 0 && lens.layers[size_t(l)].top.front().id == finalTop1; --l) lens.settledLayer = l;
    for (int32_t l = 0; l < int32_t(L) && lens.firstTop1Layer < 0; ++l)
        if (lens.layers[size_t(l)].top.front().id == finalTop1) lens.firstTop1Layer = l;
    return lens;
}

}  // namespace

Result<void> checkInspectOptions(const InspectOptions& options) {
    if (options.lens && (options.lensTopK < 1 || options.lensTopK > kMaxTopN))
        return fail(ErrorKind::InvalidArgument, fmt::format("lens top-k must be in [1, {}], got {}", kMaxTopN, options.lensTopK));
    return {};
}

Result<PositionInspection> readInspection(LlamaModel& model, const ForwardProbe& probe, int32_t token, const InspectOptions& options) {
    const auto t0 = std::chrono::steady_clock::now();
    const LlamaHParams& hp = model.hparams();
    PositionInspection out;
    out.position = probe.position;
    out.token = token;
    out.rerun = probe.rerun;
    if (options.lens) {
        auto lens = readLens(model, probe, options.lensTopK);
        if (!lens) return std::unexpected(lens.error());
        out.lens = std::move(*lens);
    }
    if (options.attention && probe.keepAttention) {
        AttentionMap& a = out.attention;
        a.nLayer = hp.nLayer;
        a.nHead = hp.nHead;
        a.nHeadKv = hp.nHeadKv;
        a.nKeys = probe.position + 1;
        for (int32_t l = 0; l < hp.nLayer; ++l) a.window.push_back(hp.isSlidingLayer(l) ? hp.slidingWindow : 0);
        a.weights = probe.attention;
    }
    out.us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count();
    return out;
}

}  // namespace inferscope
