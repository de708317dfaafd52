// Every path ComputeDevice::linear takes, against referenceLinear: the hand-written GEMV (decode,
// m <= kGemvMaxRows) and the oneDNN prefill paths (fixed-M chunks of 128/64/32 plus a runtime-M
// remainder; BF16/F16 weights widened block by block; Int8), for each weight format, and the fused
// linearMany; the GEMV on two threads above its threshold against one thread.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "backend/compute_device.h"
#include "backend_test_helpers.h"
#include "backend/gemv.h"
#include "backend/kernels.h"
#include "gguf/quant_encode.h"

using namespace inferscope;
using namespace inferscope::testing_backend;

namespace {

// How the weights are given to makeLinear and computed.
enum class Path { F32, F16InPlace, Bf16InPlace, F32ToBf16, Int8FromF32, Int8FromBf16 };
const char* pathName(Path p) {
    switch (p) {
        case Path::F32: return "F32";
        case Path::F16InPlace: return "F16InPlace";
        case Path::Bf16InPlace: return "Bf16InPlace";
        case Path::F32ToBf16: return "F32ToBf16";
        case Path::Int8FromF32: return "Int8FromF32";
        case Path::Int8FromBf16: return "Int8FromBf16";
    }
    return "?";
}

// The weights in the file's type, and the f32 values the compute should see.
struct Weights {
    GgmlType type;
    std::vector<uint8_t> bytes;
    std::vector<float> values;  // what the oracle multiplies (after the storage's rounding)
    ComputeType compute;
};

Weights makeWeights(Path path, const std::vector<float>& w) {
    Weights out;
    const size_t n = w.size();
    auto as16 = [&](GgmlType type) {
        std::vector<uint16_t> h(n);
        if (type == GgmlType::F16) fp32ToFp16Row(w.data(), h.data(), n);
        else fp32ToBf16Row(w.data(), h.data(), n);
        out.bytes.assign(reinterpret_cast<uint8_t*>(h.data()), reinterpret_cast<uint8_t*>(h.data()) + n * 2);
        out.values.resize(n);
        dequantizeRow(type, h.data(), out.values.data(), n);
        out.type = type;
    };
    auto asF32 = [&] {
        out.bytes.assign(reinterpret_cast<const uint8_t*>(w.data()), reinterpret_cast<const uint8_t*>(w.data()) + n * 4);
        out.values = w;
        out.type = GgmlType::F32;
    };
    switch (path) {
        case Path::F32: asF32(); out.compute = ComputeType::F32; break;
        case Path::F16InPlace: as16(GgmlType::F16); out.compute = ComputeType::F32; break;
        case Path::Bf16InPlace: as16(GgmlType::BF16); out.compute = ComputeType::BF16; break;
        case Path::F32ToBf16:
            asF32();
            for (auto& v : out.values) v = bf16ToFp32(fp32ToBf16(v));
            out.compute = ComputeType::BF16;
            break;
        case Path::Int8FromF32: asF32(); out.compute = ComputeType::Int8; break;
        case Path::Int8FromBf16: as16(GgmlType::BF16); out.compute = ComputeType::Int8; break;
    }
    return out;
}

struct Case {
    Path path;
    int64_t n, k, m;
};

}  // namespace

class LinearPaths : public ::testing::TestWithParam<Case> {};

TEST_P(LinearPaths, MatchesReference) {
    const auto [path, n, k, m] = GetParam();
    auto dev = cpu();
    const auto w = randomVector(size_t(n * k), 11);
    const auto x = randomVector(size_t(m * k), 12);
    const Weights wt = makeWeights(path, w);
    auto lin = dev->makeLinear(wt.type, wt.bytes, n, k, wt.compute);
    ASSERT_TRUE(lin) << lin.error().message;
    const bool int8 = wt.compute == ComputeType::Int8;
    EXPECT_EQ(lin->mapped(), path == Path::F32 || path == Path::F16InPlace || path == Path::Bf16InPlace);
    std::vector<float> y(size_t(m * n), NAN), ref(size_t(m * n));
    dev->linear(*lin, x.data(), m, y.data());
    // Prefill on BF16 weights where the CPU multiplies bf16: x rounded to bf16 first (the products
    // are then exact in f32; only the summation order differs).
    std::vector<float> xRef = x;
    const bool bf16x = wt.compute == ComputeType::BF16 && m > kGemvMaxRows && dev->bf16Activations();
    if (bf16x)
        for (float& v : xRef) v = bf16ToFp32(fp32ToBf16(v));
    referenceLinear(wt.values.data(), n, k, xRef.data(), m, ref.data());
    if (bf16x) {  // and far from what f32 activations give: the rounding happened
        std::vector<float> f32x(ref.size());
        referenceLinear(wt.values.data(), n, k, x.data(), m, f32x.data());
        EXPECT_GT(maxRelError(y, f32x), 1e-3f);
    }
    if (!int8) {
        EXPECT_LT(maxRelError(y, ref), 1e-4f);
        return;
    }
    // Int8: per-channel weight and per-token activation quantization, each off by at most half a
    // step (max|·| / 2L, L = 127, or 63 on a CPU without VNNI) per element: the error relative to
    // the output's scale |x|·|w| stays at the percent level (twice that with 63 levels). Compared
    // as a relative RMS error over the whole output.
    double err = 0, norm = 0;
    for (size_t i = 0; i < y.size(); ++i) {
        err += double(y[i] - ref[i]) * double(y[i] - ref[i]);
        norm += double(ref[i]) * double(ref[i]);
    }
    EXPECT_LT(std::sqrt(err / norm), 0.02 * 127.0 / dev->int8Levels()) << "relative RMS error, " << dev->int8Levels() << " levels";
}

// Decode (m <= 4: GEMV), prefill through each chunk (32, 64, 128) and the runtime-M remainder, odd
// sizes that leave vector tails, and more than one 256-row widening block.
static std::vector<Case> allCases() {
    std::vector<Case> cases;
    for (Path p : {Path::F32, Path::F16InPlace, Path::Bf16InPlace, Path::F32ToBf16, Path::Int8FromF32, Path::Int8FromBf16})
        for (auto [n, k, m] : {std::tuple{64, 64, 1}, std::tuple{172, 64, 1}, std::tuple{64, 172, 3}, std::tuple{600, 96, 4},
                               std::tuple{33, 17, 2}, std::tuple{64, 172, 7}, std::tuple{300, 128, 32}, std::tuple{520, 64, 64},
                               std::tuple{96, 256, 128}, std::tuple{256, 96, 231}})
            cases.push_back({p, n, k, m});
    return cases;
}

INSTANTIATE_TEST_SUITE_P(All, LinearPaths, ::testing::ValuesIn(allCases()), [](const auto& info) {
    return fmt::format("{}_n{}k{}m{}", pathName(info.param.path), info.param.n, info.param.k, info.param.m);
});

TEST(LinearMany, FusedProjectionsEqualSeparateCalls) {
    auto dev = cpu();
    const int64_t k = 128;
    const auto wq = randomVector(size_t(256 * k), 21), wk = randomVector(size_t(64 * k), 22), wv = randomVector(size_t(64 * k), 23);
    auto bytes = [](const std::vector<float>& v) { return std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(v.data()), v.size() * 4); };
    for (int64_t m : {1, 2, 4, 9, 64}) {
        SCOPED_TRACE(m);
        const auto x = randomVector(size_t(m * k), 24);
        auto q = dev->makeLinear(GgmlType::F32, bytes(wq), 256, k, ComputeType::F32);
        auto kk = dev->makeLinear(GgmlType::F32, bytes(wk), 64, k, ComputeType::F32);
        auto v = dev->makeLinear(GgmlType::F32, bytes(wv), 64, k, ComputeType::F32);
        ASSERT_TRUE(q && kk && v);
        std::vector<float> yq(size_t(m * 256)), yk(size_t(m * 64)), yv(size_t(m * 64));
        const Linear* ws[] = {&*q, &*kk, &*v};
        float* ys[] = {yq.data(), yk.data(), yv.data()};
        dev->linearMany(ws, x.data(), m, ys);
        for (auto [w, n, y] : {std::tuple{&wq, 256, &yq}, std::tuple{&wk, 64, &yk}, std::tuple{&wv, 64, &yv}}) {
            std::vector<float> ref(size_t(m * n));
            referenceLinear(w->data(), n, k, x.data(), m, ref.data());
            EXPECT_LT(maxRelError(*y, ref), 1e-4f);
        }
    }
}

TEST(Gemv, LargeJobSplitsAcrossThreadsAndTasksExactly) {
    // Big enough to run on both threads; three tasks of uneven row counts so the split by rows
    // falls inside a task.
    const int64_t k = 1000;
    std::vector<std::vector<float>> ws{randomVector(size_t(333 * k), 31), randomVector(size_t(7 * k), 32), randomVector(size_t(501 * k), 33)};
    const int64_t ns[] = {333, 7, 501};
    const auto x = randomVector(size_t(k), 34);
    std::vector<std::vector<float>> ys(3);
    std::vector<GemvTask> tasks;
    for (int i = 0; i < 3; ++i) {
        ys[size_t(i)].assign(size_t(ns[i]), NAN);
        tasks.push_back({ws[size_t(i)].data(), WeightFormat::F32, ns[i], k, ys[size_t(i)].data()});
    }
    gemv(tasks, x.data(), 1, 2);
    for (int i = 0; i < 3; ++i) {
        std::vector<float> ref(size_t(ns[i]));
        referenceLinear(ws[size_t(i)].data(), ns[i], k, x.data(), 1, ref.data());
        EXPECT_LT(maxRelError(ys[size_t(i)], ref), 1e-4f) << i;
    }
}

// Above kGemvParallelBytes a GEMV runs on both threads, each taking chunks of rows from a shared
// counter; every row is still computed by the same code, so the result must equal a one-thread
// run bit for bit, for every weight format (and, run per kernel set, for every set's kernels).
class GemvThreads : public ::testing::TestWithParam<GgmlType> {};

TEST_P(GemvThreads, AboveTheParallelThresholdEqualsOneThreadBitForBit) {
    const GgmlType type = GetParam();
    const auto info = *ggmlTypeInfo(uint32_t(type));
    constexpr int64_t k = 2048, m = 2;
    const int64_t rowBytes = k / info.blockSize * info.typeSize;
    const int64_t n = kGemvParallelBytes / rowBytes + 37;  // above the threshold, not a whole chunk
    ASSERT_GT(n * rowBytes, kGemvParallelBytes);
    const auto w = randomVector(size_t(n * k), 41, 0.05f);
    std::vector<uint8_t> bytes(size_t(n * rowBytes));
    WeightFormat format = WeightFormat::Blocks;
    switch (type) {
        case GgmlType::F32: std::memcpy(bytes.data(), w.data(), bytes.size()); format = WeightFormat::F32; break;
        case GgmlType::F16: fp32ToFp16Row(w.data(), reinterpret_cast<uint16_t*>(bytes.data()), w.size()); format = WeightFormat::F16; break;
        case GgmlType::BF16: fp32ToBf16Row(w.data(), reinterpret_cast<uint16_t*>(bytes.data()), w.size()); format = WeightFormat::BF16; break;
        default: quantizeBlocks(type, w.data(), bytes.data(), w.size()); break;
    }
    const auto x = randomVector(size_t(m * k), 42);
    std::vector<float> one(size_t(m * n), NAN), two(size_t(m * n), NAN);
    GemvTask task{bytes.data(), format, n, k, one.data(), uint32_t(type)};
    gemv({&task, 1}, x.data(), m, 1);
    task.y = two.data();
    gemv({&task, 1}, x.data(), m, 2);
    for (int64_t i = 0; i < m * n; ++i) ASSERT_EQ(std::bit_cast<uint32_t>(two[size_t(i)]), std::bit_cast<uint32_t>(one[size_t(i)])) << i;
    EXPECT_FALSE(std::isnan(one.back()));
}

INSTANTIATE_TEST_SUITE_P(EveryFormat, GemvThreads,
                         ::testing::Values(GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_0,
                                           GgmlType::Q5_1, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K),
                         [](const auto& info) { return std::string(ggmlTypeInfo(uint32_t(info.param))->name); });
