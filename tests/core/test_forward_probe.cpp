// LlamaModel::forward with a ForwardProbe (forward_probe.h), on the bundled stories260K and, from
// ../shared, Gemma 2 (sliding-window layers, score and logit soft-caps) and Qwen 2 (biases, NEOX):
// - a probe changes nothing: logits and cache bytes equal those of the same passes without one;
// - a re-run of a cached position writes nothing into the cache and leaves its counters;
// - the kept attention weights are the reference attention (reference_attention.h) of the kept
//   query over the cache's own keys: rows sum to 1, 0 outside a window;
// - the last layer's residual read out by readOut is the pass's logits, bit for bit, and a re-run
//   of a decoded position reproduces them bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "backend/compute_device.h"
#include "gguf/ggml_types.h"
#include "model/forward_probe.h"
#include "model/llama_model.h"
#include "model_test_helpers.h"
#include "reference_attention.h"
#include "shared_data.h"

using namespace inferscope;

namespace {

struct Loaded {
    std::unique_ptr<ComputeDevice> device;
    std::unique_ptr<LlamaModel> model;
};

Loaded loadModel(const std::string& path) {
    Loaded l;
    auto device = ComputeDevice::create(DeviceKind::Cpu, 2);
    EXPECT_TRUE(device);
    auto file = GgufFile::open(path);
    EXPECT_TRUE(file) << file.error().message;
    if (!device || !file) return l;
    l.device = std::move(*device);
    auto model = LlamaModel::load(std::move(*file), *l.device, ComputePrecision::Auto);
    EXPECT_TRUE(model) << model.error().message;
    if (model) l.model = std::move(*model);
    return l;
}

int32_t argmax(std::span<const float> logits) { return int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin()); }

// A 7-token prompt in one batch (the batched path), then greedy decode to `total` positions; the
// logits of every pass, and a probe at each decode pass when `probe` is given.
std::vector<std::vector<float>> run(LlamaModel& model, LlamaContext& ctx, int32_t total, std::vector<int32_t>& tokens,
                                    ForwardProbe* probe) {
    tokens = {1, 20, 31, 42, 53, 64, 75};
    std::vector<std::vector<float>> all;
    auto logits = model.forward(ctx, tokens, 0, CellOrigin::Prompt);
    all.emplace_back(logits.begin(), logits.end());
    while (int32_t(tokens.size()) < total) {
        tokens.push_back(argmax(logits));
        logits = model.forward(ctx, std::span(tokens).last(1), int32_t(tokens.size()) - 1, CellOrigin::Generated, probe);
        all.emplace_back(logits.begin(), logits.end());
    }
    return all;
}

std::vector<uint8_t> cacheBytes(const LlamaModel& model, const LlamaContext& ctx) {
    const auto& hp = model.hparams();
    const KvCache& c = ctx.cache();
    const size_t layerBytes = size_t(hp.nHeadKv) * size_t(c.capacity()) * size_t(hp.headDim) * size_t(c.bytesPerElement());
    std::vector<uint8_t> bytes;
    for (int32_t l = 0; l < hp.nLayer; ++l)
        for (const void* block : {c.layerKeysData(l), c.layerValuesData(l)}) {
            const auto* b = static_cast<const uint8_t*>(block);
            bytes.insert(bytes.end(), b, b + layerBytes);
        }
    return bytes;
}

// One layer's KV head rows [nCtx][headDim] as f32.
std::vector<float> kvHeadRows(const KvCache& c, const void* layerData, int32_t kvHead, int32_t headDim) {
    const size_t n = size_t(c.capacity()) * size_t(headDim), offset = size_t(kvHead) * n;
    std::vector<float> rows(n);
    if (c.type() == KvType::F16)
        dequantizeRow(GgmlType::F16, static_cast<const uint16_t*>(layerData) + offset, rows.data(), n);
    else
        std::memcpy(rows.data(), static_cast<const float*>(layerData) + offset, n * sizeof(float));
    return rows;
}

// The probe's weights against the reference attention of its queries over the cache.
void expectReferenceAttention(const LlamaModel& model, const LlamaContext& ctx, const ForwardProbe& probe) {
    const auto& hp = model.hparams();
    const int32_t P = probe.position, nKeys = P + 1, group = hp.nHead / hp.nHeadKv;
    ASSERT_EQ(probe.attention.size(), size_t(hp.nLayer) * size_t(hp.nHead) * size_t(nKeys));
    for (int32_t l = 0; l < hp.nLayer; ++l) {
        const AttentionOptions options{hp.isSlidingLayer(l) ? hp.slidingWindow : 0, hp.attnSoftCap, hp.attentionScale};
        for (int32_t h = 0; h < hp.nHead; ++h) {
            const auto k = kvHeadRows(ctx.cache(), ctx.cache().layerKeysData(l), h / group, hp.headDim);
            const auto v = kvHeadRows(ctx.cache(), ctx.cache().layerValuesData(l), h / group, hp.headDim);
            const auto ref = testing_reference::referenceAttentionHead(probe.queries.data() + (size_t(l) * hp.nHead + h) * hp.headDim,
                                                                       k.data(), v.data(), P, hp.headDim, options);
            const float* row = probe.attention.data() + (size_t(l) * hp.nHead + h) * nKeys;
            double sum = 0;
            for (int32_t j = 0; j < nKeys; ++j) {
                sum += row[j];
                if (options.window > 0 && P - j >= options.window)
                    ASSERT_EQ(row[j], 0.0f) << "layer " << l << " head " << h << " key " << j << " outside the window";
                else
                    ASSERT_NEAR(row[j], ref.weights[size_t(j)], 1e-5) << "layer " << l << " head " << h << " key " << j;
            }
            ASSERT_NEAR(sum, 1.0, 1e-5) << "layer " << l << " head " << h;
        }
    }
}

struct ProbeCase {
    const char* name;
    std::string path;  // "" : ../shared/models/arch/<name>.gguf
    KvType kv;
};
void PrintTo(const ProbeCase& c, std::ostream* os) { *os << c.name; }

}  // namespace

class ForwardProbeTest : public ::testing::TestWithParam<ProbeCase> {
protected:
    void SetUp() override {
        const ProbeCase& c = GetParam();
        path_ = c.path;
        if (path_.empty()) {
            auto shared = testing_shared::sharedFile(std::string("models/arch/") + c.name + ".gguf");
            if (!shared) GTEST_SKIP() << "golden file ../shared/models/arch/" << c.name << ".gguf not found: skipped";
            path_ = *shared;
        }
        loaded_ = loadModel(path_);
        ASSERT_TRUE(loaded_.model);
    }
    std::unique_ptr<LlamaContext> context() {
        auto ctx = loaded_.model->createContext(64, 16, GetParam().kv);
        EXPECT_TRUE(ctx);
        return ctx ? std::move(*ctx) : nullptr;
    }
    std::string path_;
    Loaded loaded_;
};

// 40 positions: past Gemma 2's window of 32.
constexpr int32_t kTotal = 40;

TEST_P(ForwardProbeTest, AProbeChangesNeitherLogitsNorCache) {
    auto plain = context(), probed = context();
    std::vector<int32_t> tokensPlain, tokensProbed;
    ForwardProbe probe;
    probe.keepAttention = true;
    const auto logitsPlain = run(*loaded_.model, *plain, kTotal, tokensPlain, nullptr);
    const auto logitsProbed = run(*loaded_.model, *probed, kTotal, tokensProbed, &probe);
    EXPECT_EQ(tokensPlain, tokensProbed);
    ASSERT_EQ(logitsPlain.size(), logitsProbed.size());
    for (size_t i = 0; i < logitsPlain.size(); ++i)
        ASSERT_EQ(0, std::memcmp(logitsPlain[i].data(), logitsProbed[i].data(), logitsPlain[i].size() * sizeof(float))) << "pass " << i;
    EXPECT_EQ(cacheBytes(*loaded_.model, *plain), cacheBytes(*loaded_.model, *probed));
    // The probe of the last (live) pass: its attention is the reference's over the cache.
    EXPECT_EQ(probe.position, kTotal - 1);
    expectReferenceAttention(*loaded_.model, *probed, probe);
}

TEST_P(ForwardProbeTest, RerunWritesNothingAndReproducesADecodedPass) {
    LlamaModel& model = *loaded_.model;
    auto ctx = context();
    std::vector<int32_t> tokens;
    const auto logits = run(model, *ctx, kTotal, tokens, nullptr);
    const auto bytesBefore = cacheBytes(model, *ctx);
    const KvCacheStats before = ctx->cache().stats();

    std::vector<float> normed(size_t(model.hparams().nEmbd)), readout(size_t(model.hparams().nVocab));
    for (int32_t position : {0, 3, 6, 7, 20, kTotal - 2}) {
        ForwardProbe probe;
        probe.rerun = true;
        probe.keepAttention = true;
        const auto rerun = model.forward(*ctx, std::span(tokens).subspan(size_t(position), 1), position, CellOrigin::Prompt, &probe);
        ASSERT_EQ(probe.position, position);
        expectReferenceAttention(model, *ctx, probe);
        // The last residual read out is what the re-run returned.
        model.readOut(probe.residualOf(model.hparams().nLayer - 1).data(), 1, normed.data(), readout.data());
        EXPECT_EQ(0, std::memcmp(readout.data(), rerun.data(), readout.size() * sizeof(float))) << "position " << position;
        // Positions 7 .. were decode passes (logits[position - 6]): the re-run is that pass, bit for bit.
        if (position >= 7) {
            const auto& original = logits[size_t(position - 6)];
            EXPECT_EQ(0, std::memcmp(original.data(), rerun.data(), original.size() * sizeof(float))) << "position " << position;
        }
    }
    EXPECT_EQ(cacheBytes(model, *ctx), bytesBefore);
    const KvCacheStats after = ctx->cache().stats();
    EXPECT_EQ(after.nUsed, before.nUsed);
    EXPECT_EQ(after.kvComputed, before.kvComputed);
    EXPECT_EQ(after.attentionScores, before.attentionScores);
    EXPECT_EQ(after.attentionScoresSliding, before.attentionScoresSliding);
    EXPECT_EQ(after.originRuns, before.originRuns);
}

INSTANTIATE_TEST_SUITE_P(Models, ForwardProbeTest,
                         ::testing::Values(ProbeCase{"stories260K", testing_model::kStories, KvType::F32},
                                           ProbeCase{"stories260K_f16", testing_model::kStories, KvType::F16},
                                           ProbeCase{"gemma2-tiny", "", KvType::F32}, ProbeCase{"qwen2-tiny", "", KvType::F16}),
                         [](const auto& info) {
                             std::string name = info.param.name;
                             std::replace(name.begin(), name.end(), '-', '_');
                             return name;
                         });
