#pragma once
// Branching from an answer: what a step's record says about a token other than the one drawn.
// The step keeps the raw logits of its top-N candidates and, for replay, of its replayWidth
// highest (StepRecord::replayIds / replayLogits); an alternative's logit is looked up there (the
// replay list last: it is the same logit where both hold it), its raw probability follows from the
// step's logSumExp, its rank from the top-N.
//
// The result is the drawn record with the alternative as its pick: id; logit (-inf when the record
// holds none for it); pRaw = e^(logit - logSumExp) (0 then); pFinal 0, as it was not drawn; rank 1 +
// the top-N candidates with a higher logit. Entropy, survivors and the top-N stay as recorded: the
// same distribution, another choice.

#include <cstdint>
#include <span>

#include "record/sample_record.h"

namespace inferscope {

SampleRecord withAlternativePick(const SampleRecord& drawn, std::span<const int32_t> replayIds,
                                 std::span<const float> replayLogits, int32_t id);

}  // namespace inferscope
