// EngineGroup (core/engine/engine_group.h): N sessions on one model, their decode steps batched on
// one compute thread.
// - Batched is alone: 8 sessions on 8 threads generate at once from prompts of different lengths
//   (so at different positions, finishing at different times; half greedy, half sampled with a
//   seed); every answer's tokens are exactly those of the same request on an engine of its own, and
//   the first decode step ran all 8 in one batch. A second round extends each conversation (the
//   cached prefix reused) with the same result. On stories260K, every architecture fixture and a
//   K-quant file (../shared/models).
// - The KV budget: --ctx is split among the sessions; too small a share is refused with a message.
// - Cancelling one session's generation leaves the others' answers as they are alone.
// - A one-token prompt does not wait for the sessions decoding (they may be waiting for it).
// - The prefix cache shared by the sessions: a prompt starts from the longest prefix any other
//   session's cache holds, decoding or not, and answers as an engine continuing its own cache.
// - A session whose thread is held up elsewhere (a client that does not read its stream) holds
//   the others' batches up once, for the gather wait, and not again until its next pass.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine.h"
#include "engine/engine_group.h"
#include "model_test_helpers.h"
#include "shared_data.h"

using namespace inferscope;

namespace {

constexpr int kSessions = 8;
constexpr int32_t kShare = 96;
const int32_t kPromptLengths[kSessions] = {5, 1, 12, 3, 20, 7, 2, 9};
const int32_t kMaxTokens[kSessions] = {16, 9, 24, 12, 5, 20, 14, 11};
// With a gather wait this long a decode batch runs only when every decoding session has its pass
// pending: the batch sizes the test reads are the scheduler's, not the machine's timing. A batch
// the scheduler held for a session that could not come shows as a gather timeout, not a hang.
constexpr auto kWaitForAll = std::chrono::seconds(60);

// Waits in onPrefill until `n` generations have prefilled, so that all decode together.
class Latch {
public:
    explicit Latch(int n) : left_(n) {}
    void arriveAndWait() {
        std::unique_lock lock(m_);
        if (--left_ == 0) cv_.notify_all();
        cv_.wait(lock, [this] { return left_ <= 0; });
    }

private:
    std::mutex m_;
    std::condition_variable cv_;
    int left_;
};

struct LatchObserver : GenerationObserver {
    Latch* latch = nullptr;
    void onPrefill(const PrefillStats&) override {
        if (latch) latch->arriveAndWait();
    }
};

// Session 0, decoding, stops in one of its observer's callbacks until session 1 has prefilled; the
// test starts session 1 once session 0 has stopped there.
class Handoff {
public:
    void firstStopsUntilSecondPrefilled() {  // session 0's thread
        std::unique_lock lock(m_);
        firstDecoding_ = true;
        cv_.notify_all();
        cv_.wait(lock, [this] { return secondPrefilled_; });
    }
    void waitForFirst() {
        std::unique_lock lock(m_);
        cv_.wait(lock, [this] { return firstDecoding_; });
    }
    void secondPrefilled() {  // session 1's thread
        std::lock_guard lock(m_);
        secondPrefilled_ = true;
        cv_.notify_all();
    }

private:
    std::mutex m_;
    std::condition_variable cv_;
    bool firstDecoding_ = false, secondPrefilled_ = false;
};

// Calls `prefilled` in onPrefill and `stepped` in the first onStep, when given.
struct HandoffObserver : GenerationObserver {
    std::function<void()> prefilled, stepped;
    void onPrefill(const PrefillStats&) override {
        if (prefilled) prefilled();
    }
    void onStep(const StepRecord&) override {
        if (stepped) stepped();
        stepped = nullptr;
    }
};

std::vector<int32_t> promptFor(int i, int32_t nVocab, int32_t length) {
    std::vector<int32_t> p;
    for (int32_t j = 0; j < length; ++j) p.push_back(1 + (i * 131 + j * 17) % (nVocab - 1));
    return p;
}

GenerateRequest requestFor(int i, std::vector<int32_t> prompt) {
    GenerateRequest r;
    r.prompt = std::move(prompt);
    r.maxTokens = kMaxTokens[i];
    r.sampler.temperature = i % 2 == 0 ? 0.0f : 0.8f;
    r.sampler.seed = uint64_t(1000 + i);
    return r;
}

// "" is the bundled stories260K; the others are under ../shared/models.
std::vector<std::string> modelFiles() {
    return {"", "arch/llama3-tiny.gguf", "arch/qwen2-tiny.gguf", "arch/qwen3-tiny.gguf", "arch/gemma2-tiny.gguf",
            "arch/gemma3-tiny.gguf", "arch/phi3-tiny.gguf", "quant/stories260K-wide-Q4_K_M.gguf"};
}

EngineOptions optionsFor(const std::string& file, int32_t ctx) {
    EngineOptions o;
    o.modelPath = file;
    o.contextLength = ctx;
    o.threads = 2;
    return o;
}

// Each session's conversation on an engine of its own: rounds[r][i] is session i's request of
// round r, run after its earlier rounds (the cache reused as the session reuses it). A K-quant
// file rounds a prefilled batch differently from decode steps, so a fresh prefill of the same
// tokens would not be the same computation.
std::vector<std::vector<std::vector<int32_t>>> aloneTokens(const std::string& file, const std::vector<std::vector<GenerateRequest>>& rounds) {
    auto alone = Engine::load(optionsFor(file, kShare));
    EXPECT_TRUE(alone) << alone.error().message;
    std::vector<std::vector<std::vector<int32_t>>> out(rounds.size());
    if (!alone) return out;
    for (size_t i = 0; i < rounds[0].size(); ++i) {
        (*alone)->reset();
        for (size_t r = 0; r < rounds.size(); ++r) {
            auto s = (*alone)->generate(rounds[r][i]);
            EXPECT_TRUE(s) << s.error().message;
            out[r].push_back(s ? s->tokens : std::vector<int32_t>{});
        }
    }
    return out;
}

// Runs requests[i] on session i, all at once, each on its own thread.
std::vector<GenerationSummary> together(EngineGroup& group, const std::vector<GenerateRequest>& requests) {
    Latch latch(int(requests.size()));
    std::vector<GenerationSummary> out(requests.size());
    std::vector<std::thread> threads;
    for (size_t i = 0; i < requests.size(); ++i)
        threads.emplace_back([&, i] {
            LatchObserver o;
            o.latch = &latch;
            auto s = group.session(i).generate(requests[i], &o);
            EXPECT_TRUE(s) << s.error().message;
            if (s) out[i] = std::move(*s);
        });
    for (auto& t : threads) t.join();
    return out;
}

}  // namespace

class EngineGroupModels : public ::testing::TestWithParam<std::string> {};

TEST_P(EngineGroupModels, EveryAnswerIsTheAnswerAloneAndTheStepsRanBatched) {
    std::string file = testing_model::kStories;
    if (!GetParam().empty()) {
        INFERSCOPE_SHARED_FILE_OR_SKIP(shared, "models/" + GetParam());
        file = *shared_opt;
    }
    auto group = EngineGroup::load(optionsFor(file, kShare * kSessions), kSessions, kWaitForAll);
    ASSERT_TRUE(group) << group.error().message;
    ASSERT_EQ((*group)->size(), size_t(kSessions));
    const int32_t nVocab = (*group)->session(0).hparams().nVocab;
    for (int i = 0; i < kSessions; ++i) EXPECT_EQ((*group)->session(size_t(i)).contextLength(), kShare);

    std::vector<GenerateRequest> requests;
    for (int i = 0; i < kSessions; ++i) requests.push_back(requestFor(i, promptFor(i, nVocab, kPromptLengths[i])));
    const auto got = together(**group, requests);
    for (int i = 0; i < kSessions; ++i) {
        EXPECT_GE(got[size_t(i)].nGenerated, 1);
    }
    SharedPassStats stats = (*group)->stats();
    EXPECT_EQ(stats.largestBatch, kSessions);  // the first step: every session at once
    ASSERT_GT(stats.batchSizes.size(), size_t(kSessions));
    EXPECT_GE(stats.batchSizes[kSessions], 1u);
    uint64_t decoded = 0;
    uint64_t prompted = 0;
    for (const auto& s : got) {
        decoded += uint64_t(s.decodedTokens);
        prompted += uint64_t(s.prefill.nComputed);
    }
    EXPECT_EQ(stats.decodeTokens, decoded);
    EXPECT_EQ(stats.promptTokens, prompted);
    EXPECT_EQ(stats.decoding, 0);
    EXPECT_EQ(stats.gatherTimeouts, 0u);

    // Round two: each conversation goes on (the cached prompt and answer reused, a few new tokens).
    std::vector<GenerateRequest> next;
    for (int i = 0; i < kSessions; ++i) {
        std::vector<int32_t> prompt = requests[size_t(i)].prompt;
        prompt.insert(prompt.end(), got[size_t(i)].tokens.begin(), got[size_t(i)].tokens.end());
        const auto more = promptFor(i + 7, nVocab, 4);
        prompt.insert(prompt.end(), more.begin(), more.end());
        prompt.resize(std::min<size_t>(prompt.size(), size_t(kShare - kMaxTokens[i])));
        next.push_back(requestFor(i, prompt));
    }
    const auto gotNext = together(**group, next);
    const auto expected = aloneTokens(file, {requests, next});
    for (int i = 0; i < kSessions; ++i) {
        EXPECT_EQ(got[size_t(i)].tokens, expected[0][size_t(i)]) << "session " << i;
        EXPECT_EQ(gotNext[size_t(i)].tokens, expected[1][size_t(i)]) << "session " << i;
        EXPECT_GT(gotNext[size_t(i)].prefill.nReused, 0) << "session " << i;
    }
}

// The prefix cache shared by the sessions: session 1 continues session 0's conversation. It copies
// every position session 0 computed and answers exactly as one engine continuing its own cache
// does; then session 0 writes another prompt over its cache, and session 1's next round is still
// its own conversation's (the positions were copied, not shared).
TEST_P(EngineGroupModels, APromptStartsFromTheLongestPrefixAnotherSessionCached) {
    std::string file = testing_model::kStories;
    if (!GetParam().empty()) {
        INFERSCOPE_SHARED_FILE_OR_SKIP(shared, "models/" + GetParam());
        file = *shared_opt;
    }
    auto group = EngineGroup::load(optionsFor(file, kShare * 2), 2);
    ASSERT_TRUE(group) << group.error().message;
    const int32_t nVocab = (*group)->session(0).hparams().nVocab;
    auto followOn = [&](const GenerateRequest& r, const std::vector<int32_t>& answer, int i, int32_t extra) {
        std::vector<int32_t> prompt = r.prompt;
        prompt.insert(prompt.end(), answer.begin(), answer.end());
        const auto more = promptFor(i + 9, nVocab, extra);
        prompt.insert(prompt.end(), more.begin(), more.end());
        return requestFor(i, prompt);
    };

    const GenerateRequest first = requestFor(0, promptFor(0, nVocab, 20));
    auto a = (*group)->session(0).generate(first);
    ASSERT_TRUE(a) << a.error().message;
    const auto computedBySession0 = int32_t((*group)->session(0).cachedTokens().size());
    ASSERT_GT(computedBySession0, int32_t(first.prompt.size()));  // the prompt and the answer's tokens run

    const GenerateRequest second = followOn(first, a->tokens, 1, 4);  // sampled with a seed
    auto b = (*group)->session(1).generate(second);
    ASSERT_TRUE(b) << b.error().message;
    EXPECT_EQ(b->prefill.nCopied, computedBySession0);
    EXPECT_EQ(b->prefill.nReused, computedBySession0);
    EXPECT_EQ(b->prefill.nComputed, int32_t(second.prompt.size()) - computedBySession0);

    auto other = (*group)->session(0).generate(requestFor(2, promptFor(5, nVocab, 30)));
    ASSERT_TRUE(other) << other.error().message;
    const GenerateRequest third = followOn(second, b->tokens, 3, 3);
    auto c = (*group)->session(1).generate(third);
    ASSERT_TRUE(c) << c.error().message;
    EXPECT_EQ(c->prefill.nCopied, 0);
    EXPECT_GT(c->prefill.nReused, int32_t(second.prompt.size()));

    const auto expected = aloneTokens(file, {{first}, {second}, {third}});
    EXPECT_EQ(a->tokens, expected[0][0]);
    EXPECT_EQ(b->tokens, expected[1][0]);
    EXPECT_EQ(c->tokens, expected[2][0]);
    const SharedPassStats stats = (*group)->stats();
    EXPECT_EQ(stats.prefixCopies, 1u);
    EXPECT_EQ(stats.prefixTokensCopied, uint64_t(computedBySession0));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, EngineGroupModels, ::testing::ValuesIn(modelFiles()), [](const auto& info) {
    std::string name = info.param.empty() ? "stories260K" : std::filesystem::path(info.param).stem().string();
    for (char& c : name)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    return name;
});

TEST(EngineGroup, TheContextIsABudgetSplitAmongTheSessions) {
    auto group = EngineGroup::load(optionsFor(testing_model::kStories, 200), 4);
    ASSERT_TRUE(group) << group.error().message;
    for (size_t i = 0; i < 4; ++i) EXPECT_EQ((*group)->session(i).contextLength(), 50);
    EXPECT_EQ((*group)->totalContext(), 200);

    auto tooSmall = EngineGroup::load(optionsFor(testing_model::kStories, 100), 8);
    ASSERT_FALSE(tooSmall);
    EXPECT_EQ(tooSmall.error().message, "a context of 100 tokens split among 8 slots leaves 12 each; give at least 128");
}

TEST(EngineGroup, ACancelledSessionLeavesTheOthersAsTheyAreAlone) {
    auto group = EngineGroup::load(optionsFor(testing_model::kStories, kShare * 3), 3, kWaitForAll);
    ASSERT_TRUE(group) << group.error().message;
    const int32_t nVocab = (*group)->session(0).hparams().nVocab;
    std::vector<GenerateRequest> requests;
    for (int i = 0; i < 3; ++i) requests.push_back(requestFor(i, promptFor(i, nVocab, kPromptLengths[i])));
    requests[1].maxTokens = 40;
    const auto expected = aloneTokens(testing_model::kStories, {requests})[0];

    // Session 1 is cancelled after its third token; the others run to their ends.
    Latch latch(3);
    std::vector<GenerationSummary> got(3);
    std::vector<std::thread> threads;
    for (int i = 0; i < 3; ++i)
        threads.emplace_back([&, i] {
            struct Observer : LatchObserver {
                int steps = 0;
                void onStep(const StepRecord&) override { ++steps; }
            } o;
            o.latch = &latch;
            auto cancel = [&o, i] { return i == 1 && o.steps >= 3; };
            auto s = (*group)->session(size_t(i)).generate(requests[size_t(i)], &o, CancelCheck(cancel));
            ASSERT_TRUE(s) << s.error().message;
            got[size_t(i)] = std::move(*s);
        });
    for (auto& t : threads) t.join();
    EXPECT_EQ(got[1].reason, FinishReason::Cancelled);
    EXPECT_EQ(got[1].tokens, std::vector<int32_t>(expected[1].begin(), expected[1].begin() + 3));
    EXPECT_EQ(got[0].tokens, expected[0]);
    EXPECT_EQ(got[2].tokens, expected[2]);
    EXPECT_EQ((*group)->stats().decoding, 0);
    EXPECT_EQ((*group)->stats().gatherTimeouts, 0u);
}

// A one-token prompt arriving while another session is decoding (here: waiting, in its onPrefill,
// for this prompt) runs at once; held for that session's decode batch, the two waited on each
// other until the gather wait ran out.
TEST(EngineGroup, AOneTokenPromptDoesNotWaitForTheDecodingSessions) {
    auto group = EngineGroup::load(optionsFor(testing_model::kStories, kShare * 2), 2, kWaitForAll);
    ASSERT_TRUE(group) << group.error().message;
    const int32_t nVocab = (*group)->session(0).hparams().nVocab;
    std::vector<GenerateRequest> requests{requestFor(0, promptFor(0, nVocab, 6)), requestFor(1, promptFor(1, nVocab, 1))};
    const auto expected = aloneTokens(testing_model::kStories, {requests})[0];

    Handoff handoff;
    std::vector<GenerationSummary> got(2);
    std::thread first([&] {
        HandoffObserver o;
        // session 0 is decoding now: it waits for session 1's prompt
        o.prefilled = [&] { handoff.firstStopsUntilSecondPrefilled(); };
        auto s = (*group)->session(0).generate(requests[0], &o);
        ASSERT_TRUE(s) << s.error().message;
        got[0] = std::move(*s);
    });
    handoff.waitForFirst();
    HandoffObserver o;
    o.prefilled = [&] { handoff.secondPrefilled(); };
    auto s = (*group)->session(1).generate(requests[1], &o);
    ASSERT_TRUE(s) << s.error().message;
    got[1] = std::move(*s);
    first.join();
    EXPECT_EQ((*group)->stats().gatherTimeouts, 0u);
    EXPECT_EQ(got[0].tokens, expected[0]);
    EXPECT_EQ(got[1].tokens, expected[1]);
}

TEST(EngineGroup, ASessionHeldUpElsewhereStopsHoldingUpTheOthersAfterOneWait) {
    auto group = EngineGroup::load(optionsFor(testing_model::kStories, kShare * 2), 2, std::chrono::milliseconds(50));
    ASSERT_TRUE(group) << group.error().message;
    const int32_t nVocab = (*group)->session(0).hparams().nVocab;
    std::vector<GenerateRequest> requests{requestFor(0, promptFor(0, nVocab, 5)), requestFor(2, promptFor(2, nVocab, 7))};
    requests[0].maxTokens = 6;
    requests[1].maxTokens = 30;
    const auto expected = aloneTokens(testing_model::kStories, {requests})[0];

    // Session 0 stops in its third step's callback until session 1 has finished its answer.
    Latch bothPrefilled(2);
    std::mutex m;
    std::condition_variable cv;
    bool secondDone = false;
    std::vector<GenerationSummary> got(2);
    std::thread held([&] {
        struct Observer : LatchObserver {
            std::function<void()> onThird;
            int steps = 0;
            void onStep(const StepRecord&) override {
                if (++steps == 3) onThird();
            }
        } o;
        o.latch = &bothPrefilled;
        o.onThird = [&] {
            std::unique_lock lock(m);
            cv.wait(lock, [&] { return secondDone; });
        };
        auto s = (*group)->session(0).generate(requests[0], &o);
        ASSERT_TRUE(s) << s.error().message;
        got[0] = std::move(*s);
    });
    LatchObserver o;
    o.latch = &bothPrefilled;
    auto s = (*group)->session(1).generate(requests[1], &o);
    ASSERT_TRUE(s) << s.error().message;
    got[1] = std::move(*s);
    EXPECT_EQ((*group)->stats().gatherTimeouts, 1u);  // one wait for the held session, then none
    {
        std::lock_guard lock(m);
        secondDone = true;
    }
    cv.notify_all();
    held.join();
    EXPECT_EQ(got[0].tokens, expected[0]);
    EXPECT_EQ(got[1].tokens, expected[1]);
}

// A prompt copies the prefix of a session that is decoding (a shared system prompt while another
// client's answer streams): here session 0 waits at its first token until session 1 has
// prefilled, so the copy runs between session 0's steps. Both answers are those of engines alone.
TEST(EngineGroup, APromptCopiesThePrefixOfASessionThatIsDecoding) {
    auto group = EngineGroup::load(optionsFor(testing_model::kStories, kShare * 2), 2);
    ASSERT_TRUE(group) << group.error().message;
    const int32_t nVocab = (*group)->session(0).hparams().nVocab;
    GenerateRequest first = requestFor(0, promptFor(0, nVocab, 24));
    first.maxTokens = 30;
    const auto firstAlone = aloneTokens(testing_model::kStories, {{first}})[0][0];
    ASSERT_FALSE(firstAlone.empty());
    // Session 1's prompt: the same 24 tokens, then not session 0's answer.
    std::vector<int32_t> prompt = first.prompt;
    for (int32_t t : promptFor(3, nVocab, 6)) prompt.push_back(t);
    if (prompt[24] == firstAlone[0]) prompt[24] = 1 + prompt[24] % (nVocab - 1);
    const GenerateRequest second = requestFor(1, prompt);
    // Alone: an engine that prefilled the same 24 tokens, then reads the rest.
    const auto secondAlone = aloneTokens(testing_model::kStories, {{first}, {second}})[1][0];

    Handoff handoff;
    std::optional<GenerationSummary> got0;
    std::thread decoding([&] {
        HandoffObserver o;
        o.stepped = [&] { handoff.firstStopsUntilSecondPrefilled(); };
        auto s = (*group)->session(0).generate(first, &o);
        ASSERT_TRUE(s) << s.error().message;
        got0 = std::move(*s);
    });
    handoff.waitForFirst();
    HandoffObserver o;
    o.prefilled = [&] { handoff.secondPrefilled(); };
    auto s = (*group)->session(1).generate(second, &o);
    decoding.join();
    ASSERT_TRUE(s) << s.error().message;
    ASSERT_TRUE(got0);
    EXPECT_EQ(s->prefill.nCopied, 24);
    EXPECT_EQ(s->prefill.nComputed, int32_t(prompt.size()) - 24);
    EXPECT_EQ(s->tokens, secondAlone);
    EXPECT_EQ(got0->tokens, firstAlone);
}

TEST(EngineGroup, ASessionKeepsItsCacheTypeAndLength) {
    auto group = EngineGroup::load(optionsFor(testing_model::kStories, kShare * 2), 2);
    ASSERT_TRUE(group) << group.error().message;
    auto kv = (*group)->session(1).setKvType(KvType::F16);
    ASSERT_FALSE(kv);
    EXPECT_EQ(kv.error().message, "a session of a group keeps its KV cache's type");
    auto ctx = (*group)->session(0).setContextLength(64);
    ASSERT_FALSE(ctx);
    EXPECT_EQ(ctx.error().message, "a session of a group keeps its context length");
    EXPECT_EQ((*group)->session(0).contextLength(), kShare);
}
