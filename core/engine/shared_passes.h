#pragma once
// One model's forward passes for several sessions (a server's slots), run on one compute thread:
// continuous batching. Each session is an Engine on its own thread with its own context (KV
// cache); instead of computing, it hands its pass here and waits for the logits.
//
//   - Decode passes (one token, nothing probed, of a session between beginDecoding and
//     endDecoding) wait until every session that is decoding has one pending, then run as one
//     LlamaModel::decodeBatch: each weight read once for all. A session
//     busy elsewhere (a client that does not read its stream blocks its thread) holds the others up
//     for `gather` at most (counted from the later of the first pending pass and the last step's
//     end), once: a batch run without it no longer waits for it until its next pass arrives.
//   - Other passes (a prompt's chunk of up to the context's batch, a verification of several rows)
//     run one per step, first come first served, after that step's decode batch: a long prompt is
//     prefilled chunk by chunk while the running streams keep their pace (chunked prefill).
//
// Exactness: decodeBatch gives every sequence the logits and cache bytes its own one-token pass
// would (llama_model.h), so a session's tokens do not depend on who else is running.
// OpenMP's team belongs to the compute thread: the model is loaded and warmed up there (run()).

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <span>
#include <thread>
#include <utility>
#include <vector>

#include "kv_cache/kv_cache.h"

namespace inferscope {

class LlamaModel;
class LlamaContext;
struct ForwardProbe;

// What the compute thread has done so far (monotonic counters, and the last step's figures).
struct SharedPassStats {
    uint64_t steps = 0;             // compute steps (a decode batch and/or one other pass)
    uint64_t decodeTokens = 0;      // generated tokens run in decode batches
    uint64_t promptTokens = 0;      // prompt tokens run (a prompt's passes, chunk by chunk)
    uint64_t batchedSteps = 0;      // steps whose decode batch held more than one sequence
    uint64_t gatherTimeouts = 0;    // decode batches run at the gather wait, a decoding session missing
    uint64_t prefixCopies = 0;      // prompts that started from another session's cached prefix
    uint64_t prefixTokensCopied = 0;  // positions so copied instead of computed
    int32_t lastBatch = 0;          // sequences in the last decode batch
    int32_t largestBatch = 0;
    int32_t decoding = 0;           // sessions decoding now
    uint64_t computeUs = 0;         // time spent computing
    double decodeTokensPerSecond = 0;  // decoded over the last kRateWindow seconds (whole seconds)
    std::vector<uint64_t> batchSizes;  // [b]: decode batches of b sequences (index 0 unused)
};

class SharedPasses {
public:
    static constexpr int kRateWindow = 10;
    static constexpr size_t kMinCopy = 16;
    explicit SharedPasses(std::chrono::microseconds gather = std::chrono::milliseconds(10));
    ~SharedPasses();  // stops the compute thread; no pass may be pending
    SharedPasses(const SharedPasses&) = delete;
    SharedPasses& operator=(const SharedPasses&) = delete;

    // Runs fn on the compute thread and waits for it (loading, making contexts, tearing down).
    void run(const std::function<void()>& fn);

    // The pass LlamaModel::forward(ctx, tokens, position0, origin, probe, everyRow) would run, run on
    // the compute thread; returns its logits (ctx's buffer, valid until ctx's next pass).
    std::span<const float> forward(LlamaModel& model, LlamaContext& ctx, std::span<const int32_t> tokens, int32_t position0,
                                   CellOrigin origin, ForwardProbe* probe = nullptr, float* everyRow = nullptr);

    // The session of context ctx starts / stops decoding one token a pass: decode batches wait for
    // the sessions between the two calls.
    void beginDecoding(const LlamaContext& ctx);
    void endDecoding(const LlamaContext& ctx);

    // The sessions' own contexts (a group's): their caches are the ones a prefix may be copied
    // from and into (copyLongestPrefix). Call on the compute thread (in run()); each must outlive
    // this object or be forgotten first (forgetMembers, also on the compute thread).
    void addMember(LlamaContext& ctx);
    void forgetMembers();
    // A prefix cache shared by the sessions. `into` (a member) holds exactly `have` positions, the
    // first `have` of `tokens`. Of the other members' caches, as their passes here left them (a
    // session that is decoding included: the copy runs between steps), the one sharing the longest
    // prefix with `tokens`: when that is longer than `have`, its positions have .. n-1 are copied
    // into `into`'s cache (as prompt cells; the keys and values the other session computed for
    // the same tokens at the same positions). Returns n, or `have` when no cache shares at least
    // kMinCopy positions more (the copy makes the prompt wait for a step; a few positions more
    // are computed in its first chunk about as fast).
    int32_t copyLongestPrefix(LlamaContext& into, std::span<const int32_t> tokens, int32_t have);

    SharedPassStats stats() const;
    // Positions of a member's cache its passes here (and prefix copies) left filled (0 before any,
    // and for a context that is not a member).
    int32_t extentOf(const LlamaContext& ctx) const;

private:
    struct Pass {
        LlamaModel* model = nullptr;
        LlamaContext* ctx = nullptr;
        std::span<const int32_t> tokens;
        int32_t position = 0;
        CellOrigin origin = CellOrigin::Prompt;
        ForwardProbe* probe = nullptr;
        float* everyRow = nullptr;
        std::function<void()> task;  // run(): a task instead of a pass
        std::span<const float> logits;
        bool done = false;
        std::chrono::steady_clock::time_point queued;
        bool isDecode() const { return !task && tokens.size() == 1 && !probe && !everyRow; }
    };
    void submit(Pass& pass);
    void loop();
    void runDecodes(std::vector<Pass*>& decodes);

    const std::chrono::microseconds gather_;
    mutable std::mutex mutex_;
    std::condition_variable wake_, done_;
    std::deque<Pass*> decodes_, others_;
    bool everyWaitedForIsPending() const;  // under mutex_
    bool decodesReady() const;             // under mutex_
    std::chrono::steady_clock::time_point gatherDeadline() const;  // under mutex_, decodes_ not empty
    std::chrono::steady_clock::time_point stepEnded_{};            // when the last step's compute ended
    std::vector<const LlamaContext*> decoding_;  // the sessions decoding
    std::vector<const LlamaContext*> waitFor_;   // of which those a batch waits for
    struct Member {
        LlamaContext* ctx = nullptr;
        std::vector<int32_t> written;  // the tokens whose keys and values its cache holds, by position
    };
    std::vector<Member> members_;  // changed on the compute thread only, under mutex_
    void noteWritten(const Pass& pass);  // under mutex_
    // Of the members other than into, the one whose cache shares the longest prefix with tokens,
    // by kMinCopy positions or more than `have` (null when none), and that length. Under mutex_ or on the compute thread.
    std::pair<const Member*, size_t> longestPrefix(const LlamaContext& into, std::span<const int32_t> tokens, size_t have) const;
    bool quit_ = false;
    SharedPassStats stats_;
    int64_t rateSecond_ = 0;                     // the second buckets_[0] counts
    uint64_t rateBuckets_[kRateWindow + 1] = {}; // decoded tokens per second, [0] the current one
    void countRate(int64_t second, uint64_t tokens);
    std::thread thread_;
};

}  // namespace inferscope
