// The softmax weights attention() keeps for the logit lens (AttentionOptions::weightsOut): those
// of the last query row, per head over keys 0 .. P, against the double-precision reference
// (reference_attention.h); each row sums to 1, is exactly 0 outside a sliding window, and asking
// for them leaves the attention output bit for bit as it is without.
#include <gtest/gtest.h>

#include <omp.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "backend/kernels.h"
#include "reference_attention.h"

using namespace inferscope;

using testing_reference::AttentionCase;

class AttentionWeights : public ::testing::TestWithParam<AttentionCase> {};

TEST_P(AttentionWeights, LastRowMatchesReference) {
    const AttentionCase& c = GetParam();
    const int32_t nCtx = c.position0 + int32_t(c.m) + 5;  // cached rows past the query exist and must not be read
    const int32_t last = c.lastPosition(), nKeys = last + 1;
    const auto in = testing_reference::attentionInputs(c, nCtx, 21);
    std::vector<float> scratch(attentionScratchFloats(omp_get_max_threads(), c.nHead, c.nHeadKv, c.headDim, nCtx));

    std::vector<float> plain(in.q.size(), NAN), kept(in.q.size(), NAN), weights(size_t(c.nHead) * nKeys, NAN);
    AttentionOptions options = c.options();
    attention(in.q.data(), in.kCache(), in.vCache(), c.kvType(), c.m, c.position0, c.nHead, c.nHeadKv, c.headDim, nCtx, plain.data(),
              scratch.data(), options);
    options.weightsOut = weights.data();
    attention(in.q.data(), in.kCache(), in.vCache(), c.kvType(), c.m, c.position0, c.nHead, c.nHeadKv, c.headDim, nCtx, kept.data(),
              scratch.data(), options);
    EXPECT_EQ(0, std::memcmp(plain.data(), kept.data(), plain.size() * sizeof(float))) << "keeping the weights changed the output";

    for (int h = 0; h < c.nHead; ++h) {
        const auto ref = testing_reference::referenceAttentionRow(c, in, nCtx, c.m - 1, h);
        const float* row = weights.data() + size_t(h) * nKeys;
        double sum = 0;
        for (int32_t j = 0; j < nKeys; ++j) {
            sum += row[j];
            if (c.window > 0 && last - j >= c.window) {
                EXPECT_EQ(row[j], 0.0f) << "head " << h << " key " << j << " is outside the window of " << c.window;
                continue;
            }
            EXPECT_NEAR(row[j], ref.weights[size_t(j)], 1e-6) << "head " << h << " key " << j;
            EXPECT_GT(row[j], 0.0f) << "head " << h << " key " << j;
        }
        EXPECT_NEAR(sum, 1.0, 1e-5) << "head " << h;
    }
}

INSTANTIATE_TEST_SUITE_P(Paths, AttentionWeights,
                         ::testing::Values(AttentionCase{64, 4, 2, 1, 40, 0, 0, false},     // decode, GQA
                                           AttentionCase{64, 4, 2, 1, 40, 32, 0, true},     // decode past the window, f16
                                           AttentionCase{64, 4, 2, 40, 0, 32, 50.0f, false},  // prefill's last row, cap
                                           AttentionCase{8, 8, 4, 6, 9, 0, 0, false},        // stories260K's shape
                                           AttentionCase{24, 6, 3, 1, 20, 1, 0, true},       // window 1: itself only
                                           AttentionCase{128, 8, 8, 3, 300, 0, 0, false},    // long row, no GQA
                                           AttentionCase{32, 4, 1, 1, 0, 0, 1.5f, false}),   // the first position
                         [](const auto& info) { return info.param.name(); });
