// CompareSummary's figures from a comparison's result (compare_values.h).
#include "visualizer/compare_values.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace inferscope {

// The figures of a comparison on the text (vocabularies that differ) into s.
void summarizeText(const CompareResult& result, CompareSummary& s) {
    const TextComparison& c = *result.text;
    s.onText = true;
    s.why = QString::fromStdString(result.why);
    s.bytes = int(c.bytes);
    s.words = int(c.words.size());
    s.tokensA = c.tokensA;
    s.tokensB = c.tokensB;
    s.bitsPerByteA = c.bitsPerByteA();
    s.bitsPerByteB = c.bitsPerByteB();
    std::vector<size_t> order(c.words.size());
    std::iota(order.begin(), order.end(), size_t(0));
    auto gap = [&c](size_t i) { return std::abs(c.words[i].bitsB - c.words[i].bitsA); };
    // The largest gaps first, ties in the text's order.
    const size_t shown = std::min(order.size(), size_t(CompareSummary::kShownGaps));
    std::partial_sort(order.begin(), order.begin() + ptrdiff_t(shown), order.end(),
                      [&](size_t a, size_t b) { return gap(a) != gap(b) ? gap(a) > gap(b) : a < b; });
    for (size_t i = 0; i < shown; ++i) {
        const WordSurprisal& w = c.words[order[i]];
        const QString word = QString::fromUtf8(result.answerText.substr(w.begin, w.end - w.begin)).trimmed();
        s.gaps.append(QVariantMap{{"text", word}, {"bitsA", w.bitsA}, {"bitsB", w.bitsB}});
    }
}


void summarizeTokens(const CompareResult& result, CompareSummary& s) {
    s.tokens = int(result.divergence.count());
    s.promptTokens = result.promptTokens;
    const DivergenceMeter& d = result.divergence;
    s.meanKl = d.meanKl();
    s.meanKlError = d.meanKlError();
    s.medianKl = d.klQuantile(0.5);
    s.p99Kl = d.klQuantile(0.99);
    s.maxKl = d.maxKl();
    s.sameTop1 = int(d.sameTop1());
    s.top1Agreement = d.top1Agreement();
    s.top1AgreementError = d.top1AgreementError();
    s.meanDp = d.meanDp();
    s.meanDpError = d.meanDpError();
    s.rmsDp = d.rmsDp();
    s.rmsDpError = d.rmsDpError();
    s.dpP1 = d.dpQuantile(0.01);
    s.dpP5 = d.dpQuantile(0.05);
    s.dpMedian = d.dpQuantile(0.5);
    s.dpP95 = d.dpQuantile(0.95);
    s.dpP99 = d.dpQuantile(0.99);
    s.perplexityA = result.perplexityA.perplexity();
    s.perplexityAError = result.perplexityA.perplexityError();
    s.perplexityB = result.perplexityB.perplexity();
    s.perplexityBError = result.perplexityB.perplexityError();
}

}  // namespace inferscope
