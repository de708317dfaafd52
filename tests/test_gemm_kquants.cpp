// Prefill's integer K-quant kernels (backend/gemm_kquants) against sums computed independently: the
// weights as our exact decoder gives them, x as the kernel rounds it, in double precision.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "backend/gemm_kquants.h"
#include "gguf/quant_blocks.h"
#include "gguf/quant_encode.h"

namespace inferscope {
namespace {

struct Case {
    GgmlType type;
    int64_t n, k, m;
};

class GemmKQuant : public ::testing::TestWithParam<Case> {};

TEST_P(GemmKQuant, EqualsTheExactSumOfDecodedWeightsAndRoundedActivations) {
    const auto [type, n, k, m] = GetParam();
    if (!haveGemmKQuant(type)) GTEST_SKIP() << "this build has no AVX2: prefill widens the weights instead";
    const size_t blockBytes = ggmlTypeInfo(uint32_t(type))->typeSize;
    std::mt19937 rng(uint32_t(n * 7 + k + m));
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> w(size_t(n * k)), x(size_t(m * k));
    for (auto& v : w) v = 0.02f * normal(rng) + 0.004f;  // an offset: Q4_K/Q5_K's minimums matter
    for (auto& v : x) v = normal(rng);
    x[5] = 40.0f;  // an outlier sets its block's scale
    std::vector<uint8_t> blocks(size_t(n * k / 256) * blockBytes);
    quantizeBlocks(type, w.data(), blocks.data(), size_t(n * k));
    std::vector<float> decoded(size_t(n * k));
    dequantizeBlocks(type, blocks.data(), decoded.data(), size_t(n * k / 256));

    IntRows q;
    roundRows(x.data(), m, k, q, 2);
    // The rounding is what it claims: each value within half a step of x, sub-block sums exact.
    for (int64_t t = 0; t < m; ++t)
        for (int64_t i = 0; i < k; ++i) {
            const float d = q.d[size_t(t * (k / 256) + i / 256)];
            ASSERT_LE(std::abs(int(q.q[size_t(t * k + i)])), IntRows::kMax);
            // Half a step, and the float rounding of x · (1/d) (a few ulps of x).
            const double xi = x[size_t(t * k + i)];
            ASSERT_LE(std::fabs(double(d) * q.q[size_t(t * k + i)] - xi), 0.5 * d + 0x1p-21 * std::fabs(xi));
        }
    const int64_t ldy = n + 3;  // a wider output row: the kernel writes only its n columns
    std::vector<float> y(size_t(m * ldy), -1.0f);
    gemmKQuant(type, blocks.data(), n, k, q, y.data(), ldy, 2);

    for (int64_t t = 0; t < m; ++t)
        for (int64_t r = 0; r < n; ++r) {
            double exact = 0, magnitude = 0, unrounded = 0, roundingBound = 0;
            for (int64_t i = 0; i < k; ++i) {
                const double wi = decoded[size_t(r * k + i)];
                const double d = q.d[size_t(t * (k / 256) + i / 256)];
                exact += wi * d * q.q[size_t(t * k + i)];
                magnitude += std::fabs(wi * d * q.q[size_t(t * k + i)]);
                unrounded += wi * x[size_t(t * k + i)];
                roundingBound += std::fabs(wi) * (0.5 * d + 0x1p-21 * std::fabs(double(x[size_t(t * k + i)])));
            }
            const float got = y[size_t(t * ldy + r)];
            ASSERT_NEAR(got, exact, 1e-5 * magnitude + 1e-6) << "token " << t << " row " << r;
            ASSERT_NEAR(got, unrounded, roundingBound + 1e-5 * magnitude) << "token " << t << " row " << r;
        }
    for (int64_t t = 0; t < m; ++t)
        for (int64_t c = n; c < ldy; ++c) ASSERT_EQ(y[size_t(t * ldy + c)], -1.0f);
}

// Token counts around the kernel's groups of 8 and 2 and its 64-token tiles; row counts around its
// 16-row tiles.
INSTANTIATE_TEST_SUITE_P(Shapes, GemmKQuant,
                         ::testing::Values(Case{GgmlType::Q4_K, 16, 256, 8}, Case{GgmlType::Q4_K, 37, 512, 1}, Case{GgmlType::Q4_K, 37, 512, 3},
                                           Case{GgmlType::Q4_K, 5, 768, 11}, Case{GgmlType::Q4_K, 33, 256, 70}, Case{GgmlType::Q4_K, 17, 1024, 130},
                                           Case{GgmlType::Q5_K, 16, 256, 8}, Case{GgmlType::Q5_K, 37, 512, 3}, Case{GgmlType::Q5_K, 17, 1024, 130},
                                           Case{GgmlType::Q6_K, 16, 256, 8}, Case{GgmlType::Q6_K, 37, 512, 3}, Case{GgmlType::Q6_K, 17, 1024, 130}),
                         [](const ::testing::TestParamInfo<Case>& p) {
                             return std::string(ggmlTypeName(uint32_t(p.param.type))) + "_n" + std::to_string(p.param.n) + "_k" +
                                    std::to_string(p.param.k) + "_m" + std::to_string(p.param.m);
                         });

}  // namespace
}  // namespace inferscope
