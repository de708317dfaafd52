#pragma once
// Value types that cross from the engine's worker thread to the GUI thread in queued signals.

#include <QMetaType>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/chat_template.h"
#include "engine/engine.h"
#include "engine/prompt_builder.h"  // PromptChunk
#include "model/pass_cost.h"
#include "record/answer_origin.h"
#include "record/structured_constraint.h"

namespace inferscope {

// What the GUI knows about the loaded model (a snapshot made on the worker at load).
struct LoadedModel {
    std::string path;
    ModelInfo info;
    std::string device;                      // "CPU avx512_core_bf16, 2 threads"
    std::string precision;                   // "F32 ×35" / "BF16 from F16 ×35"
    std::vector<std::string> notices;
    int32_t contextLength = 0;
    uint64_t weightBytesResident = 0;        // weights in memory as computed (mapped or converted)
    uint64_t weightBytesPerToken = 0;        // read by one forward pass
    uint64_t matmulMacsPerToken = 0;
    int64_t loadUs = 0;
    KvCacheStats kv;                         // empty cache, capacity and bytes reserved
    PassCost cost;                           // a pass's bytes and FLOPs (the Timeline's figures)
    std::optional<ChatTemplateKind> detectedTemplate;  // from tokenizer.chat_template
    std::shared_ptr<const Tokenizer> tokenizer;        // immutable, thread-safe
    // The most bytes of text one token can stand for, when every byte of any text is covered by
    // some token (SentencePiece's byte fallback, byte-level BPE's 256 byte tokens); 0 otherwise.
    // A text of n bytes then needs at least ceil(n / maxTokenBytes) tokens: a prompt that cannot
    // fit the context is refused without tokenizing it (10 MB took Llama 3's BPE ~8 s).
    int32_t maxTokenBytes = 0;
    uint64_t vocabularyHash = 0;             // record/answer_origin.h's vocabularyHash of the tokenizer (0: none)
};

// A token of a loaded vocabulary as an answer's origin keeps it: its bytes, or a control token's name.
inline TokenText tokenTextOf(const Tokenizer& tokenizer, int32_t id) {
    TokenText t{tokenizer.tokenBytes(id), {}};
    if (t.bytes.empty()) t.label = std::string(tokenizer.piece(id));
    return t;
}

// The fewest tokens `utf8Bytes` bytes of text can become (0 when maxTokenBytes is 0: no bound).
inline int64_t minTokensFor(int64_t utf8Bytes, int32_t maxTokenBytes) {
    return maxTokenBytes > 0 ? (utf8Bytes + maxTokenBytes - 1) / maxTokenBytes : 0;
}

// Speculative decoding for one job (Settings → Speculative decoding): prompt lookup, or a draft
// model file the worker loads (kept loaded while the path and the model's context stay the same)
// and checks against the model's vocabulary before the job runs.
struct SpeculativeJob {
    DraftSource source = DraftSource::NGram;
    int32_t maxDraft = 4;
    int32_t ngramMax = 4;       // prompt lookup: the lengths of the text's end looked up, 1 to this
    std::string draftModelPath; // DraftSource::Model
};

struct GenerationJob {
    uint64_t id = 0;
    std::vector<PromptChunk> chunks;
    SamplerParams sampler;
    int32_t maxTokens = 256;
    std::vector<std::string> stopStrings;
    bool useKvCache = true;
    // The Settings' thread count (0: one per core), applied before the job; nullopt keeps the
    // current count (measurements run with whatever the answers ran with).
    std::optional<int32_t> threads;
    int32_t replayWidth = 0;  // raw logits kept per step for replay (GenerateRequest::replayWidth)
    bool resetCache = false;  // start from an empty KV cache (measurements: nothing reused)
    // A Timeline measurement (no-cache rerun, prefill sweep): the status bar and KV panel keep
    // describing the conversation, not the measurement's throw-away cache.
    bool measurement = false;
    // Look inside the first token's pass as it runs (the prefill's last batch): set by
    // EngineController while a Layers or Attention panel is open, so that token's lens and weights
    // are exact, not a re-run that rounds differently. The later steps are re-run on demand.
    GenerateInspect inspect;
    // A backend without a tokenizer (a server: BackendAbilities::tokenizes false) gets the
    // conversation as messages, (role, content) with role "system" | "user" | "assistant", and
    // applies its own template; chunks are then empty.
    std::vector<std::pair<std::string, std::string>> messages;
    bool continueFinalMessage = false;  // remote: the last message is the answer so far (a branch), to continue
    // Structured output (chat/structured_output.h): what the answer must be, as the setting says it
    // (a server gets it as response_format or grammar), and compiled: every local step samples
    // only what the grammar allows.
    StructuredConstraint structured;
    std::shared_ptr<const grammar::Grammar> grammar;
    std::string grammarPrefix;  // a branch: its kept bytes, matched before the new tokens (GenerateRequest::grammarPrefix)
    // Speculative decoding (a backend that drafts: BackendAbilities::drafts); none: plain decoding.
    std::optional<SpeculativeJob> speculative;
    // The second model of the last comparison (its path) writes this answer instead of the loaded
    // model (CompareModel::continueWithB); "" the loaded model. Local only; no drafts, no looking
    // inside, and the status bar's figures stay the loaded model's.
    std::string otherModel;
};

// Steps and the latest KV-cache state since the previous batch (EngineWorker sends at most about
// one batch per 100 ms, kStepBatchMs; a slow model's every step at once).
struct StepBatch {
    std::vector<StepRecord> steps;
    std::optional<KvCacheStats> kv;
};

// Looking inside one cached position (Engine::inspectPosition) for the Layers and Attention
// panels. `context` is what the GUI believes positions 0..position hold (the conversation's
// tokens): the worker inspects only when the engine's cache holds exactly that, so a panel never
// shows another conversation's numbers. `follow`: the panel follows a streaming answer; while a
// generation runs such a request waits until it costs decoding less than kInspectDutyPercent of
// its time (a click is served at the next step).
struct InspectionRequest {
    quint64 id = 0;
    int32_t position = 0;
    std::vector<int32_t> context;  // tokens at positions 0..position
    InspectOptions options;
    bool follow = false;
};

struct InspectionReply {
    quint64 id = 0;
    int32_t position = 0;
    std::shared_ptr<const PositionInspection> inspection;  // null: see notCached / error
    bool notCached = false;  // the cache no longer holds that context (another conversation, trimmed, reloaded)
    std::string error;
};

}  // namespace inferscope

Q_DECLARE_METATYPE(inferscope::InspectionRequest)
Q_DECLARE_METATYPE(inferscope::InspectionReply)
Q_DECLARE_METATYPE(inferscope::LoadedModel)
Q_DECLARE_METATYPE(inferscope::GenerationJob)
Q_DECLARE_METATYPE(inferscope::EngineOptions)
Q_DECLARE_METATYPE(inferscope::PrefillStats)
Q_DECLARE_METATYPE(inferscope::StepBatch)
Q_DECLARE_METATYPE(inferscope::GenerationSummary)
Q_DECLARE_METATYPE(inferscope::KvCacheStats)
