// The integer decode kernels of the 32-element block formats (backend/gemv_q8blocks.h), through
// gemv() as the engine calls it: weights are the dense golden blocks of tests/data/quant (ggml's own
// quantization of hostile rows: scales over 4 decades, zero blocks, outliers), x random.
//  - x's rounding equals the header's rule, computed here independently, bit for bit.
//  - y equals Σ w·x̂ with w the exactly decoded weights (quant_blocks) and x̂ = d·q that rounding:
//    the integer sums are exact, so only f32 accumulation noise remains.
//  - y is within the bound the 16-bit rounding of x implies of the unrounded product Σ w·x.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "backend/gemv.h"
#include "backend/kernel_table.h"
#include "backend_test_helpers.h"
#include "gguf/quant_blocks.h"
#include "read_bytes.h"

using namespace inferscope;
using namespace inferscope::testing_backend;

using inferscope::testing_files::readBytes;

namespace {

// x rounded per block of 32 as the header says, written out again here as the oracle.
struct Rounded {
    std::vector<int16_t> q;             // [m][k]
    std::vector<float> d;               // [m][k/32]
    std::vector<double> value;          // [m][k]: d·q
};

Rounded roundLikeTheHeader(const std::vector<float>& x, int64_t m, int64_t k) {
    Rounded r{std::vector<int16_t>(size_t(m * k)), std::vector<float>(size_t(m * k / 32)), std::vector<double>(size_t(m * k))};
    for (int64_t b = 0; b < m * k / 32; ++b) {
        float amax = 0;
        for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[size_t(b * 32 + j)]));
        const float d = amax / float(kActivationLevels), inv = d != 0 ? 1.0f / d : 0.0f;
        r.d[size_t(b)] = d;
        for (int j = 0; j < 32; ++j) {
            const float scaled = x[size_t(b * 32 + j)] * inv;
            float q = std::round(scaled);  // half away from zero, then the ties back to even
            if (std::fabs(scaled - std::trunc(scaled)) == 0.5f && std::fmod(q, 2.0f) != 0) q -= std::copysign(1.0f, scaled);
            r.q[size_t(b * 32 + j)] = int16_t(q);
            r.value[size_t(b * 32 + j)] = double(d) * q;
        }
    }
    return r;
}

GgmlType typeNamed(const std::string& name) {
    for (uint32_t id = 0; id < 64; ++id)
        if (auto info = ggmlTypeInfo(id); info && info->name == name) return GgmlType(id);
    return GgmlType::F32;
}

const char* const kTypes[] = {"Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "IQ4_NL"};

class Int8Blocks : public ::testing::TestWithParam<const char*> {};

}  // namespace

TEST(Int8BlocksRounding, ActivationsAreRoundedByTheHeadersRule) {
    if (!activeBackendKernels().hasInt8BlockKernel(GgmlType::Q8_0)) GTEST_SKIP() << "no integer block kernels in the " << kernelSetName() << " kernel set";
    constexpr int64_t m = 2, k = 192;
    auto x = randomVector(size_t(m * k), 7, 3.0f);
    for (int j = 32; j < 64; ++j) x[size_t(j)] = 0.0f;           // an all-zero block: d = 0, q = 0
    for (int j = 64; j < 96; ++j) x[size_t(j)] = float(j - 64) - 15.5f;  // d = 1 (amax 32767 below): every element a tie
    x[64] = 32767.0f;
    x[100] = -1e30f;                                             // a huge outlier: the rest round to 0
    x[k + 5] = -0.0f;
    const auto want = roundLikeTheHeader(x, m, k);
    const ActivationBlocks32 got = activeBackendKernels().quantizeActivations32(x.data(), m, k);
    ASSERT_EQ(got.m, m);
    ASSERT_EQ(got.k, k);
    for (int64_t c = 0; c < m * k; ++c) ASSERT_EQ(got.q[c], want.q[size_t(c)]) << "element " << c;
    for (int64_t b = 0; b < m * k / 32; ++b) {
        ASSERT_EQ(got.d[b], want.d[size_t(b)]) << "block " << b;
        int s = 0;
        for (int j = 0; j < 32; ++j) s += want.q[size_t(b * 32 + j)];
        ASSERT_EQ(got.sum[b], want.d[size_t(b)] * float(s)) << "block " << b;
    }
    EXPECT_EQ(got.d[1], 0.0f);
    EXPECT_EQ(got.q[100], -32767);
    EXPECT_EQ(got.d[2], 1.0f);
    EXPECT_EQ(got.q[65], -14);  // -14.5 to even
    EXPECT_EQ(got.q[66], -14);  // -13.5 to even
}

TEST_P(Int8Blocks, GemvEqualsTheIntegerSumAndIsWithinTheRoundingBoundOfF32) {
    const std::string name = GetParam();
    const GgmlType type = typeNamed(name);
    if (!activeBackendKernels().hasInt8BlockKernel(type)) GTEST_SKIP() << "no integer block kernels in the " << kernelSetName() << " kernel set";
    const auto dense = readBytes(std::string(INFERSCOPE_TEST_DATA_DIR) + "/quant/" + name + "-dense.blocks");
    const auto info = *ggmlTypeInfo(uint32_t(type));
    const size_t denseRowBytes = 256 / info.blockSize * info.typeSize;
    ASSERT_EQ(dense.size(), 32 * denseRowBytes);

    // 400 rows of K = 1280: row n = dense rows n..n+4 (mod 32) side by side; more bytes than
    // kGemvParallelBytes (Q4_0: 288 KB), so both threads run.
    constexpr int64_t N = 400, K = 1280;
    std::vector<uint8_t> blocks;
    for (int64_t n = 0; n < N; ++n)
        for (int64_t j = 0; j < K / 256; ++j) {
            const uint8_t* src = dense.data() + size_t((n + j) % 32) * denseRowBytes;
            blocks.insert(blocks.end(), src, src + denseRowBytes);
        }
    ASSERT_GT(int64_t(blocks.size()), kGemvParallelBytes);
    std::vector<float> w(size_t(N * K));
    for (int64_t n = 0; n < N; ++n) dequantizeRow(type, blocks.data() + size_t(n) * (K / 32) * info.typeSize, w.data() + n * K, K);

    for (int64_t m = 1; m <= kGemvMaxRows; ++m) {
        SCOPED_TRACE(name + " m=" + std::to_string(m));
        auto x = randomVector(size_t(m * K), uint32_t(10 + m));
        for (int64_t c = 0; c < K; c += 97) x[size_t(c)] *= 40.0f;  // outliers that coarsen their blocks
        std::vector<float> y(size_t(m * N));
        const GemvTask task{blocks.data(), WeightFormat::Blocks, N, K, y.data(), uint32_t(type)};
        gemv({&task, 1}, x.data(), m, 2);
        const auto r = roundLikeTheHeader(x, m, K);
        for (int64_t i = 0; i < m; ++i)
            for (int64_t n = 0; n < N; ++n) {
                double onRounded = 0, magRounded = 0, exact = 0, magExact = 0, roundingBound = 0;
                for (int64_t c = 0; c < K; ++c) {
                    const double wc = w[size_t(n * K + c)];
                    const size_t xc = size_t(i * K + c);
                    onRounded += wc * r.value[xc];
                    magRounded += std::fabs(wc * r.value[xc]);
                    exact += wc * x[xc];
                    magExact += std::fabs(wc * x[xc]);
                    roundingBound += std::fabs(wc) * 0.5 * r.d[xc / 32];
                }
                const double got = y[size_t(i * N + n)];
                // f32: each block's scale product and K/32 accumulations, a few ulps of the magnitude.
                const double noise = double(K) * 0x1p-24 * magRounded + 1e-30;
                ASSERT_LE(std::fabs(got - onRounded), noise) << "row " << i << " output " << n;
                ASSERT_LE(std::fabs(got - exact), roundingBound * (1 + 1e-6) + noise + double(K) * 0x1p-24 * magExact)
                    << "row " << i << " output " << n;
            }
    }
}

INSTANTIATE_TEST_SUITE_P(EveryType, Int8Blocks, ::testing::ValuesIn(kTypes),
                         [](const ::testing::TestParamInfo<const char*>& i) { return std::string(i.param); });

// Q8_0 at the edges: weights -128 (a hostile file; ggml writes ±127) against x at full scale
// (±32767): pair sums of 2·128·32767 in int32, exact; a kernel that saturated 16-bit sums (as
// vpmaddubsw does) or took -128 for +128 would be off by millions.
TEST(Int8BlocksEdges, Q8_0MinusOneTwentyEightAtFullScaleIsExact) {
    if (!activeBackendKernels().hasInt8BlockKernel(GgmlType::Q8_0)) GTEST_SKIP() << "no integer block kernels in the " << kernelSetName() << " kernel set";
    constexpr int64_t K = 64;
    std::vector<uint8_t> row;
    for (int b = 0; b < K / 32; ++b) {
        row.push_back(0x00), row.push_back(0x3C);  // d = 1.0 (f16 0x3C00)
        for (int j = 0; j < 32; ++j) row.push_back(uint8_t(b == 0 ? 0x80 : (j % 2 ? 0x80 : 0x7F)));  // -128 / 127
    }
    std::vector<float> x(K);
    for (int64_t c = 0; c < K; ++c) x[size_t(c)] = c < 32 ? -32767.0f : (c % 2 ? -32767.0f : 32767.0f);  // d_x = 1, q = ±32767
    float y = 0;
    const GemvTask task{row.data(), WeightFormat::Blocks, 1, K, &y, uint32_t(GgmlType::Q8_0)};
    gemv({&task, 1}, x.data(), 1, 1);
    // block 0: 32 · (-128)·(-32767); block 1: 16 · 127·32767 + 16 · (-128)·(-32767): 32767 · 8176,
    // exact in f32 (32767 · 511 < 2^24)
    EXPECT_EQ(y, float(32767 * 8176));
}
