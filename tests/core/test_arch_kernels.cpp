// The kernels the newer architectures add, each against a plain double-precision reference:
// sliding-window and soft-capped attention (every head-dim path, f32/f16 cache), NEOX RoPE, the
// GELU(tanh) gate, soft-capping, biases and per-head RMSNorm.
#include <gtest/gtest.h>

#include <omp.h>

#include <cmath>
#include <vector>

#include "backend/kernels.h"
#include "reference_attention.h"

using namespace inferscope;

namespace {

using testing_backend::randomVector;
using testing_reference::AttentionCase;

}  // namespace

class WindowedAttention : public ::testing::TestWithParam<AttentionCase> {};

// Key j is visible from the query at position p iff 0 <= p - j < window (llama.cpp's SWA mask);
// scores become cap · tanh(score / cap) before the softmax (reference_attention.h).
TEST_P(WindowedAttention, MatchesReference) {
    const AttentionCase& c = GetParam();
    const int32_t nCtx = c.position0 + int32_t(c.m) + 3;
    const auto in = testing_reference::attentionInputs(c, nCtx, 11);
    std::vector<float> out(in.q.size(), NAN), scratch(attentionScratchFloats(omp_get_max_threads(), c.nHead, c.nHeadKv, c.headDim, nCtx));
    attention(in.q.data(), in.kCache(), in.vCache(), c.kvType(), c.m, c.position0, c.nHead, c.nHeadKv, c.headDim, nCtx, out.data(),
              scratch.data(), c.options());
    for (int64_t r = 0; r < c.m; ++r)
        for (int h = 0; h < c.nHead; ++h) {
            const auto ref = testing_reference::referenceAttentionRow(c, in, nCtx, r, h);
            for (int i = 0; i < c.headDim; ++i)
                ASSERT_NEAR(out[size_t((r * c.nHead + h) * c.headDim + i)], ref.out[size_t(i)], 2e-5) << "row " << r << " head " << h << " dim " << i;
        }
}

INSTANTIATE_TEST_SUITE_P(Paths, WindowedAttention,
                         ::testing::Values(AttentionCase{64, 4, 2, 1, 40, 32, 0, false},   // decode past the window
                                           AttentionCase{64, 4, 2, 40, 0, 32, 0, true},    // prefill across the boundary
                                           AttentionCase{64, 4, 2, 6, 30, 32, 0, false},   // rows on both sides of it
                                           AttentionCase{24, 6, 3, 9, 5, 4, 0, false},     // generic head-dim path
                                           AttentionCase{24, 6, 3, 1, 20, 1, 0, true},     // window 1: itself only
                                           AttentionCase{64, 4, 2, 5, 12, 0, 2.0f, false}, // soft-cap alone
                                           AttentionCase{32, 4, 4, 7, 30, 8, 1.5f, true},  // both, vector path
                                           AttentionCase{24, 4, 2, 3, 7, 100, 3.0f, false},   // window wider than the context
                                           AttentionCase{64, 4, 2, 4, 9, 0, 0, false, 0.25f}),  // Gemma 27B's own scale
                         [](const auto& info) { return info.param.name(); });

// NEOX pairs (i, i + nRot/2) rotate by pos · base^(-2i/nRot) · scale / factor[i]; dims past nRot stay.
TEST(NeoxRope, RotatesHalvesAgainstReference) {
    const int nHeads = 3, headDim = 24, nRot = 16, half = nRot / 2;
    const int64_t m = 4;
    const int32_t p0 = 1000, nCtx = 1010;
    const double base = 1e6, scale = 0.125;
    const std::vector<float> factors = {1, 1, 2, 4, 8, 16, 32, 32};
    auto x = randomVector(size_t(m * nHeads * headDim), 21);
    const auto original = x;
    std::vector<float> table(size_t(nCtx) * nRot);
    makeRopeTable(table.data(), nCtx, nRot, base, scale, factors.data());
    ropeNeoxInPlace(x.data(), m, nHeads, headDim, nRot, p0, table.data());
    for (int64_t r = 0; r < m; ++r)
        for (int h = 0; h < nHeads; ++h) {
            const size_t o = size_t((r * nHeads + h) * headDim);
            for (int i = 0; i < half; ++i) {
                const double theta = double(p0 + r) * scale * std::pow(base, -2.0 * i / nRot) / factors[size_t(i)];
                const double a = original[o + i], b = original[o + i + half];
                EXPECT_NEAR(x[o + i], a * std::cos(theta) - b * std::sin(theta), 1e-5);
                EXPECT_NEAR(x[o + i + half], a * std::sin(theta) + b * std::cos(theta), 1e-5);
            }
            for (int i = nRot; i < headDim; ++i) EXPECT_EQ(x[o + i], original[o + i]);
        }
    // Not the normal mode: that pairs (0, 1), which NEOX leaves to pairs (0, 8) and (1, 9).
    auto normal = original;
    ropeInPlace(normal.data(), m, nHeads, headDim, nRot, p0, table.data());
    EXPECT_GT(std::fabs(normal[1] - x[1]), 1e-3);
}

TEST(GeluTanhGate, MatchesTanhApproximation) {
    auto gate = randomVector(1000, 31, 3.0f);
    const auto up = randomVector(1000, 32);
    gate[0] = 0.0f, gate[1] = -20.0f, gate[2] = 20.0f, gate[3] = 1e-4f;
    std::vector<float> out(gate.size());
    geluTanhGate(gate.data(), up.data(), int64_t(gate.size()), out.data());
    for (size_t i = 0; i < gate.size(); ++i) {
        const double g = gate[i];
        const double gelu = 0.5 * g * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (g + 0.044715 * g * g * g)));
        EXPECT_NEAR(out[i], gelu * up[i], 1e-6 * std::max(1.0, std::fabs(gelu * up[i]))) << "gate " << g;
    }
    EXPECT_EQ(out[0], 0.0f);
    EXPECT_NEAR(out[1], 0.0f, 1e-12);
}

TEST(SoftCap, IsCapTimesTanh) {
    std::vector<float> x = {0.0f, 1e-6f, -1e-6f, 0.5f, -3.0f, 29.0f, 30.0f, 100.0f, -1e4f, 1e30f};
    const auto original = x;
    softCapInPlace(x.data(), int64_t(x.size()), 30.0f);
    for (size_t i = 0; i < x.size(); ++i) {
        const double want = 30.0 * std::tanh(double(original[i]) / 30.0);
        EXPECT_NEAR(x[i], want, 1e-6 * std::max(1.0, std::fabs(want))) << original[i];
    }
    EXPECT_EQ(x[9], 30.0f);  // saturates, no NaN from an overflowing exponent
}

TEST(AddBias, AddsTheVectorToEveryRow) {
    std::vector<float> x = {1, 2, 3, 4, 5, 6};
    const std::vector<float> bias = {10, 20, 30};
    addBias(x.data(), bias.data(), 2, 3);
    EXPECT_EQ(x, (std::vector<float>{11, 22, 33, 14, 25, 36}));
}

// Qwen 3 / Gemma 3 q/k norm: rmsNorm over [m·heads] rows of head_dim normalises each head alone.
TEST(PerHeadRmsNorm, NormalisesEachHeadSeparately) {
    const int heads = 3, hd = 8;
    auto x = randomVector(size_t(2 * heads * hd), 41, 2.0f);
    const auto w = randomVector(hd, 42);
    std::vector<float> out(x.size());
    rmsNorm(x.data(), w.data(), 2 * heads, hd, 1e-6f, out.data());
    for (int row = 0; row < 2 * heads; ++row) {
        double ss = 0;
        for (int i = 0; i < hd; ++i) ss += double(x[size_t(row * hd + i)]) * x[size_t(row * hd + i)];
        const double scale = 1.0 / std::sqrt(ss / hd + 1e-6);
        for (int i = 0; i < hd; ++i) EXPECT_NEAR(out[size_t(row * hd + i)], x[size_t(row * hd + i)] * scale * w[size_t(i)], 1e-5);
    }
}
