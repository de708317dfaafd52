// attention() on the cache layout against a naive double-precision reference: every head
// dimension path (vectorised for 32/64/80/96/128, generic otherwise), f32 and f16 caches, grouped
// query heads, decode (m = 1) and prefill (m > 1) at a non-zero start position, both threads.
#include <gtest/gtest.h>

#include <omp.h>

#include <cmath>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "backend/kernels.h"
#include "gguf/ggml_types.h"

using namespace inferscope;

namespace {

struct Case {
    int headDim, nHead, nHeadKv;
    int64_t m;
    int32_t position0;
    bool half;
};

}  // namespace

class AttentionVsReference : public ::testing::TestWithParam<Case> {};

TEST_P(AttentionVsReference, Matches) {
    const auto [hd, nHead, nHeadKv, m, p0, half] = GetParam();
    const int32_t nCtx = p0 + int32_t(m) + 3;
    std::mt19937 rng(7);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> q(size_t(m * nHead * hd)), k(size_t(nHeadKv) * nCtx * hd), v(k.size());
    for (auto& x : q) x = dist(rng);
    for (auto& x : k) x = dist(rng);
    for (auto& x : v) x = dist(rng);
    std::vector<uint16_t> k16(k.size()), v16(v.size());
    if (half) {  // the reference sees what the cache holds
        fp32ToFp16Row(k.data(), k16.data(), k.size());
        fp32ToFp16Row(v.data(), v16.data(), v.size());
        dequantizeRow(GgmlType::F16, k16.data(), k.data(), k.size());
        dequantizeRow(GgmlType::F16, v16.data(), v.data(), v.size());
    }
    std::vector<float> out(q.size(), NAN), scratch(attentionScratchFloats(omp_get_max_threads(), nHead, nHeadKv, hd, nCtx));
    attention(q.data(), half ? static_cast<const void*>(k16.data()) : k.data(), half ? static_cast<const void*>(v16.data()) : v.data(),
              half, m, p0, nHead, nHeadKv, hd, nCtx, out.data(), scratch.data());
    const int group = nHead / nHeadKv;
    for (int64_t r = 0; r < m; ++r)
        for (int h = 0; h < nHead; ++h) {
            const int32_t nKeys = p0 + int32_t(r) + 1;
            const float* qh = q.data() + (r * nHead + h) * hd;
            const size_t base = size_t(h / group) * nCtx * hd;
            std::vector<double> s(static_cast<size_t>(nKeys));
            double mx = -1e300, sum = 0;
            for (int32_t j = 0; j < nKeys; ++j) {
                double d = 0;
                for (int i = 0; i < hd; ++i) d += double(qh[i]) * k[base + size_t(j) * hd + i];
                s[size_t(j)] = d / std::sqrt(double(hd));
                mx = std::max(mx, s[size_t(j)]);
            }
            for (auto& x : s) sum += (x = std::exp(x - mx));
            for (int i = 0; i < hd; ++i) {
                double o = 0;
                for (int32_t j = 0; j < nKeys; ++j) o += s[size_t(j)] / sum * v[base + size_t(j) * hd + i];
                ASSERT_NEAR(out[size_t((r * nHead + h) * hd + i)], o, 2e-5) << "row " << r << " head " << h << " dim " << i;
            }
        }
}

INSTANTIATE_TEST_SUITE_P(Paths, AttentionVsReference,
                         ::testing::Values(Case{64, 12, 12, 1, 40, false}, Case{64, 12, 12, 1, 40, true},
                                           Case{64, 32, 4, 1, 300, true}, Case{64, 32, 4, 6, 17, false},
                                           Case{128, 8, 2, 3, 9, true}, Case{32, 4, 4, 5, 0, false},
                                           Case{24, 6, 3, 4, 11, false}, Case{24, 6, 3, 1, 11, true},
                                           Case{8, 8, 4, 7, 2, true}),
                         [](const auto& info) {
                             const Case& c = info.param;
                             return fmt::format("hd{}h{}kv{}m{}p{}{}", c.headDim, c.nHead, c.nHeadKv, c.m, c.position0,
                                                c.half ? "f16" : "f32");
                         });
