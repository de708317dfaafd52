#pragma once
// How the sampler chain ranks and sums its candidates (sampler_chain.cpp, sampler_stages.cpp):
// the rank orders, masses summed as exact integers, walks that rank only the candidates they can
// reach, and sums over the whole vocabulary in independent lanes that vectorise.

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "record/sample_record.h"

namespace inferscope::sampler_detail {

// Relative slack of the inclusive cuts (top-p "reaches p", min-p ">= minP * pmax"): a float logit
// is only good to ~1e-7, so a cumulative probability within 1e-6 of p counts as reaching it.
constexpr double kCutSlack = 1e-6;

// Decisions (the top-p cut, the draw) sum masses as integers: each mass in [0, 1] is quantised
// to 2^-52, so sums are exact and independent of the order of the candidates. With at most 2^23
// candidates a total stays below 2^75, and total * u53 (u53 < 2^53) fits in 128 bits.
using Mass = unsigned __int128;
constexpr size_t kMaxCandidates = size_t(1) << 23;
inline uint64_t quantise(double mass) { return uint64_t(mass * 0x1p52 + 0.5); }

constexpr float kInf = std::numeric_limits<float>::infinity();

// Rank order after the penalty: higher logit first, ties to the lower id.
struct ByLogit {
    bool operator()(const auto& a, const auto& b) const {
        return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
    }
};
// The same on the raw logits (the record's rank and top-N).
struct ByRaw {
    bool operator()(const auto& a, const auto& b) const {
        return a.raw > b.raw || (a.raw == b.raw && a.id < b.id);
    }
};

// Sorts the first (mid - first) of [first, last) into place. A heap selection (one cheap, well
// predicted comparison per element) when few are wanted, else a quickselect and a sort of those.
template <class It, class Order>
void selectSorted(It first, It mid, It last, Order order) {
    if (mid == last) {
        std::sort(first, last, order);
    } else if ((mid - first) * 64 <= (last - first)) {
        std::partial_sort(first, mid, last, order);
    } else {
        std::nth_element(first, mid, last, order);
        std::sort(first, mid, order);
    }
}

// Walks in rank order (top-p, the draw) rank only what they can reach. Candidates are bucketed by
// the bit length of their quantised mass (one bucket per factor of two; masses fall with rank, so
// buckets 0..b are a rank prefix); the walk's stopping point lies in the first bucket where the
// cumulative mass stops it, and only the buckets up to it get sorted: O(n) + O(m log m) for a
// walk over m candidates, instead of a sort of all n.
constexpr size_t kMassBuckets = 54;  // q = 2^52 (the maximum) -> 0, [2^51, 2^52) -> 1, ..., q = 0 -> 53
using MassHistogram = std::array<Mass, kMassBuckets>;
inline size_t massBucket(uint64_t q) { return size_t(std::countl_zero(q)) - 11; }

// Makes candidates[0, ranked) cover every survivor in [0, count) that a walk stopping at the first
// cumulative mass with stops(cumulative) can visit. `histogram` holds the survivors' masses.
template <class Candidate, class Stops>
void rankForWalk(std::vector<Candidate>& candidates, size_t& ranked, size_t count,
                 const MassHistogram& histogram, Stops stops) {
    if (ranked >= count) return;
    Mass cumulative = 0;
    size_t lastBucket = kMassBuckets - 1;
    for (size_t b = 0; b < kMassBuckets; ++b) {
        cumulative += histogram[b];
        if (stops(cumulative)) {
            lastBucket = b;
            break;
        }
    }
    const auto first = candidates.begin();
    const auto end = std::partition(first + ranked, first + count, [lastBucket](const Candidate& c) {
        return massBucket(quantise(c.mass)) <= lastBucket;
    });
    std::sort(first + ranked, end, ByLogit{});
    ranked = std::max(ranked, size_t(end - first));
}

// Passes over the whole vocabulary keep kLanes independent accumulators, so they vectorise
// (a single running sum or max is one long dependency chain). The grouping is fixed by n alone.
constexpr size_t kLanes = 8;

template <class Term>
double laneSum(size_t n, Term term) {
    std::array<double, kLanes> acc{};
    size_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
        for (size_t j = 0; j < kLanes; ++j) acc[j] += term(i + j);
    for (; i < n; ++i) acc[0] += term(i);
    double sum = 0;
    for (double a : acc) sum += a;
    return sum;
}

constexpr size_t at(SamplerStage s) { return static_cast<size_t>(s); }

}  // namespace inferscope::sampler_detail
