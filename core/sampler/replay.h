#pragma once
// Replay: what a finished answer's sampling would have done with other settings, computed from
// the logits stored with each step (StepRecord::replayLogits), without running the model again.
// Teacher-forced: step k sees the original tokens before it, so each step answers "with these
// settings, what would have been picked here?", and `changed` counts the steps that differ.
// The draws are the original seed's (one per step), so a pick changes only because the
// distribution did.
//
// Exactness: the stored logits are the highest `replayWidth` of the vocabulary. A step's replay is
// exact when they hold everything that matters: the whole vocabulary, or top-k ≤ their number, or
// greedy, or min-p cutting off below the lowest stored logit with top-p off. Otherwise the mass
// outside them (1 - storedMass, reported) is ignored and the step is marked inexact.

#include <cstdint>
#include <span>
#include <vector>

#include "common/error.h"
#include "engine/generation.h"
#include "record/sampler_params.h"

namespace inferscope {

struct ReplayedStep {
    int32_t id = -1;          // the pick under the replayed settings
    float pFinal = 0;         // its probability in the replayed final distribution
    bool changed = false;     // differs from the original pick
    bool exact = true;        // the stored logits determine this step completely
    float storedMass = 1;     // raw probability the stored logits hold (the rest was not stored)
};

struct ReplayResult {
    std::vector<ReplayedStep> steps;
    int32_t changed = 0;      // steps whose pick differs
    int32_t inexact = 0;      // steps that depend on logits that were not stored
    float minStoredMass = 1;  // the smallest storedMass over all steps
};

// steps: the answer's records (each with replay logits); context: the tokens before step 0
// (prompt and earlier turns), for the repetition penalty; params: the settings to replay with
// (params.seed should be the answer's seed for comparable draws).
Result<ReplayResult> replaySteps(std::span<const StepRecord> steps, std::span<const int32_t> context,
                                 const SamplerParams& params);

// The full record (stage probabilities, top-N) of step `index` replayed with params: what the
// Probabilities panel's funnel shows for the replayed settings.
Result<SampleRecord> replayOneStep(std::span<const StepRecord> steps, size_t index, std::span<const int32_t> context,
                                   const SamplerParams& params);

}  // namespace inferscope
