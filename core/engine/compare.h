#pragma once
// Two models on the same tokens: what the second (B) thinks of every token of an answer the first
// (A) gave, teacher-forced through both in lockstep batches (Engine::scoreRows: prefill's speed,
// each engine its own cache). Per answer token: its probability under A and under B, KL(P_A ‖ P_B),
// whether the two rank different tokens first (a flip), and Δp = p_B − p_A of the token given —
// llama-perplexity's --kl-divergence figures, on the user's own answer instead of a corpus.
// The vocabularies must be the same (the same pieces in the same order): a distribution over other
// tokens cannot be compared token by token.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "common/error.h"
#include "engine/perplexity.h"
#include "record/sample_record.h"
#include "record/sampler_params.h"

namespace inferscope {

class Engine;
class Tokenizer;

// One of a position's leading tokens under both models: its raw probability (softmax at T = 1)
// under each and, when the answer's sampler settings are known, its probability in the
// distribution each model's sampler would have drawn from (0: a stage removed it; -1: unknown).
struct ComparedCandidate {
    int32_t id = 0;
    float pA = 0, pB = 0;
    float finalA = -1, finalB = -1;
};

struct TokenComparison {
    int32_t index = 0;     // the answer token's index (0 = the first generated)
    int32_t position = 0;  // its position in the sequence
    int32_t id = 0;        // the token
    DistributionShift shift;  // reference A, test B: kl, tops, pReference = p_A, pTest = p_B
    bool flip() const { return !shift.sameTop1; }
    // With CompareDetail only. The leading tokens of A and of B (each one's `candidates` most
    // probable, raw), at most that many, by max(pA, pB) descending (ties: the lower id first).
    std::vector<ComparedCandidate> candidates;
    // B's record of this token as the answer's own sampler stages make it from B's logits
    // (SamplerChain::describe: its top candidates through every stage, the token's rank and p):
    // what A's step record is of A. Null without the sampler settings.
    std::shared_ptr<const SampleRecord> recordB;
};

// What compareTeacherForced keeps of each token beyond its figures: for the app's side-by-side
// view of both distributions. Nothing by default (the CLI's statistics need none of it).
struct CompareDetail {
    int32_t candidates = 0;                // leading tokens per model (0: none)
    std::optional<SamplerParams> sampler;  // the answer's settings: final probabilities and recordB
};
inline constexpr int32_t kCompareCandidates = 8;

// Ok, or InvalidArgument naming the first difference.
Result<void> checkSameVocabulary(const Tokenizer& a, const Tokenizer& b);

// Runs sequence = prompt + answer through A and B; calls onToken for every answer token
// (positions answerStart .. size − 1, answerStart ≥ 1) and adds it to `divergence`, and each
// model's perplexity of the answer to `perplexityA` / `perplexityB`. `cancel` (asked between
// batches) stops it with ErrorKind::Cancelled. `detail` adds the candidates and B's record; sampler
// settings validateSamplerParams refuses are an InvalidArgument error.
Result<void> compareTeacherForced(Engine& a, Engine& b, std::span<const int32_t> sequence, int32_t answerStart,
                                  const std::function<void(const TokenComparison&)>& onToken, DivergenceMeter& divergence,
                                  PerplexityMeter& perplexityA, PerplexityMeter& perplexityB, const std::function<bool()>& cancel = {},
                                  const CompareDetail& detail = {});

}  // namespace inferscope
