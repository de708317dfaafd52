// Perplexity and distribution-shift statistics (core/engine/perplexity.h) on distributions small
// enough to work out by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <vector>

#include "engine/perplexity.h"

using namespace inferscope;

namespace {
const float kLn3 = std::log(3.0f);
}

TEST(Perplexity, LogSumExpOfTwoLogits) {
    // e^0 + e^ln3 = 4.
    const std::vector<float> logits = {0.0f, kLn3};
    EXPECT_NEAR(logSumExp(logits), std::log(1.0 + std::exp(double(kLn3))), 1e-12);
    // Large logits do not overflow (e^1000 is beyond double): ln(e^a + e^b) = b + ln(1 + e^(a − b)).
    const std::vector<float> large = {1000.0f, 1000.0f + kLn3};
    const double a = large[0], b = large[1];  // as stored: 1000 + ln 3 rounded to float
    EXPECT_NEAR(logSumExp(large), b + std::log(1.0 + std::exp(a - b)), 1e-9);
}

TEST(Perplexity, MeanNegativeLogLikelihoodAndItsError) {
    // p = (1/4, 3/4): the second token costs ln(4/3), the first ln 4.
    const std::vector<float> logits = {0.0f, kLn3};
    PerplexityMeter m;
    m.add(logits, 1);
    m.add(logits, 0);
    const double p1 = 1.0 / (1.0 + std::exp(double(kLn3)));
    const double a = -std::log(1.0 - p1), b = -std::log(p1);
    EXPECT_EQ(m.count(), 2);
    EXPECT_NEAR(m.meanNll(), (a + b) / 2, 1e-12);
    EXPECT_NEAR(m.perplexity(), std::exp((a + b) / 2), 1e-12);
    // Two samples: population variance ((a − b)/2)², its error sqrt(var / 1) = |a − b| / 2, times the perplexity.
    EXPECT_NEAR(m.perplexityError(), m.perplexity() * std::fabs(a - b) / 2, 1e-12);
}

TEST(Perplexity, OneSampleHasNoErrorEstimate) {
    const std::vector<float> logits = {0.0f, 0.0f};
    PerplexityMeter m;
    m.add(logits, 0);
    EXPECT_NEAR(m.perplexity(), 2.0, 1e-12);  // a fair coin
    EXPECT_EQ(m.perplexityError(), 0.0);
}

TEST(Perplexity, KlDivergenceOfTwoCoins) {
    // P = (1/2, 1/2), Q = (1/4, 3/4): KL(P‖Q) = ½ ln(½ / ¼) + ½ ln(½ / ¾) = ½ ln(4/3).
    const std::vector<float> fair = {0.0f, 0.0f}, biased = {0.0f, kLn3};
    const double q0 = 1.0 / (1.0 + std::exp(double(kLn3)));
    const DistributionShift s = compareDistributions(fair, biased);
    EXPECT_NEAR(s.kl, 0.5 * std::log(0.5 / q0) + 0.5 * std::log(0.5 / (1.0 - q0)), 1e-12);
    EXPECT_FALSE(s.sameTop1);  // a tie ranks the lower id first: 0 against 1
    // Not symmetric: KL(Q‖P) = ¼ ln(¼ / ½) + ¾ ln(¾ / ½).
    EXPECT_NEAR(compareDistributions(biased, fair).kl, q0 * std::log(q0 / 0.5) + (1 - q0) * std::log((1 - q0) / 0.5), 1e-12);
}

TEST(Perplexity, IdenticalOrShiftedLogitsDoNotMove) {
    const std::vector<float> logits = {1.5f, -2.0f, 0.25f, 3.0f};
    const DistributionShift same = compareDistributions(logits, logits);
    EXPECT_EQ(same.kl, 0.0);
    EXPECT_TRUE(same.sameTop1);
    // softmax(x + c) = softmax(x).
    std::vector<float> shifted = logits;
    for (float& l : shifted) l += 7.0f;
    const DistributionShift s = compareDistributions(logits, shifted);
    EXPECT_NEAR(s.kl, 0.0, 1e-12);
    EXPECT_TRUE(s.sameTop1);
}

TEST(Perplexity, DivergenceQuantilesMeanAndAgreement) {
    DivergenceMeter m;
    for (double kl : {0.3, 0.5, 0.1, 0.4, 0.2}) m.add({kl, kl < 0.35});
    EXPECT_EQ(m.count(), 5);
    EXPECT_NEAR(m.meanKl(), 0.3, 1e-12);
    EXPECT_NEAR(m.klQuantile(0.5), 0.3, 1e-12);
    EXPECT_NEAR(m.klQuantile(0.0), 0.1, 1e-12);
    EXPECT_NEAR(m.klQuantile(1.0), 0.5, 1e-12);
    // Rank 0.99 × 4 = 3.96: 0.4 + 0.96 × (0.5 − 0.4).
    EXPECT_NEAR(m.klQuantile(0.99), 0.496, 1e-12);
    EXPECT_NEAR(m.maxKl(), 0.5, 1e-12);
    // Deviations −0.2 … 0.2: population variance 0.02, error sqrt(0.02 / 4).
    EXPECT_NEAR(m.meanKlError(), std::sqrt(0.02 / 4), 1e-12);
    EXPECT_EQ(m.sameTop1(), 3);
    EXPECT_NEAR(m.top1Agreement(), 0.6, 1e-12);
}

TEST(Perplexity, WindowsAsLlamaPerplexityCutsThem) {
    std::vector<int32_t> text(1000);
    std::iota(text.begin(), text.end(), 100);
    const PerplexityChunks c = cutIntoChunks(int32_t(text.size()), 128);
    EXPECT_EQ(c.count, 7);  // 1000 / 128, the last 104 tokens dropped
    EXPECT_EQ(c.firstScored, 64);
    EXPECT_EQ(c.scoredPerChunk(), 63);  // logits at 64..126 predict tokens 65..127
    const auto w = c.window(text, 1, /*bos=*/1);
    ASSERT_EQ(w.size(), 128u);
    EXPECT_EQ(w[0], 1);
    EXPECT_EQ(w[1], 100 + 129);
    EXPECT_EQ(w[127], 100 + 255);
    EXPECT_EQ(c.window(text, 1, -1)[0], 100 + 128);  // no BOS in the vocabulary: the text's own token
    EXPECT_EQ(cutIntoChunks(127, 128).count, 0);
}

TEST(Perplexity, DeltaPOfTheFollowingTokenAndItsStatistics) {
    // The token that follows is 1: p = 3/4 under the biased coin, 1/2 under the fair one.
    const std::vector<float> fair = {0.0f, 0.0f}, biased = {0.0f, kLn3};
    const DistributionShift s = compareDistributions(fair, biased, 1);
    EXPECT_NEAR(s.pReference, 0.5, 1e-7);
    EXPECT_NEAR(s.pTest, 0.75, 1e-7);
    EXPECT_NEAR(s.dp(), 0.25, 1e-7);
    EXPECT_EQ(s.topReference, 0);
    EXPECT_EQ(s.topTest, 1);
    // Δp of 0.25, −0.25, 0.25, 0.25: mean 0.125, RMS 0.25; "same top p" as llama-perplexity: sqrt(p(1−p)/(n−1)).
    DivergenceMeter d;
    d.add(s);
    d.add(compareDistributions(fair, biased, 0));  // 1/4 − 1/2
    d.add(s);
    d.add(compareDistributions(biased, biased, 1));  // same: Δp 0, same top
    EXPECT_EQ(d.dpCount(), 4);
    EXPECT_NEAR(d.meanDp(), (0.25 - 0.25 + 0.25 + 0.0) / 4, 1e-7);
    EXPECT_NEAR(d.rmsDp(), std::sqrt((3 * 0.0625) / 4), 1e-7);
    EXPECT_NEAR(d.dpQuantile(0.0), -0.25, 1e-7);
    EXPECT_NEAR(d.dpQuantile(1.0), 0.25, 1e-7);
    EXPECT_NEAR(d.dpQuantile(0.5), 0.125, 1e-7);  // between 0 and 0.25
    EXPECT_NEAR(d.top1Agreement(), 0.25, 1e-12);
    EXPECT_NEAR(d.top1AgreementError(), std::sqrt(0.25 * 0.75 / 3), 1e-12);
    // Shifts without a following token count for KL but not for Δp.
    d.add(compareDistributions(fair, biased));
    EXPECT_EQ(d.count(), 5);
    EXPECT_EQ(d.dpCount(), 4);
}
