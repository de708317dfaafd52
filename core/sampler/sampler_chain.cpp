#include "sampler/sampler_chain.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <numbers>

#include "common/exp_nonpositive.h"
#include "sampler/chain_ranking.h"

namespace inferscope {

using namespace sampler_detail;

namespace {

// The highest logit, and whether any is NaN or +inf (which the max ignores).
std::pair<float, bool> scanLogits(std::span<const float> logits) {
    std::array<float, kLanes> max;
    max.fill(-kInf);
    std::array<int32_t, kLanes> bad{};
    const size_t n = logits.size();
    size_t i = 0;
    auto visit = [&](size_t lane, float logit) {
        bad[lane] |= !(logit < kInf);
        max[lane] = logit > max[lane] ? logit : max[lane];
    };
    for (; i + kLanes <= n; i += kLanes)
        for (size_t j = 0; j < kLanes; ++j) visit(j, logits[i + j]);
    for (; i < n; ++i) visit(0, logits[i]);
    return {*std::max_element(max.begin(), max.end()),
            std::any_of(bad.begin(), bad.end(), [](int32_t b) { return b != 0; })};
}

Result<SampleRecord> invalid(std::string message) {
    return fail(ErrorKind::InvalidArgument, std::move(message));
}

}  // namespace

Result<SamplerChain> SamplerChain::create(const SamplerParams& params) {
    if (auto ok = validateSamplerParams(params); !ok) return std::unexpected(ok.error());
    return SamplerChain(params);
}

Result<SampleRecord> SamplerChain::sample(std::span<const float> logits,
                                          std::span<const int32_t> recentTokens) {
    return run({}, logits, recentTokens, Outcome{nullptr, nullptr, {}});
}

Result<SampleRecord> SamplerChain::sample(std::span<const float> logits, std::span<const int32_t> recentTokens,
                                          std::span<const uint8_t> allowed) {
    if (allowed.size() != logits.size())
        return invalid(fmt::format("a grammar mask of {} tokens for {} logits", allowed.size(), logits.size()));
    return run({}, logits, recentTokens, Outcome{nullptr, nullptr, allowed});
}

Result<SampleRecord> SamplerChain::sample(std::span<const int32_t> ids, std::span<const float> logits,
                                          std::span<const int32_t> recentTokens) {
    if (ids.size() != logits.size())
        return invalid(fmt::format("{} candidate ids for {} logits", ids.size(), logits.size()));
    return run(ids, logits, recentTokens, Outcome{nullptr, nullptr, {}});
}

Result<SampleRecord> SamplerChain::describe(std::span<const float> logits, std::span<const int32_t> recentTokens, int32_t pick,
                                            std::span<const uint8_t> allowed) {
    if (pick < 0 || size_t(pick) >= logits.size())
        return invalid(fmt::format("token {} is not among the {} candidates", pick, logits.size()));
    if (!allowed.empty() && allowed.size() != logits.size())
        return invalid(fmt::format("a grammar mask of {} tokens for {} logits", allowed.size(), logits.size()));
    return run({}, logits, recentTokens, Outcome{&pick, nullptr, allowed});
}

Result<std::vector<TokenProbability>> SamplerChain::finalDistribution(std::span<const float> logits, std::span<const int32_t> recentTokens) {
    std::vector<TokenProbability> out;
    if (auto r = run({}, logits, recentTokens, Outcome{nullptr, &out, {}}); !r) return std::unexpected(r.error());
    return out;
}

Result<SampleRecord> SamplerChain::run(std::span<const int32_t> ids, std::span<const float> logits,
                                       std::span<const int32_t> recentTokens, Outcome outcome) {
    const size_t n = logits.size();
    const bool identityIds = ids.empty();
    if (n == 0) return invalid("no candidates to sample from");
    if (n > kMaxCandidates)
        return invalid(fmt::format("{} candidates, more than the sampler's limit of {}", n, kMaxCandidates));

    // ---- raw: reject NaN / +inf, softmax statistics at T = 1, copy into the work array --------
    const auto [rawMax, anyBad] = scanLogits(logits);
    if (anyBad) {
        for (size_t i = 0; i < n; ++i)
            if (!(logits[i] < kInf))
                return invalid(fmt::format("logit of token {} is {}; logits must be finite or -inf",
                                           identityIds ? int32_t(i) : ids[i], logits[i]));
    }
    if (rawMax == -kInf) return invalid("every candidate's logit is -inf: nothing to sample");

    // m_i = e^(l_i - max) over the contiguous logits; p_i = m_i / z;
    // entropy = log z - sum(p_i (l_i - max)), in nats.
    rawMasses_.resize(n);  // reuses capacity after the first call
    for (size_t i = 0; i < n; ++i) rawMasses_[i] = expNonPositive(double(logits[i]) - double(rawMax));
    const double z = laneSum(n, [&](size_t i) { return rawMasses_[i]; });
    const double massTimesLogit = laneSum(n, [&](size_t i) {  // clamped: no 0 * -inf
        return rawMasses_[i] * std::max(double(logits[i]) - double(rawMax), -708.0);
    });
    candidates_.resize(n);
    for (size_t i = 0; i < n; ++i)
        candidates_[i] = Candidate{identityIds ? int32_t(i) : ids[i], logits[i], logits[i],
                                   int32_t(at(SamplerStage::Penalty)), rawMasses_[i]};
    Step step;
    step.count = n;
    step.maxLogit = rawMax;
    step.z[at(SamplerStage::Raw)] = z;
    step.massesValid = true;
    const double logSumExp = double(rawMax) + std::log(z);
    const double entropyNats = std::log(z) - massTimesLogit / z;

    // ---- the stages ---------------------------------------------------------------------------
    SampleRecord record;
    auto& survivors = record.survivors;
    ranked_ = 0;
    survivors[at(SamplerStage::Raw)] = int32_t(n);
    applyPenalty(identityIds, recentTokens, step);
    survivors[at(SamplerStage::Penalty)] = int32_t(step.count);
    if (!applyGrammar(identityIds, outcome.allowed, step))
        return invalid("the grammar allows none of the candidates");
    survivors[at(SamplerStage::Grammar)] = int32_t(step.count);
    record.constrained = !outcome.allowed.empty();
    record.grammarMassRemoved = record.constrained ? float(std::max(0.0, 1.0 - step.grammarKept)) : 0.0f;
    applyTopK(step);
    survivors[at(SamplerStage::TopK)] = int32_t(step.count);
    applyTopP(step);
    survivors[at(SamplerStage::TopP)] = int32_t(step.count);
    applyMinP(step);
    survivors[at(SamplerStage::MinP)] = int32_t(step.count);
    applyTemperature(step);
    survivors[at(SamplerStage::Temperature)] = int32_t(step.count);
    if (outcome.distribution) {  // the survivors and their final probabilities, ranked
        auto& out = *outcome.distribution;
        out.clear();
        for (size_t i = 0; i < step.count; ++i)
            out.push_back({candidates_[i].id, params_.temperature == 0.0f ? 1.0 : candidates_[i].mass / step.z[at(SamplerStage::Temperature)]});
        std::sort(out.begin(), out.end(), [&](const TokenProbability& a, const TokenProbability& b) { return a.p > b.p || (a.p == b.p && a.id < b.id); });
        return SampleRecord{};
    }
    constexpr size_t kNotSurvived = ~size_t(0);
    size_t chosen = kNotSurvived;
    if (outcome.forcedPick) {  // a given token: where it is among the survivors, if it is
        for (size_t i = 0; i < step.count; ++i)
            if (candidates_[i].id == *outcome.forcedPick) chosen = i;
    } else {
        const uint64_t u53 = rng_() >> 11;  // u = u53 * 2^-53; drawn for greedy steps too
        chosen = pickPosition(step, u53);
    }

    // ---- the record ---------------------------------------------------------------------------
    const bool greedy = params_.temperature == 0.0f;
    const double temperature = params_.temperature;
    auto finalProbability = [&](const Candidate& c) {
        if (greedy) return 1.0;
        return expNonPositive((double(c.logit) - step.maxLogit) / temperature) /
               step.z[at(SamplerStage::Temperature)];
    };
    Candidate pick{};
    if (chosen != kNotSurvived) {
        pick = candidates_[chosen];
    } else {  // a forced token no stage kept: its raw figures, final probability 0
        for (const Candidate& c : candidates_)
            if (c.id == *outcome.forcedPick) pick = c;
    }
    record.id = pick.id;
    record.logit = pick.raw;
    record.pRaw = float(expNonPositive(double(pick.raw) - logSumExp));
    record.pFinal = chosen != kNotSurvived ? float(finalProbability(pick)) : 0.0f;
    if (record.constrained)  // the penalty stage's probability, before the mask (the fight meter)
        record.pBeforeGrammar = float(std::exp(double(pick.logit) - step.penaltyMax) / step.penaltyZ);
    record.entropyBits = float(entropyNats / std::numbers::ln2);
    record.logSumExp = float(logSumExp);
    // Ranked by raw logit already, unless a grammar removed some first: the survivors' order is then
    // not the rank among every candidate (a forbidden favourite would make the pick "rank 1").
    if (!step.penalised && !record.constrained && chosen != kNotSurvived && chosen < ranked_) {
        record.rank = int32_t(chosen + 1);
    } else {
        int32_t rank = 1;
        for (const Candidate& c : candidates_) rank += ByRaw{}(c, pick) ? 1 : 0;
        record.rank = rank;
    }

    if (params_.finalTopN > 0) {  // the survivors by final probability: the order of their penalised logits
        const size_t k = std::min(size_t(params_.finalTopN), step.count);
        const auto first = candidates_.begin();
        auto higher = [](const Candidate& a, const Candidate& b) { return a.logit > b.logit || (a.logit == b.logit && a.id < b.id); };
        finalOrder_.assign(first, first + ptrdiff_t(step.count));
        std::partial_sort(finalOrder_.begin(), finalOrder_.begin() + ptrdiff_t(k), finalOrder_.end(), higher);
        record.finalTop.reserve(k);
        for (size_t i = 0; i < k; ++i) record.finalTop.push_back({finalOrder_[i].id, float(finalProbability(finalOrder_[i]))});
    }
    const size_t nTop = std::min(size_t(params_.topN), n);
    if (nTop == 0) return record;

    // Which stages each position survived (survivor sets are nested prefixes), before the top-N
    // selection reorders the array. Positions past the grammar's survivors keep Penalty.
    for (size_t i = 0; i < size_t(survivors[at(SamplerStage::Grammar)]); ++i) {
        size_t reached = at(SamplerStage::Grammar);
        while (reached + 1 < kSamplerStageCount && i < size_t(survivors[reached + 1])) ++reached;
        candidates_[i].reached = int32_t(reached);
    }
    if (step.penalised || ranked_ < nTop) {
        const auto first = candidates_.begin();
        selectSorted(first, first + nTop, first + n, ByRaw{});
    }

    record.top.resize(nTop);
    for (size_t i = 0; i < nTop; ++i) {
        const Candidate& c = candidates_[i];
        CandidateRecord& out = record.top[i];
        out.id = c.id;
        out.logit = c.raw;
        out.p[at(SamplerStage::Raw)] = float(expNonPositive(double(c.raw) - logSumExp));
        // T = 1, penalised. A token the grammar removed may lie above the survivors' maximum.
        const double x = double(c.logit) - step.maxLogit;
        const double mass = x <= 0 ? expNonPositive(x) : std::exp(std::min(x, 700.0));
        for (size_t s = at(SamplerStage::Penalty); s < at(SamplerStage::Temperature); ++s)
            out.p[s] = size_t(c.reached) >= s ? float(mass / step.z[s]) : 0.0f;
        const size_t last = at(SamplerStage::Temperature);
        out.p[last] = size_t(c.reached) >= last ? float(finalProbability(c)) : 0.0f;
    }
    return record;
}

}  // namespace inferscope
