#pragma once
// The sampler's settings, shared by the engine, the CLI (--temperature, --top-k, ...) and the
// GUI's sliders, and the one function that validates them so all three give the same message.

#include <cstdint>
#include <utility>
#include <vector>

#include "common/error.h"

namespace inferscope {

// Largest top-N a step record may carry: enough for a wide replay window, never a whole vocabulary.
inline constexpr int32_t kMaxTopN = 4096;

// Defaults are llama.cpp's, except the seed (fixed, so runs are reproducible unless asked otherwise).
struct SamplerParams {
    float temperature = 0.8f;    // >= 0, finite; logits are divided by it; 0 = greedy
    int32_t topK = 40;           // keep the k most probable; <= 0 or >= n = off
    float topP = 0.95f;          // (0, 1]; keep the smallest prefix reaching p; 1 = off
    float minP = 0.05f;          // [0, 1]; keep p >= minP * pmax; 0 = off
    float repeatPenalty = 1.0f;  // > 0, finite; 1 = off (< 1 encourages repetition)
    float frequencyPenalty = 0;  // finite; subtracted once per occurrence in the window; 0 = off
    float presencePenalty = 0;   // finite; subtracted once from every token in the window; 0 = off
    int32_t repeatLastN = 64;    // recent tokens the penalties look at; -1 = all given; 0 = off
    std::vector<std::pair<int32_t, float>> logitBias;  // (token id, finite value added to its logit)
    uint64_t seed = 0;           // seeds std::mt19937_64
    int32_t topN = 20;           // candidates recorded per step, [0, kMaxTopN]
    // Candidates of the distribution drawn from (after every stage) recorded per step, by final
    // probability: SampleRecord::finalTop, [0, kMaxTopN]. 0: none (what the server's processed
    // logprobs need; the app reads each stage from `top`).
    int32_t finalTopN = 0;
};

// Ok, or Error{InvalidArgument} naming the parameter as the CLI flag does and the bad value:
// "top-p must be in (0, 1], got 1.5", "temperature must be >= 0, got -1". NaN is always rejected.
Result<void> validateSamplerParams(const SamplerParams& params);

}  // namespace inferscope
