// The desktop app's engine thread protocol with the app's own EngineWorker (gui/engine/engine_worker.cpp)
// but without Qt's cross-thread machinery, so that ThreadSanitizer sees every synchronisation
// (scripts/ci-tsan.sh; Debian's Qt is not instrumented, and its queued connections, QMutex and
// QThread::wait hand data over in ways ThreadSanitizer cannot see):
//   - the worker lives on a std::thread; requests reach its slots through a mailbox (a mutex and
//     a condition variable, as Qt's event queue is), and its signals, connected directly, post
//     copies of their values back to the "GUI" thread, which consumes them meanwhile;
//   - the only thing shared is the cancel mark, an atomic job id the GUI thread sets;
//   - the GUI thread keeps the tokenizer (LoadedModel::tokenizer) and uses it while the worker
//     generates, replaces the engine (another model) and destroys the old one.
// Each case is also a plain functional test of the same behaviour in the normal build.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <variant>

#include "engine/engine.h"
#include "engine/engine_worker.h"
#include "model_test_helpers.h"

using namespace inferscope;
using namespace inferscope::testing_model;

namespace {

// A queue of work for one thread: post() from anywhere, run on the owner.
class Mailbox {
public:
    void post(std::function<void()> f) {
        {
            std::lock_guard lock(mutex_);
            queue_.push_back(std::move(f));
        }
        ready_.notify_one();
    }
    // Runs one item, waiting for it; false when closed and empty.
    bool runOne() {
        std::function<void()> f;
        {
            std::unique_lock lock(mutex_);
            ready_.wait(lock, [&] { return closed_ || !queue_.empty(); });
            if (queue_.empty()) return false;
            f = std::move(queue_.front());
            queue_.pop_front();
        }
        f();
        return true;
    }
    void close() {
        {
            std::lock_guard lock(mutex_);
            closed_ = true;
        }
        ready_.notify_all();
    }

private:
    std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<std::function<void()>> queue_;
    bool closed_ = false;
};

// What the worker tells the GUI thread (copies, as in queued signals).
struct Loaded { uint64_t id; LoadedModel model; };
struct LoadFailed { uint64_t id; std::string message; };
struct Steps { uint64_t job; StepBatch batch; };
struct Finished { uint64_t job; GenerationSummary summary; };
struct Failed { uint64_t job; std::string message; };
using Event = std::variant<Loaded, LoadFailed, Steps, Finished, Failed>;

// The app's EngineWorker on a std::thread: created, driven and destroyed there, its signals
// connected directly (they run on the worker) to handlers that post copies to the GUI mailbox.
// EngineController's part: the cancel mark it shares, and its destructor's order.
class Worker {
public:
    explicit Worker(Mailbox& gui) : gui_(gui), thread_([this] { while (inbox_.runOne()) {} }) {
        inbox_.post([this] {
            worker_ = std::make_unique<EngineWorker>(cancelThrough_);
            const auto direct = Qt::DirectConnection;
            QObject::connect(worker_.get(), &EngineWorker::modelLoaded, worker_.get(),
                             [this, t = tally_](quint64 id, const LoadedModel& m) {
                                 ++t->loads;
                                 post(Loaded{id, m});
                             }, direct);
            QObject::connect(worker_.get(), &EngineWorker::loadFailed, worker_.get(),
                             [this](quint64 id, const QString& e) { post(LoadFailed{id, e.toStdString()}); }, direct);
            QObject::connect(worker_.get(), &EngineWorker::stepsReady, worker_.get(),
                             [this, t = tally_](quint64 job, const StepBatch& b) {
                                 t->tokens += int64_t(b.steps.size());
                                 post(Steps{job, b});
                             }, direct);
            QObject::connect(worker_.get(), &EngineWorker::generationFinished, worker_.get(),
                             [this, t = tally_](quint64 job, const GenerationSummary& s) {
                                 t->lastFinishedJob = job;
                                 post(Finished{job, s});
                             }, direct);
            QObject::connect(worker_.get(), &EngineWorker::generationFailed, worker_.get(),
                             [this](quint64 job, const QString& e) { post(Failed{job, e.toStdString()}); }, direct);
        });
    }
    ~Worker() {  // as EngineController's destructor: cancel everything, let the worker return, stop
        cancelThrough_->store(UINT64_MAX);
        inbox_.post([this] { worker_.reset(); });
        inbox_.close();
        thread_.join();
    }
    void load(uint64_t id, const std::string& path) {
        EngineOptions o;
        o.modelPath = path;
        inbox_.post([this, id, o] { worker_->loadModel(id, o); });
    }
    // A job of `text` sampled at temperature 1 with `seed`.
    static GenerationJob job(uint64_t id, const std::string& text, int maxTokens, uint64_t seed) {
        GenerationJob j;
        j.id = id;
        j.chunks.push_back(PromptChunk{text, {}, false, true});
        j.sampler.temperature = 1.0f;
        j.sampler.seed = seed;
        j.maxTokens = maxTokens;
        return j;
    }
    void generate(uint64_t id, const std::string& text, int maxTokens, uint64_t seed) {
        GenerationJob j = job(id, text, maxTokens, seed);
        j.replayWidth = 64;
        inbox_.post([this, j] { worker_->generate(j); });
    }
    // Side by side: job `a` on the loaded model and `b` on `modelB` (loaded beside it) at once.
    void generatePair(uint64_t a, uint64_t b, const std::string& modelB, const std::string& text, int maxTokens, uint64_t seed) {
        GenerationJob ja = job(a, text, maxTokens, seed);
        ja.threads = 1;
        GenerationJob jb = ja;
        jb.id = b;
        jb.otherModel = modelB;
        inbox_.post([this, ja, jb] { worker_->generatePair(ja, jb); });
    }
    void cancelThrough(uint64_t job) { cancelThrough_->store(job); }  // EngineController::stop
    // What the worker did, counted on its thread as it signals: readable after the Worker is gone.
    struct Tally {
        std::atomic<int> loads = 0;
        std::atomic<int64_t> tokens = 0;
        std::atomic<uint64_t> lastFinishedJob = 0;
    };
    std::shared_ptr<const Tally> tally() const { return tally_; }
    std::vector<Event>& events() { return events_; }  // GUI thread only

private:
    void post(Event e) {
        gui_.post([this, e = std::move(e)] { events_.push_back(e); });
    }

    Mailbox& gui_;
    Mailbox inbox_;
    std::shared_ptr<std::atomic<uint64_t>> cancelThrough_ = std::make_shared<std::atomic<uint64_t>>(0);
    std::shared_ptr<Tally> tally_ = std::make_shared<Tally>();
    std::unique_ptr<EngineWorker> worker_;  // worker thread only
    std::vector<Event> events_;             // GUI thread only
    std::thread thread_;                    // last: started once everything above exists
};

// The GUI thread's loop: runs posted events until `done` says so (or 30 s pass).
template <typename Done>
bool runUntil(Mailbox& gui, Worker& w, Done done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!done()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        gui.runOne();
    }
    (void)w;
    return true;
}

template <typename T>
const T* last(const std::vector<Event>& events) {
    for (auto it = events.rbegin(); it != events.rend(); ++it)
        if (auto* e = std::get_if<T>(&*it)) return e;
    return nullptr;
}

template <typename T>
size_t count(const std::vector<Event>& events) {
    size_t n = 0;
    for (const Event& e : events) n += std::holds_alternative<T>(e) ? 1 : 0;
    return n;
}

std::vector<int32_t> streamedIds(const std::vector<Event>& events, uint64_t job) {
    std::vector<int32_t> ids;
    for (const Event& e : events)
        if (auto* s = std::get_if<Steps>(&e); s && s->job == job)
            for (const StepRecord& r : s->batch.steps) ids.push_back(r.sample.id);
    return ids;
}

}  // namespace

TEST(EngineThreads, StepsStreamToTheGuiThreadInOrder) {
    Mailbox gui;
    Worker w(gui);
    w.load(1, kStories);
    ASSERT_TRUE(runUntil(gui, w, [&] { return count<Loaded>(w.events()) == 1; }));
    w.generate(2, "Once upon a time", 100, 5);
    ASSERT_TRUE(runUntil(gui, w, [&] { return last<Finished>(w.events()) != nullptr; }));
    const Finished* f = last<Finished>(w.events());
    EXPECT_EQ(streamedIds(w.events(), 2), f->summary.tokens);
    EXPECT_FALSE(f->summary.tokens.empty());
}

// Side by side: the second model generates on a thread of its own while the loaded one generates
// on the worker's; each job's steps stream in order under its own id. The same file on both sides,
// with the same seed and one thread each, writes the same answer twice.
TEST(EngineThreads, TwoModelsGenerateAtOnce) {
    Mailbox gui;
    Worker w(gui);
    w.load(1, kStories);
    ASSERT_TRUE(runUntil(gui, w, [&] { return count<Loaded>(w.events()) == 1; }));
    w.generatePair(2, 3, kStories, "Once upon a time", 80, 5);
    ASSERT_TRUE(runUntil(gui, w, [&] { return count<Finished>(w.events()) == 2; }));
    std::vector<int32_t> tokens[2];
    for (const Event& e : w.events())
        if (auto* f = std::get_if<Finished>(&e)) tokens[f->job - 2] = f->summary.tokens;
    EXPECT_FALSE(tokens[0].empty());
    EXPECT_EQ(streamedIds(w.events(), 2), tokens[0]);
    EXPECT_EQ(streamedIds(w.events(), 3), tokens[1]);
    EXPECT_EQ(tokens[0], tokens[1]);
    EXPECT_EQ(count<Failed>(w.events()), 0u);
}

TEST(EngineThreads, CancelFromTheGuiThreadStopsTheGeneration) {
    Mailbox gui;
    Worker w(gui);
    w.load(1, kStories);
    ASSERT_TRUE(runUntil(gui, w, [&] { return count<Loaded>(w.events()) == 1; }));
    w.generate(2, "Once upon a time", 1900, 2);  // seed 2: a story that does not end by itself
    ASSERT_TRUE(runUntil(gui, w, [&] { return count<Steps>(w.events()) >= 1; }));
    w.cancelThrough(2);
    ASSERT_TRUE(runUntil(gui, w, [&] { return last<Finished>(w.events()) != nullptr; }));
    const Finished* f = last<Finished>(w.events());
    EXPECT_EQ(f->summary.reason, FinishReason::Cancelled);
    EXPECT_LT(f->summary.nGenerated, 1900);
    EXPECT_EQ(streamedIds(w.events(), 2), f->summary.tokens);
}

// A long prompt cancelled at once: the mark is read between prefill batches too.
TEST(EngineThreads, CancelDuringPrefill) {
    Mailbox gui;
    Worker w(gui);
    w.load(1, kStories);
    ASSERT_TRUE(runUntil(gui, w, [&] { return count<Loaded>(w.events()) == 1; }));
    std::string prompt;
    for (int i = 0; i < 150; ++i) prompt += " Once upon a time";  // about 600 tokens: two batches
    w.generate(2, prompt, 50, 1);
    w.cancelThrough(2);
    ASSERT_TRUE(runUntil(gui, w, [&] { return last<Finished>(w.events()) || last<Failed>(w.events()); }));
    ASSERT_TRUE(last<Finished>(w.events()));
    EXPECT_EQ(last<Finished>(w.events())->summary.reason, FinishReason::Cancelled);
}

// Another model loaded mid-answer, as EngineController does it: cancel, then load. The GUI thread
// keeps using the previous model's tokenizer while the worker destroys that model.
TEST(EngineThreads, LoadingAnotherModelWhileGenerating) {
    Mailbox gui;
    Worker w(gui);
    w.load(1, kStories);
    ASSERT_TRUE(runUntil(gui, w, [&] { return count<Loaded>(w.events()) == 1; }));
    const std::shared_ptr<const Tokenizer> previous = last<Loaded>(w.events())->model.tokenizer;
    w.generate(2, "Once upon a time", 1900, 2);
    ASSERT_TRUE(runUntil(gui, w, [&] { return count<Steps>(w.events()) >= 1; }));
    w.cancelThrough(2);
    w.load(3, kTinyRandom);
    // Meanwhile on this thread: what ChatController does with the tokenizer it was given.
    size_t used = 0;
    while (count<Loaded>(w.events()) < 2 && count<LoadFailed>(w.events()) == 0) {
        used += previous->encode("Once upon a time, there was a dog.", true, true).size();
        used += previous->tokenBytes(432).size() + previous->decode(std::vector<int32_t>{403, 407}).size();
        gui.runOne();
    }
    EXPECT_GT(used, 0u);
    ASSERT_EQ(count<LoadFailed>(w.events()), 0u);
    ASSERT_TRUE(last<Finished>(w.events()));
    EXPECT_EQ(last<Finished>(w.events())->summary.reason, FinishReason::Cancelled);
    EXPECT_EQ(last<Loaded>(w.events())->model.tokenizer->vocabSize(), 32000);
    EXPECT_EQ(previous->encode("Once upon a time", true, true), (std::vector<int32_t>{1, 403, 407, 261, 378}));
}

// Both threads use one tokenizer at once (its const methods are documented thread-safe).
TEST(EngineThreads, OneTokenizerOnTwoThreads) {
    Mailbox gui;
    Worker w(gui);
    w.load(1, kStories);
    ASSERT_TRUE(runUntil(gui, w, [&] { return count<Loaded>(w.events()) == 1; }));
    const auto tokenizer = last<Loaded>(w.events())->model.tokenizer;
    std::atomic<bool> stop = false;
    std::vector<int32_t> seen;
    std::thread other([&] {
        while (!stop.load()) seen = tokenizer->encode("Lily and Tom went to the park. \xF0\x9F\x90\xB6 \xD7\xA9\xD7\x9C\xD7\x95\xD7\x9D", true, true);
    });
    for (uint64_t job = 2; job < 6; ++job) {
        w.generate(job, "Once upon a time", 64, job);
        ASSERT_TRUE(runUntil(gui, w, [&] { return count<Finished>(w.events()) == job - 1; }));
    }
    stop.store(true);
    other.join();
    EXPECT_EQ(tokenizer->decode(seen), "Lily and Tom went to the park. \xF0\x9F\x90\xB6 \xD7\xA9\xD7\x9C\xD7\x95\xD7\x9D");
}

// Closing the window mid-answer: the worker is destroyed (cancel everything, join) while it
// generates, with events still queued for a GUI thread that will not read them.
TEST(EngineThreads, DestroyedMidGeneration) {
    Mailbox gui;
    std::shared_ptr<const Worker::Tally> tally;
    {
        Worker w(gui);
        tally = w.tally();
        w.load(1, kStories);
        ASSERT_TRUE(runUntil(gui, w, [&] { return count<Loaded>(w.events()) == 1; }));
        w.generate(2, "Once upon a time", 1900, 2);
        w.generate(3, "Once upon a time", 1900, 3);  // queued behind it: skipped
        w.load(4, kTinyRandom);                         // also skipped
        ASSERT_TRUE(runUntil(gui, w, [&] { return count<Steps>(w.events()) >= 1; }));
    }
    // The answer under way was cut short, and what was queued behind it never ran.
    EXPECT_LT(tally->tokens.load(), 1900);
    EXPECT_LE(tally->lastFinishedJob.load(), 2u);
    EXPECT_EQ(tally->loads.load(), 1);
}

// A prompt that cannot fit is refused before the worker tokenizes it (10 MB would take 15 s).
TEST(EngineThreads, APromptLongerThanAnyContextIsRefusedAtOnce) {
    Mailbox gui;
    Worker w(gui);
    w.load(1, kStories);
    ASSERT_TRUE(runUntil(gui, w, [&] { return count<Loaded>(w.events()) == 1; }));
    EXPECT_EQ(last<Loaded>(w.events())->model.maxTokenBytes, 9);  // "<0x0A>"-style pieces are 6, "▁there" 8...
    w.generate(2, std::string(10'000'000, 'a'), 4, 1);
    ASSERT_TRUE(runUntil(gui, w, [&] { return last<Failed>(w.events()) != nullptr; }));
    // "at least": the bound from the byte count (10,000,000 / 9 bytes per token), not a count of
    // tokens — the worker refused it without tokenizing.
    EXPECT_EQ(last<Failed>(w.events())->message,
              "the prompt is at least 1111112 tokens but the context holds 2048; shorten it or load with a larger context");
}
