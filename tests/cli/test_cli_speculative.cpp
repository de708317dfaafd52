// inferscope-cli generate with speculative decoding: greedy output equal to plain decoding's with a
// draft model and with prompt lookup, each token's fate in the JSON, the counts in the done line,
// the candidates' p and q and a correction's residual, and one-line errors.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_test_helpers.h"
#include "model_test_helpers.h"

using namespace inferscope::testing_model;
using namespace inferscope::testing_process;
using namespace inferscope::testing_cli;

namespace {

struct Generated {
    std::vector<int> ids;
    std::vector<nlohmann::json> tokens;
    nlohmann::json done;
};

Generated generate(std::vector<std::string> extra) {
    std::vector<std::string> args{"generate", "--prompt", "Lily and Tom went to the park. Lily and Tom", "-n", "48", "--temperature", "0",
                                  "--device", "cpu", "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = cli(args);
    EXPECT_EQ(r.exitCode, 0) << r.err;
    Generated run;
    for (const auto& e : jsonLines(r.out)) {
        if (e["event"] == "token") {
            run.ids.push_back(e["id"]);
            run.tokens.push_back(e);
        }
        if (e["event"] == "done") run.done = e;
    }
    return run;
}

}  // namespace

TEST(CliSpeculative, GreedyOutputIsPlainDecodingsWithEachTokensFate) {
    TempDir dir;
    const auto q8 = (dir / "draft-q8_0.gguf").string();
    writeConverted(kStories, q8, inferscope::GgmlType::Q8_0);
    const Generated plain = generate({});
    ASSERT_FALSE(plain.ids.empty());
    EXPECT_FALSE(plain.tokens[0].contains("speculative"));
    for (const auto& extra : std::vector<std::vector<std::string>>{{"--draft", q8, "--draft-max", "3"}, {"--draft-ngram", "3"}}) {
        SCOPED_TRACE(extra[0]);
        const Generated spec = generate(extra);
        EXPECT_EQ(spec.ids, plain.ids);
        EXPECT_EQ(spec.done["text"], plain.done["text"]);
        int accepted = 0, drafted = 0, corrected = 0;
        for (size_t i = 1; i < spec.tokens.size(); ++i) {
            const auto& s = spec.tokens[i]["speculative"];
            ASSERT_TRUE(s.is_object()) << spec.tokens[i].dump();
            drafted += s["drafted"].get<bool>();
            accepted += s["accepted"].get<bool>();
            if (s["fate"] == "accepted") {
                EXPECT_EQ(s["draft_id"], spec.tokens[i]["id"]);
                EXPECT_LE(s["accept_probability"].get<double>(), 1.0);
            }
            if (s["drafted"] == true) {  // the position's candidates hold the drafted token with its own p and q
                bool found = false;
                for (const auto& c : s["candidates"]) {
                    if (c["id"] != s["draft_id"]) continue;
                    found = true;
                    EXPECT_EQ(c["p"], s["p"]);
                    EXPECT_EQ(c["q"], s["q"]);
                }
                EXPECT_TRUE(found) << s.dump();
            }
            if (s["fate"] == "corrected") {
                // Greedy: p is all on the target's pick and q on the rejected draft, so the residual
                // max(0, p − q) is the token emitted, with all of p's mass.
                ++corrected;
                EXPECT_NE(s["draft_id"], spec.tokens[i]["id"]);
                ASSERT_EQ(s["residual"].size(), 1u) << s.dump();
                EXPECT_EQ(s["residual"][0]["id"], spec.tokens[i]["id"]);
                EXPECT_EQ(s["residual"][0]["r"], 1.0);
                EXPECT_EQ(s["residual"][0]["piece"], spec.tokens[i]["piece"]);
                EXPECT_EQ(s["residual_mass"], 1.0);
            } else {
                EXPECT_FALSE(s.contains("residual"));
            }
        }
        if (extra[0] == "--draft-ngram") {
            EXPECT_GT(corrected, 0);  // prompt lookup guesses wrong on this prompt
        }
        EXPECT_EQ(spec.done["draft_n_accepted"], accepted);
        EXPECT_LE(accepted, spec.done["draft_n"].get<int>());
        EXPECT_GE(spec.done["draft_n"].get<int>(), drafted);
        if (extra[0] == "--draft") {
            EXPECT_GT(accepted, 0);
        }
    }
}

TEST(CliSpeculative, BadInputIsAOneLineError) {
    expectOneLineError(cli({"generate", "--prompt", "Once", "--draft", kTinyRandom, "--device", "cpu"}), "the two vocabularies differ");
    expectOneLineError(cli({"generate", "--prompt", "Once", "--draft", kStories, "--draft-ngram", "3", "--device", "cpu"}),
                       "--draft and --draft-ngram are two drafters: give one");
    expectOneLineError(cli({"generate", "--prompt", "Once", "--draft-ngram", "3", "--lens", "--json", "--device", "cpu"}),
                       "not available with speculative decoding");
    expectOneLineError(cli({"generate", "--prompt", "Once", "--draft", "/nonexistent.gguf", "--device", "cpu"}), "draft model: ");
}
