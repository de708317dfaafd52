// inferscope-cli compare as a user runs it: A answers, B reads the answer; a line per answer token
// and a summary shaped as perplexity's, checked against the tokens `generate` gives and against
// itself; the Q8_0 copy of stories260K moves the distributions, and one-line errors.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_test_helpers.h"
#include "model_test_helpers.h"

using namespace inferscope::testing_model;
using namespace inferscope::testing_process;
using namespace inferscope::testing_cli;

namespace {

std::vector<nlohmann::json> compareJson(const std::string& modelB, int maxTokens) {
    auto r = cli({"compare", "--model-b", modelB, "--prompt", "Once upon a time", "-n", std::to_string(maxTokens), "--temperature", "0",
                  "--device", "cpu", "--json"});
    EXPECT_EQ(r.exitCode, 0) << r.err;
    return jsonLines(r.out);
}

}  // namespace

TEST(CliCompare, AModelAgainstItselfListsGeneratesTokensWithNothingMoved) {
    const auto lines = compareJson(kStories, 20);
    ASSERT_GE(lines.size(), 2u);
    // The tokens are those `generate` gives greedily, in order.
    auto g = cli({"generate", "--prompt", "Once upon a time", "-n", "20", "--temperature", "0", "--device", "cpu", "--json"});
    ASSERT_EQ(g.exitCode, 0) << g.err;
    std::vector<int> generated;
    for (const auto& e : jsonLines(g.out))
        if (e["event"] == "token") generated.push_back(e["id"]);
    std::vector<int> compared;
    for (size_t i = 0; i + 1 < lines.size(); ++i) {
        const auto& t = lines[i];
        ASSERT_EQ(t["event"], "token");
        EXPECT_EQ(t["index"], int(i));
        EXPECT_EQ(t["kl"], 0.0);
        EXPECT_EQ(t["flip"], false);
        EXPECT_EQ(t["dp"], 0.0);
        EXPECT_EQ(t["p_a"], t["p_b"]);
        EXPECT_EQ(t["top_a"], t["id"]);  // greedy: the answer's token is A's top
        compared.push_back(t["id"]);
    }
    EXPECT_EQ(compared, generated);
    const auto& done = lines.back();
    EXPECT_EQ(done["event"], "done");
    EXPECT_EQ(done["tokens"], int(compared.size()));
    EXPECT_EQ(done["kl"]["mean"], 0.0);
    EXPECT_EQ(done["top1_agreement"], 1.0);
    EXPECT_EQ(done["dp"]["rms"], 0.0);
    EXPECT_EQ(done["perplexity_a"], done["perplexity_b"]);
}

TEST(CliCompare, AQ8_0CopyMovesTheDistributions) {
    TempDir dir;
    const auto q8 = (dir / "stories-q8_0.gguf").string();
    writeConverted(kStories, q8, inferscope::GgmlType::Q8_0);
    const auto lines = compareJson(q8, 40);
    ASSERT_GE(lines.size(), 2u);
    const auto& done = lines.back();
    EXPECT_GT(done["kl"]["mean"].get<double>(), 0.0);
    EXPECT_LT(done["kl"]["mean"].get<double>(), 0.05);  // Q8_0 is close
    EXPECT_GE(done["kl"]["max"].get<double>(), done["kl"]["p99"].get<double>());
    EXPECT_GT(done["top1_agreement"].get<double>(), 0.8);
    double sumKl = 0;
    int flips = 0;
    for (size_t i = 0; i + 1 < lines.size(); ++i) {
        sumKl += lines[i]["kl"].get<double>();
        flips += lines[i]["flip"].get<bool>();
        EXPECT_NEAR(lines[i]["dp"].get<double>(), lines[i]["p_b"].get<double>() - lines[i]["p_a"].get<double>(), 1e-12);
    }
    EXPECT_NEAR(done["kl"]["mean"].get<double>(), sumKl / double(lines.size() - 1), 1e-9);
    EXPECT_EQ(done["same_top1"].get<int>(), int(lines.size() - 1) - flips);
}

// stories260K against the tiny random Llama 2 (32,000 tokens): the same answer read word by word,
// the words spelling the answer back, the totals their sums, and the random model far more surprised.
TEST(CliCompare, OtherVocabulariesAreComparedOnTheTextWordByWord) {
    auto r = cli({"compare", "--model-b", kTinyRandom, "--prompt", "Once upon a time", "-n", "30", "--temperature", "0", "--device", "cpu",
                  "--json"});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.err.find("the two vocabularies differ (512 and 32000 tokens)"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("compared on the text instead"), std::string::npos) << r.err;
    const auto lines = jsonLines(r.out);
    ASSERT_GE(lines.size(), 2u);
    const auto& done = lines.back();
    EXPECT_EQ(done["mode"], "text");
    std::string spelled;
    double bitsA = 0, bitsB = 0;
    for (size_t i = 0; i + 1 < lines.size(); ++i) {
        EXPECT_EQ(lines[i]["event"], "word");
        spelled += lines[i]["text"].get<std::string>();
        bitsA += lines[i]["bits_a"].get<double>();
        bitsB += lines[i]["bits_b"].get<double>();
        EXPECT_GE(lines[i]["bits_a"].get<double>(), 0.0);
    }
    auto g = cli({"generate", "--prompt", "Once upon a time", "-n", "30", "--temperature", "0", "--device", "cpu", "--json"});
    EXPECT_EQ(spelled, jsonLines(g.out).back()["text"]);
    EXPECT_NEAR(done["bits_a"].get<double>(), bitsA, 1e-6);
    EXPECT_NEAR(done["bits_b"].get<double>(), bitsB, 1e-6);
    EXPECT_EQ(done["bytes"].get<size_t>(), spelled.size());
    EXPECT_GT(done["bits_per_byte_b"].get<double>(), 2 * done["bits_per_byte_a"].get<double>());  // random weights: surprised
}

TEST(CliCompare, BadInputIsAOneLineError) {
    expectOneLineError(cli({"compare", "--model-b", "/nonexistent.gguf", "--prompt", "Once", "--device", "cpu"}), "model B: ");
    expectOneLineError(cli({"compare", "--model-b", kStories, "--prompt", "Once", "-n", "0", "--device", "cpu"}),
                       "--max-tokens must be at least 1, got 0");
}
