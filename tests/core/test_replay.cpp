// Replay from stored logits: the same settings and seed reproduce the engine's picks; other
// settings change what they should; exactness is reported honestly when logits were not stored.
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "model_test_helpers.h"
#include "sampler/replay.h"

using namespace inferscope;
using namespace inferscope::testing_model;

namespace {

struct Generated {
    std::vector<StepRecord> steps;
    std::vector<int32_t> prompt;
};

struct Collect : GenerationObserver {
    std::vector<StepRecord> steps;
    void onStep(const StepRecord& r) override { steps.push_back(r); }
};

Generated generate(const std::string& model, const SamplerParams& params, int32_t width, int n = 60) {
    EngineOptions opt;
    opt.modelPath = model;
    opt.device = DeviceKind::Cpu;
    opt.threads = 2;
    auto engine = Engine::load(opt);
    EXPECT_TRUE(engine) << engine.error().message;
    GenerateRequest req;
    req.prompt = (*engine)->tokenizer().encode("Once upon a time", true);
    req.sampler = params;
    req.maxTokens = n;
    req.replayWidth = width;
    Collect c;
    auto summary = (*engine)->generate(req, &c);
    EXPECT_TRUE(summary) << summary.error().message;
    return {std::move(c.steps), req.prompt};
}

SamplerParams sampled(uint64_t seed) {
    SamplerParams p;
    p.temperature = 1.0f;
    p.topK = 40;
    p.topP = 0.95f;
    p.minP = 0.05f;
    p.repeatPenalty = 1.1f;
    p.seed = seed;
    return p;
}

}  // namespace

TEST(Replay, SameSettingsAndSeedReproduceEveryPick) {
    // stories260K's vocabulary is 512: storing 512 logits keeps them all, so every step is exact.
    const SamplerParams params = sampled(1234);
    Generated run = generate(kStories, params, 512);
    ASSERT_GE(run.steps.size(), 20u);
    auto replay = replaySteps(run.steps, run.prompt, params);
    ASSERT_TRUE(replay) << replay.error().message;
    EXPECT_EQ(replay->changed, 0);
    EXPECT_EQ(replay->inexact, 0);
    EXPECT_NEAR(replay->minStoredMass, 1.0f, 1e-5f);
    for (size_t k = 0; k < run.steps.size(); ++k) {
        EXPECT_EQ(replay->steps[k].id, run.steps[k].sample.id) << k;
        EXPECT_NEAR(replay->steps[k].pFinal, run.steps[k].sample.pFinal, 1e-5f) << k;
    }
}

TEST(Replay, GreedyReplayPicksEachStepsArgmaxAndCountsChanges) {
    const SamplerParams params = sampled(99);
    Generated run = generate(kStories, params, 512);
    SamplerParams greedy = params;
    greedy.temperature = 0.0f;
    greedy.repeatPenalty = 1.0f;
    auto replay = replaySteps(run.steps, run.prompt, greedy);
    ASSERT_TRUE(replay);
    int changed = 0;
    for (size_t k = 0; k < run.steps.size(); ++k) {
        // Greedy with no penalty takes the highest raw logit: the record's rank-1 candidate.
        EXPECT_EQ(replay->steps[k].id, run.steps[k].sample.top[0].id) << k;
        EXPECT_EQ(replay->steps[k].changed, run.steps[k].sample.rank != 1) << k;
        changed += run.steps[k].sample.rank != 1;
    }
    EXPECT_EQ(replay->changed, changed);
    EXPECT_GT(changed, 0) << "at temperature 1, some of 60 picks were not the most probable";
}

TEST(Replay, OneStepGivesTheFunnelOfTheReplayedSettings) {
    const SamplerParams params = sampled(7);
    Generated run = generate(kStories, params, 512, 10);
    for (size_t k = 0; k < run.steps.size(); ++k) {
        auto one = replayOneStep(run.steps, k, run.prompt, params);
        ASSERT_TRUE(one);
        EXPECT_EQ(one->id, run.steps[k].sample.id) << k;
        EXPECT_EQ(one->survivors, run.steps[k].sample.survivors) << k;
    }
    SamplerParams topK3 = params;
    topK3.topK = 3;
    auto narrowed = replayOneStep(run.steps, 0, run.prompt, topK3);
    ASSERT_TRUE(narrowed);
    EXPECT_EQ(narrowed->survivors[size_t(SamplerStage::TopK)], 3);
}

TEST(Replay, ExactnessWithAPartialStore) {
    // The random 32000-token model keeps only 64 of its logits per step: most of the probability
    // lies outside them (its distribution is nearly flat), so only settings decided within them are exact.
    SamplerParams params = sampled(5);
    params.topP = 1.0f;
    params.minP = 0.0f;
    Generated run = generate(kTinyRandom, params, 64, 6);
    auto same = replaySteps(run.steps, run.prompt, params);  // top-k 40 <= 64 stored: exact
    ASSERT_TRUE(same);
    EXPECT_EQ(same->inexact, 0);
    EXPECT_EQ(same->changed, 0);
    EXPECT_LT(same->minStoredMass, 0.01f);  // 64 of 32000 nearly uniform tokens hold ~0.2%
    SamplerParams wide = params;
    wide.topK = 0;  // the whole vocabulary competes: not determined by 64 logits
    auto inexact = replaySteps(run.steps, run.prompt, wide);
    ASSERT_TRUE(inexact);
    EXPECT_EQ(inexact->inexact, int32_t(run.steps.size()));
    SamplerParams greedy = wide;
    greedy.temperature = 0.0f;
    EXPECT_EQ(replaySteps(run.steps, run.prompt, greedy)->inexact, 0);
}

TEST(Replay, MissingLogitsAreAnError) {
    Generated run = generate(kStories, sampled(1), 0, 3);
    auto r = replaySteps(run.steps, run.prompt, sampled(1));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message, "step 0 has no stored logits to replay");
}
