#pragma once
// A token's fate under speculative decoding, as a step record carries it (StepRecord::draft).

#include <cstdint>

namespace inferscope {

// What happened to a token under speculative decoding (StepRecord::draft).
struct DraftRecord {
    enum class Fate : uint8_t {
        Accepted,   // drafted and accepted
        Corrected,  // drafted token rejected; this token drawn from max(0, p − q) instead
        Bonus,      // every drafted token accepted: this one drawn from p after them
        Undrafted,  // no draft this round (none found, or no room): a plain decode step
    };
    Fate fate = Fate::Undrafted;
    int32_t draftedId = -1;         // the drafted token (Accepted: this token; Corrected: the rejected one)
    float q = 0.0f;                 // the drafter's probability of draftedId (n-gram: 1)
    float p = 0.0f;                 // the model's probability of draftedId
    float acceptProbability = 0.0f; // min(1, p / q)
    int32_t draftIndex = 0;         // its place in the round's draft (0-based)
    int32_t draftLength = 0;        // tokens drafted that round
    // The round's costs, on its first token only (0 on the others).
    int64_t draftUs = 0, verifyUs = 0;
    int32_t verifyRows = 0;         // tokens the round's verification ran (the pending one and the draft)
};

}  // namespace inferscope
