// oneDNN matmuls against the reference, and the hand-written kernels against hand-computed values.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "backend/compute_device.h"
#include "backend/gemv.h"
#include "backend_test_helpers.h"
#include "backend/kernels.h"

using namespace inferscope;
using namespace inferscope::testing_backend;

namespace {

std::span<const uint8_t> asBytes(const std::vector<float>& v) {
    return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(float)};
}

struct Shape {
    int64_t n, k, m;
};

}  // namespace

class LinearVsReference : public ::testing::TestWithParam<Shape> {};

// Decode (m = 1) and prefill (m > 1) shapes, including odd sizes that do not fill a vector.
INSTANTIATE_TEST_SUITE_P(Shapes, LinearVsReference,
                         ::testing::Values(Shape{64, 64, 1}, Shape{172, 64, 1}, Shape{64, 172, 7}, Shape{512, 64, 1},
                                           Shape{256, 256, 128}, Shape{33, 17, 5}, Shape{1000, 300, 31}),
                         [](const auto& info) {
                             return fmt::format("n{}k{}m{}", info.param.n, info.param.k, info.param.m);
                         });

TEST_P(LinearVsReference, F32MatchesReference) {
    const auto [n, k, m] = GetParam();
    auto dev = cpu();
    const auto w = randomVector(size_t(n * k), 1);
    const auto x = randomVector(size_t(m * k), 2);
    auto lin = dev->makeLinear(GgmlType::F32, asBytes(w), n, k, ComputeType::F32);
    ASSERT_TRUE(lin) << lin.error().message;
    EXPECT_TRUE(lin->mapped());  // F32 weights are used in place
    std::vector<float> y(size_t(m * n)), ref(size_t(m * n));
    dev->linear(*lin, x.data(), m, y.data());
    referenceLinear(w.data(), n, k, x.data(), m, ref.data());
    EXPECT_LT(maxRelError(y, ref), 1e-4f);
}

TEST_P(LinearVsReference, Bf16WithinBf16Rounding) {
    const auto [n, k, m] = GetParam();
    auto dev = cpu();
    const auto w = randomVector(size_t(n * k), 3);
    const auto x = randomVector(size_t(m * k), 4);
    auto lin = dev->makeLinear(GgmlType::F32, asBytes(w), n, k, ComputeType::BF16);
    ASSERT_TRUE(lin) << lin.error().message;
    EXPECT_FALSE(lin->mapped());
    EXPECT_EQ(lin->bytes(), uint64_t(n * k * 2));
    std::vector<float> y(size_t(m * n)), ref(size_t(m * n));
    dev->linear(*lin, x.data(), m, y.data());
    // The oracle: the same product on bf16-rounded weights, accumulated in double; activations
    // stay f32, except in a prefill on a CPU with AMX (ComputeDevice::bf16Activations), which
    // rounds them to bf16 too. Only the summation order differs.
    std::vector<float> wr(w.size());
    for (size_t i = 0; i < w.size(); ++i) wr[i] = bf16ToFp32(fp32ToBf16(w[i]));
    std::vector<float> xr = x;
    if (m > kGemvMaxRows && dev->bf16Activations())
        for (float& v : xr) v = bf16ToFp32(fp32ToBf16(v));
    referenceLinear(wr.data(), n, k, xr.data(), m, ref.data());
    EXPECT_LT(maxRelError(y, ref), 1e-4f);
}

TEST(Linear, F16AndQ8_0WeightsAreDequantizedExactly) {
    auto dev = cpu();
    const int64_t n = 8, k = 64, m = 3;
    const auto wf = randomVector(size_t(n * k), 5, 0.5f);
    // F16 copy of the weights, and the f32 values it represents.
    std::vector<uint16_t> w16(wf.size());
    std::vector<float> w16f(wf.size());
    for (size_t i = 0; i < wf.size(); ++i) w16f[i] = fp16ToFp32(w16[i] = fp32ToFp16(wf[i]));
    // Q8_0 copy: per 32 values one f16 scale d = max|w| / 127 and round(w / d).
    std::vector<uint8_t> q8(size_t(n * k / 32 * 34));
    std::vector<float> q8f(wf.size());
    for (size_t b = 0; b < wf.size() / 32; ++b) {
        float amax = 0;
        for (size_t j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(wf[b * 32 + j]));
        const uint16_t d16 = fp32ToFp16(amax / 127.0f);
        const float d = fp16ToFp32(d16);
        std::memcpy(&q8[b * 34], &d16, 2);
        for (size_t j = 0; j < 32; ++j) {
            const int8_t q = int8_t(std::lround(wf[b * 32 + j] / d));
            q8[b * 34 + 2 + j] = uint8_t(q);
            q8f[b * 32 + j] = d * float(q);
        }
    }
    const auto x = randomVector(size_t(m * k), 6);
    for (auto [type, bytes, values] :
         {std::tuple{GgmlType::F16, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(w16.data()), w16.size() * 2), &w16f},
          std::tuple{GgmlType::Q8_0, std::span<const uint8_t>(q8), &q8f}}) {
        auto lin = dev->makeLinear(type, bytes, n, k, ComputeType::F32);
        ASSERT_TRUE(lin) << lin.error().message;
        std::vector<float> y(size_t(m * n)), ref(size_t(m * n));
        dev->linear(*lin, x.data(), m, y.data());
        referenceLinear(values->data(), n, k, x.data(), m, ref.data());
        EXPECT_LT(maxRelError(y, ref), 1e-5f) << ggmlTypeName(uint32_t(type));
    }
}

TEST(Linear, RejectsUnsupportedTypeAndWrongSize) {
    auto dev = cpu();
    std::vector<uint8_t> data(66);
    auto iq2 = dev->makeLinear(GgmlType::IQ2_XXS, data, 1, 256, ComputeType::F32);
    ASSERT_FALSE(iq2);
    EXPECT_EQ(iq2.error().message, "unsupported weight type IQ2_XXS");
    std::vector<float> w(10);
    auto wrong = dev->makeLinear(GgmlType::F32, asBytes(w), 4, 4, ComputeType::F32);
    ASSERT_FALSE(wrong);
    EXPECT_EQ(wrong.error().message, "weight size does not match its shape");
}

TEST(Device, ForcedGpuIsAClearErrorWhenAbsent) {
    auto dev = ComputeDevice::create(DeviceKind::Gpu, 1);
    if (dev) GTEST_SKIP() << "this machine has a GPU oneDNN can use";
    EXPECT_EQ(dev.error().kind, ErrorKind::Device);
    EXPECT_NE(dev.error().message.find("no GPU found by oneDNN"), std::string::npos);
    auto autoDev = ComputeDevice::create(DeviceKind::Auto, 1);
    ASSERT_TRUE(autoDev);
    EXPECT_FALSE((*autoDev)->isGpu());
    EXPECT_EQ((*autoDev)->notice(), "no GPU found by oneDNN; computing on the CPU");
    EXPECT_FALSE(parseDeviceKind("tpu"));
}

// The GPU path (oneDNN's OpenCL runtime: Intel GPUs with an OpenCL driver) wherever oneDNN finds
// a GPU: F32, BF16 and F16 weights (copied to the device), decode and prefill shapes, against the
// reference; Int8 refused. Skipped, with the reason, on machines without one (this project's CI).
TEST(Device, GpuLinearMatchesTheReference) {
    auto dev = ComputeDevice::create(DeviceKind::Gpu, 2);
    if (!dev) GTEST_SKIP() << "no GPU that oneDNN can use on this machine (" << dev.error().message << ")";
    ASSERT_TRUE((*dev)->isGpu());
    for (const auto [n, k, m] : {Shape{64, 64, 1}, Shape{172, 64, 7}, Shape{256, 256, 128}}) {
        SCOPED_TRACE(fmt::format("n{}k{}m{}", n, k, m));
        const auto w = randomVector(size_t(n * k), 11);
        const auto x = randomVector(size_t(m * k), 12);
        std::vector<float> y(size_t(m * n)), ref(size_t(m * n));

        auto f32 = (*dev)->makeLinear(GgmlType::F32, asBytes(w), n, k, ComputeType::F32);
        ASSERT_TRUE(f32) << f32.error().message;
        EXPECT_FALSE(f32->mapped());  // on the device, not read from the mapping
        (*dev)->linear(*f32, x.data(), m, y.data());
        referenceLinear(w.data(), n, k, x.data(), m, ref.data());
        EXPECT_LT(maxRelError(y, ref), 1e-4f);

        // BF16 on the GPU rounds the activations to bf16 too: the oracle rounds both.
        auto bf16 = (*dev)->makeLinear(GgmlType::F32, asBytes(w), n, k, ComputeType::BF16);
        ASSERT_TRUE(bf16) << bf16.error().message;
        (*dev)->linear(*bf16, x.data(), m, y.data());
        std::vector<float> wr(w.size()), xr(x.size());
        for (size_t i = 0; i < w.size(); ++i) wr[i] = bf16ToFp32(fp32ToBf16(w[i]));
        for (size_t i = 0; i < x.size(); ++i) xr[i] = bf16ToFp32(fp32ToBf16(x[i]));
        referenceLinear(wr.data(), n, k, xr.data(), m, ref.data());
        EXPECT_LT(maxRelError(y, ref), 1e-3f);

        // F16 weights are widened to f32 before the copy (the CPU reads them in place instead).
        std::vector<uint16_t> w16(w.size());
        std::vector<float> w16f(w.size());
        for (size_t i = 0; i < w.size(); ++i) w16f[i] = fp16ToFp32(w16[i] = fp32ToFp16(w[i]));
        auto f16 = (*dev)->makeLinear(GgmlType::F16, {reinterpret_cast<const uint8_t*>(w16.data()), w16.size() * 2}, n, k,
                                      ComputeType::F32);
        ASSERT_TRUE(f16) << f16.error().message;
        EXPECT_EQ(f16->format(), WeightFormat::F32);
        (*dev)->linear(*f16, x.data(), m, y.data());
        referenceLinear(w16f.data(), n, k, x.data(), m, ref.data());
        EXPECT_LT(maxRelError(y, ref), 1e-4f);
    }
    std::vector<float> w(64 * 64);
    auto int8 = (*dev)->makeLinear(GgmlType::F32, asBytes(w), 64, 64, ComputeType::Int8);
    ASSERT_FALSE(int8);
    EXPECT_EQ(int8.error().message, "int8 compute runs on the CPU only; use --device cpu");
}

TEST(Kernels, RmsNormHandComputed) {
    // x = {1, 2, 3, 4}: mean square 7.5, so each x is divided by sqrt(7.5 + eps).
    const float x[4] = {1, 2, 3, 4}, w[4] = {1, 1, 2, 0.5f};
    float out[4];
    rmsNorm(x, w, 1, 4, 0.0f, out);
    const float s = 1.0f / std::sqrt(7.5f);
    EXPECT_FLOAT_EQ(out[0], 1 * s);
    EXPECT_FLOAT_EQ(out[1], 2 * s);
    EXPECT_FLOAT_EQ(out[2], 3 * s * 2);
    EXPECT_FLOAT_EQ(out[3], 4 * s * 0.5f);
}

TEST(Kernels, RopeRotatesAdjacentPairsByPositionAndFrequency) {
    // head dim 4, nRot 4, base 100: pair 0 turns by pos rad, pair 1 by pos / 10 rad.
    const int nCtx = 4, nRot = 4;
    std::vector<float> table(size_t(nCtx) * nRot);
    makeRopeTable(table.data(), nCtx, nRot, 100.0, 1.0, nullptr);
    float x[4] = {1, 0, 0, 1};
    ropeInPlace(x, 1, 1, 4, nRot, 3, table.data());  // position 3
    EXPECT_NEAR(x[0], std::cos(3.0), 1e-6);
    EXPECT_NEAR(x[1], std::sin(3.0), 1e-6);
    EXPECT_NEAR(x[2], -std::sin(0.3), 1e-6);
    EXPECT_NEAR(x[3], std::cos(0.3), 1e-6);
    // Elements past nRot are left alone.
    float y[4] = {1, 2, 3, 4};
    std::vector<float> t2(size_t(nCtx) * 2);
    makeRopeTable(t2.data(), nCtx, 2, 100.0, 1.0, nullptr);
    ropeInPlace(y, 1, 1, 4, 2, 0, t2.data());  // position 0: identity on the first pair too
    EXPECT_FLOAT_EQ(y[0], 1);
    EXPECT_FLOAT_EQ(y[1], 2);
    EXPECT_FLOAT_EQ(y[2], 3);
    EXPECT_FLOAT_EQ(y[3], 4);
}

TEST(Kernels, SwiGlu) {
    const float g[3] = {0, 1, -2}, u[3] = {5, 2, 3};
    float out[3];
    swiGlu(g, u, 3, out);
    EXPECT_FLOAT_EQ(out[0], 0);
    EXPECT_FLOAT_EQ(out[1], 2.0f / (1 + std::exp(-1.0f)));
    EXPECT_FLOAT_EQ(out[2], 3 * -2.0f / (1 + std::exp(2.0f)));
}

TEST(Kernels, AttentionIsCausalAndGroupsQueryHeads) {
    // 2 query heads sharing 1 KV head, head dim 2, 3 positions.
    const int nCtx = 3, hd = 2;
    const float k[nCtx * hd] = {1, 0, 0, 1, 1, 1};
    const float v[nCtx * hd] = {10, 0, 0, 20, 5, 5};
    // Row 0 (position 0) sees only key 0; row 1 (position 1) sees keys 0 and 1.
    const float q[2 * 2 * hd] = {1, 0, 0, 1, /* row 1: */ 0, 0, 2, 0};
    float out[2 * 2 * hd];
    std::vector<float> scratch(64 * nCtx);
    attention(q, k, v, 2, 0, 2, 1, hd, nCtx, out, scratch.data());
    // position 0: a single key, so the output is v0 for both heads
    EXPECT_FLOAT_EQ(out[0], 10);
    EXPECT_FLOAT_EQ(out[1], 0);
    EXPECT_FLOAT_EQ(out[2], 10);
    EXPECT_FLOAT_EQ(out[3], 0);
    // position 1, head 0: q = 0, equal weights -> mean of v0, v1
    EXPECT_FLOAT_EQ(out[4], 5);
    EXPECT_FLOAT_EQ(out[5], 10);
    // position 1, head 1: scores (2·1, 0)/sqrt(2) -> p0 = 1 / (1 + e^-sqrt2)
    const float p0 = 1.0f / (1.0f + std::exp(-std::sqrt(2.0f)));
    EXPECT_NEAR(out[6], p0 * 10, 1e-5);
    EXPECT_NEAR(out[7], (1 - p0) * 20, 1e-5);
}
