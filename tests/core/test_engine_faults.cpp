// Faults while the engine works: the model file deleted or truncated under its mapping (the SIGBUS
// guard, on the computing thread and on OpenMP workers), cancel from another thread during a long
// prefill, and the edges of the context (exactly full, every batch boundary) that the sanitizer
// build checks for out-of-bounds writes.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <omp.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <filesystem>
#include <fstream>
#include <thread>

#include "common/sigbus_guard.h"
#include "engine/engine.h"
#include "gguf/mapped_file.h"
#include "tools/synth_model.h"
#include "engine_test_helpers.h"
#include "model_test_helpers.h"

using namespace inferscope;
using namespace inferscope::testing_model;
namespace fs = std::filesystem;

namespace {

std::unique_ptr<Engine> load(const fs::path& path, int32_t ctx = 0, int32_t batch = 512) {
    return loadTestEngine(path, {.ctx = ctx, .batch = batch});
}

GenerateRequest greedy(std::vector<int32_t> prompt, int32_t maxTokens) {
    return greedyRequest(std::move(prompt), maxTokens, SamplerParams{}.topN);
}

const std::vector<int32_t> kOnceUponATime = {1, 403, 407, 261, 378};

// A copy of the bundled model the test may delete or truncate.
fs::path copyOfStories(const TempDir& dir) {
    const fs::path p = dir / "stories-copy.gguf";
    fs::copy_file(kStories, p, fs::copy_options::overwrite_existing);
    return p;
}

struct OnStep : GenerationObserver {
    std::function<void(const StepRecord&)> f;
    void onStep(const StepRecord& r) override { f(r); }
};

}  // namespace

// ---- the model file changes on disk ---------------------------------------------------------------

TEST(ModelFileOnDisk, DeletedWhileMappedIsHarmless) {
    TempDir dir;
    const fs::path path = copyOfStories(dir);
    auto engine = load(path);
    ASSERT_TRUE(engine);
    fs::remove(path);  // the mapping keeps the inode: nothing changes for the engine
    ASSERT_FALSE(fs::exists(path));
    auto after = engine->generate(greedy(kOnceUponATime, 8));
    ASSERT_TRUE(after) << after.error().message;
    EXPECT_EQ(after->text, ", there was a little girl");
    engine->reset();  // and again, every weight read anew from the deleted file
    auto again = engine->generate(greedy(kOnceUponATime, 8));
    ASSERT_TRUE(again) << again.error().message;
    EXPECT_EQ(again->tokens, after->tokens);
}

TEST(ModelFileOnDisk, TruncatedBeforeGenerateIsAnIoError) {
    TempDir dir;
    const fs::path path = copyOfStories(dir);
    auto engine = load(path);
    ASSERT_TRUE(engine);
    fs::resize_file(path, 600000);
    auto r = engine->generate(greedy(kOnceUponATime, 8));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().kind, ErrorKind::Io);
    EXPECT_EQ(r.error().message, path.string() + " changed on disk while in use (600000 bytes, was 1185376); load it again");
}

// Rewritten in place with the same size (a tool writing into it): the modification time tells.
TEST(ModelFileOnDisk, RewrittenInPlaceIsAnIoError) {
    TempDir dir;
    const fs::path path = copyOfStories(dir);
    auto engine = load(path);
    ASSERT_TRUE(engine);
    fs::last_write_time(path, fs::last_write_time(path) + std::chrono::seconds(5));
    auto r = engine->generate(greedy(kOnceUponATime, 8));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message, path.string() + " changed on disk while in use (it was modified); load it again");
}

// The file is cut while tokens are being generated: the next forward pass reads weights past the
// new end, on the engine's thread and on OpenMP's workers. The SIGBUS guard turns that into zeros
// and a flag; generate() returns the error instead of a token computed from zeros, and keeps
// returning it. Another model then loads and runs in the same process.
TEST(ModelFileOnDisk, TruncatedDuringGenerationIsAnIoErrorAndTheEngineStaysUnusable) {
    TempDir dir;
    const fs::path path = copyOfStories(dir);
    auto engine = load(path);
    ASSERT_TRUE(engine);
    OnStep cut;
    int steps = 0;
    cut.f = [&](const StepRecord& r) {
        ++steps;
        if (r.step == 2) ::truncate(path.c_str(), 4096);  // keeps the header, drops every weight
    };
    auto r = engine->generate(greedy(kOnceUponATime, 20), &cut);
    ASSERT_FALSE(r);
    EXPECT_EQ(steps, 3);  // the step after the cut never reached the observer
    EXPECT_EQ(r.error().kind, ErrorKind::Io);
    EXPECT_EQ(r.error().message, path.string() + " changed on disk while in use (it was truncated: reading it faulted); load it again");
    auto again = engine->generate(greedy(kOnceUponATime, 4));
    ASSERT_FALSE(again);
    EXPECT_EQ(again.error().message, r.error().message);

    auto other = load(kStories);
    ASSERT_TRUE(other);
    auto fresh = other->generate(greedy(kOnceUponATime, 8));
    ASSERT_TRUE(fresh) << fresh.error().message;
    EXPECT_EQ(fresh->text, ", there was a little girl");
}

TEST(ModelFileOnDisk, TruncatedWhileLoadingIsAnIoError) {
    TempDir dir;
    const fs::path path = copyOfStories(dir);
    EngineOptions opt;
    opt.modelPath = path;
    opt.device = DeviceKind::Cpu;
    bool cut = false;
    // The progress callback runs between weights: cut the file half-way through the load.
    auto e = Engine::load(opt, [&](float fraction, std::string_view) {
        if (!cut && fraction > 0.5f) {
            ::truncate(path.c_str(), 4096);
            cut = true;
        }
    });
    ASSERT_TRUE(cut);
    ASSERT_FALSE(e);
    EXPECT_EQ(e.error().kind, ErrorKind::Io) << e.error().message;
    EXPECT_NE(e.error().message.find("changed on disk while in use"), std::string::npos) << e.error().message;
}

// The guard itself, below the engine: reads past the new end see zeros on any thread.
TEST(SigbusGuard, TruncatedMappingReadsZerosOnEveryThread) {
    TempDir dir;
    const fs::path path = copyOfStories(dir);
    auto mapped = MappedFile::open(path);
    ASSERT_TRUE(mapped);
    const uint8_t* data = mapped->data();
    const uint64_t size = mapped->size();
    uint64_t before = 0;
    for (uint64_t i = 0; i < size; i += 4096) before += data[i];  // every page resident, then cut
    EXPECT_GT(before, 0u);
    ASSERT_EQ(::truncate(path.c_str(), 8192), 0);
    std::atomic<uint64_t> sum{0};
    std::thread other([&] {
        for (uint64_t i = size / 2; i < size; i += 4096) sum += data[i];
    });
#pragma omp parallel for num_threads(2) schedule(static, 1)
    for (int64_t i = 8192; i < int64_t(size); i += 4096) sum += data[i];
    other.join();
    EXPECT_EQ(sum.load(), 0u);
    EXPECT_EQ(data[0], 'G');  // the part still in the file reads as before
    auto changed = mapped->checkUnchanged();
    ASSERT_FALSE(changed);
    EXPECT_EQ(changed.error().kind, ErrorKind::Io);
}

TEST(SigbusGuard, UnchangedFileStaysOk) {
    auto mapped = MappedFile::open(kStories);
    ASSERT_TRUE(mapped);
    EXPECT_TRUE(mapped->checkUnchanged());
    EXPECT_TRUE(MappedFile::fromBytes({1, 2, 3}).checkUnchanged());
}

// A SIGBUS that is not a guarded mapping's still ends the process, as it would without the guard.
TEST(SigbusGuardDeathTest, OtherBusErrorsStillKill) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    auto guarded = MappedFile::open(kStories);  // the handler is installed
    ASSERT_TRUE(guarded);
    TempDir dir;
    const fs::path path = copyOfStories(dir);
    EXPECT_DEATH(
        {
            const int fd = ::open(path.c_str(), O_RDONLY);
            auto* p = static_cast<volatile uint8_t*>(::mmap(nullptr, 1 << 20, PROT_READ, MAP_PRIVATE, fd, 0));
            (void)::ftruncate(::open(path.c_str(), O_WRONLY), 4096);
            std::printf("%d\n", p[1 << 19]);  // unguarded: SIGBUS
        },
        "");
}

// ---- --no-mmap: the weights in the process's own pages --------------------------------------------

// Anonymous kB of the mapping that starts at `start` (/proc/self/smaps), -1 when not found.
long anonymousKb(const void* start) {
    std::ifstream smaps("/proc/self/smaps");
    const auto want = reinterpret_cast<uintptr_t>(start);
    std::string line;
    bool inside = false;
    while (std::getline(smaps, line)) {
        uintptr_t lo = 0, hi = 0;
        if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find(':') > line.find(' ')) {
            inside = lo == want;
            continue;
        }
        long kb = 0;
        if (inside && std::sscanf(line.c_str(), "Anonymous: %ld kB", &kb) == 1) return kb;
    }
    return -1;
}

// Private pages hold the file's bytes as this process's own (anonymous) pages once populated;
// released, they read the file's bytes again, never zeros. Shared pages stay the page cache's.
TEST(PrivatePages, CopiesOfTheFilesBytesThatReleaseRestores) {
    auto shared = MappedFile::open(kStories);
    auto copy = MappedFile::open(kStories, MappedFile::Pages::Private);
    ASSERT_TRUE(shared && copy);
    ASSERT_EQ(copy->size(), shared->size());
    const uint64_t size = copy->size(), page = uint64_t(::sysconf(_SC_PAGESIZE));
    shared->populate(0, size);
    copy->populate(0, size);
    EXPECT_EQ(std::memcmp(copy->data(), shared->data(), size), 0);
    EXPECT_EQ(anonymousKb(shared->data()), 0);
    EXPECT_GE(anonymousKb(copy->data()), long(size / page * page / 1024));
    copy->release(page, 4 * page);  // pages 1..4 dropped: read again from the file
    EXPECT_LE(anonymousKb(copy->data()), long(size / 1024 + 4) - long(4 * page / 1024));
    EXPECT_EQ(std::memcmp(copy->data(), shared->data(), size), 0);
}

TEST(PrivatePages, AnEngineOnPrivatePagesGeneratesTheSameTokens) {
    auto mapped = loadTestEngine(kStories);
    auto copied = loadTestEngine(kStories, {.privateWeights = true});
    ASSERT_TRUE(mapped && copied);
    auto a = mapped->generate(greedy(kOnceUponATime, 24));
    auto b = copied->generate(greedy(kOnceUponATime, 24));
    ASSERT_TRUE(a && b);
    EXPECT_EQ(b->tokens, a->tokens);
    EXPECT_EQ(b->text, a->text);
    EXPECT_TRUE(b->text.starts_with(", there was a little girl")) << b->text;
}

// ---- cancel during prefill -----------------------------------------------------------------------

// A 1,500-token prompt in batches of 8 (188 forward passes), cancelled from another thread once
// prefill is under way: generate() returns Cancelled after at most the batch that was running.
// The tenth batch waits to begin until the other thread has set the flag (a condition, not a
// sleep: prefill cannot end first however loaded the machine is).
TEST(EngineCancel, DuringPrefillFromAnotherThreadStopsWithinOneBatch) {
    auto engine = load(kStories, 2048, 8);
    ASSERT_TRUE(engine);
    std::vector<int32_t> prompt{1};
    for (int i = 1; i < 1500; ++i) prompt.push_back(3 + (i * 37) % 509);
    std::atomic<bool> cancel{false};
    std::atomic<int> batchesStarted{0};
    std::atomic<int> batchesAtCancel{-1};
    std::mutex mutex;
    std::condition_variable changed;
    bool tenthBegun = false;
    const CancelCheck check = [&] {
        if (++batchesStarted == 10) {  // asked before every prefill batch
            std::unique_lock lock(mutex);
            tenthBegun = true;
            changed.notify_all();
            changed.wait(lock, [&] { return cancel.load(); });
        }
        return cancel.load();
    };
    std::thread canceller([&] {
        std::unique_lock lock(mutex);
        changed.wait(lock, [&] { return tenthBegun; });
        batchesAtCancel = batchesStarted.load();
        cancel = true;
        changed.notify_all();
    });
    auto summary = engine->generate(greedy(prompt, 4), nullptr, check);
    canceller.join();
    ASSERT_TRUE(summary) << summary.error().message;
    EXPECT_EQ(summary->reason, FinishReason::Cancelled);
    EXPECT_EQ(summary->nGenerated, 0);
    const int at = batchesAtCancel.load();
    ASSERT_GE(at, 10);
    // Batches begun before the flag was seen: the one running when it was set, at most one more.
    EXPECT_LE(summary->kv.nUsed, (at + 1) * 8);
    EXPECT_LT(summary->kv.nUsed, 1500);
    EXPECT_EQ(summary->kv.nUsed % 8, 0);
    // What was prefilled stays usable: the same prompt again continues from there.
    auto resumed = engine->generate(greedy(prompt, 3));
    ASSERT_TRUE(resumed) << resumed.error().message;
    EXPECT_EQ(resumed->prefill.nReused, summary->kv.nUsed);
    auto fresh = load(kStories, 2048, 8);
    auto reference = fresh->generate(greedy(prompt, 3));
    ASSERT_TRUE(reference);
    EXPECT_EQ(resumed->tokens, reference->tokens);
}

// ---- the edges of the context and of batches ------------------------------------------------------

// Every prompt length around the batch size, run until the context is exactly full: the cache
// ends exactly full and nothing is written past it (Engine and KvCache assert it, and the
// sanitizer build keeps asserts and puts ASan behind them).
TEST(EngineEdges, ContextExactlyFullAtEveryBatchBoundary) {
    constexpr int32_t kCtx = 16;
    for (int32_t batch : {1, 3, 4, 15, 16}) {
        auto engine = load(kStories, kCtx, batch);
        ASSERT_TRUE(engine);
        for (int32_t n : {1, 3, 4, 5, 8, 15, 16}) {
            SCOPED_TRACE("batch " + std::to_string(batch) + ", prompt " + std::to_string(n));
            std::vector<int32_t> prompt{1};
            for (int32_t i = 1; i < n; ++i) prompt.push_back(kOnceUponATime[size_t(i) % kOnceUponATime.size()] + i);
            engine->reset();
            auto got = engine->generate(greedy(prompt, 100));
            ASSERT_TRUE(got) << got.error().message;
            EXPECT_TRUE(got->reason == FinishReason::ContextFull || got->reason == FinishReason::EndOfGeneration);
            if (got->reason == FinishReason::ContextFull) {
                EXPECT_EQ(got->kv.nUsed, kCtx);
                EXPECT_EQ(int32_t(got->tokens.size()), kCtx - n + 1);  // the last one has no cell: it is not run
            }
            EXPECT_LE(got->kv.nUsed, kCtx);
        }
    }
    // One token more than the context is refused, never cut.
    auto engine = load(kStories, kCtx, 4);
    auto over = engine->generate(greedy(std::vector<int32_t>(kCtx + 1, 1), 1));
    ASSERT_FALSE(over);
    EXPECT_EQ(over.error().message, "the prompt is 17 tokens but the context holds 16; shorten it or load with a larger context");
}

// The Threads setting raised past the core count after load (the app allows up to 1024): every
// kernel follows the new count and attention's per-thread scratch grows with it. From about
// position 1024 on, a stories260K-shaped model's attention is worth running in parallel, so each
// of the many threads writes its own slice; a scratch sized at load for 2 threads was a heap
// overflow here (caught by ASan in scripts/ci-sanitize.sh). Back to 0 means one per core again.
TEST(EngineThreads, RaisedPastTheCoresAfterLoadAndDecodingPastPosition1024) {
    TempDir dir;
    const fs::path path = dir / "stories260k-2k.gguf";
    SynthOptions synth;
    synth.shape = {"stories260k-2k", 64, 5, 8, 4, 172, 512, 2048};
    synth.vocabFrom = kStories;
    ASSERT_TRUE(writeSynthModel(synth, path));
    auto engine = loadTestEngine(path, {.ctx = 2048, .batch = 512});
    ASSERT_TRUE(engine);
    ASSERT_EQ(engine->contextLength(), 2048);

    const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
    const int many = cores * 4 + 3;
    ASSERT_TRUE(engine->setThreads(many));
    EXPECT_EQ(engine->device().threads(), many);
    EXPECT_NE(engine->device().description().find(std::to_string(many) + " threads"), std::string::npos)
        << engine->device().description();

    std::vector<int32_t> prompt;
    for (int i = 0; i < 1100; ++i) prompt.push_back(3 + (i * 37) % 500);  // ordinary pieces, no control tokens
    auto req = greedyRequest(prompt, 8);
    auto summary = engine->generate(req, nullptr, {});
    ASSERT_TRUE(summary) << summary.error().message;
    EXPECT_EQ(summary->prefill.nComputed, 1100);
    EXPECT_GE(summary->nGenerated, 1);

    // 0: one per core, restored (it used to mean "keep the current count" in the app).
    ASSERT_TRUE(engine->setThreads(0));
    EXPECT_EQ(engine->device().threads(), cores);
    auto again = engine->generate(req, nullptr, {});
    ASSERT_TRUE(again) << again.error().message;
}
