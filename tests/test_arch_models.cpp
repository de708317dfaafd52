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
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backend/compute_device.h"
#include "model/llama_model.h"
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

class ArchReferenceTest : public ::testing::TestWithParam<Case> {};

TEST_P(ArchReferenceTest, GreedyIdsAndTopLogitsMatch) {
    const Case& c = GetParam();
    INFERSCOPE_SHARED_FILE_OR_SKIP(modelPath, std::string("models/arch/") + c.model + ".gguf");
    INFERSCOPE_SHARED_FILE_OR_SKIP(refPath, std::string("reference/arch/") + c.reference + ".json");
    const ArchReference ref = loadArchReference(refPath);
    ASSERT_FALSE(ref.steps.empty());

    auto device = ComputeDevice::create(DeviceKind::Cpu, 2);
    ASSERT_TRUE(device) << device.error().message;
    auto file = GgufFile::open(modelPath);
    ASSERT_TRUE(file) << file.error().message;
    auto model = LlamaModel::load(std::move(*file), **device, ComputePrecision::Auto);
    ASSERT_TRUE(model) << model.error().message;
    const int32_t nCtx = int32_t(ref.promptIds.size() + ref.steps.size() + 1);
    auto ctx = (*model)->createContext(nCtx, 512);
    ASSERT_TRUE(ctx) << ctx.error().message;

    // Prefill in batches of up to 512 (the long reference is 1322 tokens), then decode one by one.
    std::span<const float> logits;
    int32_t pos = 0;
    while (pos < int32_t(ref.promptIds.size())) {
        const int32_t n = std::min<int32_t>((*ctx)->maxBatch(), int32_t(ref.promptIds.size()) - pos);
        logits = (*model)->forward(**ctx, std::span(ref.promptIds).subspan(size_t(pos), size_t(n)), pos, CellOrigin::Prompt);
        pos += n;
    }
    float maxDiff = 0.0f;
    for (size_t s = 0; s < ref.steps.size(); ++s) {
        const Step& step = ref.steps[s];
        for (const Candidate& cand : step.top) {
            EXPECT_NEAR(logits[size_t(cand.id)], cand.logit, c.tolerance) << "step " << s << ", token " << cand.id;
            maxDiff = std::max(maxDiff, std::fabs(logits[size_t(cand.id)] - cand.logit));
        }
        const int32_t ours = int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
        // Where the reference's best two are closer than the tolerance the pick is a tie (README):
        // then the logits above decide, not the id.
        const bool tie = step.top.size() > 1 && step.top[0].logit - step.top[1].logit < c.tolerance;
        if (!tie) EXPECT_EQ(ours, step.id) << "step " << s;
        // Continue with the reference's token (ours wherever the pick is not a tie).
        const int32_t next = step.id;
        logits = (*model)->forward(**ctx, std::span(&next, 1), pos, CellOrigin::Generated);
        ++pos;
    }
    std::cout << c.reference << ": largest top-5 logit difference " << maxDiff << " (tolerance " << c.tolerance << ")\n";
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

}  // namespace
}  // namespace inferscope
