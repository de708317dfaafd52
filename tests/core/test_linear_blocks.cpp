// ComputeType::Blocks: matrices kept in their quantized blocks (every type llama-quantize writes),
// decode GEMV (m <= 4) and prefill (256-row f32 tiles through oneDNN) against referenceLinear on
// the exactly decoded weights. The weights are the dense golden blocks (tests/data/quant: hostile
// scales, zero sub-blocks), tiled into a 300 × 1280 matrix: more rows than one 256-row tile, and
// rows longer than the GEMV's 1024-element decode chunk (a remainder of 256).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "backend/compute_device.h"
#include "backend/kernel_table.h"
#include "backend/kernels.h"
#include "backend_test_helpers.h"
#include "gguf/quant_blocks.h"
#include "kquant_test_helpers.h"
#include "read_bytes.h"

using namespace inferscope;
using namespace inferscope::testing_backend;

using inferscope::testing_files::readBytes;

namespace {

const char* const kTypes[] = {"Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ4_NL", "IQ4_XS"};

GgmlType typeNamed(const std::string& name) {
    for (uint32_t id = 0; id < 64; ++id)
        if (auto info = ggmlTypeInfo(id); info && info->name == name) return GgmlType(id);
    return GgmlType::F32;
}

class LinearBlocks : public ::testing::TestWithParam<const char*> {};

}  // namespace

TEST_P(LinearBlocks, DecodeAndPrefillMatchTheReferenceOnTheDecodedWeights) {
    const std::string name = GetParam();
    const GgmlType type = typeNamed(name);
    ASSERT_TRUE(isQuantizedBlockType(type));
    const auto dense = readBytes(std::string(INFERSCOPE_TEST_DATA_DIR) + "/quant/" + name + "-dense.blocks");
    const auto info = *ggmlTypeInfo(uint32_t(type));
    const size_t denseRowBytes = 256 / info.blockSize * info.typeSize;
    ASSERT_EQ(dense.size(), 32 * denseRowBytes);

    constexpr int64_t N = 300, K = 1280;
    std::vector<uint8_t> blocks;  // row n = dense rows n, n+1, ..., n+4 (mod 32) side by side
    for (int64_t n = 0; n < N; ++n)
        for (int64_t j = 0; j < K / 256; ++j) {
            const uint8_t* src = dense.data() + size_t((n + j) % 32) * denseRowBytes;
            blocks.insert(blocks.end(), src, src + denseRowBytes);
        }
    std::vector<float> w(size_t(N * K));
    for (int64_t n = 0; n < N; ++n) dequantizeRow(type, blocks.data() + size_t(n) * (K / 256) * denseRowBytes, w.data() + n * K, K);

    auto dev = cpu();
    auto lin = dev->makeLinear(type, blocks, N, K, ComputeType::Blocks);
    ASSERT_TRUE(lin) << lin.error().message;
    EXPECT_EQ(lin->format(), WeightFormat::Blocks);
    EXPECT_TRUE(lin->mapped());  // no copy: the blocks are used where they are
    EXPECT_EQ(lin->bytes(), blocks.size());

    for (int64_t m : {1, 3, 4, 5, 40, 131}) {
        SCOPED_TRACE(name + " m=" + std::to_string(m));
        const auto x = randomVector(size_t(m * K), uint32_t(m));
        std::vector<float> y(size_t(m * N)), ref(size_t(m * N));
        dev->linear(*lin, x.data(), m, y.data());
        referenceLinear(w.data(), N, K, x.data(), m, ref.data());
        // An f32 dot product of K terms in any order is within K·2^-24·Σ|w·x| of the exact one.
        // Decode (m <= kGemvMaxRows) on a K-quant first rounds x to 8 bits per 32 elements
        // (gemv_kquants): each term moves by at most |w|·step/2 (step = max|x| / 127 of its block),
        // and the f32 rounding then also scales with the mins the kernel rounds apart. The
        // 32-element formats' decode rounds x to 16 bits per block of 32, |Δx| <= amax/65534: inside
        // the f32 bound (test_gemv_q8blocks checks their own). Prefill computes on the exact weights,
        // except on a CPU with AMX (bf16Activations): there the decoded tile and x are both rounded
        // to bf16 (to nearest, |Δ| <= 2^-9 relative each), so a term moves by at most
        // |w·x|·(2^-8 + 2^-18) before the f32 accumulation.
        const bool roundsX = m <= kGemvMaxRows && activeBackendKernels().kquantKernelFor(uint32_t(type));
        const bool bf16 = m > kGemvMaxRows && dev->bf16Activations();
        for (int64_t i = 0; i < m; ++i) {
            const auto steps = testing_kquants::stepsOf(x.data() + i * K, K);
            for (int64_t n = 0; n < N; ++n) {
                const auto mins = testing_kquants::minMagnitudes(type, blocks.data() + size_t(n) * (K / 256) * denseRowBytes, K);
                double mag = 0, rounding = 0;
                for (int64_t c = 0; c < K; ++c) {
                    const double wc = std::fabs(w[size_t(n * K + c)]), xc = std::fabs(x[size_t(i * K + c)]);
                    if (bf16) {
                        mag += wc * xc;
                        rounding += wc * xc * (0x1p-8 + 0x1p-18);
                        continue;
                    }
                    if (!roundsX) {
                        mag += wc * xc;
                        continue;
                    }
                    const double step = steps[size_t(c)];
                    mag += (wc + 2 * mins[size_t(c)]) * (xc + step);
                    rounding += wc * step * (0.5 + 0x1p-14);
                }
                ASSERT_LE(std::fabs(double(y[size_t(i * N + n)]) - ref[size_t(i * N + n)]), rounding + double(K) * 0x1p-24 * mag + 1e-30)
                    << "row " << i << " output " << n;
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(EveryType, LinearBlocks, ::testing::ValuesIn(kTypes),
                         [](const ::testing::TestParamInfo<const char*>& i) { return std::string(i.param); });

TEST(LinearBlocksFallback, PlainTypesAskedForBlocksComputeInF32) {
    auto dev = cpu();
    std::vector<float> w(4 * 32, 0.5f);
    auto lin = dev->makeLinear(GgmlType::F32, std::span(reinterpret_cast<const uint8_t*>(w.data()), w.size() * 4), 4, 32,
                               ComputeType::Blocks);
    ASSERT_TRUE(lin) << lin.error().message;
    EXPECT_EQ(lin->compute(), ComputeType::F32);
    EXPECT_EQ(lin->format(), WeightFormat::F32);
}
