// inferscope-cli synth and bench as a user runs them: the structure of the output, never the speed
// (the test machine is shared and noisy).
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "model_test_helpers.h"
#include "cli_test_helpers.h"

using namespace inferscope::testing_model;
using namespace inferscope::testing_process;
using namespace inferscope::testing_cli;


TEST(CliSynth, WritesATinyModelThatInfoDescribes) {
    TempDir dir;
    const std::string out = (dir / "tiny.gguf").string();
    auto r = cli({"synth", "--shape", "stories260k", "--dtype", "q8_0", "--out", out, "--seed", "7"});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    auto info = cli({"info", "--model", out, "--json"});
    ASSERT_EQ(info.exitCode, 0) << info.err;
    const auto j = nlohmann::json::parse(info.out);
    EXPECT_EQ(j["layers"], 5);
    EXPECT_EQ(j["vocab_size"], 512);
    EXPECT_EQ(j["tensor_types"]["Q8_0"], 32);  // every matrix but the 5 ffn_down (172 wide: not whole blocks)
    EXPECT_EQ(j["tensor_types"]["F32"], 16);   // those, and the 11 norms
    EXPECT_EQ(j["tokenizer"], "llama");
}

// Each quantized dtype on both small shapes: the tensor types llama-quantize gives the same model
// (stories260k-wide: counted in ../shared's stories260K-wide-<T>.gguf; stories260k: its fallbacks for
// 64- and 172-wide rows), and the file loads and generates greedily.
TEST(CliSynth, QuantizedDtypesHaveLlamaQuantizesTypesAndGenerate) {
    struct Case {
        const char* shape;
        const char* dtype;
        std::map<std::string, int> types;
    };
    const Case cases[] = {
        {"stories260k-wide", "q4_0", {{"Q4_0", 36}, {"Q6_K", 1}, {"F32", 11}}},
        {"stories260k-wide", "q8_0", {{"Q8_0", 37}, {"F32", 11}}},
        {"stories260k-wide", "q4_k_m", {{"Q4_K", 32}, {"Q6_K", 5}, {"F32", 11}}},
        {"stories260k-wide", "q5_k_m", {{"Q5_K", 32}, {"Q6_K", 5}, {"F32", 11}}},
        {"stories260k-wide", "q6_k", {{"Q6_K", 37}, {"F32", 11}}},
        {"stories260k", "q4_0", {{"Q4_0", 31}, {"Q8_0", 1}, {"F16", 5}, {"F32", 11}}},
        {"stories260k", "q4_k_m", {{"Q5_0", 29}, {"Q8_0", 3}, {"F16", 5}, {"F32", 11}}},
        {"stories260k", "q5_k_m", {{"Q5_1", 29}, {"Q8_0", 3}, {"F16", 5}, {"F32", 11}}},
        {"stories260k", "q6_k", {{"Q8_0", 32}, {"F16", 5}, {"F32", 11}}},
    };
    TempDir dir;
    for (const Case& c : cases) {
        SCOPED_TRACE(std::string(c.shape) + " " + c.dtype);
        const std::string out = (dir / (std::string(c.dtype) + ".gguf")).string();
        auto r = cli({"synth", "--shape", c.shape, "--dtype", c.dtype, "--out", out});
        ASSERT_EQ(r.exitCode, 0) << r.err;
        auto info = cli({"info", "--model", out, "--json"});
        ASSERT_EQ(info.exitCode, 0) << info.err;
        using TypeCounts = std::map<std::string, int>;
        EXPECT_EQ(nlohmann::json::parse(info.out)["tensor_types"].get<TypeCounts>(), c.types);
        auto gen = cli({"generate", "--model", out, "--prompt", "Once upon a time", "--temperature", "0", "--max-tokens", "6",
                        "--json", "--threads", "2"});
        ASSERT_EQ(gen.exitCode, 0) << gen.err;
        int tokens = 0;
        std::string reason;
        for (size_t b = 0, e; b < gen.out.size(); b = e + 1) {
            e = gen.out.find('\n', b);
            if (e == std::string::npos) e = gen.out.size();
            if (e == b) continue;
            const auto j = nlohmann::json::parse(gen.out.substr(b, e - b));
            if (j["event"] == "token") ++tokens;
            if (j["event"] == "done") reason = j["reason"];
        }
        EXPECT_EQ(tokens, 6);
        EXPECT_EQ(reason, "length");
    }
}

TEST(CliSynth, BadArgumentsAreOneLineErrors) {
    TempDir dir;
    auto r = cli({"synth", "--shape", "gpt-5", "--out", (dir / "x.gguf").string()});
    EXPECT_EQ(r.exitCode, 1);
    EXPECT_NE(r.err.find("unknown shape 'gpt-5'; shapes: tinyllama-1.1b, llama-110m, stories260k, stories260k-wide"), std::string::npos) << r.err;
    r = cli({"synth", "--shape", "stories260k", "--dtype", "q2_k", "--out", (dir / "x.gguf").string()});
    EXPECT_EQ(r.exitCode, 1);
    EXPECT_NE(r.err.find("dtype must be f32, f16, bf16, q8_0, q4_0, q4_k_m, q5_k_m or q6_k, got 'q2_k'"), std::string::npos)
        << r.err;
}

TEST(CliBench, JsonHasEveryFigure) {
    auto r = cli({"bench", "--model", kStories, "--prompt-tokens", "8,16", "--gen-tokens", "4", "--repeat", "2", "--json",
                  "--probe-mib", "16", "--peak-seconds", "0.01", "--depth", "30", "--wait-quiet", "0"});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    for (const char* key : {"commit", "cpu_isa", "threads", "precision", "load_ms", "peak_rss_bytes", "peak_rss_budget_bytes",
                            "kv_cache_bytes", "matmul_peak_gflops", "clean_rounds", "others_cpu_share_per_round", "tests"})
        EXPECT_TRUE(j.contains(key)) << key;
    EXPECT_GT(j["threads"].get<int>(), 0);
    EXPECT_GT(j["matmul_peak_gflops"]["f32"].get<double>(), 0.0);
    ASSERT_EQ(j["tests"].size(), 4u);
    EXPECT_EQ(j["tests"][0]["test"], "pp8");
    EXPECT_EQ(j["tests"][1]["test"], "pp16");
    EXPECT_EQ(j["tests"][2]["test"], "tg4");
    EXPECT_EQ(j["tests"][3]["test"], "tg16@30");
    EXPECT_EQ(j["tests"][0]["tokens_per_s"]["samples"].size(), 2u);
    EXPECT_GT(j["tests"][0]["tokens_per_s"]["median"].get<double>(), 0.0);
    EXPECT_GT(j["tests"][2]["bandwidth_gbs"]["median"].get<double>(), 0.0);
    EXPECT_GT(j["tests"][2]["fraction_of_bound"]["median"].get<double>(), 0.0);
}

TEST(CliBench, TextTableAndErrors) {
    auto r = cli({"bench", "--prompt-tokens", "4", "--gen-tokens", "2", "--repeat", "1", "--probe-mib", "16", "--peak-seconds", "0.01", "--wait-quiet", "0"});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.out.find("pp4 "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("tg2 "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("% of bound"), std::string::npos) << r.out;
    r = cli({"bench", "--prompt-tokens", "x", "--repeat", "1"});
    EXPECT_EQ(r.exitCode, 1);
    EXPECT_NE(r.err.find("--prompt-tokens must be a comma-separated list"), std::string::npos) << r.err;
}
