// Sampler chain: hand-computable distributions after each stage, the documented inverse-CDF pick,
// seeded reproducibility, parameter validation, subset sampling, a naive reference implementation
// as the oracle on random inputs, and the no-allocation promise.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <new>
#include <numeric>
#include <random>
#include <vector>

#include "common/exp_nonpositive.h"
#include "sampler/alternative.h"
#include "sampler/sampler_chain.h"

// Counts heap allocations in this test binary (the sampler must not allocate per step). GCC
// cannot see that these replacements pair malloc with free, hence the pragma.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
namespace {
std::atomic<long> gAllocations{0};
}
void* operator new(std::size_t size) {
    ++gAllocations;
    if (void* p = std::malloc(size ? size : 1)) return p;
    throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
// The nothrow and array forms too: std::stable_sort's temporary buffer comes from the nothrow
// new, and under ASan that one is otherwise ASan's, freed here by free() (alloc-dealloc mismatch).
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
    ++gAllocations;
    return std::malloc(size ? size : 1);
}
void* operator new[](std::size_t size) { return operator new(size); }
void* operator new[](std::size_t size, const std::nothrow_t& tag) noexcept { return operator new(size, tag); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
#pragma GCC diagnostic pop

using namespace inferscope;

namespace {

constexpr double kTol = 1e-6;  // float probabilities from float logits
constexpr int kRaw = 0, kPenalty = 1, kGrammar = 2, kTopK = 3, kTopP = 4, kMinP = 5, kFinal = 6;

// Every stage off, T = 1: the final distribution is the raw softmax.
SamplerParams allOff() {
    SamplerParams p;
    p.temperature = 1.0f;
    p.topK = 0;
    p.topP = 1.0f;
    p.minP = 0.0f;
    p.repeatPenalty = 1.0f;
    return p;
}

SamplerChain makeChain(const SamplerParams& p) {
    auto chain = SamplerChain::create(p);
    EXPECT_TRUE(chain) << chain.error().message;
    return std::move(*chain);
}

std::vector<float> logitsOf(std::initializer_list<double> probs) {
    std::vector<float> l;
    for (double p : probs) l.push_back(float(std::log(p)));
    return l;
}

// {.1, .2, .3, .4} as ids 0..3.
const std::vector<float> kTenths = logitsOf({0.1, 0.2, 0.3, 0.4});

SampleRecord sampleOnce(const SamplerParams& p, std::span<const float> logits,
                        std::span<const int32_t> recent = {}) {
    SamplerChain chain = makeChain(p);
    auto r = chain.sample(logits, recent);
    EXPECT_TRUE(r) << r.error().message;
    return *r;
}

const CandidateRecord& candidate(const SampleRecord& r, int32_t id) {
    for (const auto& c : r.top)
        if (c.id == id) return c;
    ADD_FAILURE() << "token " << id << " not in the record's top";
    return r.top.front();
}

// Probability of `id` after `stage` for each id 0..n-1 (needs topN >= n).
std::vector<double> softmax(std::vector<double> l) {
    double z = 0;
    for (double& x : l) z += (x = std::exp(x));
    for (double& x : l) x /= z;
    return l;
}

std::vector<double> stageProbs(const SampleRecord& r, int stage, size_t n) {
    std::vector<double> p(n);
    for (size_t id = 0; id < n; ++id) p[id] = candidate(r, int32_t(id)).p[size_t(stage)];
    return p;
}

void expectProbs(const std::vector<double>& actual, std::vector<double> expected) {
    ASSERT_EQ(actual.size(), expected.size());
    for (size_t i = 0; i < actual.size(); ++i) EXPECT_NEAR(actual[i], expected[i], kTol) << "id " << i;
}

// Survivors of raw, penalty, top-k, top-p, min-p, temperature; no grammar: it keeps the penalty's.
std::array<int32_t, kSamplerStageCount> survivorsOf(std::initializer_list<int32_t> s) {
    std::vector<int32_t> v(s);
    v.insert(v.begin() + kGrammar, v[kPenalty]);
    std::array<int32_t, kSamplerStageCount> a{};
    std::copy(v.begin(), v.end(), a.begin());
    return a;
}

double uniformFrom(std::mt19937_64& rng) { return double(rng() >> 11) * 0x1p-53; }

// Ids by logit, highest first, ties to the lower id.
std::vector<int32_t> idsByLogit(const std::vector<float>& logits) {
    std::vector<int32_t> ids(logits.size());
    std::iota(ids.begin(), ids.end(), 0);
    std::stable_sort(ids.begin(), ids.end(),
                     [&](int32_t a, int32_t b) { return logits[size_t(a)] > logits[size_t(b)]; });
    return ids;
}

}  // namespace

// ---- the softmax's exponential against libm -----------------------------------------------------

TEST(SamplerExp, MatchesStdExpOnTheNonPositiveRange) {
    std::mt19937_64 gen(4);
    std::uniform_real_distribution<double> wide(-708.0, 0.0), narrow(-1.0, 0.0);
    double worst = 0;
    for (int i = 0; i < 200000; ++i) {
        const double x = i % 2 ? wide(gen) : narrow(gen);
        worst = std::max(worst, std::abs(expNonPositive(x) - std::exp(x)) / std::exp(x));
    }
    EXPECT_LT(worst, 5e-16);
    EXPECT_EQ(expNonPositive(0.0), 1.0);
    EXPECT_EQ(expNonPositive(-0.0), 1.0);
    EXPECT_NEAR(expNonPositive(-1.0), 0.36787944117144233, 1e-16);
    EXPECT_NEAR(expNonPositive(-708.0) / std::exp(-708.0), 1.0, 1e-15);
    EXPECT_EQ(expNonPositive(-709.0), 0.0);
    EXPECT_EQ(expNonPositive(-std::numeric_limits<double>::infinity()), 0.0);
}

// ---- stages, by hand ----------------------------------------------------------------------------

TEST(SamplerStages, NamesForDisplay) {
    EXPECT_EQ(samplerStageName(SamplerStage::Raw), "raw");
    EXPECT_EQ(samplerStageName(SamplerStage::Penalty), "penalty");
    EXPECT_EQ(samplerStageName(SamplerStage::TopK), "top-k");
    EXPECT_EQ(samplerStageName(SamplerStage::TopP), "top-p");
    EXPECT_EQ(samplerStageName(SamplerStage::MinP), "min-p");
    EXPECT_EQ(samplerStageName(SamplerStage::Temperature), "temperature");
}

TEST(SamplerStages, AllOffKeepsTheRawSoftmax) {
    SampleRecord r = sampleOnce(allOff(), kTenths);
    EXPECT_EQ(r.survivors, survivorsOf({4, 4, 4, 4, 4, 4}));
    for (int s = 0; s < kSamplerStageCount; ++s) expectProbs(stageProbs(r, s, 4), {0.1, 0.2, 0.3, 0.4});
}

TEST(SamplerStages, TopK3Of4) {
    SamplerParams p = allOff();
    p.topK = 3;
    SampleRecord r = sampleOnce(p, kTenths);
    EXPECT_EQ(r.survivors, survivorsOf({4, 4, 3, 3, 3, 3}));
    expectProbs(stageProbs(r, kRaw, 4), {0.1, 0.2, 0.3, 0.4});
    expectProbs(stageProbs(r, kTopK, 4), {0.0, 2.0 / 9, 3.0 / 9, 4.0 / 9});  // .222 .333 .444
    expectProbs(stageProbs(r, kFinal, 4), {0.0, 2.0 / 9, 3.0 / 9, 4.0 / 9});
    EXPECT_NE(r.id, 0);
}

TEST(SamplerStages, TopKOffWhenZeroNegativeOrAtLeastN) {
    for (int32_t k : {0, -1, 4, 5, 1000}) {
        SamplerParams p = allOff();
        p.topK = k;
        EXPECT_EQ(sampleOnce(p, kTenths).survivors[kTopK], 4) << "k = " << k;
    }
    SamplerParams p = allOff();
    p.topK = 1;
    SampleRecord r = sampleOnce(p, kTenths);
    EXPECT_EQ(r.id, 3);
    EXPECT_FLOAT_EQ(r.pFinal, 1.0f);
}

TEST(SamplerStages, TopP) {
    struct Case { float p; int32_t kept; std::vector<double> probs; };
    const std::vector<Case> cases{
        {0.35f, 1, {0, 0, 0, 1}},                                // .4 reaches .35
        {0.5f, 2, {0, 0, 3.0 / 7, 4.0 / 7}},                     // .4 < .5 <= .7
        {0.7f, 2, {0, 0, 3.0 / 7, 4.0 / 7}},                     // .4 + .3 reaches .7 exactly
        {0.75f, 3, {0, 2.0 / 9, 3.0 / 9, 4.0 / 9}},              // .7 < .75 <= .9
        {0.95f, 4, {0.1, 0.2, 0.3, 0.4}},                        // .9 < .95
        {1.0f, 4, {0.1, 0.2, 0.3, 0.4}},                         // off
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.p);
        SamplerParams p = allOff();
        p.topP = c.p;
        SampleRecord r = sampleOnce(p, kTenths);
        EXPECT_EQ(r.survivors, survivorsOf({4, 4, 4, c.kept, c.kept, c.kept}));
        expectProbs(stageProbs(r, kTopP, 4), c.probs);
        expectProbs(stageProbs(r, kFinal, 4), c.probs);
    }
}

TEST(SamplerStages, CutsAreInclusiveDespiteFloatRounding) {
    // 0.6f is 0.600000024 and .4 + .2 sums to 0.6 only up to float rounding: the cut still keeps
    // two tokens, as it would on paper. Min-p .5 of pmax .4 keeps p = .2 the same way.
    const std::vector<float> logits = logitsOf({0.2, 0.2, 0.2, 0.4});
    SamplerParams p = allOff();
    p.topP = 0.6f;
    SampleRecord r = sampleOnce(p, logits);
    EXPECT_EQ(r.survivors[kTopP], 2);
    expectProbs(stageProbs(r, kTopP, 4), {1.0 / 3, 0, 0, 2.0 / 3});  // ties keep the lower id
    p = allOff();
    p.minP = 0.5f;
    EXPECT_EQ(sampleOnce(p, logits).survivors[kMinP], 4);
}

TEST(SamplerStages, MinP) {
    struct Case { float minP; int32_t kept; std::vector<double> probs; };
    const std::vector<Case> cases{
        {0.6f, 2, {0, 0, 3.0 / 7, 4.0 / 7}},         // threshold .24: keeps .3 .4 -> .4286 .5714
        {0.5f, 3, {0, 2.0 / 9, 3.0 / 9, 4.0 / 9}},   // threshold .2: p >= .2 keeps .2 (inclusive)
        {0.76f, 1, {0, 0, 0, 1}},                    // threshold .304
        {0.2f, 4, {0.1, 0.2, 0.3, 0.4}},             // threshold .08
        {1.0f, 1, {0, 0, 0, 1}},                     // only the maximum
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.minP);
        SamplerParams p = allOff();
        p.minP = c.minP;
        SampleRecord r = sampleOnce(p, kTenths);
        EXPECT_EQ(r.survivors, survivorsOf({4, 4, 4, 4, c.kept, c.kept}));
        expectProbs(stageProbs(r, kMinP, 4), c.probs);
    }
}

TEST(SamplerStages, TemperatureClosedForms) {
    SamplerParams p = allOff();
    p.temperature = 2.0f;  // p_i^(1/2), renormalised
    SampleRecord hot = sampleOnce(p, kTenths);
    const double s = std::sqrt(0.1) + std::sqrt(0.2) + std::sqrt(0.3) + std::sqrt(0.4);
    expectProbs(stageProbs(hot, kFinal, 4),
                {std::sqrt(0.1) / s, std::sqrt(0.2) / s, std::sqrt(0.3) / s, std::sqrt(0.4) / s});
    expectProbs(stageProbs(hot, kMinP, 4), {0.1, 0.2, 0.3, 0.4});  // stages before run at T = 1

    p.temperature = 0.5f;  // p_i^2 / (.01 + .04 + .09 + .16)
    SampleRecord cold = sampleOnce(p, kTenths);
    expectProbs(stageProbs(cold, kFinal, 4), {1.0 / 30, 4.0 / 30, 9.0 / 30, 16.0 / 30});
    EXPECT_NEAR(cold.pFinal, candidate(cold, cold.id).p[kFinal], 1e-7);
}

TEST(SamplerStages, ChainedStagesAndSurvivors) {
    // top-k 3 -> {.444 .333 .222}; top-p .7 -> {.5714 .4286}; min-p .7 keeps both (.4286 >= .4).
    SamplerParams p = allOff();
    p.topK = 3;
    p.topP = 0.7f;
    p.minP = 0.7f;
    SampleRecord r = sampleOnce(p, kTenths);
    EXPECT_EQ(r.survivors, survivorsOf({4, 4, 3, 2, 2, 2}));
    const CandidateRecord& best = candidate(r, 3);
    const std::array<double, kSamplerStageCount> expected{0.4, 0.4, 0.4, 4.0 / 9, 4.0 / 7, 4.0 / 7, 4.0 / 7};
    for (int s = 0; s < kSamplerStageCount; ++s) EXPECT_NEAR(best.p[size_t(s)], expected[size_t(s)], kTol);
    // min-p .8 removes .4286 (< .4571): one survivor.
    p.minP = 0.8f;
    r = sampleOnce(p, kTenths);
    EXPECT_EQ(r.survivors, survivorsOf({4, 4, 3, 2, 1, 1}));
    EXPECT_EQ(r.id, 3);
    EXPECT_FLOAT_EQ(r.pFinal, 1.0f);
    const CandidateRecord& second = candidate(r, 2);
    EXPECT_NEAR(second.p[kTopP], 3.0 / 7, kTol);
    EXPECT_EQ(second.p[kMinP], 0.0f);
    EXPECT_EQ(second.p[kFinal], 0.0f);
}

TEST(SamplerStages, RepetitionPenalty) {
    // Ids 0..3; token 0 (positive) and 1 (negative) are recent, 0 twice: penalised once each.
    const std::vector<float> logits{2.0f, -1.0f, 0.5f, 0.0f};
    const std::vector<int32_t> recent{0, 1, 0};
    SamplerParams p = allOff();
    p.repeatPenalty = 2.0f;
    SampleRecord r = sampleOnce(p, logits, recent);
    expectProbs(stageProbs(r, kRaw, 4), softmax({2.0, -1.0, 0.5, 0.0}));
    expectProbs(stageProbs(r, kPenalty, 4), softmax({1.0, -2.0, 0.5, 0.0}));  // 2/2, -1*2
    EXPECT_EQ(candidate(r, 0).logit, 2.0f);  // the record keeps the raw logit

    // Only the last repeatLastN tokens count: {.., 1, 0} with N = 1 penalises token 0 only.
    p.repeatLastN = 1;
    r = sampleOnce(p, logits, std::vector<int32_t>{1, 0});
    expectProbs(stageProbs(r, kPenalty, 4), softmax({1.0, -1.0, 0.5, 0.0}));
    p.repeatLastN = 0;  // off
    r = sampleOnce(p, logits, recent);
    expectProbs(stageProbs(r, kPenalty, 4), softmax({2.0, -1.0, 0.5, 0.0}));
    p.repeatLastN = -1;  // all given; ids outside the vocabulary are ignored
    r = sampleOnce(p, logits, std::vector<int32_t>{3, 1, 99, -5});
    expectProbs(stageProbs(r, kPenalty, 4), softmax({2.0, -2.0, 0.5, 0.0}));  // 0 * 2 = 0

    // A penalty below 1 encourages repetition: 2 / .5 = 4, -1 * .5 = -.5.
    p.repeatLastN = 64;
    p.repeatPenalty = 0.5f;
    r = sampleOnce(p, logits, recent);
    expectProbs(stageProbs(r, kPenalty, 4), softmax({4.0, -0.5, 0.5, 0.0}));
}

// Logit bias, then the penalties on each distinct recent token: repetition (divide or multiply),
// then count x frequency + presence subtracted, as llama.cpp's logit-bias and penalties samplers.
TEST(SamplerStages, BiasFrequencyAndPresenceAdjustLogitsBeforeAnyCut) {
    SamplerParams p = allOff();
    p.repeatPenalty = 2.0f;
    p.frequencyPenalty = 0.5f;
    p.presencePenalty = 0.25f;
    p.logitBias = {{2, 1.5f}, {3, -100.0f}, {99, 5.0f}};  // 99: not in this vocabulary, ignored
    const std::vector<float> logits{2.0f, -1.0f, 0.5f, 0.0f};
    const std::vector<int32_t> recent{0, 0, 1};
    SampleRecord r = sampleOnce(p, logits, recent);
    // 0: 2 / 2 - 2 x .5 - .25 = -.25; 1: -1 x 2 - .5 - .25 = -2.75; 2: .5 + 1.5 = 2; 3: 0 - 100.
    expectProbs(stageProbs(r, kPenalty, 4), softmax({-0.25, -2.75, 2.0, -100.0}));
    expectProbs(stageProbs(r, kRaw, 4), softmax({2.0, -1.0, 0.5, 0.0}));
    EXPECT_EQ(candidate(r, 2).logit, 0.5f);  // the record keeps the raw logit
    EXPECT_EQ(r.survivors[kPenalty], 4);     // nothing removed
    // The same candidates given as a subset (in another order) adjust the same way.
    const std::vector<int32_t> ids{3, 1, 2, 0};
    const std::vector<float> subset{0.0f, -1.0f, 0.5f, 2.0f};
    auto chain = makeChain(p);
    auto s = chain.sample(ids, subset, recent);
    ASSERT_TRUE(s);
    for (int32_t id = 0; id < 4; ++id) EXPECT_NEAR(candidate(*s, id).p[kPenalty], candidate(r, id).p[kPenalty], kTol) << id;
    // A bias alone (no recent tokens), and a repeated id summed.
    SamplerParams biasOnly = allOff();
    biasOnly.logitBias = {{0, -1.0f}, {0, -1.0f}, {1, 1.0f}};
    r = sampleOnce(biasOnly, logits, {});
    expectProbs(stageProbs(r, kPenalty, 4), softmax({0.0, 0.0, 0.5, 0.0}));
    // Negative frequency and presence penalties encourage repetition.
    SamplerParams encourage = allOff();
    encourage.frequencyPenalty = -1.0f;
    encourage.presencePenalty = -0.5f;
    r = sampleOnce(encourage, logits, recent);
    expectProbs(stageProbs(r, kPenalty, 4), softmax({4.5, 0.5, 0.5, 0.0}));
    // Each must be finite.
    encourage.presencePenalty = NAN;
    EXPECT_FALSE(SamplerChain::create(encourage));
    biasOnly.logitBias = {{1, INFINITY}};
    EXPECT_FALSE(SamplerChain::create(biasOnly));
}

TEST(SamplerStages, GreedyPicksTheArgmaxWithProbabilityOne) {
    SamplerParams p = allOff();
    p.temperature = 0.0f;
    SamplerChain chain = makeChain(p);
    for (int i = 0; i < 10; ++i) {
        auto r = chain.sample(kTenths, {});
        ASSERT_TRUE(r);
        EXPECT_EQ(r->id, 3);
        EXPECT_EQ(r->rank, 1);
        EXPECT_FLOAT_EQ(r->pFinal, 1.0f);
        EXPECT_NEAR(r->pRaw, 0.4, kTol);
        EXPECT_EQ(r->survivors, survivorsOf({4, 4, 4, 4, 4, 1}));
        expectProbs(stageProbs(*r, kFinal, 4), {0, 0, 0, 1});
        expectProbs(stageProbs(*r, kMinP, 4), {0.1, 0.2, 0.3, 0.4});
    }
    // Ties go to the lower id.
    const std::vector<float> tied{1.0f, 3.0f, 3.0f, 0.0f};
    EXPECT_EQ(sampleOnce(p, tied).id, 1);
}

TEST(SamplerRecord, TopNAndRankFollowRawLogitsWhenThePenaltyReorders) {
    // Top-k 40 of 5,000 ranks its survivors by penalised logit; the record must still list the
    // top-N by raw logit and rank the pick in the raw distribution.
    std::mt19937_64 gen(21);
    std::normal_distribution<float> normal(0.0f, 2.0f);
    std::vector<float> logits(5000);
    for (float& l : logits) l = normal(gen);
    const std::vector<int32_t> byRaw = idsByLogit(logits);
    SamplerParams p = allOff();
    p.topK = 40;
    p.topN = 10;
    p.temperature = 0.0f;
    p.repeatPenalty = 100.0f;  // pushes the two best raw tokens far down
    const std::vector<int32_t> recent{byRaw[0], byRaw[1]};
    SampleRecord r = sampleOnce(p, logits, recent);
    EXPECT_EQ(r.id, byRaw[2]);
    EXPECT_EQ(r.rank, 3);
    ASSERT_EQ(r.top.size(), 10u);
    for (size_t i = 0; i < 10; ++i) EXPECT_EQ(r.top[i].id, byRaw[i]) << i;
    EXPECT_EQ(r.top[0].p[kTopK], 0.0f);  // penalised out of the top 40
    EXPECT_GT(r.top[2].p[kTopK], 0.0f);

    p.repeatPenalty = 1.0f;  // without the penalty the ranked top-k prefix is the record's top-N
    r = sampleOnce(p, logits, recent);
    EXPECT_EQ(r.id, byRaw[0]);
    EXPECT_EQ(r.rank, 1);
    for (size_t i = 0; i < 10; ++i) EXPECT_EQ(r.top[i].id, byRaw[i]) << i;
}

TEST(SamplerStages, GreedyAfterPenaltyReportsTheRawRank) {
    // Token 0 leads raw (2.0) but the penalty halves it to 1.0, so token 1 (1.5) wins: raw rank 2.
    const std::vector<float> logits{2.0f, 1.5f, 0.0f, -3.0f};
    SamplerParams p = allOff();
    p.temperature = 0.0f;
    p.repeatPenalty = 2.0f;
    SampleRecord r = sampleOnce(p, logits, std::vector<int32_t>{0});
    EXPECT_EQ(r.id, 1);
    EXPECT_EQ(r.rank, 2);
    EXPECT_EQ(r.logit, 1.5f);
    const double z = std::exp(2.0) + std::exp(1.5) + std::exp(0.0) + std::exp(-3.0);
    EXPECT_NEAR(r.pRaw, std::exp(1.5) / z, kTol);
    EXPECT_NEAR(r.logSumExp, std::log(z), 1e-6);
}

TEST(SamplerStages, EntropyAndLogSumExp) {
    const std::vector<float> uniform8(8, 0.25f);
    SampleRecord u = sampleOnce(allOff(), uniform8);
    EXPECT_NEAR(u.entropyBits, 3.0, 1e-6);
    EXPECT_NEAR(u.logSumExp, 0.25 + std::log(8.0), 1e-6);
    EXPECT_NEAR(u.pRaw, 0.125, kTol);

    SampleRecord t = sampleOnce(allOff(), kTenths);
    double h = 0;
    for (double p : {0.1, 0.2, 0.3, 0.4}) h -= p * std::log2(p);  // 1.846439...
    EXPECT_NEAR(t.entropyBits, h, 1e-6);
    EXPECT_NEAR(t.logSumExp, 0.0, 1e-6);  // log p sums to log 1
    // Any stored logit turns back into its raw probability.
    for (const CandidateRecord& c : t.top) EXPECT_NEAR(std::exp(c.logit - t.logSumExp), c.p[kRaw], kTol);

    // A one-hot distribution (others -inf) has zero entropy; -inf tokens are never picked.
    const float ninf = -std::numeric_limits<float>::infinity();
    SampleRecord one = sampleOnce(allOff(), std::vector<float>{ninf, 5.0f, ninf});
    EXPECT_EQ(one.id, 1);
    EXPECT_NEAR(one.entropyBits, 0.0, 1e-9);
    EXPECT_FLOAT_EQ(one.pFinal, 1.0f);
}

// ---- the pick -----------------------------------------------------------------------------------

TEST(SamplerPick, IsTheDocumentedInverseCdfOfOneDrawPerCall) {
    // u = (rng() >> 11) * 2^-53; pick the first token, by decreasing probability, whose cumulative
    // probability exceeds u. Interleaved single-candidate calls must consume one draw each too.
    SamplerParams p = allOff();
    p.seed = 1234;
    SamplerChain chain = makeChain(p);
    std::mt19937_64 mirror(1234);
    const std::vector<float> single{0.0f};
    const std::vector<int32_t> singleId{7};
    for (int step = 0; step < 1000; ++step) {
        if (step % 3 == 2) {
            auto r = chain.sample(singleId, single, {});
            ASSERT_TRUE(r);
            EXPECT_EQ(r->id, 7);
            mirror();
            continue;
        }
        const double u = uniformFrom(mirror);
        const int32_t expected = u < 0.4 ? 3 : u < 0.7 ? 2 : u < 0.9 ? 1 : 0;
        auto r = chain.sample(kTenths, {});
        ASSERT_TRUE(r);
        ASSERT_EQ(r->id, expected) << "step " << step << " u " << u;
    }
}

TEST(SamplerPick, SameSeedSameSequenceOtherSeedOtherSequence) {
    std::mt19937_64 gen(7);
    std::normal_distribution<float> normal(0.0f, 2.0f);  // draws only the test data
    std::vector<float> logits(64);
    for (float& l : logits) l = normal(gen);
    auto run = [&](uint64_t seed) {
        SamplerParams p;  // the defaults: top-k 40, top-p .95, min-p .05, T .8
        p.seed = seed;
        SamplerChain chain = makeChain(p);
        std::vector<int32_t> ids;
        for (int i = 0; i < 1000; ++i) ids.push_back(chain.sample(logits, {})->id);
        return ids;
    };
    const std::vector<int32_t> a = run(42);
    EXPECT_EQ(a, run(42));
    const std::vector<int32_t> b = run(43);
    int differ = 0;
    for (size_t i = 0; i < a.size(); ++i) differ += a[i] != b[i];
    EXPECT_GT(differ, 500);

    SamplerParams p;
    p.seed = 42;
    SamplerChain chain = makeChain(p);
    for (int i = 0; i < 10; ++i) (void)chain.sample(logits, {});
    chain.reseed(42);
    for (int i = 0; i < 1000; ++i) ASSERT_EQ(chain.sample(logits, {})->id, a[size_t(i)]);
}

TEST(SamplerPick, EmpiricalFrequenciesMatchTheFinalDistribution) {
    auto frequencies = [](SamplerParams p) {
        p.seed = 2024;
        SamplerChain chain = makeChain(p);
        std::vector<double> f(4, 0.0);
        constexpr int kDraws = 20000;
        for (int i = 0; i < kDraws; ++i) f[size_t(chain.sample(kTenths, {})->id)] += 1.0 / kDraws;
        return f;
    };
    const std::vector<double> raw = frequencies(allOff());
    const std::vector<double> target{0.1, 0.2, 0.3, 0.4};
    for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(raw[i], target[i], 0.01) << "id " << i;  // ~3 sigma

    SamplerParams p = allOff();
    p.topK = 3;
    p.temperature = 0.5f;  // top-k 3 then squares: 4, 9, 16 over 29
    const std::vector<double> shaped = frequencies(p);
    const std::vector<double> shapedTarget{0.0, 4.0 / 29, 9.0 / 29, 16.0 / 29};
    EXPECT_EQ(shaped[0], 0.0);
    for (size_t i = 1; i < 4; ++i) EXPECT_NEAR(shaped[i], shapedTarget[i], 0.01) << "id " << i;
}

TEST(SamplerPick, RankAndChosenFieldsAgreeWithTheRecord) {
    SamplerParams p = allOff();
    p.seed = 5;
    p.topN = 4;
    SamplerChain chain = makeChain(p);
    std::vector<int> seen(4, 0);
    for (int i = 0; i < 200; ++i) {
        auto r = chain.sample(kTenths, {});
        ASSERT_TRUE(r);
        ++seen[size_t(r->id)];
        EXPECT_EQ(r->rank, 4 - r->id);  // ids 3, 2, 1, 0 rank 1..4
        EXPECT_EQ(r->top[size_t(r->rank - 1)].id, r->id);
        EXPECT_NEAR(r->pRaw, 0.1 * (r->id + 1), kTol);
        EXPECT_NEAR(r->pFinal, 0.1 * (r->id + 1), kTol);
        EXPECT_EQ(r->logit, kTenths[size_t(r->id)]);
    }
    for (int count : seen) EXPECT_GT(count, 0);
}

// ---- the record's top-N ------------------------------------------------------------------------

TEST(SamplerRecord, TopNSortedByRawLogitWithZerosAfterRemoval) {
    std::mt19937_64 gen(11);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    std::vector<float> logits(100);
    for (float& l : logits) l = normal(gen);
    logits[17] = logits[42];  // a tie: 17 must come before 42

    SamplerParams p = allOff();
    p.topK = 5;
    p.topN = 10;
    SampleRecord r = sampleOnce(p, logits);
    ASSERT_EQ(r.top.size(), 10u);
    const std::vector<int32_t> order = idsByLogit(logits);
    for (size_t i = 0; i < 10; ++i) {
        const CandidateRecord& c = r.top[i];
        EXPECT_EQ(c.id, order[i]);
        EXPECT_EQ(c.logit, logits[size_t(c.id)]);
        EXPECT_NEAR(c.p[kRaw], std::exp(double(c.logit) - r.logSumExp), kTol);
        const bool kept = i < 5;
        EXPECT_GT(c.p[kPenalty], 0.0f);
        for (int s = kTopK; s < kSamplerStageCount; ++s)
            EXPECT_EQ(c.p[size_t(s)] > 0.0f, kept) << "rank " << i << " stage " << s;
    }
    double sumTopK = 0;
    for (size_t i = 0; i < 5; ++i) sumTopK += r.top[i].p[kTopK];
    EXPECT_NEAR(sumTopK, 1.0, 1e-6);

    p.topN = 0;
    EXPECT_TRUE(sampleOnce(p, logits).top.empty());
    p.topN = 500;  // more than n: every candidate
    EXPECT_EQ(sampleOnce(p, logits).top.size(), 100u);
}

// ---- validation and bad input --------------------------------------------------------------------

TEST(SamplerValidation, MessagesNameTheParameterAndTheValue) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    struct Case { void (*set)(SamplerParams&, float); float value; const char* message; };
    auto T = [](SamplerParams& p, float v) { p.temperature = v; };
    auto P = [](SamplerParams& p, float v) { p.topP = v; };
    auto M = [](SamplerParams& p, float v) { p.minP = v; };
    auto R = [](SamplerParams& p, float v) { p.repeatPenalty = v; };
    auto N = [](SamplerParams& p, float v) { p.repeatLastN = int32_t(v); };
    auto K = [](SamplerParams& p, float v) { p.topN = int32_t(v); };
    const std::vector<Case> cases{
        {T, -1.0f, "temperature must be >= 0, got -1"},
        {T, nan, "temperature must be >= 0, got nan"},
        {T, inf, "temperature must be finite, got inf"},
        {P, 1.5f, "top-p must be in (0, 1], got 1.5"},
        {P, 0.0f, "top-p must be in (0, 1], got 0"},
        {P, nan, "top-p must be in (0, 1], got nan"},
        {M, -0.1f, "min-p must be in [0, 1], got -0.1"},
        {M, 1.5f, "min-p must be in [0, 1], got 1.5"},
        {M, nan, "min-p must be in [0, 1], got nan"},
        {R, 0.0f, "repeat-penalty must be > 0, got 0"},
        {R, -1.0f, "repeat-penalty must be > 0, got -1"},
        {R, nan, "repeat-penalty must be > 0, got nan"},
        {R, inf, "repeat-penalty must be finite, got inf"},
        {N, -2.0f, "repeat-last-n must be >= -1 (-1 = all tokens), got -2"},
        {K, -1.0f, "top-n must be in [0, 4096], got -1"},
        {K, 4097.0f, "top-n must be in [0, 4096], got 4097"},
    };
    for (const Case& c : cases) {
        SamplerParams p;
        c.set(p, c.value);
        auto v = validateSamplerParams(p);
        ASSERT_FALSE(v) << c.message;
        EXPECT_EQ(v.error().kind, ErrorKind::InvalidArgument);
        EXPECT_EQ(v.error().message, c.message);
        auto chain = SamplerChain::create(p);
        ASSERT_FALSE(chain);
        EXPECT_EQ(chain.error().message, c.message);
    }
}

TEST(SamplerValidation, RangeEndsAndOffValuesAreValid) {
    EXPECT_TRUE(validateSamplerParams(SamplerParams{}));
    SamplerParams p;
    p.temperature = 0.0f;
    p.topK = -7;
    p.topP = 1.0f;
    p.minP = 0.0f;
    p.repeatLastN = -1;
    p.topN = 0;
    EXPECT_TRUE(validateSamplerParams(p));
    p.minP = 1.0f;
    p.topN = kMaxTopN;
    p.repeatPenalty = 0.01f;
    EXPECT_TRUE(validateSamplerParams(p));
}

TEST(SamplerValidation, BadLogitsAreErrorsAndDoNotAdvanceTheRng) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    SamplerParams p = allOff();
    SamplerChain chain = makeChain(p);
    auto bad = chain.sample(std::vector<float>{0.0f, nan, 1.0f}, {});
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().message, "logit of token 1 is nan; logits must be finite or -inf");
    bad = chain.sample(std::vector<int32_t>{5, 9}, std::vector<float>{inf, 0.0f}, {});
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().message, "logit of token 5 is inf; logits must be finite or -inf");
    bad = chain.sample(std::vector<float>{-inf, -inf}, {});
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().message, "every candidate's logit is -inf: nothing to sample");
    bad = chain.sample(std::span<const float>{}, {});
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().message, "no candidates to sample from");
    bad = chain.sample(std::vector<int32_t>{1, 2, 3}, std::vector<float>{0.0f, 1.0f}, {});
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().message, "3 candidate ids for 2 logits");

    SamplerChain fresh = makeChain(p);
    for (int i = 0; i < 100; ++i) ASSERT_EQ(chain.sample(kTenths, {})->id, fresh.sample(kTenths, {})->id);
}

// ---- subsets and order --------------------------------------------------------------------------

TEST(SamplerSubset, ShuffledFullVocabularyGivesTheSameRecord) {
    std::mt19937_64 gen(3);
    std::normal_distribution<float> normal(0.0f, 2.0f);
    std::vector<float> logits(1000);
    for (float& l : logits) l = std::round(normal(gen) * 4) / 4;  // many ties
    std::vector<int32_t> ids(1000);
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), gen);
    std::vector<float> shuffled(1000);
    for (size_t i = 0; i < ids.size(); ++i) shuffled[i] = logits[size_t(ids[i])];

    SamplerParams p = allOff();  // no truncation: 1000 survivors, sorted only as far as the draw walks
    p.temperature = 1.5f;
    p.repeatPenalty = 1.5f;
    p.seed = 99;
    SamplerChain a = makeChain(p), b = makeChain(p);
    std::vector<int32_t> recent{1, 2, 3};
    for (int step = 0; step < 300; ++step) {
        auto ra = a.sample(logits, recent);
        auto rb = b.sample(ids, shuffled, recent);
        ASSERT_TRUE(ra && rb);
        ASSERT_EQ(ra->id, rb->id) << "step " << step;
        EXPECT_EQ(ra->rank, rb->rank);
        EXPECT_EQ(ra->survivors, rb->survivors);
        EXPECT_NEAR(ra->pFinal, rb->pFinal, 1e-7);
        EXPECT_NEAR(ra->entropyBits, rb->entropyBits, 1e-5);
        ASSERT_EQ(ra->top.size(), rb->top.size());
        for (size_t i = 0; i < ra->top.size(); ++i) EXPECT_EQ(ra->top[i].id, rb->top[i].id);
        recent.push_back(ra->id);
    }
}

TEST(SamplerSubset, SubsetHoldingTheTopKSurvivorsEqualsTheFullVocabulary) {
    // With top-k 40 and at most 64 penalised tokens, the top 40 by penalised logit lie within the
    // top 104 by raw logit (a penalty > 1 only lowers logits), so the top 200 suffice.
    std::mt19937_64 gen(17);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    std::vector<float> logits(1000);
    for (float& l : logits) l = normal(gen);
    const std::vector<int32_t> byRaw = idsByLogit(logits);
    std::vector<int32_t> subsetIds(byRaw.begin(), byRaw.begin() + 200);
    std::shuffle(subsetIds.begin(), subsetIds.end(), gen);
    std::vector<float> subsetLogits;
    for (int32_t id : subsetIds) subsetLogits.push_back(logits[size_t(id)]);

    SamplerParams p;
    p.topK = 40;
    p.topP = 0.9f;
    p.minP = 0.02f;
    p.temperature = 1.2f;
    p.repeatPenalty = 1.3f;
    p.seed = 8;
    SamplerChain full = makeChain(p), subset = makeChain(p);
    std::vector<int32_t> recent;
    int distinctPicks = 0;
    for (int step = 0; step < 300; ++step) {
        auto rf = full.sample(logits, recent);
        auto rs = subset.sample(subsetIds, subsetLogits, recent);
        ASSERT_TRUE(rf && rs);
        ASSERT_EQ(rf->id, rs->id) << "step " << step;
        EXPECT_NEAR(rf->pFinal, rs->pFinal, 1e-6);
        for (size_t s = kTopK; s < kSamplerStageCount; ++s) EXPECT_EQ(rf->survivors[s], rs->survivors[s]);
        EXPECT_EQ(rs->survivors[kRaw], 200);
        // The 20 highest raw logits are in both; their probabilities from top-k on agree.
        ASSERT_EQ(rf->top.size(), rs->top.size());
        for (size_t i = 0; i < rf->top.size(); ++i) {
            ASSERT_EQ(rf->top[i].id, rs->top[i].id);
            for (int s = kTopK; s < kSamplerStageCount; ++s)
                EXPECT_NEAR(rf->top[i].p[size_t(s)], rs->top[i].p[size_t(s)], 1e-6);
        }
        distinctPicks += std::find(recent.begin(), recent.end(), rf->id) == recent.end();
        recent.push_back(rf->id);
    }
    EXPECT_GT(distinctPicks, 10);  // the penalty and the draw really vary the picks
}

// ---- a naive reference implementation as the oracle ----------------------------------------------

namespace {

struct Reference {
    int32_t id;
    int32_t rank;                  // in the raw distribution
    std::vector<int32_t> byRaw;    // ids by raw logit descending, ties to the lower id
    std::array<int32_t, kSamplerStageCount> survivors;
    std::vector<double> finalP;  // [n], by id
};

// Straight from the definitions: full sort, double sums, the same inclusive 1e-6 slack.
Reference referenceSample(const std::vector<float>& raw, const SamplerParams& p,
                          const std::vector<int32_t>& recent, double u) {
    const size_t n = raw.size();
    std::vector<float> l = raw;
    for (const auto& [id, bias] : p.logitBias)
        if (id >= 0 && size_t(id) < n) l[size_t(id)] += bias;
    if (p.repeatLastN != 0) {
        const size_t lastN =
            p.repeatLastN < 0 ? recent.size() : std::min(recent.size(), size_t(p.repeatLastN));
        std::vector<int32_t> count(n, 0);
        for (size_t i = recent.size() - lastN; i < recent.size(); ++i)
            if (recent[i] >= 0 && size_t(recent[i]) < n) ++count[size_t(recent[i])];
        for (size_t id = 0; id < n; ++id) {
            if (count[id] == 0) continue;
            float& x = l[id];
            x = x > 0 ? x / p.repeatPenalty : x * p.repeatPenalty;
            x -= float(count[id]) * p.frequencyPenalty + p.presencePenalty;
        }
    }
    std::vector<int32_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
        return l[size_t(a)] > l[size_t(b)] || (l[size_t(a)] == l[size_t(b)] && a < b);
    });
    const double maxLogit = l[size_t(order[0])];
    auto e = [&](size_t rank) { return std::exp(double(l[size_t(order[rank])]) - maxLogit); };

    Reference r{};
    r.byRaw.resize(n);
    std::iota(r.byRaw.begin(), r.byRaw.end(), 0);
    std::sort(r.byRaw.begin(), r.byRaw.end(), [&](int32_t a, int32_t b) {
        return raw[size_t(a)] > raw[size_t(b)] || (raw[size_t(a)] == raw[size_t(b)] && a < b);
    });
    r.survivors[kRaw] = r.survivors[kPenalty] = r.survivors[kGrammar] = int32_t(n);
    size_t count = (p.topK > 0 && size_t(p.topK) < n) ? size_t(p.topK) : n;
    r.survivors[kTopK] = int32_t(count);
    if (p.topP < 1.0f) {
        double z = 0, cum = 0;
        for (size_t i = 0; i < count; ++i) z += e(i);
        for (size_t i = 0; i < count; ++i) {
            cum += e(i);
            if (cum >= double(p.topP) * (1 - 1e-6) * z) { count = i + 1; break; }
        }
    }
    r.survivors[kTopP] = int32_t(count);
    if (p.minP > 0.0f) {
        const double threshold = std::log(double(p.minP)) + std::log1p(-1e-6);
        size_t keep = 0;
        while (keep < count && double(l[size_t(order[keep])]) - maxLogit >= threshold) ++keep;
        count = keep;
    }
    r.survivors[kMinP] = int32_t(count);
    r.finalP.assign(n, 0.0);
    if (p.temperature == 0.0f) {
        count = 1;
        r.finalP[size_t(order[0])] = 1;
        r.id = order[0];
    } else {
        auto weight = [&](size_t rank) {
            return std::exp((double(l[size_t(order[rank])]) - maxLogit) / p.temperature);
        };
        double z = 0;
        for (size_t i = 0; i < count; ++i) z += weight(i);
        double cum = 0;
        r.id = order[count - 1];
        bool picked = false;
        for (size_t i = 0; i < count; ++i) {
            const double w = weight(i) / z;
            r.finalP[size_t(order[i])] = w;
            cum += w;
            if (!picked && cum > u) { r.id = order[i]; picked = true; }
        }
    }
    r.survivors[kFinal] = int32_t(count);
    r.rank = int32_t(std::find(r.byRaw.begin(), r.byRaw.end(), r.id) - r.byRaw.begin()) + 1;
    return r;
}

}  // namespace

TEST(SamplerReference, RandomLogitsAndSettingsMatchTheNaiveImplementation) {
    std::mt19937_64 gen(2718);
    std::normal_distribution<float> normal(0.0f, 2.5f);
    const std::vector<float> temperatures{0.0f, 0.3f, 0.8f, 1.0f, 1.7f};
    const std::vector<int32_t> topKs{0, 1, 5, 40, 2000};
    const std::vector<float> topPs{1.0f, 0.3f, 0.9f, 0.95f};
    const std::vector<float> minPs{0.0f, 0.05f, 0.3f};
    const std::vector<float> penalties{1.0f, 1.3f, 0.8f};
    const std::vector<size_t> sizes{1, 2, 7, 64, 300, 1500, 5000};
    auto pickFrom = [&](const auto& v) { return v[size_t(gen() % v.size())]; };

    int checked = 0;
    for (int trial = 0; trial < 200; ++trial) {
        SamplerParams p;
        p.temperature = pickFrom(temperatures);
        p.topK = pickFrom(topKs);
        p.topP = pickFrom(topPs);
        p.minP = pickFrom(minPs);
        p.repeatPenalty = pickFrom(penalties);
        p.repeatLastN = int32_t(gen() % 3) * 32 - 1;  // -1, 31, 63
        if (trial % 3 == 1) {  // the OpenAI-style adjustments on a third of the trials
            p.frequencyPenalty = float(int(gen() % 5) - 2) * 0.5f;
            p.presencePenalty = float(int(gen() % 5) - 2) * 0.25f;
            for (int b = 0; b < 4; ++b) p.logitBias.emplace_back(int32_t(gen() % 80), float(int(gen() % 9) - 4));
        }
        p.seed = gen();
        p.topN = 64;
        SamplerChain chain = makeChain(p);
        std::mt19937_64 mirror(p.seed);
        std::vector<int32_t> recent;
        for (int step = 0; step < 6; ++step) {  // one chain over several sizes: buffers are reused
            const size_t n = pickFrom(sizes);
            std::vector<float> logits(n);
            const bool ties = gen() % 2;
            for (float& l : logits) l = ties ? std::round(normal(gen)) : normal(gen);
            const double u = uniformFrom(mirror);
            const Reference ref = referenceSample(logits, p, recent, u);
            auto r = chain.sample(logits, recent);
            ASSERT_TRUE(r);
            SCOPED_TRACE(::testing::Message() << "trial " << trial << " step " << step << " n " << n);
            ASSERT_EQ(r->survivors, ref.survivors);
            ASSERT_EQ(r->id, ref.id);
            EXPECT_EQ(r->rank, ref.rank);
            EXPECT_NEAR(r->pFinal, ref.finalP[size_t(r->id)], 1e-6);
            ASSERT_EQ(r->top.size(), std::min<size_t>(n, 64));
            for (size_t i = 0; i < r->top.size(); ++i) {
                const CandidateRecord& c = r->top[i];
                ASSERT_EQ(c.id, ref.byRaw[i]) << "top " << i;
                EXPECT_NEAR(c.p[kFinal], ref.finalP[size_t(c.id)], 1e-6);
            }
            recent.push_back(ref.id % 50);  // keep hitting ids that exist in small vocabularies
            ++checked;
        }
    }
    EXPECT_EQ(checked, 1200);
}

// ---- cost ---------------------------------------------------------------------------------------

TEST(SamplerCost, NoAllocationPerStepAfterTheFirstCall) {
    std::mt19937_64 gen(1);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    std::vector<float> logits(32000);
    for (float& l : logits) l = normal(gen);
    std::vector<int32_t> recent(64);
    for (int32_t& t : recent) t = int32_t(gen() % 32000);

    for (int32_t topN : {0, 20}) {
        for (SamplerParams p : {SamplerParams{}, allOff()}) {  // defaults; and no truncation at all
            p.topN = topN;
            p.repeatPenalty = 1.1f;
            SamplerChain chain = makeChain(p);
            (void)chain.sample(logits, recent);  // sizes the buffers
            const long before = gAllocations.load();
            for (int i = 0; i < 50; ++i) {
                auto r = chain.sample(logits, recent);
                if (!r) FAIL();
            }
            // The returned record's top (one vector per step) is the only allocation.
            EXPECT_EQ(gAllocations.load() - before, topN == 0 ? 0 : 50) << "top-n " << topN;
        }
    }
}

// ---- branching: the record of a step with another token as its pick ------------------------------

TEST(SamplerAlternative, ProbabilityAndRankFromTheRecord) {
    // {.1, .2, .3, .4} drawn greedily with the top 3 kept (ids 3, 2, 1); id 0 only in the replay list.
    SamplerParams p = allOff();
    p.temperature = 0.0f;
    p.topN = 3;
    const SampleRecord drawn = sampleOnce(p, kTenths);
    ASSERT_EQ(drawn.id, 3);
    const std::vector<int32_t> replayIds{3, 2, 1, 0};
    const std::vector<float> replayLogits(kTenths.rbegin(), kTenths.rend());

    // id 1 (p = .2): two kept candidates have a higher logit.
    const SampleRecord one = withAlternativePick(drawn, replayIds, replayLogits, 1);
    EXPECT_EQ(one.id, 1);
    EXPECT_EQ(one.logit, kTenths[1]);
    EXPECT_NEAR(one.pRaw, 0.2, kTol);
    EXPECT_EQ(one.pFinal, 0.0f);  // not drawn
    EXPECT_EQ(one.rank, 3);
    // The distribution is the drawn step's.
    EXPECT_EQ(one.entropyBits, drawn.entropyBits);
    EXPECT_EQ(one.survivors, drawn.survivors);
    EXPECT_EQ(one.top.size(), drawn.top.size());

    // id 0 is not among the top 3: its logit comes from the replay list, its rank after all three.
    const SampleRecord zero = withAlternativePick(drawn, replayIds, replayLogits, 0);
    EXPECT_EQ(zero.logit, kTenths[0]);
    EXPECT_NEAR(zero.pRaw, 0.1, kTol);
    EXPECT_EQ(zero.rank, 4);

    // Without the replay list, id 0 has no logit in the record: -inf, probability 0.
    const SampleRecord unknown = withAlternativePick(drawn, {}, {}, 0);
    EXPECT_EQ(unknown.logit, -INFINITY);
    EXPECT_EQ(unknown.pRaw, 0.0f);
    EXPECT_EQ(unknown.rank, 4);

    // The drawn token itself gives back its own figures (but pFinal).
    const SampleRecord same = withAlternativePick(drawn, replayIds, replayLogits, 3);
    EXPECT_EQ(same.logit, drawn.logit);
    EXPECT_NEAR(same.pRaw, drawn.pRaw, kTol);
    EXPECT_EQ(same.rank, 1);
}

// ---- for speculative decoding: a given pick's record, the final distribution, one draw -----------

TEST(SamplerDescribe, AGivenPicksRecordIsTheOneSampleWouldGiveAndDrawsNothing) {
    std::mt19937_64 gen(11);
    std::normal_distribution<float> normal(0.0f, 2.0f);
    std::vector<float> logits(300);
    for (float& l : logits) l = normal(gen);
    const std::vector<int32_t> recent{3, 5, 5, 9};
    for (float temperature : {0.0f, 0.7f, 1.0f}) {
        SamplerParams p;
        p.temperature = temperature;
        p.repeatPenalty = 1.2f;
        p.topN = 20;
        for (uint64_t seed = 0; seed < 5; ++seed) {
            p.seed = seed;
            SamplerChain drawn = makeChain(p), described = makeChain(p);
            const auto r = drawn.sample(logits, recent);
            ASSERT_TRUE(r);
            const auto d = described.describe(logits, recent, r->id);
            ASSERT_TRUE(d);
            EXPECT_EQ(d->id, r->id);
            EXPECT_EQ(d->pFinal, r->pFinal);
            EXPECT_EQ(d->rank, r->rank);
            EXPECT_EQ(d->survivors, r->survivors);
            ASSERT_EQ(d->top.size(), r->top.size());
            for (size_t i = 0; i < d->top.size(); ++i) EXPECT_EQ(d->top[i].p, r->top[i].p);
            // describe drew nothing: its chain's next draw is a fresh chain's first.
            EXPECT_EQ(described.uniform(), makeChain(p).uniform());
        }
        // The final distribution: the survivors with their probabilities, summing to 1; greedy one-hot.
        SamplerChain chain = makeChain(p);
        const auto dist = chain.finalDistribution(logits, recent);
        ASSERT_TRUE(dist);
        double sum = 0;
        for (const auto& t : *dist) sum += t.p;
        EXPECT_NEAR(sum, 1.0, 1e-9);
        const auto r = makeChain(p).sample(logits, recent);
        EXPECT_EQ(int32_t(dist->size()), r->survivors[kFinal]);
        if (temperature == 0.0f) EXPECT_EQ(dist->front().id, r->id);
        for (size_t i = 1; i < dist->size(); ++i) EXPECT_GE((*dist)[i - 1].p, (*dist)[i].p);
        // A token no stage kept: described with final probability 0.
        const int32_t removed = [&] {
            for (int32_t id = 0; id < 300; ++id)
                if (std::none_of(dist->begin(), dist->end(), [&](const TokenProbability& t) { return t.id == id; })) return id;
            return -1;
        }();
        if (removed >= 0) EXPECT_EQ(makeChain(p).describe(logits, recent, removed)->pFinal, 0.0f);
    }
}

// The grammar stage: only the allowed tokens go on; its record gives the mass removed, the forced
// flag and the chosen token's probability before the mask (the fight meter).
TEST(SamplerStages, GrammarMaskKeepsTheAllowedTokens) {
    SamplerParams p = allOff();
    p.temperature = 0.0f;
    auto chain = SamplerChain::create(p);
    ASSERT_TRUE(chain);
    const std::vector<uint8_t> allowed{1, 1, 0, 0};  // the two least likely of .1 .2 .3 .4
    auto r = chain->sample(kTenths, {}, allowed);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->id, 1);
    EXPECT_TRUE(r->constrained);
    EXPECT_EQ(r->survivors, (std::array<int32_t, kSamplerStageCount>{4, 4, 2, 2, 2, 2, 1}));
    EXPECT_NEAR(r->grammarMassRemoved, 0.7, kTol);
    EXPECT_NEAR(r->pBeforeGrammar, 0.2, kTol);
    EXPECT_FALSE(r->forced());
    const CandidateRecord& best = candidate(*r, 1);
    EXPECT_NEAR(best.p[kPenalty], 0.2, kTol);
    EXPECT_NEAR(best.p[kGrammar], 2.0 / 3, kTol);
    EXPECT_NEAR(candidate(*r, 3).p[kPenalty], 0.4, kTol);  // removed: its probability before the mask
    EXPECT_EQ(candidate(*r, 3).p[kGrammar], 0.0f);
    // One token allowed: forced, whatever the model wanted.
    auto forced = chain->sample(kTenths, {}, std::vector<uint8_t>{1, 0, 0, 0});
    ASSERT_TRUE(forced);
    EXPECT_EQ(forced->id, 0);
    EXPECT_TRUE(forced->forced());
    EXPECT_NEAR(forced->pBeforeGrammar, 0.1, kTol);
    EXPECT_NEAR(forced->grammarMassRemoved, 0.9, kTol);
    // Nothing allowed: an error, and no draw.
    auto none = chain->sample(kTenths, {}, std::vector<uint8_t>{0, 0, 0, 0});
    ASSERT_FALSE(none);
    EXPECT_EQ(none.error().message, "the grammar allows none of the candidates");
    // Without a mask the stage keeps everything and says so.
    auto plain = chain->sample(kTenths, {});
    ASSERT_TRUE(plain);
    EXPECT_FALSE(plain->constrained);
    EXPECT_EQ(plain->survivors[kGrammar], 4);
}

// Sampled under a mask: the draw is over the allowed tokens renormalised (top-k etc. after it).
TEST(SamplerStages, GrammarMaskThenTopK) {
    SamplerParams p = allOff();
    p.temperature = 1.0f;
    p.topK = 1;
    auto chain = SamplerChain::create(p);
    ASSERT_TRUE(chain);
    auto r = chain->sample(kTenths, {}, std::vector<uint8_t>{1, 0, 1, 0});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->id, 2);  // top-1 of the allowed {.1, .3}
    EXPECT_NEAR(r->pBeforeGrammar, 0.3, kTol);
    EXPECT_NEAR(candidate(*r, 2).p[kGrammar], 0.75, kTol);
    EXPECT_EQ(r->survivors, (std::array<int32_t, kSamplerStageCount>{4, 4, 2, 1, 1, 1, 1}));
}

// finalTop: the distribution drawn from, most probable first, as finalDistribution lists it; a
// logit bias that lifts a low token reorders it against the raw top-N.
TEST(SamplerFinalTop, IsTheHeadOfTheDistributionDrawnFrom) {
    const std::vector<float> logits = logitsOf({0.4, 0.3, 0.2, 0.06, 0.04});
    SamplerParams p = allOff();
    p.topK = 4;
    p.temperature = 0.7f;
    p.logitBias = {{3, 2.0f}};  // token 3 rises above every other
    p.topN = 2;
    p.finalTopN = 3;
    const auto dist = makeChain(p).finalDistribution(logits, {});
    ASSERT_TRUE(dist);
    const auto r = makeChain(p).sample(logits, {});
    ASSERT_TRUE(r);
    ASSERT_EQ(r->finalTop.size(), 3u);
    EXPECT_EQ(r->finalTop[0].id, 3);
    EXPECT_EQ(r->top[0].id, 0);  // the raw top-N is unchanged
    for (size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(r->finalTop[i].id, (*dist)[i].id) << i;
        EXPECT_NEAR(r->finalTop[i].p, (*dist)[i].p, kTol) << i;
    }
    for (const auto& c : r->finalTop)
        if (c.id == r->id) EXPECT_EQ(c.p, r->pFinal);
    // Fewer survivors than asked (top-k 4 keeps four): only they.
    p.finalTopN = 10;
    EXPECT_EQ(makeChain(p).sample(logits, {})->finalTop.size(), 4u);
    // Greedy: the pick alone, at 1. Not asked: none.
    p.temperature = 0;
    const auto g = makeChain(p).sample(logits, {});
    ASSERT_EQ(g->finalTop.size(), 1u);
    EXPECT_EQ(g->finalTop[0].id, 3);
    EXPECT_EQ(g->finalTop[0].p, 1.0f);
    p.finalTopN = 0;
    EXPECT_TRUE(makeChain(p).sample(logits, {})->finalTop.empty());
    p.finalTopN = kMaxTopN + 1;
    EXPECT_FALSE(SamplerChain::create(p));
}
