#pragma once
// What a configuration costs in quality, from teacher-forced logits (Engine::score): the perplexity
// of a text, and against a reference configuration (another file of the same model, another compute
// precision) how far each next-token distribution moved — KL divergence and top-1 agreement, the
// figures `llama-perplexity --kl-divergence` reports.
//
// Every distribution is softmax(logits) at temperature 1, normalised in double.

#include <cstdint>
#include <span>
#include <vector>

namespace inferscope {

// ln Σ e^logit, computed in double around the largest logit.
double logSumExp(std::span<const float> logits);

// The text in chunks as llama-perplexity cuts it: consecutive windows of `ctx` tokens (the
// remainder dropped), each run from an empty cache with its first token replaced by BOS when the
// vocabulary adds one; only the second half of each window is scored, so that every scored token
// has at least ctx/2 tokens of context.
struct PerplexityChunks {
    int32_t ctx = 0;
    int32_t count = 0;       // windows of ctx tokens in the text
    int32_t firstScored = 0; // the window's position whose logits predict the first scored token
    // The window's tokens (BOS first when bos ≥ 0).
    std::vector<int32_t> window(std::span<const int32_t> text, int32_t chunk, int32_t bos) const;
    int32_t scoredPerChunk() const { return ctx - 1 - firstScored; }
};
PerplexityChunks cutIntoChunks(int32_t textTokens, int32_t ctx);

// Running perplexity: exp of the mean negative log-likelihood of each scored token, with its
// standard error (the delta method, as llama-perplexity prints "PPL = x +/- e").
class PerplexityMeter {
public:
    // The logits at one position and the token that follows it.
    void add(std::span<const float> logits, int32_t next);
    int64_t count() const { return n_; }
    double meanNll() const { return n_ ? sum_ / double(n_) : 0.0; }
    double perplexity() const;
    double perplexityError() const;

private:
    int64_t n_ = 0;
    double sum_ = 0.0, sumSquares_ = 0.0;
};

// One position under both configurations: KL(P_reference ‖ P_test) in nats, whether both rank the
// same token first (ties broken towards the lower id, as the sampler does), and, given the token
// that follows, its probability under each and Δp = p_test − p_reference (llama-perplexity's Δp).
struct DistributionShift {
    double kl = 0.0;
    bool sameTop1 = true;
    int32_t topReference = 0, topTest = 0;
    double pReference = 0.0, pTest = 0.0;  // of `next`; 0 without one
    bool dpValid = false;                  // a `next` was given
    double dp() const { return pTest - pReference; }
};
DistributionShift compareDistributions(std::span<const float> reference, std::span<const float> test, int32_t next = -1);

class DivergenceMeter {
public:
    void add(const DistributionShift& shift);
    int64_t count() const { return int64_t(kl_.size()); }
    double meanKl() const;
    double meanKlError() const;  // standard error of the mean
    // The q-quantile (0 ≤ q ≤ 1) of the per-token KL, by linear interpolation between order
    // statistics (numpy's default); q = 0.5 is the median, 0.99 the p99.
    double klQuantile(double q) const;
    double maxKl() const;
    int64_t sameTop1() const { return sameTop1_; }
    double top1Agreement() const { return kl_.empty() ? 1.0 : double(sameTop1_) / double(kl_.size()); }
    // sqrt(p (1 − p) / (n − 1)): llama-perplexity's "Same top p" error.
    double top1AgreementError() const;
    // Δp of the following token (the shifts added with one): mean ± error, quantiles as klQuantile,
    // root mean square ± error (llama-perplexity's "RMS Δp"). In probability (not percent).
    int64_t dpCount() const { return int64_t(dp_.size()); }
    double meanDp() const;
    double meanDpError() const;
    double dpQuantile(double q) const;
    double rmsDp() const;
    double rmsDpError() const;

private:
    std::vector<double> kl_, dp_;
    int64_t sameTop1_ = 0;
};

}  // namespace inferscope
