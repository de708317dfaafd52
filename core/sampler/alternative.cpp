#include "sampler/alternative.h"

#include <cmath>

namespace inferscope {

SampleRecord withAlternativePick(const SampleRecord& drawn, std::span<const int32_t> replayIds,
                                 std::span<const float> replayLogits, int32_t id) {
    SampleRecord alt = drawn;
    alt.id = id;
    alt.logit = -INFINITY;
    for (const CandidateRecord& c : alt.top)
        if (c.id == id) alt.logit = c.logit;
    for (size_t i = 0; i < replayIds.size() && i < replayLogits.size(); ++i)
        if (replayIds[i] == id) alt.logit = replayLogits[i];
    alt.pRaw = std::isfinite(alt.logit) ? float(std::exp(double(alt.logit) - alt.logSumExp)) : 0.0f;
    alt.pFinal = 0;
    int32_t rank = 1;
    for (const CandidateRecord& c : alt.top) rank += c.logit > alt.logit ? 1 : 0;
    alt.rank = rank;
    return alt;
}

}  // namespace inferscope
