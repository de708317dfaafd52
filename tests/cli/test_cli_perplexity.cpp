// inferscope-cli perplexity as a user runs it on the bundled stories260K: the windows it scores, its
// figure against `score` on the same tokens, a configuration against itself and against another
// precision, and one-line errors.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_test_helpers.h"
#include "model_test_helpers.h"
#include "shared_data.h"

using namespace inferscope::testing_model;
using namespace inferscope::testing_process;
using namespace inferscope::testing_cli;

namespace {

const std::string kStory = std::string(INFERSCOPE_TEST_DATA_DIR) + "/perplexity-story.txt";

nlohmann::json done(const ProcessResult& r) {
    EXPECT_EQ(r.exitCode, 0) << r.err;
    const auto lines = jsonLines(r.out);
    EXPECT_FALSE(lines.empty());
    return lines.empty() ? nlohmann::json() : lines.back();
}

std::vector<int32_t> storyIds() {
    auto r = cli({"tokenize", "--file", kStory, "--add-special", "--json"});
    EXPECT_EQ(r.exitCode, 0) << r.err;
    return nlohmann::json::parse(r.out)["ids"].get<std::vector<int32_t>>();
}

}  // namespace

TEST(CliPerplexity, ScoresTheSecondHalfOfEachWindowAsScoreComputesIt) {
    const auto ids = storyIds();
    ASSERT_GT(ids.size(), 128u);
    auto r = cli({"perplexity", "--file", kStory, "--ctx", "64", "--json", "--device", "cpu"});
    const auto lines = jsonLines(r.out);
    const auto d = done(r);
    const int windows = int(ids.size() / 64);
    EXPECT_EQ(d["text_tokens"], ids.size());
    EXPECT_EQ(d["windows"], windows);
    EXPECT_EQ(d["tokens_scored"], windows * 31);  // logits at 32..62 predict tokens 33..63
    ASSERT_EQ(lines.size(), size_t(windows) + 1);
    EXPECT_EQ(lines[1]["event"], "window");
    EXPECT_EQ(lines[1]["first_token"], 64);

    // The second window, scored by `score` on the same ids (BOS in place of its first token): its
    // first window event is the perplexity of window 1 alone.
    std::string list = "1";
    for (int i = 65; i < 128; ++i) list += "," + std::to_string(ids[size_t(i)]);
    auto s = cli({"score", "--ids", list, "--json", "--device", "cpu"});
    ASSERT_EQ(s.exitCode, 0) << s.err;
    const auto events = jsonLines(s.out);
    double nll = 0.0;
    for (int pos = 32; pos < 63; ++pos) nll -= std::log(events[size_t(pos)]["next_p"].get<double>());
    const double secondWindow = std::exp(nll / 31);
    const double firstWindow = lines[0]["perplexity"].get<double>();
    // Two windows' running figure is the geometric mean of each window's.
    EXPECT_NEAR(lines[1]["perplexity"].get<double>(), std::sqrt(firstWindow * secondWindow), 1e-9 * secondWindow);
    EXPECT_GT(d["perplexity_error"].get<double>(), 0.0);
}

TEST(CliPerplexity, AConfigurationAgainstItselfHasNoDivergence) {
    const auto d = done(cli({"perplexity", "--file", kStory, "--ctx", "64", "--max-windows", "2", "--compare-compute", "auto",
                             "--json", "--device", "cpu"}));
    EXPECT_EQ(d["windows"], 2);
    EXPECT_EQ(d["kl"]["mean"], 0.0);
    EXPECT_EQ(d["kl"]["max"], 0.0);
    EXPECT_EQ(d["same_top1"], d["tokens_scored"]);
    EXPECT_EQ(d["top1_agreement"], 1.0);
    EXPECT_EQ(d["reference"]["perplexity"], d["perplexity"]);
    EXPECT_EQ(d["reference"]["model"], "stories260K.gguf");
}

TEST(CliPerplexity, Int8AgainstF32MovesTheDistributionsALittle) {
    auto r = cli({"perplexity", "--file", kStory, "--ctx", "64", "--max-windows", "3", "--compute", "int8",
                  "--compare-compute", "f32", "--json", "--device", "cpu"});
    const auto d = done(r);
    const double mean = d["kl"]["mean"].get<double>();
    EXPECT_GT(mean, 0.0) << "int8 weights computed exactly as f32";
    EXPECT_LE(d["kl"]["median"].get<double>(), d["kl"]["p99"].get<double>());
    EXPECT_LE(d["kl"]["p99"].get<double>(), d["kl"]["max"].get<double>());
    EXPECT_EQ(d["reference"]["compute"], "f32");
    EXPECT_NE(d["reference"]["perplexity"], d["perplexity"]);
    // The text form says the same in words.
    auto text = cli({"perplexity", "--file", kStory, "--ctx", "64", "--max-windows", "3", "--compute", "int8",
                     "--compare-compute", "f32", "--device", "cpu"});
    ASSERT_EQ(text.exitCode, 0) << text.err;
    EXPECT_NE(text.out.find("Reference (stories260K.gguf, compute f32, KV cache f32)"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("KL divergence from the reference (nats per token): mean "), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("Same top-1 token as the reference: "), std::string::npos) << text.out;
}

TEST(CliPerplexity, BadInputIsAOneLineError) {
    TempDir dir;
    const std::string shortText = (dir / "short.txt").string();
    std::ofstream(shortText) << "Once upon a time";
    auto r = cli({"perplexity", "--file", shortText, "--ctx", "64", "--device", "cpu"});
    expectOneLineError(r, "perplexity needs at least one window of --ctx 64 tokens");
    expectOneLineError(cli({"perplexity", "--file", "/nonexistent.txt", "--device", "cpu"}), "cannot read --file /nonexistent.txt");
    expectOneLineError(cli({"perplexity", "--file", kStory, "--ctx", "2", "--device", "cpu"}), "--ctx must be at least 4, got 2");
    expectOneLineError(cli({"perplexity", "--file", kStory, "--ctx", "64", "--compare-to", kTinyRandom, "--device", "cpu"}),
                       "the two vocabularies differ (512 and 32000 tokens): a token-by-token comparison needs the same vocabulary");
    // stories260K's heads are 8 wide: a block-quantized cache cannot hold them.
    expectOneLineError(cli({"perplexity", "--file", kStory, "--ctx", "64", "--kv", "q8_0", "--compare-to-kv", "f16", "--device", "cpu"}),
                       "this model's head dimension is 8");
}

TEST(CliPerplexity, AQuantizedKvCacheAgainstF16) {
    // phi3-tiny's heads are 32 wide: one q8_0 / q4_0 block per head and row.
    INFERSCOPE_SHARED_FILE_OR_SKIP(model, "models/arch/phi3-tiny.gguf");
    auto run = [&](const char* kv) {
        return done(cli({"perplexity", "--model", model, "--file", kStory, "--ctx", "64", "--max-windows", "2", "--kv", kv,
                         "--compare-to-kv", "f16", "--json", "--device", "cpu"}));
    };
    const auto q8 = run("q8_0"), q4 = run("q4_0");
    EXPECT_EQ(q8["reference"]["kv"], "f16");
    EXPECT_EQ(q8["reference"]["perplexity"], q4["reference"]["perplexity"]);  // the same f16 reference
    EXPECT_GT(q8["kl"]["mean"].get<double>(), 0.0);
    // 4-bit blocks round each cached value ~16× more coarsely than 8-bit ones: the distributions move further.
    EXPECT_GT(q4["kl"]["mean"].get<double>(), q8["kl"]["mean"].get<double>());
    EXPECT_LE(q8["same_top1"], q8["tokens_scored"]);
}
