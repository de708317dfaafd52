// The sampler chain's stages (see sampler_chain.h): bias and penalties, top-k, top-p, min-p,
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

SamplerChain::SamplerChain(const SamplerParams& params) : params_(params), rng_(params.seed) {
    bias_ = params.logitBias;
    std::sort(bias_.begin(), bias_.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    size_t out = 0;
    for (size_t i = 0; i < bias_.size(); ++i) {
        if (out > 0 && bias_[out - 1].first == bias_[i].first) bias_[out - 1].second += bias_[i].second;
        else bias_[out++] = bias_[i];
    }
    bias_.resize(out);
}

// The candidates the penalty stage changes: those with a bias, and the distinct recent tokens
// with their counts (when a penalty is on), in position order.
void SamplerChain::findAdjustments(bool identityIds, std::span<const int32_t> recentTokens, size_t count) {
    adjustments_.clear();
    window_.clear();
    windowCounts_.clear();
    const bool penalties = (params_.repeatPenalty != 1.0f || params_.frequencyPenalty != 0.0f || params_.presencePenalty != 0.0f) &&
                           params_.repeatLastN != 0 && !recentTokens.empty();
    if (penalties) {
        const size_t lastN = params_.repeatLastN < 0 ? recentTokens.size() : std::min(size_t(params_.repeatLastN), recentTokens.size());
        window_.assign(recentTokens.end() - lastN, recentTokens.end());
        std::sort(window_.begin(), window_.end());
        size_t distinct = 0;
        for (size_t i = 0; i < window_.size(); ++i) {
            if (distinct > 0 && window_[distinct - 1] == window_[i]) {
                ++windowCounts_.back();
                continue;
            }
            window_[distinct++] = window_[i];
            windowCounts_.push_back(1);
        }
        window_.resize(distinct);
    }
    if (window_.empty() && bias_.empty()) return;
    auto countOf = [&](int32_t id) {
        const auto it = std::lower_bound(window_.begin(), window_.end(), id);
        return it != window_.end() && *it == id ? windowCounts_[size_t(it - window_.begin())] : 0;
    };
    auto biasOf = [&](int32_t id) {
        const auto it = std::lower_bound(bias_.begin(), bias_.end(), id, [](const auto& b, int32_t x) { return b.first < x; });
        return it != bias_.end() && it->first == id ? it->second : 0.0f;
    };
    if (identityIds) {  // position = id: walk both sorted lists together
        size_t w = 0, b = 0;
        while (w < window_.size() || b < bias_.size()) {
            const int32_t id = b == bias_.size() || (w < window_.size() && window_[w] < bias_[b].first) ? window_[w] : bias_[b].first;
            const int32_t n = w < window_.size() && window_[w] == id ? windowCounts_[w++] : 0;
            const float bias = b < bias_.size() && bias_[b].first == id ? bias_[b++].second : 0.0f;
            if (id >= 0 && size_t(id) < count) adjustments_.push_back({size_t(id), bias, n});
        }
    } else {
        for (size_t i = 0; i < count; ++i) {
            const int32_t id = candidates_[i].id;
            const int32_t n = countOf(id);
            const float bias = biasOf(id);
            if (n > 0 || bias != 0.0f) adjustments_.push_back({i, bias, n});
        }
    }
}

// Penalty (bias and penalties, see sampler_chain.h). On entry the masses are the raw ones
// (relative to the raw maximum); the new normaliser reuses them for every token left untouched.
void SamplerChain::applyPenalty(bool identityIds, std::span<const int32_t> recentTokens, Step& step) {
    step.z[at(SamplerStage::Penalty)] = step.z[at(SamplerStage::Raw)];
    findAdjustments(identityIds, recentTokens, step.count);
    if (adjustments_.empty()) return;
    penalised_.clear();
    for (const Adjustment& a : adjustments_) penalised_.push_back(a.position);

    // Candidates are still in input order: position i is rawMasses_[i].
    const float penalty = params_.repeatPenalty;
    const float rawMax = float(step.maxLogit);
    bool maxPenalised = false;
    float maxLogit = -kInf;
    constexpr float kMaxFinite = std::numeric_limits<float>::max();
    for (const Adjustment& a : adjustments_) {
        Candidate& c = candidates_[a.position];
        maxPenalised |= c.logit == rawMax;
        // A bias, a penalty below 1 or a negative frequency/presence penalty raise logits: keep
        // them finite.
        float l = std::min(c.logit + a.bias, kMaxFinite);  // -inf (a masked token) stays -inf
        if (a.count > 0) {
            l = l > 0 ? std::min(l / penalty, kMaxFinite) : l * penalty;
            l -= float(a.count) * params_.frequencyPenalty + params_.presencePenalty;
            l = std::min(l, kMaxFinite);
        }
        c.logit = l;
        maxLogit = std::max(maxLogit, c.logit);
        rawMasses_[a.position] = 0;  // left out of the untouched sum (summed apart, not subtracted)
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

// Grammar: the allowed candidates become the prefix. If the penalised maximum is removed, the
// survivors' maximum becomes the reference of every mass, and the earlier normalisers are
// rescaled to it (the record computes every stage's probability from the final maximum).
bool SamplerChain::applyGrammar(bool identityIds, std::span<const uint8_t> allowed, Step& step) {
    step.z[at(SamplerStage::Grammar)] = step.z[at(SamplerStage::Penalty)];
    step.penaltyMax = step.maxLogit;
    step.penaltyZ = step.z[at(SamplerStage::Penalty)];
    step.grammarKept = 1;
    if (allowed.empty()) return true;
    ensureMasses(step);
    auto isAllowed = [&](const Candidate& c) {
        return c.id >= 0 && size_t(c.id) < allowed.size() && allowed[size_t(c.id)] != 0;
    };
    (void)identityIds;
    const auto first = candidates_.begin();
    const size_t keep = size_t(std::partition(first, first + step.count, isAllowed) - first);
    if (keep == 0) return false;
    double kept = 0;
    float maxLogit = -kInf;
    for (size_t i = 0; i < keep; ++i) {
        kept += candidates_[i].mass;
        maxLogit = std::max(maxLogit, candidates_[i].logit);
    }
    step.grammarKept = kept / step.penaltyZ;
    step.count = keep;
    ranked_ = 0;
    if (double(maxLogit) == step.maxLogit) {
        step.z[at(SamplerStage::Grammar)] = kept;
        return true;
    }
    // The maximum moved down by delta: masses and normalisers in units of the new maximum.
    const double delta = step.maxLogit - double(maxLogit);
    const double scale = std::exp(std::min(delta, 700.0));
    step.z[at(SamplerStage::Raw)] *= scale;
    step.z[at(SamplerStage::Penalty)] *= scale;
    step.maxLogit = maxLogit;
    step.massesValid = false;
    ensureMasses(step);
    double z = 0;
    for (size_t i = 0; i < step.count; ++i) z += candidates_[i].mass;
    step.z[at(SamplerStage::Grammar)] = z;
    return true;
}

void SamplerChain::applyTopK(Step& step) {
    step.z[at(SamplerStage::TopK)] = step.z[at(SamplerStage::Grammar)];
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

// Temperature: the survivors' masses at T and their sum. Greedy (T = 0) keeps the highest alone.
void SamplerChain::applyTemperature(Step& step) {
    const auto first = candidates_.begin();
    if (params_.temperature == 0.0f) {
        if (ranked_ == 0) std::iter_swap(first, std::min_element(first, first + step.count, ByLogit{}));
        ranked_ = std::max<size_t>(ranked_, 1);
        step.count = 1;
        step.z[at(SamplerStage::Temperature)] = 1;
        return;
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
    double z = 0;
    for (size_t i = 0; i < step.count; ++i) z += candidates_[i].mass;
    step.z[at(SamplerStage::Temperature)] = z;
}

// The inverse-CDF pick: the first survivor in rank order whose cumulative mass exceeds u * total.
size_t SamplerChain::pickPosition(Step& step, uint64_t u53) {
    if (params_.temperature == 0.0f) return 0;
    MassHistogram histogram{};
    Mass total = 0;
    for (size_t i = 0; i < step.count; ++i) {
        const uint64_t q = quantise(candidates_[i].mass);
        total += q;
        histogram[massBucket(q)] += q;
    }
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
