// LlamaModel::decodeBatch (core/model/llama_model.h): one decode step of several sequences, each on
// its own context, the matrix multiplies of all rows together.
// - Batched is alone, bit for bit: 8 prompts of different lengths prefilled into their own
//   contexts, then greedy decode steps batched (B = 1, 2, 5, 8: groups of 4, and of 2 for K-quant
//   matrices, crossed) and each alone with forward(): the same token at every step, the same logits
//   (memcmp), the same KV cache bytes. On stories260K (F32 file; F16 and BF16 files; BF16 and Int8
//   compute; f16 KV), every architecture fixture (../shared/models/arch: llama3, qwen2, qwen3,
//   gemma2, gemma3, phi3) and stories260K-wide in every quantized format (../shared/models/quant,
//   with q8_0 and q4_0 KV caches too).
// - KV isolation: a sequence's logits do not change when the other slots hold other histories at
//   other positions, or with the batch in another order; a slot that finishes and takes a new
//   prompt, or whose cache is truncated, leaves the others' logits as they are alone. (On
//   stories260K, the architecture fixtures and a K-quant file with a q8_0 cache.)
// Run once per kernel set (the K-quant kernels' exact row count differs between them).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "backend/compute_device.h"
#include "backend/gemv.h"
#include "common/kernel_set.h"
#include "model/llama_model.h"
#include "kv_test_helpers.h"
#include "model_test_helpers.h"
#include "shared_data.h"

using namespace inferscope;
using namespace inferscope::testing_model;

namespace {

constexpr int32_t kCtx = 64;
constexpr int kSteps = 8;
const int32_t kPromptLengths[] = {5, 1, 12, 3, 20, 7, 2, 9};  // 8 prompts of different lengths
constexpr int kPrompts = int(std::size(kPromptLengths));

struct Case {
    std::string name;
    std::string file;                          // under ../shared/models, or the bundled stories260K
    ComputePrecision precision = ComputePrecision::Auto;
    KvType kv = KvType::F32;
    std::optional<GgmlType> convertTo = {};    // matrices rewritten to F16 / BF16 first
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::vector<Case> allCases() {
    std::vector<Case> cases = {
        {"stories260K", "", ComputePrecision::Auto},
        {"stories260K_bf16_compute", "", ComputePrecision::BF16},
        {"stories260K_int8_compute", "", ComputePrecision::Int8},
        {"stories260K_f16_kv", "", ComputePrecision::Auto, KvType::F16},
        {"stories260K_f16_file", "", ComputePrecision::Auto, KvType::F32, GgmlType::F16},
        {"stories260K_bf16_file", "", ComputePrecision::Auto, KvType::F32, GgmlType::BF16},
    };
    for (const char* arch : {"llama3", "qwen2", "qwen3", "gemma2", "gemma3", "phi3"})
        cases.push_back({arch, std::string("arch/") + arch + "-tiny.gguf"});
    for (const char* q : {"Q4_K_M", "Q5_K_M", "Q6_K", "Q4_K-pure", "Q5_K-pure", "Q2_K", "Q3_K_M", "Q8_0", "Q4_0", "Q4_1",
                          "Q5_0", "Q5_1", "IQ4_NL", "IQ4_XS"})
        cases.push_back({std::string("wide_") + q, std::string("quant/stories260K-wide-") + q + ".gguf"});
    cases.push_back({"wide_q8_0_kv", "quant/stories260K-wide.gguf", ComputePrecision::Auto, KvType::Q8_0});
    cases.push_back({"wide_q4_0_kv", "quant/stories260K-wide-Q4_K_M.gguf", ComputePrecision::Auto, KvType::Q4_0});
    for (auto& c : cases) std::replace(c.name.begin(), c.name.end(), '-', '_');
    return cases;
}

// Isolation on fewer cases (exactness is the first suite's): each architecture, stories260K, and a
// K-quant file (groups of 2 rows) with a q8_0 KV cache.
std::vector<Case> isolationCases() {
    std::vector<Case> cases = {{"stories260K", ""}, {"wide_Q4_K_M_q8_0_kv", "quant/stories260K-wide-Q4_K_M.gguf", ComputePrecision::Auto, KvType::Q8_0}};
    for (const char* arch : {"llama3", "qwen2", "qwen3", "gemma2", "gemma3", "phi3"})
        cases.push_back({arch, std::string("arch/") + arch + "-tiny.gguf"});
    return cases;
}

// What one sequence computed: logits[0] after its prefill, logits[t + 1] after decoding tokens[t].
struct Trace {
    std::vector<int32_t> tokens;
    std::vector<std::vector<float>> logits;
};

int32_t argmax(std::span<const float> l) { return int32_t(std::max_element(l.begin(), l.end()) - l.begin()); }

class DecodeBatch : public ::testing::TestWithParam<Case> {
protected:
    void SetUp() override {
        const Case& c = GetParam();
        std::string path = kStories;
        if (!c.file.empty()) {
            const auto shared = testing_shared::sharedFile("models/" + c.file);
            if (!shared) GTEST_SKIP() << "../shared/models/" << c.file << " not found: skipped";
            path = *shared;
        }
        if (c.convertTo) {
            path = (dir_ / "converted.gguf").string();
            writeConverted(kStories, path, *c.convertTo);
        }
        auto device = ComputeDevice::create(DeviceKind::Cpu, 2);
        ASSERT_TRUE(device) << device.error().message;
        device_ = std::move(*device);
        auto file = GgufFile::open(path);
        ASSERT_TRUE(file) << file.error().message;
        auto model = LlamaModel::load(std::move(*file), *device_, c.precision);
        ASSERT_TRUE(model) << model.error().message;
        model_ = std::move(*model);
        std::mt19937 rng(17);
        for (int32_t len : kPromptLengths) {
            std::vector<int32_t> p(static_cast<size_t>(len));
            for (auto& t : p) t = int32_t(rng() % uint32_t(model_->hparams().nVocab));
            prompts_.push_back(std::move(p));
        }
    }

    std::unique_ptr<LlamaContext> context() {
        auto ctx = model_->createContext(kCtx, 32, GetParam().kv);
        EXPECT_TRUE(ctx) << ctx.error().message;
        return ctx ? std::move(*ctx) : nullptr;
    }

    // The prompt prefilled with forward() (one batch), its logits as logits[0].
    Trace prefill(LlamaContext& ctx, int prompt) {
        auto l = model_->forward(ctx, prompts_[size_t(prompt)], 0, CellOrigin::Prompt);
        return Trace{{}, {{l.begin(), l.end()}}};
    }

    // Greedy decoding of kSteps tokens alone, one forward() per token.
    Trace alone(LlamaContext& ctx, int prompt) {
        Trace t = prefill(ctx, prompt);
        const int32_t len = int32_t(prompts_[size_t(prompt)].size());
        for (int s = 0; s < kSteps; ++s) {
            t.tokens.push_back(argmax(t.logits.back()));
            auto l = model_->forward(ctx, std::span(t.tokens).last(1), len + s, CellOrigin::Generated);
            t.logits.emplace_back(l.begin(), l.end());
        }
        return t;
    }

    // The same for prompts[i] in contexts[i], all in one decodeBatch per step (in `order`).
    std::vector<Trace> batched(std::span<LlamaContext* const> contexts, std::span<const int> prompts, std::span<const size_t> order) {
        std::vector<Trace> traces;
        for (size_t i = 0; i < contexts.size(); ++i) traces.push_back(prefill(*contexts[i], prompts[i]));
        std::vector<DecodeSequence> batch(contexts.size());
        std::vector<std::span<const float>> logits(contexts.size());
        for (int s = 0; s < kSteps; ++s) {
            for (size_t j = 0; j < order.size(); ++j) {
                const size_t i = order[j];
                traces[i].tokens.push_back(argmax(traces[i].logits.back()));
                batch[j] = {contexts[i], traces[i].tokens.back(), int32_t(prompts_[size_t(prompts[i])].size()) + s};
            }
            auto ok = model_->decodeBatch(batch, logits);
            EXPECT_TRUE(ok) << ok.error().message;
            for (size_t j = 0; j < order.size(); ++j) traces[order[j]].logits.emplace_back(logits[j].begin(), logits[j].end());
        }
        return traces;
    }

    // Every prompt's greedy trace alone, and the contexts that hold its cache.
    void runAlone() {
        for (int p = 0; p < kPrompts; ++p) {
            aloneContexts_.push_back(context());
            alone_.push_back(alone(*aloneContexts_.back(), p));
        }
    }

    TempDir dir_;
    std::unique_ptr<ComputeDevice> device_;
    std::unique_ptr<LlamaModel> model_;
    std::vector<std::vector<int32_t>> prompts_;
    std::vector<std::unique_ptr<LlamaContext>> aloneContexts_;
    std::vector<Trace> alone_;
};

class DecodeBatchIsolation : public DecodeBatch {};

// Logits equal bit for bit (memcmp), else the first difference and the largest.
::testing::AssertionResult sameBits(const std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size()) return ::testing::AssertionFailure() << "sizes " << a.size() << " and " << b.size();
    if (std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0) return ::testing::AssertionSuccess();
    size_t first = 0, worst = 0;
    while (std::memcmp(&a[first], &b[first], sizeof(float)) == 0) ++first;
    for (size_t i = 0; i < a.size(); ++i)
        if (std::fabs(a[i] - b[i]) > std::fabs(a[worst] - b[worst])) worst = i;
    return ::testing::AssertionFailure() << "logit " << first << ": " << a[first] << " vs " << b[first] << "; largest |Δ| "
                                         << std::fabs(a[worst] - b[worst]) << " at " << worst;
}

void expectSameTrace(const Trace& got, const Trace& want) {
    ASSERT_EQ(got.tokens, want.tokens);
    ASSERT_EQ(got.logits.size(), want.logits.size());
    for (size_t t = 0; t < got.logits.size(); ++t) EXPECT_TRUE(sameBits(got.logits[t], want.logits[t])) << "step " << t;
}


std::vector<size_t> inOrder(size_t n) {
    std::vector<size_t> order(n);
    for (size_t i = 0; i < n; ++i) order[i] = i;
    return order;
}

}  // namespace

TEST_P(DecodeBatch, EverySequenceIsItsOneTokenForwardBitForBit) {
    runAlone();
    for (int b : {1, 2, 5, 8}) {
        SCOPED_TRACE("B = " + std::to_string(b));
        std::vector<std::unique_ptr<LlamaContext>> owned;
        std::vector<LlamaContext*> contexts;
        std::vector<int> prompts;
        for (int i = 0; i < b; ++i) {
            owned.push_back(context());
            contexts.push_back(owned.back().get());
            prompts.push_back(i);
        }
        const auto traces = batched(contexts, prompts, inOrder(size_t(b)));
        for (int i = 0; i < b; ++i) {
            SCOPED_TRACE("sequence " + std::to_string(i) + ", prompt of " + std::to_string(prompts_[size_t(i)].size()));
            expectSameTrace(traces[size_t(i)], alone_[size_t(i)]);
            expectSameCacheBytes(contexts[size_t(i)]->cache(), aloneContexts_[size_t(i)]->cache());
        }
    }
}

TEST_P(DecodeBatchIsolation, ASequenceDoesNotSeeTheOtherSlotsHistoriesOrTheBatchOrder) {
    runAlone();
    // Sequence 0 (prompt 2) beside four others, then beside four different ones at other positions,
    // then with the batch reversed (its row last, in the second group): its trace is its alone one.
    const std::vector<std::vector<int>> neighbours = {{2, 0, 1, 3, 4}, {2, 7, 6, 5, 4}, {2, 4, 5, 6, 7}};
    const std::vector<std::vector<size_t>> orders = {inOrder(5), inOrder(5), {4, 3, 2, 1, 0}};
    for (size_t run = 0; run < neighbours.size(); ++run) {
        SCOPED_TRACE("run " + std::to_string(run));
        std::vector<std::unique_ptr<LlamaContext>> owned;
        std::vector<LlamaContext*> contexts;
        for (size_t i = 0; i < 5; ++i) contexts.push_back(owned.emplace_back(context()).get());
        const auto traces = batched(contexts, neighbours[run], orders[run]);
        for (size_t i = 0; i < 5; ++i) expectSameTrace(traces[i], alone_[size_t(neighbours[run][i])]);
    }
}

TEST_P(DecodeBatchIsolation, FinishingOrTruncatingOneSlotLeavesTheOthers) {
    runAlone();
    // Slots teacher-forced along the alone traces: a slot at step s feeds alone[prompt].tokens[s]
    // and must get alone[prompt].logits[s + 1].
    struct Slot {
        std::unique_ptr<LlamaContext> ctx;
        int prompt;
        int step = 0;
    };
    std::vector<Slot> slots;
    for (int p : {0, 1, 2}) {
        slots.push_back({context(), p});
        prefill(*slots.back().ctx, p);
    }
    auto step = [&](std::vector<size_t> active) {
        std::vector<DecodeSequence> batch;
        for (size_t i : active) {
            const Slot& s = slots[i];
            batch.push_back({s.ctx.get(), alone_[size_t(s.prompt)].tokens[size_t(s.step)],
                             int32_t(prompts_[size_t(s.prompt)].size()) + s.step});
        }
        std::vector<std::span<const float>> logits(batch.size());
        ASSERT_TRUE(model_->decodeBatch(batch, logits));
        for (size_t j = 0; j < active.size(); ++j) {
            Slot& s = slots[active[j]];
            const std::vector<float> got(logits[j].begin(), logits[j].end());
            EXPECT_TRUE(sameBits(got, alone_[size_t(s.prompt)].logits[size_t(s.step) + 1])) << "slot " << active[j] << " step " << s.step;
            ++s.step;
        }
    };
    for (int i = 0; i < 3; ++i) step({0, 1, 2});
    // Slot 1 finishes and leaves the batch; slot 2 is truncated back to its prompt and first token.
    step({0, 2});
    slots[2].ctx->cache().truncate(int32_t(prompts_[2].size()) + 1);
    slots[2].step = 1;
    step({0, 2});
    // Slot 1 takes a new request (prompt 5) into its cleared cache and rejoins.
    slots[1].ctx->cache().clear();
    slots[1].prompt = 5;
    slots[1].step = 0;
    EXPECT_TRUE(sameBits(prefill(*slots[1].ctx, 5).logits[0], alone_[5].logits[0]));
    for (int i = 0; i < 3; ++i) step({2, 1, 0});
    EXPECT_EQ(slots[0].step, 8);
    EXPECT_EQ(slots[1].step, 3);
    EXPECT_EQ(slots[2].step, 5);
    expectSameCacheBytes(slots[0].ctx->cache(), aloneContexts_[0]->cache());
}

// The group sizes the batch takes: 8 rows for F32/BF16/F16 (and Int8, exact in oneDNN), 4 for the
// block formats, 2 for K-quant matrices where an integer kernel runs them (Q4_K's 4 in the avx512
// set; a Q4_K_M file's Q6_K matrices keep the whole model's at 2).
TEST(DecodeBatchGroups, KQuantMatricesGoTwoRowsAtATimeBlocksFourPlainEight) {
    auto device = ComputeDevice::create(DeviceKind::Cpu, 2);
    ASSERT_TRUE(device);
    auto exactRows = [&](const std::string& path, ComputePrecision precision) {
        auto file = GgufFile::open(path);
        if (!file) {
            ADD_FAILURE() << file.error().message;
            return 0;
        }
        auto model = LlamaModel::load(std::move(*file), **device, precision);
        if (!model) {
            ADD_FAILURE() << model.error().message;
            return 0;
        }
        return (*model)->exactDecodeRows();
    };
    EXPECT_EQ(exactRows(kStories, ComputePrecision::Auto), 8);
    EXPECT_EQ(exactRows(kStories, ComputePrecision::Int8), 8);
    INFERSCOPE_SHARED_FILE_OR_SKIP(kquant, "models/quant/stories260K-wide-Q4_K_M.gguf");
    EXPECT_EQ(exactRows(kquant, ComputePrecision::Auto), activeKernelSet() == KernelSet::Portable ? 4 : 2);
    auto taskRows = [](GgmlType type) { return gemvExactRows(GemvTask{nullptr, WeightFormat::Blocks, 0, 256, nullptr, uint32_t(type)}); };
    EXPECT_EQ(taskRows(GgmlType::Q4_K), activeKernelSet() == KernelSet::Avx2 ? 2 : 4);
    EXPECT_EQ(taskRows(GgmlType::Q6_K), activeKernelSet() == KernelSet::Portable ? 4 : 2);
    EXPECT_EQ(taskRows(GgmlType::Q5_K), activeKernelSet() == KernelSet::Portable ? 4 : 2);
    INFERSCOPE_SHARED_FILE_OR_SKIP(q8, "models/quant/stories260K-wide-Q8_0.gguf");
    EXPECT_EQ(exactRows(q8, ComputePrecision::Auto), 4);
}

INSTANTIATE_TEST_SUITE_P(Models, DecodeBatch, ::testing::ValuesIn(allCases()),
                         [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });
INSTANTIATE_TEST_SUITE_P(Models, DecodeBatchIsolation, ::testing::ValuesIn(isolationCases()),
                         [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });
