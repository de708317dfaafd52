// The replay's k highest logits (engine/highest_logits.h) against the plain definition: every id
// ranked by logit, descending, ties lower id first — on vocabularies full of ties, -0 against +0,
// every k from none to past the vocabulary, and NaN logits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "engine/highest_logits.h"

using namespace inferscope;

namespace {

std::vector<int32_t> rankedPrefix(const std::vector<float>& logits, size_t k) {
    std::vector<int32_t> ids(logits.size());
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = int32_t(i);
    std::stable_sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return logits[size_t(a)] > logits[size_t(b)]; });
    ids.resize(std::min(k, ids.size()));
    return ids;
}

}  // namespace

TEST(HighestLogits, AreTheRankedPrefixWithTiesInIdOrder) {
    std::mt19937 rng(7);
    for (int trial = 0; trial < 500; ++trial) {
        const size_t n = 1 + rng() % 2000, k = rng() % (n + 3);
        const int levels = 1 + int(rng() % 40);
        std::vector<float> logits(n);
        for (auto& v : logits) v = float(int(rng() % levels) - levels / 2) * 0.25f;  // ties everywhere, both signs
        for (int z = 0; z < 3; ++z) logits[rng() % n] = (z % 2 ? -0.0f : 0.0f);
        StepRecord rec;
        keepHighestLogits(logits, k, rec);
        ASSERT_EQ(rec.replayIds, rankedPrefix(logits, k)) << "trial " << trial << ", n " << n << ", k " << k;
        ASSERT_EQ(rec.replayLogits.size(), rec.replayIds.size());
        for (size_t i = 0; i < rec.replayIds.size(); ++i) ASSERT_EQ(rec.replayLogits[i], logits[size_t(rec.replayIds[i])]);
        // The ids alone (compare's candidates), into a vector that held something else.
        std::vector<int32_t> ids(5, -1);
        highestLogitIds(logits, k, ids);
        ASSERT_EQ(ids, rec.replayIds) << "trial " << trial;
    }
}

TEST(HighestLogits, AVocabularyOfDistinctLogitsAndTheEdges) {
    std::mt19937 rng(11);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    std::vector<float> logits(32000);
    for (auto& v : logits) v = normal(rng);
    logits[17] = std::numeric_limits<float>::infinity();
    logits[18] = -std::numeric_limits<float>::infinity();
    logits[19] = std::numeric_limits<float>::denorm_min();
    for (size_t k : {size_t(0), size_t(1), size_t(512), size_t(31999), size_t(32000), size_t(40000)}) {
        StepRecord rec;
        keepHighestLogits(logits, k, rec);
        EXPECT_EQ(rec.replayIds, rankedPrefix(logits, k)) << "k " << k;
    }
}

// NaN logits have no order: the result is still k distinct ids, the finite ones ranked among
// themselves.
TEST(HighestLogits, NanLogitsStillGiveKDistinctIds) {
    std::vector<float> logits = {1.0f, std::nanf(""), 3.0f, 2.0f, std::nanf(""), 0.5f};
    StepRecord rec;
    keepHighestLogits(logits, 4, rec);
    ASSERT_EQ(rec.replayIds.size(), 4u);
    std::vector<int32_t> sorted = rec.replayIds;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end());
}
