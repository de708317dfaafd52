// Resource limits at load: the memory a model will hold is estimated from its header (and agrees
// with what a load then holds), compared with MemAvailable, RLIMIT_AS and RLIMIT_DATA, and a
// model that does not fit is refused with the figures and what would fit; a context past the
// trained length is capped with a notice.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "common/memory_budget.h"
#include "engine/engine.h"
#include "engine/load_memory.h"
#include "engine_test_helpers.h"
#include "model_test_helpers.h"

using namespace inferscope;
using namespace inferscope::testing_model;
namespace fs = std::filesystem;

namespace {

constexpr uint64_t MiB = uint64_t(1) << 20, GiB = uint64_t(1) << 30;

// stories260K's vocabulary with a deep, narrow body trained to 2^24 positions: 64 layers of
// embedding 64 and 8 KV heads, so the KV cache is 32 KiB a token (512 GiB at the trained length)
// while the weights (F16 zeros) are 2 MB.
void writeLongContextModel(const fs::path& path) {
    auto src = GgufFile::open(kStories);
    ASSERT_TRUE(src);
    GgufWriter w;
    for (const auto& kv : src->metadata())
        if (!kv.key.starts_with("llama.")) w.add(std::string(kv.key), GgufMetaValue::copyOf(kv.value));
    const uint64_t E = 64, F = 32, V = 512, L = 64;
    w.add("llama.context_length", GgufMetaValue::u32(1u << 24));
    w.add("llama.embedding_length", GgufMetaValue::u32(E));
    w.add("llama.block_count", GgufMetaValue::u32(L));
    w.add("llama.feed_forward_length", GgufMetaValue::u32(F));
    w.add("llama.attention.head_count", GgufMetaValue::u32(8));
    w.add("llama.attention.head_count_kv", GgufMetaValue::u32(8));
    w.add("llama.attention.layer_norm_rms_epsilon", GgufMetaValue::f32(1e-5f));
    auto f16 = [](uint64_t n) { return std::vector<uint8_t>(n * 2, 0); };
    std::vector<float> ones(E, 1.0f);
    const std::span<const uint8_t> norm(reinterpret_cast<const uint8_t*>(ones.data()), E * 4);
    w.addTensor("token_embd.weight", {E, V}, GgmlType::F16, f16(E * V));
    for (uint64_t l = 0; l < L; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        w.addTensor(p + "attn_norm.weight", {E}, GgmlType::F32, norm);
        for (const char* m : {"attn_q.weight", "attn_k.weight", "attn_v.weight", "attn_output.weight"})
            w.addTensor(p + m, {E, E}, GgmlType::F16, f16(E * E));
        w.addTensor(p + "ffn_gate.weight", {E, F}, GgmlType::F16, f16(E * F));
        w.addTensor(p + "ffn_up.weight", {E, F}, GgmlType::F16, f16(E * F));
        w.addTensor(p + "ffn_down.weight", {F, E}, GgmlType::F16, f16(E * F));
        w.addTensor(p + "ffn_norm.weight", {E}, GgmlType::F32, norm);
    }
    w.addTensor("output_norm.weight", {E}, GgmlType::F32, norm);
    auto ok = w.writeFile(path);
    ASSERT_TRUE(ok) << ok.error().message;
}

Result<std::unique_ptr<Engine>> loadWith(const fs::path& path, int32_t ctx, ComputePrecision precision = ComputePrecision::Auto,
                                         KvType kv = KvType::F32) {
    return tryLoadEngine(path, {.ctx = ctx, .precision = precision, .kv = kv});
}

// inferscope-cli with a resource limit set in the child (fork, setrlimit, exec).
struct CliRun {
    int exitCode = -1;
    std::string err;
};
CliRun cliWithLimit(int resource, uint64_t bytes, const std::vector<std::string>& args) {
    const std::string errPath = testing::TempDir() + "limit-" + std::to_string(::getpid()) + ".err";
    const pid_t pid = ::fork();
    if (pid == 0) {
        rlimit r{bytes, bytes};
        if (::setrlimit(resource, &r) != 0) ::_exit(120);
        if (!std::freopen(errPath.c_str(), "w", stderr) || !std::freopen("/dev/null", "w", stdout)) ::_exit(121);
        std::vector<char*> argv{const_cast<char*>(INFERSCOPE_CLI)};
        for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        ::execv(INFERSCOPE_CLI, argv.data());
        ::_exit(127);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    CliRun run;
    if (WIFEXITED(status)) run.exitCode = WEXITSTATUS(status);
    std::ifstream in(errPath);
    std::stringstream ss;
    ss << in.rdbuf();
    run.err = ss.str();
    return run;
}

}  // namespace

// ---- the budget itself ------------------------------------------------------------------------------

TEST(MemoryBudget, EachLimitIsCheckedAndNamed) {
    const MemoryNeed need{100 * MiB, 200 * MiB, 300 * MiB, 10 * MiB};  // mapped, converted, KV, buffers
    EXPECT_EQ(need.residentBytes(), 610 * MiB);
    EXPECT_EQ(need.newBytes(), 510 * MiB);
    MemoryFigures plenty;
    plenty.available = 8 * GiB;
    EXPECT_FALSE(findMemoryShortfall(need, plenty));
    EXPECT_FALSE(findMemoryShortfall(need, MemoryFigures{}));  // nothing known: nothing refused

    MemoryFigures ram = plenty;
    ram.available = 600 * MiB;
    auto s = findMemoryShortfall(need, ram);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->limit, "available memory (MemAvailable)");
    EXPECT_EQ(s->needed, 610 * MiB);
    EXPECT_EQ(s->allowed, 600 * MiB);

    MemoryFigures as = plenty;  // the mapped file is in VmSize already: only new bytes + margin count
    as.addressSpaceLimit = 1 * GiB;
    as.addressSpaceUsed = 500 * MiB;
    s = findMemoryShortfall(need, as);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->limit, "the address-space limit (RLIMIT_AS)");
    EXPECT_EQ(s->needed, 510 * MiB + kMemoryMargin);
    EXPECT_EQ(s->allowed, 524 * MiB);
    as.addressSpaceUsed = 400 * MiB;
    EXPECT_FALSE(findMemoryShortfall(need, as));

    MemoryFigures data = plenty;
    data.dataLimit = 512 * MiB;
    data.dataUsed = 2 * GiB;  // over the limit already: no room at all
    s = findMemoryShortfall(need, data);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->limit, "the data-segment limit (RLIMIT_DATA)");
    EXPECT_EQ(s->allowed, 0u);
}

TEST(MemoryBudget, FiguresOfThisProcess) {
    const MemoryFigures f = readMemoryFigures();
    ASSERT_TRUE(f.available);
    EXPECT_GT(*f.available, 16 * MiB);
    EXPECT_GT(f.addressSpaceUsed, f.dataUsed);
    EXPECT_GT(f.dataUsed, 0u);
    EXPECT_EQ(formatBytes(512), "512 bytes");
    EXPECT_EQ(formatBytes(1536), "1.5 KiB");
    EXPECT_EQ(formatBytes(512 * GiB), "512 GiB");
}

// ---- the estimate against a real load ------------------------------------------------------------------

// For every weight type and compute precision: what the header predicts is what the load holds.
TEST(LoadMemory, EstimateMatchesWhatALoadHolds) {
    TempDir dir;
    std::vector<std::pair<std::string, fs::path>> models = {{"F32", kStories}};
    for (auto [name, type] : {std::pair{"F16", GgmlType::F16}, std::pair{"BF16", GgmlType::BF16}, std::pair{"Q8_0", GgmlType::Q8_0}}) {
        writeConverted(kStories, dir / (std::string(name) + ".gguf"), type);
        models.emplace_back(name, dir / (std::string(name) + ".gguf"));
    }
    for (const auto& [name, path] : models) {
        for (auto [pname, precision] : {std::pair{"auto", ComputePrecision::Auto}, std::pair{"f32", ComputePrecision::F32},
                                        std::pair{"bf16", ComputePrecision::BF16}, std::pair{"int8", ComputePrecision::Int8}}) {
            SCOPED_TRACE(name + " weights, " + pname + " compute");
            auto engine = loadWith(path, 256, precision, KvType::F16);
            ASSERT_TRUE(engine) << engine.error().message;
            auto file = GgufFile::open(path);
            const MemoryNeed need = estimateLoadMemory(*file, (*engine)->hparams(), {precision, 256, 512, KvType::F16, 2});
            EXPECT_EQ(need.weightsConverted, (*engine)->model().weightBytesConverted());
            EXPECT_EQ(need.kvCache, (*engine)->kvStats().bytesReserved);
        }
    }
}

// What the fit function predicts is what a load really allocates: the growth of the process's
// anonymous resident memory (the KV cache is zero-filled, the buffers written by the warm-up; the
// mapped weights are file pages, not counted here) within 5% of the estimate's new bytes, for a
// load whose cache is half a gigabyte (F32) and a quarter (F16).
uint64_t rssAnon() {
    std::ifstream in("/proc/self/status");
    for (std::string line; std::getline(in, line);)
        if (line.rfind("RssAnon:", 0) == 0) return std::stoull(line.substr(8)) * 1024;
    return 0;
}

TEST(LoadMemory, TheEstimateIsWhatALoadAllocatesWithin5Percent) {
#ifdef INFERSCOPE_SANITIZED
    GTEST_SKIP() << "ASan's shadow memory and redzones add an eighth and more to what a load makes resident; "
                    "LoadMemory.EstimateMatchesWhatALoadHolds checks the figures themselves there";
#endif
    TempDir dir;
    writeLongContextModel(dir / "long.gguf");
    { auto warm = loadWith(kStories, 64); ASSERT_TRUE(warm); }  // oneDNN's and OpenMP's first allocations, once
    for (KvType kv : {KvType::F32, KvType::F16}) {
        SCOPED_TRACE(std::string(kvTypeName(kv)));
        const uint64_t before = rssAnon();
        auto engine = loadWith(dir / "long.gguf", 16384, ComputePrecision::Auto, kv);
        ASSERT_TRUE(engine) << engine.error().message;
        const uint64_t grown = rssAnon() - before;
        auto file = GgufFile::open(dir / "long.gguf");
        const MemoryNeed need = estimateLoadMemory(*file, (*engine)->hparams(),
                                                   {ComputePrecision::Auto, 16384, 512, kv, (*engine)->device().threads()});
        EXPECT_GE(need.kvCache, uint64_t(256) << 20);
        RecordProperty(std::string("grown_") + kvTypeName(kv), std::to_string(grown));  // in --gtest_output=xml
        RecordProperty(std::string("estimated_") + kvTypeName(kv), std::to_string(need.newBytes()));
        EXPECT_NEAR(double(grown), double(need.newBytes()), 0.05 * double(need.newBytes()))
            << "grown " << grown << ", estimated " << need.newBytes() << " (KV " << need.kvCache << ", buffers " << need.buffers << ")";
    }
}

// The default context is the trained length when it fits, else the largest that fits (the
// loader's own fit), said in a notice: a model trained to 2^24 positions loads under a 512 MiB
// data limit with what fits there instead of being refused.
TEST(EngineLimits, TheDefaultContextIsTheTrainedLengthOrWhatFits) {
    auto stories = loadWith(kStories, 0);
    ASSERT_TRUE(stories) << stories.error().message;
    EXPECT_EQ((*stories)->contextLength(), 2048);  // stories260K's trained length
#ifdef INFERSCOPE_SANITIZED
    GTEST_SKIP() << "ASan cannot start under RLIMIT_DATA (see AddressSpaceAndDataLimitsAreRespected)";
#endif
    TempDir dir;
    writeLongContextModel(dir / "long.gguf");
    const CliRun run = cliWithLimit(RLIMIT_DATA, 512 * MiB, {"generate", "--model", (dir / "long.gguf").string(), "--max-tokens", "1"});
    EXPECT_EQ(run.exitCode, 0) << run.err;
    const std::string notice = "inferscope-cli: context ";
    const auto at = run.err.find(notice);
    ASSERT_NE(at, std::string::npos) << run.err;
    const int32_t context = std::stoi(run.err.substr(at + notice.size()));
    EXPECT_GT(context, 4096);        // more than the old cap ...
    EXPECT_LT(context, 1 << 14);     // ... and less than 512 MiB of 32 KiB positions
    EXPECT_NE(run.err.find(" tokens: the trained length 16777216 does not fit in memory now (the data-segment limit (RLIMIT_DATA) "),
              std::string::npos) << run.err;
}

// ---- refusals ------------------------------------------------------------------------------------------

TEST(EngineLimits, ContextPastTheTrainedLengthIsCappedWithANotice) {
    auto engine = loadWith(kStories, 100000);
    ASSERT_TRUE(engine) << engine.error().message;
    EXPECT_EQ((*engine)->contextLength(), 2048);
    ASSERT_FALSE((*engine)->notices().empty());
    EXPECT_EQ((*engine)->notices().back(), "context length 100000 capped to the model's trained length 2048");
    auto exact = loadWith(kStories, 2048);
    ASSERT_TRUE(exact);
    for (const auto& n : (*exact)->notices()) EXPECT_EQ(n.find("capped"), std::string::npos) << n;
}

// 2^24 positions of a 32 KiB-a-token cache (512 GiB) cannot fit any machine this runs on: the
// load is refused before anything is allocated, naming the figures and the context that fits.
TEST(EngineLimits, ACacheLargerThanMemoryIsRefusedWithFiguresAndAdvice) {
    TempDir dir;
    writeLongContextModel(dir / "long.gguf");
    auto e = loadWith(dir / "long.gguf", 1 << 24);
    ASSERT_FALSE(e);
    EXPECT_EQ(e.error().kind, ErrorKind::OutOfMemory);
    const std::string& m = e.error().message;
    // Buffers: the RoPE table alone is 2^24 positions x 8 floats.
    EXPECT_EQ(m.rfind("long does not fit in memory with a context of 16777216 tokens: it needs 513 GiB (weights 2.8 MiB, "
                      "KV cache 512 GiB, buffers 641 MiB) ",
                      0),
              0u)
        << m;
    EXPECT_NE(m.find("where available memory (MemAvailable) allows "), std::string::npos) << m;
    EXPECT_NE(m.find("; try a smaller context (up to "), std::string::npos) << m;
    EXPECT_EQ(m.find("F16 KV cache"), std::string::npos) << m;  // 256 GiB would not fit either
    // The advice is right: the context it names loads.
    const auto at = m.find("(up to ") + 7;
    const int32_t fits = std::stoi(m.substr(at));
    EXPECT_GT(fits, 4096);
    auto small = loadWith(dir / "long.gguf", 4096);
    ASSERT_TRUE(small) << small.error().message;
    GenerateRequest req;
    req.prompt = {1, 403};
    req.maxTokens = 2;
    auto r = (*small)->generate(req);
    EXPECT_TRUE(r) << r.error().message;
}

// The process limits, in a child running the CLI: RLIMIT_AS and RLIMIT_DATA. A 1 GiB cache is
// refused under a 512 MiB limit, naming it; a small one runs under the same limit.
TEST(EngineLimits, AddressSpaceAndDataLimitsAreRespected) {
#ifdef INFERSCOPE_SANITIZED
    GTEST_SKIP() << "ASan reserves terabytes of address space for its shadow memory: it cannot start under "
                    "RLIMIT_AS or RLIMIT_DATA; MemoryBudget.EachLimitIsCheckedAndNamed covers the check itself";
#endif
    TempDir dir;
    writeLongContextModel(dir / "long.gguf");
    const std::string model = (dir / "long.gguf").string();
    for (auto [resource, name] : {std::pair{RLIMIT_AS, "RLIMIT_AS"}, std::pair{RLIMIT_DATA, "RLIMIT_DATA"}}) {
        SCOPED_TRACE(name);
        const CliRun big = cliWithLimit(resource, 512 * MiB, {"generate", "--model", model, "--ctx", "32768", "--max-tokens", "1"});
        EXPECT_EQ(big.exitCode, 1) << big.err;
        EXPECT_NE(big.err.find(std::string("limit (") + name + ") allows "), std::string::npos) << big.err;
        EXPECT_NE(big.err.find("KV cache 1.0 GiB"), std::string::npos) << big.err;
        const CliRun small = cliWithLimit(resource, 512 * MiB, {"generate", "--model", model, "--ctx", "256", "--max-tokens", "1"});
        EXPECT_EQ(small.exitCode, 0) << small.err;
    }
}
