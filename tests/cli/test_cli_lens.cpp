// inferscope-cli generate --json --lens and --attention-at STEP (cli/inspection_json.h): the exact
// keys of the new JSON, the lens's last layer equal to the token event's own candidates, the same
// tokens as without inspection, the attention event's shape and rows; errors on one line.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <set>
#include <string>
#include <vector>

#include "cli_test_helpers.h"
#include "model_test_helpers.h"

using namespace inferscope;
using namespace inferscope::testing_model;
using namespace inferscope::testing_cli;

namespace {

std::set<std::string> keysOf(const nlohmann::json& object) {
    std::set<std::string> keys;
    for (const auto& [key, value] : object.items()) keys.insert(key);
    return keys;
}

std::vector<std::string> greedyArgs(const std::string& prompt, int maxTokens) {
    return {"generate", "--prompt", prompt, "--temperature", "0", "--max-tokens", std::to_string(maxTokens), "--top-n", "5",
            "--json", "--device", "cpu"};
}

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
    args.insert(args.end(), more.begin(), more.end());
    return args;
}

// The step record as core/record/step_record_json.h writes it, plus this command's "event", "eog" and "ms".
const std::set<std::string> kTokenKeys = {"event", "step", "position", "id", "piece", "p", "logit", "p_final", "rank",
                                          "entropy_bits", "log_sum_exp", "survivors", "forward_us", "sample_us",
                                          "end_of_generation", "top", "eog", "ms"};

}  // namespace

TEST(CliLens, EveryTokenEventCarriesEachLayersTopCandidates) {
    const Reference ref = loadReference("stories260K-greedy-1.json");
    auto plain = cli(greedyArgs(ref.prompt, 6));
    auto lens = cli(with(greedyArgs(ref.prompt, 6), {"--lens"}));
    ASSERT_EQ(plain.exitCode, 0) << plain.err;
    ASSERT_EQ(lens.exitCode, 0) << lens.err;
    const auto plainEvents = jsonLines(plain.out), events = jsonLines(lens.out);
    ASSERT_EQ(events.size(), 1u + 6u + 1u);
    ASSERT_EQ(plainEvents.size(), events.size());
    for (size_t s = 0; s < 6; ++s) {
        const auto& e = events[s + 1];
        EXPECT_EQ(keysOf(plainEvents[s + 1]), kTokenKeys);
        auto withLens = kTokenKeys;
        withLens.insert("lens");
        EXPECT_EQ(keysOf(e), withLens);
        EXPECT_EQ(e["id"], plainEvents[s + 1]["id"]) << "step " << s;  // the lens changes no token
        EXPECT_EQ(e["id"], ref.steps[s].id) << "step " << s;
        const auto& l = e["lens"];
        EXPECT_EQ(keysOf(l), (std::set<std::string>{"first_top1_layer", "settled_layer", "layers"}));
        ASSERT_EQ(l["layers"].size(), 5u);  // stories260K's layers
        for (size_t layer = 0; layer < 5; ++layer) {
            const auto& row = l["layers"][layer];
            EXPECT_EQ(keysOf(row), (std::set<std::string>{"layer", "residual_norm", "entropy_bits", "top"}));
            EXPECT_EQ(row["layer"], layer);
            EXPECT_GT(row["residual_norm"].get<double>(), 0.0);
            ASSERT_EQ(row["top"].size(), 5u);
            for (const auto& c : row["top"]) EXPECT_EQ(keysOf(c), (std::set<std::string>{"id", "piece", "logit", "p"}));
        }
        // The last layer is the token event's own distribution, to the last digit printed.
        const auto& last = l["layers"][4]["top"];
        for (size_t c = 0; c < 5; ++c) {
            EXPECT_EQ(last[c]["id"], e["top"][c]["id"]) << "step " << s << " rank " << c;
            // The step record prints floats in their shortest form: the same float, bit for bit.
            EXPECT_EQ(last[c]["logit"].get<float>(), e["top"][c]["logit"].get<float>()) << "step " << s << " rank " << c;
            EXPECT_EQ(last[c]["p"].get<float>(), e["top"][c]["p"].get<float>()) << "step " << s << " rank " << c;
            EXPECT_EQ(last[c]["piece"], e["top"][c]["piece"]) << "step " << s << " rank " << c;
        }
        EXPECT_EQ(l["layers"][4]["entropy_bits"].get<float>(), e["entropy_bits"].get<float>());
        const int first = l["first_top1_layer"], settled = l["settled_layer"];
        EXPECT_LE(0, first);
        EXPECT_LE(first, settled);
        EXPECT_LE(settled, 4);
        EXPECT_EQ(l["layers"][size_t(settled)]["top"][0]["id"], e["id"]);
    }
    EXPECT_EQ(events.back()["text"], plainEvents.back()["text"]);

    auto three = cli(with(greedyArgs(ref.prompt, 1), {"--lens", "--lens-top-k", "3"}));
    ASSERT_EQ(three.exitCode, 0) << three.err;
    EXPECT_EQ(jsonLines(three.out)[1]["lens"]["layers"][0]["top"].size(), 3u);
}

TEST(CliLens, AttentionAtPrintsThatStepsWeights) {
    const Reference ref = loadReference("stories260K-greedy-1.json");
    auto r = cli(with(greedyArgs(ref.prompt, 4), {"--attention-at", "2"}));
    ASSERT_EQ(r.exitCode, 0) << r.err;
    const auto events = jsonLines(r.out);
    ASSERT_EQ(events.size(), 1u + 4u + 1u + 1u);  // prefill, 3 tokens, attention, token, done
    EXPECT_EQ(events[3]["event"], "token");
    EXPECT_EQ(events[3]["step"], 2);
    EXPECT_EQ(keysOf(events[3]), kTokenKeys);  // no lens unless asked
    const auto& a = events[4];
    EXPECT_EQ(keysOf(a), (std::set<std::string>{"event", "step", "position", "token", "n_layer", "n_head", "n_head_kv", "kv_head",
                                                "window", "tokens", "weights"}));
    EXPECT_EQ(a["event"], "attention");
    EXPECT_EQ(a["step"], 2);
    // Step 2's logits come from the pass over step 1's token, at position prompt + 1.
    const int nPrompt = int(ref.promptIds.size());
    EXPECT_EQ(a["position"], nPrompt + 1);
    EXPECT_EQ(a["token"], ref.steps[1].id);
    std::vector<int32_t> tokens = ref.promptIds;
    tokens.push_back(ref.steps[0].id);
    tokens.push_back(ref.steps[1].id);
    EXPECT_EQ(a["tokens"].get<std::vector<int32_t>>(), tokens);
    EXPECT_EQ(a["n_layer"], 5);
    EXPECT_EQ(a["n_head"], 8);
    EXPECT_EQ(a["n_head_kv"], 4);
    EXPECT_EQ(a["kv_head"].get<std::vector<int>>(), (std::vector<int>{0, 0, 1, 1, 2, 2, 3, 3}));
    EXPECT_EQ(a["window"].get<std::vector<int>>(), (std::vector<int>{0, 0, 0, 0, 0}));
    ASSERT_EQ(a["weights"].size(), 5u);
    for (const auto& layer : a["weights"]) {
        ASSERT_EQ(layer.size(), 8u);
        for (const auto& head : layer) {
            ASSERT_EQ(head.size(), size_t(nPrompt + 2));  // keys 0 .. position
            double sum = 0;
            for (const auto& w : head) sum += w.get<double>();
            EXPECT_NEAR(sum, 1.0, 1e-5);
        }
    }
    EXPECT_EQ(events[5]["step"], 3);
    EXPECT_EQ(events.back()["event"], "done");
}

TEST(CliLens, BadArguments) {
    expectOneLineError(cli({"generate", "--lens", "--device", "cpu"}), "--lens requires --json");
    expectOneLineError(cli({"generate", "--attention-at", "1", "--device", "cpu"}), "--attention-at requires --json");
    expectOneLineError(cli({"generate", "--json", "--attention-at", "-1", "--device", "cpu"}), "--attention-at");
    expectOneLineError(cli({"generate", "--json", "--lens", "--lens-top-k", "0", "--device", "cpu"}), "--lens-top-k");
    // A step the generation never reached: the events are printed, then the error.
    auto r = cli({"generate", "--json", "--temperature", "0", "--max-tokens", "3", "--attention-at", "9", "--device", "cpu"});
    expectOneLineError(r, "--attention-at 9: the generation ended after 3 tokens");
    EXPECT_EQ(jsonLines(r.out).back()["event"], "done");
}
