#pragma once
// The engine: a loaded model with its tokenizer, compute device and one session's KV cache, and
// the generation loop (prefill -> sample -> decode until a stop condition).
//
// Threading: an Engine is used by one thread at a time (the GUI's worker, or the CLI's main
// thread). Observer callbacks run synchronously on that thread. Only the cancel flag may be
// touched from elsewhere.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backend/compute_device.h"
#include "common/error.h"
#include "engine/generation.h"
#include "model/llama_model.h"
#include "model/model_info.h"
#include "tokenizer/tokenizer.h"

namespace inferscope {

namespace grammar { class TokenTrie; }
class SharedPasses;

struct EngineOptions {
    std::filesystem::path modelPath;
    std::optional<std::filesystem::path> tokenizerPath;  // a SentencePiece tokenizer.model to use instead of the GGUF vocabulary
    DeviceKind device = DeviceKind::Auto;
    int32_t threads = 0;                    // 0: one per core
    ComputePrecision precision = ComputePrecision::Auto;
    int32_t contextLength = 0;              // 0: the model's trained length, or the largest context that
                                            // fits in memory now when that does not (assessFit, with a
                                            // notice); more than the trained length is capped (with a notice)
    int32_t batchSize = 512;                // most tokens per prefill forward pass
    KvType kvType = KvType::F32;            // F16 halves the cache and what long-context decode reads; Q8_0
                                            // (34/128 of F32) and Q4_0 (18/128) need head dim % 32 == 0
    bool kvTypeFallback = false;            // a head dim that refuses kvType: F16, with a notice, instead of an error
                                            // (the app's setting is for every model; the CLI's --kv for this one)
    bool warmUp = true;                     // one throw-away pass at load (threads, JIT, page-in)
    bool privateWeights = false;            // the weights in this process's own pages, not the shared page cache
                                            // (MappedFile::Pages::Private; the CLI's --no-mmap)
};

// Asked before every forward pass (each prefill batch and each decode step): true stops the
// generation there, with FinishReason::Cancelled. Called on the generating thread.
using CancelCheck = std::function<bool()>;

class Engine {
public:
    static Result<std::unique_ptr<Engine>> load(const EngineOptions& options, const LoadProgress& progress = {});
    ~Engine();

    // Another session on this engine's model (engine_group.h): the same weights, device and
    // tokenizer, its own KV cache of contextLength positions and its own state. Its passes, and
    // from then on this engine's, run through `passes` (not null; it outlives both engines), which
    // batches the decode steps of every session. Call on the passes' compute thread.
    Result<std::unique_ptr<Engine>> newSession(int32_t contextLength, SharedPasses* passes);
    // Re-creates the KV cache with capacity contextLength (the same type and batch); the cached
    // tokens are dropped. Refused, the old cache kept, when it does not fit, and for a session of
    // a group (whose cache the others may copy from).
    Result<void> setContextLength(int32_t contextLength);

    const ModelInfo& info() const { return info_; }
    const LlamaHParams& hparams() const { return model_->hparams(); }
    const Tokenizer& tokenizer() const { return *tokenizer_; }
    // The tokenizer is immutable and thread-safe: other threads may keep and use it.
    std::shared_ptr<const Tokenizer> sharedTokenizer() const { return tokenizer_; }
    const LlamaModel& model() const { return *model_; }
    const ComputeDevice& device() const { return *device_; }
    ComputeDevice& mutableDevice() { return *device_; }  // probes (the same thread as generation)
    // The device's thread count (0: one per core), the one count every kernel and buffer follows.
    Result<void> setThreads(int32_t threads);
    const std::vector<std::string>& notices() const { return notices_; }  // e.g. a CPU fallback, a capped context
    int32_t contextLength() const { return context_->cache().capacity(); }
    int64_t loadUs() const { return loadUs_; }

    // Generates from request.prompt. The longest prefix of the prompt already in the KV cache is
    // reused (so regenerate, edit-and-resend and branching prefill only what changed); a session
    // of a group starts from another session's cache instead when that holds more of the prompt
    // (SharedPasses::copyLongestPrefix; PrefillStats::nCopied).
    // Errors: invalid parameters or prompt (empty, ids out of range, longer than the context: a
    // prompt is never cut, the caller decides what to drop); Io when the model file changed on disk
    // while in use (truncated, rewritten), after which every call returns that error: load again.
    Result<GenerationSummary> generate(const GenerateRequest& request, GenerationObserver* observer, const CancelCheck& cancel);
    // The same with a flag another thread may set.
    Result<GenerationSummary> generate(const GenerateRequest& request, GenerationObserver* observer = nullptr,
                                       const std::atomic<bool>* cancel = nullptr);

    // Teacher-forced scoring (engine_score.cpp): runs `tokens` from an empty cache one position at a
    // time (the decode path, as generation computes every step) and calls onLogits(i, logits) with
    // the logits [n_vocab] that predict position i + 1, for every i. Same checks as a prompt.
    using ScoreCallback = std::function<void(int32_t position, std::span<const float> logits)>;
    Result<void> score(std::span<const int32_t> tokens, const ScoreCallback& onLogits);
    // The same through two temporary caches of types a and b at once, position by position (the
    // session's cache is left alone): onLogits(i, logitsA, logitsB) for every i. A cancel check
    // that returns true stops it between positions with ErrorKind::Cancelled.
    using PairScoreCallback = std::function<void(int32_t position, std::span<const float> a, std::span<const float> b)>;
    Result<void> scoreWithKvTypes(KvType a, KvType b, std::span<const int32_t> tokens, const PairScoreCallback& onLogits,
                                  const CancelCheck& cancel = {});
    // Teacher-forced scoring in batches, as a prefill runs them (the LM head on every row: prefill's
    // speed, its rounding): tokens[from, from + count) at their positions, after tokens[0, from)
    // (from 0 empties the cache first; otherwise the cache must hold tokens[0, from), as the previous
    // call left it). Writes count × n_vocab logits to `logits`, row i predicting position from + i + 1.
    // count ≤ maxScoreRows(). Two engines can so be run in lockstep (engine/compare.h).
    Result<void> scoreRows(std::span<const int32_t> tokens, int32_t from, int32_t count, std::vector<float>& logits);
    // Rows per scoreRows call: the context's batch, and at most 32 MiB of logits.
    int32_t maxScoreRows() const;

    // The KV cache's element type. setKvType re-creates the cache in that type (same context):
    // the cached tokens are dropped, so the next generation prefills its whole prompt. Refused,
    // the old cache kept, when the head dimension does not suit a block type or it does not fit,
    // and for a session of a group.
    KvType kvType() const { return context_->cache().type(); }
    Result<void> setKvType(KvType type);

    // Looks inside the pass of the cached token at `position` (its logits predict position + 1):
    // re-runs that one position over the KV cache (a decode pass reading the cached keys and
    // values, writing none) with its residual stream and attention weights kept, then reads every
    // layer out through the final norm and LM head (engine_inspect.cpp). The cache, its counters and
    // the generation state are left as they were. The last lens row is the distribution the
    // sampler saw bit for bit where that position was itself run as a decode pass (every step
    // after the first; the first when its prompt's last token ran alone); after a batched prefill
    // the re-run's matrix products round differently (GenerateRequest::inspect captures that step
    // exactly). Errors: InvalidArgument for a position not cached or bad options.
    Result<PositionInspection> inspectPosition(int32_t position, const InspectOptions& options = {});

    // Tokens whose keys and values are in the cache, in order.
    std::span<const int32_t> cachedTokens() const { return cachedTokens_; }
    KvCacheStats kvStats() const { return context_->cache().stats(); }
    const KvCache& kvCache() const { return context_->cache(); }
    void truncate(int32_t nTokens);  // keep the first nTokens cached positions
    void reset() { truncate(0); }

private:
    friend class EngineGroup;
    Engine() = default;
    // One forward pass of the model (LlamaModel::forward), on the shared compute thread when the
    // engine is a session of a group (newSession), else here.
    std::span<const float> runPass(LlamaContext& ctx, std::span<const int32_t> tokens, int32_t position0, CellOrigin origin,
                                   ForwardProbe* probe = nullptr, float* everyRow = nullptr);
    // Runs tokens[from..) at their positions through the model in batches; returns the last logits.
    // probe: kept of the last token's pass (the one whose logits are returned).
    std::span<const float> runBatched(std::span<const int32_t> tokens, int32_t from, int32_t promptLength,
                                      ForwardProbe* probe = nullptr);
    // Ok while the mapped model file is as loaded; otherwise the engine is broken from now on.
    Result<void> checkModelFile();
    // generate()'s decoding under speculative decoding (engine_speculative.cpp), from the prefill's logits.
    Result<GenerationSummary> decodeSpeculative(const GenerateRequest& request, GenerationObserver* observer, const CancelCheck& cancel,
                                                std::vector<int32_t> sequence, std::span<const float> prefillLogits,
                                                GenerationSummary summary, std::chrono::steady_clock::time_point start);
    Result<void> checkSpeculative(const GenerateRequest& request) const;
    // The same checks as for a prompt, for a sequence to score.
    Result<void> checkScoredSequence(std::span<const int32_t> tokens);

    ModelInfo info_;
    std::shared_ptr<ComputeDevice> device_;  // shared by a group's sessions (newSession)
    std::shared_ptr<const Tokenizer> tokenizer_;
    std::shared_ptr<LlamaModel> model_;
    SharedPasses* passes_ = nullptr;         // a session's compute thread; null: compute here
    std::unique_ptr<LlamaContext> context_;
    std::vector<int32_t> cachedTokens_;
    std::vector<std::string> notices_;
    std::optional<Error> broken_;  // set when the model file changed under the mapping
    ForwardProbe probe_;           // reused by inspection (its buffers grow to the largest asked)
    // The vocabulary's token bytes as a trie for grammar masks, built on the first grammar request.
    std::shared_ptr<const grammar::TokenTrie> tokenTrie_;
    const grammar::TokenTrie& tokenTrie();
    int64_t loadUs_ = 0;
};

}  // namespace inferscope
