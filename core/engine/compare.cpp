#include "engine/compare.h"

#include <fmt/format.h>

#include <vector>

#include "engine/engine.h"
#include "tokenizer/tokenizer.h"

namespace inferscope {

Result<void> checkSameVocabulary(const Tokenizer& a, const Tokenizer& b) {
    if (a.vocabSize() != b.vocabSize())
        return fail(ErrorKind::InvalidArgument,
                    fmt::format("the two vocabularies differ ({} and {} tokens): a token-by-token comparison needs the same vocabulary",
                                a.vocabSize(), b.vocabSize()));
    for (int32_t id = 0; id < a.vocabSize(); ++id)
        if (a.piece(id) != b.piece(id))
            return fail(ErrorKind::InvalidArgument, fmt::format("the two vocabularies differ at token {}: a token-by-token comparison needs the same vocabulary", id));
    return {};
}

Result<void> compareTeacherForced(Engine& a, Engine& b, std::span<const int32_t> sequence, int32_t answerStart,
                                  const std::function<void(const TokenComparison&)>& onToken, DivergenceMeter& divergence,
                                  PerplexityMeter& perplexityA, PerplexityMeter& perplexityB, const std::function<bool()>& cancel) {
    if (auto same = checkSameVocabulary(a.tokenizer(), b.tokenizer()); !same) return same;
    const int32_t n = int32_t(sequence.size());
    if (answerStart < 1 || answerStart >= n)
        return fail(ErrorKind::InvalidArgument, fmt::format("the answer starts at {} of {} tokens: nothing to compare", answerStart, n));
    const size_t vocab = size_t(a.tokenizer().vocabSize());
    // The last position predicts nothing in the sequence: it is not run.
    const int32_t rows = std::min(a.maxScoreRows(), b.maxScoreRows());
    std::vector<float> logitsA, logitsB;
    for (int32_t from = 0; from < n - 1; from += rows) {
        if (cancel && cancel()) return fail(ErrorKind::Cancelled, "cancelled");
        const int32_t count = std::min(rows, n - 1 - from);
        if (auto ok = a.scoreRows(sequence, from, count, logitsA); !ok) return fail(ok.error().kind, "model A: " + ok.error().message);
        if (auto ok = b.scoreRows(sequence, from, count, logitsB); !ok) return fail(ok.error().kind, "model B: " + ok.error().message);
        for (int32_t r = 0; r < count; ++r) {
            const int32_t predicts = from + r + 1;  // the position these logits predict
            if (predicts < answerStart) continue;
            const std::span<const float> la(logitsA.data() + size_t(r) * vocab, vocab), lb(logitsB.data() + size_t(r) * vocab, vocab);
            TokenComparison t;
            t.index = predicts - answerStart;
            t.position = predicts;
            t.id = sequence[size_t(predicts)];
            t.shift = compareDistributions(la, lb, t.id);
            divergence.add(t.shift);
            perplexityA.add(la, t.id);
            perplexityB.add(lb, t.id);
            if (onToken) onToken(t);
        }
    }
    return {};
}

}  // namespace inferscope
