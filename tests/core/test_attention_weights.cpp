// The softmax weights attention() keeps for the logit lens (AttentionOptions::weightsOut): those
// of the last query row, per head over keys 0 .. P, against the double-precision reference
// (reference_attention.h); each row sums to 1, is exactly 0 outside a sliding window, and asking
// for them leaves the attention output bit for bit as it is without.
#include <gtest/gtest.h>

#include <omp.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "backend/kernels.h"
#include "gguf/ggml_types.h"
#include "reference_attention.h"

using namespace inferscope;

namespace {

struct WeightsCase {
    int headDim, nHead, nHeadKv;
    int64_t m;
    int32_t position0;
    int32_t window;
    float softCap;
    bool half;
};

std::vector<float> randomVector(size_t n, uint32_t seed, float sigma) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, sigma);
    std::vector<float> v(n);
    for (auto& x : v) x = dist(rng);
    return v;
}

}  // namespace

class AttentionWeights : public ::testing::TestWithParam<WeightsCase> {};

TEST_P(AttentionWeights, LastRowMatchesReference) {
    const auto [hd, nHead, nHeadKv, m, p0, window, softCap, half] = GetParam();
    const int32_t nCtx = p0 + int32_t(m) + 5;  // cached rows past the query exist and must not be read
    const int32_t last = p0 + int32_t(m) - 1, nKeys = last + 1;
    auto q = randomVector(size_t(m * nHead * hd), 21, 1.5f);
    auto k = randomVector(size_t(nHeadKv) * nCtx * hd, 22, 1.5f);
    auto v = randomVector(k.size(), 23, 1.0f);
    std::vector<uint16_t> k16(k.size()), v16(v.size());
    if (half) {  // the reference sees what the cache holds
        fp32ToFp16Row(k.data(), k16.data(), k.size());
        fp32ToFp16Row(v.data(), v16.data(), v.size());
        dequantizeRow(GgmlType::F16, k16.data(), k.data(), k.size());
        dequantizeRow(GgmlType::F16, v16.data(), v.data(), v.size());
    }
    const void* kc = half ? static_cast<const void*>(k16.data()) : k.data();
    const void* vc = half ? static_cast<const void*>(v16.data()) : v.data();
    std::vector<float> scratch(attentionScratchFloats(omp_get_max_threads(), nHead, nHeadKv, hd, nCtx));

    std::vector<float> plain(q.size(), NAN), kept(q.size(), NAN), weights(size_t(nHead) * nKeys, NAN);
    AttentionOptions options{window, softCap, 0.0f};
    attention(q.data(), kc, vc, half ? KvType::F16 : KvType::F32, m, p0, nHead, nHeadKv, hd, nCtx, plain.data(), scratch.data(), options);
    options.weightsOut = weights.data();
    attention(q.data(), kc, vc, half ? KvType::F16 : KvType::F32, m, p0, nHead, nHeadKv, hd, nCtx, kept.data(), scratch.data(), options);
    EXPECT_EQ(0, std::memcmp(plain.data(), kept.data(), plain.size() * sizeof(float))) << "keeping the weights changed the output";

    const int group = nHead / nHeadKv;
    for (int h = 0; h < nHead; ++h) {
        const size_t base = size_t(h / group) * nCtx * hd;  // query head h reads KV head h / group
        const auto ref = testing_reference::referenceAttentionHead(q.data() + ((m - 1) * nHead + h) * hd, k.data() + base,
                                                                   v.data() + base, last, hd, AttentionOptions{window, softCap, 0.0f});
        const float* row = weights.data() + size_t(h) * nKeys;
        double sum = 0;
        for (int32_t j = 0; j < nKeys; ++j) {
            sum += row[j];
            if (window > 0 && last - j >= window) {
                EXPECT_EQ(row[j], 0.0f) << "head " << h << " key " << j << " is outside the window of " << window;
                continue;
            }
            EXPECT_NEAR(row[j], ref.weights[size_t(j)], 1e-6) << "head " << h << " key " << j;
            EXPECT_GT(row[j], 0.0f) << "head " << h << " key " << j;
        }
        EXPECT_NEAR(sum, 1.0, 1e-5) << "head " << h;
    }
}

INSTANTIATE_TEST_SUITE_P(Paths, AttentionWeights,
                         ::testing::Values(WeightsCase{64, 4, 2, 1, 40, 0, 0, false},     // decode, GQA
                                           WeightsCase{64, 4, 2, 1, 40, 32, 0, true},     // decode past the window, f16
                                           WeightsCase{64, 4, 2, 40, 0, 32, 50.0f, false},  // prefill's last row, cap
                                           WeightsCase{8, 8, 4, 6, 9, 0, 0, false},        // stories260K's shape
                                           WeightsCase{24, 6, 3, 1, 20, 1, 0, true},       // window 1: itself only
                                           WeightsCase{128, 8, 8, 3, 300, 0, 0, false},    // long row, no GQA
                                           WeightsCase{32, 4, 1, 1, 0, 0, 1.5f, false}),   // the first position
                         [](const auto& info) {
                             const WeightsCase& c = info.param;
                             return fmt::format("hd{}h{}kv{}m{}p{}w{}cap{}{}", c.headDim, c.nHead, c.nHeadKv, c.m, c.position0,
                                                c.window, int(c.softCap * 10), c.half ? "f16" : "f32");
                         });
