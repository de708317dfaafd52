// Perplexity and distribution-shift statistics over teacher-forced logits (see perplexity.h).
#include "engine/perplexity.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace inferscope {
namespace {

// The index of the largest logit, the lowest index among equals.
size_t argmax(std::span<const float> logits) {
    size_t best = 0;
    for (size_t i = 1; i < logits.size(); ++i)
        if (logits[i] > logits[best]) best = i;
    return best;
}

// Standard error of a mean from the sum and the sum of squares of n samples: sqrt(var / (n − 1)),
// var the population variance — llama-perplexity's estimate, so the ± figures compare.
double standardError(double sum, double sumSquares, int64_t n) {
    if (n < 2) return 0.0;
    const double mean = sum / double(n);
    const double variance = sumSquares / double(n) - mean * mean;
    return variance > 0.0 ? std::sqrt(variance / double(n - 1)) : 0.0;
}

}  // namespace

double logSumExp(std::span<const float> logits) {
    const double maxLogit = *std::max_element(logits.begin(), logits.end());
    double sum = 0.0;
    for (float l : logits) sum += std::exp(double(l) - maxLogit);
    return maxLogit + std::log(sum);
}

PerplexityChunks cutIntoChunks(int32_t textTokens, int32_t ctx) {
    PerplexityChunks c;
    c.ctx = ctx;
    c.count = ctx > 0 ? textTokens / ctx : 0;
    c.firstScored = ctx / 2;
    return c;
}

std::vector<int32_t> PerplexityChunks::window(std::span<const int32_t> text, int32_t chunk, int32_t bos) const {
    const auto begin = text.begin() + ptrdiff_t(chunk) * ctx;
    std::vector<int32_t> w(begin, begin + ctx);
    if (bos >= 0) w[0] = bos;
    return w;
}

void PerplexityMeter::add(std::span<const float> logits, int32_t next) {
    const double nll = logSumExp(logits) - double(logits[size_t(next)]);
    ++n_;
    sum_ += nll;
    sumSquares_ += nll * nll;
}

double PerplexityMeter::perplexity() const { return std::exp(meanNll()); }

// d(e^m)/dm = e^m: the error of the mean NLL scaled by the perplexity itself.
double PerplexityMeter::perplexityError() const { return perplexity() * standardError(sum_, sumSquares_, n_); }

DistributionShift compareDistributions(std::span<const float> reference, std::span<const float> test) {
    assert(reference.size() == test.size());
    const double refLogZ = logSumExp(reference), testLogZ = logSumExp(test);
    // KL(P‖Q) = Σ p (ln p − ln q), ln p = logit − ln Z.
    double kl = 0.0;
    for (size_t i = 0; i < reference.size(); ++i) {
        const double lnP = double(reference[i]) - refLogZ;
        const double lnQ = double(test[i]) - testLogZ;
        kl += std::exp(lnP) * (lnP - lnQ);
    }
    // Rounding can leave a sum of ~1e-17 below zero for identical distributions; KL is never negative.
    return {std::max(kl, 0.0), argmax(reference) == argmax(test)};
}

void DivergenceMeter::add(const DistributionShift& shift) {
    kl_.push_back(shift.kl);
    if (shift.sameTop1) ++sameTop1_;
}

double DivergenceMeter::meanKl() const {
    double sum = 0.0;
    for (double k : kl_) sum += k;
    return kl_.empty() ? 0.0 : sum / double(kl_.size());
}

double DivergenceMeter::meanKlError() const {
    double sum = 0.0, sumSquares = 0.0;
    for (double k : kl_) {
        sum += k;
        sumSquares += k * k;
    }
    return standardError(sum, sumSquares, int64_t(kl_.size()));
}

double DivergenceMeter::klQuantile(double q) const {
    if (kl_.empty()) return 0.0;
    std::vector<double> sorted = kl_;
    std::sort(sorted.begin(), sorted.end());
    const double rank = std::clamp(q, 0.0, 1.0) * double(sorted.size() - 1);
    const size_t below = size_t(std::floor(rank));
    const size_t above = std::min(below + 1, sorted.size() - 1);
    return sorted[below] + (rank - double(below)) * (sorted[above] - sorted[below]);
}

double DivergenceMeter::maxKl() const { return kl_.empty() ? 0.0 : *std::max_element(kl_.begin(), kl_.end()); }

}  // namespace inferscope
