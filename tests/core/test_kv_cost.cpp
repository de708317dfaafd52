// Changing the KV cache type of a loaded engine (Engine::setKvType) and measuring what a type
// costs on a sequence (measureKvCost, the app's "What q8_0 costs"): the figures equal the
// perplexity command's way — two engines, each with its own cache type, scoring the same tokens,
// compared position by position — and the allocation after a change is the block format's.
#include <gtest/gtest.h>

#include <vector>

#include "engine/kv_cost.h"
#include "engine/perplexity.h"
#include "engine_test_helpers.h"
#include "model_test_helpers.h"
#include "shared_data.h"

using namespace inferscope;
using namespace inferscope::testing_model;

namespace {

std::vector<int32_t> storyTokens(const Engine& engine, size_t n) {
    auto ids = engine.tokenizer().encode("Once upon a time, there was a little girl named Mia. She lived in a small house near a big green park.",
                                         true, false);
    ids.resize(std::min(ids.size(), n));
    return ids;
}

// What `inferscope-cli perplexity --kv test --compare-to-kv reference` computes per token:
// one engine per cache type, Engine::score on each, compareDistributions position by position.
std::vector<DistributionShift> twoEngineShifts(const std::string& path, const std::vector<int32_t>& tokens, int32_t firstToken,
                                               KvType reference, KvType test) {
    auto ref = loadTestEngine(path, {.ctx = 128, .kv = reference});
    auto tst = loadTestEngine(path, {.ctx = 128, .kv = test});
    std::vector<std::vector<float>> refLogits;
    EXPECT_TRUE(ref->score(tokens, [&](int32_t, std::span<const float> l) { refLogits.emplace_back(l.begin(), l.end()); }));
    std::vector<DistributionShift> shifts;
    EXPECT_TRUE(tst->score(tokens, [&](int32_t pos, std::span<const float> l) {
        if (pos + 1 >= firstToken && pos + 1 < int32_t(tokens.size())) shifts.push_back(compareDistributions(refLogits[size_t(pos)], l));
    }));
    return shifts;
}

void expectSameAsTwoEngines(const std::string& path, KvType reference, KvType test) {
    auto engine = loadTestEngine(path, {.ctx = 128});
    ASSERT_TRUE(engine);
    const auto tokens = storyTokens(*engine, 40);
    ASSERT_GE(tokens.size(), 20u);
    const int32_t first = 12;
    auto cost = measureKvCost(*engine, tokens, first, reference, test);
    ASSERT_TRUE(cost) << cost.error().message;
    const auto expected = twoEngineShifts(path, tokens, first, reference, test);
    ASSERT_EQ(cost->perToken.size(), tokens.size() - size_t(first));
    ASSERT_EQ(expected.size(), cost->perToken.size());
    DivergenceMeter meter;
    for (size_t i = 0; i < expected.size(); ++i) {
        EXPECT_EQ(cost->perToken[i].kl, expected[i].kl) << "token " << i;
        EXPECT_EQ(cost->perToken[i].sameTop1, expected[i].sameTop1) << "token " << i;
        meter.add(expected[i]);
    }
    EXPECT_EQ(cost->meanKl, meter.meanKl());
    EXPECT_EQ(cost->p99Kl, meter.klQuantile(0.99));
    EXPECT_EQ(cost->maxKl, meter.maxKl());
    EXPECT_EQ(cost->sameTop1, meter.sameTop1());
    EXPECT_EQ(cost->top1Agreement, meter.top1Agreement());
    // Two different caches do move the distributions, a little.
    EXPECT_GT(cost->maxKl, 0.0);
    // The engine's own cache was not touched: nothing cached, f32 still.
    EXPECT_EQ(engine->kvStats().nUsed, 0);
    EXPECT_EQ(engine->kvType(), KvType::F32);
}

}  // namespace

// stories260K's head dim is 8: no block type; FP16 against FP32 is what it can measure.
TEST(KvCost, EqualsTwoEnginesScoringOnStories260K) { expectSameAsTwoEngines(kStories, KvType::F32, KvType::F16); }

TEST(KvCost, Q8_0EqualsTwoEnginesScoringOnGemma3Tiny) {
    INFERSCOPE_SHARED_FILE_OR_SKIP(path, "models/arch/gemma3-tiny.gguf");
    expectSameAsTwoEngines(path, KvType::F16, KvType::Q8_0);
}

TEST(KvCost, CancelStopsIt) {
    auto engine = loadTestEngine(kStories, {.ctx = 128});
    const auto tokens = storyTokens(*engine, 30);
    int asked = 0;
    auto cost = measureKvCost(*engine, tokens, 5, KvType::F32, KvType::F16, [&] { return ++asked > 3; });
    ASSERT_FALSE(cost);
    EXPECT_EQ(cost.error().kind, ErrorKind::Cancelled);
    EXPECT_EQ(asked, 4);  // asked before each position: three ran
}

TEST(KvCost, RefusesAFirstTokenOutsideTheSequence) {
    auto engine = loadTestEngine(kStories, {.ctx = 128});
    const auto tokens = storyTokens(*engine, 10);
    auto cost = measureKvCost(*engine, tokens, 0, KvType::F32, KvType::F16);
    ASSERT_FALSE(cost);
    EXPECT_EQ(cost.error().message, "the first compared token must be in 1 to 9, got 0");
}

// A block type the head dim refuses leaves the cache as it was, cached tokens included.
TEST(SetKvType, RefusesQ8_0ForStories260KAndKeepsTheCache) {
    auto engine = loadTestEngine(kStories, {.ctx = 64});
    ASSERT_TRUE(engine->generate(greedyRequest(storyTokens(*engine, 8), 4)));
    const int32_t used = engine->kvStats().nUsed;
    ASSERT_GT(used, 0);
    auto ok = engine->setKvType(KvType::Q8_0);
    ASSERT_FALSE(ok);
    EXPECT_NE(ok.error().message.find("this model's head dimension is 8"), std::string::npos) << ok.error().message;
    EXPECT_EQ(engine->kvType(), KvType::F32);
    EXPECT_EQ(engine->kvStats().nUsed, used);
    EXPECT_EQ(engine->cachedTokens().size(), size_t(used));
}

// F16 on stories260K: 2 (K, V) × 5 layers × 4 KV heads × 8 dims × 2 bytes = 640 bytes per token;
// the cache starts empty and the next generation prefills its whole prompt.
TEST(SetKvType, F16OnStories260KRecreatesTheCache) {
    auto engine = loadTestEngine(kStories, {.ctx = 64});
    const auto prompt = storyTokens(*engine, 8);
    auto before = engine->generate(greedyRequest(prompt, 6));
    ASSERT_TRUE(before);
    ASSERT_TRUE(engine->setKvType(KvType::F16));
    EXPECT_EQ(engine->kvType(), KvType::F16);
    const KvCacheStats s = engine->kvStats();
    EXPECT_EQ(s.nUsed, 0);
    EXPECT_EQ(s.bytesPerToken, 640u);
    EXPECT_EQ(s.bytesReserved, 640u * 64);
    EXPECT_TRUE(engine->cachedTokens().empty());
    auto after = engine->generate(greedyRequest(prompt, 6));
    ASSERT_TRUE(after);
    EXPECT_EQ(after->prefill.nReused, 0);  // nothing reused
    EXPECT_EQ(after->prefill.nComputed, int32_t(prompt.size()));
    EXPECT_EQ(engine->kvStats().bytesPerToken, 640u);
}

// Q8_0 on gemma3-tiny (8 layers, 2 KV heads, head dim 64): a row of 64 values is 2 blocks of
// (2-byte scale + 32 one-byte values) = 68 bytes; per token 2 × 8 × 2 × 68 = 2,176 bytes.
TEST(SetKvType, Q8_0OnGemma3TinyAllocatesTheBlocks) {
    INFERSCOPE_SHARED_FILE_OR_SKIP(path, "models/arch/gemma3-tiny.gguf");
    auto engine = loadTestEngine(path, {.ctx = 256});
    ASSERT_TRUE(engine->setKvType(KvType::Q8_0));
    const KvCacheStats s = engine->kvStats();
    EXPECT_EQ(s.layout.type, KvType::Q8_0);
    EXPECT_EQ(s.bytesPerToken, 2u * 8 * 2 * (2 + 32) * 2);
    EXPECT_EQ(s.bytesReserved, 2176u * 256);
    EXPECT_EQ(s.bytesReservedPerLayer, 2176u * 256 / 8);
    // The layers the cache marks as sliding are gemma3's pattern: il % 6 < 5, window 32.
    EXPECT_EQ(s.layout.slidingWindow, 32);
    EXPECT_EQ(s.layout.slidingLayers, (std::vector<uint8_t>{1, 1, 1, 1, 1, 0, 1, 1}));
    ASSERT_TRUE(engine->setKvType(KvType::Q4_0));
    EXPECT_EQ(engine->kvStats().bytesPerToken, 2u * 8 * 2 * (2 + 16) * 2);  // 1,152
}

// The app's setting holds for every model: with kvTypeFallback a model that cannot use it loads
// with f16 (any head dim takes it) and says why.
TEST(SetKvType, FallbackLoadsStories260KWithF16AndANotice) {
    EngineOptions opt;
    opt.modelPath = kStories;
    opt.device = DeviceKind::Cpu;
    opt.threads = 2;
    opt.contextLength = 64;
    opt.kvType = KvType::Q8_0;
    opt.kvTypeFallback = true;
    auto engine = Engine::load(opt);
    ASSERT_TRUE(engine) << engine.error().message;
    EXPECT_EQ((*engine)->kvType(), KvType::F16);
    ASSERT_FALSE((*engine)->notices().empty());
    EXPECT_EQ((*engine)->notices().back().rfind("KV cache f16 instead of q8_0: a q8_0 KV cache needs a head dimension", 0), 0u)
        << (*engine)->notices().back();
}
