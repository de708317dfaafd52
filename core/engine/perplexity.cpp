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

double errorOfMean(const std::vector<double>& values) {
    double sum = 0.0, sumSquares = 0.0;
    for (double v : values) {
        sum += v;
        sumSquares += v * v;
    }
    return standardError(sum, sumSquares, int64_t(values.size()));
}

// The q-quantile by linear interpolation between order statistics (numpy's default).
double quantile(std::vector<double> values, double q) {
    if (values.empty()) return 0.0;
    std::sort(values.begin(), values.end());
    const double rank = std::clamp(q, 0.0, 1.0) * double(values.size() - 1);
    const size_t below = size_t(std::floor(rank));
    const size_t above = std::min(below + 1, values.size() - 1);
    return values[below] + (rank - double(below)) * (values[above] - values[below]);
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

DistributionShift compareDistributions(std::span<const float> reference, std::span<const float> test, int32_t next) {
    assert(reference.size() == test.size());
    const double refLogZ = logSumExp(reference), testLogZ = logSumExp(test);
    // KL(P‖Q) = Σ p (ln p − ln q), ln p = logit − ln Z.
    double kl = 0.0;
    for (size_t i = 0; i < reference.size(); ++i) {
        const double lnP = double(reference[i]) - refLogZ;
        const double lnQ = double(test[i]) - testLogZ;
        kl += std::exp(lnP) * (lnP - lnQ);
    }
    DistributionShift shift;
    // Rounding can leave a sum of ~1e-17 below zero for identical distributions; KL is never negative.
    shift.kl = std::max(kl, 0.0);
    shift.topReference = int32_t(argmax(reference));
    shift.topTest = int32_t(argmax(test));
    shift.sameTop1 = shift.topReference == shift.topTest;
    if (next >= 0 && size_t(next) < reference.size()) {
        shift.pReference = std::exp(double(reference[size_t(next)]) - refLogZ);
        shift.pTest = std::exp(double(test[size_t(next)]) - testLogZ);
        shift.dpValid = true;
    }
    return shift;
}

void DivergenceMeter::add(const DistributionShift& shift) {
    kl_.push_back(shift.kl);
    if (shift.dpValid) dp_.push_back(shift.dp());
    if (shift.sameTop1) ++sameTop1_;
}

double DivergenceMeter::meanKl() const {
    double sum = 0.0;
    for (double k : kl_) sum += k;
    return kl_.empty() ? 0.0 : sum / double(kl_.size());
}

double DivergenceMeter::meanKlError() const { return errorOfMean(kl_); }

double DivergenceMeter::klQuantile(double q) const { return quantile(kl_, q); }

double DivergenceMeter::top1AgreementError() const {
    const double p = top1Agreement();
    const int64_t n = count();
    return n > 1 ? std::sqrt(p * (1.0 - p) / double(n - 1)) : 0.0;
}

double DivergenceMeter::meanDp() const {
    double sum = 0.0;
    for (double d : dp_) sum += d;
    return dp_.empty() ? 0.0 : sum / double(dp_.size());
}

double DivergenceMeter::meanDpError() const { return errorOfMean(dp_); }

double DivergenceMeter::dpQuantile(double q) const { return quantile(dp_, q); }

// RMS = sqrt(mean Δp²); its error from that of the mean square by the delta method: 0.5 / RMS × err.
double DivergenceMeter::rmsDp() const {
    double sumSquares = 0.0;
    for (double d : dp_) sumSquares += d * d;
    return dp_.empty() ? 0.0 : std::sqrt(sumSquares / double(dp_.size()));
}

double DivergenceMeter::rmsDpError() const {
    double sum2 = 0.0, sum4 = 0.0;
    for (double d : dp_) {
        sum2 += d * d;
        sum4 += d * d * d * d;
    }
    const double rms = rmsDp();
    return rms > 0.0 ? 0.5 / rms * standardError(sum2, sum4, int64_t(dp_.size())) : 0.0;
}

double DivergenceMeter::maxKl() const { return kl_.empty() ? 0.0 : *std::max_element(kl_.begin(), kl_.end()); }

}  // namespace inferscope
