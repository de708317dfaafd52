// Every supported architecture against its greedy reference (../shared/reference/arch/README.md):
// the tiny random-weight model of each family is loaded with LlamaModel::load, fed the
// reference's prompt_ids (no tokenizer needed) and decoded greedily. Required: identical greedy
// ids and the reference's top-5 logits within 0.05 (0.25 for the Gemmas), including the long
// prompts that exercise the sliding window (gemma2/3) and Llama 3's rope_freqs (1322 tokens).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "backend/compute_device.h"
#include "model/llama_model.h"
#include "tools/gguf_writer.h"
#include "model_test_helpers.h"
#include "shared_data.h"

namespace inferscope {
namespace {

struct Candidate {
    int32_t id;
    float logit;
};
struct Step {
    int32_t id;
    std::vector<Candidate> top;  // the reference's top 5, best first
};
struct ArchReference {
    std::vector<int32_t> promptIds;
    std::vector<Step> steps;
};

// The reference's `piece` and `text` fields are raw bytes (half a UTF-8 character at times), which
// nlohmann::json rejects: bytes >= 0x80 only occur inside strings, so they are replaced by '?'
// before parsing, and only ids and logits are read.
ArchReference loadArchReference(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (char& c : bytes)
        if (static_cast<unsigned char>(c) >= 0x80) c = '?';
    const auto j = nlohmann::json::parse(bytes);
    ArchReference r;
    r.promptIds = j["prompt_ids"].get<std::vector<int32_t>>();
    for (const auto& s : j["steps"]) {
        Step step{s["id"], {}};
        for (const auto& c : s["top"]) step.top.push_back({c["id"], c["logit"]});
        r.steps.push_back(std::move(step));
    }
    return r;
}

struct Case {
    const char* model;      // models/arch/<model>.gguf
    const char* reference;  // reference/arch/<reference>.json
    float tolerance;        // on each top-5 logit
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.reference; }

// How far a model is from a reference: the largest top-5 logit difference, and the steps whose
// greedy id differs where the reference's pick is not a tie (best two closer than the tolerance:
// then the logits decide, not the id — README). Decoding continues with the reference's token,
// which is ours wherever the pick is not a tie.
struct Agreement {
    bool ran = true;  // false: the model did not load (firstProblem says why)
    float maxDiff = 0.0f;
    int idMismatches = 0;
    std::string firstProblem;
};

Agreement compareWithReference(const std::string& modelPath, const ArchReference& ref, float tolerance) {
    Agreement a;
    auto device = ComputeDevice::create(DeviceKind::Cpu, 2);
    auto file = GgufFile::open(modelPath);
    if (!device || !file) return {false, 0.0f, 0, "cannot open the model"};
    auto model = LlamaModel::load(std::move(*file), **device, ComputePrecision::Auto);
    if (!model) return {false, 0.0f, 0, model.error().message};
    const int32_t nCtx = int32_t(ref.promptIds.size() + ref.steps.size() + 1);
    auto ctx = (*model)->createContext(nCtx, 512);
    if (!ctx) return {false, 0.0f, 0, ctx.error().message};

    // Prefill in batches of up to 512 (the long reference is 1322 tokens), then decode one by one.
    std::span<const float> logits;
    int32_t pos = 0;
    while (pos < int32_t(ref.promptIds.size())) {
        const int32_t n = std::min<int32_t>((*ctx)->maxBatch(), int32_t(ref.promptIds.size()) - pos);
        logits = (*model)->forward(**ctx, std::span(ref.promptIds).subspan(size_t(pos), size_t(n)), pos, CellOrigin::Prompt);
        pos += n;
    }
    for (size_t s = 0; s < ref.steps.size(); ++s) {
        const Step& step = ref.steps[s];
        for (const Candidate& cand : step.top) {
            const float diff = std::fabs(logits[size_t(cand.id)] - cand.logit);
            if (diff > tolerance && a.firstProblem.empty())
                a.firstProblem = "step " + std::to_string(s) + ": token " + std::to_string(cand.id) + " logit " +
                                 std::to_string(logits[size_t(cand.id)]) + ", reference " + std::to_string(cand.logit);
            a.maxDiff = std::max(a.maxDiff, diff);
        }
        const int32_t ours = int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
        const bool tie = step.top.size() > 1 && step.top[0].logit - step.top[1].logit < tolerance;
        if (!tie && ours != step.id) {
            ++a.idMismatches;
            if (a.firstProblem.empty())
                a.firstProblem = "step " + std::to_string(s) + ": greedy id " + std::to_string(ours) + ", reference " + std::to_string(step.id);
        }
        const int32_t next = step.id;
        logits = (*model)->forward(**ctx, std::span(&next, 1), pos, CellOrigin::Generated);
        ++pos;
    }
    return a;
}

class ArchReferenceTest : public ::testing::TestWithParam<Case> {};

TEST_P(ArchReferenceTest, GreedyIdsAndTopLogitsMatch) {
    const Case& c = GetParam();
    INFERSCOPE_SHARED_FILE_OR_SKIP(modelPath, std::string("models/arch/") + c.model + ".gguf");
    INFERSCOPE_SHARED_FILE_OR_SKIP(refPath, std::string("reference/arch/") + c.reference + ".json");
    const ArchReference ref = loadArchReference(refPath);
    ASSERT_FALSE(ref.steps.empty());
    const Agreement a = compareWithReference(modelPath, ref, c.tolerance);
    ASSERT_TRUE(a.ran) << a.firstProblem;
    EXPECT_LE(a.maxDiff, c.tolerance) << a.firstProblem;
    EXPECT_EQ(a.idMismatches, 0) << a.firstProblem;
    std::cout << c.reference << ": largest top-5 logit difference " << a.maxDiff << " (tolerance " << c.tolerance << ")\n";
}

INSTANTIATE_TEST_SUITE_P(
    Architectures, ArchReferenceTest,
    ::testing::Values(Case{"llama3-tiny", "llama3-tiny-greedy-1", 0.05f}, Case{"llama3-tiny", "llama3-tiny-greedy-2", 0.05f},
                      Case{"llama3-tiny", "llama3-tiny-long-rope", 0.05f}, Case{"qwen2-tiny", "qwen2-tiny-greedy-1", 0.05f},
                      Case{"qwen2-tiny", "qwen2-tiny-greedy-2", 0.05f}, Case{"qwen3-tiny", "qwen3-tiny-greedy-1", 0.05f},
                      Case{"qwen3-tiny", "qwen3-tiny-greedy-2", 0.05f}, Case{"gemma2-tiny", "gemma2-tiny-greedy-1", 0.25f},
                      Case{"gemma2-tiny", "gemma2-tiny-greedy-2", 0.25f}, Case{"gemma2-tiny", "gemma2-tiny-long-swa", 0.25f},
                      Case{"gemma3-tiny", "gemma3-tiny-greedy-1", 0.25f}, Case{"gemma3-tiny", "gemma3-tiny-greedy-2", 0.25f},
                      Case{"gemma3-tiny", "gemma3-tiny-long-swa", 0.25f}, Case{"phi3-tiny", "phi3-tiny-greedy-1", 0.05f},
                      Case{"phi3-tiny", "phi3-tiny-greedy-2", 0.05f}),
    [](const ::testing::TestParamInfo<Case>& info) {
        std::string name = info.param.reference;
        std::replace(name.begin(), name.end(), '-', '_');
        return name;
    });

// Each architecture feature matters where the references say it does: a copy of the model with the
// feature's metadata or tensor removed (or its architecture relabelled) misses the reference by
// more than the tolerance. So the references above cannot pass with a feature silently ignored.
struct Ablation {
    const char* name;
    const char* model;
    const char* reference;
    float tolerance;
    std::vector<std::pair<std::string, std::optional<GgufMetaValue>>> keys;  // replaced, or dropped (nullopt)
    std::vector<std::string> dropTensors;
};

// Copies a shared model with the ablation's metadata and tensor edits.
void writeAblated(const std::string& src, const std::filesystem::path& dst, const Ablation& ab) {
    auto f = GgufFile::open(src);
    ASSERT_TRUE(f) << f.error().message;
    GgufWriter w;
    for (const auto& kv : f->metadata()) {
        const auto edit = std::find_if(ab.keys.begin(), ab.keys.end(), [&](const auto& e) { return e.first == kv.key; });
        if (edit == ab.keys.end()) w.add(std::string(kv.key), GgufMetaValue::copyOf(kv.value));
        else if (edit->second) w.add(std::string(kv.key), *edit->second);
    }
    for (const auto& [key, value] : ab.keys)  // keys the source lacks are added
        if (value && !f->find(key)) w.add(key, *value);
    for (const auto& t : f->tensors()) {
        if (std::find(ab.dropTensors.begin(), ab.dropTensors.end(), t.name) != ab.dropTensors.end()) continue;
        auto data = f->tensorData(t);
        w.addTensor(std::string(t.name), std::vector<uint64_t>(t.ne.begin(), t.ne.begin() + t.nDims), t.type(),
                    std::vector<uint8_t>(data.begin(), data.end()));
    }
    auto ok = w.writeFile(dst);
    ASSERT_TRUE(ok) << ok.error().message;
}

// Renames every `<from>.` key to `<to>.` and sets general.architecture (same weights, other arch).
std::vector<std::pair<std::string, std::optional<GgufMetaValue>>> relabel(const std::string& path, const std::string& from,
                                                                          const std::string& to) {
    std::vector<std::pair<std::string, std::optional<GgufMetaValue>>> keys = {{"general.architecture", GgufMetaValue::string(to)}};
    auto f = GgufFile::open(path);
    if (!f) return keys;
    for (const auto& kv : f->metadata())
        if (kv.key.starts_with(from + ".")) keys.emplace_back(std::string(kv.key), std::nullopt);
    return keys;
}

TEST(ArchAblations, EachFeatureMovesTheLogitsPastTheTolerance) {
    INFERSCOPE_SHARED_FILE_OR_SKIP(qwen2, "models/arch/qwen2-tiny.gguf");
    std::vector<Ablation> ablations = {
        {"llama3 without rope_freqs", "llama3-tiny", "llama3-tiny-long-rope", 0.05f, {}, {"rope_freqs.weight"}},
        {"gemma2 without its window (4096 assumed)", "gemma2-tiny", "gemma2-tiny-long-swa", 0.25f,
         {{"gemma2.attention.sliding_window", std::nullopt}}, {}},
        {"gemma2 with a final soft-cap of 1e4", "gemma2-tiny", "gemma2-tiny-greedy-1", 0.25f,
         {{"gemma2.final_logit_softcapping", GgufMetaValue::f32(1e4f)}}, {}},
        {"gemma2 with an attention soft-cap of 1e4", "gemma2-tiny", "gemma2-tiny-greedy-1", 0.25f,
         {{"gemma2.attn_logit_softcapping", GgufMetaValue::f32(1e4f)}}, {}},
        {"gemma3 without its window", "gemma3-tiny", "gemma3-tiny-long-swa", 0.25f, {{"gemma3.attention.sliding_window", std::nullopt}}, {}},
        {"gemma3 without linear RoPE scaling on global layers", "gemma3-tiny", "gemma3-tiny-long-swa", 0.25f,
         {{"gemma3.rope.scaling.type", std::nullopt}, {"gemma3.rope.scaling.factor", std::nullopt}}, {}},
        {"gemma3 with base 10000 on its global layers too", "gemma3-tiny", "gemma3-tiny-long-swa", 0.25f,
         {{"gemma3.rope.freq_base", GgufMetaValue::f32(10000.0f)}}, {}},
    };
    // Architecture relabelled: the same weights without the architecture's steps. qwen2 as llama:
    // no biases, normal RoPE. (Extra tensors are ignored, missing ones refused.)
    auto asLlama = relabel(qwen2, "qwen2", "llama");
    for (auto [key, value] : {std::pair{"context_length", 2048u}, {"embedding_length", 64u}, {"block_count", 3u},
                              {"feed_forward_length", 384u}, {"attention.head_count", 4u}, {"attention.head_count_kv", 2u}})
        asLlama.emplace_back(std::string("llama.") + key, GgufMetaValue::u32(value));
    asLlama.emplace_back("llama.attention.layer_norm_rms_epsilon", GgufMetaValue::f32(1e-6f));
    asLlama.emplace_back("llama.rope.freq_base", GgufMetaValue::f32(1e6f));
    ablations.push_back({"qwen2 run as llama (no biases, normal RoPE)", "qwen2-tiny", "qwen2-tiny-greedy-1", 0.05f, asLlama, {}});

    testing_model::TempDir dir;
    for (const Ablation& ab : ablations) {
        SCOPED_TRACE(ab.name);
        INFERSCOPE_SHARED_FILE_OR_SKIP(src, std::string("models/arch/") + ab.model + ".gguf");
        INFERSCOPE_SHARED_FILE_OR_SKIP(refPath, std::string("reference/arch/") + ab.reference + ".json");
        const auto dst = dir / "ablated.gguf";
        writeAblated(src, dst, ab);
        const Agreement a = compareWithReference(dst.string(), loadArchReference(refPath), ab.tolerance);
        ASSERT_TRUE(a.ran) << a.firstProblem;
        EXPECT_GT(a.maxDiff, ab.tolerance) << a.firstProblem;
        std::cout << ab.name << ": largest top-5 logit difference " << a.maxDiff << ", " << a.idMismatches
                  << " greedy ids differ\n";
    }
}

}  // namespace
}  // namespace inferscope
