#pragma once
// The generation loop's inputs and what it reports, as plain value types: the GUI's worker
// thread turns these into queued signals, the CLI into JSON lines.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/inspection.h"
#include "engine/speculative.h"
#include "kv_cache/kv_cache.h"
#include "sampler/sampler_chain.h"

namespace inferscope {

namespace grammar { struct Grammar; }

// Which steps to look inside while generating: the forward pass whose logits a step samples from
// (at position step's position - 1) keeps its residuals and attention weights as it runs, and the
// step's record carries the result. Exact for every step, the first included (its pass is the
// prefill's last batch). Nothing asked: the passes run as they would without.
struct GenerateInspect {
    bool lens = false;            // every step: the logit lens (top lensTopK per layer, residual norms)
    int32_t lensStep = -1;        // this step only: the logit lens (the app's open Layers panel asks for step 0)
    int32_t attentionStep = -1;   // this step (0 = the first generated token): the attention weights too
    int32_t lensTopK = 5;
    bool lensAt(int32_t step) const { return lens || step == lensStep; }
    bool wants(int32_t step) const { return lensAt(step) || step == attentionStep; }
    InspectOptions optionsFor(int32_t step) const { return {lensAt(step), step == attentionStep, lensTopK}; }
};

struct GenerateRequest {
    std::vector<int32_t> prompt;           // token ids, BOS included if wanted
    SamplerParams sampler;
    int32_t maxTokens = 256;               // generated tokens, at least 1
    std::vector<std::string> stopStrings;  // generation ends when the output contains one
    bool useKvCache = true;                // false: recompute the whole sequence every step
    // Keep each step's `replayWidth` highest raw logits (ids and values) in its record, so the
    // sampler can be replayed afterwards with other settings (0: none; never the whole vocabulary
    // unless it is that small).
    int32_t replayWidth = 0;
    GenerateInspect inspect;
    // Speculative decoding (speculative.h); none: one decode pass per token.
    std::optional<SpeculativeOptions> speculative;
    // Structured output (core/grammar): every step samples only the tokens the grammar allows
    // next (the sampler's "grammar" stage), end of generation only once the text is complete. A
    // generation under a grammar ends with "eos" when the grammar is finished. Not combined with
    // speculative decoding.
    std::shared_ptr<const grammar::Grammar> grammar;
};

struct PrefillStats {
    int32_t nPrompt = 0;      // tokens in the request's prompt
    int32_t nReused = 0;      // of which already in the KV cache (common prefix), not recomputed
    int32_t nComputed = 0;    // of which run through the model now, in one batched pass
    int64_t us = 0;           // wall time of the prefill forward pass(es)
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
        return decodeUs > 0 ? std::max(decodedTokens, nDecodePasses) * 1e6 / double(decodeUs) : 0.0;
    }
    std::vector<int32_t> tokens;      // generated ids
    std::string text;                 // their text, cut before a matched stop string
    KvCacheStats kv;                  // at the end, with the work counters of this call
};

// Receives a generation's events synchronously, on the thread that runs generate().
class GenerationObserver {
public:
    virtual ~GenerationObserver() = default;
    virtual void onPrefill(const PrefillStats&) {}
    virtual void onStep(const StepRecord&) {}
    virtual void onKvCache(const KvCacheStats&) {}
    virtual void onFinish(const GenerationSummary&) {}
};

}  // namespace inferscope
