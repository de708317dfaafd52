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
#include "record/step_record.h"
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
    // Tokens whose raw logit every step's record keeps (StepRecord::namedLogits, in this order):
    // the server's logprob_token_ids.
    std::vector<int32_t> namedTokens;
    GenerateInspect inspect;
    // Speculative decoding (speculative.h); none: one decode pass per token.
    std::optional<SpeculativeOptions> speculative;
    // Structured output (core/grammar): every step samples only the tokens the grammar allows
    // next (the sampler's "grammar" stage), end of generation only once the text is complete. A
    // generation under a grammar ends with "eos" when the grammar is finished. Not combined with
    // speculative decoding.
    std::shared_ptr<const grammar::Grammar> grammar;
    // Bytes the grammar has already matched before the first generated token: the kept start of
    // an answer being branched (it ends the prompt). The grammar goes on from after them, not from
    // its start; bytes it refuses fail the request.
    std::string grammarPrefix;
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
