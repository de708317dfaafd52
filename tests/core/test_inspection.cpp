// Looking inside a position (engine/inspection.h): the logit lens and attention weights captured
// during generation (GenerateRequest::inspect) and re-run over the cache (Engine::inspectPosition).
// - the last lens row is the distribution the step sampled, bit for bit: every logit of the
//   vocabulary (stories260K) or its 4096 highest (Gemma 2, Qwen 2), and the Probabilities panel's
//   raw probabilities and entropy;
// - inspecting changes no generated token, no cached position and no counter;
// - a re-run equals the capture where the position was a decode pass;
// - attention rows sum to 1, are 0 outside a sliding window, heads grouped by their KV head.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine_test_helpers.h"
#include "model_test_helpers.h"
#include "shared_data.h"

using namespace inferscope;
using namespace inferscope::testing_model;

namespace {

// Records every step (with its inspection, if any).
struct Steps : GenerationObserver {
    std::vector<StepRecord> steps;
    void onStep(const StepRecord& r) override { steps.push_back(r); }
};

// The lens's last row against what the step's sampler saw: its highest logits (replay record,
// descending with the same tie order) and, for the first candidates, the raw probabilities.
void expectLastRowIsTheStep(const PositionInspection& in, const StepRecord& rec, size_t nLogits) {
    ASSERT_FALSE(in.lens.layers.empty());
    const LensLayer& last = in.lens.layers.back();
    ASSERT_EQ(last.top.size(), nLogits);
    ASSERT_EQ(rec.replayIds.size(), nLogits);
    for (size_t i = 0; i < nLogits; ++i) {
        ASSERT_EQ(last.top[i].id, rec.replayIds[i]) << "step " << rec.step << " rank " << i;
        ASSERT_EQ(last.top[i].logit, rec.replayLogits[i]) << "step " << rec.step << " rank " << i;  // bit for bit
    }
    for (size_t i = 0; i < rec.sample.top.size(); ++i)
        EXPECT_EQ(last.top[i].p, rec.sample.top[i].p[size_t(SamplerStage::Raw)]) << "step " << rec.step << " rank " << i;
    EXPECT_EQ(last.entropyBits, rec.sample.entropyBits) << "step " << rec.step;
}

void expectSameLens(const LogitLens& a, const LogitLens& b, const std::string& what) {
    ASSERT_EQ(a.layers.size(), b.layers.size()) << what;
    for (size_t l = 0; l < a.layers.size(); ++l) {
        EXPECT_EQ(a.layers[l].residualNorm, b.layers[l].residualNorm) << what << " layer " << l;
        EXPECT_EQ(a.layers[l].entropyBits, b.layers[l].entropyBits) << what << " layer " << l;
        ASSERT_EQ(a.layers[l].top.size(), b.layers[l].top.size()) << what << " layer " << l;
        for (size_t i = 0; i < a.layers[l].top.size(); ++i) {
            EXPECT_EQ(a.layers[l].top[i].id, b.layers[l].top[i].id) << what << " layer " << l << " rank " << i;
            EXPECT_EQ(a.layers[l].top[i].logit, b.layers[l].top[i].logit) << what << " layer " << l << " rank " << i;
            EXPECT_EQ(a.layers[l].top[i].p, b.layers[l].top[i].p) << what << " layer " << l << " rank " << i;
        }
    }
    EXPECT_EQ(a.firstTop1Layer, b.firstTop1Layer) << what;
    EXPECT_EQ(a.settledLayer, b.settledLayer) << what;
}

// Rows sum to 1, are 0 exactly outside the window (and positive inside: no row underflows here).
void expectAttentionRows(const AttentionMap& a, const LlamaHParams& hp, int32_t position) {
    ASSERT_EQ(a.nLayer, hp.nLayer);
    ASSERT_EQ(a.nHead, hp.nHead);
    ASSERT_EQ(a.nHeadKv, hp.nHeadKv);
    ASSERT_EQ(a.nKeys, position + 1);
    ASSERT_EQ(a.weights.size(), size_t(hp.nLayer) * size_t(hp.nHead) * size_t(position + 1));
    for (int32_t h = 0; h < hp.nHead; ++h) EXPECT_EQ(a.kvHeadOf(h), h / (hp.nHead / hp.nHeadKv));
    for (int32_t l = 0; l < a.nLayer; ++l) {
        EXPECT_EQ(a.window[size_t(l)], hp.isSlidingLayer(l) ? hp.slidingWindow : 0) << "layer " << l;
        for (int32_t h = 0; h < a.nHead; ++h) {
            const auto row = a.row(l, h);
            double sum = 0;
            for (int32_t j = 0; j <= position; ++j) {
                sum += row[size_t(j)];
                const bool outside = a.window[size_t(l)] > 0 && position - j >= a.window[size_t(l)];
                if (outside) ASSERT_EQ(row[size_t(j)], 0.0f) << "layer " << l << " head " << h << " key " << j;
                else ASSERT_GT(row[size_t(j)], 0.0f) << "layer " << l << " head " << h << " key " << j;
            }
            EXPECT_NEAR(sum, 1.0, 1e-5) << "layer " << l << " head " << h;
        }
    }
}

GenerateRequest inspectingRequest(std::vector<int32_t> prompt, int32_t maxTokens, int32_t width, int32_t attentionStep) {
    GenerateRequest req = greedyRequest(std::move(prompt), maxTokens);
    req.replayWidth = width;
    req.inspect.lens = true;
    req.inspect.lensTopK = width;
    req.inspect.attentionStep = attentionStep;
    return req;
}

std::vector<int32_t> storyPrompt(const Engine& e) { return e.tokenizer().encode("Once upon a time, there was a little", true); }

}  // namespace

TEST(Inspection, CapturedLastLensRowIsTheSampledDistribution) {
    auto engine = loadTestEngine(kStories);
    ASSERT_TRUE(engine);
    const auto& hp = engine->hparams();
    const auto prompt = storyPrompt(*engine);
    ASSERT_GT(prompt.size(), 4u);  // the prefill's batch path, not the decode GEMV
    Steps steps;
    auto s = engine->generate(inspectingRequest(prompt, 24, hp.nVocab, -1), &steps);
    ASSERT_TRUE(s) << s.error().message;
    ASSERT_EQ(steps.steps.size(), 24u);
    for (const StepRecord& rec : steps.steps) {
        ASSERT_TRUE(rec.inspection) << "step " << rec.step;
        const PositionInspection& in = *rec.inspection;
        EXPECT_EQ(in.position, rec.position - 1);
        const int32_t input = rec.step == 0 ? prompt.back() : steps.steps[size_t(rec.step) - 1].sample.id;
        EXPECT_EQ(in.token, input);
        EXPECT_FALSE(in.rerun);
        ASSERT_EQ(in.lens.layers.size(), size_t(hp.nLayer));
        expectLastRowIsTheStep(in, rec, size_t(hp.nVocab));  // every logit of the vocabulary
        EXPECT_EQ(in.lens.layers.back().top[0].id, rec.sample.id);  // greedy
        EXPECT_GE(in.lens.firstTop1Layer, 0);
        EXPECT_LE(in.lens.firstTop1Layer, in.lens.settledLayer);
        EXPECT_LT(in.lens.settledLayer, hp.nLayer);
        for (const LensLayer& layer : in.lens.layers) EXPECT_TRUE(std::isfinite(layer.residualNorm) && layer.residualNorm > 0);
        EXPECT_TRUE(in.attention.weights.empty());
    }
}

// The app's open Layers and Attention panels ask for the first token only (lensStep and
// attentionStep 0): its pass is the prefill's last batch, which a re-run over the cache cannot
// reproduce bit for bit; the later steps are left to re-runs and run with no probe.
TEST(Inspection, FirstStepOnlyIsCapturedInsideThePrefill) {
    auto engine = loadTestEngine(kStories);
    ASSERT_TRUE(engine);
    const auto& hp = engine->hparams();
    const auto prompt = storyPrompt(*engine);
    GenerateRequest req = greedyRequest(prompt, 6);
    req.replayWidth = hp.nVocab;
    req.inspect.lensTopK = hp.nVocab;
    req.inspect.lensStep = 0;
    req.inspect.attentionStep = 0;
    Steps steps;
    auto s = engine->generate(req, &steps);
    ASSERT_TRUE(s) << s.error().message;
    ASSERT_EQ(steps.steps.size(), 6u);
    const StepRecord& first = steps.steps[0];
    ASSERT_TRUE(first.inspection);
    EXPECT_EQ(first.inspection->position, int32_t(prompt.size()) - 1);
    EXPECT_EQ(first.inspection->token, prompt.back());
    ASSERT_EQ(first.inspection->lens.layers.size(), size_t(hp.nLayer));
    expectLastRowIsTheStep(*first.inspection, first, size_t(hp.nVocab));
    EXPECT_EQ(first.inspection->attention.nKeys, int32_t(prompt.size()));
    for (size_t k = 1; k < steps.steps.size(); ++k) EXPECT_FALSE(steps.steps[k].inspection) << "step " << k;

    // The same tokens as without (the capture reads, never writes).
    engine->reset();
    auto plain = engine->generate(greedyRequest(prompt, 6));
    ASSERT_TRUE(plain);
    EXPECT_EQ(plain->tokens, s->tokens);
}

TEST(Inspection, ChangesNoGeneratedTokenAndNoCachedPosition) {
    auto engine = loadTestEngine(kStories);
    ASSERT_TRUE(engine);
    GenerateRequest req = greedyRequest(storyPrompt(*engine), 40);
    req.sampler.temperature = 0.8f;  // a seeded draw: the sampler's state must not move either
    req.sampler.seed = 1234;
    auto plain = engine->generate(req);
    ASSERT_TRUE(plain);
    GenerateRequest inspecting = req;
    inspecting.inspect.lens = true;
    inspecting.inspect.attentionStep = 7;
    engine->reset();
    auto inspected = engine->generate(inspecting);
    ASSERT_TRUE(inspected);
    EXPECT_EQ(plain->tokens, inspected->tokens);

    // Generate 12, inspect positions, continue: the same as without the inspections.
    auto twoParts = [&](bool inspect) {
        engine->reset();
        GenerateRequest first = req;
        first.maxTokens = 12;
        auto a = engine->generate(first);
        EXPECT_TRUE(a);
        if (inspect) {
            const KvCacheStats before = engine->kvStats();
            const std::vector<int32_t> cached(engine->cachedTokens().begin(), engine->cachedTokens().end());
            for (int32_t p : {0, 5, int32_t(cached.size()) / 2, int32_t(cached.size()) - 1}) {
                auto in = engine->inspectPosition(p);
                EXPECT_TRUE(in) << in.error().message;
            }
            const KvCacheStats after = engine->kvStats();
            EXPECT_EQ(after.nUsed, before.nUsed);
            EXPECT_EQ(after.kvComputed, before.kvComputed);
            EXPECT_EQ(after.attentionScores, before.attentionScores);
            EXPECT_EQ(after.originRuns, before.originRuns);
            EXPECT_TRUE(std::equal(cached.begin(), cached.end(), engine->cachedTokens().begin(), engine->cachedTokens().end()));
        }
        GenerateRequest second = req;
        second.prompt.insert(second.prompt.end(), a->tokens.begin(), a->tokens.end());
        second.maxTokens = 20;
        Steps steps;
        auto b = engine->generate(second, &steps);
        EXPECT_TRUE(b);
        EXPECT_EQ(b->prefill.nReused, int32_t(second.prompt.size()) - 1);  // the cache was kept
        std::vector<float> pRaw;
        for (const auto& r : steps.steps) pRaw.push_back(r.sample.pRaw);
        return std::pair(b->tokens, pRaw);
    };
    EXPECT_EQ(twoParts(false), twoParts(true));
}

TEST(Inspection, RerunEqualsCaptureOnDecodedPositions) {
    auto engine = loadTestEngine(kStories);
    ASSERT_TRUE(engine);
    constexpr int32_t kAttentionStep = 10;
    Steps steps;
    ASSERT_TRUE(engine->generate(inspectingRequest(storyPrompt(*engine), 16, 5, kAttentionStep), &steps));
    for (const StepRecord& rec : steps.steps) {
        auto rerun = engine->inspectPosition(rec.position - 1, {true, rec.step == kAttentionStep, 5});
        ASSERT_TRUE(rerun) << rerun.error().message;
        EXPECT_TRUE(rerun->rerun);
        EXPECT_EQ(rerun->token, rec.inspection->token);
        if (rec.step == 0) {
            // The prompt's last token ran in the prefill's batch, whose products round otherwise:
            // the same ranking, logits within 1e-4.
            for (size_t i = 0; i < 5; ++i) {
                EXPECT_EQ(rerun->lens.layers.back().top[i].id, rec.replayIds[i]);
                EXPECT_NEAR(rerun->lens.layers.back().top[i].logit, rec.replayLogits[i], 1e-4);
            }
            continue;
        }
        expectSameLens(rerun->lens, rec.inspection->lens, "step " + std::to_string(rec.step));
        expectLastRowIsTheStep(*rerun, rec, 5);
        if (rec.step == kAttentionStep) {
            EXPECT_EQ(rerun->attention.weights, rec.inspection->attention.weights);
            expectAttentionRows(rerun->attention, engine->hparams(), rec.position - 1);
        }
    }
    // A prompt of one token runs alone (the decode path): its step 0 re-runs exactly.
    engine->reset();
    Steps single;
    ASSERT_TRUE(engine->generate(inspectingRequest({1}, 2, 5, -1), &single));
    auto rerun = engine->inspectPosition(0, {true, false, 5});
    ASSERT_TRUE(rerun);
    expectSameLens(rerun->lens, single.steps[0].inspection->lens, "one-token prompt");
}

TEST(Inspection, AttentionMapOfAStep) {
    auto engine = loadTestEngine(kStories);
    ASSERT_TRUE(engine);
    GenerateRequest req = greedyRequest(storyPrompt(*engine), 12);
    req.inspect.attentionStep = 9;
    Steps steps;
    ASSERT_TRUE(engine->generate(req, &steps));
    for (const StepRecord& rec : steps.steps) {
        EXPECT_EQ(bool(rec.inspection), rec.step == 9) << "step " << rec.step;
        if (!rec.inspection) continue;
        EXPECT_TRUE(rec.inspection->lens.layers.empty());  // only the attention was asked
        expectAttentionRows(rec.inspection->attention, engine->hparams(), rec.position - 1);
        EXPECT_EQ(rec.inspection->attention.kvHeadOf(7), 3);  // 8 query heads over 4 KV heads
    }
}

TEST(Inspection, RefusesWhatIsNotThere) {
    auto engine = loadTestEngine(kStories);
    ASSERT_TRUE(engine);
    auto empty = engine->inspectPosition(0);
    ASSERT_FALSE(empty);
    EXPECT_EQ(empty.error().kind, ErrorKind::InvalidArgument);
    EXPECT_EQ(empty.error().message, "position 0 is not cached: the cache is empty");
    ASSERT_TRUE(engine->generate(greedyRequest({1, 20, 30}, 3)));  // 3 prompt + 2 decoded positions cached
    auto past = engine->inspectPosition(5);
    ASSERT_FALSE(past);
    EXPECT_EQ(past.error().message, "position 5 is not cached (positions 0 to 4 are)");
    EXPECT_FALSE(engine->inspectPosition(-1));
    auto badTopK = engine->inspectPosition(2, {true, false, 0});
    ASSERT_FALSE(badTopK);
    EXPECT_EQ(badTopK.error().message, "lens top-k must be in [1, 4096], got 0");
    GenerateRequest req = greedyRequest({1}, 2);
    req.inspect.lens = true;
    req.inspect.lensTopK = 4097;
    auto refused = engine->generate(req);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().message, "lens top-k must be in [1, 4096], got 4097");
}

// Gemma 2 (sliding-window layers, soft-capped scores and logits) and Qwen 2 from ../shared.
class InspectionArch : public ::testing::TestWithParam<const char*> {};

TEST_P(InspectionArch, LensAttentionAndRerunOnTheRealModel) {
    INFERSCOPE_SHARED_FILE_OR_SKIP(path, std::string("models/arch/") + GetParam() + ".gguf");
    auto engine = loadTestEngine(path, {.ctx = 128});
    ASSERT_TRUE(engine);
    const auto& hp = engine->hparams();
    const auto prompt = engine->tokenizer().encode("The quick brown fox jumps over the lazy dog", true);
    constexpr int32_t kSteps = 40;
    const int32_t attentionStep = kSteps - 2;  // past Gemma 2's window of 32
    GenerateRequest plain = greedyRequest(prompt, kSteps);
    auto expected = engine->generate(plain);
    ASSERT_TRUE(expected);

    engine->reset();
    Steps steps;
    auto s = engine->generate(inspectingRequest(prompt, kSteps, 4096, attentionStep), &steps);
    ASSERT_TRUE(s) << s.error().message;
    EXPECT_EQ(s->tokens, expected->tokens);
    ASSERT_EQ(steps.steps.size(), size_t(kSteps));
    for (const StepRecord& rec : steps.steps) {
        ASSERT_TRUE(rec.inspection);
        expectLastRowIsTheStep(*rec.inspection, rec, 4096);
    }
    const StepRecord& at = steps.steps[size_t(attentionStep)];
    ASSERT_GT(at.position - 1, hp.slidingWindow);
    expectAttentionRows(at.inspection->attention, hp, at.position - 1);
    for (int32_t step : {1, kSteps / 2, attentionStep}) {
        const StepRecord& rec = steps.steps[size_t(step)];
        auto rerun = engine->inspectPosition(rec.position - 1, {true, step == attentionStep, 4096});
        ASSERT_TRUE(rerun) << rerun.error().message;
        expectSameLens(rerun->lens, rec.inspection->lens, "step " + std::to_string(step));
        if (step == attentionStep) {
            EXPECT_EQ(rerun->attention.weights, rec.inspection->attention.weights);
        }
    }
}

INSTANTIATE_TEST_SUITE_P(SharedModels, InspectionArch, ::testing::Values("gemma2-tiny", "qwen2-tiny"),
                         [](const auto& info) {
                             std::string name = info.param;
                             std::replace(name.begin(), name.end(), '-', '_');
                             return name;
                         });
