// inferscope-cli tokenize / detokenize as a user runs them: exact ids (llama.cpp's), the JSON
// shape, special-token flags, round trips, and one-line errors with exit code 1.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "model_test_helpers.h"
#include "cli_test_helpers.h"
#include "shared_data.h"

using namespace inferscope::testing_model;
using namespace inferscope::testing_process;
using namespace inferscope::testing_cli;

namespace {

const std::string kSpm = std::string(INFERSCOPE_TEST_DATA_DIR) + "/ggml-vocab-llama-spm.gguf";  // vocab only, no tensors

nlohmann::json jsonOf(const ProcessResult& r) {
    EXPECT_EQ(r.exitCode, 0) << r.err;
    return nlohmann::json::parse(r.out);
}

}  // namespace

// The first of llama.cpp's vectors for Llama 2 (tests/data): "ied 4 ½ months".
TEST(CliTokenize, LlamaCppIdsOnAVocabOnlyFile) {
    auto r = cli({"tokenize", "--model", kSpm, "--text", "ied 4 \xC2\xBD months"});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_EQ(r.out, "474 287 29871 29946 29871 30226 7378\n");
    const auto j = jsonOf(cli({"tokenize", "--model", kSpm, "--text", "ied 4 \xC2\xBD months", "--json"}));
    EXPECT_EQ(j["ids"], nlohmann::json({474, 287, 29871, 29946, 29871, 30226, 7378}));
    EXPECT_EQ(j["pieces"], nlohmann::json({" i", "ed", " ", "4", " ", "\xC2\xBD", " months"}));  // ▁i ed ▁ 4 ▁ ½ ▁months
}

TEST(CliTokenize, AddSpecialAddsBosAsTheFileSays) {
    EXPECT_EQ(cli({"tokenize", "-m", kSpm, "--text", "Hello", "--add-special"}).out, "1 15043\n");
    EXPECT_EQ(cli({"tokenize", "-m", kSpm, "--text", "Hello"}).out, "15043\n");
    EXPECT_EQ(cli({"tokenize", "-m", kSpm, "--text", ""}).out, "\n");
}

TEST(CliTokenize, FileInputIsReadAsBytes) {
    TempDir dir;
    const auto path = (dir / "text.txt").string();
    std::ofstream(path, std::ios::binary) << "ied 4 \xC2\xBD months";
    EXPECT_EQ(cli({"tokenize", "-m", kSpm, "--file", path}).out, "474 287 29871 29946 29871 30226 7378\n");
}

TEST(CliTokenize, Llama3SpecialTokensOnlyWithSpecial) {
    INFERSCOPE_SHARED_FILE_OR_SKIP(vocab, "models/tokenizer/ggml-vocab-llama-bpe.gguf");
    const std::string text = "Hello world<|eot_id|>";
    const auto plain = jsonOf(cli({"tokenize", "-m", vocab, "--text", "Hello world", "--json"}));
    EXPECT_EQ(plain["ids"], nlohmann::json({9906, 1917}));
    EXPECT_EQ(plain["pieces"], nlohmann::json({"Hello", " world"}));
    const auto special = jsonOf(cli({"tokenize", "-m", vocab, "--text", text, "--special", "--add-special", "--json"}));
    EXPECT_EQ(special["ids"], nlohmann::json({128000, 9906, 1917, 128009}));
    EXPECT_EQ(special["pieces"], nlohmann::json({"<|begin_of_text|>", "Hello", " world", "<|eot_id|>"}));
    const auto asText = jsonOf(cli({"tokenize", "-m", vocab, "--text", text, "--json"}));
    EXPECT_EQ(std::count(asText["ids"].begin(), asText["ids"].end(), 128009), 0);
}

TEST(CliDetokenize, RoundTripsAndDropsControlTokens) {
    INFERSCOPE_SHARED_FILE_OR_SKIP(vocab, "models/tokenizer/ggml-vocab-qwen2.gguf");
    auto r = cli({"detokenize", "-m", vocab, "--ids", "9707,1879,151645"});  // "Hello world<|im_end|>"
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_EQ(r.out, "Hello world\n");
    const auto j = jsonOf(cli({"detokenize", "-m", vocab, "--ids", "9707,1879", "--json"}));
    EXPECT_EQ(j["text"], "Hello world");
    EXPECT_EQ(cli({"tokenize", "-m", vocab, "--text", "Hello world"}).out, "9707 1879\n");
}

TEST(CliTokenize, BadArgumentsAreOneLineErrors) {
    expectOneLineError(cli({"tokenize", "-m", kSpm}), "tokenize: give --text TEXT or --file PATH");
    expectOneLineError(cli({"tokenize", "-m", kSpm, "--text", "a", "--file", "b"}), "--text excludes --file");
    expectOneLineError(cli({"tokenize", "-m", kSpm, "--file", "/nonexistent.txt"}), "/nonexistent.txt: cannot read");
    expectOneLineError(cli({"tokenize", "-m", "/nonexistent.gguf", "--text", "a"}), "cannot open /nonexistent.gguf");
    expectOneLineError(cli({"detokenize", "-m", kSpm}), "--ids is required");
    expectOneLineError(cli({"detokenize", "-m", kSpm, "--ids", "1,,2"}), "--ids: '' is not a token id");
    expectOneLineError(cli({"detokenize", "-m", kSpm, "--ids", "1,x"}), "--ids: 'x' is not a token id");
    expectOneLineError(cli({"detokenize", "-m", kSpm, "--ids", "32000"}), "--ids: 32000 is outside the vocabulary of 32000 tokens");
    expectOneLineError(cli({"detokenize", "-m", kSpm, "--ids", "-1"}), "--ids: -1 is outside the vocabulary");
}
