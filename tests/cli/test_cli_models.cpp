// inferscope-cli models, run as a user runs it: `list --json` over a fake home with every tool's
// layout, `search` and `pull` against the fixture hub (HF_ENDPOINT): progress on stderr, the path
// as stdout's last line, a cut download resumed by running the command again, a hash mismatch
// and each HTTP error as exit 1 with one line.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <map>
#include <sstream>

#include "catalog_test_helpers.h"
#include "process_runner.h"

using namespace inferscope;
using namespace inferscope::testing_catalog;
using testing_hub::HubFixture;
using testing_model::TempDir;
using testing_process::runProcess;

namespace {

// The CLI's environment for one run: a fake home, the fixture as the hub, nothing inherited that
// would point elsewhere.
struct CliEnv {
    explicit CliEnv(const FakeHome& home, const std::string& endpoint = "") {
        ::setenv("HOME", home.env.home.c_str(), 1);
        for (const char* v : {"XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "OLLAMA_MODELS", "HF_HOME", "HF_HUB_CACHE",
                              "HUGGINGFACE_HUB_CACHE", "LLAMA_CACHE", "HF_TOKEN"})
            ::unsetenv(v);
        if (!endpoint.empty()) ::setenv("HF_ENDPOINT", endpoint.c_str(), 1);
        else ::unsetenv("HF_ENDPOINT");
    }
};

std::vector<std::string> lines(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
}

}  // namespace

TEST(CliModels, ListJsonHasOneObjectPerModelWithTheIssuesFields) {
    TempDir dir;
    FakeHome home(dir / "t");
    CliEnv env(home);
    auto r = runProcess(INFERSCOPE_CLI, {"models", "list", "--json", "--kv", "f16"});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    std::map<std::string, nlohmann::json> bySource;
    for (const auto& line : lines(r.out)) {
        auto j = nlohmann::json::parse(line);
        // Only the fake home's files (a machine running this may have the system Ollama folder).
        if (j["path"].get<std::string>().rfind(home.env.home, 0) != 0) continue;
        bySource[j["source"]] = j;
    }
    ASSERT_EQ(bySource.size(), 7u) << r.out;
    const auto& o = bySource.at("ollama");
    EXPECT_EQ(o["name"], "stories:260k, stories:latest");
    EXPECT_EQ(o["bytes"], fs::file_size(kStories));
    EXPECT_EQ(o["quantization"], "F32");
    EXPECT_EQ(o["architecture"], "llama");
    EXPECT_EQ(o["context"], 2048);
    EXPECT_GT(o["parameters"].get<uint64_t>(), 200000u);
    EXPECT_EQ(o["fit"]["verdict"], "fits");
    EXPECT_EQ(o["fit"]["context"], 2048);
    EXPECT_EQ(bySource.at("huggingface")["name"], "karpathy/tinyllamas/stories/stories260K.gguf");
    EXPECT_EQ(bySource.at("lmstudio")["name"], "lmstudio-community/stories260K-GGUF/stories260K-F32.gguf");
    EXPECT_EQ(bySource.at("jan")["name"], "Stories 260K");
    EXPECT_EQ(bySource.at("gpt4all")["name"], "Tiny Stories 260K");
    EXPECT_EQ(bySource.at("llama.cpp")["name"], "ggml-org/stories/stories260K-Q8.gguf");
    EXPECT_EQ(bySource.at("inferscope")["name"], "org/repo/model.gguf");
    // The second listing reads no header: the cache (in the fake home's cache folder) answers.
    auto again = runProcess(INFERSCOPE_CLI, {"models", "list"});
    ASSERT_EQ(again.exitCode, 0) << again.err;
    EXPECT_NE(again.err.find("(0 headers read, "), std::string::npos) << again.err;
    EXPECT_TRUE(fs::exists(fs::path(home.env.home) / ".cache/inferscope/model-headers.json"));
}

TEST(CliModels, SearchAndPullAgainstTheHubFixture) {
    TempDir dir;
    FakeHome home(dir / "t");
    HubFixture hub;
    const std::string model = readAll(kStories);
    hub.addFile("karpathy/tinyllamas", "stories260K.gguf", model);
    CliEnv env(home, hub.endpoint());

    auto search = runProcess(INFERSCOPE_CLI, {"models", "search", "tinyllamas", "--json"});
    ASSERT_EQ(search.exitCode, 0) << search.err;
    EXPECT_EQ(nlohmann::json::parse(search.out)["id"], "karpathy/tinyllamas");

    // Cut at 40% with no retry: exit 1, one line, the .part kept.
    hub.cutAtPercent = 40;
    auto cut = runProcess(INFERSCOPE_CLI, {"models", "pull", "karpathy/tinyllamas", "stories260K.gguf", "--retries", "0"});
    EXPECT_EQ(cut.exitCode, 1);
    const auto errLines = cut.errLines();
    ASSERT_FALSE(errLines.empty());
    EXPECT_EQ(errLines.back().rfind("inferscope-cli: the connection failed: ", 0), 0u) << cut.err;
    EXPECT_NE(errLines.back().find("stories260K.gguf.part is kept: run the same command again to resume"), std::string::npos);
    EXPECT_TRUE(cut.out.empty());

    // The same command again resumes from the .part and prints the path last.
    hub.clearRequests();
    auto pull = runProcess(INFERSCOPE_CLI, {"models", "pull", "karpathy/tinyllamas", "stories260K.gguf"});
    ASSERT_EQ(pull.exitCode, 0) << pull.err;
    const fs::path expected = fs::path(home.env.home) / ".local/share/inferscope/models/karpathy/tinyllamas/stories260K.gguf";
    EXPECT_EQ(lines(pull.out).back(), expected.string());
    EXPECT_EQ(readAll(expected), model);
    EXPECT_NE(pull.err.find("100% "), std::string::npos) << pull.err;
    EXPECT_NE(pull.err.find("(resumed at "), std::string::npos) << pull.err;
    for (const auto& r : hub.requests()) {
        if (r.listener == "cdn") {
            EXPECT_EQ(r.range, "bytes=" + std::to_string(model.size() * 40 / 100) + "-");
        }
    }
    // and the library lists it as ours
    auto list = runProcess(INFERSCOPE_CLI, {"models", "list", "--json"});
    EXPECT_NE(list.out.find("\"source\":\"inferscope\",\"name\":\"karpathy/tinyllamas/stories260K.gguf\""), std::string::npos) << list.out;
}

TEST(CliModels, PullFailuresAreOneLineAndExitOne) {
    TempDir dir;
    FakeHome home(dir / "t");
    HubFixture hub;
    hub.addFile("karpathy/tinyllamas", "stories260K.gguf", readAll(kStories));
    hub.addGatedRepo("meta/gated");
    CliEnv env(home, hub.endpoint());
    hub.wrongHash = true;
    auto bad = runProcess(INFERSCOPE_CLI, {"models", "pull", "karpathy/tinyllamas", "stories260K.gguf"});
    EXPECT_EQ(bad.exitCode, 1);
    ASSERT_EQ(bad.errLines().size() >= 1, true);
    EXPECT_EQ(bad.errLines().back().rfind("inferscope-cli: karpathy/tinyllamas/stories260K.gguf does not match the hub's sha256", 0), 0u)
        << bad.err;
    const fs::path folder = fs::path(home.env.home) / ".local/share/inferscope/models/karpathy/tinyllamas";
    EXPECT_FALSE(fs::exists(folder / "stories260K.gguf"));
    EXPECT_FALSE(fs::exists(folder / "stories260K.gguf.part"));
    hub.wrongHash = false;

    for (auto [args, message] : std::vector<std::pair<std::vector<std::string>, std::string>>{
             {{"meta/gated", "x.gguf"}, "inferscope-cli: meta/gated is gated (HTTP 403): accept its conditions on its page on the hub, "
                                        "then set HF_TOKEN to a token of that account"},
             {{"nobody/nothing", "x.gguf"}, "inferscope-cli: nobody/nothing was not found on the hub (HTTP 404)"},
             {{"not-a-repo", "x.gguf"}, "inferscope-cli: a repository is named ORG/NAME (letters, digits, '-', '_', '.')"}}) {
        std::vector<std::string> full{"models", "pull"};
        full.insert(full.end(), args.begin(), args.end());
        auto r = runProcess(INFERSCOPE_CLI, full);
        EXPECT_EQ(r.exitCode, 1) << message;
        EXPECT_EQ(r.err, message + "\n");
        EXPECT_TRUE(r.out.empty());
    }
    hub.tooManyRequests = 100;
    auto limited = runProcess(INFERSCOPE_CLI, {"models", "search", "tiny", "--retries", "0"});
    EXPECT_EQ(limited.exitCode, 1);
    EXPECT_EQ(limited.err, "inferscope-cli: the hub is limiting requests (HTTP 429) for the search: try again later\n");
    hub.tooManyRequests = 0;
    ::setenv("HF_ENDPOINT", "ftp://example", 1);
    auto endpoint = runProcess(INFERSCOPE_CLI, {"models", "search", "tiny"});
    EXPECT_EQ(endpoint.err, "inferscope-cli: HF_ENDPOINT must be an http(s)://host[:port][/path] URL\n");
}
