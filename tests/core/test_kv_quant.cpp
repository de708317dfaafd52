// The Q8_0 / Q4_0 KV cache: rows stored as ggml's blocks (byte-identical to the reference
// quantizer), the allocation and stats equal to the KV calculator's figures for the type, a head
// dimension that is not whole blocks refused by name, and on a real model the greedy ids of a
// q8_0 cache against an f16 one.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "engine_test_helpers.h"
#include "gguf/ggml_types.h"
#include "gguf/quant_encode.h"
#include "kv_cache/kv_cache.h"
#include "kv_cache/kv_calculator.h"
#include "model_test_helpers.h"
#include "shared_data.h"

using namespace inferscope;
using namespace inferscope::testing_model;

namespace {

constexpr KvCacheLayout kLayout{.nLayer = 3, .nHeadKv = 2, .headDim = 64, .nCtx = 10};

std::vector<float> randomRows(size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> x(n);
    for (auto& e : x) e = dist(rng);
    return x;
}

}  // namespace

class KvBlockCache : public ::testing::TestWithParam<KvType> {};

TEST_P(KvBlockCache, StoresEachRowAsTheReferenceQuantizerDoes) {
    KvCacheLayout layout = kLayout;
    layout.type = GetParam();
    auto cache = KvCache::create(layout);
    ASSERT_TRUE(cache) << cache.error().message;
    // 3 positions at 4 of layer 1: [m][nHeadKv][headDim]
    const int m = 3, p0 = 4, layer = 1, hd = layout.headDim;
    const auto k = randomRows(size_t(m) * layout.nHeadKv * hd, 1), v = randomRows(k.size(), 2);
    cache->store(layer, p0, m, k.data(), v.data());
    const GgmlType g = layout.type == KvType::Q8_0 ? GgmlType::Q8_0 : GgmlType::Q4_0;
    const size_t rowBytes = cache->rowBytes();
    ASSERT_EQ(rowBytes, layout.type == KvType::Q8_0 ? 2u * 34u : 2u * 18u);
    for (int r = 0; r < m; ++r)
        for (int h = 0; h < layout.nHeadKv; ++h) {
            const size_t src = (size_t(r) * layout.nHeadKv + h) * hd, dst = (size_t(h) * layout.nCtx + size_t(p0 + r)) * rowBytes;
            std::vector<uint8_t> kExpected(rowBytes), vExpected(rowBytes);
            quantizeBlocks(g, k.data() + src, kExpected.data(), size_t(hd));
            quantizeBlocks(g, v.data() + src, vExpected.data(), size_t(hd));
            const auto* kl = static_cast<const uint8_t*>(cache->layerKeysData(layer)) + dst;
            const auto* vl = static_cast<const uint8_t*>(cache->layerValuesData(layer)) + dst;
            EXPECT_EQ(std::vector<uint8_t>(kl, kl + rowBytes), kExpected) << "K row " << r << " head " << h;
            EXPECT_EQ(std::vector<uint8_t>(vl, vl + rowBytes), vExpected) << "V row " << r << " head " << h;
        }
}

TEST_P(KvBlockCache, RefusesAHeadDimensionThatIsNotWholeBlocks) {
    KvCacheLayout layout = kLayout;
    layout.type = GetParam();
    layout.headDim = 48;
    auto cache = KvCache::create(layout);
    ASSERT_FALSE(cache);
    EXPECT_EQ(cache.error().kind, ErrorKind::InvalidArgument);
    EXPECT_NE(cache.error().message.find("head dimension is 48"), std::string::npos) << cache.error().message;
    EXPECT_NE(cache.error().message.find(kvTypeName(GetParam())), std::string::npos) << cache.error().message;
}

INSTANTIATE_TEST_SUITE_P(Types, KvBlockCache, ::testing::Values(KvType::Q8_0, KvType::Q4_0),
                         [](const auto& info) { return std::string(kvTypeName(info.param)); });

// What the cache allocates and reports is what the calculator computes for the type's name.
TEST(KvCacheStats, EqualTheCalculatorForEveryType) {
    for (KvType type : {KvType::F32, KvType::F16, KvType::Q8_0, KvType::Q4_0}) {
        SCOPED_TRACE(kvTypeName(type));
        KvCacheLayout layout = kLayout;
        layout.type = type;
        auto cache = KvCache::create(layout);
        ASSERT_TRUE(cache) << cache.error().message;
        const std::vector<float> k(size_t(2) * layout.nHeadKv * layout.headDim, 0.5f);
        for (int l = 0; l < layout.nLayer; ++l) cache->store(l, 0, 2, k.data(), k.data());
        cache->commit(0, 2, CellOrigin::Prompt);
        const KvCacheStats s = cache->stats();
        auto size = kvElementSize(kvTypeName(type));
        ASSERT_TRUE(size) << size.error().message;
        KvShape shape{uint64_t(layout.nLayer), uint64_t(layout.nHeadKv), uint64_t(layout.nHeadKv), uint64_t(layout.headDim), size->bytes};
        shape.blockElements = size->elements;
        auto atCapacity = computeKvFigures(shape, uint64_t(layout.nCtx), 1);
        auto atUsed = computeKvFigures(shape, 2, 1);
        ASSERT_TRUE(atCapacity && atUsed);
        EXPECT_EQ(s.bytesPerToken, atCapacity->bytesPerToken);
        EXPECT_EQ(s.bytesReserved, atCapacity->totalBytes);
        EXPECT_EQ(s.bytesUsed, atUsed->totalBytes);
        EXPECT_EQ(s.bytesReservedPerLayer, atCapacity->totalBytes / uint64_t(layout.nLayer));
    }
    // the figures themselves: 2 × 3 layers × 2 heads × 64 dims × (34/32 | 18/32) bytes
    EXPECT_EQ(computeKvFigures({3, 2, 2, 64, 34, 0, 0, 32}, 1, 1)->bytesPerToken, 2u * 3 * 2 * 2 * 34);
    EXPECT_EQ(computeKvFigures({3, 2, 2, 64, 18, 0, 0, 32}, 1, 1)->bytesPerToken, 2u * 3 * 2 * 2 * 18);
    EXPECT_FALSE(computeKvFigures({3, 2, 2, 48, 34, 0, 0, 32}, 1, 1));
}

TEST(KvTypeNames, ParseEveryTypeAndRefuseOthers) {
    for (KvType type : {KvType::F32, KvType::F16, KvType::Q8_0, KvType::Q4_0}) EXPECT_EQ(parseKvType(kvTypeName(type)), type);
    auto bad = parseKvType("q8");
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().message, "KV cache type must be f32, f16, q8_0 or q4_0, got 'q8'");
}

// stories260K's head dimension is 8: the engine refuses a block cache before loading the weights.
TEST(KvBlockCacheEngine, RefusesStories260KsHeadDimension) {
    auto engine = tryLoadEngine(kStories, {.ctx = 64, .kv = KvType::Q8_0});
    ASSERT_FALSE(engine);
    EXPECT_NE(engine.error().message.find("head dimension is 8"), std::string::npos) << engine.error().message;
}

namespace {

// Greedy ids of maxTokens steps from the prompt with a cache of `kv`.
std::vector<int32_t> greedyIds(const std::string& path, KvType kv, const std::vector<int32_t>& prompt, int32_t maxTokens) {
    auto engine = loadTestEngine(path, {.ctx = 128, .kv = kv});
    if (!engine) return {};
    auto result = engine->generate(greedyRequest(prompt, maxTokens), nullptr, nullptr);
    EXPECT_TRUE(result) << result.error().message;
    return result ? std::vector<int32_t>(result->tokens.begin(), result->tokens.end()) : std::vector<int32_t>{};
}

// Teacher-forced logits of every position of `tokens` with a cache of `kv`.
std::vector<std::vector<float>> scoreLogits(const std::string& path, KvType kv, const std::vector<int32_t>& tokens) {
    auto engine = loadTestEngine(path, {.ctx = 128, .kv = kv});
    std::vector<std::vector<float>> rows;
    if (!engine) return rows;
    auto ok = engine->score(tokens, [&](int32_t, std::span<const float> logits) { rows.emplace_back(logits.begin(), logits.end()); });
    EXPECT_TRUE(ok) << ok.error().message;
    return rows;
}

double maxAbsDifference(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b) {
    double worst = 0;
    EXPECT_EQ(a.size(), b.size());
    for (size_t p = 0; p < std::min(a.size(), b.size()); ++p)
        for (size_t i = 0; i < a[p].size(); ++i) worst = std::max(worst, std::fabs(double(a[p][i]) - double(b[p][i])));
    return worst;
}

}  // namespace

// phi3-tiny (random weights, head dim 32): what a q8_0 / q4_0 cache changes against f16. Random
// weights leave small top-1 margins, so greedy paths part after a while: measured on this prompt,
// q8_0 follows f16 for 17 steps, q4_0 parts at step 2 (f32 follows f16 for all 64).
TEST(KvBlockCacheEngine, Q8_0FollowsF16OnPhi3Tiny) {
    INFERSCOPE_SHARED_FILE_OR_SKIP(path, "models/arch/phi3-tiny.gguf");
    std::vector<int32_t> prompt;
    {
        auto engine = loadTestEngine(path, {.ctx = 128});
        ASSERT_TRUE(engine);
        prompt = engine->tokenizer().encode("Once upon a time", true);
    }
    const auto f16 = greedyIds(path, KvType::F16, prompt, 32);
    const auto q8 = greedyIds(path, KvType::Q8_0, prompt, 32);
    ASSERT_EQ(f16.size(), 32u);
    ASSERT_EQ(q8.size(), 32u);
    EXPECT_EQ(std::vector<int32_t>(q8.begin(), q8.begin() + 16), std::vector<int32_t>(f16.begin(), f16.begin() + 16));

    // Teacher-forced over the f16 continuation, every logit of every position: the logits move in
    // the order of the storage's rounding error (f16 ~2^-11 of each value; q8_0 up to max|x|/254 of
    // its block; q4_0 max|x|/16): f32 < q8_0 < q4_0 against f16.
    std::vector<int32_t> sequence = prompt;
    sequence.insert(sequence.end(), f16.begin(), f16.end());
    const auto ref = scoreLogits(path, KvType::F16, sequence);
    const double dF32 = maxAbsDifference(scoreLogits(path, KvType::F32, sequence), ref);
    const double dQ8 = maxAbsDifference(scoreLogits(path, KvType::Q8_0, sequence), ref);
    const double dQ4 = maxAbsDifference(scoreLogits(path, KvType::Q4_0, sequence), ref);
    std::printf("max |logit - f16 logit| over %zu positions: f32 %.4f, q8_0 %.4f, q4_0 %.4f\n", sequence.size(), dF32, dQ8, dQ4);
    EXPECT_LT(dF32, dQ8);
    EXPECT_LT(dQ8, dQ4);
}
