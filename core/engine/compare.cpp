#include "engine/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/engine.h"
#include "engine/highest_logits.h"
#include "sampler/sampler_chain.h"
#include "tokenizer/tokenizer.h"

namespace inferscope {
namespace {

float probabilityIn(const std::vector<TokenProbability>& dist, int32_t id) {
    for (const TokenProbability& t : dist)
        if (t.id == id) return float(t.p);
    return 0.0f;
}

// The per-token detail of CompareDetail: both models' leading candidates and B's record.
class DetailMaker {
public:
    static Result<DetailMaker> create(const CompareDetail& detail) {
        DetailMaker m;
        m.k_ = size_t(std::max(0, detail.candidates));
        if (detail.sampler) {
            SamplerParams params = *detail.sampler;
            params.topN = std::max(params.topN, 10);
            auto a = SamplerChain::create(params);
            if (!a) return std::unexpected(a.error());
            auto b = SamplerChain::create(params);
            m.chainA_.emplace(std::move(*a));
            m.chainB_.emplace(std::move(*b));
        }
        return m;
    }
    bool any() const { return k_ > 0 || chainB_; }

    Result<void> fill(TokenComparison& t, std::span<const float> la, std::span<const float> lb, std::span<const int32_t> recent) {
        std::vector<TokenProbability> finalA, finalB;
        if (chainA_) {
            auto fa = chainA_->finalDistribution(la, recent);
            if (!fa) return std::unexpected(fa.error());
            auto fb = chainB_->finalDistribution(lb, recent);
            if (!fb) return std::unexpected(fb.error());
            finalA = std::move(*fa);
            finalB = std::move(*fb);
            auto record = chainB_->describe(lb, recent, t.id);
            if (!record) return std::unexpected(record.error());
            t.recordB = std::make_shared<const SampleRecord>(std::move(*record));
        }
        if (k_ == 0) return {};
        highestLogitIds(la, k_, ids_);
        highestLogitIds(lb, k_, scratch_);
        ids_.insert(ids_.end(), scratch_.begin(), scratch_.end());
        std::sort(ids_.begin(), ids_.end());
        ids_.erase(std::unique(ids_.begin(), ids_.end()), ids_.end());
        const double zA = logSumExp(la), zB = logSumExp(lb);
        for (int32_t id : ids_) {
            ComparedCandidate c;
            c.id = id;
            c.pA = float(std::exp(double(la[size_t(id)]) - zA));
            c.pB = float(std::exp(double(lb[size_t(id)]) - zB));
            if (chainA_) {
                c.finalA = probabilityIn(finalA, id);
                c.finalB = probabilityIn(finalB, id);
            }
            t.candidates.push_back(c);
        }
        std::stable_sort(t.candidates.begin(), t.candidates.end(),
                         [](const ComparedCandidate& x, const ComparedCandidate& y) { return std::max(x.pA, x.pB) > std::max(y.pA, y.pB); });
        if (t.candidates.size() > k_) t.candidates.resize(k_);
        return {};
    }

private:
    size_t k_ = 0;
    std::optional<SamplerChain> chainA_, chainB_;
    std::vector<int32_t> scratch_, ids_;
};

}  // namespace

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
                                  PerplexityMeter& perplexityA, PerplexityMeter& perplexityB, const std::function<bool()>& cancel,
                                  const CompareDetail& detail) {
    if (auto same = checkSameVocabulary(a.tokenizer(), b.tokenizer()); !same) return same;
    auto details = DetailMaker::create(detail);
    if (!details) return std::unexpected(details.error());
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
            if (details->any())
                if (auto ok = details->fill(t, la, lb, sequence.subspan(0, size_t(predicts))); !ok) return ok;
            divergence.add(t.shift);
            perplexityA.add(la, t.id);
            perplexityB.add(lb, t.id);
            if (onToken) onToken(t);
        }
    }
    return {};
}

}  // namespace inferscope
