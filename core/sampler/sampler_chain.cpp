#include "sampler/sampler_chain.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <numbers>

#include "common/exp_nonpositive.h"

namespace inferscope {
namespace {

// Relative slack of the inclusive cuts (top-p "reaches p", min-p ">= minP * pmax"): a float logit
// is only good to ~1e-7, so a cumulative probability within 1e-6 of p counts as reaching it.
constexpr double kCutSlack = 1e-6;

// Decisions (the top-p cut, the draw) sum masses as integers: each mass in [0, 1] is quantised
// to 2^-52, so sums are exact and independent of the order of the candidates. With at most 2^23
// candidates a total stays below 2^75, and total * u53 (u53 < 2^53) fits in 128 bits.
using Mass = unsigned __int128;
constexpr size_t kMaxCandidates = size_t(1) << 23;
uint64_t quantise(double mass) { return uint64_t(mass * 0x1p52 + 0.5); }

constexpr float kInf = std::numeric_limits<float>::infinity();

// Rank order after the penalty: higher logit first, ties to the lower id.
struct ByLogit {
    bool operator()(const auto& a, const auto& b) const {
        return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
    }
};
// The same on the raw logits (the record's rank and top-N).
struct ByRaw {
    bool operator()(const auto& a, const auto& b) const {
        return a.raw > b.raw || (a.raw == b.raw && a.id < b.id);
    }
};

// Sorts the first (mid - first) of [first, last) into place. A heap selection (one cheap, well
// predicted comparison per element) when few are wanted, else a quickselect and a sort of those.
template <class It, class Order>
void selectSorted(It first, It mid, It last, Order order) {
    if (mid == last) {
        std::sort(first, last, order);
    } else if ((mid - first) * 64 <= (last - first)) {
        std::partial_sort(first, mid, last, order);
    } else {
        std::nth_element(first, mid, last, order);
        std::sort(first, mid, order);
    }
}

// Walks in rank order (top-p, the draw) rank only what they can reach. Candidates are bucketed by
// the bit length of their quantised mass (one bucket per factor of two; masses fall with rank, so
// buckets 0..b are a rank prefix); the walk's stopping point lies in the first bucket where the
// cumulative mass stops it, and only the buckets up to it get sorted: O(n) + O(m log m) for a
// walk over m candidates, instead of a sort of all n.
constexpr size_t kMassBuckets = 54;  // q = 2^52 (the maximum) -> 0, [2^51, 2^52) -> 1, ..., q = 0 -> 53
using MassHistogram = std::array<Mass, kMassBuckets>;
size_t massBucket(uint64_t q) { return size_t(std::countl_zero(q)) - 11; }

// Makes candidates[0, ranked) cover every survivor in [0, count) that a walk stopping at the first
// cumulative mass with stops(cumulative) can visit. `histogram` holds the survivors' masses.
template <class Candidate, class Stops>
void rankForWalk(std::vector<Candidate>& candidates, size_t& ranked, size_t count,
                 const MassHistogram& histogram, Stops stops) {
    if (ranked >= count) return;
    Mass cumulative = 0;
    size_t lastBucket = kMassBuckets - 1;
    for (size_t b = 0; b < kMassBuckets; ++b) {
        cumulative += histogram[b];
        if (stops(cumulative)) {
            lastBucket = b;
            break;
        }
    }
    const auto first = candidates.begin();
    const auto end = std::partition(first + ranked, first + count, [lastBucket](const Candidate& c) {
        return massBucket(quantise(c.mass)) <= lastBucket;
    });
    std::sort(first + ranked, end, ByLogit{});
    ranked = std::max(ranked, size_t(end - first));
}

// Passes over the whole vocabulary keep kLanes independent accumulators, so they vectorise
// (a single running sum or max is one long dependency chain). The grouping is fixed by n alone.
constexpr size_t kLanes = 8;

template <class Term>
double laneSum(size_t n, Term term) {
    std::array<double, kLanes> acc{};
    size_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
        for (size_t j = 0; j < kLanes; ++j) acc[j] += term(i + j);
    for (; i < n; ++i) acc[0] += term(i);
    double sum = 0;
    for (double a : acc) sum += a;
    return sum;
}

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

constexpr size_t at(SamplerStage s) { return static_cast<size_t>(s); }

}  // namespace

Result<SamplerChain> SamplerChain::create(const SamplerParams& params) {
    if (auto ok = validateSamplerParams(params); !ok) return std::unexpected(ok.error());
    return SamplerChain(params);
}

Result<SampleRecord> SamplerChain::sample(std::span<const float> logits,
                                          std::span<const int32_t> recentTokens) {
    return run({}, logits, recentTokens);
}

Result<SampleRecord> SamplerChain::sample(std::span<const int32_t> ids, std::span<const float> logits,
                                          std::span<const int32_t> recentTokens) {
    if (ids.size() != logits.size())
        return invalid(fmt::format("{} candidate ids for {} logits", ids.size(), logits.size()));
    return run(ids, logits, recentTokens);
}

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

Result<SampleRecord> SamplerChain::run(std::span<const int32_t> ids, std::span<const float> logits,
                                       std::span<const int32_t> recentTokens) {
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
    applyTopK(step);
    survivors[at(SamplerStage::TopK)] = int32_t(step.count);
    applyTopP(step);
    survivors[at(SamplerStage::TopP)] = int32_t(step.count);
    applyMinP(step);
    survivors[at(SamplerStage::MinP)] = int32_t(step.count);
    const uint64_t u53 = rng_() >> 11;  // u = u53 * 2^-53; drawn for greedy steps too
    const size_t chosen = applyTemperatureAndPick(step, u53);
    survivors[at(SamplerStage::Temperature)] = int32_t(step.count);

    // ---- the record ---------------------------------------------------------------------------
    const bool greedy = params_.temperature == 0.0f;
    const double temperature = params_.temperature;
    auto finalProbability = [&](const Candidate& c) {
        if (greedy) return 1.0;
        return expNonPositive((double(c.logit) - step.maxLogit) / temperature) /
               step.z[at(SamplerStage::Temperature)];
    };
    const Candidate pick = candidates_[chosen];
    record.id = pick.id;
    record.logit = pick.raw;
    record.pRaw = float(expNonPositive(double(pick.raw) - logSumExp));
    record.pFinal = float(finalProbability(pick));
    record.entropyBits = float(entropyNats / std::numbers::ln2);
    record.logSumExp = float(logSumExp);
    if (!step.penalised && chosen < ranked_) {  // ranked by raw logit already
        record.rank = int32_t(chosen + 1);
    } else {
        int32_t rank = 1;
        for (const Candidate& c : candidates_) rank += ByRaw{}(c, pick) ? 1 : 0;
        record.rank = rank;
    }

    const size_t nTop = std::min(size_t(params_.topN), n);
    if (nTop == 0) return record;

    // Which stages each position survived (survivor sets are nested prefixes), before the top-N
    // selection reorders the array. Positions past the top-k survivors keep Penalty.
    for (size_t i = 0; i < size_t(survivors[at(SamplerStage::TopK)]); ++i) {
        size_t reached = at(SamplerStage::TopK);
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
        const double mass = expNonPositive(double(c.logit) - step.maxLogit);  // T = 1, penalised
        for (size_t s = at(SamplerStage::Penalty); s < at(SamplerStage::Temperature); ++s)
            out.p[s] = size_t(c.reached) >= s ? float(mass / step.z[s]) : 0.0f;
        const size_t last = at(SamplerStage::Temperature);
        out.p[last] = size_t(c.reached) >= last ? float(finalProbability(c)) : 0.0f;
    }
    return record;
}

}  // namespace inferscope
