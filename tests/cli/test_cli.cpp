// inferscope-cli as a user runs it: exact figures, JSON events, one-line errors with exit code 1.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <cmath>
#include <sstream>

#include "common/kernel_set.h"
#include "model_test_helpers.h"
#include "cli_test_helpers.h"
#include "shared_data.h"

using namespace inferscope;
using namespace inferscope::testing_model;
using namespace inferscope::testing_process;
using namespace inferscope::testing_cli;

namespace {


}  // namespace

TEST(CliKv, Llama31_8BFigures) {
    // 32 layers, 8 KV heads, head dim 128, FP16: 128 KiB per token, 512 MiB at 4,096 tokens.
    auto r = cli({"kv", "--layers", "32", "--heads", "32", "--kv-heads", "8", "--head-dim", "128", "--dtype", "f16",
                  "--tokens", "4096", "--json"});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["bytes_per_token"], 131072u);
    EXPECT_EQ(j["total_bytes"], 536870912u);
    EXPECT_EQ(j["mha_bytes_per_token"], 4u * 131072u);  // GQA makes the cache 1/4 of MHA's
    EXPECT_EQ(j["mha_total_bytes"], 4u * 536870912u);
    // 32 users × 4,096 tokens: 16 GiB.
    auto users = cli({"kv", "--layers", "32", "--heads", "32", "--kv-heads", "8", "--head-dim", "128", "--dtype", "f16",
                      "--tokens", "4096", "--users", "32", "--json"});
    ASSERT_EQ(users.exitCode, 0);
    EXPECT_EQ(nlohmann::json::parse(users.out)["total_bytes"], 17179869184ull);
    // 128,000 tokens: ~16 GB.
    auto longCtx = cli({"kv", "--layers", "32", "--heads", "32", "--kv-heads", "8", "--head-dim", "128", "--dtype", "f16",
                        "--tokens", "128000", "--json"});
    EXPECT_EQ(nlohmann::json::parse(longCtx.out)["total_bytes"], 16777216000ull);
}

TEST(CliKv, TextOutputShowsTheFormula) {
    auto r = cli({"kv", "--layers", "32", "--heads", "32", "--kv-heads", "8", "--head-dim", "128", "--dtype", "f16", "--tokens", "4096"});
    ASSERT_EQ(r.exitCode, 0);
    EXPECT_NE(r.out.find("2 (K and V) x 32 layers x 8 KV heads x 128 head dim x 2 bytes = 131072 (128.00 KiB)"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("536870912 bytes (512.00 MiB)"), std::string::npos) << r.out;
}

TEST(CliKv, BlockTypesCountTheirScales) {
    // Q8_0: 34 bytes per 32 elements, Q4_0: 18 per 32 (what a --kv q8_0|q4_0 cache allocates).
    auto q8 = cli({"kv", "--layers", "32", "--heads", "32", "--kv-heads", "8", "--head-dim", "128", "--dtype", "q8_0",
                   "--tokens", "4096", "--json"});
    ASSERT_EQ(q8.exitCode, 0) << q8.err;
    EXPECT_EQ(nlohmann::json::parse(q8.out)["bytes_per_token"], 2u * 32 * 8 * 4 * 34);
    auto q4 = cli({"kv", "--layers", "32", "--heads", "32", "--kv-heads", "8", "--head-dim", "128", "--dtype", "q4_0", "--tokens", "4096"});
    ASSERT_EQ(q4.exitCode, 0) << q4.err;
    EXPECT_NE(q4.out.find("x 128 head dim x 18/32 bytes = 36864 (36.00 KiB)"), std::string::npos) << q4.out;
    expectOneLineError(cli({"kv", "--layers", "2", "--heads", "4", "--head-dim", "48", "--tokens", "4", "--dtype", "q8_0"}),
                       "head dim (48) must be a multiple of the block size (32)");
}

TEST(CliGenerate, BlockKvCacheRefusedOnStories260KsHeadDimension) {
    expectOneLineError(cli({"generate", "--device", "cpu", "--max-tokens", "2", "--kv", "q8_0"}),
                       "a q8_0 KV cache needs a head dimension that is a multiple of 32 (its blocks are per head); this "
                       "model's head dimension is 8");
}

TEST(CliKv, BadArguments) {
    expectOneLineError(cli({"kv", "--layers", "32", "--heads", "32", "--kv-heads", "7", "--head-dim", "128", "--tokens", "4"}),
                       "query heads (32) must be a multiple of KV heads (7)");
    expectOneLineError(cli({"kv", "--layers", "32", "--heads", "32", "--head-dim", "128", "--tokens", "4", "--dtype", "f8"}),
                       "dtype must be f32, f16, bf16, int8, q8_0 or q4_0, got 'f8'");
    expectOneLineError(cli({"kv", "--heads", "32", "--head-dim", "128", "--tokens", "4"}), "--layers is required");
    expectOneLineError(cli({"kv", "--layers", "x", "--heads", "32", "--head-dim", "128", "--tokens", "4"}), "--layers");
}

TEST(CliGenerate, GreedyJsonEventsMatchTheReference) {
    const Reference ref = loadReference("stories260K-greedy-1.json");
    auto r = cli({"generate", "--prompt", ref.prompt, "--temperature", "0", "--max-tokens", "8", "--top-n", "5", "--json",
                  "--device", "cpu"});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    const auto events = jsonLines(r.out);
    ASSERT_EQ(events.size(), 1u + 8u + 1u);
    EXPECT_EQ(events[0]["event"], "prefill");
    EXPECT_EQ(events[0]["tokens"], 5);
    for (int s = 0; s < 8; ++s) {
        const auto& e = events[size_t(s) + 1];
        EXPECT_EQ(e["event"], "token");
        EXPECT_EQ(e["step"], s);
        EXPECT_EQ(e["id"], ref.steps[size_t(s)].id);
        EXPECT_EQ(e["piece"], ref.steps[size_t(s)].piece);
        ASSERT_EQ(e["top"].size(), 5u);
        EXPECT_NEAR(e["logit"].get<float>(), ref.steps[size_t(s)].top[0].logit, logitTolerance(ref.steps[size_t(s)].top[0].logit));
        EXPECT_EQ(e["top"][0]["id"], ref.steps[size_t(s)].id);
        // top is sorted by logit
        for (size_t c = 1; c < 5; ++c) EXPECT_GE(e["top"][c - 1]["logit"].get<float>(), e["top"][c]["logit"].get<float>());
    }
    const auto& done = events.back();
    EXPECT_EQ(done["event"], "done");
    EXPECT_EQ(done["reason"], "length");
    EXPECT_EQ(done["kv_bytes_used"], 1280u * (5u + 7u));
    EXPECT_GT(done["decode_tokens_per_s"].get<double>(), 0.0);
    EXPECT_EQ(done["text"], ", there was a little girl");
}

TEST(CliGenerate, TextModeStreamsPromptAndContinuation) {
    auto r = cli({"generate", "--prompt", "Once upon a time", "--temperature", "0", "--max-tokens", "8"});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_EQ(r.out, "Once upon a time, there was a little girl\n");
    EXPECT_NE(r.err.find("[length] prefill 5 tokens"), std::string::npos) << r.err;
}

TEST(CliGenerate, NoKvCacheGivesTheSameText) {
    auto cached = cli({"generate", "--prompt", "Lily and Ben", "--temperature", "0", "--max-tokens", "24", "--json"});
    auto uncached = cli({"generate", "--prompt", "Lily and Ben", "--temperature", "0", "--max-tokens", "24", "--json", "--no-kv-cache"});
    ASSERT_EQ(cached.exitCode, 0);
    ASSERT_EQ(uncached.exitCode, 0);
    const auto a = jsonLines(cached.out).back(), b = jsonLines(uncached.out).back();
    EXPECT_EQ(a["text"], b["text"]);
    const int P = jsonLines(cached.out).front()["tokens"];  // BOS + the prompt's tokens
    EXPECT_EQ(a["kv_computed"], P + 23);                     // then 23 decode passes of one position
    EXPECT_EQ(b["kv_computed"], P + 23 * P + 23 * 24 / 2);   // pass i recomputes P + i positions
}

TEST(CliGenerate, SeededSamplingIsReproducible) {
    auto a = cli({"generate", "--prompt", "Once", "--seed", "7", "--max-tokens", "20", "--temperature", "1.2", "--json"});
    auto b = cli({"generate", "--prompt", "Once", "--seed", "7", "--max-tokens", "20", "--temperature", "1.2", "--json"});
    auto c = cli({"generate", "--prompt", "Once", "--seed", "8", "--max-tokens", "20", "--temperature", "1.2", "--json"});
    ASSERT_EQ(a.exitCode, 0);
    EXPECT_EQ(jsonLines(a.out).back()["text"], jsonLines(b.out).back()["text"]);
    EXPECT_NE(jsonLines(a.out).back()["text"], jsonLines(c.out).back()["text"]);
}

TEST(CliGenerate, BadArgumentsAreOneLineErrors) {
    expectOneLineError(cli({"generate", "--top-p", "1.5"}), "top-p must be in (0, 1], got 1.5");
    expectOneLineError(cli({"generate", "--temperature", "-1"}), "temperature must be >= 0, got -1");
    expectOneLineError(cli({"generate", "--max-tokens", "0"}), "max tokens must be at least 1, got 0");
    expectOneLineError(cli({"generate", "--device", "tpu"}), "device must be auto, cpu or gpu, got 'tpu'");
    expectOneLineError(cli({"generate", "--device", "gpu"}), "no GPU found by oneDNN");
    expectOneLineError(cli({"generate", "--threads", "-2"}), "threads must be between 1 and 1024");
    expectOneLineError(cli({"generate", "--model", "/nonexistent.gguf"}), "cannot open /nonexistent.gguf: No such file or directory");
    expectOneLineError(cli({"generate", "--temperature", "warm"}), "--temperature");
    expectOneLineError(cli({"frobnicate"}), "unknown command 'frobnicate'; commands: generate, info, kv");
    expectOneLineError(cli({}), "A subcommand is required");
}

TEST(CliInfo, DescribesStories260K) {
    auto r = cli({"info", "--json"});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["name"], "stories260K");  // general.name is just "llama": the file name says more
    EXPECT_EQ(j["architecture"], "llama");
    EXPECT_EQ(j["layers"], 5);
    EXPECT_EQ(j["heads"], 8);
    EXPECT_EQ(j["kv_heads"], 4);
    EXPECT_EQ(j["head_dim"], 8);
    EXPECT_EQ(j["context_length"], 2048);
    EXPECT_EQ(j["vocab_size"], 512);
    EXPECT_EQ(j["parameters"], 292800);  // 260,032 unique + the duplicated 512 × 64 output matrix
    EXPECT_EQ(j["weight_bytes"], 292800 * 4);
    EXPECT_EQ(j["tensor_types"]["F32"], 48);
    EXPECT_EQ(j["kv_bytes_per_token_f32"], 1280);
    EXPECT_EQ(j["kv_bytes_per_token_f16"], 640);
}

// Gemma 3's departures from Llama as `info` states them: head_dim from key_length, the 5:1
// local/global pattern with the local layers' own RoPE, and the cache kept whole.
TEST(CliInfo, DescribesGemma3Architecture) {
    INFERSCOPE_SHARED_FILE_OR_SKIP(model, "models/arch/gemma3-tiny.gguf");
    auto r = cli({"info", "--model", model, "--json"});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["architecture"], "gemma3");
    EXPECT_EQ(j["head_dim"], 64);  // key_length, not 128 / 4
    EXPECT_EQ(j["rope_mode"], "neox");
    EXPECT_EQ(j["sliding_window"], 32);
    EXPECT_EQ(j["sliding_layers"], 7);
    EXPECT_EQ(j["rope_freq_base"], 1e6);
    EXPECT_EQ(j["rope_freq_scale"], 0.125);
    EXPECT_EQ(j["rope_freq_base_sliding"], 10000.0);
    EXPECT_EQ(j["kv_bytes_per_token_f32"], 2 * 8 * 2 * 64 * 4);
    auto text = cli({"info", "--model", model});
    ASSERT_EQ(text.exitCode, 0) << text.err;
    EXPECT_NE(text.out.find("sliding window   32 positions on 7 of 8 layers (0-4, 6-7)\n"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("its layers' RoPE: base 10000, positions x 1\n"), std::string::npos) << text.out;
}

// Every tiny architecture model through the whole engine, from the reference's prompt text: the
// file's own tokenizer (byte-level BPE for llama3, qwen2, qwen3; SentencePiece for phi3 and the
// Gemmas) gives the reference's prompt ids, BOS as the vocabulary says, and the CLI's greedy ids are
// llama.cpp's (the float64 pass's for qwen3 and gemma3).
TEST(CliGenerate, ArchitectureModelsMatchTheirGreedyReferences) {
    for (const std::string name : {"llama3-tiny-greedy-1", "llama3-tiny-greedy-2", "qwen2-tiny-greedy-1",
                                   "qwen2-tiny-greedy-2", "qwen3-tiny-greedy-1", "qwen3-tiny-greedy-2",
                                   "phi3-tiny-greedy-1", "phi3-tiny-greedy-2", "gemma2-tiny-greedy-1",
                                   "gemma2-tiny-greedy-2", "gemma3-tiny-greedy-1", "gemma3-tiny-greedy-2"}) {
        SCOPED_TRACE(name);
        const std::string arch = name.substr(0, name.find('-'));
        INFERSCOPE_SHARED_FILE_OR_SKIP(model, "models/arch/" + arch + "-tiny.gguf");
        INFERSCOPE_SHARED_FILE_OR_SKIP(ref, "reference/arch/" + name + ".json");
        std::ifstream in(ref, std::ios::binary);
        std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        for (char& c : bytes)  // pieces may be half a UTF-8 character: only ids are read
            if (static_cast<unsigned char>(c) >= 0x80) c = '?';
        const auto j = nlohmann::json::parse(bytes);
        std::vector<int> expected;
        for (const auto& s : j["steps"]) expected.push_back(s["id"]);

        auto r = cli({"generate", "--model", model, "--prompt", j["prompt"], "--temperature", "0", "--max-tokens",
                      std::to_string(expected.size()), "--json"});
        ASSERT_EQ(r.exitCode, 0) << r.err;
        std::vector<int> ids;
        nlohmann::json done;
        for (const auto& line : jsonLines(r.out)) {
            if (line["event"] == "prefill") {
                EXPECT_EQ(line["prompt_tokens"], j["prompt_ids"].size());
            }
            if (line["event"] == "token") ids.push_back(line["id"]);
            if (line["event"] == "done") done = line;
        }
        EXPECT_EQ(ids, expected);
        auto tok = cli({"tokenize", "--model", model, "--text", j["prompt"], "--special", "--add-special", "--json"});
        ASSERT_EQ(tok.exitCode, 0) << tok.err;
        for (char& c : tok.out)  // only the ids are compared
            if (static_cast<unsigned char>(c) >= 0x80) c = '?';
        EXPECT_EQ(nlohmann::json::parse(tok.out)["ids"], j["prompt_ids"]);
        if (arch.rfind("gemma", 0) != 0) continue;
        // Sliding-window layers (window 32) score min(p + 1, 32) keys per query, the others p + 1.
        uint64_t global = 0, sliding = 0;
        for (uint64_t p = 0; p < j["prompt_ids"].size() + expected.size() - 1; ++p) global += p + 1, sliding += std::min<uint64_t>(p + 1, 32);
        EXPECT_EQ(done["attention_scores"], global);
        EXPECT_EQ(done["attention_scores_sliding"], sliding);
    }
}

TEST(CliInfo, UnknownArchitectureIsNamed) {
    TempDir dir;
    GgufWriter w;
    w.add("general.architecture", GgufMetaValue::string("mamba"));
    ASSERT_TRUE(w.writeFile(dir / "mamba.gguf"));
    expectOneLineError(cli({"info", "--model", (dir / "mamba.gguf").string()}),
                       "unsupported architecture 'mamba' (Inferscope runs llama, qwen2, qwen3, gemma2, gemma3 and phi3)");
}

TEST(CliInfo, MalformedFilesExitOneWithTheReason) {
    TempDir dir;
    auto write = [&](const std::string& name, std::vector<uint8_t> bytes) {
        std::ofstream(dir / name, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
        return (dir / name).string();
    };
    std::ifstream in(kStories, std::ios::binary);
    std::vector<uint8_t> good((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());

    auto truncated = good;
    truncated.resize(good.size() - 100);
    expectOneLineError(cli({"info", "--model", write("truncated.gguf", truncated)}),
                       "truncated.gguf: truncated: tensor blk.4.ffn_norm.weight ends at byte 1185376, file has 1185276");
    auto magic = good;
    magic[0] = 'X';
    expectOneLineError(cli({"info", "--model", write("magic.gguf", magic)}), "not a GGUF file");
    auto counts = good;
    for (int i = 8; i < 16; ++i) counts[size_t(i)] = 0xff;  // tensor count 2^64 - 1
    expectOneLineError(cli({"info", "--model", write("counts.gguf", counts)}), "absurd tensor count");
    expectOneLineError(cli({"generate", "--model", write("empty.gguf", {})}), "is empty");
    // The same errors through generate, which loads the whole model.
    expectOneLineError(cli({"generate", "--model", (dir / "truncated.gguf").string()}), "ends at byte 1185376, file has 1185276");
}

TEST(CliScore, JsonLinePerPositionThenPerplexity) {
    // Teacher-forced on llama.cpp's own greedy tokens: each position's top-1 is the next token.
    const Reference ref = loadReference("stories260K-greedy-1.json");
    std::vector<int32_t> ids = ref.promptIds;
    for (size_t s = 0; s < 6; ++s) ids.push_back(ref.steps[s].id);
    std::string list;
    for (int32_t id : ids) list += (list.empty() ? "" : ",") + std::to_string(id);
    auto r = cli({"score", "--ids", list, "--top-n", "3", "--json", "--device", "cpu"});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    const auto events = jsonLines(r.out);
    ASSERT_EQ(events.size(), ids.size() + 1);
    double nll = 0;
    for (size_t i = 0; i < ids.size(); ++i) {
        const auto& e = events[i];
        EXPECT_EQ(e["event"], "score");
        EXPECT_EQ(e["position"], i);
        ASSERT_EQ(e["top"].size(), 3u);
        if (i + 1 == ids.size()) {
            EXPECT_TRUE(e["next_id"].is_null());
            continue;
        }
        EXPECT_EQ(e["next_id"], ids[i + 1]);
        nll -= std::log(e["next_p"].get<double>());
        if (i + 1 >= ref.promptIds.size()) {  // a greedy step: the reference's pick and logit
            const RefStep& step = ref.steps[i + 1 - ref.promptIds.size()];
            EXPECT_EQ(e["top"][0]["id"], step.id);
            EXPECT_NEAR(e["next_logit"].get<float>(), step.top[0].logit, logitTolerance(step.top[0].logit));
            // log p moves by the logit's error plus the normaliser's; the reference prints p to 6 decimals
            EXPECT_NEAR(std::log(e["next_p"].get<double>()), std::log(step.top[0].p),
                        2 * logitTolerance(step.top[0].logit) + 0.5e-6 / step.top[0].p);
        }
    }
    EXPECT_EQ(events.back()["event"], "done");
    EXPECT_EQ(events.back()["tokens"], ids.size());
    EXPECT_NEAR(events.back()["perplexity"].get<double>(), std::exp(nll / double(ids.size() - 1)), 1e-9);
}

TEST(CliScore, BadArgumentsAreOneLineErrors) {
    expectOneLineError(cli({"score", "--device", "cpu"}), "score needs exactly one of --prompt and --ids");
    expectOneLineError(cli({"score", "--prompt", "a", "--ids", "1", "--device", "cpu"}), "score needs exactly one of --prompt and --ids");
    expectOneLineError(cli({"score", "--ids", "1,x", "--device", "cpu"}), "--ids must be comma-separated token ids, got 'x'");
    expectOneLineError(cli({"score", "--ids", "1,512", "--device", "cpu"}), "token id 512 is outside the vocabulary (0 to 511)");
}

TEST(CliInfo, QuantizedMixListsItsTypesAndRealBytesPerToken) {
    INFERSCOPE_SHARED_FILE_OR_SKIP(model, "models/quant/stories260K-wide-Q4_K_M.gguf");
    // From ../shared/models/quant/README.md's table: Q4_K everywhere but output.weight and, in
    // layers 2 and 4, attn_v and ffn_down (Q6_K); 11 F32 norms. One decode step reads every matrix
    // (Q4_K 144 B and Q6_K 210 B per 256 weights), the norms and one 144-byte embedding row.
    auto r = cli({"info", "--model", model});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.out.find("tensor types     Q4_K \u00d732, F32 \u00d711, Q6_K \u00d75\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("decode reads     1275536 weight bytes per token"), std::string::npos) << r.out;
    auto j = cli({"info", "--model", model, "--json"});
    ASSERT_EQ(j.exitCode, 0) << j.err;
    const auto info = nlohmann::json::parse(j.out);
    EXPECT_EQ(info["decode_bytes_per_token"], 1275536u);
    EXPECT_EQ(info["tensor_types"]["Q6_K"], 5);
}

// The kernel set in use is named; INFERSCOPE_KERNELS forces one and a set this CPU lacks is
// refused before anything runs (common/kernel_set.h).
TEST(CliInfo, NamesTheKernelSetAndRefusesOneTheCpuLacks) {
    struct Restore {
        ~Restore() { ::unsetenv("INFERSCOPE_KERNELS"); }
    } restore;
    ::setenv("INFERSCOPE_KERNELS", "portable", 1);
    auto r = cli({"info"});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.out.find("\nkernels          portable (x86-64 baseline (SSE2); INFERSCOPE_KERNELS=portable|avx2|avx512 forces one)\n"),
              std::string::npos) << r.out;
    r = cli({"info", "--json"});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["kernel_set"], "portable");
    ::unsetenv("INFERSCOPE_KERNELS");
    r = cli({"info", "--json"});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["kernel_set"], kernelSetName(bestKernelSet()));
    EXPECT_EQ(nlohmann::json::parse(r.out)["kernel_extensions"], kernelSetExtensions(bestKernelSet()));  // "VNNI + BF16" where the CPU has both
    ::setenv("INFERSCOPE_KERNELS", "sse9", 1);
    expectOneLineError(cli({"info"}), "INFERSCOPE_KERNELS=sse9 is not a kernel set (portable, avx2 or avx512)");
    for (KernelSet set : kKernelSets) {
        if (kernelSetUnavailableReason(set).empty()) continue;
        ::setenv("INFERSCOPE_KERNELS", kernelSetName(set), 1);
        expectOneLineError(cli({"info"}), std::string("INFERSCOPE_KERNELS=") + kernelSetName(set) + " refused: " +
                                              kernelSetUnavailableReason(set));
    }
}
