#include "record/sampler_params.h"

#include <cmath>
#include <fmt/format.h>

namespace inferscope {

Result<void> validateSamplerParams(const SamplerParams& p) {
    auto bad = [](std::string message) {
        return fail(ErrorKind::InvalidArgument, std::move(message));
    };
    // Each test is written so that NaN fails it (every comparison with NaN is false).
    if (!(p.temperature >= 0.0f))
        return bad(fmt::format("temperature must be >= 0, got {}", p.temperature));
    if (std::isinf(p.temperature))
        return bad(fmt::format("temperature must be finite, got {}", p.temperature));
    if (!(p.topP > 0.0f && p.topP <= 1.0f))
        return bad(fmt::format("top-p must be in (0, 1], got {}", p.topP));
    if (!(p.minP >= 0.0f && p.minP <= 1.0f))
        return bad(fmt::format("min-p must be in [0, 1], got {}", p.minP));
    if (!(p.repeatPenalty > 0.0f))
        return bad(fmt::format("repeat-penalty must be > 0, got {}", p.repeatPenalty));
    if (std::isinf(p.repeatPenalty))
        return bad(fmt::format("repeat-penalty must be finite, got {}", p.repeatPenalty));
    if (!std::isfinite(p.frequencyPenalty))
        return bad(fmt::format("frequency-penalty must be finite, got {}", p.frequencyPenalty));
    if (!std::isfinite(p.presencePenalty))
        return bad(fmt::format("presence-penalty must be finite, got {}", p.presencePenalty));
    for (const auto& [id, bias] : p.logitBias)
        if (!std::isfinite(bias)) return bad(fmt::format("the logit bias of token {} must be finite, got {}", id, bias));
    if (p.repeatLastN < -1)
        return bad(fmt::format("repeat-last-n must be >= -1 (-1 = all tokens), got {}", p.repeatLastN));
    if (p.topN < 0 || p.topN > kMaxTopN)
        return bad(fmt::format("top-n must be in [0, {}], got {}", kMaxTopN, p.topN));
    if (p.finalTopN < 0 || p.finalTopN > kMaxTopN)
        return bad(fmt::format("final top-n must be in [0, {}], got {}", kMaxTopN, p.finalTopN));
    return {};
}

}  // namespace inferscope
