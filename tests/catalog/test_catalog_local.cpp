// The models a user already has: a fake home with each tool's layout (built from stories260K) is
// listed with each tool's own names, headers read once and then answered by the cache, and what
// is broken (a link to nothing, a partial download, a non-GGUF file, a folder too big) is skipped
// or reported, never fatal.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <utime.h>

#include <fmt/format.h>
#include <map>

#include "catalog/header_cache.h"
#include "catalog/local_models.h"
#include "catalog_test_helpers.h"
#include "model/model_info.h"

using namespace inferscope;
using namespace inferscope::catalog;
using namespace inferscope::testing_catalog;
using testing_model::TempDir;

namespace {

std::map<std::string, const LocalModel*> byName(const ScanReport& r) {
    std::map<std::string, const LocalModel*> m;
    for (const auto& model : r.models) m[std::string(sourceName(model.source)) + " " + model.name] = &model;
    return m;
}

}  // namespace

TEST(CatalogLocal, EveryToolsLayoutIsListedWithItsOwnNames) {
    TempDir dir;
    FakeHome home(dir / "t");
    ScanOptions options;
    options.env = home.env;
    options.folders = {dir / "t" / "mine"};
    const ScanReport r = scanLocalModels(options);
    const auto models = byName(r);
    std::string all;
    for (const auto& [k, v] : models) all += k + "\n";
    for (const char* expected : {"ollama stories:260k, stories:latest", "lmstudio lmstudio-community/stories260K-GGUF/stories260K-F32.gguf",
                                 "gpt4all Tiny Stories 260K", "jan Stories 260K", "huggingface karpathy/tinyllamas/stories/stories260K.gguf",
                                 "llama.cpp ggml-org/stories/stories260K-Q8.gguf", "inferscope org/repo/model.gguf", "folder notes.gguf"})
        EXPECT_TRUE(models.contains(expected)) << expected << " not in:\n" << all;
    EXPECT_EQ(models.size(), 8u) << all;  // nothing else: no .part, no incomplete-, no .incomplete, no broken link

    const LocalModel* ollama = models.at("ollama stories:260k, stories:latest");
    EXPECT_EQ(ollama->path, fs::path(home.env.home) / ".ollama/models/blobs" / ("sha256-" + home.ollamaBlobDigest.substr(7)));
    ASSERT_TRUE(ollama->summary) << ollama->error;
    EXPECT_EQ(ollama->summary->architecture, "llama");
    EXPECT_EQ(ollama->summary->trainedContext, 2048);
    EXPECT_EQ(ollama->summary->quantization, "F32");
    EXPECT_TRUE(ollama->summary->runnable) << ollama->summary->refusal;
    EXPECT_EQ(ollama->bytes, fs::file_size(kStories));
    // The same facts as `info` gives from the same header.
    auto f = GgufFile::open(kStories);
    auto info = describeModel(*f, "x");
    EXPECT_EQ(ollama->summary->parameters, info->nParams);

    const LocalModel* notes = models.at("folder notes.gguf");
    EXPECT_FALSE(notes->summary);
    EXPECT_EQ(notes->error, "notes.gguf: not a GGUF file: magic is \"not \", expected \"GGUF\"");

    std::string allNotes;
    for (const auto& n : r.notes) allNotes += n + "\n";
    EXPECT_NE(allNotes.find("someone/partial:latest: its model blob sha256:aaaaaaaaaaaa is missing"), std::string::npos) << allNotes;
    EXPECT_NE(allNotes.find("missing.gguf"), std::string::npos) << allNotes;  // the broken link, named
}

TEST(CatalogLocal, HeadersAreReadOnceThenFromTheCacheUntilAFileChanges) {
    TempDir dir;
    FakeHome home(dir / "t");
    ScanOptions options;
    options.env = home.env;
    options.cacheFile = dir / "cache" / "headers.json";
    size_t progressCalls = 0, lastTotal = 0;
    options.progress = [&](size_t done, size_t total) {
        ++progressCalls;
        lastTotal = total;
        EXPECT_LE(done, total);
    };
    const ScanReport first = scanLocalModels(options);
    EXPECT_EQ(first.headersRead, 7u);
    EXPECT_EQ(first.headersFromCache, 0u);
    EXPECT_EQ(progressCalls, 7u);
    EXPECT_EQ(lastTotal, 7u);
    ASSERT_TRUE(fs::exists(*options.cacheFile));

    const ScanReport second = scanLocalModels(options);
    EXPECT_EQ(second.headersRead, 0u);
    EXPECT_EQ(second.headersFromCache, 7u);
    ASSERT_EQ(second.models.size(), first.models.size());
    for (size_t i = 0; i < first.models.size(); ++i) {
        EXPECT_EQ(second.models[i].name, first.models[i].name);
        EXPECT_EQ(second.models[i].error, first.models[i].error);
        ASSERT_EQ(bool(second.models[i].summary), bool(first.models[i].summary));
        if (!first.models[i].summary) continue;
        const auto &a = *first.models[i].summary, &b = *second.models[i].summary;
        EXPECT_EQ(a.quantization, b.quantization);
        EXPECT_EQ(a.parameters, b.parameters);
        ASSERT_TRUE(a.footprint && b.footprint);
        EXPECT_EQ(a.footprint->need({ComputePrecision::Auto, 2048, 512, KvType::F16, 2}).residentBytes(),
                  b.footprint->need({ComputePrecision::Auto, 2048, 512, KvType::F16, 2}).residentBytes());
    }

    // A file rewritten in place (new mtime) is read again; the others still come from the cache.
    const fs::path lm = fs::path(home.env.home) / ".lmstudio/models/lmstudio-community/stories260K-GGUF/stories260K-F32.gguf";
    writeAll(lm, "GGUF but nothing more");
    const ScanReport third = scanLocalModels(options);
    EXPECT_EQ(third.headersRead, 1u);
    EXPECT_EQ(third.headersFromCache, 6u);

    // A damaged cache is an empty cache, not an error.
    writeAll(*options.cacheFile, "{\"version\":1,\"entries\":[{\"path\":");
    const ScanReport fourth = scanLocalModels(options);
    EXPECT_EQ(fourth.headersRead, 7u);
}

TEST(CatalogLocal, AHugeFolderIsCutAtTheBoundWithANote) {
    TempDir dir;
    catalog::Environment env;
    env.home = (dir / "empty-home").string();
    env.systemOllamaModels = (dir / "none").string();
    for (int i = 0; i < 300; ++i) writeAll(dir / "big" / fmt::format("f{}.txt", i), "x");
    ScanOptions options;
    options.env = env;
    options.folders = {dir / "big"};
    options.limits.maxEntries = 100;
    const ScanReport r = scanLocalModels(options);
    EXPECT_TRUE(r.models.empty());
    bool noted = false;
    for (const auto& n : r.notes) noted = noted || n.find("looked at the first 100 entries only") != std::string::npos;
    EXPECT_TRUE(noted);
}

TEST(CatalogLocal, ACancelledScanStopsAndSavesNothing) {
    TempDir dir;
    FakeHome home(dir / "t");
    std::atomic<bool> cancel{false};
    ScanOptions options;
    options.env = home.env;
    options.cacheFile = dir / "headers.json";
    options.cancel = &cancel;
    options.progress = [&](size_t done, size_t) { if (done == 2) cancel = true; };
    const ScanReport r = scanLocalModels(options);
    EXPECT_TRUE(r.cancelled);
    EXPECT_EQ(r.models.size(), 2u);
    EXPECT_FALSE(fs::exists(*options.cacheFile));
}

TEST(CatalogLocal, WhereEachSourceIsLookedForFollowsTheEnvironment) {
    catalog::Environment env;
    env.home = "/h";
    env.ollamaModels = "/models/ollama";
    env.hfHome = "/hf";
    env.llamaCache = "/lc";
    env.xdgDataHome = "/data";
    env.xdgCacheHome = "relative/is/ignored";
    std::vector<std::string> got;
    for (const auto& r : searchRoots(env, {"/mine"})) got.push_back(std::string(sourceName(r.source)) + " " + r.folder.string());
    const std::vector<std::string> expected{"ollama /models/ollama", "ollama /h/.ollama/models", "ollama /usr/share/ollama/.ollama/models",
                                            "lmstudio /h/.lmstudio/models", "gpt4all /data/nomic.ai/GPT4All", "jan /data/Jan/data",
                                            "jan /h/jan", "huggingface /hf/hub", "llama.cpp /lc", "inferscope /data/inferscope/models",
                                            "folder /mine"};
    EXPECT_EQ(got, expected);
    env.hfHubCache = "/hubcache";
    EXPECT_EQ(searchRoots(env, {})[7].folder, "/hubcache");
}

// What the fit says is what the loader decides: assessFit on the footprint the header gave.
TEST(CatalogFit, TheVerdictFollowsTheMemoryAvailable) {
    auto f = GgufFile::open(kStories);
    ASSERT_TRUE(f);
    auto s = summarizeModel(*f);
    ASSERT_TRUE(s && s->runnable);
    const LoadShape shape{ComputePrecision::Auto, 2048, 512, KvType::F32, 2};
    const MemoryNeed need = s->footprint->need(shape);
    MemoryFigures have;
    have.available = need.residentBytes();
    auto fit = fitOf(*s, {0, KvType::F32, ComputePrecision::Auto, 2}, have);
    ASSERT_TRUE(fit);
    EXPECT_EQ(fit->verdict, FitVerdict::Fits);
    EXPECT_EQ(fit->context, 2048);
    EXPECT_EQ(fitVerdictText(*fit), "fits");

    have.available = need.residentBytes() - need.kvCache / 2;  // room for about half the cache
    fit = fitOf(*s, {0, KvType::F32, ComputePrecision::Auto, 2}, have);
    EXPECT_EQ(fit->verdict, FitVerdict::FitsSmallerContext);
    EXPECT_GT(fit->context, 900);
    EXPECT_LT(fit->context, 1100);
    EXPECT_LE(fit->need.residentBytes(), *have.available);
    EXPECT_EQ(fitVerdictText(*fit), "fits with a smaller context (" + std::to_string(fit->context) + ")");

    have.available = need.weightsMapped / 2;
    fit = fitOf(*s, {0, KvType::F32, ComputePrecision::Auto, 2}, have);
    EXPECT_EQ(fit->verdict, FitVerdict::DoesNotFit);
    EXPECT_EQ(fitVerdictText(*fit), "does not fit");
}

// A header read from a prefix of the file: too short says "read more" until the header is whole,
// and then gives the same header as the whole file.
TEST(GgufHeaderPrefix, ShortPrefixesAskForMoreAndAWholeHeaderParses) {
    const std::string bytes = readAll(kStories);
    auto whole = GgufFile::open(kStories);
    ASSERT_TRUE(whole);
    const uint64_t headerEnd = whole->dataOffset();
    for (uint64_t n : {uint64_t(1), uint64_t(3), uint64_t(24), headerEnd / 2, headerEnd - 40}) {
        bool more = false;
        auto p = GgufFile::parseHeader(std::vector<uint8_t>(bytes.begin(), bytes.begin() + n), bytes.size(), &more);
        EXPECT_FALSE(p) << n;
        EXPECT_TRUE(more) << n;
    }
    bool more = true;
    auto p = GgufFile::parseHeader(std::vector<uint8_t>(bytes.begin(), bytes.begin() + headerEnd), bytes.size(), &more);
    ASSERT_TRUE(p) << p.error().message;
    EXPECT_FALSE(more);
    EXPECT_TRUE(p->headerOnly());
    EXPECT_EQ(p->fileSize(), bytes.size());
    EXPECT_EQ(p->tensors().size(), whole->tensors().size());
    auto a = summarizeModel(*p), b = summarizeModel(*whole);
    ASSERT_TRUE(a && b);
    EXPECT_EQ(a->parameters, b->parameters);
    EXPECT_EQ(a->footprint->weightsMapped, b->footprint->weightsMapped);
    // A file the prefix says is shorter than its tensors is truncated, not "read more".
    p = GgufFile::parseHeader(std::vector<uint8_t>(bytes.begin(), bytes.begin() + headerEnd), headerEnd + 10, &more);
    EXPECT_FALSE(p);
    EXPECT_FALSE(more);
    // Not GGUF at all: no amount of bytes helps.
    p = GgufFile::parseHeader(std::vector<uint8_t>{'G', 'G', 'M', 'L', 1, 0, 0, 0}, 100, &more);
    EXPECT_FALSE(p);
    EXPECT_FALSE(more);
}
