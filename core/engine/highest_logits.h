#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "engine/generation.h"

namespace inferscope {

// The k highest logits, descending (ties: lower id first), into the record. Every decode step of
// the app keeps them (replay), between two passes while the other compute thread waits, so they are
// selected by radix: one pass counts the logits per 2,048 buckets of their top key bits (sign,
// exponent, 2 bits of mantissa), a second takes every id above the bucket holding the k-th and the
// highest of that bucket. An indirect nth_element over every id took 1% of the app's decode; this
// is ~3x faster (32,000 logits, k = 512). NaN logits have no order: then every id is ranked.
void keepHighestLogits(std::span<const float> logits, size_t k, StepRecord& rec);
// The same selection: the ids of the k highest logits, descending (ties: lower id first), into ids
// (replacing what it held).
void highestLogitIds(std::span<const float> logits, size_t k, std::vector<int32_t>& ids);

// What a request asks each step's record to keep of its logits: the replay window
// (GenerateRequest::replayWidth) and the raw logits of the named tokens (namedTokens; an id past
// the vocabulary gets -inf).
void keepRequestedLogits(std::span<const float> logits, const GenerateRequest& request, StepRecord& rec);

}  // namespace inferscope
