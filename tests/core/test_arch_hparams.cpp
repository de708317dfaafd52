// Hyperparameters and options of each supported architecture, from the tiny models' metadata
// (../shared/models/arch, skipped without it) and from hand-built headers: head_dim from
// key_length, RoPE mode and bases per layer type, sliding-window patterns, soft-caps; unknown
// architectures refused by name.
#include <gtest/gtest.h>

#include "gguf/gguf_file.h"
#include "kv_cache/kv_cache.h"
#include "model/arch_options.h"
#include "model/llama_hparams.h"
#include "tools/gguf_writer.h"
#include "shared_data.h"

using namespace inferscope;

namespace {

LlamaHParams readShared(const std::string& path) {
    auto file = GgufFile::open(path);
    EXPECT_TRUE(file) << file.error().message;
    auto hp = readLlamaHParams(*file);
    EXPECT_TRUE(hp) << hp.error().message;
    return hp ? *hp : LlamaHParams{};
}

}  // namespace

TEST(ArchOptions, UnknownArchitectureIsRefusedByName) {
    auto o = archOptionsFor("mamba");
    ASSERT_FALSE(o);
    EXPECT_EQ(o.error().kind, ErrorKind::Unsupported);
    EXPECT_EQ(o.error().message, "unsupported architecture 'mamba' (Inferscope runs llama, qwen2, qwen3, gemma2, gemma3 and phi3)");
}

TEST(ArchOptions, SlidingLayerPatterns) {
    const auto gemma2 = *archOptionsFor("gemma2");
    const auto gemma3 = *archOptionsFor("gemma3");
    const auto phi3 = *archOptionsFor("phi3");
    const auto llama = *archOptionsFor("llama");
    std::string g2, g3, p3, l;
    for (int il = 0; il < 13; ++il) {
        g2 += gemma2.isSlidingLayer(il) ? 'L' : 'G';
        g3 += gemma3.isSlidingLayer(il) ? 'L' : 'G';
        p3 += phi3.isSlidingLayer(il) ? 'L' : 'G';
        l += llama.isSlidingLayer(il) ? 'L' : 'G';
    }
    EXPECT_EQ(g2, "LGLGLGLGLGLGL");  // even layers local
    EXPECT_EQ(g3, "LLLLLGLLLLLGL");  // il % 6 < 5 local: 5:1
    EXPECT_EQ(p3, "LLLLLLLLLLLLL");
    EXPECT_EQ(l, "GGGGGGGGGGGGG");
}

TEST(ArchOptions, FeaturesPerArchitecture) {
    const auto qwen2 = *archOptionsFor("qwen2"), qwen3 = *archOptionsFor("qwen3"), gemma2 = *archOptionsFor("gemma2"),
               gemma3 = *archOptionsFor("gemma3"), phi3 = *archOptionsFor("phi3"), llama = *archOptionsFor("llama");
    EXPECT_EQ(llama.rope, RopeMode::Normal);
    for (const auto& o : {qwen2, qwen3, gemma2, gemma3, phi3}) EXPECT_EQ(o.rope, RopeMode::Neox);
    EXPECT_TRUE(qwen2.qkvBias && !qwen3.qkvBias);
    EXPECT_TRUE(qwen3.qkNorm && gemma3.qkNorm && !gemma2.qkNorm);
    EXPECT_TRUE(gemma2.embedScale && gemma2.postNorms && gemma2.softCapKeys && !gemma3.softCapKeys);
    EXPECT_EQ(gemma3.ffnActivation, FfnActivation::GeluTanh);
    EXPECT_EQ(phi3.ffnActivation, FfnActivation::Silu);
    EXPECT_TRUE(phi3.fusedQkv && phi3.fusedGateUp && !qwen2.fusedQkv);
}

TEST(ArchHParams, Llama3) {
    INFERSCOPE_SHARED_FILE_OR_SKIP(path, "models/arch/llama3-tiny.gguf");
    const auto hp = readShared(path);
    EXPECT_EQ(hp.ropeFreqBase, 500000.0);
    EXPECT_EQ(hp.headDim, 16);
    EXPECT_EQ(hp.nVocab, 128256);
    EXPECT_EQ(hp.slidingWindow, 0);
}

TEST(ArchHParams, Qwen3HeadDimFromKeyLength) {
    INFERSCOPE_SHARED_FILE_OR_SKIP(path, "models/arch/qwen3-tiny.gguf");
    const auto hp = readShared(path);
    EXPECT_EQ(hp.nEmbd, 64);
    EXPECT_EQ(hp.headDim, 64);  // not 64 / 4
    EXPECT_EQ(hp.qDim(), 256);
    EXPECT_EQ(hp.kvDim(), 128);
    EXPECT_EQ(hp.nRot, 64);
    EXPECT_EQ(hp.ropeFreqBase, 1e6);
}

TEST(ArchHParams, Gemma2SoftCapsAndWindow) {
    INFERSCOPE_SHARED_FILE_OR_SKIP(path, "models/arch/gemma2-tiny.gguf");
    const auto hp = readShared(path);
    EXPECT_EQ(hp.attnSoftCap, 50.0f);
    EXPECT_EQ(hp.finalSoftCap, 30.0f);
    EXPECT_EQ(hp.slidingWindow, 32);
    EXPECT_TRUE(hp.isSlidingLayer(0));
    EXPECT_FALSE(hp.isSlidingLayer(25));
    EXPECT_EQ(hp.ropeFreqBase, 10000.0);  // no key: the default
    EXPECT_EQ(hp.headDim, 64);
}

TEST(ArchHParams, Gemma3RopePerLayerType) {
    INFERSCOPE_SHARED_FILE_OR_SKIP(path, "models/arch/gemma3-tiny.gguf");
    const auto hp = readShared(path);
    EXPECT_EQ(hp.ropeFreqBase, 1e6);
    EXPECT_EQ(hp.ropeFreqScale, 0.125);
    EXPECT_EQ(hp.ropeFreqBaseSliding, 10000.0);
    EXPECT_EQ(hp.ropeFreqScaleSliding, 1.0);
    EXPECT_EQ(hp.slidingWindow, 32);
    EXPECT_EQ(hp.attnSoftCap, 0.0f);
    EXPECT_EQ(hp.finalSoftCap, 0.0f);
    EXPECT_TRUE(hp.isSlidingLayer(4));
    EXPECT_FALSE(hp.isSlidingLayer(5));
}

TEST(ArchHParams, Phi3WindowOnEveryLayer) {
    INFERSCOPE_SHARED_FILE_OR_SKIP(path, "models/arch/phi3-tiny.gguf");
    const auto hp = readShared(path);
    EXPECT_EQ(hp.slidingWindow, 2047);
    EXPECT_TRUE(hp.isSlidingLayer(0) && hp.isSlidingLayer(1) && hp.isSlidingLayer(2));
    EXPECT_EQ(hp.headDim, 32);
}

// A header with value_length ≠ key_length: refused (one head_dim serves the cache), naming the key.
TEST(ArchHParams, DifferentValueLengthIsRefused) {
    GgufWriter w;
    w.add("general.architecture", GgufMetaValue::string("qwen3"));
    for (auto [key, value] : {std::pair{"context_length", 128u}, {"embedding_length", 64u}, {"block_count", 1u},
                              {"feed_forward_length", 128u}, {"attention.head_count", 4u}, {"attention.key_length", 32u},
                              {"attention.value_length", 16u}})
        w.add(std::string("qwen3.") + key, GgufMetaValue::u32(value));
    w.add("qwen3.attention.layer_norm_rms_epsilon", GgufMetaValue::f32(1e-6f));
    auto image = w.toBytes();
    ASSERT_TRUE(image) << image.error().message;
    auto file = GgufFile::parse(MappedFile::fromBytes(std::move(*image)));
    ASSERT_TRUE(file) << file.error().message;
    auto hp = readLlamaHParams(*file);
    ASSERT_FALSE(hp);
    EXPECT_EQ(hp.error().message, "qwen3.attention.value_length = 16 differs from the key length 32");
}

// The cache of a sliding-window model: every layer allocates every position (the bytes reported
// are the bytes held), and the work counters say how many pairs the window lets each layer score.
TEST(ArchKvCache, SlidingLayersCountTheirWindowAndAllocateEverything) {
    const KvCacheLayout layout{8, 2, 64, 100, KvType::F16, 32, 7};
    auto cache = KvCache::create(layout);
    ASSERT_TRUE(cache) << cache.error().message;
    std::vector<float> k(size_t(71) * 2 * 64, 0.5f);
    for (int32_t l = 0; l < 8; ++l) cache->store(l, 0, 71, k.data(), k.data());
    cache->commit(0, 71, CellOrigin::Prompt);
    const KvCacheStats s = cache->stats();
    EXPECT_EQ(s.bytesReserved, 2ull * 8 * 2 * 64 * 2 * 100);  // K and V, all layers, all 100 positions
    EXPECT_EQ(s.bytesPerToken, 2ull * 8 * 2 * 64 * 2);
    EXPECT_EQ(s.layout.nSlidingLayers, 7);
    EXPECT_EQ(s.attentionScores, 71ull * 72 / 2);               // Σ (p + 1)
    EXPECT_EQ(s.attentionScoresSliding, 32ull * 33 / 2 + 39 * 32);  // Σ min(p + 1, 32)
}

namespace {

// A gemma header of `layers` layers: embedding 64, 4 heads, head_dim (key_length) 32 ≠ 64 / 4.
Result<LlamaHParams> gemmaHeader(const std::string& arch, uint32_t layers) {
    GgufWriter w;
    w.add("general.architecture", GgufMetaValue::string(arch));
    for (auto [key, value] : {std::pair{"context_length", 128u}, {"embedding_length", 64u}, {"block_count", layers},
                              {"feed_forward_length", 128u}, {"attention.head_count", 4u}, {"attention.head_count_kv", 2u},
                              {"attention.key_length", 32u}, {"attention.value_length", 32u}})
        w.add(arch + "." + key, GgufMetaValue::u32(value));
    w.add(arch + ".attention.layer_norm_rms_epsilon", GgufMetaValue::f32(1e-6f));
    w.addTensor("token_embd.weight", {64, 4}, GgmlType::F32, std::vector<uint8_t>(64 * 4 * 4, 0));
    auto image = w.toBytes();
    if (!image) return std::unexpected(image.error());
    auto file = GgufFile::parse(MappedFile::fromBytes(std::move(*image)));
    if (!file) return std::unexpected(file.error());
    return readLlamaHParams(*file);
}

}  // namespace

// Gemma 2/3 27B scale queries by 1/√(n_embd / n_head), every other size by 1/√head_dim (0 here).
TEST(ArchHParams, Gemma27BAttentionScale) {
    for (auto [arch, layers, scale] : {std::tuple{"gemma2", 46u, 0.25f}, {"gemma2", 26u, 0.0f}, {"gemma3", 62u, 0.25f},
                                       {"gemma3", 34u, 0.0f}, {"llama", 46u, 0.0f}}) {
        auto hp = gemmaHeader(arch, layers);
        ASSERT_TRUE(hp) << hp.error().message;
        EXPECT_EQ(hp->attentionScale, scale) << arch << " " << layers;
        EXPECT_EQ(hp->headDim, 32);
    }
    // gemma2's defaults when the file gives neither soft-cap nor window: 50, 30 and 4096 (llama.cpp's)
    auto g2 = gemmaHeader("gemma2", 26);
    EXPECT_EQ(g2->attnSoftCap, 50.0f);
    EXPECT_EQ(g2->finalSoftCap, 30.0f);
    EXPECT_EQ(g2->slidingWindow, 4096);
    // gemma3 without a window key attends globally
    EXPECT_EQ(gemmaHeader("gemma3", 26)->slidingWindow, 0);
}
