#pragma once
// The sampler chain (after llama.cpp's llama-sampling): stages applied in turn to one candidate
// array, each recorded so the GUI can show what it did:
//
//   raw logits -> bias and penalties -> grammar -> top-k -> top-p -> min-p -> temperature -> pick
//
// - penalty: what adjusts logits before any cut, as llama.cpp's logit-bias and penalties
//   samplers do in turn. First each token of logitBias has its bias added. Then each distinct
//   token among the last repeatLastN of `recentTokens` has its logit divided by repeatPenalty if
//   > 0, multiplied otherwise (once, however often it occurred), and lowered by
//   count x frequencyPenalty + presencePenalty, count being its occurrences in that window.
// - grammar: with an allowed-token mask (allowed[id] != 0; core/grammar's GrammarMatcher fills
//   one per step), keeps only the allowed candidates; without one, keeps all. Every candidate
//   masked is an error (InvalidArgument, nothing drawn).
// - top-k: keeps the k highest logits.
// - top-p: keeps the shortest prefix, in order of decreasing probability, whose cumulative
//   probability reaches p (at least one token).
// - min-p: keeps tokens with p >= minP * pmax.
// - temperature: divides the surviving logits by T; T = 0 keeps only the highest (greedy).
// Top-p and min-p see the T = 1 softmax of the survivors so far, renormalised. "Reaches" and ">="
// are inclusive up to a relative 1e-6, so a cut that is exact on paper (top-p 0.6 of .4 + .2,
// min-p .5 of pmax .4 keeping .2) does not depend on float rounding.
//
// Order: candidates are ranked by (logit descending, id ascending) everywhere, so ties are broken
// by the lower id and nothing depends on the order in which the caller lists the candidates.
//
// Pick: every successful call draws exactly one u = (rng() >> 11) * 2^-53 from std::mt19937_64
// seeded with params.seed (greedy and single-survivor steps too; a failed call draws nothing),
// then picks the first survivor, in rank order, whose cumulative final probability exceeds u
// (inverse CDF). The top-p cut and the pick sum masses as integers (each quantised to 2^-52 of
// the largest), so they are a pure function of the set of (id, logit) pairs, the parameters, the
// recent tokens and the RNG state. For replay: the same seed over the same steps reproduces the
// same picks, and a replay under other settings meets the same u at each step, so "which tokens
// would change" compares like with like.
//
// Subsets: sample(ids, logits, ...) treats the listed tokens as the whole vocabulary. When top-k
// is active and the subset holds the k highest penalised logits (or, with top-k and top-p off,
// every min-p survivor), its pick and survivor counts from top-k on are identical to the full
// array's and its probabilities from top-k on equal to float precision; its Raw and Penalty
// figures (pRaw, rank, entropy, logSumExp) are those of the subset.
//
// Cost per call with n candidates: a few O(n) passes (vectorised max and softmax, copy, rank);
// top-k by heap selection, O(n) for k <= n/64, else by quickselect; top-p and the draw sort only
// the m candidates they can reach (bucketed by mass: O(n) + O(m log m)); the record's top-N by
// heap selection. About 160 us for 32,000 candidates with the defaults on our 2-core build VM.
// Work buffers are reused: after the first call the only allocation is the returned record's
// `top` (none when topN = 0). A chain is not thread-safe; use one per thread.

#include <array>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "common/error.h"
#include "record/sample_record.h"
#include "record/sampler_params.h"

namespace inferscope {

struct TokenProbability {
    int32_t id = 0;
    double p = 0;
};

class SamplerChain {
public:
    // Error{InvalidArgument} if validateSamplerParams rejects `params`.
    static Result<SamplerChain> create(const SamplerParams& params);

    // Samples from the whole vocabulary: logits[id], id in [0, n). `recentTokens` is the sequence
    // so far (prompt and generated, oldest first); the penalty looks at its last repeatLastN; ids
    // outside the candidates are ignored. Errors (InvalidArgument, the RNG is then not advanced):
    // no candidates, a NaN or +inf logit, every logit -inf. -inf masks a token.
    Result<SampleRecord> sample(std::span<const float> logits, std::span<const int32_t> recentTokens);
    // The same under a grammar: allowed[id] != 0 for the tokens it allows (size: logits').
    Result<SampleRecord> sample(std::span<const float> logits, std::span<const int32_t> recentTokens,
                                std::span<const uint8_t> allowed);
    // Samples from a subset: candidate i is token ids[i] with logits[i]. Ids must be distinct.
    Result<SampleRecord> sample(std::span<const int32_t> ids, std::span<const float> logits,
                                std::span<const int32_t> recentTokens);

    // The record sample() would give had it picked `pick`, without drawing from the RNG: a token
    // chosen another way (speculative decoding's accepted drafts and corrections). Its pFinal is
    // its probability in the final distribution (0 when a stage removed it).
    Result<SampleRecord> describe(std::span<const float> logits, std::span<const int32_t> recentTokens, int32_t pick,
                                  std::span<const uint8_t> allowed = {});
    // The distribution sample() draws from: every survivor of the stages with its probability after
    // temperature (greedy: the top token with 1), most probable first (ties: the lower id first).
    // No RNG draw.
    Result<std::vector<TokenProbability>> finalDistribution(std::span<const float> logits, std::span<const int32_t> recentTokens);
    // One uniform number in [0, 1) from the chain's generator, 53 bits, as sample() draws its own.
    double uniform() { return double(rng_() >> 11) * 0x1.0p-53; }

    void reseed(uint64_t seed) { rng_.seed(seed); }
    // Skips the draws of n steps (every successful sample() uses exactly one).
    void discardDraws(unsigned long long n) { rng_.discard(n); }
    const SamplerParams& params() const { return params_; }

private:
    explicit SamplerChain(const SamplerParams& params);

    struct Candidate {
        int32_t id;
        float raw;        // the logit as given
        float logit;      // after the penalty
        int32_t reached;  // last SamplerStage survived (set just before the top-N is recorded)
        double mass;      // exp((logit - maxLogit) / t): t = 1 up to min-p, then T for the draw
    };
    // One call's state, handed from stage to stage.
    struct Step {
        size_t count = 0;           // survivors so far: candidates_[0, count)
        double maxLogit = 0;        // the highest penalised logit (it survives every stage)
        bool massesValid = false;   // candidates_[0, count).mass == exp(logit - maxLogit)
        bool penalised = false;     // some logit changed: rank order may differ from raw order
        std::array<double, kSamplerStageCount> z{};  // softmax normaliser after each stage
        double penaltyMax = 0;      // maxLogit and z after the penalty, before the grammar moved them
        double penaltyZ = 0;
        double grammarKept = 1;     // probability mass the grammar kept (T = 1, after the penalty)
    };

    // What a call does after the stages: draw a pick, describe a given one, or hand out the final
    // distribution (then the record is empty).
    struct Outcome {
        const int32_t* forcedPick;                    // null: draw
        std::vector<TokenProbability>* distribution;  // null: a record
        std::span<const uint8_t> allowed = {};        // empty: no grammar
    };
    Result<SampleRecord> run(std::span<const int32_t> ids, std::span<const float> logits,
                             std::span<const int32_t> recentTokens, Outcome outcome);
    // The stages: each narrows candidates_[0, step.count) and sets step.z[its stage].
    void applyPenalty(bool identityIds, std::span<const int32_t> recentTokens, Step& step);
    void findAdjustments(bool identityIds, std::span<const int32_t> recentTokens, size_t count);
    bool applyGrammar(bool identityIds, std::span<const uint8_t> allowed, Step& step);
    void applyTopK(Step& step);
    void applyTopP(Step& step);
    void applyMinP(Step& step);
    void applyTemperature(Step& step);
    size_t pickPosition(Step& step, uint64_t u53);  // the pick's position among the survivors
    void ensureMasses(Step& step);

    SamplerParams params_;
    std::mt19937_64 rng_;
    std::vector<double> rawMasses_;      // [n] e^(logit - max) in input order (vectorised pass)
    std::vector<Candidate> candidates_;  // [n]; survivors of every stage are a prefix [0, count)
    std::vector<Candidate> finalOrder_;  // the survivors, ordered for SampleRecord::finalTop
    size_t ranked_ = 0;  // candidates_[0, ranked_) are the ranked_ highest, in rank order (may
                         // exceed the survivor count: cuts never reorder what they remove)
    std::vector<int32_t> window_;        // [<= repeatLastN] distinct recent ids, sorted
    std::vector<int32_t> windowCounts_;  // [window_] occurrences of each in the window
    std::vector<std::pair<int32_t, float>> bias_;  // params_.logitBias by id, repeated ids summed
    struct Adjustment {
        size_t position;  // in candidates_
        float bias;       // added first
        int32_t count;    // occurrences in the window; 0: not penalised
    };
    std::vector<Adjustment> adjustments_;  // [<= window + bias] the candidates the stage changes
    std::vector<size_t> penalised_;      // [<= window + bias] positions in candidates_ the stage hit
};

}  // namespace inferscope
