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
#include <span>

#include "common/error.h"
#include "engine/perplexity.h"

namespace inferscope {

class Engine;
class Tokenizer;

struct TokenComparison {
    int32_t index = 0;     // the answer token's index (0 = the first generated)
    int32_t position = 0;  // its position in the sequence
    int32_t id = 0;        // the token
    DistributionShift shift;  // reference A, test B: kl, tops, pReference = p_A, pTest = p_B
    bool flip() const { return !shift.sameTop1; }
};

// Ok, or InvalidArgument naming the first difference.
Result<void> checkSameVocabulary(const Tokenizer& a, const Tokenizer& b);

// Runs sequence = prompt + answer through A and B; calls onToken for every answer token
// (positions answerStart .. size − 1, answerStart ≥ 1) and adds it to `divergence`, and each
// model's perplexity of the answer to `perplexityA` / `perplexityB`. `cancel` (asked between
// batches) stops it with ErrorKind::Cancelled.
Result<void> compareTeacherForced(Engine& a, Engine& b, std::span<const int32_t> sequence, int32_t answerStart,
                                  const std::function<void(const TokenComparison&)>& onToken, DivergenceMeter& divergence,
                                  PerplexityMeter& perplexityA, PerplexityMeter& perplexityB, const std::function<bool()>& cancel = {});

}  // namespace inferscope
