#include "sampler/replay.h"

#include <cmath>
#include <fmt/format.h>

#include "sampler/sampler_chain.h"

namespace inferscope {
namespace {

// Raw probability held by the stored logits: Σ exp(l - logSumExp over the whole vocabulary).
float storedMass(const StepRecord& r) {
    double sum = 0;
    for (float l : r.replayLogits) sum += std::exp(double(l) - double(r.sample.logSumExp));
    return float(std::min(1.0, sum));
}

bool isExact(const StepRecord& r, float mass, const SamplerParams& p) {
    if (mass >= 1.0f - 1e-6f) return true;                 // the whole vocabulary was stored
    if (p.repeatPenalty < 1.0f || p.frequencyPenalty < 0.0f || p.presencePenalty < 0.0f)
        return false;                                      // could lift a token that was not stored
    for (const auto& [id, bias] : p.logitBias)
        if (bias > 0.0f) return false;                     // the same
    if (p.temperature == 0.0f) return true;                // the highest logit is stored
    if (p.topK > 0 && size_t(p.topK) <= r.replayLogits.size()) return true;
    if (p.topP < 1.0f) return false;                       // the nucleus is measured over the whole vocabulary
    if (p.minP > 0.0f && !r.replayLogits.empty()) {        // min-p cuts above every logit that was not stored
        const double cut = double(r.replayLogits.front()) + std::log(double(p.minP));
        return double(r.replayLogits.back()) < cut;
    }
    return false;
}

// Tokens before step k: the context, then the original picks of steps 0..k-1.
void recentFor(std::span<const StepRecord> steps, size_t k, std::span<const int32_t> context, std::vector<int32_t>& out) {
    out.assign(context.begin(), context.end());
    for (size_t j = 0; j < k; ++j) out.push_back(steps[j].sample.id);
}

Result<void> checkStored(const StepRecord& r, size_t k) {
    if (r.replayIds.empty() || r.replayIds.size() != r.replayLogits.size())
        return fail(ErrorKind::InvalidArgument, fmt::format("step {} has no stored logits to replay", k));
    return {};
}

}  // namespace

Result<ReplayResult> replaySteps(std::span<const StepRecord> steps, std::span<const int32_t> context,
                                 const SamplerParams& params) {
    auto chain = SamplerChain::create(params);
    if (!chain) return std::unexpected(chain.error());
    ReplayResult result;
    result.steps.reserve(steps.size());
    std::vector<int32_t> recent;
    for (size_t k = 0; k < steps.size(); ++k) {
        const StepRecord& r = steps[k];
        if (auto ok = checkStored(r, k); !ok) return std::unexpected(ok.error());
        recentFor(steps, k, context, recent);
        auto sample = chain->sample(r.replayIds, r.replayLogits, recent);
        if (!sample) return std::unexpected(sample.error());
        ReplayedStep out;
        out.id = sample->id;
        out.pFinal = sample->pFinal;
        out.changed = sample->id != r.sample.id;
        out.storedMass = storedMass(r);
        out.exact = isExact(r, out.storedMass, params);
        result.changed += out.changed ? 1 : 0;
        result.inexact += out.exact ? 0 : 1;
        result.minStoredMass = std::min(result.minStoredMass, out.storedMass);
        result.steps.push_back(out);
    }
    return result;
}

Result<SampleRecord> replayOneStep(std::span<const StepRecord> steps, size_t index, std::span<const int32_t> context,
                                   const SamplerParams& params) {
    if (index >= steps.size()) return fail(ErrorKind::InvalidArgument, fmt::format("no step {}", index));
    auto chain = SamplerChain::create(params);
    if (!chain) return std::unexpected(chain.error());
    chain->discardDraws(index);  // the draw step `index` had
    const StepRecord& r = steps[index];
    if (auto ok = checkStored(r, index); !ok) return std::unexpected(ok.error());
    std::vector<int32_t> recent;
    recentFor(steps, index, context, recent);
    return chain->sample(r.replayIds, r.replayLogits, recent);
}

}  // namespace inferscope
