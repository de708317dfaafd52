#pragma once
// What a generation produced, as plain values with no engine behind them: each token's record
// (the sampler's record, its bytes, its timings), the prefill's figures and the summary. The
// engine fills them (engine/generation.h), the CLI writes them as JSON, the app stores and shows
// them (gui/), long after the model that produced them is gone.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "record/draft_record.h"
#include "record/kv_stats.h"
#include "record/sample_record.h"

namespace inferscope {

struct PositionInspection;  // engine/inspection.h: only what the engine computed live carries one

struct PrefillStats {
    int32_t nPrompt = 0;      // tokens in the request's prompt
    int32_t nReused = 0;      // of which already in the KV cache (common prefix), not recomputed
    int32_t nComputed = 0;    // of which run through the model now, in one batched pass
    int64_t us = 0;           // wall time of the prefill forward pass(es)
    int32_t nCopied = 0;      // of nReused, copied from another session's cache (a server's slots share prefixes)
    double tokensPerSecond() const { return us > 0 ? nComputed * 1e6 / double(us) : 0.0; }
};

// One generated token: the sampler's record plus where and when it came.
struct StepRecord {
    int32_t step = 0;         // 0 for the first generated token
    int32_t position = 0;     // the token's position in the sequence
    SampleRecord sample;      // chosen id, probabilities, rank, entropy, top-N with stage probabilities
    std::string piece;        // the bytes this token adds to the text (may be part of a UTF-8 character)
    bool endOfGeneration = false;
    int64_t forwardUs = 0;    // the forward pass that produced this step's logits (0 for step 0: prefill)
    int64_t sampleUs = 0;
    // The highest raw logits of the step, descending (GenerateRequest::replayWidth of them):
    // what replaying the sampler needs. sample.logSumExp normalises them over the whole vocabulary.
    std::vector<int32_t> replayIds;
    std::vector<float> replayLogits;
    // The raw logits of GenerateRequest::namedTokens, in its order (live only: not stored).
    std::vector<float> namedLogits;
    // When GenerateRequest::inspect asked for this step: inside the pass that produced its logits.
    std::shared_ptr<const PositionInspection> inspection;
    // Under speculative decoding: whether this token was drafted, accepted, corrected or a bonus.
    std::shared_ptr<const DraftRecord> draft;
};

enum class FinishReason { EndOfGeneration, StopString, MaxTokens, ContextFull, Cancelled };
std::string_view finishReasonName(FinishReason reason);  // "eos", "stop", "length", "context_full", "cancelled"

struct GenerationSummary {
    FinishReason reason = FinishReason::MaxTokens;
    PrefillStats prefill;
    int32_t nGenerated = 0;           // steps reported, the end-of-generation token included
    int32_t nDecodePasses = 0;        // decode forward passes (no-cache mode: full recomputes; speculative: verifications)
    int32_t decodedTokens = 0;        // tokens they produced (one a pass; speculative: accepted drafts too); 0: one a pass
    int64_t decodeUs = 0;             // wall time of those passes (speculative: and the drafting)
    int64_t timeToFirstTokenUs = 0;   // from the call to the first token
    int32_t draftN = 0, draftAccepted = 0;  // speculative: tokens drafted, and accepted
    int64_t draftUs = 0;              // speculative: time spent drafting (within decodeUs)
    double decodeTokensPerSecond() const {
        // Tokens over time; records without a token count (0) made one token a pass. (Passes are not
        // tokens: a speculative round verifying more rows than one pass takes makes two.)
        return decodeUs > 0 ? (decodedTokens > 0 ? decodedTokens : nDecodePasses) * 1e6 / double(decodeUs) : 0.0;
    }
    std::vector<int32_t> tokens;      // generated ids
    std::string text;                 // their text, cut before a matched stop string
    KvCacheStats kv;                  // at the end, with the work counters of this call
};

}  // namespace inferscope
