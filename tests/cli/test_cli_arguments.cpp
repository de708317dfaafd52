// inferscope-cli with every option given bad values: negative, zero where invalid, huge, NaN and
// infinities, non-numeric, empty, missing, unknown flags, and files that are not model files (a
// directory, /dev/zero, an empty file, a text file). Each must be exactly one line on stderr
// starting "inferscope-cli: " and naming the problem, exit code 1, and no crash or hang (every
// run is killed after 60 s and then fails).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "model_test_helpers.h"

using namespace inferscope::testing_model;

namespace {

struct Outcome {
    int exitCode = -1;  // -1: killed by a signal (a crash) or by the time limit (a hang)
    bool timedOut = false;
    std::string err;
};

Outcome runCli(const std::vector<std::string>& args) {
    static int counter = 0;
    const std::string errPath = testing::TempDir() + "cli-args-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
    const pid_t pid = ::fork();
    if (pid == 0) {
        if (!std::freopen(errPath.c_str(), "w", stderr) || !std::freopen("/dev/null", "w", stdout) ||
            !std::freopen("/dev/null", "r", stdin))
            ::_exit(126);
        std::vector<char*> argv{const_cast<char*>(INFERSCOPE_CLI)};
        for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        ::execv(INFERSCOPE_CLI, argv.data());
        ::_exit(127);
    }
    Outcome o;
    int status = 0;
    const auto t0 = std::chrono::steady_clock::now();
    while (::waitpid(pid, &status, WNOHANG) == 0) {
        if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(60)) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, &status, 0);
            o.timedOut = true;
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (!o.timedOut && WIFEXITED(status)) o.exitCode = WEXITSTATUS(status);
    std::ifstream in(errPath);
    std::stringstream ss;
    ss << in.rdbuf();
    o.err = ss.str();
    std::remove(errPath.c_str());
    return o;
}

struct Case {
    std::vector<std::string> args;
    std::string message;  // a part of the one stderr line
};

std::string joined(const std::vector<std::string>& args) {
    std::string s;
    for (const auto& a : args) s += (s.empty() ? "'" : " '") + a + "'";
    return s;
}

void expectAllRefused(const std::vector<Case>& cases) {
    for (const Case& c : cases) {
        SCOPED_TRACE(joined(c.args));
        const Outcome o = runCli(c.args);
        EXPECT_FALSE(o.timedOut);
        EXPECT_EQ(o.exitCode, 1) << o.err;
        std::vector<std::string> lines;
        std::istringstream in(o.err);
        for (std::string line; std::getline(in, line);) lines.push_back(line);
        ASSERT_EQ(lines.size(), 1u) << o.err;
        EXPECT_EQ(lines[0].rfind("inferscope-cli: ", 0), 0u) << lines[0];
        EXPECT_NE(lines[0].find(c.message), std::string::npos) << lines[0];
    }
}

const std::string kData = INFERSCOPE_TEST_DATA_DIR;

}  // namespace

TEST(CliArguments, Generate) {
    TempDir dir;
    std::ofstream(dir / "empty.gguf").close();
    const std::string empty = (dir / "empty.gguf").string();
    auto gen = [](std::vector<std::string> args) {
        if (std::find(args.begin(), args.end(), "--max-tokens") == args.end()) args.insert(args.begin(), {"--max-tokens", "2"});
        if (std::find(args.begin(), args.end(), "--device") == args.end()) args.insert(args.begin(), {"--device", "cpu"});
        args.insert(args.begin(), "generate");
        return args;
    };
    expectAllRefused({
        {gen({"--max-tokens", "-1"}), "max tokens must be at least 1, got -1"},
        {gen({"--max-tokens", "0"}), "max tokens must be at least 1, got 0"},
        {gen({"--max-tokens", "abc"}), "--max-tokens"},
        {gen({"--max-tokens", "1e9"}), "--max-tokens"},
        {gen({"--max-tokens", "2147483648"}), "--max-tokens"},
        {gen({"--max-tokens", ""}), "--max-tokens: must not be empty"},
        {gen({"--temperature", "-1"}), "temperature must be >= 0, got -1"},
        {gen({"--temperature", "nan"}), "temperature must be >= 0, got nan"},
        {gen({"--temperature", "inf"}), "temperature must be finite, got inf"},
        {gen({"--temperature", "1e999"}), "temperature must be finite"},
        {gen({"--temperature", "warm"}), "--temperature"},
        {gen({"--temperature", ""}), "--temperature: must not be empty"},
        {gen({"--top-k", "abc"}), "--top-k"},
        {gen({"--top-k", "1.5"}), "--top-k"},
        {gen({"--top-k", "99999999999"}), "--top-k"},
        {gen({"--top-p", "0"}), "top-p must be in (0, 1], got 0"},
        {gen({"--top-p", "1.5"}), "top-p must be in (0, 1], got 1.5"},
        {gen({"--top-p", "-0.1"}), "top-p must be in (0, 1]"},
        {gen({"--top-p", "nan"}), "top-p must be in (0, 1], got nan"},
        {gen({"--min-p", "-0.1"}), "min-p must be in [0, 1]"},
        {gen({"--min-p", "2"}), "min-p must be in [0, 1], got 2"},
        {gen({"--min-p", "nan"}), "min-p must be in [0, 1], got nan"},
        {gen({"--repeat-penalty", "0"}), "repeat-penalty must be > 0, got 0"},
        {gen({"--repeat-penalty", "-1"}), "repeat-penalty must be > 0"},
        {gen({"--repeat-penalty", "nan"}), "repeat-penalty must be > 0, got nan"},
        {gen({"--repeat-penalty", "inf"}), "repeat-penalty must be finite, got inf"},
        {gen({"--repeat-last-n", "-2"}), "repeat-last-n must be >= -1"},
        {gen({"--repeat-last-n", "x"}), "--repeat-last-n"},
        {gen({"--seed", "-1"}), "--seed: must be a whole number from 0 to 18446744073709551615, got '-1'"},
        {gen({"--seed", "abc"}), "--seed"},
        {gen({"--seed", "18446744073709551616"}), "--seed"},
        {gen({"--top-n", "-1"}), "top-n must be in [0, "},
        {gen({"--top-n", "100000"}), "top-n must be in [0, "},
        {gen({"--stop", ""}), "--stop: must not be empty"},
        {gen({"--device", "tpu"}), "device must be auto, cpu or gpu, got 'tpu'"},
        {gen({"--device", ""}), "--device: must not be empty"},
        {gen({"--compute", "fp8"}), "compute precision must be auto, f32, bf16 or int8, got 'fp8'"},
        {gen({"--kv", "q4"}), "KV cache type must be f32, f16, q8_0 or q4_0, got 'q4'"},
        {gen({"--threads", "-2"}), "threads must be between 1 and 1024"},
        {gen({"--threads", "100000"}), "threads must be between 1 and 1024"},
        {gen({"--threads", "x"}), "--threads"},
        {gen({"--ctx", "-1"}), "context length must be positive, got -1"},
        {gen({"--ctx", "x"}), "--ctx"},
        {gen({"--ctx", "99999999999"}), "--ctx"},
        {gen({"--batch", "0"}), "batch size must be positive, got 0"},
        {gen({"--batch", "-3"}), "batch size must be positive, got -3"},
        {gen({"--model", ""}), "--model: must not be empty"},
        {gen({"--model", "/nonexistent.gguf"}), "cannot open /nonexistent.gguf: No such file or directory"},
        {gen({"--model", kData}), kData + " is not a regular file"},
        {gen({"--model", "/dev/zero"}), "/dev/zero is not a regular file"},
        {gen({"--model", empty}), empty + " is empty"},
        {gen({"--model", kData + "/README.md"}), "README.md: not a GGUF file"},
        {gen({"--tokenizer", ""}), "--tokenizer: must not be empty"},
        {gen({"--tokenizer", "/dev/zero"}), "/dev/zero"},
        {gen({"--tokenizer", kData}), "Is a directory"},
        {gen({"--tokenizer", kData + "/README.md"}), "README.md: not a usable SentencePiece model"},
        {gen({"--tokenizer", kData + "/tokenizer.model"}), "the tokenizer has 32000 tokens but the model's embedding has 512 rows"},
        {gen({"--ctx", "8", "--prompt", "Once upon a time there was a little girl who"}), "the context holds 8"},
        {gen({"--bogus"}), "--bogus"},
        {gen({"extra"}), "extra"},
        {{"generate", "--max-tokens"}, "--max-tokens"},
        {{"generate", "--model"}, "--model"},
        {{"generate", "--prompt"}, "--prompt"},
    });
}

TEST(CliArguments, Info) {
    expectAllRefused({
        {{"info", "--model", ""}, "--model: must not be empty"},
        {{"info", "--model", kData}, "is not a regular file"},
        {{"info", "--model", "/dev/zero"}, "/dev/zero is not a regular file"},
        {{"info", "--model", kData + "/tokenizer.model"}, "tokenizer.model: not a GGUF file"},
        {{"info", "--model", kData + "/ggml-vocab-llama-spm.gguf"}, "missing tensor token_embd.weight"},
        {{"info", "--bogus"}, "--bogus"},
        {{"info", "--model"}, "--model"},
    });
}

TEST(CliArguments, Kv) {
    const std::vector<std::string> base = {"kv", "--layers", "32", "--heads", "32", "--head-dim", "128", "--tokens", "4096"};
    auto with = [&](const std::string& option, const std::string& value) {
        std::vector<std::string> args = base;
        auto it = std::find(args.begin(), args.end(), option);
        if (it != args.end()) *(it + 1) = value;
        else args.insert(args.end(), {option, value});
        return args;
    };
    std::vector<Case> cases;
    for (const std::string option : {"--layers", "--heads", "--head-dim", "--tokens", "--users", "--kv-heads"}) {
        cases.push_back({with(option, "-1"), option + ": must be a whole number from 0 to 18446744073709551615, got '-1'"});
        cases.push_back({with(option, "x"), option + ": must be a whole number"});
        cases.push_back({with(option, "18446744073709551616"), option + ": must be a whole number"});
        cases.push_back({with(option, ""), option + ": must "});
    }
    cases.push_back({with("--layers", "0"), "must be positive"});
    cases.push_back({with("--tokens", "0"), "tokens and users must be positive"});
    cases.push_back({with("--users", "0"), "tokens and users must be positive"});
    cases.push_back({with("--kv-heads", "0"), "must be positive"});
    cases.push_back({with("--kv-heads", "64"), "KV heads (64) cannot exceed query heads (32)"});
    cases.push_back({with("--tokens", "18446744073709551615"), "the KV-cache size overflows 64 bits"});
    cases.push_back({with("--dtype", ""), "--dtype: must not be empty"});
    cases.push_back({with("--dtype", "f8"), "got 'f8'"});
    cases.push_back({{"kv", "--heads", "32", "--head-dim", "128", "--tokens", "4"}, "--layers is required"});
    cases.push_back({{"kv", "--layers"}, "--layers"});
    expectAllRefused(cases);
}

TEST(CliArguments, Synth) {
    TempDir dir;
    const std::string out = (dir / "x.gguf").string();
    auto synth = [&](std::vector<std::string> args) {
        std::vector<std::string> all = {"synth", "--shape", "stories260k", "--out", out};
        all.insert(all.end(), args.begin(), args.end());
        return all;
    };
    expectAllRefused({
        {{"synth", "--shape", "", "--out", out}, "--shape: must not be empty"},
        {{"synth", "--shape", "gpt-5", "--out", out}, "gpt-5"},
        {synth({"--dtype", "q4_k_s"}), "q4_k_s"},
        {synth({"--dtype", ""}), "--dtype: must not be empty"},
        {synth({"--seed", "-1"}), "--seed: must be a whole number"},
        {synth({"--seed", "x"}), "--seed"},
        {synth({"--vocab", ""}), "--vocab: must not be empty"},
        {synth({"--vocab", "/dev/zero"}), "--vocab: /dev/zero is not a regular file"},
        {synth({"--vocab", kData}), "is not a regular file"},
        {synth({"--vocab", kData + "/ggml-vocab-llama-spm.gguf"}), "has no vocabulary of at most 512 tokens"},
        {{"synth", "--shape", "stories260k", "--out", ""}, "--out: must not be empty"},
        {{"synth", "--shape", "stories260k", "--out", "/nonexistent/dir/x.gguf"}, "--out: /nonexistent/dir is not a directory"},
        {{"synth", "--shape", "stories260k", "--out", kData}, "--out: " + kData + " is a directory"},
        {{"synth", "--shape", "stories260k"}, "--out is required"},
    });
    EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(CliArguments, Bench) {
    auto bench = [](std::vector<std::string> args) {
        for (const char* option : {"--repeat", "--gen-tokens", "--prompt-tokens"})
            if (std::find(args.begin(), args.end(), option) == args.end()) args.insert(args.begin(), {option, option[2] == 'p' ? "8" : "1"});
        args.insert(args.begin(), "bench");
        return args;
    };
    expectAllRefused({
        {bench({"--prompt-tokens", "12abc"}), "--prompt-tokens must be a comma-separated list"},
        {bench({"--prompt-tokens", "0"}), "--prompt-tokens"},
        {bench({"--prompt-tokens", "-5"}), "--prompt-tokens"},
        {bench({"--prompt-tokens", "1,,2"}), "--prompt-tokens"},
        {bench({"--prompt-tokens", "2,"}), "--prompt-tokens"},
        {bench({"--prompt-tokens", "99999999999"}), "--prompt-tokens"},
        {bench({"--gen-tokens", "0"}), "--gen-tokens must be between 1 and"},
        {bench({"--gen-tokens", "-1"}), "--gen-tokens must be between 1 and"},
        {bench({"--gen-tokens", "x"}), "--gen-tokens"},
        {bench({"--repeat", "0"}), "--repeat must be between 1 and 1000, got 0"},
        {bench({"--repeat", "100000"}), "--repeat must be between 1 and 1000"},
        {bench({"--depth", "-1"}), "--depth must be between 0 and"},
        {bench({"--depth", "2147483647"}), "--depth must be between 0 and"},
        {bench({"--probe-mib", "0"}), "--probe-mib must be between 1 and 65536, got 0"},
        {bench({"--probe-mib", "-1"}), "--probe-mib must be between 1 and 65536, got -1"},
        {bench({"--probe-mib", "100000000"}), "--probe-mib must be between 1 and 65536"},
        {bench({"--peak-seconds", "nan"}), "--peak-seconds must be between 0.001 and 60, got nan"},
        {bench({"--peak-seconds", "inf"}), "--peak-seconds must be between 0.001 and 60, got inf"},
        {bench({"--peak-seconds", "-1"}), "--peak-seconds"},
        {bench({"--peak-seconds", "0"}), "--peak-seconds"},
        {bench({"--max-busy", "nan"}), "--max-busy must be between 0 and 1, got nan"},
        {bench({"--max-busy", "2"}), "--max-busy"},
        {bench({"--wait-quiet", "-1"}), "--wait-quiet must be between 0 and 3600 seconds"},
        {bench({"--wait-quiet", "inf"}), "--wait-quiet"},
        {bench({"--wait-quiet", "1e300"}), "--wait-quiet"},
        {bench({"--threads", "-1"}), "threads must be between 1 and 1024"},
        {bench({"--compute", "fp8"}), "got 'fp8'"},
        {bench({"--kv", ""}), "--kv: must not be empty"},
        {bench({"--model", ""}), "--model: must not be empty"},
        {bench({"--model", "/dev/zero"}), "/dev/zero is not a regular file"},
        {bench({"--depth", "100000"}), "the tests need 100017 positions but the model's context is 2048"},
        {bench({"--bogus"}), "--bogus"},
    });
}

TEST(CliArguments, TopLevel) {
    expectAllRefused({
        {{}, "A subcommand is required"},
        {{"frobnicate"}, "unknown command 'frobnicate'"},
        {{""}, "unknown command ''"},
        {{"--bogus"}, "unknown option '--bogus' before the command"},
        {{"generate", "info"}, "info"},
    });
}
