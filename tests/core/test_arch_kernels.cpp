// The kernels the newer architectures add, each against a plain double-precision reference:
// sliding-window and soft-capped attention (every head-dim path, f32/f16 cache), NEOX RoPE, the
// GELU(tanh) gate, soft-capping, biases and per-head RMSNorm.
#include <gtest/gtest.h>

#include <omp.h>

#include <cmath>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "backend/kernels.h"
#include "gguf/ggml_types.h"
#include "reference_attention.h"

using namespace inferscope;

namespace {

std::vector<float> randomVector(size_t n, uint32_t seed, float sigma = 1.0f) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, sigma);
    std::vector<float> v(n);
    for (auto& x : v) x = dist(rng);
    return v;
}

struct WindowCase {
    int headDim, nHead, nHeadKv;
    int64_t m;
    int32_t position0;
    int32_t window;
    float softCap;
    bool half;
    float scale = 0.0f;  // 0: 1/sqrt(headDim)
};

}  // namespace

class WindowedAttention : public ::testing::TestWithParam<WindowCase> {};

// Key j is visible from the query at position p iff 0 <= p - j < window (llama.cpp's SWA mask);
// scores become cap · tanh(score / cap) before the softmax (reference_attention.h).
TEST_P(WindowedAttention, MatchesReference) {
    const auto [hd, nHead, nHeadKv, m, p0, window, softCap, half, scale] = GetParam();
    const int32_t nCtx = p0 + int32_t(m) + 3;
    auto q = randomVector(size_t(m * nHead * hd), 11, 1.5f);
    auto k = randomVector(size_t(nHeadKv) * nCtx * hd, 12, 1.5f);
    auto v = randomVector(k.size(), 13);
    std::vector<uint16_t> k16(k.size()), v16(v.size());
    if (half) {
        fp32ToFp16Row(k.data(), k16.data(), k.size());
        fp32ToFp16Row(v.data(), v16.data(), v.size());
        dequantizeRow(GgmlType::F16, k16.data(), k.data(), k.size());
        dequantizeRow(GgmlType::F16, v16.data(), v.data(), v.size());
    }
    std::vector<float> out(q.size(), NAN), scratch(attentionScratchFloats(omp_get_max_threads(), nHead, nHeadKv, hd, nCtx));
    attention(q.data(), half ? static_cast<const void*>(k16.data()) : k.data(), half ? static_cast<const void*>(v16.data()) : v.data(),
              half ? KvType::F16 : KvType::F32, m, p0, nHead, nHeadKv, hd, nCtx, out.data(), scratch.data(), AttentionOptions{window, softCap, scale});
    const int group = nHead / nHeadKv;
    for (int64_t r = 0; r < m; ++r)
        for (int h = 0; h < nHead; ++h) {
            const size_t base = size_t(h / group) * nCtx * hd;
            const auto ref = testing_reference::referenceAttentionHead(q.data() + (r * nHead + h) * hd, k.data() + base,
                                                                       v.data() + base, p0 + int32_t(r), hd,
                                                                       AttentionOptions{window, softCap, scale});
            for (int i = 0; i < hd; ++i)
                ASSERT_NEAR(out[size_t((r * nHead + h) * hd + i)], ref.out[size_t(i)], 2e-5) << "row " << r << " head " << h << " dim " << i;
        }
}

INSTANTIATE_TEST_SUITE_P(Paths, WindowedAttention,
                         ::testing::Values(WindowCase{64, 4, 2, 1, 40, 32, 0, false},   // decode past the window
                                           WindowCase{64, 4, 2, 40, 0, 32, 0, true},    // prefill across the boundary
                                           WindowCase{64, 4, 2, 6, 30, 32, 0, false},   // rows on both sides of it
                                           WindowCase{24, 6, 3, 9, 5, 4, 0, false},     // generic head-dim path
                                           WindowCase{24, 6, 3, 1, 20, 1, 0, true},     // window 1: itself only
                                           WindowCase{64, 4, 2, 5, 12, 0, 2.0f, false}, // soft-cap alone
                                           WindowCase{32, 4, 4, 7, 30, 8, 1.5f, true},  // both, vector path
                                           WindowCase{24, 4, 2, 3, 7, 100, 3.0f, false},   // window wider than the context
                                           WindowCase{64, 4, 2, 4, 9, 0, 0, false, 0.25f}),  // Gemma 27B's own scale
                         [](const auto& info) {
                             const WindowCase& c = info.param;
                             return fmt::format("hd{}h{}kv{}m{}p{}w{}cap{}scale{}{}", c.headDim, c.nHead, c.nHeadKv, c.m,
                                                c.position0, c.window, int(c.softCap * 10), int(c.scale * 100),
                                                c.half ? "f16" : "f32");
                         });

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
