#include "engine/highest_logits.h"

#include <algorithm>
#include <array>
#include <bit>
#include <limits>

namespace inferscope {
namespace {

// A float's bits as an unsigned key in the floats' order (-0 taken as +0: equal logits).
uint32_t orderKey(float f) {
    if (f == 0.0f) f = 0.0f;
    const uint32_t u = std::bit_cast<uint32_t>(f);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

}  // namespace

void highestLogitIds(std::span<const float> logits, size_t k, std::vector<int32_t>& ids) {
    k = std::min(k, logits.size());
    auto higher = [&](int32_t a, int32_t b) { return logits[size_t(a)] > logits[size_t(b)] || (logits[size_t(a)] == logits[size_t(b)] && a < b); };
    ids.clear();
    if (k > 0 && k < logits.size()) {
        constexpr int kShift = 21;
        std::array<uint32_t, 2048> count{};
        bool nan = false;
        for (float f : logits) {
            nan |= f != f;
            ++count[orderKey(f) >> kShift];
        }
        if (!nan) {
            uint32_t bucket = 2047;
            size_t above = 0;  // ids in the buckets above `bucket`
            while (above + count[bucket] < k) above += count[bucket--];
            thread_local std::vector<int32_t> edge;
            edge.clear();
            for (size_t i = 0; i < logits.size(); ++i) {
                const uint32_t b = orderKey(logits[i]) >> kShift;
                if (b > bucket) ids.push_back(int32_t(i));
                else if (b == bucket) edge.push_back(int32_t(i));
            }
            std::partial_sort(edge.begin(), edge.begin() + ptrdiff_t(k - above), edge.end(), higher);
            ids.insert(ids.end(), edge.begin(), edge.begin() + ptrdiff_t(k - above));
        }
    }
    if (ids.size() != k) {  // k = 0, the whole vocabulary, or NaN logits
        ids.resize(logits.size());
        for (size_t i = 0; i < ids.size(); ++i) ids[i] = int32_t(i);
        if (k < ids.size()) std::nth_element(ids.begin(), ids.begin() + ptrdiff_t(k), ids.end(), higher);
        ids.resize(k);
    }
    std::sort(ids.begin(), ids.end(), higher);
}

void keepHighestLogits(std::span<const float> logits, size_t k, StepRecord& rec) {
    highestLogitIds(logits, k, rec.replayIds);
    k = rec.replayIds.size();
    const std::vector<int32_t>& ids = rec.replayIds;
    rec.replayLogits.resize(k);
    for (size_t i = 0; i < k; ++i) rec.replayLogits[i] = logits[size_t(ids[i])];
}

void keepRequestedLogits(std::span<const float> logits, const GenerateRequest& request, StepRecord& rec) {
    if (request.replayWidth > 0) keepHighestLogits(logits, size_t(request.replayWidth), rec);
    if (request.namedTokens.empty()) return;
    rec.namedLogits.resize(request.namedTokens.size());
    for (size_t i = 0; i < request.namedTokens.size(); ++i) {
        const int32_t id = request.namedTokens[i];
        rec.namedLogits[i] = id >= 0 && size_t(id) < logits.size() ? logits[size_t(id)] : -std::numeric_limits<float>::infinity();
    }
}

}  // namespace inferscope
