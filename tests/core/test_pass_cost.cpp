// PassCost, the one model of a forward pass's bytes and FLOPs (the Timeline's and bench's
// roofline figures): exact figures for TinyLlama-1.1B's shape worked out by hand below, and the
// inputs a loaded model gives it (weights read, multiply-adds, KV bytes) against its shape.
#include <gtest/gtest.h>

#include "engine_test_helpers.h"
#include "model/llama_hparams.h"
#include "model/pass_cost.h"
#include "model_test_helpers.h"
#include "tools/synth_model.h"

namespace inferscope {
namespace {

using namespace testing_model;

// TinyLlama-1.1B: n_embd 2048, 22 layers, 32 query heads and 4 KV heads of 64, FFN 5632, vocab 32000.
LlamaHParams tinyLlama() {
    LlamaHParams hp;
    hp.nEmbd = 2048;
    hp.nLayer = 22;
    hp.nHead = 32;
    hp.nHeadKv = 4;
    hp.headDim = 64;
    hp.nFf = 5632;
    hp.nVocab = 32000;
    return hp;
}

// Multiply-adds of one token, by matrix:
//   per layer  Q 2048×2048 = 4,194,304   K, V 2048×256 = 524,288 each   O 4,194,304
//              gate, up, down 2048×5632 = 11,534,336 each                → 44,040,192
//   22 layers 968,884,224 + LM head 32000×2048 = 65,536,000             → 1,034,420,224
constexpr uint64_t kMacs = 1'034'420'224;
constexpr double kHeadMacs = 65'536'000;
// F32 weights read by a decode pass: 4 bytes per multiply-add, 45 norms of 2048 (two per layer and
// the final one), one embedding row of 2048: 4,137,680,896 + 368,640 + 8,192.
constexpr uint64_t kWeightBytes = 4'138'057'728;
// An F16 cache: K and V × 22 layers × 4 KV heads × 64 × 2 bytes.
constexpr uint64_t kKvBytes = 22'528;
// Attention per (query, key) pair: q·k and p·v, 2 FLOPs per element each, 64 × 32 heads × 22 layers.
constexpr double kAttentionPerKey = 4.0 * 64 * 32 * 22;  // 180,224

TEST(PassCost, DecodeFiguresOfTinyLlamaByHand) {
    const PassCost cost(tinyLlama(), kWeightBytes, kMacs, kKvBytes);
    // Position 0 reads its own K and V; position 127 the 128 positions 0..127 (2,883,584 bytes).
    EXPECT_EQ(cost.decodeWeightBytes(), 4'138'057'728.0);
    EXPECT_EQ(cost.decodeKvBytesRead(0), 22'528.0);
    EXPECT_EQ(cost.decodeKvBytesRead(127), 2'883'584.0);
    EXPECT_EQ(cost.decodeBytes(0), 4'138'080'256.0);
    EXPECT_EQ(cost.decodeBytes(127), 4'140'941'312.0);
    EXPECT_EQ(cost.kvBytesWritten(1), 22'528.0);
    EXPECT_EQ(cost.kvBytesWritten(128), 2'883'584.0);
    // Every matrix, the LM head included, 2 FLOPs a multiply-add: 2,068,840,448; attention at
    // position 127 over 128 keys: 180,224 × 128 = 23,068,672.
    EXPECT_EQ(cost.decodeFlops(127), 2'091'909'120.0);
    EXPECT_EQ(cost.decodeFlops(0), 2'068'840'448.0 + kAttentionPerKey);
}

TEST(PassCost, MeanDecodeBytesOverARun) {
    const PassCost cost(tinyLlama(), kWeightBytes, kMacs, kKvBytes);
    // bench's tg32 after a 1-token prompt: positions 1..32 read 2..33 positions of K and V, 17.5 on
    // average: 17.5 × 22,528 = 394,240 bytes on top of the weights.
    EXPECT_EQ(cost.meanDecodeBytes(1, 32), 4'138'451'968.0);
    double sum = 0;
    for (int p = 1; p <= 32; ++p) sum += cost.decodeBytes(p);
    EXPECT_EQ(cost.meanDecodeBytes(1, 32), sum / 32);
    EXPECT_EQ(cost.meanDecodeBytes(7, 1), cost.decodeBytes(7));
    EXPECT_EQ(cost.meanDecodeBytes(7, 0), 0.0);
}

TEST(PassCost, PrefillFlopsOfTinyLlamaByHand) {
    const PassCost cost(tinyLlama(), kWeightBytes, kMacs, kKvBytes);
    // 128 tokens from position 0: the matrices without the LM head for every token
    // (2 × 968,884,224 × 128 = 248,034,361,344), the LM head once (131,072,000), and attention over
    // the causal triangle, 1 + 2 + ... + 128 = 8,256 pairs (× 180,224 = 1,487,929,344).
    EXPECT_EQ(cost.prefillFlops(128, 0), 249'653'362'688.0);
    // 3 tokens after 5 cached ones attend to 6 + 7 + 8 = 21 keys.
    EXPECT_EQ(cost.prefillFlops(3, 5), 2.0 * (double(kMacs) - kHeadMacs) * 3 + 2.0 * kHeadMacs + 21 * kAttentionPerKey);
    EXPECT_EQ(cost.prefillFlops(3, 5), 5'948'162'048.0);
    // One token is one decode pass.
    EXPECT_EQ(cost.prefillFlops(1, 40), cost.decodeFlops(40));
    EXPECT_EQ(cost.prefillFlops(0, 40), 0.0);
    EXPECT_EQ(PassCost().decodeBytes(100), 0.0);
}

// What a loaded model hands PassCost, against its shape: a random-weight F32 model of the bundled
// stories260K's shape (n_embd 64, 5 layers, 8 query and 4 KV heads of 8, FFN 172, vocab 512).
TEST(PassCost, ModelFiguresOfAStories260kShapeByHand) {
    TempDir dir;
    auto shape = findSynthShape("stories260k");
    ASSERT_TRUE(shape);
    ASSERT_TRUE(writeSynthModel(SynthOptions{*shape, GgmlType::F32, 7, kStories}, dir / "m.gguf"));
    auto engine = loadTestEngine(dir / "m.gguf", TestLoad{.ctx = 64});
    ASSERT_TRUE(engine);
    const LlamaModel& model = engine->model();
    // Per layer Q 64×64 = 4,096, K and V 64×32 = 2,048 each, O 4,096, gate, up, down 64×172 =
    // 11,008 each: 45,312; × 5 = 226,560; + the LM head 512×64 = 32,768.
    EXPECT_EQ(model.matmulMacsPerToken(), 259'328u);
    // F32: 4 bytes per multiply-add (1,037,312), 11 norms of 64 (2,816), one embedding row (256).
    EXPECT_EQ(model.weightBytesPerToken(), 1'040'384u);
    // F32 cache: K and V × 5 layers × 4 KV heads × 8 × 4 bytes.
    EXPECT_EQ(engine->kvStats().bytesPerToken, 1'280u);

    const PassCost cost(model.hparams(), model.weightBytesPerToken(), model.matmulMacsPerToken(),
                        engine->kvStats().bytesPerToken);
    // Position 9: 10 positions of K and V; attention 4 × 8 × 8 × 5 = 1,280 FLOPs per key.
    EXPECT_EQ(cost.decodeBytes(9), 1'040'384.0 + 10 * 1'280.0);
    EXPECT_EQ(cost.decodeFlops(9), 2.0 * 259'328 + 10 * 1'280.0);
    // 4 tokens from position 0: (259,328 - 32,768) × 2 × 4 + 2 × 32,768 + (1+2+3+4) × 1,280.
    EXPECT_EQ(cost.prefillFlops(4, 0), 1'812'480.0 + 65'536.0 + 12'800.0);
}

}  // namespace
}  // namespace inferscope
