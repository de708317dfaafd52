// The K-quant decode kernels (backend/gemv_kquants.h): x rounded to 8 bits per 256 elements, then
// integer dot products with the stored blocks.
//  - The rounding of x: d = max|x| / 127 per 32, every |x - d·q| within half a step, exact sums.
//  - Each kernel against the exact dot product (double) of the decoder's weights (quant_blocks.h)
//    with that same rounded x: the integer part is exact, so only a few float roundings per block
//    remain. Weights: the hostile golden blocks (tests/data/quant) and blocks of random bytes.
// The end-to-end bound against the unrounded x is in test_linear_blocks.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "backend/kernel_table.h"
#include "backend_test_helpers.h"
#include "kquant_test_helpers.h"
#include "gguf/quant_blocks.h"
#include "read_bytes.h"

using namespace inferscope;

using inferscope::testing_files::readBytes;

namespace {

// x with hostile blocks: one all zero, one with a single large value, one of tiny values.
std::vector<float> hostileX(int64_t m, int64_t k, uint32_t seed) {
    auto x = testing_backend::randomVector(size_t(m * k), seed);
    for (int64_t i = 0; i < m; ++i) {
        float* row = x.data() + i * k;
        if (k >= 512)
            for (int c = 256; c < 512; ++c) row[c] = 0.0f;
        row[3] = -1000.0f * float(i + 1);
        if (k >= 1024)
            for (int c = 768; c < 1024; ++c) row[c] *= 1e-30f;
    }
    return x;
}

TEST(QuantizeX256, RoundsEachBlockToHalfAStepWithExactSums) {
    constexpr int64_t m = 3, k = 1024;
    const auto x = hostileX(m, k, 7);
    std::vector<XBlock256> xq(size_t(m * k / 256));
    activeBackendKernels().quantizeX256(x.data(), m, k, xq.data());
    for (int64_t i = 0; i < m; ++i)
        for (int64_t b = 0; b < k / 256; ++b) {
            SCOPED_TRACE("row " + std::to_string(i) + " block " + std::to_string(b));
            const float* xb = x.data() + i * k + b * 256;
            const XBlock256& q = xq[size_t(i * (k / 256) + b)];
            for (int j = 0; j < 8; ++j) {
                float amax = 0;
                for (int c = 32 * j; c < 32 * j + 32; ++c) amax = std::max(amax, std::fabs(xb[c]));
                EXPECT_EQ(q.d[j], amax / 127.0f) << "scale " << j;
                int maxQ = 0;
                for (int c = 32 * j; c < 32 * j + 32; ++c) {
                    // Half a step, plus the rounding of x·127/max|x| in f32.
                    ASSERT_LE(std::fabs(double(xb[c]) - double(q.d[j]) * q.q[c]), double(q.d[j]) * (0.5 + 0x1p-14)) << "element " << c;
                    maxQ = std::max(maxQ, std::abs(int(q.q[c])));
                    // With the residue byte: half a 254th of a step (and f32's rounding of the residue).
                    const double x16 = double(q.d[j]) * (q.q[c] + q.r[c] / double(kXResidueSteps));
                    ASSERT_LE(std::fabs(double(xb[c]) - x16), double(q.d[j]) * (0.5 / kXResidueSteps + 0x1p-14)) << "element " << c;
                    ASSERT_LE(std::abs(int(q.r[c])), 127) << "element " << c;
                }
                EXPECT_EQ(maxQ, amax > 0 ? 127 : 0) << "scale " << j;  // the largest |x| is ±127 steps
            }
            for (int s = 0; s < 16; ++s) {
                int sum = 0;
                for (int c = 0; c < 16; ++c) sum += q.q[16 * s + c];
                EXPECT_EQ(q.sum16[s], sum) << "sum16 " << s;
                int rsum = 0;
                for (int c = 0; c < 16; ++c) rsum += q.r[16 * s + c];
                EXPECT_EQ(q.rsum16[s], rsum) << "rsum16 " << s;
            }
            for (int s = 0; s < 8; ++s) {
                int sum = 0;
                for (int c = 0; c < 32; ++c) sum += q.q[32 * s + c];
                EXPECT_EQ(q.sum32[s], sum) << "sum32 " << s;
            }
        }
}

struct KernelCase {
    const char* name;
    GgmlType type;
};

void PrintTo(const KernelCase& c, std::ostream* os) { *os << c.name; }

const KernelCase kCases[] = {{"Q4_K", GgmlType::Q4_K}, {"Q5_K", GgmlType::Q5_K}, {"Q6_K", GgmlType::Q6_K}};

// Blocks of random bytes with finite f16 factors at the type's d (and dmin) offsets.
std::vector<uint8_t> randomBlocks(GgmlType type, size_t nBlocks, uint32_t seed) {
    const auto info = *ggmlTypeInfo(uint32_t(type));
    std::mt19937 rng(seed);
    std::vector<uint8_t> bytes(nBlocks * info.typeSize);
    for (auto& v : bytes) v = uint8_t(rng());
    std::uniform_real_distribution<float> factor(-0.05f, 0.05f);
    std::vector<size_t> halves;
    switch (type) {
        case GgmlType::Q4_K:
        case GgmlType::Q5_K: halves = {0, 2}; break;
        case GgmlType::Q6_K: halves = {208}; break;
        default: break;
    }
    for (size_t b = 0; b < nBlocks; ++b)
        for (size_t off : halves) {
            const uint16_t h = fp32ToFp16(factor(rng));
            std::memcpy(bytes.data() + b * info.typeSize + off, &h, 2);
        }
    return bytes;
}

class KQuantKernel : public ::testing::TestWithParam<KernelCase> {};

}  // namespace

TEST_P(KQuantKernel, MatchesTheExactDotOfTheDecodedWeightsWithTheRoundedX) {
    const auto [name, type] = GetParam();
    if (!activeBackendKernels().kquantKernelFor(uint32_t(type))) GTEST_SKIP() << "no integer kernel for " << name << " in the " << kernelSetName() << " kernel set";
    const auto info = *ggmlTypeInfo(uint32_t(type));
    const auto dense = readBytes(std::string(INFERSCOPE_TEST_DATA_DIR) + "/quant/" + name + "-dense.blocks");
    ASSERT_EQ(dense.size(), 32 * info.typeSize);

    // 37 rows of 4 blocks: rows 0..19 cycle through the golden blocks, the rest are random bytes.
    constexpr int64_t N = 37, K = 1024, nb = K / 256;
    std::vector<uint8_t> blocks;
    for (int64_t n = 0; n < 20; ++n)
        for (int64_t j = 0; j < nb; ++j) {
            const uint8_t* src = dense.data() + size_t((3 * n + j) % 32) * info.typeSize;
            blocks.insert(blocks.end(), src, src + info.typeSize);
        }
    const auto random = randomBlocks(type, size_t((N - 20) * nb), 11);
    blocks.insert(blocks.end(), random.begin(), random.end());
    const size_t rowBytes = size_t(nb) * info.typeSize;
    std::vector<float> w(size_t(N * K));
    for (int64_t n = 0; n < N; ++n) dequantizeRow(type, blocks.data() + size_t(n) * rowBytes, w.data() + n * K, K);

    for (int64_t m = 1; m <= kGemvMaxRows; ++m) {
        SCOPED_TRACE(std::string(name) + " m=" + std::to_string(m));
        const auto x = hostileX(m, K, uint32_t(100 + m));
        std::vector<XBlock256> xq(size_t(m * nb));
        activeBackendKernels().quantizeX256(x.data(), m, K, xq.data());
        std::vector<float> y(size_t(m * N), std::nanf(""));
        const GemvTask task{blocks.data(), WeightFormat::Blocks, N, K, y.data(), uint32_t(type)};
        activeBackendKernels().gemvKQuantRows(task, xq.data(), m, 0, 5);  // in three ranges, as threads take them
        activeBackendKernels().gemvKQuantRows(task, xq.data(), m, 5, 6);
        activeBackendKernels().gemvKQuantRows(task, xq.data(), m, 6, N);
        for (int64_t n = 0; n < N; ++n) {
            const auto mins = testing_kquants::minMagnitudes(type, blocks.data() + size_t(n) * rowBytes, K);
            for (int64_t i = 0; i < m; ++i) {
                double exact = 0, mag = 0;
                for (int64_t c = 0; c < K; ++c) {
                    const XBlock256& xb = xq[size_t(i * nb + c / 256)];
                    // Q6_K reads x's residue byte too (16 bits of x); Q4_K and Q5_K its first byte.
                    const double steps = type == GgmlType::Q6_K ? double(xb.q[c % 256]) + xb.r[c % 256] / double(kXResidueSteps) : xb.q[c % 256];
                    const double xr = double(xb.d[c % 256 / 32]) * steps;
                    exact += double(w[size_t(n * K + c)]) * xr;
                    mag += std::fabs(xr) * (std::fabs(w[size_t(n * K + c)]) + 2 * mins[size_t(c)]);
                }
                // The integer sums are exact; what remains is f32 rounding: of each weight in the
                // decoder (d·sc·q and the min, apart), of d_w·d_x and of each 32 elements' sum, and
                // of the adds of at most 8·nb such terms per accumulator and of the accumulators.
                const double bound = double(8 * nb + 16) * 0x1p-24 * mag + 1e-35;
                ASSERT_LE(std::fabs(double(y[size_t(i * N + n)]) - exact), bound) << "row " << i << " output " << n << ": " << y[size_t(i * N + n)] << " vs " << exact;
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(EveryKernel, KQuantKernel, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<KernelCase>& i) { return std::string(i.param.name); });
