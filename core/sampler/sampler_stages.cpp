// The sampler chain's stages (see sampler_chain.h): repetition penalty, top-k, top-p, min-p,
// temperature and the pick, each narrowing the survivors and setting its softmax normaliser.
#include <algorithm>
#include <cmath>
#include <limits>

#include "common/exp_nonpositive.h"
#include "sampler/chain_ranking.h"
#include "sampler/sampler_chain.h"

namespace inferscope {

using namespace sampler_detail;

void SamplerChain::ensureMasses(Step& step) {
    if (step.massesValid) return;
    for (size_t i = 0; i < step.count; ++i)
        candidates_[i].mass = expNonPositive(double(candidates_[i].logit) - step.maxLogit);
    step.massesValid = true;
}

// Penalty: each distinct recent token once. On entry the masses are the raw ones (relative to
// the raw maximum); the new normaliser reuses them for every token the penalty did not touch.
void SamplerChain::applyPenalty(bool identityIds, std::span<const int32_t> recentTokens, Step& step) {
    step.z[at(SamplerStage::Penalty)] = step.z[at(SamplerStage::Raw)];
    const float penalty = params_.repeatPenalty;
    if (penalty == 1.0f || params_.repeatLastN == 0 || recentTokens.empty()) return;
    const size_t lastN = params_.repeatLastN < 0
                             ? recentTokens.size()
                             : std::min(size_t(params_.repeatLastN), recentTokens.size());
    window_.assign(recentTokens.end() - lastN, recentTokens.end());
    std::sort(window_.begin(), window_.end());
    window_.erase(std::unique(window_.begin(), window_.end()), window_.end());

    penalised_.clear();
    if (identityIds) {
        for (int32_t id : window_)
            if (id >= 0 && size_t(id) < step.count) penalised_.push_back(size_t(id));
    } else {
        for (size_t i = 0; i < step.count; ++i)
            if (std::binary_search(window_.begin(), window_.end(), candidates_[i].id))
                penalised_.push_back(i);
    }
    if (penalised_.empty()) return;

    // Candidates are still in input order: position i is rawMasses_[i].
    const float rawMax = float(step.maxLogit);
    bool maxPenalised = false;
    float maxLogit = -kInf;
    for (size_t i : penalised_) {
        Candidate& c = candidates_[i];
        maxPenalised |= c.logit == rawMax;
        // A penalty below 1 raises positive logits; keep them finite.
        c.logit = c.logit > 0 ? std::min(c.logit / penalty, std::numeric_limits<float>::max())
                              : c.logit * penalty;
        maxLogit = std::max(maxLogit, c.logit);
        rawMasses_[i] = 0;  // left out of the untouched sum (summed apart, not subtracted)
    }
    if (maxPenalised)  // the old maximum moved: scan for the new one
        for (const Candidate& c : candidates_) maxLogit = c.logit > maxLogit ? c.logit : maxLogit;
    else
        maxLogit = std::max(maxLogit, rawMax);
    // Raw masses of the tokens the penalty did not touch.
    const double untouched = laneSum(step.count, [&](size_t i) { return rawMasses_[i]; });
    // z = untouched * e^(rawMax - max) + sum over the penalised of e^(logit - max).
    step.maxLogit = maxLogit;
    const double shift = expNonPositive(-std::abs(double(maxLogit) - double(rawMax)));
    double z = 0;
    if (shift == 0) {  // the maximum moved by > 708: the untouched masses underflow, sum afresh
        for (size_t i = 0; i < step.count; ++i)
            z += expNonPositive(double(candidates_[i].logit) - step.maxLogit);
    } else {
        z = maxLogit <= rawMax ? untouched / shift : untouched * shift;
        for (size_t i : penalised_) z += expNonPositive(double(candidates_[i].logit) - step.maxLogit);
    }
    step.z[at(SamplerStage::Penalty)] = z;
    step.massesValid = false;
    step.penalised = true;
}

void SamplerChain::applyTopK(Step& step) {
    step.z[at(SamplerStage::TopK)] = step.z[at(SamplerStage::Penalty)];
    const int32_t k = params_.topK;
    if (k <= 0 || size_t(k) >= step.count) return;
    const auto first = candidates_.begin();
    if (size_t(k) * 64 <= step.count) {  // small k: O(n) heap selection, survivors come out ranked
        std::partial_sort(first, first + k, first + step.count, ByLogit{});
        ranked_ = size_t(k);
    } else {  // large k: O(n) quickselect; walks rank later only as far as they go
        std::nth_element(first, first + k, first + step.count, ByLogit{});
        ranked_ = 0;
    }
    step.count = size_t(k);
    ensureMasses(step);
    double z = 0;
    for (size_t i = 0; i < step.count; ++i) z += candidates_[i].mass;
    step.z[at(SamplerStage::TopK)] = z;
}

// Top-p: walks in rank order until the cumulative probability reaches p.
void SamplerChain::applyTopP(Step& step) {
    step.z[at(SamplerStage::TopP)] = step.z[at(SamplerStage::TopK)];
    if (params_.topP >= 1.0f) return;
    ensureMasses(step);
    MassHistogram histogram{};
    Mass total = 0;
    for (size_t i = 0; i < step.count; ++i) {
        const uint64_t q = quantise(candidates_[i].mass);
        total += q;
        histogram[massBucket(q)] += q;
    }
    const double target = double(params_.topP) * (1.0 - kCutSlack) * double(total);
    auto reaches = [target](Mass cumulative) { return double(cumulative) >= target; };
    rankForWalk(candidates_, ranked_, step.count, histogram, reaches);
    Mass cumulative = 0;
    double z = 0;
    size_t keep = step.count;
    for (size_t i = 0; i < step.count; ++i) {
        cumulative += quantise(candidates_[i].mass);
        z += candidates_[i].mass;
        if (reaches(cumulative)) {
            keep = i + 1;
            break;
        }
    }
    if (keep == step.count) return;
    step.count = keep;
    step.z[at(SamplerStage::TopP)] = z;
}

// Min-p: p_i >= minP * pmax  <=>  logit_i - maxLogit >= log(minP).
void SamplerChain::applyMinP(Step& step) {
    step.z[at(SamplerStage::MinP)] = step.z[at(SamplerStage::TopP)];
    if (params_.minP <= 0.0f) return;
    const double threshold = step.maxLogit + std::log(double(params_.minP)) + std::log1p(-kCutSlack);
    auto keeps = [threshold](const Candidate& c) { return double(c.logit) >= threshold; };
    const auto first = candidates_.begin();
    const size_t ranked = std::min(ranked_, step.count);
    size_t keep;
    if (ranked > 0 && !keeps(candidates_[ranked - 1]))  // the cut falls inside the ranked prefix
        keep = size_t(std::partition_point(first, first + ranked, keeps) - first);
    else                                                // the ranked prefix is kept whole
        keep = size_t(std::partition(first + ranked, first + step.count, keeps) - first);
    if (keep == step.count) return;
    step.count = keep;
    ensureMasses(step);
    double z = 0;
    for (size_t i = 0; i < step.count; ++i) z += candidates_[i].mass;
    step.z[at(SamplerStage::MinP)] = z;
}

// Temperature, then the inverse-CDF pick: the first survivor in rank order whose cumulative mass
// exceeds u * total. Greedy (T = 0) keeps the highest alone.
size_t SamplerChain::applyTemperatureAndPick(Step& step, uint64_t u53) {
    const auto first = candidates_.begin();
    if (params_.temperature == 0.0f) {
        if (ranked_ == 0) std::iter_swap(first, std::min_element(first, first + step.count, ByLogit{}));
        ranked_ = std::max<size_t>(ranked_, 1);
        step.count = 1;
        step.z[at(SamplerStage::Temperature)] = 1;
        return 0;
    }
    if (params_.temperature == 1.0f) {
        ensureMasses(step);  // (logit - max) / 1 is exact: the same masses
    } else {
        const double temperature = params_.temperature;
        for (size_t i = 0; i < step.count; ++i) {
            Candidate& c = candidates_[i];
            c.mass = expNonPositive((double(c.logit) - step.maxLogit) / temperature);
        }
        step.massesValid = false;
    }
    MassHistogram histogram{};
    Mass total = 0;
    double z = 0;
    for (size_t i = 0; i < step.count; ++i) {
        const uint64_t q = quantise(candidates_[i].mass);
        total += q;
        histogram[massBucket(q)] += q;
        z += candidates_[i].mass;
    }
    step.z[at(SamplerStage::Temperature)] = z;
    const Mass target = (total * u53) >> 53;  // < total
    auto passes = [target](Mass cumulative) { return cumulative > target; };
    rankForWalk(candidates_, ranked_, step.count, histogram, passes);
    Mass cumulative = 0;
    for (size_t i = 0; i < step.count; ++i) {
        cumulative += quantise(candidates_[i].mass);
        if (passes(cumulative)) return i;
    }
    return step.count - 1;  // not reached
}

}  // namespace inferscope
