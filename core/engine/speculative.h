#pragma once
// Speculative decoding: a cheap drafter proposes the next few tokens, the model verifies them all in
// one forward pass (a small prefill: the weights are read once for several tokens), and exact
// speculative sampling (Leviathan et al. 2023, Chen et al. 2023) keeps the output distribution
// exactly the model's: a drafted token x is accepted with probability min(1, p(x) / q(x)); on the
// first rejection a token is drawn from normalize(max(0, p − q)) instead, and the rest of the draft
// is dropped (the KV cache rolled back); when every drafted token is accepted, one more is drawn
// from the model's distribution after the last. p and q are the distributions the sampler chain
// draws from (every stage applied, SamplerChain::finalDistribution), so this holds under every
// sampler setting; greedy output is the plain decoding's token for token.
//
// Drafters: another model of the same vocabulary (any GGUF: a Q4_0 of the same weights, a smaller
// model of the family), sampling its q with the same settings; or prompt lookup (n-gram): the
// tokens that followed the most recent earlier occurrence of the sequence's last n tokens, a point
// mass (q = 1 for the proposed token), no second model.
//
// Verification runs the pending token and the draft in passes of at most LlamaModel::exactDecodeRows rows (the
// decode kernels, row for row the arithmetic of one-token decode steps; 2 rows for files with
// K-quant matrices, whose kernels sum 3 or 4 rows in another order: LlamaModel::exactDecodeRows),
// so the logits each verified position sees are those plain decoding would have computed.

#include <cstdint>
#include <optional>
#include <vector>

#include "record/draft_record.h"
#include "record/sampler_params.h"

namespace inferscope {

class Engine;

enum class DraftSource : uint8_t { Model, NGram };

struct SpeculativeOptions {
    DraftSource source = DraftSource::NGram;
    Engine* draftModel = nullptr;  // DraftSource::Model: loaded, the same vocabulary, used on this thread
    int32_t maxDraft = 3;          // tokens drafted per round, at most
    // Draft model: stop a round's draft early when the drafter is unsure of its pick: its raw
    // probability (softmax at temperature 1 over the whole vocabulary, whatever the sampler
    // settings: under greedy decoding the drawn-from distribution is certain of every pick) falls
    // below pMin, after at least minDraft tokens. llama.cpp's p_min is the same test on the
    // softmax of the drafter's 10 most likely tokens. 0: always maxDraft.
    float pMin = 0.0f;
    int32_t minDraft = 0;
    int32_t ngramMin = 2, ngramMax = 4;  // n-gram: the lengths of the sequence's end looked up, longest first
    // The draft model's own sampler settings (its seed is drawn apart from the model's); none: the
    // model's. Any q keeps the output exact; a q closer to p is accepted more often.
    std::optional<SamplerParams> draftSampler;
};

struct TokenProbability;

// One drafted token under exact speculative sampling, given p and q (the model's and the drafter's
// final distributions, as SamplerChain::finalDistribution lists them) and two uniform numbers in
// [0, 1): accepted when uAccept < min(1, p(drafted) / q(drafted)); otherwise the token is drawn with
// uCorrect from max(0, p − q) normalised, in p's order (from p itself when that is all zero).
struct SpeculativeChoice {
    int32_t token = 0;
    bool accepted = false;
    double p = 0, q = 0, acceptProbability = 0;  // of the drafted token
};
SpeculativeChoice chooseSpeculative(const std::vector<TokenProbability>& p, const std::vector<TokenProbability>& q, int32_t drafted,
                                    double uAccept, double uCorrect);

// What a drafted token's record keeps of p and q (DraftRecord::candidates, and when `corrected`
// the residual max(0, p − q): its leading entries, normalised, and its mass). Accepted or not, in
// the same order chooseSpeculative reads them.
void describeDraftedPosition(const std::vector<TokenProbability>& p, const std::vector<TokenProbability>& q, bool corrected,
                             DraftRecord& out);


}  // namespace inferscope
