// attention() on the cache layout against a naive double-precision reference: every head
// dimension path (vectorised for 32/64/80/96/128, generic otherwise), f32, f16, q8_0 and q4_0
// caches (the reference reads the values the cache holds: the half or block values decoded by
// ggml's rule), grouped query heads, decode (m = 1) and prefill (m > 1) at a non-zero start
// position, both threads. The tolerance is the f32 kernel's: the block kernels do the same float
// arithmetic with each block's scale applied once to its 32-term partial sum.
#include <gtest/gtest.h>

#include <omp.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "backend/kernels.h"
#include "gguf/ggml_types.h"
#include "gguf/quant_blocks.h"
#include "gguf/quant_encode.h"

using namespace inferscope;

namespace {

struct Case {
    int headDim, nHead, nHeadKv;
    int64_t m;
    int32_t position0;
    KvType kv;
};

// What a cache of `kv` stores for the rows in `x` (each row headDim long), and `x` replaced by the
// values it holds.
std::vector<uint8_t> storeAs(KvType kv, std::vector<float>& x, int headDim) {
    const size_t rows = x.size() / size_t(headDim), rowBytes = kvRowBytes(kv, headDim);
    std::vector<uint8_t> bytes(rows * rowBytes);
    if (kv == KvType::F32) {
        std::memcpy(bytes.data(), x.data(), bytes.size());
    } else if (kv == KvType::F16) {
        auto* h = reinterpret_cast<uint16_t*>(bytes.data());
        fp32ToFp16Row(x.data(), h, x.size());
        dequantizeRow(GgmlType::F16, h, x.data(), x.size());
    } else {
        const GgmlType g = kv == KvType::Q8_0 ? GgmlType::Q8_0 : GgmlType::Q4_0;
        for (size_t r = 0; r < rows; ++r) {
            quantizeBlocks(g, x.data() + r * size_t(headDim), bytes.data() + r * rowBytes, size_t(headDim));
            dequantizeBlocks(g, bytes.data() + r * rowBytes, x.data() + r * size_t(headDim), size_t(headDim) / 32);
        }
    }
    return bytes;
}

const char* kvName(KvType kv) {
    switch (kv) {
    case KvType::F32: return "f32";
    case KvType::F16: return "f16";
    case KvType::Q8_0: return "q8_0";
    case KvType::Q4_0: return "q4_0";
    }
    return "?";
}

}  // namespace

class AttentionVsReference : public ::testing::TestWithParam<Case> {};

TEST_P(AttentionVsReference, Matches) {
    const auto [hd, nHead, nHeadKv, m, p0, kv] = GetParam();
    const int32_t nCtx = p0 + int32_t(m) + 3;
    std::mt19937 rng(7);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> q(size_t(m * nHead * hd)), k(size_t(nHeadKv) * nCtx * hd), v(k.size());
    for (auto& x : q) x = dist(rng);
    for (auto& x : k) x = dist(rng);
    for (auto& x : v) x = dist(rng);
    // the reference sees what the cache holds
    const std::vector<uint8_t> kCache = storeAs(kv, k, hd), vCache = storeAs(kv, v, hd);
    std::vector<float> out(q.size(), NAN), scratch(attentionScratchFloats(omp_get_max_threads(), nHead, nHeadKv, hd, nCtx));
    attention(q.data(), kCache.data(), vCache.data(), kv, m, p0, nHead, nHeadKv, hd, nCtx, out.data(), scratch.data());
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
                         ::testing::Values(Case{64, 12, 12, 1, 40, KvType::F32}, Case{64, 12, 12, 1, 40, KvType::F16},
                                           Case{64, 32, 4, 1, 300, KvType::F16}, Case{64, 32, 4, 6, 17, KvType::F32},
                                           Case{128, 8, 2, 3, 9, KvType::F16}, Case{32, 4, 4, 5, 0, KvType::F32},
                                           Case{24, 6, 3, 4, 11, KvType::F32}, Case{24, 6, 3, 1, 11, KvType::F16},
                                           Case{8, 8, 4, 7, 2, KvType::F16},
                                           Case{64, 12, 12, 1, 40, KvType::Q8_0}, Case{64, 32, 4, 1, 300, KvType::Q8_0},
                                           Case{64, 32, 4, 6, 17, KvType::Q8_0}, Case{128, 8, 2, 3, 9, KvType::Q8_0},
                                           Case{32, 4, 4, 5, 0, KvType::Q8_0}, Case{96, 6, 3, 1, 11, KvType::Q8_0},
                                           Case{64, 12, 12, 1, 40, KvType::Q4_0}, Case{64, 32, 4, 1, 300, KvType::Q4_0},
                                           Case{64, 32, 4, 6, 17, KvType::Q4_0}, Case{128, 8, 2, 3, 9, KvType::Q4_0},
                                           Case{32, 4, 4, 5, 0, KvType::Q4_0}, Case{96, 6, 3, 1, 11, KvType::Q4_0}),
                         [](const auto& info) {
                             const Case& c = info.param;
                             return fmt::format("hd{}h{}kv{}m{}p{}{}", c.headDim, c.nHead, c.nHeadKv, c.m, c.position0,
                                                kvName(c.kv));
                         });
