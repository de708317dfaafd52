#pragma once
// "Compare with…" (issue 30): an answer's own tokens read again by the loaded model (A) and by a
// second GGUF (B) on the worker (engine_worker_compare.cpp), teacher-forced in lockstep batches by
// core's compareTeacherForced (engine/compare.h): per token KL(P_A ‖ P_B), flips and Δp, and the
// statistics of llama-perplexity's --kl-divergence with their errors (engine/perplexity.h).

#include <QMetaType>
#include <optional>
#include <string>
#include <vector>

#include "engine/compare.h"
#include "engine/compare_text.h"
#include "engine/prompt_builder.h"  // PromptChunk
#include "record/answer_origin.h"

namespace inferscope {

struct CompareJob {
    quint64 id = 0;
    std::vector<PromptChunk> chunks;  // the answer's prompt, as its generation sent it
    std::vector<int32_t> answer;      // the answer's tokens, one per step
    std::string modelB;               // the second GGUF's path
    // The answer's sampler settings (none: stored before answers kept them): each token's final
    // probabilities under both models and B's record through the same stages (CompareDetail).
    std::optional<SamplerParams> sampler;
    // The conversation before the answer as plain text (the system prompt and the messages, no
    // template): what both models read before the answer's text when their vocabularies differ.
    std::string contextText;
    // The answer's text when its tokens are not A's vocabulary's (side by side: B's own answer,
    // vocabularies that differ; `answer` then unused): compared on this text. "": A's tokens decoded.
    std::string answerText;
};

// perToken[i] belongs to the answer's step i; the meters hold every token's figures.
struct CompareResult {
    std::vector<TokenComparison> perToken;
    DivergenceMeter divergence;
    PerplexityMeter perplexityA, perplexityB;
    int32_t promptTokens = 0;
    std::string modelB;          // B's path
    double loadMs = 0;           // B's load (0: the copy the previous comparison loaded)
    double compareMs = 0;        // the teacher-forced pass through both models
    // B as an answer it writes keeps it (GenerationJob::otherModel: B continues an answer).
    AnswerOrigin originB;
    // Vocabularies that differ: no token-by-token figures (perToken empty, the meters unused); both
    // models read contextText then the answer's text (A's tokens decoded), word by word
    // (engine/compare_text.h). `why` says how the vocabularies differ.
    std::optional<TextComparison> text;
    std::string answerText, why;
};

}  // namespace inferscope

Q_DECLARE_METATYPE(inferscope::CompareJob)
Q_DECLARE_METATYPE(inferscope::CompareResult)
